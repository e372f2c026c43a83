//! The `forms` fuzz target's property, in `make test`: native, module and
//! component give the same answer to the same input, on text that is not
//! one JSON value (which reaches the module spliced into Kubewarden's
//! payload, and the component as it is), on the inputs the fuzz targets
//! once failed on, and on structure-aware mutations of a sample of the case
//! corpus. `make fuzz FUZZ_TARGETS=forms` runs the same property for as long
//! as it is given.
//!
//! Needs `make artifacts` first.

use crate::common::{artifacts, root};
use aigov::tools::fuzzing::{Forms, regression_inputs, seeds, subjects};
use aigov_sdk::testing::fuzzing::mutate;

fn forms() -> Forms {
    let engine = aigov::run::engine::new_engine().unwrap();
    Forms::load(&engine, &artifacts(), &subjects(&root().join("policies"))).unwrap()
}

#[test]
fn the_three_forms_agree_on_inputs_that_are_not_one_json_value() {
    let forms = forms();
    // The empty input is libFuzzer's first, on which the target once failed
    // at once: its payload form is invalid JSON, its request form empty.
    let request = r#"{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","namespace":"ml","object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}}"#;
    let trailing = format!(r#"{request},"operation":"DELETE"}}"#);
    for input in ["", " ", "{", "[]", "1 2", &trailing, request] {
        forms.check(input.as_bytes()).unwrap_or_else(|e| panic!("{input:?}: {e}"));
    }
    let inputs = regression_inputs(&root().join("host-test/fuzz/regressions")).unwrap();
    for (path, data) in &inputs {
        forms.check(data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    assert!(inputs.len() >= 7, "the regression inputs are read: {}", inputs.len());
}

#[test]
fn the_three_forms_agree_on_mutations_of_the_case_corpus() {
    let forms = forms();
    let seeds = seeds(&root().join("policies"));
    assert!(seeds.len() > 500, "the corpus is the case files: {}", seeds.len());
    // Every 25th case, four mutations each: about a hundred inputs, each
    // through every rule in its three forms.
    let mut checked = 0;
    for (name, request) in seeds.iter().step_by(25) {
        forms.check(request.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for seed in 0..4 {
            if let Some(m) = mutate(request.as_bytes(), seed) {
                forms.check(&m).unwrap_or_else(|e| panic!("{name} mutation {seed}: {e}\n{}", String::from_utf8_lossy(&m)));
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "mutations checked: {checked}");
}
