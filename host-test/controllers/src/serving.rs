//! KServe (`kserve/kserve` v0.20.0, `pkg/controller/v1beta1/inferenceservice/`):
//! an InferenceService → a Deployment per component (`<isvc>-predictor`,
//! `-transformer`, `-explainer`), and a predictor's `workerSpec` → the
//! worker Deployment `<isvc>-predictor-worker` (`components/predictor.go`,
//! `reconcilers/deployment/deployment_reconciler.go`).
//!
//! In Standard mode (`serving.kserve.io/deploymentMode: Standard`, or
//! `RawDeployment`) KServe creates the Deployments; in Knative mode (the
//! shipped default) it creates a Knative Service, and Knative's controller
//! creates the Deployment of each Revision, with the same pod spec.
//!
//! At pod creation KServe's pod webhook (`pkg/webhook/admission/pod`,
//! v0.16.0, the release Kubeflow ships) adds the `storage-initializer`
//! init container that downloads a `storageUri` ([`pod_webhook`]). Not
//! modelled, because they come from the cluster's configuration rather
//! than from the InferenceService: Knative's `queue-proxy` container, the
//! webhook's `agent` and `modelcar` containers, and the storage
//! credentials it reads from the service account's secrets.

use serde_json::{Map, Value, json};

use crate::core::built;
use crate::identity::{KNATIVE, KSERVE};
use crate::json::{Object, at, int_at, list_at, list_mut, map_at, merged, s, set, str_at};
use crate::{Built, Lookup, Unmodelled};

/// The keys an InferenceService component names its model container
/// under; the legacy framework keys are turned into `model` by KServe's
/// defaulter.
const MODEL_KEYS: [&str; 12] =
    ["model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "pmml", "lightgbm", "paddle", "huggingface", "art"];

/// A component's keys that are KServe's, not its pod spec's
/// (`ComponentExtensionSpec`, and the predictor's `workerSpec`).
const EXTENSION_KEYS: [&str; 16] = [
    "minReplicas",
    "maxReplicas",
    "scaleTarget",
    "scaleMetric",
    "scaleMetricType",
    "containerConcurrency",
    "timeout",
    "canaryTrafficPercent",
    "logger",
    "batcher",
    "labels",
    "annotations",
    "deploymentStrategy",
    "autoScaling",
    "workerSpec",
    "storageUris",
];

/// The model's keys that say where the model is and what serves it, not
/// container fields.
const MODEL_ONLY_KEYS: [&str; 6] = ["modelFormat", "runtime", "storageUri", "storage", "protocolVersion", "runtimeVersion"];

/// Annotations KServe never copies from the InferenceService
/// (`constants.ServiceAnnotationDisallowedList`).
const DISALLOWED_ANNOTATIONS: [&str; 5] = [
    "autoscaling.knative.dev/min-scale",
    "autoscaling.knative.dev/max-scale",
    "internal.serving.kserve.io/storage-initializer-sourceuri",
    "kubectl.kubernetes.io/last-applied-configuration",
    "modelFormat",
];

/// InferenceService → the Deployment of each component, and the
/// predictor's worker Deployment.
pub(crate) fn inference_service(isvc: &Object<'_>, lookup: &dyn Lookup) -> Result<Vec<Built>, Unmodelled> {
    let standard =
        matches!(isvc.annotations().get("serving.kserve.io/deploymentMode").and_then(Value::as_str), Some("Standard" | "RawDeployment"));
    let mut out = Vec::new();
    for component in ["predictor", "transformer", "explainer"] {
        let Some(spec) = isvc.at(&["spec", component]) else { continue };
        let runtime = if component == "predictor" { serving_runtime(isvc, spec, lookup) } else { None };
        let mut pod_spec = pod_spec(spec, runtime.as_ref());
        let deployment = format!("{}-{component}", isvc.name());
        let (labels, annotations) = metadata(isvc, spec, component, &deployment);
        let worker = (component == "predictor").then(|| at(spec, &["workerSpec"])).flatten();
        let mut worker_pod = None;
        if let Some(w) = worker {
            let gpu_types = gpu_types(&annotations);
            let (worker_spec, nodes) = multi_node(isvc, w, runtime.as_ref(), &mut pod_spec, standard, &gpu_types);
            // Only Standard mode's `createRawDeployment` builds the workers.
            worker_pod = standard.then_some((worker_spec, nodes));
        }
        let replicas = (autoscaler_class(isvc, spec) == "none").then(|| int_at(spec, &["minReplicas"])).flatten();
        out.push(deployment_of(isvc, &deployment, labels, annotations, pod_spec, replicas, standard));
        if let Some((worker_spec, nodes)) = worker_pod {
            let name = format!("{}-predictor-worker", isvc.name());
            let (labels, annotations) = metadata(isvc, spec, component, &name);
            out.push(deployment_of(isvc, &name, labels, annotations, worker_spec, Some(nodes - 1), standard));
        }
    }
    Ok(out)
}

/// `serving.kserve.io/autoscalerClass`, the component's annotation over
/// the InferenceService's; `hpa` when unset.
fn autoscaler_class<'v>(isvc: &Object<'v>, component: &'v Value) -> String {
    let own = str_at(component, &["annotations", "serving.kserve.io/autoscalerClass"]);
    own.or_else(|| str_at(isvc.value, &["metadata", "annotations", "serving.kserve.io/autoscalerClass"])).unwrap_or("hpa").to_string()
}

/// The labels and annotations of a component's Deployment and its pods
/// (`buildObjectMeta`): the InferenceService's (annotations but those KServe
/// never copies), the component's over them, KServe's own over both.
fn metadata(isvc: &Object<'_>, component: &Value, name: &str, deployment: &str) -> (Map<String, Value>, Map<String, Value>) {
    let mut labels = isvc.labels();
    labels.extend(map_at(component, &["labels"]));
    let labels = merged(
        labels,
        &[("serving.kserve.io/inferenceservice", isvc.name()), ("component", name.to_string()), ("app", format!("isvc.{deployment}"))],
    );
    let mut annotations: Map<String, Value> =
        isvc.annotations().into_iter().filter(|(k, _)| !DISALLOWED_ANNOTATIONS.contains(&k.as_str())).collect();
    annotations.extend(map_at(component, &["annotations"]));
    let uri = MODEL_KEYS.iter().find_map(|k| str_at(component, &[k, "storageUri"]));
    if let Some(uri) = uri {
        annotations.insert("internal.serving.kserve.io/storage-initializer-sourceuri".into(), s(uri));
    }
    (labels, annotations)
}

/// The predictor's ServingRuntime: the model's `runtime`, a
/// ServingRuntime in the namespace or a ClusterServingRuntime.
fn serving_runtime(isvc: &Object<'_>, component: &Value, lookup: &dyn Lookup) -> Option<Value> {
    let name = str_at(component, &["model", "runtime"])?;
    lookup
        .get("serving.kserve.io/v1alpha1", "ServingRuntime", Some(isvc.namespace), name)
        .or_else(|| lookup.get("serving.kserve.io/v1alpha1", "ClusterServingRuntime", None, name))
}

/// A component's pod spec (`buildPodSpec`): its inline pod spec, with the
/// model container `kserve-container` first (the runtime's container with
/// the model's fields over it, `args` appended), and from the runtime only
/// its node selector, affinity, tolerations, volumes and image pull
/// secrets under the component's own.
fn pod_spec(component: &Value, runtime: Option<&Value>) -> Value {
    let mut spec: Map<String, Value> = component
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !EXTENSION_KEYS.contains(&k.as_str()) && !MODEL_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let model = MODEL_KEYS.iter().find_map(|k| at(component, &[k]));
    if let Some(model) = model {
        let mut container: Map<String, Value> = model
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| !MODEL_ONLY_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        container.insert("name".into(), s("kserve-container"));
        let mut container = Value::Object(container);
        if let Some(rc) =
            runtime.and_then(|r| list_at(r, &["spec", "containers"]).iter().find(|c| str_at(c, &["name"]) == Some("kserve-container")))
        {
            container = merge_container(rc, &container);
        }
        let mut containers = vec![container];
        if let Some(r) = runtime {
            containers
                .extend(list_at(r, &["spec", "containers"]).iter().filter(|c| str_at(c, &["name"]) != Some("kserve-container")).cloned());
        }
        containers.extend(list_at(component, &["containers"]).iter().cloned());
        spec.insert("containers".into(), Value::Array(containers));
    }
    if let Some(r) = runtime {
        for key in ["nodeSelector", "affinity", "tolerations", "volumes", "imagePullSecrets"] {
            if let (Some(v), false) = (at(r, &["spec", key]), spec.contains_key(key)) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    Value::Object(spec)
}

/// A runtime container with the InferenceService's fields over it
/// (`MergeContainerWithPatch`): the InferenceService's win, but `args`,
/// which are the runtime's followed by its.
fn merge_container(runtime: &Value, over: &Value) -> Value {
    let mut out = runtime.clone();
    for (k, v) in over.as_object().into_iter().flatten() {
        if k == "args" {
            list_mut(&mut out, &["args"]).extend(v.as_array().cloned().unwrap_or_default());
        } else {
            set(&mut out, &[k], v.clone());
        }
    }
    out
}

/// KServe's GPU resources (`constants.DefaultGPUResourceTypeList`), the
/// only ones whose requests `computeRayNodeAndGPUs` counts.
const GPU_RESOURCES: [&str; 4] = ["nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "habana.ai/gaudi"];

/// The resources `serving.kserve.io/gpu-resource-types` adds to those a
/// multi-node count is written under (`UpdateGPUResourceTypeListByAnnotation`).
fn gpu_types(annotations: &Map<String, Value>) -> Vec<String> {
    let text = annotations.get("serving.kserve.io/gpu-resource-types").and_then(Value::as_str).unwrap_or("[]");
    serde_json::from_str(text).unwrap_or_default()
}

fn quantity(q: Option<&Value>) -> i64 {
    match q {
        Some(Value::String(q)) => q.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// The GPUs a container requests as `computeRayNodeAndGPUs` reads them
/// (`utils.GetGPUResourceQtyByType(..., "Request")`): its `requests` of
/// KServe's GPU resources, never its limits.
fn gpu_request(c: &Value) -> i64 {
    GPU_RESOURCES.iter().map(|name| quantity(at(c, &["resources", "requests", name]))).find(|n| *n > 0).unwrap_or(0)
}

/// `addGPUResourceToDeployment`: `n` into both the limit and the request
/// of the first of KServe's GPU resources (and `extra`, from the
/// annotation) the container asks a non-zero quantity of, else
/// `nvidia.com/gpu`.
fn set_gpus(c: &mut Value, n: i64, extra: &[String]) {
    let asks = |name: &str| ["limits", "requests"].iter().any(|l| quantity(at(c, &["resources", l, name])) > 0);
    let name = GPU_RESOURCES
        .iter()
        .map(|n| n.to_string())
        .chain(extra.iter().cloned())
        .find(|n| asks(n))
        .unwrap_or_else(|| "nvidia.com/gpu".into());
    for field in ["limits", "requests"] {
        set(c, &["resources", field, &name], s(n.to_string()));
    }
}

/// A multi-node predictor (`multiNodeProcess`, `computeRayNodeAndGPUs`,
/// `computeMpNodeAndGPUs`): the worker pods' spec (the `workerSpec` pod
/// spec, its one container `worker-container` over the runtime's, nothing
/// of the predictor's), and how many nodes serve (head and workers); the
/// environment both containers get, and, in Standard mode
/// (`createRawDeployment`), the GPUs KServe writes into both containers'
/// limits and requests. An allocation KServe refuses (the head's GPUs
/// below what the workers leave it) is built as computed.
fn multi_node(
    isvc: &Object<'_>,
    worker: &Value,
    runtime: Option<&Value>,
    head_spec: &mut Value,
    standard: bool,
    extra: &[String],
) -> (Value, i64) {
    let runtime_worker = runtime.and_then(|r| at(r, &["spec", "workerSpec"]));
    let size = |key: &str| int_at(worker, &[key]).or_else(|| runtime_worker.and_then(|w| int_at(w, &[key]))).unwrap_or(1).max(1);
    let (tp, pp) = (size("tensorParallelSize"), size("pipelineParallelSize"));
    let total = tp * pp;
    let mut spec: Map<String, Value> = worker
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "tensorParallelSize" | "pipelineParallelSize"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut container = list_at(worker, &["containers"]).first().cloned().unwrap_or_else(|| json!({}));
    if let Some(rc) = runtime_worker.and_then(|w| list_at(w, &["containers"]).first()) {
        container = merge_container(rc, &container);
    }
    set(&mut container, &["name"], s("worker-container"));
    let mp = runtime.and_then(|r| str_at(r, &["metadata", "annotations", "multinode/executor-backend"])) == Some("mp");
    let head_container = list_at(head_spec, &["containers"]).first().cloned().unwrap_or_else(|| json!({}));
    let (head_gpus, worker_gpus) = (gpu_request(&head_container), gpu_request(&container));
    let (nodes, head_n, worker_n) = if mp {
        (pp, tp, tp)
    } else if worker_gpus > 0 {
        let nodes = (total + worker_gpus - 1) / worker_gpus;
        let nodes = if head_gpus > 0 && (total + head_gpus - 1) / head_gpus == 1 { 1 } else { nodes };
        if nodes == 1 {
            (1, total, 0)
        } else {
            (nodes, if head_gpus > 0 { head_gpus } else { total - worker_gpus * (nodes - 1) }, worker_gpus)
        }
    } else if head_gpus > 0 {
        (1 + (total - head_gpus).max(0), head_gpus, 1)
    } else {
        (total, 1, 1)
    };
    let env = |extra: &[(&str, String)]| -> Vec<Value> {
        let mut e = vec![
            json!({"name": "PIPELINE_PARALLEL_SIZE", "value": pp.to_string()}),
            json!({"name": "TENSOR_PARALLEL_SIZE", "value": tp.to_string()}),
            json!({"name": "RAY_NODE_COUNT", "value": nodes.to_string()}),
        ];
        e.extend(extra.iter().map(|(k, v)| json!({"name": k, "value": v})));
        e
    };
    if standard {
        set_gpus(&mut container, worker_n, extra);
    }
    list_mut(&mut container, &["env"]).extend(env(&[("REQUEST_GPU_COUNT", worker_n.to_string()), ("ISVC_NAME", isvc.name())]));
    spec.insert("containers".into(), json!([container]));
    if let Some(head) = list_mut(head_spec, &["containers"]).first_mut() {
        if standard {
            set_gpus(head, head_n, extra);
        }
        list_mut(head, &["env"]).extend(env(&[("REQUEST_GPU_COUNT", head_n.to_string()), ("MODEL_NAME", isvc.name())]));
    }
    (Value::Object(spec), nodes)
}

/// The Deployment of a component: KServe's (Standard mode), or Knative's
/// for the component's first Revision (Knative mode), with the component's
/// metadata on it and on its pod template.
fn deployment_of(
    isvc: &Object<'_>,
    name: &str,
    labels: Map<String, Value>,
    annotations: Map<String, Value>,
    pod_spec: Value,
    replicas: Option<i64>,
    standard: bool,
) -> Built {
    let (name, owner, by) = if standard {
        (name.to_string(), isvc.controller_ref(), &KSERVE)
    } else {
        let revision = format!("{name}-00001");
        let owner = json!({
            "apiVersion": "serving.knative.dev/v1", "kind": "Revision", "name": revision,
            "uid": format!("uid-of-revision-{revision}"), "controller": true, "blockOwnerDeletion": true
        });
        (format!("{revision}-deployment"), owner, &KNATIVE)
    };
    let labels = if standard { labels } else { labels.into_iter().filter(|(k, _)| k != "networking.knative.dev/visibility").collect() };
    let selector = json!({"matchLabels": {"app": labels.get("app").cloned().unwrap_or(Value::Null)}});
    let mut deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": isvc.namespace, "labels": labels, "annotations": annotations, "ownerReferences": [owner]},
        "spec": {"selector": selector, "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": pod_spec}},
    });
    if let Some(n) = replicas {
        set(&mut deployment, &["spec", "replicas"], json!(n));
    }
    let mut b = built(deployment, by, isvc);
    if !standard {
        b.lineage = format!("{} → Knative Service → Revision → Deployment `{name}`", isvc.describe());
    }
    b
}

/// The label KServe's pod webhook selects pods by
/// (`config/webhook/manifests.yaml`: `serving.kserve.io/inferenceservice`
/// Exists).
const ISVC_LABEL: &str = "serving.kserve.io/inferenceservice";

/// The annotation the controller writes for a component's `storageUri`,
/// which the pod webhook downloads from.
const SOURCE_URI: &str = "internal.serving.kserve.io/storage-initializer-sourceuri";

/// The storage initializer's volume and where it mounts the model
/// (`constants.StorageInitializerVolumeName`, `DefaultModelLocalMountPath`).
const PROVISION_VOLUME: &str = "kserve-provision-location";
const MODEL_DIR: &str = "/mnt/models";

/// What KServe's pod webhook does to a pod of an InferenceService at its
/// creation (`InjectStorageInitializer` → `CommonStorageInitialization`,
/// `pkg/webhook/admission/pod/storage_initializer_injector.go`, v0.16.0),
/// for a single `storageUri` that is neither `pvc://` (mounted directly)
/// nor `oci://` (a modelcar): the `storage-initializer` init container
/// (`utils.CreateInitContainerWithConfig`, with the image, requests and
/// limits of Kubeflow's `inferenceservice-config`: `storageInitializer`),
/// which downloads the URI into a `kserve-provision-location` emptyDir
/// mounted at `/mnt/models`, the same volume mounted read-only
/// (`storage.kserve.io/readonly` unset) in `kserve-container` (or, without
/// one, `worker-container`) and `transformer-container`; a `STORAGE_URI`
/// of that container then reads `/mnt/models`. Not when the pod already
/// has an init container of that name, nor beside the model agent.
pub(crate) fn pod_webhook(pod: &mut Value) {
    let labels = map_at(pod, &["metadata", "labels"]);
    let annotations = map_at(pod, &["metadata", "annotations"]);
    if !labels.contains_key(ISVC_LABEL) || annotations.contains_key("internal.serving.kserve.io/agent") {
        return;
    }
    let Some(uri) = annotations.get(SOURCE_URI).and_then(Value::as_str).map(str::to_string) else { return };
    if uri.starts_with("pvc://") || uri.starts_with("oci://") {
        return;
    }
    if list_at(pod, &["spec", "initContainers"]).iter().any(|c| str_at(c, &["name"]) == Some("storage-initializer")) {
        return;
    }
    let names: Vec<&str> = list_at(pod, &["spec", "containers"]).iter().filter_map(|c| str_at(c, &["name"])).collect();
    let user = if names.contains(&"kserve-container") { "kserve-container" } else { "worker-container" };
    if !names.contains(&user) {
        // "Invalid configuration: cannot find container": the webhook fails.
        return;
    }
    let read_only = annotations.get("storage.kserve.io/readonly").and_then(Value::as_str) != Some("false");
    for c in list_mut(pod, &["spec", "containers"]).iter_mut() {
        let name = str_at(c, &["name"]).unwrap_or_default().to_string();
        if name != user && name != "transformer-container" {
            continue;
        }
        if !list_at(c, &["volumeMounts"]).iter().any(|m| str_at(m, &["name"]) == Some(PROVISION_VOLUME)) {
            list_mut(c, &["volumeMounts"]).push(json!({"name": PROVISION_VOLUME, "mountPath": MODEL_DIR, "readOnly": read_only}));
        }
        if name == user {
            for e in list_mut(c, &["env"]).iter_mut() {
                if str_at(e, &["name"]) == Some("STORAGE_URI") && str_at(e, &["value"]).is_some_and(|v| !v.is_empty()) {
                    set(e, &["value"], s(MODEL_DIR));
                }
            }
        }
    }
    list_mut(pod, &["spec", "initContainers"]).push(json!({
        "name": "storage-initializer",
        "image": "kserve/storage-initializer:v0.16.0",
        "args": [uri, MODEL_DIR],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "100Mi"}},
        "volumeMounts": [{"name": PROVISION_VOLUME, "mountPath": MODEL_DIR}],
    }));
    if !list_at(pod, &["spec", "volumes"]).iter().any(|v| str_at(v, &["name"]) == Some(PROVISION_VOLUME)) {
        list_mut(pod, &["spec", "volumes"]).push(json!({"name": PROVISION_VOLUME, "emptyDir": {}}));
    }
}
