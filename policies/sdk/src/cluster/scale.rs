//! The `scale` subresource: `kubectl scale`, the HorizontalPodAutoscaler
//! and KEDA change a workload's replicas with an UPDATE of its
//! `autoscaling/v1` `Scale` (`deployments/scale`, `pytorchjobs/scale`, …),
//! never of the workload itself, so a rule that caps replicas must govern
//! the `Scale` too, or `kubectl scale` walks past what `kubectl apply` is
//! refused.
//!
//! A `Scale` carries only the new `spec.replicas`. [`ScaleChange::of`]
//! reads it with the target the request names; [`ScaleChange::target`]
//! looks the target up (Kubewarden's `kubernetes/get_resource`: the rule
//! lists the target kinds in `contextAwareResources`) and returns its JSON
//! with the new replica count written where the API server writes it (the
//! built-in kinds' `spec.replicas`, a custom resource's `specReplicasPath`),
//! for the rule to judge as it judges the workload submitted whole.

use serde::Deserialize;

use crate::base::error::Malformed;
use crate::cluster::{Cluster, LookupError};
use crate::decode::json::{self, Edit};
use crate::decode::path::Path;
use crate::model::kind::WorkloadKind;
use crate::model::request::{Operation, Request};

/// The kinds whose `scale` subresource a rule can judge, with the field a
/// `Scale` sets: `spec.replicas` of the built-in controllers (the API
/// server's own scale subresources), and of the custom resources whose
/// CRD declares one, its `specReplicasPath`: LeaderWorkerSet's
/// `.spec.replicas`; the training operator's PyTorchJob, PaddleJob and
/// JAXJob (`manifests/base/crds/kubeflow.org_*.yaml`), their `Worker`
/// replicas. TFJob, XGBoostJob, MPIJob, JobSet, Volcano Job, TrainJob,
/// KubeRay's kinds and KServe's InferenceService declare none.
pub const SCALABLE: [(WorkloadKind, &[&str]); 8] = [
    (WorkloadKind::Deployment, REPLICAS),
    (WorkloadKind::StatefulSet, REPLICAS),
    (WorkloadKind::ReplicaSet, REPLICAS),
    (WorkloadKind::ReplicationController, REPLICAS),
    (WorkloadKind::LeaderWorkerSet, REPLICAS),
    (WorkloadKind::PyTorchJob, &["spec", "pytorchReplicaSpecs", "Worker", "replicas"]),
    (WorkloadKind::PaddleJob, &["spec", "paddleReplicaSpecs", "Worker", "replicas"]),
    (WorkloadKind::JaxJob, &["spec", "jaxReplicaSpecs", "Worker", "replicas"]),
];

const REPLICAS: &[&str] = &["spec", "replicas"];

/// An UPDATE of a workload's `scale` subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleChange {
    /// The target's kind.
    pub kind: WorkloadKind,
    /// The target's `apiVersion` (`apps/v1`, `leaderworkerset.x-k8s.io/v1`).
    pub api_version: String,
    /// The target's name.
    pub name: String,
    /// The field of the target the `Scale` sets (`spec.replicas`).
    pub field: &'static [&'static str],
    /// The new `spec.replicas`.
    pub replicas: i64,
    /// The replicas before the change, when the request carries its old
    /// `Scale`.
    pub old_replicas: Option<i64>,
}

#[derive(Deserialize, Default)]
struct ScaleWire {
    #[serde(default)]
    spec: Option<ScaleSpecWire>,
}

#[derive(Deserialize, Default)]
struct ScaleSpecWire {
    #[serde(default)]
    replicas: Option<i64>,
}

impl ScaleWire {
    /// `spec.replicas`; absent means zero (the API omits a zero).
    fn replicas(&self) -> i64 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
    }
}

impl ScaleChange {
    /// The change a request makes, if it is an UPDATE of the `scale`
    /// subresource of a kind in [`SCALABLE`].
    pub fn of(req: &Request<'_>) -> Result<Option<ScaleChange>, Malformed> {
        if req.operation() != Operation::Update || req.sub_resource() != Some("scale") {
            return Ok(None);
        }
        let r = req.resource();
        let Some((kind, field)) = SCALABLE.into_iter().find(|(k, _)| k.group() == &*r.group && k.resource() == &*r.resource) else {
            return Ok(None);
        };
        let Some(scale) = req.object_as::<ScaleWire>("the Scale")? else { return Ok(None) };
        let old_replicas = match req.old_object_text() {
            Some(old) => Some(crate::decode::explain::decode::<ScaleWire>(old, "the old Scale")?.replicas()),
            None => None,
        };
        let api_version = if r.group.is_empty() { r.version.to_string() } else { format!("{}/{}", r.group, r.version) };
        Ok(Some(ScaleChange {
            kind,
            api_version,
            name: req.name().unwrap_or_default().to_string(),
            field,
            replicas: scale.replicas(),
            old_replicas,
        }))
    }

    /// Whether the change lowers (or keeps) the replicas: it can only
    /// bring the workload further under any cap.
    pub fn scales_down(&self) -> bool {
        self.old_replicas.is_some_and(|old| self.replicas <= old)
    }

    /// The target, looked up in `namespace`, as JSON with the new count
    /// written at [`ScaleChange::field`], the objects on the way created
    /// where absent, as the API server writes a custom resource's
    /// `specReplicasPath` (`unstructured.SetNestedField`).
    pub fn target(&self, namespace: &str, cluster: &dyn Cluster) -> Result<String, LookupError> {
        let json = cluster.get_resource(&self.api_version, self.kind.kind(), &self.name, Some(namespace))?;
        let edit = Edit::Set { path: Path::root().keys(self.field), value: self.replicas.to_string() };
        json::apply(&json, &[edit])
            .map_err(|e| LookupError::Invalid(format!("the {} `{}` cannot be read: {e}", self.kind.kind(), self.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(resource: &str, group: &str, object: &str, old: &str) -> String {
        format!(
            r#"{{"uid":"1","kind":{{"group":"autoscaling","version":"v1","kind":"Scale"}},"resource":{{"group":"{group}","version":"v1","resource":"{resource}"}},"subResource":"scale","name":"web","namespace":"ml","operation":"UPDATE","userInfo":{{"username":"u"}},"object":{object},"oldObject":{old}}}"#
        )
    }

    #[test]
    fn a_scale_names_its_target_and_replicas() {
        let text = request("statefulsets", "apps", r#"{"spec":{"replicas":12}}"#, r#"{"spec":{"replicas":4}}"#);
        let r = Request::parse(&text).unwrap();
        let c = ScaleChange::of(&r).unwrap().unwrap();
        assert_eq!(
            c,
            ScaleChange {
                kind: WorkloadKind::StatefulSet,
                api_version: "apps/v1".into(),
                name: "web".into(),
                field: &["spec", "replicas"],
                replicas: 12,
                old_replicas: Some(4)
            }
        );
        assert!(!c.scales_down());
        let text = request("deployments", "apps", r#"{"spec":{}}"#, r#"{"spec":{"replicas":4}}"#);
        let c = ScaleChange::of(&Request::parse(&text).unwrap()).unwrap().unwrap();
        assert_eq!(c.replicas, 0, "an absent `replicas` is zero");
        assert!(c.scales_down());
        let text = request("replicationcontrollers", "", r#"{"spec":{"replicas":2}}"#, "null");
        let c = ScaleChange::of(&Request::parse(&text).unwrap()).unwrap().unwrap();
        assert_eq!((c.api_version.as_str(), c.old_replicas), ("v1", None));
        let text = request("jobs", "batch", r#"{"spec":{"replicas":2}}"#, "null");
        assert_eq!(ScaleChange::of(&Request::parse(&text).unwrap()).unwrap(), None, "no such subresource to judge");
    }

    /// A cluster holding one object.
    struct Holding(&'static str, &'static str, &'static str);

    impl Cluster for Holding {
        fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
            assert_eq!((api_version, kind, name, namespace), (self.0, self.1, "web", Some("ml")));
            Ok(self.2.to_string())
        }
        fn list_resources_by_namespace(&self, _: &str, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
            Err(LookupError::Invalid("not served".into()))
        }
        fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
            Err(LookupError::Invalid("not served".into()))
        }
    }

    #[test]
    fn a_custom_resource_is_scaled_where_its_crd_says() {
        let text = request("pytorchjobs", "kubeflow.org", r#"{"spec":{"replicas":13}}"#, r#"{"spec":{"replicas":3}}"#);
        let c = ScaleChange::of(&Request::parse(&text).unwrap()).unwrap().unwrap();
        assert_eq!(
            (c.kind, c.api_version.as_str(), c.field),
            (WorkloadKind::PyTorchJob, "kubeflow.org/v1", &["spec", "pytorchReplicaSpecs", "Worker", "replicas"][..])
        );
        let job = r#"{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":3,"template":{}}}}}"#;
        let scaled = c.target("ml", &Holding("kubeflow.org/v1", "PyTorchJob", job)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&scaled).unwrap();
        assert_eq!(v["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], 13);
        assert_eq!(v["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"], 1, "the other replica types are left alone");
        let no_worker = r#"{"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1}}}}"#;
        let scaled = c.target("ml", &Holding("kubeflow.org/v1", "PyTorchJob", no_worker)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&scaled).unwrap();
        assert_eq!(v["spec"]["pytorchReplicaSpecs"]["Worker"], serde_json::json!({"replicas": 13}), "created, as the API server does");
        for (resource, kind, field) in
            [("paddlejobs", WorkloadKind::PaddleJob, "paddleReplicaSpecs"), ("jaxjobs", WorkloadKind::JaxJob, "jaxReplicaSpecs")]
        {
            let text = request(resource, "kubeflow.org", r#"{"spec":{"replicas":2}}"#, "null");
            let c = ScaleChange::of(&Request::parse(&text).unwrap()).unwrap().unwrap();
            assert_eq!((c.kind, c.field), (kind, &["spec", field, "Worker", "replicas"][..]));
        }
        for resource in ["tfjobs", "mpijobs", "xgboostjobs", "rayclusters", "jobsets"] {
            let text = request(resource, "kubeflow.org", r#"{"spec":{"replicas":2}}"#, "null");
            assert_eq!(ScaleChange::of(&Request::parse(&text).unwrap()).unwrap(), None, "{resource}: no scale subresource");
        }
    }
}
