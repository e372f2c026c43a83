//! Settings of `workload-classification`.

use aigov_sdk::RequiredLabels;
use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::base::names::label_key;
use aigov_sdk::model::classification::classification_labels;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The labels every workload (and its templates) must carry, each with
    /// its allowed values (`[]`: any non-empty value). Default: `team`,
    /// `cost-center`, `workload-type` in the SDK's workload types,
    /// `compute-type` in `gpu`, `cpu`, `mixed`. A value given here replaces
    /// the default as a whole.
    pub required_labels: RequiredLabels,
    /// Whether the pod templates of controllers must carry the labels too.
    /// Default `true`: the labels pods inherit are what cost tools read.
    pub require_on_pod_templates: bool,
    /// Whether to check only what becomes pod labels: a Pod's own labels
    /// and controllers' pod templates, not the controller's own metadata
    /// (nor a CronJob's or JobSet's job templates). Default `false`.
    pub pod_templates_only: bool,
    /// Whether a `compute-type` label must agree with the GPUs requested
    /// (`cpu` only where no pod requests GPUs; `gpu` and `mixed` only where
    /// some pod does). Default `true`.
    pub check_compute_type: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// The labels every Namespace must carry when it is created or
    /// updated, each with its allowed values: what tenancy and quota rules
    /// select namespaces by. Default `{}`: Namespaces are not checked.
    pub namespace_labels: RequiredLabels,
    /// The only label keys workloads (and their templates, as far as
    /// `requiredLabels` is checked) may carry: exact keys or patterns
    /// (`app.kubernetes.io/*`). Default `null`: any key.
    pub allowed_label_keys: Option<Vec<Glob>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            required_labels: classification_labels(),
            require_on_pod_templates: true,
            pod_templates_only: false,
            check_compute_type: true,
            gpu_resource_names: GpuResources::default(),
            namespace_labels: RequiredLabels::default(),
            allowed_label_keys: None,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        const KEY: &str = "requiredLabels";
        if self.required_labels.0.is_empty()
            && !self.check_compute_type
            && self.namespace_labels.0.is_empty()
            && self.allowed_label_keys.is_none()
        {
            return Err(SettingsError::new(
                KEY,
                "must list at least one label when `checkComputeType` is off and `allowedLabelKeys` is not set, or the rule would check nothing",
            ));
        }
        if self.pod_templates_only && !self.require_on_pod_templates {
            return Err(SettingsError::new(
                "podTemplatesOnly",
                "cannot be `true` with `requireOnPodTemplates: false`: controllers would not be checked at all",
            ));
        }
        self.required_labels.validate(KEY)?;
        self.namespace_labels.validate("namespaceLabels")?;
        if let Some(keys) = &self.allowed_label_keys {
            validate_allowed_keys(keys, &self.required_labels)?;
        }
        self.gpu_resource_names.validate("gpuResourceNames")
    }
}

/// `allowedLabelKeys`: at least one entry, each a label key or a pattern
/// some label key matches, allowing every key `requiredLabels` requires
/// (or every workload would be refused).
fn validate_allowed_keys(keys: &[Glob], required: &RequiredLabels) -> Result<(), SettingsError> {
    const KEY: &str = "allowedLabelKeys";
    if keys.is_empty() {
        return Err(SettingsError::new(KEY, "must list at least one label key; leave it out, or set it to `null`, to allow any key"));
    }
    non_empty_patterns(&KEY, keys)?;
    for (i, k) in keys.iter().enumerate() {
        // A pattern is read as the key its wildcards could stand for.
        let key = k.as_str().replace(['*', '?'], "a");
        if let Err(why) = label_key(&key) {
            return Err(SettingsError::new(format!("{KEY}[{i}]"), format!("`{k}` is not a label key or a pattern of label keys: {why}")));
        }
    }
    let refused: Vec<&str> = required.0.keys().map(String::as_str).filter(|r| !keys.iter().any(|k| k.matches(r))).collect();
    if !refused.is_empty() {
        return Err(SettingsError::new(
            KEY,
            format!(
                "does not allow {}, which `requiredLabels` requires, so every workload would be refused: add {}",
                quoted(&refused),
                if refused.len() == 1 { "it" } else { "them" }
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults_are_the_shared_vocabulary() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        let json = Full::<Settings>::default().to_json();
        assert_eq!(
            json["requiredLabels"].to_string(),
            r#"{"compute-type":["gpu","cpu","mixed"],"cost-center":[],"team":[],"workload-type":["jupyter-notebook","ml-training","cpu-training","data-processing","model-inference","report-generation"]}"#
        );
        assert_eq!((json["requireOnPodTemplates"].as_bool(), json["podTemplatesOnly"].as_bool()), (Some(true), Some(false)));
    }

    #[test]
    fn contradictions_are_refused() {
        assert!(
            refused::<Settings>(r#"{"podTemplatesOnly":true,"requireOnPodTemplates":false}"#)
                .starts_with("setting `podTemplatesOnly`: cannot be `true`")
        );
        assert!(
            refused::<Settings>(r#"{"requiredLabels":{},"checkComputeType":false}"#)
                .starts_with("setting `requiredLabels`: must list at least one label")
        );
        assert!(Full::<Settings>::parse_valid(r#"{"requiredLabels":{}}"#).is_ok(), "the compute-type check alone");
        assert!(
            Full::<Settings>::parse_valid(r#"{"requiredLabels":{},"checkComputeType":false,"namespaceLabels":{"team":[]}}"#).is_ok(),
            "Namespaces alone"
        );
        let e = refused::<Settings>(r#"{"namespaceLabels":{"owner":{"regex":"^(a"}}}"#);
        assert!(e.starts_with("setting `namespaceLabels.owner`: `^(a` is not a regular expression aigov reads: missing `)`"));
        assert!(
            refused::<Settings>(r#"{"namespaceLabels":{"tier":["gold","silver lining"]}}"#)
                .starts_with("setting `namespaceLabels.tier[1]`: `silver lining` is not a valid label value")
        );
        assert!(
            refused::<Settings>(r#"{"requiredLabels":{"workload-type":["ml training"]}}"#)
                .starts_with("setting `requiredLabels.workload-type[0]`: `ml training` is not a valid label value")
        );
        assert!(refused::<Settings>(r#"{"requiredLabel":{}}"#).starts_with("setting `requiredLabel`: unknown setting"));
        assert!(
            Full::<Settings>::parse_valid(r#"{"requiredLabels":{},"checkComputeType":false,"allowedLabelKeys":["team"]}"#).is_ok(),
            "only these keys, alone"
        );
        assert!(refused::<Settings>(r#"{"gpuResourceNames":[""]}"#).starts_with("setting `gpuResourceNames[0]`: must not be empty"));
    }

    #[test]
    fn allowed_label_keys_are_keys_or_patterns_and_allow_the_required_ones() {
        let required = r#""requiredLabels":{"team":[]},"checkComputeType":false"#;
        let s = accepted::<Settings>(&format!(r#"{{{required},"allowedLabelKeys":["team","app.kubernetes.io/*","*.example.com/*"]}}"#));
        assert_eq!(s.allowed_label_keys.map(|k| k.len()), Some(3));
        assert_eq!(
            refused::<Settings>(&format!(r#"{{{required},"allowedLabelKeys":[]}}"#)),
            "setting `allowedLabelKeys`: must list at least one label key; leave it out, or set it to `null`, to allow any key"
        );
        assert!(
            refused::<Settings>(&format!(r#"{{{required},"allowedLabelKeys":["team","Cost Center"]}}"#))
                .starts_with("setting `allowedLabelKeys[1]`: `Cost Center` is not a label key or a pattern of label keys")
        );
        assert!(
            refused::<Settings>(&format!(r#"{{{required},"allowedLabelKeys":["team",""]}}"#))
                .starts_with("setting `allowedLabelKeys[1]`: must not be empty")
        );
        assert_eq!(
            refused::<Settings>(r#"{"allowedLabelKeys":["team","app"]}"#),
            "setting `allowedLabelKeys`: does not allow `compute-type`, `cost-center`, `workload-type`, which `requiredLabels` requires, so every workload would be refused: add them"
        );
        assert!(accepted::<Settings>("{}").allowed_label_keys.is_none(), "any key by default");
    }
}
