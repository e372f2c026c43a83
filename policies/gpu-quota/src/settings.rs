//! Settings of `gpu-quota`.

use std::collections::BTreeMap;

use aigov_sdk::LabelSelector;
use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::cluster::device_classes::DeviceClassResources;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// GPU caps by resource name: a name or a wildcard pattern
/// (`nvidia.com/gpu`, `nvidia.com/mig-*`) to the most GPUs of each matching
/// resource name; `null` (in an override) lifts the default's cap of that
/// key.
pub type Limits = BTreeMap<String, Option<u64>>;

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The most GPUs one workload may hold at full scale (every pod of
    /// every replica group running), per GPU resource name. Default
    /// `nvidia.com/gpu: 16`.
    pub workload_limits: Limits,
    /// The most GPUs the unfinished pods of one namespace may hold
    /// together, per GPU resource name, checked when a Pod is created.
    /// Default `nvidia.com/gpu: 16`.
    pub namespace_limits: Limits,
    /// Other limits for some namespaces, chosen by name or by the
    /// Namespace's labels; the first override that matches applies.
    pub overrides: Vec<Override>,
    /// Whether pods being deleted (in their grace period) still count
    /// against the namespace, as ResourceQuota counts them. Default on.
    pub count_terminating_pods: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// The GPU resource name the devices of each DRA device class count as
    /// (`gpu.nvidia.com: nvidia.com/gpu`); a `*` in the name stands for the
    /// MIG profile the request's selector pins
    /// (`device.attributes['gpu.nvidia.com'].profile`), so
    /// `mig.nvidia.com: nvidia.com/mig-*` counts a `1g.10gb` slice as
    /// `nvidia.com/mig-1g.10gb`.
    pub device_class_resources: DeviceClassResources,
    /// What a failed lookup (the Namespace, the namespace's pods, a
    /// resource claim) does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

/// 16 GPUs: the GPU capacity of a team's Volcano queue and Kueue
/// ClusterQueue in the Kyverno blog's examples.
pub const DEFAULT_LIMIT: u64 = 16;

impl Default for Settings {
    fn default() -> Self {
        let sixteen: Limits = [("nvidia.com/gpu".to_string(), Some(DEFAULT_LIMIT))].into_iter().collect();
        Settings {
            workload_limits: sixteen.clone(),
            namespace_limits: sixteen,
            overrides: Vec::new(),
            count_terminating_pods: true,
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            device_class_resources: DeviceClassResources::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

/// Limits for the namespaces an override selects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Override {
    /// Namespace names (wildcards allowed); empty: any name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<Glob>,
    /// A label selector on the Namespace object (read through the cluster
    /// interface); absent: any labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Per-workload caps replacing the default's, key by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workload_limits: Limits,
    /// Per-namespace caps replacing the default's, key by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub namespace_limits: Limits,
}

impl Override {
    /// Whether the override's `namespaces` admit namespace `name` (its
    /// `namespaceSelector` is checked against the Namespace's labels).
    pub fn matches_name(&self, name: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|g| g.matches(name))
    }
}

/// Checks a limits map: keys are GPU resource names or patterns.
fn validate_limits(key: &str, limits: &Limits, gpus: &GpuResources) -> Result<(), SettingsError> {
    for name in limits.keys() {
        let at = format!("{key}.{name}");
        if name.trim().is_empty() || name.contains(char::is_whitespace) {
            return Err(SettingsError::new(key, format!("`{name}` is not a resource name")));
        }
        if !name.contains('/') {
            return Err(SettingsError::new(
                at,
                format!("`{name}` can never be a GPU: GPUs are extended resources named `vendor/name`, such as `nvidia.com/gpu`"),
            ));
        }
        if !name.contains(['*', '?']) && !gpus.is_gpu(name) {
            return Err(SettingsError::new(
                at,
                format!(
                    "`{name}` is not a GPU resource under `gpuResourceNames`, so it would never be counted: add it there, or remove this limit"
                ),
            ));
        }
    }
    Ok(())
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        self.gpu_resource_names.validate("gpuResourceNames")?;
        validate_limits("workloadLimits", &self.workload_limits, &self.gpu_resource_names)?;
        validate_limits("namespaceLimits", &self.namespace_limits, &self.gpu_resource_names)?;
        let mut catch_all: Option<usize> = None;
        for (i, o) in self.overrides.iter().enumerate() {
            let at = |field: &str| format!("overrides[{i}].{field}");
            if let Some(j) = catch_all {
                return Err(SettingsError::new(
                    format!("overrides[{i}]"),
                    format!("can never apply: `overrides[{j}]` matches every namespace first"),
                ));
            }
            if o.namespaces.is_empty() && o.namespace_selector.is_none() {
                return Err(SettingsError::new(
                    format!("overrides[{i}]"),
                    "must choose namespaces with `namespaces` or `namespaceSelector` (or both); for every namespace, change the defaults",
                ));
            }
            non_empty_patterns(&at("namespaces"), &o.namespaces)?;
            if let Some(sel) = &o.namespace_selector {
                if sel.is_empty() {
                    return Err(SettingsError::new(
                        at("namespaceSelector"),
                        "is empty and would select every namespace: give `matchLabels` or `matchExpressions`, or leave it out",
                    ));
                }
                sel.validate(&at("namespaceSelector"))?;
            }
            if o.workload_limits.is_empty() && o.namespace_limits.is_empty() {
                return Err(SettingsError::new(
                    format!("overrides[{i}]"),
                    "sets neither `workloadLimits` nor `namespaceLimits`, so it would change nothing",
                ));
            }
            validate_limits(&at("workloadLimits"), &o.workload_limits, &self.gpu_resource_names)?;
            validate_limits(&at("namespaceLimits"), &o.namespace_limits, &self.gpu_resource_names)?;
            if o.namespace_selector.is_none() && o.namespaces.iter().any(|g| g.as_str() == "*") {
                catch_all = Some(i);
            }
        }
        self.resource_claims.validate("resourceClaims")?;
        self.device_class_resources.validate("deviceClassResources", Some(&self.gpu_resource_names))?;
        Ok(())
    }

    /// `deviceClassResources` maps GPU device classes (the shared
    /// `gpuDeviceClasses`, or the deprecated `resourceClaims.gpuDeviceClasses`
    /// when written), and every class named there is mapped.
    fn validate_gpu_classes(&self, shared: &[&str]) -> Result<(), SettingsError> {
        let own: Option<Vec<&str>> = self.resource_claims.gpu_device_classes.as_ref().map(|c| c.iter().map(Glob::as_str).collect());
        let key = if own.is_some() { "resourceClaims.gpuDeviceClasses" } else { "gpuDeviceClasses" };
        let classes = own.as_deref().unwrap_or(shared);
        self.device_class_resources.validate_classes("deviceClassResources", key, classes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.workload_limits["nvidia.com/gpu"], Some(16));
        assert!(s.count_terminating_pods);
    }

    #[test]
    fn overrides_parse() {
        let s = Full::<Settings>::parse_valid(
            r#"{"overrides":[{"namespaces":["research-*"],"namespaceSelector":{"matchLabels":{"tier":"gold"}},"workloadLimits":{"nvidia.com/gpu":64,"nvidia.com/mig-*":null}}]}"#,
        )
        .unwrap()
        .rule;
        assert_eq!(s.overrides[0].workload_limits["nvidia.com/mig-*"], None);
        assert!(s.overrides[0].matches_name("research-nlp"));
        assert!(!s.overrides[0].matches_name("dev"));
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert!(
            refused::<Settings>(r#"{"workloadLimits":{"cpu":4}}"#).starts_with("setting `workloadLimits.cpu`: `cpu` can never be a GPU")
        );
        assert!(
            refused::<Settings>(r#"{"namespaceLimits":{"example.com/fpga":4}}"#)
                .starts_with("setting `namespaceLimits.example.com/fpga`: `example.com/fpga` is not a GPU resource")
        );
        assert!(refused::<Settings>(r#"{"workloadLimits":{"nvidia.com/gpu":-1}}"#).starts_with("setting `workloadLimits.nvidia.com/gpu`"));
        assert!(
            refused::<Settings>(r#"{"overrides":[{"workloadLimits":{"nvidia.com/gpu":4}}]}"#)
                .starts_with("setting `overrides[0]`: must choose namespaces")
        );
        assert!(refused::<Settings>(r#"{"overrides":[{"namespaces":["a"]}]}"#).starts_with("setting `overrides[0]`: sets neither"));
        assert!(
            refused::<Settings>(r#"{"overrides":[{"namespaces":[""],"workloadLimits":{"nvidia.com/gpu":4}}]}"#)
                .starts_with("setting `overrides[0].namespaces[0]`")
        );
        assert!(
            refused::<Settings>(r#"{"overrides":[{"namespaceSelector":{},"workloadLimits":{"nvidia.com/gpu":4}}]}"#)
                .starts_with("setting `overrides[0].namespaceSelector`: is empty")
        );
        assert!(refused::<Settings>(r#"{"overrides":[{"namespaceSelector":{"matchExpressions":[{"key":"t","operator":"In"}]},"workloadLimits":{"nvidia.com/gpu":4}}]}"#)
            .starts_with("setting `overrides[0].namespaceSelector.matchExpressions[0].values`"));
        assert!(refused::<Settings>(r#"{"overrides":[{"namespaces":["*"],"workloadLimits":{"nvidia.com/gpu":4}},{"namespaces":["x"],"workloadLimits":{"nvidia.com/gpu":8}}]}"#)
            .starts_with("setting `overrides[1]`: can never apply"));
        assert!(
            refused::<Settings>(r#"{"overrides":[{"namespaces":["a"],"gpuLimits":{}}]}"#)
                .starts_with("setting `overrides[0].gpuLimits`: unknown setting")
        );
        assert!(
            refused::<Settings>(r#"{"gpuDeviceClasses":["gpu.nvidia.com","mig.nvidia.com","gpu.amd.com"]}"#)
                .starts_with("setting `gpuDeviceClasses[2]`: `gpu.amd.com` has no entry in `deviceClassResources`")
        );
        assert!(
            refused::<Settings>(r#"{"resourceClaims":{"gpuDeviceClasses":["gpu.nvidia.com"]}}"#).starts_with(
                "setting `deviceClassResources.mig.nvidia.com`: `mig.nvidia.com` is not a GPU device class under `resourceClaims.gpuDeviceClasses`"
            ),
            "the deprecated key still replaces the shared one"
        );
        assert!(
            refused::<Settings>(r#"{"deviceClassResources":{"gpu.nvidia.com":"nvidia.com/gpu","mig.nvidia.com":"nvidia.com/mig-*","tpu.example.com":"nvidia.com/gpu"}}"#)
                .starts_with("setting `deviceClassResources.tpu.example.com`: `tpu.example.com` is not a GPU device class")
        );
        assert!(
            refused::<Settings>(r#"{"deviceClassResources":{"gpu.nvidia.com":"gpus"}}"#)
                .starts_with("setting `deviceClassResources.gpu.nvidia.com`: `gpus` is not a GPU resource name")
        );
        assert!(refused::<Settings>(r#"{"deviceClassResources":{"gpu.nvidia.com":"example.com/fpga"}}"#).starts_with(
            "setting `deviceClassResources.gpu.nvidia.com`: `example.com/fpga` is not a GPU resource under `gpuResourceNames`"
        ));
        let s = accepted::<Settings>(
            r#"{"resourceClaims":{"gpuDeviceClasses":["gpu.nvidia.com","mig.nvidia.com"]},"deviceClassResources":{"gpu.nvidia.com":"nvidia.com/gpu","mig.nvidia.com":"nvidia.com/mig-*"}}"#,
        );
        assert!(s.resource_claims.resolves(), "writing only `gpuDeviceClasses` keeps resolving");
        let s = accepted::<Settings>(r#"{"resourceClaims":{"resolve":false}}"#);
        assert!(!s.resource_claims.resolves(), "the deprecated switch is still honoured");
    }
}
