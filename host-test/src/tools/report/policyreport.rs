//! `wgpolicyk8s.io/v1alpha2` reports, as Kubewarden's audit scanner and
//! Kyverno write them: a `PolicyReport` per namespace and a
//! `ClusterPolicyReport` for cluster-scoped objects, each with one result per
//! rule and object the rule governs (`pass`, `fail`, `warn`, `error`), so
//! dashboards built on the Policy Reports API read ours; a file that could
//! not be read or parsed is an `error` result of the policy `aigov-scan` in
//! the ClusterPolicyReport (no namespace is known for it). Printed as a YAML
//! stream, ready for `kubectl apply -f -`.
//!
//! The same writer writes OpenReports ([`Flavour::OpenReports`],
//! `openreports.io/v1alpha1`, which Kubewarden's audit scanner and Kyverno
//! now write by default): a `Report` per namespace and a `ClusterReport`,
//! the same results, and the report's `source` (`aigov`) beside each
//! result's. Either way a namespace whose results would pass
//! [`MAX_RESULTS_BYTES`] is split over several reports (`aigov-<ns>`,
//! `aigov-<ns>-2`, ...), each with its own summary: etcd refuses a request
//! over 1.5 MiB (`--max-request-bytes`), so one report per namespace of a
//! large cluster cannot be stored.

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

/// The most bytes of results (as YAML) one report holds: 1 MiB, well
/// under etcd's 1.5 MiB request limit with the report's metadata and
/// summary, and the JSON the API server stores a little larger.
pub const MAX_RESULTS_BYTES: usize = 1 << 20;

/// Which reports a [`Writer`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// `wgpolicyk8s.io/v1alpha2` `PolicyReport` and `ClusterPolicyReport`.
    PolicyReport,
    /// `openreports.io/v1alpha1` `Report` and `ClusterReport`.
    OpenReports,
}

impl Flavour {
    fn api_version(self) -> &'static str {
        match self {
            Flavour::PolicyReport => "wgpolicyk8s.io/v1alpha2",
            Flavour::OpenReports => "openreports.io/v1alpha1",
        }
    }

    /// The kind of a namespace's report (`cluster`: of the cluster's).
    fn kind(self, cluster: bool) -> &'static str {
        match (self, cluster) {
            (Flavour::PolicyReport, false) => "PolicyReport",
            (Flavour::PolicyReport, true) => "ClusterPolicyReport",
            (Flavour::OpenReports, false) => "Report",
            (Flavour::OpenReports, true) => "ClusterReport",
        }
    }
}

/// One report's results so far: their YAML (each a one-item sequence, so
/// the items concatenated are the sequence), their size, and their count
/// per verdict.
struct Chunk {
    results: Spill,
    bytes: usize,
    counts: BTreeMap<&'static str, usize>,
}

/// Adds a result to `namespace`'s reports (`None`: the cluster's),
/// starting a report with `spill` when there is none yet or the last one
/// would grow past `limit` bytes of results.
fn push(
    groups: &mut BTreeMap<Option<String>, Vec<Chunk>>,
    spill: &dyn Fn(&str) -> Result<Spill>,
    spilled: &mut usize,
    limit: usize,
    namespace: &Option<String>,
    verdict: &'static str,
    result: &Value,
) -> Result<()> {
    let yaml = serde_norway::to_string(&[result])?;
    let chunks = groups.entry(namespace.clone()).or_default();
    if chunks.last().is_none_or(|c| c.bytes > 0 && c.bytes + yaml.len() > limit) {
        *spilled += 1;
        chunks.push(Chunk { results: spill(&format!("policyreport-{spilled}"))?, bytes: 0, counts: BTreeMap::new() });
    }
    let chunk = chunks.last_mut().context("a report's results were lost")?;
    chunk.results.write(yaml.as_bytes())?;
    chunk.bytes += yaml.len();
    *chunk.counts.entry(verdict).or_default() += 1;
    Ok(())
}

/// The PolicyReports written as the documents arrive: each namespace's
/// results go to its own spill (and the cluster-scoped objects' to one
/// more), and [`Writer::finish`] writes each report with its summary.
pub struct Writer<'s> {
    rules: Vec<RuleInfo>,
    now: DateTime<Utc>,
    spill: &'s dyn Fn(&str) -> Result<Spill>,
    spilled: usize,
    flavour: Flavour,
    limit: usize,
    groups: BTreeMap<Option<String>, Vec<Chunk>>,
}

impl<'s> Writer<'s> {
    /// A writer for PolicyReports on `rules` made at `now`, spilling each
    /// namespace's results with `spill`.
    pub fn new(rules: Vec<RuleInfo>, now: DateTime<Utc>, spill: &'s dyn Fn(&str) -> Result<Spill>) -> Writer<'s> {
        Writer { rules, now, spill, spilled: 0, flavour: Flavour::PolicyReport, limit: MAX_RESULTS_BYTES, groups: BTreeMap::new() }
    }

    /// The same writer for reports of `flavour`.
    pub fn flavour(mut self, flavour: Flavour) -> Writer<'s> {
        self.flavour = flavour;
        self
    }

    /// The same writer with at most `bytes` of results per report
    /// (default [`MAX_RESULTS_BYTES`]); a single larger result still gets
    /// a report of its own.
    pub fn limit(mut self, bytes: usize) -> Writer<'s> {
        self.limit = bytes;
        self
    }

    /// Adds what the scan yielded: a result per rule of a document, one
    /// for a file that could not be read or parsed.
    pub fn add(&mut self, item: &Item) -> Result<()> {
        let doc = match item {
            Item::Document(doc) => doc,
            Item::Error(note) => {
                let result = unreadable(note, &self.now);
                return push(&mut self.groups, self.spill, &mut self.spilled, self.limit, &None, "error", &result);
            }
            Item::Skipped(_) | Item::Overridden(_) | Item::Defaulted(_) => return Ok(()),
        };
        for (rule, r) in self.rules.iter().zip(&doc.results) {
            let Some((verdict, result)) = result(doc, rule, r, &self.now) else { continue };
            push(&mut self.groups, self.spill, &mut self.spilled, self.limit, &doc.target.namespace, verdict, &result)?;
        }
        Ok(())
    }

    /// Writes the reports as a YAML stream: each namespace's in name order
    /// (a namespace's split in the order its results came), then the
    /// cluster's (when some object is cluster-scoped).
    pub fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let cluster = self.groups.remove(&None);
        for (namespace, chunks) in self.groups.iter_mut() {
            for (i, chunk) in chunks.iter_mut().enumerate() {
                write_report(out, self.flavour, namespace.as_deref(), i, chunk)?;
            }
        }
        for (i, chunk) in cluster.into_iter().flatten().enumerate() {
            write_report(out, self.flavour, None, i, &mut { chunk })?;
        }
        Ok(())
    }
}

/// One report (the `i`th of its namespace), its keys in name order as the
/// rest of the YAML aigov prints.
fn write_report(out: &mut dyn Write, flavour: Flavour, namespace: Option<&str>, i: usize, group: &mut Chunk) -> Result<()> {
    let count = |v: &str| group.counts.get(v).copied().unwrap_or(0);
    let summary = json!({"pass": count("pass"), "fail": count("fail"), "warn": count("warn"), "error": count("error"), "skip": 0});
    let base = namespace.map_or_else(|| "aigov-cluster".to_string(), |ns| format!("aigov-{ns}"));
    let mut metadata = json!({
        "name": if i == 0 { base } else { format!("{base}-{}", i + 1) },
        "labels": {"app.kubernetes.io/managed-by": "aigov"},
    });
    if let (Some(ns), Some(o)) = (namespace, metadata.as_object_mut()) {
        o.insert("namespace".into(), json!(ns));
    }
    let mut head = json!({"apiVersion": flavour.api_version(), "kind": flavour.kind(namespace.is_none()), "metadata": metadata});
    if let (Flavour::OpenReports, Some(o)) = (flavour, head.as_object_mut()) {
        o.insert("source".into(), json!("aigov"));
    }
    out.write_all(b"---\n")?;
    out.write_all(serde_norway::to_string(&head)?.as_bytes())?;
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
    render_as(scan, now, Flavour::PolicyReport, MAX_RESULTS_BYTES)
}

/// A finished report's reports of `flavour`, at most `limit` bytes of
/// results each, as a YAML stream.
pub fn render_as(scan: &Report, now: &DateTime<Utc>, flavour: Flavour, limit: usize) -> Result<String> {
    let mut w = Writer::new(scan.rules.clone(), *now, &Spill::memory).flavour(flavour).limit(limit);
    super::model::replay(scan, &mut |item| w.add(item))?;
    let mut out = Vec::new();
    w.finish(&mut out)?;
    Ok(String::from_utf8(out)?)
}
