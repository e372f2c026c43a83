//! Settings of `owner-label`.

use std::collections::BTreeMap;

use aigov_sdk::base::names::{label_key, label_value};
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The label that names the owner. Default `owner`, as
    /// the Kyverno example this rule comes from names it.
    pub owner_label: String,
    /// The annotation that keeps the owner's user name exactly as
    /// Kubernetes authenticated it. Default `aigov.dev/owner`.
    pub owner_annotation: String,
    /// Fixed labels added beside the owner (the Kyverno
    /// example adds `use-case: customer-support-llm`). Default none.
    pub labels: BTreeMap<String, String>,
    /// Whether the rule's values replace values the object already has.
    /// Default `false`: an existing value is left alone.
    pub overwrite: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { owner_label: "owner".into(), owner_annotation: "aigov.dev/owner".into(), labels: BTreeMap::new(), overwrite: false }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if let Err(why) = label_key(&self.owner_label) {
            return Err(SettingsError::new("ownerLabel", format!("`{}` is not a valid label key: {why}", self.owner_label)));
        }
        // Annotation keys follow the syntax of label keys.
        if let Err(why) = label_key(&self.owner_annotation) {
            return Err(SettingsError::new("ownerAnnotation", format!("`{}` is not a valid annotation key: {why}", self.owner_annotation)));
        }
        for (key, value) in &self.labels {
            if let Err(why) = label_key(key) {
                return Err(SettingsError::new("labels", format!("`{key}` is not a valid label key: {why}")));
            }
            if key == &self.owner_label {
                return Err(SettingsError::new(
                    format!("labels.{key}"),
                    format!(
                        "`{key}` is the owner label, which the rule sets from the requesting user; remove it here, or name another `ownerLabel`"
                    ),
                ));
            }
            if let Err(why) = label_value(value) {
                return Err(SettingsError::new(format!("labels.{key}"), format!("`{value}` is not a valid label value: {why}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.owner_label, "owner");
        let s = accepted::<Settings>(r#"{"labels":{"use-case":"customer-support-llm"},"overwrite":true}"#);
        assert_eq!(s.labels.get("use-case").map(String::as_str), Some("customer-support-llm"));
    }

    #[test]
    fn settings_that_can_never_work_are_refused() {
        assert!(
            refused::<Settings>(r#"{"ownerLabel":"Owner Name"}"#)
                .starts_with("setting `ownerLabel`: `Owner Name` is not a valid label key")
        );
        assert!(refused::<Settings>(r#"{"ownerAnnotation":"aigov.dev/"}"#).starts_with("setting `ownerAnnotation`"));
        assert!(refused::<Settings>(r#"{"labels":{"use case":"x"}}"#).starts_with("setting `labels`: `use case` is not a valid label key"));
        assert!(
            refused::<Settings>(r#"{"labels":{"use-case":"customer support"}}"#)
                .starts_with("setting `labels.use-case`: `customer support` is not a valid label value")
        );
        assert!(refused::<Settings>(r#"{"labels":{"owner":"jane"}}"#).starts_with("setting `labels.owner`: `owner` is the owner label"));
        assert!(refused::<Settings>(r#"{"ownerLabels":"x"}"#).starts_with("setting `ownerLabels`: unknown setting"));
    }
}
