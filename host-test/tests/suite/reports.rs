//! The SARIF report locates each violation at the field it names, in the
//! sample files as they are written: checked against the files' real lines
//! (keys in brackets, `limits[nvidia.com/gpu]`, and `List` items too).
//! And the reports `aigov scan` streams (through temporary files) are the
//! reports rendered from a finished scan, byte for byte.
//!
//! And what CI meets, through the binary: a file that does not parse fails
//! every report and is named on stderr, as a JUnit `<error>` and a
//! PolicyReport `error` result too; standard input is `<stdin>` in every
//! format; a path without manifests fails; a byte-order mark is read; a
//! file nested 100,000 brackets deep is refused at once.

use std::path::PathBuf;

use std::sync::Arc;

use aigov::run::admission::Identity;
use aigov::run::cluster::FixtureCluster;
use aigov::tools::report::model::{FailOn, Form, Outcome};
use aigov::tools::report::table::Layout;
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
    scan::write_report(&scanner, format, FailOn::None, Layout::Compact, &mut out).unwrap();
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

    // A test case per document and rule, and one per file that could not
    // be parsed.
    let errors = report.errors.len();
    let junit = streamed(&config, Format::Junit);
    assert!(junit == junit::render(&report).unwrap(), "the streamed JUnit report is not the rendered one");
    let header =
        format!("<testsuites name=\"aigov scan\" tests=\"{}\" failures=\"{denied}\"", report.documents.len() * report.rules.len() + errors);
    assert!(junit.contains(&header), "{header} in {}", &junit[..300]);
    assert_eq!(junit.matches("<testcase ").count(), report.documents.len() * report.rules.len() + errors);
    assert_eq!(junit.matches("<failure ").count(), denied);
    assert_eq!(junit.matches("<error type=\"unreadable\"").count(), errors);

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
    assert_eq!(policyreport.lines().filter(|l| l.starts_with("  result: ")).count(), governed + errors);
    assert_eq!(policyreport.matches("  result: error\n").count(), errors);
    let failed: usize = policyreport.lines().filter_map(|l| l.strip_prefix("  fail: ")).map(|n| n.parse::<usize>().unwrap()).sum();
    assert_eq!(failed, denied);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn openreports_hold_what_the_policyreports_hold_split_to_fit_etcd() {
    use policyreport::{Flavour, MAX_RESULTS_BYTES, render_as};
    let config = samples_config(&[]);
    let report = evaluate::scan(&config).unwrap();
    let now = chrono::Utc::now();
    let docs = |text: &str| -> Vec<Value> {
        text.split("---\n").filter(|d| !d.trim().is_empty()).map(|d| serde_norway::from_str(d).unwrap()).collect()
    };
    let wg = docs(&policyreport::render(&report, &now).unwrap());
    let open = docs(&render_as(&report, &now, Flavour::OpenReports, MAX_RESULTS_BYTES).unwrap());
    assert_eq!(wg.len(), open.len(), "one report per namespace in either flavour");
    for (w, o) in wg.iter().zip(&open) {
        assert_eq!(o["apiVersion"], "openreports.io/v1alpha1");
        let kind = match w["kind"].as_str().unwrap() {
            "PolicyReport" => "Report",
            "ClusterPolicyReport" => "ClusterReport",
            k => panic!("{k}"),
        };
        assert_eq!(o["kind"], kind);
        assert_eq!(o["source"], "aigov");
        for key in ["metadata", "results", "summary"] {
            assert_eq!(o[key], w[key], "{key} of {}", w["metadata"]["name"]);
        }
    }
    // The same streamed by `aigov scan --format openreports`.
    let streamed = streamed(&config, Format::Openreports);
    assert_eq!(docs(&streamed).len(), open.len());
    assert!(streamed.contains("kind: Report\n") && streamed.contains("source: aigov\n"));

    // A namespace whose results pass the limit is split: each report under
    // it (a single result larger than the limit would have one to itself),
    // named after the namespace in order, with its own summary, and the
    // results together are the namespace's, in order.
    let largest = wg.iter().max_by_key(|r| r["results"].as_array().map_or(0, Vec::len)).unwrap();
    let namespace = largest["metadata"]["namespace"].as_str().unwrap();
    let results = largest["results"].as_array().unwrap();
    assert!(results.len() >= 4, "{namespace}: {} results", results.len());
    let limit = serde_norway::to_string(&results[..2]).unwrap().len();
    let split = docs(&render_as(&report, &now, Flavour::OpenReports, limit).unwrap());
    let parts: Vec<&Value> = split.iter().filter(|r| r["metadata"]["namespace"] == namespace).collect();
    assert!(parts.len() >= 2, "{} parts", parts.len());
    let mut together = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let name = if i == 0 { format!("aigov-{namespace}") } else { format!("aigov-{namespace}-{}", i + 1) };
        assert_eq!(part["metadata"]["name"], name.as_str());
        let these = part["results"].as_array().unwrap();
        assert!(serde_norway::to_string(these).unwrap().len() <= limit || these.len() == 1, "{name} is over the limit");
        let fails = these.iter().filter(|r| r["result"] == "fail").count();
        assert_eq!(part["summary"]["fail"], fails, "{name}'s summary");
        together.extend(these.iter().cloned());
    }
    assert_eq!(&together, results, "split, the results are the namespace's, in order");
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

/// A violation naming a key in brackets (`limits[nvidia.com/gpu]`) points at
/// that key, in a plain manifest and in a `List` item.
#[test]
fn keys_in_brackets_are_located() {
    let dir = std::env::temp_dir().join(format!("aigov-brackets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pod = "\
apiVersion: v1
kind: Pod
metadata:
  name: four
  namespace: ml
spec:
  containers:
    - name: main
      image: nvcr.io/nvidia/pytorch:24.05-py3
      resources:
        limits:
          cpu: 1
          nvidia.com/gpu: four
";
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n{}",
        pod.lines().map(|l| format!("  {l}\n")).collect::<String>().replacen("  apiVersion", "- apiVersion", 1)
    );
    std::fs::write(dir.join("pod.yaml"), pod).unwrap();
    std::fs::write(dir.join("list.yaml"), &list).unwrap();
    let config = Config { paths: vec![dir.clone()], artifacts: PathBuf::from("artifacts"), form: Form::Native, ..Config::default() };
    let results = located(&sarif::render(&evaluate::scan(&config).unwrap()).unwrap());
    for (file, text) in [("pod.yaml", pod), ("list.yaml", list.as_str())] {
        let line = text.lines().position(|l| l.trim_start() == "nvidia.com/gpu: four").unwrap() + 1;
        let column = text.lines().nth(line - 1).unwrap().find("nvidia.com").unwrap() + 1;
        let named: Vec<_> = results.iter().filter(|r| r.0 == file && r.3.contains("limits[nvidia.com/gpu]")).collect();
        assert!(!named.is_empty(), "no result in {file} names the GPU limit: {results:#?}");
        for r in named {
            assert_eq!((r.1, r.2), (line, column), "{file}: {}", r.3);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `aigov scan` run as CI runs it; stdin from `input`.
fn aigov(args: &[&str], input: &str) -> (i32, String, String) {
    use std::io::Write as _;
    // Every scan here runs every rule: trusted-sources with its example
    // settings, as `make demo` gives them.
    let settings = crate::common::trusted_sources_settings();
    let extra: &[&str] = if args.first() == Some(&"scan") { &["--settings", &settings] } else { &[] };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(args)
        .args(extra)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {containers: [{name: c, image: busybox}]}\n";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aigov-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_file_that_does_not_parse_fails_every_report_and_is_named_on_stderr() {
    let dir = temp_dir("unparsable");
    std::fs::write(dir.join("good.yaml"), POD).unwrap();
    std::fs::write(dir.join("broken.yaml"), format!("{POD}---\nkind: Pod\nmetadata: [unclosed\n")).unwrap();
    let broken = dir.join("broken.yaml").display().to_string();
    for format in ["table", "json", "sarif", "junit", "policyreport"] {
        let (code, out, err) = aigov(&["scan", "--native", "--format", format, dir.to_str().unwrap()], "");
        assert_eq!(code, 1, "{format}: {err}");
        let said = format!("aigov scan: {broken} could not be read: document 2 is not valid YAML or JSON: ");
        match format {
            // The table says it on stdout, where it is read.
            "table" => assert!(out.contains(&format!("ERROR {broken}: document 2 is not valid YAML or JSON")), "{out}"),
            _ => assert!(err.contains(&said), "{format}: stderr does not name the file: {err:?}"),
        }
        match format {
            "json" => {
                let v: Value = serde_json::from_str(&out).unwrap();
                assert_eq!(v["errors"][0]["source"], serde_json::json!({"file": broken, "document": 2}));
            }
            "sarif" => {
                let v: Value = serde_json::from_str(&out).unwrap();
                let run = &v["runs"][0]["invocations"][0];
                assert_eq!(run["executionSuccessful"], false);
                assert!(run["toolExecutionNotifications"][0]["message"]["text"].as_str().unwrap().starts_with("document 2 is not valid"));
            }
            "junit" => {
                // 20 rules on the good file (some deny it), and the broken one.
                let head = out.lines().nth(1).unwrap();
                assert!(
                    head.starts_with("<testsuites name=\"aigov scan\" tests=\"21\" failures=\"") && head.contains(" errors=\"1\""),
                    "{out}"
                );
                assert!(out.contains("<testsuite name=\"aigov-scan\" tests=\"1\" failures=\"0\" errors=\"1\""), "{out}");
                assert!(
                    out.contains(&format!(
                        "<testcase name=\"{broken} #2\" classname=\"aigov.read\" time=\"0\">\n      <error type=\"unreadable\" message=\"document 2 is not valid YAML or JSON: "
                    )),
                    "{out}"
                );
            }
            "policyreport" => {
                let reports: Vec<Value> =
                    serde_norway::Deserializer::from_str(&out).map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap()).collect();
                let cluster = reports.iter().find(|r| r["kind"] == "ClusterPolicyReport").unwrap();
                let result = &cluster["results"][0];
                assert_eq!((result["policy"].as_str(), result["result"].as_str()), (Some("aigov-scan"), Some("error")));
                assert_eq!(result["properties"], serde_json::json!({"file": broken, "document": "2"}));
                assert!(result["message"].as_str().unwrap().starts_with("document 2 is not valid YAML or JSON"));
                assert_eq!(cluster["summary"]["error"], 1);
            }
            _ => {}
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn standard_input_is_named_stdin_in_every_format() {
    let broken = "kind: Pod\nmetadata: [unclosed\n";
    for format in ["table", "json", "sarif", "junit", "policyreport"] {
        // The pod is denied (by trusted-sources, among others): named in
        // every report's results.
        for input in [POD, broken] {
            let (code, out, err) = aigov(&["scan", "--native", "--format", format, "-"], input);
            assert_eq!(code, 1, "{format}: {err}");
            let named = match format {
                "sarif" => out.contains("\"uri\": \"%3Cstdin%3E\""),
                "junit" => out.contains("name=\"&lt;stdin&gt;"),
                "policyreport" => out.contains("file: <stdin>"),
                _ => out.contains("<stdin>"),
            };
            assert!(named, "{format} does not name standard input `<stdin>`:\n{out}");
            assert!(!out.contains("\"-\"") && !out.contains("file: '-'") && !err.contains(" - could not"), "{format}: {out}{err}");
        }
    }
}

#[test]
fn a_path_without_manifests_fails_and_says_what_was_searched() {
    let dir = temp_dir("no-manifests");
    std::fs::create_dir_all(dir.join("empty/.git")).unwrap();
    std::fs::write(dir.join("empty/.git/config.yaml"), POD).unwrap();
    std::fs::write(dir.join("empty/README.md"), "").unwrap();
    let empty = dir.join("empty");
    // Nothing to check: its own exit status, neither denied (1) nor could not run (2).
    let (code, _, err) = aigov(&["scan", "--native", empty.to_str().unwrap()], "");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("no manifests in {}: no .yaml, .yml or .json file in it or below it", empty.display())), "{err}");
    // Files, but nothing Kubernetes would take: nothing was checked.
    std::fs::create_dir_all(dir.join("ci")).unwrap();
    std::fs::write(dir.join("ci/workflow.yaml"), "on: push\njobs: {}\n").unwrap();
    std::fs::write(dir.join("ci/empty.yaml"), "# nothing\n").unwrap();
    for format in ["table", "json"] {
        let (code, out, err) = aigov(&["scan", "--native", "--format", format, dir.join("ci").to_str().unwrap()], "");
        assert_eq!(code, 3, "{format}: {out}");
        assert!(err.contains("aigov scan: no Kubernetes object to check in "), "{err}");
        assert!(
            err.contains("(2 file(s) read, 1 document(s) skipped as not Kubernetes objects): point the scan at the manifests"),
            "{err}"
        );
    }
    let (code, _, err) = aigov(&["scan", "--native", "--fail-on", "none", dir.join("ci").to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    // An empty rendering on stdin is nothing to check too.
    let (code, _, err) = aigov(&["scan", "--native", "-"], "");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("no Kubernetes object to check in <stdin>"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_byte_order_mark_is_read() {
    let dir = temp_dir("bom");
    std::fs::write(dir.join("pod.yaml"), format!("\u{feff}{POD}")).unwrap();
    let (_, out, err) = aigov(&["scan", "--native", "--format", "json", dir.join("pod.yaml").to_str().unwrap()], "");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["summary"]["documents"].as_u64(), v["summary"]["errors"].as_u64()), (Some(1), Some(0)), "{out}{err}");
    assert_eq!(v["documents"][0]["name"], "p");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files of 1 MB nested all the way down (100,000 brackets, 200 KB, took
/// the parser half a minute to refuse, growing with the square of the
/// depth): refused before the parser sees them, YAML and JSON alike.
#[test]
fn a_file_nested_too_deep_is_refused() {
    let dir = temp_dir("deep");
    let n = 600_000;
    let yaml = format!("{POD}data: {}{}\n", "[".repeat(n), "]".repeat(n));
    let json = format!("{}1{}", "{\"a\": ".repeat(n / 3), "}".repeat(n / 3));
    assert!(yaml.len() > 1 << 20 && json.len() > 1 << 20);
    std::fs::write(dir.join("deep.yaml"), yaml).unwrap();
    std::fs::write(dir.join("deep.json"), json).unwrap();
    let (code, out, err) = aigov(&["scan", "--native", "--format", "json", dir.to_str().unwrap()], "");
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let reasons: Vec<&str> = v["errors"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(
        reasons,
        [
            "brackets (`[`, `{`) nest more than 128 levels deep at line 1, column 769; the YAML and JSON parsers allow 128: flatten the document",
            "brackets (`[`, `{`) nest more than 128 levels deep at line 5, column 135; the YAML and JSON parsers allow 128: flatten the document",
        ]
    );
    assert!(err.contains("deep.json could not be read: brackets (`[`, `{`) nest more than 128 levels deep"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
