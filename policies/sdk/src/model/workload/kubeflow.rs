//! The Kubeflow training operator's jobs (PyTorchJob, MPIJob, TFJob,
//! JAXJob, XGBoostJob, PaddleJob: replica specs, elastic and run policies)
//! and Kubeflow Trainer's TrainJob (a trainer completed by its runtime).

use std::collections::BTreeMap;

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Container, EnvVar, PodSpec, Resources, StrMap, Toleration};

use super::template::{PodTemplate, Role, Scale, Shape};
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
            w.others.extend(o.spec.into_template(&spec_path));
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
    /// `podTemplateOverrides` (Trainer v2.1+); `podSpecOverrides` before.
    pod_template_overrides: Vec<PodOverride<'a>>,
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

/// An override: the pod fields v2.1 keeps under `spec`, v2.0 at the top.
#[derive(Default)]
struct PodOverride<'a> {
    tolerations: Vec<Toleration<'a>>,
    node_selector: StrMap<'a>,
    service_account_name: Option<Str<'a>>,
    spec: Option<OverrideSpec<'a>>,
}

#[derive(Default)]
struct OverrideSpec<'a> {
    tolerations: Vec<Toleration<'a>>,
    node_selector: StrMap<'a>,
    service_account_name: Option<Str<'a>>,
}

impl<'a> TrainJobSpec<'a> {
    fn into_template(self, spec: &Path) -> Option<PodTemplate<'a>> {
        let trainer = self.trainer?;
        let mut pod = PodSpec::default();
        for o in self.pod_template_overrides {
            pod.tolerations.extend(o.tolerations);
            pod.node_selector.extend(o.node_selector);
            if o.service_account_name.is_some() {
                pod.service_account_name = o.service_account_name;
            }
            if let Some(s) = o.spec {
                pod.tolerations.extend(s.tolerations);
                pod.node_selector.extend(s.node_selector);
                if s.service_account_name.is_some() {
                    pod.service_account_name = s.service_account_name;
                }
            }
        }
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
        Some(PodTemplate::new(path, Shape::Trainer, Role::Trainer, None, pod, scale))
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
                // `podTemplateOverrides` (Trainer v2.1+); `podSpecOverrides` before.
                "podTemplateOverrides" | "podSpecOverrides" => out.pod_template_overrides = Decode::decode(d)?,
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
decode_struct!(PodOverride { "tolerations" => tolerations, "nodeSelector" => node_selector, "serviceAccountName" => service_account_name, "spec" => spec });
decode_struct!(OverrideSpec { "tolerations" => tolerations, "nodeSelector" => node_selector, "serviceAccountName" => service_account_name });
