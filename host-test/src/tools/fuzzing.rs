//! Fuzzing support in the harness: the settings each rule is fuzzed with
//! (its defaults, or for a rule without safe defaults the first valid
//! settings of its case files), the seed corpus (every case's request), and
//! the three-forms check, which needs wasmtime. The properties themselves
//! are `aigov_sdk::fuzzing`'s.

use std::path::Path;
use std::sync::Arc;

use aigov_sdk::ValidationResponse;
use aigov_sdk::testing::fuzzing::{Subjects, is_one_json_value};
use anyhow::{Context, Result};

use crate::run::artifact::{Evaluator, component_path, module_path};
use crate::run::cluster::FixtureCluster;
use crate::tools::cases::{Case, case_files};

/// The settings rule `name` is fuzzed with, if not its defaults.
fn settings_for(policies: &Path, name: &str) -> Option<String> {
    let rule = crate::run::native::rule(name)?;
    if (rule.validate_settings)(b"{}").valid {
        return None;
    }
    case_files(policies, name).unwrap_or_default().into_iter().find_map(|(_, path)| {
        let s = Case::load(&path).ok()?.settings.to_string();
        (rule.validate_settings)(s.as_bytes()).valid.then_some(s)
    })
}

/// Every rule and the bundle, with their fuzzing settings.
pub fn subjects(policies: &Path) -> Subjects {
    Subjects::new(crate::run::native::RULES, &crate::run::native::BUNDLE, |name| settings_for(policies, name))
}

/// The requests of every case file, as fuzzing seeds: `(name, request)`.
pub fn seeds(policies: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rule in crate::run::native::names() {
        for (name, path) in case_files(policies, rule).unwrap_or_default() {
            if let Ok(case) = Case::load(&path)
                && let Ok(Some(request)) = case.admission_request()
            {
                out.push((format!("{rule}-{name}"), request));
            }
        }
    }
    out
}

/// Runs `aigov build fuzz-corpus`: [`write_corpus`], and what it wrote on `out`.
pub fn run_corpus(policies: &Path, dir: &Path, out: &mut dyn std::io::Write) -> Result<std::process::ExitCode> {
    let n = write_corpus(policies, dir)?;
    writeln!(out, "wrote {n} seeds to {}/corpus and the rules' settings to {}/settings.json", dir.display(), dir.display())?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes the seed corpus (one file per case request) and `settings.json`
/// (each rule's fuzzing settings, by name) into `dir`.
pub fn write_corpus(policies: &Path, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir.join("corpus")).with_context(|| format!("creating {}", dir.display()))?;
    let seeds = seeds(policies);
    for (name, request) in &seeds {
        std::fs::write(dir.join("corpus").join(format!("{name}.json")), request)?;
    }
    let subjects = subjects(policies);
    let settings: serde_json::Map<String, serde_json::Value> = subjects
        .rules
        .iter()
        .map(|(r, s)| (r.metadata.name.to_string(), serde_json::from_str(s).unwrap_or(serde_json::Value::Null)))
        .collect();
    std::fs::write(dir.join("settings.json"), serde_json::Value::Object(settings).to_string())?;
    Ok(seeds.len())
}

/// The inputs a fuzz target once failed on, kept in `dir`
/// (`host-test/fuzz/regressions`): every file but its README.
pub fn regression_inputs(dir: &Path) -> Result<Vec<(std::path::PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let data = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        out.push((path, data));
    }
    Ok(out)
}

/// Every rule in its three forms.
pub struct Forms {
    rules: Vec<(Vec<Evaluator>, String)>,
    cluster: Arc<FixtureCluster>,
}

impl Forms {
    /// Loads every rule natively and its artifacts from `artifacts`.
    pub fn load(engine: &wasmtime::Engine, artifacts: &Path, subjects: &Subjects) -> Result<Forms> {
        let mut rules = Vec::new();
        for (rule, settings) in &subjects.rules {
            let name = rule.metadata.name;
            let mut forms = vec![Evaluator::native(rule)];
            for path in [module_path(artifacts, name), component_path(artifacts, name)] {
                forms.push(Evaluator::from_file(engine, &path)?);
            }
            rules.push((forms, settings.clone()));
        }
        Ok(Forms { rules, cluster: Arc::new(FixtureCluster::empty()) })
    }

    /// Natively, as a module and as a component: the same answers. The
    /// module reads Kubewarden's payload and the component the request
    /// itself, so each is held to the native answer to the same input (see
    /// [`Evaluator::validate_request_form`]); for a request that is one JSON
    /// value the native payload and request forms must agree as well, so
    /// all three give one answer.
    pub fn check(&self, data: &[u8]) -> Result<(), String> {
        let Ok(request) = std::str::from_utf8(data) else { return Ok(()) };
        let one_value = is_one_json_value(request);
        for (forms, settings) in &self.rules {
            let mut native: Option<(ValidationResponse, ValidationResponse)> = None;
            for e in forms {
                let answer = e.validate(request, settings, &self.cluster).map_err(|err| format!("{} ({}): {err:#}", e.name, e.form()))?;
                if let Some(request_form) = e.validate_request_form(request, settings, &self.cluster) {
                    if one_value && request_form != answer {
                        return Err(format!("{}: the native payload and request forms disagree:\n{answer:?}\n{request_form:?}", e.name));
                    }
                    native = Some((answer, request_form));
                    continue;
                }
                let Some((payload_form, request_form)) = &native else {
                    return Err(format!("{}: the native form must come first", e.name));
                };
                let (expected, input) = if e.form() == "module" { (payload_form, "payload") } else { (request_form, "request") };
                if *expected != answer {
                    return Err(format!("{}: native and {} disagree on the same {input}:\n{expected:?}\n{answer:?}", e.name, e.form()));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::Request;
    use aigov_sdk::testing::fuzzing::{check_differential, check_rules, mutate, view};

    fn policies() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
    }

    /// The smoke run of the fuzz properties: every case's request and eight
    /// structure-aware mutations of each, natively.
    #[test]
    fn the_case_corpus_and_its_mutations_hold_the_properties() {
        let subjects = subjects(&policies());
        let seeds = seeds(&policies());
        assert!(seeds.len() > 100, "the corpus is the case files");
        for (name, request) in &seeds {
            check_rules(&subjects, request.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            check_differential(&subjects, request.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            for seed in 0..8 {
                if let Some(m) = mutate(request.as_bytes(), seed) {
                    check_rules(&subjects, &m).unwrap_or_else(|e| panic!("{name} mutation {seed}: {e}\n{}", String::from_utf8_lossy(&m)));
                    check_differential(&subjects, &m)
                        .unwrap_or_else(|e| panic!("{name} mutation {seed}: {e}\n{}", String::from_utf8_lossy(&m)));
                }
            }
        }
        for garbage in [&b"{"[..], b"[]", b"null", b"{\"kind\":{},\"operation\":\"CREATE\",\"object\":[]}", b"\xff", b"{\"a\":1}}"] {
            check_rules(&subjects, garbage).unwrap();
            check_differential(&subjects, garbage).unwrap();
        }
    }

    /// Every input a fuzz target once failed on (`host-test/fuzz/regressions`).
    #[test]
    fn past_findings_hold_the_properties() {
        let subjects = subjects(&policies());
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
        let inputs = regression_inputs(&dir).unwrap();
        for (path, data) in &inputs {
            check_rules(&subjects, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            check_differential(&subjects, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        assert!(!inputs.is_empty(), "no regression inputs in {}", dir.display());
    }

    #[test]
    fn the_view_tells_objects_apart() {
        let a =
            Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"name":"a"}}}"#)
                .unwrap();
        let b =
            Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"name":"b"}}}"#)
                .unwrap();
        assert_ne!(view(&a), view(&b));
    }
}
