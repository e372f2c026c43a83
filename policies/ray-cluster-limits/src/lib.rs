//! `ray-cluster-limits`: Ray clusters (RayCluster, and the cluster embedded in
//! a RayJob or RayService) stay within per-group GPU and worker limits, a cap
//! on the head's GPUs, an optional cap on the cluster's GPUs at maximum
//! scale, and carry the governance labels.
//!
//! A Ray autoscaler scales each worker group up to its `maxReplicas` with
//! nobody in the loop, and KubeRay's default `maxReplicas` is 2147483647. One
//! unbounded worker group can drain a shared GPU pool or, with a node
//! autoscaler, buy one; even 8 workers of 4 GPUs left at maximum scale for a
//! month cost about $70,000 at $3 per GPU-hour. So the bounds are checked when
//! the cluster is submitted, not on the invoice.
//!
//! GPUs are counted per family (`nvidia.com/gpu` with its MIG slices weighed
//! by their share of a GPU, `amd.com/gpu`, ...): two NVIDIA and three AMD GPUs
//! are never "5 GPUs". Replica fields are read as KubeRay reads them
//! (`ray-operator/controllers/ray/utils/util.go`, `GetWorkerGroupDesiredReplicas`):
//! a `replicas` outside `[minReplicas, maxReplicas]` is clamped, so it is a
//! warning; a worker group's size is `maxReplicas × numOfHosts` pods.
//!
//! GPUs claimed through Dynamic Resource Allocation count too: the
//! ResourceClaims and ResourceClaimTemplates the pod templates name are
//! read through the cluster, and their devices counted as the GPU resource
//! `deviceClassResources` maps their class to (the SDK's
//! `cluster::device_classes`, as `gpu-quota` counts them).

mod settings;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use aigov_sdk::cluster::device_classes::Uncounted;
use aigov_sdk::cluster::gpu::{GpuCounts, PodClaim};
use aigov_sdk::prelude::*;

use aigov_sdk::model::workload::KUBERAY_UNBOUNDED;
use aigov_sdk::{COMPUTE_TYPE_LABEL, GpuAmount, GpuFamilies, MigWeights, RayCluster, WorkerGroup, compute_type_conflict};

pub use settings::Settings;

/// The rule.
pub struct RayClusterLimits;

impl Policy for RayClusterLimits {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // Subresources (`status`) and objects being deleted never reach the
        // rule: the SDK admits them.
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        let Some(workload) = req.workload().filter(|w| w.kind.is_ray()) else {
            return Ok(verdict);
        };
        let classes = req.gpu_classes();
        let namespace = req.object_namespace();
        let found = {
            let mut claims = |t: &PodTemplate<'_>| read_claims(t, namespace, cluster, settings, &mut verdict);
            evaluate_claimed(workload, settings, &classes, &mut claims)?
        };
        // On UPDATE, a limit the old object already exceeded by as much or
        // more is the old object's violation: keyed alike, so that
        // `allowExistingViolations` lets an admin rein a cluster in step by
        // step, while an update that makes it worse is refused.
        let old = if req.operation() == Operation::Update && found.violations.iter().any(|v| v.measure.is_some()) {
            // The old object's claims are read again, what that reports
            // being the new object's business.
            let mut sink = Verdict::accept();
            let mut claims = |t: &PodTemplate<'_>| read_claims(t, namespace, cluster, settings, &mut sink);
            req.old_object_text()
                .and_then(|text| Workload::parse(workload.kind, text).ok())
                .and_then(|old| evaluate_claimed(&old, settings, &classes, &mut claims).ok())
        } else {
            None
        };
        for v in found.violations {
            match (v.measure, &old) {
                (Some((what, value)), Some(old)) if old.exceeded(&what).is_some_and(|before| before >= value) => {
                    verdict.violation_keyed(what, v.message);
                }
                _ => verdict.violation(v.message),
            }
        }
        for w in found.warnings {
            verdict.warn(w);
        }
        Ok(verdict)
    }
}

/// What a failed claim lookup was needed for, with `deny` and with `allow`.
const CLAIMS_NEEDED_FOR: (&str, &str) = (", so the GPUs they bring cannot be counted against the Ray cluster's limits", "; admitted");

/// The claims of template `t`, read in `namespace` (nothing is looked up
/// for a template without `spec.resourceClaims`); `None` when they could
/// not be read, reported on `report` as `onLookupError` says (a
/// ResourceClaimTemplate that does not exist yet: a warning).
fn read_claims(
    t: &PodTemplate<'_>,
    namespace: &str,
    cluster: &dyn Cluster,
    s: &Settings,
    report: &mut Verdict,
) -> Result<Option<Vec<PodClaim>>, Malformed> {
    if t.spec.resource_claims.is_empty() {
        return Ok(Some(Vec::new()));
    }
    t.claim_specs_or_report(namespace, cluster, s.on_lookup_error, CLAIMS_NEEDED_FOR, report)
}

/// The claims of a pod template, as the caller reads them: `None` when
/// they could not be (the caller reported why).
pub type Claims<'c> = dyn FnMut(&PodTemplate<'_>) -> Result<Option<Vec<PodClaim>>, Malformed> + 'c;

/// A problem that refuses the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The message.
    pub message: String,
    /// For a limit: what exceeds it (`workers:gpu-workers`,
    /// `worker-gpus:gpu-workers:nvidia.com/gpu`) and its amount.
    pub measure: Option<(String, u128)>,
}

/// What the rule finds in one Ray workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Violations, in document order.
    pub violations: Vec<Violation>,
    /// Warnings (what KubeRay will do differently from what the spec says).
    pub warnings: Vec<String>,
}

impl Findings {
    fn violation(&mut self, message: String) {
        self.violations.push(Violation { message, measure: None });
    }

    fn over_limit(&mut self, what: String, value: u128, message: String) {
        self.violations.push(Violation { message, measure: Some((what, value)) });
    }

    /// How far `what` exceeded its limit, if it did.
    fn exceeded(&self, what: &str) -> Option<u128> {
        self.violations.iter().find_map(|v| match &v.measure {
            Some((w, value)) if w == what => Some(*value),
            _ => None,
        })
    }
}

/// Every violation message of a Ray workload whose pods claim nothing
/// through DRA, in document order (see [`evaluate`]).
pub fn check(w: &Workload<'_>, s: &Settings) -> Result<Vec<String>, Malformed> {
    Ok(evaluate(w, s)?.violations.into_iter().map(|v| v.message).collect())
}

/// [`evaluate_claimed`] for a workload whose pods claim nothing through
/// DRA (every template's claims read as none).
pub fn evaluate(w: &Workload<'_>, s: &Settings) -> Result<Findings, Malformed> {
    evaluate_claimed(w, s, &[], &mut |_| Ok(Some(Vec::new())))
}

/// Every problem of a Ray workload, in document order: the object's labels,
/// the `compute-type` label against the GPUs requested, the head, each
/// worker group, then the cluster's total. `claims` reads each pod
/// template's DRA claims; devices of the GPU device classes `classes`
/// count as `deviceClassResources` says.
pub fn evaluate_claimed(w: &Workload<'_>, s: &Settings, classes: &[Glob], claims: &mut Claims<'_>) -> Result<Findings, Malformed> {
    let mut out = Findings::default();
    for m in s.required_labels.check(&w.metadata.labels, "metadata.labels") {
        out.violation(m);
    }
    // A RayJob that runs on an existing cluster (`clusterSelector`) embeds no
    // cluster spec: only its labels are checked.
    let Some(ray) = &w.ray else { return Ok(out) };
    int32_fields(w, ray)?;
    let mut pod = |t: &PodTemplate<'_>| -> Result<PodGpus, Malformed> {
        let mut p = PodGpus::of(t, &s.gpu_resource_names)?;
        match claims(t)? {
            Some(found) => p.claim(t, &found, s, classes),
            None => p.unread = true,
        }
        Ok(p)
    };
    let head = ray.head.as_ref().map(&mut pod).transpose()?;
    let workers = ray.worker_groups.iter().map(|g| pod(&g.template)).collect::<Result<Vec<_>, _>>()?;
    if s.check_compute_type
        && let Some(m) = compute_type(&w.metadata, ray, head.as_ref(), &workers)
    {
        out.violation(m);
    }
    if let Some(head) = &head {
        check_head(ray, head, s, &mut out);
    }
    for (group, pod) in ray.worker_groups.iter().zip(&workers) {
        check_group(group, pod, s, &mut out);
    }
    if let Some(limit) = s.max_total_gpus {
        total(ray, head.as_ref(), &workers, s, limit, &mut out);
    }
    Ok(out)
}

/// KubeRay's replica fields are `int32`: a value beyond cannot be read by
/// the operator, and is malformed input here rather than a number to
/// multiply.
fn int32_fields(w: &Workload<'_>, ray: &RayCluster<'_>) -> Result<(), Malformed> {
    for g in &ray.worker_groups {
        for (field, value) in
            [("replicas", g.replicas), ("minReplicas", g.min_replicas), ("maxReplicas", g.max_replicas), ("numOfHosts", g.num_of_hosts)]
        {
            if let Some(v) = value
                && i32::try_from(v).is_err()
            {
                return Err(Malformed(format!(
                    "the {} is malformed: `{}`: invalid value: integer `{v}`, expected a whole number that fits in 32 bits (KubeRay's `int32`)",
                    w.kind.kind(),
                    g.path.key(field)
                )));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- GPUs

/// GPU amounts in 1/420ths of a GPU ([`GpuAmount::ONE`]), wide enough that
/// a cluster's total never wraps.
type Amount = u128;
const ONE: Amount = GpuAmount::ONE as Amount;

/// `4`, `1.43` (two decimals at most).
fn amount(a: Amount) -> String {
    let whole = a / ONE;
    let hundredths = ((a % ONE) * 100 + ONE / 2) / ONE;
    let (whole, hundredths) = if hundredths == 100 { (whole.saturating_add(1), 0) } else { (whole, hundredths) };
    if hundredths == 0 {
        return whole.to_string();
    }
    let s = format!("{whole}.{hundredths:02}");
    s.trim_end_matches('0').to_string()
}

/// `` 4 `nvidia.com/gpu` GPUs ``, `` 1 `amd.com/gpu` GPU ``.
fn gpus(a: Amount, family: &str) -> String {
    let noun = if a == ONE { "GPU" } else { "GPUs" };
    format!("{} `{family}` {noun}", amount(a))
}

/// A limit as an amount.
fn cap(limit: i64) -> Amount {
    Amount::try_from(limit).unwrap_or(0).saturating_mul(ONE)
}

/// Amounts per GPU family, in family order.
fn families(counts: &GpuCounts, w: &MigWeights) -> BTreeMap<String, Amount> {
    let mut out: BTreeMap<String, Amount> = BTreeMap::new();
    for (name, n) in counts {
        let (family, unit) = w.family(name);
        let e = out.entry(family.to_string()).or_default();
        *e = e.saturating_add(Amount::from(unit.0).saturating_mul(Amount::from(*n)));
    }
    out
}

/// Where a container's GPUs sit in the pod, or the claim they come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Main,
    Sidecar,
    Init,
    /// A claim made for each pod from a ResourceClaimTemplate, or a
    /// ResourceClaim the pods share (its name says which).
    Claim,
}

/// One container's part of what a pod holds.
#[derive(Clone, Debug)]
struct Share {
    place: Place,
    /// `` `ray-worker` ``, or the container's path when it has no name.
    name: String,
    counts: GpuCounts,
    /// A ResourceClaim the pods share (counted once in the total).
    shared: bool,
}

impl Share {
    fn label(&self) -> String {
        match self.place {
            Place::Main => self.name.clone(),
            Place::Sidecar => format!("sidecar {}", self.name),
            Place::Init => format!("init container {}", self.name),
            Place::Claim => self.name.clone(),
        }
    }
}

/// GPUs one pod of a template holds, per resource name: its containers' as
/// the scheduler counts them (the same numbers as
/// `PodTemplate::gpus_per_pod`) plus the devices its DRA claims bring, and
/// the containers and claims they come from, so that a breakdown adds up to
/// its total.
#[derive(Clone, Debug, Default)]
struct PodGpus {
    /// Everything one pod may use: containers, claims made for it from
    /// ResourceClaimTemplates, and the ResourceClaims it shares.
    counts: GpuCounts,
    /// What each pod holds of its own (containers and claims from
    /// templates): multiplied by the pods of the group.
    own: GpuCounts,
    /// ResourceClaims the pods share with every pod that names them: one
    /// allocation, counted once in the cluster's total. Object name and
    /// GPUs, in claim order.
    shared: Vec<(String, GpuCounts)>,
    /// Claim requests whose GPUs cannot be counted.
    uncounted: Vec<UncountedClaim>,
    /// Whether the template's claims could not be read (a failed lookup,
    /// or a ResourceClaimTemplate not created yet): its GPUs are unknown.
    unread: bool,
    /// The containers counted, in container order.
    shares: Vec<Share>,
    /// Resource names plain init containers request: those are a maximum
    /// over init containers, not a sum.
    init_names: BTreeSet<String>,
}

/// A counted part: container order, place, name, resource, count.
type Part = (usize, Place, String, String, u64);

/// The most a pod's count of one resource may be: Kubernetes adds
/// quantities in an int64.
const MAX_UNITS: u64 = i64::MAX as u64;

impl PodGpus {
    fn of(t: &PodTemplate<'_>, names: &GpuResources) -> Result<PodGpus, Malformed> {
        let too_many =
            || Malformed(format!("`{}`: the GPUs of its containers add up to more than a Kubernetes quantity can hold", t.spec_path()));
        let add = |a: u64, b: u64| a.checked_add(b).filter(|n| *n <= MAX_UNITS).ok_or_else(too_many);
        // Regular containers and sidecars run together: their GPUs add up.
        let mut running: Vec<Part> = Vec::new();
        let mut sidecars: Vec<Part> = Vec::new();
        // Plain init containers run one at a time, each beside the sidecars
        // started before it: per resource, the largest of those counts.
        let mut init_peak: BTreeMap<String, (u64, Vec<Part>)> = BTreeMap::new();
        let mut init_names = BTreeSet::new();
        for (i, c) in t.containers().enumerate() {
            let counts = t.container_gpus(&c, names)?;
            if counts.is_empty() {
                continue;
            }
            let name = container_name(t, &c);
            match c.list {
                ContainerList::Containers | ContainerList::Model | ContainerList::Added => {
                    running.extend(counts.into_iter().map(|(r, n)| (i, Place::Main, name.clone(), r, n)));
                }
                ContainerList::InitContainers if c.is_sidecar() => {
                    for (r, n) in counts {
                        let part = (i, Place::Sidecar, name.clone(), r, n);
                        running.push(part.clone());
                        sidecars.push(part);
                    }
                }
                ContainerList::InitContainers => {
                    for (r, n) in counts {
                        let mut from: Vec<Part> = sidecars.iter().filter(|p| p.3 == r).cloned().collect();
                        let mut with = n;
                        for p in &from {
                            with = add(with, p.4)?;
                        }
                        from.push((i, Place::Init, name.clone(), r.clone(), n));
                        init_names.insert(r.clone());
                        if init_peak.get(&r).is_none_or(|(peak, _)| with > *peak) {
                            init_peak.insert(r, (with, from));
                        }
                    }
                }
                // Ephemeral containers cannot hold resources.
                ContainerList::EphemeralContainers => {}
            }
        }
        let resources: BTreeSet<String> = running.iter().map(|p| p.3.clone()).chain(init_peak.keys().cloned()).collect();
        let mut counts = GpuCounts::new();
        let mut chosen: Vec<Part> = Vec::new();
        for r in resources {
            let mut sum = 0u64;
            for p in running.iter().filter(|p| p.3 == r) {
                sum = add(sum, p.4)?;
            }
            match init_peak.remove(&r) {
                Some((peak, from)) if peak > sum => {
                    chosen.extend(from);
                    counts.insert(r, peak);
                }
                _ => {
                    chosen.extend(running.iter().filter(|p| p.3 == r).cloned());
                    counts.insert(r, sum);
                }
            }
        }
        chosen.sort_by_key(|p| p.0);
        let mut shares: Vec<(usize, Share)> = Vec::new();
        for (i, place, name, r, n) in chosen {
            match shares.last_mut() {
                Some((j, s)) if *j == i => {
                    s.counts.insert(r, n);
                }
                _ => shares.push((i, Share { place, name, counts: [(r, n)].into_iter().collect(), shared: false })),
            }
        }
        let own = counts.clone();
        Ok(PodGpus { counts, own, shares: shares.into_iter().map(|(_, s)| s).collect(), init_names, ..PodGpus::default() })
    }

    /// Adds what the template's claims bring: a claim from a
    /// ResourceClaimTemplate is the pod's own, a ResourceClaim is shared.
    fn claim(&mut self, t: &PodTemplate<'_>, claims: &[PodClaim], s: &Settings, classes: &[Glob]) {
        for c in claims {
            let counted = s.device_class_resources.count(&c.spec, classes);
            let field = t.spec_path().key("resourceClaims").index(c.index);
            for (class, why) in counted.uncounted {
                self.uncounted.push(UncountedClaim { field: field.clone(), source: c.source(), class, why });
            }
            if counted.counts.is_empty() {
                continue;
            }
            add_counts(&mut self.counts, &counted.counts);
            let shared = !c.per_pod();
            let name = if c.per_pod() {
                add_counts(&mut self.own, &counted.counts);
                format!("claim `{}` from {}", c.claim, c.source())
            } else {
                if !self.shared.iter().any(|(o, _)| *o == c.object) {
                    self.shared.push((c.object.clone(), counted.counts.clone()));
                }
                format!("{}, shared by every pod that names it", c.source())
            };
            self.shares.push(Share { place: Place::Claim, name, counts: counted.counts, shared });
        }
    }

    /// What one pod holds of its own of `family`, part by part, when a
    /// claim from a ResourceClaimTemplate is among the parts: `` (1 in
    /// `ray-worker` + 2 in claim `gpus` from ResourceClaimTemplate `two-gpus`) ``.
    fn own_parts(&self, family: &str, w: &MigWeights) -> Option<String> {
        let in_family = |r: &str| w.family(r).0 == family;
        let own = |s: &&Share| !s.shared && s.counts.keys().any(|r| in_family(r));
        if !self.shares.iter().filter(own).any(|s| s.place == Place::Claim) {
            return None;
        }
        let parts: Vec<String> = self
            .shares
            .iter()
            .filter(own)
            .map(|share| {
                let mine: GpuCounts = share.counts.iter().filter(|(r, _)| in_family(r)).map(|(r, n)| (r.clone(), *n)).collect();
                let what = match mine.iter().next() {
                    Some((r, n)) if mine.len() == 1 && r == family => n.to_string(),
                    _ => GpuFamilies::of(&mine, w).breakdown(family, w),
                };
                format!("{what} in {}", share.label())
            })
            .collect();
        Some(if parts.len() > 1 { format!("({})", parts.join(" + ")) } else { parts.concat() })
    }

    /// Whether the pod holds GPUs, or claims some it is not known how many.
    fn requests_gpus(&self) -> bool {
        !self.counts.is_empty() || !self.uncounted.is_empty()
    }

    /// Violations for claims whose GPUs cannot be counted, so that
    /// `limit` (`a worker may have at most 4`) cannot be checked.
    fn report_uncounted(&self, limit: &str, out: &mut Findings) {
        for u in &self.uncounted {
            out.violation(u.why.refusal(&u.field, &u.source, &u.class, limit));
        }
    }

    /// How the pod's GPUs of `family` add up, container by container:
    /// `` in container `ray-worker` ``, `` 2 in `ray-worker` + 1 in sidecar
    /// `profiler` ``, or with resource names where the family has several
    /// (MIG slices with their weight).
    fn breakdown(&self, family: &str, w: &MigWeights) -> String {
        let in_family = |r: &str| w.family(r).0 == family;
        let resources: Vec<&String> = self.counts.keys().filter(|r| in_family(r)).collect();
        // One resource named like its family: no need to name it again.
        let plain = matches!(resources.as_slice(), [only] if only.as_str() == family);
        // (its GPUs of the family, how many resources that is, the container)
        let mut pieces: Vec<(String, usize, &Share)> = Vec::new();
        for share in &self.shares {
            let mine: GpuCounts = share.counts.iter().filter(|(r, _)| in_family(r)).map(|(r, n)| (r.clone(), *n)).collect();
            if mine.is_empty() {
                continue;
            }
            let what = if plain {
                mine.values().fold(0u64, |a, n| a.saturating_add(*n)).to_string()
            } else {
                GpuFamilies::of(&mine, w).breakdown(family, w)
            };
            pieces.push((what, mine.len(), share));
        }
        let place = |share: &Share| match share.place {
            Place::Main => format!("container {}", share.name),
            _ => share.label(),
        };
        let mut out = match pieces.as_slice() {
            [(_, _, share)] if plain => format!("in {}", place(share)),
            [(what, 1, share)] => format!("{what} in {}", place(share)),
            [(what, _, share)] => format!("{what}, all in {}", place(share)),
            _ => pieces
                .iter()
                .map(
                    |(what, n, share)| {
                        if *n > 1 { format!("({what}) in {}", share.label()) } else { format!("{what} in {}", share.label()) }
                    },
                )
                .collect::<Vec<_>>()
                .join(" + "),
        };
        if self.init_names.iter().any(|r| in_family(r)) {
            out.push_str("; init containers run one at a time, before the others, so their GPUs count as a maximum, not a sum");
        }
        out
    }
}

/// A claim request whose GPUs cannot be counted.
#[derive(Clone, Debug)]
struct UncountedClaim {
    /// `spec.workerGroupSpecs[0].template.spec.resourceClaims[0]`.
    field: Path,
    /// `` ResourceClaimTemplate `x` ``.
    source: String,
    class: String,
    why: Uncounted,
}

fn add_counts(into: &mut GpuCounts, counts: &GpuCounts) {
    for (name, n) in counts {
        let e = into.entry(name.clone()).or_default();
        *e = e.saturating_add(*n);
    }
}

/// `` `ray-worker` ``, or the container's path when it has no name.
fn container_name(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>) -> String {
    if c.container.name.trim().is_empty() { format!("`{}`", t.container_path(c)) } else { format!("`{}`", c.container.name) }
}

// ---------------------------------------------------------------- groups

/// `` `spec.workerGroupSpecs[1]` (`gpu-workers`) ``, or the path alone for a
/// group without a name; written only when a message shows it.
fn group_ref<'g>(g: &'g WorkerGroup<'_>) -> impl fmt::Display + 'g {
    fmt::from_fn(move |f| match g.name.as_deref() {
        Some(name) if !name.trim().is_empty() => write!(f, "`{}` (`{name}`)", g.path),
        _ => write!(f, "`{}`", g.path),
    })
}

/// `` `gpu-workers` ``, or the path for a group without a name.
fn group_short(g: &WorkerGroup<'_>) -> String {
    match g.name.as_deref() {
        Some(name) if !name.trim().is_empty() => format!("`{name}`"),
        _ => format!("`{}`", g.path),
    }
}

/// What identifies a group across an UPDATE: its name, or its path.
fn group_id(g: &WorkerGroup<'_>) -> String {
    match g.name.as_deref() {
        Some(name) if !name.trim().is_empty() => name.to_string(),
        _ => g.path.to_string(),
    }
}

/// Pods per replica, as KubeRay creates them: `numOfHosts`, 1 when absent.
/// A value below 1 is reported on its own; counted as 1 here.
fn hosts(g: &WorkerGroup<'_>) -> i64 {
    g.num_of_hosts.unwrap_or(1).max(1)
}

/// The head pod's GPUs, per family, against `maxGpusPerHead`.
fn check_head(ray: &RayCluster<'_>, head: &PodGpus, s: &Settings, out: &mut Findings) {
    let limit = s.head_limit();
    let who = fmt::from_fn(|f| write!(f, "the head group (`{}.headGroupSpec`)", ray.path));
    for (family, a) in families(&head.counts, &s.mig_weights) {
        if a <= cap(limit) {
            continue;
        }
        let parts = head.breakdown(&family, &s.mig_weights);
        let message = if limit == 0 {
            format!(
                "{who} requests {} ({parts}), but the head may not request GPUs (`maxGpusPerHead: 0`): remove them from the head and run GPU work on a worker group",
                gpus(a, &family)
            )
        } else {
            format!(
                "{who} requests {} ({parts}), but the head may have at most {limit}: request at most {limit} in the head pod and run the rest on worker groups",
                gpus(a, &family)
            )
        };
        out.over_limit(format!("head-gpus:{family}"), a, message);
    }
    let limit = if limit == 0 {
        "the head may not request GPUs (`maxGpusPerHead: 0`)".to_string()
    } else {
        format!("the head may have at most {limit}")
    };
    head.report_uncounted(&limit, out);
}

fn check_group(g: &WorkerGroup<'_>, pod: &PodGpus, s: &Settings, out: &mut Findings) {
    let who = group_ref(g);
    replica_range(g, &who, out);
    worker_cap(g, pod.requests_gpus(), s, &who, out);
    if let Some(h) = g.num_of_hosts
        && h < 1
    {
        out.violation(format!(
            "{who} has `numOfHosts: {h}`, so KubeRay starts no worker for it: set `numOfHosts` to 1 or more (the pods of each replica), or leave it out for 1"
        ));
    }
    let max = s.max_gpus_per_worker;
    for (family, a) in families(&pod.counts, &s.mig_weights) {
        if a > cap(max) {
            out.over_limit(
                format!("worker-gpus:{}:{family}", group_id(g)),
                a,
                format!(
                    "{who} requests {} per worker ({}), but a worker may have at most {max}: request at most {max} in each worker pod",
                    gpus(a, &family),
                    pod.breakdown(&family, &s.mig_weights),
                ),
            );
        }
    }
    pod.report_uncounted(&format!("a worker may have at most {max}"), out);
}

/// `minReplicas` and `maxReplicas` as KubeRay validates them (negative
/// values, or `minReplicas > maxReplicas`, stop it from reconciling the
/// cluster: violations), and `replicas` as it reads it: absent (or 0, what
/// the API server writes for an absent value) starts `minReplicas`, and a
/// value outside `[minReplicas, maxReplicas]` is clamped into it: a warning.
fn replica_range(g: &WorkerGroup<'_>, who: &dyn fmt::Display, out: &mut Findings) {
    let min = g.min_replicas.unwrap_or(0);
    let max = g.max_replicas.unwrap_or(KUBERAY_UNBOUNDED);
    if min < 0 {
        out.violation(format!("{who} has `minReplicas: {min}`, which KubeRay refuses: set `minReplicas` to 0 or more"));
    }
    if min < 0 || max < 0 {
        return;
    }
    if min > max {
        out.violation(format!(
            "{who} has `minReplicas: {min}` above `maxReplicas: {max}`, which KubeRay refuses: set `minReplicas` to at most `maxReplicas`"
        ));
        return;
    }
    let Some(replicas) = g.replicas else { return };
    if replicas == 0 && min > 0 {
        return;
    }
    let hosts = hosts(g);
    let runs = |n: i64| {
        let n = u64::try_from(n).unwrap_or(0);
        if hosts == 1 {
            count(n, "worker")
        } else {
            format!("{} ({})", count(n, "replica"), count(n.saturating_mul(hosts.unsigned_abs()), "worker"))
        }
    };
    let range = if max == KUBERAY_UNBOUNDED { format!("to {min} or more") } else { format!("between {min} and {max}") };
    if replicas < min {
        out.warnings.push(format!(
            "{who} has `replicas: {replicas}` below `minReplicas: {min}`, so KubeRay runs {}: set `replicas` {range} to say what runs",
            runs(min)
        ));
    } else if replicas > max {
        out.warnings.push(format!(
            "{who} has `replicas: {replicas}` above `maxReplicas: {max}`, so KubeRay runs {}: set `replicas` {range} to say what runs",
            runs(max)
        ));
    }
}

/// The group's worker pods at maximum scale, `maxReplicas × numOfHosts`,
/// against its cap; an absent `maxReplicas` (or KubeRay's default, which is
/// what an absent value becomes) is unbounded.
fn worker_cap(g: &WorkerGroup<'_>, gpu: bool, s: &Settings, who: &dyn fmt::Display, out: &mut Findings) {
    let (limit, kind) = if gpu {
        (s.max_gpu_worker_replicas, "a worker group that requests GPUs")
    } else {
        (s.max_cpu_worker_replicas, "a worker group without GPUs")
    };
    let hosts = hosts(g);
    let per_replica = limit / hosts;
    let fix = fmt::from_fn(|f| {
        if hosts == 1 {
            write!(f, "set `maxReplicas` to at most {limit} (the limit for {kind})")
        } else if per_replica >= 1 {
            write!(
                f,
                "set `maxReplicas` to at most {per_replica} ({per_replica} × `numOfHosts: {hosts}` = {} workers; {kind} may have at most {limit})",
                per_replica * hosts
            )
        } else {
            write!(f, "lower `numOfHosts` to at most {limit}: one replica is already {hosts} workers, and {kind} may have at most {limit}")
        }
    });
    match g.max_replicas {
        None => out.violation(format!("{who} has no `maxReplicas`, so KubeRay lets it scale without limit: {fix}")),
        Some(KUBERAY_UNBOUNDED) => {
            out.violation(format!("{who} has `maxReplicas: {KUBERAY_UNBOUNDED}`, KubeRay's default for no limit: {fix}"))
        }
        Some(n) if n < 0 => out.violation(format!("{who} has `maxReplicas: {n}`, which KubeRay refuses: {fix}")),
        Some(n) => {
            // Both are int32 (checked before): the product fits.
            let workers = n.saturating_mul(hosts);
            if workers <= limit {
                return;
            }
            let message = if hosts == 1 {
                format!(
                    "{who} has `maxReplicas: {n}`, but {kind} may scale to at most {}: set `maxReplicas` to at most {limit}",
                    count(limit.unsigned_abs(), "worker")
                )
            } else if per_replica >= 1 {
                format!(
                    "{who} can scale to {workers} workers (`maxReplicas: {n}` × `numOfHosts: {hosts}`), but {kind} may scale to at most {}: set `maxReplicas` to at most {per_replica}",
                    count(limit.unsigned_abs(), "worker")
                )
            } else {
                format!(
                    "{who} can scale to {workers} workers (`maxReplicas: {n}` × `numOfHosts: {hosts}`), but {kind} may scale to at most {}: lower `numOfHosts` to at most {limit} (one replica is already {hosts} workers)",
                    count(limit.unsigned_abs(), "worker")
                )
            };
            out.over_limit(format!("workers:{}", group_id(g)), Amount::from(workers.unsigned_abs()), message);
        }
    }
}

/// The `compute-type` label against the GPUs the cluster requests: `cpu`
/// with GPUs, or `gpu`/`mixed` without, is a mislabelled cluster. Other
/// values are left to the label check.
fn compute_type(meta: &ObjectMeta<'_>, ray: &RayCluster<'_>, head: Option<&PodGpus>, workers: &[PodGpus]) -> Option<String> {
    let value = meta.label(COMPUTE_TYPE_LABEL)?;
    let first_gpu_user = if head.is_some_and(PodGpus::requests_gpus) {
        Some(format!("the head group (`{}.headGroupSpec`)", ray.path))
    } else {
        ray.worker_groups.iter().zip(workers).find(|(_, p)| p.requests_gpus()).map(|(g, _)| group_ref(g).to_string())
    };
    // Claims that could not be read may hold GPUs: without another GPU
    // user, whether the cluster requests GPUs is unknown.
    if first_gpu_user.is_none() && (head.is_some_and(|h| h.unread) || workers.iter().any(|p| p.unread)) {
        return None;
    }
    let user = first_gpu_user.map(|who| format!("{who} requests GPUs"));
    compute_type_conflict(&Path::root().keys(&["metadata", "labels"]), value, user.as_deref(), user.is_some(), || {
        format!("no pod of the Ray cluster in `{}` requests GPUs", ray.path)
    })
}

/// The cluster's GPUs at maximum scale, per family, against `limit`: the
/// head, plus each worker group at `maxReplicas` (KubeRay never runs more)
/// times `numOfHosts` pods per replica, plus each ResourceClaim the pods
/// share, once however many pods name it. The sum is shown term by term,
/// and written only for a family over the limit.
fn total(ray: &RayCluster<'_>, head: Option<&PodGpus>, workers: &[PodGpus], s: &Settings, limit: i64, out: &mut Findings) {
    let w = &s.mig_weights;
    // The groups that request GPUs, with their replicas at maximum scale:
    // `None` for a group without a bound.
    let scaled: Vec<Scaled<'_, '_>> = ray
        .worker_groups
        .iter()
        .zip(workers)
        .filter(|(_, pod)| !pod.own.is_empty())
        .map(|(g, pod)| {
            let replicas = match g.max_replicas {
                None | Some(KUBERAY_UNBOUNDED) => None,
                Some(n) => Some(u64::try_from(n).unwrap_or(0)),
            };
            (g, pod, replicas)
        })
        .collect();
    let mut sums: BTreeMap<String, Amount> = BTreeMap::new();
    let mut unbounded_families = BTreeSet::new();
    for (family, a) in head.map(|h| families(&h.own, w)).unwrap_or_default() {
        let e = sums.entry(family).or_default();
        *e = e.saturating_add(a);
    }
    let shared = shared_claims(head, workers);
    for (_, counts) in &shared {
        for (family, a) in families(counts, w) {
            let e = sums.entry(family).or_default();
            *e = e.saturating_add(a);
        }
    }
    for (g, pod, replicas) in &scaled {
        let per_worker = families(&pod.own, w);
        let Some(replicas) = *replicas else {
            unbounded_families.extend(per_worker.into_keys());
            continue;
        };
        for (family, a) in per_worker {
            let e = sums.entry(family).or_default();
            *e = e.saturating_add(at_max_scale(a, replicas, g));
        }
    }
    let unbounded: Vec<String> = scaled.iter().filter(|(_, _, r)| r.is_none()).map(|(g, _, _)| group_ref(g).to_string()).collect();
    if !unbounded.is_empty() {
        out.violation(format!(
            "the Ray cluster in `{}` has no upper bound on GPUs at maximum scale, but a Ray cluster may use at most {} of each family: set `maxReplicas` on {}",
            ray.path,
            count(limit.unsigned_abs(), "GPU"),
            unbounded.join(", ")
        ));
    }
    for (family, sum) in sums {
        if unbounded_families.contains(&family) || sum <= cap(limit) {
            continue;
        }
        let at_least = if sum == Amount::MAX { "at least " } else { "" };
        let terms = terms(&family, head, &scaled, &shared, w);
        let fix = if shared.iter().any(|(_, c)| families(c, w).contains_key(&family)) {
            "lower `maxReplicas`, the GPUs per worker or the devices the shared ResourceClaims claim"
        } else {
            "lower `maxReplicas` or the GPUs per worker"
        };
        out.over_limit(
            format!("total-gpus:{family}"),
            sum,
            format!(
                "the Ray cluster in `{}` can grow to {at_least}{} at maximum scale ({}), but a Ray cluster may use at most {limit}: {fix}",
                ray.path,
                gpus(sum, &family),
                terms.join(", ")
            ),
        );
    }
}

/// The ResourceClaims the cluster's pods share, each once (by object
/// name), in document order.
fn shared_claims<'p>(head: Option<&'p PodGpus>, workers: &'p [PodGpus]) -> Vec<(&'p str, &'p GpuCounts)> {
    let mut out: Vec<(&str, &GpuCounts)> = Vec::new();
    for (name, counts) in head.into_iter().chain(workers).flat_map(|p| &p.shared) {
        if !out.iter().any(|(n, _)| *n == name.as_str()) {
            out.push((name, counts));
        }
    }
    out
}

/// A worker's `a` GPUs, for the group's `replicas` of `numOfHosts` pods.
fn at_max_scale(a: Amount, replicas: u64, g: &WorkerGroup<'_>) -> Amount {
    a.saturating_mul(Amount::from(replicas)).saturating_mul(Amount::from(hosts(g).unsigned_abs()))
}

/// A group that requests GPUs, its pod, and its replicas at maximum scale.
type Scaled<'g, 'a> = (&'g WorkerGroup<'a>, &'g PodGpus, Option<u64>);

/// The terms of a family's sum at maximum scale: `head: in container
/// `ray-head``, `` `gpu`: 4 workers × 2 = 8 ``.
fn terms(family: &str, head: Option<&PodGpus>, scaled: &[Scaled<'_, '_>], shared: &[(&str, &GpuCounts)], w: &MigWeights) -> Vec<String> {
    let mut terms = Vec::new();
    if let Some(head) = head
        && families(&head.own, w).contains_key(family)
    {
        terms.push(format!("head: {}", GpuFamilies::of(&head.own, w).breakdown(family, w)));
    }
    for (g, pod, replicas) in scaled {
        let Some(replicas) = replicas.filter(|r| *r > 0) else { continue };
        let Some(a) = families(&pod.own, w).get(family).copied() else { continue };
        let hosts = hosts(g).unsigned_abs();
        let scale = if hosts == 1 {
            format!("{} × ", count(replicas, "worker"))
        } else {
            format!("{} × {hosts} hosts × ", count(replicas, "replica"))
        };
        let n = at_max_scale(a, replicas, g);
        let each = pod.own_parts(family, w).unwrap_or_else(|| {
            let b = GpuFamilies::of(&pod.own, w).breakdown(family, w);
            if b.contains(" + ") { format!("({b})") } else { b }
        });
        terms.push(format!("{}: {scale}{each} = {}", group_short(g), amount(n)));
    }
    for (name, counts) in shared {
        if families(counts, w).contains_key(family) {
            terms.push(format!(
                "ResourceClaim `{name}`, shared by every pod that names it, once: {}",
                GpuFamilies::of(counts, w).breakdown(family, w)
            ));
        }
    }
    terms
}

aigov_sdk::export_policy!(RayClusterLimits);

#[cfg(test)]
mod tests;
