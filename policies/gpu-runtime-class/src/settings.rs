//! Settings of `gpu-runtime-class`.

use aigov_sdk::gpu_runtime;
use aigov_sdk::{GpuResources, OnLookupError, ResourceClaims, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

/// What pods that request one kind of GPU need; the shape lives in the SDK
/// so that `gpu-runtime-defaults` reads the same settings.
pub use aigov_sdk::gpu_runtime::{Requirement, Taint};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// What pods that request each kind of GPU need, in order; a GPU
    /// resource no entry matches needs nothing. Default: NVIDIA's
    /// (`nvidia.com/*` needs runtime class `nvidia` and tolerates the
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
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;
    use aigov_sdk::settings::Settings as Full;

    fn err(json: &str) -> String {
        Full::<Settings>::parse_valid(json).expect_err("settings must be refused").to_string()
    }

    #[test]
    fn defaults_are_nvidias() {
        let s = Full::<Settings>::parse_valid("{}").unwrap().rule;
        assert_eq!(s, Settings::default());
        let t = s.requirements[0].taint.as_ref().unwrap();
        assert_eq!((t.key.as_str(), t.effect.as_str()), ("nvidia.com/gpu", "NoSchedule"));
    }

    #[test]
    fn vendors_without_a_runtime_class_or_taint() {
        let s = Full::<Settings>::parse_valid(
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
        assert!(err(r#"{"requirements":[{"vendor":"NVIDIA","resources":["nvidia.com/*"],"runtimeClasses":["NVIDIA "]}]}"#)
            .starts_with("setting `requirements[0].runtimeClasses[0]`: `NVIDIA ` can never match a RuntimeClass"));
        assert!(err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a b"}}]}"#).starts_with("setting `requirements[0].taint.key`"));
        assert!(err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a","effect":"NoScheduled"}}]}"#)
            .starts_with("setting `requirements[0].taint.effect`: `NoScheduled` is not one of"));
        assert!(err(r#"{"requirements":[]}"#).starts_with("setting `requirements`: must list at least one"));
        assert!(err(r#"{"requirements":[{"vendor":"x","resources":[]}]}"#).starts_with("setting `requirements[0].resources`"));
        assert!(err(r#"{"requirements":[{"vendor":"x","resources":["a/b"],"taint":{"key":"a","operator":"Exists"}}]}"#)
            .starts_with("setting `requirements[0].taint.operator`: unknown setting"));
        assert!(err(r#"{"requiredToleration":{"key":"a"}}"#).starts_with("setting `requiredToleration`: unknown setting"));
    }
}
