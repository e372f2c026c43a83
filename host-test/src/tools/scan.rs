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
use aigov_sdk::runtime::metadata::PolicyMetadata;
use aigov_sdk::{NativePolicy, ValidationResponse};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::run::admission::{Submission, parse_manifests, plural, read_settings, to_admission_request};
use crate::run::artifact::{self, Evaluator, Warm};
use crate::run::cluster::FixtureCluster;
use crate::run::{engine, native};
use crate::tools::report::{
    self,
    spill::{Spill, indent},
};

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
    /// Workers evaluating documents (default: one per core). The output
    /// is the same whatever the number.
    #[arg(long, short = 'j', default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
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
        strategy: Strategy::Bundle,
        jobs: args.jobs,
    };
    let cluster = Arc::new(match &config.cluster {
        Some(dir) => FixtureCluster::from_dir(dir).with_context(|| format!("loading the cluster fixtures in {}", dir.display()))?,
        None => FixtureCluster::empty(),
    });
    let scanner = Scanner::new(&config, cluster)?;
    let mut out = std::io::BufWriter::with_capacity(64 << 10, out);
    let (summary, overridden) = write_report(&scanner, args.format, args.fail_on, &mut out)?;
    out.flush()?;
    if !overridden.is_empty() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "aigov scan: {} applied to {} AdmissionRequest/AdmissionReview document(s) used verbatim: {}",
            config.identity.flags(),
            overridden.len(),
            overridden.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(ExitCode::from(u8::from(fails(&summary, args.fail_on))))
}

/// Runs a scan and writes its report in `format` to `out` as it goes:
/// memory does not grow with the number of documents (what must wait for
/// the end waits in temporary files). Returns the summary and the verbatim requests
/// whose `userInfo` `--user`/`--group` replaced.
pub fn write_report(scanner: &Scanner, format: Format, fail_on: FailOn, out: &mut dyn Write) -> Result<(Summary, Vec<Source>)> {
    let mut overridden = Vec::new();
    let summary = match format {
        // Written as the documents are decided: memory does not grow with
        // their number.
        Format::Table => {
            let mut w = TableWriter::new(scanner.form(), scanner.rules(), scanner.files(), WRAP_WIDTH, fail_on, &Spill::file)?;
            let s = stream(scanner, &mut overridden, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Json => {
            let mut w = JsonWriter {
                out,
                form: scanner.form(),
                rules: scanner.rules(),
                files: scanner.files(),
                skipped: Vec::new(),
                errors: Vec::new(),
                tally: Tally::default(),
            };
            let s = stream(scanner, &mut overridden, &mut |item| w.add(item))?;
            w.finish()?;
            s
        }
        // Grouped by rule (JUnit) or namespace (PolicyReport), or with a
        // header that depends on every result (SARIF's invocation): written
        // as they arrive to spills, each group or the results whole at the end.
        Format::Junit => {
            let mut w = report::junit::Writer::new(scanner.rules(), &Spill::file)?;
            let s = stream(scanner, &mut overridden, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Sarif => {
            let mut w = report::sarif::Writer::new(scanner.rules(), &Spill::file)?;
            let s = stream(scanner, &mut overridden, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Policyreport => {
            let mut w = report::policyreport::Writer::new(scanner.rules(), chrono::Utc::now(), &Spill::file);
            let s = stream(scanner, &mut overridden, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
    };
    Ok((summary, overridden))
}

/// Runs `scanner`, handing each item to `add`, noting the verbatim
/// requests `--user`/`--group` replaced in `overridden`; returns the counts.
fn stream(scanner: &Scanner, overridden: &mut Vec<Source>, add: &mut dyn FnMut(&Item) -> Result<()>) -> Result<Summary> {
    let mut tally = Tally::default();
    scanner.run(&mut |_, _| {}, &mut |item| {
        tally.add(&item);
        if let Item::Overridden(s) = &item {
            overridden.push(s.clone());
        }
        add(&item)
    })?;
    Ok(tally.0)
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

    fn has_details(&self) -> bool {
        self.error.is_some()
            || self.patch.is_some()
            || self.response.as_ref().is_some_and(|r| !r.accepted || !r.warnings.is_empty() || !r.audit_annotations.is_empty())
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
    /// Adds what the scan yielded.
    pub fn add(&mut self, item: Item) {
        match item {
            Item::Document(d) => self.documents.push(d),
            Item::Skipped(n) => self.skipped.push(n),
            Item::Error(n) => self.errors.push(n),
            Item::Overridden(s) => self.overridden.push(s),
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

/// The exit status for a report: 1 when it fails by `fail_on`, else 0.
pub fn exit_status(report: &Report, fail_on: FailOn) -> u8 {
    u8::from(fails(&report.summary(), fail_on))
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
    let docs = parse_manifests(text)?;
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
    /// How the documents are evaluated.
    pub strategy: Strategy,
    /// Workers evaluating documents (0: one per core).
    pub jobs: usize,
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
        Submission { user: self.user.clone(), groups: (!self.groups.is_empty()).then(|| self.groups.clone()), ..Submission::default() }
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
            bail!("`--settings {a}`: no rule named `{rule}`; rules: {}", native::names().collect::<Vec<_>>().join(", "));
        }
        if out.insert(rule.to_string(), PathBuf::from(file)).is_some() {
            bail!("`--settings` given twice for `{rule}`");
        }
    }
    Ok(out)
}

/// How the documents are evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// The validating rules in one call of the bundle (one parse of the
    /// request), each rule's answer read back from the bundle's merged one
    /// (its lines carry the rule's name); the mutating rules one call each,
    /// so that each rule's change is its own. A document the bundle's answer
    /// cannot be split for (a malformed request, a trap, an AdmissionRequest
    /// or AdmissionReview used verbatim) goes through the rules one by one.
    #[default]
    Bundle,
    /// One call per rule and document (the reference the bundle is checked
    /// against).
    PerRule,
}

/// One rule, ready to evaluate: its artifact is compiled when first
/// needed (with the bundle, only for documents the bundle's answer cannot
/// be split for).
struct Loaded {
    rule: &'static NativePolicy,
    path: Option<PathBuf>,
    evaluator: std::sync::OnceLock<std::result::Result<Evaluator, String>>,
    settings: String,
}

impl Loaded {
    fn evaluator(&self, engine: &wasmtime::Engine) -> Result<&Evaluator> {
        let e = self.evaluator.get_or_init(|| match &self.path {
            None => Ok(Evaluator::native(self.rule)),
            Some(path) => Evaluator::from_file(engine, path).map_err(|e| format!("{e:#}")),
        });
        e.as_ref().map_err(|m| anyhow::anyhow!("{m}"))
    }
}

/// The bundle, for every rule.
struct BundleRules {
    evaluator: Evaluator,
    /// `{"rules": {...}}`: every validating rule with its settings.
    settings: String,
    /// The validating rules, as indices into the rule list, with names.
    members: Vec<(usize, &'static str)>,
    /// Each mutating rule alone (index, name, `{"rules": {<rule>: ...}}`),
    /// so that each rule's change is its own.
    mutating: Vec<(usize, &'static str, String)>,
}

/// Every rule of a scan, loaded once and shared by the workers.
struct Rules {
    loaded: Vec<Loaded>,
    bundle: Option<BundleRules>,
}

fn artifact_path(config: &Config, name: &str) -> PathBuf {
    if config.form == Form::Module {
        artifact::module_path(&config.artifacts, name)
    } else {
        artifact::component_path(&config.artifacts, name)
    }
}

fn load_rules(engine: &wasmtime::Engine, config: &Config) -> Result<Rules> {
    for rule in config.settings.keys() {
        if native::rule(rule).is_none() {
            bail!("no rule named `{rule}`");
        }
    }
    let loaded = native::RULES
        .iter()
        .map(|rule| {
            let name = rule.metadata.name;
            let path = match config.form {
                Form::Native => None,
                Form::Module | Form::Component => {
                    let path = artifact_path(config, name);
                    if !path.is_file() {
                        bail!("{} is missing: run `make artifacts` first (or scan with --native)", path.display());
                    }
                    Some(path)
                }
            };
            let loaded = Loaded { rule, path, evaluator: std::sync::OnceLock::new(), settings: String::new() };
            let settings = match config.settings.get(name) {
                Some(path) => {
                    let settings = read_settings(path).with_context(|| format!("the settings of `{name}`"))?;
                    let answer = loaded.evaluator(engine)?.validate_settings(&settings)?;
                    if !answer.valid {
                        bail!("the settings of `{name}` in {} are invalid: {}", path.display(), answer.message.unwrap_or_default());
                    }
                    settings
                }
                // The settings a generated policy writes: `{}`, or the
                // example settings of a rule that refuses its defaults
                // (host-test/settings/<rule>.yaml, built in).
                None => native::written_settings(rule)?.to_string(),
            };
            Ok(Loaded { settings, ..loaded })
        })
        .collect::<Result<Vec<_>>>()?;
    let bundle = match config.strategy {
        Strategy::PerRule => None,
        Strategy::Bundle => load_bundle(engine, config, &loaded)?,
    };
    Ok(Rules { loaded, bundle })
}

/// The bundle with every validating rule on, with the same settings as the
/// rules alone; `None` (one call per rule) when the artifacts lack it.
fn load_bundle(engine: &wasmtime::Engine, config: &Config, loaded: &[Loaded]) -> Result<Option<BundleRules>> {
    let evaluator = match config.form {
        Form::Native => Evaluator::native(&native::BUNDLE),
        Form::Module | Form::Component => {
            let path = artifact_path(config, artifact::BUNDLE);
            if !path.is_file() {
                return Ok(None);
            }
            Evaluator::from_file(engine, &path)?
        }
    };
    let mut rules = serde_json::Map::new();
    let (mut members, mut mutating) = (Vec::new(), Vec::new());
    for (i, l) in loaded.iter().enumerate() {
        let name = l.rule.metadata.name;
        let settings: Value = serde_json::from_str(&l.settings).with_context(|| format!("the settings of `{name}`"))?;
        if l.rule.metadata.mutating {
            mutating.push((i, name, json!({"rules": {name: settings}}).to_string()));
        } else {
            rules.insert(name.to_string(), settings);
            members.push((i, name));
        }
    }
    let settings = json!({"rules": rules}).to_string();
    for s in std::iter::once(&settings).chain(mutating.iter().map(|(_, _, s)| s)) {
        let answer = evaluator.validate_settings(s)?;
        if !answer.valid {
            bail!("the bundle refuses the rules' settings: {}", answer.message.unwrap_or_default());
        }
    }
    Ok(Some(BundleRules { evaluator, settings, members, mutating }))
}

/// A document made ready for the rules: its AdmissionRequest as JSON text,
/// and what the report needs of it.
struct Prepared {
    source: Source,
    target: Target,
    text: String,
    /// The request's object, for the diff of a mutation.
    original: Option<Value>,
    /// An AdmissionRequest or AdmissionReview used as it is.
    verbatim: bool,
    /// Whether `--user`/`--group` replaced something in it.
    overridden: bool,
}

/// A document as a request, or why it is not evaluated.
fn prepare(input: Input, identity: &Identity) -> std::result::Result<Prepared, Note> {
    if let Some(reason) = not_an_object(&input.value) {
        return Err(Note { source: input.source, reason });
    }
    let verbatim = is_verbatim(&input.value);
    let (mut request, changed) = match admission_request(input.value, identity) {
        Ok(r) => r,
        Err(e) => return Err(Note { source: input.source, reason: format!("cannot make an admission request of it: {e:#}") }),
    };
    let target = Target::of(&request);
    let text = request.to_string();
    let original = request.as_object_mut().and_then(|m| m.remove("object")).filter(|o| !o.is_null());
    Ok(Prepared { source: input.source, target, text, original, verbatim, overridden: !changed.is_empty() })
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
        let p = match prepare(input, identity) {
            Ok(p) => p,
            Err(note) => {
                skipped.push(note);
                continue;
            }
        };
        if p.overridden {
            overridden.push(p.source.clone());
        }
        let results = rules
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if p.target.governed_by(m) {
                    RuleResult::evaluated_on(evaluate(i, &p.text), p.original.as_ref())
                } else {
                    RuleResult::not_governed()
                }
            })
            .collect();
        documents.push(DocumentReport { source: p.source, target: p.target, results });
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

/// Splits the bundle's merged answer into the answers of the rules in
/// `members` (index, name), by the name each line, warning and audit
/// annotation carries (see `aigov_sdk::runtime::bundle::prefixed`). `None` when the
/// answer cannot be split exactly: a code (a malformed request), a mutated
/// object of several rules, or a line no member's name starts.
pub fn split_bundle_answer(merged: ValidationResponse, members: &[(usize, &str)]) -> Option<Vec<(usize, ValidationResponse)>> {
    // A mutated object is one rule's only when one rule ran.
    if merged.code.is_some() || (merged.mutated_object.is_some() && members.len() != 1) {
        return None;
    }
    let mutated = merged.mutated_object;
    let who =
        |text: &str, sep: &str| members.iter().position(|(_, name)| text.strip_prefix(name).is_some_and(|rest| rest.starts_with(sep)));
    let mut lines: Vec<Vec<&str>> = vec![Vec::new(); members.len()];
    let mut parts: Vec<ValidationResponse> = members.iter().map(|_| ValidationResponse::accept()).collect();
    for line in merged.message.as_deref().unwrap_or_default().lines() {
        let k = who(line, ": ")?;
        let name = members.get(k)?.1;
        lines.get_mut(k)?.push(line.get(name.len() + 2..)?);
    }
    for w in merged.warnings {
        if let Some(k) = who(&w, ": ") {
            let name = members.get(k)?.1;
            let own = w.get(name.len() + 2..)?.to_string();
            parts.get_mut(k)?.warnings.push(own);
        } else {
            // A warning that already starts with the rule's name keeps it.
            let k = who(&w, " ")?;
            parts.get_mut(k)?.warnings.push(w);
        }
    }
    for (key, value) in merged.audit_annotations {
        let (name, own) = key.split_once('.')?;
        let k = members.iter().position(|(_, n)| *n == name)?;
        parts.get_mut(k)?.audit_annotations.insert(own.to_string(), value);
    }
    let mut rejected = false;
    for (part, lines) in parts.iter_mut().zip(lines) {
        if !lines.is_empty() {
            part.accepted = false;
            part.message = Some(lines.join("\n"));
            rejected = true;
        }
    }
    if rejected == merged.accepted {
        return None;
    }
    if let Some(only) = parts.first_mut() {
        only.mutated_object = mutated;
    }
    Some(members.iter().map(|(i, _)| *i).zip(parts).collect())
}

/// One guest call of a document: the rules it answers for (index, name),
/// the settings, the instance.
type Call<'a, 'r> = (Vec<(usize, &'a str)>, &'a str, Option<&'a mut Warm<'r>>);

/// One worker's instances: a warm instance of the bundle for the
/// validating rules and one per mutating rule, and of each rule alone for
/// the documents the bundle's answer cannot be split for, each made when
/// first needed and kept for every document the worker sees.
struct Worker<'r> {
    rules: &'r Rules,
    engine: &'r wasmtime::Engine,
    cluster: &'r Arc<FixtureCluster>,
    alone: Vec<Option<Warm<'r>>>,
    bundle: Option<Warm<'r>>,
    mutating: Vec<Warm<'r>>,
}

impl<'r> Worker<'r> {
    fn new(rules: &'r Rules, engine: &'r wasmtime::Engine, cluster: &'r Arc<FixtureCluster>) -> Worker<'r> {
        Worker {
            rules,
            engine,
            cluster,
            alone: rules.loaded.iter().map(|_| None).collect(),
            bundle: rules.bundle.as_ref().map(|b| b.evaluator.warm(cluster)),
            mutating: rules.bundle.iter().flat_map(|b| b.mutating.iter().map(|_| b.evaluator.warm(cluster))).collect(),
        }
    }

    /// Rule `i` alone on a request.
    fn alone(&mut self, i: usize, request: &str) -> Result<ValidationResponse> {
        let loaded = self.rules.loaded.get(i).context("rule index out of range")?;
        let slot = self.alone.get_mut(i).context("rule index out of range")?;
        let warm = match slot {
            Some(w) => w,
            None => slot.insert(loaded.evaluator(self.engine)?.warm(self.cluster)),
        };
        warm.validate(request, &loaded.settings)
    }

    /// Every rule's result on one document, in rule order.
    fn results(&mut self, p: &Prepared) -> Vec<RuleResult> {
        let governed: Vec<bool> = self.rules.loaded.iter().map(|l| p.target.governed_by(l.rule.metadata)).collect();
        let is_governed = |i: usize| governed.get(i).copied().unwrap_or(false);
        let mut results: Vec<Option<RuleResult>> = governed.iter().map(|g| (!g).then(RuleResult::not_governed)).collect();
        if let Some(b) = &self.rules.bundle
            && !p.verbatim
        {
            let mut calls: Vec<Call<'_, 'r>> = Vec::new();
            let members: Vec<(usize, &str)> = b.members.iter().copied().filter(|(i, _)| is_governed(*i)).collect();
            calls.push((members, &b.settings, self.bundle.as_mut()));
            for ((i, name, settings), warm) in b.mutating.iter().zip(self.mutating.iter_mut()) {
                if is_governed(*i) {
                    calls.push((vec![(*i, *name)], settings, Some(warm)));
                }
            }
            for (members, settings, warm) in calls {
                if let Some(warm) = warm
                    && !members.is_empty()
                    && let Ok(merged) = warm.validate(&p.text, settings)
                    && let Some(parts) = split_bundle_answer(merged, &members)
                {
                    for (i, r) in parts {
                        if let Some(slot) = results.get_mut(i) {
                            *slot = Some(RuleResult::evaluated_on(Ok(r), p.original.as_ref()));
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(results.len());
        for (i, done) in results.into_iter().enumerate() {
            out.push(match done {
                Some(r) => r,
                None => RuleResult::evaluated_on(self.alone(i, &p.text), p.original.as_ref()),
            });
        }
        out
    }
}

/// What a scan yields, in file and document order. (Each item is moved
/// once, from a worker to the writer: not worth a box.)
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Item {
    /// An evaluated document.
    Document(DocumentReport),
    /// A document that is not evaluated, and why.
    Skipped(Note),
    /// A file that could not be read or parsed.
    Error(Note),
    /// A verbatim request whose `userInfo` `--user`/`--group` replaced.
    Overridden(Source),
}

/// Documents per unit of work handed to a worker.
const CHUNK: usize = 32;

/// Units of work in flight (read, being evaluated, or waiting to be
/// written in order) per worker: what bounds the scan's memory.
const WINDOW_PER_WORKER: usize = 4;

/// A unit of work: the documents (or a file's error) it holds, in order.
enum Work {
    Input(Input),
    Error(Note),
    /// A small file's text, parsed by the worker: its name as documents
    /// name it, as errors name it, and the text.
    File(String, String, String),
}

/// Files up to this size are parsed by the workers, in parallel; larger
/// ones by the reader, which cuts their documents into chunks.
const SMALL_FILE: usize = 256 << 10;

/// The notes of a file that cannot be read or parsed.
fn unreadable(shown: String, e: &anyhow::Error) -> Work {
    Work::Error(Note { source: Source { file: shown, ..Source::default() }, reason: format!("{e:#}") })
}

/// A scan ready to run: rules loaded, files listed.
pub struct Scanner {
    config: Config,
    cluster: Arc<FixtureCluster>,
    rules: Rules,
    files: Vec<PathBuf>,
    engine: wasmtime::Engine,
}

impl Scanner {
    /// Loads the rules and lists the files; the cluster lookups are answered
    /// from `cluster` (whatever `config.cluster` says).
    pub fn new(config: &Config, cluster: Arc<FixtureCluster>) -> Result<Scanner> {
        let engine = engine::new_engine()?;
        let rules = load_rules(&engine, config)?;
        let files = collect_files(&config.paths, config.cluster.as_deref())?;
        Ok(Scanner { config: config.clone(), cluster, rules, files, engine })
    }

    /// Which form answers.
    pub fn form(&self) -> Form {
        self.config.form
    }

    /// The rules, in column order.
    pub fn rules(&self) -> Vec<RuleInfo> {
        self.rules.loaded.iter().map(|l| RuleInfo::of(l.rule.metadata)).collect()
    }

    /// Files to scan.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    fn workers(&self) -> usize {
        match self.config.jobs {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            n => n,
        }
    }

    /// Runs the scan: files are read and parsed on one thread, documents
    /// evaluated by a worker per core (`--jobs`), and every item handed to
    /// `sink` in file and document order as soon as it and everything
    /// before it are decided. `progress(documents done, documents found
    /// so far)` is called as it goes. Stops at the sink's first error.
    pub fn run(&self, progress: &mut dyn FnMut(usize, usize), sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        let workers = self.workers().max(1);
        let window = workers * WINDOW_PER_WORKER;
        let (work_tx, work_rx) = std::sync::mpsc::sync_channel::<(usize, Vec<Work>)>(workers);
        let work_rx = std::sync::Mutex::new(work_rx);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Vec<Item>)>();
        // How many chunks the writer has emitted, and whether to stop.
        let emitted = std::sync::Mutex::new((0usize, false));
        let advanced = std::sync::Condvar::new();
        let found = std::sync::atomic::AtomicUsize::new(0);
        let stopped = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            // The reader: files in order, cut into chunks.
            let reader = s.spawn(|| {
                let mut seq = 0usize;
                let mut send = |chunk: Vec<Work>| -> bool {
                    let Ok(mut state) = emitted.lock() else { return false };
                    while !state.1 && seq >= state.0 + window {
                        state = match advanced.wait(state) {
                            Ok(s) => s,
                            Err(_) => return false,
                        };
                    }
                    if state.1 {
                        return false;
                    }
                    drop(state);
                    let ok = work_tx.send((seq, chunk)).is_ok();
                    seq += 1;
                    ok
                };
                // Small files are gathered, CHUNK at a time, for the
                // workers to parse; a large one is parsed here and its
                // documents cut into chunks.
                let mut small: Vec<Work> = Vec::new();
                for f in &self.files {
                    let shown = if f.as_os_str() == "-" { "-".to_string() } else { f.display().to_string() };
                    let entries: Vec<Work> = match read_file(f) {
                        Ok((name, text)) if text.len() <= SMALL_FILE => {
                            small.push(Work::File(name, shown, text));
                            if small.len() >= CHUNK && !send(std::mem::take(&mut small)) {
                                return;
                            }
                            continue;
                        }
                        Ok((name, text)) => match documents(&name, &text) {
                            Ok(docs) => docs.into_iter().map(Work::Input).collect(),
                            Err(e) => vec![unreadable(shown, &e)],
                        },
                        Err(e) => vec![unreadable(shown, &e)],
                    };
                    if !small.is_empty() && !send(std::mem::take(&mut small)) {
                        return;
                    }
                    found.fetch_add(entries.len(), std::sync::atomic::Ordering::Relaxed);
                    let mut entries = entries.into_iter().peekable();
                    while entries.peek().is_some() {
                        if !send(entries.by_ref().take(CHUNK).collect()) {
                            return;
                        }
                    }
                }
                if !small.is_empty() {
                    send(small);
                }
                drop(work_tx);
            });
            for _ in 0..workers {
                let done_tx = done_tx.clone();
                let (work_rx, rules, cluster, identity, engine, found, stopped) =
                    (&work_rx, &self.rules, &self.cluster, &self.config.identity, &self.engine, &found, &stopped);
                s.spawn(move || {
                    let mut worker = Worker::new(rules, engine, cluster);
                    loop {
                        let next = match work_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok((seq, chunk)) = next else { return };
                        // Once the writer has stopped, chunks are drained
                        // unread, so the reader is never left blocked on a
                        // full channel.
                        if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                            continue;
                        }
                        let mut items = Vec::with_capacity(chunk.len());
                        let mut evaluate = |input: Input, items: &mut Vec<Item>| match prepare(input, identity) {
                            Err(note) => items.push(Item::Skipped(note)),
                            Ok(p) => {
                                if p.overridden {
                                    items.push(Item::Overridden(p.source.clone()));
                                }
                                let results = worker.results(&p);
                                items.push(Item::Document(DocumentReport { source: p.source, target: p.target, results }));
                            }
                        };
                        for work in chunk {
                            match work {
                                Work::Error(note) => items.push(Item::Error(note)),
                                Work::Input(input) => evaluate(input, &mut items),
                                Work::File(name, shown, text) => match documents(&name, &text) {
                                    Ok(docs) => {
                                        found.fetch_add(docs.len(), std::sync::atomic::Ordering::Relaxed);
                                        for input in docs {
                                            evaluate(input, &mut items);
                                        }
                                    }
                                    Err(e) => {
                                        found.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                        if let Work::Error(note) = unreadable(shown, &e) {
                                            items.push(Item::Error(note));
                                        }
                                    }
                                },
                            }
                        }
                        if done_tx.send((seq, items)).is_err() {
                            stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
            drop(done_tx);
            // The writer: chunks back in order.
            let mut pending: BTreeMap<usize, Vec<Item>> = BTreeMap::new();
            let (mut next, mut done) = (0usize, 0usize);
            let mut result = Ok(());
            'collect: for (seq, items) in &done_rx {
                pending.insert(seq, items);
                while let Some(items) = pending.remove(&next) {
                    for item in items {
                        if matches!(item, Item::Document(_) | Item::Skipped(_)) {
                            done += 1;
                        }
                        if let Err(e) = sink(item) {
                            result = Err(e);
                            break 'collect;
                        }
                    }
                    next += 1;
                    if let Ok(mut state) = emitted.lock() {
                        state.0 = next;
                    }
                    advanced.notify_all();
                    progress(done, found.load(std::sync::atomic::Ordering::Relaxed));
                }
            }
            stopped.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Ok(mut state) = emitted.lock() {
                state.1 = true;
            }
            advanced.notify_all();
            drop(done_rx);
            if reader.join().is_err() {
                result = result.and(Err(anyhow::anyhow!("the scan's reader failed")));
            }
            result
        })
    }
}

impl Scanner {
    /// The cost of one document on one core, warm: the median over
    /// `iterations` of every rule's evaluation of `manifest` (the worker's
    /// whole work, splitting and diffs included) and of the guest calls in
    /// it alone (the bundle's and the mutating rules'), after 20 untimed.
    pub fn time_document(&self, manifest: &str, iterations: usize) -> Result<(std::time::Duration, std::time::Duration)> {
        let input = documents("bench", manifest)?.into_iter().next().context("no document")?;
        let p = prepare(input, &self.config.identity).map_err(|n| anyhow::anyhow!("{}", n.reason))?;
        let mut worker = Worker::new(&self.rules, &self.engine, &self.cluster);
        let median = |mut v: Vec<std::time::Duration>| {
            v.sort();
            v.get(v.len() / 2).copied().unwrap_or_default()
        };
        let (mut whole, mut guest) = (Vec::new(), Vec::new());
        for i in 0..iterations + 20 {
            let start = std::time::Instant::now();
            std::hint::black_box(worker.results(&p));
            let t = start.elapsed();
            let start = std::time::Instant::now();
            if let (Some(b), Some(warm)) = (&self.rules.bundle, worker.bundle.as_mut()) {
                std::hint::black_box(warm.validate(&p.text, &b.settings)?);
                for ((_, _, settings), warm) in b.mutating.iter().zip(worker.mutating.iter_mut()) {
                    std::hint::black_box(warm.validate(&p.text, settings)?);
                }
            }
            let g = start.elapsed();
            if i >= 20 {
                whole.push(t);
                guest.push(g);
            }
        }
        Ok((median(whole), median(guest)))
    }
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

/// [`scan`] with the cluster lookups answered from `cluster` (whatever
/// `config.cluster` says), calling `progress(documents done, documents
/// found so far)` as it goes. Collects the whole report; `aigov scan`
/// itself writes as it goes instead ([`Scanner::run`]).
pub fn scan_with(config: &Config, cluster: Arc<FixtureCluster>, progress: &mut dyn FnMut(usize, usize)) -> Result<Report> {
    collect(&Scanner::new(config, cluster)?, progress)
}

/// Runs `scanner` to the end, keeping every result (not the documents).
fn collect(scanner: &Scanner, progress: &mut dyn FnMut(usize, usize)) -> Result<Report> {
    let mut report = Report {
        form: scanner.form(),
        rules: scanner.rules(),
        files: scanner.files(),
        documents: Vec::new(),
        skipped: Vec::new(),
        errors: Vec::new(),
        overridden: Vec::new(),
    };
    scanner.run(progress, &mut |item| {
        report.add(item);
        Ok(())
    })?;
    Ok(report)
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

/// Counts a report's summary as its items arrive.
#[derive(Clone, Copy, Debug, Default)]
struct Tally(Summary);

impl Tally {
    fn add(&mut self, item: &Item) {
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
            Item::Overridden(_) => {}
        }
    }
}

/// Whether a summary fails the scan by `fail_on`.
fn fails(s: &Summary, fail_on: FailOn) -> bool {
    match fail_on {
        FailOn::None => false,
        FailOn::Deny => s.denied + s.errors > 0,
        FailOn::Warn => s.denied + s.errors + s.warned > 0,
    }
}

/// The messages of one document under "What the rules said" (`i` is its
/// 0-based number in the report).
fn document_details(out: &mut String, i: usize, d: &DocumentReport, rules: &[RuleInfo], width: usize) {
    out.push_str(&format!("\n[{}] {} {}  ({})\n", i + 1, d.target.what(), d.target.object(), d.source));
    for (rule, r) in rules.iter().zip(&d.results) {
        if !r.has_details() {
            continue;
        }
        let about = if rule.description.is_empty() { String::new() } else { format!(" ({})", rule.description) };
        match (&r.response, &r.error) {
            (_, Some(error)) => {
                out.push_str(&format!("  ERROR {} could not evaluate it\n", rule.name));
                bullet(out, 4, error, width);
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
                        bullet(out, 4, v, width);
                    }
                }
                for w in &resp.warnings {
                    bullet(out, 4, &format!("warning: {w}"), width);
                }
                for change in r.changes() {
                    diff_line(out, 4, &change, width);
                }
                for (k, v) in &resp.audit_annotations {
                    // The SDK's `violations` annotation holds one per line.
                    for line in v.split('\n').filter(|l| !l.trim().is_empty()) {
                        bullet(out, 4, &format!("audit annotation `{k}`: {}", line.trim()), width);
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

/// The table report, written as the documents arrive: the rows (their
/// column widths known only at the end) and the messages go to a spill,
/// and [`TableWriter::finish`] writes the whole report.
struct TableWriter {
    form: Form,
    rules: Vec<RuleInfo>,
    files: usize,
    width: usize,
    fail_on: FailOn,
    widths: Vec<usize>,
    rows: Spill,
    details: Spill,
    any_detailed: bool,
    any_mutate: bool,
    skipped: Vec<Note>,
    errors: Vec<Note>,
    tally: Tally,
}

impl TableWriter {
    fn new(
        form: Form,
        rules: Vec<RuleInfo>,
        files: usize,
        width: usize,
        fail_on: FailOn,
        spill: &dyn Fn(&str) -> Result<Spill>,
    ) -> Result<TableWriter> {
        let mut header = vec!["#".to_string(), "KIND".to_string(), "NAMESPACE/NAME".to_string()];
        header.extend(rules.iter().map(|r| r.name.clone()));
        header.push("SOURCE".to_string());
        let widths = header.iter().map(|c| c.chars().count()).collect();
        let mut rows = spill("rows")?;
        rows.write(serde_json::to_string(&header)?.as_bytes())?;
        rows.write(b"\n")?;
        Ok(TableWriter {
            form,
            rules,
            files,
            width,
            fail_on,
            widths,
            rows,
            details: spill("details")?,
            any_detailed: false,
            any_mutate: false,
            skipped: Vec::new(),
            errors: Vec::new(),
            tally: Tally::default(),
        })
    }

    fn add(&mut self, item: &Item) -> Result<()> {
        self.tally.add(item);
        match item {
            Item::Document(d) => {
                let i = self.tally.0.documents - 1;
                let mut row = vec![(i + 1).to_string(), d.target.what(), d.target.object()];
                row.extend(d.results.iter().map(|r| r.outcome.cell().to_string()));
                row.push(d.source.to_string());
                for (c, cell) in row.iter().enumerate() {
                    let n = cell.chars().count();
                    match self.widths.get_mut(c) {
                        Some(w) => *w = (*w).max(n),
                        None => self.widths.push(n),
                    }
                }
                self.rows.write(serde_json::to_string(&row)?.as_bytes())?;
                self.rows.write(b"\n")?;
                self.any_mutate |= d.results.iter().any(|r| r.outcome == Outcome::Mutate);
                if d.results.iter().any(RuleResult::has_details) {
                    self.any_detailed = true;
                    let mut text = String::new();
                    document_details(&mut text, i, d, &self.rules, self.width);
                    self.details.write(text.as_bytes())?;
                }
            }
            Item::Skipped(n) => self.skipped.push(n.clone()),
            Item::Error(n) => self.errors.push(n.clone()),
            Item::Overridden(_) => {}
        }
        Ok(())
    }

    fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let s = self.tally.0;
        let form = match self.form {
            Form::Module => "Kubewarden modules",
            Form::Component => "components",
            Form::Native => "natively linked rules",
        };
        write!(out, "aigov scan: {} document(s) in {} file(s), {} rule(s) ({form})\n\n", s.documents, self.files, self.rules.len())?;
        if s.documents > 0 {
            let widths = self.widths.clone();
            for line in self.rows.lines()? {
                let line = line?;
                if line.is_empty() {
                    continue;
                }
                let row: Vec<String> = serde_json::from_str(&line)?;
                let mut text = String::new();
                for (c, cell) in row.iter().enumerate() {
                    if c > 0 {
                        text.push_str("  ");
                    }
                    text.push_str(cell);
                    if c + 1 != row.len() {
                        let w = widths.get(c).copied().unwrap_or(0);
                        text.push_str(&" ".repeat(w.saturating_sub(cell.chars().count())));
                    }
                }
                out.write_all(text.trim_end().as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.write_all(
                b"\npass: admitted   DENY: rejected   warn: admitted with warnings   -: the rule does not govern this kind or operation\n",
            )?;
            if self.any_mutate {
                out.write_all(b"mutate: admitted with changes a mutating rule makes (shown below as a diff)\n")?;
            }
        }
        if self.any_detailed {
            out.write_all(b"\nWhat the rules said\n-------------------\n")?;
            self.details.copy_to(out)?;
        }
        let mut text = String::new();
        if !self.skipped.is_empty() || !self.errors.is_empty() {
            text.push_str("\nNot evaluated\n-------------\n");
            for n in &self.errors {
                bullet(&mut text, 0, &format!("ERROR {}: {}", n.source, n.reason), self.width);
            }
            for n in &self.skipped {
                bullet(&mut text, 0, &format!("skipped {}: {}", n.source, n.reason), self.width);
            }
        }
        text.push_str(&summary_line(&s, self.fail_on));
        out.write_all(text.as_bytes())?;
        Ok(())
    }
}

/// The last line of the table report.
fn summary_line(s: &Summary, fail_on: FailOn) -> String {
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
    let mut out = format!("\nSummary: {} document(s): {}.", s.documents, parts.join(", "));
    let gate = match (fails(s, fail_on), fail_on) {
        (true, _) => " Exit status 1 (`--fail-on none` reports without failing).",
        (_, FailOn::None) if s.denied + s.errors + s.warned > 0 => " Exit status 0 (`--fail-on none`).",
        _ => "",
    };
    out.push_str(gate);
    out.push('\n');
    out
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

/// The human report: the verdict table, the messages grouped by document,
/// skipped documents, and a summary line that says what the exit status
/// will be.
pub fn render_table(report: &Report, width: usize, fail_on: FailOn) -> String {
    let mut out = Vec::new();
    let written = TableWriter::new(report.form, report.rules.clone(), report.files, width, fail_on, &Spill::memory).and_then(|mut w| {
        replay(report, &mut |item| w.add(item))?;
        w.finish(&mut out)
    });
    match written {
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(e) => format!("(the report could not be rendered: {e:#})\n"),
    }
}

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
    let notes =
        |notes: &[Note]| -> Vec<Value> { notes.iter().map(|n| json!({"source": source_json(&n.source), "reason": n.reason})).collect() };
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
struct JsonWriter<'o> {
    out: &'o mut dyn Write,
    form: Form,
    rules: Vec<RuleInfo>,
    files: usize,
    skipped: Vec<Note>,
    errors: Vec<Note>,
    tally: Tally,
}

impl JsonWriter<'_> {
    fn add(&mut self, item: &Item) -> Result<()> {
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
            Item::Overridden(_) => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
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

/// [`JsonWriter`] over a finished report, as a string.
pub fn render_json(report: &Report) -> Result<String> {
    let mut out = Vec::new();
    let mut w = JsonWriter {
        out: &mut out,
        form: report.form,
        rules: report.rules.clone(),
        files: report.files,
        skipped: Vec::new(),
        errors: Vec::new(),
        tally: Tally::default(),
    };
    replay(report, &mut |item| w.add(item))?;
    w.finish()?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::metadata::Rule;

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
            errors: vec![Note {
                source: Source { file: "broken.yaml".into(), ..Source::default() },
                reason: "document 1 is not valid YAML".into(),
            }],
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
        assert!(
            details.contains("[1] Pod ml/good  (a.yaml)\n  warn pods-only (Pods are checked)\n    - warning: consider a newer image\n")
        );
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
        assert_eq!(
            r.changes(),
            ["+ metadata.labels: {\"owner\":\"jane\"}", "+ spec: {\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}"]
        );
        let text = render_table(&report, 100, FailOn::Deny);
        assert!(text.contains("1  Pod   ml/p            mutate     p.yaml") || text.contains(" mutate "), "{text}");
        assert!(text.contains("  mutate pods-only (Pods are checked): 2 changes\n    + metadata.labels: {\"owner\":\"jane\"}\n"), "{text}");
        assert!(text.contains("mutate: admitted with changes"), "{text}");
        assert!(text.contains("0 denied, 1 admitted with changes, 0 passed."), "{text}");
        assert_eq!(exit_status(&report, FailOn::Warn), 0, "a change is not a warning");
        let v = to_json(&report);
        assert_eq!(v["documents"][0]["results"]["pods-only"]["verdict"], "mutate");
        assert_eq!(
            v["documents"][0]["results"]["pods-only"]["patch"][0],
            json!({"op": "add", "path": "/metadata/labels", "value": {"owner": "jane"}})
        );
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
        let lines = wrap(
            "`spec.workerGroupSpecs[1].template.spec.tolerations` has no toleration for the GPU node taint: add `{key: nvidia.com/gpu, operator: Exists}`",
            60,
        );
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
    fn the_bundles_answer_splits_into_each_rules_own() {
        // The bench Pod, which most validating rules deny or warn about,
        // through the native bundle with every validating rule on.
        let request = crate::tools::bench::POD_REQUEST;
        let cluster = aigov_sdk::NoCluster;
        let (mut rules, mut members) = (serde_json::Map::new(), Vec::new());
        for (i, r) in native::RULES.iter().enumerate().filter(|(_, r)| !r.metadata.mutating) {
            let settings = native::deployable_settings(r).unwrap();
            rules.insert(r.metadata.name.into(), settings);
            members.push((i, r.metadata.name));
        }
        let settings = json!({"rules": rules}).to_string();
        let merged = (native::BUNDLE.validate_request)(request, &settings, &cluster);
        assert!(!merged.accepted);
        let parts = split_bundle_answer(merged, &members).unwrap();
        assert_eq!(parts.len(), members.len());
        let mut denied = 0;
        for (i, part) in parts {
            let rule = &native::RULES[i];
            let own = (rule.validate_request)(request, &rules[rule.metadata.name].to_string(), &cluster);
            assert_eq!(part, own, "{}", rule.metadata.name);
            denied += usize::from(!own.accepted);
        }
        assert!(denied >= 3, "several rules deny the bench Pod");
        // What cannot be split is not.
        let mut coded = ValidationResponse::reject("gpu-quota: x", Some(400));
        assert!(split_bundle_answer(coded.clone(), &members).is_none());
        coded.code = None;
        coded.message = Some("nobody: x".into());
        assert!(split_bundle_answer(coded, &members).is_none());
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
