//! GPUs as clusters expose them: extended resources (`nvidia.com/gpu`,
//! time-sliced `nvidia.com/gpu.shared`, MIG slices `nvidia.com/mig-*`,
//! `amd.com/gpu`), counted per container and per pod the way the scheduler
//! counts them; GPU families, so that 2 NVIDIA and 3 AMD GPUs are never
//! "5 GPUs", with MIG slices weighed by their share of a physical GPU; and
//! GPUs claimed through Dynamic Resource Allocation (`spec.resourceClaims`),
//! resolved through the cluster interface.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::base::error::Malformed;
use crate::base::glob::{Glob, any_match, non_empty_patterns};
use crate::base::rule_settings::SettingsError;
use crate::cluster::lookup::{Cluster, LookupError, OnLookupError, Report};
use crate::decode::dec::{Str, nullable};
use crate::decode::path::Path;
use crate::model::pod::Resources;
use crate::model::workload::{ContainerList, ContainerRef, PodTemplate};

/// The extended resources that count as GPUs: wildcard patterns, by default
/// `nvidia.com/gpu`, `nvidia.com/gpu.shared` (time-sliced GPUs with
/// `renameByDefault`), `nvidia.com/mig-*` and `amd.com/gpu`. A rule that
/// looks at GPUs embeds this as its `gpuResourceNames` setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GpuResources(pub Vec<Glob>);

impl Default for GpuResources {
    fn default() -> Self {
        GpuResources(vec![
            Glob::new("nvidia.com/gpu"),
            Glob::new("nvidia.com/gpu.shared"),
            Glob::new("nvidia.com/mig-*"),
            Glob::new("amd.com/gpu"),
        ])
    }
}

impl GpuResources {
    /// Whether a resource name is a GPU resource.
    pub fn is_gpu(&self, resource: &str) -> bool {
        // Every GPU resource is an extended resource (`vendor/name`); checking
        // for the slash first skips cpu, memory and ephemeral-storage cheaply.
        resource.contains('/') && any_match(&self.0, resource)
    }

    /// Checks the list under its settings key: at least one non-empty pattern.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        if self.0.is_empty() {
            return Err(SettingsError::new(key, "must list at least one resource name, or no GPU would ever be detected"));
        }
        non_empty_patterns(&key, &self.0)
    }
}

/// A number of GPUs, exact in 1/420ths so that MIG slices (sevenths of an
/// A100 or H100, quarters of an A30) add up without rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuAmount(pub u64);

impl GpuAmount {
    /// 420: one whole GPU.
    pub const ONE: u64 = 420;

    /// `n` whole GPUs.
    pub fn whole(n: u64) -> GpuAmount {
        GpuAmount(n.saturating_mul(Self::ONE))
    }

    /// Adds.
    pub fn plus(self, other: GpuAmount) -> GpuAmount {
        GpuAmount(self.0.saturating_add(other.0))
    }

    /// Multiplies by a count.
    pub fn times(self, n: u64) -> GpuAmount {
        GpuAmount(self.0.saturating_mul(n))
    }

    /// Whether this is more than `n` whole GPUs.
    pub fn exceeds(self, n: u64) -> bool {
        self.0 > n.saturating_mul(Self::ONE)
    }

    /// Whether this is zero.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// `3`, `1.5`, `0.14` (two decimals at most).
impl fmt::Display for GpuAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / Self::ONE;
        let rest = self.0 % Self::ONE;
        if rest == 0 {
            return write!(f, "{whole}");
        }
        let hundredths = (rest * 100 + Self::ONE / 2) / Self::ONE;
        let (whole, hundredths) = if hundredths == 100 { (whole + 1, 0) } else { (whole, hundredths) };
        let s = format!("{whole}.{hundredths:02}");
        f.write_str(s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// How much of a physical GPU each MIG profile is: by default its compute
/// slices out of 7 (`nvidia.com/mig-3g.40gb` is 3/7), as on A100, H100,
/// H200 and B200; other devices (A30: 4 slices) are set per profile. In
/// settings, profile resource names to fractions of a GPU:
///
/// ```yaml
/// migWeights:
///   nvidia.com/mig-1g.6gb: 0.25
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MigWeights(pub BTreeMap<String, f64>);

impl MigWeights {
    /// Checks the weights: each above 0 and at most 1.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        for (name, w) in &self.0 {
            if !(*w > 0.0 && *w <= 1.0) {
                return Err(SettingsError::new(
                    format!("{key}.{name}"),
                    format!("`{w}` is not a fraction of a GPU: use a number above 0 and at most 1"),
                ));
            }
        }
        Ok(())
    }

    /// The family a GPU resource counts in, and how much of one GPU of that
    /// family one unit is: MIG slices count in `nvidia.com/gpu`, everything
    /// else in its own name, one GPU per unit.
    pub fn family<'r>(&self, resource: &'r str) -> (&'r str, GpuAmount) {
        let Some(profile) = resource.strip_prefix("nvidia.com/mig-") else {
            return (resource, GpuAmount::whole(1));
        };
        if let Some(w) = self.0.get(resource) {
            // Weights are validated to (0, 1]: the product fits.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let units = (w * GpuAmount::ONE as f64).round() as u64;
            return ("nvidia.com/gpu", GpuAmount(units.max(1)));
        }
        let slices = profile.split(['g', '.']).next().and_then(|g| g.parse::<u64>().ok()).filter(|g| (1..=7).contains(g)).unwrap_or(7);
        ("nvidia.com/gpu", GpuAmount(slices * GpuAmount::ONE / 7))
    }
}

/// GPUs by resource name (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`), in
/// name order.
pub type GpuCounts = BTreeMap<String, u64>;

/// GPUs by family, in family order, with the counts they add up from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuFamilies(pub BTreeMap<String, (GpuAmount, GpuCounts)>);

impl GpuFamilies {
    /// Groups per-resource counts into families.
    pub fn of(counts: &GpuCounts, weights: &MigWeights) -> GpuFamilies {
        let mut out: BTreeMap<String, (GpuAmount, GpuCounts)> = BTreeMap::new();
        for (name, n) in counts {
            let (family, unit) = weights.family(name);
            let entry = out.entry(family.to_string()).or_default();
            entry.0 = entry.0.plus(unit.times(*n));
            *entry.1.entry(name.clone()).or_default() += n;
        }
        GpuFamilies(out)
    }

    /// How one family's amount adds up: `4 `nvidia.com/gpu``, or
    /// `2 `nvidia.com/gpu` + 3 `nvidia.com/mig-1g.10gb` (3/7 GPU each)`.
    pub fn breakdown(&self, family: &str, weights: &MigWeights) -> String {
        let Some((_, counts)) = self.0.get(family) else { return String::new() };
        counts
            .iter()
            .map(|(name, n)| {
                let (_, unit) = weights.family(name);
                if unit == GpuAmount::whole(1) { format!("{n} `{name}`") } else { format!("{n} `{name}` ({} GPU each)", fraction(unit)) }
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// `3/7`, `1/4`, or a decimal.
fn fraction(a: GpuAmount) -> String {
    for den in [7u64, 4, 2, 3, 5, 6, 8] {
        if (a.0 * den).is_multiple_of(GpuAmount::ONE) {
            return format!("{}/{den}", a.0 * den / GpuAmount::ONE);
        }
    }
    a.to_string()
}

/// A container that requests GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuRequest {
    /// Path of the container (`spec.template.spec.containers[0]`).
    pub container_path: Path,
    /// Container name.
    pub container_name: String,
    /// Which list the container is in.
    pub list: ContainerList,
    /// GPU resource names requested, with counts, in name order.
    pub resources: Vec<(String, u64)>,
}

impl GpuRequest {
    /// Total units over the container's GPU resources (of any family).
    pub fn total(&self) -> u64 {
        self.resources.iter().map(|(_, n)| *n).fold(0, u64::saturating_add)
    }
}

/// The largest count a quantity may have: Kubernetes keeps quantities in an
/// int64.
const MAX_UNITS: u64 = i64::MAX as u64;

/// Whole units of a resource quantity at `path` (rounded up, as
/// `Quantity.Value()`): malformed input names the field; a value past what
/// Kubernetes stores is malformed too, not saturated.
pub fn units(raw: &crate::model::pod::RawQuantity<'_>, path: &dyn fmt::Display) -> Result<u64, Malformed> {
    let q = raw.parse().map_err(|e| Malformed(format!("`{path}`: {e}")))?;
    match q.ceil_units() {
        n if n > MAX_UNITS => Err(Malformed(format!("`{path}`: `{}` is larger than any quantity Kubernetes can store", raw.0))),
        n => Ok(n),
    }
}

impl<'a> PodTemplate<'a> {
    /// GPUs one container requests, per GPU resource name: for each name the
    /// larger of its limit and request, above zero. Errors name the path of
    /// an unparsable quantity.
    pub fn container_gpus(&self, c: &ContainerRef<'_, 'a>, gpus: &GpuResources) -> Result<Vec<(String, u64)>, Malformed> {
        // The path is written only into an error: built when shown.
        resources_gpus(&c.container.resources, gpus, &fmt::from_fn(|f| write!(f, "{}", self.resources_path(c))))
    }

    /// Every container that requests a GPU (regular, init, ephemeral and
    /// model containers), in order.
    pub fn gpu_requests(&self, gpus: &GpuResources) -> Result<Vec<GpuRequest>, Malformed> {
        let mut out = Vec::new();
        for c in self.containers() {
            let resources = self.container_gpus(&c, gpus)?;
            if !resources.is_empty() {
                out.push(GpuRequest {
                    container_path: self.container_path(&c),
                    container_name: c.container.name.to_string(),
                    list: c.list,
                    resources,
                });
            }
        }
        Ok(out)
    }

    /// Whether any container requests a GPU.
    pub fn requests_gpu(&self, gpus: &GpuResources) -> Result<bool, Malformed> {
        for c in self.containers() {
            if !self.container_gpus(&c, gpus)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// GPUs one pod from this template holds, per resource name, as the
    /// scheduler counts them: for each name, the larger of (all regular
    /// containers plus sidecars) and the largest init container (plus the
    /// sidecars started before it). Init containers run one at a time, so
    /// their GPUs are a maximum, not a sum. Ephemeral containers cannot
    /// hold resources.
    pub fn gpus_per_pod(&self, gpus: &GpuResources) -> Result<GpuCounts, Malformed> {
        let mut pod = PodSum::default();
        for c in self.containers() {
            pod.add(c.list, c.is_sidecar(), self.container_gpus(&c, gpus)?);
        }
        Ok(pod.total())
    }

    /// Total GPU units one pod holds over every GPU resource (see
    /// [`PodTemplate::gpus_per_pod`]; families are not told apart).
    pub fn gpu_units_per_pod(&self, gpus: &GpuResources) -> Result<u64, Malformed> {
        Ok(self.gpus_per_pod(gpus)?.values().fold(0, |a, n| a.saturating_add(*n)))
    }
}

/// GPUs a container's `resources` ask for, per GPU resource name: for each
/// name the larger of its limit and request, above zero, in name order.
/// `at` is the path of `resources`, written only into an error.
pub(crate) fn resources_gpus(res: &Resources<'_>, gpus: &GpuResources, at: &dyn fmt::Display) -> Result<Vec<(String, u64)>, Malformed> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (field, list) in [("limits", &res.limits), ("requests", &res.requests)] {
        for (name, raw) in list {
            if !gpus.is_gpu(name) {
                continue;
            }
            let n = units(raw, &fmt::from_fn(|f| write!(f, "{at}.{field}[{name}]")))?;
            match out.iter_mut().find(|(k, _)| k.as_str() == &**name) {
                Some((_, m)) => *m = (*m).max(n),
                None => out.push((name.to_string(), n)),
            }
        }
    }
    out.retain(|(_, n)| *n > 0);
    out.sort();
    Ok(out)
}

/// One pod's GPUs, added up container by container as the scheduler
/// counts them (see [`PodTemplate::gpus_per_pod`]): containers in pod
/// order, init containers in theirs.
#[derive(Default)]
pub(crate) struct PodSum {
    regular: GpuCounts,
    sidecars: GpuCounts,
    init_peak: GpuCounts,
}

impl PodSum {
    /// Adds one container's GPUs (`sidecar`: an init container that keeps
    /// running, `restartPolicy: Always`).
    pub(crate) fn add(&mut self, list: ContainerList, sidecar: bool, counts: Vec<(String, u64)>) {
        match list {
            ContainerList::Containers | ContainerList::Model => add(&mut self.regular, counts),
            ContainerList::InitContainers if sidecar => add(&mut self.sidecars, counts),
            ContainerList::InitContainers => {
                for (name, n) in counts {
                    let with_sidecars = n.saturating_add(self.sidecars.get(&name).copied().unwrap_or(0));
                    let peak = self.init_peak.entry(name).or_default();
                    *peak = (*peak).max(with_sidecars);
                }
            }
            // Ephemeral containers cannot hold resources.
            ContainerList::EphemeralContainers => {}
        }
    }

    /// The pod's GPUs per resource name: the larger of (regular containers
    /// plus sidecars) and the init containers' peak, above zero.
    pub(crate) fn total(self) -> GpuCounts {
        let mut out = self.regular;
        for (name, n) in self.sidecars {
            let e = out.entry(name).or_default();
            *e = e.saturating_add(n);
        }
        for (name, n) in self.init_peak {
            let e = out.entry(name).or_default();
            *e = (*e).max(n);
        }
        out.retain(|_, n| *n > 0);
        out
    }
}

fn add(into: &mut GpuCounts, counts: Vec<(String, u64)>) {
    for (name, n) in counts {
        let e = into.entry(name).or_default();
        *e = e.saturating_add(n);
    }
}

impl crate::model::listed::ListedPod<'_> {
    /// GPUs the pod holds, per resource name, counted as
    /// [`crate::PodTemplate::gpus_per_pod`] counts them (ephemeral
    /// containers hold none). An unparsable quantity is named by its path
    /// in the pod (`spec.containers[0].resources.limits[nvidia.com/gpu]`).
    pub fn gpus_per_pod(&self, gpus: &GpuResources) -> Result<GpuCounts, Malformed> {
        let mut pod = PodSum::default();
        for (list, containers) in [(ContainerList::Containers, &self.containers), (ContainerList::InitContainers, &self.init_containers)] {
            for (i, c) in containers.iter().enumerate() {
                let at = fmt::from_fn(|f| write!(f, "{}", Path::root().keys(&["spec", list.field()]).index(i).key("resources")));
                let sidecar = list == ContainerList::InitContainers && c.restart_policy.as_deref() == Some("Always");
                pod.add(list, sidecar, resources_gpus(&c.resources, gpus, &at)?);
            }
        }
        Ok(pod.total())
    }
}

/// `4 `nvidia.com/gpu``, `2 `nvidia.com/gpu` and 1 `amd.com/gpu``.
pub fn describe_counts(counts: &GpuCounts) -> String {
    counts.iter().map(|(name, n)| format!("{n} `{name}`")).collect::<Vec<_>>().join(" and ")
}

// ---------------------------------------------------------------- DRA

/// How GPUs claimed through Dynamic Resource Allocation are found: the
/// `resourceClaims` setting of rules that look at GPUs.
///
/// A pod that gets its GPU through `spec.resourceClaims` requests no
/// extended resource; only its ResourceClaim (or the ResourceClaimTemplate
/// it is made from) says what device class it asks for. With `resolve`, the
/// rule reads them through the cluster interface (Kubewarden's
/// `kubernetes/get_resource`; the policy must list `ResourceClaim` and
/// `ResourceClaimTemplate` of `resource.k8s.io/v1` in its
/// `contextAwareResources`) and counts devices of the GPU device classes.
/// Without it, DRA GPUs are not seen.
///
/// `D` is the rule's default for `resolve` ([`NotByDefault`], or
/// [`ByDefault`] for the context-aware rules that read claims unasked):
/// settings that write `resourceClaims` without `resolve` keep that
/// default, so writing only `gpuDeviceClasses` never switches resolution
/// off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default, bound = "")]
pub struct ResourceClaims<D: ResolveDefault = NotByDefault> {
    /// Whether to look claims up. Default: the rule's (`D`).
    pub resolve: bool,
    /// Device classes that are GPUs (wildcards allowed). Default
    /// `gpu.nvidia.com` (NVIDIA's DRA driver).
    pub gpu_device_classes: Vec<Glob>,
    #[serde(skip)]
    rule_default: std::marker::PhantomData<D>,
}

/// A rule's default for [`ResourceClaims::resolve`].
pub trait ResolveDefault: Clone + fmt::Debug + PartialEq + Eq {
    /// The default.
    const RESOLVE: bool;
}

/// Claims are not read unless `resolve` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotByDefault;

/// Claims are read unless `resolve: false` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByDefault;

impl ResolveDefault for NotByDefault {
    const RESOLVE: bool = false;
}

impl ResolveDefault for ByDefault {
    const RESOLVE: bool = true;
}

/// The `resourceClaims` setting of rules that read claims by default.
pub type ResolvedClaims = ResourceClaims<ByDefault>;

impl<D: ResolveDefault> Default for ResourceClaims<D> {
    fn default() -> Self {
        ResourceClaims {
            resolve: D::RESOLVE,
            gpu_device_classes: vec![Glob::new("gpu.nvidia.com")],
            rule_default: std::marker::PhantomData,
        }
    }
}

impl<D: ResolveDefault> ResourceClaims<D> {
    /// The setting as the lookups read it.
    pub fn lookup(&self) -> ClaimLookup<'_> {
        ClaimLookup { resolve: self.resolve, gpu_device_classes: &self.gpu_device_classes }
    }

    /// Checks the settings under `key`.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        if self.resolve && self.gpu_device_classes.is_empty() {
            return Err(SettingsError::new(format!("{key}.gpuDeviceClasses"), "must list at least one device class when `resolve` is on"));
        }
        non_empty_patterns(&format_args!("{key}.gpuDeviceClasses"), &self.gpu_device_classes)
    }
}

/// A [`ResourceClaims`] setting, whatever its rule's default: what
/// [`PodTemplate::claimed_gpus`] reads.
#[derive(Clone, Copy, Debug)]
pub struct ClaimLookup<'s> {
    /// Whether to look claims up.
    pub resolve: bool,
    /// Device classes that are GPUs.
    pub gpu_device_classes: &'s [Glob],
}

/// The API version of the DRA kinds (GA since Kubernetes 1.34).
pub const DRA_API_VERSION: &str = "resource.k8s.io/v1";

/// GPUs one pod-level claim brings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedGpus {
    /// The claim's name in the pod (`spec.resourceClaims[i].name`).
    pub claim: String,
    /// Where it comes from: `` ResourceClaim `x` `` or
    /// `` ResourceClaimTemplate `y` ``.
    pub source: String,
    /// Devices of GPU classes requested; `None` for `allocationMode: All`
    /// (every matching device on the node).
    pub devices: Option<u64>,
    /// The GPU device classes requested, in order.
    pub classes: Vec<String>,
}

impl ClaimedGpus {
    /// `ResourceClaim/train-gpus`: the claim object, as `kubectl` names it.
    pub fn source_ref(&self) -> String {
        self.source.replace(" `", "/").replace('`', "")
    }
}

/// Why claims could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// The lookup failed.
    Lookup(LookupError),
    /// The claim object could not be read.
    Malformed(Malformed),
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::Lookup(e) => write!(f, "{e}"),
            ClaimError::Malformed(e) => write!(f, "{e}"),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DeviceRequestWire<'a> {
    #[serde(borrow, default)]
    exactly: Option<ExactWire<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    first_available: Vec<ExactWire<'a>>,
    // v1beta1 kept these on the request itself.
    #[serde(borrow, default)]
    device_class_name: Option<Str<'a>>,
    #[serde(borrow, default)]
    allocation_mode: Option<Str<'a>>,
    #[serde(default)]
    count: Option<i64>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct ExactWire<'a> {
    #[serde(borrow, default)]
    device_class_name: Option<Str<'a>>,
    #[serde(borrow, default)]
    allocation_mode: Option<Str<'a>>,
    #[serde(default)]
    count: Option<i64>,
}

#[derive(Deserialize, Default)]
struct DevicesWire<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    requests: Vec<DeviceRequestWire<'a>>,
}

#[derive(Deserialize, Default)]
struct ClaimSpecWire<'a> {
    #[serde(borrow, default)]
    devices: Option<DevicesWire<'a>>,
}

#[derive(Deserialize)]
struct ClaimWire<'a> {
    #[serde(borrow, default)]
    spec: Option<ClaimSpecWire<'a>>,
}

#[derive(Deserialize)]
struct TemplateSpecWire<'a> {
    #[serde(borrow, default)]
    spec: Option<ClaimSpecWire<'a>>,
}

#[derive(Deserialize)]
struct TemplateWire<'a> {
    #[serde(borrow, default)]
    spec: Option<TemplateSpecWire<'a>>,
}

/// GPU devices a claim spec requests; `None` when one request takes every
/// matching device (`allocationMode: All`).
#[cfg(test)]
fn claim_gpus(spec: Option<ClaimSpecWire<'_>>, classes: &[Glob]) -> Option<u64> {
    claim_gpus_and_classes(spec, classes).0
}

/// [`claim_gpus`], and the GPU classes requested.
fn claim_gpus_and_classes(spec: Option<ClaimSpecWire<'_>>, classes: &[Glob]) -> (Option<u64>, Vec<String>) {
    let mut seen: Vec<String> = Vec::new();
    let mut total = 0u64;
    for r in spec.and_then(|s| s.devices).map(|d| d.requests).unwrap_or_default() {
        let flat = ExactWire { device_class_name: r.device_class_name, allocation_mode: r.allocation_mode, count: r.count };
        // One alternative of `firstAvailable` is allocated; count the
        // largest GPU alternative.
        let options: Vec<ExactWire<'_>> = match (r.exactly, r.first_available.is_empty()) {
            (Some(e), _) => vec![e],
            (None, false) => r.first_available,
            (None, true) => vec![flat],
        };
        let mut best: Option<Option<u64>> = None;
        for o in options {
            let Some(class) = o.device_class_name.as_deref().filter(|c| any_match(classes, c)) else {
                continue;
            };
            if !seen.iter().any(|s| s == class) {
                seen.push(class.to_string());
            }
            let n = match o.allocation_mode.as_deref() {
                Some("All") => None,
                _ => Some(u64::try_from(o.count.unwrap_or(1)).unwrap_or(0)),
            };
            best = Some(match (best, n) {
                (None, n) => n,
                (Some(None), _) | (_, None) => None,
                (Some(Some(a)), Some(b)) => Some(a.max(b)),
            });
        }
        match best {
            None => {}
            Some(None) => return (None, seen),
            Some(Some(n)) => total = total.saturating_add(n),
        }
    }
    (Some(total), seen)
}

impl PodTemplate<'_> {
    /// The GPUs this template's pods claim through DRA, resolving each
    /// `spec.resourceClaims` entry in `namespace`. Claims of no GPU device
    /// class are left out.
    pub fn claimed_gpus(&self, namespace: &str, cluster: &dyn Cluster, settings: ClaimLookup<'_>) -> Result<Vec<ClaimedGpus>, ClaimError> {
        let mut out = Vec::new();
        if !settings.resolve {
            return Ok(out);
        }
        for claim in &self.spec.resource_claims {
            let (kind, name) = match (&claim.resource_claim_name, &claim.resource_claim_template_name) {
                (Some(n), _) => ("ResourceClaim", n),
                (None, Some(n)) => ("ResourceClaimTemplate", n),
                (None, None) => continue,
            };
            let json = cluster.get_resource(DRA_API_VERSION, kind, name, Some(namespace)).map_err(ClaimError::Lookup)?;
            let what = format!("the {kind} `{name}`");
            let spec = if kind == "ResourceClaim" {
                crate::decode::explain::decode::<ClaimWire<'_>>(&json, &what).map_err(ClaimError::Malformed)?.spec
            } else {
                crate::decode::explain::decode::<TemplateWire<'_>>(&json, &what).map_err(ClaimError::Malformed)?.spec.and_then(|s| s.spec)
            };
            match claim_gpus_and_classes(spec, settings.gpu_device_classes) {
                (Some(0), _) => {}
                (devices, classes) => {
                    out.push(ClaimedGpus { claim: claim.name.to_string(), source: format!("{kind} `{name}`"), devices, classes })
                }
            }
        }
        Ok(out)
    }
}

impl PodTemplate<'_> {
    /// [`PodTemplate::claimed_gpus`], with a failed lookup reported on
    /// `verdict` as `on` says ([`OnLookupError::report`]: `deny` and `allow`
    /// say what the claims were needed for) and no claims returned for it.
    /// Only a claim object that cannot be read is an error.
    pub fn claimed_gpus_or_report(
        &self,
        namespace: &str,
        cluster: &dyn Cluster,
        settings: ClaimLookup<'_>,
        on: OnLookupError,
        (deny, allow): (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<Vec<ClaimedGpus>, Malformed> {
        Ok(self.claims_or_report(namespace, cluster, settings, on, (deny, allow), verdict)?.unwrap_or_default())
    }

    /// The claims, or `None` when the lookup failed (and was reported).
    fn claims_or_report(
        &self,
        namespace: &str,
        cluster: &dyn Cluster,
        settings: ClaimLookup<'_>,
        on: OnLookupError,
        (deny, allow): (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<Option<Vec<ClaimedGpus>>, Malformed> {
        match self.claimed_gpus(namespace, cluster, settings) {
            Ok(c) => Ok(Some(c)),
            Err(ClaimError::Malformed(e)) => Err(e),
            Err(ClaimError::Lookup(e)) => {
                let what =
                    format!("the resource claims of `{}` could not be read ({})", self.spec_path().key("resourceClaims"), e.first_line());
                on.report(&what, deny, allow, verdict);
                Ok(None)
            }
        }
    }

    /// Everything this template's pods hold GPUs through: the containers'
    /// GPU resources, and with `claims.resolve` the resource claims of GPU
    /// device classes (a failed lookup reported as
    /// [`PodTemplate::claimed_gpus_or_report`] does). The one answer to
    /// "does this pod hold GPUs" for every rule that asks it.
    pub fn gpu_use(
        &self,
        sources: GpuSources<'_>,
        namespace: &str,
        cluster: &dyn Cluster,
        lookup_needed_for: (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<GpuUse, Malformed> {
        let requests = self.gpu_requests(sources.resources)?;
        let found = self.claims_or_report(namespace, cluster, sources.claims, sources.on_lookup_error, lookup_needed_for, verdict)?;
        let unresolved = !self.spec.resource_claims.is_empty() && (!sources.claims.resolve || found.is_none());
        Ok(GpuUse { requests, claims: found.unwrap_or_default(), unresolved })
    }
}

/// Where a rule finds GPUs: its `gpuResourceNames`, `resourceClaims` and
/// `onLookupError` settings, as [`PodTemplate::gpu_use`] reads them.
#[derive(Clone, Copy, Debug)]
pub struct GpuSources<'s> {
    /// Extended resources that count as GPUs.
    pub resources: &'s GpuResources,
    /// Whether and how resource claims are read.
    pub claims: ClaimLookup<'s>,
    /// What a failed claim lookup does.
    pub on_lookup_error: OnLookupError,
}

/// What a pod template holds GPUs through ([`PodTemplate::gpu_use`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuUse {
    /// Containers that request GPU resources.
    pub requests: Vec<GpuRequest>,
    /// Resource claims that bring GPU devices.
    pub claims: Vec<ClaimedGpus>,
    /// Whether the template has resource claims that were not read
    /// (`resourceClaims.resolve` off, or the lookup failed): they may bring
    /// GPUs this answer does not count.
    pub unresolved: bool,
}

impl GpuUse {
    /// Whether the pods hold no GPU.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.claims.is_empty()
    }
}

/// Why the template counts as a GPU template, for messages: its first GPU
/// request (`` container `train` requests 2 `nvidia.com/gpu` ``, or
/// `` resource claim `gpu` (ResourceClaimTemplate `a100`) requests 1 device
/// of class `gpu.nvidia.com` ``), and how many more there are.
impl fmt::Display for GpuUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resources = self.requests.iter().map(|g| g.resources.len() as u64).sum::<u64>();
        let more = (resources + self.claims.len() as u64).saturating_sub(1);
        let first_request = self
            .requests
            .first()
            .and_then(|g| g.resources.first().map(|(name, n)| format!("container `{}` requests {n} `{name}`", g.container_name)));
        let first = first_request.or_else(|| self.claims.first().map(ClaimedGpus::describe));
        match (first, more) {
            (None, _) => f.write_str("GPU resources"),
            (Some(first), 0) => f.write_str(&first),
            (Some(first), n) => write!(f, "{first}, and {}", crate::base::text::count(n, "more request")),
        }
    }
}

impl ClaimedGpus {
    /// `` resource claim `gpu` (ResourceClaimTemplate `a100`) requests 2
    /// devices of class `gpu.nvidia.com` ``.
    pub fn describe(&self) -> String {
        let devices = match self.devices {
            None => "every device".to_string(),
            Some(1) => "1 device".to_string(),
            Some(n) => format!("{n} devices"),
        };
        let class = match self.classes.as_slice() {
            [one] => format!("of class `{one}`"),
            many => format!("of the classes {}", crate::base::text::quoted(many)),
        };
        format!("resource claim `{}` ({}) requests {devices} {class}", self.claim, self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names() {
        let g = GpuResources::default();
        assert!(g.is_gpu("nvidia.com/gpu"));
        assert!(g.is_gpu("nvidia.com/gpu.shared"), "time-sliced GPUs are GPUs");
        assert!(g.is_gpu("nvidia.com/mig-3g.20gb"));
        assert!(g.is_gpu("amd.com/gpu"));
        assert!(!g.is_gpu("cpu"));
        assert!(!g.is_gpu("rdma/hca"));
    }

    #[test]
    fn mig_slices_are_fractions_of_a_gpu() {
        let w = MigWeights::default();
        assert_eq!(w.family("nvidia.com/mig-1g.10gb"), ("nvidia.com/gpu", GpuAmount(60)));
        assert_eq!(w.family("nvidia.com/mig-7g.80gb"), ("nvidia.com/gpu", GpuAmount::whole(1)));
        assert_eq!(w.family("amd.com/gpu"), ("amd.com/gpu", GpuAmount::whole(1)));
        let counts: GpuCounts = [("nvidia.com/mig-1g.10gb".to_string(), 7)].into_iter().collect();
        let f = GpuFamilies::of(&counts, &w);
        assert_eq!(f.0["nvidia.com/gpu"].0, GpuAmount::whole(1), "seven 1g slices are one GPU");
        let mixed: GpuCounts = [("nvidia.com/gpu".to_string(), 2), ("amd.com/gpu".to_string(), 3)].into_iter().collect();
        let f = GpuFamilies::of(&mixed, &w);
        assert_eq!(f.0.len(), 2, "NVIDIA and AMD GPUs are never summed");
        let a30 = MigWeights([("nvidia.com/mig-1g.6gb".to_string(), 0.25)].into_iter().collect());
        assert_eq!(a30.family("nvidia.com/mig-1g.6gb").1, GpuAmount(105));
        let two: GpuCounts = [("nvidia.com/gpu".to_string(), 2), ("nvidia.com/mig-3g.40gb".to_string(), 1)].into_iter().collect();
        let f = GpuFamilies::of(&two, &w);
        assert_eq!(f.breakdown("nvidia.com/gpu", &w), "2 `nvidia.com/gpu` + 1 `nvidia.com/mig-3g.40gb` (3/7 GPU each)");
        assert_eq!(f.0["nvidia.com/gpu"].0.to_string(), "2.43");
    }

    #[test]
    fn amounts_display() {
        assert_eq!(GpuAmount::whole(3).to_string(), "3");
        assert_eq!(GpuAmount(210).to_string(), "0.5");
        assert_eq!(GpuAmount(60).to_string(), "0.14");
        assert!(GpuAmount(421).exceeds(1));
        assert!(!GpuAmount(420).exceeds(1));
    }

    #[test]
    fn claims_count_gpu_devices() {
        let classes = [Glob::new("gpu.nvidia.com")];
        fn spec(json: &str) -> Option<ClaimSpecWire<'_>> {
            serde_json::from_str::<ClaimWire<'_>>(json).unwrap().spec
        }
        assert_eq!(
            claim_gpus(
                spec(r#"{"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}}}"#),
                &classes
            ),
            Some(2)
        );
        assert_eq!(
            claim_gpus(
                spec(r#"{"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}}"#),
                &classes
            ),
            Some(1)
        );
        assert_eq!(
            claim_gpus(spec(r#"{"spec":{"devices":{"requests":[{"name":"g","deviceClassName":"gpu.nvidia.com","count":3}]}}}"#), &classes),
            Some(3),
            "v1beta1"
        );
        assert_eq!(
            claim_gpus(
                spec(
                    r#"{"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"All"}}]}}}"#
                ),
                &classes
            ),
            None
        );
        assert_eq!(
            claim_gpus(
                spec(r#"{"spec":{"devices":{"requests":[{"name":"n","exactly":{"deviceClassName":"nic.example.com"}}]}}}"#),
                &classes
            ),
            Some(0)
        );
        assert_eq!(
            claim_gpus(
                spec(
                    r#"{"spec":{"devices":{"requests":[{"name":"g","firstAvailable":[{"name":"big","deviceClassName":"gpu.nvidia.com","count":2},{"name":"small","deviceClassName":"gpu.nvidia.com"}]}]}}}"#
                ),
                &classes
            ),
            Some(2)
        );
    }
}
