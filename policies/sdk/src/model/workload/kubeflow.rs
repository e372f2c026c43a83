//! The Kubeflow training operator's jobs (PyTorchJob, MPIJob, TFJob,
//! JAXJob, XGBoostJob, PaddleJob: replica specs, elastic and run policies)
//! and Kubeflow Trainer's TrainJob (a trainer, and overrides of the pods of
//! its runtime's replicated jobs, completed by its runtime).

use std::collections::BTreeMap;

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Container, EnvVar, ObjectMeta, PodSpec, Resources};

use super::batch::JobSetSpec;
use super::template::{PodTemplate, Role, Scale, ScaleWhy, Shape};
use super::{KubeflowJob, Obj, PodTemplateSpec, Workload};

/// Decodes an object of one of this family's kinds.
#[inline(never)] // Its locals kept out of `decode_workload`'s frame (see there).
pub(super) fn decode<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    use WorkloadKind::*;
    let root = Path::root();
    let spec_path = root.key("spec");
    Ok(match kind {
        PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob => {
            let o = Obj::<KubeflowSpec<'a>>::decode(d)?;
            let mut w = Workload::empty(kind, o.metadata);
            let field = kind.replica_specs_field();
            let elastic = o.spec.elastic_policy.unwrap_or_default();
            for (role, spec) in o.spec.replica_specs {
                let rpath = spec_path.keys(&[field, &role]);
                let mut scale = Scale::field(rpath.key("replicas"), spec.replicas, 1, "1 replica");
                // An elastic job's HorizontalPodAutoscaler scales the
                // workers up to `maxReplicas`; the operator runs
                // `replicas` of them, whatever `maxReplicas` says (a
                // `kubectl scale` may set more).
                if &*role == "Worker"
                    && let Some(max) = elastic.max_replicas
                    && scale.pods.is_some_and(|n| u64::try_from(max).unwrap_or(0) > n)
                {
                    scale = Scale::field(spec_path.keys(&["elasticPolicy", "maxReplicas"]), Some(max), 1, "");
                }
                w.others
                    .extend(spec.template.into_template(rpath.key("template"), Role::Replica, scale).map(|t| t.named(Some(role.clone()))));
            }
            let (nproc, nproc_path) = match (o.spec.nproc_per_node, elastic.n_proc_per_node) {
                (Some(n), _) => (Some(n.0), Some(spec_path.key("nprocPerNode"))),
                (None, Some(n)) => (Some(n.0), Some(spec_path.keys(&["elasticPolicy", "nProcPerNode"]))),
                (None, None) => (None, None),
            };
            let run = o.spec.run_policy.unwrap_or_default();
            let sched = run.scheduling_policy.unwrap_or_default();
            w.suspend = run.suspend;
            w.kubeflow = Some(KubeflowJob {
                nproc_per_node: nproc,
                nproc_path,
                elastic_min: elastic.min_replicas,
                elastic_max: elastic.max_replicas,
                suspend: run.suspend,
                queue: sched.queue,
                min_available: sched.min_available,
                slots_per_worker: o.spec.slots_per_worker,
                run_launcher_as_worker: o.spec.run_launcher_as_worker,
            });
            w
        }
        TrainJob => {
            let mut o = Obj::<TrainJobSpec<'a>>::decode(d)?;
            let mut w = Workload::empty(kind, o.metadata);
            w.suspend = o.spec.suspend;
            w.train_job = Some(super::TrainJob {
                runtime: o.spec.runtime_ref.as_ref().and_then(|r| r.name.clone()),
                num_nodes: o.spec.trainer.as_ref().and_then(|t| t.num_nodes),
                num_proc_per_node: o.spec.trainer.as_ref().and_then(|t| t.num_proc_per_node.clone()).map(|n| n.0),
                suspend: o.spec.suspend,
                model_storage_uri: o.spec.initializer.as_ref().and_then(|i| i.model.as_ref()).and_then(|m| m.storage_uri.clone()),
                model_env: o
                    .spec
                    .initializer
                    .as_mut()
                    .and_then(|i| i.model.as_mut())
                    .map(|m| std::mem::take(&mut m.env))
                    .unwrap_or_default(),
                dataset_storage_uri: o.spec.initializer.as_ref().and_then(|i| i.dataset.as_ref()).and_then(|m| m.storage_uri.clone()),
            });
            o.spec.into_templates(&spec_path, &mut w.others);
            w
        }
        _ => return Err(d.invalid_type("a workload of this family")),
    })
}

/// A number or a string (`nprocPerNode: 4`, `nprocPerNode: "auto"`).
#[derive(Clone, Debug)]
struct NumOrStr<'a>(Str<'a>);

impl<'a> Decode<'a> for NumOrStr<'a> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.string_or_number("a number or a string").map(NumOrStr)
    }
}

#[derive(Default)]
struct KubeflowSpec<'a> {
    replica_specs: BTreeMap<Str<'a>, ReplicaSpec<'a>>,
    nproc_per_node: Option<NumOrStr<'a>>,
    elastic_policy: Option<ElasticPolicy<'a>>,
    run_policy: Option<RunPolicy<'a>>,
    slots_per_worker: Option<i64>,
    run_launcher_as_worker: Option<bool>,
}

#[derive(Default)]
struct ElasticPolicy<'a> {
    min_replicas: Option<i64>,
    max_replicas: Option<i64>,
    n_proc_per_node: Option<NumOrStr<'a>>,
}

#[derive(Default)]
struct RunPolicy<'a> {
    suspend: Option<bool>,
    scheduling_policy: Option<SchedulingPolicy<'a>>,
}

#[derive(Default)]
struct SchedulingPolicy<'a> {
    queue: Option<Str<'a>>,
    min_available: Option<i64>,
}

#[derive(Default)]
struct ReplicaSpec<'a> {
    replicas: Option<i64>,
    template: PodTemplateSpec<'a>,
}

#[derive(Default)]
struct TrainJobSpec<'a> {
    suspend: Option<bool>,
    runtime_ref: Option<RuntimeRef<'a>>,
    trainer: Option<Trainer<'a>>,
    initializer: Option<Initializer<'a>>,
    /// `podSpecOverrides` (Trainer v2.0).
    pod_spec_overrides: Vec<PodOverride<'a>>,
    /// `podTemplateOverrides` (Trainer v2.1).
    pod_template_overrides: Vec<PodOverride<'a>>,
    /// `runtimePatches` (Trainer v2.2+).
    runtime_patches: Vec<RuntimePatch<'a>>,
}

/// `spec.initializer`: what the initializer jobs download before training.
#[derive(Default)]
struct Initializer<'a> {
    dataset: Option<StorageInitializer<'a>>,
    model: Option<StorageInitializer<'a>>,
}

#[derive(Default)]
struct StorageInitializer<'a> {
    storage_uri: Option<Str<'a>>,
    env: Vec<EnvVar<'a>>,
}

#[derive(Default)]
struct RuntimeRef<'a> {
    name: Option<Str<'a>>,
}

#[derive(Default)]
struct Trainer<'a> {
    image: Option<Str<'a>>,
    command: Vec<Str<'a>>,
    args: Vec<Str<'a>>,
    env: Vec<EnvVar<'a>>,
    num_nodes: Option<i64>,
    num_proc_per_node: Option<NumOrStr<'a>>,
    resources_per_node: Resources<'a>,
}

/// An override of the pods of replicated jobs (`targetJobs`): v2.1's
/// `metadata` and `spec` (a `PodTemplateSpec` the Trainer merges over the
/// replicated job's), or v2.0's pod fields beside `targetJobs` (`inline`).
#[derive(Default)]
struct PodOverride<'a> {
    target_jobs: Vec<TargetJob<'a>>,
    metadata: Option<ObjectMeta<'a>>,
    spec: Option<PodSpec<'a>>,
    inline: PodSpec<'a>,
}

#[derive(Default)]
struct TargetJob<'a> {
    name: Option<Str<'a>>,
}

/// A runtime patch: `trainingRuntimeSpec.template.spec` is a JobSet spec
/// patch (replicated jobs by name, each a Job template patch). Its
/// `template.metadata` labels the JobSet only.
#[derive(Default)]
struct RuntimePatch<'a> {
    spec: Option<JobSetSpec<'a>>,
}

impl<'a> Decode<'a> for RuntimePatch<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        Ok(RuntimePatch { spec: decode_at(d, &["trainingRuntimeSpec", "template", "spec"])? })
    }
}

/// The value at `path` inside the object at the cursor, if there; the rest
/// skipped. One function for each nesting the model reads (three objects
/// deep for a runtime patch's JobSet spec), instead of a type for each.
fn decode_at<'a, T: Decode<'a>>(d: &mut Dec<'a>, path: &[&str]) -> R<Option<T>> {
    let Some((first, rest)) = path.split_first() else { return Option::<T>::decode(d) };
    let mut out = None;
    d.object(|d, key| {
        if &*key == *first {
            out = decode_at(d, rest)?;
        } else {
            d.skip()?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// An override of the pods of the runtime's replicated jobs `jobs`. Its
/// pods: none of its own; it shapes those of the replicated jobs, counted
/// there.
#[inline(never)] // One body for the three kinds of override.
fn override_of<'a>(path: Path, shape: Shape, metadata: Option<ObjectMeta<'a>>, spec: PodSpec<'a>, jobs: Vec<Str<'a>>) -> PodTemplate<'a> {
    let scale = Scale { pods: Some(0), why: ScaleWhy::Words("it shapes the pods of the training runtime's replicated jobs") };
    PodTemplate::new(path, shape, Role::Override, metadata, spec, scale).shaping(jobs)
}

impl<'a> TrainJobSpec<'a> {
    /// The templates, in the order of the TrainJob's fields: the trainer,
    /// then each override (v2.0, v2.1), then each runtime patch's
    /// replicated jobs (v2.2+).
    #[inline(never)] // As `PodTemplateSpec::into_template`: kept out of `decode`.
    fn into_templates(self, spec: &Path, out: &mut Vec<PodTemplate<'a>>) {
        if let Some(trainer) = self.trainer {
            let mut pod = PodSpec::default();
            pod.containers.push(Container {
                name: Str::from("trainer"),
                image: trainer.image,
                command: trainer.command,
                args: trainer.args,
                env: trainer.env,
                resources: trainer.resources_per_node,
                ..Container::default()
            });
            let path = spec.key("trainer");
            let scale = Scale::field(path.key("numNodes"), trainer.num_nodes, 1, "the training runtime's node count, counted as 1");
            out.push(PodTemplate::new(path, Shape::Trainer, Role::Trainer, None, pod, scale));
        }
        for (field, overrides) in [("podSpecOverrides", self.pod_spec_overrides), ("podTemplateOverrides", self.pod_template_overrides)] {
            for (i, o) in overrides.into_iter().enumerate() {
                let jobs = o.target_jobs.into_iter().filter_map(|t| t.name).collect();
                let (shape, metadata, pod) = if field == "podSpecOverrides" {
                    (Shape::SpecPatch, None, o.inline)
                } else {
                    (Shape::Patch, Some(o.metadata.unwrap_or_default()), o.spec.unwrap_or_default())
                };
                out.push(override_of(spec.key(field).index(i), shape, metadata, pod, jobs));
            }
        }
        for (i, patch) in self.runtime_patches.into_iter().enumerate() {
            let Some(js) = patch.spec else { continue };
            let at = spec.key("runtimePatches").index(i).keys(&["trainingRuntimeSpec", "template", "spec", "replicatedJobs"]);
            for (j, job) in js.replicated_jobs.into_iter().enumerate() {
                let t = job.template.spec.template;
                if t.metadata.is_none() && t.spec.is_none() {
                    continue;
                }
                let path = at.index(j).keys(&["template", "spec", "template"]);
                let jobs = job.name.into_iter().collect();
                out.push(override_of(path, Shape::Patch, Some(t.metadata.unwrap_or_default()), t.spec.unwrap_or_default(), jobs));
            }
        }
    }
}

impl<'a> Decode<'a> for KubeflowSpec<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = KubeflowSpec::default();
        d.object(|d, key| {
            match &*key {
                "pytorchReplicaSpecs"
                | "mpiReplicaSpecs"
                | "tfReplicaSpecs"
                | "jaxReplicaSpecs"
                | "xgbReplicaSpecs"
                | "paddleReplicaSpecs" => out.replica_specs = Decode::decode(d)?,
                "nprocPerNode" => out.nproc_per_node = Decode::decode(d)?,
                "elasticPolicy" => out.elastic_policy = Decode::decode(d)?,
                "runPolicy" => out.run_policy = Decode::decode(d)?,
                "slotsPerWorker" => out.slots_per_worker = Decode::decode(d)?,
                "runLauncherAsWorker" => out.run_launcher_as_worker = Decode::decode(d)?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

impl<'a> Decode<'a> for TrainJobSpec<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = TrainJobSpec::default();
        d.object(|d, key| {
            match &*key {
                "suspend" => out.suspend = Decode::decode(d)?,
                "runtimeRef" => out.runtime_ref = Decode::decode(d)?,
                "trainer" => out.trainer = Decode::decode(d)?,
                "initializer" => out.initializer = Decode::decode(d)?,
                "podSpecOverrides" => out.pod_spec_overrides = Decode::decode(d)?,
                "podTemplateOverrides" => out.pod_template_overrides = Decode::decode(d)?,
                "runtimePatches" => out.runtime_patches = Decode::decode(d)?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(ElasticPolicy { "minReplicas" => min_replicas, "maxReplicas" => max_replicas, "nProcPerNode" => n_proc_per_node });
decode_struct!(RunPolicy { "suspend" => suspend, "schedulingPolicy" => scheduling_policy });
decode_struct!(SchedulingPolicy { "queue" => queue, "minAvailable" => min_available });
decode_struct!(ReplicaSpec { "replicas" => replicas, "template" => template });
decode_struct!(RuntimeRef { "name" => name });
decode_struct!(Initializer { "dataset" => dataset, "model" => model });
decode_struct!(StorageInitializer { "storageUri" => storage_uri, "env" => env });
decode_struct!(Trainer {
    "image" => image,
    "command" => command,
    "args" => args,
    "env" => env,
    "numNodes" => num_nodes,
    "numProcPerNode" => num_proc_per_node,
    "resourcesPerNode" => resources_per_node,
});
decode_struct!(TargetJob { "name" => name });

impl<'a> Decode<'a> for PodOverride<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = PodOverride::default();
        d.object(|d, key| {
            match &*key {
                "targetJobs" => out.target_jobs = Decode::decode(d)?,
                "metadata" => out.metadata = Decode::decode(d)?,
                "spec" => out.spec = Decode::decode(d)?,
                // v2.0: the pod fields beside `targetJobs`.
                _ => {
                    if !out.inline.decode_field(&key, d)? {
                        d.skip()?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}
