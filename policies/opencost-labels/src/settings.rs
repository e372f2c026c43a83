//! Settings of `opencost-labels`.

use aigov_sdk::{RequiredLabels, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

/// OpenCost's team label.
pub const TEAM_LABEL: &str = "opencost.io/team";

/// OpenCost's workload-category label.
pub const CATEGORY_LABEL: &str = "opencost.io/workload-category";

/// The workload categories allowed by default.
pub const CATEGORIES: [&str; 4] = ["training", "inference", "development", "data-processing"];

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
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            required_labels: RequiredLabels::new([(TEAM_LABEL, &[][..]), (CATEGORY_LABEL, &CATEGORIES[..])]),
            require_on_pod_templates: true,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        const KEY: &str = "requiredLabels";
        if self.required_labels.0.is_empty() {
            return Err(SettingsError::new(KEY, "must list at least one label, or the rule would check nothing"));
        }
        self.required_labels.validate(KEY)?;
        // A key or value Kubernetes refuses can never be on an object: with
        // such a key every workload would be rejected, and such a value is a
        // typo that can never match.
        for (label, allowed) in &self.required_labels.0 {
            if let Err(why) = label_key(label) {
                return Err(SettingsError::new(KEY, format!("`{label}` is not a valid label key: {why}")));
            }
            for (i, value) in allowed.iter().enumerate() {
                if let Err(why) = name_part(value) {
                    return Err(SettingsError::new(
                        format!("{KEY}.{label}[{i}]"),
                        format!("`{value}` is not a valid label value: {why}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Checks a label key by Kubernetes' rules: an optional DNS-subdomain prefix
/// and `/`, then a name of at most 63 characters.
fn label_key(key: &str) -> Result<(), String> {
    match key.split_once('/') {
        None => name_part(key),
        Some((prefix, name)) => {
            dns_subdomain(prefix)?;
            if name.is_empty() {
                return Err("the name after `/` is empty".into());
            }
            name_part(name)
        }
    }
}

/// A label name or value: at most 63 characters, letters, digits, `-`, `_`
/// and `.`, beginning and ending with a letter or digit.
fn name_part(s: &str) -> Result<(), String> {
    const RULE: &str = "use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit";
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let ok = s.len() <= 63
        && ends_ok(s.chars().next())
        && ends_ok(s.chars().next_back())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok { Ok(()) } else { Err(RULE.into()) }
}

/// A key prefix: a lowercase DNS subdomain (`opencost.io`) of at most 253
/// characters.
fn dns_subdomain(s: &str) -> Result<(), String> {
    let part_ok = |p: &str| {
        let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        alnum(p.chars().next())
            && alnum(p.chars().next_back())
            && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if s.len() <= 253 && s.split('.').all(part_ok) {
        Ok(())
    } else {
        Err(format!(
            "the prefix `{s}` must be a lowercase DNS subdomain such as `opencost.io`"
        ))
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
        let e = err(r#"{"requireOnPodTemplate":true}"#);
        assert!(e.starts_with("setting `requireOnPodTemplate`: unknown setting; known settings are `requiredLabels`"), "{e}");
        assert!(e.contains("`requireOnPodTemplates`") && e.contains("`mode`"), "{e}");
        assert_eq!(
            err(r#"{"requireOnPodTemplates":"yes"}"#),
            "setting `requireOnPodTemplates`: invalid type: string \"yes\", expected a boolean"
        );
        assert_eq!(
            err(r#"{"requiredLabels":["opencost.io/team"]}"#),
            "setting `requiredLabels`: invalid type: sequence, expected a map"
        );
        assert_eq!(
            err(r#"{"requiredLabels":{"team":"ml"}}"#),
            "setting `requiredLabels.team`: invalid type: string \"ml\", expected a list"
        );
    }

    #[test]
    fn contradictions_are_refused() {
        assert_eq!(
            err(r#"{"requiredLabels":{}}"#),
            "setting `requiredLabels`: must list at least one label, or the rule would check nothing"
        );
        assert_eq!(
            err(r#"{"requiredLabels":{"opencost.io/workload-category":["training",""]}}"#),
            "setting `requiredLabels.opencost.io/workload-category`: allowed values must not be empty; use `[]` to allow any non-empty value"
        );
        assert_eq!(err(r#"{"requiredLabels":{" ":[]}}"#), "setting `requiredLabels`: a label key must not be empty");
    }

    #[test]
    fn keys_and_values_follow_kubernetes_syntax() {
        assert_eq!(
            err(r#"{"requiredLabels":{"cost center":[]}}"#),
            "setting `requiredLabels`: `cost center` is not a valid label key: use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit"
        );
        assert_eq!(
            err(r#"{"requiredLabels":{"OpenCost.io/team":[]}}"#),
            "setting `requiredLabels`: `OpenCost.io/team` is not a valid label key: the prefix `OpenCost.io` must be a lowercase DNS subdomain such as `opencost.io`"
        );
        assert_eq!(
            err(r#"{"requiredLabels":{"opencost.io/":[]}}"#),
            "setting `requiredLabels`: `opencost.io/` is not a valid label key: the name after `/` is empty"
        );
        assert!(err(r#"{"requiredLabels":{"a/b/c":[]}}"#).contains("`a/b/c` is not a valid label key"));
        assert_eq!(
            err(r#"{"requiredLabels":{"opencost.io/workload-category":["training","data processing"]}}"#),
            "setting `requiredLabels.opencost.io/workload-category[1]`: `data processing` is not a valid label value: use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit"
        );
    }

    #[test]
    fn label_syntax() {
        for good in ["team", "opencost.io/team", "a", "A_b.c-1", "kubernetes.io/x", "a-b.c-d/e"] {
            assert!(label_key(good).is_ok(), "{good}");
        }
        for bad in ["-team", "team-", "te am", "/team", "Foo.io/team", "a..b/x", "a/b/c", "ünï"] {
            assert!(label_key(bad).is_err(), "{bad}");
        }
        assert!(name_part(&"a".repeat(63)).is_ok());
        assert!(name_part(&"a".repeat(64)).is_err());
        assert!(dns_subdomain(&format!("{}.io", "a".repeat(250))).is_ok(), "253 characters");
        assert!(dns_subdomain(&format!("{}.io", "a".repeat(251))).is_err());
    }
}
