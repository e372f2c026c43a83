//! No late failures, over what the cases cannot cover alone: the identities
//! the model of the controllers submits as, and a rule broken on purpose.
//!
//! Every case of every rule is held to the parent-child property in
//! `cases.rs` (`aigov::tools::children`); this file shows that the
//! property catches a rule that admits a parent and refuses what its
//! controller builds.

use std::sync::Arc;

use aigov::run::admission::{Submission, to_admission_request};
use aigov::run::artifact::Evaluator;
use aigov::run::cluster::FixtureCluster;
use aigov::tools::children;
use aigov_sdk::model::pod::OwnerReference;
use aigov_sdk::model::trust::TrustedControllers;
use aigov_sdk::{Cluster, NativePolicy, SettingsResponse, ValidationResponse};

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
