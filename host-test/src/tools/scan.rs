//! Offline audit of manifests against the bundle: every object in every file
//! through every rule that governs it, as a verdict table.
//!
//! A document is what `kubectl apply` or the API server would hand the
//! webhook: a plain object becomes a `CREATE` by a default user (see
//! [`crate::run::admission`]); an AdmissionRequest or AdmissionReview is used as
//! is (that is how `CONNECT pods/exec` reaches a rule), but for its
//! `userInfo` when `--user` or `--group` is given ([`Identity`], shared with
//! `aigov eval`). Each rule sees the
//! request only if its metadata would make Kubernetes send it
//! ([`PolicyMetadata::governs`]), exactly as the webhook configuration a
//! platform team deploys would.
//!
//! A mutating rule that would change a document shows what it would change,
//! as a short diff (the JSON Patch from the document to the rule's patched
//! object, one line per operation); `mutate` in the table.
//!
//! Exit status, for CI pipelines: 0 when nothing was denied, 1 when a rule
//! denied a document, failed to evaluate it, or a file could not be read
//! (`--fail-on warn` also fails on warnings, `--fail-on none` never fails),
//! 2 when the scan itself could not run (missing artifacts, bad settings).

use std::collections::BTreeMap;
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use aigov_metadata::annotations;
use aigov_sdk::metadata::PolicyMetadata;
use aigov_sdk::{NativePolicy, ValidationResponse};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::run::admission::{Submission, parse_documents, plural, read_settings, to_admission_request};
use crate::run::artifact::{self, Evaluator};
use crate::run::cluster::FixtureCluster;
use crate::run::{engine, native};

/// Width the message section is wrapped to.
pub const WRAP_WIDTH: usize = 100;

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// A verdict table, then every message grouped by document.
    #[default]
    Table,
    /// A machine-readable report.
    Json,
    /// `wgpolicyk8s.io/v1alpha2` PolicyReports (one per namespace) and a
    /// ClusterPolicyReport, as Kubewarden's audit scanner and Kyverno write.
    Policyreport,
    /// JUnit XML: a test suite per rule, a test case per document.
    Junit,
    /// SARIF 2.1.0, each violation at the line and column of its field.
    Sarif,
}

/// When `aigov scan` exits with status 1.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailOn {
    /// A rule denied a document, could not evaluate it, or a file could not be read.
    #[default]
    Deny,
    /// As `deny`, and also when a rule admitted a document with warnings.
    Warn,
    /// Never: report only (exit status 0 whatever the verdicts).
    None,
}

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

/// Arguments of `aigov scan`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every document in every file (directories are searched for .yaml, .yml and .json; `-` reads stdin) \
goes through every rule whose webhook rules match it. Plain objects are submitted as CREATE by a \
default user; AdmissionRequest and AdmissionReview documents are used as they are, except that \
--user and --group replace their `userInfo` (reported on stderr).

A rejection's message holds one violation per line; the table shows each as a bullet and counts \
them, and the JSON report lists them under `violations` (and totals them in `summary`).

Exit status: 0 if nothing was denied; 1 if a rule denied a document, could not evaluate it, or a \
file could not be parsed (see --fail-on); 2 if the scan could not run. In CI:

    aigov scan k8s/ --artifacts artifacts        # fails the job when a manifest would be rejected
    helm template chart | aigov scan -           # rendered charts, from stdin")]
pub struct Args {
    /// Files or directories of manifests (YAML or JSON, multi-document); `-` for stdin.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    /// Directory (or file) of YAML/JSON objects served to cluster lookups
    /// (e.g. the pods `kubectl exec` targets). Not scanned itself.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// A rule's settings (YAML or JSON), instead of its defaults (or, for a
    /// rule that refuses its defaults, its built-in example settings from
    /// host-test/settings/). Repeatable.
    #[arg(long = "settings", value_name = "RULE=FILE")]
    pub settings: Vec<String>,
    /// Evaluate with the components instead of the Kubewarden modules.
    #[arg(long, conflicts_with = "native")]
    pub component: bool,
    /// Evaluate with the rules linked into aigov (no artifacts needed).
    #[arg(long)]
    pub native: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// What makes the exit status 1.
    #[arg(long, value_enum, default_value_t = FailOn::Deny)]
    pub fail_on: FailOn,
    /// Submit as this user (plain objects; replaces `userInfo.username` of
    /// AdmissionRequests and AdmissionReviews).
    #[arg(long)]
    pub user: Option<String>,
    /// Submit with these groups (repeatable; replaces `userInfo.groups` of
    /// AdmissionRequests and AdmissionReviews).
    #[arg(long = "group")]
    pub groups: Vec<String>,
}

/// Runs `aigov scan`, writing the report to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let form = match (args.component, args.native) {
        (true, _) => Form::Component,
        (_, true) => Form::Native,
        _ => Form::Module,
    };
    let settings = parse_settings_args(&args.settings)?;
    let config = Config {
        paths: args.paths.clone(),
        artifacts: args.artifacts.clone(),
        cluster: args.cluster.clone(),
        settings,
        form,
        identity: Identity { user: args.user.clone(), groups: args.groups.clone() },
    };
    let report = scan(&config)?;
    if !report.overridden.is_empty() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "aigov scan: {} applied to {} AdmissionRequest/AdmissionReview document(s) used verbatim: {}",
            config.identity.flags(),
            report.overridden.len(),
            report.overridden.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    match args.format {
        Format::Table => write!(out, "{}", render_table(&report, WRAP_WIDTH, args.fail_on))?,
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&to_json(&report))?)?,
        Format::Policyreport => write!(out, "{}", crate::tools::report::policyreport::render(&report, &chrono::Utc::now())?)?,
        Format::Junit => write!(out, "{}", crate::tools::report::junit::render(&report))?,
        Format::Sarif => writeln!(out, "{}", serde_json::to_string_pretty(&crate::tools::report::sarif::render(&report))?)?,
    }
    Ok(ExitCode::from(exit_status(&report, args.fail_on)))
}

// ------------------------------------------------------------------ model

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
        let object = request
            .get("object")
            .filter(|o| o.is_object())
            .or_else(|| request.get("oldObject"));
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
}

impl RuleResult {
    /// Not sent to the rule.
    pub fn not_governed() -> RuleResult {
        RuleResult { outcome: Outcome::NotGoverned, response: None, error: None, patch: None }
    }

    /// From an evaluation.
    pub fn evaluated(result: Result<ValidationResponse>) -> RuleResult {
        match result {
            Ok(r) => RuleResult { outcome: Outcome::of(&r), response: Some(r), error: None, patch: None },
            Err(e) => RuleResult { outcome: Outcome::Error, response: None, error: Some(format!("{e:#}")), patch: None },
        }
    }

    /// From an evaluation of a request whose object is `original`, with
    /// the patch a mutation amounts to.
    pub fn evaluated_on(result: Result<ValidationResponse>, original: Option<&Value>) -> RuleResult {
        let mut r = RuleResult::evaluated(result);
        let mutated = r.response.as_ref().and_then(|resp| resp.mutated_object.as_ref());
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

    fn has_details(&self) -> bool {
        self.error.is_some()
            || self.patch.is_some()
            || self
                .response
                .as_ref()
                .is_some_and(|r| !r.accepted || !r.warnings.is_empty() || !r.audit_annotations.is_empty())
    }
}

/// Where a document came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The file (`-` for stdin).
    pub file: String,
    /// 1-based document number in the file.
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
    /// Documents that are not Kubernetes objects (not evaluated; no effect
    /// on the exit status).
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
    /// Documents skipped.
    pub skipped: usize,
    /// Violations over every rejection (a rejection's message holds one per
    /// line).
    pub violations: usize,
}

impl Report {
    /// The counts.
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            documents: self.documents.len(),
            skipped: self.skipped.len(),
            errors: self.errors.len(),
            ..Summary::default()
        };
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

/// The exit status for a report: 1 when it fails by `fail_on`, else 0.
pub fn exit_status(report: &Report, fail_on: FailOn) -> u8 {
    let s = report.summary();
    let failed = match fail_on {
        FailOn::None => false,
        FailOn::Deny => s.denied + s.errors > 0,
        FailOn::Warn => s.denied + s.errors + s.warned > 0,
    };
    u8::from(failed)
}

// ------------------------------------------------------------------ input

/// A document read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// Where.
    pub source: Source,
    /// The document.
    pub value: Value,
}

/// Every manifest file under `paths`, in a stable order: paths in the order
/// given, directories walked in name order. Files named explicitly are
/// taken whatever their extension; in directories, `.yaml`, `.yml` and
/// `.json` files, skipping hidden entries and `exclude` (the cluster
/// fixtures).
pub fn collect_files(paths: &[PathBuf], exclude: Option<&Path>) -> Result<Vec<PathBuf>> {
    let exclude = exclude.and_then(|p| p.canonicalize().ok());
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || p.is_file() {
            out.push(p.clone());
        } else if p.is_dir() {
            walk(p, exclude.as_deref(), &mut out)?;
        } else {
            bail!("{} does not exist", p.display());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, exclude: Option<&Path>, out: &mut Vec<PathBuf>) -> Result<()> {
    if exclude.is_some_and(|x| dir.canonicalize().is_ok_and(|d| d == x)) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort();
    for path in entries {
        let hidden = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            walk(&path, exclude, out)?;
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
            && !exclude.is_some_and(|x| path.canonicalize().is_ok_and(|p| p == x))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The documents of one file's text; `List`s are expanded into their items.
pub fn documents(file: &str, text: &str) -> Result<Vec<Input>> {
    let docs = parse_documents(text)?;
    let multi = docs.len() > 1;
    let mut out = Vec::new();
    for (i, value) in docs.into_iter().enumerate() {
        let source = Source { file: file.to_string(), document: i + 1, item: None, multi };
        let is_list = value.get("kind").and_then(Value::as_str).is_some_and(|k| k == "List" || k.ends_with("List"))
            && value.get("items").is_some_and(Value::is_array);
        match value {
            Value::Object(mut map) if is_list => {
                let items = match map.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                for (j, item) in items.into_iter().enumerate() {
                    out.push(Input { source: Source { item: Some(j + 1), ..source.clone() }, value: item });
                }
            }
            value => out.push(Input { source, value }),
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
        return Ok(("<stdin>".into(), text));
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok((path.display().to_string(), text))
}

/// Why a document is not a Kubernetes object, or `None` if it is one (or an
/// AdmissionRequest/AdmissionReview).
pub fn not_an_object(value: &Value) -> Option<String> {
    let Some(map) = value.as_object() else {
        return Some(format!("not a Kubernetes object (a YAML {})", json_type(value)));
    };
    let is_request = map.contains_key("operation") && map.get("kind").is_some_and(Value::is_object);
    if is_request {
        return None;
    }
    let has = |k: &str| map.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    match (has("apiVersion"), has("kind")) {
        (true, true) => None,
        (false, false) => Some("not a Kubernetes object (no `apiVersion` and `kind`)".into()),
        (false, true) => Some("not a Kubernetes object (no `apiVersion`)".into()),
        (true, false) => Some("not a Kubernetes object (no `kind`)".into()),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
    }
}

// ------------------------------------------------------------- evaluation

/// What to scan and how.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Files and directories.
    pub paths: Vec<PathBuf>,
    /// Where the artifacts are.
    pub artifacts: PathBuf,
    /// Cluster fixtures for lookups.
    pub cluster: Option<PathBuf>,
    /// Settings files by rule name.
    pub settings: BTreeMap<String, PathBuf>,
    /// Which form evaluates.
    pub form: Form,
    /// Who submits (`--user`, `--group`).
    pub identity: Identity,
}

/// Who submits the requests: `--user` and `--group` of `aigov eval` and
/// `aigov scan`. A plain object is submitted with them (else a default
/// user); an AdmissionRequest or AdmissionReview is used verbatim but for
/// the `userInfo` fields they replace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// `--user`: replaces `userInfo.username`.
    pub user: Option<String>,
    /// `--group` (repeatable): replace `userInfo.groups`.
    pub groups: Vec<String>,
}

impl Identity {
    /// Neither `--user` nor `--group`.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.groups.is_empty()
    }

    /// The flags given, for messages: `--user`, `--group`, `--user and --group`.
    pub fn flags(&self) -> &'static str {
        match (self.user.is_some(), !self.groups.is_empty()) {
            (true, true) => "--user and --group",
            (true, false) => "--user",
            (false, true) => "--group",
            (false, false) => "no identity flag",
        }
    }

    /// How a plain object is submitted.
    pub fn submission(&self) -> Submission {
        Submission {
            user: self.user.clone(),
            groups: (!self.groups.is_empty()).then(|| self.groups.clone()),
            ..Submission::default()
        }
    }

    /// Replaces `userInfo.username` and/or `userInfo.groups` of an
    /// AdmissionRequest (other `userInfo` fields are kept) and says what it
    /// changed, e.g. ``userInfo.username `jane` → `admin` (--user)``.
    pub fn apply(&self, request: &mut Value) -> Result<Vec<String>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let Some(map) = request.as_object_mut() else {
            bail!("the AdmissionRequest is not an object");
        };
        let info = map.entry("userInfo").or_insert_with(|| json!({}));
        if info.is_null() {
            *info = json!({});
        }
        let Some(info) = info.as_object_mut() else {
            bail!("the AdmissionRequest's `userInfo` is not an object");
        };
        let mut changed = Vec::new();
        if let Some(user) = &self.user {
            let old = info.insert("username".into(), json!(user));
            changed.push(format!("userInfo.username {} → `{user}` (--user)", shown(old.as_ref())));
        }
        if !self.groups.is_empty() {
            let old = info.insert("groups".into(), json!(self.groups));
            changed.push(format!("userInfo.groups {} → {} (--group)", shown(old.as_ref()), json!(self.groups)));
        }
        Ok(changed)
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(unset)".into(),
        Some(Value::String(s)) => format!("`{s}`"),
        Some(other) => other.to_string(),
    }
}

/// Whether a document is used verbatim, as an AdmissionReview or an
/// AdmissionRequest, rather than submitted as a plain object: the test
/// [`to_admission_request`] makes.
pub fn is_verbatim(doc: &Value) -> bool {
    let kind = doc.get("kind");
    kind.and_then(Value::as_str) == Some("AdmissionReview") || (doc.get("operation").is_some() && kind.is_some_and(Value::is_object))
}

/// The AdmissionRequest of a document, submitted as `identity`: a plain
/// object with it, a verbatim request with its `userInfo` replaced. Also
/// returns what was replaced in a verbatim request.
pub fn admission_request(doc: Value, identity: &Identity) -> Result<(Value, Vec<String>)> {
    let verbatim = is_verbatim(&doc);
    let mut request = to_admission_request(doc, &identity.submission())?;
    let changed = if verbatim { identity.apply(&mut request)? } else { Vec::new() };
    Ok((request, changed))
}

/// Parses `RULE=FILE` arguments.
pub fn parse_settings_args(args: &[String]) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    for a in args {
        let Some((rule, file)) = a.split_once('=') else {
            bail!("`--settings {a}`: expected RULE=FILE, e.g. `--settings gpu-runtime-class=settings.yaml`");
        };
        if native::rule(rule).is_none() {
            bail!(
                "`--settings {a}`: no rule named `{rule}`; rules: {}",
                native::names().collect::<Vec<_>>().join(", ")
            );
        }
        if out.insert(rule.to_string(), PathBuf::from(file)).is_some() {
            bail!("`--settings` given twice for `{rule}`");
        }
    }
    Ok(out)
}

/// One rule, ready to evaluate.
struct Loaded {
    rule: &'static NativePolicy,
    evaluator: Evaluator,
    settings: String,
}

fn load_rules(engine: &wasmtime::Engine, config: &Config) -> Result<Vec<Loaded>> {
    for rule in config.settings.keys() {
        if native::rule(rule).is_none() {
            bail!("no rule named `{rule}`");
        }
    }
    native::RULES
        .iter()
        .map(|rule| {
            let name = rule.metadata.name;
            let evaluator = match config.form {
                Form::Native => Evaluator::native(rule),
                Form::Module | Form::Component => {
                    let path = if config.form == Form::Module {
                        artifact::module_path(&config.artifacts, name)
                    } else {
                        artifact::component_path(&config.artifacts, name)
                    };
                    if !path.is_file() {
                        bail!("{} is missing: run `make artifacts` first (or scan with --native)", path.display());
                    }
                    Evaluator::from_file(engine, &path)?
                }
            };
            let settings = match config.settings.get(name) {
                Some(path) => {
                    let settings = read_settings(path).with_context(|| format!("the settings of `{name}`"))?;
                    let answer = evaluator.validate_settings(&settings)?;
                    if !answer.valid {
                        bail!(
                            "the settings of `{name}` in {} are invalid: {}",
                            path.display(),
                            answer.message.unwrap_or_default()
                        );
                    }
                    settings
                }
                // A rule that refuses its defaults runs with its example
                // settings (host-test/settings/<rule>.yaml, built in).
                None => match native::example_settings(name) {
                    Some(_) => native::deployable_settings(rule)?.to_string(),
                    None => "{}".into(),
                },
            };
            Ok(Loaded { rule, evaluator, settings })
        })
        .collect()
}

/// Evaluates documents: every governing rule through `evaluate(rule index,
/// AdmissionRequest JSON)`. Documents that are not Kubernetes objects, or
/// cannot become a request, are returned as notes.
pub fn evaluate_inputs(
    inputs: Vec<Input>,
    identity: &Identity,
    rules: &[&PolicyMetadata],
    evaluate: &mut dyn FnMut(usize, &str) -> Result<ValidationResponse>,
) -> Evaluated {
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    let mut overridden = Vec::new();
    for input in inputs {
        if let Some(reason) = not_an_object(&input.value) {
            skipped.push(Note { source: input.source, reason });
            continue;
        }
        let request = match admission_request(input.value, identity) {
            Ok((r, changed)) => {
                if !changed.is_empty() {
                    overridden.push(input.source.clone());
                }
                r
            }
            Err(e) => {
                skipped.push(Note { source: input.source, reason: format!("cannot make an admission request of it: {e:#}") });
                continue;
            }
        };
        let target = Target::of(&request);
        let text = request.to_string();
        let original = request.get("object").filter(|o| !o.is_null());
        let results = rules
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if target.governed_by(m) {
                    RuleResult::evaluated_on(evaluate(i, &text), original)
                } else {
                    RuleResult::not_governed()
                }
            })
            .collect();
        documents.push(DocumentReport { source: input.source, target, results });
    }
    Evaluated { documents, skipped, overridden }
}

/// What [`evaluate_inputs`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluated {
    /// Evaluated documents.
    pub documents: Vec<DocumentReport>,
    /// Documents not evaluated, and why.
    pub skipped: Vec<Note>,
    /// Verbatim requests whose `userInfo` the identity replaced.
    pub overridden: Vec<Source>,
}

/// Scans: reads every file, evaluates every document with every governing
/// rule. Errors only when the scan cannot run at all; unreadable files are
/// reported in [`Report::errors`].
pub fn scan(config: &Config) -> Result<Report> {
    let cluster = Arc::new(match &config.cluster {
        Some(dir) => FixtureCluster::from_dir(dir).with_context(|| format!("loading the cluster fixtures in {}", dir.display()))?,
        None => FixtureCluster::empty(),
    });
    scan_with(config, cluster, &mut |_, _| {})
}

/// Documents evaluated between two calls of a scan's progress callback.
const PROGRESS_STEP: usize = 256;

/// [`scan`] with the cluster lookups answered from `cluster` (whatever
/// `config.cluster` says), calling `progress(documents done, documents in
/// all)` as it goes.
pub fn scan_with(config: &Config, cluster: Arc<FixtureCluster>, progress: &mut dyn FnMut(usize, usize)) -> Result<Report> {
    let engine = engine::new_engine()?;
    let rules = load_rules(&engine, config)?;
    let files = collect_files(&config.paths, config.cluster.as_deref())?;
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for f in &files {
        let shown = if f.as_os_str() == "-" { "-".to_string() } else { f.display().to_string() };
        match read_file(f).and_then(|(name, text)| documents(&name, &text)) {
            Ok(docs) => inputs.extend(docs),
            Err(e) => errors.push(Note { source: Source { file: shown, ..Source::default() }, reason: format!("{e:#}") }),
        }
    }
    let metadata: Vec<&PolicyMetadata> = rules.iter().map(|r| r.rule.metadata).collect();
    let mut evaluate = |i: usize, request: &str| -> Result<ValidationResponse> {
        let r = rules.get(i).context("rule index out of range")?;
        r.evaluator.validate(request, &r.settings, &cluster)
    };
    let total = inputs.len();
    let (mut documents, mut skipped, mut overridden) = (Vec::new(), Vec::new(), Vec::new());
    let mut inputs = inputs.into_iter().peekable();
    while inputs.peek().is_some() {
        let chunk: Vec<Input> = inputs.by_ref().take(PROGRESS_STEP).collect();
        let e = evaluate_inputs(chunk, &config.identity, &metadata, &mut evaluate);
        documents.extend(e.documents);
        skipped.extend(e.skipped);
        overridden.extend(e.overridden);
        progress(documents.len() + skipped.len(), total);
    }
    Ok(Report {
        form: config.form,
        rules: metadata.iter().map(|m| RuleInfo::of(m)).collect(),
        files: files.len(),
        documents,
        skipped,
        errors,
        overridden,
    })
}

// --------------------------------------------------------------- rendering

/// Splits text into words for wrapping, keeping `backtick spans` whole so a
/// field path or a value to copy is never broken across lines.
fn words(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_tick = false;
    for c in text.chars() {
        if c == '`' {
            in_tick = !in_tick;
        }
        if c.is_whitespace() && !in_tick {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    // A span too long for a line (or an unbalanced backtick) is split at
    // its spaces after all.
    out.into_iter()
        .flat_map(|w| {
            if w.chars().count() > width && w.contains(' ') {
                w.split(' ').filter(|p| !p.is_empty()).map(str::to_string).collect()
            } else {
                vec![w]
            }
        })
        .collect()
}

/// Wraps `text` to `width` columns; words longer than a line get a line of
/// their own.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(20);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in words(text, width) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
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
fn change_line(op: &Value) -> String {
    let path = dotted(op.get("path").and_then(Value::as_str).unwrap_or_default());
    let value = op.get("value").map(|v| v.to_string()).unwrap_or_default();
    match op.get("op").and_then(Value::as_str).unwrap_or_default() {
        "add" => format!("+ {path}: {value}"),
        "remove" => format!("- {path}"),
        "replace" => format!("~ {path}: {value}"),
        other => format!("{other} {path} {value}"),
    }
}

/// Appends `text` as an indented bullet, wrapped.
fn bullet(out: &mut String, indent: usize, text: &str, width: usize) {
    let pad = " ".repeat(indent);
    for (i, line) in wrap(text, width.saturating_sub(indent + 2)).iter().enumerate() {
        let mark = if i == 0 { "- " } else { "  " };
        out.push_str(&format!("{pad}{mark}{line}\n"));
    }
}

/// Appends a diff line (`+ path: value`), wrapped, its continuation lines
/// indented under the path.
fn diff_line(out: &mut String, indent: usize, line: &str, width: usize) {
    let pad = " ".repeat(indent);
    let (mark, rest) = line.split_at(line.find(' ').map_or(0, |i| i + 1));
    for (i, l) in wrap(rest, width.saturating_sub(indent + 2)).iter().enumerate() {
        let m = if i == 0 { mark } else { "  " };
        out.push_str(&format!("{pad}{m}{l}\n"));
    }
}

fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let last = c + 1 == row.len();
            if !last {
                let w = widths.get(c).copied().unwrap_or(0);
                line.push_str(&" ".repeat(w.saturating_sub(cell.chars().count())));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The human report: the verdict table, the messages grouped by document,
/// skipped documents, and a summary line that says what the exit status
/// will be.
pub fn render_table(report: &Report, width: usize, fail_on: FailOn) -> String {
    let mut out = String::new();
    let form = match report.form {
        Form::Module => "Kubewarden modules",
        Form::Component => "components",
        Form::Native => "natively linked rules",
    };
    out.push_str(&format!(
        "aigov scan: {} document(s) in {} file(s), {} rule(s) ({form})\n\n",
        report.documents.len(),
        report.files,
        report.rules.len()
    ));

    if !report.documents.is_empty() {
        let mut rows = vec![{
            let mut h = vec!["#".to_string(), "KIND".to_string(), "NAMESPACE/NAME".to_string()];
            h.extend(report.rules.iter().map(|r| r.name.clone()));
            h.push("SOURCE".to_string());
            h
        }];
        for (i, d) in report.documents.iter().enumerate() {
            let mut row = vec![(i + 1).to_string(), d.target.what(), d.target.object()];
            row.extend(d.results.iter().map(|r| r.outcome.cell().to_string()));
            row.push(d.source.to_string());
            rows.push(row);
        }
        out.push_str(&table(&rows));
        out.push_str("\npass: admitted   DENY: rejected   warn: admitted with warnings   -: the rule does not govern this kind or operation\n");
        if report.documents.iter().any(|d| d.results.iter().any(|r| r.outcome == Outcome::Mutate)) {
            out.push_str("mutate: admitted with changes a mutating rule makes (shown below as a diff)\n");
        }
    }

    let detailed: Vec<(usize, &DocumentReport)> = report
        .documents
        .iter()
        .enumerate()
        .filter(|(_, d)| d.results.iter().any(RuleResult::has_details))
        .collect();
    if !detailed.is_empty() {
        out.push_str("\nWhat the rules said\n-------------------\n");
    }
    for (i, d) in detailed {
        out.push_str(&format!("\n[{}] {} {}  ({})\n", i + 1, d.target.what(), d.target.object(), d.source));
        for (rule, r) in report.rules.iter().zip(&d.results) {
            if !r.has_details() {
                continue;
            }
            let about = if rule.description.is_empty() { String::new() } else { format!(" ({})", rule.description) };
            match (&r.response, &r.error) {
                (_, Some(error)) => {
                    out.push_str(&format!("  ERROR {} could not evaluate it\n", rule.name));
                    bullet(&mut out, 4, error, width);
                }
                (Some(resp), None) => {
                    let head = match r.outcome {
                        Outcome::Deny => "DENY ",
                        Outcome::Warn => "warn ",
                        Outcome::Mutate => "mutate ",
                        _ => "note ",
                    };
                    let count = match (r.violations().len(), r.changes().len()) {
                        (0, 0) => String::new(),
                        (0, 1) => ": 1 change".to_string(),
                        (0, n) => format!(": {n} changes"),
                        (1, _) => ": 1 violation".to_string(),
                        (n, _) => format!(": {n} violations"),
                    };
                    out.push_str(&format!("  {head}{}{about}{count}\n", rule.name));
                    if let Some(message) = resp.message.as_deref().filter(|_| !resp.accepted) {
                        let code = match resp.code {
                            Some(400) => " (the request is malformed, code 400)",
                            _ => "",
                        };
                        if !code.is_empty() {
                            out.push_str(&format!("    rejected{code}:\n"));
                        }
                        for v in violations(message) {
                            bullet(&mut out, 4, v, width);
                        }
                    }
                    for w in &resp.warnings {
                        bullet(&mut out, 4, &format!("warning: {w}"), width);
                    }
                    for change in r.changes() {
                        diff_line(&mut out, 4, &change, width);
                    }
                    for (k, v) in &resp.audit_annotations {
                        // The SDK's `violations` annotation holds one per line.
                        for line in v.split('\n').filter(|l| !l.trim().is_empty()) {
                            bullet(&mut out, 4, &format!("audit annotation `{k}`: {}", line.trim()), width);
                        }
                    }
                    if !resp.accepted
                        && let Some(docs) = &rule.docs
                    {
                        out.push_str(&format!("    docs (what it checks, how to comply, settings): {docs}\n"));
                    }
                }
                (None, None) => {}
            }
        }
    }

    if !report.skipped.is_empty() || !report.errors.is_empty() {
        out.push_str("\nNot evaluated\n-------------\n");
        for n in &report.errors {
            bullet(&mut out, 0, &format!("ERROR {}: {}", n.source, n.reason), width);
        }
        for n in &report.skipped {
            bullet(&mut out, 0, &format!("skipped {}: {}", n.source, n.reason), width);
        }
    }

    let s = report.summary();
    let mut parts = vec![match s.violations {
        0 => format!("{} denied", s.denied),
        1 => format!("{} denied (1 violation)", s.denied),
        n => format!("{} denied ({n} violations)", s.denied),
    }];
    if s.warned > 0 {
        parts.push(format!("{} admitted with warnings", s.warned));
    }
    if s.mutated > 0 {
        parts.push(format!("{} admitted with changes", s.mutated));
    }
    parts.push(format!("{} passed", s.passed));
    if s.errors > 0 {
        parts.push(format!("{} error(s)", s.errors));
    }
    if s.skipped > 0 {
        parts.push(format!("{} skipped", s.skipped));
    }
    out.push_str(&format!("\nSummary: {} document(s): {}.", s.documents, parts.join(", ")));
    let status = exit_status(report, fail_on);
    let gate = match (status, fail_on) {
        (1, _) => " Exit status 1 (`--fail-on none` reports without failing).".to_string(),
        (_, FailOn::None) if s.denied + s.errors + s.warned > 0 => " Exit status 0 (`--fail-on none`).".to_string(),
        _ => String::new(),
    };
    out.push_str(&gate);
    out.push('\n');
    out
}

/// The machine-readable report.
pub fn to_json(report: &Report) -> Value {
    let source = |s: &Source| {
        let mut v = json!({"file": s.file, "document": s.document});
        if let (Some(item), Some(map)) = (s.item, v.as_object_mut()) {
            map.insert("item".into(), json!(item));
        }
        v
    };
    let documents: Vec<Value> = report
        .documents
        .iter()
        .map(|d| {
            let results: serde_json::Map<String, Value> = report
                .rules
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
                    }
                    (rule.name.clone(), v)
                })
                .collect();
            let t = &d.target;
            json!({
                "source": source(&d.source),
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
        })
        .collect();
    let notes = |notes: &[Note]| -> Vec<Value> {
        notes.iter().map(|n| json!({"source": source(&n.source), "reason": n.reason})).collect()
    };
    let s = report.summary();
    json!({
        "form": report.form.name(),
        "rules": report.rules.iter().map(|r| json!({
            "name": r.name, "version": r.version, "description": r.description, "docs": r.docs,
        })).collect::<Vec<_>>(),
        "documents": documents,
        "skipped": notes(&report.skipped),
        "errors": notes(&report.errors),
        "summary": {
            "files": report.files,
            "documents": s.documents,
            "denied": s.denied,
            "warned": s.warned,
            "mutated": s.mutated,
            "passed": s.passed,
            "errors": s.errors,
            "skipped": s.skipped,
            "violations": s.violations,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use aigov_sdk::metadata::Rule;

    const POD_RULE: PolicyMetadata = PolicyMetadata {
        name: "pods-only",
        version: "0.1.0",
        rules: &[Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods"], operations: &["CREATE", "UPDATE"] }],
        mutating: false,
        background_audit: true,
        context_aware_resources: &[],
        annotations: &[("io.kubewarden.policy.description", "Pods are checked")],
    };
    const EXEC_RULE: PolicyMetadata = PolicyMetadata {
        name: "exec-only",
        version: "0.1.0",
        rules: &[Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods/exec", "pods/attach"], operations: &["CONNECT"] }],
        mutating: false,
        background_audit: false,
        context_aware_resources: &[],
        annotations: &[],
    };
    const RAY_RULE: PolicyMetadata = PolicyMetadata {
        name: "ray",
        version: "0.1.0",
        rules: &[Rule { api_groups: &["ray.io"], api_versions: &["*"], resources: &["rayclusters", "rayjobs"], operations: &["*"] }],
        mutating: false,
        background_audit: true,
        context_aware_resources: &[],
        annotations: &[],
    };

    fn request(v: Value) -> Value {
        to_admission_request(v, &Submission::default()).unwrap()
    }

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}})
    }

    fn exec_review() -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "PodExecOptions"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "exec",
            "name": "trainer-0", "namespace": "ml", "operation": "CONNECT",
            "userInfo": {"username": "jane"}, "object": {"apiVersion": "v1", "kind": "PodExecOptions", "command": ["bash"]}}})
    }

    #[test]
    fn targets_follow_webhook_matching() {
        let t = Target::of(&request(pod("p")));
        assert_eq!((t.group.as_str(), t.version.as_str(), t.resource.as_str(), t.operation.as_str()), ("", "v1", "pods", "CREATE"));
        assert!(t.governed_by(&POD_RULE));
        assert!(!t.governed_by(&EXEC_RULE));
        assert!(!t.governed_by(&RAY_RULE));
        assert_eq!((t.what(), t.object()), ("Pod".to_string(), "ml/p".to_string()));

        let e = Target::of(&request(exec_review()));
        assert_eq!(e.sub_resource.as_deref(), Some("exec"));
        assert!(e.governed_by(&EXEC_RULE));
        assert!(!e.governed_by(&POD_RULE), "a pods rule does not receive pods/exec");
        assert_eq!((e.what(), e.object()), ("CONNECT pods/exec".to_string(), "ml/trainer-0".to_string()));
        assert_eq!(e.user.as_deref(), Some("jane"));

        let r = Target::of(&request(json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"generateName": "tune-"}})));
        assert!(r.governed_by(&RAY_RULE));
        assert_eq!((r.group.as_str(), r.resource.as_str()), ("ray.io", "rayjobs"));
        assert_eq!(r.object(), "default/tune-*");

        let del = to_admission_request(pod("gone"), &Submission { operation: Some("DELETE".into()), ..Submission::default() }).unwrap();
        let d = Target::of(&del);
        assert!(!d.governed_by(&POD_RULE));
        assert_eq!((d.what(), d.object()), ("Pod (DELETE)".to_string(), "ml/gone".to_string()));

        let ns = Target::of(&request(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})));
        assert_eq!(ns.object(), "ml");
    }

    #[test]
    fn documents_lists_and_non_objects() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {name: b}}\n---\njust a string\n---\n{name: no-kind}\n";
        let docs = documents("f.yaml", text).unwrap();
        assert_eq!(docs.len(), 4);
        assert_eq!(docs[1].source.to_string(), "f.yaml #1 item 2");
        assert_eq!(docs[2].source.to_string(), "f.yaml #2");
        assert!(not_an_object(&docs[0].value).is_none());
        assert!(not_an_object(&docs[2].value).unwrap().contains("string"));
        assert!(not_an_object(&docs[3].value).unwrap().contains("no `apiVersion` and `kind`"));
        assert!(not_an_object(&exec_review()).is_none());
        assert!(not_an_object(&exec_review()["request"]).is_none(), "a bare AdmissionRequest");
        assert_eq!(documents("one.yaml", "apiVersion: v1\nkind: Pod\n").unwrap()[0].source.to_string(), "one.yaml");
    }

    fn deny(message: &str) -> ValidationResponse {
        ValidationResponse::reject(message, None)
    }

    /// Two documents and a note, evaluated by a fake evaluator.
    fn report() -> Report {
        let inputs = vec![
            Input { source: Source { file: "a.yaml".into(), document: 1, item: None, multi: false }, value: pod("good") },
            Input { source: Source { file: "b.yaml".into(), document: 1, item: None, multi: true }, value: pod("bad") },
            Input { source: Source { file: "b.yaml".into(), document: 2, item: None, multi: true }, value: json!("text") },
            Input { source: Source { file: "c.yaml".into(), document: 1, item: None, multi: false }, value: exec_review() },
        ];
        let rules = [&POD_RULE, &EXEC_RULE];
        let mut calls = Vec::new();
        let evaluated = evaluate_inputs(inputs, &Identity::default(), &rules, &mut |i, req| {
            calls.push(i);
            let name = Target::of(&serde_json::from_str(req).unwrap()).name.unwrap_or_default();
            Ok(match (i, name.as_str()) {
                // Two violations, one per line; the first holds a `; `.
                (0, "bad") => deny(TWO_VIOLATIONS),
                (1, _) => deny("`jane` may not exec into GPU pod `ml/trainer-0`"),
                _ => {
                    let mut r = ValidationResponse::accept();
                    if name == "good" {
                        r.warnings.push("consider a newer image".into());
                    }
                    r
                }
            })
        });
        assert_eq!(calls, [0, 0, 1], "only governing rules are called");
        assert!(evaluated.overridden.is_empty());
        Report {
            form: Form::Native,
            rules: rules.iter().map(|m| RuleInfo::of(m)).collect(),
            files: 3,
            documents: evaluated.documents,
            skipped: evaluated.skipped,
            errors: vec![Note { source: Source { file: "broken.yaml".into(), ..Source::default() }, reason: "document 1 is not valid YAML".into() }],
            overridden: Vec::new(),
        }
    }

    /// A rejection with two violations, each holding `; `.
    const TWO_VIOLATIONS: &str = "`spec.runtimeClassName` is not set; pods that request GPUs must use runtime class `nvidia`\n`metadata.labels` lacks `opencost.io/team`; add it to the pod template";

    #[test]
    fn outcomes_and_exit_status() {
        let r = report();
        let cells: Vec<Vec<&str>> = r.documents.iter().map(|d| d.results.iter().map(|x| x.outcome.cell()).collect()).collect();
        assert_eq!(cells, [vec!["warn", "-"], vec!["DENY", "-"], vec!["-", "DENY"]]);
        assert_eq!(r.skipped.len(), 1);
        let s = r.summary();
        assert_eq!((s.documents, s.denied, s.warned, s.passed, s.errors, s.skipped), (3, 2, 1, 0, 1, 1));
        assert_eq!(s.violations, 3, "two in one rejection, one in the other");
        assert_eq!(r.documents[1].results[0].violations().len(), 2);
        assert!(r.documents[0].results[0].violations().is_empty(), "an admission has no violations");
        assert_eq!(exit_status(&r, FailOn::Deny), 1);
        assert_eq!(exit_status(&r, FailOn::None), 0);

        let mut only_warnings = r.clone();
        only_warnings.documents.truncate(1);
        only_warnings.errors.clear();
        assert_eq!(exit_status(&only_warnings, FailOn::Deny), 0);
        assert_eq!(exit_status(&only_warnings, FailOn::Warn), 1);

        let error = RuleResult::evaluated(Err(anyhow::anyhow!("the policy trapped")));
        assert_eq!(error.outcome, Outcome::Error);
        assert!(Outcome::Error > Outcome::Deny && Outcome::Deny > Outcome::Warn && Outcome::Warn > Outcome::Pass);
    }

    #[test]
    fn table_rendering() {
        let text = render_table(&report(), 80, FailOn::Deny);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().position(|l| l.starts_with("#  KIND")).unwrap();
        assert_eq!(lines[header], "#  KIND               NAMESPACE/NAME  pods-only  exec-only  SOURCE");
        assert_eq!(lines[header + 1], "1  Pod                ml/good         warn       -          a.yaml");
        assert_eq!(lines[header + 2], "2  Pod                ml/bad          DENY       -          b.yaml #1");
        assert_eq!(lines[header + 3], "3  CONNECT pods/exec  ml/trainer-0    -          DENY       c.yaml");
        // Messages: one bullet per violation (per line, never per `; `),
        // under the rule that said it, with the count.
        let details = text.split("What the rules said").nth(1).unwrap();
        assert!(details.contains(
            "[2] Pod ml/bad  (b.yaml #1)\n  DENY pods-only (Pods are checked): 2 violations\n    - `spec.runtimeClassName` is not set; pods that request GPUs must use\n      runtime class `nvidia`\n    - `metadata.labels` lacks `opencost.io/team`; add it to the pod template\n"
        ), "{details}");
        assert_eq!(details.matches("\n    - ").count(), 4, "2 + 1 violations and 1 warning: {details}");
        assert!(details.contains("[1] Pod ml/good  (a.yaml)\n  warn pods-only (Pods are checked)\n    - warning: consider a newer image\n"));
        assert!(details.contains("  DENY exec-only: 1 violation\n    - `jane` may not exec"));
        assert!(text.contains("skipped b.yaml #2: not a Kubernetes object (a YAML string)"));
        assert!(text.contains("ERROR broken.yaml: document 1 is not valid YAML"));
        assert!(text.ends_with("Summary: 3 document(s): 2 denied (3 violations), 1 admitted with warnings, 0 passed, 1 error(s), 1 skipped. Exit status 1 (`--fail-on none` reports without failing).\n"));
        for line in details.lines().filter(|l| !l.starts_with("Summary:")) {
            assert!(line.chars().count() <= 80, "wrapped: {line}");
        }
        assert_eq!(text, render_table(&report(), 80, FailOn::Deny), "deterministic");
        assert!(render_table(&report(), 80, FailOn::None).ends_with("Exit status 0 (`--fail-on none`).\n"));
    }

    #[test]
    fn mutations_show_as_a_diff() {
        let inputs = vec![Input { source: Source { file: "p.yaml".into(), document: 1, item: None, multi: false }, value: pod("p") }];
        let evaluated = evaluate_inputs(inputs, &Identity::default(), &[&POD_RULE], &mut |_, req| {
            let mut object = serde_json::from_str::<Value>(req).unwrap()["object"].clone();
            object["metadata"]["labels"] = json!({"owner": "jane"});
            object["spec"]["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists"}]);
            let mut r = ValidationResponse::accept();
            r.mutated_object = serde_json::value::RawValue::from_string(object.to_string()).ok();
            Ok(r)
        });
        let report = Report {
            form: Form::Native,
            rules: vec![RuleInfo::of(&POD_RULE)],
            files: 1,
            documents: evaluated.documents,
            skipped: Vec::new(),
            errors: Vec::new(),
            overridden: Vec::new(),
        };
        let r = &report.documents[0].results[0];
        assert_eq!(r.outcome, Outcome::Mutate);
        assert_eq!(r.changes(), ["+ metadata.labels: {\"owner\":\"jane\"}", "+ spec: {\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}"]);
        let text = render_table(&report, 100, FailOn::Deny);
        assert!(text.contains("1  Pod   ml/p            mutate     p.yaml") || text.contains(" mutate "), "{text}");
        assert!(text.contains("  mutate pods-only (Pods are checked): 2 changes\n    + metadata.labels: {\"owner\":\"jane\"}\n"), "{text}");
        assert!(text.contains("mutate: admitted with changes"), "{text}");
        assert!(text.contains("0 denied, 1 admitted with changes, 0 passed."), "{text}");
        assert_eq!(exit_status(&report, FailOn::Warn), 0, "a change is not a warning");
        let v = to_json(&report);
        assert_eq!(v["documents"][0]["results"]["pods-only"]["verdict"], "mutate");
        assert_eq!(v["documents"][0]["results"]["pods-only"]["patch"][0], json!({"op": "add", "path": "/metadata/labels", "value": {"owner": "jane"}}));
        assert_eq!(v["summary"]["mutated"], 1);
    }

    #[test]
    fn pointers_read_as_paths() {
        assert_eq!(dotted("/spec/template/metadata/labels/owner"), "spec.template.metadata.labels.owner");
        assert_eq!(dotted("/spec/containers/0/resources/limits/nvidia.com~1gpu"), "spec.containers[0].resources.limits.nvidia.com/gpu");
        assert_eq!(dotted(""), "(the whole object)");
        assert_eq!(change_line(&json!({"op": "remove", "path": "/a/b"})), "- a.b");
        assert_eq!(change_line(&json!({"op": "replace", "path": "/a", "value": 1})), "~ a: 1");
    }

    #[test]
    fn wrapping_keeps_code_spans_whole() {
        let lines = wrap("`spec.workerGroupSpecs[1].template.spec.tolerations` has no toleration for the GPU node taint: add `{key: nvidia.com/gpu, operator: Exists}`", 60);
        assert_eq!(
            lines,
            [
                "`spec.workerGroupSpecs[1].template.spec.tolerations` has no",
                "toleration for the GPU node taint: add",
                "`{key: nvidia.com/gpu, operator: Exists}`",
            ]
        );
        assert_eq!(wrap("", 40), [""]);
        let long = "x".repeat(50);
        assert_eq!(wrap(&format!("a {long} b"), 30), ["a", long.as_str(), "b"]);
        assert_eq!(wrap("an `unbalanced tick runs to the end of the text without closing it at all`", 30).len(), 3);
    }

    #[test]
    fn violations_are_lines_and_may_hold_semicolons() {
        assert_eq!(violations("a; b;  ; c"), ["a; b;  ; c"], "`; ` never splits a violation");
        assert_eq!(violations("first; with detail\nsecond\n\n  third; more  \n"), ["first; with detail", "second", "third; more"]);
        assert_eq!(violations("one"), ["one"]);
        assert!(violations("").is_empty());
        assert!(violations("\n \n").is_empty());
    }

    #[test]
    fn audit_annotations_show_one_violation_per_line() {
        let mut r = ValidationResponse::accept();
        r.warnings.push("x (audit mode, not enforced): a; b".into());
        r.audit_annotations.insert("violations".into(), "a; b\nc".into());
        let report = Report {
            form: Form::Native,
            rules: vec![RuleInfo::of(&POD_RULE)],
            files: 1,
            documents: vec![DocumentReport {
                source: Source { file: "a.yaml".into(), document: 1, item: None, multi: false },
                target: Target::of(&request(pod("p"))),
                results: vec![RuleResult::evaluated(Ok(r))],
            }],
            skipped: Vec::new(),
            errors: Vec::new(),
            overridden: Vec::new(),
        };
        let text = render_table(&report, 100, FailOn::Deny);
        assert!(text.contains("    - audit annotation `violations`: a; b\n    - audit annotation `violations`: c\n"), "{text}");
        assert_eq!(report.summary().violations, 0, "an admission in audit mode has no violations");
    }

    #[test]
    fn identity_flags_reach_plain_objects_and_verbatim_requests() {
        let admin = Identity { user: Some("admin".into()), groups: vec!["system:masters".into()] };
        // A plain object is submitted as the identity.
        let (r, changed) = admission_request(pod("p"), &admin).unwrap();
        assert_eq!(r["userInfo"], json!({"username": "admin", "groups": ["system:masters"]}));
        assert!(changed.is_empty(), "nothing verbatim was changed");
        // A verbatim review keeps everything but the replaced fields.
        let mut review = exec_review();
        review["request"]["userInfo"]["uid"] = json!("42");
        let (r, changed) = admission_request(review.clone(), &admin).unwrap();
        assert_eq!(r["userInfo"], json!({"username": "admin", "groups": ["system:masters"], "uid": "42"}));
        assert_eq!(r["name"], "trainer-0");
        assert_eq!(changed.len(), 2);
        assert!(changed[0].contains("`jane` → `admin` (--user)"), "{changed:?}");
        assert!(changed[1].contains("(unset) → [\"system:masters\"] (--group)"), "{changed:?}");
        // Only --group: the user stays.
        let groups = Identity { user: None, groups: vec!["ml".into()] };
        let (r, changed) = admission_request(review["request"].clone(), &groups).unwrap();
        assert_eq!(r["userInfo"]["username"], "jane");
        assert_eq!(r["userInfo"]["groups"], json!(["ml"]));
        assert_eq!(changed.len(), 1);
        // No flag: verbatim is verbatim.
        let (r, changed) = admission_request(review.clone(), &Identity::default()).unwrap();
        assert_eq!(r, review["request"]);
        assert!(changed.is_empty());
        // A request without userInfo gets one; a broken one is refused.
        let mut bare = review["request"].clone();
        bare.as_object_mut().unwrap().remove("userInfo");
        assert_eq!(admission_request(bare, &admin).unwrap().0["userInfo"]["username"], "admin");
        let mut broken = review["request"].clone();
        broken["userInfo"] = json!("jane");
        assert!(admission_request(broken, &admin).unwrap_err().to_string().contains("not an object"));
        assert!(is_verbatim(&review) && is_verbatim(&review["request"]) && !is_verbatim(&pod("p")));
    }

    #[test]
    fn scan_reports_which_verbatim_documents_took_the_identity() {
        let inputs = vec![
            Input { source: Source { file: "pod.yaml".into(), document: 1, item: None, multi: false }, value: pod("p") },
            Input { source: Source { file: "exec.yaml".into(), document: 1, item: None, multi: false }, value: exec_review() },
        ];
        let identity = Identity { user: Some("admin".into()), groups: Vec::new() };
        let mut users = Vec::new();
        let evaluated = evaluate_inputs(inputs, &identity, &[&POD_RULE, &EXEC_RULE], &mut |_, req| {
            users.push(Target::of(&serde_json::from_str(req).unwrap()).user.unwrap_or_default());
            Ok(ValidationResponse::accept())
        });
        assert_eq!(users, ["admin", "admin"], "both the plain object and the review are submitted as --user");
        assert_eq!(evaluated.overridden.iter().map(ToString::to_string).collect::<Vec<_>>(), ["exec.yaml"]);
    }

    #[test]
    fn json_report_shape() {
        let v = to_json(&report());
        assert_eq!(v["form"], "native");
        assert_eq!(v["rules"][0]["name"], "pods-only");
        assert_eq!(v["rules"][0]["description"], "Pods are checked");
        let docs = v["documents"].as_array().unwrap();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0]["verdict"], "warn");
        assert_eq!(docs[0]["results"]["pods-only"]["warnings"][0], "consider a newer image");
        assert_eq!(docs[0]["results"]["exec-only"], json!({"verdict": "not-governed"}));
        assert_eq!(docs[1]["source"], json!({"file": "b.yaml", "document": 1}));
        assert_eq!(docs[1]["apiVersion"], "v1");
        assert_eq!(docs[1]["namespace"], "ml");
        assert_eq!(docs[1]["results"]["pods-only"]["verdict"], "deny");
        assert_eq!(
            docs[1]["results"]["pods-only"]["violations"],
            json!([
                "`spec.runtimeClassName` is not set; pods that request GPUs must use runtime class `nvidia`",
                "`metadata.labels` lacks `opencost.io/team`; add it to the pod template"
            ])
        );
        assert_eq!(docs[2]["results"]["exec-only"]["violations"].as_array().unwrap().len(), 1);
        assert_eq!(docs[2]["operation"], "CONNECT");
        assert_eq!(docs[2]["subResource"], "exec");
        assert_eq!(docs[2]["kind"], "PodExecOptions");
        assert_eq!(v["skipped"][0]["source"]["document"], 2);
        assert_eq!(v["errors"][0]["source"]["file"], "broken.yaml");
        assert_eq!(
            v["summary"],
            json!({"files": 3, "documents": 3, "denied": 2, "warned": 1, "mutated": 0, "passed": 0, "errors": 1, "skipped": 1, "violations": 3})
        );
    }

    #[test]
    fn settings_arguments() {
        let rule = native::names().next().unwrap();
        let parsed = parse_settings_args(&[format!("{rule}=s.yaml")]).unwrap();
        assert_eq!(parsed.get(rule), Some(&PathBuf::from("s.yaml")));
        assert!(parse_settings_args(&["nonsense".into()]).is_err());
        assert!(parse_settings_args(&["no-such-rule=x.yaml".into()]).unwrap_err().to_string().contains("no rule named"));
        assert!(parse_settings_args(&[format!("{rule}=a"), format!("{rule}=b")]).is_err());
    }

    #[test]
    fn collects_files_in_order_without_the_cluster_dir() {
        let root = std::env::temp_dir().join(format!("aigov-scan-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in ["b/z.yaml", "b/a.json", "a.yml", "cluster/pod.yaml", ".hidden/x.yaml", "notes.md"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "{}").unwrap();
        }
        let files = collect_files(std::slice::from_ref(&root), Some(&root.join("cluster"))).unwrap();
        let rel: Vec<String> = files.iter().map(|f| f.strip_prefix(&root).unwrap().display().to_string()).collect();
        assert_eq!(rel, ["a.yml", "b/a.json", "b/z.yaml"]);
        let explicit = collect_files(&[root.join("notes.md"), root.join("cluster/pod.yaml")], Some(&root.join("cluster"))).unwrap();
        assert_eq!(explicit.len(), 2, "files named explicitly are always scanned");
        assert!(collect_files(&[root.join("missing")], None).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
