//! Mutating and validating rules together in the bundle, as a platform team
//! deploys them: the mutating rules run first, each on the object the one
//! before left, and the validating rules judge the result. So
//! `gpu-runtime-defaults` beside `gpu-runtime-class` admits a GPU pod that
//! lacks its runtime class and toleration, with both filled in, and still
//! refuses a runtime class the author chose wrong.
//!
//! Runs the bundle natively, as a Kubewarden module and as a component
//! (`make artifacts` first, like the case tests).

use crate::common::artifacts;
use std::sync::Arc;

use aigov::run::admission::{Submission, to_admission_request};
use aigov::run::cluster::FixtureCluster;
use aigov::tools::cases::load_bundle;
use aigov_sdk::ValidationResponse;
use serde_json::{Value, json};

fn bundle_answers(object: Value, settings: &Value) -> Vec<(&'static str, ValidationResponse)> {
    let artifacts = artifacts();
    let engine = aigov::run::engine::new_engine().unwrap();
    let bundle = load_bundle(&engine, &artifacts).unwrap_or_else(|e| panic!("{e:#}\n(run `make artifacts` first)"));
    let request = to_admission_request(object, &Submission::default()).unwrap().to_string();
    let cluster = Arc::new(FixtureCluster::empty());
    bundle.iter().map(|e| (e.form(), e.validate(&request, &settings.to_string(), &cluster).unwrap())).collect()
}

fn gpu_pod(runtime_class: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {"containers": [{"name": "trainer", "image": "pytorch/pytorch:2.3.0", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}
    });
    if let Some(rc) = runtime_class {
        pod["spec"]["runtimeClassName"] = json!(rc);
    }
    pod
}

fn mutated(r: &ValidationResponse) -> Value {
    serde_json::from_str(r.mutated_object.as_ref().expect("a mutated object").get()).unwrap()
}

#[test]
fn the_validation_alone_refuses_what_the_defaults_fill_in() {
    for (form, r) in bundle_answers(gpu_pod(None), &json!({"rules": {"gpu-runtime-class": {}}})) {
        assert!(!r.accepted, "{form}: {r:?}");
        assert_eq!(r.violations().len(), 2, "{form}: {r:?}");
    }
}

#[test]
fn defaults_run_first_and_the_validation_passes() {
    let settings = json!({"rules": {"gpu-runtime-class": {}, "gpu-runtime-defaults": {}}});
    let answers = bundle_answers(gpu_pod(None), &settings);
    for (form, r) in &answers {
        assert!(r.accepted, "{form}: {r:?}");
        assert!(r.warnings.is_empty(), "{form}: {r:?}");
        let pod = mutated(r);
        assert_eq!(pod["spec"]["runtimeClassName"], "nvidia", "{form}");
        assert_eq!(pod["spec"]["tolerations"], json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]), "{form}");
        assert_eq!(pod["spec"]["containers"], gpu_pod(None)["spec"]["containers"], "{form}: the rest as sent");
    }
    let first = &answers[0].1;
    assert!(answers.iter().all(|(_, r)| r == first), "the three forms agree: {answers:?}");
}

#[test]
fn a_runtime_class_the_author_chose_is_left_for_the_validation_to_refuse() {
    let settings = json!({"rules": {"gpu-runtime-class": {}, "gpu-runtime-defaults": {}}});
    for (form, r) in bundle_answers(gpu_pod(Some("runc")), &settings) {
        assert!(!r.accepted, "{form}: {r:?}");
        assert!(r.mutated_object.is_none(), "{form}: nothing is mutated when the request is refused");
        let message = r.message.clone().unwrap_or_default();
        assert_eq!(r.violations().len(), 1, "{form}: only the runtime class; the toleration was filled in: {message}");
        assert!(message.starts_with("gpu-runtime-class: `spec.runtimeClassName` is `runc`"), "{form}: {message}");
        assert!(r.warnings.iter().any(|w| w.starts_with("gpu-runtime-defaults: `spec.runtimeClassName` is `runc`")), "{form}: {r:?}");
    }
}

#[test]
fn every_mutating_rule_in_turn_on_a_mixed_ray_cluster() {
    let cluster = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "mixed", "namespace": "ml"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.47.1"}]}}},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": {"spec": {"containers": [
                {"name": "ray-worker", "image": "rayproject/ray:2.47.1-gpu", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}]
        }
    });
    let settings = json!({"rules": {
        "gpu-runtime-class": {}, "gpu-runtime-defaults": {}, "gpu-node-avoidance": {}, "owner-label": {"labels": {"use-case": "customer-support-llm"}}
    }});
    let answers = bundle_answers(cluster, &settings);
    for (form, r) in &answers {
        assert!(r.accepted, "{form}: {r:?}");
        let c = mutated(r);
        let head = &c["spec"]["headGroupSpec"]["template"];
        let worker = &c["spec"]["workerGroupSpecs"][0]["template"];
        assert_eq!(
            head["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]
                [0]["key"],
            "nvidia.com/gpu.present",
            "{form}: the CPU head stays off GPU nodes"
        );
        assert!(worker["spec"].get("affinity").is_none(), "{form}: the GPU workers go to GPU nodes");
        assert_eq!(worker["spec"]["runtimeClassName"], "nvidia", "{form}");
        for meta in [&c["metadata"], &head["metadata"], &worker["metadata"]] {
            assert_eq!(meta["labels"]["owner"], "jane.doe-example.com", "{form}");
            assert_eq!(meta["labels"]["use-case"], "customer-support-llm", "{form}");
            assert_eq!(meta["annotations"]["aigov.dev/owner"], "jane.doe@example.com", "{form}");
        }
    }
    let first = &answers[0].1;
    assert!(answers.iter().all(|(_, r)| r == first), "the three forms agree");
}

/// The bundle keeps the last settings it read (per thread, as a warm
/// instance gets the same settings with every request): settings that
/// change from one request to the next are each applied, refused settings
/// are refused every time, and going back is seen too.
#[test]
fn each_request_is_judged_by_the_settings_it_carries() {
    let on = json!({"rules": {"gpu-runtime-class": {}}});
    let off = json!({"rules": {}});
    let null = json!({"rules": {"gpu-runtime-class": null}});
    let unknown = json!({"rules": {"gpu-runtime-clas": {}}});
    for (settings, accepted) in
        [(&on, false), (&off, true), (&on, false), (&unknown, false), (&null, false), (&off, true), (&unknown, false)]
    {
        for (form, r) in bundle_answers(gpu_pod(None), settings) {
            assert_eq!(r.accepted, accepted, "{form}, {settings}: {r:?}");
            let message = r.message.unwrap_or_default();
            if settings == &unknown {
                assert_eq!(r.code, Some(400), "{form}: {message}");
                assert!(message.contains("setting `rules.gpu-runtime-clas`: no such rule"), "{form}: {message}");
            } else if !accepted {
                assert!(message.starts_with("gpu-runtime-class: "), "{form}: {message}");
            }
        }
    }
}
