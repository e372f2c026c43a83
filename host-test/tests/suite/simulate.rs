//! `aigov simulate` on a generated dump of 12,000 objects, as `kubectl get
//! -A -o json` writes them: it finishes, and its totals equal a `scan` of the
//! same objects.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const NAMESPACES: usize = 24;

fn pod(i: usize) -> Value {
    let ns = format!("team-{:02}", i % NAMESPACES);
    let gpu = !i.is_multiple_of(3);
    // Namespaces 0..=7 run only compliant workloads; the others have some
    // GPU pods without the runtime class and some without cost labels.
    let broken = i % NAMESPACES >= 8 && i.is_multiple_of(7);
    let unlabelled = i % NAMESPACES >= 8 && i.is_multiple_of(11);
    let mut labels = json!({"app": format!("app-{i}"), "opencost.io/team": "ml", "opencost.io/workload-category": "training"});
    if unlabelled {
        labels = json!({"app": format!("app-{i}")});
    }
    let mut spec = json!({
        "containers": [{"name": "main", "image": "pytorch/pytorch:2.4.0", "resources": {"limits": {"cpu": "2"}}}],
        "restartPolicy": "Never",
    });
    if gpu {
        spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = json!("1");
        spec["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        if !broken {
            spec["runtimeClassName"] = json!("nvidia");
        }
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": ns, "labels": labels, "uid": format!("uid-{i}"), "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Running"},
    })
}

fn deployment(i: usize) -> Value {
    let ns = format!("team-{:02}", i % NAMESPACES);
    let labels = if i % NAMESPACES >= 8 && i.is_multiple_of(5) {
        json!({"app": "web"})
    } else {
        json!({"app": "web", "opencost.io/team": "ml", "opencost.io/workload-category": "inference"})
    };
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("deploy-{i}"), "namespace": ns, "labels": labels},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        }},
    })
}

fn write_dump(dir: &Path) -> usize {
    let namespaces: Vec<Value> = (0..NAMESPACES)
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("team-{n:02}"), "labels": {"team": format!("t{n}")}}}))
        .collect();
    let pods: Vec<Value> = (0..9_000).map(pod).collect();
    let deployments: Vec<Value> = (0..3_000).map(deployment).collect();
    let n = namespaces.len() + pods.len() + deployments.len();
    let list =
        |items: Vec<Value>| json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}).to_string();
    std::fs::write(dir.join("namespaces.json"), list(namespaces)).unwrap();
    std::fs::write(dir.join("pods.json"), list(pods)).unwrap();
    std::fs::write(dir.join("deployments.json"), list(deployments)).unwrap();
    n
}

fn aigov(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_aigov")).args(args).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "aigov {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "piped, no progress bar: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn simulating_a_large_dump_agrees_with_scanning_it() {
    let dir = std::env::temp_dir().join(format!("aigov-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = write_dump(&dir);
    assert!(n >= 10_000);
    // simulate answers the rules' lookups from the dump itself (gpu-quota
    // lists each namespace's pods); the scan gets the same cluster, from a
    // copy, since it never scans its own --cluster directory.
    let state = std::env::temp_dir().join(format!("aigov-simulate-state-{}", std::process::id()));
    std::fs::create_dir_all(&state).unwrap();
    write_dump(&state);
    let d = dir.to_str().unwrap();
    let sim = aigov(&["simulate", "--native", "--cluster", d, "--format", "json"]);
    let scan = aigov(&["scan", "--native", "--fail-on", "none", "--format", "json", "--cluster", state.to_str().unwrap(), d]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&state).unwrap();

    assert_eq!(sim["objects"], json!(n));
    for key in ["documents", "denied", "warned", "passed", "mutated", "errors", "skipped"] {
        assert_eq!(sim["summary"][key], scan["summary"][key], "{key}");
    }
    assert!(sim["summary"]["denied"].as_u64().unwrap() > 0);

    // Per rule: the counts over namespaces add up to the totals, and equal
    // what the scan says rule by rule.
    for (rule, r) in sim["rules"].as_object().unwrap() {
        let mut denied = 0;
        for c in r["namespaces"].as_object().unwrap().values() {
            denied += c["denied"].as_u64().unwrap();
        }
        assert_eq!(json!(denied), r["total"]["denied"], "{rule}");
        let scanned = scan["documents"].as_array().unwrap().iter().filter(|d| d["results"][rule]["verdict"] == "deny").count();
        assert_eq!(json!(scanned), r["total"]["denied"], "{rule}");
    }
    // The compliant namespaces are the ones the rule can be enforced in: the
    // first eight, and those whose pods hold no GPU (i % 3 == 0 there).
    let gpu = &sim["rules"]["gpu-runtime-class"];
    let ready: Vec<&str> = gpu["enforceableIn"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let expected: Vec<String> = (0..NAMESPACES).filter(|n| *n < 8 || n.is_multiple_of(3)).map(|n| format!("team-{n:02}")).collect();
    assert_eq!(ready, expected.iter().map(String::as_str).collect::<Vec<_>>());
    let top = &gpu["reasons"][0];
    assert!(top["reason"].as_str().unwrap().starts_with("`spec.runtimeClassName` is not set"), "{top}");
    assert_eq!(top["count"], gpu["total"]["denied"]);
}

#[test]
fn the_markdown_report_names_a_phased_rollout() {
    let dir = std::env::temp_dir().join(format!("aigov-simulate-md-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("pods.json"),
        json!({"apiVersion": "v1", "kind": "List", "items": (0..48).map(pod).collect::<Vec<_>>()}).to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(["simulate", "--native", "--format", "markdown", "--cluster", dir.join("pods.json").to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("# aigov simulate: 48 objects in 24 namespaces"), "{text}");
    assert!(text.contains("| namespace |") && text.contains("| gpu-runtime-class |"), "{text}");
    assert!(text.contains("`gpu-runtime-class`: enforce now in team-00"), "{text}");
    assert!(!text.contains("monitor mode") && !text.contains("`mode: monitor`"), "a setting no rule has: {text}");

    // The advice is settings the rule takes: written into its settings,
    // the namespaces it names audit, and nothing running is denied.
    let line = text.lines().find(|l| l.contains("`gpu-runtime-class`: enforce now")).unwrap();
    let audit = line.split("`auditNamespaces: ").nth(1).and_then(|rest| rest.split('`').next()).unwrap();
    assert_eq!(audit, "[team-11, team-14]", "{line}");
    let advised = dir.with_extension("settings.yaml");
    std::fs::write(&advised, format!("auditNamespaces: {audit}\n")).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("pods.json"),
        json!({"apiVersion": "v1", "kind": "List", "items": (0..48).map(pod).collect::<Vec<_>>()}).to_string(),
    )
    .unwrap();
    let settings = format!("gpu-runtime-class={}", advised.display());
    let after =
        aigov(&["simulate", "--native", "--format", "json", "--settings", &settings, "--cluster", dir.join("pods.json").to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&advised).unwrap();
    let rule = &after["rules"]["gpu-runtime-class"];
    assert_eq!(rule["total"]["denied"], 0, "{after}");
    assert!(rule["total"]["warned"].as_u64().unwrap() > 0, "{after}");
}
