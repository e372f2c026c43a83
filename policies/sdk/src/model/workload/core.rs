//! Pods and the built-in controllers: Deployment, StatefulSet, ReplicaSet,
//! ReplicationController, DaemonSet, Job, CronJob; and the Kubeflow
//! Notebook, a StatefulSet's template of one pod.

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{ObjectMeta, PodSpec};

use super::template::{Concurrency, CronJobs, JobsBound, PodTemplate, Role, Scale, ScaleWhy};
use super::{JobTemplate, Obj, PodTemplateSpec, Workload};

/// Decodes an object of one of this family's kinds.
///
/// One function per kind, each out of line: inlined together, every
/// kind's object sat in one stack frame, and a fresh instance pays a page
/// fault for each page of shadow stack a request reaches.
#[inline(never)] // Its locals kept out of `decode_workload`'s frame (see there).
pub(super) fn decode<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    use WorkloadKind::*;
    match kind {
        Pod => pod(d),
        Deployment | StatefulSet | ReplicaSet | ReplicationController | DaemonSet | Notebook => replicated(kind, d),
        Job => job(d),
        CronJob => cron_job(d),
        _ => Err(d.invalid_type("a workload of this family")),
    }
}

/// `spec`, where each kind of this family keeps its template.
fn spec_path() -> Path {
    Path::root().key("spec")
}

#[inline(never)]
fn pod<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<PodSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::Pod, o.metadata);
    w.others.push(PodTemplate::bare_pod(o.spec));
    Ok(w)
}

/// Deployment, StatefulSet, ReplicaSet, ReplicationController, DaemonSet,
/// Notebook: a template, and how many pods it makes.
#[inline(never)]
fn replicated<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<Replicated<'a>>::decode(d)?;
    let mut w = Workload::empty(kind, o.metadata);
    let spec = spec_path();
    let scale = match kind {
        WorkloadKind::DaemonSet => Scale { pods: None, why: ScaleWhy::Words("a DaemonSet runs one pod on every matching node") },
        WorkloadKind::Notebook => Scale::one("a Notebook runs one pod"),
        _ => Scale::field(spec.key("replicas"), o.spec.replicas, 1, "1 replica"),
    };
    w.others.extend(o.spec.template.into_template(spec.key("template"), Role::Template, scale));
    Ok(w)
}

#[inline(never)]
fn job<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<JobSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::Job, o.metadata);
    w.suspend = o.spec.suspend;
    w.others.extend(o.spec.into_template(&spec_path()));
    Ok(w)
}

#[inline(never)]
fn cron_job<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<CronJobSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::CronJob, o.metadata);
    let jt = spec_path().key("jobTemplate");
    w.suspend = o.spec.suspend;
    w.job_templates.push(JobTemplate { path: jt.clone(), metadata: o.spec.job_template.metadata.unwrap_or_default() });
    let jobs = jobs_at_once(o.spec.concurrency_policy.as_deref(), o.spec.schedule.as_deref(), &o.spec.job_template.spec);
    let job = o.spec.job_template.spec;
    let spec = jt.key("spec");
    let pods = jobs.times(job.pods_at_once(&spec));
    w.others.extend(job.template.into_template(spec.key("template"), Role::Template, pods));
    Ok(w)
}

/// How many of a CronJob's Jobs run at once: one with `concurrencyPolicy`
/// `Forbid` or `Replace`; with `Allow` (the default), as many as the job
/// template's `activeDeadlineSeconds` spans of the smallest gap between
/// runs of the schedule, rounded up (a Job started at every run ends
/// within the deadline), unless the Jobs start suspended (their deadline
/// then counts from whenever each is resumed); else nothing bounds them.
/// A suspended CronJob counts the same: resumed, it runs as written.
#[inline(never)]
fn jobs_at_once(policy: Option<&str>, schedule: Option<&str>, job: &JobSpec<'_>) -> Scale {
    let policy = match policy {
        None => Concurrency::Unset,
        Some("Allow") => Concurrency::Allow,
        Some("Forbid") => Concurrency::Forbid,
        Some("Replace") => Concurrency::Replace,
        Some(_) => Concurrency::Other,
    };
    let bound = match (policy, job.active_deadline_seconds) {
        (Concurrency::Forbid | Concurrency::Replace, _) => JobsBound::OneAtATime,
        (_, None) => JobsBound::NoDeadline,
        (_, Some(_)) if job.suspend == Some(true) => JobsBound::Suspended,
        (_, Some(deadline)) => match schedule.and_then(crate::base::cron::min_gap_seconds) {
            None => JobsBound::Unreadable,
            Some(gap) => JobsBound::Deadline { deadline, gap, jobs: u64::try_from(deadline).unwrap_or(0).div_ceil(gap.max(1)) },
        },
    };
    let pods = match bound {
        JobsBound::OneAtATime => Some(1),
        JobsBound::Deadline { jobs, .. } => Some(jobs),
        JobsBound::NoDeadline | JobsBound::Unreadable | JobsBound::Suspended => None,
    };
    Scale { pods, why: ScaleWhy::CronJobs(Box::new(CronJobs { policy, bound })) }
}

/// Deployment, StatefulSet, ReplicaSet, ReplicationController, DaemonSet,
/// Notebook: a template and a replica count.
#[derive(Default)]
pub(super) struct Replicated<'a> {
    pub(super) replicas: Option<i64>,
    pub(super) template: PodTemplateSpec<'a>,
}

#[derive(Default)]
pub(super) struct JobSpec<'a> {
    pub(super) parallelism: Option<i64>,
    pub(super) completions: Option<i64>,
    pub(super) suspend: Option<bool>,
    pub(super) active_deadline_seconds: Option<i64>,
    pub(super) template: PodTemplateSpec<'a>,
}

impl<'a> JobSpec<'a> {
    /// The pods that run at once: `parallelism` (default 1), but never
    /// more than `completions` when it is set (the Job reference: "the
    /// actual number of pods running in parallel will not exceed the
    /// number of remaining completions"). `spec` is the Job spec's path.
    #[inline(never)]
    fn pods_at_once(&self, spec: &Path) -> Scale {
        let parallel = Scale::field(spec.key("parallelism"), self.parallelism, 1, "1 pod at a time");
        match self.completions {
            Some(c) if parallel.pods.is_some_and(|p| u64::try_from(c).unwrap_or(0) < p) => Scale {
                pods: Some(u64::try_from(c).unwrap_or(0)),
                why: ScaleWhy::Below(Box::new(ScaleWhy::Field(spec.key("completions"), c)), Box::new(parallel.why)),
            },
            _ => parallel,
        }
    }

    /// The template, with the pods that run at once.
    #[inline(never)] // As `PodTemplateSpec::into_template`.
    pub(super) fn into_template(self, spec: &Path) -> Option<PodTemplate<'a>> {
        let scale = self.pods_at_once(spec);
        self.template.into_template(spec.key("template"), Role::Template, scale)
    }
}

#[derive(Default)]
pub(super) struct CronJobSpec<'a> {
    pub(super) suspend: Option<bool>,
    pub(super) schedule: Option<Str<'a>>,
    pub(super) concurrency_policy: Option<Str<'a>>,
    pub(super) job_template: JobTemplateSpec<'a>,
}

#[derive(Default)]
pub(super) struct JobTemplateSpec<'a> {
    pub(super) metadata: Option<ObjectMeta<'a>>,
    pub(super) spec: JobSpec<'a>,
}

decode_struct!(Replicated { "replicas" => replicas, "template" => template });
decode_struct!(JobSpec {
    "parallelism" => parallelism,
    "completions" => completions,
    "suspend" => suspend,
    "activeDeadlineSeconds" => active_deadline_seconds,
    "template" => template,
});
decode_struct!(CronJobSpec { "suspend" => suspend, "schedule" => schedule, "concurrencyPolicy" => concurrency_policy, "jobTemplate" => job_template });
decode_struct!(JobTemplateSpec { "metadata" => metadata, "spec" => spec });
