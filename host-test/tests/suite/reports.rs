//! The SARIF report locates each violation at the field it names, in the
//! sample files as they are written: checked against the files' real lines.
//! And the reports `aigov scan` streams (through temporary files) are the
//! reports rendered from a finished scan, byte for byte.

use std::path::PathBuf;

use std::sync::Arc;

use aigov::run::admission::Identity;
use aigov::run::cluster::FixtureCluster;
use aigov::tools::report::model::{FailOn, Form, Outcome};
use aigov::tools::report::{junit, policyreport, sarif};
use aigov::tools::scan::evaluate::{self, Config, Scanner};
use aigov::tools::scan::{self, Format};
use serde_json::Value;

fn samples_config(extra: &[PathBuf]) -> Config {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut paths = vec![root.clone()];
    paths.extend_from_slice(extra);
    Config {
        paths,
        artifacts: PathBuf::from("artifacts"),
        cluster: Some(root.join("cluster")),
        settings: Default::default(),
        form: Form::Native,
        identity: Identity::default(),
        ..Config::default()
    }
}

fn samples_sarif() -> Value {
    sarif::render(&evaluate::scan(&samples_config(&[])).unwrap()).unwrap()
}

/// What `aigov scan --format FORMAT` writes.
fn streamed(config: &Config, format: Format) -> String {
    let cluster = Arc::new(FixtureCluster::from_dir(config.cluster.as_ref().unwrap()).unwrap());
    let scanner = Scanner::new(config, cluster).unwrap();
    let mut out = Vec::new();
    scan::write_report(&scanner, format, FailOn::None, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn streamed_reports_are_the_reports_of_the_finished_scan() {
    // The samples, and a file that cannot be parsed (SARIF reports it as a
    // notification, known only at the end).
    let dir = std::env::temp_dir().join(format!("aigov-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("broken.yaml"), "kind: Pod\nmetadata: [unclosed\n").unwrap();
    let config = samples_config(std::slice::from_ref(&dir));
    let report = evaluate::scan(&config).unwrap();
    assert!(report.documents.len() > 20 && !report.errors.is_empty(), "{} documents, {:?}", report.documents.len(), report.errors);

    // What every format must hold, counted from the report itself.
    let results = || report.documents.iter().flat_map(|d| d.results.iter());
    let denied = results().filter(|r| r.outcome == Outcome::Deny).count();
    let governed = results().filter(|r| r.outcome != Outcome::NotGoverned).count();
    let sarif_results: usize = results()
        .map(|r| match r.outcome {
            Outcome::Deny => r.violations().len() + r.response.as_ref().map_or(0, |x| x.warnings.len()),
            Outcome::Warn => r.response.as_ref().map_or(0, |x| x.warnings.len()),
            Outcome::Error => 1,
            _ => 0,
        })
        .sum();
    assert!(denied > 5 && governed > denied);

    let junit = streamed(&config, Format::Junit);
    assert!(junit == junit::render(&report).unwrap(), "the streamed JUnit report is not the rendered one");
    let header = format!("<testsuites name=\"aigov scan\" tests=\"{}\" failures=\"{denied}\"", report.documents.len() * report.rules.len());
    assert!(junit.contains(&header), "{header} in {}", &junit[..300]);
    assert_eq!(junit.matches("<testcase ").count(), report.documents.len() * report.rules.len());
    assert_eq!(junit.matches("<failure ").count(), denied);

    let sarif_streamed: Value = serde_json::from_str(&streamed(&config, Format::Sarif)).unwrap();
    let sarif_rendered = sarif::render(&report).unwrap();
    assert!(sarif_streamed == sarif_rendered, "the streamed SARIF log is not the rendered one");
    assert_eq!(sarif_rendered["runs"][0]["invocations"][0]["executionSuccessful"], false);
    assert_eq!(sarif_rendered["runs"][0]["results"].as_array().unwrap().len(), sarif_results);

    // The reports carry the time they were made: compare at one time.
    let now = |text: &str| -> String {
        text.lines().map(|l| if l.trim_start().starts_with("seconds: ") { "    seconds: 0" } else { l }).collect::<Vec<_>>().join("\n")
    };
    let rendered = policyreport::render(&report, &chrono::Utc::now()).unwrap();
    assert!(rendered.matches("kind: PolicyReport").count() >= 3, "one report per namespace");
    let policyreport = streamed(&config, Format::Policyreport);
    assert!(now(&policyreport) == now(&rendered), "the streamed PolicyReports are not the rendered ones");
    assert_eq!(policyreport.lines().filter(|l| l.starts_with("  result: ")).count(), governed);
    let failed: usize = policyreport.lines().filter_map(|l| l.strip_prefix("  fail: ")).map(|n| n.parse::<usize>().unwrap()).sum();
    assert_eq!(failed, denied);
    std::fs::remove_dir_all(&dir).unwrap();
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
        let r = results
            .iter()
            .find(|r| r.0 == file && r.3.starts_with(starts))
            .unwrap_or_else(|| panic!("no result in {file} starting {starts:?}: {results:#?}"));
        (r.1, r.2)
    };
    // A missing field: its parent, `spec:`.
    assert_eq!(
        at("02-gpu-training-pod-broken.yaml", "`spec.runtimeClassName` is not set"),
        find("02-gpu-training-pod-broken.yaml", "spec:", 0)
    );
    // A field that is there: its key.
    assert_eq!(
        at("02-gpu-training-pod-broken.yaml", "`spec.tolerations` does not"),
        find("02-gpu-training-pod-broken.yaml", "tolerations:", 0)
    );
    assert_eq!(
        at("02-gpu-training-pod-broken.yaml", "label `opencost.io/workload-category` in `metadata.labels`"),
        find("02-gpu-training-pod-broken.yaml", "labels:", 0)
    );
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
        assert!(
            rest.split_once(':').is_some_and(|(k, _)| !k.is_empty() && !k.starts_with('#') && !k.starts_with(' ')),
            "{file}:{line}:{column} is {rest:?} for {message}"
        );
    }
}
