//! Workload extraction: every pod template inside every supported kind, with
//! its field path.
//!
//! A rule written against [`PodTemplate`]s covers Pods, the built-in
//! controllers, Ray, Kubeflow, Volcano, JobSet and LeaderWorkerSet alike, and
//! its messages name the exact path
//! (`spec.workerGroupSpecs[1].template.spec.containers[0]`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::Malformed;
use crate::quantity::Quantity;
use crate::request::{Str, decode, nullable};
use crate::settings::GpuResources;

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
    /// `batch.volcano.sh` Job.
    VolcanoJob,
    /// `jobset.x-k8s.io` JobSet.
    JobSet,
    /// `leaderworkerset.x-k8s.io` LeaderWorkerSet.
    LeaderWorkerSet,
}

impl WorkloadKind {
    /// Every supported kind.
    pub const ALL: [WorkloadKind; 21] = [
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
        WorkloadKind::VolcanoJob,
        WorkloadKind::JobSet,
        WorkloadKind::LeaderWorkerSet,
    ];

    /// The kind for an API group and kind name, if supported.
    pub fn of(group: &str, kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.kind() == kind)
    }

    /// The API group (`""` for the core group).
    pub fn group(self) -> &'static str {
        use WorkloadKind::*;
        match self {
            Pod | ReplicationController => "",
            Deployment | StatefulSet | DaemonSet | ReplicaSet => "apps",
            Job | CronJob => "batch",
            RayCluster | RayJob | RayService => "ray.io",
            PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob => "kubeflow.org",
            TrainJob => "trainer.kubeflow.org",
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
            JobSet => "jobsets",
            LeaderWorkerSet => "leaderworkersets",
        }
    }

    /// Whether objects of this kind own pod templates (everything but Pod).
    pub fn owns_templates(self) -> bool {
        self != WorkloadKind::Pod
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

/// Labels, by key.
pub type Labels<'a> = BTreeMap<Str<'a>, Str<'a>>;

/// The parts of `metadata` rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    /// Name prefix, when the server generates the name.
    #[serde(borrow, default)]
    pub generate_name: Option<Str<'a>>,
    /// Namespace.
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    /// Labels.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub labels: Labels<'a>,
    /// Whether `deletionTimestamp` is set: the object is being deleted, and
    /// an update of it only removes finalizers (refusing it would leave the
    /// object terminating forever).
    #[serde(default, rename = "deletionTimestamp", deserialize_with = "is_set")]
    pub being_deleted: bool,
}

/// Whether a field holds a value (`null` counts as absent), without reading it.
fn is_set<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<serde::de::IgnoredAny>::deserialize(d)?.is_some())
}

impl ObjectMeta<'_> {
    /// The label's value, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(|v| &**v)
    }
}

/// A resource quantity as written: a string, or a bare number in
/// hand-written YAML. Parsed on demand with [`RawQuantity::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawQuantity<'a>(pub Str<'a>);

impl RawQuantity<'_> {
    /// Parses the quantity.
    pub fn parse(&self) -> Result<Quantity, crate::quantity::QuantityError> {
        Quantity::parse(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawQuantity<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Visitor};
        use std::borrow::Cow;
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawQuantity<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a quantity such as \"2\", \"500m\" or \"4Gi\"")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
        }
        d.deserialize_any(V)
    }
}

/// Resource names to quantities.
pub type ResourceList<'a> = BTreeMap<Str<'a>, RawQuantity<'a>>;

/// A container's `resources`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Resources<'a> {
    /// `limits`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub limits: ResourceList<'a>,
    /// `requests`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub requests: ResourceList<'a>,
}

/// The parts of a container rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// Resources.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub resources: Resources<'a>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(borrow, default)]
    pub restart_policy: Option<Str<'a>>,
}

/// A toleration.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Toleration<'a> {
    /// Taint key; absent with `Exists` tolerates every taint.
    #[serde(borrow, default)]
    pub key: Option<Str<'a>>,
    /// `Exists` or `Equal` (the default).
    #[serde(borrow, default)]
    pub operator: Option<Str<'a>>,
    /// Value, for `Equal`.
    #[serde(borrow, default)]
    pub value: Option<Str<'a>>,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`; absent for all.
    #[serde(borrow, default)]
    pub effect: Option<Str<'a>>,
}

/// The parts of a pod spec rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec<'a> {
    /// `containers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub containers: Vec<Container<'a>>,
    /// `initContainers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub init_containers: Vec<Container<'a>>,
    /// `ephemeralContainers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub ephemeral_containers: Vec<Container<'a>>,
    /// `runtimeClassName`.
    #[serde(borrow, default)]
    pub runtime_class_name: Option<Str<'a>>,
    /// `tolerations`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub tolerations: Vec<Toleration<'a>>,
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
}

impl ContainerList {
    /// The field name.
    pub fn field(self) -> &'static str {
        match self {
            ContainerList::Containers => "containers",
            ContainerList::InitContainers => "initContainers",
            ContainerList::EphemeralContainers => "ephemeralContainers",
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

/// The shape a pod template came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A bare Pod: the object is its own template.
    Pod,
    /// A `PodTemplateSpec` (`metadata` + `spec`).
    Template,
    /// TrainJob's `spec.trainer`: one container whose resources are
    /// `resourcesPerNode`; the rest of the pod comes from the referenced
    /// TrainingRuntime.
    Trainer,
}

/// One pod template inside a workload, with its path.
#[derive(Clone, Debug)]
pub struct PodTemplate<'a> {
    path: String,
    shape: Shape,
    /// The template's own metadata; `None` for a bare Pod (whose metadata is
    /// the workload's) and for TrainJob's trainer.
    pub metadata: Option<ObjectMeta<'a>>,
    /// The pod spec.
    pub spec: PodSpec<'a>,
}

/// A container that requests GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuRequest {
    /// Path of the container (`spec.template.spec.containers[0]`).
    pub container_path: String,
    /// Container name.
    pub container_name: String,
    /// GPU resource names requested, with counts, in name order.
    pub resources: Vec<(String, u64)>,
}

impl GpuRequest {
    /// Total GPUs over the container's GPU resources.
    pub fn total(&self) -> u64 {
        self.resources.iter().map(|(_, n)| *n).fold(0, u64::saturating_add)
    }
}

impl<'a> PodTemplate<'a> {
    /// Path of the template (`spec.template`); empty for a bare Pod.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Path of the pod spec (`spec.template.spec`, or `spec` for a Pod).
    pub fn spec_path(&self) -> String {
        match self.shape {
            Shape::Pod => "spec".into(),
            Shape::Template => join(&self.path, "spec"),
            Shape::Trainer => self.path.clone(),
        }
    }

    /// Path of the template's metadata (`spec.template.metadata`, or
    /// `metadata` for a Pod).
    pub fn metadata_path(&self) -> String {
        match self.shape {
            Shape::Pod => "metadata".into(),
            _ => join(&self.path, "metadata"),
        }
    }

    /// Whether the template is only part of a pod: a TrainJob's trainer,
    /// completed by its TrainingRuntime. Pod-level fields such as
    /// `runtimeClassName` are then set elsewhere.
    pub fn is_partial(&self) -> bool {
        self.shape == Shape::Trainer
    }

    /// Every container: regular, then init, then ephemeral, each in order.
    pub fn containers(&self) -> impl Iterator<Item = ContainerRef<'_, 'a>> {
        let s = &self.spec;
        [
            (ContainerList::Containers, &s.containers),
            (ContainerList::InitContainers, &s.init_containers),
            (ContainerList::EphemeralContainers, &s.ephemeral_containers),
        ]
        .into_iter()
        .flat_map(|(list, cs)| {
            cs.iter()
                .enumerate()
                .map(move |(index, container)| ContainerRef { list, index, container })
        })
    }

    /// Path of a container (`spec.containers[1]`).
    pub fn container_path(&self, c: &ContainerRef<'_, '_>) -> String {
        match self.shape {
            Shape::Trainer => self.path.clone(),
            _ => {
                let mut p = self.spec_path();
                let _ = write!(p, ".{}[{}]", c.list.field(), c.index);
                p
            }
        }
    }

    /// Path of a container's resources.
    pub fn resources_path(&self, c: &ContainerRef<'_, '_>) -> String {
        match self.shape {
            Shape::Trainer => join(&self.path, "resourcesPerNode"),
            _ => join(&self.container_path(c), "resources"),
        }
    }

    /// GPUs one container requests, per GPU resource name: for each name the
    /// larger of its limit and request, above zero. Errors name the path of an
    /// unparsable quantity.
    fn container_gpus(
        &self,
        c: &ContainerRef<'_, 'a>,
        gpus: &GpuResources,
    ) -> Result<Vec<(String, u64)>, Malformed> {
        let res = &c.container.resources;
        let mut out: Vec<(String, u64)> = Vec::new();
        for (field, list) in [("limits", &res.limits), ("requests", &res.requests)] {
            for (name, raw) in list {
                if !gpus.is_gpu(name) {
                    continue;
                }
                let q = raw.parse().map_err(|e| {
                    Malformed(format!(
                        "`{}.{field}[{name}]`: {e}",
                        self.resources_path(c)
                    ))
                })?;
                let n = q.ceil_units();
                match out.iter_mut().find(|(k, _)| k.as_str() == &**name) {
                    Some((_, m)) => *m = (*m).max(n),
                    None => out.push((name.to_string(), n)),
                }
            }
        }
        out.retain(|(_, n)| *n > 0);
        out.sort();
        Ok(out)
    }

    /// Every container that requests a GPU (regular, init and ephemeral),
    /// in order.
    pub fn gpu_requests(&self, gpus: &GpuResources) -> Result<Vec<GpuRequest>, Malformed> {
        let mut out = Vec::new();
        for c in self.containers() {
            let resources = self.container_gpus(&c, gpus)?;
            if !resources.is_empty() {
                out.push(GpuRequest {
                    container_path: self.container_path(&c),
                    container_name: c.container.name.to_string(),
                    resources,
                });
            }
        }
        Ok(out)
    }

    /// Whether any container requests a GPU.
    pub fn requests_gpu(&self, gpus: &GpuResources) -> Result<bool, Malformed> {
        for c in self.containers() {
            if !self.container_gpus(&c, gpus)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// GPUs one pod from this template holds, as the scheduler counts them:
    /// the larger of (all regular containers plus sidecars) and the largest
    /// init container (plus the sidecars started before it). Ephemeral
    /// containers cannot have resources.
    pub fn gpus_per_pod(&self, gpus: &GpuResources) -> Result<u64, Malformed> {
        let total = |c: &ContainerRef<'_, 'a>| -> Result<u64, Malformed> {
            Ok(self
                .container_gpus(c, gpus)?
                .iter()
                .map(|(_, n)| *n)
                .fold(0, u64::saturating_add))
        };
        let mut regular: u64 = 0;
        let mut sidecars: u64 = 0;
        let mut init_peak: u64 = 0;
        for c in self.containers() {
            let n = total(&c)?;
            match c.list {
                ContainerList::Containers => regular = regular.saturating_add(n),
                ContainerList::InitContainers => {
                    if c.container.restart_policy.as_deref() == Some("Always") {
                        sidecars = sidecars.saturating_add(n);
                    } else {
                        init_peak = init_peak.max(n.saturating_add(sidecars));
                    }
                }
                ContainerList::EphemeralContainers => {}
            }
        }
        Ok(regular.saturating_add(sidecars).max(init_peak))
    }

    /// The template's labels; `None` for a bare Pod and TrainJob's trainer.
    pub fn labels(&self) -> Option<&Labels<'a>> {
        self.metadata.as_ref().map(|m| &m.labels)
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A Ray worker group (`workerGroupSpecs[i]`).
#[derive(Clone, Debug)]
pub struct WorkerGroup<'a> {
    /// Path of the group (`spec.workerGroupSpecs[1]`).
    pub path: String,
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
    /// The worker pod template.
    pub template: PodTemplate<'a>,
}

/// A Ray cluster spec: a RayCluster's `spec`, a RayJob's
/// `spec.rayClusterSpec`, or a RayService's `spec.rayClusterConfig`.
#[derive(Clone, Debug)]
pub struct RayCluster<'a> {
    /// Path of the cluster spec.
    pub path: String,
    /// The head pod template.
    pub head: Option<PodTemplate<'a>>,
    /// The worker groups, in order.
    pub worker_groups: Vec<WorkerGroup<'a>>,
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
    /// Templates outside the Ray cluster spec (all templates of other kinds).
    others: Vec<PodTemplate<'a>>,
}

impl<'a> Workload<'a> {
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

    /// A short description for messages: `RayCluster ml/train` or
    /// `Pod trainer`.
    pub fn describe(&self) -> String {
        let name = self
            .metadata
            .name
            .as_deref()
            .or(self.metadata.generate_name.as_deref())
            .unwrap_or("(unnamed)");
        format!("{} `{name}`", self.kind.kind())
    }

    /// Decodes an object of a known kind, for example a Pod returned by a
    /// cluster lookup.
    pub fn parse(kind: WorkloadKind, json: &'a str) -> Result<Workload<'a>, Malformed> {
        use WorkloadKind::*;
        let what = format!("the {}", kind.kind());
        let mut w = Workload {
            kind,
            metadata: ObjectMeta::default(),
            ray: None,
            others: Vec::new(),
        };
        match kind {
            Pod => {
                let o: Obj<'a, PodSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.others.push(PodTemplate {
                    path: String::new(),
                    shape: Shape::Pod,
                    metadata: None,
                    spec: o.spec,
                });
            }
            Deployment | StatefulSet | DaemonSet | ReplicaSet | ReplicationController | Job => {
                let o: Obj<'a, HasTemplate<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.others.extend(o.spec.template.into_template("spec.template".into()));
            }
            CronJob => {
                let o: Obj<'a, CronJobSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.others.extend(
                    o.spec
                        .job_template
                        .spec
                        .template
                        .into_template("spec.jobTemplate.spec.template".into()),
                );
            }
            RayCluster => {
                let o: Obj<'a, RayClusterSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.ray = Some(o.spec.into_view("spec"));
            }
            RayJob => {
                let o: Obj<'a, RayJobSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.ray = o.spec.ray_cluster_spec.map(|s| s.into_view("spec.rayClusterSpec"));
                if let Some(t) = o.spec.submitter_pod_template {
                    w.others.extend(t.into_template("spec.submitterPodTemplate".into()));
                }
            }
            RayService => {
                let o: Obj<'a, RayServiceSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.ray = o
                    .spec
                    .ray_cluster_config
                    .map(|s| s.into_view("spec.rayClusterConfig"));
            }
            PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob => {
                let o: Obj<'a, KubeflowSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                let field = kind.replica_specs_field();
                for (role, spec) in o.spec.replica_specs {
                    w.others
                        .extend(spec.template.into_template(format!("spec.{field}.{role}.template")));
                }
            }
            TrainJob => {
                let o: Obj<'a, TrainJobSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                w.others.extend(o.spec.into_template());
            }
            VolcanoJob => {
                let o: Obj<'a, VolcanoJobSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                for (i, task) in o.spec.tasks.into_iter().enumerate() {
                    w.others
                        .extend(task.template.into_template(format!("spec.tasks[{i}].template")));
                }
            }
            JobSet => {
                let o: Obj<'a, JobSetSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                for (i, job) in o.spec.replicated_jobs.into_iter().enumerate() {
                    w.others.extend(
                        job.template
                            .spec
                            .template
                            .into_template(format!("spec.replicatedJobs[{i}].template.spec.template")),
                    );
                }
            }
            LeaderWorkerSet => {
                let o: Obj<'a, LwsSpec<'a>> = decode(json, &what)?;
                w.metadata = o.metadata;
                let lwt = o.spec.leader_worker_template;
                if let Some(t) = lwt.leader_template {
                    w.others
                        .extend(t.into_template("spec.leaderWorkerTemplate.leaderTemplate".into()));
                }
                w.others.extend(
                    lwt.worker_template
                        .into_template("spec.leaderWorkerTemplate.workerTemplate".into()),
                );
            }
        }
        Ok(w)
    }
}

// ---- The wire shapes of each kind (private; rules see the views above). ----

#[derive(Deserialize)]
#[serde(bound(deserialize = "S: Deserialize<'de> + Default"))]
struct Obj<'a, S> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    metadata: ObjectMeta<'a>,
    #[serde(default, deserialize_with = "nullable")]
    spec: S,
}

#[derive(Default, Deserialize)]
struct PodTemplateSpec<'a> {
    #[serde(borrow, default)]
    metadata: Option<ObjectMeta<'a>>,
    #[serde(borrow, default)]
    spec: Option<PodSpec<'a>>,
}

impl<'a> PodTemplateSpec<'a> {
    /// The template, or nothing when neither metadata nor spec is present.
    fn into_template(self, path: String) -> Option<PodTemplate<'a>> {
        if self.metadata.is_none() && self.spec.is_none() {
            return None;
        }
        Some(PodTemplate {
            path,
            shape: Shape::Template,
            metadata: Some(self.metadata.unwrap_or_default()),
            spec: self.spec.unwrap_or_default(),
        })
    }
}

#[derive(Default, Deserialize)]
struct HasTemplate<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    template: PodTemplateSpec<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CronJobSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    job_template: JobTemplateSpec<'a>,
}

#[derive(Default, Deserialize)]
struct JobTemplateSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    spec: HasTemplate<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RayClusterSpec<'a> {
    #[serde(borrow, default)]
    head_group_spec: Option<HasTemplate<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    worker_group_specs: Vec<WorkerGroupSpec<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkerGroupSpec<'a> {
    #[serde(borrow, default)]
    group_name: Option<Str<'a>>,
    #[serde(default)]
    replicas: Option<i64>,
    #[serde(default)]
    min_replicas: Option<i64>,
    #[serde(default)]
    max_replicas: Option<i64>,
    #[serde(default)]
    num_of_hosts: Option<i64>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    template: PodTemplateSpec<'a>,
}

impl<'a> RayClusterSpec<'a> {
    fn into_view(self, path: &str) -> RayCluster<'a> {
        let head = self
            .head_group_spec
            .and_then(|h| h.template.into_template(format!("{path}.headGroupSpec.template")));
        let worker_groups = self
            .worker_group_specs
            .into_iter()
            .enumerate()
            .map(|(i, g)| {
                let gpath = format!("{path}.workerGroupSpecs[{i}]");
                let tpath = format!("{gpath}.template");
                WorkerGroup {
                    name: g.group_name,
                    replicas: g.replicas,
                    min_replicas: g.min_replicas,
                    max_replicas: g.max_replicas,
                    num_of_hosts: g.num_of_hosts,
                    template: g.template.into_template(tpath.clone()).unwrap_or(PodTemplate {
                        path: tpath,
                        shape: Shape::Template,
                        metadata: Some(ObjectMeta::default()),
                        spec: PodSpec::default(),
                    }),
                    path: gpath,
                }
            })
            .collect();
        RayCluster {
            path: path.to_string(),
            head,
            worker_groups,
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RayJobSpec<'a> {
    #[serde(borrow, default)]
    ray_cluster_spec: Option<RayClusterSpec<'a>>,
    #[serde(borrow, default)]
    submitter_pod_template: Option<PodTemplateSpec<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RayServiceSpec<'a> {
    #[serde(borrow, default)]
    ray_cluster_config: Option<RayClusterSpec<'a>>,
}

#[derive(Default, Deserialize)]
struct KubeflowSpec<'a> {
    #[serde(
        borrow,
        default,
        deserialize_with = "nullable",
        alias = "pytorchReplicaSpecs",
        alias = "mpiReplicaSpecs",
        alias = "tfReplicaSpecs",
        alias = "jaxReplicaSpecs",
        alias = "xgbReplicaSpecs",
        alias = "paddleReplicaSpecs"
    )]
    replica_specs: BTreeMap<Str<'a>, ReplicaSpec<'a>>,
}

#[derive(Default, Deserialize)]
struct ReplicaSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    template: PodTemplateSpec<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrainJobSpec<'a> {
    #[serde(borrow, default)]
    trainer: Option<Trainer<'a>>,
    /// `podTemplateOverrides` (Trainer v2.1+); `podSpecOverrides` before.
    #[serde(borrow, default, deserialize_with = "nullable", alias = "podSpecOverrides")]
    pod_template_overrides: Vec<PodOverride<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Trainer<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    resources_per_node: Resources<'a>,
}

/// An override: `spec.tolerations` (v2.1+) or top-level `tolerations` (v2.0).
#[derive(Default, Deserialize)]
struct PodOverride<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    tolerations: Vec<Toleration<'a>>,
    #[serde(borrow, default)]
    spec: Option<OverrideSpec<'a>>,
}

#[derive(Default, Deserialize)]
struct OverrideSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    tolerations: Vec<Toleration<'a>>,
}

impl<'a> TrainJobSpec<'a> {
    fn into_template(self) -> Option<PodTemplate<'a>> {
        let trainer = self.trainer?;
        let mut tolerations = Vec::new();
        for o in self.pod_template_overrides {
            tolerations.extend(o.tolerations);
            if let Some(s) = o.spec {
                tolerations.extend(s.tolerations);
            }
        }
        Some(PodTemplate {
            path: "spec.trainer".into(),
            shape: Shape::Trainer,
            metadata: None,
            spec: PodSpec {
                containers: vec![Container {
                    name: Str::from("trainer"),
                    resources: trainer.resources_per_node,
                    restart_policy: None,
                }],
                tolerations,
                ..PodSpec::default()
            },
        })
    }
}

#[derive(Default, Deserialize)]
struct VolcanoJobSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    tasks: Vec<HasTemplate<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobSetSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    replicated_jobs: Vec<ReplicatedJob<'a>>,
}

#[derive(Default, Deserialize)]
struct ReplicatedJob<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    template: JobTemplateSpec<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LwsSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    leader_worker_template: LeaderWorkerTemplate<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaderWorkerTemplate<'a> {
    #[serde(borrow, default)]
    leader_template: Option<PodTemplateSpec<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    worker_template: PodTemplateSpec<'a>,
}
