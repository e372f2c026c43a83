//! Settings of `rule-template`: a serde struct in camelCase that refuses
//! unknown keys, whose `Default` is the documented defaults, and whose
//! `validate` refuses what serde cannot (here, an empty list, which would
//! refuse every GPU pod, and names no Kubernetes accepts).

use aigov_sdk::base::names::dns_subdomain;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The priority classes pods that request GPUs may use.
    pub priority_classes: Vec<String>,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { priority_classes: vec!["gpu-batch".into(), "gpu-serving".into()], gpu_resource_names: GpuResources::default() }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.priority_classes.is_empty() {
            return Err(SettingsError::new("priorityClasses", "must list at least one priority class, or every GPU pod would be refused"));
        }
        for (i, class) in self.priority_classes.iter().enumerate() {
            if let Err(why) = dns_subdomain(class) {
                return Err(SettingsError::new(format!("priorityClasses[{i}]"), format!("`{class}` is not a priority class name: {why}")));
            }
        }
        self.gpu_resource_names.validate("gpuResourceNames")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults_and_refusals() {
        assert_eq!(accepted::<Settings>("{}"), Settings::default());
        assert_eq!(accepted::<Settings>(r#"{"priorityClasses":["high"]}"#).priority_classes, ["high"]);
        assert!(refused::<Settings>(r#"{"priorityClasses":[]}"#).starts_with("setting `priorityClasses`: must list"));
        assert!(refused::<Settings>(r#"{"priorityClasses":["High Priority"]}"#).starts_with("setting `priorityClasses[0]`"));
        let typo = refused::<Settings>(r#"{"priorityClass":["a"]}"#);
        assert!(typo.contains("`priorityClass`"), "{typo}");
    }
}
