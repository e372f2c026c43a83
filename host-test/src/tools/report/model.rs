//! The report model of `aigov scan`: what each rule said about each
//! document ([`RuleResult`]: its [`Outcome`], its response, the patch a
//! mutation amounts to), what the document is ([`Target`]) and where it
//! came from ([`Source`]), and the [`Item`]s a scan yields, in file and
//! document order, for the report writers (`table`, `json`, `junit`,
//! `sarif`, `policyreport`) to write as they arrive.

use std::collections::BTreeMap;

use aigov_metadata::annotations;
use aigov_sdk::ValidationResponse;
use aigov_sdk::runtime::metadata::PolicyMetadata;
use anyhow::Result;
use serde_json::{Value, json};

use crate::run::admission::plural;

/// Which form of the rules evaluates the documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Form {
    /// The Kubewarden modules (`artifacts/<rule>/policy.wasm`).
    #[default]
    Module,
    /// The components (`artifacts/<rule>/policy.component.wasm`).
    Component,
    /// The rules linked into `aigov`.
    Native,
}

impl Form {
    /// `module`, `component` or `native`.
    pub fn name(self) -> &'static str {
        match self {
            Form::Module => "module",
            Form::Component => "component",
            Form::Native => "native",
        }
    }
}

/// When `aigov scan` exits with status 1.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailOn {
    /// A rule denied a document, could not evaluate it, or a file could
    /// not be read (exit status 1); no Kubernetes object to check is exit
    /// status 3.
    #[default]
    Deny,
    /// As `deny`, and also when a rule admitted a document with warnings.
    Warn,
    /// Never: report only (exit status 0 whatever the verdicts, and when
    /// there was nothing to check).
    None,
}

/// What one rule said about one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// The rule's webhook rules do not match the request: Kubernetes would
    /// not send it.
    NotGoverned,
    /// Admitted.
    Pass,
    /// Admitted with changes: a mutating rule patched the object.
    Mutate,
    /// Admitted, with warnings.
    Warn,
    /// Rejected.
    Deny,
    /// The rule could not be evaluated (a trap, a protocol error).
    Error,
}

impl Outcome {
    /// The table cell.
    pub fn cell(self) -> &'static str {
        match self {
            Outcome::NotGoverned => "-",
            Outcome::Pass => "pass",
            Outcome::Mutate => "mutate",
            Outcome::Warn => "warn",
            Outcome::Deny => "DENY",
            Outcome::Error => "ERROR",
        }
    }

    /// The JSON spelling.
    pub fn key(self) -> &'static str {
        match self {
            Outcome::NotGoverned => "not-governed",
            Outcome::Pass => "pass",
            Outcome::Mutate => "mutate",
            Outcome::Warn => "warn",
            Outcome::Deny => "deny",
            Outcome::Error => "error",
        }
    }

    /// The outcome of a response.
    pub fn of(response: &ValidationResponse) -> Outcome {
        if !response.accepted {
            Outcome::Deny
        } else if !response.warnings.is_empty() {
            Outcome::Warn
        } else if response.mutated_object.is_some() {
            Outcome::Mutate
        } else {
            Outcome::Pass
        }
    }
}

/// A rule, as the report names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleInfo {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// One-line description.
    pub description: String,
    /// Where its documentation lives.
    pub docs: Option<String>,
    /// Its severity annotation (`high`, `medium`, ...), if any.
    pub severity: Option<String>,
    /// Its category annotation, if any.
    pub category: Option<String>,
}

impl RuleInfo {
    /// From a rule's metadata.
    pub fn of(m: &PolicyMetadata) -> RuleInfo {
        RuleInfo {
            name: m.name.to_string(),
            version: m.version.to_string(),
            description: m.annotation(annotations::DESCRIPTION).unwrap_or_default().to_string(),
            docs: m.annotation(annotations::SOURCE).map(str::to_string),
            severity: m.annotation(annotations::SEVERITY).map(str::to_string),
            category: m.annotation(annotations::CATEGORY).map(str::to_string),
        }
    }
}

/// What a document amounts to as an admission request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// API group of the resource (`""` for core).
    pub group: String,
    /// API version of the resource.
    pub version: String,
    /// Kind of the object (`PodExecOptions` for exec).
    pub kind: String,
    /// Plural resource (`pods`).
    pub resource: String,
    /// Subresource (`exec`), if any.
    pub sub_resource: Option<String>,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// Namespace, for namespaced objects.
    pub namespace: Option<String>,
    /// Name (the pod, for exec); `generateName*` when only that is set.
    pub name: Option<String>,
    /// Requesting user.
    pub user: Option<String>,
}

impl Target {
    /// Reads the fields webhook matching and the report need from an
    /// AdmissionRequest.
    pub fn of(request: &Value) -> Target {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let at = |p: &str| s(request.pointer(p));
        let kind = at("/kind/kind").unwrap_or_default();
        let kind_group = at("/kind/group").unwrap_or_default();
        let group = at("/resource/group").unwrap_or_else(|| kind_group.clone());
        let version = at("/resource/version").or_else(|| at("/kind/version")).unwrap_or_default();
        let resource = at("/resource/resource").unwrap_or_else(|| plural(&kind_group, &kind));
        let object = request.get("object").filter(|o| o.is_object()).or_else(|| request.get("oldObject"));
        let name = at("/name")
            .or_else(|| s(object.and_then(|o| o.pointer("/metadata/name"))))
            .or_else(|| s(object.and_then(|o| o.pointer("/metadata/generateName"))).map(|g| format!("{g}*")));
        Target {
            group,
            version,
            kind,
            resource,
            sub_resource: at("/subResource").filter(|x| !x.is_empty()),
            operation: at("/operation").unwrap_or_default(),
            namespace: at("/namespace").filter(|x| !x.is_empty()),
            name,
            user: at("/userInfo/username"),
        }
    }

    /// Whether a rule with this metadata receives the request.
    pub fn governed_by(&self, m: &PolicyMetadata) -> bool {
        m.governs(&self.group, &self.version, &self.resource, self.sub_resource.as_deref(), &self.operation)
    }

    /// What the document is: `Pod`, `Pod (DELETE)`, `CONNECT pods/exec`.
    pub fn what(&self) -> String {
        match &self.sub_resource {
            Some(sub) => format!("{} {}/{sub}", self.operation, self.resource),
            None if self.operation == "CREATE" => self.kind.clone(),
            None => format!("{} ({})", self.kind, self.operation),
        }
    }

    /// `namespace/name`, `name`, or `(unnamed)`.
    pub fn object(&self) -> String {
        let name = self.name.as_deref().unwrap_or("(unnamed)");
        match &self.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_string(),
        }
    }
}

/// What one rule said about one document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleResult {
    /// The verdict.
    pub outcome: Outcome,
    /// The response, when the rule was evaluated.
    pub response: Option<ValidationResponse>,
    /// Why the rule could not be evaluated.
    pub error: Option<String>,
    /// What a mutating rule changed: the JSON Patch (RFC 6902) from the
    /// document's object to the patched one.
    pub patch: Option<Value>,
    /// What the rule could not check for want of a cluster to ask (a scan
    /// without `--cluster`): its warnings that begin
    /// [`aigov_sdk::cluster::NOT_CHECKED`], taken out of the response
    /// (without that beginning) so that they neither warn nor count.
    pub unchecked: Vec<String>,
}

impl RuleResult {
    /// Not sent to the rule.
    pub fn not_governed() -> RuleResult {
        RuleResult { outcome: Outcome::NotGoverned, response: None, error: None, patch: None, unchecked: Vec::new() }
    }

    /// From an evaluation.
    pub fn evaluated(result: Result<ValidationResponse>) -> RuleResult {
        match result {
            Ok(mut r) => {
                let mut unchecked = Vec::new();
                r.warnings.retain(|w| match w.strip_prefix(aigov_sdk::cluster::NOT_CHECKED) {
                    Some(skipped) => {
                        unchecked.push(skipped.to_string());
                        false
                    }
                    None => true,
                });
                RuleResult { outcome: Outcome::of(&r), response: Some(r), error: None, patch: None, unchecked }
            }
            Err(e) => {
                RuleResult { outcome: Outcome::Error, response: None, error: Some(format!("{e:#}")), patch: None, unchecked: Vec::new() }
            }
        }
    }

    /// From an evaluation of a request whose object is `original`, with
    /// the patch a mutation amounts to.
    pub fn evaluated_on(result: Result<ValidationResponse>, original: Option<&Value>) -> RuleResult {
        let mut r = RuleResult::evaluated(result);
        // The patch is what the report shows; the mutated object itself (a
        // whole document) is not kept.
        let mutated = r.response.as_mut().and_then(|resp| resp.mutated_object.take());
        r.patch = mutated.map(|m| match serde_json::from_str::<Value>(m.get()) {
            Ok(m) => serde_json::to_value(json_patch::diff(original.unwrap_or(&Value::Null), &m)).unwrap_or(Value::Null),
            Err(e) => json!([{"op": "replace", "path": "", "value": format!("(the mutated object is not JSON: {e})")}]),
        });
        r
    }

    /// The lines of the patch: `+ spec.template.metadata.labels.owner:
    /// "jane"` (add), `~ path: value` (replace), `- path` (remove).
    pub fn changes(&self) -> Vec<String> {
        let Some(ops) = self.patch.as_ref().and_then(Value::as_array) else { return Vec::new() };
        ops.iter().map(change_line).collect()
    }

    /// The violations of a rejection (none for an admission or an error).
    pub fn violations(&self) -> Vec<&str> {
        match &self.response {
            Some(r) if !r.accepted => violations(r.message.as_deref().unwrap_or_default()),
            _ => Vec::new(),
        }
    }

    /// Whether the table report has something to say about it: an error, a
    /// change, a rejection, warnings or audit annotations.
    pub fn has_details(&self) -> bool {
        self.error.is_some()
            || self.patch.is_some()
            || self.response.as_ref().is_some_and(|r| !r.accepted || !r.warnings.is_empty() || !r.audit_annotations.is_empty())
    }
}

/// Where a document came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The file (`<stdin>` for standard input).
    pub file: String,
    /// 1-based document number in the file (for a file that could not be
    /// parsed, the document the parser stopped at, as its message counts;
    /// 0 when the error is about the whole file).
    pub document: usize,
    /// 1-based item number, for items of a `List`.
    pub item: Option<usize>,
    /// Whether the file holds more than one document (the number is shown).
    pub multi: bool,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.file)?;
        if self.multi {
            write!(f, " #{}", self.document)?;
        }
        if let Some(i) = self.item {
            write!(f, " item {i}")?;
        }
        Ok(())
    }
}

/// One scanned document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentReport {
    /// Where it came from.
    pub source: Source,
    /// What it is.
    pub target: Target,
    /// One result per rule of the report, in the report's rule order.
    pub results: Vec<RuleResult>,
}

impl DocumentReport {
    /// The worst outcome over every rule.
    pub fn outcome(&self) -> Outcome {
        self.results.iter().map(|r| r.outcome).max().unwrap_or(Outcome::NotGoverned)
    }
}

/// A document or file that was not evaluated, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Where.
    pub source: Source,
    /// Why.
    pub reason: String,
}

/// The whole scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Which form of the rules answered.
    pub form: Form,
    /// The rules, in column order.
    pub rules: Vec<RuleInfo>,
    /// Files scanned.
    pub files: usize,
    /// Every evaluated document, in file and document order.
    pub documents: Vec<DocumentReport>,
    /// Documents that are not Kubernetes objects, and paths the walk did
    /// not read (document 0): not evaluated; no effect on the exit status.
    pub skipped: Vec<Note>,
    /// Files that could not be read or parsed (they fail the scan).
    pub errors: Vec<Note>,
    /// AdmissionRequests and AdmissionReviews whose `userInfo` `--user` or
    /// `--group` replaced.
    pub overridden: Vec<Source>,
}

/// Counts for the summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Documents evaluated.
    pub documents: usize,
    /// Documents at least one rule denied.
    pub denied: usize,
    /// Documents admitted with warnings.
    pub warned: usize,
    /// Documents admitted with changes a mutating rule made (and no
    /// warnings).
    pub mutated: usize,
    /// Documents admitted without warnings (or governed by no rule).
    pub passed: usize,
    /// Documents some rule could not evaluate, and unreadable files.
    pub errors: usize,
    /// Documents skipped, and paths the walk did not read (a pipe, a
    /// directory reached again through a link).
    pub skipped: usize,
    /// Violations over every rejection (a rejection's message holds one per
    /// line).
    pub violations: usize,
}

impl Report {
    /// Adds what the scan yielded.
    pub fn add(&mut self, item: Item) {
        match item {
            Item::Document(d) => self.documents.push(d),
            Item::Skipped(n) => self.skipped.push(n),
            Item::Error(n) => self.errors.push(n),
            Item::Overridden(s) => self.overridden.push(s),
            Item::Defaulted(_) => {}
        }
    }

    /// The counts.
    pub fn summary(&self) -> Summary {
        let mut s =
            Summary { documents: self.documents.len(), skipped: self.skipped.len(), errors: self.errors.len(), ..Summary::default() };
        for d in &self.documents {
            s.violations += d.results.iter().map(|r| r.violations().len()).sum::<usize>();
            match d.outcome() {
                Outcome::Error => s.errors += 1,
                Outcome::Deny => s.denied += 1,
                Outcome::Warn => s.warned += 1,
                Outcome::Mutate => s.mutated += 1,
                Outcome::Pass | Outcome::NotGoverned => s.passed += 1,
            }
        }
        s
    }
}

/// What a scan yields, in file and document order. (Each item is moved
/// once, from a worker to the writer: not worth a box.)
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Item {
    /// An evaluated document.
    Document(DocumentReport),
    /// A document that is not evaluated, or a path the walk did not read
    /// (document 0), and why.
    Skipped(Note),
    /// A file that could not be read or parsed.
    Error(Note),
    /// A verbatim request whose `userInfo` `--user`/`--group` replaced.
    Overridden(Source),
    /// A plain object that names no namespace, judged in `default` (the
    /// document that follows).
    Defaulted(Source),
}

/// Counts a report's summary as its items arrive.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally(pub Summary);

impl Tally {
    /// Counts one item.
    pub fn add(&mut self, item: &Item) {
        let s = &mut self.0;
        match item {
            Item::Document(d) => {
                s.documents += 1;
                s.violations += d.results.iter().map(|r| r.violations().len()).sum::<usize>();
                match d.outcome() {
                    Outcome::Error => s.errors += 1,
                    Outcome::Deny => s.denied += 1,
                    Outcome::Warn => s.warned += 1,
                    Outcome::Mutate => s.mutated += 1,
                    Outcome::Pass | Outcome::NotGoverned => s.passed += 1,
                }
            }
            Item::Skipped(_) => s.skipped += 1,
            Item::Error(_) => s.errors += 1,
            Item::Overridden(_) | Item::Defaulted(_) => {}
        }
    }
}

/// What each rule could not check for want of a cluster to ask (a scan
/// without `--cluster`), gathered as the documents arrive and said once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unchecked {
    /// By rule name: the documents it could not fully check, and what it
    /// skipped (distinct, in the order first met).
    pub rules: BTreeMap<String, (usize, Vec<String>)>,
}

impl Unchecked {
    /// Notes what `rules` (in the report's rule order) skipped in `item`.
    pub fn add(&mut self, rules: &[RuleInfo], item: &Item) {
        let Item::Document(d) = item else { return };
        for (rule, r) in rules.iter().zip(&d.results).filter(|(_, r)| !r.unchecked.is_empty()) {
            let (documents, skipped) = self.rules.entry(rule.name.clone()).or_default();
            *documents += 1;
            for s in &r.unchecked {
                if !skipped.contains(s) {
                    skipped.push(s.clone());
                }
            }
        }
    }

    /// The one line that says it, or `None` when every rule checked
    /// everything: each rule, on how many documents, and the first thing
    /// it skipped (and how many others).
    pub fn line(&self) -> Option<String> {
        if self.rules.is_empty() {
            return None;
        }
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|(name, (documents, skipped))| {
                let first = skipped.first().map(String::as_str).unwrap_or_default();
                let more = match skipped.len() {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                format!("{name} on {documents} document(s): {first}{more}")
            })
            .collect();
        Some(format!(
            "not fully checked without `--cluster` (no cluster to look objects up in), so not denied for it: {}; give `--cluster DIR` with the \
             cluster's objects to check them",
            rules.join("; ")
        ))
    }
}

/// Whether a summary fails the scan by `fail_on`. A scan that found no
/// Kubernetes object to check fails too (unless `--fail-on none`): a CI job
/// pointed at the wrong folder, or at an empty rendering, must not pass.
pub fn fails(s: &Summary, fail_on: FailOn) -> bool {
    match fail_on {
        FailOn::None => false,
        FailOn::Deny => s.denied + s.errors > 0 || nothing_checked(s),
        FailOn::Warn => s.denied + s.errors + s.warned > 0 || nothing_checked(s),
    }
}

/// Whether a scan found no Kubernetes object to check (and no file it
/// could not read, which says why on its own).
pub fn nothing_checked(s: &Summary) -> bool {
    s.documents == 0 && s.errors == 0
}

/// The error of a command that found nothing to check (a directory
/// without manifests, a file without a Kubernetes object): `aigov` exits
/// with [`NOTHING_TO_CHECK`] for it, not 2 (could not run) nor 1 (denied).
#[derive(Debug)]
pub struct NothingToCheck(pub String);

impl std::fmt::Display for NothingToCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NothingToCheck {}

/// The exit status of a scan that found nothing to check (no Kubernetes
/// object in what it read): neither a pass nor a denial.
pub const NOTHING_TO_CHECK: u8 = 3;

/// The exit status for a summary: 3 when there was nothing to check
/// ([`NOTHING_TO_CHECK`]), 1 when it fails by `fail_on`, else 0;
/// `--fail-on none` is 0 whatever happened.
pub fn exit_code(s: &Summary, fail_on: FailOn) -> u8 {
    match fail_on {
        FailOn::None => 0,
        _ if nothing_checked(s) => NOTHING_TO_CHECK,
        _ => u8::from(fails(s, fail_on)),
    }
}

/// The exit status for a report ([`exit_code`]).
pub fn exit_status(report: &Report, fail_on: FailOn) -> u8 {
    exit_code(&report.summary(), fail_on)
}

/// Feeds a finished report to a writer, items in the order a scan yields
/// them: each file's notes where the scan would have met them is not
/// known any more, but every writer keeps notes apart from documents.
pub(crate) fn replay(report: &Report, add: &mut dyn FnMut(&Item) -> Result<()>) -> Result<()> {
    for d in &report.documents {
        add(&Item::Document(d.clone()))?;
    }
    for n in &report.errors {
        add(&Item::Error(n.clone()))?;
    }
    for n in &report.skipped {
        add(&Item::Skipped(n.clone()))?;
    }
    Ok(())
}

/// The lines of a response's audit annotations (`(key, line)`: the SDK's
/// `violations` annotation holds one per line) that its warnings do not
/// already say: in audit mode every violation is both a warning and a line
/// of the annotation, and a report says it once.
pub fn audit_lines(response: &ValidationResponse) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for (k, v) in &response.audit_annotations {
        for line in v.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
            let warned = response.warnings.iter().any(|w| w.strip_suffix(line).is_some_and(|head| head.ends_with(": ")));
            if !warned {
                out.push((k.as_str(), line));
            }
        }
    }
    out
}

/// The violations of a rejection message: the SDK joins a rule's
/// violations with a newline, one per line, and a violation never holds a
/// newline (it may hold `; `). Blank lines are not violations.
pub fn violations(message: &str) -> Vec<&str> {
    message.split('\n').map(str::trim).filter(|m| !m.is_empty()).collect()
}

/// A JSON Pointer (`/spec/containers/0/name`) as messages write paths
/// (`spec.containers[0].name`).
pub fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    if out.is_empty() { "(the whole object)".into() } else { out }
}

/// One JSON Patch operation as a diff line.
pub(crate) fn change_line(op: &Value) -> String {
    let path = dotted(op.get("path").and_then(Value::as_str).unwrap_or_default());
    let value = op.get("value").map(|v| v.to_string()).unwrap_or_default();
    match op.get("op").and_then(Value::as_str).unwrap_or_default() {
        "add" => format!("+ {path}: {value}"),
        "remove" => format!("- {path}"),
        "replace" => format!("~ {path}: {value}"),
        other => format!("{other} {path} {value}"),
    }
}
