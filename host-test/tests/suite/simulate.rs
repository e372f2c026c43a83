//! `aigov simulate` on a generated dump of 12,000 objects, as `kubectl get
//! -A -o json` writes them: it finishes, and its totals equal a `scan` of the
//! same objects.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::root;

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
    let settings = format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display());
    let sim = aigov(&["simulate", "--native", "--cluster", d, "--format", "json", "--settings", &settings]);
    let scan = aigov(&[
        "scan",
        "--native",
        "--fail-on",
        "none",
        "--format",
        "json",
        "--cluster",
        state.to_str().unwrap(),
        d,
        "--settings",
        &settings,
    ]);
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
        .arg("--settings")
        .arg(format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display()))
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
    // the namespaces it names audit; what they audit is still what
    // enforcing would deny, and the report says it is audited today.
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
    let trusted = format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display());
    let pods = dir.join("pods.json");
    let after = aigov(&[
        "simulate",
        "--native",
        "--format",
        "json",
        "--settings",
        &settings,
        "--settings",
        &trusted,
        "--cluster",
        pods.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_file(&advised).unwrap();
    let rule = &after["rules"]["gpu-runtime-class"];
    assert!(rule["total"]["denied"].as_u64().unwrap() > 0, "{after}");
    assert_eq!(rule["total"]["audited"], rule["total"]["denied"], "{after}");
    assert_eq!(rule["namespaces"]["team-11"]["audited"], rule["namespaces"]["team-11"]["denied"], "{after}");
}

/// A dump directory holding `objects` (one `List`) and the samples named.
fn dump(dir: &crate::scan_deployment::Scratch, samples: &[&str], objects: Vec<Value>) -> String {
    let at = dir.0.join("dump");
    std::fs::create_dir_all(&at).unwrap();
    for s in samples {
        std::fs::copy(root().join("host-test/samples").join(s), at.join(s)).unwrap();
    }
    std::fs::write(at.join("objects.json"), json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string()).unwrap();
    at.display().to_string()
}

/// A running GPU pod without the runtime class, in `ns`.
fn gpu_pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")},
        "spec": {"containers": [{"name": "main", "image": "pytorch/pytorch:2.4.0", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "status": {"phase": "Running"},
    })
}

#[test]
fn simulate_counts_what_audit_lets_through_as_would_be_denials() {
    use crate::scan_deployment::{Scratch, aigov, bundle_policy, text};
    let dir = Scratch::new("simulate-audit");
    // The team's settings today: two rules in audit, one auditing the
    // namespace its devbox runs in.
    let policy = dir.write(
        "policy.yaml",
        &bundle_policy(
            "      gpu-runtime-class: {mode: audit}\n      ray-cluster-limits: {mode: audit}\n      idle-gpu-pods: {auditNamespaces: [ml-research]}\n",
        ),
    );
    let cluster = dump(&dir, &["05-raycluster-oversized.yaml", "30-idle-gpu-devbox.yaml"], vec![gpu_pod("team-nlp", "trainer")]);
    let out = aigov(&["simulate", "--native", "--format", "json", "--cluster", &cluster, "--settings", &policy]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&String> = sim["rules"].as_object().unwrap().keys().collect();
    assert_eq!(rules, ["gpu-runtime-class", "idle-gpu-pods", "ray-cluster-limits"], "only the rules turned on");
    for rule in ["gpu-runtime-class", "ray-cluster-limits", "idle-gpu-pods"] {
        let total = &sim["rules"][rule]["total"];
        assert!(total["denied"].as_u64().unwrap() >= 1, "{rule}: what it audits today would be denied: {total}");
        assert_eq!(total["audited"], total["denied"], "{rule}: {total}");
        assert_eq!(total["warned"], 0, "{rule}: an audited finding is no mere warning: {total}");
    }

    // The advice is what breaks if they enforce, never "enforce now".
    let out = aigov(&["simulate", "--native", "--cluster", &cluster, "--settings", &policy]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("if every rule were enforced, 3 would be denied"), "{said}");
    assert!(said.contains("3 of the would-be denials are only audited today"), "{said}");
    assert!(!said.contains("enforce everywhere now"), "{said}");
    assert!(
        said.contains("`ray-cluster-limits`: keep auditing; 1 object it audits today would be denied if enforced, in ml-training"),
        "{said}"
    );
    // Where nothing it audits runs, a rule can be enforced now.
    assert!(said.contains("`idle-gpu-pods`: enforce now in ml-training, team-nlp, with `auditNamespaces: [ml-research]`"), "{said}");
    assert!(text(&out.stderr).contains("checking the 3 rule(s)"), "{}", text(&out.stderr));

    // A policy in Kubewarden's monitor mode refuses nothing today: what it
    // would refuse is audited too.
    let monitored = dir.write("monitored.yaml", &bundle_policy("      gpu-runtime-class: {}\n").replace("mode: protect", "mode: monitor"));
    let out = aigov(&["simulate", "--native", "--format", "json", "--cluster", &cluster, "--settings", &monitored]);
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &sim["rules"]["gpu-runtime-class"]["total"];
    assert_eq!(total["denied"], 1, "{sim}");
    assert_eq!(total["audited"], 1, "{sim}");
    assert!(!text(&out.stderr).contains("reported as warnings"), "{}", text(&out.stderr));
    // scan says it runs in monitor mode, and warns instead of denying.
    let out = aigov(&["scan", "--native", &cluster, "--settings", &monitored]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("in Kubewarden's monitor mode (`spec.mode: monitor`): gpu-runtime-class"), "{}", text(&out.stderr));
}

#[test]
fn simulate_sees_what_the_policies_see_as_they_were_admitted() {
    use crate::scan_deployment::{Scratch, aigov, bundle_policy, text};
    let dir = Scratch::new("simulate-scope");
    let policy = dir.write("policy.yaml", &bundle_policy("      gpu-runtime-class: {}\n"));
    // A Deployment, its ReplicaSet and its Pod: one workload. Pods in the
    // namespaces the policies never see.
    let template = gpu_pod("team-a", "x");
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "team-a", "uid": "uid-deploy"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "serve"}},
                 "template": {"metadata": {"labels": {"app": "serve"}}, "spec": template["spec"].clone()}},
    });
    let mut replicaset = deployment.clone();
    replicaset["kind"] = json!("ReplicaSet");
    replicaset["metadata"] = json!({"name": "serve-5d8f", "namespace": "team-a", "uid": "uid-rs",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "serve", "uid": "uid-deploy", "controller": true}]});
    let mut pod = gpu_pod("team-a", "serve-5d8f-abcde");
    pod["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "serve-5d8f", "uid": "uid-rs", "controller": true}]);
    let cluster = dump(&dir, &[], vec![deployment, replicaset, pod, gpu_pod("kube-system", "dcgm"), gpu_pod("gpu-operator", "validator")]);
    let simulate = |cluster: &str, extra: &[&str]| -> Value {
        let mut args = vec!["simulate", "--native", "--format", "json", "--cluster", cluster];
        args.extend(extra);
        let out = aigov(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let sim = simulate(&cluster, &["--settings", &policy]);
    let gpu = &sim["rules"]["gpu-runtime-class"]["total"];
    // The Deployment (its ReplicaSet and Pod judged through it) and the
    // gpu-operator pod; kube-system is excluded, as the policy excludes it.
    assert_eq!(gpu["denied"], 2, "{sim}");
    assert_eq!(sim["throughControllers"], 2, "{sim}");
    assert_eq!(sim["excluded"], 1, "{sim}");
    assert!(sim["rules"]["gpu-runtime-class"]["namespaces"].get("kube-system").is_none(), "{sim}");
    // --exclude-namespaces, as `aigov manifests` takes it.
    let sim = simulate(&cluster, &["--settings", &policy, "--exclude-namespaces", "kube-system,gpu-operator"]);
    assert_eq!(sim["rules"]["gpu-runtime-class"]["total"]["denied"], 1, "{sim}");
    assert_eq!(sim["excluded"], 2, "{sim}");
    // Without a deployment, the namespaces `aigov manifests` excludes.
    let sim = simulate(&cluster, &["--rules", "gpu-runtime-class"]);
    assert_eq!(sim["excluded"], 1, "{sim}");

    // `spec.nodeName`, set by the scheduler on a running pod, is not what
    // its owner submitted: tenant-node-pools refuses a pod bound by name
    // to a node outside its pool, but not the pod the scheduler placed.
    let settings = dir.write("tenants.yaml", "tenantLabel: null\ntenants: {team-a: [team-a]}\n");
    let mut placed = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "etl", "namespace": "misc", "uid": "uid-etl"},
        "spec": {"containers": [{"name": "main", "image": "python:3.12"}], "nodeName": "node-7"},
        "status": {"phase": "Running"},
    });
    let cluster = dump(&dir, &[], vec![placed.clone()]);
    let tenants = format!("tenant-node-pools={settings}");
    let sim = simulate(&cluster, &["--rules", "tenant-node-pools", "--settings", &tenants]);
    assert_eq!(sim["rules"]["tenant-node-pools"]["total"]["governed"], 1, "{sim}");
    assert_eq!(sim["rules"]["tenant-node-pools"]["total"]["denied"], 0, "{sim}");
    // The same pod submitted with `nodeName`, by a person: refused.
    placed.as_object_mut().unwrap().remove("status");
    let submitted = dir.write("pod.json", &placed.to_string());
    let out = aigov(&["scan", "--native", &submitted, "--rules", "tenant-node-pools", "--settings", &tenants]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
}

#[test]
fn simulate_writes_the_exceptions_that_grandfather_what_runs_today() {
    use crate::scan_deployment::{Scratch, aigov, text};
    let dir = Scratch::new("simulate-exceptions");
    let labelled = |ns: &str, name: &str, app: &str| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/name": app}},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": app}}, "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": app}},
                "spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.6.0", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            }},
        })
    };
    let cluster = dump(
        &dir,
        &[],
        vec![
            gpu_pod("team-nlp", "trainer"),
            gpu_pod("team-nlp", "eval"),
            labelled("team-cv", "bert", "bert"),
            labelled("team-cv", "gpt", "gpt"),
        ],
    );
    let file = dir.0.join("exceptions.yaml").display().to_string();
    let simulate = |extra: &[&str]| {
        let mut args = vec!["simulate", "--native", "--rules", "gpu-runtime-class", "--format", "json", "--cluster", &cluster];
        args.extend(extra);
        let out = aigov(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (serde_json::from_slice::<Value>(&out.stdout).unwrap(), text(&out.stderr))
    };
    let (before, said) = simulate(&["--write-exceptions", &file, "--until", "2099-03-01", "--reason", "runs since before the rule"]);
    assert_eq!(before["rules"]["gpu-runtime-class"]["total"]["denied"], 4, "{before}");
    assert!(said.contains(&format!("wrote 2 exception(s) for 1 rule(s) (gpu-runtime-class) to {file}")), "{said}");
    let written: Value = serde_norway::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"exceptions": [
            {"rules": ["gpu-runtime-class"], "namespaces": ["team-cv"],
             "objectSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["bert", "gpt"]}]},
             "until": "2099-03-01", "reason": "runs since before the rule"},
            {"rules": ["gpu-runtime-class"], "namespaces": ["team-nlp"], "until": "2099-03-01", "reason": "runs since before the rule"},
        ]}),
        "the unlabelled pods are scoped by namespace only"
    );

    // With the exceptions, nothing would be denied, and each excused
    // object says which exception excused it.
    let (after, _) = simulate(&["--settings", &format!("gpu-runtime-class={file}")]);
    let total = &after["rules"]["gpu-runtime-class"]["total"];
    assert_eq!(total["denied"], 0, "{after}");
    assert_eq!(total["warned"], 4, "{after}");
    let reasons = after["rules"]["gpu-runtime-class"]["reasons"].to_string();
    assert!(reasons.contains("excused by exception 1 until 2099-03-01: runs since before the rule"), "{reasons}");
    assert!(reasons.contains("excused by exception 2 until 2099-03-01: runs since before the rule"), "{reasons}");

    // Past the date, they excuse nothing, and say so.
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace("2099-03-01", "2020-03-01")).unwrap();
    let (expired, _) = simulate(&["--settings", &format!("gpu-runtime-class={file}")]);
    assert_eq!(expired["rules"]["gpu-runtime-class"]["total"]["denied"], 4, "{expired}");

    let out = aigov(&["simulate", "--native", "--cluster", &cluster, "--write-exceptions", &file, "--until", "next March"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("--until `next March` is not a date"), "{}", text(&out.stderr));
}
