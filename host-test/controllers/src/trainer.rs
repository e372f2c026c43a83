//! Kubeflow Trainer (`kubeflow/trainer` v2.0 to v2.3,
//! `pkg/runtime/core/trainingruntime.go`: `newRuntimeInfo`,
//! `mergePodSpecOverrides` (v2.0), `mergePodTemplateOverrides` (v2.1),
//! `mergeRuntimePatches` (v2.2+); `pkg/runtime/framework/plugins/jobset/`
//! `jobset.go: Build` and `builder.go`; `plugins/torch`): a TrainJob and its
//! (Cluster)TrainingRuntime → one JobSet named after the TrainJob.
//!
//! The runtime brings the pods' shape: every image but the trainer's,
//! security contexts, volumes, scheduling, the replicated jobs. A TrainJob
//! whose runtime the cluster does not hold cannot be built, and is
//! [`Unmodelled`]. What the TrainJob says is applied over the runtime in the
//! Trainer's order: first its overrides of the replicated jobs' pods, each
//! a strategic merge patch (`podSpecOverrides` in v2.0, `podTemplateOverrides`
//! in v2.1, `runtimePatches` from v2.2), then the trainer's resources, image,
//! command and environment and the initializers' storage, then what the
//! torch plugin adds.
//!
//! Which Trainer version built the JobSet shows in the fields the TrainJob
//! carries: `podSpecOverrides` exists only in v2.0, and
//! `podTemplateOverrides`, `spec.labels` and `spec.annotations` only up to
//! v2.1 (v2.2 removed them, PR #3309: the API server prunes them). Such a
//! TrainJob is built as v2.0/v2.1 build it; any other as v2.3 does (the
//! trainer's `resourcesPerNode` merged, key by key, over the runtime's
//! `node` resources, PR #3602; v2.0 to v2.2 replace them).

use serde_json::{Map, Value, json};

use crate::core::built;
use crate::identity::TRAINER;
use crate::json::{Object, at, int_at, list_at, list_mut, map_at, object_mut, set, str_at, value_mut};
use crate::{Built, Lookup, Unmodelled};

const STEP: &str = "trainer.kubeflow.org/trainjob-ancestor-step";

/// The replicated job and container the trainer fills (`constants.Node`).
const NODE: &str = "node";

/// TrainJob → its JobSet.
pub(crate) fn train_job(tj: &Object<'_>, lookup: &dyn Lookup) -> Result<Vec<Built>, Unmodelled> {
    let name = str_at(tj.value, &["spec", "runtimeRef", "name"]).unwrap_or_default();
    let kind = str_at(tj.value, &["spec", "runtimeRef", "kind"]).unwrap_or("ClusterTrainingRuntime");
    let namespace = (kind == "TrainingRuntime").then_some(tj.namespace);
    let Some(runtime) = lookup.get("trainer.kubeflow.org/v1alpha1", kind, namespace, name) else {
        return Err(Unmodelled(format!(
            "the {kind} `{name}` the TrainJob runs on is not in the cluster, and it brings the pods' images, security contexts, volumes and scheduling"
        )));
    };
    let v21 = ["podSpecOverrides", "podTemplateOverrides", "labels", "annotations"].iter().any(|f| tj.at(&["spec", f]).is_some());
    let template = at(&runtime, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
    // The JobSet's metadata: the runtime's, then (v2.0, v2.1) the
    // TrainJob's `spec.labels` and `spec.annotations`, (v2.2+) each runtime
    // patch's `template.metadata`. None of it reaches the Jobs or the pods.
    let mut labels = map_at(&template, &["metadata", "labels"]);
    let mut annotations = map_at(&template, &["metadata", "annotations"]);
    labels.extend(map_at(tj.value, &["spec", "labels"]));
    annotations.extend(map_at(tj.value, &["spec", "annotations"]));
    for p in list_at(tj.value, &["spec", "runtimePatches"]) {
        labels.extend(map_at(p, &["trainingRuntimeSpec", "template", "metadata", "labels"]));
        annotations.extend(map_at(p, &["trainingRuntimeSpec", "template", "metadata", "annotations"]));
    }
    let mut spec = at(&template, &["spec"]).cloned().unwrap_or_else(|| json!({}));
    overrides(tj, &mut spec);
    runtime_patches(tj, &mut spec);
    counts(tj, &runtime, &mut spec);
    trainer(tj, &runtime, &mut spec, v21);
    initializers(tj, &mut spec);
    if let Some(suspend) = tj.at(&["spec", "suspend"]) {
        set(&mut spec, &["suspend"], suspend.clone());
    }
    let js = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": tj.name(), "namespace": tj.namespace, "labels": labels, "annotations": annotations, "ownerReferences": [tj.controller_ref()]},
        "spec": spec,
    });
    Ok(vec![built(js, &TRAINER, tj)])
}

/// The replicated jobs named `names`.
fn named<'v>(spec: &'v mut Value, names: &[&str]) -> impl Iterator<Item = &'v mut Value> {
    let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
    list_mut(spec, &["replicatedJobs"]).iter_mut().filter(move |j| str_at(j, &["name"]).is_some_and(|n| names.iter().any(|x| x == n)))
}

/// `podSpecOverrides` (v2.0: the override itself, `targetJobs` and all,
/// merged over each target's pod spec, where `targetJobs` is no field and
/// is dropped) and `podTemplateOverrides` (v2.1: `metadata.labels`,
/// `metadata.annotations` and `spec` merged over each target's pod
/// template), in order, later entries winning.
fn overrides(tj: &Object<'_>, spec: &mut Value) {
    for o in list_at(tj.value, &["spec", "podSpecOverrides"]) {
        let targets: Vec<&str> = list_at(o, &["targetJobs"]).iter().filter_map(|t| str_at(t, &["name"])).collect();
        let mut patch = o.clone();
        object_mut(&mut patch, &[]).remove("targetJobs");
        for rjob in named(spec, &targets) {
            strategic_merge(value_mut(rjob, &["template", "spec", "template", "spec"]), &patch);
        }
    }
    for o in list_at(tj.value, &["spec", "podTemplateOverrides"]) {
        let targets: Vec<&str> = list_at(o, &["targetJobs"]).iter().filter_map(|t| str_at(t, &["name"])).collect();
        let mut metadata = Map::new();
        for key in ["labels", "annotations"] {
            if let Some(v) = at(o, &["metadata", key]) {
                metadata.insert(key.to_string(), v.clone());
            }
        }
        let mut patch = json!({});
        if !metadata.is_empty() {
            set(&mut patch, &["metadata"], Value::Object(metadata));
        }
        if let Some(s) = at(o, &["spec"]) {
            set(&mut patch, &["spec"], s.clone());
        }
        for rjob in named(spec, &targets) {
            strategic_merge(value_mut(rjob, &["template", "spec", "template"]), &patch);
        }
    }
}

/// `runtimePatches` (v2.2+), in order: each patch's replicated job merged
/// over the runtime's replicated job of its name (its Job template: Job
/// metadata, pod metadata and pod spec); a name the runtime lacks is
/// skipped (the Trainer's webhook refuses it).
fn runtime_patches(tj: &Object<'_>, spec: &mut Value) {
    for p in list_at(tj.value, &["spec", "runtimePatches"]) {
        for rjob_patch in list_at(p, &["trainingRuntimeSpec", "template", "spec", "replicatedJobs"]) {
            let (Some(name), Some(patch)) = (str_at(rjob_patch, &["name"]), at(rjob_patch, &["template"])) else { continue };
            for rjob in named(spec, &[name]) {
                strategic_merge(value_mut(rjob, &["template"]), patch);
            }
        }
    }
}

/// The pods each replicated job runs at once (`newRuntimeInfo` counts,
/// written by `Build` into `parallelism` and `completions`): the
/// trainer's `numNodes`, else the runtime's `mlPolicy.numNodes`, else 1,
/// for the trainer job of a runtime with an `mlPolicy`; its own
/// `parallelism`, else 1, for any other.
fn counts(tj: &Object<'_>, runtime: &Value, spec: &mut Value) {
    let ml = at(runtime, &["spec", "mlPolicy"]);
    let nodes = tj.at(&["spec", "trainer", "numNodes"]).or_else(|| ml.and_then(|m| at(m, &["numNodes"]))).cloned().unwrap_or(json!(1));
    for rjob in list_mut(spec, &["replicatedJobs"]) {
        let trainer = str_at(rjob, &["template", "metadata", "labels", STEP]) == Some("trainer") && ml.is_some();
        let n = if trainer { nodes.clone() } else { json!(int_at(rjob, &["template", "spec", "parallelism"]).unwrap_or(1)) };
        set(rjob, &["template", "spec", "parallelism"], n.clone());
        set(rjob, &["template", "spec", "completions"], n);
    }
}

/// The replicated job of step `step` (its Job template labelled with it,
/// or, in runtimes older than the label, named after it).
fn step_job<'v>(spec: &'v mut Value, step: &str) -> Option<&'v mut Value> {
    list_mut(spec, &["replicatedJobs"])
        .iter_mut()
        .find(|j| str_at(j, &["template", "metadata", "labels", STEP]) == Some(step) || str_at(j, &["name"]) == Some(step))
}

/// The container named `name` of a replicated job's pods.
fn container<'v>(rjob: &'v mut Value, name: &str) -> Option<&'v mut Value> {
    list_mut(rjob, &["template", "spec", "template", "spec", "containers"]).iter_mut().find(|c| str_at(c, &["name"]) == Some(name))
}

/// Upserts environment variables by name.
fn upsert_env(c: &mut Value, env: &[Value]) {
    let list = list_mut(c, &["env"]);
    for e in env {
        match list.iter_mut().find(|x| str_at(x, &["name"]) == str_at(e, &["name"])) {
            Some(x) => *x = e.clone(),
            None => list.push(e.clone()),
        }
    }
}

/// `spec.trainer` over the trainer step's `node` container (`builder.go`,
/// `Trainer`): `resourcesPerNode` as its resources (`v21`: replacing the
/// runtime's; v2.3: merged over them, key by key), image, command and args
/// replaced, environment upserted; and the torch plugin's rendezvous
/// environment and port.
fn trainer(tj: &Object<'_>, runtime: &Value, spec: &mut Value, v21: bool) {
    let t = tj.at(&["spec", "trainer"]).cloned().unwrap_or_else(|| json!({}));
    let torch = at(runtime, &["spec", "mlPolicy", "torch"]).is_some();
    let nodes = at(&t, &["numNodes"]).or_else(|| at(runtime, &["spec", "mlPolicy", "numNodes"])).cloned();
    let name = tj.name();
    let Some(rjob) = step_job(spec, "trainer") else { return };
    set(rjob, &["replicas"], json!(1));
    let Some(c) = container(rjob, NODE) else { return };
    if let Some(r) = at(&t, &["resourcesPerNode"]) {
        if v21 {
            set(c, &["resources"], r.clone());
        } else {
            strategic_merge(value_mut(c, &["resources"]), r);
        }
    }
    for key in ["image", "command", "args"] {
        if let Some(v) = at(&t, &[key]) {
            set(c, &[key], v.clone());
        }
    }
    upsert_env(c, list_at(&t, &["env"]));
    if torch {
        let nproc = at(&t, &["numProcPerNode"])
            .or_else(|| at(runtime, &["spec", "mlPolicy", "torch", "numProcPerNode"]))
            .cloned()
            .unwrap_or(json!("auto"));
        let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        upsert_env(
            c,
            &[
                json!({"name": "PET_NNODES", "value": nodes.as_ref().map_or_else(|| "1".to_string(), text)}),
                json!({"name": "PET_NPROC_PER_NODE", "value": text(&nproc)}),
                json!({"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}),
                json!({"name": "PET_MASTER_ADDR", "value": format!("{name}-node-0-0.{name}")}),
                json!({"name": "PET_MASTER_PORT", "value": "29500"}),
            ],
        );
        if !list_at(c, &["ports"]).iter().any(|p| at(p, &["containerPort"]).and_then(Value::as_i64) == Some(29500)) {
            list_mut(c, &["ports"]).push(json!({"containerPort": 29500}));
        }
    }
}

/// `spec.initializer.dataset` and `.model` over their steps' containers:
/// `STORAGE_URI`, the environment, and the Secret they read.
fn initializers(tj: &Object<'_>, spec: &mut Value) {
    for step in ["dataset-initializer", "model-initializer"] {
        let field = step.trim_end_matches("-initializer");
        let Some(init) = tj.at(&["spec", "initializer", field]).cloned() else { continue };
        let Some(rjob) = step_job(spec, step) else { continue };
        set(rjob, &["replicas"], json!(1));
        let Some(c) = container(rjob, step) else { continue };
        if let Some(uri) = str_at(&init, &["storageUri"]) {
            upsert_env(c, &[json!({"name": "STORAGE_URI", "value": uri})]);
        }
        upsert_env(c, list_at(&init, &["env"]));
        if let Some(secret) = str_at(&init, &["secretRef", "name"]) {
            list_mut(c, &["envFrom"]).push(json!({"secretRef": {"name": secret}}));
        }
    }
}

/// The key lists of a Kubernetes object are merged by in a strategic
/// merge patch (`patchMergeKey` in `k8s.io/api/core/v1`); other lists
/// (`tolerations`, `nodeSelectorTerms`, `capabilities.drop`, `command`)
/// are replaced.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "schedulingGates"
        | "resourceClaims" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "ports" => Some("containerPort"),
        _ => None,
    }
}

/// A strategic merge patch of `patch` onto `target`, as apimachinery's
/// `StrategicMergePatch` applies the patches the Trainer marshals: objects
/// merged key by key (`null` deleting), the lists of [`merge_key`] merged
/// by their key, element objects merged alike. `volumes` are declared
/// `merge,retainKeys`, but `retainKeys` acts only on a `$retainKeys`
/// directive in the patch, which a marshalled override has none of: a
/// runtime volume and an override's volume of the same name merge into
/// one holding both sources.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = object_mut(target, &[]);
    for (k, v) in patch {
        match (v, merge_key(k)) {
            (Value::Null, _) => {
                t.remove(k);
            }
            (Value::Array(items), Some(key)) => {
                let slot = t.entry(k.clone()).or_insert_with(|| Value::Array(Vec::new()));
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                if let Value::Array(have) = slot {
                    for item in items {
                        match have.iter_mut().find(|h| h.get(key).is_some() && h.get(key) == item.get(key)) {
                            Some(h) => strategic_merge(h, item),
                            None => have.push(item.clone()),
                        }
                    }
                }
            }
            (Value::Object(_), _) => strategic_merge(t.entry(k.clone()).or_insert_with(|| json!({})), v),
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}
