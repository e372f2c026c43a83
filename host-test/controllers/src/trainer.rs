//! Kubeflow Trainer (`kubeflow/trainer` v2.0 to v2.3,
//! `pkg/runtime/core/trainingruntime.go`, `pkg/runtime/framework/plugins/`):
//! a TrainJob and its (Cluster)TrainingRuntime → one JobSet named after
//! the TrainJob.
//!
//! The runtime brings the pods' shape: every image but the trainer's,
//! security contexts, volumes, scheduling, the replicated jobs. A TrainJob
//! whose runtime the cluster does not hold cannot be built, and is
//! [`Unmodelled`]; what the TrainJob itself says (the trainer's image,
//! command, environment and resources per node, the initializers' storage,
//! `podTemplateOverrides` in v2.1, `runtimePatches` from v2.2) is applied
//! over the runtime as the Trainer does.

use serde_json::{Map, Value, json};

use crate::core::built;
use crate::identity::TRAINER;
use crate::json::{Object, at, list_at, list_mut, map_at, object_mut, set, str_at, value_mut};
use crate::{Built, Lookup, Unmodelled};

const STEP: &str = "trainer.kubeflow.org/trainjob-ancestor-step";

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
    let template = at(&runtime, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
    let mut labels = map_at(&template, &["metadata", "labels"]);
    let mut annotations = map_at(&template, &["metadata", "annotations"]);
    labels.extend(map_at(tj.value, &["spec", "labels"]));
    annotations.extend(map_at(tj.value, &["spec", "annotations"]));
    let mut spec = at(&template, &["spec"]).cloned().unwrap_or_else(|| json!({}));
    trainer(tj, &runtime, &mut spec);
    initializers(tj, &mut spec);
    for o in list_at(tj.value, &["spec", "podTemplateOverrides"]) {
        let targets: Vec<&str> = list_at(o, &["targetJobs"]).iter().filter_map(|t| str_at(t, &["name"])).collect();
        let patch =
            json!({"metadata": at(o, &["metadata"]).cloned().unwrap_or(json!({})), "spec": at(o, &["spec"]).cloned().unwrap_or(json!({}))});
        for rjob in list_mut(&mut spec, &["replicatedJobs"]).iter_mut() {
            if str_at(rjob, &["name"]).is_some_and(|n| targets.contains(&n)) {
                strategic_merge(value_mut(rjob, &["template", "spec", "template"]), &patch);
            }
        }
    }
    for p in list_at(tj.value, &["spec", "runtimePatches"]) {
        let t = at(p, &["trainingRuntimeSpec", "template"]).cloned().unwrap_or_else(|| json!({}));
        labels.extend(map_at(&t, &["metadata", "labels"]));
        annotations.extend(map_at(&t, &["metadata", "annotations"]));
        if let Some(patch) = at(&t, &["spec"]) {
            strategic_merge(&mut spec, patch);
        }
    }
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
/// `Trainer`): image, command and args replaced, environment upserted,
/// `resourcesPerNode` as its resources, `numNodes` pods at once; and the
/// torch plugin's rendezvous environment and port.
fn trainer(tj: &Object<'_>, runtime: &Value, spec: &mut Value) {
    let t = tj.at(&["spec", "trainer"]).cloned().unwrap_or_else(|| json!({}));
    let torch = at(runtime, &["spec", "mlPolicy", "torch"]).is_some();
    let nodes = at(&t, &["numNodes"]).or_else(|| at(runtime, &["spec", "mlPolicy", "numNodes"])).cloned();
    let name = tj.name();
    let Some(rjob) = step_job(spec, "trainer") else { return };
    set(rjob, &["replicas"], json!(1));
    if let Some(n) = &nodes {
        set(rjob, &["template", "spec", "parallelism"], n.clone());
        set(rjob, &["template", "spec", "completions"], n.clone());
    }
    let Some(c) = container(rjob, "node") else { return };
    for key in ["image", "command", "args"] {
        if let Some(v) = at(&t, &[key]) {
            set(c, &[key], v.clone());
        }
    }
    if let Some(r) = at(&t, &["resourcesPerNode"]) {
        set(c, &["resources"], r.clone());
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
/// merge patch (`patchMergeKey`); other lists are replaced.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "schedulingGates"
        | "replicatedJobs" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "ports" => Some("containerPort"),
        _ => None,
    }
}

/// A strategic merge patch of `patch` onto `target` (objects merged key by
/// key, `null` deleting; the lists of [`merge_key`] merged by their key).
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
