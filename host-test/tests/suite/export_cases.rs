//! `aigov build export-cases` writes down what the harness answers: for a
//! context-aware rule and the bundle, every case has its record, every
//! recorded verdict is the one the harness's component form gives for the
//! same call, and the lookups the rule made are there with their answers.
//! (`make jco-check` replays these records under Node.js.) Needs `make
//! artifacts` first.

use crate::common::{artifacts, root};
use std::collections::BTreeMap;
use std::sync::Arc;

use aigov::run::artifact::{BUNDLE, Evaluator, component_path};
use aigov::run::cluster::FixtureCluster;
use aigov::tools::cases::{self, Case};
use serde_json::Value;

/// A recorded `verdict` as the harness's ValidationResponse.
fn as_response(v: &Value) -> aigov_sdk::ValidationResponse {
    let audit: BTreeMap<String, String> =
        v["auditAnnotations"].as_array().unwrap().iter().map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into())).collect();
    aigov_sdk::ValidationResponse {
        accepted: v["accepted"].as_bool().unwrap(),
        message: v["message"].as_str().map(str::to_string),
        code: v["code"].as_u64().map(|c| u16::try_from(c).unwrap()),
        mutated_object: v["mutatedObject"].as_str().map(|m| serde_json::value::RawValue::from_string(m.to_string()).unwrap()),
        warnings: v["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect(),
        audit_annotations: audit,
    }
}

#[test]
fn records_are_the_harness_answers_with_every_lookup() {
    let artifacts = artifacts();
    let policies = root().join("policies");
    let out = std::env::temp_dir().join(format!("aigov-export-cases-{}", std::process::id()));
    let rule = "gpu-quota";
    let summary = aigov::tools::export_cases::export(&artifacts, &policies, &[rule], &out).unwrap();
    let files = cases::case_files(&policies, rule).unwrap();
    assert_eq!(
        (summary.components, summary.cases, summary.runs),
        (2, files.len(), 2 * files.len()),
        "the rule and the bundle, each with every case"
    );
    assert!(summary.lookups > 0, "gpu-quota looks up Namespaces and Pods");

    let engine = aigov::run::engine::new_engine().unwrap();
    let rule_form = Evaluator::from_file(&engine, &component_path(&artifacts, rule)).unwrap();
    let bundle_form = Evaluator::from_file(&engine, &component_path(&artifacts, BUNDLE)).unwrap();
    for (component, file, evaluator) in [(rule, rule, &rule_form), (BUNDLE, "bundle", &bundle_form)] {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(out.join(format!("{file}.json"))).unwrap()).unwrap();
        assert_eq!(record["component"], component);
        assert_eq!(record["metadata"]["answer"]["name"], component);
        let records = record["cases"].as_array().unwrap();
        let names: Vec<&str> = records.iter().map(|c| c["case"].as_str().unwrap()).collect();
        assert_eq!(names, files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), "{component}: a record per case, in order");
        for (c, (name, path)) in records.iter().zip(&files) {
            let case = Case::load(path).unwrap();
            let cluster = Arc::new(FixtureCluster::from_objects(case.cluster.clone()).unwrap());
            for call in c["calls"].as_array().unwrap() {
                let args: Vec<&str> = call["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
                match call["function"].as_str().unwrap() {
                    "validate" => {
                        let harness = evaluator.validate(args[0], args[1], &cluster).unwrap();
                        assert_eq!(as_response(&call["answer"]), harness, "{component} {rule}/{name}");
                    }
                    "validate-settings" => {
                        let harness = evaluator.validate_settings(args[0]).unwrap();
                        assert_eq!(call["answer"]["valid"], harness.valid, "{component} {rule}/{name}");
                        assert_eq!(call["answer"]["message"].as_str(), harness.message.as_deref(), "{component} {rule}/{name}");
                        assert!(call["lookups"].as_array().unwrap().is_empty(), "settings are checked without a cluster");
                    }
                    other => panic!("{component} {rule}/{name}: unexpected call {other}"),
                }
            }
        }
    }

    // A case whose fixture makes a lookup fail: the failure is recorded as
    // the WIT variant, with the fixture's message.
    let rule_record: Value = serde_json::from_str(&std::fs::read_to_string(out.join(format!("{rule}.json"))).unwrap()).unwrap();
    let failed: Vec<&Value> = rule_record["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["calls"].as_array().unwrap())
        .flat_map(|call| call["lookups"].as_array().unwrap())
        .filter(|l| l["answer"].get("err").is_some())
        .collect();
    assert!(!failed.is_empty(), "gpu-quota's cases include failing lookups");
    for l in failed {
        let tag = l["answer"]["err"]["tag"].as_str().unwrap();
        assert!(["not-found", "forbidden", "invalid", "unavailable"].contains(&tag), "{l}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
