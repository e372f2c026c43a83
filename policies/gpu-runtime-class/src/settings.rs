//! Settings of `gpu-runtime-class`.

use aigov_sdk::{GpuResources, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode` and exemptions come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Runtime classes a pod that requests GPUs may use. Default `["nvidia"]`.
    pub allowed_runtime_classes: Vec<String>,
    /// The toleration a pod that requests GPUs must carry (or one that
    /// tolerates at least as much). Default `{key: nvidia.com/gpu, operator:
    /// Exists}`; `null` turns the toleration check off.
    pub required_toleration: Option<RequiredToleration>,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allowed_runtime_classes: vec!["nvidia".into()],
            required_toleration: Some(RequiredToleration::default()),
            gpu_resource_names: GpuResources::default(),
        }
    }
}

/// A toleration, as in a pod spec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequiredToleration {
    /// Taint key.
    pub key: String,
    /// `Exists` or `Equal`.
    #[serde(default = "exists")]
    pub operator: String,
    /// Taint value, with `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Taint effect; absent means every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

fn exists() -> String {
    "Exists".into()
}

impl Default for RequiredToleration {
    fn default() -> Self {
        RequiredToleration {
            key: "nvidia.com/gpu".into(),
            operator: exists(),
            value: None,
            effect: None,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.allowed_runtime_classes.is_empty() {
            return Err(SettingsError::new(
                "allowedRuntimeClasses",
                "must list at least one runtime class, or every GPU workload would be rejected",
            ));
        }
        for (i, rc) in self.allowed_runtime_classes.iter().enumerate() {
            if rc.trim().is_empty() {
                return Err(SettingsError::new(format!("allowedRuntimeClasses[{i}]"), "must not be empty"));
            }
        }
        if let Some(t) = &self.required_toleration {
            if t.key.trim().is_empty() {
                return Err(SettingsError::new("requiredToleration.key", "must not be empty"));
            }
            match (t.operator.as_str(), &t.value) {
                ("Exists", None) | ("Equal", Some(_)) => {}
                ("Exists", Some(_)) => {
                    return Err(SettingsError::new(
                        "requiredToleration.value",
                        "must not be set with operator `Exists`",
                    ));
                }
                ("Equal", None) => {
                    return Err(SettingsError::new("requiredToleration.value", "is required with operator `Equal`"));
                }
                (op, _) => {
                    return Err(SettingsError::new(
                        "requiredToleration.operator",
                        format!("`{op}` is not one of `Exists`, `Equal`"),
                    ));
                }
            }
            if let Some(e) = &t.effect
                && !matches!(e.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute")
            {
                return Err(SettingsError::new(
                    "requiredToleration.effect",
                    format!("`{e}` is not one of `NoSchedule`, `PreferNoSchedule`, `NoExecute`"),
                ));
            }
        }
        self.gpu_resource_names.validate("gpuResourceNames")
    }
}
