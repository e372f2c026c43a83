//! `mig-profiles`: MIG slices (`nvidia.com/mig-<profile>`) only of the
//! profiles a namespace may use, from these settings or from the
//! namespace's ResourceQuotas; never mixed with whole GPUs in one
//! container; one profile per container unless allowed.
//!
//! A MIG layout is set per node by the cluster administrators: every
//! profile a team requests that the layout lacks leaves its pods pending,
//! and every stray profile fragments GPUs that others need whole. Keeping
//! each namespace to its agreed profiles keeps the partitioning
//! consistent.

mod settings;

use std::collections::BTreeMap;

use aigov_sdk::base::glob;
use aigov_sdk::cluster::gpu::{Pinned, PodClaim, pinned};
use aigov_sdk::decode::explain::decode_model;
use aigov_sdk::model::listed::list_items;
use aigov_sdk::prelude::*;

use aigov_sdk::{Quantity, Str, model::pod::RawQuantity};

pub use settings::{ProfileSource, Settings, is_profile, profile_of};

/// The prefix of MIG resource names (the GPU operator's `mixed` strategy).
pub const MIG_PREFIX: &str = "nvidia.com/mig-";

/// The rule.
pub struct MigProfiles;

/// NVIDIA's GPU resources: whole GPUs (`nvidia.com/gpu`, time-sliced
/// `nvidia.com/gpu.shared`) and MIG slices.
fn nvidia() -> GpuResources {
    GpuResources(vec![Glob::new("nvidia.com/gpu"), Glob::new("nvidia.com/gpu.*"), Glob::new("nvidia.com/mig-*")])
}

impl Policy for MigProfiles {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = req.object_namespace();
        let gpus = nvidia();
        let classes = req.gpu_classes();
        // The namespace's ResourceQuotas, listed once, when first needed.
        let mut quotas: Option<Result<Vec<Quota>, String>> = None;
        let mut lookup_reported = false;
        for t in workload.templates() {
            let claims = if settings.resource_claims.resolves() && !t.spec.resource_claims.is_empty() {
                let needed_for = (", so the MIG profiles they bring cannot be checked", "; admitted");
                t.claim_specs_or_report(namespace, cluster, settings.on_lookup_error, needed_for, &mut verdict)?.unwrap_or_default()
            } else {
                Vec::new()
            };
            for c in t.containers() {
                let counts = t.container_gpus(&c, &gpus)?;
                let mut held = Held::default();
                for (name, _) in &counts {
                    match name.strip_prefix(MIG_PREFIX) {
                        Some(profile) => held.migs.push(Mig {
                            profile: profile.to_string(),
                            resource: name.clone(),
                            shown: format!("`{name}`"),
                            alternative: false,
                        }),
                        None => held.wholes.push(format!("`{name}`")),
                    }
                }
                held.add_claims(&c, &claims, settings, &classes);
                let path = t.container_path(&c);
                if !held.unpinned.is_empty() && !all_allowed(settings, namespace) {
                    for u in &held.unpinned {
                        verdict.violation(format!(
                            "`{path}` uses {u}, whose selectors pin no single MIG profile, so any slice may be allocated, but namespace `{namespace}` may use only some profiles: select one with `device.attributes['gpu.nvidia.com'].profile == '<profile>'`"
                        ));
                    }
                }
                if held.migs.is_empty() {
                    continue;
                }
                // Alternatives of `firstAvailable` are never held together.
                let migs: Vec<&str> = held.migs.iter().filter(|m| !m.alternative).map(|m| m.shown.as_str()).collect();
                if !held.wholes.is_empty() && !migs.is_empty() {
                    verdict.violation(format!(
                        "`{path}` requests both whole GPUs ({}) and MIG slices ({}); a CUDA process uses either whole GPUs or one MIG slice, never both, so part of them would sit idle: request one kind per container, and give the other work a container of its own",
                        held.wholes.join(", "),
                        migs.join(", ")
                    ));
                }
                let mut profiles: Vec<&str> = held.migs.iter().filter(|m| !m.alternative).map(|m| m.profile.as_str()).collect();
                profiles.sort_unstable();
                profiles.dedup();
                if profiles.len() > 1 && !settings.allow_multiple_profiles {
                    verdict.violation(format!(
                        "`{path}` requests {} ({}); a CUDA process sees a single MIG slice, so all but one would sit idle: request one profile per container, and split the work into one container per profile if it needs several",
                        count(profiles.len() as u64, "MIG profile"),
                        migs.join(", ")
                    ));
                }
                match settings.profile_source {
                    ProfileSource::Settings => {
                        let allowed = allowed_in(settings, namespace);
                        for m in &held.migs {
                            let profile = m.profile.as_str();
                            if allowed.iter().any(|g| g.matches(profile) || g.matches(&m.resource)) {
                                continue;
                            }
                            let shown: Vec<&str> = allowed.iter().map(|g| profile_of(g.as_str())).collect();
                            let there = if shown.is_empty() {
                                "no MIG profile is allowed there".to_string()
                            } else {
                                format!("allowed there: {}", quoted(&shown))
                            };
                            verdict.violation(format!(
                                "`{path}` requests MIG profile `{profile}` ({}), which namespace `{namespace}` may not use ({there}); request an allowed profile, or ask your cluster administrators to allow this one",
                                m.shown
                            ));
                        }
                    }
                    ProfileSource::FromResourceQuota => {
                        let listed = quotas.get_or_insert_with(|| list_quotas(namespace, cluster));
                        match listed {
                            Ok(qs) => {
                                for m in &held.migs {
                                    if let Some(problem) = quota_problem(qs, t, &m.resource, namespace) {
                                        verdict.violation(format!(
                                            "`{path}` requests MIG profile `{}` ({}), but {problem}; request a profile the namespace's quotas allow, or ask your cluster administrators for a quota of this one",
                                            m.profile, m.shown
                                        ));
                                    }
                                }
                            }
                            Err(why) if !lookup_reported => {
                                lookup_reported = true;
                                let what = format!(
                                    "the ResourceQuotas of namespace `{namespace}` could not be read ({why}), so the MIG profiles it may use are unknown"
                                );
                                settings.on_lookup_error.report(&what, "", "; admitted", &mut verdict);
                            }
                            Err(_) => {}
                        }
                    }
                }
            }
        }
        Ok(verdict)
    }
}

/// One MIG slice a container uses: its profile, the resource name it is
/// (or stands for), how messages show where it comes from, and whether it
/// is one alternative of a `firstAvailable` request (only one of which is
/// allocated).
struct Mig {
    profile: String,
    resource: String,
    shown: String,
    alternative: bool,
}

/// What one container holds: MIG slices, whole GPUs (as messages show
/// them), and MIG claims whose profile cannot be told.
#[derive(Default)]
struct Held {
    migs: Vec<Mig>,
    wholes: Vec<String>,
    unpinned: Vec<String>,
}

impl Held {
    /// The devices of the pod claims the container names (`resources.claims`,
    /// all of a claim's requests or the one it names): MIG classes by the
    /// profile `deviceClassProfiles` gives their class or their selectors
    /// pin, the other GPU classes (the shared `gpuDeviceClasses`) as whole
    /// GPUs.
    fn add_claims(&mut self, c: &ContainerRef<'_, '_>, claims: &[PodClaim], s: &Settings, classes: &[Glob]) {
        for used in &c.container.resources.claims {
            let Some(claim) = claims.iter().find(|pc| pc.claim == *used.name) else { continue };
            let from = format!("resource claim `{}` ({})", claim.claim, claim.source());
            for r in &claim.spec.requests {
                // `request` names a request, or `request/subrequest` one
                // alternative of a `firstAvailable` request.
                if used.request.as_deref().is_some_and(|want| want.split('/').next() != Some(r.name.as_str())) {
                    continue;
                }
                let alternative = r.choices.len() > 1;
                for choice in &r.choices {
                    let class = choice.device_class.as_str();
                    let known = s.device_class_profiles.get(class).map(|p| Pinned::OneOf(vec![p.clone()]));
                    let pinned = match known {
                        Some(p) => p,
                        None if s.mig_device_classes.iter().any(|g| g.matches(class)) => {
                            pinned(&choice.selectors, "gpu.nvidia.com", "profile")
                        }
                        None => {
                            if !alternative && s.resource_claims.classes(classes).iter().any(|g| g.matches(class)) {
                                let whole = format!("devices of class `{class}` through {from}");
                                if !self.wholes.contains(&whole) {
                                    self.wholes.push(whole);
                                }
                            }
                            continue;
                        }
                    };
                    match pinned {
                        Pinned::OneOf(profiles) => {
                            for profile in profiles {
                                let shown = format!("devices of class `{class}` through {from}");
                                if !self.migs.iter().any(|m| m.profile == profile && m.shown == shown) {
                                    self.migs.push(Mig { resource: format!("{MIG_PREFIX}{profile}"), profile, shown, alternative });
                                }
                            }
                        }
                        Pinned::Open | Pinned::Unreadable => {
                            let u = format!("MIG devices of class `{class}` through {from}");
                            if !self.unpinned.contains(&u) {
                                self.unpinned.push(u);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether namespace `ns` may use every MIG profile (an entry `*`), so a
/// slice of unknown profile is fine.
fn all_allowed(s: &Settings, ns: &str) -> bool {
    s.profile_source == ProfileSource::Settings && allowed_in(s, ns).iter().any(|g| g.as_str() == "*" || g.as_str() == "nvidia.com/mig-*")
}

/// The profile patterns namespace `ns` may use: those of every entry whose
/// namespace pattern matches it.
fn allowed_in<'s>(s: &'s Settings, ns: &str) -> Vec<&'s Glob> {
    let mut out: Vec<&Glob> = Vec::new();
    for (pattern, profiles) in &s.allowed_profiles {
        if glob::matches(pattern, ns) {
            for p in profiles {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------- quotas

/// One ResourceQuota: its name, its hard limits, and the scopes that
/// decide which pods it covers.
#[derive(Debug)]
struct Quota {
    name: String,
    /// `spec.hard`: resource name to whether the limit is above zero.
    hard: BTreeMap<String, bool>,
    /// `spec.scopes` and `spec.scopeSelector.matchExpressions`, as
    /// `(scopeName, operator, values)`; all must hold.
    scopes: Vec<(String, String, Vec<String>)>,
}

#[derive(Default)]
struct QuotaWire<'a> {
    metadata: Option<ObjectMeta<'a>>,
    spec: Option<QuotaSpecWire<'a>>,
}

aigov_sdk::decode_struct!(QuotaWire { "metadata" => metadata, "spec" => spec });

#[derive(Default)]
struct QuotaSpecWire<'a> {
    hard: Option<BTreeMap<Str<'a>, RawQuantity<'a>>>,
    scopes: Option<Vec<Str<'a>>>,
    scope_selector: Option<ScopeSelectorWire<'a>>,
}

aigov_sdk::decode_struct!(QuotaSpecWire { "hard" => hard, "scopes" => scopes, "scopeSelector" => scope_selector });

#[derive(Default)]
struct ScopeSelectorWire<'a> {
    match_expressions: Option<Vec<ScopedRequirementWire<'a>>>,
}

aigov_sdk::decode_struct!(ScopeSelectorWire { "matchExpressions" => match_expressions });

#[derive(Default)]
struct ScopedRequirementWire<'a> {
    scope_name: Str<'a>,
    operator: Str<'a>,
    values: Option<Vec<Str<'a>>>,
}

aigov_sdk::decode_struct!(ScopedRequirementWire { "scopeName" => scope_name, "operator" => operator, "values" => values });

/// The namespace's ResourceQuotas; `Err` quotes why they could not be read.
fn list_quotas(ns: &str, cluster: &dyn Cluster) -> Result<Vec<Quota>, String> {
    let list = cluster.list_resources_by_namespace("v1", "ResourceQuota", ns, None, None).map_err(|e| e.first_line().to_string())?;
    let mut out = Vec::new();
    for item in list_items(&list).map_err(|e| e.0)? {
        let q: QuotaWire<'_> = decode_model(item, "a ResourceQuota").map_err(|e| e.0)?;
        let name = q.metadata.as_ref().map_or("(unnamed)", ObjectMeta::display_name).to_string();
        let Some(spec) = q.spec else { continue };
        // Quantities in a stored quota are valid; one that is not counts
        // as above zero.
        let hard = spec
            .hard
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(&v.0).map_or(true, |q| q.is_positive())))
            .collect();
        let mut scopes: Vec<(String, String, Vec<String>)> =
            spec.scopes.unwrap_or_default().into_iter().map(|s| (s.to_string(), "Exists".to_string(), Vec::new())).collect();
        for r in spec.scope_selector.and_then(|s| s.match_expressions).unwrap_or_default() {
            scopes.push((
                r.scope_name.to_string(),
                r.operator.to_string(),
                r.values.unwrap_or_default().into_iter().map(|v| v.to_string()).collect(),
            ));
        }
        out.push(Quota { name, hard, scopes });
    }
    Ok(out)
}

/// Whether a container list sets any CPU or memory request or limit above
/// zero: a pod that sets none is `BestEffort`.
fn best_effort(t: &PodTemplate<'_>) -> bool {
    let set = |r: &aigov_sdk::model::pod::ResourceList<'_>| {
        ["cpu", "memory"].iter().any(|k| r.get(*k).is_some_and(|q| q.parse().map_or(true, |q| !q.is_zero())))
    };
    !t.containers()
        .filter(|c| c.list != aigov_sdk::ContainerList::EphemeralContainers)
        .any(|c| set(&c.container.resources.requests) || set(&c.container.resources.limits))
}

/// Whether quota `q` covers pods of template `t`, as the API server's
/// quota evaluator decides (`podMatchesScopeFunc`).
fn covers(q: &Quota, t: &PodTemplate<'_>) -> bool {
    let terminating = t.spec.active_deadline_seconds.is_some_and(|s| s >= 0);
    let class = t.spec.priority_class_name.as_deref().unwrap_or_default();
    q.scopes.iter().all(|(scope, op, values)| match scope.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(t),
        "NotBestEffort" => !best_effort(t),
        "PriorityClass" => match op.as_str() {
            "Exists" => !class.is_empty(),
            "In" => values.iter().any(|v| v == class),
            "NotIn" => values.iter().all(|v| v != class),
            // The pod always has the key (maybe empty): DoesNotExist
            // never holds.
            _ => false,
        },
        // Pod affinity is not read: taken as not covered.
        _ => false,
    })
}

/// `PriorityClass In (high)`, `NotTerminating`: a quota's scopes for messages.
fn describe_scopes(q: &Quota) -> String {
    q.scopes
        .iter()
        .map(|(s, op, vs)| match op.as_str() {
            "Exists" if vs.is_empty() && s != "PriorityClass" => s.clone(),
            _ if vs.is_empty() => format!("{s} {op}"),
            _ => format!("{s} {op} ({})", vs.join(",")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why the namespace's quotas do not let template `t` use MIG `resource`;
/// `None` when a quota covering the pod sets it above zero.
fn quota_problem(qs: &[Quota], t: &PodTemplate<'_>, resource: &str, ns: &str) -> Option<String> {
    let key = format!("requests.{resource}");
    let mut zero: Option<&Quota> = None;
    let mut uncovered: Option<&Quota> = None;
    let mut unprefixed: Option<(&Quota, String)> = None;
    for q in qs {
        match q.hard.get(&key) {
            Some(true) if covers(q, t) => return None,
            Some(true) => {
                uncovered.get_or_insert(q);
            }
            Some(false) if covers(q, t) => {
                zero.get_or_insert(q);
            }
            Some(false) => {}
            None => {
                for other in [resource.to_string(), format!("limits.{resource}")] {
                    if q.hard.contains_key(&other) && unprefixed.is_none() {
                        unprefixed = Some((q, other));
                    }
                }
            }
        }
    }
    if let Some(q) = zero {
        return Some(format!("ResourceQuota `{}` of namespace `{ns}` sets `{key}` to 0", q.name));
    }
    if let Some(q) = uncovered {
        return Some(format!(
            "the ResourceQuota of namespace `{ns}` that sets `{key}`, `{}`, does not cover this pod (its scopes: `{}`)",
            q.name,
            describe_scopes(q)
        ));
    }
    if let Some((q, written)) = unprefixed {
        return Some(format!(
            "ResourceQuota `{}` of namespace `{ns}` names it as `{written}`, which Kubernetes does not count for extended resources: only `{key}` limits it",
            q.name
        ));
    }
    let mut allowed: Vec<&str> = qs
        .iter()
        .filter(|q| covers(q, t))
        .flat_map(|q| q.hard.iter().filter(|(_, above)| **above).map(|(k, _)| k.as_str()))
        .filter_map(|k| k.strip_prefix("requests.").and_then(|r| r.strip_prefix(MIG_PREFIX)))
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    let others = if allowed.is_empty() { "they allow no MIG profile".to_string() } else { format!("they allow {}", quoted(&allowed)) };
    Some(match qs.len() {
        0 => format!("namespace `{ns}` has no ResourceQuota, and only the profiles its quotas set may be used"),
        _ => format!("no ResourceQuota of namespace `{ns}` sets `{key}` ({others})"),
    })
}

aigov_sdk::export_policy!(MigProfiles);
