//! No late failures, over what the cases cannot cover alone: the bundled
//! samples judged with the demo's settings, the identities the model of
//! the controllers submits as, and a rule broken on purpose.
//!
//! Every case of every rule is held to the parent-child property in
//! `cases.rs` (`aigov::tools::children`); this file holds the samples to it,
//! each rule on each sample, and shows that the property catches a rule
//! that admits a parent and refuses what its controller builds.

use std::sync::Arc;

use aigov::run::admission::{Submission, parse_documents, to_admission_request};
use aigov::run::artifact::Evaluator;
use aigov::run::cluster::FixtureCluster;
use aigov::tools::children::{self, Outcome};
use aigov_sdk::model::pod::OwnerReference;
use aigov_sdk::model::trust::TrustedControllers;
use aigov_sdk::{Cluster, NativePolicy, SettingsResponse, ValidationResponse};

use crate::common::root;

/// Samples a rule refuses while admitting everything their controllers
/// build, and why that is right (as a case's `children` says it): none
/// admits a parent and refuses what is built from it.
const DIFFER: &[(&str, &str, &str)] = &[
    (
        "03-inference-deployment-unlabelled.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "05-raycluster-oversized.yaml",
        "gpu-quota",
        "the cap on one workload is the workload's at full scale, which no single pod shows; each pod is held to what its namespace still holds",
    ),
    (
        "31-distributed-training-pytorchjob-mismatched.yaml",
        "gpu-quota",
        "the cap on one workload is the workload's at full scale, which no single pod shows; each pod is held to what its namespace still holds",
    ),
    (
        "31-distributed-training-pytorchjob-mismatched.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "31-sec-inferenceservice-llm.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "32-sec-pytorchjob-trusted.yaml",
        "gpu-quota",
        "the cap on one workload is the workload's at full scale, which no single pod shows; each pod is held to what its namespace still holds",
    ),
    (
        "32-sec-pytorchjob-trusted.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "41-mig-profiles-mixed-container.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "41-prov-inferenceservice-documented.yaml",
        "trusted-sources",
        "the model's location is judged on the InferenceService, where it is written; KServe's pod webhook hands it to the storage initializer it adds from its own configuration",
    ),
    (
        "42-mig-profiles-inference-slices.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "42-prov-etl-cronjob-gpu-labelled.yaml",
        "queue-admission",
        "Kueue queues the parent, which lacks the queue label; the Jobs and pods its controller makes are admitted through it",
    ),
    (
        "43-prov-deployment-undocumented-model.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "50-mut-cpu-etl-deployment.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
    (
        "53-gpu-access-cpu-etl-on-gpu-nodes.yaml",
        "queue-admission",
        "Kueue queues the parent, which lacks the queue label; the Jobs and pods its controller makes are admitted through it",
    ),
    (
        "55-tenant-deployment-other-pool.yaml",
        "model-provenance",
        "a model's provenance is the workload's own annotation, read on it; the pods its controllers make are not among model-provenance's `kinds`",
    ),
];

/// The settings `make demo` gives a rule: its file under
/// host-test/settings, else the defaults.
fn demo_settings(rule: &str) -> String {
    let path = root().join("host-test/settings").join(format!("{rule}.yaml"));
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::to_string(&parse_documents(&text).unwrap().remove(0)).unwrap(),
        Err(_) => "{}".into(),
    }
}

/// Every rule's answer to `request` with the demo's settings, held to what
/// the controllers build from it: the rule, whether anything it governs was
/// built to compare with, and what the property found.
fn judged_with_demo_settings(request: &str, cluster: &Arc<FixtureCluster>) -> Vec<(&'static aigov_sdk::NativePolicy, bool, Vec<String>)> {
    aigov::run::native::RULES
        .iter()
        .map(|rule| {
            let settings = demo_settings(rule.metadata.name);
            let answer = Evaluator::native(rule).validate(request, &settings, cluster).unwrap();
            let outcome = children::judge(rule, request, &answer, &settings, cluster).unwrap();
            let built = matches!(&outcome, Outcome::Judged(j) if !j.is_empty());
            (rule, built, children::check(&answer, &outcome, None))
        })
        .collect()
}

#[test]
fn every_sample_agrees_with_what_its_controllers_build() {
    let samples = root().join("host-test/samples");
    let cluster = Arc::new(FixtureCluster::from_dir(&samples.join("cluster")).unwrap());
    let mut files: Vec<_> =
        std::fs::read_dir(&samples).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "yaml")).collect();
    files.sort();
    let (mut problems, mut compared, mut differing) = (Vec::new(), 0, Vec::new());
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (i, doc) in parse_documents(&std::fs::read_to_string(file).unwrap()).unwrap().into_iter().enumerate() {
            let Ok(request) = to_admission_request(doc, &Submission::default()) else { continue };
            let request = request.to_string();
            for (rule, built, found) in judged_with_demo_settings(&request, &cluster) {
                compared += usize::from(built);
                let listed = DIFFER.iter().any(|(f, r, _)| *f == name && *r == rule.metadata.name);
                if found.is_empty() {
                    continue;
                }
                differing.push((name.clone(), rule.metadata.name));
                // A listed sample may only be stricter than its children:
                // a late failure is never excused.
                let stricter = found.iter().all(|f| f.starts_with("the rule refuses the object but admits everything"));
                if !listed || !stricter {
                    problems.push(format!("{name} (document {}), {}: {}", i + 1, rule.metadata.name, found.join("\n")));
                }
            }
        }
    }
    for (file, rule, why) in DIFFER {
        if !differing.iter().any(|(f, r)| f == file && r == rule) {
            problems.push(format!("{file}, {rule}: listed as differing ({why}), but agrees"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(compared > 100, "only {compared} sample verdicts had anything built to compare with");
}

/// Every identity the model of the controllers submits as is one the
/// defaults of `trustedControllers` trust for the owners it makes objects
/// for: the two are written apart, from the controllers' sources and
/// charts, and must agree.
#[test]
fn every_controller_the_model_submits_as_is_trusted_by_default() {
    let mut checked = 0;
    for (owner, controller) in aigov_controllers::identities() {
        let (kind, group) = owner.split_once('.').unwrap_or((owner, ""));
        let api_version = if group.is_empty() { "v1".to_string() } else { format!("{group}/v1") };
        let reference =
            OwnerReference { api_version: api_version.as_str().into(), kind: kind.into(), name: "x".into(), controller: Some(true) };
        assert!(
            TrustedControllers::Defaults.trusts(&controller.identity.username, &reference),
            "{} makes objects owned by {owner}, but the defaults do not trust it for them",
            controller.identity.username
        );
        checked += 1;
    }
    assert!(checked > 20, "{checked}");
}

/// A rule broken on purpose: the bundle's metadata (every kind), but it refuses
/// every Pod and admits everything else. The property must catch it on a
/// Deployment it admits, naming the pod its controllers build.
fn refuses_pods(request: &str, _settings: &str, _cluster: &dyn Cluster) -> ValidationResponse {
    let kind = serde_json::from_str::<serde_json::Value>(request)
        .ok()
        .and_then(|r| r.pointer("/kind/kind").and_then(|k| k.as_str().map(str::to_string)));
    if kind.as_deref() == Some("Pod") { ValidationResponse::reject("no pods", None) } else { ValidationResponse::accept() }
}

fn refuses_pods_payload(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
    let p: serde_json::Value = serde_json::from_slice(payload).unwrap();
    refuses_pods(&p["request"].to_string(), &p["settings"].to_string(), cluster)
}

static BROKEN: NativePolicy = NativePolicy {
    metadata: aigov_bundle::AIGOV_POLICY.metadata,
    validate: refuses_pods_payload,
    validate_request: refuses_pods,
    validate_settings: |_| SettingsResponse { valid: true, message: None },
    default_settings: || serde_json::json!({}),
    effective_settings: |_| Ok(serde_json::json!({})),
};

#[test]
fn a_rule_that_admits_a_deployment_and_refuses_its_pods_is_caught() {
    let deployment = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}
    });
    let request = to_admission_request(deployment, &Submission::default()).unwrap().to_string();
    let cluster = Arc::new(FixtureCluster::empty());
    let answer = Evaluator::native(&BROKEN).validate(&request, "{}", &cluster).unwrap();
    assert!(answer.accepted, "the broken rule admits the Deployment");
    let outcome = children::judge(&BROKEN, &request, &answer, "{}", &cluster).unwrap();
    let found = children::check(&answer, &outcome, None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("late failure: the rule admits the object but refuses what its controllers build"), "{found:?}");
    assert!(found[0].contains("Deployment `web` → ReplicaSet `web-6d5f8c7b9` → Pod"), "{found:?}");
    assert!(found[0].contains("replicaset-controller"), "{found:?}");
}

/// A GPU Deployment created before `gpu-runtime-class` (no runtime class,
/// no toleration), with its image `tag`, `replicas` and own `labels`.
fn legacy_gpu_deployment(tag: &str, replicas: i64, labels: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "vllm", "namespace": "ml", "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "v"}},
            "template": {"metadata": {"labels": {"app": "v"}},
                "spec": {"containers": [{"name": "c", "image": format!("vllm/vllm-openai:{tag}"), "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
    })
}

/// An UPDATE from `old` to `new`, and the rule's answer, the property's
/// outcome and its problems.
fn updated(
    rule: &'static NativePolicy,
    old: serde_json::Value,
    new: serde_json::Value,
) -> (String, ValidationResponse, Outcome, Vec<String>) {
    let how = Submission { operation: Some("UPDATE".into()), old_object: Some(old), ..Submission::default() };
    let request = to_admission_request(new, &how).unwrap().to_string();
    let cluster = Arc::new(FixtureCluster::empty());
    let answer = Evaluator::native(rule).validate(&request, "{}", &cluster).unwrap();
    let outcome = children::judge(rule, &request, &answer, "{}", &cluster).unwrap();
    let found = children::check(&answer, &outcome, None);
    (request, answer, outcome, found)
}

fn rule(name: &str) -> &'static NativePolicy {
    aigov::run::native::RULES.iter().find(|r| r.metadata.name == name).unwrap()
}

/// Issue 42: an image bump of a GPU Deployment that already broke the rule
/// was admitted (the old object had the violation, and
/// `allowExistingViolations` kept it as a warning), while the ReplicaSet
/// and pods the deployment-controller then creates from the new template
/// were refused: the rollout stalled after `kubectl apply` succeeded. The
/// property judges an UPDATE that makes controllers build, so it catches an
/// answer that grandfathers the violation; the SDK refuses it, saying why.
#[test]
fn an_update_that_makes_controllers_build_is_held_to_what_they_build() {
    let grc = rule("gpu-runtime-class");
    let old = legacy_gpu_deployment("v0.6.0", 2, serde_json::json!({}));
    let (_, answer, outcome, found) = updated(grc, old.clone(), legacy_gpu_deployment("v0.6.1", 2, serde_json::json!({})));
    assert!(matches!(&outcome, Outcome::Judged(j) if !j.is_empty()), "an image bump makes a new ReplicaSet: {outcome:?}");
    assert!(found.is_empty(), "{found:?}");
    assert!(!answer.accepted, "the image bump is refused");
    let message = answer.message.unwrap_or_default();
    assert!(
        message.contains("makes the deployment-controller create new pods from `spec.template`, and they would be refused"),
        "{message}"
    );

    // What the SDK answered before: the violations grandfathered, the
    // update admitted with warnings. The property must call it a late failure.
    let grandfathered = ValidationResponse {
        warnings: vec!["(allowed: the object already had this before the update)".into()],
        ..ValidationResponse::accept()
    };
    let found = children::check(&grandfathered, &outcome, None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("late failure: the rule admits the object but refuses what its controllers build"), "{found:?}");
    assert!(found[0].contains("Deployment `vllm` → ReplicaSet"), "{found:?}");

    // A scale-up builds pods too; a label edit and a scale-down build
    // nothing, and keep their grandfathering.
    let (_, answer, _, found) = updated(grc, old.clone(), legacy_gpu_deployment("v0.6.0", 5, serde_json::json!({})));
    assert!(!answer.accepted && found.is_empty(), "{answer:?} {found:?}");
    for new in
        [legacy_gpu_deployment("v0.6.0", 2, serde_json::json!({"tier": "gold"})), legacy_gpu_deployment("v0.6.0", 1, serde_json::json!({}))]
    {
        let (_, answer, outcome, found) = updated(grc, old.clone(), new);
        assert!(matches!(outcome, Outcome::NothingBuilt), "{outcome:?}");
        assert!(answer.accepted && answer.warnings.len() == 2 && found.is_empty(), "{answer:?} {found:?}");
    }
}

/// Every container image in `v` with `suffix` added: the same object with
/// every pod template changed.
fn images_changed(v: &mut serde_json::Value, suffix: &str) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x) {
                    ("image", serde_json::Value::String(s)) => s.push_str(suffix),
                    (_, x) => images_changed(x, suffix),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| images_changed(x, suffix)),
        _ => {}
    }
}

/// Every count of pods in `v` (`replicas`, `minReplicas`, `parallelism`)
/// one smaller, where it is above zero: the same object before a scale-up.
fn scaled_down(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x.as_i64()) {
                    ("replicas" | "minReplicas" | "parallelism", Some(n)) if n > 0 => *x = serde_json::json!(n - 1),
                    _ => scaled_down(x),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(scaled_down),
        _ => {}
    }
}

/// Every sample, submitted as an UPDATE from the same object with other
/// images (a rollout of a new image), or with fewer pods (a scale-up),
/// agrees with what its controllers build from it: what the old object
/// already broke is no excuse where the controllers create pods that
/// carry it.
#[test]
fn every_sample_rolled_out_again_agrees_with_what_its_controllers_build() {
    let scale_up = |old: &mut serde_json::Value| scaled_down(old);
    let new_images = |old: &mut serde_json::Value| images_changed(old, "-previous");
    for (how, change) in [("rolled out", &new_images as &dyn Fn(&mut serde_json::Value)), ("scaled up", &scale_up)] {
        updated_samples_agree(how, change);
    }
}

fn updated_samples_agree(how_changed: &str, change: &dyn Fn(&mut serde_json::Value)) {
    let samples = root().join("host-test/samples");
    let cluster = Arc::new(FixtureCluster::from_dir(&samples.join("cluster")).unwrap());
    let mut files: Vec<_> =
        std::fs::read_dir(&samples).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "yaml")).collect();
    files.sort();
    let (mut problems, mut compared) = (Vec::new(), 0);
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (i, doc) in parse_documents(&std::fs::read_to_string(file).unwrap()).unwrap().into_iter().enumerate() {
            let mut old = doc.clone();
            change(&mut old);
            if old == doc {
                continue;
            }
            let how = Submission { operation: Some("UPDATE".into()), old_object: Some(old), ..Submission::default() };
            let Ok(request) = to_admission_request(doc, &how) else { continue };
            let request = request.to_string();
            for (rule, built, found) in judged_with_demo_settings(&request, &cluster) {
                compared += usize::from(built);
                let listed = DIFFER.iter().any(|(f, r, _)| *f == name && *r == rule.metadata.name);
                let stricter = found.iter().all(|f| f.starts_with("the rule refuses the object but admits everything"));
                // A mutating rule leaves a template no update changes
                // alone (editing it would roll every pod) and fills in
                // the new pods of a scale-up as they are created.
                let filled_in = how_changed == "scaled up"
                    && rule.metadata.mutating
                    && found.iter().all(|f| f.starts_with("late failure: the rule admits the object but changes what"));
                if !found.is_empty() && (!listed || !stricter) && !filled_in {
                    problems.push(format!("{name} (document {}, {how_changed}), {}: {}", i + 1, rule.metadata.name, found.join("\n")));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(compared > 50, "only {compared} sample updates ({how_changed}) had anything built to compare with");
}
