//! Where pods can land, read the way the scheduler reads it: taints and
//! tolerations, node selectors and required node affinity.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::base::names::{label_key, label_value};
use crate::base::rule_settings::SettingsError;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{NodeSelectorTerm, PodSpec, SelectorRequirement, Toleration};
use crate::model::request::Request;
use crate::model::workload::{PodTemplate, Role};

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

/// Why a toleration that names the taint's key does not tolerate it, each
/// test of [`tolerates`] it fails in the scheduler's order (effect, then
/// operator and value): for a message that says which toleration almost
/// matches and what to change. Empty when it tolerates the taint, or names
/// another key or none (an empty key is `Exists` on every key).
pub fn why_not_tolerated(t: &Toleration<'_>, taint: &Taint<'_>) -> Vec<String> {
    if t.key.as_deref() != Some(taint.key) || tolerates(t, taint) {
        return Vec::new();
    }
    let mut why = Vec::new();
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        why.push(format!(
            "its `effect: {effect}` tolerates only `{effect}` taints, and this one is `{}` (without `effect` it tolerates every effect)",
            taint.effect
        ));
    }
    let value = t.value.as_deref().unwrap_or("");
    let operator = match t.operator.as_deref() {
        None | Some("") => "no `operator` (so `Equal`)",
        Some("Equal") => "`operator: Equal`",
        Some("Exists") => return why,
        Some(other) => {
            why.push(format!("its `operator: {other}` is neither `Equal` nor `Exists`, so it tolerates nothing"));
            return why;
        }
    };
    match (value, taint.value) {
        (v, tv) if v == tv => {}
        ("", tv) => why.push(format!("with {operator} and no `value` it tolerates only a taint without a value, and this one's is `{tv}`")),
        (v, "") => why.push(format!("with {operator} it tolerates only the value `{v}`, and this taint has no value")),
        (v, tv) => why.push(format!("with {operator} it tolerates only the value `{v}`, and this taint's is `{tv}`")),
    }
    why
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

/// What one term (its requirements ANDed, as the scheduler reads them)
/// confines node label `key` to: `Some(values)` when every node the term
/// matches has the label with one of `values` (`Some(∅)`: no node with the
/// label at all), `None` when nodes with other values (or without the
/// label) match too.
///
/// - `In` confines the label to its values; several `In` on the key
///   intersect;
/// - `NotIn` removes its values from what `In` allows (alone it leaves the
///   label open: every other value, and nodes without it, match);
/// - `DoesNotExist` leaves no value: nodes without the label only;
/// - `Gt` and `Lt` keep the values `In` allows that, read as integers,
///   are above or below theirs, as the scheduler compares them (a value
///   that is not an integer matches neither); alone they leave the label
///   open, since any number of values satisfy them;
/// - `Exists` says nothing about the value.
///
/// A term with no requirements at all matches no node (Kubernetes: "a null
/// or empty node selector term matches no objects"), so it confines the
/// label to nothing.
pub fn term_values(term: &NodeSelectorTerm<'_>, key: &str) -> Option<BTreeSet<String>> {
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        return Some(BTreeSet::new());
    }
    let on_key = || term.match_expressions.iter().filter(|r| &*r.key == key);
    let mut out: Option<BTreeSet<String>> = None;
    for r in on_key().filter(|r| &*r.operator == "In") {
        let these: BTreeSet<String> = r.values.iter().map(|v| v.to_string()).collect();
        out = Some(match out {
            None => these,
            Some(prev) => prev.intersection(&these).cloned().collect(),
        });
    }
    if on_key().any(|r| &*r.operator == "DoesNotExist") {
        return Some(BTreeSet::new());
    }
    let mut values = out?;
    for r in on_key() {
        match &*r.operator {
            "NotIn" => values.retain(|v| !r.values.iter().any(|x| &**x == v)),
            op @ ("Gt" | "Lt") => {
                let bound = r.values.first().and_then(|b| b.parse::<i64>().ok());
                values.retain(|v| match (v.parse::<i64>().ok(), bound) {
                    (Some(v), Some(b)) => {
                        if op == "Gt" {
                            v > b
                        } else {
                            v < b
                        }
                    }
                    _ => false,
                });
            }
            _ => {}
        }
    }
    Some(values)
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
    spec.required_node_affinity().is_some_and(|ns| ns.node_selector_terms.iter().any(names)).then_some(REQUIRED_AFFINITY)
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
    let required =
        spec.required_node_affinity().is_some_and(|ns| ns.node_selector_terms.iter().any(|t| t.match_expressions.iter().any(positive)));
    let preferred = !required_only && spec.preferred_node_affinity().iter().any(|p| p.preference.match_expressions.iter().any(positive));
    required || preferred
}

/// Whether a node with exactly `labels` could host the pod, as far as its
/// `nodeSelector` and required node affinity say (match fields are not
/// evaluated and count as satisfied).
pub fn node_fits<'l>(spec: &PodSpec<'_>, labels: &dyn Fn(&str) -> Option<&'l str>) -> bool {
    let selector_ok = spec.node_selector.iter().all(|(k, v)| labels(k) == Some(&**v));
    let term_ok = |t: &NodeSelectorTerm<'_>| {
        // An empty term matches no node.
        (!t.match_expressions.is_empty() || !t.match_fields.is_empty())
            && t.match_expressions.iter().all(|r| {
                let have = labels(&r.key);
                match &*r.operator {
                    "In" => have.is_some_and(|h| r.values.iter().any(|v| &**v == h)),
                    "NotIn" => !have.is_some_and(|h| r.values.iter().any(|v| &**v == h)),
                    "Exists" => have.is_some(),
                    "DoesNotExist" => have.is_none(),
                    "Gt" | "Lt" => {
                        let (Some(h), Some(v)) =
                            (have.and_then(|h| h.parse::<i64>().ok()), r.values.first().and_then(|v| v.parse::<i64>().ok()))
                        else {
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

/// Whether the request is the DaemonSet controller creating (or updating)
/// one of its pods: a Pod whose trusted controller
/// ([`Request::controller`]: the `controller: true` owner, in a request
/// from the identity `trustedControllers` lists for it) is a `DaemonSet`
/// of `apps`. A user's Pod that names a DaemonSet as its owner is not.
pub fn made_by_daemon_set(req: &Request<'_>) -> bool {
    req.workload().is_some_and(|w| w.kind == WorkloadKind::Pod)
        && req.controller().is_some_and(|o| &*o.kind == "DaemonSet" && o.api_version.split_once('/').is_some_and(|(g, _)| g == "apps"))
}

/// The node a DaemonSet's pod was made for, when the DaemonSet controller
/// chose it: the request is the controller's ([`made_by_daemon_set`]) and
/// the pod's required node affinity is the one term the controller writes
/// in place of the DaemonSet's own (`ReplaceDaemonSetPodNodeNameNodeAffinity`,
/// `pkg/controller/daemon/util`): `matchFields: [{key: metadata.name,
/// operator: In, values: [<node>]}]`.
///
/// The controller picks each node by matching it against the DaemonSet
/// template's `nodeSelector` and required node affinity
/// (`NodeShouldRunDaemonPod`), which a rule judged when the DaemonSet was
/// admitted; the pod no longer carries that affinity. So what a rule asks
/// of the pod's required affinity ("selects its pool", "selects a GPU
/// product", "selects GPU nodes") holds as it held for the DaemonSet,
/// while the pod's `nodeSelector` (kept), preferred terms (kept) and
/// tolerations (less the controller's, [`authored_tolerations`]) are still
/// judged. `None` for any other pod, a user's Pod that writes the same
/// term included.
pub fn node_chosen_by_daemon_set<'t>(req: &Request<'_>, t: &'t PodTemplate<'_>) -> Option<&'t str> {
    if t.role != Role::Pod || !made_by_daemon_set(req) {
        return None;
    }
    let [term] = t.spec.required_node_affinity()?.node_selector_terms.as_slice() else { return None };
    let [field] = term.match_fields.as_slice() else { return None };
    if !term.match_expressions.is_empty() || &*field.key != "metadata.name" || &*field.operator != "In" {
        return None;
    }
    match field.values.as_slice() {
        [node] => Some(&**node),
        _ => None,
    }
}

/// The tolerations the DaemonSet controller adds to every pod it creates
/// (`AddOrUpdateDaemonPodTolerations`, `pkg/controller/daemon/util`), each
/// `operator: Exists` with no value: the key and effect, and whether it is
/// added only under `hostNetwork`.
pub const DAEMON_TOLERATIONS: [(&str, &str, bool); 7] = [
    ("node.kubernetes.io/not-ready", "NoExecute", false),
    ("node.kubernetes.io/unreachable", "NoExecute", false),
    ("node.kubernetes.io/disk-pressure", "NoSchedule", false),
    ("node.kubernetes.io/memory-pressure", "NoSchedule", false),
    ("node.kubernetes.io/pid-pressure", "NoSchedule", false),
    ("node.kubernetes.io/unschedulable", "NoSchedule", false),
    ("node.kubernetes.io/network-unavailable", "NoSchedule", true),
];

/// Whether `tol` is one the DaemonSet controller adds to a pod (with
/// `host_network` its `spec.hostNetwork`). The controller replaces a
/// toleration of the template equal to its own in key, operator, value
/// and effect, so the pod holds exactly its form.
pub fn is_daemon_toleration(tol: &Toleration<'_>, host_network: bool) -> bool {
    let (key, effect) = (tol.key.as_deref().unwrap_or(""), tol.effect.as_deref().unwrap_or(""));
    tol.operator.as_deref() == Some("Exists")
        && tol.value.as_deref().unwrap_or("").is_empty()
        && DAEMON_TOLERATIONS.iter().any(|(k, e, only_host)| (host_network || !only_host) && key == *k && effect == *e)
}

/// The tolerations of template `t` its author wrote, with their index in
/// `tolerations`: all of them, but in a pod the DaemonSet controller made
/// ([`made_by_daemon_set`]), those the controller adds to every daemon pod
/// ([`DAEMON_TOLERATIONS`]): the DaemonSet was judged without them, and
/// they must not read as its author tolerating a node taint.
pub fn authored_tolerations<'t, 'a>(req: &Request<'_>, t: &'t PodTemplate<'a>) -> impl Iterator<Item = (usize, &'t Toleration<'a>)> {
    let daemon = t.role == Role::Pod && made_by_daemon_set(req);
    let host_network = t.spec.host_network == Some(true);
    t.spec.tolerations.iter().enumerate().filter(move |(_, tol)| !(daemon && is_daemon_toleration(tol, host_network)))
}

/// Whether the author of template `t` tolerates the taint
/// ([`pod_tolerates`] over [`authored_tolerations`]).
pub fn author_tolerates(req: &Request<'_>, t: &PodTemplate<'_>, taint: &Taint<'_>) -> bool {
    authored_tolerations(req, t).any(|(_, tol)| tolerates(tol, taint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dec::Str;

    fn tol(
        key: Option<&'static str>,
        op: Option<&'static str>,
        value: Option<&'static str>,
        effect: Option<&'static str>,
    ) -> Toleration<'static> {
        Toleration { key: key.map(Str::from), operator: op.map(Str::from), value: value.map(Str::from), effect: effect.map(Str::from) }
    }

    const GPU: Taint<'static> = Taint { key: "nvidia.com/gpu", value: "", effect: "NoSchedule" };

    #[test]
    fn a_near_miss_says_each_test_it_fails() {
        let present = Taint { key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" };
        assert_eq!(
            why_not_tolerated(&tol(Some("nvidia.com/gpu"), Some("Equal"), Some("true"), None), &present),
            ["with `operator: Equal` it tolerates only the value `true`, and this taint's is `present`"],
            "GKE's taint, a toleration written for another cluster"
        );
        assert_eq!(
            why_not_tolerated(&tol(Some("nvidia.com/gpu"), None, None, Some("NoExecute")), &present),
            [
                "its `effect: NoExecute` tolerates only `NoExecute` taints, and this one is `NoSchedule` (without `effect` it tolerates every effect)",
                "with no `operator` (so `Equal`) and no `value` it tolerates only a taint without a value, and this one's is `present`",
            ]
        );
        assert_eq!(
            why_not_tolerated(&tol(Some("nvidia.com/gpu"), Some("Equal"), Some("true"), Some("NoSchedule")), &GPU),
            ["with `operator: Equal` it tolerates only the value `true`, and this taint has no value"]
        );
        assert_eq!(
            why_not_tolerated(&tol(Some("nvidia.com/gpu"), Some("In"), None, None), &GPU),
            ["its `operator: In` is neither `Equal` nor `Exists`, so it tolerates nothing"]
        );
        assert!(why_not_tolerated(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, None), &present).is_empty(), "it tolerates");
        assert!(why_not_tolerated(&tol(Some("other"), Some("Equal"), Some("true"), None), &present).is_empty(), "another key");
        assert!(why_not_tolerated(&tol(None, Some("Exists"), None, Some("NoExecute")), &present).is_empty(), "no key");
    }

    #[test]
    fn tolerations_match_as_the_scheduler_matches_them() {
        assert!(
            tolerates(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, Some("NoSchedule")), &GPU),
            "what ExtendedResourceToleration adds"
        );
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
        crate::decode::dec::Dec::document(json).unwrap()
    }

    #[test]
    fn label_demands() {
        let s = spec(r#"{"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-A10"}}"#);
        assert_eq!(label_demand(&s, "nvidia.com/gpu.product").values().unwrap().len(), 1);
        assert_eq!(label_demand(&s, "other"), LabelDemand::Open);
        let s = spec(
            r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"p","operator":"In","values":["a","b"]}]},
            {"matchExpressions":[{"key":"p","operator":"In","values":["c"]}]}]}}}}"#,
        );
        assert_eq!(label_demand(&s, "p").values().unwrap().iter().cloned().collect::<Vec<_>>(), ["a", "b", "c"]);
        let s = spec(
            r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"p","operator":"In","values":["a"]}]},
            {"matchExpressions":[{"key":"zone","operator":"In","values":["x"]}]}]}}}}"#,
        );
        assert_eq!(label_demand(&s, "p"), LabelDemand::Open, "the second term leaves it open");
    }

    fn affinity(terms: &str) -> String {
        format!(
            r#"{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":[{terms}]}}}}}}}}"#
        )
    }

    fn demand(terms: &str, key: &str) -> Option<Vec<String>> {
        let json = affinity(terms);
        label_demand(&spec(&json), key).values().map(|v| v.iter().cloned().collect())
    }

    #[test]
    fn the_requirements_of_one_term_are_anded() {
        let p = "nvidia.com/gpu.product";
        let in_notin = r#"{"matchExpressions":[{"key":"nvidia.com/gpu.product","operator":"In","values":["T4","H100"]},
            {"key":"nvidia.com/gpu.product","operator":"NotIn","values":["H100"]}]}"#;
        assert_eq!(demand(in_notin, p), Some(vec!["T4".to_string()]), "NotIn narrows In");
        let notin_first =
            r#"{"matchExpressions":[{"key":"p","operator":"NotIn","values":["b"]},{"key":"p","operator":"In","values":["a","b"]}]}"#;
        assert_eq!(demand(notin_first, "p"), Some(vec!["a".to_string()]), "in any order");
        let notin_alone = r#"{"matchExpressions":[{"key":"p","operator":"NotIn","values":["b"]}]}"#;
        assert_eq!(demand(notin_alone, "p"), None, "every other value, and nodes without the label");
        let gone = r#"{"matchExpressions":[{"key":"p","operator":"DoesNotExist"}]}"#;
        assert_eq!(demand(gone, "p"), Some(vec![]), "nodes without the label only");
        let gone_in = r#"{"matchExpressions":[{"key":"p","operator":"In","values":["a"]},{"key":"p","operator":"DoesNotExist"}]}"#;
        assert_eq!(demand(gone_in, "p"), Some(vec![]), "a term no node satisfies");
        let numbers = r#"{"matchExpressions":[{"key":"mem","operator":"In","values":["16","40","80","x"]},{"key":"mem","operator":"Gt","values":["16"]},{"key":"mem","operator":"Lt","values":["80"]}]}"#;
        assert_eq!(demand(numbers, "mem"), Some(vec!["40".to_string()]), "Gt and Lt compare integers, as the scheduler does");
        let gt_alone = r#"{"matchExpressions":[{"key":"mem","operator":"Gt","values":["16"]}]}"#;
        assert_eq!(demand(gt_alone, "mem"), None);
        let exists = r#"{"matchExpressions":[{"key":"p","operator":"In","values":["a"]},{"key":"p","operator":"Exists"}]}"#;
        assert_eq!(demand(exists, "p"), Some(vec!["a".to_string()]));
        assert_eq!(demand(r#"{}"#, "p"), Some(vec![]), "an empty term matches no node");
        assert_eq!(demand(&format!("{notin_alone},{in_notin}"), "p"), None, "terms are ORed: one open term leaves the label open");
        assert_eq!(
            demand(&format!(r#"{in_notin},{{"matchExpressions":[{{"key":"{p}","operator":"In","values":["A10"]}}]}}"#), p),
            Some(vec!["A10".to_string(), "T4".to_string()])
        );
        // The node selector and the affinity both hold.
        let both = format!(r#"{{"nodeSelector":{{"p":"a"}},{}"#, &affinity(notin_first)[1..]);
        assert_eq!(label_demand(&spec(&both), "p").values().map(|v| v.len()), Some(1));
        let none = format!(r#"{{"nodeSelector":{{"p":"b"}},{}"#, &affinity(notin_first)[1..]);
        assert_eq!(label_demand(&spec(&none), "p"), LabelDemand::OneOf(BTreeSet::new()), "no node satisfies both");
    }

    /// A Pod created by `user`, owned by `owner` (`apiVersion`, `kind`).
    fn pod_request(user: &str, owner: (&str, &str), spec: &str) -> String {
        format!(
            r#"{{"uid":"1","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"ml","operation":"CREATE","userInfo":{{"username":"{user}"}},"object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"agent-x7k2p","ownerReferences":[{{"apiVersion":"{}","kind":"{}","name":"agent","uid":"u","controller":true}}]}},"spec":{spec}}}}}"#,
            owner.0, owner.1
        )
    }

    const DS_CONTROLLER: &str = "system:serviceaccount:kube-system:daemon-set-controller";
    const DS: (&str, &str) = ("apps/v1", "DaemonSet");
    const NODE_TERM: &str = r#""affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}}}"#;

    fn chosen(user: &str, owner: (&str, &str), spec: &str) -> Option<String> {
        let text = pod_request(user, owner, spec);
        let req = crate::model::request::Request::parse(&text).unwrap();
        let t = req.workload().unwrap().templates().next().unwrap();
        node_chosen_by_daemon_set(&req, t).map(str::to_string)
    }

    #[test]
    fn a_daemon_set_pod_is_on_the_node_its_controller_chose() {
        let spec = format!(r#"{{{NODE_TERM},"containers":[{{"name":"c"}}]}}"#);
        assert_eq!(chosen(DS_CONTROLLER, DS, &spec).as_deref(), Some("node-a"));
        assert_eq!(chosen("system:kube-controller-manager", DS, &spec).as_deref(), Some("node-a"));
        assert_eq!(chosen("jane@example.com", DS, &spec), None, "a user's Pod writing the same term");
        assert_eq!(chosen(DS_CONTROLLER, ("example.com/v1", "DaemonSet"), &spec), None, "not the apps DaemonSet");
        assert_eq!(chosen(DS_CONTROLLER, ("apps/v1", "ReplicaSet"), &spec), None);
        let no_affinity = r#"{"containers":[{"name":"c"}]}"#;
        assert_eq!(chosen(DS_CONTROLLER, DS, no_affinity), None);
        let two_terms =
            spec.replace(r#"]}]}}}"#, r#"]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-b"]}]}]}}}"#);
        assert_eq!(chosen(DS_CONTROLLER, DS, &two_terms), None, "not the controller's one term");
        let with_expression =
            spec.replace(r#"{"matchFields""#, r#"{"matchExpressions":[{"key":"tenant","operator":"In","values":["a"]}],"matchFields""#);
        assert_eq!(chosen(DS_CONTROLLER, DS, &with_expression), None);
        let by_label = spec.replace("metadata.name", "metadata.labels");
        assert_eq!(chosen(DS_CONTROLLER, DS, &by_label), None);
    }

    #[test]
    fn the_daemon_tolerations_are_the_controllers() {
        let tolerations = r#""tolerations":[
            {"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},
            {"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},
            {"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"},
            {"key":"node.kubernetes.io/network-unavailable","operator":"Exists","effect":"NoSchedule"},
            {"key":"node.kubernetes.io/unreachable","operator":"Equal","value":"x","effect":"NoExecute"}]"#;
        let authored = |user: &str, host_network: bool| {
            let spec = format!(r#"{{"hostNetwork":{host_network},{tolerations},"containers":[{{"name":"c"}}]}}"#);
            let text = pod_request(user, DS, &spec);
            let req = crate::model::request::Request::parse(&text).unwrap();
            let t = req.workload().unwrap().templates().next().unwrap();
            authored_tolerations(&req, t).map(|(i, _)| i).collect::<Vec<_>>()
        };
        assert_eq!(authored(DS_CONTROLLER, false), [1, 3, 4], "network-unavailable is the controller's only under hostNetwork");
        assert_eq!(authored(DS_CONTROLLER, true), [1, 4]);
        assert_eq!(authored("jane@example.com", true), [0, 1, 2, 3, 4], "a user's Pod: every toleration is its author's");
        let not_ready = Taint { key: "node.kubernetes.io/not-ready", value: "", effect: "NoExecute" };
        let text = pod_request(DS_CONTROLLER, DS, &format!(r#"{{{tolerations},"containers":[{{"name":"c"}}]}}"#));
        let req = crate::model::request::Request::parse(&text).unwrap();
        let t = req.workload().unwrap().templates().next().unwrap();
        assert!(!author_tolerates(&req, t, &not_ready), "the controller's toleration is not the author's");
        assert!(pod_tolerates(&t.spec, &not_ready));
    }

    #[test]
    fn fits() {
        let s = spec(
            r#"{"nodeSelector":{"pool":"a"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"gpu","operator":"NotIn","values":["true"]}]}]}}}}"#,
        );
        let gpu_node = |k: &str| match k {
            "pool" => Some("a"),
            "gpu" => Some("true"),
            _ => None,
        };
        let cpu_node = |k: &str| match k {
            "pool" => Some("a"),
            _ => None,
        };
        assert!(!node_fits(&s, &gpu_node));
        assert!(node_fits(&s, &cpu_node));
        assert!(targets_label(&s, "pool", true));
        assert_eq!(demand_field(&s, "pool"), Some(NODE_SELECTOR));
        assert_eq!(demand_field(&s, "gpu"), Some(REQUIRED_AFFINITY));
        assert_eq!(demand_field(&s, "zone"), None);
        assert!(!targets_label(&s, "gpu", false), "NotIn does not aim at the label");
    }
}
