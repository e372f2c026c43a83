//! Required labels: which label keys a workload must carry and, for some,
//! which values they may take. Used by every rule that checks labels, so
//! their settings and messages read the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::names::{label_key, name_part};
use crate::pod::Labels;
use crate::settings::SettingsError;
use crate::text::quoted;

/// Label keys mapped to their allowed values; an empty list means any
/// non-empty value. In settings:
///
/// ```yaml
/// requiredLabels:
///   team: []
///   workload-type: [training, inference, development]
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequiredLabels(pub BTreeMap<String, Vec<String>>);

impl RequiredLabels {
    /// Builds requirements from `(key, allowed values)` pairs.
    pub fn new<'a>(entries: impl IntoIterator<Item = (&'a str, &'a [&'a str])>) -> RequiredLabels {
        RequiredLabels(
            entries
                .into_iter()
                .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
                .collect(),
        )
    }

    /// Checks the requirements under their settings key: label keys and
    /// allowed values must be non-empty and follow Kubernetes' syntax (a key
    /// no object can carry would reject every workload; a value no object
    /// can carry is a typo that never matches).
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        for (label, values) in &self.0 {
            if label.trim().is_empty() {
                return Err(SettingsError::new(key, "a label key must not be empty"));
            }
            if values.iter().any(|v| v.trim().is_empty()) {
                return Err(SettingsError::new(
                    format!("{key}.{label}"),
                    "allowed values must not be empty; use `[]` to allow any non-empty value",
                ));
            }
            if let Err(why) = label_key(label) {
                return Err(SettingsError::new(key, format!("`{label}` is not a valid label key: {why}")));
            }
            for (i, value) in values.iter().enumerate() {
                if let Err(why) = name_part(value) {
                    return Err(SettingsError::new(
                        format!("{key}.{label}[{i}]"),
                        format!("`{value}` is not a valid label value: {why}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// What is wrong with `labels`, found at `path` (`metadata.labels`,
    /// `spec.template.metadata.labels`): one message for all missing labels,
    /// then one per empty or disallowed value, in key order.
    pub fn check(&self, labels: &Labels<'_>, path: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let missing: Vec<&str> = self
            .0
            .keys()
            .filter(|k| !labels.contains_key(k.as_str()))
            .map(String::as_str)
            .collect();
        match missing.as_slice() {
            [] => {}
            [one] => problems.push(format!("label `{one}` is missing from `{path}`{}", self.hint(one))),
            many => problems.push(format!("labels {} are missing from `{path}`", quoted(many))),
        }
        for (key, allowed) in &self.0 {
            let Some(value) = labels.get(key.as_str()) else { continue };
            if value.trim().is_empty() {
                problems.push(format!("label `{key}` in `{path}` is empty{}", self.hint(key)));
            } else if !allowed.is_empty() && !allowed.iter().any(|a| a == &**value) {
                problems.push(format!("label `{key}` in `{path}` is `{value}`; allowed: {}", quoted(allowed)));
            }
        }
        problems
    }

    fn hint(&self, key: &str) -> String {
        match self.0.get(key) {
            Some(allowed) if !allowed.is_empty() => format!(" (allowed: {})", quoted(allowed)),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::Str;

    fn labels(pairs: &[(&'static str, &'static str)]) -> Labels<'static> {
        pairs.iter().map(|(k, v)| (Str::from(*k), Str::from(*v))).collect()
    }

    fn reqs() -> RequiredLabels {
        RequiredLabels::new([
            ("team", &[][..]),
            ("workload-type", &["training", "inference"][..]),
        ])
    }

    #[test]
    fn all_good() {
        assert!(reqs().check(&labels(&[("team", "ml"), ("workload-type", "training")]), "metadata.labels").is_empty());
    }

    #[test]
    fn missing_are_reported_together_in_key_order() {
        assert_eq!(
            reqs().check(&labels(&[]), "metadata.labels"),
            ["labels `team`, `workload-type` are missing from `metadata.labels`"]
        );
        assert_eq!(
            reqs().check(&labels(&[("team", "ml")]), "spec.template.metadata.labels"),
            ["label `workload-type` is missing from `spec.template.metadata.labels` (allowed: `training`, `inference`)"]
        );
    }

    #[test]
    fn empty_and_disallowed_values() {
        assert_eq!(
            reqs().check(&labels(&[("team", " "), ("workload-type", "batch")]), "metadata.labels"),
            [
                "label `team` in `metadata.labels` is empty",
                "label `workload-type` in `metadata.labels` is `batch`; allowed: `training`, `inference`",
            ]
        );
    }

    #[test]
    fn settings_validation() {
        assert!(reqs().validate("requiredLabels").is_ok());
        let bad = RequiredLabels::new([("team", &[""][..])]);
        assert_eq!(bad.validate("requiredLabels").unwrap_err().to_string(), "setting `requiredLabels.team`: allowed values must not be empty; use `[]` to allow any non-empty value");
        let bad = RequiredLabels::new([("cost center", &[][..])]);
        assert!(bad.validate("requiredLabels").unwrap_err().to_string().starts_with("setting `requiredLabels`: `cost center` is not a valid label key"));
        let bad = RequiredLabels::new([("tier", &["a", "b c"][..])]);
        assert!(bad.validate("requiredLabels").unwrap_err().to_string().starts_with("setting `requiredLabels.tier[1]`: `b c` is not a valid label value"));
    }
}
