//! What a pod that requests a vendor's GPUs needs to run: the runtime class
//! that gives its containers the driver, and a toleration of the taint the
//! vendor's GPU nodes carry. The [`Settings`] of `gpu-runtime-class` (which
//! checks them) and `gpu-runtime-defaults` (which fills them in): one
//! settings block serves both.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::base::glob::{Glob, non_empty_patterns};
use crate::base::names::{dns_subdomain, label_key, label_value};
use crate::base::rule_settings::{RuleSettings, SettingsError};
use crate::base::text::count;
use crate::cluster::OnLookupError;
use crate::cluster::gpu::{GpuRequest, GpuResources, ResourceClaims};
use crate::model::scheduling;

/// The settings of `gpu-runtime-class` and `gpu-runtime-defaults` (the
/// shared `mode`, exemptions and `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// What pods that request each kind of GPU need, in order; a GPU
    /// resource no entry matches needs nothing. Default: NVIDIA's
    /// (`nvidia.com/*` needs runtime class `nvidia` and a toleration of the
    /// `nvidia.com/gpu:NoSchedule` taint).
    pub requirements: Vec<Requirement>,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// Deprecated: GPUs claimed through Dynamic Resource Allocation are
    /// always read, their classes the shared `gpuDeviceClasses`; this
    /// overrides them for the rule ([`ResourceClaims`]).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// What a failed claim lookup does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
    /// The runtime classes every pod, GPU or not, may run with (Kyverno's
    /// `restrict-runtimeclass`, Kubewarden's `pod-runtime-class-policy`).
    /// Default `null`: not checked. `gpu-runtime-class` checks it;
    /// `gpu-runtime-defaults` reads it only to know the classes it fills in
    /// are allowed.
    pub pod_runtime_classes: Option<PodRuntimeClasses>,
    /// A memory-backed `/dev/shm` on every container that holds GPUs
    /// (Gatekeeper's `K8sGpuSharedMemory`). Default `null`: not checked.
    /// `gpu-runtime-class` checks it; `gpu-runtime-defaults` does not add
    /// the volume.
    pub shared_memory: Option<SharedMemory>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            requirements: vec![Requirement::nvidia()],
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
            pod_runtime_classes: None,
            shared_memory: None,
        }
    }
}

impl RuleSettings for Settings {
    /// A container whose image `exemptImages` lists holds no GPU for
    /// these rules (`ExemptGpus`): a pod whose every GPU is held by such
    /// containers needs no runtime class or toleration, and such a
    /// container no `/dev/shm`.
    const EXEMPTS_IMAGES: bool = true;

    fn validate(&self) -> Result<(), SettingsError> {
        validate("requirements", &self.requirements)?;
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")?;
        if let Some(p) = &self.pod_runtime_classes {
            p.validate("podRuntimeClasses", &self.requirements)?;
        }
        if let Some(m) = &self.shared_memory {
            m.validate("sharedMemory")?;
        }
        Ok(())
    }
}

/// The runtime classes every pod may run with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodRuntimeClasses {
    /// Runtime classes pods may name: exact names, or prefixes ending in
    /// `*` (wildcards); empty or absent: any class not denied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<Glob>,
    /// Runtime classes pods may not name, even when `allowed` matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<Glob>,
    /// Whether a pod must name a runtime class at all (default `false`: a
    /// pod without `runtimeClassName` runs with the node's default handler
    /// and passes, as Kyverno's policy lets it).
    #[serde(default)]
    pub required: bool,
}

impl PodRuntimeClasses {
    /// Whether pods may name runtime class `rc`.
    pub fn allows(&self, rc: &str) -> bool {
        (self.allowed.is_empty() || self.allowed.iter().any(|g| g.matches(rc))) && !self.denied.iter().any(|g| g.matches(rc))
    }

    fn validate(&self, key: &str, requirements: &[Requirement]) -> Result<(), SettingsError> {
        if self.allowed.is_empty() && self.denied.is_empty() && !self.required {
            return Err(SettingsError::new(
                key,
                "allows, denies and requires nothing, so it would check nothing: give `allowed`, `denied` or `required: true`, or `null`",
            ));
        }
        for (list, patterns) in [("allowed", &self.allowed), ("denied", &self.denied)] {
            for (i, g) in patterns.iter().enumerate() {
                let p = g.as_str();
                if let Some(c) = p.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '*' | '?'))) {
                    return Err(SettingsError::new(
                        format!("{key}.{list}[{i}]"),
                        format!(
                            "`{p}` can never match a RuntimeClass: `{c}` never appears in a RuntimeClass name (lowercase letters, digits, `-` and `.`)"
                        ),
                    ));
                }
                if p.is_empty() {
                    return Err(SettingsError::new(format!("{key}.{list}[{i}]"), "must not be empty"));
                }
            }
        }
        for (i, r) in requirements.iter().enumerate() {
            if let Some(rc) = r.runtime_classes.iter().find(|rc| !self.allows(rc)) {
                return Err(SettingsError::new(
                    key,
                    format!(
                        "does not allow `{rc}`, which `requirements[{i}].runtimeClasses` gives {} GPU pods: allow it, or change the requirement",
                        r.vendor
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The shared memory GPU containers need.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedMemory {
    /// The smallest `sizeLimit` the memory-backed volume may have, when it
    /// sets one (without one it is bounded by the pod's memory limit).
    /// Absent: any size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<String>,
}

impl SharedMemory {
    /// `minSize` in bytes (0 for none); valid settings parse.
    pub fn min_bytes(&self) -> u64 {
        self.min_size.as_deref().and_then(|q| crate::model::quantity::Quantity::parse(q).ok()).map_or(0, |q| q.ceil_units())
    }

    fn validate(&self, key: &str) -> Result<(), SettingsError> {
        if let Some(q) = &self.min_size {
            match crate::model::quantity::Quantity::parse(q) {
                Err(e) => return Err(SettingsError::new(format!("{key}.minSize"), format!("`{q}` is not a quantity: {e}"))),
                Ok(v) if !v.is_positive() => {
                    return Err(SettingsError::new(format!("{key}.minSize"), format!("`{q}` must be above zero, or absent for any size")));
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }
}

/// What pods that request one kind of GPU need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Requirement {
    /// Who makes these GPUs, for messages (`NVIDIA`, `AMD`, `Intel`).
    pub vendor: String,
    /// GPU resource names this applies to (wildcards allowed).
    pub resources: Vec<Glob>,
    /// DRA device classes this applies to (with `resourceClaims.resolve`).
    #[serde(default)]
    pub device_classes: Vec<Glob>,
    /// Runtime classes the pod may use, the first being the one to set;
    /// `[]`: none is needed.
    #[serde(default)]
    pub runtime_classes: Vec<String>,
    /// The taint these GPU nodes carry, which the pod must tolerate;
    /// absent or `null`: no toleration is needed.
    #[serde(default)]
    pub taint: Option<Taint>,
}

impl Requirement {
    /// NVIDIA's: the GPU operator's `nvidia` runtime class, and the taint
    /// GPU node pools carry (what the `ExtendedResourceToleration` admission
    /// plugin tolerates: key `nvidia.com/gpu`, effect `NoSchedule`).
    pub fn nvidia() -> Requirement {
        Requirement {
            vendor: "NVIDIA".into(),
            resources: vec![Glob::new("nvidia.com/*")],
            device_classes: vec![Glob::new("gpu.nvidia.com"), Glob::new("mig.nvidia.com")],
            runtime_classes: vec!["nvidia".into()],
            taint: Some(Taint { key: "nvidia.com/gpu".into(), value: None, effect: "NoSchedule".into() }),
        }
    }
}

/// A node taint, as `kubectl taint` writes it (`key[=value]:effect`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value; absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule` (default), `PreferNoSchedule` or `NoExecute`.
    #[serde(default = "no_schedule")]
    pub effect: String,
}

fn no_schedule() -> String {
    "NoSchedule".into()
}

impl Taint {
    /// As the scheduler matches it.
    pub fn node_taint(&self) -> scheduling::Taint<'_> {
        scheduling::Taint { key: &self.key, value: self.value.as_deref().unwrap_or(""), effect: &self.effect }
    }

    /// `nvidia.com/gpu:NoSchedule`, `gpu.intel.com=present:NoSchedule`.
    pub fn shown(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}:{}", self.key, self.effect),
            None => format!("{}:{}", self.key, self.effect),
        }
    }

    /// The toleration that tolerates exactly this taint: `(operator,
    /// value)`, `Exists` without a value, `Equal` with one.
    pub fn toleration(&self) -> (&'static str, Option<&str>) {
        match &self.value {
            Some(v) => ("Equal", Some(v.as_str())),
            None => ("Exists", None),
        }
    }

    /// That toleration as a message shows it: `{key: nvidia.com/gpu,
    /// operator: Exists, effect: NoSchedule}`.
    pub fn toleration_shown(&self) -> String {
        match &self.value {
            Some(v) => format!("{{key: {}, operator: Equal, value: {v}, effect: {}}}", self.key, self.effect),
            None => format!("{{key: {}, operator: Exists, effect: {}}}", self.key, self.effect),
        }
    }
}

/// Checks a `requirements` list under its settings key: at least one entry,
/// each with a vendor and resources, runtime classes that are valid
/// RuntimeClass names, a taint Kubernetes would accept.
pub fn validate(key: &str, requirements: &[Requirement]) -> Result<(), SettingsError> {
    if requirements.is_empty() {
        return Err(SettingsError::new(key, "must list at least one requirement, or the rule would check nothing"));
    }
    for (i, r) in requirements.iter().enumerate() {
        // A field of this entry, written only into an error.
        let at = move |field: &'static str| fmt::from_fn(move |f| write!(f, "{key}[{i}].{field}"));
        if r.vendor.trim().is_empty() {
            return Err(SettingsError::new(at("vendor").to_string(), "must name the vendor, for messages"));
        }
        if r.resources.is_empty() {
            return Err(SettingsError::new(at("resources").to_string(), "must list at least one GPU resource name"));
        }
        non_empty_patterns(&at("resources"), &r.resources)?;
        non_empty_patterns(&at("deviceClasses"), &r.device_classes)?;
        for (j, rc) in r.runtime_classes.iter().enumerate() {
            if let Err(why) = dns_subdomain(rc) {
                return Err(SettingsError::new(
                    format!("{key}[{i}].runtimeClasses[{j}]"),
                    format!("`{rc}` can never match a RuntimeClass: {why}"),
                ));
            }
        }
        if let Some(t) = &r.taint {
            if let Err(why) = label_key(&t.key) {
                return Err(SettingsError::new(at("taint.key").to_string(), format!("`{}` is not a valid taint key: {why}", t.key)));
            }
            if let Some(v) = &t.value
                && let Err(why) = label_value(v)
            {
                return Err(SettingsError::new(at("taint.value").to_string(), format!("`{v}` is not a valid taint value: {why}")));
            }
            if !matches!(t.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                return Err(SettingsError::new(
                    at("taint.effect").to_string(),
                    format!("`{}` is not one of `NoSchedule`, `PreferNoSchedule`, `NoExecute`", t.effect),
                ));
            }
        }
    }
    Ok(())
}

/// The requirements a pod template's GPUs call for, in settings order, each
/// with what calls for it (shown as `` container `trainer` requests 1
/// `nvidia.com/gpu` ``). `gpus` are the template's GPU requests, `claims`
/// its DRA claims as `(device class, claim name)` pairs.
pub fn applicable<'r, 'g>(
    requirements: &'r [Requirement],
    gpus: &'g [GpuRequest],
    claims: &'g [(String, String)],
) -> Vec<(&'r Requirement, CalledFor<'g>)> {
    let mut out = Vec::new();
    for r in requirements {
        let containers = gpus.iter().flat_map(|g| {
            g.resources.iter().filter(|(name, _)| r.resources.iter().any(|p| p.matches(name))).map(move |(name, n)| Reason::Container {
                container: &g.container_name,
                n: *n,
                resource: name,
            })
        });
        let claimed = claims
            .iter()
            .filter(|(class, _)| r.device_classes.iter().any(|p| p.matches(class)))
            .map(|(class, claim)| Reason::Claim { claim, class });
        let mut reasons = containers.chain(claimed);
        if let Some(first) = reasons.next() {
            out.push((r, CalledFor { first, more: reasons.count() }));
        }
    }
    out
}

/// What calls for a requirement, as messages show it: the first request
/// that does, and how many more (`` container `trainer` requests 1
/// `nvidia.com/gpu`, and 2 more requests ``). Written only when shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalledFor<'g> {
    first: Reason<'g>,
    more: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason<'g> {
    Container { container: &'g str, n: u64, resource: &'g str },
    Claim { claim: &'g str, class: &'g str },
}

impl fmt::Display for CalledFor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.first {
            Reason::Container { container, n, resource } => write!(f, "container `{container}` requests {n} `{resource}`")?,
            Reason::Claim { claim, class } => write!(f, "resource claim `{claim}` requests device class `{class}`")?,
        }
        if self.more > 0 {
            write!(f, ", and {}", count(self.more as u64, "more request"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::path::Path;
    use crate::model::workload::ContainerList;

    fn request(name: &str, resource: &str, n: u64) -> GpuRequest {
        GpuRequest {
            container_path: Path::root(),
            container_name: name.into(),
            list: ContainerList::Containers,
            resources: vec![(resource.into(), n)],
        }
    }

    #[test]
    fn taints_and_their_tolerations() {
        let t = Requirement::nvidia().taint.unwrap();
        assert_eq!(t.shown(), "nvidia.com/gpu:NoSchedule");
        assert_eq!(t.toleration(), ("Exists", None));
        assert_eq!(t.toleration_shown(), "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}");
        let v = Taint { key: "gpu.intel.com".into(), value: Some("present".into()), effect: "NoSchedule".into() };
        assert_eq!(v.shown(), "gpu.intel.com=present:NoSchedule");
        assert_eq!(v.toleration(), ("Equal", Some("present")));
        assert_eq!(v.node_taint().value, "present");
    }

    #[test]
    fn requirements_apply_per_vendor() {
        let amd = Requirement {
            vendor: "AMD".into(),
            resources: vec![Glob::new("amd.com/gpu")],
            device_classes: vec![],
            runtime_classes: vec![],
            taint: None,
        };
        let reqs = [Requirement::nvidia(), amd];
        let amd_gpus = [request("a", "amd.com/gpu", 1)];
        let found = applicable(&reqs, &amd_gpus, &[]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.vendor, "AMD");
        let nvidia_gpus = [request("a", "nvidia.com/gpu", 2), request("b", "nvidia.com/mig-1g.5gb", 1)];
        let claims = [("gpu.nvidia.com".to_string(), "c".to_string())];
        let both = applicable(&reqs, &nvidia_gpus, &claims);
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].1.to_string(), "container `a` requests 2 `nvidia.com/gpu`, and 2 more requests");
        assert!(applicable(&reqs, &[], &[]).is_empty());
        assert!(validate("requirements", &reqs).is_ok());
        assert!(validate("requirements", &[]).unwrap_err().to_string().starts_with("setting `requirements`: must list"));
    }

    fn err(json: &str) -> String {
        crate::runtime::settings::Settings::<Settings>::parse_valid(json).expect_err("settings must be refused").to_string()
    }

    #[test]
    fn settings_default_to_nvidias() {
        let s = crate::runtime::settings::Settings::<Settings>::parse_valid("{}").unwrap().rule;
        assert_eq!(s, Settings::default());
        let t = s.requirements[0].taint.as_ref().unwrap();
        assert_eq!((t.key.as_str(), t.effect.as_str()), ("nvidia.com/gpu", "NoSchedule"));
        // The example of gpu-runtime-class's README.
        let shared = r#"{"requirements":[{"vendor":"NVIDIA","resources":["nvidia.com/*"],"deviceClasses":["gpu.nvidia.com"],"runtimeClasses":["nvidia","nvidia-cdi"],"taint":{"key":"nvidia.com/gpu"}}],"exemptNamespaces":["gpu-operator"],"resourceClaims":{"resolve":true}}"#;
        let s = crate::runtime::settings::Settings::<Settings>::parse_valid(shared).unwrap();
        assert_eq!(s.rule.requirements.first().map(|r| r.runtime_classes.len()), Some(2));
    }

    #[test]
    fn vendors_without_a_runtime_class_or_taint() {
        let s = crate::runtime::settings::Settings::<Settings>::parse_valid(
            r#"{"requirements":[{"vendor":"AMD","resources":["amd.com/gpu"],"taint":{"key":"amd.com/gpu"}},{"vendor":"Intel","resources":["gpu.intel.com/*"]}]}"#,
        )
        .unwrap()
        .rule;
        assert!(s.requirements[0].runtime_classes.is_empty());
        assert_eq!(s.requirements[0].taint.as_ref().unwrap().effect, "NoSchedule", "effect defaults to NoSchedule");
        assert!(s.requirements[1].taint.is_none());
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert!(
            err(r#"{"requirements":[{"vendor":"NVIDIA","resources":["nvidia.com/*"],"runtimeClasses":["NVIDIA "]}]}"#)
                .starts_with("setting `requirements[0].runtimeClasses[0]`: `NVIDIA ` can never match a RuntimeClass")
        );
        assert!(
            err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a b"}}]}"#)
                .starts_with("setting `requirements[0].taint.key`")
        );
        assert!(
            err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a","effect":"NoScheduled"}}]}"#)
                .starts_with("setting `requirements[0].taint.effect`: `NoScheduled` is not one of")
        );
        assert!(err(r#"{"requirements":[]}"#).starts_with("setting `requirements`: must list at least one"));
        assert!(err(r#"{"requirements":[{"vendor":"x","resources":[]}]}"#).starts_with("setting `requirements[0].resources`"));
        assert!(
            err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a","operator":"Exists"}}]}"#)
                .starts_with("setting `requirements[0].taint.operator`: unknown setting")
        );
        assert!(err(r#"{"requiredToleration":{"key":"a"}}"#).starts_with("setting `requiredToleration`: unknown setting"));
        assert!(err(r#"{"podRuntimeClasses":{}}"#).starts_with("setting `podRuntimeClasses`: allows, denies and requires nothing"));
        assert!(
            err(r#"{"podRuntimeClasses":{"denied":["runC"]}}"#)
                .starts_with("setting `podRuntimeClasses.denied[0]`: `runC` can never match")
        );
        assert!(err(r#"{"podRuntimeClasses":{"allowed":["kata*"]}}"#).starts_with(
            "setting `podRuntimeClasses`: does not allow `nvidia`, which `requirements[0].runtimeClasses` gives NVIDIA GPU pods"
        ));
        assert!(err(r#"{"sharedMemory":{"minSize":"lots"}}"#).starts_with("setting `sharedMemory.minSize`: `lots` is not a quantity"));
        assert!(err(r#"{"sharedMemory":{"minSize":"0"}}"#).starts_with("setting `sharedMemory.minSize`: `0` must be above zero"));
        assert!(err(r#"{"sharedMemory":{"size":"1Gi"}}"#).starts_with("setting `sharedMemory.size`: unknown setting"));
        let s = crate::runtime::settings::Settings::<Settings>::parse_valid(
            r#"{"podRuntimeClasses":{"allowed":["nvidia","kata-*"],"required":true},"sharedMemory":{"minSize":"1Gi"}}"#,
        )
        .unwrap()
        .rule;
        let p = s.pod_runtime_classes.unwrap();
        assert!(p.allows("kata-qemu") && p.allows("nvidia") && !p.allows("runc"));
        assert_eq!(s.shared_memory.unwrap().min_bytes(), 1 << 30);
    }
}
