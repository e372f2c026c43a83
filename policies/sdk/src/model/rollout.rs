//! What an UPDATE makes controllers create: new pods from a pod template
//! that changed (a Deployment's new ReplicaSet, a StatefulSet or DaemonSet
//! rolling its pods), from a template scaled up, or from a workload
//! resumed. An update that changes neither (the parent's labels, a scale
//! down, status) creates nothing.
//!
//! Cheap by design: the old and new texts of each template and of each
//! count are found in the request text ([`json::find`]) and compared as
//! bytes and numbers; nothing more is decoded. Only an UPDATE that would
//! keep a violation the old object already had asks
//! ([`crate::runtime::entry`]).

use crate::decode::json;
use crate::decode::path::{Path, Seg};
use crate::model::kind::WorkloadKind;
use crate::model::request::{Operation, Request};

/// Why an UPDATE makes a controller create pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A pod template changed, and the controller rolls its pods (or, for
    /// a CronJob, makes every later Job from it).
    Template,
    /// A count of pods grew (`replicas`, `minReplicas`, `parallelism`).
    ScaleUp,
    /// A suspended workload was resumed (`suspend: true` to `false`).
    Resumed,
}

/// What an UPDATE makes a controller create, and from where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollout {
    /// The controller that creates them, as a data scientist knows it
    /// (`deployment-controller`, `KubeRay operator`).
    pub by: &'static str,
    /// Why.
    pub cause: Cause,
    /// The parts of the object the new pods are built from (template
    /// paths; a CronJob's `spec.jobTemplate`).
    pub from: Vec<Path>,
    /// The kinds created on the way to the pods, pods last (a
    /// Deployment's ReplicaSet, then its pods).
    pub creates: &'static [WorkloadKind],
}

impl Rollout {
    /// Whether the new pods would carry the violation `message`, and if so
    /// why, for the end of the violation: it names a field inside a part
    /// they are built from (`` `spec.template.spec.runtimeClassName` ``), or
    /// names no field of the object at all (a problem of the whole
    /// workload, such as a namespace that cannot be read). One that names
    /// only fields elsewhere (the parent's own `metadata.labels`) is the
    /// parent's alone.
    pub fn carries(&self, message: &str) -> Option<String> {
        let at = match self.from.iter().find(|p| names_inside(message, &p.to_string())) {
            Some(at) => at,
            None if backticked(message).any(is_field_path) => return None,
            None => self.from.first()?,
        };
        let what = match self.cause {
            Cause::Template => "this change of",
            Cause::ScaleUp => "this scale-up of",
            Cause::Resumed => "resuming",
        };
        Some(format!(
            "{what} the workload makes the {} create new pods from `{at}`, and they would be refused: fix it in this update",
            self.by
        ))
    }
}

/// The texts between backticks in `message`, in order.
fn backticked(message: &str) -> impl Iterator<Item = &str> {
    message.split('`').skip(1).step_by(2)
}

/// Whether `text` is a path into the object (`metadata.labels`,
/// `spec.template.spec`), not a value.
fn is_field_path(text: &str) -> bool {
    ["metadata", "spec"]
        .iter()
        .any(|root| text.strip_prefix(root).is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')))
}

/// Whether `message` names `` `path` `` or a field below it in backticks.
fn names_inside(message: &str, path: &str) -> bool {
    !path.is_empty()
        && backticked(message)
            .any(|t| t.strip_prefix(path).is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')))
}

/// The controller that creates pods for `kind`, as its users call it.
fn controller(kind: WorkloadKind) -> &'static str {
    use WorkloadKind::*;
    match kind {
        Pod => "kubelet",
        Deployment => "deployment-controller",
        StatefulSet => "statefulset-controller",
        DaemonSet => "daemonset-controller",
        ReplicaSet => "replicaset-controller",
        ReplicationController => "replication-controller",
        Job => "job-controller",
        CronJob => "cronjob-controller",
        RayCluster | RayJob | RayService => "KubeRay operator",
        PyTorchJob | MpiJob | TfJob | JaxJob | XgBoostJob | PaddleJob => "training operator",
        TrainJob => "Kubeflow Trainer",
        Notebook => "notebook controller",
        InferenceService => "KServe controller",
        VolcanoJob => "Volcano job controller",
        JobSet => "JobSet controller",
        LeaderWorkerSet => "LeaderWorkerSet controller",
    }
}

/// The kinds the controllers create from a workload of `kind`, at every
/// depth, down to its pods.
fn creates(kind: WorkloadKind) -> &'static [WorkloadKind] {
    use WorkloadKind::*;
    match kind {
        Pod => &[],
        Deployment => &[ReplicaSet, Pod],
        CronJob => &[Job, Pod],
        RayJob => &[RayCluster, Job, Pod],
        RayService => &[RayCluster, Pod],
        MpiJob => &[Job, Pod],
        TrainJob => &[JobSet, Job, Pod],
        JobSet => &[Job, Pod],
        Notebook | LeaderWorkerSet => &[StatefulSet, Pod],
        InferenceService => &[Deployment, ReplicaSet, Pod],
        StatefulSet
        | DaemonSet
        | ReplicaSet
        | ReplicationController
        | Job
        | RayCluster
        | PyTorchJob
        | TfJob
        | JaxJob
        | XgBoostJob
        | PaddleJob
        | VolcanoJob => &[Pod],
    }
}

/// Whether a change of a pod template of `kind` makes its controller
/// create pods from it: rolling updates (Deployment unless paused,
/// StatefulSet and DaemonSet unless `OnDelete`, LeaderWorkerSet, the
/// notebook controller's StatefulSet), KServe's new revision, a RayService's
/// new RayCluster, a CronJob's later Jobs. A ReplicaSet's, a Job's (mutable
/// only while suspended), KubeRay's RayCluster and the training operators'
/// new templates reach only pods created later for another reason.
fn template_rolls(kind: WorkloadKind, new: &str) -> bool {
    use WorkloadKind::*;
    let on_delete = || json::find(new, &Path::root().keys(&["spec", "updateStrategy", "type"])) == Some("\"OnDelete\"");
    match kind {
        Deployment => json::find(new, &Path::root().keys(&["spec", "paused"])) != Some("true"),
        StatefulSet | DaemonSet => !on_delete(),
        CronJob | InferenceService | Notebook | LeaderWorkerSet | RayService => true,
        _ => false,
    }
}

/// A count at `path`, or `default` when absent; `None` when it is not a
/// whole number.
fn count(text: &str, path: &Path, default: i64) -> Option<i64> {
    match json::find(text, path) {
        None | Some("null") => Some(default),
        Some(n) => n.trim().parse().ok(),
    }
}

/// Whether a count at `path` grew from `old` to `new`.
fn grew(old: &str, new: &str, path: &Path, default: i64) -> bool {
    matches!((count(old, path, default), count(new, path, default)), (Some(o), Some(n)) if n > o)
}

/// The counts that size a template at `template` of `kind`: `replicas`,
/// `minReplicas` and `parallelism` beside a `template` (a Deployment's
/// `spec.replicas`, a worker group's, a Kubeflow replica spec's, a Job's
/// `spec.parallelism`), an InferenceService component's `minReplicas`, a
/// LeaderWorkerSet's `spec.replicas`.
fn counts(kind: WorkloadKind, template: &Path) -> Vec<Path> {
    let mut out = Vec::new();
    match template.0.split_last() {
        Some((Seg::Key(k), parent)) if k == "template" => {
            let parent = Path(parent.to_vec());
            out.extend(["replicas", "minReplicas", "parallelism"].map(|k| parent.key(k)));
        }
        _ if kind == WorkloadKind::InferenceService => out.push(template.key("minReplicas")),
        _ => {}
    }
    if kind == WorkloadKind::LeaderWorkerSet {
        out.push(Path::root().keys(&["spec", "replicas"]));
    }
    out
}

impl Request<'_> {
    /// What this UPDATE makes controllers create from the object: new pods
    /// when a pod template changed and the controller rolls it, when a
    /// count of pods grew, or when a suspended workload is resumed; `None`
    /// for any other request, and for an update that creates nothing.
    pub fn rollout(&self) -> Option<Rollout> {
        if self.operation() != Operation::Update || self.sub_resource().is_some() {
            return None;
        }
        let workload = self.workload()?;
        let kind = workload.kind;
        if kind == WorkloadKind::Pod {
            return None;
        }
        let (old, new) = (self.old_object_text()?, self.object_text()?);
        let templates: Vec<&Path> = workload.templates().map(|t| t.path()).filter(|p| !p.is_root()).collect();
        // A CronJob's Jobs are built from the whole job template; the
        // notebook controller copies the Notebook's labels onto its pod,
        // KServe an InferenceService's labels and annotations onto its
        // components' pods, KubeRay a RayJob's or RayService's onto its
        // RayCluster.
        let from = |ps: Vec<&Path>| -> Vec<Path> {
            let mut from: Vec<Path> = match kind {
                WorkloadKind::CronJob => vec![Path::root().keys(&["spec", "jobTemplate"])],
                _ => ps.into_iter().cloned().collect(),
            };
            let copied: &[&str] = match kind {
                WorkloadKind::Notebook => &["labels"],
                WorkloadKind::InferenceService | WorkloadKind::RayJob | WorkloadKind::RayService => &["labels", "annotations"],
                _ => &[],
            };
            from.extend(copied.iter().map(|k| Path::root().keys(&["metadata", k])));
            from
        };
        let by = controller(kind);
        let resumed = ["spec.suspend", "spec.runPolicy.suspend"].iter().any(|p| {
            let p = Path::root().keys(&p.split('.').collect::<Vec<_>>());
            json::find(old, &p) == Some("true") && json::find(new, &p) != Some("true")
        });
        if resumed {
            return Some(Rollout { by, cause: Cause::Resumed, from: from(templates), creates: creates(kind) });
        }
        if template_rolls(kind, new) {
            let changed = templates.iter().any(|p| json::find(old, p) != json::find(new, p))
                || (kind == WorkloadKind::CronJob
                    && json::find(old, &Path::root().keys(&["spec", "jobTemplate"]))
                        != json::find(new, &Path::root().keys(&["spec", "jobTemplate"])));
            if changed {
                return Some(Rollout { by, cause: Cause::Template, from: from(templates), creates: creates(kind) });
            }
        }
        let default = if matches!(kind, WorkloadKind::RayCluster | WorkloadKind::RayJob | WorkloadKind::RayService) { 0 } else { 1 };
        let scaled: Vec<&Path> = templates.iter().copied().filter(|t| counts(kind, t).iter().any(|c| grew(old, new, c, default))).collect();
        (!scaled.is_empty()).then(|| Rollout { by, cause: Cause::ScaleUp, from: from(scaled), creates: creates(kind) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(kind: &str, api_version: &str, old: &str, new: &str) -> Option<Rollout> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let text = format!(
            r#"{{"uid":"u","kind":{{"group":"{group}","version":"{version}","kind":"{kind}"}},"operation":"UPDATE","userInfo":{{"username":"u"}},"object":{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"d"}},"spec":{new}}},"oldObject":{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"d"}},"spec":{old}}}}}"#
        );
        let r = Request::parse(&text).ok()?;
        r.rollout()
    }

    const T1: &str = r#"{"spec":{"containers":[{"name":"c","image":"a:1"}]}}"#;
    const T2: &str = r#"{"spec":{"containers":[{"name":"c","image":"a:2"}]}}"#;

    #[test]
    fn a_deployment_rolls_on_a_template_change_and_grows_on_a_scale_up() {
        let d = |r: &str, t: &str| format!(r#"{{"replicas":{r},"template":{t}}}"#);
        let r = update("Deployment", "apps/v1", &d("1", T1), &d("1", T2)).expect("a new template");
        assert_eq!((r.by, r.cause), ("deployment-controller", Cause::Template));
        let why = r.carries("`spec.template.spec.runtimeClassName` is not set").expect("inside the template");
        assert!(why.contains("create new pods from `spec.template`"), "{why}");
        assert!(r.carries("`metadata.labels` lacks `team`").is_none(), "the Deployment's own labels are not its pods'");
        assert!(r.carries("`spec.templates` is odd").is_none());
        assert!(r.carries("the labels of namespace `ml` could not be read").is_some(), "a problem of the whole workload");
        assert_eq!(update("Deployment", "apps/v1", &d("1", T1), &d("3", T1)).map(|r| r.cause), Some(Cause::ScaleUp));
        assert_eq!(update("Deployment", "apps/v1", &d("3", T1), &d("1", T1)), None, "a scale-down creates nothing");
        assert_eq!(update("Deployment", "apps/v1", &d("1", T1), &d("1", T1)), None);
        let paused = format!(r#"{{"paused":true,"template":{T2}}}"#);
        assert_eq!(update("Deployment", "apps/v1", &d("1", T1), &paused), None, "a paused Deployment makes no ReplicaSet");
    }

    #[test]
    fn what_rolls_and_what_waits() {
        let s = |strategy: &str, t: &str| format!(r#"{{"updateStrategy":{{"type":"{strategy}"}},"template":{t}}}"#);
        assert!(update("StatefulSet", "apps/v1", &s("RollingUpdate", T1), &s("RollingUpdate", T2)).is_some());
        assert!(update("DaemonSet", "apps/v1", &s("OnDelete", T1), &s("OnDelete", T2)).is_none());
        let rs = |r: &str, t: &str| format!(r#"{{"replicas":{r},"template":{t}}}"#);
        assert!(update("ReplicaSet", "apps/v1", &rs("2", T1), &rs("2", T2)).is_none(), "only later pods get a ReplicaSet's new template");
        assert!(update("ReplicaSet", "apps/v1", &rs("2", T1), &rs("4", T1)).is_some());
        let job = |s: &str, p: &str| format!(r#"{{"suspend":{s},"parallelism":{p},"template":{T1}}}"#);
        assert_eq!(update("Job", "batch/v1", &job("true", "1"), &job("false", "1")).map(|r| r.cause), Some(Cause::Resumed));
        assert_eq!(update("Job", "batch/v1", &job("false", "1"), &job("false", "2")).map(|r| r.cause), Some(Cause::ScaleUp));
        let cron = |t: &str| format!(r#"{{"schedule":"* * * * *","jobTemplate":{{"spec":{{"template":{t}}}}}}}"#);
        let r = update("CronJob", "batch/v1", &cron(T1), &cron(T2)).expect("later Jobs");
        assert!(r.carries("`spec.jobTemplate.spec.template.spec.containers[0]` ...").is_some());
        let ray = |n: &str| {
            format!(r#"{{"headGroupSpec":{{"template":{T1}}},"workerGroupSpecs":[{{"groupName":"g","replicas":{n},"template":{T1}}}]}}"#)
        };
        let r = update("RayCluster", "ray.io/v1", &ray("1"), &ray("2")).expect("more workers");
        assert!(r.carries("`spec.workerGroupSpecs[0].template.spec` ...").is_some());
        assert!(r.carries("`spec.headGroupSpec.template.spec` ...").is_none(), "the head is not created again");
    }
}
