//! The rule template (`templates/rule-template`) is a rule like the
//! catalogue's: its cases run natively, as a module and as a component
//! (built by `make artifacts` into `target/template/`), and agree; and a
//! copy renamed as CONTRIBUTING.md says is what the bundle's build and the
//! metadata macro accept as a rule under `policies/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aigov::run::artifact::{Evaluator, component_path, module_path};
use aigov::tools::cases::{self, Case, Forms};

use crate::common::root;

fn template() -> PathBuf {
    root().join("templates").join("rule-template")
}

#[test]
fn its_cases_run_in_every_form_and_agree() {
    let engine = aigov::run::engine::new_engine().unwrap();
    let built = root().join("target").join("template");
    let mut evaluators = vec![Evaluator::native(&rule_template::AIGOV_POLICY)];
    for path in [module_path(&built, "rule-template"), component_path(&built, "rule-template")] {
        assert!(path.is_file(), "{} is missing: run `make artifacts` first", path.display());
        evaluators.push(Evaluator::from_file(&engine, &path).unwrap());
    }
    // The template is no rule of the catalogue: no bundle to agree with.
    let forms = Forms { evaluators, bundle: Arc::new(Vec::new()), rule: "rule-template".into() };
    let files = cases::case_files(&root().join("templates"), "rule-template").unwrap();
    assert!(files.len() >= 6, "{files:?}");
    for (name, path) in files {
        let case = Case::load(&path).unwrap();
        if let Err(problems) = cases::run(&forms, &case) {
            panic!("rule-template::{name}:\n{}", problems.join("\n"));
        }
    }
}

/// A copy of the template as `policies/<name>/` with its name replaced,
/// as CONTRIBUTING.md's "Writing a rule" says to make one.
fn instantiate(into: &Path, name: &str, type_name: &str) {
    let mut dirs = vec![(template(), into.to_path_buf())];
    while let Some((from, to)) = dirs.pop() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.file_name().unwrap());
            if path.is_dir() {
                dirs.push((path, target));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(target, text.replace("rule-template", name).replace("RuleTemplate", type_name)).unwrap();
        }
    }
}

#[test]
fn a_renamed_copy_is_a_rule_the_catalogue_accepts() {
    let dir = std::env::temp_dir().join(format!("aigov-template-{}", std::process::id()));
    let rule = dir.join("policies").join("gpu-priority-class");
    instantiate(&rule, "gpu-priority-class", "GpuPriorityClass");
    let metadata = aigov_metadata::Metadata::from_yaml(&std::fs::read_to_string(rule.join("metadata.yml")).unwrap()).unwrap();
    assert_eq!(metadata.annotations.get("io.kubewarden.policy.title").map(String::as_str), Some("gpu-priority-class"), "the folder's name");
    let manifest = std::fs::read_to_string(rule.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"gpu-priority-class\""), "{manifest}");
    assert_eq!(metadata.version(), manifest.lines().find_map(|l| l.strip_prefix("version = ")).map(|v| v.trim_matches('"')));
    let lib = std::fs::read_to_string(rule.join("src").join("lib.rs")).unwrap();
    assert!(lib.contains("aigov_sdk::export_policy!(GpuPriorityClass);"));
    for file in ["src/lib.rs", "src/settings.rs"] {
        let code = std::fs::read_to_string(rule.join(file)).unwrap();
        assert!(
            !code.lines().any(|l| l.split("//").next().unwrap_or_default().contains("crate::")),
            "{file} names `crate::`, which the bundle refuses"
        );
    }
    assert!(std::fs::read_dir(rule.join("tests").join("cases")).unwrap().count() >= 6);
    assert!(!std::fs::read_to_string(rule.join("README.md")).unwrap().contains("rule-template"));
    std::fs::remove_dir_all(&dir).unwrap();
}
