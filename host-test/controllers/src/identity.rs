//! Who submits what a controller builds: each controller's Kubernetes
//! identity, as its upstream manifests or charts install it.
//!
//! kube-controller-manager with `--use-service-account-credentials` (kubeadm's
//! default) sends each controller's requests with a token of that
//! controller's service account in `kube-system`
//! (`cmd/kube-controller-manager/app/controllermanager.go`,
//! `createClientBuilders`); the operators run as their chart's or
//! manifests' service account.

/// An authenticated user, as a request's `userInfo` carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// `userInfo.username`.
    pub username: String,
    /// `userInfo.groups`.
    pub groups: Vec<String>,
}

/// A controller and the identity it submits with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Controller {
    /// Its name, for messages (`replicaset-controller`, `kuberay-operator`).
    pub name: &'static str,
    /// Who its requests come from.
    pub identity: Identity,
}

/// A service account a controller runs as.
pub(crate) struct ServiceAccount {
    pub(crate) namespace: &'static str,
    pub(crate) name: &'static str,
}

impl ServiceAccount {
    /// The controller running as this service account: username
    /// `system:serviceaccount:<ns>:<name>` and the groups the API server's
    /// service account authenticator gives every service account
    /// (`k8s.io/apiserver/pkg/authentication/serviceaccount`).
    pub(crate) fn controller(&self) -> Controller {
        Controller {
            name: self.name,
            identity: Identity {
                username: format!("system:serviceaccount:{}:{}", self.namespace, self.name),
                groups: vec![
                    "system:serviceaccounts".to_string(),
                    format!("system:serviceaccounts:{}", self.namespace),
                    "system:authenticated".to_string(),
                ],
            },
        }
    }
}

const fn sa(namespace: &'static str, name: &'static str) -> ServiceAccount {
    ServiceAccount { namespace, name }
}

// kube-controller-manager's controllers (`cmd/kube-controller-manager/app/apps.go`, `batch.go`, `core.go`).
pub(crate) const DEPLOYMENT: ServiceAccount = sa("kube-system", "deployment-controller");
pub(crate) const REPLICA_SET: ServiceAccount = sa("kube-system", "replicaset-controller");
pub(crate) const REPLICATION: ServiceAccount = sa("kube-system", "replication-controller");
pub(crate) const STATEFUL_SET: ServiceAccount = sa("kube-system", "statefulset-controller");
pub(crate) const DAEMON_SET: ServiceAccount = sa("kube-system", "daemon-set-controller");
pub(crate) const JOB: ServiceAccount = sa("kube-system", "job-controller");
pub(crate) const CRON_JOB: ServiceAccount = sa("kube-system", "cronjob-controller");
// Operators, as their upstream charts and manifests name and place them.
pub(crate) const KUBERAY: ServiceAccount = sa("ray-system", "kuberay-operator");
pub(crate) const TRAINING_OPERATOR: ServiceAccount = sa("kubeflow", "training-operator");
pub(crate) const MPI_OPERATOR: ServiceAccount = sa("mpi-operator", "mpi-operator");
pub(crate) const TRAINER: ServiceAccount = sa("kubeflow-system", "kubeflow-trainer-controller-manager");
pub(crate) const JOBSET: ServiceAccount = sa("jobset-system", "jobset-controller-manager");
pub(crate) const LWS: ServiceAccount = sa("lws-system", "lws-controller-manager");
pub(crate) const KSERVE: ServiceAccount = sa("kserve", "kserve-controller-manager");
pub(crate) const KNATIVE: ServiceAccount = sa("knative-serving", "controller");
pub(crate) const NOTEBOOK: ServiceAccount = sa("kubeflow", "notebook-controller-service-account");
pub(crate) const VOLCANO: ServiceAccount = sa("volcano-system", "volcano-controllers");

/// Each controller with the owner kinds (`Kind.group`; `Kind` for the core
/// group) of the objects it creates.
pub(crate) const ALL: &[(&[&str], ServiceAccount)] = &[
    (&["Deployment.apps"], DEPLOYMENT),
    (&["ReplicaSet.apps"], REPLICA_SET),
    (&["ReplicationController"], REPLICATION),
    (&["StatefulSet.apps"], STATEFUL_SET),
    (&["DaemonSet.apps"], DAEMON_SET),
    (&["Job.batch"], JOB),
    (&["CronJob.batch"], CRON_JOB),
    (&["RayCluster.ray.io", "RayJob.ray.io", "RayService.ray.io"], KUBERAY),
    (
        &["PyTorchJob.kubeflow.org", "TFJob.kubeflow.org", "XGBoostJob.kubeflow.org", "PaddleJob.kubeflow.org", "JAXJob.kubeflow.org"],
        TRAINING_OPERATOR,
    ),
    (&["MPIJob.kubeflow.org"], MPI_OPERATOR),
    (&["TrainJob.trainer.kubeflow.org"], TRAINER),
    (&["JobSet.jobset.x-k8s.io"], JOBSET),
    (&["LeaderWorkerSet.leaderworkerset.x-k8s.io", "Pod"], LWS),
    (&["InferenceService.serving.kserve.io"], KSERVE),
    (&["Revision.serving.knative.dev"], KNATIVE),
    (&["Notebook.kubeflow.org"], NOTEBOOK),
    (&["Job.batch.volcano.sh"], VOLCANO),
];

/// Every controller, with the owner kinds it acts for.
pub(crate) fn all() -> impl Iterator<Item = (&'static [&'static str], Controller)> {
    ALL.iter().map(|(owners, sa)| (*owners, sa.controller()))
}
