//! `wgpolicyk8s.io/v1alpha2` reports, as Kubewarden's audit scanner and
//! Kyverno write them: a `PolicyReport` per namespace and a
//! `ClusterPolicyReport` for cluster-scoped objects, each with one result per
//! rule and object the rule governs (`pass`, `fail`, `warn`, `error`), so
//! dashboards built on the Policy Reports API read ours. Printed as a YAML
//! stream, ready for `kubectl apply -f -`.

use std::collections::BTreeMap;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::tools::scan::{DocumentReport, Outcome, Report, RuleInfo, RuleResult};

/// The severities the CRD allows.
const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

fn result(doc: &DocumentReport, rule: &RuleInfo, r: &RuleResult, now: &DateTime<Utc>) -> Option<Value> {
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
    Some(out)
}

fn report(kind: &str, namespace: Option<&str>, results: Vec<Value>) -> Value {
    let count = |v: &str| results.iter().filter(|r| r.get("result").and_then(Value::as_str) == Some(v)).count();
    let summary = json!({"pass": count("pass"), "fail": count("fail"), "warn": count("warn"), "error": count("error"), "skip": 0});
    let mut metadata = json!({
        "name": namespace.map_or_else(|| "aigov-cluster".to_string(), |ns| format!("aigov-{ns}")),
        "labels": {"app.kubernetes.io/managed-by": "aigov"},
    });
    if let (Some(ns), Some(o)) = (namespace, metadata.as_object_mut()) {
        o.insert("namespace".into(), json!(ns));
    }
    json!({
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": kind,
        "metadata": metadata,
        "summary": summary,
        "results": results,
    })
}

/// The reports: a PolicyReport per namespace in name order, then the
/// ClusterPolicyReport (when some object is cluster-scoped).
pub fn reports(scan: &Report, now: &DateTime<Utc>) -> Vec<Value> {
    let mut by_namespace: BTreeMap<Option<&str>, Vec<Value>> = BTreeMap::new();
    for doc in &scan.documents {
        let results = scan.rules.iter().zip(&doc.results).filter_map(|(rule, r)| result(doc, rule, r, now));
        by_namespace.entry(doc.target.namespace.as_deref()).or_default().extend(results);
    }
    let cluster = by_namespace.remove(&None);
    let mut out: Vec<Value> = by_namespace.into_iter().map(|(ns, results)| report("PolicyReport", ns, results)).collect();
    if let Some(results) = cluster {
        out.push(report("ClusterPolicyReport", None, results));
    }
    out
}

/// The reports as a YAML stream.
pub fn render(scan: &Report, now: &DateTime<Utc>) -> Result<String> {
    let mut out = String::new();
    for r in reports(scan, now) {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(&r)?);
    }
    Ok(out)
}
