//! What each controller builds from the object it is sent.
//!
//! A rule judges the object it is sent, but the cluster runs what a
//! controller builds from it: a Deployment's ReplicaSet and its pods, a
//! RayCluster's head and worker pods with KubeRay's autoscaler beside the
//! head, a LeaderWorkerSet's worker StatefulSet owned by its leader Pod. This
//! crate models those children as their controllers submit them: the
//! controller's identity, its owner references, the labels and defaults it
//! and the API server add. aigov's tests hold every rule to the property
//! that its verdict on a parent is its verdict on everything built from it
//! (`host-test/src/tools/children.rs`).
//!
//! The model follows each controller's own source, cited in each family's
//! file; what a controller reads from the cluster (a TrainJob's runtime, a
//! ServingRuntime) comes through [`Lookup`], and what cannot be built
//! without it is [`Unmodelled`], never guessed. One pod stands for all the
//! replicas of a template: they differ only in names and indexes, which no
//! rule reads.
//!
//! Families: [`core`] (the built-in controllers), [`ray`] (KubeRay),
//! [`kubeflow`] (the training operator and the MPI operator), [`trainer`]
//! (Kubeflow Trainer's TrainJob), [`serving`] (KServe), [`batch`] (JobSet,
//! LeaderWorkerSet, Volcano) and [`notebook`] (Kubeflow's notebook
//! controller). [`pod`] is what every controller shares: a pod made from a
//! template, and what the API server adds to every pod before admission.
//! [`update_builds`] says which UPDATEs of a parent make its controllers
//! create objects again (a changed template that rolls, a scale-up, a
//! resumed job).

mod batch;
mod core;
mod identity;
mod json;
mod kubeflow;
mod notebook;
pub mod pod;
mod ray;
mod serving;
mod trainer;
mod update;

use serde_json::Value;

pub use identity::{Controller, Identity};
pub use update::{Rebuild, update_builds};

/// An object a controller creates from the one it was given.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// The object as the API server hands it to admission: its
    /// controller's metadata and the API server's defaults included.
    pub object: Value,
    /// The controller that submits it.
    pub by: Controller,
    /// How it came about, for messages: `` Deployment `train` → ReplicaSet `train-6d5f8c7b9` ``.
    pub lineage: String,
}

impl Built {
    /// The object's kind.
    pub fn kind(&self) -> &str {
        self.object.get("kind").and_then(Value::as_str).unwrap_or_default()
    }
}

/// What a controller reads from the cluster besides the object it builds
/// from: a TrainJob's (Cluster)TrainingRuntime, an InferenceService's
/// ServingRuntime.
pub trait Lookup {
    /// The object of `api_version` and `kind` named `name`, in `namespace`
    /// (`None` for a cluster-scoped kind), if it exists.
    fn get(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value>;
}

/// A cluster with nothing in it.
pub struct Nothing;

impl Lookup for Nothing {
    fn get(&self, _: &str, _: &str, _: Option<&str>, _: &str) -> Option<Value> {
        None
    }
}

/// Why what an object builds cannot be modelled (a TrainJob whose runtime
/// the cluster does not hold).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmodelled(pub String);

impl std::fmt::Display for Unmodelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unmodelled {}

/// What an object's controller creates from it directly, in document
/// order; nothing for a kind no controller builds from (a Pod, a
/// ConfigMap). `namespace` is the object's.
pub fn children(object: &Value, namespace: &str, lookup: &dyn Lookup) -> Result<Vec<Built>, Unmodelled> {
    let parent = json::Object::of(object, namespace);
    let built = match (parent.group(), parent.kind()) {
        ("apps", "Deployment") => core::deployment(&parent),
        ("apps", "ReplicaSet") => core::replica_set(&parent),
        ("", "ReplicationController") => core::replication_controller(&parent),
        ("apps", "StatefulSet") => core::stateful_set(&parent),
        ("apps", "DaemonSet") => core::daemon_set(&parent),
        ("batch", "Job") => core::job(&parent),
        ("batch", "CronJob") => core::cron_job(&parent),
        ("ray.io", "RayCluster") => ray::ray_cluster(&parent),
        ("ray.io", "RayJob") => ray::ray_job(&parent),
        ("ray.io", "RayService") => ray::ray_service(&parent),
        ("kubeflow.org", "Notebook") => notebook::notebook(&parent),
        ("kubeflow.org", kind) if kubeflow::is_training_job(kind) => kubeflow::training_job(&parent),
        ("trainer.kubeflow.org", "TrainJob") => trainer::train_job(&parent, lookup)?,
        ("serving.kserve.io", "InferenceService") => serving::inference_service(&parent, lookup)?,
        ("jobset.x-k8s.io", "JobSet") => batch::job_set(&parent),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") => batch::leader_worker_set(&parent),
        ("batch.volcano.sh", "Job") => batch::volcano_job(&parent),
        ("", "Pod") => batch::lws_leader_pod(&parent, lookup),
        _ => Vec::new(),
    };
    Ok(built)
}

/// Everything built from `object`, at every depth, depth first: a
/// Deployment's ReplicaSet, then that ReplicaSet's pod. Each child's
/// lineage starts at `object`. A controller that reads back an object
/// above it (the LeaderWorkerSet controller reading the LeaderWorkerSet
/// of a leader Pod) finds it, as in a cluster.
pub fn descendants(object: &Value, namespace: &str, lookup: &dyn Lookup) -> Result<Vec<Built>, Unmodelled> {
    let mut ancestors = Ancestors { objects: vec![object.clone()], rest: lookup };
    let mut out = Vec::new();
    below(object, namespace, &mut ancestors, &mut out)?;
    Ok(out)
}

fn below(object: &Value, namespace: &str, ancestors: &mut Ancestors<'_>, out: &mut Vec<Built>) -> Result<(), Unmodelled> {
    for child in children(object, namespace, ancestors)? {
        let at = out.len();
        let lineage = child.lineage.clone();
        let next = child.object.clone();
        out.push(child);
        ancestors.objects.push(next.clone());
        below(&next, namespace, ancestors, out)?;
        ancestors.objects.pop();
        for b in out.iter_mut().skip(at + 1) {
            if !b.lineage.starts_with(&lineage) {
                b.lineage = format!("{lineage} → {}", after_root(&b.lineage));
            }
        }
    }
    Ok(())
}

/// The objects above the one being built, then the cluster.
struct Ancestors<'l> {
    objects: Vec<Value>,
    rest: &'l dyn Lookup,
}

impl Lookup for Ancestors<'_> {
    fn get(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let group = |v: &str| v.rsplit_once('/').map_or("", |(g, _)| g).to_string();
        let found = self.objects.iter().find(|o| {
            let o = json::Object::of(o, namespace.unwrap_or_default());
            o.kind() == kind && group(o.api_version()) == group(api_version) && o.name() == name
        });
        found.cloned().or_else(|| self.rest.get(api_version, kind, namespace, name))
    }
}

/// A lineage without its first step (the parent the next level started from).
fn after_root(lineage: &str) -> &str {
    lineage.split_once(" → ").map_or(lineage, |(_, rest)| rest)
}

/// Every controller the model submits as: what `trustedControllers`'
/// defaults must trust for each owner kind, `(owner kind as Kind.group,
/// controller)`.
pub fn identities() -> Vec<(&'static str, Controller)> {
    identity::all().flat_map(|(owners, c)| owners.iter().map(move |o| (*o, c.clone()))).collect()
}

#[cfg(test)]
mod tests;
