//! `wgpolicyk8s.io/v1alpha2` reports, as Kubewarden's audit scanner and
//! Kyverno write them: a `PolicyReport` per namespace and a
//! `ClusterPolicyReport` for cluster-scoped objects, each with one result per
//! rule and object the rule governs (`pass`, `fail`, `warn`, `error`), so
//! dashboards built on the Policy Reports API read ours; a file that could
//! not be read or parsed is an `error` result of the policy `aigov-scan` in
//! the ClusterPolicyReport (no namespace is known for it). Printed as a YAML
//! stream, ready for `kubectl apply -f -`.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::model::{DocumentReport, Item, Note, Outcome, Report, RuleInfo, RuleResult};
use super::spill::Spill;

/// The severities the CRD allows.
const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

fn result(doc: &DocumentReport, rule: &RuleInfo, r: &RuleResult, now: &DateTime<Utc>) -> Option<(&'static str, Value)> {
    let verdict = match r.outcome {
        Outcome::NotGoverned => return None,
        Outcome::Pass | Outcome::Mutate => "pass",
        Outcome::Warn => "warn",
        Outcome::Deny => "fail",
        Outcome::Error => "error",
    };
    let mut resource = json!({
        "apiVersion": super::api_version(doc),
        "kind": doc.target.kind,
        "name": doc.target.name.clone().unwrap_or_default(),
    });
    if let (Some(ns), Some(o)) = (&doc.target.namespace, resource.as_object_mut()) {
        o.insert("namespace".into(), json!(ns));
    }
    let mut out = json!({
        "source": "aigov",
        "policy": rule.name,
        "rule": rule.name,
        "result": verdict,
        "scored": true,
        "timestamp": {"seconds": now.timestamp(), "nanos": 0},
        "resources": [resource],
        "properties": {
            "file": doc.source.file,
            "document": doc.source.document.to_string(),
            "operation": doc.target.operation,
        },
    });
    let message = super::message(r);
    if let Some(o) = out.as_object_mut() {
        if !message.is_empty() {
            o.insert("message".into(), json!(message));
        }
        if let Some(c) = &rule.category {
            o.insert("category".into(), json!(c));
        }
        if let Some(s) = rule.severity.as_deref().map(str::to_ascii_lowercase).filter(|s| SEVERITIES.contains(&s.as_str())) {
            o.insert("severity".into(), json!(s));
        }
    }
    Some((verdict, out))
}

/// The result of a file that could not be read or parsed.
fn unreadable(note: &Note, now: &DateTime<Utc>) -> Value {
    let mut properties = json!({"file": note.source.file});
    if let (true, Some(o)) = (note.source.document > 0, properties.as_object_mut()) {
        o.insert("document".into(), json!(note.source.document.to_string()));
    }
    json!({
        "source": "aigov",
        "policy": READ_POLICY,
        "rule": "read",
        "result": "error",
        "scored": true,
        "timestamp": {"seconds": now.timestamp(), "nanos": 0},
        "message": note.reason,
        "properties": properties,
    })
}

/// The policy a file that could not be read or parsed fails.
pub const READ_POLICY: &str = "aigov-scan";

/// The results in `namespace` (`None`: the cluster's), started with
/// `spill` when there are none yet.
fn group<'g>(
    groups: &'g mut BTreeMap<Option<String>, Group>,
    spill: &dyn Fn(&str) -> Result<Spill>,
    namespace: &Option<String>,
) -> Result<&'g mut Group> {
    if !groups.contains_key(namespace) {
        let results = spill(&format!("policyreport-{}", groups.len()))?;
        groups.insert(namespace.clone(), Group { results, counts: BTreeMap::new() });
    }
    groups.get_mut(namespace).context("a report's results were lost")
}

/// One report's results so far: their YAML (each a one-item sequence, so
/// the items concatenated are the sequence), and their count per verdict.
struct Group {
    results: Spill,
    counts: BTreeMap<&'static str, usize>,
}

/// The PolicyReports written as the documents arrive: each namespace's
/// results go to its own spill (and the cluster-scoped objects' to one
/// more), and [`Writer::finish`] writes each report with its summary.
pub struct Writer<'s> {
    rules: Vec<RuleInfo>,
    now: DateTime<Utc>,
    spill: &'s dyn Fn(&str) -> Result<Spill>,
    groups: BTreeMap<Option<String>, Group>,
}

impl<'s> Writer<'s> {
    /// A writer for a report on `rules` made at `now`, spilling each
    /// namespace's results with `spill`.
    pub fn new(rules: Vec<RuleInfo>, now: DateTime<Utc>, spill: &'s dyn Fn(&str) -> Result<Spill>) -> Writer<'s> {
        Writer { rules, now, spill, groups: BTreeMap::new() }
    }

    /// Adds what the scan yielded: a result per rule of a document, one
    /// for a file that could not be read or parsed.
    pub fn add(&mut self, item: &Item) -> Result<()> {
        let doc = match item {
            Item::Document(doc) => doc,
            Item::Error(note) => {
                let result = unreadable(note, &self.now);
                let group = group(&mut self.groups, self.spill, &None)?;
                *group.counts.entry("error").or_default() += 1;
                group.results.write(serde_norway::to_string(&[result])?.as_bytes())?;
                return Ok(());
            }
            Item::Skipped(_) | Item::Overridden(_) | Item::Defaulted(_) => return Ok(()),
        };
        let group = group(&mut self.groups, self.spill, &doc.target.namespace)?;
        for (rule, r) in self.rules.iter().zip(&doc.results) {
            let Some((verdict, result)) = result(doc, rule, r, &self.now) else { continue };
            *group.counts.entry(verdict).or_default() += 1;
            group.results.write(serde_norway::to_string(&[result])?.as_bytes())?;
        }
        Ok(())
    }

    /// Writes the reports as a YAML stream: a PolicyReport per namespace in
    /// name order, then the ClusterPolicyReport (when some object is
    /// cluster-scoped).
    pub fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let cluster = self.groups.remove(&None);
        for (namespace, group) in self.groups.iter_mut() {
            write_report(out, "PolicyReport", namespace.as_deref(), group)?;
        }
        if let Some(mut group) = cluster {
            write_report(out, "ClusterPolicyReport", None, &mut group)?;
        }
        Ok(())
    }
}

/// One report, its keys in name order as the rest of the YAML aigov prints.
fn write_report(out: &mut dyn Write, kind: &str, namespace: Option<&str>, group: &mut Group) -> Result<()> {
    let count = |v: &str| group.counts.get(v).copied().unwrap_or(0);
    let summary = json!({"pass": count("pass"), "fail": count("fail"), "warn": count("warn"), "error": count("error"), "skip": 0});
    let mut metadata = json!({
        "name": namespace.map_or_else(|| "aigov-cluster".to_string(), |ns| format!("aigov-{ns}")),
        "labels": {"app.kubernetes.io/managed-by": "aigov"},
    });
    if let (Some(ns), Some(o)) = (namespace, metadata.as_object_mut()) {
        o.insert("namespace".into(), json!(ns));
    }
    out.write_all(b"---\n")?;
    out.write_all(
        serde_norway::to_string(&json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": kind, "metadata": metadata}))?.as_bytes(),
    )?;
    if !group.counts.is_empty() {
        out.write_all(b"results:\n")?;
        group.results.copy_to(out)?;
    } else {
        out.write_all(b"results: []\n")?;
    }
    out.write_all(serde_norway::to_string(&json!({"summary": summary}))?.as_bytes())?;
    Ok(())
}

/// A finished report's PolicyReports as a YAML stream.
pub fn render(scan: &Report, now: &DateTime<Utc>) -> Result<String> {
    let mut w = Writer::new(scan.rules.clone(), *now, &Spill::memory);
    super::model::replay(scan, &mut |item| w.add(item))?;
    let mut out = Vec::new();
    w.finish(&mut out)?;
    Ok(String::from_utf8(out)?)
}
