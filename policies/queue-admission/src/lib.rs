//! `queue-admission`: batch and training jobs in governed namespaces go
//! through a queue. Kueue-managed kinds carry the `kueue.x-k8s.io/queue-name`
//! label, naming a queue their namespace may use (and, optionally, one for
//! the GPU product they target); Volcano Jobs name `spec.queue` and a
//! `minAvailable` between 1 and their task replicas.

mod settings;

use std::collections::BTreeSet;

use aigov_sdk::base::glob::any_match;
use aigov_sdk::cluster::gpu::{ClaimLookup, ClaimsRead};
use aigov_sdk::model::scheduling::label_demand;
use aigov_sdk::prelude::*;

pub use settings::{NamespaceQueues, Settings};

/// The rule.
pub struct QueueAdmission;

impl Policy for QueueAdmission {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        let Some(w) = req.workload() else { return Ok(v) };
        if !is_queued_kind(w.kind) {
            return Ok(v);
        }
        let ns = req.object_namespace();
        if !any_match(&s.governed_namespaces, ns) {
            return Ok(v);
        }
        // A Job made by a CronJob or a JobSet, a RayCluster made by a
        // RayJob: Kueue queues the parent, which carries the label.
        if req.controller().is_some() {
            return Ok(v);
        }
        // Claims are read only where the answer matters: for
        // `gpuJobsOnly`, and for the product queues of GPU jobs.
        let classes = req.gpu_classes();
        let demand = Demand { ns, cluster, classes: &classes, resolve: s.gpu_jobs_only || !s.product_queues.is_empty() };
        let gpu = requests_gpu(w, s, &demand, &mut v)?;
        if s.gpu_jobs_only && !gpu {
            return Ok(v);
        }
        let allowed = s.allowed_queues.iter().find(|r| any_match(&r.namespaces, ns));
        if w.kind == WorkloadKind::VolcanoJob {
            check_volcano(w, ns, allowed, s, gpu, &demand, &mut v);
            return Ok(v);
        }
        // A CronJob's Jobs get the label from its job template.
        let (meta, labels_path): (&ObjectMeta<'_>, Path) = match (w.kind, w.job_templates.first()) {
            (WorkloadKind::CronJob, Some(t)) => (&t.metadata, t.path.keys(&["metadata", "labels"])),
            _ => (&w.metadata, Path::root().keys(&["metadata", "labels"])),
        };
        let label = &s.queue_label;
        let queue = meta.label(label).filter(|q| !q.is_empty());
        let Some(queue) = queue else {
            let choice = allowed.map(|r| format!(" (one of {} in namespace `{ns}`)", patterns(&r.queues))).unwrap_or_default();
            v.violation(format!(
                "`{labels_path}` has no `{label}` label, so {} bypasses the queues and competes for GPUs outside fair sharing: add `{label}: <queue>`{choice}",
                w.describe()
            ));
            return Ok(v);
        };
        check_namespace_queue(queue, &format!("`{labels_path}.{label}`"), ns, allowed, &mut v);
        if gpu {
            check_product_queue(w, queue, &format!("`{labels_path}.{label}`"), s, &demand, &mut v);
        }
        Ok(v)
    }
}

/// The batch and training kinds this rule governs (as `metadata.yml` lists
/// them): Kueue's job integrations and Volcano Jobs, not serving kinds,
/// Notebooks or long-running RayClusters.
fn is_queued_kind(kind: WorkloadKind) -> bool {
    use WorkloadKind as K;
    matches!(
        kind,
        K::Job
            | K::CronJob
            | K::RayJob
            | K::PyTorchJob
            | K::MpiJob
            | K::TfJob
            | K::JaxJob
            | K::XgBoostJob
            | K::PaddleJob
            | K::TrainJob
            | K::JobSet
            | K::VolcanoJob
    )
}

fn patterns(list: &[Glob]) -> String {
    let names: Vec<&str> = list.iter().map(Glob::as_str).collect();
    quoted(&names)
}

/// Where the rule reads a job's GPU demand: the request's namespace, the
/// cluster its claims are read from, and the DRA device classes that are
/// GPUs (the shared `gpuDeviceClasses`); `resolve` off, every claim is
/// taken for a GPU without reading it (nothing asks which).
struct Demand<'d> {
    ns: &'d str,
    cluster: &'d dyn Cluster,
    classes: &'d [Glob],
    resolve: bool,
}

/// Whether the job's pods may hold GPUs: a template requests a GPU
/// resource, or claims devices of a GPU device class through Dynamic
/// Resource Allocation (its ResourceClaims and ResourceClaimTemplates
/// read through the cluster). A claim that cannot be read (a failed
/// lookup, a template not created yet) may bring GPUs: the job is taken
/// for a GPU job, with a warning, so it is queued rather than let past.
fn requests_gpu(w: &Workload<'_>, s: &Settings, d: &Demand<'_>, v: &mut Verdict) -> Result<bool, Malformed> {
    for t in w.templates() {
        if t.requests_gpu(&s.gpu_resource_names)? || claims_gpu(w, t, d, Some(&mut *v))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether template `t`'s claims bring GPUs (see [`requests_gpu`]); a
/// claim that cannot be read is reported on `v` when given.
fn claims_gpu(w: &Workload<'_>, t: &PodTemplate<'_>, d: &Demand<'_>, v: Option<&mut Verdict>) -> Result<bool, Malformed> {
    if t.spec.resource_claims.is_empty() {
        return Ok(false);
    }
    if !d.resolve {
        return Ok(true);
    }
    match t.read_claims(d.ns, d.cluster, ClaimLookup::shared(d.classes))? {
        ClaimsRead::Read(found) => Ok(!found.is_empty()),
        ClaimsRead::Unread(unread) => {
            if let Some(v) = v {
                unread.warn(&format!("so {} is taken for a GPU job: it may claim GPUs", w.describe()), v);
            }
            Ok(true)
        }
    }
}

fn check_namespace_queue(queue: &str, field: &str, ns: &str, allowed: Option<&NamespaceQueues>, v: &mut Verdict) {
    if let Some(r) = allowed
        && !any_match(&r.queues, queue)
    {
        v.violation(format!("{field} is `{queue}`, a queue namespace `{ns}` may not use: use one of {}", patterns(&r.queues)));
    }
}

/// The GPU products the job's GPU templates pin, in order. A TrainJob's
/// override or runtime patch pins them for the trainer's pods, whose GPUs
/// are the trainer's (`Workload::gpu_holder`).
fn products(w: &Workload<'_>, s: &Settings, d: &Demand<'_>) -> Result<BTreeSet<String>, Malformed> {
    let mut out = BTreeSet::new();
    for t in w.templates() {
        let Some(holder) = w.gpu_holder(t) else { continue };
        // A claim that cannot be read was reported when the job was found
        // to hold GPUs.
        if (holder.requests_gpu(&s.gpu_resource_names)? || claims_gpu(w, holder, d, None)?)
            && let Some(values) = label_demand(&t.spec, &s.gpu_product_label).values()
        {
            out.extend(values.iter().cloned());
        }
    }
    Ok(out)
}

fn check_product_queue(w: &Workload<'_>, queue: &str, field: &str, s: &Settings, d: &Demand<'_>, v: &mut Verdict) {
    if s.product_queues.is_empty() {
        return;
    }
    // Requests were read once already, so this cannot fail here; an error
    // would only repeat the malformed input reported before.
    let Ok(products) = products(w, s, d) else { return };
    for p in products {
        if let Some(queues) = s.product_queues.get(&p)
            && !any_match(queues, queue)
        {
            v.violation(format!(
                "{field} is `{queue}`, but {} targets GPU product `{p}` (`{}`), whose queues are {}: use one of them, so that the job waits for and is charged to the right GPUs",
                w.describe(),
                s.gpu_product_label,
                patterns(queues)
            ));
        }
    }
}

fn check_volcano(w: &Workload<'_>, ns: &str, allowed: Option<&NamespaceQueues>, s: &Settings, gpu: bool, d: &Demand<'_>, v: &mut Verdict) {
    let Some(vol) = &w.volcano else { return };
    // Volcano's webhook sets `schedulerName: volcano` when it is empty.
    if vol.scheduler_name.as_deref().is_some_and(|n| !n.is_empty() && n != "volcano") {
        return;
    }
    // Volcano reads an absent `replicas` as 0.
    let total: i64 = vol.task_replicas.iter().map(|r| r.unwrap_or(0)).fold(0, i64::saturating_add);
    if let Some(m) = vol.min_available {
        if m < 1 {
            v.violation(format!(
                "`spec.minAvailable` is {m}: gang scheduling needs at least 1 pod to start the job (Volcano replaces 0 by every task's replicas); set it to the number of pods the job needs at once, between 1 and {total}"
            ));
        } else if m > total {
            v.violation(format!(
                "`spec.minAvailable` is {m}, more than the {total} pods of all tasks' `replicas` together, so the job can never be scheduled: set it to at most {total}"
            ));
        }
    }
    match vol.queue.as_deref().filter(|q| !q.is_empty()) {
        None if s.require_volcano_queue => {
            let choice = allowed.map(|r| format!(" (one of {} in namespace `{ns}`)", patterns(&r.queues))).unwrap_or_default();
            v.violation(format!(
                "`spec.queue` is not set, so Volcano puts {} in its `default` queue, outside the team's share: set `spec.queue`{choice}",
                w.describe()
            ));
        }
        None => {}
        Some(q) => {
            check_namespace_queue(q, "`spec.queue`", ns, allowed, v);
            if gpu {
                check_product_queue(w, q, "`spec.queue`", s, d, v);
            }
        }
    }
}

aigov_sdk::export_policy!(QueueAdmission);
