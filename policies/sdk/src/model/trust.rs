//! Which requests are a controller's: the shared `trustedControllers`
//! setting.
//!
//! Anyone may write an owner reference (OwnerReferencesPermissionEnforcement
//! only guards `blockOwnerDeletion`): a user can point a Job at their own
//! suspended CronJob, or a Pod at a ReplicaSet. An object is a controller's
//! when the request that creates it comes from that controller, so a rule
//! trusts an object's `controller: true` owner reference only when the
//! requester is a user this setting lists for the owner's kind
//! ([`crate::model::request::Request::controller`]). A user's request keeps
//! every check, whatever its owner references say.
//!
//! The defaults are the identities the upstream controllers run as, in the
//! namespaces their manifests and charts install them to:
//!
//! | owner kinds | users |
//! |---|---|
//! | `ReplicaSet.apps`, `ReplicationController`, `Deployment.apps`, `StatefulSet.apps`, `DaemonSet.apps`, `Job.batch`, `CronJob.batch` | the kube-controller-manager controller's service account in `kube-system` (`replicaset-controller`, `replication-controller`, `deployment-controller`, `statefulset-controller`, `daemon-set-controller`, `job-controller`, `cronjob-controller`), or `system:kube-controller-manager` when it runs without service account credentials |
//! | `RayCluster.ray.io`, `RayJob.ray.io`, `RayService.ray.io` | `kuberay-operator` in `ray-system`, `kuberay-system` or `kubeflow` |
//! | `PyTorchJob`, `TFJob`, `XGBoostJob`, `PaddleJob`, `JAXJob` `.kubeflow.org` | `training-operator` in `kubeflow` |
//! | `MPIJob.kubeflow.org` | `mpi-operator` in `mpi-operator` or `kubeflow`; `training-operator` in `kubeflow` (v1 MPIJobs) |
//! | `TrainJob.trainer.kubeflow.org` | `kubeflow-trainer-controller-manager` in `kubeflow-system` or `kubeflow` |
//! | `JobSet.jobset.x-k8s.io` | `jobset-controller-manager` in `jobset-system`, or, installed with Kubeflow Trainer, in `kubeflow-system` or `kubeflow` |
//! | `LeaderWorkerSet.leaderworkerset.x-k8s.io`, `Pod` (a leader Pod owns its group's worker StatefulSet) | `lws-controller-manager` in `lws-system` |
//! | `InferenceService.serving.kserve.io` | `kserve-controller-manager` in `kserve` or `kubeflow` |
//! | `Revision.serving.knative.dev` | Knative Serving's `controller` in `knative-serving` |
//! | `Notebook.kubeflow.org` | `notebook-controller-service-account` in `kubeflow` or `notebook-controller-system` |
//! | `Job.batch.volcano.sh` | `volcano-controllers` in `volcano-system` |
//!
//! A controller installed elsewhere (KubeRay's quick start installs it in
//! `default`) is not trusted until the setting names it: its objects are
//! then judged as their author's, never waved through.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::base::glob::{Glob, matches, non_empty_patterns};
use crate::base::rule_settings::SettingsError;
use crate::model::pod::OwnerReference;

/// One entry of `trustedControllers`: the users a controller of these
/// owner kinds runs as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedController {
    /// The owner kinds, as `Kind.group` (`ReplicaSet.apps`; `Pod` for the
    /// core group); wildcards allowed (`*.ray.io`).
    pub owners: Vec<Glob>,
    /// The users that controller's requests come from; wildcards allowed.
    pub users: Vec<Glob>,
}

/// The `trustedControllers` setting: the upstream defaults, or a team's
/// own list (which replaces them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TrustedControllers {
    /// The defaults ([`DEFAULTS`]), read without building anything.
    #[default]
    Defaults,
    /// A list given in the settings.
    Listed(Rc<[TrustedController]>),
}

/// kube-controller-manager's user when it runs without service account
/// credentials.
const KCM: &str = "system:kube-controller-manager";

/// The default entries: owner kinds and users.
pub const DEFAULTS: &[(&[&str], &[&str])] = &[
    (&["ReplicaSet.apps"], &["system:serviceaccount:kube-system:replicaset-controller", KCM]),
    (&["ReplicationController"], &["system:serviceaccount:kube-system:replication-controller", KCM]),
    (&["Deployment.apps"], &["system:serviceaccount:kube-system:deployment-controller", KCM]),
    (&["StatefulSet.apps"], &["system:serviceaccount:kube-system:statefulset-controller", KCM]),
    (&["DaemonSet.apps"], &["system:serviceaccount:kube-system:daemon-set-controller", KCM]),
    (&["Job.batch"], &["system:serviceaccount:kube-system:job-controller", KCM]),
    (&["CronJob.batch"], &["system:serviceaccount:kube-system:cronjob-controller", KCM]),
    (
        &["RayCluster.ray.io", "RayJob.ray.io", "RayService.ray.io"],
        &[
            "system:serviceaccount:ray-system:kuberay-operator",
            "system:serviceaccount:kuberay-system:kuberay-operator",
            "system:serviceaccount:kubeflow:kuberay-operator",
        ],
    ),
    (
        &[
            "PyTorchJob.kubeflow.org",
            "TFJob.kubeflow.org",
            "XGBoostJob.kubeflow.org",
            "PaddleJob.kubeflow.org",
            "JAXJob.kubeflow.org",
            "MPIJob.kubeflow.org",
        ],
        &["system:serviceaccount:kubeflow:training-operator"],
    ),
    (&["MPIJob.kubeflow.org"], &["system:serviceaccount:mpi-operator:mpi-operator", "system:serviceaccount:kubeflow:mpi-operator"]),
    (
        &["TrainJob.trainer.kubeflow.org"],
        &[
            "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager",
            "system:serviceaccount:kubeflow:kubeflow-trainer-controller-manager",
        ],
    ),
    (
        &["JobSet.jobset.x-k8s.io"],
        &[
            "system:serviceaccount:jobset-system:jobset-controller-manager",
            "system:serviceaccount:kubeflow-system:jobset-controller-manager",
            "system:serviceaccount:kubeflow:jobset-controller-manager",
        ],
    ),
    (&["LeaderWorkerSet.leaderworkerset.x-k8s.io", "Pod"], &["system:serviceaccount:lws-system:lws-controller-manager"]),
    (
        &["InferenceService.serving.kserve.io"],
        &["system:serviceaccount:kserve:kserve-controller-manager", "system:serviceaccount:kubeflow:kserve-controller-manager"],
    ),
    (&["Revision.serving.knative.dev"], &["system:serviceaccount:knative-serving:controller"]),
    (
        &["Notebook.kubeflow.org"],
        &[
            "system:serviceaccount:kubeflow:notebook-controller-service-account",
            "system:serviceaccount:notebook-controller-system:notebook-controller-service-account",
        ],
    ),
    (&["Job.batch.volcano.sh"], &["system:serviceaccount:volcano-system:volcano-controllers"]),
];

impl TrustedControllers {
    /// Whether `user` is a controller of objects owned by `owner`.
    pub fn trusts(&self, user: &str, owner: &OwnerReference<'_>) -> bool {
        let group = owner.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let (kind, user) = (&*owner.kind, user);
        match self {
            // The defaults hold no wildcard: compared as text, the owner's
            // kind first (most owners are no controller's the defaults list).
            TrustedControllers::Defaults => DEFAULTS.iter().any(|(owners, users)| {
                owners.iter().any(|o| match o.split_once('.') {
                    Some((k, g)) => k == kind && g == group,
                    None => group.is_empty() && *o == kind,
                }) && users.contains(&user)
            }),
            TrustedControllers::Listed(entries) => entries.iter().any(|e| {
                e.owners.iter().any(|o| match o.as_str().split_once('.') {
                    Some((k, g)) => matches(k, kind) && matches(g, group),
                    None => group.is_empty() && matches(o.as_str(), kind),
                }) && e.users.iter().any(|u| u.matches(user))
            }),
        }
    }

    /// The entries, as the setting writes them.
    pub fn entries(&self) -> Vec<TrustedController> {
        match self {
            TrustedControllers::Defaults => DEFAULTS
                .iter()
                .map(|(owners, users)| TrustedController {
                    owners: owners.iter().map(|o| Glob::new(*o)).collect(),
                    users: users.iter().map(|u| Glob::new(*u)).collect(),
                })
                .collect(),
            TrustedControllers::Listed(entries) => entries.to_vec(),
        }
    }

    /// Checks a listed setting: every entry names owners and users, none
    /// empty.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        let TrustedControllers::Listed(entries) = self else { return Ok(()) };
        for (i, e) in entries.iter().enumerate() {
            for (field, list) in [("owners", &e.owners), ("users", &e.users)] {
                if list.is_empty() {
                    return Err(SettingsError::new(format!("{key}[{i}].{field}"), "must name at least one"));
                }
                non_empty_patterns(&format!("{key}[{i}].{field}"), list)?;
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for TrustedControllers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(TrustedControllers::Listed(Vec::<TrustedController>::deserialize(d)?.into()))
    }
}

impl Serialize for TrustedControllers {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.entries().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dec::Str;

    fn owner<'a>(api_version: &'a str, kind: &'a str) -> OwnerReference<'a> {
        OwnerReference { api_version: Str::from(api_version), kind: Str::from(kind), name: Str::from("x"), controller: Some(true) }
    }

    #[test]
    fn the_defaults_trust_each_controller_for_its_own_kinds() {
        let t = TrustedControllers::Defaults;
        let rs = "system:serviceaccount:kube-system:replicaset-controller";
        assert!(t.trusts(rs, &owner("apps/v1", "ReplicaSet")));
        assert!(!t.trusts(rs, &owner("batch/v1", "Job")), "the ReplicaSet controller makes no Job's pods");
        assert!(t.trusts(KCM, &owner("batch/v1", "CronJob")));
        assert!(!t.trusts("jane@example.com", &owner("apps/v1", "ReplicaSet")), "a user's owner reference proves nothing");
        assert!(t.trusts("system:serviceaccount:lws-system:lws-controller-manager", &owner("v1", "Pod")), "a leader Pod owns its workers");
        assert!(!t.trusts("system:serviceaccount:kube-system:job-controller", &owner("batch.volcano.sh/v1alpha1", "Job")), "groups differ");
        assert!(
            !t.trusts("system:serviceaccount:default:kuberay-operator", &owner("ray.io/v1", "RayCluster")),
            "not installed where the charts put it"
        );
    }

    #[test]
    fn a_listed_setting_replaces_the_defaults() {
        let t: TrustedControllers =
            serde_json::from_str(r#"[{"owners": ["*.ray.io"], "users": ["system:serviceaccount:default:kuberay-operator"]}]"#).unwrap();
        assert!(t.trusts("system:serviceaccount:default:kuberay-operator", &owner("ray.io/v1", "RayJob")));
        assert!(!t.trusts(KCM, &owner("apps/v1", "ReplicaSet")));
        assert!(t.validate("trustedControllers").is_ok());
        let empty: TrustedControllers = serde_json::from_str(r#"[{"owners": [], "users": ["x"]}]"#).unwrap();
        assert_eq!(
            empty.validate("trustedControllers").unwrap_err().to_string(),
            "setting `trustedControllers[0].owners`: must name at least one"
        );
        assert!(serde_json::from_str::<TrustedControllers>(r#"[{"owner": ["x"], "users": ["y"]}]"#).is_err(), "unknown key");
    }

    #[test]
    fn the_defaults_hold_no_wildcard() {
        for (owners, users) in DEFAULTS {
            assert!(owners.iter().chain(users.iter()).all(|p| !p.contains(['*', '?'])), "{owners:?} {users:?}: compared as text");
        }
    }

    #[test]
    fn the_defaults_read_back_as_they_are_written() {
        let written = serde_json::to_string(&TrustedControllers::Defaults).unwrap();
        let read: TrustedControllers = serde_json::from_str(&written).unwrap();
        assert_eq!(read.entries(), TrustedControllers::Defaults.entries());
    }
}
