//! What an UPDATE of a parent makes its controllers create.
//!
//! Controllers build from what they are sent when it is created, and again
//! when an update changes what they build from or asks for more of it:
//! - a changed pod template, where the controller rolls its pods: the
//!   Deployment controller makes a new ReplicaSet for any change of
//!   `spec.template` unless the Deployment is paused
//!   (`pkg/controller/deployment/sync.go:getNewReplicaSet`, reached from
//!   `rolloutRolling`/`rolloutRecreate`, never from `sync` for a paused one);
//!   the StatefulSet and DaemonSet controllers replace pods whose revision
//!   is not the current one unless `updateStrategy.type: OnDelete`; a
//!   CronJob makes every later Job from its `jobTemplate`; a
//!   LeaderWorkerSet rolls its groups on a change of `leaderWorkerTemplate`;
//!   the notebook controller updates its StatefulSet's template, which
//!   rolls the pod; KServe makes a new revision of a component whose spec
//!   changed; KubeRay makes a new RayCluster for a RayService whose
//!   `rayClusterConfig` hash (without replicas and workers to delete)
//!   changed (`rayservice_controller.go`). A ReplicaSet's, a Job's (mutable
//!   only while suspended), a RayCluster's and the training operators' new
//!   templates reach only pods made later for another reason, and make none;
//! - a count that grew: `replicas` of a Deployment, ReplicaSet,
//!   ReplicationController, StatefulSet or LeaderWorkerSet (default 1), a
//!   Job's `parallelism` (default 1), a Ray worker group's `replicas` or
//!   `minReplicas` (default 0), a Kubeflow replica spec's `replicas`
//!   (default 1), an InferenceService component's `minReplicas` (default 1);
//! - a suspended workload resumed (`spec.suspend` or a Kubeflow job's
//!   `spec.runPolicy.suspend` from `true` to anything else): Job, CronJob,
//!   JobSet, RayJob, TrainJob, the Kubeflow jobs.
//!
//! Anything else (the parent's own labels and annotations, a scale-down,
//! status) creates nothing. What is created is built from the new object,
//! but for a RayCluster whose only change is more workers in some groups:
//! only those groups' pods are created, so only they are built (a
//! RayJob's or RayService's, and a Kubeflow job's, scale-up is built
//! whole: the model has no way to build part of them). The `/scale` subresource carries a `Scale`, not
//! the parent, so nothing is modelled for it here.

use serde_json::Value;

/// What an UPDATE makes the controllers create: why, and the object they
/// build it from.
#[derive(Clone, Debug, PartialEq)]
pub struct Rebuild {
    /// Why the update makes them create objects.
    pub why: String,
    /// What to build the created objects from: the new object, or for a
    /// RayCluster scaled up, the new object with only the worker groups
    /// that grew.
    pub from: Value,
}

/// What an UPDATE from `old` to `new` (the same object) makes its
/// controllers create, or `None` when it makes them create nothing.
pub fn update_builds(old: &Value, new: &Value) -> Option<Rebuild> {
    let why = rebuilt(old, new)?;
    let from = match (new.get("kind").and_then(Value::as_str), why) {
        (Some("RayCluster"), RAY_WORKERS) => grown_workers_only(old, new),
        _ => new.clone(),
    };
    Some(Rebuild { why: why.to_string(), from })
}

const RAY_WORKERS: &str = "more workers make new pods";

/// A RayCluster with only the worker groups that grew, and no head.
fn grown_workers_only(old: &Value, new: &Value) -> Value {
    let mut from = new.clone();
    let old_groups = old.pointer("/spec/workerGroupSpecs").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(spec) = from.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("headGroupSpec");
        if let Some(groups) = spec.get_mut("workerGroupSpecs").and_then(Value::as_array_mut) {
            let mut i = 0;
            groups.retain(|g| {
                let grew = group_grew(old_groups.get(i), g);
                i += 1;
                grew
            });
        }
    }
    from
}

/// Whether a Ray worker group asks for more pods than its old self.
fn group_grew(old: Option<&Value>, new: &Value) -> bool {
    let n = |g: Option<&Value>, key: &str| g.map_or(0, |g| g.get(key).and_then(Value::as_i64).unwrap_or(0));
    ["replicas", "minReplicas"].iter().any(|k| n(Some(new), k) > n(old, k))
}

/// Why an UPDATE from `old` to `new` makes the controllers create objects.
fn rebuilt(old: &Value, new: &Value) -> Option<&'static str> {
    let api_version = new.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = new.get("kind").and_then(Value::as_str).unwrap_or_default();
    let changed = |pointer: &str| old.pointer(pointer) != new.pointer(pointer);
    let grew = |pointer: &str, default: i64| {
        let n = |v: &Value| v.pointer(pointer).map_or(Some(default), Value::as_i64);
        matches!((n(old), n(new)), (Some(o), Some(n)) if n > o)
    };
    let resumed = |pointer: &str| {
        old.pointer(pointer).and_then(Value::as_bool) == Some(true) && new.pointer(pointer).and_then(Value::as_bool) != Some(true)
    };
    let strategy = |pointer: &str| new.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let why = match (group, kind) {
        ("apps", "Deployment") if changed("/spec/template") && new.pointer("/spec/paused").and_then(Value::as_bool) != Some(true) => {
            "the changed template makes the deployment-controller create a new ReplicaSet"
        }
        ("apps", "StatefulSet") if changed("/spec/template") && strategy("/spec/updateStrategy/type") != "OnDelete" => {
            "the changed template makes the statefulset-controller roll its pods"
        }
        ("apps", "DaemonSet") if changed("/spec/template") && strategy("/spec/updateStrategy/type") != "OnDelete" => {
            "the changed template makes the daemonset-controller roll its pods"
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") | ("", "ReplicationController") if grew("/spec/replicas", 1) => {
            "more replicas make new pods"
        }
        ("batch", "Job") if resumed("/spec/suspend") => "the resumed Job makes its pods",
        ("batch", "Job") if grew("/spec/parallelism", 1) => "more parallelism makes new pods",
        ("batch", "CronJob") if changed("/spec/jobTemplate") || resumed("/spec/suspend") => {
            "the cronjob-controller makes every later Job from the new job template"
        }
        ("ray.io", "RayCluster") if ray_workers_grew(old, new, "/spec") => RAY_WORKERS,
        ("ray.io", "RayJob") if resumed("/spec/suspend") => "the resumed RayJob makes its RayCluster",
        ("ray.io", "RayJob") if ray_workers_grew(old, new, "/spec/rayClusterSpec") => "more workers make new pods",
        ("ray.io", "RayService") if without_counts(old, "/spec/rayClusterConfig") != without_counts(new, "/spec/rayClusterConfig") => {
            "the changed cluster config makes KubeRay create a new RayCluster"
        }
        ("ray.io", "RayService") if ray_workers_grew(old, new, "/spec/rayClusterConfig") => "more workers make new pods",
        ("kubeflow.org", "Notebook") if changed("/spec/template") => "the changed template makes the notebook's StatefulSet roll its pod",
        ("kubeflow.org", _) if resumed("/spec/runPolicy/suspend") => "the resumed job makes its pods",
        ("kubeflow.org", _) if replica_specs_grew(old, new) => "more replicas make new pods",
        ("trainer.kubeflow.org", "TrainJob") | ("jobset.x-k8s.io", "JobSet") if resumed("/spec/suspend") => {
            "the resumed job makes its pods"
        }
        ("serving.kserve.io", "InferenceService") if components_changed(old, new) => {
            "the changed component makes KServe roll out a new revision"
        }
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") if changed("/spec/leaderWorkerTemplate") => {
            "the changed template makes the LeaderWorkerSet controller roll its groups"
        }
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") if grew("/spec/replicas", 1) => "more replicas make new groups",
        _ => return None,
    };
    Some(why)
}

/// Whether a Ray worker group under `spec` (by index) asks for more pods.
fn ray_workers_grew(old: &Value, new: &Value, spec: &str) -> bool {
    let groups = |v: &Value| v.pointer(&format!("{spec}/workerGroupSpecs")).and_then(Value::as_array).cloned().unwrap_or_default();
    let (old, new) = (groups(old), groups(new));
    new.iter().enumerate().any(|(i, g)| group_grew(old.get(i), g))
}

/// A RayService's cluster config without what KubeRay leaves out of its
/// hash (`replicas`, `minReplicas`, `maxReplicas`, `scaleStrategy` of each
/// worker group).
fn without_counts(v: &Value, pointer: &str) -> Option<Value> {
    let mut c = v.pointer(pointer)?.clone();
    if let Some(groups) = c.get_mut("workerGroupSpecs").and_then(Value::as_array_mut) {
        for g in groups.iter_mut().filter_map(Value::as_object_mut) {
            for k in ["replicas", "minReplicas", "maxReplicas", "scaleStrategy"] {
                g.remove(k);
            }
        }
    }
    Some(c)
}

/// Whether a Kubeflow job's replica spec (`spec.<kind>ReplicaSpecs.<type>`)
/// asks for more pods.
fn replica_specs_grew(old: &Value, new: &Value) -> bool {
    let Some(spec) = new.get("spec").and_then(Value::as_object) else { return false };
    spec.iter().filter(|(k, _)| k.ends_with("ReplicaSpecs")).any(|(k, specs)| {
        specs.as_object().is_some_and(|specs| {
            specs.iter().any(|(t, s)| {
                let n = |s: Option<&Value>| s.map_or(0, |s| s.get("replicas").and_then(Value::as_i64).unwrap_or(1));
                n(Some(s)) > n(old.pointer(&format!("/spec/{k}/{t}")))
            })
        })
    })
}

/// Whether an InferenceService component changed (beyond its counts) or
/// asks for more pods.
fn components_changed(old: &Value, new: &Value) -> bool {
    ["predictor", "transformer", "explainer"].iter().any(|c| {
        let at = |v: &Value| {
            v.pointer(&format!("/spec/{c}")).cloned().map(|mut c| {
                let min = c.get("minReplicas").and_then(Value::as_i64).unwrap_or(1);
                if let Some(o) = c.as_object_mut() {
                    for k in ["minReplicas", "maxReplicas", "scaleTarget", "scaleMetric"] {
                        o.remove(k);
                    }
                }
                (c, min)
            })
        };
        match (at(old), at(new)) {
            (Some((o, omin)), Some((n, nmin))) => o != n || nmin > omin,
            (None, Some(_)) => true,
            _ => false,
        }
    })
}
