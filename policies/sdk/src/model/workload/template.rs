//! The pod templates of a workload, as rules see them: where each sits
//! (its path and shape), what it is for (its role), its pod spec and model
//! container, and how many pods it runs at full scale.

use std::fmt;

use crate::base::error::Malformed;
use crate::decode::dec::Str;
use crate::decode::path::{Path, Seg};
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Container, HostPort, ObjectMeta, PodSpec, StrMap};

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
    /// A TrainJob's override of the pods of replicated jobs of its training
    /// runtime: an entry of `podTemplateOverrides` (Trainer v2.1;
    /// `podSpecOverrides` in v2.0) or a replicated job of a runtime patch
    /// (`runtimePatches`, v2.2+). Only part of a pod: what it leaves out
    /// is the runtime's. [`PodTemplate::jobs`] names the replicated jobs.
    Override,
    /// An InferenceService's predictor (with a `workerSpec`, the head of
    /// its multi-node group).
    Predictor,
    /// An InferenceService predictor's workers (`workerSpec`, multi-node
    /// inference): the pods of the worker Deployment KServe builds in
    /// Standard mode.
    PredictorWorker,
    /// An InferenceService's transformer.
    Transformer,
    /// An InferenceService's explainer.
    Explainer,
}

impl Role {
    /// Whether pods of this role are the workers of a distributed job: Ray
    /// worker groups, Kubeflow replicas other than launchers and parameter
    /// servers, Volcano tasks, replicated jobs, LWS pods, trainer nodes, an
    /// InferenceService predictor's workers (not a training job's, so not
    /// in [`Workload::training_workers`]).
    ///
    /// A role alone cannot tell a Kubeflow launcher or parameter server
    /// from a worker, so every `Replica` counts here; for the answer per
    /// kind and replica type use [`PodTemplate::is_training_worker`] or
    /// [`Workload::training_workers`].
    pub fn is_worker(self) -> bool {
        matches!(
            self,
            Role::RayWorker
                | Role::Replica
                | Role::Task
                | Role::ReplicatedJob
                | Role::Leader
                | Role::Worker
                | Role::Trainer
                | Role::PredictorWorker
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
    /// The first, and the second that explains it:
    /// `` `spec.predictor.minReplicas: 2`, with `serving.kserve.io/autoscalerClass: none` in `metadata.annotations` (no autoscaler) ``.
    Under(Box<ScaleWhy>, Box<ScaleWhy>),
    /// An annotation (`key: value`) found in the annotations at `at`, and
    /// what it says about the scale.
    Annotation {
        /// The annotations it is in (`metadata.annotations`).
        at: Path,
        /// Its key.
        key: &'static str,
        /// Its value.
        value: &'static str,
        /// What it makes of the scale (` (no autoscaler)`), or nothing.
        says: &'static str,
    },
    /// The nodes KServe spreads a multi-node predictor's GPUs over
    /// (`workerSpec`'s `tensorParallelSize` × `pipelineParallelSize`),
    /// less its head: `` KServe's 4 nodes for `…tensorParallelSize: 8` ×
    /// `pipelineParallelSize: 2` GPUs at 4 per worker, less the head ``.
    Nodes {
        /// The `workerSpec`.
        at: Path,
        /// `tensorParallelSize`, as written.
        tensor: Option<i64>,
        /// `pipelineParallelSize`, as written.
        pipeline: Option<i64>,
        /// The nodes, head included.
        nodes: u64,
        /// The GPUs KServe gives each worker.
        per_worker: u64,
    },
    /// A CronJob's Jobs at once.
    CronJobs(Box<CronJobs>),
}

/// How many of a CronJob's Jobs run at once, read from its
/// `concurrencyPolicy`, its `schedule` and its job template's
/// `activeDeadlineSeconds` and `suspend` (the CronJob controller,
/// `pkg/controller/cronjob`: with `Forbid` a run is skipped while a Job is
/// active, with `Replace` the active Jobs are deleted first, with `Allow`,
/// the default, a Job starts at every run whatever still runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronJobs {
    /// `spec.concurrencyPolicy` as written.
    pub policy: Concurrency,
    /// What bounds the Jobs at once.
    pub bound: JobsBound,
}

/// A CronJob's `spec.concurrencyPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concurrency {
    /// Not set: `Allow`, the API server's default.
    Unset,
    /// `Allow`.
    Allow,
    /// `Forbid`.
    Forbid,
    /// `Replace`.
    Replace,
    /// Another value (the API server refuses it; the controller would run
    /// a Job at every run, as with `Allow`).
    Other,
}

/// What bounds a CronJob's Jobs at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobsBound {
    /// `Forbid` or `Replace`: one Job at a time.
    OneAtATime,
    /// Every Job ends within `deadline` seconds of its start (the job
    /// template's `activeDeadlineSeconds`) and runs start at least `gap`
    /// seconds apart: `jobs`, `deadline / gap` rounded up, overlap at most.
    Deadline {
        /// `activeDeadlineSeconds`.
        deadline: i64,
        /// The smallest gap between runs ([`crate::base::cron::min_gap_seconds`]).
        gap: u64,
        /// Jobs at once.
        jobs: u64,
    },
    /// No `activeDeadlineSeconds`: nothing ends a Job.
    NoDeadline,
    /// A deadline, but a schedule this SDK cannot read.
    Unreadable,
    /// A deadline, but the Jobs start suspended (`suspend: true` in the job
    /// template): each deadline counts from whenever its Job is resumed.
    Suspended,
}

impl fmt::Display for CronJobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const POLICY: &str = "spec.concurrencyPolicy";
        const DEADLINE: &str = "spec.jobTemplate.spec.activeDeadlineSeconds";
        let one = match self.policy {
            Concurrency::Forbid => Some("Forbid"),
            Concurrency::Replace => Some("Replace"),
            _ => None,
        };
        if let (JobsBound::OneAtATime, Some(p)) = (self.bound, one) {
            return write!(f, "`{POLICY}: {p}` (one Job at a time)");
        }
        if let JobsBound::Deadline { deadline, gap, jobs } = self.bound {
            let jobs = crate::base::text::count(jobs, "Job");
            return write!(f, "{jobs} at once (`{DEADLINE}: {deadline}` over runs of `spec.schedule` at least {} apart)", Seconds(gap));
        }
        let every = "a new Job at every run of `spec.schedule`, however many still run";
        match self.policy {
            Concurrency::Allow => write!(f, "`{POLICY}: Allow` ({every})")?,
            Concurrency::Unset => write!(f, "`{POLICY}` is not set (`Allow`: {every})")?,
            _ => write!(f, "`{POLICY}` is neither `Forbid` nor `Replace` ({every})")?,
        }
        match self.bound {
            JobsBound::NoDeadline => write!(f, ", and `{DEADLINE}` is not set to end them"),
            JobsBound::Unreadable => {
                write!(f, ", and `spec.schedule` is not a schedule this rule can read, so how many overlap within `{DEADLINE}` is unknown")
            }
            JobsBound::Suspended => write!(
                f,
                ", and the Jobs start suspended (`spec.jobTemplate.spec.suspend: true`), so their `activeDeadlineSeconds` counts from whenever each is resumed"
            ),
            JobsBound::OneAtATime | JobsBound::Deadline { .. } => Ok(()),
        }
    }
}

/// A number of seconds in the largest unit that writes it whole: `1 h`,
/// `5 min`, `90 s`.
struct Seconds(u64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            s if s >= 3600 && s % 3600 == 0 => write!(f, "{} h", s / 3600),
            s if s >= 60 && s % 60 == 0 => write!(f, "{} min", s / 60),
            s => write!(f, "{s} s"),
        }
    }
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
            ScaleWhy::CronJobs(c) => c.fmt(f),
            ScaleWhy::Under(a, b) => write!(f, "{a}, with {b}"),
            ScaleWhy::Annotation { at, key, value, says } => write!(f, "`{key}: {value}` in `{at}`{says}"),
            ScaleWhy::Nodes { at, tensor, pipeline, nodes, per_worker } => {
                let size = |f: &mut fmt::Formatter<'_>, key: &str, v: &Option<i64>, first: bool| match (v, first) {
                    (Some(n), true) => write!(f, "`{at}.{key}: {n}`"),
                    (Some(n), false) => write!(f, "`{key}: {n}`"),
                    (None, true) => write!(f, "`{at}.{key}` (not set: 1)"),
                    (None, false) => write!(f, "`{key}` (not set: 1)"),
                };
                write!(f, "KServe's {nodes} nodes for ")?;
                size(f, "tensorParallelSize", tensor, true)?;
                f.write_str(" × ")?;
                size(f, "pipelineParallelSize", pipeline, false)?;
                write!(f, " GPUs at {per_worker} per worker, less the head")
            }
        }
    }
}

impl Scale {
    #[inline(never)] // These four: called from every kind's decoder, kept out of line for size.
    pub(super) fn one(why: &'static str) -> Scale {
        Scale { pods: Some(1), why: ScaleWhy::Words(why) }
    }

    /// `value` of field `path` (with `default` when absent, described by
    /// `absent`), negative values counting as zero.
    #[inline(never)]
    pub(super) fn field(path: Path, value: Option<i64>, default: i64, absent: &'static str) -> Scale {
        match value {
            Some(n) => Scale { pods: Some(u64::try_from(n).unwrap_or(0)), why: ScaleWhy::Field(path, n) },
            None => Scale { pods: Some(u64::try_from(default).unwrap_or(0)), why: ScaleWhy::Unset(path, absent) },
        }
    }

    /// No bound: `` `path` says ``.
    #[inline(never)]
    pub(super) fn unbounded(path: Path, says: &'static str) -> Scale {
        Scale { pods: None, why: ScaleWhy::Says(path, says) }
    }

    /// The product; when one of the two is unbounded, that one alone
    /// says why (a bound times no bound is no bound).
    #[inline(never)]
    pub(super) fn times(self, other: Scale) -> Scale {
        match (self.pods, other.pods) {
            (Some(a), Some(b)) => Scale { pods: Some(a.saturating_mul(b)), why: ScaleWhy::Times(Box::new(self.why), Box::new(other.why)) },
            (None, Some(_)) => self,
            (Some(_), None) => other,
            (None, None) => Scale { pods: None, why: ScaleWhy::Times(Box::new(self.why), Box::new(other.why)) },
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
pub(super) enum Shape {
    /// A bare Pod: the object is its own template.
    Pod,
    /// A `PodTemplateSpec` (`metadata` + `spec`).
    Template,
    /// A pod spec inline in the object, with `labels` and `annotations`
    /// beside it (an InferenceService component).
    Inline,
    /// An InferenceService predictor's `workerSpec`: a pod spec inline,
    /// whose pods get the predictor's labels and annotations (its metadata
    /// path is the predictor's).
    Worker,
    /// TrainJob's `spec.trainer`: one container whose resources are
    /// `resourcesPerNode`; the rest of the pod comes from the referenced
    /// TrainingRuntime.
    Trainer,
    /// The pod a controller makes when the object names none (KubeRay's
    /// default RayJob submitter): laid out as a `PodTemplateSpec` at the
    /// path of the field that would replace it, so that messages say where
    /// to write one, but not in the object, so nothing edits it.
    Default,
    /// A `PodTemplateSpec` the Trainer merges over a replicated job's pod
    /// template of the runtime (a TrainJob's `podTemplateOverrides` entry,
    /// or a runtime patch's `template.spec.template`): paths as a
    /// template's, but only part of a pod.
    Patch,
    /// A pod spec the Trainer merges over a replicated job's pod spec (a
    /// TrainJob's `podSpecOverrides` entry, Trainer v2.0): no metadata.
    SpecPatch,
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
    /// A container the controller adds to the pod, shaped by fields of the
    /// object elsewhere than the template: KubeRay's `autoscaler` in the
    /// head pod, from `autoscalerOptions` (see
    /// [`PodTemplate::container_path`]).
    Added,
}

impl ContainerList {
    /// The field name (for `Model`, see [`PodTemplate::container_path`]).
    pub fn field(self) -> &'static str {
        match self {
            ContainerList::Containers => "containers",
            ContainerList::InitContainers => "initContainers",
            ContainerList::EphemeralContainers => "ephemeralContainers",
            ContainerList::Model => "model",
            ContainerList::Added => "autoscalerOptions",
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
    /// containers, an InferenceService's model container, one the
    /// controller adds beside them).
    pub fn is_main(&self) -> bool {
        matches!(self.list, ContainerList::Containers | ContainerList::Model | ContainerList::Added)
    }

    /// `` container `trainer` ``, or `` init container `setup` ``.
    pub fn describe(&self) -> String {
        let what = match self.list {
            ContainerList::Containers | ContainerList::Model => "container",
            ContainerList::Added => return format!("KubeRay's `{}` container", self.container.name),
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
    pub(super) path: Path,
    pub(super) shape: Shape,
    /// What the template is for.
    pub role: Role,
    /// The name of its group where the kind names them: a Ray `groupName`,
    /// a Kubeflow replica type, a Volcano task, a replicated job; for a
    /// TrainJob's override or runtime patch, the replicated job it shapes
    /// (`None` when it names several: see [`PodTemplate::jobs`]).
    pub name: Option<Str<'a>>,
    /// A TrainJob's override or runtime patch ([`Role::Override`]): the
    /// replicated jobs of the training runtime whose pods it shapes
    /// (`targetJobs`, a runtime patch's replicated job `name`), in order.
    /// Empty for every other template.
    pub jobs: Vec<Str<'a>>,
    /// The template's own metadata; `None` for a bare Pod (whose metadata is
    /// the workload's), TrainJob's trainer and a v2.0 `podSpecOverrides`
    /// entry.
    pub metadata: Option<ObjectMeta<'a>>,
    /// The pod spec.
    pub spec: PodSpec<'a>,
    /// The model container of an InferenceService component.
    pub model: Option<(ModelSpec<'a>, Container<'a>)>,
    /// An InferenceService component's `storageUris`, in order.
    pub storage_uris: Vec<StorageUri<'a>>,
    /// A container the controller adds ([`ContainerList::Added`]), with the
    /// path of the fields that shape it (`spec.autoscalerOptions`).
    pub added: Option<Box<(Path, Container<'a>)>>,
    /// Pods it runs at full scale.
    pub scale: Scale,
}

impl<'a> PodTemplate<'a> {
    /// A bare Pod's one template: its spec, at the document's root.
    pub(super) fn bare_pod(spec: PodSpec<'a>) -> PodTemplate<'a> {
        PodTemplate::new(Path::root(), Shape::Pod, Role::Pod, None, spec, Scale::one("a Pod"))
    }

    pub(super) fn new(
        path: Path,
        shape: Shape,
        role: Role,
        metadata: Option<ObjectMeta<'a>>,
        spec: PodSpec<'a>,
        scale: Scale,
    ) -> PodTemplate<'a> {
        PodTemplate {
            path,
            shape,
            role,
            name: None,
            jobs: Vec::new(),
            metadata,
            spec,
            model: None,
            storage_uris: Vec::new(),
            added: None,
            scale,
        }
    }

    pub(super) fn named(mut self, name: Option<Str<'a>>) -> PodTemplate<'a> {
        self.name = name;
        self
    }

    /// An override of the pods of the replicated jobs `jobs`: named after
    /// the one it shapes, if one.
    pub(super) fn shaping(mut self, jobs: Vec<Str<'a>>) -> PodTemplate<'a> {
        self.name = match jobs.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        };
        self.jobs = jobs;
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
            Shape::Template | Shape::Default | Shape::Patch => self.path.key("spec"),
            Shape::Inline | Shape::Worker | Shape::Trainer | Shape::SpecPatch => self.path.clone(),
        }
    }

    /// Path of the template's metadata (`spec.template.metadata`, or
    /// `metadata` for a Pod). An InferenceService component keeps `labels`
    /// and `annotations` on the component itself, so its metadata path is
    /// the component's; its predictor's workers get the predictor's, so
    /// theirs is the predictor's (see [`PodTemplate::shares_metadata`]).
    pub fn metadata_path(&self) -> Path {
        match self.shape {
            Shape::Pod => Path::root().key("metadata"),
            Shape::Template | Shape::Default | Shape::Patch => self.path.key("metadata"),
            Shape::Inline | Shape::Trainer | Shape::SpecPatch => self.path.clone(),
            Shape::Worker => Path(self.path.0.split_last().map(|(_, parent)| parent.to_vec()).unwrap_or_default()),
        }
    }

    /// Whether the template's pods get another template's labels and
    /// annotations, which its `metadata` then repeats: an InferenceService
    /// predictor's workers get the predictor's (KServe's `reconcileWorker`).
    /// A rule that judges a template's labels or annotations judges them
    /// once, on that other template, whose label set
    /// ([`crate::model::labels::LabelSet::covers`]) covers this one.
    pub fn shares_metadata(&self) -> bool {
        self.shape == Shape::Worker
    }

    /// Path of the template's labels.
    pub fn labels_path(&self) -> Path {
        self.metadata_path().key("labels")
    }

    /// Whether the template is the pod a controller makes because the
    /// object names none ([`Shape::Default`]): judged like any other, but
    /// not in the object, so mutating rules leave it alone.
    pub fn is_default(&self) -> bool {
        self.shape == Shape::Default
    }

    /// Whether the template is only part of a pod: a TrainJob's trainer,
    /// override or runtime patch, which the Trainer merges over the pod
    /// templates of the referenced TrainingRuntime. What it leaves out
    /// (`runtimeClassName`, a security context, the other containers) is
    /// the runtime's, which the request does not carry; what it writes is
    /// in the pods.
    pub fn is_partial(&self) -> bool {
        matches!(self.shape, Shape::Trainer | Shape::Patch | Shape::SpecPatch)
    }

    /// Whether this is a TrainJob's override or runtime patch that shapes
    /// the pods of the runtime's replicated job `job`.
    pub fn shapes(&self, job: &str) -> bool {
        self.role == Role::Override && self.jobs.iter().any(|j| *j == job)
    }

    /// Every container: regular, then init, then ephemeral, each in order,
    /// then an InferenceService's model container, then the one the
    /// controller adds.
    pub fn containers(&self) -> impl Iterator<Item = ContainerRef<'_, 'a>> {
        let s = &self.spec;
        let lists = [
            (ContainerList::Containers, s.containers.as_slice()),
            (ContainerList::InitContainers, s.init_containers.as_slice()),
            (ContainerList::EphemeralContainers, s.ephemeral_containers.as_slice()),
            (ContainerList::Model, self.model.as_ref().map(|(_, c)| std::slice::from_ref(c)).unwrap_or_default()),
            (ContainerList::Added, self.added.as_deref().map(|(_, c)| std::slice::from_ref(c)).unwrap_or_default()),
        ];
        lists
            .into_iter()
            .flat_map(|(list, cs)| cs.iter().enumerate().map(move |(index, container)| ContainerRef { list, index, container }))
    }

    /// The ports a container takes on the node's own addresses, as its
    /// pods will have them, with their index in `ports`: a `hostPort`, and
    /// under `hostNetwork` a `containerPort` without one, which the API
    /// server makes the `hostPort` of every Pod's containers and init
    /// containers (templates and Pods alike read so: a Deployment's pods
    /// get them). See [`ContainerPort::on_node`](crate::model::pod::ContainerPort::on_node).
    pub fn host_ports<'c>(&self, c: &ContainerRef<'c, '_>) -> impl Iterator<Item = (usize, HostPort)> + use<'c, 'a> {
        let host_network = self.spec.host_network == Some(true) && c.list != ContainerList::EphemeralContainers;
        c.container.ports.iter().enumerate().filter_map(move |(i, p)| Some((i, p.on_node(host_network)?)))
    }

    /// Path of a container (`spec.containers[1]`, `spec.predictor.model`).
    pub fn container_path(&self, c: &ContainerRef<'_, '_>) -> Path {
        match (self.shape, c.list) {
            (Shape::Trainer, _) => self.path.clone(),
            (_, ContainerList::Model) => {
                let field = self.model.as_ref().map_or("model", |(m, _)| m.field);
                self.spec_path().key(field)
            }
            (_, ContainerList::Added) => self.added.as_deref().map_or_else(|| self.path.clone(), |(p, _)| p.clone()),
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
                    WorkloadKind::PyTorchJob | WorkloadKind::XgBoostJob | WorkloadKind::PaddleJob => {
                        matches!(name.as_str(), "master" | "worker")
                    }
                    WorkloadKind::TfJob => matches!(name.as_str(), "chief" | "master" | "worker"),
                    WorkloadKind::JaxJob => name == "worker",
                    WorkloadKind::MpiJob => name == "worker" || (launcher_as_worker && name == "launcher"),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// What falls short in container `c`'s shared memory, as the kubelet
    /// would mount it: `/dev/shm` must be a memory-backed `emptyDir`, and,
    /// where it sets a `sizeLimit` and `min_bytes` is above 0, at least that
    /// large. `ray`: the template is a Ray pod's, and KubeRay mounts a
    /// memory-backed `/dev/shm` (sized to the memory limit) into its first
    /// container unless something is mounted there already.
    pub fn dev_shm_shortfall(&self, c: &ContainerRef<'_, 'a>, ray: bool, min_bytes: u64) -> Result<Option<ShmShortfall<'_>>, Malformed> {
        let mount = c.container.volume_mounts.iter().find(|m| m.mount_path.trim_end_matches('/') == "/dev/shm");
        let volume = mount.and_then(|m| self.spec.volumes.iter().enumerate().find(|(_, vol)| vol.name == m.name));
        let memory = volume.and_then(|(i, vol)| vol.empty_dir.as_ref().filter(|e| e.medium.as_deref() == Some("Memory")).map(|e| (i, e)));
        let Some((i, dir)) = memory else {
            let kuberay = ray && mount.is_none() && c.list == ContainerList::Containers && c.index == 0;
            return Ok((!kuberay).then_some(ShmShortfall::NotInMemory));
        };
        let Some(raw) = dir.size_limit.as_ref().filter(|_| min_bytes > 0) else { return Ok(None) };
        let field = self.spec_path().key("volumes").index(i).keys(&["emptyDir", "sizeLimit"]);
        let bytes = raw.parse().map_err(|e| Malformed::new(format!("`{field}`: {e}")))?.ceil_units();
        Ok((bytes < min_bytes).then_some(ShmShortfall::Below { field, size: &raw.0 }))
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
            (Role::PredictorWorker, _) => "the predictor's workers".into(),
            (Role::Transformer, _) => "the transformer".into(),
            (Role::Explainer, _) => "the explainer".into(),
            (Role::Trainer, _) => "the trainer".into(),
            (Role::Override, _) => {
                let what = if self.path.0.get(1).is_some_and(|s| matches!(s, Seg::Key(k) if k == "runtimePatches")) {
                    "the runtime patch"
                } else {
                    "the override"
                };
                match self.jobs.as_slice() {
                    [] => format!("{what} at `{}`", self.path),
                    [one] => format!("{what} of replicated job `{one}`"),
                    many => {
                        let names: Vec<&str> = many.iter().map(|j| &**j).collect();
                        format!("{what} of replicated jobs {}", crate::base::text::quoted(&names))
                    }
                }
            }
            (Role::Pod, _) => "the pod".into(),
            _ => format!("`{}`", self.path),
        }
    }
}

/// What [`PodTemplate::dev_shm_shortfall`] finds.
#[derive(Debug, PartialEq)]
pub enum ShmShortfall<'t> {
    /// Nothing memory-backed at `/dev/shm`: the container runtime's 64 MiB.
    NotInMemory,
    /// A memory-backed `/dev/shm` whose `sizeLimit` (at `field`) is `size`,
    /// below the minimum.
    Below {
        /// Path of the `sizeLimit`.
        field: Path,
        /// The `sizeLimit` as written.
        size: &'t str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workload::Workload;

    /// What the first container of a Deployment whose pod spec is `spec`
    /// lacks in shared memory, at least `min` bytes wanted.
    fn shortfall(spec: &str, ray: bool, min: u64) -> Result<Option<String>, Malformed> {
        let json = format!(r#"{{"spec":{{"template":{{"spec":{spec}}}}}}}"#);
        let w = Workload::parse(WorkloadKind::Deployment, &json).unwrap();
        let t = w.templates().next().unwrap();
        let c = t.containers().next().unwrap();
        Ok(t.dev_shm_shortfall(&c, ray, min)?.map(|s| match s {
            ShmShortfall::NotInMemory => "not in memory".to_string(),
            ShmShortfall::Below { field, size } => format!("`{field}` is `{size}`"),
        }))
    }

    #[test]
    fn dev_shm_is_a_memory_backed_empty_dir_of_at_least_the_minimum() {
        let mounted = |volume: &str| {
            format!(
                r#"{{"volumes":[{{"name":"dshm",{volume}}}],"containers":[{{"name":"c","volumeMounts":[{{"name":"dshm","mountPath":"/dev/shm/"}}]}}]}}"#
            )
        };
        let memory = mounted(r#""emptyDir":{"medium":"Memory"}"#);
        assert_eq!(shortfall(&memory, false, 1 << 30).unwrap(), None, "no sizeLimit: bounded by the memory limit");
        let small = mounted(r#""emptyDir":{"medium":"Memory","sizeLimit":"512Mi"}"#);
        assert_eq!(
            shortfall(&small, false, 1 << 30).unwrap().as_deref(),
            Some("`spec.template.spec.volumes[0].emptyDir.sizeLimit` is `512Mi`")
        );
        assert_eq!(shortfall(&small, false, 0).unwrap(), None, "no minimum");
        assert_eq!(shortfall(&small, false, 512 << 20).unwrap(), None);
        let disk = mounted(r#""emptyDir":{}"#);
        assert_eq!(shortfall(&disk, false, 0).unwrap().as_deref(), Some("not in memory"));
        assert_eq!(shortfall(&disk, true, 0).unwrap().as_deref(), Some("not in memory"), "KubeRay adds none over a mount");
        let bare = r#"{"containers":[{"name":"c"}]}"#;
        assert_eq!(shortfall(bare, false, 0).unwrap().as_deref(), Some("not in memory"));
        assert_eq!(shortfall(bare, true, 0).unwrap(), None, "KubeRay mounts one in the first container");
        let bad = mounted(r#""emptyDir":{"medium":"Memory","sizeLimit":"lots"}"#);
        assert!(shortfall(&bad, false, 1).is_err());
    }
}
