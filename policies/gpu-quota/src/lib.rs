//! `gpu-quota`: no workload may hold more GPUs at full scale than its
//! namespace allows one workload, and no Pod may take a namespace's
//! unfinished pods past the GPUs the namespace may hold. Caps are per GPU
//! resource name (`nvidia.com/gpu` and each MIG profile apart), with a
//! default and overrides chosen by namespace name or Namespace labels.
//!
//! ResourceQuota counts GPUs per namespace too, but only when pods are
//! created: a Deployment of 40 GPUs is admitted and then fails to create
//! its pods, where nobody looks. This rule refuses the Deployment itself,
//! saying how its replicas add up, and refuses the Pod with the pods that
//! already hold the namespace's GPUs.

mod settings;

use std::collections::BTreeMap;

use aigov_sdk::base::glob;
use aigov_sdk::cluster::device_classes::Uncounted as Why;
use aigov_sdk::cluster::gpu::{ClaimSpec, DRA_API_VERSION, PodClaim};
use aigov_sdk::cluster::scale::ScaleChange;
use aigov_sdk::model::listed::{list_items, list_pods_skimming, object_meta};
use aigov_sdk::model::workload::{CronJobs, JobsBound, ScaleWhy};
use aigov_sdk::prelude::*;

use aigov_sdk::GpuCounts;

pub use settings::{DEFAULT_LIMIT, Limits, Override, Settings};

/// The rule.
pub struct GpuQuota;

/// The field selector that lists the pods still holding resources, as
/// ResourceQuota counts them: every phase but `Succeeded` and `Failed`.
pub const NOT_FINISHED: &str = "status.phase!=Succeeded,status.phase!=Failed";

impl Policy for GpuQuota {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let classes = req.gpu_classes();
        let classes = settings.resource_claims.classes(&classes);
        if let Some(change) = ScaleChange::of(req)? {
            check_scale(&change, req.object_namespace(), settings, classes, cluster, &mut verdict)?;
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = req.object_namespace();
        let Some((caps, gpus)) = check_at_full_scale(workload, namespace, settings, classes, cluster, &mut verdict)? else {
            return Ok(verdict);
        };
        // Only a new Pod adds GPUs to its namespace: a Pod's extended
        // resources cannot change once it exists (in-place resize covers
        // CPU and memory alone), so an UPDATE is not counted again.
        if workload.kind == WorkloadKind::Pod
            && req.operation() == Operation::Create
            && let Some((_, own)) = gpus.first()
        {
            check_namespace(workload, own, &caps, namespace, settings, classes, cluster, &mut verdict)?;
        }
        Ok(verdict)
    }
}

/// GPUs per pod of each template, and the workload's GPUs at full scale
/// against its namespace's cap. `None` when it holds no GPU (then nothing
/// is looked up) or the caps could not be read (reported on `v`).
#[allow(clippy::type_complexity)]
fn check_at_full_scale<'w, 'a>(
    w: &'w Workload<'a>,
    namespace: &str,
    s: &Settings,
    classes: &[Glob],
    cluster: &dyn Cluster,
    v: &mut Verdict,
) -> Result<Option<(Caps, Vec<(&'w PodTemplate<'a>, GpuCounts)>)>, Malformed> {
    let mut gpus: Vec<(&PodTemplate<'_>, GpuCounts)> = Vec::new();
    let mut claimed = Claimed::default();
    for t in w.templates() {
        let mut per_pod = t.gpus_per_pod(&s.gpu_resource_names)?;
        if s.resource_claims.resolves() && !t.spec.resource_claims.is_empty() {
            let needed_for = (", so the GPUs they bring cannot be counted", "; admitted");
            for c in t.claim_specs_or_report(namespace, cluster, s.on_lookup_error, needed_for, v)?.unwrap_or_default() {
                let counts = claimed.add(t, &c, s, classes, v);
                if c.per_pod() {
                    add_counts(&mut per_pod, &counts);
                } else if !claimed.shared.iter().any(|(name, _)| *name == c.object) {
                    claimed.shared.push((c.object.clone(), counts));
                }
            }
        }
        if !per_pod.is_empty() {
            gpus.push((t, per_pod));
        }
    }
    claimed.shared.retain(|(_, counts)| !counts.is_empty());
    if gpus.is_empty() && claimed.shared.is_empty() && claimed.problems.is_empty() {
        return Ok(None);
    }
    let caps = match Caps::of(s, namespace, cluster) {
        Ok(c) => c,
        Err(why) => {
            lookup_failed(
                v,
                s,
                format!("the Namespace `{namespace}` could not be read ({why}), so the GPU limits that apply to it are unknown"),
            );
            return Ok(None);
        }
    };
    check_workload(w, &gpus, &claimed.shared, &caps, namespace, v);
    claimed.report(&caps, namespace, v);
    Ok(Some((caps, gpus)))
}

fn add_counts(into: &mut GpuCounts, counts: &GpuCounts) {
    for (name, n) in counts {
        let e = into.entry(name.clone()).or_default();
        *e = e.saturating_add(*n);
    }
}

/// What the claims of a workload's templates bring.
#[derive(Default)]
struct Claimed {
    /// ResourceClaims the pods share, by object name, with their GPUs:
    /// one allocation, however many pods name it.
    shared: Vec<(String, GpuCounts)>,
    /// Requests whose GPUs cannot be counted, reported when a cap applies.
    problems: Vec<Uncounted>,
}

/// A claim request whose GPUs cannot be counted.
struct Uncounted {
    /// `spec.resourceClaims[0]`.
    field: Path,
    /// `ResourceClaimTemplate `x``.
    source: String,
    class: String,
    why: Why,
}

impl Claimed {
    /// The GPUs one claim brings, per resource name; what cannot be counted
    /// is kept for [`Claimed::report`], a GPU class no entry of
    /// `deviceClassResources` maps is a warning.
    fn add(&mut self, t: &PodTemplate<'_>, c: &PodClaim, s: &Settings, classes: &[Glob], v: &mut Verdict) -> GpuCounts {
        let field = t.spec_path().key("resourceClaims").index(c.index);
        let counted = s.device_class_resources.count(&c.spec, classes);
        let mut unmapped: Vec<String> = Vec::new();
        for (class, why) in counted.uncounted {
            if why == Why::Unmapped {
                unmapped.push(class);
            } else {
                self.problems.push(Uncounted { field: field.clone(), source: c.source(), class, why });
            }
        }
        for class in unmapped {
            v.warn(format!(
                "`{field}` ({}) claims devices of class `{class}`, a GPU class `deviceClassResources` does not map to a GPU resource, so they are not counted against the GPU limits",
                c.source()
            ));
        }
        counted.counts
    }

    /// Violations for requests that cannot be counted where a cap applies.
    fn report(&self, caps: &Caps, ns: &str, v: &mut Verdict) {
        for u in &self.problems {
            match &u.why {
                Why::Every(names) => {
                    for name in names {
                        let Some(limit) = cap(&caps.workload, name).or_else(|| cap(&caps.namespace, name)) else { continue };
                        v.violation(format!(
                            "`{}` ({}) claims every matching device of class `{}` on its node, so the `{name}` it holds has no upper bound, but at most {limit} `{name}` may be held in namespace `{ns}`: {}",
                            u.field,
                            u.source,
                            u.class,
                            u.why.fix()
                        ));
                    }
                }
                Why::Profile(prefix) => {
                    if !capped_family(&caps.workload, prefix) && !capped_family(&caps.namespace, prefix) {
                        continue;
                    }
                    v.violation(format!(
                        "`{}` ({}) claims devices of class `{}` without pinning their MIG profile in a selector, so which `{prefix}*` limit applies is unknown: {}",
                        u.field,
                        u.source,
                        u.class,
                        u.why.fix()
                    ));
                }
                // Reported as a warning when counted.
                Why::Unmapped => {}
            }
        }
    }
}

/// Whether a cap may apply to some resource named `prefix…`.
fn capped_family(limits: &Limits, prefix: &str) -> bool {
    limits.iter().any(|(k, v)| v.is_some() && (k.starts_with(prefix) || glob::matches(k, &format!("{prefix}x"))))
}

/// `kubectl scale` (or an autoscaler) raising a workload's replicas: the
/// workload is looked up and judged at its new scale, as if it had been
/// submitted with that `spec.replicas`. Lowering them is always admitted.
fn check_scale(
    change: &ScaleChange,
    namespace: &str,
    s: &Settings,
    classes: &[Glob],
    cluster: &dyn Cluster,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    if change.scales_down() {
        return Ok(());
    }
    let what = |why: &str| {
        format!(
            "the {} `{}` could not be read ({why}), so the GPUs it would hold at {} replicas are unknown",
            change.kind.kind(),
            change.name,
            change.replicas
        )
    };
    let json = match change.target(namespace, cluster) {
        Ok(json) => json,
        Err(e) => {
            lookup_failed(v, s, what(e.first_line()));
            return Ok(());
        }
    };
    match Workload::parse(change.kind, &json) {
        Ok(w) => check_at_full_scale(&w, namespace, s, classes, cluster, v).map(|_| ()),
        Err(e) => {
            lookup_failed(v, s, what(&e.0));
            Ok(())
        }
    }
}

/// The limits that apply in one namespace: the defaults, with the first
/// matching override's keys replacing theirs.
#[derive(Debug)]
struct Caps {
    workload: Limits,
    namespace: Limits,
}

impl Caps {
    /// The caps of `namespace`. The Namespace is read only when an override
    /// whose names match it selects by labels; `Err` quotes why it could
    /// not be.
    fn of(s: &Settings, namespace: &str, cluster: &dyn Cluster) -> Result<Caps, String> {
        let mut labels = None;
        for o in &s.overrides {
            if !o.matches_name(namespace) {
                continue;
            }
            if let Some(selector) = &o.namespace_selector {
                let l = labels.get_or_insert_with(|| cluster.namespace_labels(namespace));
                let l = l.as_ref().as_ref().map_err(|e| e.first_line().to_string())?;
                if !selector.matches_with(&|k| l.get(k).map(String::as_str)) {
                    continue;
                }
            }
            return Ok(Caps {
                workload: merged(&s.workload_limits, &o.workload_limits),
                namespace: merged(&s.namespace_limits, &o.namespace_limits),
            });
        }
        Ok(Caps { workload: s.workload_limits.clone(), namespace: s.namespace_limits.clone() })
    }
}

fn merged(defaults: &Limits, over: &Limits) -> Limits {
    let mut out = defaults.clone();
    out.extend(over.iter().map(|(k, v)| (k.clone(), *v)));
    out
}

/// The cap on GPU resource `name`: the smallest of the caps whose key
/// matches it; `None` when none does.
fn cap(limits: &Limits, name: &str) -> Option<u64> {
    limits.iter().filter_map(|(k, v)| v.filter(|_| k == name || glob::matches(k, name))).min()
}

/// Denies or warns about a failed lookup, as `onLookupError` says.
fn lookup_failed(v: &mut Verdict, s: &Settings, what: String) {
    s.on_lookup_error.report(&what, "", "; admitted", v);
}

/// One template's share of a workload's GPUs of one resource name, or a
/// ResourceClaim its pods share.
struct Part<'t, 'a> {
    template: Option<&'t PodTemplate<'a>>,
    claim: Option<&'t str>,
    per_pod: u64,
    pods: u64,
}

impl Part<'_, '_> {
    /// `` the pod template: 2 per pod × 4 pods (`spec.replicas`) ``, or
    /// `` ResourceClaim `shared-gpus`, shared by its pods: 2 ``.
    fn describe(&self) -> String {
        match (self.template, self.claim) {
            (Some(t), _) => format!("{}: {} per pod × {} ({})", t.describe(), self.per_pod, count(self.pods, "pod"), t.scale.why),
            (None, Some(c)) => format!("ResourceClaim `{c}`, shared by its pods: {}", self.per_pod),
            (None, None) => String::new(),
        }
    }
}

/// Per workload: GPUs per pod × pods at full scale, summed over the
/// templates, plus the ResourceClaims its pods share, within the workload
/// cap of each resource name.
fn check_workload<'a>(
    w: &Workload<'_>,
    gpus: &[(&PodTemplate<'a>, GpuCounts)],
    shared: &[(String, GpuCounts)],
    caps: &Caps,
    ns: &str,
    v: &mut Verdict,
) {
    let mut totals: BTreeMap<&str, (u64, Vec<Part<'_, 'a>>)> = BTreeMap::new();
    for (claim, counts) in shared {
        for (name, n) in counts {
            let e = totals.entry(name).or_default();
            e.0 = e.0.saturating_add(*n);
            e.1.push(Part { template: None, claim: Some(claim), per_pod: *n, pods: 1 });
        }
    }
    let mut unbounded: Vec<&str> = Vec::new();
    for (t, per_pod) in gpus {
        for (name, n) in per_pod {
            let Some(limit) = cap(&caps.workload, name) else { continue };
            match t.scale.pods {
                None => {
                    unbounded.push(name);
                    v.violation(format!(
                        "{} requests {n} `{name}` per pod with no upper bound on its pods ({}), but one workload may hold at most {limit} `{name}` in namespace `{ns}`; {}",
                        t.describe(),
                        t.scale.why,
                        bound_hint(w, t)
                    ));
                }
                Some(0) => {}
                Some(pods) => {
                    let e = totals.entry(name).or_default();
                    e.0 = e.0.saturating_add(n.saturating_mul(pods));
                    e.1.push(Part { template: Some(t), claim: None, per_pod: *n, pods });
                }
            }
        }
    }
    for (name, (total, parts)) in totals {
        let Some(limit) = cap(&caps.workload, name) else { continue };
        if total <= limit || unbounded.contains(&name) {
            continue;
        }
        if w.kind == WorkloadKind::Pod {
            v.violation(format!(
                "the pod requests {total} `{name}`, more than the {limit} one workload may hold in namespace `{ns}`; request at most {limit}, or ask your cluster administrators to raise the limit"
            ));
            continue;
        }
        let shares: Vec<String> = parts.iter().map(Part::describe).collect();
        v.violation(format!(
            "{} would hold {total} `{name}` at full scale, more than the {limit} one workload may hold in namespace `{ns}` ({}); {}",
            w.describe(),
            shares.join("; "),
            lower_hint(w, &parts)
        ));
    }
}

/// What to write so that a template's pods are bounded.
fn bound_hint(w: &Workload<'_>, t: &PodTemplate<'_>) -> &'static str {
    match (w.kind, t.role) {
        (_, Role::RayWorker) => "set the worker group's `maxReplicas`",
        // KServe's `external` class: an autoscaler KServe does not bound.
        (_, Role::Predictor | Role::Transformer | Role::Explainer) if matches!(t.scale.why, ScaleWhy::Annotation { .. }) => {
            "choose an autoscaler class KServe bounds: `hpa` (the default) or `keda` with `maxReplicas`, or `none`"
        }
        (_, Role::Predictor | Role::Transformer | Role::Explainer) => "set `maxReplicas`",
        (WorkloadKind::DaemonSet, _) => "run it as a Deployment or StatefulSet with a fixed number of replicas",
        (WorkloadKind::CronJob, _) => match cron_jobs(&t.scale.why).map(|c| c.bound) {
            Some(JobsBound::NoDeadline) => {
                "set `spec.concurrencyPolicy: Forbid` (one Job at a time), or end each Job within `spec.jobTemplate.spec.activeDeadlineSeconds`"
            }
            _ => "set `spec.concurrencyPolicy: Forbid` (one Job at a time)",
        },
        _ => "bound the number of its pods",
    }
}

/// How a CronJob's Jobs at once were counted, inside a template's scale.
fn cron_jobs(why: &ScaleWhy) -> Option<&CronJobs> {
    match why {
        ScaleWhy::CronJobs(c) => Some(c),
        ScaleWhy::Times(a, b) | ScaleWhy::Below(a, b) => cron_jobs(a).or_else(|| cron_jobs(b)),
        _ => None,
    }
}

/// What to change so that a workload over its cap fits: for a CronJob,
/// its Jobs' pods, and running one Job at a time when they overlap.
fn lower_hint(w: &Workload<'_>, parts: &[Part<'_, '_>]) -> &'static str {
    if w.kind != WorkloadKind::CronJob {
        return "lower the replicas or the GPUs per pod, or ask your cluster administrators to raise the limit";
    }
    let overlapping = parts
        .iter()
        .filter_map(|p| p.template.and_then(|t| cron_jobs(&t.scale.why)))
        .any(|c| matches!(c.bound, JobsBound::Deadline { jobs, .. } if jobs > 1));
    if overlapping {
        "run one Job at a time (`spec.concurrencyPolicy: Forbid`), lower the GPUs per pod or the pods per Job, or ask your cluster administrators to raise the limit"
    } else {
        "lower the GPUs per pod or the pods per Job, or ask your cluster administrators to raise the limit"
    }
}

fn finished(phase: Option<&str>) -> bool {
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// GPUs the namespace's unfinished pods hold, per resource name, with the
/// pods that hold them. A pod named `own` (the pod being created) is left
/// out: the API server refuses the creation while it exists anyway.
fn held_gpus(list: &str, own: Option<&str>, s: &Settings) -> Result<BTreeMap<String, Vec<(String, u64)>>, Malformed> {
    let mut out: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    // Every pod read once, in the same pass as the list, what is not
    // counted only skimmed.
    for listed in list_pods_skimming(list)? {
        let meta = &listed.metadata;
        // The host filters with `NOT_FINISHED`; a host that does not is
        // filtered here.
        if finished(listed.phase.as_deref())
            || (own.is_some() && meta.name.as_deref() == own)
            || (meta.being_deleted && !s.count_terminating_pods)
        {
            continue;
        }
        for (name, n) in listed.gpus_per_pod(&s.gpu_resource_names)? {
            out.entry(name).or_default().push((meta.display_name().to_string(), n));
        }
    }
    Ok(out)
}

/// GPUs the namespace's ResourceClaims hold, per resource name, with the
/// claims that hold them (`ResourceClaim/<name>`), as ResourceQuota counts
/// claims: every claim that exists (the ResourceClaim controller deletes
/// the claims it made for a pod once the pod is done), those being deleted
/// as `countTerminatingPods` says. A namespace where the API serves no
/// ResourceClaims (a 404) holds none.
fn held_by_claims(ns: &str, s: &Settings, classes: &[Glob], cluster: &dyn Cluster) -> Result<BTreeMap<String, Vec<(String, u64)>>, String> {
    let mut out: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    let list = match cluster.list_resources_by_namespace(DRA_API_VERSION, "ResourceClaim", ns, None, None) {
        Ok(list) => list,
        Err(LookupError::NotFound(_)) => return Ok(out),
        Err(e) => return Err(e.first_line().to_string()),
    };
    for item in list_items(&list).map_err(|e| e.0)? {
        let meta = object_meta(item, "a listed ResourceClaim").map_err(|e| e.0)?;
        if meta.being_deleted && !s.count_terminating_pods {
            continue;
        }
        let name = format!("ResourceClaim/{}", meta.display_name());
        let spec = ClaimSpec::of_claim(item, &name).map_err(|e| e.0)?;
        for (resource, n) in s.device_class_resources.count(&spec, classes).counts {
            out.entry(resource).or_default().push((name.clone(), n));
        }
    }
    Ok(out)
}

/// `` `a`: 8, `b`: 4 and 3 more pods ``: the biggest holders first.
fn holders(pods: &[(String, u64)]) -> String {
    let mut sorted: Vec<&(String, u64)> = pods.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    const SHOWN: usize = 5;
    let shown: Vec<String> = sorted.iter().take(SHOWN).map(|(p, n)| format!("`{p}`: {n}")).collect();
    match sorted.len().saturating_sub(SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {}", shown.join(", "), count(more as u64, "more pod")),
    }
}

/// Per namespace, for new Pods: the pod's GPUs plus those of the
/// namespace's unfinished pods, within the namespace cap of each resource
/// name.
#[allow(clippy::too_many_arguments)]
fn check_namespace(
    w: &Workload<'_>,
    own: &GpuCounts,
    caps: &Caps,
    ns: &str,
    s: &Settings,
    classes: &[Glob],
    cluster: &dyn Cluster,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let capped: Vec<(&str, u64, u64)> =
        own.iter().filter_map(|(name, n)| cap(&caps.namespace, name).map(|c| (name.as_str(), *n, c))).collect();
    if capped.is_empty() {
        return Ok(());
    }
    let name = w.metadata.name.as_deref().filter(|n| !n.is_empty());
    // Whether a pod of the namespace, or this one, uses resource claims:
    // only then can claims hold GPUs (a claim is allocated for a pod that
    // uses it), and only then are they listed, so a cluster without DRA
    // never sees the call. Read from the list's text: a false hit only
    // costs the listing.
    let mut claims_used = w.templates().any(|t| !t.spec.resource_claims.is_empty());
    let held = cluster
        .list_resources_by_namespace("v1", "Pod", ns, None, Some(NOT_FINISHED))
        .map_err(|e| e.first_line().to_string())
        .and_then(|list| {
            claims_used |= aigov_sdk::decode::json::mentions(&list, "\"resourceClaims\"");
            held_gpus(&list, name, s).map_err(|e| e.0)
        });
    let mut held = match held {
        Ok(h) => h,
        Err(why) => {
            lookup_failed(
                v,
                s,
                format!("the pods of namespace `{ns}` could not be listed ({why}), so the GPUs it already holds are unknown"),
            );
            return Ok(());
        }
    };
    let mut claims_hold = false;
    if s.resource_claims.resolves() && claims_used {
        match held_by_claims(ns, s, classes, cluster) {
            Ok(by_claims) => {
                for (name, holders) in by_claims {
                    claims_hold = true;
                    held.entry(name).or_default().extend(holders);
                }
            }
            Err(why) => {
                lookup_failed(
                    v,
                    s,
                    format!("the ResourceClaims of namespace `{ns}` could not be listed ({why}), so the GPUs it already holds are unknown"),
                );
                return Ok(());
            }
        }
    }
    let holders_are = if claims_hold { "its unfinished pods and ResourceClaims" } else { "its unfinished pods" };
    for (resource, n, limit) in capped {
        let pods = held.get(resource).map(Vec::as_slice).unwrap_or_default();
        let used = pods.iter().fold(0u64, |a, (_, g)| a.saturating_add(*g));
        if used.saturating_add(n) <= limit {
            continue;
        }
        if used == 0 {
            v.violation(format!(
                "the pod requests {n} `{resource}`, more than the {limit} the pods of namespace `{ns}` may hold together; request at most {limit}, or ask your cluster administrators to raise the limit"
            ));
            continue;
        }
        let left = limit.saturating_sub(used);
        v.violation(format!(
            "the pod requests {n} `{resource}`, but the pods of namespace `{ns}` may hold at most {limit} together and {holders_are} already hold {used} ({}), so {} left; wait for some of them to finish, delete pods you no longer need, or ask your cluster administrators to raise the limit",
            holders(pods),
            match left {
                0 => "none is".to_string(),
                1 => "only 1 is".to_string(),
                more => format!("only {more} are"),
            }
        ));
    }
    Ok(())
}

aigov_sdk::export_policy!(GpuQuota);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_matching_cap_applies() {
        let l: Limits = [
            ("nvidia.com/mig-*".to_string(), Some(14)),
            ("nvidia.com/mig-7g.80gb".to_string(), Some(2)),
            ("nvidia.com/gpu".to_string(), None),
        ]
        .into_iter()
        .collect();
        assert_eq!(cap(&l, "nvidia.com/mig-1g.10gb"), Some(14));
        assert_eq!(cap(&l, "nvidia.com/mig-7g.80gb"), Some(2));
        assert_eq!(cap(&l, "nvidia.com/gpu"), None, "`null` lifts the cap");
        assert_eq!(cap(&l, "amd.com/gpu"), None);
    }

    #[test]
    fn overrides_replace_keys() {
        let d: Limits = [("nvidia.com/gpu".to_string(), Some(16)), ("nvidia.com/mig-*".to_string(), Some(7))].into_iter().collect();
        let o: Limits = [("nvidia.com/gpu".to_string(), Some(64))].into_iter().collect();
        let m = merged(&d, &o);
        assert_eq!((cap(&m, "nvidia.com/gpu"), cap(&m, "nvidia.com/mig-1g.10gb")), (Some(64), Some(7)));
    }

    #[test]
    fn holders_are_listed_biggest_first() {
        let pods: Vec<(String, u64)> = (1..=7).map(|i| (format!("p{i}"), i)).collect();
        assert_eq!(holders(&pods), "`p7`: 7, `p6`: 6, `p5`: 5, `p4`: 4, `p3`: 3 and 2 more pods");
        assert_eq!(holders(&pods[..1]), "`p1`: 1");
    }
}
