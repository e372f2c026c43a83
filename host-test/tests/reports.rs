//! The SARIF report locates each violation at the field it names, in the
//! sample files as they are written: checked against the files' real lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;

use aigov::tools::report::sarif;
use aigov::tools::scan::{self, Config, Form, Identity};
use serde_json::Value;

fn samples_sarif() -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let config = Config {
        paths: vec![root.clone()],
        artifacts: PathBuf::from("artifacts"),
        cluster: Some(root.join("cluster")),
        settings: Default::default(),
        form: Form::Native,
        identity: Identity::default(),
        ..Config::default()
    };
    sarif::render(&scan::scan(&config).unwrap())
}

/// `(file name, line, column, message)` of every result.
fn located(log: &Value) -> Vec<(String, usize, usize, String)> {
    log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let l = &r["locations"][0]["physicalLocation"];
            let file = l["artifactLocation"]["uri"].as_str().unwrap();
            let region = &l["region"];
            (
                file.rsplit('/').next().unwrap().to_string(),
                region["startLine"].as_u64().unwrap() as usize,
                region["startColumn"].as_u64().unwrap() as usize,
                r["message"]["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// 1-based line and column where `needle` first occurs in a sample, after
/// line `after`.
fn find(file: &str, needle: &str, after: usize) -> (usize, usize) {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples").join(file)).unwrap();
    for (i, line) in text.lines().enumerate().skip(after) {
        if let Some(c) = line.find(needle) {
            return (i + 1, c + 1);
        }
    }
    panic!("{needle:?} is not in {file}");
}

#[test]
fn violations_point_at_the_fields_they_name() {
    let results = located(&samples_sarif());
    let at = |file: &str, starts: &str| -> (usize, usize) {
        let r = results.iter().find(|r| r.0 == file && r.3.starts_with(starts)).unwrap_or_else(|| panic!("no result in {file} starting {starts:?}: {results:#?}"));
        (r.1, r.2)
    };
    // A missing field: its parent, `spec:`.
    assert_eq!(at("02-gpu-training-pod-broken.yaml", "`spec.runtimeClassName` is not set"), find("02-gpu-training-pod-broken.yaml", "spec:", 0));
    // A field that is there: its key.
    assert_eq!(at("02-gpu-training-pod-broken.yaml", "`spec.tolerations` does not"), find("02-gpu-training-pod-broken.yaml", "tolerations:", 0));
    assert_eq!(at("02-gpu-training-pod-broken.yaml", "label `opencost.io/workload-category` in `metadata.labels`"), find("02-gpu-training-pod-broken.yaml", "labels:", 0));
    // An item of a list: where the item starts, the first and the second.
    let first = find("05-raycluster-oversized.yaml", "groupName: a100-workers", 0);
    assert_eq!(at("05-raycluster-oversized.yaml", "`spec.workerGroupSpecs[0]` (`a100-workers`) has `maxReplicas"), first);
    let second = find("05-raycluster-oversized.yaml", "groupName: preprocess-workers", 0);
    assert_eq!(at("05-raycluster-oversized.yaml", "`spec.workerGroupSpecs[1]` (`preprocess-workers`) has `maxReplicas"), second);
}

#[test]
fn every_result_has_a_region_inside_its_file() {
    let results = located(&samples_sarif());
    assert!(results.len() >= 10, "{results:#?}");
    for (file, line, column, message) in &results {
        let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples").join(file)).unwrap();
        let l = text.lines().nth(line - 1).unwrap_or_else(|| panic!("{file}:{line} is past the end ({message})"));
        let rest: String = l.chars().skip(column - 1).collect();
        // A key (`name:`), an item (`- `) or, for an exec request, the
        // document's first key: never a comment or blank space.
        assert!(rest.split_once(':').is_some_and(|(k, _)| !k.is_empty() && !k.starts_with('#') && !k.starts_with(' ')), "{file}:{line}:{column} is {rest:?} for {message}");
    }
}
