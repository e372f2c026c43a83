//! Workload extraction: every pod template inside every supported kind, with
//! its field path, its role, and how many pods it runs at full scale.
//!
//! A rule written against [`PodTemplate`]s covers Pods, the built-in
//! controllers, Ray, Kubeflow, KServe, Volcano, JobSet and LeaderWorkerSet
//! alike, and its messages name the exact path
//! (`spec.workerGroupSpecs[1].template.spec.containers[0]`).

//!
//! One file per family of kinds, each decoding its kinds' wire shapes into
//! the views below: [`core`] (Pods, the built-in controllers, the
//! Notebook), [`ray`], [`kubeflow`] (the training operator's jobs and
//! TrainJob), [`serving`] (KServe) and [`batch`] (Volcano, JobSet,
//! LeaderWorkerSet). Adding a kind touches its family's file, and
//! [`WorkloadKind`].

mod batch;
mod core;
mod kubeflow;
mod ray;
mod serving;
mod template;

use crate::base::error::Malformed;
use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{EnvVar, ObjectMeta, PodSpec};

pub use ray::KUBERAY_UNBOUNDED;
use template::Shape;
pub use template::{
    Concurrency, ContainerList, ContainerRef, CronJobs, JobsBound, ModelSpec, ModelStorage, PodTemplate, Role, Scale, ScaleWhy,
    ShmShortfall, StorageUri,
};

/// A Ray worker group (`workerGroupSpecs[i]`).
#[derive(Clone, Debug)]
pub struct WorkerGroup<'a> {
    /// Path of the group (`spec.workerGroupSpecs[1]`).
    pub path: Path,
    /// `groupName`.
    pub name: Option<Str<'a>>,
    /// `replicas`.
    pub replicas: Option<i64>,
    /// `minReplicas`.
    pub min_replicas: Option<i64>,
    /// `maxReplicas`.
    pub max_replicas: Option<i64>,
    /// `numOfHosts`: pods per replica (multi-host groups); 1 when absent.
    pub num_of_hosts: Option<i64>,
    /// `suspend`.
    pub suspend: Option<bool>,
    /// The worker pod template.
    pub template: PodTemplate<'a>,
}

/// A Ray cluster spec: a RayCluster's `spec`, a RayJob's
/// `spec.rayClusterSpec`, or a RayService's `spec.rayClusterConfig`.
#[derive(Clone, Debug)]
pub struct RayCluster<'a> {
    /// Path of the cluster spec.
    pub path: Path,
    /// `enableInTreeAutoscaling`.
    pub autoscaling: Option<bool>,
    /// The head pod template.
    pub head: Option<PodTemplate<'a>>,
    /// The worker groups, in order.
    pub worker_groups: Vec<WorkerGroup<'a>>,
}

/// A job template inside a CronJob or JobSet: the metadata of the Jobs the
/// controller creates from it.
#[derive(Clone, Debug)]
pub struct JobTemplate<'a> {
    /// Path of the job template (`spec.jobTemplate`,
    /// `spec.replicatedJobs[0].template`).
    pub path: Path,
    /// Its metadata (labels the Jobs get).
    pub metadata: ObjectMeta<'a>,
}

/// Kubeflow training-operator settings beside the replica specs.
#[derive(Clone, Debug, Default)]
pub struct KubeflowJob<'a> {
    /// PyTorchJob `nprocPerNode` (or the elastic policy's `nProcPerNode`),
    /// as written: a number, `auto`, `cpu` or `gpu`.
    pub nproc_per_node: Option<Str<'a>>,
    /// Path of `nprocPerNode` as found.
    pub nproc_path: Option<Path>,
    /// Elastic PyTorchJob `elasticPolicy.minReplicas`.
    pub elastic_min: Option<i64>,
    /// Elastic PyTorchJob `elasticPolicy.maxReplicas`.
    pub elastic_max: Option<i64>,
    /// `runPolicy.suspend`.
    pub suspend: Option<bool>,
    /// `runPolicy.schedulingPolicy.queue` (Volcano queue).
    pub queue: Option<Str<'a>>,
    /// `runPolicy.schedulingPolicy.minAvailable`.
    pub min_available: Option<i64>,
    /// MPIJob `slotsPerWorker`: MPI ranks (slots) per worker pod.
    pub slots_per_worker: Option<i64>,
    /// MPIJob `runLauncherAsWorker`: the launcher pod runs a rank too.
    pub run_launcher_as_worker: Option<bool>,
}

/// A Volcano Job's gang-scheduling settings.
#[derive(Clone, Debug, Default)]
pub struct VolcanoJob<'a> {
    /// `spec.minAvailable`.
    pub min_available: Option<i64>,
    /// `spec.queue`.
    pub queue: Option<Str<'a>>,
    /// `spec.schedulerName`.
    pub scheduler_name: Option<Str<'a>>,
    /// Each task's `replicas`, in order (`None` when absent).
    pub task_replicas: Vec<Option<i64>>,
}

/// A TrainJob's trainer settings.
#[derive(Clone, Debug, Default)]
pub struct TrainJob<'a> {
    /// `spec.runtimeRef.name`.
    pub runtime: Option<Str<'a>>,
    /// `spec.trainer.numNodes`.
    pub num_nodes: Option<i64>,
    /// `spec.trainer.numProcPerNode`, as written.
    pub num_proc_per_node: Option<Str<'a>>,
    /// `spec.suspend`.
    pub suspend: Option<bool>,
    /// `spec.initializer.model.storageUri`: the pre-trained model the model
    /// initializer downloads (`hf://...`, `s3://...`).
    pub model_storage_uri: Option<Str<'a>>,
    /// `spec.initializer.model.env`: set in the model initializer's
    /// container after `STORAGE_URI` from `storageUri`, so a `STORAGE_URI`
    /// here replaces it.
    pub model_env: Vec<EnvVar<'a>>,
    /// `spec.initializer.dataset.storageUri`: the dataset the dataset
    /// initializer downloads.
    pub dataset_storage_uri: Option<Str<'a>>,
}

/// The replicated job of a training runtime whose pods the Trainer fills
/// from a TrainJob's `spec.trainer` (`constants.Node` in `kubeflow/trainer`:
/// "the name of the Job and container for the trainer node"; every
/// upstream runtime names its trainer job so).
pub const TRAINER_JOB: &str = "node";

/// What a rule says of a TrainJob's trainer when none of its overrides
/// writes a field (`what`: `sets a service account`): `` neither
/// `spec.podTemplateOverrides` nor `spec.runtimePatches` sets a service
/// account for replicated job `node` ``.
pub fn trainer_overrides_lack(what: &str) -> String {
    format!("neither `spec.podTemplateOverrides` nor `spec.runtimePatches` {what} for replicated job `{TRAINER_JOB}`")
}

/// A workload object: its metadata and every pod template in it.
#[derive(Clone, Debug)]
pub struct Workload<'a> {
    /// The kind.
    pub kind: WorkloadKind,
    /// The object's metadata.
    pub metadata: ObjectMeta<'a>,
    /// The Ray cluster spec, for RayCluster, RayJob and RayService.
    pub ray: Option<RayCluster<'a>>,
    /// Job templates (CronJob, JobSet), in order.
    pub job_templates: Vec<JobTemplate<'a>>,
    /// Kubeflow training-operator settings.
    pub kubeflow: Option<KubeflowJob<'a>>,
    /// Volcano Job settings.
    pub volcano: Option<VolcanoJob<'a>>,
    /// TrainJob settings.
    pub train_job: Option<TrainJob<'a>>,
    /// `spec.suspend` of a Job, CronJob, JobSet or RayJob (Kueue holds
    /// suspended workloads until it admits them).
    pub suspend: Option<bool>,
    /// Templates outside the Ray cluster spec (all templates of other kinds).
    pub(super) others: Vec<PodTemplate<'a>>,
}

impl<'a> Workload<'a> {
    pub(super) fn empty(kind: WorkloadKind, metadata: ObjectMeta<'a>) -> Workload<'a> {
        Workload {
            kind,
            metadata,
            ray: None,
            job_templates: Vec::new(),
            kubeflow: None,
            volcano: None,
            train_job: None,
            suspend: None,
            others: Vec::new(),
        }
    }

    /// Every pod template, in document order (Ray head and workers first,
    /// then e.g. a RayJob's submitter template).
    pub fn templates(&self) -> impl Iterator<Item = &PodTemplate<'a>> {
        let ray = self.ray.iter().flat_map(|r| r.head.iter().chain(r.worker_groups.iter().map(|g| &g.template)));
        ray.chain(self.others.iter())
    }

    /// The templates whose pods run the processes of a distributed job,
    /// in document order: what "every worker" means for that kind.
    ///
    /// - Kubeflow jobs: the replica types that join the training
    ///   collective: PyTorchJob `Master` and `Worker`; TFJob `Chief`,
    ///   `Master` and `Worker` (not `PS` or `Evaluator`); JAXJob `Worker`;
    ///   XGBoostJob and PaddleJob `Master` and `Worker`; MPIJob `Worker`,
    ///   and `Launcher` only with `runLauncherAsWorker: true` (otherwise it
    ///   only runs `mpirun`). Replica types are matched ignoring case.
    /// - Ray: the worker groups (not the head, nor a RayJob's submitter).
    /// - Volcano Job tasks, JobSet replicated jobs, both LeaderWorkerSet
    ///   templates, a TrainJob's trainer: all of them (these kinds do not
    ///   say which template runs what).
    /// - Every other kind: none, it is not a distributed job. An
    ///   InferenceService's multi-node predictor serves, it does not train:
    ///   its head and workers hold the GPUs KServe spreads over them, not
    ///   equal shares of a training collective.
    pub fn training_workers(&self) -> impl Iterator<Item = &PodTemplate<'a>> {
        let kind = self.kind;
        let launcher = self.kubeflow.as_ref().and_then(|k| k.run_launcher_as_worker).unwrap_or(false);
        self.templates().filter(move |t| t.is_training_worker(kind, launcher))
    }

    /// A TrainJob's trainer (`spec.trainer`), if it has one.
    pub fn trainer(&self) -> Option<&PodTemplate<'a>> {
        self.templates().find(|t| t.role == Role::Trainer)
    }

    /// A TrainJob's overrides and runtime patches that shape the trainer's
    /// pods (those of replicated job [`TRAINER_JOB`]), in order: with the
    /// training runtime, they make the pods [`Workload::trainer`] runs in.
    pub fn trainer_overrides(&self) -> impl Iterator<Item = &PodTemplate<'a>> {
        self.templates().filter(|t| t.shapes(TRAINER_JOB))
    }

    /// The template whose containers say whether the pods `t` describes
    /// request GPUs: `t` itself, but for a TrainJob's override or runtime
    /// patch, which writes no resources, the trainer when the override
    /// shapes the trainer's pods and `spec.trainer.resourcesPerNode` is set
    /// (the Trainer gives those to the trainer's `node` container); `None`
    /// for any other override: its pods' resources are the training
    /// runtime's, which the request does not carry.
    pub fn gpu_holder<'w>(&'w self, t: &'w PodTemplate<'a>) -> Option<&'w PodTemplate<'a>> {
        if t.role != Role::Override {
            return Some(t);
        }
        let trainer = self.trainer().filter(|_| t.shapes(TRAINER_JOB))?;
        let sized = trainer.spec.containers.iter().any(|c| !c.resources.limits.is_empty() || !c.resources.requests.is_empty());
        sized.then_some(trainer)
    }

    /// A short description for messages: `` RayCluster `train` ``.
    pub fn describe(&self) -> String {
        format!("{} `{}`", self.kind.kind(), self.metadata.display_name())
    }

    /// Decodes an object of a known kind from JSON text, for example a Pod
    /// returned by a cluster lookup.
    pub fn parse(kind: WorkloadKind, json: &'a str) -> Result<Workload<'a>, Malformed> {
        let mut d = Dec::new(json);
        match decode_workload(kind, &mut d).and_then(|w| d.end().map(|()| w)) {
            Ok(w) => Ok(w),
            Err(e) => Err(crate::decode::explain::explain(json, &e, &format!("the {}", kind.kind()))),
        }
    }
}

/// Decodes a workload of kind `kind` at the decoder's cursor: the request
/// decoder calls it to decode the object in the same pass as the header.
///
/// Each family's decoder is kept out of line, and within a family each
/// kind's: inlined here, every kind's object shared one 77 KiB stack frame,
/// and a fresh instance (policy-server's way) pays a page fault for each
/// page of shadow stack a request reaches; a Pod reached eleven
/// (`aigov build sizes --split` counts them).
pub fn decode_workload<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    use WorkloadKind::*;
    match kind {
        Pod | Deployment | StatefulSet | ReplicaSet | ReplicationController | DaemonSet | Job | CronJob | Notebook => core::decode(kind, d),
        RayCluster | RayJob | RayService => ray::decode(kind, d),
        PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob | TrainJob => kubeflow::decode(kind, d),
        InferenceService => serving::decode(kind, d),
        VolcanoJob | JobSet | LeaderWorkerSet => batch::decode(kind, d),
    }
}

// ---- The wire shapes every family shares (private; rules see the views above). ----

pub(super) struct Obj<'a, S> {
    pub(super) metadata: ObjectMeta<'a>,
    pub(super) spec: S,
}

#[derive(Default)]
pub(super) struct PodTemplateSpec<'a> {
    pub(super) metadata: Option<ObjectMeta<'a>>,
    pub(super) spec: Option<PodSpec<'a>>,
}

impl<'a> PodTemplateSpec<'a> {
    /// The template, or nothing when neither metadata nor spec is present.
    #[inline(never)] // Inlined at its call sites, it made `decode_workload` 15 KB larger (BENCHMARKS.md).
    pub(super) fn into_template(self, path: Path, role: Role, scale: Scale) -> Option<PodTemplate<'a>> {
        if self.metadata.is_none() && self.spec.is_none() {
            return None;
        }
        Some(PodTemplate::new(path, Shape::Template, role, Some(self.metadata.unwrap_or_default()), self.spec.unwrap_or_default(), scale))
    }
}

decode_struct!(PodTemplateSpec { "metadata" => metadata, "spec" => spec });

impl<'a, S: Decode<'a> + Default> Decode<'a> for Obj<'a, S> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut metadata = ObjectMeta::default();
        let mut spec = S::default();
        d.object(|d, key| {
            match &*key {
                "metadata" => metadata = Decode::decode(d)?,
                "spec" => spec = Option::<S>::decode(d)?.unwrap_or_default(),
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(Obj { metadata, spec })
    }
}
