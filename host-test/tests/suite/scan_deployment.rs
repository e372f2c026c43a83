//! A team that adopts a few rules (issue 44): `scan` and `eval` take its
//! deployment, the bundle's policy file (`--settings`), or `--rules a,b`
//! (`eval` of the bundle), and check exactly the rules it turns on, with
//! their settings; a rule it leaves off needs no settings, and no report
//! names it. Also what the
//! engineer sees of a manifest without a namespace (`--namespace`), and
//! of a scan with nothing to check (its own exit status).
//!
//! The rules run natively (`--native`): no artifacts needed.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::root;

/// The three rules the walkthrough adopts, in audit for one of them.
const ADOPTED: [&str; 3] = ["gpu-runtime-class", "ray-cluster-limits", "idle-gpu-pods"];

/// The bundle's policy, as `aigov manifests` writes it, turning on
/// `rules` (YAML, one rule per line).
pub fn bundle_policy(rules: &str) -> String {
    format!(
        "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n\
         metadata:\n  name: aigov-bundle\n  labels: {{app.kubernetes.io/name: aigov-bundle}}\n\
         spec:\n  module: registry://registry.example.com/aigov/aigov-bundle:v0.1.0@sha256:00\n  mode: protect\n\
         \x20 namespaceSelector:\n    matchExpressions:\n\
         \x20   - {{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kubewarden]}}\n\
         \x20 settings:\n    rules:\n{rules}"
    )
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aigov-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn aigov(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aigov")).args(args).current_dir(root()).stdin(Stdio::null()).output().unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn samples() -> String {
    root().join("host-test/samples").display().to_string()
}

fn sample(name: &str) -> String {
    root().join("host-test/samples").join(name).display().to_string()
}

/// The adopted rules' policy: gpu-runtime-class in audit.
fn adopted(dir: &Scratch) -> String {
    dir.write(
        "cluster-admission-policy.yaml",
        &bundle_policy("      gpu-runtime-class: {mode: audit}\n      ray-cluster-limits: {}\n      idle-gpu-pods: {}\n"),
    )
}

fn names(values: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    values.into_iter().collect()
}

#[test]
fn scan_checks_exactly_the_rules_the_deployment_turns_on() {
    let dir = Scratch::new("scan-deployment");
    let policy = adopted(&dir);
    let adopted: BTreeSet<String> = ADOPTED.iter().map(|r| r.to_string()).collect();
    let off: Vec<&str> = aigov::run::native::RULES.iter().map(|r| r.metadata.name).filter(|r| !ADOPTED.contains(r)).collect();
    assert!(off.contains(&"trusted-sources"));

    // JSON: no trusted-sources settings needed, only the three rules.
    let out = aigov(&["scan", "--native", "--format", "json", &samples(), "--settings", &policy]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the oversized RayCluster and the devbox are denied: {said}");
    assert!(
        said.contains(&format!("aigov scan: checking the 3 rule(s) {policy} turns on: gpu-runtime-class, ")),
        "the engineer is told which rules run: {said}"
    );
    assert!(!said.contains("trusted-sources"), "{said}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = names(report["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()));
    assert_eq!(listed, adopted);
    let mut denied_by = BTreeSet::new();
    for doc in report["documents"].as_array().unwrap() {
        let results = doc["results"].as_object().unwrap();
        assert!(results.keys().all(|r| adopted.contains(r)), "{doc}");
        denied_by.extend(results.iter().filter(|(_, r)| r["verdict"] == "deny").map(|(rule, _)| rule.clone()));
    }
    // gpu-runtime-class runs in audit: it warns, never denies.
    assert_eq!(denied_by, names(["ray-cluster-limits".to_string(), "idle-gpu-pods".to_string()]));
    assert!(report["summary"]["warned"].as_u64().unwrap() > 0, "{}", report["summary"]);

    // Every other report lists the same three rules and nothing else.
    let sample_names: Vec<String> =
        std::fs::read_dir(samples()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for format in ["table", "sarif", "junit", "policyreport"] {
        let out = aigov(&["scan", "--native", "--format", format, &samples(), "--settings", &policy]);
        let report = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", text(&out.stderr));
        for rule in ADOPTED {
            assert!(report.contains(rule), "{format} names {rule}: {report}");
        }
        // (but the rules that name samples, whose file names reports carry)
        for rule in off.iter().filter(|r| !sample_names.iter().any(|n| n.contains(**r))) {
            assert!(!report.contains(*rule), "{format} names `{rule}`, which the deployment leaves off");
        }
    }
    let sarif: Value =
        serde_json::from_slice(&aigov(&["scan", "--native", "--format", "sarif", &samples(), "--settings", &policy]).stdout).unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(names(rules.iter().map(|r| r["id"].as_str().unwrap().to_string())), adopted);

    // --rules narrows the deployment, to rules it turns on.
    let out = aigov(&["scan", "--native", "--format", "json", &samples(), "--settings", &policy, "--rules", "idle-gpu-pods"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rules"].as_array().unwrap().len(), 1, "{}", report["rules"]);
    assert!(text(&out.stderr).contains("checking the 1 rule(s) `--rules` names: idle-gpu-pods"), "{}", text(&out.stderr));
    let out = aigov(&["scan", "--native", &samples(), "--settings", &policy, "--rules", "gpu-quota"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!(
            "--rules: {policy} does not turn `gpu-quota` on (it turns on gpu-runtime-class, idle-gpu-pods, ray-cluster-limits)"
        )),
        "{}",
        text(&out.stderr)
    );
    // --rules alone: those rules with their defaults, nothing else needed.
    let out = aigov(&["scan", "--native", "--format", "json", &sample("30-idle-gpu-devbox.yaml"), "--rules", "idle-gpu-pods"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rules"][0]["name"], "idle-gpu-pods");
    assert_eq!(report["rules"].as_array().unwrap().len(), 1);

    // Every rule, implicitly: trusted-sources still needs settings, and the
    // refusal says how to check only the rules a team turned on.
    let out = aigov(&["scan", "--native", &samples()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("or check only the rules your team turns on: `--settings` with its deployment"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn scan_and_eval_take_the_directory_aigov_manifests_wrote() {
    // A deployment directory: the overlay turns one rule's policy on.
    let dir = Scratch::new("scan-overlay");
    for (rule, settings) in [("idle-gpu-pods", "{}"), ("trusted-sources", "{}")] {
        std::fs::create_dir_all(dir.0.join(rule)).unwrap();
        dir.write(
            &format!("{rule}/cluster-admission-policy.yaml"),
            &format!(
                "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata: {{name: aigov-{rule}}}\n\
                 spec:\n  module: registry://registry.example.com/aigov/{rule}:v0.1.0@sha256:00\n  settings: {settings}\n"
            ),
        );
    }
    std::fs::create_dir_all(dir.0.join("overlay")).unwrap();
    dir.write("overlay/kustomization.yaml", "resources:\n- ../idle-gpu-pods\n# - ../trusted-sources\n");
    let deploy = dir.0.display().to_string();
    let out = aigov(&["scan", "--native", "--format", "json", &samples(), "--settings", &deploy]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), ["idle-gpu-pods"]);

    // eval of the bundle with the same deployment: the same rules.
    let out = aigov(&["eval", "aigov-bundle", "--native", &sample("30-idle-gpu-devbox.yaml"), "--settings", &deploy]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("idle-gpu-pods: denied"), "{said}");
    assert!(!said.contains("gpu-runtime-class") && !said.contains("trusted-sources"), "{said}");
}

#[test]
fn eval_of_the_bundle_runs_the_rules_the_policy_turns_on() {
    let dir = Scratch::new("eval-deployment");
    let policy = adopted(&dir);
    let out = aigov(&["eval", "aigov-bundle", "--native", &sample("05-raycluster-oversized.yaml"), "--settings", &policy]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("ray-cluster-limits: denied"), "{said}");
    for off in ["gpu-quota", "workload-security", "workload-classification", "trusted-sources"] {
        assert!(!said.contains(off), "{off} is off: {said}");
    }
    // One rule the policy turns on, with its settings; one it does not, named.
    let out = aigov(&["eval", "gpu-runtime-class", "--native", &sample("02-gpu-training-pod-broken.yaml"), "--settings", &policy]);
    assert_eq!(out.status.code(), Some(0), "audit admits: {}", text(&out.stdout));
    assert!(text(&out.stdout).contains("audit mode, not enforced"), "{}", text(&out.stdout));
    let out = aigov(&["eval", "gpu-quota", "--native", &sample("02-gpu-training-pod-broken.yaml"), "--settings", &policy]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("does not turn `gpu-quota` on"), "{}", text(&out.stderr));
}

#[test]
fn eval_of_the_bundle_takes_rules_as_scan_does() {
    let devbox = sample("30-idle-gpu-devbox.yaml");
    // Without a deployment, the refusal names `--rules`, and eval takes it:
    // exactly those rules, trusted-sources (left out) needing nothing.
    let out = aigov(&["eval", "aigov-bundle", "--native", &devbox]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("or `--rules a,b`"), "{}", text(&out.stderr));
    let out = aigov(&["eval", "aigov-bundle", "--native", &devbox, "--rules", "idle-gpu-pods,gpu-runtime-class"]);
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}{err}");
    assert!(err.contains("checking the 2 rule(s) `--rules` names: gpu-runtime-class, idle-gpu-pods"), "{err}");
    assert!(said.contains("idle-gpu-pods: denied") && said.contains("admitted by 1 rule: gpu-runtime-class"), "{said}");
    assert!(!said.contains("trusted-sources") && !err.contains("trusted-sources"), "{said}{err}");
    // With the deployment: rules it turns on, with its settings (audit).
    let dir = Scratch::new("eval-rules");
    let policy = adopted(&dir);
    let broken = sample("02-gpu-training-pod-broken.yaml");
    let out = aigov(&["eval", "aigov-bundle", "--native", &broken, "--settings", &policy, "--rules", "gpu-runtime-class"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "audit admits: {said}{}", text(&out.stderr));
    assert!(said.contains("gpu-runtime-class") && !said.contains("idle-gpu-pods"), "{said}");
    let out = aigov(&["eval", "aigov-bundle", "--native", &broken, "--settings", &policy, "--rules", "gpu-quota"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(&format!("--rules: {policy} does not turn `gpu-quota` on")), "{}", text(&out.stderr));
    // One rule runs alone: --rules is refused, saying why.
    let out = aigov(&["eval", "idle-gpu-pods", "--native", &devbox, "--rules", "idle-gpu-pods"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "--rules picks rules of `aigov-bundle`; `idle-gpu-pods` is one rule, which eval runs alone: to check several rules, write \
             `aigov eval aigov-bundle MANIFEST --rules idle-gpu-pods`"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn scan_judges_a_manifest_without_a_namespace_where_it_is_told() {
    let dir = Scratch::new("scan-namespace");
    let pod = dir.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: trainer}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sleep, infinity], \
         resources: {limits: {nvidia.com/gpu: 1}}}\n",
    );
    let out = aigov(&["scan", "--native", "--format", "json", "--fail-on", "none", &pod, "--rules", "idle-gpu-pods"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["documents"][0]["namespace"], "default", "{}", report["documents"][0]);
    assert!(
        text(&out.stderr).contains("1 document(s) name no namespace and were judged in `default`, where `kubectl apply` without `-n` creates them: `--namespace NS` judges them as installed in NS"),
        "{}",
        text(&out.stderr)
    );
    let table = text(&aigov(&["scan", "--native", "--fail-on", "none", &pod, "--rules", "idle-gpu-pods"]).stdout);
    assert!(table.contains("were judged in `default`"), "{table}");

    let out =
        aigov(&["scan", "--native", "--format", "json", "--fail-on", "none", &pod, "--rules", "idle-gpu-pods", "--namespace", "team-nlp"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["documents"][0]["namespace"], "team-nlp", "{}", report["documents"][0]);
    assert!(!text(&out.stderr).contains("judged in `default`"), "{}", text(&out.stderr));
}

#[test]
fn scan_with_nothing_to_check_has_its_own_exit_status() {
    let dir = Scratch::new("scan-nothing");
    let empty = dir.write("empty.yaml", "# nothing here yet\n---\n");
    let out = aigov(&["scan", "--native", &empty, "--rules", "idle-gpu-pods"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("No Kubernetes object to check: exit status 3"), "{}", text(&out.stdout));
    let out = aigov(&["scan", "--native", &empty, "--rules", "idle-gpu-pods", "--fail-on", "none"]);
    assert_eq!(out.status.code(), Some(0));
    // A directory without manifests, and eval of a file without an object.
    std::fs::create_dir_all(dir.0.join("charts")).unwrap();
    let out = aigov(&["scan", "--native", dir.0.join("charts").to_str().unwrap(), "--rules", "idle-gpu-pods"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no manifests in"), "{}", text(&out.stderr));
    let out = aigov(&["eval", "idle-gpu-pods", "--native", &empty]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // A denial is still 1.
    let out = aigov(&["scan", "--native", &sample("30-idle-gpu-devbox.yaml"), "--rules", "idle-gpu-pods"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn scan_refuses_a_key_given_twice_naming_it() {
    let dir = Scratch::new("scan-duplicate");
    // `cat a.yaml b.yaml`: two objects without `---` between them.
    let a = std::fs::read_to_string(sample("30-idle-gpu-devbox.yaml")).unwrap();
    let b =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: other, namespace: ml-research}\nspec:\n  containers: [{name: c, image: busybox}]\n";
    let both = dir.write("both.yaml", &format!("{a}{b}"));
    let out = aigov(&["scan", "--native", "--format", "json", &both, "--rules", "idle-gpu-pods"]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "the key `apiVersion` appears twice in one mapping (kubectl refuses that; two objects in one file need `---` between them)"
        ),
        "{said}"
    );
    let out = aigov(&["eval", "idle-gpu-pods", "--native", &both]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("the key `apiVersion` appears twice"), "{}", text(&out.stderr));
}

/// A Deployment of one GPU container, with the runtime class or without.
fn gpu_deployment(runtime_class: bool) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: serve, namespace: team-nlp}}\nspec:\n  selector: {{matchLabels: {{app: serve}}}}\n  \
         template:\n    metadata: {{labels: {{app: serve}}}}\n    spec:\n{}      tolerations: [{{key: nvidia.com/gpu, operator: Exists}}]\n      \
         containers: [{{name: main, image: vllm/vllm-openai:v0.6.0, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]\n",
        if runtime_class { "      runtimeClassName: nvidia\n" } else { "" }
    )
}

#[test]
fn eval_names_each_object_and_tells_an_update_from_a_create() {
    let dir = Scratch::new("eval-update");
    let (fixed, broken) = (dir.write("fixed.yaml", &gpu_deployment(true)), dir.write("broken.yaml", &gpu_deployment(false)));
    // Several documents: one JSON list, each entry naming its object.
    let both = dir
        .write("both.yaml", &format!("{}---\n{}", gpu_deployment(true), gpu_deployment(false).replace("name: serve,", "name: serve-2,")));
    let out = aigov(&["eval", "gpu-runtime-class", "--native", &both, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<(&str, bool)> =
        list.as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap(), e["response"]["accepted"].as_bool().unwrap())).collect();
    assert_eq!(names, [("serve", true), ("serve-2", false)], "{list}");
    assert_eq!(list[1]["document"], 2);
    assert_eq!(list[1]["kind"], "Deployment");

    // An UPDATE of a plain manifest: old and new are the same object,
    // which eval says; --old gives the object before the update.
    let out = aigov(&["eval", "gpu-runtime-class", "--native", &broken, "--operation", "UPDATE"]);
    assert!(text(&out.stderr).contains("--operation UPDATE without --old: the old object is the new one"), "{}", text(&out.stderr));
    let out = aigov(&["eval", "gpu-runtime-class", "--native", &broken, "--operation", "UPDATE", "--old", &fixed]);
    assert_eq!(out.status.code(), Some(1), "an update that drops the runtime class is refused: {}", text(&out.stdout));
    let out = aigov(&["eval", "gpu-runtime-class", "--native", &broken, "--old", &fixed]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--old is the object before an update: give it with `--operation UPDATE`"), "{}", text(&out.stderr));
}
