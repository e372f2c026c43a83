//! KServe's InferenceService: predictor, transformer and explainer, each a
//! pod spec inline with a model container and where its model comes from;
//! and a predictor's `workerSpec`, the workers of multi-node inference.
//!
//! What KServe builds (`kserve/kserve`, `pkg/controller/v1beta1/inferenceservice`;
//! the same in v0.15.2, v0.16.0 and v0.20.0 where not said):
//!
//! - **How many pods.** The mode is the InferenceService's
//!   `serving.kserve.io/deploymentMode` annotation (`utils.GetDeploymentMode`):
//!   `Standard` (or the older `RawDeployment`) makes a Deployment per
//!   component; anything else, or none, is read as Knative mode, KServe's
//!   shipped default (a cluster whose default is Standard has KServe's
//!   defaulting webhook write the annotation before validation). In
//!   Knative mode `maxReplicas` becomes the Revision's `max-scale`, and
//!   unset or 0 means no bound (`ksvc_reconciler.go`, Knative's
//!   `max-scale: "0"`). In Standard mode the autoscaler class decides
//!   (`serving.kserve.io/autoscalerClass`: the component's `annotations`
//!   over the InferenceService's, as the Deployment carries them; `hpa`
//!   when unset): `hpa` runs between `max(minReplicas, 1)` (1 when unset)
//!   and `max(maxReplicas, that)` (`hpa_reconciler.go` `createHPA`); `keda`
//!   between `minReplicas` (1 when unset, 0 allowed) and
//!   `max(maxReplicas, that)` (`keda_reconciler.go`); `none` runs exactly
//!   `minReplicas`, 1 when unset (`createRawDefaultDeployment`);
//!   `external` whatever an autoscaler outside KServe sets, which nothing
//!   bounds. A class KServe does not know is read as `hpa` (KServe refuses
//!   it on the InferenceService and builds nothing for it on a component).
//! - **Multi-node inference** (`workerSpec`, Standard mode only: Knative
//!   mode builds no worker and writes no GPUs). `multiNodeProcess` and
//!   `createRawDeployment` make a worker Deployment `<isvc>-predictor-worker`
//!   of `nodes - 1` pods from the `workerSpec` pod spec (its first
//!   container, `worker-container`; nothing of the predictor's pod spec),
//!   labelled and annotated as the predictor's pods, and write the GPUs of
//!   each node into both the `limits` and the `requests` of the head's
//!   model container and the worker container, over what the request
//!   says. The nodes and GPUs are computed as `computeRayNodeAndGPUs` does
//!   (the Ray backend: a ServingRuntime's `multinode/executor-backend: mp`
//!   annotation, which the request does not hold, is not known here), from
//!   `tensorParallelSize` × `pipelineParallelSize` (1 each when unset: the
//!   ServingRuntime's, which the request does not hold either, are 1 in
//!   KServe's own runtimes) and the GPUs the two containers *request*
//!   (their `requests` of KServe's GPU resources, `nvidia.com/gpu`,
//!   `amd.com/gpu`, `intel.com/gpu`, `habana.ai/gaudi`; limits are not
//!   read), the ServingRuntime's containers counted as requesting none.
//!   The model here holds the GPU counts KServe writes, so every rule that
//!   counts GPUs counts those.

use std::borrow::Cow;

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Annotations, Container, ObjectMeta, PodSpec, RawQuantity, StrMap};

use super::template::{ModelSpec, ModelStorage, PodTemplate, Role, Scale, ScaleWhy, Shape, StorageUri};
use super::{Obj, Workload};

/// Decodes an object of one of this family's kinds.
#[inline(never)] // Its locals kept out of `decode_workload`'s frame (see there).
pub(super) fn decode<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    use WorkloadKind::*;
    let root = Path::root();
    let spec_path = root.key("spec");
    Ok(match kind {
        InferenceService => {
            let o = Obj::<IsvcSpec<'a>>::decode(d)?;
            let mut w = Workload::empty(kind, o.metadata);
            for (field, role, c) in [
                ("predictor", Role::Predictor, o.spec.predictor),
                ("transformer", Role::Transformer, o.spec.transformer),
                ("explainer", Role::Explainer, o.spec.explainer),
            ] {
                if let Some(c) = c {
                    c.into_templates(spec_path.key(field), role, &w.metadata, &mut w.others);
                }
            }
            w
        }
        _ => return Err(d.invalid_type("a workload of this family")),
    })
}

/// Components and models boxed: each holds a pod spec or a container, and
/// held inline they made this family's decoder a 100 KiB stack frame.
#[derive(Default)]
struct IsvcSpec<'a> {
    predictor: Option<Box<IsvcComponent<'a>>>,
    transformer: Option<Box<IsvcComponent<'a>>>,
    explainer: Option<Box<IsvcComponent<'a>>>,
}

/// A KServe model container: a container plus where the model comes from.
#[derive(Default)]
struct IsvcModel<'a> {
    container: Container<'a>,
    storage_uri: Option<Str<'a>>,
    storage: Option<IsvcStorage<'a>>,
    model_format: Option<ModelFormat<'a>>,
    runtime: Option<Str<'a>>,
}

#[derive(Default)]
struct ModelFormat<'a> {
    name: Option<Str<'a>>,
}

#[derive(Default)]
struct IsvcStorage<'a> {
    path: Option<Str<'a>>,
    parameters: Option<StorageParameters<'a>>,
}

/// The two of `storage.parameters` that say where the model is.
#[derive(Default)]
struct StorageParameters<'a> {
    kind: Option<Str<'a>>,
    bucket: Option<Str<'a>>,
}

/// A predictor's `workerSpec`: a pod spec inline, and the parallelism the
/// model is served with.
#[derive(Default)]
struct WorkerSpec<'a> {
    pod: PodSpec<'a>,
    tensor_parallel_size: Option<i64>,
    pipeline_parallel_size: Option<i64>,
}

/// The keys an InferenceService component names its model container
/// under, in the order they are looked at: `model`, then each framework's,
/// then the explainer's ART server.
const MODEL_KEYS: [&str; 12] =
    ["model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "pmml", "lightgbm", "paddle", "huggingface", "art"];

/// The annotation that chooses a component's autoscaler in Standard mode.
const AUTOSCALER_CLASS: &str = "serving.kserve.io/autoscalerClass";

/// KServe's GPU resources (`constants.DefaultGPUResourceTypeList`), the
/// only ones whose requests `computeRayNodeAndGPUs` counts.
const KSERVE_GPUS: [&str; 4] = ["nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "habana.ai/gaudi"];

/// More resources KServe writes a multi-node count under, a JSON list
/// (`utils.UpdateGPUResourceTypeListByAnnotation`).
const GPU_TYPES_ANNOTATION: &str = "serving.kserve.io/gpu-resource-types";

/// An InferenceService component: a pod spec inline, autoscaling bounds,
/// pod labels and annotations, and a model container under `model` or a
/// framework's name.
#[derive(Default)]
struct IsvcComponent<'a> {
    pod: PodSpec<'a>,
    min_replicas: Option<i64>,
    max_replicas: Option<i64>,
    labels: StrMap<'a>,
    annotations: Annotations<'a>,
    /// The model container under each of [`MODEL_KEYS`].
    models: [Option<Box<IsvcModel<'a>>>; MODEL_KEYS.len()],
    storage_uris: Vec<StorageUri<'a>>,
    /// A predictor's `workerSpec`.
    worker: Option<Box<WorkerSpec<'a>>>,
}

/// Whether the InferenceService runs in KServe's Standard mode.
fn standard(isvc: &ObjectMeta<'_>) -> bool {
    matches!(isvc.annotation("serving.kserve.io/deploymentMode").as_deref(), Some("Standard" | "RawDeployment"))
}

impl<'a> IsvcComponent<'a> {
    /// The component's pod template, and a predictor's workers' in
    /// Standard mode, into `out`.
    fn into_templates(self: Box<Self>, path: Path, role: Role, isvc: &ObjectMeta<'a>, out: &mut Vec<PodTemplate<'a>>) {
        let standard = standard(isvc);
        let scale = self.scale(&path, isvc, standard);
        let model = MODEL_KEYS.into_iter().zip(self.models).find_map(|(field, m)| m.map(|m| (field, m))).map(|(field, m)| {
            let spec = ModelSpec {
                field,
                storage_uri: m.storage_uri,
                format: m.model_format.and_then(|f| f.name),
                runtime: m.runtime,
                storage: m.storage.map(|s| {
                    let p = s.parameters.unwrap_or_default();
                    ModelStorage { path: s.path, kind: p.kind, bucket: p.bucket }
                }),
            };
            let mut c = m.container;
            if c.name.is_empty() {
                c.name = Str::from("kserve-container");
            }
            (spec, c)
        });
        let metadata = ObjectMeta { labels: self.labels, annotations: self.annotations, ..ObjectMeta::default() };
        let worker = self.worker.filter(|_| standard && role == Role::Predictor);
        let at = worker.as_ref().map(|_| path.key("workerSpec"));
        let mut t = PodTemplate::new(path, Shape::Inline, role, Some(metadata), self.pod, scale);
        t.model = model;
        t.storage_uris = self.storage_uris;
        let (Some(worker), Some(at)) = (worker, at) else {
            out.push(t);
            return;
        };
        // The workers' pods get the predictor's labels and annotations.
        let metadata = t.metadata.clone().unwrap_or_default();
        let mut pod = worker.pod;
        match pod.containers.first_mut() {
            Some(c) if c.name.is_empty() => c.name = Str::from("worker-container"),
            Some(_) => {}
            // KServe's runtime supplies the container, which the request
            // does not hold: what it runs with is what KServe writes.
            None => pod.containers.push(Container { name: Str::from("worker-container"), ..Container::default() }),
        }
        let extra = gpu_types(&metadata, isvc);
        let nodes = {
            let head = match t.model.as_mut() {
                Some((_, c)) => Some(c),
                None => t.spec.containers.first_mut(),
            };
            multi_node(head, pod.containers.first_mut(), worker.tensor_parallel_size, worker.pipeline_parallel_size, &extra)
        };
        let scale = match nodes {
            Some((nodes, per_worker)) => Scale {
                pods: Some(nodes.saturating_sub(1)),
                why: ScaleWhy::Nodes {
                    at: at.clone(),
                    tensor: worker.tensor_parallel_size,
                    pipeline: worker.pipeline_parallel_size,
                    nodes,
                    per_worker,
                },
            },
            // A GPU quantity that does not parse: the rules say so, and
            // nothing is computed from it.
            None => Scale::one("a worker (its GPUs could not be read)"),
        };
        out.push(t);
        out.push(PodTemplate::new(at, Shape::Worker, Role::PredictorWorker, Some(metadata), pod, scale));
    }

    /// The pods of the component at full scale, as its mode and autoscaler
    /// class bound them (see the module's documentation).
    fn scale(&self, path: &Path, isvc: &ObjectMeta<'a>, standard: bool) -> Scale {
        let max_path = path.key("maxReplicas");
        if !standard {
            return match self.max_replicas {
                Some(n) if n > 0 => Scale::field(max_path, Some(n), 0, ""),
                _ => Scale::unbounded(
                    max_path,
                    "is not set, and in KServe's Knative mode (its default, without `serving.kserve.io/deploymentMode: Standard`) the autoscaler has no upper bound",
                ),
            };
        }
        let (class, at) = match self.annotations.get(AUTOSCALER_CLASS) {
            Some(v) => (v.get(), path.key("annotations")),
            None => (isvc.annotation(AUTOSCALER_CLASS).unwrap_or(Str::from("hpa")), Path::root().keys(&["metadata", "annotations"])),
        };
        let annotation =
            |value: &'static str, says: &'static str| ScaleWhy::Annotation { at: at.clone(), key: AUTOSCALER_CLASS, value, says };
        match &*class {
            "none" => {
                let s = Scale::field(path.key("minReplicas"), self.min_replicas, 1, "1 replica");
                Scale { pods: s.pods, why: ScaleWhy::Under(Box::new(s.why), Box::new(annotation("none", " (no autoscaler)"))) }
            }
            "external" => Scale {
                pods: None,
                why: annotation("external", ": an autoscaler outside KServe sets the replicas, with no bound KServe knows"),
            },
            "keda" => {
                let min = self.min_replicas.unwrap_or(1).max(0);
                let says = [
                    "is not set, so KServe's KEDA ScaledObject stops at `minReplicas` (1 when not set)",
                    "is below `minReplicas`, so KServe's KEDA ScaledObject stops there",
                ];
                self.bounded(max_path, min, says)
            }
            _ => {
                let min = self.min_replicas.filter(|n| *n >= 1).unwrap_or(1);
                let says = [
                    "is not set, so KServe's HorizontalPodAutoscaler stops at `minReplicas` (1 when not set)",
                    "is below `minReplicas`, so KServe's HorizontalPodAutoscaler stops there",
                ];
                self.bounded(max_path, min, says)
            }
        }
    }

    /// An autoscaler's bound: `max(maxReplicas, min)`; `says`, why it is
    /// `min` when `maxReplicas` is not set, and when it is below.
    fn bounded(&self, max_path: Path, min: i64, says: [&'static str; 2]) -> Scale {
        match self.max_replicas {
            Some(max) if max > 0 && max >= min => Scale::field(max_path, Some(max), 0, ""),
            max => {
                let [unset, below] = says;
                let says = if max.is_some_and(|n| n > 0) { below } else { unset };
                Scale { pods: Some(u64::try_from(min).unwrap_or(0)), why: ScaleWhy::Says(max_path, says) }
            }
        }
    }
}

/// The resources of `serving.kserve.io/gpu-resource-types` on the
/// component's pods (its `annotations` over the InferenceService's); none
/// when it is not a JSON list of strings (KServe then refuses the
/// InferenceService).
fn gpu_types<'a>(component: &ObjectMeta<'a>, isvc: &ObjectMeta<'a>) -> Vec<Str<'a>> {
    let Some(text) = component.annotation(GPU_TYPES_ANNOTATION).or_else(|| isvc.annotation(GPU_TYPES_ANNOTATION)) else {
        return Vec::new();
    };
    let mut d = Dec::new(&text);
    let list = Vec::<Str<'_>>::decode(&mut d).and_then(|l| d.end().map(|()| l));
    list.map(|l| l.into_iter().map(|s| Str(Cow::Owned(s.to_string()))).collect()).unwrap_or_default()
}

/// Whole units of a quantity, as Go's `Quantity.Value()` rounds; `None`
/// when it does not parse.
fn units(q: &RawQuantity<'_>) -> Option<u64> {
    q.parse().ok().map(|q| q.ceil_units())
}

/// The GPUs a container requests as `computeRayNodeAndGPUs` reads them:
/// the first of KServe's GPU resources in its `requests`; `None` when a
/// GPU quantity of the container does not parse.
fn requested(c: Option<&Container<'_>>) -> Option<u64> {
    let Some(c) = c else { return Some(0) };
    let mut found = None;
    for name in KSERVE_GPUS {
        for (list, is_request) in [(&c.resources.requests, true), (&c.resources.limits, false)] {
            let Some(q) = list.get(name) else { continue };
            let n = units(q)?;
            if is_request && found.is_none() {
                found = Some(n);
            }
        }
    }
    Some(found.unwrap_or(0))
}

/// KServe's nodes and GPUs for a multi-node predictor, Ray backend
/// (`computeRayNodeAndGPUs`), written into the head's and the worker's
/// containers as `addGPUResourceToDeployment` writes them; `(nodes, GPUs
/// per worker)`, or `None` when a GPU quantity does not parse (nothing is
/// written then). An allocation KServe refuses (the head's GPUs below what
/// the workers leave it) is read as computed.
fn multi_node<'a>(
    head: Option<&mut Container<'a>>,
    worker: Option<&mut Container<'a>>,
    tensor: Option<i64>,
    pipeline: Option<i64>,
    extra: &[Str<'_>],
) -> Option<(u64, u64)> {
    let size = |n: Option<i64>| u64::try_from(n.unwrap_or(1)).unwrap_or(0).max(1);
    let total = size(tensor).saturating_mul(size(pipeline));
    let (mut head_gpus, mut worker_gpus) = (requested(head.as_deref())?, requested(worker.as_deref())?);
    let nodes;
    if worker_gpus > 0 {
        let mut n = total.div_ceil(worker_gpus);
        if head_gpus > 0 {
            if total.div_ceil(head_gpus) == 1 {
                n = 1;
            }
        } else {
            head_gpus = total.saturating_sub(worker_gpus.saturating_mul(n.saturating_sub(1)));
        }
        if n == 1 {
            worker_gpus = 0;
            head_gpus = total;
        }
        nodes = n;
    } else if head_gpus > 0 {
        worker_gpus = 1;
        nodes = 1 + total.saturating_sub(head_gpus);
    } else {
        (nodes, head_gpus, worker_gpus) = (total, 1, 1);
    }
    for (c, n) in [(head, head_gpus), (worker, worker_gpus)] {
        if let Some(c) = c {
            write_gpus(c, n, extra);
        }
    }
    Some((nodes, worker_gpus))
}

/// `addGPUResourceToDeployment`: `n` into both the limit and the request
/// of the first of KServe's GPU resources (and `extra`) the container
/// asks a non-zero quantity of, else `nvidia.com/gpu`.
fn write_gpus(c: &mut Container<'_>, n: u64, extra: &[Str<'_>]) {
    let asks = |name: &str| [&c.resources.limits, &c.resources.requests].iter().any(|l| l.get(name).and_then(units).is_some_and(|n| n > 0));
    let name =
        KSERVE_GPUS.iter().copied().chain(extra.iter().map(|s| &**s)).find(|name| asks(name)).unwrap_or("nvidia.com/gpu").to_string();
    let value = RawQuantity(Str(Cow::Owned(n.to_string())));
    c.resources.limits.insert(Str(Cow::Owned(name.clone())), value.clone());
    c.resources.requests.insert(Str(Cow::Owned(name)), value);
}

impl<'a> Decode<'a> for IsvcModel<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = IsvcModel::default();
        d.object(|d, key| {
            match &*key {
                "storageUri" => out.storage_uri = Decode::decode(d)?,
                "storage" => out.storage = Decode::decode(d)?,
                "modelFormat" => out.model_format = Decode::decode(d)?,
                "runtime" => out.runtime = Decode::decode(d)?,
                // The model is a container too (name, image, resources, env...).
                k => {
                    if !out.container.decode_field(k, d)? {
                        d.skip()?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

impl<'a> Decode<'a> for IsvcComponent<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = IsvcComponent::default();
        d.object(|d, key| {
            match &*key {
                "minReplicas" => out.min_replicas = Decode::decode(d)?,
                "maxReplicas" => out.max_replicas = Decode::decode(d)?,
                "labels" => out.labels = Decode::decode(d)?,
                "annotations" => out.annotations = Decode::decode(d)?,
                "storageUris" => out.storage_uris = Decode::decode(d)?,
                "workerSpec" => out.worker = Decode::decode(d)?,
                k => {
                    // A model container, or else a field of the pod spec the
                    // component is too (containers, tolerations...).
                    if let Some(slot) = MODEL_KEYS.iter().position(|m| *m == k).and_then(|i| out.models.get_mut(i)) {
                        *slot = Decode::decode(d)?;
                    } else if !out.pod.decode_field(k, d)? {
                        d.skip()?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

impl<'a> Decode<'a> for WorkerSpec<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = WorkerSpec::default();
        d.object(|d, key| {
            match &*key {
                "tensorParallelSize" => out.tensor_parallel_size = Decode::decode(d)?,
                "pipelineParallelSize" => out.pipeline_parallel_size = Decode::decode(d)?,
                k => {
                    if !out.pod.decode_field(k, d)? {
                        d.skip()?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(IsvcSpec { "predictor" => predictor, "transformer" => transformer, "explainer" => explainer });
decode_struct!(ModelFormat { "name" => name });
decode_struct!(IsvcStorage { "path" => path, "parameters" => parameters });
decode_struct!(StorageParameters { "type" => kind, "bucket" => bucket });
decode_struct!(StorageUri { "uri" => uri });

#[cfg(test)]
mod tests {
    use super::*;

    fn isvc(annotations: &str, predictor: &str) -> Workload<'static> {
        let json = format!(r#"{{"metadata":{{"annotations":{{{annotations}}}}},"spec":{{"predictor":{predictor}}}}}"#);
        Workload::parse(WorkloadKind::InferenceService, Box::leak(json.into_boxed_str())).unwrap()
    }

    fn scale(annotations: &str, predictor: &str) -> (Option<u64>, String) {
        let w = isvc(annotations, predictor);
        let t = w.templates().next().unwrap();
        (t.scale.pods, t.scale.why.to_string())
    }

    const STANDARD: &str = r#""serving.kserve.io/deploymentMode":"Standard""#;

    #[test]
    fn knative_mode_is_unbounded_without_max_replicas() {
        assert_eq!(scale("", r#"{"minReplicas":2}"#).0, None);
        assert_eq!(scale(r#""serving.kserve.io/deploymentMode":"Serverless""#, r#"{"maxReplicas":0}"#).0, None);
        assert_eq!(scale("", r#"{"maxReplicas":4}"#), (Some(4), "`spec.predictor.maxReplicas: 4`".into()));
    }

    #[test]
    fn standard_mode_follows_the_autoscaler_class() {
        // hpa: between max(min, 1) and max(max, that).
        assert_eq!(
            scale(STANDARD, "{}"),
            (
                Some(1),
                "`spec.predictor.maxReplicas` is not set, so KServe's HorizontalPodAutoscaler stops at `minReplicas` (1 when not set)"
                    .into()
            )
        );
        assert_eq!(scale(STANDARD, r#"{"minReplicas":3}"#).0, Some(3));
        assert_eq!(scale(STANDARD, r#"{"minReplicas":0}"#).0, Some(1), "0 is 1 for the HPA");
        assert_eq!(scale(STANDARD, r#"{"minReplicas":2,"maxReplicas":5}"#).0, Some(5));
        let raw = r#""serving.kserve.io/deploymentMode":"RawDeployment""#;
        assert_eq!(scale(raw, r#"{"minReplicas":2}"#).0, Some(2));
        // keda: 0 allowed.
        let keda = format!(r#"{STANDARD},"serving.kserve.io/autoscalerClass":"keda""#);
        assert_eq!(scale(&keda, r#"{"minReplicas":0}"#).0, Some(0));
        assert_eq!(scale(&keda, r#"{"maxReplicas":6}"#).0, Some(6));
        // none: exactly minReplicas, 1 when unset; the component's annotation wins.
        let none = format!(r#"{STANDARD},"serving.kserve.io/autoscalerClass":"none""#);
        assert_eq!(
            scale(&none, r#"{"minReplicas":2,"maxReplicas":8}"#),
            (
                Some(2),
                "`spec.predictor.minReplicas: 2`, with `serving.kserve.io/autoscalerClass: none` in `metadata.annotations` (no autoscaler)"
                    .into()
            )
        );
        assert_eq!(scale(&none, r#"{"maxReplicas":8}"#).0, Some(1));
        let external = r#"{"maxReplicas":8,"annotations":{"serving.kserve.io/autoscalerClass":"external"}}"#;
        assert_eq!(
            scale(&none, external),
            (
                None,
                "`serving.kserve.io/autoscalerClass: external` in `spec.predictor.annotations`: an autoscaler outside KServe sets the replicas, with no bound KServe knows".into()
            )
        );
    }

    /// Nodes, the head's GPUs and the workers' (limit and request, as
    /// KServe writes them), for a multi-node predictor.
    fn multi(head: &str, worker: &str, sizes: &str) -> (Option<u64>, Vec<String>) {
        let predictor = format!(
            r#"{{"model":{{"modelFormat":{{"name":"huggingface"}},"storageUri":"pvc://m","resources":{head}}},"workerSpec":{{{sizes}"containers":[{{"resources":{worker}}}]}}}}"#
        );
        let w = isvc(&format!(r#"{STANDARD},"serving.kserve.io/autoscalerClass":"none""#), &predictor);
        let ts: Vec<&PodTemplate<'_>> = w.templates().collect();
        let [head, workers] = ts.as_slice() else { panic!("{} templates", ts.len()) };
        assert_eq!(
            (workers.role, workers.spec_path().to_string(), workers.metadata_path().to_string()),
            (Role::PredictorWorker, "spec.predictor.workerSpec".into(), "spec.predictor".into())
        );
        assert!(workers.shares_metadata() && !head.shares_metadata());
        assert_eq!(workers.spec.containers[0].name, "worker-container");
        let gpus = |c: &Container<'_>| {
            let show =
                |l: &crate::model::pod::ResourceList<'_>| l.iter().map(|(k, v)| format!("{k}={}", v.0)).collect::<Vec<_>>().join(",");
            format!("{} / {}", show(&c.resources.limits), show(&c.resources.requests))
        };
        (workers.scale.pods, vec![gpus(&head.model.as_ref().unwrap().1), gpus(&workers.spec.containers[0])])
    }

    #[test]
    fn a_multi_node_predictor_holds_the_gpus_kserve_writes() {
        let req = |n: u32| format!(r#"{{"requests":{{"nvidia.com/gpu":"{n}"}},"limits":{{"nvidia.com/gpu":"{n}"}}}}"#);
        let tp_pp = r#""tensorParallelSize":8,"pipelineParallelSize":2,"#;
        // Workers of 8: two nodes, the head's 8 kept.
        assert_eq!(multi(&req(8), &req(8), tp_pp), (Some(1), vec!["nvidia.com/gpu=8 / nvidia.com/gpu=8".into(); 2]));
        // Workers of 4, head unset: 4 nodes, the head gets what is left.
        let (pods, gpus) = multi("{}", &req(4), tp_pp);
        assert_eq!((pods, gpus[0].as_str()), (Some(3), "nvidia.com/gpu=4 / nvidia.com/gpu=4"));
        // Limits alone are not read: 16 nodes of one GPU, over what was written.
        let lim = r#"{"limits":{"nvidia.com/gpu":"8"}}"#;
        assert_eq!(multi(lim, lim, tp_pp), (Some(15), vec!["nvidia.com/gpu=1 / nvidia.com/gpu=1".into(); 2]));
        // The head alone covers the total: no worker GPUs (and no workers).
        let (pods, gpus) = multi(&req(16), &req(8), tp_pp);
        assert_eq!((pods, gpus[1].as_str()), (Some(0), "nvidia.com/gpu=0 / nvidia.com/gpu=0"));
        // Only the head requests: single-GPU workers for the rest.
        let (pods, gpus) = multi(&req(4), "{}", tp_pp);
        assert_eq!((pods, gpus[1].as_str()), (Some(12), "nvidia.com/gpu=1 / nvidia.com/gpu=1"));
        // Sizes unset: one node, one GPU.
        assert_eq!(multi("{}", "{}", "").0, Some(0));
        // Another vendor's GPU is written under its name.
        let amd = r#"{"requests":{"amd.com/gpu":"2"}}"#;
        assert_eq!(multi(amd, amd, r#""tensorParallelSize":4,"#).1[1], "amd.com/gpu=2 / amd.com/gpu=2");
    }

    #[test]
    fn knative_mode_builds_no_workers() {
        let w = isvc("", r#"{"model":{"resources":{"limits":{"nvidia.com/gpu":"4"}}},"workerSpec":{"hostNetwork":true}}"#);
        assert_eq!(w.templates().count(), 1);
        let (_, c) = w.templates().next().unwrap().model.as_ref().unwrap();
        assert_eq!(c.resources.requests.len(), 0, "nothing written over the request");
    }
}
