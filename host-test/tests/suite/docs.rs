//! The documentation says what the program does:
//!
//! - every rule README's settings table gives each setting's default as
//!   the rule reads it (compared by meaning: the cell, written as that
//!   setting's value, configures the rule as its defaults do);
//! - the commands of the README's "Checking workloads before you submit"
//!   run as they are written, on files named as they are there;
//! - so do the rule READMEs' `aigov scan` commands, each checking its rule;
//! - so does the quick start's `aigov eval` for a denied workload, with
//!   the message its kubectl error line shows;
//! - so do the platform engineer's quick start's `aigov` commands, each
//!   checking exactly the rules it turned on;
//! - every sample manifest a Markdown file names exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{artifacts, root};

/// The first backticked span of a table cell, when the cell is that span
/// alone or that span and a parenthesis (`` `null` (no cap) ``): a value.
/// Anything else (`none: **required**`, `` `requireRunAsNonRoot`'s value ``)
/// is prose, which no value can be compared with.
fn literal(cell: &str) -> Option<&str> {
    let rest = cell.strip_prefix('`')?;
    let (value, after) = rest.split_once('`')?;
    let after = after.trim();
    (after.is_empty() || after.starts_with('(')).then_some(value)
}

#[test]
fn every_settings_table_states_the_defaults_the_rule_reads() {
    let mut problems = Vec::new();
    let mut compared = 0;
    for rule in aigov::run::native::RULES {
        let name = rule.metadata.name;
        let readme = std::fs::read_to_string(root().join("policies").join(name).join("README.md")).unwrap();
        let Some(section) = readme.split("\n## Settings\n").nth(1).map(|s| s.split("\n## ").next().unwrap_or_default()) else {
            problems.push(format!("{name}: README.md has no `## Settings` section"));
            continue;
        };
        let defaults = (rule.effective_settings)("{}").unwrap();
        for line in section.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split(" | ").collect();
            let (Some(keys), Some(cell)) = (cells.first(), cells.get(1)) else { continue };
            let Some(value) = literal(cell) else { continue };
            let value: Value = match serde_norway::from_str(value) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{name}: the default `{value}` is not YAML ({e}): {line}"));
                    continue;
                }
            };
            for key in keys.trim_start_matches("| ").split(", ").map(|k| k.trim_matches('`')) {
                let Some(default) = defaults.get(key) else {
                    problems.push(format!("{name}: the settings table names `{key}`, which is not a setting"));
                    continue;
                };
                // The cell written as that key's value, read as the rule reads it.
                match (rule.effective_settings)(&json!({ key: value }).to_string()) {
                    Ok(read) if read.get(key) == Some(default) => compared += 1,
                    Ok(read) => problems.push(format!(
                        "{name}: the table gives `{key}` the default `{value}`, which reads as {}, but the default is {default}",
                        read.get(key).unwrap_or(&Value::Null)
                    )),
                    Err(e) => problems.push(format!("{name}: the table's default for `{key}`, `{value}`, is refused: {e}")),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(compared > 250, "only {compared} defaults compared");
}

/// The walkthrough's command block: its `target/release/aigov` lines.
fn walkthrough() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme.split("\n## Checking workloads before you submit\n").nth(1).unwrap();
    let block = section.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    block.lines().map(|l| l.split(" # ").next().unwrap().trim().to_string()).filter(|l| l.contains("target/release/aigov")).collect()
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
}

/// The files the walkthrough names, made from the samples, in a directory
/// laid out as the repository is (`target/release/aigov`, `artifacts`):
/// one per test (`test`), since the tests of one process run at once.
fn workspace(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aigov-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let samples = root().join("host-test/samples");
    for entry in std::fs::read_dir(&samples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "yaml") {
            copy(&path, &dir.join("my-manifests").join(path.file_name().unwrap()));
        }
    }
    copy(&root().join("host-test/settings/trusted-sources.yaml"), &dir.join("ts.yaml"));
    copy(&samples.join("51-mut-gpu-finetune-job.yaml"), &dir.join("job.yaml"));
    copy(&root().join("host-test/bench/exec-request.json"), &dir.join("exec-request.yaml"));
    // The pod the exec request targets, as the cluster would return it.
    let pod: Value = serde_json::from_str(&std::fs::read_to_string(root().join("host-test/bench/pod-request.json")).unwrap()).unwrap();
    let mut pod = pod["object"].clone();
    pod["metadata"]["name"] = json!("llm-finetune-worker-0");
    pod["metadata"]["namespace"] = json!("ml-training");
    std::fs::create_dir_all(dir.join("cluster-state")).unwrap();
    std::fs::write(dir.join("cluster-state/pod.json"), pod.to_string()).unwrap();
    // A chart's rendering: two documents, as `helm template` prints them.
    let chart = [&samples.join("03-inference-deployment-unlabelled.yaml"), &samples.join("50-mut-cpu-etl-deployment.yaml")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .join("\n---\n");
    std::fs::write(dir.join("chart.yaml"), chart).unwrap();
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_aigov"), dir.join("target/release/aigov")).unwrap();
    std::os::unix::fs::symlink(artifacts(), dir.join("artifacts")).unwrap();
    // The policies a team edited: what `aigov manifests` writes.
    let out = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(["manifests", "--output", "deploy/aigov", "--enable", "gpu-runtime-class"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "aigov manifests: {}", String::from_utf8_lossy(&out.stderr));
    dir
}

#[test]
fn the_readmes_walkthrough_runs_as_written() {
    let lines = walkthrough();
    assert!(lines.len() >= 10, "{lines:?}");
    let dir = workspace("walkthrough");
    for line in &lines {
        // Helm is not installed here: the chart's rendering is a file.
        let run = line.replace("helm template chart/", "cat chart.yaml");
        let out = Command::new("sh").args(["-c", &run]).current_dir(&dir).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        // 0 admitted, 1 denied; 2 would be the command itself refused.
        assert!(matches!(out.status.code(), Some(0 | 1)), "`{line}` exited {:?}:\n{stdout}\n{stderr}", out.status.code());
        assert!(!stdout.trim().is_empty(), "`{line}` printed nothing:\n{stderr}");
    }
    let scan = Command::new("sh").args(["-c", &lines[0]]).current_dir(&dir).output().unwrap();
    assert_eq!(scan.status.code(), Some(1), "the samples hold denials");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The README's quick start for a data scientist whose workload was
/// denied: its `aigov eval` line runs as written, with the policy file the
/// cluster runs, on the Job the kubectl error it shows was for, and says
/// what that error says, in the words of the webhook it names.
#[test]
fn the_quick_start_for_a_denied_workload_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme.split("\n### Data scientist: ").nth(1).unwrap().split("\n## ").next().unwrap();
    let error = section.lines().find(|l| l.starts_with("Error from server: ")).expect("a kubectl error line");
    let (webhook, message) = error.split_once(" denied the request: ").unwrap();
    // Kubewarden names a ClusterAdmissionPolicy's webhook `clusterwide-<policy>.kubewarden.admission`.
    assert!(webhook.ends_with("admission webhook \"clusterwide-aigov-gpu-runtime-class.kubewarden.admission\""), "{error}");
    let eval = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .and_then(|b| b.lines().map(|l| l.split(" # ").next().unwrap().trim()).find(|l| l.starts_with("target/release/aigov eval ")))
        .expect("an `aigov eval` line");
    let dir = workspace("quick-start");
    // What `kubectl get clusteradmissionpolicy aigov-gpu-runtime-class -o yaml` gives: the policy as applied.
    copy(&dir.join("deploy/aigov/gpu-runtime-class/cluster-admission-policy.yaml"), &dir.join("policy.yaml"));
    std::fs::write(
        dir.join("job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: finetune}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      \
         tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n      containers:\n      \
         - {name: trainer, image: pytorch/pytorch:2.3.0, resources: {limits: {nvidia.com/gpu: 1}}}\n",
    )
    .unwrap();
    let out = Command::new("sh").args(["-c", eval]).current_dir(&dir).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "`{eval}` denies:\n{stdout}\n{stderr}");
    assert!(stdout.starts_with("Job team-nlp/finetune\n"), "{stdout}");
    assert!(stdout.contains(&format!("    - {message}\n")), "the README's kubectl error says what `{eval}` says:\n{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The README's quick start for a platform engineer: its `aigov` lines
/// (continuations joined) run as written, in order, from a directory with
/// the samples as `k8s/` and a `kubectl get … -o json` dump of running
/// objects (a `List`, as kubectl writes it); only `scan` denies, and what
/// `scan` and `simulate` print names the two rules turned on and no other.
#[test]
fn the_quick_start_for_a_platform_engineer_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme.split("\n### Platform engineer: ").nth(1).unwrap().split("\n### ").next().unwrap();
    let block = section.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    let lines: Vec<String> = block
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split(" # ").next().unwrap().trim().to_string())
        .filter(|l| l.starts_with("target/release/aigov "))
        .collect();
    assert!(lines.iter().any(|l| l.contains(" manifests ") && l.contains("--settings ")), "{lines:?}");
    let dir = workspace("platform-quick-start");
    std::fs::remove_dir_all(dir.join("deploy")).unwrap();
    std::os::unix::fs::symlink(dir.join("my-manifests"), dir.join("k8s")).unwrap();
    let mut items = Vec::new();
    for entry in std::fs::read_dir(root().join("host-test/tests/walkthrough/running")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            items.extend(aigov::run::admission::parse_documents(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        }
    }
    std::fs::write(dir.join("dump.json"), json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).unwrap();
    let others: Vec<&str> = aigov::run::native::names().filter(|r| !["gpu-runtime-class", "idle-gpu-pods"].contains(r)).collect();
    for line in &lines {
        let out = Command::new("sh").args(["-c", line]).current_dir(&dir).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let scan = line.contains(" scan ");
        assert_eq!(out.status.code(), Some(if scan { 1 } else { 0 }), "`{line}`:\n{stdout}\n{stderr}");
        if scan || line.contains(" simulate ") {
            assert!(stdout.contains("gpu-runtime-class") && stdout.contains("idle-gpu-pods"), "`{line}`:\n{stdout}");
            let named: Vec<&&str> = others.iter().filter(|r| stdout.lines().any(|l| !l.contains(".yaml") && l.contains(**r))).collect();
            assert!(named.is_empty(), "`{line}` names rules the team did not turn on: {named:?}\n{stdout}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every rule README's `aigov scan` commands, with the rule.
fn rule_scans() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for rule in aigov::run::native::names() {
        let readme = std::fs::read_to_string(root().join("policies").join(rule).join("README.md")).unwrap();
        for block in readme.split("```sh\n").skip(1).filter_map(|b| b.split("```").next()) {
            for line in block.lines().map(|l| l.split(" # ").next().unwrap().trim()) {
                if line.starts_with("target/release/aigov scan ") {
                    out.push((rule, line.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn the_rule_readmes_scans_run_as_written() {
    let scans = rule_scans();
    assert!(scans.len() >= 7, "{scans:?}");
    let dir = workspace("rule-scans");
    // The directories of manifests the READMEs name, as the samples.
    std::os::unix::fs::symlink(dir.join("my-manifests"), dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("host-test")).unwrap();
    std::os::unix::fs::symlink(root().join("host-test/samples"), dir.join("host-test/samples")).unwrap();
    copy(&root().join("host-test/settings/trusted-sources.yaml"), &dir.join("my-trusted-sources.yaml"));
    for (rule, line) in &scans {
        let out = Command::new("sh").args(["-c", &format!("{line} --format json")]).current_dir(&dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // 0 admitted, 1 denied; 2 would be the command itself refused.
        assert!(matches!(out.status.code(), Some(0 | 1)), "{rule}'s README: `{line}` exited {:?}:\n{stderr}", out.status.code());
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("`{line}`: {e}\n{stderr}"));
        let rules: Vec<&str> = report["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(rules, [*rule], "{rule}'s README scans with its rule: `{line}`");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_sample_a_document_names_exists() {
    let mut problems = Vec::new();
    let mut named = 0;
    let mut documents = vec![root().join("README.md"), root().join("host-test/samples/README.md"), root().join("CONTRIBUTING.md")];
    for rule in aigov::run::native::names() {
        documents.push(root().join("policies").join(rule).join("README.md"));
    }
    for doc in documents {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
            rest = &rest[at..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.')).unwrap_or(rest.len());
            let word = &rest[..end];
            rest = &rest[end..];
            let looks_like_sample = word.ends_with(".yaml") && word.as_bytes().get(2) == Some(&b'-') && word.len() > 8;
            if looks_like_sample {
                named += 1;
                let samples = root().join("host-test/samples");
                if !samples.join(word).is_file() && !samples.join("cluster").join(word).is_file() {
                    problems.push(format!("{} names {word}, which is not in host-test/samples", doc.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(named > 20, "only {named} sample names found");
}
