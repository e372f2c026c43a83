//! `workload-classification`: every workload, and every pod template inside
//! it, carries the Kyverno blog's data platform classification: `team`,
//! `cost-center`, `workload-type` (`jupyter-notebook`, `ml-training`,
//! `data-processing`, `model-inference`, `report-generation`) and
//! `compute-type` (`gpu`, `cpu`, `mixed`); and `compute-type` tells the
//! truth about the GPUs requested.
//!
//! With `allowedLabelKeys`, workloads carry only the label keys a list
//! allows (what a trusted controller made excepted: it adds keys of its
//! own). With `namespaceLabels`, Namespaces are held to labels of their
//! own (the team and cost center that tenancy and quota rules select
//! namespaces by).
//!
//! The labels are how a shared data platform attributes cost, schedules by
//! kind of work, and reports who runs what. Cost tools read the labels of
//! pods, which come from the pod templates, not from the Deployment or
//! RayCluster around them, so both are checked (or, with
//! `podTemplatesOnly`, the pod templates alone). Where labels sit, and the
//! hint to copy the object's labels to a template that lacks them, are the
//! SDK's ([`aigov_sdk::label_sets`]), shared with `opencost-labels`.

mod settings;

use aigov_sdk::model::listed::object_meta;
use aigov_sdk::prelude::*;
use aigov_sdk::{COMPUTE_TYPE_LABEL, LabelScope, LabelSet, LabelSite, PodsOnly, compute_type_conflict, label_sets};

pub use settings::Settings;

/// The rule.
pub struct WorkloadClassification;

impl Policy for WorkloadClassification {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // Subresources and objects being deleted never reach the rule (the
        // SDK admits them); DELETE carries no workload.
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        if is_namespace(req) {
            for message in namespace(req, settings)? {
                verdict.violation(message);
            }
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        for (key, message) in check(workload, req.controller().is_some(), settings)? {
            verdict.violation_keyed(key, message);
        }
        Ok(verdict)
    }
}

/// Whether the request is for a Namespace (`namespaces` is in the rule's
/// webhook rules for `namespaceLabels`).
fn is_namespace(req: &Request<'_>) -> bool {
    let kind = req.kind();
    kind.group.is_empty() && &*kind.kind == "Namespace"
}

/// A Namespace's problems with `namespaceLabels` (none set: not read).
fn namespace(req: &Request<'_>, s: &Settings) -> Result<Vec<String>, Malformed> {
    if s.namespace_labels.0.is_empty() {
        return Ok(Vec::new());
    }
    let Some(text) = req.object_text() else { return Ok(Vec::new()) };
    let meta = object_meta(text, "the Namespace")?;
    Ok(s.namespace_labels.check(&meta.labels, "metadata.labels"))
}

/// Why pod labels matter here, for the hint on a template missing labels.
const PODS_WHY: &str = "cost tools attribute cost by the labels of the pods";

/// What each pod template requests: the first container with GPUs
/// (`container `w` in worker group `gpu` requests 1 `nvidia.com/gpu``),
/// and whether it has resource claims, which may bring GPUs unseen.
struct Compute<'t, 'a> {
    template: &'t PodTemplate<'a>,
    gpu_user: Option<String>,
    claims: bool,
}

fn compute<'t, 'a>(w: &'t Workload<'a>, s: &Settings) -> Result<Vec<Compute<'t, 'a>>, Malformed> {
    w.templates()
        .map(|t| {
            let gpu_user = t.gpu_requests(&s.gpu_resource_names)?.into_iter().next().map(|g| {
                let who = if g.container_name.is_empty() {
                    format!("the container at `{}`", g.container_path)
                } else {
                    format!("container `{}`", g.container_name)
                };
                let at = if t.role == Role::Pod { String::new() } else { format!(" in {}", t.describe()) };
                let what = g.resources.iter().map(|(name, n)| format!("{n} `{name}`")).collect::<Vec<_>>().join(" and ");
                format!("{who}{at} requests {what}")
            });
            Ok(Compute { template: t, gpu_user, claims: !t.spec.resource_claims.is_empty() })
        })
        .collect()
}

/// Every problem, in document order, as `(identity, message)`: for each
/// label set, its labels, then its `compute-type` against the GPUs.
/// `by_controller`: the object is a trusted controller's
/// ([`Request::controller`]).
pub fn check(w: &Workload<'_>, by_controller: bool, s: &Settings) -> Result<Vec<(String, String)>, Malformed> {
    let scope = LabelScope { object: !s.pod_templates_only, pod_templates: s.require_on_pod_templates };
    let pods = if s.check_compute_type { compute(w, s)? } else { Vec::new() };
    let mut out = Vec::new();
    // What a trusted controller made carries keys of its own
    // (`pod-template-hash`, `controller-revision-hash`, `ray.io/node-type`),
    // and its owner's labels were checked when the owner was submitted.
    let keys_checked = s.allowed_label_keys.as_deref().filter(|_| !by_controller);
    for set in label_sets(w, scope, by_controller) {
        out.extend(s.required_labels.check_set(&set, &w.metadata.labels, PODS_WHY));
        if let Some(allowed) = keys_checked
            && let Some(m) = keys_not_allowed(w, &set, allowed)
        {
            out.push((m.clone(), m));
        }
        if s.check_compute_type
            && let Some(m) = compute_type(w, &set, &pods, by_controller)
        {
            out.push((m.clone(), m));
        }
    }
    Ok(out)
}

/// The keys the API server writes into a Job's pod template before
/// validating webhooks see it (its strategy's `generateSelector`, unless
/// `manualSelector`): every Job submitted carries them.
const JOB_TEMPLATE_KEYS: [&str; 4] = ["batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"];

/// `allowedLabelKeys`: the keys of a label set it does not allow, in one
/// message (keys in order), or `None`.
fn keys_not_allowed(w: &Workload<'_>, set: &LabelSet<'_, '_>, allowed: &[Glob]) -> Option<String> {
    let job_template = w.kind == WorkloadKind::Job && set.site == LabelSite::PodTemplate;
    let refused: Vec<&str> = set
        .labels
        .keys()
        .map(|k| &**k)
        .filter(|k| !(job_template && JOB_TEMPLATE_KEYS.contains(k)))
        .filter(|k| !allowed.iter().any(|a| a.matches(k)))
        .collect();
    let path = &set.path;
    let allowed: Vec<&str> = allowed.iter().map(Glob::as_str).collect();
    let may = format!("labels here may only use the keys {} (`allowedLabelKeys`)", quoted(&allowed));
    match refused.as_slice() {
        [] => None,
        [one] => Some(format!("label key `{one}` in `{path}` is not allowed: {may}; remove it, or ask your platform team to allow it")),
        many => Some(format!(
            "label keys {} in `{path}` are not allowed: {may}; remove them, or ask your platform team to allow them",
            quoted(many)
        )),
    }
}

/// A `compute-type` that contradicts the GPUs: `cpu` on labels covering a
/// pod that requests GPUs, or `gpu`/`mixed` on a workload none of whose
/// pods does. A pod template may carry its workload's `gpu` or `mixed`
/// (the RayCluster's head, say, is part of a GPU cluster), and a template
/// with resource claims may get GPUs this rule does not look up. So a Pod
/// a controller made (`by_controller`) may carry its workload's `gpu` or
/// `mixed` too, judged when its owner was: the RayCluster's CPU head pod
/// of a GPU cluster. A TrainJob's training runtime may give any of its
/// pods GPUs the request does not show, so `gpu` and `mixed` are accepted
/// on a TrainJob; the labels of an override of the trainer's pods speak
/// for the trainer's GPUs. Other values are left to the label check.
fn compute_type(w: &Workload<'_>, set: &LabelSet<'_, '_>, pods: &[Compute<'_, '_>], by_controller: bool) -> Option<String> {
    let value = set.labels.get(COMPUTE_TYPE_LABEL)?;
    // With `podTemplatesOnly`, an InferenceService's label speaks for the
    // components that take it, not those that set their own: for none,
    // when every component sets its own.
    if let PodsOnly::Inherited(components) = &set.pods_only
        && components.iter().all(|c| c.contains_key(COMPUTE_TYPE_LABEL))
    {
        return None;
    }
    let takes = |p: &&Compute<'_, '_>| match set.pods_only {
        PodsOnly::Inherited(_) => !p.template.labels().is_some_and(|l| l.contains_key(COMPUTE_TYPE_LABEL)),
        _ => true,
    };
    let mut user = pods.iter().filter(|p| set.covers(p.template.path())).filter(takes).find_map(|p| p.gpu_user.as_deref());
    if user.is_none() && set.partial {
        // A TrainJob's override or runtime patch labels the pods it shapes:
        // the trainer's, whose GPUs its `resourcesPerNode` says.
        let shaped = w.templates().find(|t| t.role == Role::Override && set.covers(t.path())).and_then(|t| w.gpu_holder(t));
        user = shaped.and_then(|h| pods.iter().find(|p| std::ptr::eq(p.template, h))).and_then(|p| p.gpu_user.as_deref());
    }
    let controllers_pod = by_controller && !w.kind.owns_templates();
    // A TrainJob's training runtime may give any of its pods GPUs, which
    // the request does not show.
    let runtime = w.templates().any(|t| t.is_partial());
    let may_get_gpus = controllers_pod || runtime || pods.iter().any(|p| p.gpu_user.is_some() || p.claims);
    compute_type_conflict(&set.path, value, user, may_get_gpus, || {
        if w.kind.owns_templates() { format!("no pod of the {} requests GPUs", w.kind.kind()) } else { "the Pod requests no GPUs".into() }
    })
}

aigov_sdk::export_policy!(WorkloadClassification);

#[cfg(test)]
mod tests;
