//! Settings of `gpu-runtime-class`.

use aigov_sdk::names::{dns_subdomain, label_key, label_value};
use aigov_sdk::settings::non_empty_patterns;
use aigov_sdk::{Glob, GpuResources, OnLookupError, ResourceClaims, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

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
    /// Runtime classes the pod may use; `[]`: none is needed.
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
            device_classes: vec![Glob::new("gpu.nvidia.com")],
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

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.requirements.is_empty() {
            return Err(SettingsError::new(
                "requirements",
                "must list at least one requirement, or the rule would check nothing",
            ));
        }
        for (i, r) in self.requirements.iter().enumerate() {
            let at = |field: &str| format!("requirements[{i}].{field}");
            if r.vendor.trim().is_empty() {
                return Err(SettingsError::new(at("vendor"), "must name the vendor, for messages"));
            }
            if r.resources.is_empty() {
                return Err(SettingsError::new(at("resources"), "must list at least one GPU resource name"));
            }
            non_empty_patterns(&at("resources"), &r.resources)?;
            non_empty_patterns(&at("deviceClasses"), &r.device_classes)?;
            for (j, rc) in r.runtime_classes.iter().enumerate() {
                if let Err(why) = dns_subdomain(rc) {
                    return Err(SettingsError::new(
                        format!("requirements[{i}].runtimeClasses[{j}]"),
                        format!("`{rc}` can never match a RuntimeClass: {why}"),
                    ));
                }
            }
            if let Some(t) = &r.taint {
                if let Err(why) = label_key(&t.key) {
                    return Err(SettingsError::new(at("taint.key"), format!("`{}` is not a valid taint key: {why}", t.key)));
                }
                if let Some(v) = &t.value
                    && let Err(why) = label_value(v)
                {
                    return Err(SettingsError::new(at("taint.value"), format!("`{v}` is not a valid taint value: {why}")));
                }
                if !matches!(t.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return Err(SettingsError::new(
                        at("taint.effect"),
                        format!("`{}` is not one of `NoSchedule`, `PreferNoSchedule`, `NoExecute`", t.effect),
                    ));
                }
            }
        }
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
