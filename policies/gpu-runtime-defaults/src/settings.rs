//! Settings of `gpu-runtime-defaults`: the keys of `gpu-runtime-class`, so
//! one settings block serves both.

use aigov_sdk::gpu_runtime;
use aigov_sdk::{GpuResources, OnLookupError, ResourceClaims, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

/// What pods that request one kind of GPU need (shared with
/// `gpu-runtime-class`).
pub use aigov_sdk::gpu_runtime::{Requirement, Taint};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// What pods that request each kind of GPU need, in order; a GPU
    /// resource no entry matches needs nothing. Default: NVIDIA's
    /// (`nvidia.com/*` gets runtime class `nvidia` and a toleration of the
    /// `nvidia.com/gpu:NoSchedule` taint).
    pub requirements: Vec<Requirement>,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// GPUs claimed through Dynamic Resource Allocation. Default off: the
    /// rule then reads nothing from the cluster.
    pub resource_claims: ResourceClaims,
    /// What a failed claim lookup does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            requirements: vec![Requirement::nvidia()],
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        gpu_runtime::validate("requirements", &self.requirements)?;
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use aigov_sdk::settings::Settings as Full;

    #[test]
    fn defaults_are_nvidias_and_gpu_runtime_class_settings_fit() {
        let s = Full::<Settings>::parse_valid("{}").unwrap().rule;
        assert_eq!(s, Settings::default());
        // The README's example for gpu-runtime-class, word for word.
        let shared = r#"{"requirements":[{"vendor":"NVIDIA","resources":["nvidia.com/*"],"deviceClasses":["gpu.nvidia.com"],"runtimeClasses":["nvidia","nvidia-cdi"],"taint":{"key":"nvidia.com/gpu"}}],"exemptNamespaces":["gpu-operator"],"resourceClaims":{"resolve":true}}"#;
        let s = Full::<Settings>::parse_valid(shared).unwrap();
        assert_eq!(s.rule.requirements.first().map(|r| r.runtime_classes.len()), Some(2));
        let e = Full::<Settings>::parse_valid(r#"{"requirements":[]}"#).expect_err("refused").to_string();
        assert!(e.starts_with("setting `requirements`: must list at least one"), "{e}");
    }
}
