//! Edits mutating rules make, built from the paths the workload model
//! gives, so no rule writes JSON paths or re-serialises an object by hand.
//! The SDK applies them to the request's object text ([`crate::json`]):
//! what a rule does not touch stays byte for byte as the client sent it.
//!
//! A mutating rule must be idempotent: run on its own output, it finds
//! nothing left to change. The helpers here only write what is missing
//! (`SetIfAbsent`), and the rule checks the model before adding to a list.

use crate::json::{Edit, Path, quote};
use crate::pod::NodeSelectorTerm;
use crate::workload::PodTemplate;

/// Sets label `key` in the metadata at `metadata` (`metadata`,
/// `spec.template.metadata`) to `value`; `overwrite: false` leaves an
/// existing value alone.
pub fn label(metadata: &Path, key: &str, value: &str, overwrite: bool) -> Edit {
    let path = metadata.keys(&["labels", key]);
    if overwrite {
        Edit::Set { path, value: quote(value) }
    } else {
        Edit::SetIfAbsent { path, value: quote(value) }
    }
}

/// Sets annotation `key` in the metadata at `metadata` to `value`, if not set.
pub fn annotation(metadata: &Path, key: &str, value: &str) -> Edit {
    Edit::SetIfAbsent { path: metadata.keys(&["annotations", key]), value: quote(value) }
}

/// Sets a string field of a pod spec (`runtimeClassName`), if not set.
pub fn spec_field(t: &PodTemplate<'_>, field: &str, value: &str) -> Edit {
    Edit::SetIfAbsent { path: t.spec_path().key(field), value: quote(value) }
}

/// Appends a toleration (`{key, operator, value?, effect?}`) to a pod spec.
pub fn toleration(t: &PodTemplate<'_>, key: &str, operator: &str, value: Option<&str>, effect: Option<&str>) -> Edit {
    let mut json = format!("{{\"key\":{},\"operator\":{}", quote(key), quote(operator));
    if let Some(v) = value {
        json.push_str(&format!(",\"value\":{}", quote(v)));
    }
    if let Some(e) = effect {
        json.push_str(&format!(",\"effect\":{}", quote(e)));
    }
    json.push('}');
    Edit::Append { path: t.spec_path().key("tolerations"), value: json }
}

/// A node selector requirement as JSON: `{"key":..,"operator":..,"values":[..]}`.
pub fn requirement(key: &str, operator: &str, values: &[&str]) -> String {
    let mut json = format!("{{\"key\":{},\"operator\":{}", quote(key), quote(operator));
    if !values.is_empty() {
        let vs: Vec<String> = values.iter().map(|v| quote(v)).collect();
        json.push_str(&format!(",\"values\":[{}]", vs.join(",")));
    }
    json.push('}');
    json
}

/// Whether a term already holds `requirement` (same key, operator, values).
pub fn term_has(term: &NodeSelectorTerm<'_>, key: &str, operator: &str, values: &[&str]) -> bool {
    term.match_expressions.iter().any(|r| {
        &*r.key == key && &*r.operator == operator && r.values.len() == values.len() && r.values.iter().zip(values).all(|(a, b)| &**a == *b)
    })
}

/// Makes the pod's required node affinity also demand `key operator
/// values`. The terms of `requiredDuringSchedulingIgnoredDuringExecution`
/// are ORed, so the requirement is added to every term that lacks it (each
/// way of scheduling the pod keeps it); without terms, one term holding it is
/// created. Everything else in the affinity is kept.
pub fn require_node(t: &PodTemplate<'_>, key: &str, operator: &str, values: &[&str]) -> Vec<Edit> {
    let expr = requirement(key, operator, values);
    let terms_path = t
        .spec_path()
        .keys(&["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
    match t.spec.required_node_affinity() {
        Some(ns) if !ns.node_selector_terms.is_empty() => ns
            .node_selector_terms
            .iter()
            .enumerate()
            .filter(|(_, term)| !term_has(term, key, operator, values))
            .map(|(i, _)| Edit::Append { path: terms_path.index(i).key("matchExpressions"), value: expr.clone() })
            .collect(),
        _ => vec![Edit::Set { path: terms_path, value: format!("[{{\"matchExpressions\":[{expr}]}}]") }],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::json::apply;
    use crate::workload::{Workload, WorkloadKind};

    fn with<R>(json: &str, f: impl FnOnce(&PodTemplate<'_>) -> R) -> R {
        let w = Workload::parse(WorkloadKind::Deployment, json).unwrap();
        f(w.templates().next().unwrap())
    }

    #[test]
    fn node_requirements_join_every_term() {
        let d = r#"{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}},"containers":[]}}}}"#;
        let edits = with(d, |t| require_node(t, "nvidia.com/gpu.present", "NotIn", &["true"]));
        assert_eq!(edits.len(), 2);
        let out = apply(d, &edits).unwrap();
        assert_eq!(out.matches("nvidia.com/gpu.present").count(), 2);
        let again = with(&out, |t| require_node(t, "nvidia.com/gpu.present", "NotIn", &["true"]));
        assert!(again.is_empty(), "idempotent");
        let bare = r#"{"spec":{"template":{"spec":{"containers":[]}}}}"#;
        let out = apply(bare, &with(bare, |t| require_node(t, "gpu", "NotIn", &["true"]))).unwrap();
        assert_eq!(
            out,
            r#"{"spec":{"template":{"spec":{"containers":[],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu","operator":"NotIn","values":["true"]}]}]}}}}}}}"#
        );
    }

    #[test]
    fn labels_tolerations_and_fields() {
        let d = r#"{"metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"owner":"bob"}},"spec":{"containers":[]}}}}"#;
        let edits = with(d, |t| {
            vec![
                label(&t.metadata_path(), "owner", "jane", false),
                label(&Path::root().key("metadata"), "owner", "jane", false),
                spec_field(t, "runtimeClassName", "nvidia"),
                toleration(t, "nvidia.com/gpu", "Exists", None, Some("NoSchedule")),
            ]
        });
        let out = apply(d, &edits).unwrap();
        assert!(out.contains(r#""labels":{"owner":"bob"}"#), "not overwritten: {out}");
        assert!(out.contains(r#""metadata":{"name":"d","labels":{"owner":"jane"}}"#), "{out}");
        assert!(out.contains(r#""runtimeClassName":"nvidia""#));
        assert!(out.contains(r#""tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]"#));
    }
}
