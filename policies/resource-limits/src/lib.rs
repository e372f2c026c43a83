//! `resource-limits`: every container of every pod template sets CPU and
//! memory limits (which resources is a setting); GPUs are requested the way
//! Kubernetes accepts them (a whole number, the request equal to the limit);
//! optionally, containers request what the settings list, limits and
//! requests stay within bounds and within a ratio of each other (as a
//! LimitRange's `maxLimitRequestRatio`), the containers of GPU pods request
//! as much memory as their limit, and no container or pod holds more GPUs
//! than a cap.
//!
//! A container without a memory limit can take a node's memory until the
//! kernel kills something, often the training job next to it; without a CPU
//! limit it can starve the data loaders of the GPU job sharing its node.
//! GPUs cannot be overcommitted, so Kubernetes refuses a GPU request that
//! differs from its limit, but only when it validates a pod: for a
//! RayCluster, a PyTorchJob or an InferenceService the mistake surfaces when
//! the operator fails to create the pods, minutes later and in its logs, not
//! the user's terminal.
//!
//! While a GPU cap is set, GPUs claimed through Dynamic Resource Allocation
//! count too: the ResourceClaims and ResourceClaimTemplates a pod template
//! names are read through the cluster, and their devices counted as the
//! GPU resource `deviceClassResources` maps their class to (the SDK's
//! `cluster::device_classes`, as `ray-cluster-limits` counts them).

mod settings;

use std::cell::LazyCell;
use std::fmt;

use aigov_sdk::cluster::device_classes::Uncounted;
use aigov_sdk::cluster::gpu::{GpuFamilies, PodClaim};
use aigov_sdk::model::pod::{RawQuantity, ResourceList};
use aigov_sdk::prelude::*;

use aigov_sdk::model::workload::{ContainerList, ContainerRef};
use aigov_sdk::{GpuCounts, Quantity};

pub use settings::Settings;

/// The rule.
pub struct ResourceLimits;

impl Policy for ResourceLimits {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // Subresources and objects being deleted never reach the rule (the
        // SDK admits them); DELETE carries no workload.
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        // A TrainJob's override or runtime patch writes no resources (its
        // containers are the runtime's, named to add to them): nothing to
        // check there.
        let classes = req.gpu_classes();
        let namespace = req.object_namespace();
        for template in workload.templates().filter(|t| t.role != Role::Override) {
            // The claims count only against a GPU cap: nothing is looked up
            // without one, or for a template without claims.
            let claims = if settings.caps_gpus() && !template.spec.resource_claims.is_empty() {
                template.claim_specs_or_report(namespace, cluster, settings.on_lookup_error, CLAIMS_NEEDED_FOR, &mut verdict)?
            } else {
                None
            };
            let claims: Vec<Claimed> = claims
                .unwrap_or_default()
                .into_iter()
                .map(|claim| {
                    let gpus = settings.device_class_resources.count(&claim.spec, &classes);
                    Claimed { claim, counts: gpus.counts, uncounted: gpus.uncounted }
                })
                .collect();
            check_template(template, settings, &claims, &|c| req.leaves_alone(c), &mut verdict)?;
        }
        Ok(verdict)
    }
}

/// What a failed claim lookup was needed for, with `deny` and with `allow`.
const CLAIMS_NEEDED_FOR: (&str, &str) = (", so the GPUs they bring cannot be counted against the GPU caps", "; admitted");

/// One of a pod template's DRA claims, its GPUs counted.
#[derive(Clone, Debug)]
pub struct Claimed {
    /// The claim, as the pod template names it, and what it asks for.
    pub claim: PodClaim,
    /// The GPUs it brings, per resource name.
    pub counts: GpuCounts,
    /// Its requests whose GPUs cannot be counted, by device class.
    pub uncounted: Vec<(String, Uncounted)>,
}

impl Claimed {
    /// `` claim `gpus` from ResourceClaimTemplate `eight-gpus` ``, or
    /// `` ResourceClaim `shared-gpus` `` for one the pods share.
    fn label(&self) -> String {
        if self.claim.per_pod() { format!("claim `{}` from {}", self.claim.claim, self.claim.source()) } else { self.claim.source() }
    }

    /// Whether container `c` names it in `resources.claims`.
    fn held_by(&self, c: &ContainerRef<'_, '_>) -> bool {
        c.container.resources.claims.iter().any(|n| n.name.as_ref() == self.claim.claim)
    }
}

/// `spec.containers[0].resources.limits.cpu`, or
/// `...limits[nvidia.com/gpu]` for names with dots or slashes: written when
/// a message shows it, not for every quantity read.
fn field<'p>(resources: &'p dyn fmt::Display, list: &'p str, name: &'p str) -> impl fmt::Display + 'p {
    fmt::from_fn(
        move |f| {
            if name.contains(['/', '.']) { write!(f, "{resources}.{list}[{name}]") } else { write!(f, "{resources}.{list}.{name}") }
        },
    )
}

/// A container's `resources` path, built once, when a message or an error
/// first shows it: most containers pass every check and need none.
fn resources_at<'t>(t: &'t PodTemplate<'_>, c: &'t ContainerRef<'_, '_>) -> impl fmt::Display + 't {
    let path = LazyCell::new(move || t.resources_path(c));
    fmt::from_fn(move |f| write!(f, "{}", *path))
}

/// A parsed quantity, or a 400 naming the field.
fn quantity(raw: &RawQuantity<'_>, at: &dyn fmt::Display) -> Result<Quantity, Malformed> {
    raw.parse().map_err(|e| Malformed(format!("`{at}`: {e}")))
}

/// `` container `trainer` ``, or the path for a container without a name.
fn who(c: &ContainerRef<'_, '_>, t: &PodTemplate<'_>) -> String {
    if c.container.name.trim().is_empty() { format!("the container at `{}`", t.container_path(c)) } else { c.describe() }
}

/// `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [rest @ .., last] => format!("{} or `{last}`", quoted(rest)),
    }
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [rest @ .., last] => format!("{} and `{last}`", quoted(rest)),
    }
}

/// Checks one pod template; `exempt` says which containers the shared
/// `exemptImages` leaves out.
fn check_template(
    t: &PodTemplate<'_>,
    s: &Settings,
    claims: &[Claimed],
    exempt: &dyn Fn(&ContainerRef<'_, '_>) -> bool,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let names = &s.gpu_resource_names;
    let gpu_pod = t.requests_gpu(names)?;
    let pod_limits = t.spec.resources.as_ref().map(|r| &r.limits);
    let pod_requests = t.spec.resources.as_ref().map(|r| &r.requests);
    for c in t.containers() {
        // Kubernetes refuses resources on ephemeral containers: they take
        // whatever the pod has. A container of an exempt image (the shared
        // `exemptImages`), or one the platform added, is left out.
        if c.list == ContainerList::EphemeralContainers || exempt(&c) {
            continue;
        }
        let limits_required = c.list != ContainerList::InitContainers || s.check_init_containers;
        if limits_required {
            required_limits(t, &c, s, pod_limits, v)?;
            required_requests(t, &c, s, pod_requests, v)?;
            bounds(t, &c, s, v)?;
            ratios(t, &c, s, v)?;
        }
        gpu_quantities(t, &c, s, v)?;
        if gpu_pod && s.gpu_memory_request_equals_limit && limits_required {
            memory_guaranteed(t, &c, s, pod_limits, v)?;
        }
        if let Some(max) = s.max_gpus_per_container {
            // A claim the container names in `resources.claims` is one it
            // holds: all of its devices are the container's to use.
            let own: GpuCounts = t.container_gpus(&c, names)?.into_iter().collect();
            let held: Vec<&Claimed> = claims.iter().filter(|k| k.held_by(&c)).collect();
            let mut counts = own.clone();
            for k in &held {
                add_counts(&mut counts, &k.counts);
            }
            for (family, excess) in over_cap(&counts, max, s) {
                let parts = parts(&family, ("the container", &own), &held, s);
                v.violation(format!(
                    "{} requests {excess}{parts}, but a container may have at most {}: request fewer GPUs, or spread the work over more containers or pods",
                    who(&c, t),
                    count(u64::from(max), "GPU")
                ));
            }
        }
    }
    if let Some(max) = s.max_gpus_per_pod {
        // Every claim the pod names is the pod's, whichever containers use
        // it: its devices are allocated to the pod for its whole life.
        let own = t.gpus_per_pod(names)?;
        let mut counts = own.clone();
        for k in claims {
            add_counts(&mut counts, &k.counts);
        }
        let all: Vec<&Claimed> = claims.iter().collect();
        for (family, excess) in over_cap(&counts, max, s) {
            let parts = parts(&family, ("its containers", &own), &all, s);
            let at = if t.role == Role::Pod { "the pod holds".to_string() } else { format!("each pod of {} holds", where_(t)) };
            v.violation(format!(
                "{at} {excess}{parts}, but a pod may hold at most {}: request fewer GPUs, or spread the work over more pods",
                count(u64::from(max), "GPU")
            ));
        }
    }
    // A claim whose GPUs cannot be counted leaves the caps undecidable.
    let limit = match (s.max_gpus_per_pod, s.max_gpus_per_container) {
        (Some(max), _) => format!("a pod may hold at most {}", count(u64::from(max), "GPU")),
        (None, Some(max)) => format!("a container may have at most {}", count(u64::from(max), "GPU")),
        (None, None) => return Ok(()),
    };
    for k in claims {
        let field = t.spec_path().key("resourceClaims").index(k.claim.index);
        let source = k.claim.source();
        for (class, why) in &k.uncounted {
            v.violation(why.refusal(&field, &source, class, &limit));
        }
    }
    Ok(())
}

fn add_counts(into: &mut GpuCounts, counts: &GpuCounts) {
    for (name, n) in counts {
        let e = into.entry(name.clone()).or_default();
        *e = e.saturating_add(*n);
    }
}

/// How `family` adds up when claims bring some of it: `` (1 in the
/// container + 8 in claim `gpus` from ResourceClaimTemplate `eight-gpus`) ``;
/// empty when only the containers hold it.
fn parts(family: &str, (label, own): (&str, &GpuCounts), claims: &[&Claimed], s: &Settings) -> String {
    let amount = |counts: &GpuCounts| GpuFamilies::of(counts, &s.mig_weights).0.get(family).map(|(a, _)| *a).filter(|a| !a.is_zero());
    let from_claims: Vec<String> = claims.iter().filter_map(|k| amount(&k.counts).map(|a| format!("{a} in {}", k.label()))).collect();
    if from_claims.is_empty() {
        return String::new();
    }
    let all: Vec<String> = amount(own).map(|a| format!("{a} in {label}")).into_iter().chain(from_claims).collect();
    format!(" ({})", all.join(" + "))
}

/// `` `spec.template` ``, or `` worker group `gpu` (`spec.workerGroupSpecs[0].template`) ``.
fn where_(t: &PodTemplate<'_>) -> String {
    let d = t.describe();
    let path = format!("`{}`", t.path());
    if d == path { d } else { format!("{d} ({path})") }
}

/// Each GPU family over `max`, described: `16 `nvidia.com/gpu``, or
/// `2 `nvidia.com/gpu` + 3 `nvidia.com/mig-3g.40gb` (3/7 GPU each), 3.29 GPUs in all`.
fn over_cap(counts: &GpuCounts, max: u32, s: &Settings) -> Vec<(String, String)> {
    let families = GpuFamilies::of(counts, &s.mig_weights);
    families
        .0
        .iter()
        .filter(|(_, (amount, _))| amount.exceeds(u64::from(max)))
        .map(|(family, (amount, by_name))| {
            let breakdown = families.breakdown(family, &s.mig_weights);
            let whole_units_of_one_name =
                by_name.len() == 1 && by_name.keys().all(|n| s.mig_weights.family(n).1 == aigov_sdk::GpuAmount::whole(1));
            let excess = if whole_units_of_one_name { breakdown } else { format!("{breakdown}, {amount} GPUs in all") };
            (family.clone(), excess)
        })
        .collect()
}

/// Every resource of `requiredLimits` has a limit above zero, on the
/// container or, for CPU and memory, on the pod as a whole.
fn required_limits(
    t: &PodTemplate<'_>,
    c: &ContainerRef<'_, '_>,
    s: &Settings,
    pod_limits: Option<&ResourceList<'_>>,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    let mut missing: Vec<&str> = Vec::new();
    for name in &s.required_limits {
        match res.limits.get(name.as_str()) {
            Some(raw) => {
                let at = field(&rpath, "limits", name);
                if quantity(raw, &at)?.is_zero() {
                    v.violation(format!(
                        "{} has `{name}` limit `{}`, which Kubernetes treats as no limit at all: set `{at}` above zero",
                        who(c, t),
                        raw.0
                    ));
                }
            }
            None if pod_level_limit(t, pod_limits, name, "limits")? => {}
            None => missing.push(name),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let fields: Vec<String> = missing.iter().map(|n| field(&rpath, "limits", n).to_string()).collect();
    let message = format!("{} has no {} limit: set {}", who(c, t), or_list(&missing), and_list(&fields));
    if t.is_partial() {
        // A TrainJob's trainer is completed by its training runtime, whose
        // container may set the limits; the request does not show it.
        v.warn(format!("{message}, unless the training runtime sets them (this rule does not see it)"));
    } else {
        v.violation(message);
    }
    Ok(())
}

/// Every resource of `requiredRequests` is requested, above zero, by the
/// container (a limit alone counts: Kubernetes copies it to the request)
/// or, for CPU and memory, by the pod as a whole.
fn required_requests(
    t: &PodTemplate<'_>,
    c: &ContainerRef<'_, '_>,
    s: &Settings,
    pod_requests: Option<&ResourceList<'_>>,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    if s.required_requests.is_empty() {
        return Ok(());
    }
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    let mut missing: Vec<&str> = Vec::new();
    for name in &s.required_requests {
        match (res.requests.get(name.as_str()), res.limits.get(name.as_str())) {
            (Some(raw), _) => {
                let at = field(&rpath, "requests", name);
                if quantity(raw, &at)?.is_zero() {
                    v.violation(format!("{} requests `{name}: {}`, which reserves nothing: set `{at}` above zero", who(c, t), raw.0));
                }
            }
            (None, Some(_)) => {}
            (None, None) if pod_level_limit(t, pod_requests, name, "requests")? => {}
            (None, None) => missing.push(name),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let fields: Vec<String> = missing.iter().map(|n| field(&rpath, "requests", n).to_string()).collect();
    let message = format!("{} has no {} request: set {}", who(c, t), or_list(&missing), and_list(&fields));
    if t.is_partial() {
        v.warn(format!("{message}, unless the training runtime sets them (this rule does not see it)"));
    } else {
        v.violation(message);
    }
    Ok(())
}

/// `maxLimits`, `minLimits`, `maxRequests` and `minRequests`: each limit
/// and request set (a request left out being the limit) within its bounds.
/// A missing one is `requiredLimits`' and `requiredRequests`' to report.
fn bounds(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    for (list, maxes, mins) in [("limits", &s.max_limits, &s.min_limits), ("requests", &s.max_requests, &s.min_requests)] {
        for (name, bound, max) in maxes.iter().map(|(n, b)| (n, b, true)).chain(mins.iter().map(|(n, b)| (n, b, false))) {
            let own = if list == "limits" { res.limits.get(name.as_str()) } else { res.requests.get(name.as_str()) };
            // A request left out is the limit (Kubernetes copies it).
            let (raw, from_limit) = match (own, list) {
                (Some(raw), _) => (raw, false),
                (None, "requests") => match res.limits.get(name.as_str()) {
                    Some(raw) => (raw, true),
                    None => continue,
                },
                (None, _) => continue,
            };
            let at = field(&rpath, list, name);
            let value = quantity(raw, &at)?.ceil_millis();
            let (out, word, fix) = if max {
                (value > bound.millis(), "above the maximum", "or less")
            } else {
                (value < bound.millis(), "below the minimum", "or more")
            };
            if !out {
                continue;
            }
            let kind = if list == "limits" { "limit" } else { "request" };
            let what = if from_limit {
                format!("has no `{name}` request, so it requests its limit `{}`, {word} request `{bound}`", raw.0)
            } else {
                format!("has `{name}` {kind} `{}`, {word} `{bound}`", raw.0)
            };
            v.violation(format!("{} {what}: set `{at}` to `{bound}` {fix}", who(c, t)));
        }
    }
    Ok(())
}

/// `maxLimitRequestRatio`, as a LimitRange reads it: the limit and the
/// request (a request left out being the limit) both set and above zero,
/// the limit at most the ratio times the request.
fn ratios(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    for (name, ratio) in &s.max_limit_request_ratio {
        let limit_at = field(&rpath, "limits", name);
        let Some(limit) = res.limits.get(name.as_str()) else {
            // Reported as missing by `requiredLimits` when it lists it.
            if !s.required_limits.iter().any(|n| n == name) {
                v.violation(format!(
                    "{} has no `{name}` limit, which `maxLimitRequestRatio` needs: set `{limit_at}` to at most `{ratio}` times its request",
                    who(c, t)
                ));
            }
            continue;
        };
        let Some(request) = res.requests.get(name.as_str()) else { continue };
        let request_at = field(&rpath, "requests", name);
        let l = u128::from(quantity(limit, &limit_at)?.ceil_millis());
        let r = u128::from(quantity(request, &request_at)?.ceil_millis());
        if r == 0 {
            v.violation(format!(
                "{} requests `{name}: {}`, so no ratio of its limit to it can hold: set `{request_at}` above zero",
                who(c, t),
                request.0
            ));
        } else if l * 1000 > u128::from(ratio.millis()) * r {
            v.violation(format!(
                "{} has `{name}` limit `{}` and request `{}`, more than `{ratio}` times the request: raise `{request_at}` or lower `{limit_at}`",
                who(c, t),
                limit.0,
                request.0
            ));
        }
    }
    Ok(())
}

/// Whether the pod as a whole sets `name` in `list` (`limits`, `requests`;
/// pod-level resources support CPU and memory; a container without its
/// own shares the pod's).
fn pod_level_limit(t: &PodTemplate<'_>, pod_limits: Option<&ResourceList<'_>>, name: &str, list: &str) -> Result<bool, Malformed> {
    if !matches!(name, "cpu" | "memory") {
        return Ok(false);
    }
    let Some(raw) = pod_limits.and_then(|l| l.get(name)) else { return Ok(false) };
    let resources = t.spec_path().key("resources");
    Ok(quantity(raw, &field(&resources, list, name))?.is_positive())
}

/// GPUs as Kubernetes accepts them: whole numbers, and a request only with
/// an equal limit (extended resources cannot be overcommitted; a limit
/// alone sets the request).
fn gpu_quantities(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    let gpu_names = res.limits.keys().chain(res.requests.keys()).filter(|n| s.gpu_resource_names.is_gpu(n));
    let mut seen: Vec<&str> = Vec::new();
    for name in gpu_names {
        if seen.contains(&&**name) {
            continue;
        }
        seen.push(name);
        let limit = match res.limits.get(name) {
            Some(raw) => Some((raw, quantity(raw, &field(&rpath, "limits", name))?)),
            None => None,
        };
        let request = match res.requests.get(name) {
            Some(raw) => Some((raw, quantity(raw, &field(&rpath, "requests", name))?)),
            None => None,
        };
        let fraction = [("limits", limit), ("requests", request)]
            .into_iter()
            .find_map(|(list, q)| q.filter(|(_, q)| !q.ceil_millis().is_multiple_of(1000)).map(|(raw, _)| (list, raw)));
        if let Some((list, raw)) = fraction {
            v.violation(format!(
                "{} asks for `{}` `{name}` in `{}`: a GPU is a whole device, so use a whole number (a share of a GPU is a resource of its own, such as a MIG slice `nvidia.com/mig-1g.10gb`)",
                who(c, t),
                raw.0,
                field(&rpath, list, name)
            ));
            continue;
        }
        match (limit, request) {
            (None, Some((raw, _))) => v.violation(format!(
                "{} requests `{}` `{name}` without a limit: GPUs cannot be overcommitted, so Kubernetes requires a limit equal to the request; set `{}` to `{}` (the request can then be left out)",
                who(c, t),
                raw.0,
                field(&rpath, "limits", name),
                raw.0
            )),
            (Some((lraw, l)), Some((rraw, r))) if l.ceil_millis() != r.ceil_millis() => v.violation(format!(
                "{} requests `{}` `{name}` but its limit is `{}`: GPUs cannot be overcommitted, so Kubernetes requires the request to equal the limit; set `{}` to `{}`, or leave it out (it defaults to the limit)",
                who(c, t),
                rraw.0,
                lraw.0,
                field(&rpath, "requests", name),
                lraw.0
            )),
            _ => {}
        }
    }
    Ok(())
}

/// In a GPU pod, each container's memory request equals its memory limit
/// (a request left out defaults to the limit), so the node never
/// overcommits the memory a GPU job counts on.
fn memory_guaranteed(
    t: &PodTemplate<'_>,
    c: &ContainerRef<'_, '_>,
    s: &Settings,
    pod_limits: Option<&ResourceList<'_>>,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let res = &c.container.resources;
    let rpath = resources_at(t, c);
    let limit_at = field(&rpath, "limits", "memory");
    let request_at = field(&rpath, "requests", "memory");
    match (res.limits.get("memory"), res.requests.get("memory")) {
        (Some(l), Some(r)) if quantity(l, &limit_at)?.ceil_millis() != quantity(r, &request_at)?.ceil_millis() => {
            v.violation(format!(
                "{} of a GPU pod requests `memory: {}` but its limit is `{}`: set `{request_at}` to `{}` (or leave it out), so that the node cannot overcommit the memory a GPU job needs",
                who(c, t),
                r.0,
                l.0,
                l.0
            ));
        }
        (None, Some(r)) => v.violation(format!(
            "{} of a GPU pod requests `memory: {}` without a limit: set `{limit_at}` to `{}`, so that the node cannot overcommit the memory a GPU job needs",
            who(c, t),
            r.0,
            r.0
        )),
        // Without a memory limit: reported as missing when `memory` is a
        // required limit; a pod-level limit bounds the pod as a whole.
        (None, None) if !s.required_limits.iter().any(|n| n == "memory") && !pod_level_limit(t, pod_limits, "memory", "limits")? => {
            v.violation(format!(
                "{} of a GPU pod has no `memory` limit: set `{limit_at}`, and leave the request out or equal to it, so that the node cannot overcommit the memory a GPU job needs",
                who(c, t)
            ));
        }
        _ => {}
    }
    Ok(())
}

aigov_sdk::export_policy!(ResourceLimits);

#[cfg(test)]
mod tests;
