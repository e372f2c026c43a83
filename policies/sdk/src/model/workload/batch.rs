//! Batch schedulers' and multi-pod kinds: Volcano Job (tasks), JobSet
//! (replicated jobs) and LeaderWorkerSet (groups of a leader and workers).

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;

use super::core::JobTemplateSpec;
use super::template::{Role, Scale, ScaleWhy};
use super::{JobTemplate, Obj, PodTemplateSpec, Workload};

/// Decodes an object of one of this family's kinds.
#[inline(never)] // Its locals kept out of `decode_workload`'s frame (see there).
pub(super) fn decode<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    use WorkloadKind::*;
    let root = Path::root();
    let spec_path = root.key("spec");
    Ok(match kind {
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
            w.volcano = Some(super::VolcanoJob {
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
        _ => return Err(d.invalid_type("a workload of this family")),
    })
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

/// A JobSet's spec; also the shape of a TrainJob's runtime patch of its
/// training runtime's JobSet (`JobSetSpecPatch`: replicated jobs by name,
/// each a Job template patch).
#[derive(Default)]
pub(super) struct JobSetSpec<'a> {
    pub(super) suspend: Option<bool>,
    pub(super) replicated_jobs: Vec<ReplicatedJob<'a>>,
}

#[derive(Default)]
pub(super) struct ReplicatedJob<'a> {
    pub(super) name: Option<Str<'a>>,
    pub(super) replicas: Option<i64>,
    pub(super) template: JobTemplateSpec<'a>,
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

decode_struct!(VolcanoJobSpec { "minAvailable" => min_available, "queue" => queue, "schedulerName" => scheduler_name, "tasks" => tasks });
decode_struct!(VolcanoTask { "name" => name, "replicas" => replicas, "template" => template });
decode_struct!(JobSetSpec { "suspend" => suspend, "replicatedJobs" => replicated_jobs });
decode_struct!(ReplicatedJob { "name" => name, "replicas" => replicas, "template" => template });
decode_struct!(LwsSpec { "replicas" => replicas, "leaderWorkerTemplate" => leader_worker_template });
decode_struct!(LeaderWorkerTemplate { "size" => size, "leaderTemplate" => leader_template, "workerTemplate" => worker_template });
