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
use crate::model::workload::{ContainerList, ContainerRef, PodTemplate, Role};

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
            ContainerList::Containers | ContainerList::Model | ContainerList::Added => add(&mut self.regular, counts),
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

/// The DRA device classes whose devices are GPUs when the shared
/// `gpuDeviceClasses` is not written: NVIDIA's DRA driver's whole GPUs
/// (`gpu.nvidia.com`) and MIG slices (`mig.nvidia.com`), as its Helm chart
/// creates the DeviceClasses.
pub const DEFAULT_GPU_DEVICE_CLASSES: [&str; 2] = ["gpu.nvidia.com", "mig.nvidia.com"];

/// [`DEFAULT_GPU_DEVICE_CLASSES`] as patterns.
pub fn default_gpu_device_classes() -> Vec<Glob> {
    DEFAULT_GPU_DEVICE_CLASSES.into_iter().map(Glob::new).collect()
}

thread_local! {
    /// [`default_gpu_device_classes`], built once: every rule of the bundle
    /// starts from them, in every fresh instance.
    static DEFAULTS: std::rc::Rc<[Glob]> = std::rc::Rc::from(default_gpu_device_classes());
}

/// [`default_gpu_device_classes`], shared.
pub fn shared_default_gpu_device_classes() -> std::rc::Rc<[Glob]> {
    DEFAULTS.with(std::rc::Rc::clone)
}

/// Checks the shared `gpuDeviceClasses` (or a rule's deprecated
/// `resourceClaims.gpuDeviceClasses`) under `key`: at least one class,
/// no empty pattern.
pub fn validate_gpu_device_classes(key: &str, classes: &[Glob]) -> Result<(), SettingsError> {
    if classes.is_empty() {
        return Err(SettingsError::new(
            key,
            "must list at least one device class, or no GPU claimed through DRA would ever be seen: list your GPU driver's device classes",
        ));
    }
    non_empty_patterns(&key, classes)
}

impl crate::model::request::Request<'_> {
    /// The DRA device classes whose devices are GPUs for the rule
    /// evaluating the request: the shared `gpuDeviceClasses`, or
    /// [`DEFAULT_GPU_DEVICE_CLASSES`]. Read once per rule and request.
    pub fn gpu_classes(&self) -> std::rc::Rc<[Glob]> {
        self.gpu_device_classes_set().unwrap_or_else(shared_default_gpu_device_classes)
    }
}

/// The deprecated per-rule `resourceClaims` setting, still read so that
/// settings written for earlier versions keep their meaning. Every rule
/// now resolves DRA claims through the cluster, and the device classes
/// that are GPUs are the shared `gpuDeviceClasses`, the same for every
/// rule of a policy; this setting only overrides them for one rule:
///
/// - `gpuDeviceClasses`, when written, replaces the shared key's classes
///   for this rule;
/// - `resolve: false` still switches claim lookups off for this rule,
///   which is then blind to GPUs claimed through DRA (a claim it cannot
///   read counts as it counts an unresolved one, rule by rule); `resolve:
///   true` is the default and changes nothing.
///
/// A pod that gets its GPU through `spec.resourceClaims` requests no
/// extended resource; only its ResourceClaim (or the ResourceClaimTemplate
/// it is made from) says what device class it asks for. The rule reads
/// them through the cluster interface (Kubewarden's
/// `kubernetes/get_resource`; the policy lists `ResourceClaim` and
/// `ResourceClaimTemplate` of `resource.k8s.io/v1` in its
/// `contextAwareResources`) and counts devices of the GPU device classes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ResourceClaims {
    /// Deprecated: `false` switches claim lookups off for this rule.
    /// Default (absent): on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolve: Option<bool>,
    /// Deprecated: device classes that are GPUs for this rule, in place of
    /// the shared `gpuDeviceClasses`. Default (absent): the shared key's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_device_classes: Option<Vec<Glob>>,
}

impl ResourceClaims {
    /// Whether the setting is left out (serialized only when written).
    pub fn is_unset(&self) -> bool {
        *self == ResourceClaims::default()
    }

    /// Whether claims are looked up (always, unless `resolve: false`).
    pub fn resolves(&self) -> bool {
        self.resolve.unwrap_or(true)
    }

    /// The GPU device classes for this rule: its own when written, else
    /// `shared` (the request's [`Request::gpu_classes`](crate::model::request::Request::gpu_classes)).
    pub fn classes<'s>(&'s self, shared: &'s [Glob]) -> &'s [Glob] {
        self.gpu_device_classes.as_deref().unwrap_or(shared)
    }

    /// The setting as the lookups read it, the shared classes being
    /// `shared`.
    pub fn lookup<'s>(&'s self, shared: &'s [Glob]) -> ClaimLookup<'s> {
        ClaimLookup { resolve: self.resolves(), gpu_device_classes: self.classes(shared) }
    }

    /// Checks the settings under `key`.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        match &self.gpu_device_classes {
            Some(classes) => validate_gpu_device_classes(&format!("{key}.gpuDeviceClasses"), classes),
            None => Ok(()),
        }
    }
}

/// Where claims are read and which classes are GPUs: what
/// [`PodTemplate::claimed_gpus`] reads ([`ResourceClaims::lookup`], or
/// [`ClaimLookup::shared`] for a rule without the deprecated setting).
#[derive(Clone, Copy, Debug)]
pub struct ClaimLookup<'s> {
    /// Whether to look claims up.
    pub resolve: bool,
    /// Device classes that are GPUs.
    pub gpu_device_classes: &'s [Glob],
}

impl<'s> ClaimLookup<'s> {
    /// Claims resolved, with the shared GPU device classes `classes`.
    pub fn shared(classes: &'s [Glob]) -> ClaimLookup<'s> {
        ClaimLookup { resolve: true, gpu_device_classes: classes }
    }
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
    /// A workload's pod template names a ResourceClaimTemplate (its name
    /// here) that does not exist yet. Kubernetes accepts the workload, and
    /// its pods wait for the template (a Helm chart installs the workload
    /// before objects of kinds it does not know): the claims are judged
    /// when the pods are created, not refused at the parent.
    TemplatePending(String, LookupError),
    /// The claim object could not be read.
    Malformed(Malformed),
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::Lookup(e) | ClaimError::TemplatePending(_, e) => write!(f, "{e}"),
            ClaimError::Malformed(e) => write!(f, "{e}"),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DeviceRequestWire<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
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
    #[serde(borrow, default, deserialize_with = "nullable")]
    selectors: Vec<SelectorWire<'a>>,
    #[serde(default)]
    admin_access: Option<bool>,
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
    #[serde(borrow, default, deserialize_with = "nullable")]
    selectors: Vec<SelectorWire<'a>>,
    #[serde(default)]
    admin_access: Option<bool>,
}

#[derive(Deserialize, Default, Clone)]
struct SelectorWire<'a> {
    #[serde(borrow, default)]
    cel: Option<CelWire<'a>>,
}

#[derive(Deserialize, Default, Clone)]
struct CelWire<'a> {
    #[serde(borrow, default)]
    expression: Option<Str<'a>>,
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
        let flat = ExactWire {
            device_class_name: r.device_class_name,
            allocation_mode: r.allocation_mode,
            count: r.count,
            selectors: Vec::new(),
            admin_access: None,
        };
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

// ------------------------------------------------------- DRA claim specs

/// What a ResourceClaim or a ResourceClaimTemplate asks for, request by
/// request, as written (`resource.k8s.io/v1`, and v1beta1's flat requests):
/// for rules that judge the claim objects themselves (device classes,
/// `adminAccess`) or read more of a pod's claims than their GPU count
/// (the MIG profile a selector pins, devices per class).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimSpec {
    /// `devices.requests`, in order.
    pub requests: Vec<DeviceRequest>,
}

/// One entry of `devices.requests`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRequest {
    /// `name`.
    pub name: String,
    /// How the request is written, for paths.
    pub form: RequestForm,
    /// The devices it may be given: its one choice (`exactly`, or v1beta1's
    /// fields on the request), or the alternatives of `firstAvailable`, in
    /// order (one of them is allocated).
    pub choices: Vec<DeviceChoice>,
    /// `adminAccess: true`: access to devices in use by others, for
    /// monitoring and management.
    pub admin_access: bool,
}

/// How a [`DeviceRequest`] is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestForm {
    /// `exactly: {deviceClassName, ...}` (v1).
    Exactly,
    /// `firstAvailable: [{name, deviceClassName, ...}, ...]`.
    FirstAvailable,
    /// `deviceClassName` and the rest on the request itself (v1beta1).
    Flat,
}

/// One set of devices a request may be given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceChoice {
    /// `deviceClassName` (empty when missing: the API server refuses that).
    pub device_class: String,
    /// How many devices.
    pub count: DeviceCount,
    /// The CEL expressions of `selectors`, all of which a device must meet.
    pub selectors: Vec<String>,
}

/// How many devices a choice takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceCount {
    /// `allocationMode: ExactCount` (the default) with `count` (default 1).
    Exactly(u64),
    /// `allocationMode: All`: every matching device of the node.
    All,
}

impl fmt::Display for DeviceCount {
    /// `1 device`, `4 devices`, `every matching device`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceCount::Exactly(1) => f.write_str("1 device"),
            DeviceCount::Exactly(n) => write!(f, "{n} devices"),
            DeviceCount::All => f.write_str("every matching device"),
        }
    }
}

impl DeviceRequest {
    /// The path of field `field` of choice `j`, the request being at
    /// `request` (`spec.devices.requests[0]`): `…exactly.deviceClassName`,
    /// `…firstAvailable[1].deviceClassName`, or v1beta1's
    /// `…deviceClassName`.
    pub fn choice_path(&self, request: &Path, j: usize, field: &'static str) -> Path {
        match self.form {
            RequestForm::Exactly => request.keys(&["exactly", field]),
            RequestForm::FirstAvailable => request.key("firstAvailable").index(j).key(field),
            RequestForm::Flat => request.key(field),
        }
    }

    /// The path of its `adminAccess`.
    pub fn admin_access_path(&self, request: &Path) -> Path {
        match self.form {
            RequestForm::Flat => request.key("adminAccess"),
            _ => request.keys(&["exactly", "adminAccess"]),
        }
    }
}

fn choice(w: ExactWire<'_>) -> DeviceChoice {
    DeviceChoice {
        device_class: w.device_class_name.as_deref().unwrap_or("").to_string(),
        count: match w.allocation_mode.as_deref() {
            Some("All") => DeviceCount::All,
            _ => DeviceCount::Exactly(u64::try_from(w.count.unwrap_or(1)).unwrap_or(0)),
        },
        selectors: w.selectors.into_iter().filter_map(|s| s.cel.and_then(|c| c.expression)).map(|e| e.to_string()).collect(),
    }
}

impl ClaimSpec {
    /// The path of a ResourceClaim's claim spec.
    pub const CLAIM: &'static [&'static str] = &["spec"];
    /// The path of a ResourceClaimTemplate's claim spec.
    pub const TEMPLATE: &'static [&'static str] = &["spec", "spec"];

    fn of_wire(spec: Option<ClaimSpecWire<'_>>) -> ClaimSpec {
        let mut requests = Vec::new();
        for r in spec.and_then(|s| s.devices).map(|d| d.requests).unwrap_or_default() {
            let name = r.name.as_deref().unwrap_or("").to_string();
            let (form, choices, admin) = match (r.exactly, r.first_available.is_empty()) {
                (Some(e), _) => {
                    let admin = e.admin_access == Some(true);
                    (RequestForm::Exactly, vec![choice(e)], admin)
                }
                (None, false) => (RequestForm::FirstAvailable, r.first_available.into_iter().map(choice).collect(), false),
                (None, true) => {
                    let flat = ExactWire {
                        device_class_name: r.device_class_name,
                        allocation_mode: r.allocation_mode,
                        count: r.count,
                        selectors: r.selectors,
                        admin_access: None,
                    };
                    (RequestForm::Flat, vec![choice(flat)], r.admin_access == Some(true))
                }
            };
            requests.push(DeviceRequest { name, form, choices, admin_access: admin });
        }
        ClaimSpec { requests }
    }

    /// The claim spec of a ResourceClaim object (its `spec`); `what` names
    /// the object in an error.
    pub fn of_claim(json: &str, what: &str) -> Result<ClaimSpec, Malformed> {
        Ok(ClaimSpec::of_wire(crate::decode::explain::decode::<ClaimWire<'_>>(json, what)?.spec))
    }

    /// The claim spec of a ResourceClaimTemplate object (its
    /// `spec.spec`); `what` names the object in an error.
    pub fn of_template(json: &str, what: &str) -> Result<ClaimSpec, Malformed> {
        Ok(ClaimSpec::of_wire(crate::decode::explain::decode::<TemplateWire<'_>>(json, what)?.spec.and_then(|s| s.spec)))
    }
}

/// What a device's selectors pin one attribute to ([`pinned`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// Nothing: any value.
    Open,
    /// One of these values.
    OneOf(Vec<String>),
    /// A selector constrains the attribute in a way not read here (`!=`,
    /// a function, a disjunction with other attributes): unknown.
    Unreadable,
}

/// What CEL `selectors` (all of which a device must meet) pin attribute
/// `attribute` of domain `domain` to, for the plain forms claims use:
/// `device.attributes['gpu.nvidia.com'].profile == '1g.10gb'` (either
/// side, either quote, `["profile"]` for `.profile`), `... in ['a', 'b']`,
/// conjunctions of them with `&&` and disjunctions of them with `||`.
/// Conditions on other attributes are ignored.
pub fn pinned(selectors: &[String], domain: &str, attribute: &str) -> Pinned {
    let mut out = Pinned::Open;
    for s in selectors {
        let compact = compact_cel(s);
        out = match (out, pins(&compact, domain, attribute)) {
            (Pinned::Unreadable, _) | (_, Pinned::Unreadable) => Pinned::Unreadable,
            (Pinned::Open, x) | (x, Pinned::Open) => x,
            (Pinned::OneOf(a), Pinned::OneOf(b)) => Pinned::OneOf(a.into_iter().filter(|v| b.contains(v)).collect()),
        };
    }
    out
}

/// The expression without whitespace outside string literals (but for
/// one space between two words: `profile in`), and with every literal in
/// single quotes.
fn compact_cel(e: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(e.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut space = false;
    for c in e.chars() {
        if quote.is_none() && !c.is_whitespace() {
            if space && word(c) && out.chars().last().is_some_and(word) {
                out.push(' ');
            }
            space = false;
        }
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                    out.push(c);
                } else if c == '\\' {
                    escaped = true;
                    out.push(c);
                } else if c == q {
                    quote = None;
                    out.push('\'');
                } else {
                    out.push(c);
                }
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push('\'');
            }
            None if c.is_whitespace() => space = true,
            None => out.push(c),
        }
    }
    out
}

/// `e` split at the top-level occurrences of `op` (outside literals,
/// brackets and parentheses).
fn split_top<'e>(e: &'e str, op: &str) -> Vec<&'e str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut in_literal = false;
    let mut start = 0;
    let bytes = e.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or(0);
        if in_literal {
            if b == b'\\' {
                i += 1;
            } else if b == b'\'' {
                in_literal = false;
            }
        } else {
            match b {
                b'\'' => in_literal = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 && e.get(i..).is_some_and(|r| r.starts_with(op)) => {
                    parts.push(e.get(start..i).unwrap_or(""));
                    i += op.len();
                    start = i;
                    continue;
                }
                _ => {}
            }
        }
        i += 1;
    }
    parts.push(e.get(start..).unwrap_or(""));
    parts
}

/// `a in b` split at its top-level `in` (a word of its own), if any.
fn split_in(e: &str) -> Option<(&str, &str)> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = e.as_bytes();
    let mut depth = 0i32;
    let mut in_literal = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or(0);
        if in_literal {
            if b == b'\\' {
                i += 1;
            } else if b == b'\'' {
                in_literal = false;
            }
        } else {
            match b {
                b'\'' => in_literal = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'i' if depth == 0
                    && bytes.get(i + 1) == Some(&b'n')
                    && !i.checked_sub(1).and_then(|j| bytes.get(j)).is_some_and(|p| word(*p))
                    && !bytes.get(i + 2).is_some_and(|n| word(*n)) =>
                {
                    let before = e.get(..i)?.trim_end();
                    let after = e.get(i + 2..)?.trim_start();
                    return Some((before, after));
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// `(x)` without its outer parentheses, when they wrap all of it (`(a)&&(b)`
/// is not wrapped).
fn unwrap_parens(e: &str) -> &str {
    let mut e = e;
    while e.starts_with('(') && e.ends_with(')') {
        let mut depth = 0i32;
        let mut in_literal = false;
        let mut closes_at = None;
        let mut chars = e.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if in_literal => {
                    chars.next();
                }
                '\'' => in_literal = !in_literal,
                '(' if !in_literal => depth += 1,
                ')' if !in_literal => {
                    depth -= 1;
                    if depth == 0 {
                        closes_at = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        match closes_at {
            Some(i) if i + 1 == e.len() => e = e.get(1..i).unwrap_or(""),
            _ => break,
        }
    }
    e
}

/// A single-quoted literal's value (compact form), or `None`.
fn literal(e: &str) -> Option<String> {
    let inner = e.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.contains('\'') && !inner.contains("\\'") {
        return None;
    }
    Some(inner.replace("\\'", "'").replace("\\\\", "\\"))
}

/// What one selector expression pins the attribute to.
fn pins(e: &str, domain: &str, attribute: &str) -> Pinned {
    let forms = [format!("device.attributes['{domain}'].{attribute}"), format!("device.attributes['{domain}']['{attribute}']")];
    let is_attr = |x: &str| forms.iter().any(|f| f == x);
    let mentions = |x: &str| forms.iter().any(|f| x.contains(f.as_str()));
    let e = unwrap_parens(e);
    if !mentions(e) {
        return Pinned::Open;
    }
    let any = split_top(e, "||");
    if any.len() > 1 {
        let mut values: Vec<String> = Vec::new();
        for d in any {
            match pins(d, domain, attribute) {
                Pinned::OneOf(v) => values.extend(v),
                _ => return Pinned::Unreadable,
            }
        }
        return Pinned::OneOf(values);
    }
    let all = split_top(e, "&&");
    if all.len() > 1 {
        return pinned(&all.iter().map(|c| c.to_string()).collect::<Vec<_>>(), domain, attribute);
    }
    if let [a, b] = split_top(e, "==").as_slice() {
        let (a, b) = (unwrap_parens(a), unwrap_parens(b));
        return match (is_attr(a), is_attr(b), literal(a), literal(b)) {
            (true, _, _, Some(v)) | (_, true, Some(v), _) => Pinned::OneOf(vec![v]),
            _ => Pinned::Unreadable,
        };
    }
    if let Some((a, list)) = split_in(e)
        && is_attr(unwrap_parens(a))
        && let Some(items) = list.strip_prefix('[').and_then(|l| l.strip_suffix(']'))
    {
        let values: Option<Vec<String>> = split_top(items, ",").into_iter().filter(|i| !i.is_empty()).map(literal).collect();
        return values.map_or(Pinned::Unreadable, Pinned::OneOf);
    }
    Pinned::Unreadable
}

/// One `spec.resourceClaims` entry of a pod template, with the claim spec
/// of the object it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodClaim {
    /// Its index in `spec.resourceClaims`.
    pub index: usize,
    /// The name containers refer to it by.
    pub claim: String,
    /// `ResourceClaim` (one object, shared by every pod that names it) or
    /// `ResourceClaimTemplate` (a claim made from it for each pod).
    pub kind: &'static str,
    /// The object's name.
    pub object: String,
    /// What it asks for.
    pub spec: ClaimSpec,
}

impl PodClaim {
    /// Whether every pod gets a claim of its own (a template).
    pub fn per_pod(&self) -> bool {
        self.kind == "ResourceClaimTemplate"
    }

    /// `` ResourceClaimTemplate `a100` ``.
    pub fn source(&self) -> String {
        format!("{} `{}`", self.kind, self.object)
    }
}

impl PodTemplate<'_> {
    /// A failed lookup of claim object `name` of `kind`: a
    /// ResourceClaimTemplate not found for a workload's pod template is
    /// [`ClaimError::TemplatePending`]; a Pod's, and anything else, a
    /// failed lookup.
    fn claim_error(&self, kind: &str, name: &str, e: LookupError) -> ClaimError {
        match e {
            LookupError::NotFound(_) if kind == "ResourceClaimTemplate" && self.role != Role::Pod => {
                ClaimError::TemplatePending(name.to_string(), e)
            }
            e => ClaimError::Lookup(e),
        }
    }

    /// The warning for [`ClaimError::TemplatePending`].
    fn template_pending(&self, name: &str, namespace: &str) -> String {
        format!(
            "ResourceClaimTemplate `{name}`, which `{}` names, does not exist in namespace `{namespace}` yet: Kubernetes accepts this and the pods wait for it; what they claim is checked when they are created",
            self.spec_path().key("resourceClaims")
        )
    }

    /// Every `spec.resourceClaims` entry of this template with the spec of
    /// the ResourceClaim or ResourceClaimTemplate it names, read in
    /// `namespace` through the cluster interface (an entry naming neither
    /// is left out).
    pub fn claim_specs(&self, namespace: &str, cluster: &dyn Cluster) -> Result<Vec<PodClaim>, ClaimError> {
        let mut out = Vec::new();
        for (index, claim) in self.spec.resource_claims.iter().enumerate() {
            let (kind, name) = match (&claim.resource_claim_name, &claim.resource_claim_template_name) {
                (Some(n), _) => ("ResourceClaim", n),
                (None, Some(n)) => ("ResourceClaimTemplate", n),
                (None, None) => continue,
            };
            let json = cluster.get_resource(DRA_API_VERSION, kind, name, Some(namespace)).map_err(|e| self.claim_error(kind, name, e))?;
            let what = format!("the {kind} `{name}`");
            let spec = if kind == "ResourceClaim" { ClaimSpec::of_claim(&json, &what) } else { ClaimSpec::of_template(&json, &what) }
                .map_err(ClaimError::Malformed)?;
            out.push(PodClaim { index, claim: claim.name.to_string(), kind, object: name.to_string(), spec });
        }
        Ok(out)
    }

    /// [`PodTemplate::claim_specs`], with a failed lookup reported on
    /// `verdict` as `on` says (worded as [`PodTemplate::claimed_gpus_or_report`]
    /// words it) and `None` returned for it. Only a claim object that
    /// cannot be read is an error.
    pub fn claim_specs_or_report(
        &self,
        namespace: &str,
        cluster: &dyn Cluster,
        on: OnLookupError,
        (deny, allow): (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<Option<Vec<PodClaim>>, Malformed> {
        match self.claim_specs(namespace, cluster) {
            Ok(c) => Ok(Some(c)),
            Err(ClaimError::Malformed(e)) => Err(e),
            Err(ClaimError::TemplatePending(name, _)) => {
                verdict.warning(self.template_pending(&name, namespace));
                Ok(None)
            }
            Err(ClaimError::Lookup(e)) => {
                let what =
                    format!("the resource claims of `{}` could not be read ({})", self.spec_path().key("resourceClaims"), e.first_line());
                on.report(&what, deny, allow, verdict);
                Ok(None)
            }
        }
    }
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
            let json = cluster.get_resource(DRA_API_VERSION, kind, name, Some(namespace)).map_err(|e| self.claim_error(kind, name, e))?;
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

/// What a template's DRA claims say about GPUs, for the rules that ask
/// whether its pods may hold GPUs and decide themselves what a claim they
/// cannot read means ([`PodTemplate::read_claims`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimsRead {
    /// Every claim was read: the ones that bring GPU devices (none when
    /// every claim is of other classes, a NIC's, say).
    Read(Vec<ClaimedGpus>),
    /// Some claim could not be read.
    Unread(UnreadClaims),
}

/// Why a template's claims could not be read ([`ClaimsRead::Unread`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadClaims {
    /// For a message: `` ResourceClaimTemplate `x`, which
    /// `spec.template.spec.resourceClaims` names, does not exist in
    /// namespace `ml` yet ``, or `` the resource claims of
    /// `spec.resourceClaims` could not be read (<the host's error>) ``.
    pub why: String,
    /// Which way they were not read.
    pub unread: Unread,
}

/// Which way a template's claims were not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unread {
    /// A ResourceClaimTemplate a workload's pod template names does not
    /// exist yet ([`ClaimError::TemplatePending`]): Kubernetes accepts the
    /// workload, and its pods wait for the template.
    Pending,
    /// The lookup failed (forbidden, unavailable; a Pod's template not
    /// found).
    Failed,
    /// There was no cluster to ask ([`crate::cluster::OFFLINE`]): no
    /// failure of the cluster.
    Offline,
}

impl UnreadClaims {
    /// `why`, then `then` (`so ...`), as a message: without a cluster to
    /// ask, [`crate::cluster::NOT_CHECKED`] and the rest without the
    /// host's words, which the scan recognises.
    pub fn text(&self, then: &str) -> String {
        let what = format!("{}, {then}", self.why);
        match self.unread {
            Unread::Offline => {
                format!("{}{}", crate::cluster::NOT_CHECKED, what.replace(&format!(" ({})", crate::cluster::OFFLINE), ""))
            }
            Unread::Pending | Unread::Failed => what,
        }
    }

    /// [`UnreadClaims::text`] as a warning.
    pub fn warn(&self, then: &str, verdict: &mut dyn Report) {
        verdict.warning(self.text(then));
    }
}

impl PodTemplate<'_> {
    /// [`PodTemplate::claimed_gpus`], with a claim that cannot be read
    /// told apart from one of no GPU class: the one reading of "do these
    /// claims bring GPUs" for rules that take no `onLookupError` (queue
    /// and classification rules, a mutating rule, which never edits on a
    /// guess). Nothing is looked up for a template without claims. Only a
    /// claim object that cannot be decoded is an error.
    pub fn read_claims(&self, namespace: &str, cluster: &dyn Cluster, settings: ClaimLookup<'_>) -> Result<ClaimsRead, Malformed> {
        if self.spec.resource_claims.is_empty() {
            return Ok(ClaimsRead::Read(Vec::new()));
        }
        let claims = self.spec_path().key("resourceClaims");
        let (why, unread) = match self.claimed_gpus(namespace, cluster, settings) {
            Ok(found) => return Ok(ClaimsRead::Read(found)),
            Err(ClaimError::Malformed(e)) => return Err(e),
            Err(ClaimError::TemplatePending(name, _)) => (
                format!("ResourceClaimTemplate `{name}`, which `{claims}` names, does not exist in namespace `{namespace}` yet"),
                Unread::Pending,
            ),
            Err(ClaimError::Lookup(e)) => {
                let why = format!("the resource claims of `{claims}` could not be read ({})", e.first_line());
                let unread = if why.contains(crate::cluster::OFFLINE) { Unread::Offline } else { Unread::Failed };
                (why, unread)
            }
        };
        Ok(ClaimsRead::Unread(UnreadClaims { why, unread }))
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
            Err(ClaimError::TemplatePending(name, _)) => {
                verdict.warning(self.template_pending(&name, namespace));
                Ok(None)
            }
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

    /// The `(device class, claim)` pairs of the GPUs this template's pods
    /// claim through DRA, but for claims only `exempt` containers name
    /// (none looked up when no other claim counts); a failed lookup
    /// reported as [`PodTemplate::claimed_gpus_or_report`] does.
    #[allow(clippy::too_many_arguments)]
    pub fn claimed_classes_counted(
        &self,
        exempt: &ExemptGpus,
        namespace: &str,
        cluster: &dyn Cluster,
        settings: ClaimLookup<'_>,
        on: OnLookupError,
        lookup_needed_for: (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<Vec<(String, String)>, Malformed> {
        if !exempt.claims_count() {
            return Ok(Vec::new());
        }
        let found = self.claimed_gpus_or_report(namespace, cluster, settings, on, lookup_needed_for, verdict)?;
        Ok(found
            .into_iter()
            .filter(|c| !exempt.claim(&c.claim))
            .flat_map(|c| c.classes.into_iter().map(move |class| (class, c.claim.clone())))
            .collect())
    }

    /// [`PodTemplate::gpu_use`] without what the shared `exemptImages`
    /// leaves out ([`ExemptGpus`]); the claims are not looked up when only
    /// exempt containers name them.
    pub fn gpu_use_counted(
        &self,
        sources: GpuSources<'_>,
        exempt: &ExemptGpus,
        namespace: &str,
        cluster: &dyn Cluster,
        lookup_needed_for: (&str, &str),
        verdict: &mut dyn Report,
    ) -> Result<GpuUse, Malformed> {
        if !exempt.claims_count() {
            let requests = exempt.requests(self.gpu_requests(sources.resources)?);
            return Ok(GpuUse { requests, claims: Vec::new(), unresolved: false });
        }
        Ok(self.gpu_use(sources, namespace, cluster, lookup_needed_for, verdict)?.without(exempt))
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

    /// The GPUs of the template's containers that the shared
    /// `exemptImages` does not leave out ([`ExemptGpus`]): a claim not read
    /// stays unresolved only if a container still counted may hold it.
    pub fn without(mut self, exempt: &ExemptGpus) -> GpuUse {
        self.requests = exempt.requests(self.requests);
        self.claims.retain(|c| !exempt.claim(&c.claim));
        self.unresolved = self.unresolved && exempt.claims_count;
        self
    }
}

/// What the shared `exemptImages` leaves out of a template's GPUs, for the
/// rules that ask "does this pod hold GPUs" of its containers one by one,
/// as Gatekeeper's GPU templates do: the GPU resources of containers whose
/// image it lists, and the resource claims only they name (not looked up).
/// A claim no container names is the pod's and still counts, and so does a
/// GPU any other container holds: a pod whose every GPU is held by exempt
/// containers is left alone by the GPU checks, and is no CPU pod either
/// ([`ExemptGpus::holds_gpus`]); one more container holding a GPU brings
/// the checks back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExemptGpus {
    /// Paths of the exempt containers.
    containers: Vec<Path>,
    /// Pod claims named by exempt containers only.
    claims: Vec<String>,
    /// Whether some pod claim still counts: named by a container still
    /// counted, or by none (the pod's).
    claims_count: bool,
    /// Whether an exempt container holds GPU resources or names a claim.
    holds: bool,
}

impl ExemptGpus {
    /// What `exemptImages`, as `req` carries it for the rule evaluating
    /// it, leaves out of template `t` (`gpus`: the resources that count as
    /// GPUs).
    pub fn of(t: &PodTemplate<'_>, req: &crate::model::request::Request<'_>, gpus: &GpuResources) -> Result<ExemptGpus, Malformed> {
        let mut out = ExemptGpus::default();
        let mut counted: Vec<&str> = Vec::new();
        let mut exempt: Vec<&str> = Vec::new();
        for c in t.containers() {
            let names = c.container.resources.claims.iter().map(|cl| &*cl.name);
            if req.exempt_container(c.container) {
                out.holds = out.holds || !c.container.resources.claims.is_empty() || !t.container_gpus(&c, gpus)?.is_empty();
                out.containers.push(t.container_path(&c));
                exempt.extend(names);
            } else {
                counted.extend(names);
            }
        }
        for claim in &t.spec.resource_claims {
            let name: &str = &claim.name;
            if exempt.contains(&name) && !counted.contains(&name) {
                out.claims.push(name.to_string());
            } else {
                out.claims_count = true;
            }
        }
        Ok(out)
    }

    /// Whether an exempt container holds GPU resources or names a resource
    /// claim (which may bring GPUs): a template whose counted GPUs are none
    /// is then left alone, not taken for a CPU pod.
    pub fn holds_gpus(&self) -> bool {
        self.holds
    }

    /// Whether a pod claim still counts (so the claims are looked up).
    pub fn claims_count(&self) -> bool {
        self.claims_count
    }

    /// Whether the container at `path` is exempt.
    pub fn container(&self, path: &Path) -> bool {
        self.containers.contains(path)
    }

    /// Whether the pod claim `name` is named by exempt containers only.
    pub fn claim(&self, name: &str) -> bool {
        self.claims.iter().any(|c| c == name)
    }

    /// `requests` without the exempt containers'.
    pub fn requests(&self, mut requests: Vec<GpuRequest>) -> Vec<GpuRequest> {
        requests.retain(|r| !self.container(&r.container_path));
        requests
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
        self.describe_in("")
    }

    /// [`ClaimedGpus::describe`] with where the claim is after its name
    /// (`at`: `` in `spec.template` ``, or empty).
    pub fn describe_in(&self, at: &str) -> String {
        let devices = match self.devices {
            None => "every device".to_string(),
            Some(1) => "1 device".to_string(),
            Some(n) => format!("{n} devices"),
        };
        let class = match self.classes.as_slice() {
            [one] => format!("of class `{one}`"),
            many => format!("of the classes {}", crate::base::text::quoted(many)),
        };
        format!("resource claim `{}`{at} ({}) requests {devices} {class}", self.claim, self.source)
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

    #[test]
    fn claim_specs_read_every_form() {
        let claim = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","spec":{"devices":{"requests":[
            {"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","count":2,"adminAccess":true,
              "selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'"}}]}},
            {"name":"m","firstAvailable":[{"name":"big","deviceClassName":"mig.nvidia.com"},{"name":"all","deviceClassName":"mig.nvidia.com","allocationMode":"All"}]}]}}}"#;
        let spec = ClaimSpec::of_claim(claim, "the claim").unwrap();
        let [g, m] = spec.requests.as_slice() else { panic!("two requests: {spec:?}") };
        assert_eq!((g.name.as_str(), g.form, g.admin_access), ("g", RequestForm::Exactly, true));
        assert_eq!(g.choices[0].count, DeviceCount::Exactly(2));
        assert_eq!(g.choices[0].selectors.len(), 1);
        assert_eq!(m.form, RequestForm::FirstAvailable);
        assert_eq!(m.choices.iter().map(|c| c.count).collect::<Vec<_>>(), [DeviceCount::Exactly(1), DeviceCount::All]);
        let at = Path::root().keys(ClaimSpec::CLAIM).keys(&["devices", "requests"]).index(1);
        assert_eq!(m.choice_path(&at, 1, "deviceClassName").to_string(), "spec.devices.requests[1].firstAvailable[1].deviceClassName");
        assert_eq!(g.admin_access_path(&at).to_string(), "spec.devices.requests[1].exactly.adminAccess");
        let v1beta1 = r#"{"spec":{"spec":{"devices":{"requests":[{"name":"g","deviceClassName":"gpu.nvidia.com","adminAccess":true}]}}}}"#;
        let t = ClaimSpec::of_template(v1beta1, "the template").unwrap();
        assert_eq!((t.requests[0].form, t.requests[0].admin_access), (RequestForm::Flat, true));
        assert_eq!(t.requests[0].choices[0].device_class, "gpu.nvidia.com");
        assert!(ClaimSpec::of_claim(r#"{"spec":{"devices":{"requests":"x"}}}"#, "the claim").is_err());
        assert_eq!(ClaimSpec::of_claim(r#"{"spec":null}"#, "the claim").unwrap(), ClaimSpec::default());
    }

    #[test]
    fn selectors_pin_attributes() {
        let p = |exprs: &[&str]| pinned(&exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>(), "gpu.nvidia.com", "profile");
        let one = |v: &str| Pinned::OneOf(vec![v.to_string()]);
        assert_eq!(p(&[]), Pinned::Open);
        assert_eq!(p(&["device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"]), one("1g.10gb"));
        assert_eq!(p(&["\"3g.40gb\" == device.attributes[\"gpu.nvidia.com\"][\"profile\"]"]), one("3g.40gb"));
        assert_eq!(
            p(&["device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"]),
            one("2g.20gb")
        );
        assert_eq!(
            p(&["device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '2g.20gb']"]),
            Pinned::OneOf(vec!["1g.10gb".into(), "2g.20gb".into()])
        );
        assert_eq!(
            p(&[
                "(device.attributes['gpu.nvidia.com'].profile == '1g.10gb') || (device.attributes['gpu.nvidia.com'].profile == '2g.20gb')"
            ]),
            Pinned::OneOf(vec!["1g.10gb".into(), "2g.20gb".into()])
        );
        assert_eq!(
            p(&[
                "device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '2g.20gb']",
                "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"
            ]),
            one("2g.20gb"),
            "selectors are ANDed"
        );
        assert_eq!(p(&["device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'"]), Pinned::Open);
        assert_eq!(p(&["device.attributes['gpu.nvidia.com'].profile != '7g.80gb'"]), Pinned::Unreadable);
        assert_eq!(p(&["device.attributes['gpu.nvidia.com'].profile.startsWith('1g')"]), Pinned::Unreadable);
        assert_eq!(
            p(&["device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || device.attributes['gpu.nvidia.com'].type == 'gpu'"]),
            Pinned::Unreadable
        );
        assert_eq!(p(&["device.attributes['other.example.com'].profile == '1g.10gb'"]), Pinned::Open, "another domain");
        assert_eq!(p(&["device.attributes['gpu.nvidia.com'].profileName == 'x'"]), Pinned::Unreadable, "read conservatively");
    }

    /// `read_claims` asks nothing of a template without claims, tells a
    /// claim of no GPU class from one that cannot be read, and words why.
    #[test]
    fn read_claims_tells_no_gpu_from_unread() {
        use std::cell::Cell;
        struct Claims(Cell<u32>);
        impl Cluster for Claims {
            fn get_resource(&self, _: &str, kind: &str, name: &str, _: Option<&str>) -> Result<String, LookupError> {
                self.0.set(self.0.get() + 1);
                match name {
                    "nic" => {
                        Ok(r#"{"spec":{"spec":{"devices":{"requests":[{"name":"n","exactly":{"deviceClassName":"rdma.example.com"}}]}}}}"#
                            .into())
                    }
                    "gpu" => {
                        Ok(r#"{"spec":{"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}}}"#
                            .into())
                    }
                    "offline" => Err(LookupError::Unavailable(crate::cluster::OFFLINE.into())),
                    "denied" => Err(LookupError::Unavailable("forbidden\nmore".into())),
                    _ => Err(LookupError::NotFound(format!("{kind} `ml/{name}`"))),
                }
            }
            fn list_resources_by_namespace(
                &self,
                _: &str,
                _: &str,
                _: &str,
                _: Option<&str>,
                _: Option<&str>,
            ) -> Result<String, LookupError> {
                Err(LookupError::Unavailable("no lists".into()))
            }
            fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
                Err(LookupError::Unavailable("no lists".into()))
            }
        }
        let read = |kind: &str, claims: &str| {
            let spec = if kind == "Pod" {
                format!(r#""spec":{{{claims}"containers":[]}}"#)
            } else {
                format!(r#""spec":{{"template":{{"spec":{{{claims}"containers":[]}}}}}}"#)
            };
            let (group, version, resource) = if kind == "Pod" { ("", "v1", "pods") } else { ("apps", "v1", "deployments") };
            let json = format!(
                r#"{{"uid":"u","kind":{{"group":"{group}","version":"{version}","kind":"{kind}"}},"resource":{{"group":"{group}","version":"{version}","resource":"{resource}"}},
                "namespace":"ml","operation":"CREATE","userInfo":{{"username":"jane"}},"object":{{"kind":"{kind}","metadata":{{"name":"x"}},{spec}}}}}"#
            );
            let req = crate::model::request::Request::parse(&json).unwrap();
            let t = req.workload().unwrap().templates().next().unwrap();
            let cluster = Claims(Cell::new(0));
            let classes = default_gpu_device_classes();
            let out = t.read_claims("ml", &cluster, ClaimLookup::shared(&classes)).unwrap();
            (out, cluster.0.get())
        };
        let claim = |n: &str| format!(r#""resourceClaims":[{{"name":"c","resourceClaimTemplateName":"{n}"}}],"#);
        assert_eq!(read("Pod", ""), (ClaimsRead::Read(Vec::new()), 0), "no claims, no lookup");
        assert_eq!(read("Pod", &claim("nic")), (ClaimsRead::Read(Vec::new()), 1), "a NIC is no GPU");
        let ClaimsRead::Read(gpus) = read("Pod", &claim("gpu")).0 else { panic!("read") };
        assert_eq!(
            gpus[0].describe_in(" in `spec.template`"),
            "resource claim `c` in `spec.template` (ResourceClaimTemplate `gpu`) requests 1 device of class `gpu.nvidia.com`"
        );
        let unread = |kind: &str, n: &str| match read(kind, &claim(n)).0 {
            ClaimsRead::Unread(u) => u,
            ClaimsRead::Read(r) => panic!("{r:?}"),
        };
        let pending = unread("Deployment", "later");
        assert_eq!(pending.unread, Unread::Pending);
        assert_eq!(
            pending.text("so what"),
            "ResourceClaimTemplate `later`, which `spec.template.spec.resourceClaims` names, does not exist in namespace `ml` yet, so what"
        );
        assert_eq!(unread("Pod", "later").unread, Unread::Failed, "a Pod's missing template is a failed lookup");
        let denied = unread("Pod", "denied");
        assert_eq!(
            (denied.unread, denied.text("so what").as_str()),
            (Unread::Failed, "the resource claims of `spec.resourceClaims` could not be read (forbidden), so what")
        );
        let offline = unread("Pod", "offline");
        assert_eq!(offline.unread, Unread::Offline);
        assert_eq!(
            offline.text("so what"),
            "not checked without a cluster: the resource claims of `spec.resourceClaims` could not be read, so what"
        );
    }

    /// `exemptImages` leaves out the GPUs of listed containers and the
    /// claims only they name; a claim another container names, or none
    /// does, still counts.
    #[test]
    fn exempt_containers_hold_no_gpu_for_the_rules_that_ask() {
        let json = r#"{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
            "namespace":"ml","operation":"CREATE","userInfo":{"username":"jane"},
            "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
              "resourceClaims":[{"name":"mine","resourceClaimName":"a"},{"name":"shared","resourceClaimName":"b"},{"name":"pods","resourceClaimName":"c"}],
              "containers":[
                {"name":"probe","image":"registry.example.com/platform/probe:1","resources":{"limits":{"nvidia.com/gpu":"1"},"claims":[{"name":"mine"},{"name":"shared"}]}},
                {"name":"app","image":"app:1","resources":{"claims":[{"name":"shared"}]}}]}}}"#;
        let req = crate::model::request::Request::parse(json).unwrap();
        let gpus = GpuResources::default();
        let t = req.workload().unwrap().templates().next().unwrap();
        let none = ExemptGpus::of(t, &req, &gpus).unwrap();
        assert!(!none.holds_gpus() && none.claims_count() && !none.claim("mine"));
        assert_eq!(none.requests(t.gpu_requests(&gpus).unwrap()).len(), 1, "without the setting, nothing is left out");

        req.set_exempt_images(Some(vec![Glob::new("registry.example.com/platform/*")].into()));
        let exempt = ExemptGpus::of(t, &req, &gpus).unwrap();
        assert!(exempt.holds_gpus() && exempt.container(&t.container_path(&t.containers().next().unwrap())));
        assert!(exempt.requests(t.gpu_requests(&gpus).unwrap()).is_empty());
        assert!(exempt.claim("mine") && !exempt.claim("shared") && !exempt.claim("pods"));
        assert!(exempt.claims_count(), "`shared` and `pods` still count");
        let used = GpuUse { requests: t.gpu_requests(&gpus).unwrap(), claims: Vec::new(), unresolved: true }.without(&exempt);
        assert!(used.requests.is_empty() && used.unresolved);
    }
}
