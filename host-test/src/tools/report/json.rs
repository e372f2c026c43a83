//! The machine-readable report of `aigov scan` (`--format json`): every
//! document with each rule's verdict, message, violations, warnings, audit
//! annotations and patch, then the rules, what was not evaluated, and the
//! summary; written as the documents arrive.

use std::io::Write;

use anyhow::Result;
use serde_json::{Value, json};

use super::model::{DocumentReport, Form, Item, Note, Report, RuleInfo, Source, Summary, Tally, replay, violations};
use super::spill::indent;

fn source_json(s: &Source) -> Value {
    let mut v = json!({"file": s.file, "document": s.document});
    if let (Some(item), Some(map)) = (s.item, v.as_object_mut()) {
        map.insert("item".into(), json!(item));
    }
    v
}

/// One document of the machine-readable report.
fn document_json(rules: &[RuleInfo], d: &DocumentReport) -> Value {
    let results: serde_json::Map<String, Value> = rules
        .iter()
        .zip(&d.results)
        .map(|(rule, r)| {
            let mut v = json!({"verdict": r.outcome.key()});
            if let Some(map) = v.as_object_mut() {
                if let Some(resp) = &r.response {
                    if !resp.accepted {
                        map.insert("message".into(), json!(resp.message));
                        map.insert("violations".into(), json!(violations(resp.message.as_deref().unwrap_or_default())));
                    }
                    if let Some(code) = resp.code {
                        map.insert("code".into(), json!(code));
                    }
                    if !resp.warnings.is_empty() {
                        map.insert("warnings".into(), json!(resp.warnings));
                    }
                    if !resp.audit_annotations.is_empty() {
                        map.insert("auditAnnotations".into(), json!(resp.audit_annotations));
                    }
                }
                if let Some(e) = &r.error {
                    map.insert("error".into(), json!(e));
                }
                if let Some(patch) = &r.patch {
                    map.insert("patch".into(), patch.clone());
                }
                // What it could not check without a cluster to ask.
                if !r.unchecked.is_empty() {
                    map.insert("notChecked".into(), json!(r.unchecked));
                }
            }
            (rule.name.clone(), v)
        })
        .collect();
    let t = &d.target;
    json!({
        "source": source_json(&d.source),
        "apiVersion": if t.group.is_empty() { t.version.clone() } else { format!("{}/{}", t.group, t.version) },
        "kind": t.kind,
        "resource": t.resource,
        "subResource": t.sub_resource,
        "operation": t.operation,
        "namespace": t.namespace,
        "name": t.name,
        "verdict": d.outcome().key(),
        "results": results,
    })
}

/// Everything of the machine-readable report but its documents.
fn report_tail(
    form: Form,
    rules: &[RuleInfo],
    files: usize,
    skipped: &[Note],
    errors: &[Note],
    s: &Summary,
) -> serde_json::Map<String, Value> {
    // A file that cannot be read or parsed names the document the parser
    // stopped at, counted from 1 as the reason says; none for the whole
    // file.
    let source = |s: &Source| {
        let mut v = source_json(s);
        if let (0, Some(map)) = (s.document, v.as_object_mut()) {
            map.remove("document");
        }
        v
    };
    let notes = |notes: &[Note]| -> Vec<Value> { notes.iter().map(|n| json!({"source": source(&n.source), "reason": n.reason})).collect() };
    let mut m = serde_json::Map::new();
    m.insert("form".into(), json!(form.name()));
    m.insert(
        "rules".into(),
        json!(
            rules
                .iter()
                .map(|r| json!({"name": r.name, "version": r.version, "description": r.description, "docs": r.docs}))
                .collect::<Vec<_>>()
        ),
    );
    m.insert("skipped".into(), json!(notes(skipped)));
    m.insert("errors".into(), json!(notes(errors)));
    m.insert(
        "summary".into(),
        json!({
            "files": files,
            "documents": s.documents,
            "denied": s.denied,
            "warned": s.warned,
            "mutated": s.mutated,
            "passed": s.passed,
            "errors": s.errors,
            "skipped": s.skipped,
            "violations": s.violations,
        }),
    );
    m
}

/// The machine-readable report.
pub fn to_json(report: &Report) -> Value {
    let documents: Vec<Value> = report.documents.iter().map(|d| document_json(&report.rules, d)).collect();
    let mut m = report_tail(report.form, &report.rules, report.files, &report.skipped, &report.errors, &report.summary());
    m.insert("documents".into(), Value::Array(documents));
    Value::Object(m)
}

/// The machine-readable report written as the documents arrive, byte for
/// byte what `serde_json::to_string_pretty(&to_json(report))` and a newline
/// give (the report's keys are in name order, `documents` first).
pub struct Writer<'o> {
    out: &'o mut dyn Write,
    form: Form,
    rules: Vec<RuleInfo>,
    files: usize,
    skipped: Vec<Note>,
    errors: Vec<Note>,
    tally: Tally,
}

impl<'o> Writer<'o> {
    /// A writer of the report of `rules` in `form` over `files` files to `out`.
    pub fn new(out: &'o mut dyn Write, form: Form, rules: Vec<RuleInfo>, files: usize) -> Writer<'o> {
        Writer { out, form, rules, files, skipped: Vec::new(), errors: Vec::new(), tally: Tally::default() }
    }

    /// Writes the next item of the scan (a document at once; the notes wait
    /// for the end).
    pub fn add(&mut self, item: &Item) -> Result<()> {
        self.tally.add(item);
        match item {
            Item::Document(d) => {
                let first = self.tally.0.documents == 1;
                self.out.write_all(if first { b"{\n  \"documents\": [\n" } else { b",\n" })?;
                let text = serde_json::to_string_pretty(&document_json(&self.rules, d))?;
                self.out.write_all(indent(&text, "    ").as_bytes())?;
            }
            Item::Skipped(n) => self.skipped.push(n.clone()),
            Item::Error(n) => self.errors.push(n.clone()),
            Item::Overridden(_) | Item::Defaulted(_) => {}
        }
        Ok(())
    }

    /// Writes the rest of the report.
    pub fn finish(self) -> Result<()> {
        let s = self.tally.0;
        let tail = report_tail(self.form, &self.rules, self.files, &self.skipped, &self.errors, &s);
        let text = serde_json::to_string_pretty(&Value::Object(tail))?;
        // `{\n  "errors": ...}`: the rest of the report after `documents`.
        let rest = text.strip_prefix("{\n").unwrap_or(&text);
        if s.documents == 0 {
            self.out.write_all(b"{\n  \"documents\": [],\n")?;
        } else {
            self.out.write_all(b"\n  ],\n")?;
        }
        self.out.write_all(rest.as_bytes())?;
        self.out.write_all(b"\n")?;
        Ok(())
    }
}

/// [`Writer`] over a finished report, as a string.
pub fn render_json(report: &Report) -> Result<String> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, report.form, report.rules.clone(), report.files);
    replay(report, &mut |item| w.add(item))?;
    w.finish()?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
