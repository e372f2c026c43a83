//! KServe's InferenceService: predictor, transformer and explainer, each a
//! pod spec inline with a model container and where its model comes from.

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Annotations, Container, ObjectMeta, PodSpec, StrMap};

use super::template::{ModelSpec, ModelStorage, PodTemplate, Role, Scale, Shape, StorageUri};
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
                    w.others.push(c.into_template(spec_path.key(field), role));
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

impl<'a> IsvcComponent<'a> {
    fn into_template(self: Box<Self>, path: Path, role: Role) -> PodTemplate<'a> {
        let min = self.min_replicas;
        let scale = match self.max_replicas {
            Some(n) if n > 0 => Scale::field(path.key("maxReplicas"), Some(n), 1, ""),
            _ => Scale::unbounded(path.key("maxReplicas"), "is not set, so the autoscaler has no upper bound"),
        };
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
        let _ = min;
        let metadata = ObjectMeta { labels: self.labels, annotations: self.annotations, ..ObjectMeta::default() };
        let mut t = PodTemplate::new(path, Shape::Inline, role, Some(metadata), self.pod, scale);
        t.model = model;
        t.storage_uris = self.storage_uris;
        t
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
