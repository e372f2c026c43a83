//! KServe's InferenceService: predictor, transformer and explainer, each a
//! pod spec inline with a model container and where its model comes from.
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

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Annotations, Container, ObjectMeta, PodSpec, StrMap};

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

/// The keys an InferenceService component names its model container
/// under, in the order they are looked at: `model`, then each framework's,
/// then the explainer's ART server.
const MODEL_KEYS: [&str; 12] =
    ["model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "pmml", "lightgbm", "paddle", "huggingface", "art"];

/// The annotation that chooses a component's autoscaler in Standard mode.
const AUTOSCALER_CLASS: &str = "serving.kserve.io/autoscalerClass";

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
}

/// Whether the InferenceService runs in KServe's Standard mode.
fn standard(isvc: &ObjectMeta<'_>) -> bool {
    matches!(isvc.annotation("serving.kserve.io/deploymentMode").as_deref(), Some("Standard" | "RawDeployment"))
}

impl<'a> IsvcComponent<'a> {
    /// The component's pod template, into `out`.
    fn into_templates(mut self: Box<Self>, path: Path, role: Role, isvc: &ObjectMeta<'a>, out: &mut Vec<PodTemplate<'a>>) {
        let standard = standard(isvc);
        let scale = self.scale(&path, isvc, standard);
        let model =
            MODEL_KEYS.into_iter().zip(std::mem::take(&mut self.models)).find_map(|(field, m)| m.map(|m| (field, m))).map(|(field, m)| {
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
        let mut t = PodTemplate::new(path, Shape::Inline, role, Some(metadata), self.pod, scale);
        t.model = model;
        t.storage_uris = self.storage_uris;
        out.push(t);
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
}
