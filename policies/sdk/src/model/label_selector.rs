//! Kubernetes label selectors in settings (`metav1.LabelSelector`:
//! `matchLabels` and `matchExpressions`), matched the way the API server
//! matches them, and written in the query syntax a cluster lookup takes
//! (`team=ml,tier in (gold,silver),!legacy`).
//!
//! ```yaml
//! namespaceSelector:
//!   matchLabels: {tier: gold}
//!   matchExpressions:
//!     - {key: team, operator: In, values: [nlp, vision]}
//!     - {key: sandbox, operator: DoesNotExist}
//! ```
//!
//! Semantics (`metav1.LabelSelectorAsSelector`): every `matchLabels` entry
//! and every expression must hold; `In` needs the key with one of the
//! values, `NotIn` holds when the key is absent or has none of them,
//! `Exists` and `DoesNotExist` test the key alone. An empty selector (`{}`)
//! matches every object.
//!
//! The module stands alone (it needs only [`crate::base::names`] for label
//! syntax, [`crate::model::pod::Labels`] and [`crate::base::rule_settings::SettingsError`]):
//! a selector of namespaces by name and labels can embed a
//! [`LabelSelector`] for its label part, and match labels read from a
//! lookup with [`LabelSelector::matches_with`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::base::names::{label_key, label_value};
use crate::base::rule_settings::SettingsError;
use crate::model::pod::Labels;

/// A label selector, as Kubernetes writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels that must be present with exactly these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// How the key's value is tested.
    pub operator: SelectorOperator,
    /// The values, for `In` and `NotIn` (and none for the others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The operators of a label selector expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SelectorOperator {
    /// The key is present with one of the values.
    In,
    /// The key is absent, or present with none of the values.
    NotIn,
    /// The key is present.
    Exists,
    /// The key is absent.
    DoesNotExist,
}

impl LabelSelectorRequirement {
    /// Whether labels satisfy the requirement, `get` reading a label's value.
    fn holds<'v>(&self, get: &dyn Fn(&str) -> Option<&'v str>) -> bool {
        let value = get(&self.key);
        match self.operator {
            SelectorOperator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            SelectorOperator::NotIn => value.is_none_or(|v| self.values.iter().all(|x| x != v)),
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

impl LabelSelector {
    /// Whether the selector has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Whether an object with these labels is selected.
    pub fn matches(&self, labels: &Labels<'_>) -> bool {
        self.matches_with(&|k| labels.get(k).map(|v| &**v))
    }

    /// Whether an object is selected, `get` reading its labels.
    pub fn matches_with<'v>(&self, get: &dyn Fn(&str) -> Option<&'v str>) -> bool {
        selects(&self.match_labels, &self.match_expressions, get)
    }

    /// The selector in the query syntax of a list lookup and of `kubectl -l`
    /// (`team=ml,tier in (gold,silver),!legacy`); empty for an empty
    /// selector. Values are sorted, as the API server prints them.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = self.match_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for r in &self.match_expressions {
            let mut values = r.values.clone();
            values.sort();
            values.dedup();
            let mut s = String::new();
            let _ = match r.operator {
                SelectorOperator::In => write!(s, "{} in ({})", r.key, values.join(",")),
                SelectorOperator::NotIn => write!(s, "{} notin ({})", r.key, values.join(",")),
                SelectorOperator::Exists => write!(s, "{}", r.key),
                SelectorOperator::DoesNotExist => write!(s, "!{}", r.key),
            };
            parts.push(s);
        }
        parts.join(",")
    }

    /// Checks the selector under its settings key the way the API server
    /// validates one (see [`validate_parts`]).
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        validate_parts(key, &self.match_labels, &self.match_expressions)
    }
}

/// Whether labels (`get` reading one) satisfy `matchLabels` and every
/// `matchExpressions` requirement: Kubernetes' label selector semantics,
/// for [`LabelSelector`] and the label part of a namespace selector.
pub fn selects<'v>(
    match_labels: &BTreeMap<String, String>,
    match_expressions: &[LabelSelectorRequirement],
    get: &dyn Fn(&str) -> Option<&'v str>,
) -> bool {
    match_labels.iter().all(|(k, v)| get(k) == Some(v.as_str())) && match_expressions.iter().all(|r| r.holds(get))
}

/// Checks `matchLabels` and `matchExpressions` under settings key `key` the
/// way the API server validates a selector: label keys and values in
/// Kubernetes syntax, `In` and `NotIn` with at least one value, `Exists` and
/// `DoesNotExist` with none.
pub fn validate_parts(
    key: &str,
    match_labels: &BTreeMap<String, String>,
    match_expressions: &[LabelSelectorRequirement],
) -> Result<(), SettingsError> {
    for (k, v) in match_labels {
        let at = format!("{key}.matchLabels");
        label_key(k).map_err(|why| SettingsError::new(&at, format!("`{k}` is not a valid label key: {why}")))?;
        label_value(v).map_err(|why| SettingsError::new(format!("{at}.{k}"), format!("`{v}` is not a valid label value: {why}")))?;
    }
    for (i, r) in match_expressions.iter().enumerate() {
        let at = format!("{key}.matchExpressions[{i}]");
        label_key(&r.key).map_err(|why| SettingsError::new(format!("{at}.key"), format!("`{}` is not a valid label key: {why}", r.key)))?;
        match r.operator {
            SelectorOperator::In | SelectorOperator::NotIn if r.values.is_empty() => {
                return Err(SettingsError::new(format!("{at}.values"), format!("`{:?}` needs at least one value", r.operator)));
            }
            SelectorOperator::Exists | SelectorOperator::DoesNotExist if !r.values.is_empty() => {
                return Err(SettingsError::new(format!("{at}.values"), format!("must be empty with `{:?}`", r.operator)));
            }
            _ => {}
        }
        for (j, v) in r.values.iter().enumerate() {
            label_value(v)
                .map_err(|why| SettingsError::new(format!("{at}.values[{j}]"), format!("`{v}` is not a valid label value: {why}")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dec::Str;

    fn sel(json: &str) -> LabelSelector {
        serde_json::from_str(json).unwrap()
    }

    fn labels<'a>(pairs: &[(&'a str, &'a str)]) -> Labels<'a> {
        pairs.iter().map(|(k, v)| (Str::from(*k), Str::from(*v))).collect()
    }

    #[test]
    fn matches_like_the_api_server() {
        let s = sel(
            r#"{"matchLabels":{"tier":"gold"},"matchExpressions":[{"key":"team","operator":"In","values":["nlp","cv"]},{"key":"sandbox","operator":"DoesNotExist"}]}"#,
        );
        assert!(s.matches(&labels(&[("tier", "gold"), ("team", "nlp")])));
        assert!(!s.matches(&labels(&[("tier", "gold"), ("team", "nlp"), ("sandbox", "")])), "DoesNotExist: an empty value is present");
        assert!(!s.matches(&labels(&[("tier", "silver"), ("team", "nlp")])));
        assert!(!s.matches(&labels(&[("tier", "gold")])), "In needs the key");
        let not_in = sel(r#"{"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]}]}"#);
        assert!(not_in.matches(&labels(&[])), "NotIn holds when the key is absent");
        assert!(!not_in.matches(&labels(&[("env", "prod")])));
        let exists = sel(r#"{"matchExpressions":[{"key":"env","operator":"Exists"}]}"#);
        assert!(exists.matches(&labels(&[("env", "")])));
        assert!(sel("{}").matches(&labels(&[])), "an empty selector matches everything");
        assert!(sel("{}").is_empty());
    }

    #[test]
    fn query_syntax() {
        let s = sel(
            r#"{"matchLabels":{"a":"b","c":"d"},"matchExpressions":[{"key":"t","operator":"In","values":["y","x"]},{"key":"u","operator":"NotIn","values":["z"]},{"key":"e","operator":"Exists"},{"key":"f","operator":"DoesNotExist"}]}"#,
        );
        assert_eq!(s.to_query(), "a=b,c=d,t in (x,y),u notin (z),e,!f");
        assert_eq!(sel("{}").to_query(), "");
    }

    #[test]
    fn validation_names_the_key() {
        let err = |json: &str| sel(json).validate("overrides[0].namespaceSelector").unwrap_err().to_string();
        assert!(
            err(r#"{"matchExpressions":[{"key":"a","operator":"In"}]}"#)
                .starts_with("setting `overrides[0].namespaceSelector.matchExpressions[0].values`: `In` needs at least one value")
        );
        assert!(err(r#"{"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]}"#).contains("must be empty with `Exists`"));
        assert!(err(r#"{"matchLabels":{"a b":"c"}}"#).contains("`a b` is not a valid label key"));
        assert!(err(r#"{"matchLabels":{"a":"-c"}}"#).starts_with("setting `overrides[0].namespaceSelector.matchLabels.a`"));
        assert!(serde_json::from_str::<LabelSelector>(r#"{"matchExpressions":[{"key":"a","operator":"in","values":["x"]}]}"#).is_err());
        assert!(serde_json::from_str::<LabelSelector>(r#"{"matchLabel":{}}"#).is_err());
        assert!(sel(r#"{"matchLabels":{"example.com/tier":""}}"#).validate("s").is_ok());
    }
}
