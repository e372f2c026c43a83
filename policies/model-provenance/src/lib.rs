//! `model-provenance`: serving and training workloads say which model
//! version they are and what data it came from, in annotations on the
//! workload itself (by default the Kyverno example's `ai/version: v*` and
//! `ai/dataset: *-vault`), and carry a data classification label
//! (`data-classification`: `public`, `internal`, `confidential` or
//! `restricted`) on the workload and on its pod templates.
//!
//! Regulations such as the EU AI Act ask who deployed which model, trained
//! on what. A cluster that refuses undocumented model servers and training
//! jobs can answer from `kubectl get`, and a classification on the pods lets
//! network policies and data loss prevention tools treat restricted data as
//! such.
//!
//! Annotations are read on the workload's own `metadata.annotations`, as the
//! Kyverno example's pattern reads them: provenance describes the workload (which model
//! an InferenceService serves, what a PyTorchJob trains on), once, where
//! inventories and audit reports list it; a PyTorchJob's master and worker
//! templates, or a Deployment's pods, would only repeat it. Pod templates
//! that carry an annotation the workload lacks get a hint to copy it.
//!
//! Controls that belong to each pod (an AI workload's audit logging) are
//! `requiredPodAnnotations`, read where the pods get their annotations:
//! pod templates, a Pod's own (with `Pod` in `kinds`), an InferenceService
//! component's or the InferenceService's.

mod settings;

use aigov_sdk::prelude::*;
use aigov_sdk::{AllowedValues, LabelScope, LabelSite, RequiredLabels, label_sets};

pub use settings::{CLASSIFICATION_LABEL, CLASSIFICATIONS, DEFAULT_KINDS, Settings, governable};

/// The rule.
pub struct ModelProvenance;

impl Policy for ModelProvenance {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // Subresources and objects being deleted never reach the rule (the
        // SDK admits them); DELETE carries no workload.
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        // A controller's copy (the StatefulSet a Notebook's controller
        // builds, the Deployment KServe builds for an InferenceService)
        // carries what its owner declared, checked when the owner was
        // submitted; its own metadata is the controller's.
        if !settings.governs(workload.kind) || aigov_sdk::runtime::mutate::controlled_copy(req) {
            return Ok(verdict);
        }
        for (key, message) in check(workload, req.controller().is_some(), settings) {
            verdict.violation_keyed(key, message);
        }
        Ok(verdict)
    }
}

/// Why pod labels matter here, for the hint on a template missing labels.
const PODS_WHY: &str = "network policies and data tools select pods by their labels";

/// Every problem, in document order, as `(identity, message)`: the
/// workload's annotations, then each label set, then the pods'
/// annotations. `by_controller`: the object is a trusted controller's
/// ([`Request::controller`]).
pub fn check(w: &Workload<'_>, by_controller: bool, s: &Settings) -> Vec<(String, String)> {
    // A Pod a controller made carries its template's labels and
    // annotations; the provenance of the workload is its owner's, read when
    // the owner was submitted.
    let owned_pod = w.kind == WorkloadKind::Pod && by_controller;
    let mut out = if owned_pod { Vec::new() } else { annotations(w, s) };
    let scope = LabelScope { object: true, pod_templates: s.require_on_pod_templates };
    // A JobSet's job templates label its Jobs, which nothing selects for
    // data handling: the pods' labels are what matters.
    for set in label_sets(w, scope, by_controller).into_iter().filter(|s| s.site != LabelSite::JobTemplate) {
        out.extend(s.required_labels.check_set(&set, &w.metadata.labels, PODS_WHY));
        if set.site != LabelSite::Object && set.inherits.is_none() {
            out.extend(
                disagreements(&s.required_labels, set.labels, &w.metadata.labels, &set.path.to_string())
                    .into_iter()
                    .map(|m| (m.clone(), m)),
            );
        }
    }
    out.extend(pod_annotations(w, s));
    out
}

/// `` `v*` ``, `` any of `v*`, `release-*` ``, or `` the regular
/// expression `^v[0-9]+$` ``.
fn patterns(p: &AllowedValues<Glob>) -> String {
    match p {
        AllowedValues::List(list) => match list.as_slice() {
            [one] => format!("`{one}`"),
            many => format!("any of {}", quoted(&many.iter().map(Glob::as_str).collect::<Vec<_>>())),
        },
        AllowedValues::Regex(re) => format!("the regular expression `{re}`"),
    }
}

/// What a value must look like: `a value matching `v*``, or `a value`.
fn wanted(p: &AllowedValues<Glob>) -> String {
    if p.any() { "a value".into() } else { format!("a value matching {}", patterns(p)) }
}

/// What is wrong with one annotation's value (`None`: nothing), at `at`.
fn annotation_value(key: &str, value: &str, pats: &AllowedValues<Glob>, at: &dyn std::fmt::Display) -> Option<String> {
    if value.trim().is_empty() {
        Some(format!("annotation `{key}` in `{at}` is empty: set {}", wanted(pats)))
    } else if !pats.allows(value) {
        Some(format!("annotation `{key}` in `{at}` is `{value}`, which does not match {}: set {}", patterns(pats), wanted(pats)))
    } else {
        None
    }
}

/// `` annotation `a` is missing from `at` `` or `` annotations `a`, `b` are
/// missing from `at` ``, and what to add.
fn missing_annotations(missing: &[(&String, &AllowedValues<Glob>)], at: &dyn std::fmt::Display) -> (String, String) {
    let keys: Vec<&str> = missing.iter().map(|(k, _)| k.as_str()).collect();
    let what = match keys.as_slice() {
        [one] => format!("annotation `{one}` is missing from `{at}`"),
        many => format!("annotations {} are missing from `{at}`", quoted(many)),
    };
    let add: Vec<String> = missing.iter().map(|(k, p)| format!("`{k}` with {}", wanted(p))).collect();
    let message = format!("{what}: add {}", add.join(" and "));
    (what, message)
}

/// The annotations on the workload's own metadata: one message for all
/// missing ones (with a hint when a pod template has them), one per empty
/// or non-matching value, in key order.
fn annotations(w: &Workload<'_>, s: &Settings) -> Vec<(String, String)> {
    let own = &w.metadata.annotations;
    let mut out = Vec::new();
    let missing: Vec<(&String, &AllowedValues<Glob>)> =
        s.required_annotations.iter().filter(|(k, _)| !own.contains_key(k.as_str())).collect();
    if !missing.is_empty() {
        let keys: Vec<&str> = missing.iter().map(|(k, _)| k.as_str()).collect();
        let (what, mut message) = missing_annotations(&missing, &"metadata.annotations");
        // The usual slip: the chart put them on the pods (`podAnnotations`).
        let on_templates: Vec<String> = w
            .templates()
            .filter(|t| t.role != Role::Pod && !t.shares_metadata())
            .filter_map(|t| {
                let has: Vec<&str> =
                    keys.iter().copied().filter(|k| t.metadata.as_ref().is_some_and(|m| m.annotations.contains_key(*k))).collect();
                (!has.is_empty()).then(|| format!("`{}` has {}", t.metadata_path().key("annotations"), quoted(&has)))
            })
            .collect();
        if let Some(first) = on_templates.first() {
            message.push_str(&format!(
                " ({first}: provenance is read from the workload's own `metadata.annotations`, so copy {} there)",
                if on_templates.len() == 1 && keys.len() == 1 { "it" } else { "them" }
            ));
        }
        out.push((what, message));
    }
    for (key, pats) in &s.required_annotations {
        let Some(value) = w.metadata.annotation(key) else { continue };
        if let Some(m) = annotation_value(key, &value, pats, &"metadata.annotations") {
            out.push((m.clone(), m));
        }
    }
    out
}

/// The annotations of `requiredPodAnnotations` on every pod the workload
/// makes: each pod template's `metadata.annotations`, a Pod's own; an
/// InferenceService component's `annotations` over the InferenceService's,
/// which KServe gives its pods too. A TrainJob's trainer, whose pods'
/// metadata comes from its training runtime, is not read; its overrides'
/// and runtime patches' annotations are merged over the runtime's, so what
/// they write is judged and what they leave out is the runtime's. A
/// predictor's workers, whose pods get the predictor's, are read there.
fn pod_annotations(w: &Workload<'_>, s: &Settings) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if s.required_pod_annotations.is_empty() {
        return out;
    }
    let empty = aigov_sdk::Annotations::default();
    for t in w.templates().filter(|t| (t.metadata.is_some() || !t.is_partial()) && !t.shares_metadata()) {
        let (own, inherited, at) = match t.role {
            Role::Pod => (&w.metadata.annotations, None, Path::root().keys(&["metadata", "annotations"])),
            Role::Predictor | Role::Transformer | Role::Explainer => (
                t.metadata.as_ref().map_or(&empty, |m| &m.annotations),
                Some(&w.metadata.annotations),
                t.metadata_path().key("annotations"),
            ),
            _ => (t.metadata.as_ref().map_or(&empty, |m| &m.annotations), None, t.metadata_path().key("annotations")),
        };
        let value = |key: &str| own.get(key).or_else(|| inherited.and_then(|i| i.get(key))).map(|v| v.get());
        let missing: Vec<(&String, &AllowedValues<Glob>)> =
            s.required_pod_annotations.iter().filter(|(k, _)| value(k).is_none() && !t.is_partial()).collect();
        if !missing.is_empty() {
            let (what, mut message) = missing_annotations(&missing, &at);
            // The other slip: on the workload, which does not reach its pods.
            let on_workload: Vec<&str> = missing
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| t.role != Role::Pod && inherited.is_none() && w.metadata.annotations.contains_key(*k))
                .collect();
            if !on_workload.is_empty() {
                message.push_str(&format!(
                    " (`metadata.annotations` has {}, but the workload's own annotations do not reach its pods: copy {} to `{at}`)",
                    quoted(&on_workload),
                    if on_workload.len() == 1 { "it" } else { "them" }
                ));
            }
            out.push((what, message));
        }
        for (key, pats) in &s.required_pod_annotations {
            let Some(v) = value(key) else { continue };
            if let Some(m) = annotation_value(key, &v, pats, &at) {
                out.push((m.clone(), m));
            }
        }
    }
    out
}

/// Labels a template carries with another allowed value than the workload:
/// pods classified `public` in a workload classified `restricted`.
fn disagreements(reqs: &RequiredLabels, labels: &aigov_sdk::Labels<'_>, own: &aigov_sdk::Labels<'_>, path: &str) -> Vec<String> {
    let allowed = |key: &str, v: &str| reqs.allows(key, v);
    reqs.0
        .keys()
        .filter_map(|key| {
            let mine = labels.get(key.as_str())?;
            let theirs = own.get(key.as_str())?;
            (mine != theirs && allowed(key, mine) && allowed(key, theirs)).then(|| {
                format!("label `{key}` in `{path}` is `{mine}`, but the workload's `metadata.labels` says `{theirs}`: set it to `{theirs}` here too, or classify the workload as `{mine}`")
            })
        })
        .collect()
}

aigov_sdk::export_policy!(ModelProvenance);

#[cfg(test)]
mod tests;
