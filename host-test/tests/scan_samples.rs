//! `aigov scan` over the bundled samples (host-test/samples) gives the
//! verdicts the samples are written to show, per rule per document, with the
//! modules, the components and the natively linked rules alike.
//!
//! Asserts admitted / denied / not governed only, never message wording, so
//! rules can improve their messages without touching this test. Needs `make
//! artifacts` first (like the case tests); a missing artifact fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use aigov::tools::scan::{Config, Form, Identity, Outcome, Report, scan};

/// What a rule should say about a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Admitted (with or without warnings).
    Admit,
    /// Denied.
    Deny,
    /// Not sent to the rule.
    Skip,
}
use Expect::{Admit, Deny, Skip};

fn class(o: Outcome) -> Option<Expect> {
    match o {
        Outcome::Pass | Outcome::Warn => Some(Admit),
        Outcome::Deny => Some(Deny),
        Outcome::NotGoverned => Some(Skip),
        Outcome::Error => None,
    }
}

const RULES: [&str; 7] = [
    "gpu-runtime-class",
    "ray-cluster-limits",
    "exec-guard",
    "opencost-labels",
    "model-provenance",
    "resource-limits",
    "workload-classification",
];

/// (file, document number) and the verdicts in [`RULES`] order.
const EXPECTED: &[(&str, usize, [Expect; 7])] = &[
    //                                          gpu-rc  ray    exec   opencost prov  limits classif
    ("01-gpu-training-pod.yaml", 1, [Admit, Skip, Skip, Admit, Skip, Admit, Admit]),
    ("02-gpu-training-pod-broken.yaml", 1, [Deny, Skip, Skip, Deny, Skip, Admit, Deny]),
    ("03-inference-deployment-unlabelled.yaml", 1, [Admit, Skip, Skip, Deny, Deny, Admit, Deny]),
    ("03-inference-deployment-unlabelled.yaml", 2, [Skip, Skip, Skip, Skip, Skip, Skip, Skip]),
    ("04-raycluster-seed-mixed-compute.yaml", 1, [Deny, Admit, Skip, Deny, Skip, Admit, Deny]),
    ("05-raycluster-oversized.yaml", 1, [Admit, Deny, Skip, Admit, Skip, Admit, Deny]),
    ("06-rayjob-compliant.yaml", 1, [Admit, Admit, Skip, Admit, Admit, Admit, Deny]),
    ("07-exec-into-gpu-pod.yaml", 1, [Skip, Skip, Deny, Skip, Skip, Skip, Skip]),
    ("08-exec-into-cpu-notebook.yaml", 1, [Skip, Skip, Admit, Skip, Skip, Skip, Skip]),
    ("40-prov-raycluster-gpu-request-only.yaml", 1, [Admit, Admit, Skip, Admit, Skip, Deny, Deny]),
    ("41-prov-inferenceservice-documented.yaml", 1, [Admit, Skip, Skip, Admit, Admit, Admit, Admit]),
    ("42-prov-etl-cronjob-gpu-labelled.yaml", 1, [Admit, Skip, Skip, Deny, Skip, Admit, Deny]),
    ("43-prov-deployment-undocumented-model.yaml", 1, [Admit, Skip, Skip, Deny, Deny, Admit, Deny]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(form: Form) -> Report {
    let artifacts = std::env::var_os("AIGOV_ARTIFACTS").map_or_else(|| root().join("artifacts"), PathBuf::from);
    let samples = root().join("host-test/samples");
    let config = Config {
        paths: vec![samples.clone()],
        artifacts,
        cluster: Some(samples.join("cluster")),
        settings: BTreeMap::new(),
        form,
        identity: Identity::default(),
    };
    scan(&config).unwrap_or_else(|e| panic!("aigov scan ({}) could not run: {e:#}\n(run `make artifacts` first)", form.name()))
}

fn check(form: Form) {
    let report = run(form);
    assert!(report.errors.is_empty(), "unreadable samples: {:?}", report.errors);
    assert!(report.skipped.is_empty(), "skipped samples: {:?}", report.skipped);
    let columns: Vec<usize> = RULES
        .iter()
        .map(|r| report.rules.iter().position(|x| x.name == *r).unwrap_or_else(|| panic!("rule {r} is not in the report")))
        .collect();

    let mut seen = Vec::new();
    let mut problems = Vec::new();
    for d in &report.documents {
        let file = PathBuf::from(&d.source.file).file_name().unwrap().to_string_lossy().into_owned();
        seen.push((file.clone(), d.source.document));
        let Some((_, _, expected)) = EXPECTED.iter().find(|(f, n, _)| *f == file && *n == d.source.document) else {
            problems.push(format!("{file} #{}: a sample with no expectation here", d.source.document));
            continue;
        };
        for ((rule, col), want) in RULES.iter().zip(&columns).zip(expected) {
            let r = &d.results[*col];
            let got = class(r.outcome);
            if got != Some(*want) {
                let said = r.error.clone().or_else(|| r.response.as_ref().and_then(|x| x.message.clone())).unwrap_or_default();
                problems.push(format!("{file} #{} {rule}: expected {want:?}, got {} {said}", d.source.document, r.outcome.cell()));
            }
        }
    }
    for (file, n, _) in EXPECTED {
        if !seen.iter().any(|(f, m)| f == file && m == n) {
            problems.push(format!("{file} #{n}: expected, but not scanned"));
        }
    }
    assert!(problems.is_empty(), "scan of the samples with the {}s:\n  {}", form.name(), problems.join("\n  "));
}

#[test]
fn samples_with_modules() {
    check(Form::Module);
}

#[test]
fn samples_with_components() {
    check(Form::Component);
}

#[test]
fn samples_natively() {
    check(Form::Native);
}

#[test]
fn cluster_fixtures_are_not_scanned_and_output_is_stable() {
    let a = run(Form::Native);
    assert!(a.documents.iter().all(|d| !d.source.file.contains("/cluster/")));
    let text = aigov::tools::scan::render_table(&a, aigov::tools::scan::WRAP_WIDTH, aigov::tools::scan::FailOn::Deny);
    let b = run(Form::Native);
    assert_eq!(text, aigov::tools::scan::render_table(&b, aigov::tools::scan::WRAP_WIDTH, aigov::tools::scan::FailOn::Deny));
    assert_eq!(aigov::tools::scan::exit_status(&a, aigov::tools::scan::FailOn::Deny), 1, "some samples are meant to be denied");
    assert_eq!(aigov::tools::scan::exit_status(&a, aigov::tools::scan::FailOn::None), 0);
}

#[test]
fn violation_counts_agree_in_every_output_form() {
    let report = run(Form::Native);
    let summary = report.summary();
    // Every violation is one line of a rejection's message.
    let lines: usize = report
        .documents
        .iter()
        .flat_map(|d| &d.results)
        .filter_map(|r| r.response.as_ref().filter(|x| !x.accepted))
        .map(|x| x.message.as_deref().unwrap_or_default().lines().filter(|l| !l.trim().is_empty()).count())
        .sum();
    assert!(summary.violations > 0 && summary.violations == lines, "{} violations, {lines} message lines", summary.violations);

    let json = aigov::tools::scan::to_json(&report);
    assert_eq!(json["summary"]["violations"], summary.violations);
    let listed: usize = json["documents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["results"].as_object().unwrap().values())
        .filter_map(|r| r.get("violations"))
        .map(|v| v.as_array().unwrap().len())
        .sum();
    assert_eq!(listed, summary.violations, "the JSON lists as many violations as it counts");

    let table = aigov::tools::scan::render_table(&report, aigov::tools::scan::WRAP_WIDTH, aigov::tools::scan::FailOn::Deny);
    assert!(table.contains(&format!("({} violation", summary.violations)), "{table}");
    let details = table.split("What the rules said").nth(1).unwrap().split("\nSummary:").next().unwrap();
    let bullets = details.lines().filter(|l| l.starts_with("    - ") && !l.starts_with("    - warning:") && !l.starts_with("    - audit annotation")).count();
    assert_eq!(bullets, summary.violations, "one bullet per violation:\n{details}");
}
