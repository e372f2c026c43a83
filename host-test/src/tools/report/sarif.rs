//! SARIF 2.1.0 for code-scanning tools: one result per violation and per
//! warning, each located at the line and column of the field it names in the
//! file the person wrote (the parent, when the field is missing; the
//! document's first line when the message names no field). Files read from
//! stdin are named without a region.

use std::io::Write;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::model::{DocumentReport, Item, Note, Outcome, Report, RuleInfo};
use super::position::{Located, Position, field_path};
use super::spill::{Spill, indent};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// A relative or absolute path as a URI reference (RFC 3986).
fn uri(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The file last read again for positions: documents come in file order,
/// so each file is read once and only one is held at a time.
#[derive(Default)]
struct Files(Option<(String, Option<Located>)>);

impl Files {
    fn locate(&mut self, doc: &DocumentReport, message: &str) -> Option<Position> {
        let file = &doc.source.file;
        if self.0.as_ref().is_none_or(|(f, _)| f != file) {
            let located = if file == "<stdin>" { None } else { std::fs::read_to_string(file).ok().and_then(|t| Located::parse(&t)) };
            self.0 = Some((file.clone(), located));
        }
        let path = field_path(message).unwrap_or_default();
        self.0.as_ref()?.1.as_ref()?.locate(doc.source.document, doc.source.item, &path)
    }
}

fn location(files: &mut Files, doc: &DocumentReport, message: &str) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": uri(&doc.source.file)}});
    if let (Some(p), Some(o)) = (files.locate(doc, message), physical.as_object_mut()) {
        o.insert("region".into(), json!({"startLine": p.line, "startColumn": p.column}));
    }
    json!({
        "physicalLocation": physical,
        "logicalLocations": [{"fullyQualifiedName": format!("{}/{}", doc.target.kind, doc.target.object()), "kind": "object"}],
    })
}

/// The SARIF results of one document.
fn results(files: &mut Files, rules: &[RuleInfo], doc: &DocumentReport) -> Vec<Value> {
    let mut out = Vec::new();
    for (index, (rule, r)) in rules.iter().zip(&doc.results).enumerate() {
        let items: Vec<(&str, String)> = match r.outcome {
            // A mutation admits the object; `scan` shows the change.
            Outcome::NotGoverned | Outcome::Pass | Outcome::Mutate => Vec::new(),
            // A rejection's warnings too: they say what else to fix.
            Outcome::Deny => r
                .violations()
                .into_iter()
                .map(|v| ("error", v.to_string()))
                .chain(r.response.iter().flat_map(|x| x.warnings.iter()).map(|w| ("warning", w.clone())))
                .collect(),
            Outcome::Warn => r.response.iter().flat_map(|x| x.warnings.iter()).map(|w| ("warning", w.clone())).collect(),
            Outcome::Error => vec![("error", format!("the rule could not be evaluated: {}", super::message(r)))],
        };
        for (level, text) in items {
            out.push(json!({
                "ruleId": rule.name,
                "ruleIndex": index,
                "level": level,
                "message": {"text": text},
                "locations": [location(files, doc, &text)],
            }));
        }
    }
    out
}

/// Stands for the results in the log [`Writer::finish`] prints around them.
const RESULTS: &str = "\u{1}results\u{1}";

/// A SARIF log written as the documents arrive: the results, pretty-printed
/// where they stand in the log, go to a spill; [`Writer::finish`] prints
/// the log around them (its invocation says whether every file was read,
/// known only at the end).
pub struct Writer {
    rules: Vec<RuleInfo>,
    files: Files,
    results: Spill,
    count: usize,
    errors: Vec<Note>,
}

impl Writer {
    /// A writer for a report on `rules`, keeping the results in `spill`.
    pub fn new(rules: Vec<RuleInfo>, spill: &dyn Fn(&str) -> Result<Spill>) -> Result<Writer> {
        Ok(Writer { rules, files: Files::default(), results: spill("sarif-results")?, count: 0, errors: Vec::new() })
    }

    /// Adds what the scan yielded.
    pub fn add(&mut self, item: &Item) -> Result<()> {
        match item {
            Item::Document(doc) => {
                for result in results(&mut self.files, &self.rules, doc) {
                    self.results.write(if self.count == 0 { b"\n" } else { b",\n" })?;
                    // Results stand 8 deep: the log, `runs`, the run, `results`.
                    self.results.write(indent(&serde_json::to_string_pretty(&result)?, "        ").as_bytes())?;
                    self.count += 1;
                }
            }
            Item::Error(n) => self.errors.push(n.clone()),
            Item::Skipped(_) | Item::Overridden(_) | Item::Defaulted(_) => {}
        }
        Ok(())
    }

    /// Writes the whole log.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| {
                let mut rule = json!({
                    "id": r.name,
                    "shortDescription": {"text": r.description},
                    "properties": {"tags": r.category.iter().collect::<Vec<_>>(), "version": r.version},
                });
                if let (Some(docs), Some(o)) = (&r.docs, rule.as_object_mut()) {
                    o.insert("helpUri".into(), json!(docs));
                }
                rule
            })
            .collect();
        let notifications: Vec<Value> = self
            .errors
            .iter()
            .map(|n| json!({"level": "error", "message": {"text": n.reason}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(&n.source.file)}}}]}))
            .collect();
        let log = json!({
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "aigov", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
                "invocations": [{"executionSuccessful": self.errors.is_empty(), "toolExecutionNotifications": notifications}],
                "columnKind": "unicodeCodePoints",
                "results": RESULTS,
            }],
        });
        let text = serde_json::to_string_pretty(&log)?;
        let mark = serde_json::to_string(RESULTS)?;
        let (before, after) = text.split_once(&mark).context("the SARIF log lost its results")?;
        out.write_all(before.as_bytes())?;
        if self.count == 0 {
            out.write_all(b"[]")?;
        } else {
            out.write_all(b"[")?;
            self.results.copy_to(out)?;
            out.write_all(b"\n      ]")?;
        }
        out.write_all(after.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    }
}

/// A finished report as a SARIF log.
pub fn render(report: &Report) -> Result<Value> {
    let mut w = Writer::new(report.rules.clone(), &Spill::memory)?;
    super::model::replay(report, &mut |item| w.add(item))?;
    let mut out = Vec::new();
    w.finish(&mut out)?;
    Ok(serde_json::from_slice(&out)?)
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri("k8s/my job.yaml"), "k8s/my%20job.yaml");
        assert_eq!(uri("/abs/a-b_c~.yml"), "/abs/a-b_c~.yml");
    }
}
