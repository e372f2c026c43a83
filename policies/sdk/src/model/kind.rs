//! The workload kinds aigov models, by API group and kind, and their
//! webhook resources.

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
        WorkloadKind::ALL.into_iter().find(|k| k.kind() == kind && k.group() == group)
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
    pub(crate) fn replica_specs_field(self) -> &'static str {
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
