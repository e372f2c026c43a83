//! Workload extraction: every pod template inside every supported kind, with
//! its field path, its role, and how many pods it runs at full scale.
//!
//! A rule written against [`PodTemplate`]s covers Pods, the built-in
//! controllers, Ray, Kubeflow, KServe, Volcano, JobSet and LeaderWorkerSet
//! alike, and its messages name the exact path
//! (`spec.workerGroupSpecs[1].template.spec.containers[0]`).

use std::collections::BTreeMap;
use std::fmt;

use crate::dec::{Dec, Decode, R};
use crate::decode_struct;
use crate::json::Path;
use crate::pod::{Annotations, Container, EnvVar, ObjectMeta, PodSpec, Resources, StrMap, Toleration};
use crate::request::Str;
use crate::Malformed;

/// The workload kinds aigov understands, whatever their API version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    /// `v1` Pod.
    Pod,
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `v1` ReplicationController.
    ReplicationController,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
    /// `ray.io` RayCluster.
    RayCluster,
    /// `ray.io` RayJob.
    RayJob,
    /// `ray.io` RayService.
    RayService,
    /// `kubeflow.org` PyTorchJob.
    PyTorchJob,
    /// `kubeflow.org` MPIJob.
    MpiJob,
    /// `kubeflow.org` TFJob.
    TfJob,
    /// `kubeflow.org` JAXJob.
    JaxJob,
    /// `kubeflow.org` XGBoostJob.
    XgBoostJob,
    /// `kubeflow.org` PaddleJob.
    PaddleJob,
    /// `trainer.kubeflow.org` TrainJob.
    TrainJob,
    /// `kubeflow.org` Notebook.
    Notebook,
    /// `serving.kserve.io` InferenceService.
    InferenceService,
    /// `batch.volcano.sh` Job.
    VolcanoJob,
    /// `jobset.x-k8s.io` JobSet.
    JobSet,
    /// `leaderworkerset.x-k8s.io` LeaderWorkerSet.
    LeaderWorkerSet,
}

impl WorkloadKind {
    /// Every supported kind.
    pub const ALL: [WorkloadKind; 23] = [
        WorkloadKind::Pod,
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::ReplicaSet,
        WorkloadKind::ReplicationController,
        WorkloadKind::Job,
        WorkloadKind::CronJob,
        WorkloadKind::RayCluster,
        WorkloadKind::RayJob,
        WorkloadKind::RayService,
        WorkloadKind::PyTorchJob,
        WorkloadKind::MpiJob,
        WorkloadKind::TfJob,
        WorkloadKind::JaxJob,
        WorkloadKind::XgBoostJob,
        WorkloadKind::PaddleJob,
        WorkloadKind::TrainJob,
        WorkloadKind::Notebook,
        WorkloadKind::InferenceService,
        WorkloadKind::VolcanoJob,
        WorkloadKind::JobSet,
        WorkloadKind::LeaderWorkerSet,
    ];

    /// The kind for an API group and kind name, if supported.
    pub fn of(group: &str, kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL
            .into_iter()
            .find(|k| k.kind() == kind && k.group() == group)
    }

    /// The API group (`""` for the core group).
    pub fn group(self) -> &'static str {
        use WorkloadKind::*;
        match self {
            Pod | ReplicationController => "",
            Deployment | StatefulSet | DaemonSet | ReplicaSet => "apps",
            Job | CronJob => "batch",
            RayCluster | RayJob | RayService => "ray.io",
            PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob | Notebook => "kubeflow.org",
            TrainJob => "trainer.kubeflow.org",
            InferenceService => "serving.kserve.io",
            VolcanoJob => "batch.volcano.sh",
            JobSet => "jobset.x-k8s.io",
            LeaderWorkerSet => "leaderworkerset.x-k8s.io",
        }
    }

    /// The kind name, as in `kind:`.
    pub fn kind(self) -> &'static str {
        use WorkloadKind::*;
        match self {
            Pod => "Pod",
            Deployment => "Deployment",
            StatefulSet => "StatefulSet",
            DaemonSet => "DaemonSet",
            ReplicaSet => "ReplicaSet",
            ReplicationController => "ReplicationController",
            Job | VolcanoJob => "Job",
            CronJob => "CronJob",
            RayCluster => "RayCluster",
            RayJob => "RayJob",
            RayService => "RayService",
            PyTorchJob => "PyTorchJob",
            MpiJob => "MPIJob",
            TfJob => "TFJob",
            JaxJob => "JAXJob",
            XgBoostJob => "XGBoostJob",
            PaddleJob => "PaddleJob",
            TrainJob => "TrainJob",
            Notebook => "Notebook",
            InferenceService => "InferenceService",
            JobSet => "JobSet",
            LeaderWorkerSet => "LeaderWorkerSet",
        }
    }

    /// The plural resource name, as in webhook rules.
    pub fn resource(self) -> &'static str {
        use WorkloadKind::*;
        match self {
            Pod => "pods",
            Deployment => "deployments",
            StatefulSet => "statefulsets",
            DaemonSet => "daemonsets",
            ReplicaSet => "replicasets",
            ReplicationController => "replicationcontrollers",
            Job | VolcanoJob => "jobs",
            CronJob => "cronjobs",
            RayCluster => "rayclusters",
            RayJob => "rayjobs",
            RayService => "rayservices",
            PyTorchJob => "pytorchjobs",
            MpiJob => "mpijobs",
            TfJob => "tfjobs",
            JaxJob => "jaxjobs",
            XgBoostJob => "xgboostjobs",
            PaddleJob => "paddlejobs",
            TrainJob => "trainjobs",
            Notebook => "notebooks",
            InferenceService => "inferenceservices",
            JobSet => "jobsets",
            LeaderWorkerSet => "leaderworkersets",
        }
    }

    /// Whether objects of this kind own pod templates (everything but Pod).
    pub fn owns_templates(self) -> bool {
        self != WorkloadKind::Pod
    }

    /// Whether this is a Kubeflow training-operator job (`*ReplicaSpecs`).
    pub fn is_kubeflow_job(self) -> bool {
        use WorkloadKind::*;
        matches!(self, PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob)
    }

    /// Whether this is a Ray kind.
    pub fn is_ray(self) -> bool {
        matches!(self, WorkloadKind::RayCluster | WorkloadKind::RayJob | WorkloadKind::RayService)
    }

    /// Batch and training kinds: work that runs to completion (what a queue
    /// admits), as opposed to services and daemons.
    pub fn is_batch(self) -> bool {
        use WorkloadKind::*;
        matches!(
            self,
            Job | CronJob
                | RayJob
                | RayCluster
                | PyTorchJob
                | MpiJob
                | TfJob
                | JaxJob
                | XgBoostJob
                | PaddleJob
                | TrainJob
                | VolcanoJob
                | JobSet
        )
    }

    /// The Kubeflow replica-specs field of the training-operator kinds.
    fn replica_specs_field(self) -> &'static str {
        use WorkloadKind::*;
        match self {
            PyTorchJob => "pytorchReplicaSpecs",
            MpiJob => "mpiReplicaSpecs",
            TfJob => "tfReplicaSpecs",
            JaxJob => "jaxReplicaSpecs",
            XgBoostJob => "xgbReplicaSpecs",
            _ => "paddleReplicaSpecs",
        }
    }
}

/// What a pod template is for inside its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A bare Pod (the object is its own template).
    Pod,
    /// The single template of a Deployment, StatefulSet, DaemonSet,
    /// ReplicaSet, ReplicationController, Job, CronJob or Notebook.
    Template,
    /// A Ray head group.
    RayHead,
    /// A Ray worker group.
    RayWorker,
    /// A RayJob's submitter pod.
    RaySubmitter,
    /// A Kubeflow replica type (`Master`, `Worker`, `PS`, `Launcher`, ...).
    Replica,
    /// A Volcano task.
    Task,
    /// A JobSet replicated job.
    ReplicatedJob,
    /// A LeaderWorkerSet's leader.
    Leader,
    /// A LeaderWorkerSet's workers.
    Worker,
    /// A TrainJob's trainer nodes.
    Trainer,
    /// An InferenceService's predictor.
    Predictor,
    /// An InferenceService's transformer.
    Transformer,
    /// An InferenceService's explainer.
    Explainer,
}

impl Role {
    /// Whether pods of this role are the workers of a distributed job: Ray
    /// worker groups, Kubeflow replicas other than launchers and parameter
    /// servers, Volcano tasks, replicated jobs, LWS pods, trainer nodes.
    ///
    /// A role alone cannot tell a Kubeflow launcher or parameter server
    /// from a worker, so every `Replica` counts here; for the answer per
    /// kind and replica type use [`PodTemplate::is_training_worker`] or
    /// [`Workload::training_workers`].
    pub fn is_worker(self) -> bool {
        matches!(
            self,
            Role::RayWorker | Role::Replica | Role::Task | Role::ReplicatedJob | Role::Leader | Role::Worker | Role::Trainer
        )
    }
}

/// How many pods a template runs at full scale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scale {
    /// Pods at full scale; `None` when nothing bounds it (an autoscaler
    /// without a maximum, a DaemonSet's one pod per node).
    pub pods: Option<u64>,
    /// Where the number comes from, for messages
    /// (`` `spec.replicas: 3` ``, `` `maxReplicas: 8` × `numOfHosts: 2` ``).
    pub why: ScaleWhy,
}

/// Where a template's pod count comes from, as a message shows it. Kept as
/// its parts and written only when shown: every request decodes a scale for
/// each template, and few show one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScaleWhy {
    /// In words: `one head pod`.
    Words(&'static str),
    /// A field's value: `` `spec.replicas: 3` ``.
    Field(Path, i64),
    /// A field left out, and the default that stands for it:
    /// `` `spec.replicas` is not set (1 replica) ``.
    Unset(Path, &'static str),
    /// A field, and what it says about the scale: `` `…maxReplicas` is not
    /// bounded (KubeRay's default) ``.
    Says(Path, &'static str),
    /// A group's pods beside its leader: `` (`…size: 4` - 1 leader) ``.
    BesideLeader(Path, i64),
    /// The product of two: `` `spec.replicas: 2` × `…numOfHosts: 4` ``.
    Times(Box<ScaleWhy>, Box<ScaleWhy>),
    /// The first, a bound below the second:
    /// `` `spec.completions: 2` (below `spec.parallelism: 8`) ``.
    Below(Box<ScaleWhy>, Box<ScaleWhy>),
}

impl fmt::Display for ScaleWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaleWhy::Words(w) => f.write_str(w),
            ScaleWhy::Field(path, n) => write!(f, "`{path}: {n}`"),
            ScaleWhy::Unset(path, absent) => write!(f, "`{path}` is not set ({absent})"),
            ScaleWhy::Says(path, says) => write!(f, "`{path}` {says}"),
            ScaleWhy::BesideLeader(path, size) => write!(f, "(`{path}: {size}` - 1 leader)"),
            ScaleWhy::Times(a, b) => write!(f, "{a} × {b}"),
            ScaleWhy::Below(a, b) => write!(f, "{a}, below {b}"),
        }
    }
}

impl Scale {
    #[inline(never)] // These four: called from every kind's decoder, kept out of line for size.
    fn one(why: &'static str) -> Scale {
        Scale { pods: Some(1), why: ScaleWhy::Words(why) }
    }

    /// `value` of field `path` (with `default` when absent, described by
    /// `absent`), negative values counting as zero.
    #[inline(never)]
    fn field(path: Path, value: Option<i64>, default: i64, absent: &'static str) -> Scale {
        match value {
            Some(n) => Scale { pods: Some(u64::try_from(n).unwrap_or(0)), why: ScaleWhy::Field(path, n) },
            None => Scale { pods: Some(u64::try_from(default).unwrap_or(0)), why: ScaleWhy::Unset(path, absent) },
        }
    }

    /// No bound: `` `path` says ``.
    #[inline(never)]
    fn unbounded(path: Path, says: &'static str) -> Scale {
        Scale { pods: None, why: ScaleWhy::Says(path, says) }
    }

    #[inline(never)]
    fn times(self, other: Scale) -> Scale {
        Scale {
            pods: match (self.pods, other.pods) {
                (Some(a), Some(b)) => Some(a.saturating_mul(b)),
                _ => None,
            },
            why: ScaleWhy::Times(Box::new(self.why), Box::new(other.why)),
        }
    }
}

/// The model an InferenceService component serves (`model`, or a
/// framework-specific field such as `sklearn`): a container with a storage
/// URI.
#[derive(Clone, Debug)]
pub struct ModelSpec<'a> {
    /// The field it came from (`model`, `pytorch`, `huggingface`, ...).
    pub field: &'static str,
    /// `storageUri`.
    pub storage_uri: Option<Str<'a>>,
    /// `modelFormat.name`.
    pub format: Option<Str<'a>>,
    /// `runtime`.
    pub runtime: Option<Str<'a>>,
    /// `storage`: a location named by a key of KServe's `storage-config`
    /// Secret and a path in it, instead of `storageUri`.
    pub storage: Option<ModelStorage<'a>>,
}

/// KServe's `storage` of a model (`ModelStorageSpec`): the controller builds
/// the location as `<type>://<bucket>/<path>` (`<type>://<path>` for a type
/// without buckets), taking `type` and `bucket` from `parameters` or, when
/// `parameters` has no `type`, from the `storage-config` Secret.
#[derive(Clone, Debug, Default)]
pub struct ModelStorage<'a> {
    /// `path`.
    pub path: Option<Str<'a>>,
    /// `parameters.type` (`s3`, `hdfs`, `webhdfs`).
    pub kind: Option<Str<'a>>,
    /// `parameters.bucket`.
    pub bucket: Option<Str<'a>>,
}

/// One of an InferenceService component's `storageUris` (KServe 0.16+).
#[derive(Clone, Debug, Default)]
pub struct StorageUri<'a> {
    /// `uri`.
    pub uri: Option<Str<'a>>,
}

/// The shape a pod template came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A bare Pod: the object is its own template.
    Pod,
    /// A `PodTemplateSpec` (`metadata` + `spec`).
    Template,
    /// A pod spec inline in the object, with `labels` and `annotations`
    /// beside it (an InferenceService component).
    Inline,
    /// TrainJob's `spec.trainer`: one container whose resources are
    /// `resourcesPerNode`; the rest of the pod comes from the referenced
    /// TrainingRuntime.
    Trainer,
}

/// Which container list a container is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerList {
    /// `containers`.
    Containers,
    /// `initContainers`.
    InitContainers,
    /// `ephemeralContainers`.
    EphemeralContainers,
    /// An InferenceService component's model container (`model`, `sklearn`, ...).
    Model,
}

impl ContainerList {
    /// The field name (for `Model`, see [`PodTemplate::container_path`]).
    pub fn field(self) -> &'static str {
        match self {
            ContainerList::Containers => "containers",
            ContainerList::InitContainers => "initContainers",
            ContainerList::EphemeralContainers => "ephemeralContainers",
            ContainerList::Model => "model",
        }
    }
}

/// A container and where it sits in its pod template.
#[derive(Clone, Copy, Debug)]
pub struct ContainerRef<'t, 'a> {
    /// Its list.
    pub list: ContainerList,
    /// Its index in the list.
    pub index: usize,
    /// The container.
    pub container: &'t Container<'a>,
}

impl ContainerRef<'_, '_> {
    /// Whether this is an init container that keeps running beside the
    /// others (`restartPolicy: Always`).
    pub fn is_sidecar(&self) -> bool {
        self.list == ContainerList::InitContainers && self.container.restart_policy.as_deref() == Some("Always")
    }

    /// Whether the container is one of the pod's main containers (regular
    /// containers, and an InferenceService's model container).
    pub fn is_main(&self) -> bool {
        matches!(self.list, ContainerList::Containers | ContainerList::Model)
    }

    /// `` container `trainer` ``, or `` init container `setup` ``.
    pub fn describe(&self) -> String {
        let what = match self.list {
            ContainerList::Containers | ContainerList::Model => "container",
            ContainerList::InitContainers if self.is_sidecar() => "sidecar container",
            ContainerList::InitContainers => "init container",
            ContainerList::EphemeralContainers => "ephemeral container",
        };
        format!("{what} `{}`", self.container.name)
    }
}

/// One pod template inside a workload, with its path.
#[derive(Clone, Debug)]
pub struct PodTemplate<'a> {
    path: Path,
    shape: Shape,
    /// What the template is for.
    pub role: Role,
    /// The name of its group where the kind names them: a Ray `groupName`,
    /// a Kubeflow replica type, a Volcano task, a replicated job.
    pub name: Option<Str<'a>>,
    /// The template's own metadata; `None` for a bare Pod (whose metadata is
    /// the workload's) and for TrainJob's trainer.
    pub metadata: Option<ObjectMeta<'a>>,
    /// The pod spec.
    pub spec: PodSpec<'a>,
    /// The model container of an InferenceService component.
    pub model: Option<(ModelSpec<'a>, Container<'a>)>,
    /// An InferenceService component's `storageUris`, in order.
    pub storage_uris: Vec<StorageUri<'a>>,
    /// Pods it runs at full scale.
    pub scale: Scale,
}

impl<'a> PodTemplate<'a> {
    /// A bare Pod's one template: its spec, at the document's root.
    fn bare_pod(spec: PodSpec<'a>) -> PodTemplate<'a> {
        PodTemplate::new(Path::root(), Shape::Pod, Role::Pod, None, spec, Scale::one("a Pod"))
    }

    fn new(path: Path, shape: Shape, role: Role, metadata: Option<ObjectMeta<'a>>, spec: PodSpec<'a>, scale: Scale) -> PodTemplate<'a> {
        PodTemplate { path, shape, role, name: None, metadata, spec, model: None, storage_uris: Vec::new(), scale }
    }

    fn named(mut self, name: Option<Str<'a>>) -> PodTemplate<'a> {
        self.name = name;
        self
    }

    /// Path of the template (`spec.template`); empty for a bare Pod.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path of the pod spec (`spec.template.spec`, or `spec` for a Pod).
    pub fn spec_path(&self) -> Path {
        match self.shape {
            Shape::Pod => Path::root().key("spec"),
            Shape::Template => self.path.key("spec"),
            Shape::Inline | Shape::Trainer => self.path.clone(),
        }
    }

    /// Path of the template's metadata (`spec.template.metadata`, or
    /// `metadata` for a Pod). An InferenceService component keeps `labels`
    /// and `annotations` on the component itself, so its metadata path is
    /// the component's.
    pub fn metadata_path(&self) -> Path {
        match self.shape {
            Shape::Pod => Path::root().key("metadata"),
            Shape::Template => self.path.key("metadata"),
            Shape::Inline | Shape::Trainer => self.path.clone(),
        }
    }

    /// Path of the template's labels.
    pub fn labels_path(&self) -> Path {
        self.metadata_path().key("labels")
    }

    /// Whether the template is only part of a pod: a TrainJob's trainer,
    /// completed by its TrainingRuntime. Pod-level fields such as
    /// `runtimeClassName` are then set elsewhere.
    pub fn is_partial(&self) -> bool {
        self.shape == Shape::Trainer
    }

    /// Every container: regular, then init, then ephemeral, each in order,
    /// then an InferenceService's model container.
    pub fn containers(&self) -> impl Iterator<Item = ContainerRef<'_, 'a>> {
        let s = &self.spec;
        let lists = [
            (ContainerList::Containers, s.containers.as_slice()),
            (ContainerList::InitContainers, s.init_containers.as_slice()),
            (ContainerList::EphemeralContainers, s.ephemeral_containers.as_slice()),
            (ContainerList::Model, self.model.as_ref().map(|(_, c)| std::slice::from_ref(c)).unwrap_or_default()),
        ];
        lists.into_iter().flat_map(|(list, cs)| {
            cs.iter()
                .enumerate()
                .map(move |(index, container)| ContainerRef { list, index, container })
        })
    }

    /// Path of a container (`spec.containers[1]`, `spec.predictor.model`).
    pub fn container_path(&self, c: &ContainerRef<'_, '_>) -> Path {
        match (self.shape, c.list) {
            (Shape::Trainer, _) => self.path.clone(),
            (_, ContainerList::Model) => {
                let field = self.model.as_ref().map_or("model", |(m, _)| m.field);
                self.spec_path().key(field)
            }
            _ => self.spec_path().key(c.list.field()).index(c.index),
        }
    }

    /// Path of a container's resources (`resourcesPerNode` for a trainer).
    pub fn resources_path(&self, c: &ContainerRef<'_, '_>) -> Path {
        match self.shape {
            Shape::Trainer => self.path.key("resourcesPerNode"),
            _ => self.container_path(c).key("resources"),
        }
    }

    /// The template's labels; `None` for a bare Pod and TrainJob's trainer.
    pub fn labels(&self) -> Option<&StrMap<'a>> {
        self.metadata.as_ref().map(|m| &m.labels)
    }

    /// Whether this template runs processes of a distributed job of `kind`
    /// (see [`Workload::training_workers`]); `launcher_as_worker` is an
    /// MPIJob's `runLauncherAsWorker`.
    pub fn is_training_worker(&self, kind: WorkloadKind, launcher_as_worker: bool) -> bool {
        match self.role {
            Role::RayWorker | Role::Task | Role::ReplicatedJob | Role::Leader | Role::Worker | Role::Trainer => true,
            Role::Replica => {
                let name = self.name.as_deref().unwrap_or("").to_ascii_lowercase();
                match kind {
                    WorkloadKind::PyTorchJob | WorkloadKind::XgBoostJob | WorkloadKind::PaddleJob => matches!(name.as_str(), "master" | "worker"),
                    WorkloadKind::TfJob => matches!(name.as_str(), "chief" | "master" | "worker"),
                    WorkloadKind::JaxJob => name == "worker",
                    WorkloadKind::MpiJob => name == "worker" || (launcher_as_worker && name == "launcher"),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// A short name for messages: `` worker group `gpu` ``,
    /// `` replica type `Worker` ``, or the template's path.
    pub fn describe(&self) -> String {
        let name = self.name.as_deref().filter(|n| !n.is_empty());
        match (self.role, name) {
            (Role::RayWorker, Some(n)) => format!("worker group `{n}`"),
            (Role::RayHead, _) => "the Ray head".into(),
            (Role::Replica, Some(n)) => format!("replica type `{n}`"),
            (Role::Task, Some(n)) => format!("task `{n}`"),
            (Role::ReplicatedJob, Some(n)) => format!("replicated job `{n}`"),
            (Role::Leader, _) => "the leader template".into(),
            (Role::Worker, _) => "the worker template".into(),
            (Role::Predictor, _) => "the predictor".into(),
            (Role::Transformer, _) => "the transformer".into(),
            (Role::Explainer, _) => "the explainer".into(),
            (Role::Trainer, _) => "the trainer".into(),
            (Role::Pod, _) => "the pod".into(),
            _ => format!("`{}`", self.path),
        }
    }
}

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
    others: Vec<PodTemplate<'a>>,
}

impl<'a> Workload<'a> {
    fn empty(kind: WorkloadKind, metadata: ObjectMeta<'a>) -> Workload<'a> {
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
        let ray = self.ray.iter().flat_map(|r| {
            r.head
                .iter()
                .chain(r.worker_groups.iter().map(|g| &g.template))
        });
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
    /// - Every other kind: none, it is not a distributed job.
    pub fn training_workers(&self) -> impl Iterator<Item = &PodTemplate<'a>> {
        let kind = self.kind;
        let launcher = self.kubeflow.as_ref().and_then(|k| k.run_launcher_as_worker).unwrap_or(false);
        self.templates().filter(move |t| t.is_training_worker(kind, launcher))
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
            Err(e) => Err(crate::request::explain(json, &e, &format!("the {}", kind.kind()))),
        }
    }
}

/// Decodes a workload of kind `kind` at the decoder's cursor: the request
/// decoder calls it to decode the object in the same pass as the header.
pub fn decode_workload<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    {
        use WorkloadKind::*;
        let root = Path::root();
        let spec_path = root.key("spec");
        Ok(match kind {
            Pod => {
                let o = Obj::<PodSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.others.push(PodTemplate::bare_pod(o.spec));
                w
            }
            Deployment | StatefulSet | ReplicaSet | ReplicationController => {
                let o = Obj::<Replicated<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let scale = Scale::field(spec_path.key("replicas"), o.spec.replicas, 1, "1 replica");
                w.others.extend(o.spec.template.into_template(spec_path.key("template"), Role::Template, scale));
                w
            }
            DaemonSet => {
                let o = Obj::<Replicated<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let scale = Scale { pods: None, why: ScaleWhy::Words("a DaemonSet runs one pod on every matching node") };
                w.others.extend(o.spec.template.into_template(spec_path.key("template"), Role::Template, scale));
                w
            }
            Job => {
                let o = Obj::<JobSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.suspend = o.spec.suspend;
                w.others.extend(o.spec.into_template(&spec_path));
                w
            }
            CronJob => {
                let o = Obj::<CronJobSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let jt = spec_path.key("jobTemplate");
                w.suspend = o.spec.suspend;
                w.job_templates.push(JobTemplate { path: jt.clone(), metadata: o.spec.job_template.metadata.unwrap_or_default() });
                w.others.extend(o.spec.job_template.spec.into_template(&jt.key("spec")));
                w
            }
            RayCluster => {
                let o = Obj::<RayClusterSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.suspend = o.spec.suspend;
                w.ray = Some(o.spec.into_view(spec_path));
                w
            }
            RayJob => {
                let o = Obj::<RayJobSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.suspend = o.spec.suspend;
                w.ray = o.spec.ray_cluster_spec.map(|s| s.into_view(spec_path.key("rayClusterSpec")));
                if let Some(t) = o.spec.submitter_pod_template {
                    w.others.extend(t.into_template(spec_path.key("submitterPodTemplate"), Role::RaySubmitter, Scale::one("one submitter pod")));
                }
                w
            }
            RayService => {
                let o = Obj::<RayServiceSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.ray = o.spec.ray_cluster_config.map(|s| s.into_view(spec_path.key("rayClusterConfig")));
                w
            }
            PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob => {
                let o = Obj::<KubeflowSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let field = kind.replica_specs_field();
                let elastic = o.spec.elastic_policy.unwrap_or_default();
                for (role, spec) in o.spec.replica_specs {
                    let rpath = spec_path.keys(&[field, &role]);
                    let mut scale = Scale::field(rpath.key("replicas"), spec.replicas, 1, "1 replica");
                    if &*role == "Worker"
                        && let Some(max) = elastic.max_replicas
                    {
                        scale = Scale::field(spec_path.keys(&["elasticPolicy", "maxReplicas"]), Some(max), 1, "");
                    }
                    w.others.extend(spec.template.into_template(rpath.key("template"), Role::Replica, scale).map(|t| t.named(Some(role.clone()))));
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
                w.train_job = Some(self::TrainJob {
                    runtime: o.spec.runtime_ref.as_ref().and_then(|r| r.name.clone()),
                    num_nodes: o.spec.trainer.as_ref().and_then(|t| t.num_nodes),
                    num_proc_per_node: o.spec.trainer.as_ref().and_then(|t| t.num_proc_per_node.clone()).map(|n| n.0),
                    suspend: o.spec.suspend,
                    model_storage_uri: o.spec.initializer.as_ref().and_then(|i| i.model.as_ref()).and_then(|m| m.storage_uri.clone()),
                    model_env: o.spec.initializer.as_mut().and_then(|i| i.model.as_mut()).map(|m| std::mem::take(&mut m.env)).unwrap_or_default(),
                    dataset_storage_uri: o.spec.initializer.as_ref().and_then(|i| i.dataset.as_ref()).and_then(|m| m.storage_uri.clone()),
                });
                w.others.extend(o.spec.into_template(&spec_path));
                w
            }
            Notebook => {
                let o = Obj::<Replicated<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.others.extend(o.spec.template.into_template(spec_path.key("template"), Role::Template, Scale::one("a Notebook runs one pod")));
                w
            }
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
            VolcanoJob => {
                let o = Obj::<VolcanoJobSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let mut replicas = Vec::new();
                for (i, task) in o.spec.tasks.into_iter().enumerate() {
                    let tpath = spec_path.key("tasks").index(i);
                    replicas.push(task.replicas);
                    let scale = Scale::field(tpath.key("replicas"), task.replicas, 1, "1 replica");
                    w.others.extend(task.template.into_template(tpath.key("template"), Role::Task, scale).map(|t| t.named(task.name)));
                }
                w.volcano = Some(self::VolcanoJob {
                    min_available: o.spec.min_available,
                    queue: o.spec.queue,
                    scheduler_name: o.spec.scheduler_name,
                    task_replicas: replicas,
                });
                w
            }
            JobSet => {
                let o = Obj::<JobSetSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                w.suspend = o.spec.suspend;
                for (i, job) in o.spec.replicated_jobs.into_iter().enumerate() {
                    let jpath = spec_path.key("replicatedJobs").index(i);
                    let jt = jpath.key("template");
                    w.job_templates.push(JobTemplate { path: jt.clone(), metadata: job.template.metadata.unwrap_or_default() });
                    let jobs = Scale::field(jpath.key("replicas"), job.replicas, 1, "1 Job");
                    if let Some(t) = job.template.spec.into_template(&jt.key("spec")) {
                        let scale = jobs.times(t.scale.clone());
                        let mut t = t.named(job.name);
                        t.role = Role::ReplicatedJob;
                        t.scale = scale;
                        w.others.push(t);
                    }
                }
                w
            }
            LeaderWorkerSet => {
                let o = Obj::<LwsSpec<'a>>::decode(d)?;
                let mut w = Workload::empty(kind, o.metadata);
                let lwt = o.spec.leader_worker_template;
                let lpath = spec_path.key("leaderWorkerTemplate");
                let groups = Scale::field(spec_path.key("replicas"), o.spec.replicas, 1, "1 group");
                let size = lwt.size.unwrap_or(1);
                let size_path = lpath.key("size");
                let has_leader = lwt.leader_template.is_some();
                if let Some(t) = lwt.leader_template {
                    w.others.extend(t.into_template(lpath.key("leaderTemplate"), Role::Leader, groups.clone()));
                }
                // Without a leader template, the worker template is used for
                // every pod of a group, the leader's included.
                let per_group = if has_leader {
                    Scale { pods: Some(u64::try_from(size.saturating_sub(1)).unwrap_or(0)), why: ScaleWhy::BesideLeader(size_path, size) }
                } else {
                    Scale::field(size_path, lwt.size, 1, "1 pod per group")
                };
                w.others.extend(lwt.worker_template.into_template(lpath.key("workerTemplate"), Role::Worker, groups.times(per_group)));
                w
            }
        })
    }
}

// ---- The wire shapes of each kind (private; rules see the views above). ----
struct Obj<'a, S> {
    metadata: ObjectMeta<'a>,
    spec: S,
}

#[derive(Default)]
struct PodTemplateSpec<'a> {
    metadata: Option<ObjectMeta<'a>>,
    spec: Option<PodSpec<'a>>,
}

impl<'a> PodTemplateSpec<'a> {
    /// The template, or nothing when neither metadata nor spec is present.
    #[inline(never)] // Inlined at its call sites, it made `decode_workload` 15 KB larger (BENCHMARKS.md).
    fn into_template(self, path: Path, role: Role, scale: Scale) -> Option<PodTemplate<'a>> {
        if self.metadata.is_none() && self.spec.is_none() {
            return None;
        }
        Some(PodTemplate::new(path, Shape::Template, role, Some(self.metadata.unwrap_or_default()), self.spec.unwrap_or_default(), scale))
    }
}

/// Deployment, StatefulSet, ReplicaSet, ReplicationController, DaemonSet,
/// Notebook: a template and a replica count.
#[derive(Default)]
struct Replicated<'a> {
    replicas: Option<i64>,
    template: PodTemplateSpec<'a>,
}

#[derive(Default)]
struct JobSpec<'a> {
    parallelism: Option<i64>,
    completions: Option<i64>,
    suspend: Option<bool>,
    template: PodTemplateSpec<'a>,
}

impl<'a> JobSpec<'a> {
    /// The template, with the pods that run at once: `parallelism`
    /// (default 1), but never more than `completions` when it is set (the
    /// Job reference: "the actual number of pods running in parallel will
    /// not exceed the number of remaining completions").
    #[inline(never)] // As `PodTemplateSpec::into_template`.
    fn into_template(self, spec: &Path) -> Option<PodTemplate<'a>> {
        let parallel = Scale::field(spec.key("parallelism"), self.parallelism, 1, "1 pod at a time");
        let scale = match self.completions {
            Some(c) if parallel.pods.is_some_and(|p| u64::try_from(c).unwrap_or(0) < p) => Scale {
                pods: Some(u64::try_from(c).unwrap_or(0)),
                why: ScaleWhy::Below(Box::new(ScaleWhy::Field(spec.key("completions"), c)), Box::new(parallel.why)),
            },
            _ => parallel,
        };
        self.template.into_template(spec.key("template"), Role::Template, scale)
    }
}

#[derive(Default)]
struct CronJobSpec<'a> {
    suspend: Option<bool>,
    job_template: JobTemplateSpec<'a>,
}

#[derive(Default)]
struct JobTemplateSpec<'a> {
    metadata: Option<ObjectMeta<'a>>,
    spec: JobSpec<'a>,
}

#[derive(Default)]
struct RayClusterSpec<'a> {
    suspend: Option<bool>,
    enable_in_tree_autoscaling: Option<bool>,
    head_group_spec: Option<HasTemplate<'a>>,
    worker_group_specs: Vec<WorkerGroupSpec<'a>>,
}

#[derive(Default)]
struct HasTemplate<'a> {
    template: PodTemplateSpec<'a>,
}

#[derive(Default)]
struct WorkerGroupSpec<'a> {
    group_name: Option<Str<'a>>,
    replicas: Option<i64>,
    min_replicas: Option<i64>,
    max_replicas: Option<i64>,
    num_of_hosts: Option<i64>,
    suspend: Option<bool>,
    template: PodTemplateSpec<'a>,
}

/// KubeRay's default `maxReplicas` (the largest int32), which the API server
/// fills in when the field is absent: no limit.
pub const KUBERAY_UNBOUNDED: i64 = 2_147_483_647;

impl<'a> RayClusterSpec<'a> {
    fn into_view(self, path: Path) -> RayCluster<'a> {
        let head = self
            .head_group_spec
            .and_then(|h| h.template.into_template(path.keys(&["headGroupSpec", "template"]), Role::RayHead, Scale::one("one head pod")));
        let worker_groups = self
            .worker_group_specs
            .into_iter()
            .enumerate()
            .map(|(i, g)| {
                let gpath = path.key("workerGroupSpecs").index(i);
                let tpath = gpath.key("template");
                let max = match g.max_replicas {
                    None | Some(KUBERAY_UNBOUNDED) => Scale::unbounded(gpath.key("maxReplicas"), "is not bounded (KubeRay's default)"),
                    Some(n) => Scale::field(gpath.key("maxReplicas"), Some(n), 0, ""),
                };
                let scale = match g.num_of_hosts {
                    None | Some(1) => max,
                    Some(h) => max.times(Scale::field(gpath.key("numOfHosts"), Some(h), 1, "")),
                };
                let template = g
                    .template
                    .into_template(tpath.clone(), Role::RayWorker, scale.clone())
                    .unwrap_or_else(|| PodTemplate::new(tpath, Shape::Template, Role::RayWorker, Some(ObjectMeta::default()), PodSpec::default(), scale))
                    .named(g.group_name.clone());
                WorkerGroup {
                    name: g.group_name,
                    replicas: g.replicas,
                    min_replicas: g.min_replicas,
                    max_replicas: g.max_replicas,
                    num_of_hosts: g.num_of_hosts,
                    suspend: g.suspend,
                    template,
                    path: gpath,
                }
            })
            .collect();
        RayCluster { path, autoscaling: self.enable_in_tree_autoscaling, head, worker_groups }
    }
}

#[derive(Default)]
struct RayJobSpec<'a> {
    suspend: Option<bool>,
    ray_cluster_spec: Option<RayClusterSpec<'a>>,
    submitter_pod_template: Option<PodTemplateSpec<'a>>,
}

#[derive(Default)]
struct RayServiceSpec<'a> {
    ray_cluster_config: Option<RayClusterSpec<'a>>,
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

#[derive(Default)]
struct IsvcSpec<'a> {
    predictor: Option<IsvcComponent<'a>>,
    transformer: Option<IsvcComponent<'a>>,
    explainer: Option<IsvcComponent<'a>>,
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
    model: Option<IsvcModel<'a>>,
    sklearn: Option<IsvcModel<'a>>,
    xgboost: Option<IsvcModel<'a>>,
    tensorflow: Option<IsvcModel<'a>>,
    pytorch: Option<IsvcModel<'a>>,
    triton: Option<IsvcModel<'a>>,
    onnx: Option<IsvcModel<'a>>,
    pmml: Option<IsvcModel<'a>>,
    lightgbm: Option<IsvcModel<'a>>,
    paddle: Option<IsvcModel<'a>>,
    huggingface: Option<IsvcModel<'a>>,
    /// The explainer's ART server.
    art: Option<IsvcModel<'a>>,
    storage_uris: Vec<StorageUri<'a>>,
}

impl<'a> IsvcComponent<'a> {
    fn into_template(self, path: Path, role: Role) -> PodTemplate<'a> {
        let min = self.min_replicas;
        let scale = match self.max_replicas {
            Some(n) if n > 0 => Scale::field(path.key("maxReplicas"), Some(n), 1, ""),
            _ => Scale::unbounded(path.key("maxReplicas"), "is not set, so the autoscaler has no upper bound"),
        };
        let model = [
            ("model", self.model),
            ("sklearn", self.sklearn),
            ("xgboost", self.xgboost),
            ("tensorflow", self.tensorflow),
            ("pytorch", self.pytorch),
            ("triton", self.triton),
            ("onnx", self.onnx),
            ("pmml", self.pmml),
            ("lightgbm", self.lightgbm),
            ("paddle", self.paddle),
            ("huggingface", self.huggingface),
            ("art", self.art),
        ]
        .into_iter()
        .find_map(|(field, m)| m.map(|m| (field, m)))
        .map(|(field, m)| {
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

#[derive(Default)]
struct VolcanoJobSpec<'a> {
    min_available: Option<i64>,
    queue: Option<Str<'a>>,
    scheduler_name: Option<Str<'a>>,
    tasks: Vec<VolcanoTask<'a>>,
}

#[derive(Default)]
struct VolcanoTask<'a> {
    name: Option<Str<'a>>,
    replicas: Option<i64>,
    template: PodTemplateSpec<'a>,
}

#[derive(Default)]
struct JobSetSpec<'a> {
    suspend: Option<bool>,
    replicated_jobs: Vec<ReplicatedJob<'a>>,
}

#[derive(Default)]
struct ReplicatedJob<'a> {
    name: Option<Str<'a>>,
    replicas: Option<i64>,
    template: JobTemplateSpec<'a>,
}

#[derive(Default)]
struct LwsSpec<'a> {
    replicas: Option<i64>,
    leader_worker_template: LeaderWorkerTemplate<'a>,
}

#[derive(Default)]
struct LeaderWorkerTemplate<'a> {
    size: Option<i64>,
    leader_template: Option<PodTemplateSpec<'a>>,
    worker_template: PodTemplateSpec<'a>,
}

// ---- Decoding the wire shapes (see `crate::dec`). ----

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

decode_struct!(PodTemplateSpec { "metadata" => metadata, "spec" => spec });
decode_struct!(Replicated { "replicas" => replicas, "template" => template });
decode_struct!(JobSpec { "parallelism" => parallelism, "completions" => completions, "suspend" => suspend, "template" => template });
decode_struct!(CronJobSpec { "suspend" => suspend, "jobTemplate" => job_template });
decode_struct!(JobTemplateSpec { "metadata" => metadata, "spec" => spec });
decode_struct!(RayClusterSpec {
    "suspend" => suspend,
    "enableInTreeAutoscaling" => enable_in_tree_autoscaling,
    "headGroupSpec" => head_group_spec,
    "workerGroupSpecs" => worker_group_specs,
});
decode_struct!(HasTemplate { "template" => template });
decode_struct!(WorkerGroupSpec {
    "groupName" => group_name,
    "replicas" => replicas,
    "minReplicas" => min_replicas,
    "maxReplicas" => max_replicas,
    "numOfHosts" => num_of_hosts,
    "suspend" => suspend,
    "template" => template,
});
decode_struct!(RayJobSpec { "suspend" => suspend, "rayClusterSpec" => ray_cluster_spec, "submitterPodTemplate" => submitter_pod_template });
decode_struct!(RayServiceSpec { "rayClusterConfig" => ray_cluster_config });
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
decode_struct!(IsvcSpec { "predictor" => predictor, "transformer" => transformer, "explainer" => explainer });
decode_struct!(ModelFormat { "name" => name });
decode_struct!(IsvcStorage { "path" => path, "parameters" => parameters });
decode_struct!(StorageParameters { "type" => kind, "bucket" => bucket });
decode_struct!(StorageUri { "uri" => uri });
decode_struct!(VolcanoJobSpec { "minAvailable" => min_available, "queue" => queue, "schedulerName" => scheduler_name, "tasks" => tasks });
decode_struct!(VolcanoTask { "name" => name, "replicas" => replicas, "template" => template });
decode_struct!(JobSetSpec { "suspend" => suspend, "replicatedJobs" => replicated_jobs });
decode_struct!(ReplicatedJob { "name" => name, "replicas" => replicas, "template" => template });
decode_struct!(LwsSpec { "replicas" => replicas, "leaderWorkerTemplate" => leader_worker_template });
decode_struct!(LeaderWorkerTemplate { "size" => size, "leaderTemplate" => leader_template, "workerTemplate" => worker_template });

impl<'a> Decode<'a> for KubeflowSpec<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = KubeflowSpec::default();
        d.object(|d, key| {
            match &*key {
                "pytorchReplicaSpecs" | "mpiReplicaSpecs" | "tfReplicaSpecs" | "jaxReplicaSpecs" | "xgbReplicaSpecs"
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
                "model" => out.model = Decode::decode(d)?,
                "sklearn" => out.sklearn = Decode::decode(d)?,
                "xgboost" => out.xgboost = Decode::decode(d)?,
                "tensorflow" => out.tensorflow = Decode::decode(d)?,
                "pytorch" => out.pytorch = Decode::decode(d)?,
                "triton" => out.triton = Decode::decode(d)?,
                "onnx" => out.onnx = Decode::decode(d)?,
                "pmml" => out.pmml = Decode::decode(d)?,
                "lightgbm" => out.lightgbm = Decode::decode(d)?,
                "paddle" => out.paddle = Decode::decode(d)?,
                "huggingface" => out.huggingface = Decode::decode(d)?,
                "art" => out.art = Decode::decode(d)?,
                "storageUris" => out.storage_uris = Decode::decode(d)?,
                // The component is a pod spec too (containers, tolerations...).
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
