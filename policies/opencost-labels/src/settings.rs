//! Settings of `opencost-labels`.

use aigov_sdk::RequiredLabels;
use aigov_sdk::model::classification::OPENCOST_CATEGORIES;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// OpenCost's team label.
pub const TEAM_LABEL: &str = "opencost.io/team";

/// OpenCost's workload-category label.
pub const CATEGORY_LABEL: &str = "opencost.io/workload-category";

/// The rule's own settings (the shared `mode` and exemptions come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The labels every workload (and its templates) must carry, each with
    /// its allowed values (`[]`: any non-empty value). Default:
    /// `opencost.io/team: []` and `opencost.io/workload-category: [training,
    /// inference, development, data-processing]`. A value given here replaces
    /// the default as a whole.
    pub required_labels: RequiredLabels,
    /// Whether the pod templates of controllers (Deployment, Job, RayCluster,
    /// ...) must carry the labels too. Default `true`: OpenCost attributes
    /// cost by the labels of the pods.
    pub require_on_pod_templates: bool,
    /// Whether to check only what becomes pod labels: a Pod's own labels and
    /// controllers' pod templates, not the controller's own metadata (nor a
    /// CronJob's or JobSet's job templates). Default `false`. Cost tools read
    /// pod labels, and this is what Kyverno's kubecost-labels policy checks,
    /// so a team migrating from it need not relabel every Deployment.
    pub pod_templates_only: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            required_labels: RequiredLabels::new([(TEAM_LABEL, &[][..]), (CATEGORY_LABEL, &OPENCOST_CATEGORIES[..])]),
            require_on_pod_templates: true,
            pod_templates_only: false,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        const KEY: &str = "requiredLabels";
        if self.required_labels.0.is_empty() {
            return Err(SettingsError::new(KEY, "must list at least one label, or the rule would check nothing"));
        }
        if self.pod_templates_only && !self.require_on_pod_templates {
            return Err(SettingsError::new(
                "podTemplatesOnly",
                "cannot be `true` with `requireOnPodTemplates: false`: controllers would not be checked at all",
            ));
        }
        // The SDK checks Kubernetes' syntax: a key no object can carry would
        // reject every workload, a value no object can carry never matches.
        self.required_labels.validate(KEY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::refused;

    #[test]
    fn defaults_are_the_opencost_labels() {
        let s = Full::<Settings>::parse("{}").unwrap();
        s.validate().unwrap();
        assert_eq!(s.rule, Settings::default());
        let json = Full::<Settings>::default().to_json();
        assert_eq!(
            json["requiredLabels"].to_string(),
            r#"{"opencost.io/team":[],"opencost.io/workload-category":["training","inference","development","data-processing"]}"#
        );
        assert_eq!(json["requireOnPodTemplates"].as_bool(), Some(true));
    }

    #[test]
    fn custom_values_replace_the_defaults() {
        let s = Full::<Settings>::parse(r#"{"requiredLabels":{"team":[],"env":["prod","dev"]},"requireOnPodTemplates":false}"#).unwrap();
        s.validate().unwrap();
        assert_eq!(s.rule.required_labels, RequiredLabels::new([("team", &[][..]), ("env", &["prod", "dev"][..])]));
        assert!(!s.rule.require_on_pod_templates);
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_key() {
        // (The SDK words the two keys as "`requiredLabels` or
        // `requireOnPodTemplates`, `mode`, ..."; only the substance is pinned.)
        let e = refused::<Settings>(r#"{"requireOnPodTemplate":true}"#);
        assert!(e.starts_with("setting `requireOnPodTemplate`: unknown setting; known settings are `requiredLabels`"), "{e}");
        assert!(e.contains("`requireOnPodTemplates`") && e.contains("`mode`"), "{e}");
        assert_eq!(
            refused::<Settings>(r#"{"requireOnPodTemplates":"yes"}"#),
            "setting `requireOnPodTemplates`: invalid type: string \"yes\", expected a boolean"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":["opencost.io/team"]}"#),
            "setting `requiredLabels`: invalid type: list, expected an object"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"team":"ml"}}"#),
            "setting `requiredLabels.team`: invalid type: string \"ml\", expected a list of allowed values, or `{regex: ...}`"
        );
    }

    #[test]
    fn contradictions_are_refused() {
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{}}"#),
            "setting `requiredLabels`: must list at least one label, or the rule would check nothing"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"opencost.io/workload-category":["training",""]}}"#),
            "setting `requiredLabels.opencost.io/workload-category`: allowed values must not be empty; use `[]` to allow any non-empty value"
        );
        assert_eq!(refused::<Settings>(r#"{"requiredLabels":{" ":[]}}"#), "setting `requiredLabels`: a label key must not be empty");
    }

    #[test]
    fn keys_and_values_follow_kubernetes_syntax() {
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"cost center":[]}}"#),
            "setting `requiredLabels`: `cost center` is not a valid label key: use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"OpenCost.io/team":[]}}"#),
            "setting `requiredLabels`: `OpenCost.io/team` is not a valid label key: the prefix `OpenCost.io` must be a lowercase DNS subdomain such as `example.com`"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"opencost.io/":[]}}"#),
            "setting `requiredLabels`: `opencost.io/` is not a valid label key: the name after `/` is empty"
        );
        assert!(refused::<Settings>(r#"{"requiredLabels":{"a/b/c":[]}}"#).contains("`a/b/c` is not a valid label key"));
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"opencost.io/workload-category":["training","data processing"]}}"#),
            "setting `requiredLabels.opencost.io/workload-category[1]`: `data processing` is not a valid label value: use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit"
        );
    }

    #[test]
    fn pod_templates_only_needs_pod_templates() {
        assert!(
            refused::<Settings>(r#"{"podTemplatesOnly":true,"requireOnPodTemplates":false}"#)
                .starts_with("setting `podTemplatesOnly`: cannot be `true`")
        );
        assert!(Full::<Settings>::parse_valid(r#"{"podTemplatesOnly":true}"#).is_ok());
    }
}
