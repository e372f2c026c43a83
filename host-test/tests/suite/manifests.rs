//! The rollout path through `aigov manifests`, as a platform engineer
//! walks it (`make test` runs the same path end to end in
//! host-test/tests/walkthrough/walkthrough.sh):
//!
//! - `aigov settings check` reports every refusal of a file at its line,
//!   a policy's own fields (`spec.mode`, a field its CRD does not have)
//!   as well as its settings;
//! - `--settings RULE=FILE` takes what `aigov settings check RULE=FILE`
//!   checks (a settings file, or a policy file), has the rule check it
//!   (refused: exit status 2 naming the setting, nothing written), writes
//!   it into the rule's policy, the bundle's `settings.rules.RULE` and
//!   `policies.yml`, and turns the rule on unless `--enable` says which;
//! - regenerating with nothing changed writes nothing and exits 0, without
//!   SOURCE_DATE_EPOCH too (ArtifactHub's `createdAt` is kept);
//! - a policy edited where the README says to edit it (`spec.settings`,
//!   `spec.mode`) is no conflict: left as edited, its edits carried into
//!   the bundle and `policies.yml`, exit status 0; any other edit still
//!   leaves it alone, named, with exit status 1; a field its CRD does not
//!   have stops regenerating at its line (exit status 2), nothing written;
//!   `--settings` replaces settings edited there.
//!
//! They need `make artifacts` first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{artifacts, root};

/// aigov as a user runs it, without SOURCE_DATE_EPOCH (the Makefile's).
fn aigov(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(args)
        .current_dir(root())
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aigov-manifests-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `aigov manifests -o DIR` with `extra`.
fn manifests(dir: &Path, extra: &[&str]) -> Output {
    let artifacts = artifacts();
    let mut args = vec!["manifests", "--artifacts", artifacts.to_str().unwrap(), "-o", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    aigov(&args)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn written(out: &Output) -> String {
    let said = text(&out.stdout);
    said.lines().last().unwrap_or_default().to_string()
}

#[test]
fn manifests_settings_are_checked_written_and_turn_the_rule_on() {
    let work = scratch("settings");
    let dest = work.join("deploy");
    let audit = work.join("audit.yaml");
    std::fs::write(&audit, "mode: audit\nauditNamespaces: [team-nlp]\n").unwrap();
    let arg = format!("gpu-runtime-class={}", audit.display());

    // Refused settings: exit status 2 naming the setting, nothing written.
    let bad = work.join("bad.yaml");
    std::fs::write(&bad, "mode: audti\n").unwrap();
    let out = manifests(&dest, &["--settings", &format!("gpu-runtime-class={}", bad.display())]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(said.contains("`gpu-runtime-class` refuses these settings: setting `mode`"), "{said}");
    assert!(said.contains("nothing was written"), "{said}");
    assert!(!dest.exists(), "nothing is written when settings are refused");
    // FILE alone: which rule?
    let out = manifests(&dest, &["--settings", audit.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("name the rule these settings are for"), "{}", text(&out.stderr));

    // Without --enable, the rule given settings is turned on.
    let out = manifests(&dest, &["--settings", &arg]);
    assert!(out.status.success(), "{} (run `make artifacts` first)", text(&out.stderr));
    assert!(text(&out.stderr).contains("turning on the rule(s) given --settings: gpu-runtime-class"), "{}", text(&out.stderr));
    let overlay = read(&dest.join("overlay/kustomization.yaml"));
    assert!(overlay.contains("\n- ../gpu-runtime-class ") && overlay.contains("\n# - ../idle-gpu-pods "), "{overlay}");
    let policy = read(&dest.join("gpu-runtime-class/cluster-admission-policy.yaml"));
    assert!(policy.contains("\n  settings:\n    auditNamespaces:\n    - team-nlp\n    mode: audit\n"), "{policy}");
    let bundle = read(&dest.join("bundle/cluster-admission-policy.yaml"));
    assert!(bundle.contains("\n      gpu-runtime-class:\n        auditNamespaces:\n        - team-nlp\n        mode: audit\n"), "{bundle}");
    let served = read(&dest.join("policies.yml"));
    assert!(served.contains("\n      gpu-runtime-class:\n        auditNamespaces:\n        - team-nlp\n        mode: audit\n"), "{served}");
    // settings check takes every file written.
    let check = |file: &Path| aigov(&["settings", "check", file.to_str().unwrap()]);
    for file in ["gpu-runtime-class/cluster-admission-policy.yaml", "bundle/cluster-admission-policy.yaml", "policies.yml"] {
        let out = check(&dest.join(file));
        assert!(out.status.success(), "{file}: {}{}", text(&out.stdout), text(&out.stderr));
    }

    // A policy file gives its spec.settings; --enable says exactly which
    // rules are on, and a rule given settings but left out is said so.
    let from_policy = format!("gpu-runtime-class={}", dest.join("gpu-runtime-class/cluster-admission-policy.yaml").display());
    let again = work.join("again");
    let out = manifests(&again, &["--enable", "idle-gpu-pods", "--settings", &from_policy]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`gpu-runtime-class` is given --settings but left out of --enable"), "{}", text(&out.stderr));
    let policy = read(&again.join("gpu-runtime-class/cluster-admission-policy.yaml"));
    assert!(policy.contains("\n    mode: audit\n"), "{policy}");
    let overlay = read(&again.join("overlay/kustomization.yaml"));
    assert!(overlay.contains("\n# - ../gpu-runtime-class ") && overlay.contains("\n- ../idle-gpu-pods "), "{overlay}");
    // The bundle's policy gives the settings it holds for the rule.
    let third = work.join("third");
    let from_bundle = format!("gpu-runtime-class={}", dest.join("bundle/cluster-admission-policy.yaml").display());
    let out = manifests(&third, &["--settings", &from_bundle]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(read(&third.join("gpu-runtime-class/cluster-admission-policy.yaml")).contains("\n    mode: audit\n"));
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn regenerating_writes_nothing_and_keeps_settings_edited_in_a_policy() {
    let work = scratch("again");
    let dest = work.join("deploy");
    let enable = ["--enable", "gpu-runtime-class,ray-cluster-limits,idle-gpu-pods"];
    let first = manifests(&dest, &enable);
    assert!(first.status.success(), "{} (run `make artifacts` first)", text(&first.stderr));
    let hub = dest.join("ray-cluster-limits/artifacthub-pkg.yml");
    let created = read(&hub);
    // Nothing changed: nothing written, exit status 0, createdAt kept
    // (no SOURCE_DATE_EPOCH here: the clock has moved on).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = manifests(&dest, &enable);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(written(&second).contains(": 0 file(s) written, "), "{}", text(&second.stdout));
    assert_eq!(read(&hub), created);

    // The team edits the settings and the mode, as the policy's comments say.
    let policy = dest.join("ray-cluster-limits/cluster-admission-policy.yaml");
    let generated = read(&policy);
    let edited = generated
        .replace("\n  settings: {}\n", "\n  settings:\n    maxGpuWorkerReplicas: 4\n    mode: enforce   # the default, spelt out\n")
        .replace("\n  # mode: monitor ", "\n  mode: monitor #")
        + "# reviewed by the platform team\n";
    assert_ne!(edited, generated);
    std::fs::write(&policy, &edited).unwrap();
    let out = manifests(&dest, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("kept as edited (only their settings, mode or comments were edited"), "{}", text(&out.stderr));
    assert_eq!(read(&policy), edited, "the team's file is left as they wrote it");
    let bundle = read(&dest.join("bundle/cluster-admission-policy.yaml"));
    assert!(bundle.contains("\n      ray-cluster-limits:\n        maxGpuWorkerReplicas: 4\n"), "carried into the bundle: {bundle}");
    let served = read(&dest.join("policies.yml"));
    let entry = &served[served.find("\nray-cluster-limits:\n").unwrap()..];
    assert!(entry.contains("\n  policyMode: monitor\n"), "the mode is carried into policies.yml: {entry}");
    // And again: nothing to write.
    let out = manifests(&dest, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(written(&out).contains(": 0 file(s) written, "), "{}", text(&out.stdout));

    // Any other edit is the team's to merge: left alone, named, exit 1.
    std::fs::write(&policy, edited.replace("policyServer: default", "policyServer: gpu-policies")).unwrap();
    let out = manifests(&dest, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("{} (edited since aigov wrote it)", policy.display())), "{}", text(&out.stderr));

    // A setting dedented out of `spec.settings`, which kubectl refuses,
    // stops regenerating at its line, before anything is written.
    let dedented = edited.replace("\n  settings:\n", "\n  auditNamespaces: [team-a]\n  settings:\n");
    std::fs::write(&policy, &dedented).unwrap();
    let bundle_before = read(&dest.join("bundle/cluster-admission-policy.yaml"));
    let out = manifests(&dest, &["--registry", "other.example.com/aigov"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let line = dedented.lines().position(|l| l == "  auditNamespaces: [team-a]").unwrap() + 1;
    assert!(
        text(&out.stderr).contains(&format!(
            "{}:{line}: ClusterAdmissionPolicy `aigov-ray-cluster-limits`: `spec.auditNamespaces` is not a field of a \
             ClusterAdmissionPolicy: did you mean `spec.settings.auditNamespaces`?",
            policy.display()
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read(&dest.join("bundle/cluster-admission-policy.yaml")), bundle_before, "nothing written");

    // --settings replaces settings edited in the policy.
    std::fs::write(&policy, edited.replace("maxGpuWorkerReplicas: 4", "maxGpuWorkerReplicas: 5")).unwrap();
    let six = work.join("six.yaml");
    std::fs::write(&six, "maxGpuWorkerReplicas: 6\n").unwrap();
    let out = manifests(&dest, &["--settings", &format!("ray-cluster-limits={}", six.display())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("rewritten with the settings --settings gives"), "{}", text(&out.stderr));
    let now = read(&policy);
    assert!(now.contains("\n    maxGpuWorkerReplicas: 6\n") && now.contains("\n  mode: monitor "), "the mode edit is carried: {now}");
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn settings_check_reports_every_error_with_its_line() {
    let work = scratch("check");
    let dest = work.join("deploy");
    let out = manifests(&dest, &["--enable", "exec-guard,ray-cluster-limits"]);
    assert!(out.status.success(), "{} (run `make artifacts` first)", text(&out.stderr));
    // policies.yml, as written, is accepted.
    let served = dest.join("policies.yml");
    let out = aigov(&["settings", "check", served.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // Two policies in one file, four refusals (two in one policy, one a
    // Kubewarden mode as the rule's `mode`), a mode Kubewarden refuses and
    // a setting dedented out of `spec.settings`: every one, each at its line.
    let exec = read(&dest.join("exec-guard/cluster-admission-policy.yaml"))
        .replace("\n  settings: {}\n", "\n  settings:\n    allowedUser: [oncall]\n    guardPortForward: maybe\n");
    let ray = read(&dest.join("ray-cluster-limits/cluster-admission-policy.yaml"))
        .replace("\n  settings: {}\n", "\n  settings:\n    maxGpuWorkerReplicas: lots\n    mode: monitor\n");
    let monitored = read(&dest.join("ray-cluster-limits/cluster-admission-policy.yaml"))
        .replace("\n  # mode: monitor ", "\n  mode: audit #")
        .replace("\n  policyServer: default\n", "\n  policyServer: default\n  auditNamespaces: [team-a]\n");
    let both = format!("{exec}---\n{ray}---\n{monitored}");
    let file = work.join("both.yaml");
    std::fs::write(&file, &both).unwrap();
    let line_of =
        |needle: &str, from: usize| both.lines().enumerate().skip(from).find(|(_, l)| l.contains(needle)).map(|(i, _)| i + 1).unwrap();
    let out = aigov(&["settings", "check", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    let f = file.display();
    let second = line_of("name: aigov-ray-cluster-limits", 0);
    let third = both.lines().enumerate().filter(|(_, l)| *l == "---").nth(1).map(|(i, _)| i + 1).unwrap();
    for expected in [
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-exec-guard`: `exec-guard` refuses these settings: setting `allowedUser`",
            line_of("allowedUser:", 0)
        ),
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-exec-guard`: `exec-guard` refuses these settings: setting `guardPortForward`",
            line_of("guardPortForward: maybe", 0)
        ),
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-ray-cluster-limits`: `ray-cluster-limits` refuses these settings: setting `maxGpuWorkerReplicas`",
            line_of("maxGpuWorkerReplicas: lots", second)
        ),
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-ray-cluster-limits`: `ray-cluster-limits` refuses these settings: setting `mode`: \
             unknown variant `monitor`, expected `enforce` or `audit`. `monitor` is a value of Kubewarden's `spec.mode` (`protect` or \
             `monitor`), and the rule's own `mode` takes `enforce` or `audit`: set `spec.mode: monitor` beside the policy's `settings`",
            line_of("    mode: monitor", second)
        ),
        // At the line of the field, not of the document.
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-ray-cluster-limits`: `spec.auditNamespaces` is not a field of a \
             ClusterAdmissionPolicy: did you mean `spec.settings.auditNamespaces`?",
            line_of("  auditNamespaces: [team-a]", third)
        ),
        format!(
            "{f}:{}: ClusterAdmissionPolicy `aigov-ray-cluster-limits`: `spec.mode` is `audit`, which Kubewarden refuses",
            line_of("  mode: audit #", third)
        ),
    ] {
        assert!(said.contains(&expected), "{expected}\nnot in:\n{said}");
    }
    assert_eq!(said.lines().count(), 6, "{said}");
    // In the file's order.
    let lines: Vec<usize> =
        said.lines().map(|l| l.strip_prefix(&format!("aigov: {f}:")).unwrap().split(':').next().unwrap().parse().unwrap()).collect();
    assert!(lines.is_sorted(), "{said}");
    // scan reads the same file the same way, and stops.
    let out = aigov(&["scan", "--native", "--settings", file.to_str().unwrap(), "host-test/samples"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean `spec.settings.auditNamespaces`?"), "{}", text(&out.stderr));

    // A YAML error names its likely cause beside the parser's position.
    let tabbed = work.join("tabbed.yaml");
    std::fs::write(&tabbed, exec.replace("\n    guardPortForward: maybe\n", "\n\tguardPortForward: true\n")).unwrap();
    let out = aigov(&["settings", "check", tabbed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is indented with a tab; YAML indents with spaces only"), "{}", text(&out.stderr));
    let star = work.join("star.yaml");
    std::fs::write(&star, "allowedUsers: [*]\n").unwrap();
    let out = aigov(&["settings", "check", &format!("exec-guard={}", star.display())]);
    assert!(
        text(&out.stderr).contains("line 1 starts with `*`") && text(&out.stderr).contains("put it in quotes"),
        "{}",
        text(&out.stderr)
    );
    // ... and so does regenerating over it.
    std::fs::write(dest.join("exec-guard/cluster-admission-policy.yaml"), exec.replace("guardPortForward: maybe", "note: see: here"))
        .unwrap();
    let out = manifests(&dest, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("holds `: `, which YAML reads as another key: put the value in quotes"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&work).unwrap();
}
