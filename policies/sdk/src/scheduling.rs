//! Where pods can land, read the way the scheduler reads it: taints and
//! tolerations, node selectors and required node affinity.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::names::{label_key, label_value};
use crate::pod::{NodeSelectorTerm, PodSpec, SelectorRequirement, Toleration};
use crate::settings::SettingsError;

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint<'t> {
    /// Key.
    pub key: &'t str,
    /// Value (empty when the taint has none).
    pub value: &'t str,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: &'t str,
}

/// A node taint as a setting (`{key, value?, effect}`, as `kubectl taint`
/// writes `key[=value]:effect`; `effect` defaults to `NoSchedule`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaintSetting {
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

impl TaintSetting {
    /// A `NoSchedule` taint with no value.
    pub fn no_schedule(key: &str) -> TaintSetting {
        TaintSetting { key: key.into(), value: None, effect: no_schedule() }
    }

    /// The taint, for [`tolerates`].
    pub fn taint(&self) -> Taint<'_> {
        Taint { key: &self.key, value: self.value.as_deref().unwrap_or(""), effect: &self.effect }
    }

    /// Checks the setting under `key`: a key and value Kubernetes accepts,
    /// and a known effect.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        if let Err(why) = label_key(&self.key) {
            return Err(SettingsError::new(format!("{key}.key"), format!("`{}` is not a valid taint key: {why}", self.key)));
        }
        if let Some(v) = &self.value
            && let Err(why) = label_value(v)
        {
            return Err(SettingsError::new(format!("{key}.value"), format!("`{v}` is not a valid taint value: {why}")));
        }
        if !matches!(self.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(SettingsError::new(
                format!("{key}.effect"),
                format!("`{}` is not one of `NoSchedule`, `PreferNoSchedule`, `NoExecute`", self.effect),
            ));
        }
        Ok(())
    }
}

/// `key=value:effect`, or `key:effect`, as `kubectl describe node` shows it.
impl std::fmt::Display for TaintSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={v}:{}", self.key, self.effect),
            None => write!(f, "{}:{}", self.key, self.effect),
        }
    }
}

/// Whether a toleration tolerates a taint, exactly as Kubernetes'
/// `Toleration.ToleratesTaint`: an empty effect matches every effect; an
/// empty key matches every key (the API server allows it only with
/// `Exists`); `Exists` matches any value, `Equal` (or no operator) only the
/// same value.
pub fn tolerates(t: &Toleration<'_>, taint: &Taint<'_>) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value,
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of the pod's tolerations tolerates the taint.
pub fn pod_tolerates(spec: &PodSpec<'_>, taint: &Taint<'_>) -> bool {
    spec.tolerations.iter().any(|t| tolerates(t, taint))
}

/// What a pod's node selection (its `nodeSelector` and required node
/// affinity) demands of one node label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelDemand {
    /// Nodes without any particular value qualify: some way of scheduling
    /// the pod does not constrain the label to a set of values.
    Open,
    /// Every node the pod can land on has the label with one of these
    /// values.
    OneOf(BTreeSet<String>),
}

impl LabelDemand {
    /// The values, if the label is pinned.
    pub fn values(&self) -> Option<&BTreeSet<String>> {
        match self {
            LabelDemand::Open => None,
            LabelDemand::OneOf(v) => Some(v),
        }
    }
}

/// What one requirement says of `key`: `Some(values)` when it confines the
/// label to those values.
fn requirement_values(r: &SelectorRequirement<'_>, key: &str) -> Option<BTreeSet<String>> {
    if &*r.key != key {
        return None;
    }
    match &*r.operator {
        "In" => Some(r.values.iter().map(|v| v.to_string()).collect()),
        _ => None,
    }
}

/// What one term (its requirements ANDed) confines `key` to.
fn term_values(term: &NodeSelectorTerm<'_>, key: &str) -> Option<BTreeSet<String>> {
    let mut out: Option<BTreeSet<String>> = None;
    for r in &term.match_expressions {
        if let Some(v) = requirement_values(r, key) {
            out = Some(match out {
                None => v,
                Some(prev) => prev.intersection(&v).cloned().collect(),
            });
        }
    }
    out
}

/// What the pod's node selection demands of node label `key`: the
/// `nodeSelector` value, intersected with the union over the required
/// affinity's terms (which are ORed) of what each term confines it to.
pub fn label_demand(spec: &PodSpec<'_>, key: &str) -> LabelDemand {
    let from_selector: Option<BTreeSet<String>> = spec.node_selector.get(key).map(|v| [v.to_string()].into_iter().collect());
    let from_affinity: Option<BTreeSet<String>> = match spec.required_node_affinity() {
        Some(ns) if !ns.node_selector_terms.is_empty() => {
            let mut union = BTreeSet::new();
            let mut open = false;
            for term in &ns.node_selector_terms {
                match term_values(term, key) {
                    Some(v) => union.extend(v),
                    None => open = true,
                }
            }
            (!open).then_some(union)
        }
        _ => None,
    };
    match (from_selector, from_affinity) {
        (None, None) => LabelDemand::Open,
        (Some(v), None) | (None, Some(v)) => LabelDemand::OneOf(v),
        (Some(a), Some(b)) => LabelDemand::OneOf(a.intersection(&b).cloned().collect()),
    }
}

/// The field of the pod spec that pins node label `key`, as path keys
/// below the spec (`spec_path.keys(field)`), to name in messages:
/// `nodeSelector` when it holds the key, else the required node affinity
/// when one of its expressions names the key; `None` otherwise.
pub fn demand_field(spec: &PodSpec<'_>, key: &str) -> Option<&'static [&'static str]> {
    if spec.node_selector.contains_key(key) {
        return Some(NODE_SELECTOR);
    }
    let names = |t: &NodeSelectorTerm<'_>| t.match_expressions.iter().any(|r| &*r.key == key);
    spec.required_node_affinity()
        .is_some_and(|ns| ns.node_selector_terms.iter().any(names))
        .then_some(REQUIRED_AFFINITY)
}

/// The node selector's path inside a pod spec.
pub const NODE_SELECTOR: &[&str] = &["nodeSelector"];

/// The required node affinity's path inside a pod spec.
pub const REQUIRED_AFFINITY: &[&str] = &["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"];

/// The preferred node affinity's path inside a pod spec.
pub const PREFERRED_AFFINITY: &[&str] = &["affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"];

/// Whether the pod's node selection mentions node label `key` at all (in
/// `nodeSelector`, or any required or preferred affinity expression) with a
/// positive operator (`In`, `Exists`, `Gt`, `Lt`): the pod is aimed at nodes
/// that carry it.
pub fn targets_label(spec: &PodSpec<'_>, key: &str, required_only: bool) -> bool {
    if spec.node_selector.contains_key(key) {
        return true;
    }
    let positive = |r: &SelectorRequirement<'_>| &*r.key == key && matches!(&*r.operator, "In" | "Exists" | "Gt" | "Lt");
    let required = spec
        .required_node_affinity()
        .is_some_and(|ns| ns.node_selector_terms.iter().any(|t| t.match_expressions.iter().any(positive)));
    let preferred = !required_only
        && spec
            .preferred_node_affinity()
            .iter()
            .any(|p| p.preference.match_expressions.iter().any(positive));
    required || preferred
}

/// Whether a node with exactly `labels` could host the pod, as far as its
/// `nodeSelector` and required node affinity say (match fields are not
/// evaluated and count as satisfied).
pub fn node_fits<'l>(spec: &PodSpec<'_>, labels: &dyn Fn(&str) -> Option<&'l str>) -> bool {
    let selector_ok = spec.node_selector.iter().all(|(k, v)| labels(k) == Some(&**v));
    let term_ok = |t: &NodeSelectorTerm<'_>| {
        t.match_expressions.iter().all(|r| {
            let have = labels(&r.key);
            match &*r.operator {
                "In" => have.is_some_and(|h| r.values.iter().any(|v| &**v == h)),
                "NotIn" => !have.is_some_and(|h| r.values.iter().any(|v| &**v == h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                "Gt" | "Lt" => {
                    let (Some(h), Some(v)) = (have.and_then(|h| h.parse::<i64>().ok()), r.values.first().and_then(|v| v.parse::<i64>().ok())) else {
                        return false;
                    };
                    if &*r.operator == "Gt" { h > v } else { h < v }
                }
                _ => false,
            }
        })
    };
    let affinity_ok = match spec.required_node_affinity() {
        Some(ns) if !ns.node_selector_terms.is_empty() => ns.node_selector_terms.iter().any(term_ok),
        _ => true,
    };
    selector_ok && affinity_ok
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::request::Str;

    fn tol(key: Option<&'static str>, op: Option<&'static str>, value: Option<&'static str>, effect: Option<&'static str>) -> Toleration<'static> {
        Toleration { key: key.map(Str::from), operator: op.map(Str::from), value: value.map(Str::from), effect: effect.map(Str::from) }
    }

    const GPU: Taint<'static> = Taint { key: "nvidia.com/gpu", value: "", effect: "NoSchedule" };

    #[test]
    fn tolerations_match_as_the_scheduler_matches_them() {
        assert!(tolerates(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, Some("NoSchedule")), &GPU), "what ExtendedResourceToleration adds");
        assert!(tolerates(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, None), &GPU), "no effect: every effect");
        assert!(!tolerates(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, Some("NoExecute")), &GPU));
        assert!(tolerates(&tol(None, Some("Exists"), None, None), &GPU), "tolerate everything");
        assert!(tolerates(&tol(Some("nvidia.com/gpu"), None, None, None), &GPU), "Equal with the taint's empty value");
        assert!(!tolerates(&tol(Some("nvidia.com/gpu"), Some("Equal"), Some("true"), None), &GPU));
        let valued = Taint { key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" };
        assert!(tolerates(&tol(Some("nvidia.com/gpu"), Some("Equal"), Some("present"), None), &valued));
        assert!(!tolerates(&tol(Some("other"), Some("Exists"), None, None), &GPU));
    }

    #[test]
    fn taint_settings() {
        let t: TaintSetting = serde_json::from_str(r#"{"key":"nvidia.com/gpu"}"#).unwrap();
        assert_eq!(t, TaintSetting::no_schedule("nvidia.com/gpu"));
        assert_eq!(t.to_string(), "nvidia.com/gpu:NoSchedule");
        assert!(tolerates(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, None), &t.taint()));
        let t: TaintSetting = serde_json::from_str(r#"{"key":"tenant","value":"a","effect":"NoExecute"}"#).unwrap();
        assert_eq!(t.to_string(), "tenant=a:NoExecute");
        assert!(t.validate("k").is_ok());
        let bad: TaintSetting = serde_json::from_str(r#"{"key":"a b"}"#).unwrap();
        assert!(bad.validate("gpuTaints[0]").unwrap_err().to_string().starts_with("setting `gpuTaints[0].key`"));
        let bad: TaintSetting = serde_json::from_str(r#"{"key":"a","effect":"Never"}"#).unwrap();
        assert!(bad.validate("t").unwrap_err().to_string().starts_with("setting `t.effect`"));
        assert!(serde_json::from_str::<TaintSetting>(r#"{"key":"a","operator":"Exists"}"#).is_err());
    }

    fn spec(json: &str) -> PodSpec<'_> {
        crate::dec::Dec::document(json).unwrap()
    }

    #[test]
    fn label_demands() {
        let s = spec(r#"{"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-A10"}}"#);
        assert_eq!(label_demand(&s, "nvidia.com/gpu.product").values().unwrap().len(), 1);
        assert_eq!(label_demand(&s, "other"), LabelDemand::Open);
        let s = spec(r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"p","operator":"In","values":["a","b"]}]},
            {"matchExpressions":[{"key":"p","operator":"In","values":["c"]}]}]}}}}"#);
        assert_eq!(label_demand(&s, "p").values().unwrap().iter().cloned().collect::<Vec<_>>(), ["a", "b", "c"]);
        let s = spec(r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"p","operator":"In","values":["a"]}]},
            {"matchExpressions":[{"key":"zone","operator":"In","values":["x"]}]}]}}}}"#);
        assert_eq!(label_demand(&s, "p"), LabelDemand::Open, "the second term leaves it open");
    }

    #[test]
    fn fits() {
        let s = spec(r#"{"nodeSelector":{"pool":"a"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"gpu","operator":"NotIn","values":["true"]}]}]}}}}"#);
        let gpu_node = |k: &str| match k { "pool" => Some("a"), "gpu" => Some("true"), _ => None };
        let cpu_node = |k: &str| match k { "pool" => Some("a"), _ => None };
        assert!(!node_fits(&s, &gpu_node));
        assert!(node_fits(&s, &cpu_node));
        assert!(targets_label(&s, "pool", true));
        assert_eq!(demand_field(&s, "pool"), Some(NODE_SELECTOR));
        assert_eq!(demand_field(&s, "gpu"), Some(REQUIRED_AFFINITY));
        assert_eq!(demand_field(&s, "zone"), None);
        assert!(!targets_label(&s, "gpu", false), "NotIn does not aim at the label");
    }
}
