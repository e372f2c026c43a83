//! `workload-classification`: every workload, and every pod template inside
//! it, carries the Kyverno blog's data platform classification: `team`,
//! `cost-center`, `workload-type` (`jupyter-notebook`, `ml-training`,
//! `data-processing`, `model-inference`, `report-generation`) and
//! `compute-type` (`gpu`, `cpu`, `mixed`); and `compute-type` tells the
//! truth about the GPUs requested, in containers' resources or through DRA
//! claims of GPU device classes (read through the cluster, and only for
//! pods with claims that no container's resources already answer for).
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

use std::cell::OnceCell;

use aigov_sdk::cluster::gpu::{ClaimLookup, ClaimsRead, Unread, UnreadClaims, shared_default_gpu_device_classes};
use aigov_sdk::model::listed::object_meta;
use aigov_sdk::prelude::*;
use aigov_sdk::{COMPUTE_TYPE_LABEL, LabelScope, LabelSet, LabelSite, PodsOnly, compute_type_conflict, label_sets};

pub use settings::Settings;

/// The rule.
pub struct WorkloadClassification;

impl Policy for WorkloadClassification {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
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
        let claims = Claims { request: Some(req), cluster };
        for finding in check(workload, req.controller().is_some(), settings, &claims)? {
            match finding {
                Finding::Violation(key, message) => verdict.violation_keyed(key, message),
                Finding::Warning(message) => verdict.warn(message),
            }
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

/// Where the templates' DRA claims are read: in the object's namespace,
/// through the cluster, devices of the classes the shared
/// `gpuDeviceClasses` lists counting as GPUs. Both are read from the
/// request only when a template's claims are, so that a workload without
/// claims costs nothing more.
pub struct Claims<'c, 'a> {
    /// The request; `None`: namespace `default` and the default classes.
    pub request: Option<&'c Request<'a>>,
    /// The cluster the claims are looked up in.
    pub cluster: &'c dyn Cluster,
}

/// What the rule finds: a violation (its identity, its message) or a
/// warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A problem that refuses the request, with its identity for
    /// `allowExistingViolations`.
    Violation(String, String),
    /// A warning on an admitted request.
    Warning(String),
}

/// What each pod template requests: the first container with GPUs
/// (`container `w` in worker group `gpu` requests 1 `nvidia.com/gpu``),
/// and what its DRA claims bring, read the first time a label asks.
struct Compute<'t, 'a> {
    template: &'t PodTemplate<'a>,
    gpu_user: Option<String>,
    claimed: OnceCell<Claimed>,
}

/// What a template's claims bring.
enum Claimed {
    /// No GPU (no claims, or claims of other device classes only).
    Nothing,
    /// GPUs: the first claim that brings them, described.
    Gpus(String),
    /// Claims that could not be read.
    Unread(UnreadClaims),
}

/// Whether a template's pods hold GPUs.
enum Holds<'p> {
    No,
    Gpus(&'p str),
    Unknown(&'p UnreadClaims),
}

impl Compute<'_, '_> {
    /// `` in worker group `gpu` `` (nothing for a Pod).
    fn at(&self) -> String {
        if self.template.role == Role::Pod { String::new() } else { format!(" in {}", self.template.describe()) }
    }

    /// Whether the pods hold GPUs: through a container's resources, else
    /// through their claims, read here the first time (nothing is looked
    /// up for a template without claims).
    fn holds(&self, claims: &Claims<'_, '_>) -> Result<Holds<'_>, Malformed> {
        if let Some(user) = &self.gpu_user {
            return Ok(Holds::Gpus(user));
        }
        if self.template.spec.resource_claims.is_empty() {
            return Ok(Holds::No);
        }
        let claimed = match self.claimed.get() {
            Some(c) => c,
            None => {
                let classes = claims.request.map_or_else(shared_default_gpu_device_classes, Request::gpu_classes);
                let namespace = claims.request.map_or("default", Request::object_namespace);
                let read = self.template.read_claims(namespace, claims.cluster, ClaimLookup::shared(&classes))?;
                let c = match read {
                    ClaimsRead::Read(found) => found.first().map_or(Claimed::Nothing, |c| Claimed::Gpus(c.describe_in(&self.at()))),
                    ClaimsRead::Unread(u) => Claimed::Unread(u),
                };
                self.claimed.get_or_init(|| c)
            }
        };
        Ok(match claimed {
            Claimed::Nothing => Holds::No,
            Claimed::Gpus(d) => Holds::Gpus(d),
            Claimed::Unread(u) => Holds::Unknown(u),
        })
    }
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
            Ok(Compute { template: t, gpu_user, claimed: OnceCell::new() })
        })
        .collect()
}

/// Every problem, in document order, as findings: for each label set, its
/// labels, then its `compute-type` against the GPUs (the DRA claims read
/// through `claims` when a label asks). `by_controller`: the object is a
/// trusted controller's ([`Request::controller`]).
pub fn check(w: &Workload<'_>, by_controller: bool, s: &Settings, claims: &Claims<'_, '_>) -> Result<Vec<Finding>, Malformed> {
    let scope = LabelScope { object: !s.pod_templates_only, pod_templates: s.require_on_pod_templates };
    let pods = if s.check_compute_type { compute(w, s)? } else { Vec::new() };
    let mut out = Vec::new();
    // What a trusted controller made carries keys of its own
    // (`pod-template-hash`, `controller-revision-hash`, `ray.io/node-type`),
    // and its owner's labels were checked when the owner was submitted.
    let keys_checked = s.allowed_label_keys.as_deref().filter(|_| !by_controller);
    for set in label_sets(w, scope, by_controller) {
        out.extend(s.required_labels.check_set(&set, &w.metadata.labels, PODS_WHY).into_iter().map(|(k, m)| Finding::Violation(k, m)));
        if let Some(allowed) = keys_checked
            && let Some(m) = keys_not_allowed(w, &set, allowed)
        {
            out.push(Finding::Violation(m.clone(), m));
        }
        if s.check_compute_type
            && let Some(f) = compute_type(w, &set, &pods, by_controller, claims)?
        {
            out.push(f);
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
/// pod that requests GPUs (in a container's resources, or through a DRA
/// claim of a GPU device class), or `gpu`/`mixed` on a workload none of
/// whose pods does. A pod template may carry its workload's `gpu` or
/// `mixed` (the RayCluster's head, say, is part of a GPU cluster). So a Pod
/// a controller made (`by_controller`) may carry its workload's `gpu` or
/// `mixed` too, judged when its owner was: the RayCluster's CPU head pod
/// of a GPU cluster. A TrainJob's training runtime may give any of its
/// pods GPUs the request does not show, so `gpu` and `mixed` are accepted
/// on a TrainJob; the labels of an override of the trainer's pods speak
/// for the trainer's GPUs. Other values are left to the label check.
///
/// Claims are read only where the answer matters: for `cpu`, when no
/// container of the pods it covers requests GPUs; for `gpu` and `mixed`,
/// when no container of the workload does. Claims that cannot be read
/// ([`UnreadClaims`]) may bring GPUs: a ResourceClaimTemplate not created
/// yet, or no cluster to ask, leaves the label unchecked with a warning
/// (the pods are checked when they are created); a failed lookup takes the
/// pods for GPU pods, as `queue-admission` does, so `cpu` is refused and
/// `gpu` or `mixed` admitted with a warning.
fn compute_type(
    w: &Workload<'_>,
    set: &LabelSet<'_, '_>,
    pods: &[Compute<'_, '_>],
    by_controller: bool,
    claims: &Claims<'_, '_>,
) -> Result<Option<Finding>, Malformed> {
    let Some(value) = set.labels.get(COMPUTE_TYPE_LABEL) else { return Ok(None) };
    let value: &str = value;
    // With `podTemplatesOnly`, an InferenceService's label speaks for the
    // components that take it, not those that set their own: for none,
    // when every component sets its own.
    if let PodsOnly::Inherited(components) = &set.pods_only
        && components.iter().all(|c| c.contains_key(COMPUTE_TYPE_LABEL))
    {
        return Ok(None);
    }
    let takes = |p: &&Compute<'_, '_>| match set.pods_only {
        PodsOnly::Inherited(_) => !p.template.labels().is_some_and(|l| l.contains_key(COMPUTE_TYPE_LABEL)),
        _ => true,
    };
    let path = &set.path;
    let violation = |m: String| Some(Finding::Violation(m.clone(), m));
    match value {
        "cpu" => {
            let mut covered: Vec<&Compute<'_, '_>> = pods.iter().filter(|p| set.covers(p.template.path())).filter(takes).collect();
            if set.partial {
                // A TrainJob's override or runtime patch labels the pods it
                // shapes: the trainer's, whose GPUs its `resourcesPerNode`
                // says.
                let shaped = w.templates().find(|t| t.role == Role::Override && set.covers(t.path())).and_then(|t| w.gpu_holder(t));
                covered.extend(shaped.and_then(|h| pods.iter().find(|p| std::ptr::eq(p.template, h))));
            }
            // Containers first: they need no lookup.
            let user = covered.iter().find_map(|p| p.gpu_user.as_deref());
            if user.is_some() {
                return Ok(compute_type_conflict(path, value, user, true, String::new).and_then(violation));
            }
            let mut unread = None;
            for p in covered {
                match p.holds(claims)? {
                    Holds::Gpus(user) => return Ok(compute_type_conflict(path, value, Some(user), true, String::new).and_then(violation)),
                    Holds::Unknown(u) => unread = unread.or(Some(u)),
                    Holds::No => {}
                }
            }
            Ok(unread.map(|u| match u.unread {
                Unread::Failed => Finding::Violation(
                    format!("label `{COMPUTE_TYPE_LABEL}` in `{path}` is `cpu`, but the resource claims could not be read"),
                    format!(
                        "label `{COMPUTE_TYPE_LABEL}` in `{path}` is `cpu`, but {}, so the pods are taken for GPU pods: they may claim GPUs; try again, or ask your cluster administrators",
                        u.why
                    ),
                ),
                Unread::Pending => Finding::Warning(
                    u.text(&format!("so `{COMPUTE_TYPE_LABEL}: cpu` in `{path}` is checked against what the pods claim when they are created")),
                ),
                Unread::Offline => {
                    Finding::Warning(u.text(&format!("so `{COMPUTE_TYPE_LABEL}: cpu` in `{path}` is not checked against what the pods claim")))
                }
            }))
        }
        "gpu" | "mixed" => {
            let controllers_pod = by_controller && !w.kind.owns_templates();
            // A TrainJob's training runtime may give any of its pods GPUs,
            // which the request does not show.
            let runtime = w.templates().any(|t| t.is_partial());
            if controllers_pod || runtime || pods.iter().any(|p| p.gpu_user.is_some()) {
                return Ok(None);
            }
            let mut unread = None;
            for p in pods {
                match p.holds(claims)? {
                    Holds::Gpus(_) => return Ok(None),
                    Holds::Unknown(u) => unread = unread.or(Some(u)),
                    Holds::No => {}
                }
            }
            if let Some(u) = unread {
                let label = format!("`{COMPUTE_TYPE_LABEL}: {value}` in `{path}`");
                let then = match u.unread {
                    Unread::Failed => format!("so the pods are taken for GPU pods: {label} is not checked against what they claim"),
                    Unread::Pending => format!("so {label} is checked against what the pods claim when they are created"),
                    Unread::Offline => format!("so {label} is not checked against what the pods claim"),
                };
                return Ok(Some(Finding::Warning(u.text(&then))));
            }
            Ok(compute_type_conflict(path, value, None, false, || {
                if w.kind.owns_templates() {
                    format!("no pod of the {} requests GPUs", w.kind.kind())
                } else {
                    "the Pod requests no GPUs".into()
                }
            })
            .and_then(violation))
        }
        _ => Ok(None),
    }
}

aigov_sdk::export_policy!(WorkloadClassification);

#[cfg(test)]
mod tests;
