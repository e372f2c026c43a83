//! `aigov scan` over the bundled samples (host-test/samples) gives the
//! verdicts the samples are written to show, per rule per document, with the
//! modules, the components and the natively linked rules alike.
//!
//! Asserts admitted / denied / not governed only, never message wording, so
//! rules can improve their messages without touching this test. Needs `make
//! artifacts` first (like the case tests); a missing artifact fails the test.

use crate::common::{artifacts, root};
use std::collections::BTreeMap;
use std::path::PathBuf;

use aigov::run::admission::Identity;
use aigov::tools::report::model::{FailOn, Form, Outcome, Report, exit_status};
use aigov::tools::report::table::{Layout, WRAP_WIDTH, render_table};
use aigov::tools::scan::evaluate::{Config, scan};

/// The samples, and which rules deny or change each document: every rule
/// not named admits it unchanged (with or without warnings) or is not sent
/// it, and no rule fails to evaluate. (One entry per document, as
/// `host-test/samples/README.md` lists them: with twenty rules, naming the
/// ones that act keeps the table readable.)
const EXPECTED: &[(&str, usize, &[&str], &[&str])] = &[
    // (file, document, denied by, changed by)
    ("01-gpu-training-pod.yaml", 1, &[], &["owner-label"]),
    (
        "02-gpu-training-pod-broken.yaml",
        1,
        &["gpu-access", "gpu-runtime-class", "opencost-labels", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-runtime-defaults", "owner-label"],
    ),
    (
        "03-inference-deployment-unlabelled.yaml",
        1,
        &["model-provenance", "opencost-labels", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    ("03-inference-deployment-unlabelled.yaml", 2, &[], &[]),
    (
        "04-raycluster-mixed-compute.yaml",
        1,
        &["gpu-access", "gpu-runtime-class", "opencost-labels", "ray-cluster-limits", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "gpu-runtime-defaults", "owner-label"],
    ),
    (
        "05-raycluster-oversized.yaml",
        1,
        &["gpu-quota", "ray-cluster-limits", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    ("06-rayjob-compliant.yaml", 1, &[], &["gpu-node-avoidance", "owner-label"]),
    ("07-exec-into-gpu-pod.yaml", 1, &["exec-guard"], &[]),
    ("08-exec-into-cpu-notebook.yaml", 1, &[], &[]),
    ("30-idle-gpu-devbox.yaml", 1, &["gpu-access", "idle-gpu-pods", "workload-classification", "workload-security"], &["owner-label"]),
    (
        "31-distributed-training-pytorchjob-mismatched.yaml",
        1,
        &[
            "distributed-training",
            "gpu-access",
            "gpu-quota",
            "model-provenance",
            "resource-limits",
            "workload-classification",
            "workload-security",
        ],
        &["owner-label"],
    ),
    (
        "32-queue-admission-job-without-queue.yaml",
        1,
        &["gpu-access", "queue-admission", "resource-limits", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "30-sec-finetune-pod-insecure.yaml",
        1,
        &["gpu-access", "resource-limits", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    ("31-sec-inferenceservice-llm.yaml", 1, &["gpu-access", "model-provenance", "workload-classification"], &["owner-label"]),
    (
        "32-sec-pytorchjob-trusted.yaml",
        1,
        &["gpu-access", "gpu-quota", "model-provenance", "queue-admission", "workload-classification"],
        &["owner-label"],
    ),
    (
        "33-sec-notebook-root-untrusted.yaml",
        1,
        &["trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "34-sec-embeddings-job-latest.yaml",
        1,
        &["queue-admission", "trusted-sources", "workload-classification"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "40-gpu-quota-pod-namespace-full.yaml",
        1,
        &["gpu-access", "gpu-quota", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "40-rayservice-mig-slices.yaml",
        1,
        &["gpu-access", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "40-prov-raycluster-gpu-request-only.yaml",
        1,
        &["gpu-access", "resource-limits", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    ("41-prov-inferenceservice-documented.yaml", 1, &["gpu-access", "trusted-sources", "workload-security"], &["owner-label"]),
    (
        "42-prov-etl-cronjob-gpu-labelled.yaml",
        1,
        &["opencost-labels", "queue-admission", "tenant-node-pools", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "43-prov-deployment-undocumented-model.yaml",
        1,
        &["model-provenance", "opencost-labels", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "41-mig-profiles-mixed-container.yaml",
        1,
        &["gpu-access", "mig-profiles", "model-provenance", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "42-mig-profiles-inference-slices.yaml",
        1,
        &["gpu-access", "model-provenance", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "50-mut-cpu-etl-deployment.yaml",
        1,
        &["gpu-access", "model-provenance", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "51-gpu-class-dev-notebook-h100.yaml",
        1,
        &["gpu-class-by-namespace", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "51-mut-gpu-finetune-job.yaml",
        1,
        &["gpu-access", "gpu-runtime-class", "queue-admission", "workload-classification", "workload-security"],
        &["gpu-runtime-defaults", "owner-label"],
    ),
    ("52-gpu-class-dev-job-t4.yaml", 1, &["queue-admission", "workload-classification", "workload-security"], &["owner-label"]),
    (
        "53-gpu-access-cpu-etl-on-gpu-nodes.yaml",
        1,
        &["gpu-access", "queue-admission", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    (
        "54-gpu-access-cpu-training-job.yaml",
        1,
        &["queue-admission", "trusted-sources", "workload-classification", "workload-security"],
        &["gpu-node-avoidance", "owner-label"],
    ),
    (
        "55-tenant-deployment-other-pool.yaml",
        1,
        &["model-provenance", "tenant-node-pools", "trusted-sources", "workload-classification", "workload-security"],
        &["owner-label"],
    ),
    ("56-tenant-raycluster-own-pool.yaml", 1, &["workload-classification", "workload-security"], &["gpu-node-avoidance", "owner-label"]),
];

/// What only the cluster decides: the rules that deny these samples by
/// what they look up (the pod an exec targets, the GPUs a namespace's pods
/// hold, a namespace's tenant label). Scanned without `--cluster`, they
/// cannot decide, say so, and do not deny.
const DECIDED_BY_THE_CLUSTER: &[(&str, &str)] = &[
    ("07-exec-into-gpu-pod.yaml", "exec-guard"),
    ("40-gpu-quota-pod-namespace-full.yaml", "gpu-quota"),
    ("42-prov-etl-cronjob-gpu-labelled.yaml", "tenant-node-pools"),
    ("55-tenant-deployment-other-pool.yaml", "tenant-node-pools"),
];

fn run(form: Form) -> Report {
    run_with(form, true)
}

/// The sample files alone, without the cluster fixtures beside them
/// (state, not submissions: a newcomer's folder of manifests has none).
fn sample_files() -> Vec<PathBuf> {
    let samples = root().join("host-test/samples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// The samples scanned with their cluster fixtures, or without a cluster
/// (no `--cluster`: the sample files alone).
fn run_with(form: Form, with_cluster: bool) -> Report {
    let artifacts = artifacts();
    let samples = root().join("host-test/samples");
    let config = Config {
        paths: if with_cluster { vec![samples.clone()] } else { sample_files() },
        artifacts,
        cluster: with_cluster.then(|| samples.join("cluster")),
        settings: BTreeMap::new(),
        form,
        identity: Identity::default(),
        ..Config::default()
    };
    scan(&config).unwrap_or_else(|e| panic!("aigov scan ({}) could not run: {e:#}\n(run `make artifacts` first)", form.name()))
}

fn check(form: Form) {
    check_report(&run(form), form, &[]);
}

/// Checks `report` against [`EXPECTED`], but for the rules `admitted` that
/// admit where they deny with the cluster.
fn check_report(report: &Report, form: Form, admitted: &[(&str, &str)]) {
    assert!(report.errors.is_empty(), "unreadable samples: {:?}", report.errors);
    assert!(report.skipped.is_empty(), "skipped samples: {:?}", report.skipped);
    for (_, _, denied, changed) in EXPECTED {
        for rule in denied.iter().chain(changed.iter()) {
            assert!(report.rules.iter().any(|r| r.name == *rule), "rule {rule} is not in the report");
        }
    }
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    for d in &report.documents {
        let file = PathBuf::from(&d.source.file).file_name().unwrap().to_string_lossy().into_owned();
        seen.push((file.clone(), d.source.document));
        let Some((_, _, denied, changed)) = EXPECTED.iter().find(|(f, n, _, _)| *f == file && *n == d.source.document) else {
            problems.push(format!("{file} #{}: a sample with no expectation here", d.source.document));
            continue;
        };
        for (rule, r) in report.rules.iter().zip(&d.results) {
            let want = if admitted.contains(&(file.as_str(), rule.name.as_str())) {
                "pass, warn or -"
            } else if denied.contains(&rule.name.as_str()) {
                "DENY"
            } else if changed.contains(&rule.name.as_str()) {
                "mutate"
            } else {
                "pass, warn or -"
            };
            let ok = match r.outcome {
                Outcome::Deny => want == "DENY",
                Outcome::Mutate => want == "mutate",
                Outcome::Pass | Outcome::Warn | Outcome::NotGoverned => want == "pass, warn or -",
                Outcome::Error => false,
            };
            if !ok {
                let said = r.error.clone().or_else(|| r.response.as_ref().and_then(|x| x.message.clone())).unwrap_or_default();
                problems.push(format!("{file} #{} {}: expected {want}, got {} {said}", d.source.document, rule.name, r.outcome.cell()));
            }
        }
    }
    for (file, n, _, _) in EXPECTED {
        if !seen.iter().any(|(f, m)| f == file && m == n) {
            problems.push(format!("{file} #{n}: expected, but not scanned"));
        }
    }
    assert!(problems.is_empty(), "scan of the samples with the {}s:\n  {}", form.name(), problems.join("\n  "));
}

/// `aigov scan host-test/samples` without `--cluster`, as a newcomer runs
/// it: no rule denies for a lookup it had no cluster for (a rule every
/// sample admits, tenant-node-pools, used to deny every namespaced
/// workload for a namespace "not found"); everything else is as with the
/// cluster, and the rules that could not check everything are named once.
#[test]
fn samples_without_a_cluster_deny_only_what_needs_none() {
    let report = run_with(Form::Native, false);
    check_report(&report, Form::Native, DECIDED_BY_THE_CLUSTER);
    // What the cluster decides is noted, rule by rule; nothing else.
    let mut unchecked = std::collections::BTreeSet::new();
    for d in &report.documents {
        let file = PathBuf::from(&d.source.file).file_name().unwrap().to_string_lossy().into_owned();
        for (rule, r) in report.rules.iter().zip(&d.results) {
            if !r.unchecked.is_empty() {
                unchecked.insert(rule.name.as_str());
                assert!(r.response.as_ref().is_some_and(|x| x.accepted && x.warnings.iter().all(|w| !w.starts_with("not checked"))));
            }
            if DECIDED_BY_THE_CLUSTER.contains(&(file.as_str(), rule.name.as_str())) {
                assert!(!r.unchecked.is_empty(), "{file}: {} says nothing of what it skipped", rule.name);
            }
        }
    }
    assert_eq!(unchecked.into_iter().collect::<Vec<_>>(), ["exec-guard", "gpu-quota", "tenant-node-pools"]);
    assert!(
        run(Form::Native).documents.iter().all(|d| d.results.iter().all(|r| r.unchecked.is_empty())),
        "with the cluster, all is checked"
    );

    // Said once: on stderr (JSON, whose results carry `notChecked`), and
    // above the table's summary.
    let scan = |format: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_aigov"))
            .args(["scan", "--native", "--format", format, "--settings", &crate::common::trusted_sources_settings()])
            .args(sample_files())
            .output()
            .unwrap()
    };
    let json = scan("json");
    assert_eq!(json.status.code(), Some(1), "some samples are meant to be denied");
    let stderr = String::from_utf8(json.stderr).unwrap();
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("without `--cluster`")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].starts_with("aigov scan: not fully checked without `--cluster`"), "{stderr}");
    for rule in ["exec-guard on 2 document(s): ", "; gpu-quota on ", "; tenant-node-pools on "] {
        assert!(said[0].contains(rule), "{rule} in {stderr}");
    }
    assert!(said[0].ends_with("give `--cluster DIR` with the cluster's objects to check them"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let exec = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source"]["file"].as_str().unwrap().ends_with("07-exec-into-gpu-pod.yaml"))
        .unwrap();
    assert_eq!(exec["results"]["exec-guard"]["verdict"], "pass");
    assert!(!exec["results"]["exec-guard"]["notChecked"][0].as_str().unwrap().is_empty());
    let table = scan("table");
    let stdout = String::from_utf8(table.stdout).unwrap();
    assert_eq!(stdout.matches("Not fully checked without `--cluster`").count(), 1, "{stdout}");
    assert!(table.stderr.is_empty(), "the table says it itself: {}", String::from_utf8_lossy(&table.stderr));
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
    let b = run(Form::Native);
    for layout in [Layout::Compact, Layout::Wide] {
        assert_eq!(render_table(&a, WRAP_WIDTH, layout, FailOn::Deny), render_table(&b, WRAP_WIDTH, layout, FailOn::Deny));
    }
    assert_eq!(exit_status(&a, FailOn::Deny), 1, "some samples are meant to be denied");
    assert_eq!(exit_status(&a, FailOn::None), 0);
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

    let json = aigov::tools::report::json::to_json(&report);
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

    let table = render_table(&report, WRAP_WIDTH, Layout::Compact, FailOn::Deny);
    assert!(table.contains(&format!("({} violation", summary.violations)), "{table}");
    let details = table.split("What the rules said").nth(1).unwrap().split("\nSummary:").next().unwrap();
    let bullets = details
        .lines()
        .filter(|l| l.starts_with("    - ") && !l.starts_with("    - warning:") && !l.starts_with("    - audit annotation"))
        .count();
    assert_eq!(bullets, summary.violations, "one bullet per violation:\n{details}");
}

/// The bundle's answer, split per rule, is what each rule answers alone:
/// the whole report (every response, message, warning and diff) is the
/// same evaluated either way, in every form, and with one worker or two.
#[test]
fn the_bundle_split_per_rule_agrees_with_each_rule_alone() {
    use aigov::tools::scan::evaluate::Strategy;
    for form in [Form::Native, Form::Module, Form::Component] {
        let artifacts = artifacts();
        let samples = root().join("host-test/samples");
        let mut paths = vec![samples.clone()];
        // The benchmark's requests too (plain objects are made of them).
        paths.push(root().join("host-test/bench"));
        let config = |strategy, jobs| Config {
            paths: paths.clone(),
            artifacts: artifacts.clone(),
            cluster: Some(samples.join("cluster")),
            settings: BTreeMap::new(),
            form,
            identity: Identity::default(),
            strategy,
            jobs,
            ..Config::default()
        };
        let alone = scan(&config(Strategy::PerRule, 1)).unwrap();
        let bundled = scan(&config(Strategy::Bundle, 2)).unwrap();
        assert!(alone.documents.len() > 30);
        assert_eq!(alone.documents.len(), bundled.documents.len());
        for (a, b) in alone.documents.iter().zip(&bundled.documents) {
            assert_eq!(a, b, "{}: {} differs", form.name(), a.source);
        }
        assert_eq!(alone, bundled);
    }
}
