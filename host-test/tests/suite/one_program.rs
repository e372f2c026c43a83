//! The command line reads like one program (issue 33):
//!
//! - the main help lists the commands people run first, in groups, fits an
//!   80-column terminal, and keeps the build steps under `aigov build`
//!   (their old names still work);
//! - one spelling per idea: `--settings` takes FILE or RULE=FILE in every
//!   command, `-o/--output` is the one output flag (`--out` kept, hidden),
//!   `aigov-bundle` is a rule name wherever one is taken, a misspelt rule
//!   name is answered alike everywhere, and `verify` without a key names
//!   both ways to give one;
//! - `eval` prints a verdict for people, Kubewarden's answer with
//!   `--format json`, reads standard input, evaluates every document or
//!   `--document N`, and exits 0, 1 or 2 as its help says;
//! - `aigov settings check` (and `eval --settings`) read the settings of
//!   the policy files `aigov manifests` writes, and name the key refused;
//! - a rule with no safe default (trusted-sources) says what to write, with
//!   exit status 2, in `settings`, `eval` and `scan` alike, and the samples
//!   given its example settings get the verdicts their README states;
//! - run outside the repository, a command that finds no artifacts names
//!   the directory it looked in and how to build or point at them.
//!
//! Most run the natively linked rules; the settings check and the samples'
//! verdicts need `make artifacts` first (the generated manifests pin the
//! artifacts' digests; the demo runs the modules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::{artifacts, root};

fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn aigov(args: &[&str]) -> Output {
    run_in(&root(), args, None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sample(name: &str) -> String {
    root().join("host-test/samples").join(name).display().to_string()
}

fn trusted_settings() -> String {
    crate::common::trusted_sources_settings()
}

/// A scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aigov-one-program-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const BUILD_STEPS: [&str; 9] =
    ["annotate", "componentize", "bundle-metadata", "package", "fuzz-corpus", "export-cases", "sizes", "playground-data", "gen-manifests"];

#[test]
fn the_main_help_lists_the_user_commands_first_and_fits_a_terminal() {
    for flag in ["--help", "-h"] {
        let out = aigov(&[flag]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines.len() <= 30, "aigov {flag}: {} lines, more than a terminal shows:\n{help}", lines.len());
        for line in &lines {
            assert!(line.chars().count() <= 80, "aigov {flag}: wider than 80 columns: {line:?}");
        }
        // The commands a person runs first, the build steps last and only
        // as `build`.
        let at = |name: &str| {
            lines.iter().position(|l| l.starts_with(&format!("  {name} "))).unwrap_or_else(|| panic!("{name} not listed:\n{help}"))
        };
        let usage = lines.iter().position(|l| l.starts_with("Usage: aigov")).unwrap();
        assert_eq!(lines[usage + 2], "Check workloads:", "{help}");
        assert_eq!(at("eval"), usage + 3, "{help}");
        for (before, after) in [("eval", "scan"), ("scan", "test"), ("settings", "push"), ("verify", "build"), ("playground", "bench")] {
            assert!(at(before) < at(after), "{before} before {after}:\n{help}");
        }
        for step in BUILD_STEPS {
            assert!(!lines.iter().any(|l| l.trim_start().starts_with(&format!("{step} "))), "{step} is a build step:\n{help}");
        }
        assert!(lines.iter().any(|l| l.starts_with("Build steps")), "{help}");
    }
    let build = text(&aigov(&["build", "--help"]).stdout);
    for step in BUILD_STEPS {
        assert!(build.contains(&format!("\n  {step} ")), "`aigov build` lists {step}:\n{build}");
    }
    // The old names still run the steps, with the old output flag.
    let dir = scratch("build-steps");
    let (old, new) = (dir.join("old.yml"), dir.join("new.yml"));
    let a = aigov(&["bundle-metadata", "--out", old.to_str().unwrap()]);
    let b = aigov(&["build", "bundle-metadata", "-o", new.to_str().unwrap()]);
    assert!(a.status.success() && b.status.success(), "{}{}", text(&a.stderr), text(&b.stderr));
    assert_eq!(std::fs::read(&old).unwrap(), std::fs::read(&new).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_output_flag_and_the_old_spelling_hidden() {
    let with_output: [&[&str]; 9] = [
        &["manifests"],
        &["pull"],
        &["build", "annotate"],
        &["build", "componentize"],
        &["build", "bundle-metadata"],
        &["build", "fuzz-corpus"],
        &["build", "export-cases"],
        &["build", "playground-data"],
        &["build", "gen-manifests"],
    ];
    for command in with_output {
        let help = text(&aigov(&[command, &["--help"]].concat()).stdout);
        assert!(help.contains("  -o, --output <"), "aigov {}: -o/--output\n{help}", command.join(" "));
        assert!(!help.contains("--out <") && !help.contains("--out-"), "aigov {}: --out is hidden\n{help}", command.join(" "));
    }
    let dir = scratch("output");
    for flag in ["-o", "--output", "--out"] {
        let to = dir.join(flag.trim_start_matches('-'));
        let out = aigov(&["build", "gen-manifests", "--count", "2", flag, to.to_str().unwrap()]);
        assert!(out.status.success(), "{flag}: {}", text(&out.stderr));
        assert_eq!(std::fs::read_dir(to.join("pods-000")).unwrap().count(), 2, "{flag}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_take_a_file_or_rule_equals_file_in_every_command() {
    let dir = scratch("settings");
    let file = dir.join("exec.yaml");
    std::fs::write(&file, "allowedUsers: [oncall@example.com]\n").unwrap();
    let file = file.to_str().unwrap();
    let exec = sample("07-exec-into-gpu-pod.yaml");
    let cluster = root().join("host-test/samples/cluster");
    let cluster = cluster.to_str().unwrap();
    let eval = |settings: &str| {
        aigov(&[
            "eval",
            "exec-guard",
            &exec,
            "--native",
            "--cluster",
            cluster,
            "--user",
            "oncall@example.com",
            "--settings",
            settings,
            "--format",
            "json",
        ])
    };
    let (plain, named) = (eval(file), eval(&format!("exec-guard={file}")));
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert_eq!(plain.stdout, named.stdout, "FILE and exec-guard=FILE are the same settings");
    let other = eval(&format!("gpu-quota={file}"));
    assert_eq!(other.status.code(), Some(2));
    assert!(
        text(&other.stderr).contains("these settings are for `gpu-quota`, but this command runs `exec-guard`"),
        "{}",
        text(&other.stderr)
    );

    // Every rule: RULE=FILE, never a FILE that says no rule.
    let samples = sample("");
    let scan = aigov(&["scan", &samples, "--native", "--settings", file]);
    assert_eq!(scan.status.code(), Some(2));
    assert!(text(&scan.stderr).contains("these settings are for which rule?"), "{}", text(&scan.stderr));
    let scan = aigov(&[
        "scan",
        &exec,
        "--native",
        "--cluster",
        cluster,
        "--user",
        "oncall@example.com",
        "--settings",
        &format!("exec-guard={file}"),
        "--settings",
        &trusted_settings(),
    ]);
    assert_eq!(scan.status.code(), Some(0), "oncall's exec is allowed: {}{}", text(&scan.stdout), text(&scan.stderr));
    let scan = aigov(&["scan", &exec, "--native", "--cluster", cluster, "--user", "oncall@example.com", "--settings", &trusted_settings()]);
    assert_eq!(scan.status.code(), Some(1), "and denied with the defaults");

    // bench: RULE=FILE, or FILE for its one --rule; checked before timing.
    for settings in [format!("exec-guard={file}"), file.to_string()] {
        let bench = aigov(&["bench", "--rule", "exec-guard", "--iterations", "1", "--settings", &settings]);
        assert!(bench.status.success(), "{settings}: {}", text(&bench.stderr));
    }
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "allowedUsers: {}\n").unwrap();
    let bench = aigov(&["bench", "--rule", "exec-guard", "--iterations", "1", "--settings", bad.to_str().unwrap()]);
    assert_eq!(bench.status.code(), Some(2));
    assert!(text(&bench.stderr).contains("`exec-guard` refuses the settings given: setting `allowedUsers`"), "{}", text(&bench.stderr));

    // invoke quotes the settings it is given, either way.
    let pod = sample("01-gpu-training-pod.yaml");
    let a = aigov(&["invoke", &pod, "--settings", file]);
    let b = aigov(&["invoke", &pod, "--settings", &format!("exec-guard={file}")]);
    assert!(a.status.success() && text(&a.stdout).contains("oncall@example.com"), "{}", text(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_misspelt_rule_name_is_answered_alike_everywhere() {
    let dir = scratch("misspelt");
    let file = dir.join("s.yaml");
    std::fs::write(&file, "{}\n").unwrap();
    let settings = format!("gpu-runtime-clas={}", file.display());
    let pod = sample("01-gpu-training-pod.yaml");
    let runs: [Vec<&str>; 10] = [
        vec!["eval", "gpu-runtime-clas", &pod, "--native"],
        vec!["eval", "gpu-runtime-class", &pod, "--native", "--settings", &settings],
        vec!["settings", "gpu-runtime-clas"],
        vec!["settings", "check", &settings],
        vec!["scan", &pod, "--native", "--settings", &settings],
        vec!["simulate", "--cluster", &pod, "--native", "--settings", &settings],
        vec!["bench", "--rule", "gpu-runtime-clas", "--quick"],
        vec!["invoke", &pod, "--settings", &settings],
        vec!["test", "gpu-runtime-clas", "--native"],
        vec!["manifests", "-o", dir.to_str().unwrap(), "--enable", "gpu-runtime-clas"],
    ];
    for args in &runs {
        let out = aigov(args);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "aigov {}: {said}", args.join(" "));
        assert!(
            said.contains("no rule named `gpu-runtime-clas`: did you mean `gpu-runtime-class`?") && said.contains("exec-guard, gpu-access"),
            "aigov {}: the closest name and every name: {said}",
            args.join(" ")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_bundle_is_a_rule_name() {
    let trusted = trusted_settings();
    let pod = sample("02-gpu-training-pod-broken.yaml");
    let cluster = root().join("host-test/samples/cluster");
    let out = aigov(&["eval", "aigov-bundle", &pod, "--native", "--cluster", cluster.to_str().unwrap(), "--settings", &trusted]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    // Each rule's verdict, read back from the bundle's one answer.
    assert!(said.contains("\n  trusted-sources: denied, 2 violations\n"), "{said}");
    assert!(said.contains("\n  workload-security: denied, 6 violations\n"), "{said}");
    assert!(said.contains("\n  admitted by ") && said.contains("idle-gpu-pods"), "{said}");
    assert!(!said.lines().any(|l| l.starts_with("    - trusted-sources: ")), "the rule's name is not repeated in its lines: {said}");
    // Its settings are the bundle's `rules: {…}`.
    let dir = scratch("bundle");
    let settings = dir.join("bundle.yaml");
    std::fs::write(&settings, "rules:\n  opencost-labels: {}\n").unwrap();
    let out = aigov(&["eval", "aigov-bundle", &pod, "--native", "--settings", settings.to_str().unwrap()]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("  opencost-labels: denied") && !said.contains("trusted-sources"), "only the rules turned on: {said}");
    // As a module too, and `settings` knows it.
    let module =
        aigov(&["eval", "aigov-bundle", &pod, "--settings", settings.to_str().unwrap(), "--artifacts", artifacts().to_str().unwrap()]);
    assert_eq!(module.stdout, out.stdout, "{}", text(&module.stderr));
    let defaults = aigov(&["settings", "aigov-bundle"]);
    assert!(defaults.status.success(), "{}", text(&defaults.stderr));
    let v: Value = serde_json::from_slice(&defaults.stdout).unwrap();
    assert!(v["rules"]["gpu-runtime-class"].is_object() && v["rules"].get("trusted-sources").is_none(), "{v}");
    assert!(
        text(&defaults.stderr).contains("`trusted-sources` is left out: it has no safe default settings"),
        "{}",
        text(&defaults.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "signing")]
#[test]
fn verify_without_a_key_names_both_ways_to_give_one() {
    let out = aigov(&["verify", "registry.example.com/aigov/exec-guard:v0.1.0"]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(said.contains("--key") && said.contains("--verification-config"), "{said}");
}

#[test]
fn eval_prints_a_verdict_for_people() {
    let broken = sample("02-gpu-training-pod-broken.yaml");
    let out = aigov(&["eval", "gpu-runtime-class", &broken, "--native"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "denied: {said}");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines[0], "Pod ml-training/bert-finetune");
    assert_eq!(lines[1], "  gpu-runtime-class: denied, 2 violations");
    // One violation a line, the field and the fix in the rule's words.
    assert!(
        lines[2].starts_with("    - `spec.runtimeClassName` is not set, but pods with NVIDIA GPUs need runtime class `nvidia`"),
        "{said}"
    );
    assert!(lines[3].starts_with("    - `spec.tolerations` does not tolerate") && lines[3].contains("add `{key: nvidia.com/gpu"), "{said}");
    assert!(lines[4].starts_with("    how to comply: https://"), "{said}");

    let good = sample("01-gpu-training-pod.yaml");
    let out = aigov(&["eval", "gpu-runtime-class", &good, "--native"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "Pod ml-training/resnet50-train\n  gpu-runtime-class: admitted\n");
    // A mutation, as a short diff.
    let out = aigov(&["eval", "owner-label", &good, "--native"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("  owner-label: admitted, with 2 changes\n")
            && said.contains("\n    + metadata.labels.owner: \"jane.doe-example.com\"\n"),
        "{said}"
    );
    // Warnings, and a rule the request is never sent to.
    let dir = scratch("eval");
    let audit = dir.join("audit.yaml");
    std::fs::write(&audit, "mode: audit\n").unwrap();
    let out = aigov(&["eval", "gpu-runtime-class", &broken, "--native", "--settings", audit.to_str().unwrap()]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "audit mode admits: {said}");
    assert!(
        said.contains("  gpu-runtime-class: admitted\n    warning: gpu-runtime-class (audit mode, not enforced): `spec.runtimeClassName`"),
        "{said}"
    );
    let out = aigov(&["eval", "exec-guard", &good, "--native"]);
    assert!(text(&out.stdout).contains("exec-guard: admitted (not sent to it: its webhook rules do not match this request)"));
    // --format json: Kubewarden's ValidationResponse, as before.
    let out = aigov(&["eval", "gpu-runtime-class", &broken, "--native", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["accepted"], false);
    assert!(v["message"].as_str().unwrap().starts_with("`spec.runtimeClassName` is not set"), "{v}");
    // The exit statuses are in its help.
    let help = text(&aigov(&["eval", "--help"]).stdout);
    assert!(help.contains("Exit status: 0 when every document is admitted, 1 when a rule denies one, 2 when eval could"), "{help}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eval_reads_stdin_and_every_document() {
    let two = sample("03-inference-deployment-unlabelled.yaml");
    let all = aigov(&["eval", "opencost-labels", &two, "--native"]);
    let said = text(&all.stdout);
    assert_eq!(all.status.code(), Some(1), "{said}");
    assert!(said.starts_with("[1] Deployment ml-serving/churn-model-api\n  opencost-labels: denied, 2 violations\n"), "{said}");
    assert!(said.contains("\n\n[2] Service ml-serving/churn-model-api\n  opencost-labels: admitted (not sent to it"), "{said}");
    assert!(said.ends_with("\n\n1 of 2 documents denied\n"), "{said}");
    // From standard input, the same.
    let piped = run_in(&root(), &["eval", "opencost-labels", "-", "--native"], Some(&std::fs::read(&two).unwrap()));
    assert_eq!(piped.stdout, all.stdout, "{}", text(&piped.stderr));
    // One document, by number.
    let second = aigov(&["eval", "opencost-labels", &two, "--native", "--document", "2"]);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(text(&second.stdout).starts_with("Service ml-serving/churn-model-api\n"), "{}", text(&second.stdout));
    let json = aigov(&["eval", "opencost-labels", &two, "--native", "--document", "1", "--format", "json"]);
    assert_eq!(serde_json::from_slice::<Value>(&json.stdout).unwrap()["accepted"], false);
    for (n, says) in [("3", "holds 2 document(s): give 1 to 2"), ("0", "documents are numbered from 1")] {
        let out = aigov(&["eval", "opencost-labels", &two, "--native", "--document", n]);
        assert_eq!(out.status.code(), Some(2), "--document {n}");
        assert!(text(&out.stderr).contains(says), "--document {n}: {}", text(&out.stderr));
    }
    // JSON: one list, each entry naming its document's object beside its response.
    let json = aigov(&["eval", "opencost-labels", &two, "--native", "--format", "json"]);
    let answers: Value = serde_json::from_slice(&json.stdout).unwrap();
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.iter().map(|a| a["response"]["accepted"].as_bool().unwrap()).collect::<Vec<_>>(), [false, true]);
    assert_eq!(answers.iter().map(|a| a["kind"].as_str().unwrap()).collect::<Vec<_>>(), ["Deployment", "Service"]);
    assert_eq!(answers[1]["document"], 2);
}

/// Writes the manifests for exec-guard and trusted-sources, and the bundle
/// of both, as `aigov manifests` does; returns their directory.
fn generated_policies(name: &str) -> PathBuf {
    let dir = scratch(name);
    let out = aigov(&["manifests", "-o", dir.to_str().unwrap(), "--enable", "exec-guard,trusted-sources"]);
    assert!(out.status.success(), "{} (run `make artifacts` first)", text(&out.stderr));
    dir
}

#[test]
fn settings_check_reads_the_policies_a_team_edited() {
    let dir = generated_policies("check");
    let exec = dir.join("exec-guard/cluster-admission-policy.yaml");
    let bundle = dir.join("bundle/cluster-admission-policy.yaml");
    let trusted = dir.join("trusted-sources/cluster-admission-policy.yaml");
    let paths = [&exec, &bundle, &trusted].map(|p| p.to_str().unwrap().to_string());
    let out = aigov(&["settings", "check", &paths[0], &paths[1], &paths[2]]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    for (path, rule) in paths.iter().zip(["exec-guard", "aigov-bundle", "trusted-sources"]) {
        assert!(
            said.contains(&format!("{path}: ClusterAdmissionPolicy `")) && said.contains(&format!("the settings of `{rule}` are valid")),
            "{said}"
        );
    }
    // The team's edits: a misspelt key, an emptied list, a bad key in the bundle.
    let edit = |path: &Path, from: &str, to: &str| {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(from), "{}: {text}", path.display());
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    };
    edit(&exec, "\n  settings: {}\n", "\n  settings:\n    allowedUser: [oncall@example.com]\n");
    edit(&trusted, "\n    allowedImages:\n", "\n    allowedImages: []\n    allowedImagesWere:\n");
    edit(&bundle, "\n      exec-guard: {}\n", "\n      exec-guard: {guardPortForward: maybe}\n");
    let out = aigov(&["settings", "check", &paths[0], &paths[1], &paths[2]]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let line = std::fs::read_to_string(&exec).unwrap().lines().position(|l| l.contains("allowedUser:")).unwrap() + 1;
    assert!(
        said.contains(&format!(
            "{}:{line}: ClusterAdmissionPolicy `aigov-exec-guard`: `exec-guard` refuses these settings: setting `allowedUser`: unknown setting",
            paths[0]
        )),
        "{said}"
    );
    assert!(said.contains("`aigov-bundle` refuses these settings: rules.exec-guard: setting `guardPortForward`"), "{said}");
    assert!(said.contains("`trusted-sources` refuses these settings: setting `allowedImagesWere`"), "{said}");
    // eval takes the same file as its settings, and refuses it the same way.
    let pod = sample("07-exec-into-gpu-pod.yaml");
    let out = aigov(&["eval", "exec-guard", &pod, "--native", "--settings", &paths[0]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("ClusterAdmissionPolicy `aigov-exec-guard`: `exec-guard` refuses these settings: setting `allowedUser`"),
        "{}",
        text(&out.stderr)
    );
    // The bundle's policy file too, as the bundle's settings.
    let out = aigov(&["eval", "aigov-bundle", &pod, "--native", "--settings", &paths[1]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`aigov-bundle` refuses these settings: rules.exec-guard: setting `guardPortForward`"),
        "{}",
        text(&out.stderr)
    );
    edit(&bundle, "exec-guard: {guardPortForward: maybe}", "exec-guard: {}");
    let cluster = root().join("host-test/samples/cluster");
    let out = aigov(&["eval", "aigov-bundle", &pod, "--native", "--settings", &paths[1], "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "jane may not exec: {}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("  exec-guard: denied, 1 violation\n"), "{}", text(&out.stdout));
    // Without a cluster, the pod is not looked up: not checked, and said so
    // (as `aigov scan` says it), not refused as if it did not exist.
    let out = aigov(&["eval", "aigov-bundle", &pod, "--native", "--settings", &paths[1]]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("not checked without a cluster: the pod could not be looked up"), "{}", text(&out.stdout));
    edit(&exec, "allowedUser:", "allowedUsers:");
    let out = aigov(&[
        "eval",
        "exec-guard",
        &pod,
        "--native",
        "--cluster",
        cluster.to_str().unwrap(),
        "--settings",
        &paths[0],
        "--user",
        "oncall@example.com",
    ]);
    assert_eq!(out.status.code(), Some(0), "the policy's settings are the ones used: {}{}", text(&out.stdout), text(&out.stderr));
    // A plain settings file needs its rule named.
    let plain = dir.join("plain.yaml");
    std::fs::write(&plain, "allowedUsers: [a]\n").unwrap();
    let out = aigov(&["settings", "check", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(&format!("aigov settings check RULE={}", plain.display())), "{}", text(&out.stderr));
    assert!(aigov(&["settings", "check", &format!("exec-guard={}", plain.display())]).status.success());
    // `aigov settings RULE` still prints the defaults.
    let defaults = aigov(&["settings", "exec-guard"]);
    assert!(defaults.status.success());
    assert_eq!(serde_json::from_slice::<Value>(&defaults.stdout).unwrap()["guardPortForward"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rule_with_no_safe_default_says_what_to_write_everywhere() {
    let pod = sample("01-gpu-training-pod.yaml");
    let runs: [Vec<&str>; 5] = [
        vec!["settings", "trusted-sources"],
        vec!["eval", "trusted-sources", &pod, "--native"],
        vec!["eval", "aigov-bundle", &pod, "--native"],
        vec!["scan", &pod, "--native"],
        vec!["simulate", "--cluster", &pod, "--native"],
    ];
    for args in &runs {
        let out = aigov(args);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "aigov {}: {said}", args.join(" "));
        assert!(out.stdout.is_empty(), "aigov {}: {}", args.join(" "), text(&out.stdout));
        assert!(said.contains("`trusted-sources` has no safe default settings and none were given (setting `allowedImages`: "), "{said}");
        assert!(
            said.contains("pass `--settings trusted-sources=FILE`; start from the example in policies/trusted-sources/README.md and host-test/settings/trusted-sources.yaml"),
            "{said}"
        );
    }
    let out =
        aigov(&["eval", "trusted-sources", &sample("02-gpu-training-pod-broken.yaml"), "--native", "--settings", &trusted_settings()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("  trusted-sources: denied, 2 violations\n"), "{}", text(&out.stdout));
}

/// `host-test/samples/README.md`'s table: the rules that deny each
/// document, by file name and document number.
fn readme_denials() -> BTreeMap<(String, usize), BTreeSet<String>> {
    let readme = std::fs::read_to_string(root().join("host-test/samples/README.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in readme.lines().filter(|l| l.starts_with("| `") && !l.contains("(not scanned)")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (file, number) = match cells[1].split_once(" #") {
            Some((file, n)) => (file, n.parse().unwrap()),
            None => (cells[1], 1),
        };
        let denied = cells[3].split(", ").filter(|r| *r != "-").map(str::to_string).collect();
        out.insert((file.trim_matches('`').to_string(), number), denied);
    }
    out
}

#[test]
fn the_demos_scan_gives_the_samples_readmes_verdicts() {
    // As `make demo` runs it: the modules, the sample cluster, the example
    // settings of host-test/settings/ passed by name.
    let samples = root().join("host-test/samples");
    let out = aigov(&[
        "scan",
        samples.to_str().unwrap(),
        "--cluster",
        samples.join("cluster").to_str().unwrap(),
        "--artifacts",
        artifacts().to_str().unwrap(),
        "--settings",
        &trusted_settings(),
        "--format",
        "json",
        "--fail-on",
        "none",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut scanned = BTreeMap::new();
    for d in report["documents"].as_array().unwrap() {
        let file = Path::new(d["source"]["file"].as_str().unwrap()).file_name().unwrap().to_str().unwrap().to_string();
        let number = d["source"]["document"].as_u64().unwrap() as usize;
        let denied: BTreeSet<String> =
            d["results"].as_object().unwrap().iter().filter(|(_, r)| r["verdict"] == "deny").map(|(rule, _)| rule.clone()).collect();
        scanned.insert((file, number), denied);
    }
    assert_eq!(scanned, readme_denials(), "aigov scan of the samples against host-test/samples/README.md");
}

#[test]
fn outside_the_repository_a_missing_artifact_names_the_directory_looked_in() {
    let dir = scratch("outside");
    let pod = sample("01-gpu-training-pod.yaml");
    let looked = dir.join("artifacts");
    let (trusted, policies) = (trusted_settings(), root().join("policies").display().to_string());
    let runs: [(Vec<&str>, bool); 5] = [
        (vec!["eval", "gpu-runtime-class", &pod], true),
        (vec!["scan", &pod, "--settings", &trusted], true),
        (vec!["test", "gpu-runtime-class", "--policies", &policies], true),
        (vec!["build", "sizes"], false),
        (vec!["manifests", "-o", "deploy"], false),
    ];
    for (args, native) in &runs {
        let out = run_in(&dir, args, None);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "aigov {}: {said}", args.join(" "));
        assert!(said.contains(&format!("no artifacts in {}", looked.display())), "aigov {}: names where it looked: {said}", args.join(" "));
        assert!(said.contains("`make artifacts`") && said.contains("point --artifacts at"), "aigov {}: {said}", args.join(" "));
        assert_eq!(said.contains("--native"), *native, "aigov {}: {said}", args.join(" "));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
