//! `model-provenance`: serving and training workloads say which model
//! version they are and what data it came from, in annotations on the
//! workload itself (by default the seed's `ai/version: v*` and
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
//! seed's pattern reads them: provenance describes the workload (which model
//! an InferenceService serves, what a PyTorchJob trains on), once, where
//! inventories and audit reports list it; a PyTorchJob's master and worker
//! templates, or a Deployment's pods, would only repeat it. Pod templates
//! that carry an annotation the workload lacks get a hint to copy it.

mod settings;

use aigov_sdk::prelude::*;
use aigov_sdk::{LabelScope, LabelSite, RequiredLabels, label_sets};

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
        if !settings.governs(workload.kind) || aigov_sdk::runtime::mutate::controlled_copy(workload) {
            return Ok(verdict);
        }
        for (key, message) in check(workload, settings) {
            verdict.violation_keyed(key, message);
        }
        Ok(verdict)
    }
}

/// Why pod labels matter here, for the hint on a template missing labels.
const PODS_WHY: &str = "network policies and data tools select pods by their labels";

/// Every problem, in document order, as `(identity, message)`: the
/// annotations, then each label set.
pub fn check(w: &Workload<'_>, s: &Settings) -> Vec<(String, String)> {
    let mut out = annotations(w, s);
    let scope = LabelScope { object: true, pod_templates: s.require_on_pod_templates };
    // A JobSet's job templates label its Jobs, which nothing selects for
    // data handling: the pods' labels are what matters.
    for set in label_sets(w, scope).into_iter().filter(|s| s.site != LabelSite::JobTemplate) {
        out.extend(s.required_labels.check_set(&set, &w.metadata.labels, PODS_WHY));
        if set.site != LabelSite::Object && set.inherits.is_none() {
            out.extend(
                disagreements(&s.required_labels, set.labels, &w.metadata.labels, &set.path.to_string())
                    .into_iter()
                    .map(|m| (m.clone(), m)),
            );
        }
    }
    out
}

/// `` `v*` ``, or `` any of `v*`, `release-*` ``.
fn patterns(p: &[Glob]) -> String {
    match p {
        [one] => format!("`{one}`"),
        many => format!("any of {}", quoted(&many.iter().map(Glob::as_str).collect::<Vec<_>>())),
    }
}

/// What a value must look like: `a value matching `v*``, or `a value`.
fn wanted(p: &[Glob]) -> String {
    if p.is_empty() { "a value".into() } else { format!("a value matching {}", patterns(p)) }
}

/// The annotations on the workload's own metadata: one message for all
/// missing ones (with a hint when a pod template has them), one per empty
/// or non-matching value, in key order.
fn annotations(w: &Workload<'_>, s: &Settings) -> Vec<(String, String)> {
    let own = &w.metadata.annotations;
    let mut out = Vec::new();
    let missing: Vec<(&String, &Vec<Glob>)> = s.required_annotations.iter().filter(|(k, _)| !own.contains_key(k.as_str())).collect();
    if !missing.is_empty() {
        let keys: Vec<&str> = missing.iter().map(|(k, _)| k.as_str()).collect();
        let what = match keys.as_slice() {
            [one] => format!("annotation `{one}` is missing from `metadata.annotations`"),
            many => format!("annotations {} are missing from `metadata.annotations`", quoted(many)),
        };
        let add: Vec<String> = missing.iter().map(|(k, p)| format!("`{k}` with {}", wanted(p))).collect();
        let mut message = format!("{what}: add {}", add.join(" and "));
        // The usual slip: the chart put them on the pods (`podAnnotations`).
        let on_templates: Vec<String> = w
            .templates()
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
        let m = if value.trim().is_empty() {
            format!("annotation `{key}` in `metadata.annotations` is empty: set {}", wanted(pats))
        } else if !pats.is_empty() && !pats.iter().any(|p| p.matches(&value)) {
            format!(
                "annotation `{key}` in `metadata.annotations` is `{value}`, which does not match {}: set {}",
                patterns(pats),
                wanted(pats)
            )
        } else {
            continue;
        };
        out.push((m.clone(), m));
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
