//! `aigov eval`: a manifest against one rule (or the bundle), as the person
//! who wrote it wants to read the answer: admitted or denied per rule, one
//! violation per line in the rule's words, warnings, and a mutation as a
//! short diff; or Kubewarden's raw `ValidationResponse` (`--format json`)
//! for scripts. The rule is a rule's name (its module in the artifacts,
//! its component, or the rule linked natively), `aigov-bundle` (the rules
//! `--settings` turns on, or `--rules` names: [`settings::for_bundle`]), or
//! a `.wasm` file; the manifest is read as `aigov scan` reads one (several
//! documents, a `List`'s items, `-` for standard input), and each document
//! becomes a request as [`request_of`] makes it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use aigov_sdk::ValidationResponse;
use aigov_sdk::runtime::metadata::PolicyMetadata;
use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run::admission::{Submission, request_of};
use crate::run::artifact::{self, Evaluator};
use crate::run::cluster::FixtureCluster;
use crate::run::native::{self, Names};
use crate::run::settings::{self, Scope, SettingsArgs};
use crate::tools::report::model::{NothingToCheck, RuleResult, Target, audit_lines, violations};
use crate::tools::scan::read::{Input, documents, not_an_object, read_file};

/// How `aigov eval` prints its answer.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// A verdict for people: admitted or denied per rule, one violation per
    /// line, warnings, and a mutation as a short diff.
    #[default]
    Text,
    /// Kubewarden's ValidationResponse, as JSON: one per document, in order.
    Json,
}

/// `aigov eval --help`'s closing words.
const AFTER_HELP: &str = "\
Exit status: 0 when every document is admitted, 1 when a rule denies one, 2 when eval could \
not run (a usage error, settings the rule refuses or needs, missing artifacts), 3 when there \
was nothing to check (no Kubernetes object in the file).

    aigov eval gpu-runtime-class job.yaml                  # the verdict, for people
    aigov eval gpu-runtime-class job.yaml --settings policy.yaml --namespace team-nlp   # as your cluster judges it there
    aigov eval aigov-bundle job.yaml --settings deploy/aigov/bundle/cluster-admission-policy.yaml   # every rule your cluster turns on
    aigov eval aigov-bundle job.yaml --rules gpu-runtime-class,idle-gpu-pods   # only these rules (of your deployment, with --settings)
    helm template chart | aigov eval opencost-labels - --document 2
    aigov eval exec-guard job.yaml --format json | jq .accepted   # Kubewarden's answer, for scripts";

/// Arguments of `aigov eval`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The rule (`aigov rules` lists them; `aigov-bundle` runs every rule
    /// in one artifact), or a .wasm module or component.
    #[arg(value_name = "RULE")]
    pub artifact: String,
    /// The manifest: plain objects, AdmissionRequests or
    /// AdmissionReviews (YAML or JSON, one or more documents, evaluated one
    /// by one); `-` reads standard input. A plain object is submitted as
    /// CREATE by a default user.
    #[arg(value_name = "MANIFEST")]
    pub request: PathBuf,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// With `aigov-bundle`: only these rules (comma-separated; each turned
    /// on by the deployment or the bundle's settings `--settings` gives, if
    /// given), each with its settings there or its defaults; a rule left
    /// out needs no settings. Without it, the rules the deployment turns
    /// on, or every rule. A single rule (`eval RULE`) refuses it.
    #[arg(long, value_delimiter = ',', value_name = "RULE,...")]
    pub rules: Vec<String>,
    /// Only document N of the file (numbered from 1).
    #[arg(long, value_name = "N", value_parser = document_number)]
    pub document: Option<usize>,
    /// `text`: the verdict for people; `json`: Kubewarden's
    /// ValidationResponse, for scripts (of several documents, one JSON list
    /// naming each document's object, with its response).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With `--operation UPDATE`: the object before the update (a plain
    /// manifest). Without it, the old object is the new one, and nothing
    /// the update changes can be told apart.
    #[arg(long, value_name = "FILE")]
    pub old: Option<PathBuf>,
    /// Directory (or file) of YAML/JSON objects served to cluster lookups.
    /// Without it, what a rule would look up is not checked, and the
    /// verdict says what was not (as `aigov scan` does).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// With a rule name: use its component.
    #[arg(long, conflicts_with = "native")]
    pub component: bool,
    /// With a rule name: use the natively linked rule (no artifacts needed).
    #[arg(long)]
    pub native: bool,
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    #[command(flatten)]
    pub submission: Submission,
}

/// `--document`'s value: a number from 1.
fn document_number(text: &str) -> std::result::Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(format!("`{text}` is no document number: documents are numbered from 1")),
        Ok(n) => Ok(n),
    }
}

/// One document's evaluation.
struct Evaluated {
    input: Input,
    target: Target,
    /// The request's object, for the diff of a mutation.
    object: Option<Value>,
    response: ValidationResponse,
}

/// Runs `aigov eval`: the verdicts (or responses) on `out`; notes (a
/// verbatim request's replaced `userInfo`; in JSON, a mutation's diff) on
/// standard error.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let engine = crate::run::engine::new_engine()?;
    let evaluator = resolve(&engine, &args.artifact, &args.artifacts, args.component, args.native)?;
    let settings = settings_of(&evaluator, &args.settings, &args.rules)?;
    let inputs = read_inputs(&args.request, args.document)?;
    let mut submission = args.submission.clone();
    let update = submission.operation.as_deref().is_some_and(|op| op.eq_ignore_ascii_case("UPDATE"));
    match (&args.old, update) {
        (Some(old), true) => submission.old_object = Some(read_old(old)?),
        (Some(_), false) => bail!("--old is the object before an update: give it with `--operation UPDATE`"),
        (None, true) => note(
            "--operation UPDATE without --old: the old object is the new one, so the update changes nothing a rule could tell apart \
             (a problem both have is allowed with `allowExistingViolations`, the default); give the object before the update with --old FILE",
        ),
        (None, false) => {}
    }
    // No cluster to ask: lookups are not checked (and said so), not
    // answered as if nothing existed, which a rule must refuse.
    let cluster = Arc::new(match &args.cluster {
        Some(dir) => FixtureCluster::from_dir(dir)?,
        None => FixtureCluster::offline(),
    });
    let mut evaluated = Vec::new();
    let mut skipped = Vec::new();
    for input in inputs {
        if let Some(reason) = not_an_object(&input.value) {
            skipped.push(format!("{}: {reason}", input.source));
            continue;
        }
        let (request, changed) = request_of(input.value.clone(), &input.source.to_string(), &submission)?;
        if let Some(changed) = changed {
            note(&changed);
        }
        let response = evaluator.validate(&request.to_string(), &settings, &cluster)?;
        let object = request.get("object").filter(|o| !o.is_null()).cloned();
        evaluated.push(Evaluated { input, target: Target::of(&request), object, response });
    }
    for s in &skipped {
        note(&format!("skipped {s}"));
    }
    if evaluated.is_empty() {
        return Err(NothingToCheck(format!(
            "{}: no Kubernetes object to check ({} document(s) skipped): give a manifest, an AdmissionRequest or an AdmissionReview",
            args.request.display(),
            skipped.len()
        ))
        .into());
    }
    match args.format {
        Format::Json => write_json(&evaluated, out)?,
        Format::Text => {
            let metadata = native::lookup(&evaluator.name, Names::RulesAndBundle).ok().map(|r| r.metadata);
            let members = if evaluator.is_bundle() { bundle_members(&settings) } else { Vec::new() };
            write_text(&evaluated, &evaluator.name, metadata, &members, out)?;
        }
    }
    let denied = evaluated.iter().any(|e| !e.response.accepted);
    Ok(if denied { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A note on standard error; never a panic.
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "aigov: {text}");
}

/// A rule's name, `aigov-bundle` or a path to an artifact, as an evaluator.
pub fn resolve(engine: &wasmtime::Engine, artifact: &str, artifacts: &Path, component: bool, native_form: bool) -> Result<Evaluator> {
    let path = Path::new(artifact);
    if path.is_file() {
        return Evaluator::from_file(engine, path);
    }
    let rule = native::lookup(artifact, Names::RulesAndBundle).with_context(|| format!("`{artifact}` is neither a file nor a rule"))?;
    if native_form {
        return Ok(Evaluator::native(rule));
    }
    let name = rule.metadata.name;
    let path = if component { artifact::component_path(artifacts, name) } else { artifact::module_path(artifacts, name) };
    let path = artifact::require(artifacts, path, Some("use --native to run the rule linked into aigov"))?;
    Evaluator::from_file(engine, &path)
}

/// The settings the evaluator runs with, checked by its own
/// `validate_settings` first, as a policy server (and `kwctl run`) checks
/// them before any request. `rules` (`--rules`) narrows the bundle to
/// those rules ([`settings::for_bundle`]); any other artifact refuses it.
fn settings_of(evaluator: &Evaluator, args: &SettingsArgs, rules: &[String]) -> Result<String> {
    let name = evaluator.name.as_str();
    let rule = native::lookup(name, Names::RulesAndBundle);
    if !rules.is_empty() && !rule.as_ref().is_ok_and(|r| native::is_bundle(r)) {
        let what = if rule.is_ok() { format!("`{name}` is one rule, which eval runs alone") } else { format!("`{name}` is no bundle") };
        bail!(
            "--rules picks rules of `aigov-bundle`; {what}: to check several rules, write `aigov eval aigov-bundle MANIFEST --rules {}`, \
             or leave --rules out",
            rules.join(",")
        );
    }
    let resolved = settings::resolve(&args.settings, Scope::One(name))?;
    let text = match rule {
        Ok(rule) if native::is_bundle(rule) => {
            if resolved.whole.is_none() || !rules.is_empty() {
                for n in settings::select(&resolved.whole_as_deployment()?, rules)?.notes() {
                    note(&n);
                }
            }
            settings::for_bundle(&resolved, rules)?
        }
        Ok(rule) => settings::for_rule(rule, resolved.whole.as_ref())?,
        // An artifact that is no rule of this build: its settings or `{}`.
        Err(_) => resolved.whole.as_ref().map_or_else(|| "{}".to_string(), |g| g.json.clone()),
    };
    let answer = evaluator.validate_settings(&text)?;
    if !answer.valid {
        let origin = resolved.whole.map(|g| format!("{}: ", g.origin)).unwrap_or_default();
        bail!("{origin}`{name}` refuses these settings: {}", settings::explain_refusal(&answer.message.unwrap_or_default(), "spec.mode"));
    }
    Ok(text)
}

/// The rules the bundle's settings turn on.
fn bundle_members(settings: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(settings).unwrap_or_default();
    value.get("rules").and_then(Value::as_object).map(|rules| rules.keys().cloned().collect()).unwrap_or_default()
}

/// The object before an update (`--old`): one plain object.
fn read_old(path: &Path) -> Result<Value> {
    let (name, text) = read_file(path)?;
    let mut docs = documents(&name, &text).with_context(|| format!("parsing {name}"))?;
    match docs.len() {
        1 => {
            let old = docs.remove(0).value;
            if crate::run::admission::is_verbatim(&old) || not_an_object(&old).is_some() {
                bail!("--old {name}: not a plain Kubernetes object");
            }
            Ok(old)
        }
        n => bail!("--old {name} holds {n} documents: give the one object before the update"),
    }
}

/// The documents of the manifest (`-`: standard input), or only document
/// `only` (from 1).
fn read_inputs(path: &Path, only: Option<usize>) -> Result<Vec<Input>> {
    let (name, text) = read_file(path)?;
    let inputs = documents(&name, &text).with_context(|| format!("parsing {name}"))?;
    let count = inputs.last().map_or(0, |i| i.source.document);
    if count == 0 {
        return Err(NothingToCheck(format!("{name} holds no document: give a manifest, an AdmissionRequest or an AdmissionReview")).into());
    }
    match only {
        None => Ok(inputs),
        Some(n) => {
            let picked: Vec<Input> = inputs.into_iter().filter(|i| i.source.document == n).collect();
            if picked.is_empty() {
                let range = if count == 1 { "1".to_string() } else { format!("1 to {count}") };
                bail!("--document {n}: {name} holds {count} document(s): give {range}");
            }
            Ok(picked)
        }
    }
}

/// Kubewarden's answer, as pretty JSON: of one document, its
/// `ValidationResponse`; of several, one JSON list, each entry naming its
/// document (`document`, `item` of a `List`) and object (`kind`,
/// `namespace`, `name`) beside its `response`. A mutation's diff on
/// standard error (the patched object is `mutated_object`, whole, as
/// Kubewarden receives it).
fn write_json(evaluated: &[Evaluated], out: &mut dyn Write) -> Result<()> {
    if let [one] = evaluated {
        writeln!(out, "{}", serde_json::to_string_pretty(&one.response)?)?;
    } else {
        let list: Vec<Value> = evaluated
            .iter()
            .map(|e| {
                let mut entry = serde_json::json!({
                    "document": e.input.source.document,
                    "kind": e.target.kind,
                    "namespace": e.target.namespace,
                    "name": e.target.name,
                    "response": e.response,
                });
                if let (Some(item), Some(map)) = (e.input.source.item, entry.as_object_mut()) {
                    map.insert("item".into(), item.into());
                }
                entry
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
    }
    for e in evaluated {
        let changes = RuleResult::evaluated_on(Ok(e.response.clone()), e.object.as_ref()).changes();
        if !changes.is_empty() {
            out.flush()?;
            note(&format!(
                "{}: the rule patched the object ({} in `mutated_object`):",
                e.input.source,
                aigov_sdk::base::text::count(changes.len() as u64, "change")
            ));
            for c in &changes {
                let _ = writeln!(std::io::stderr().lock(), "  {c}");
            }
        }
    }
    Ok(())
}

/// What one rule said, read back from an answer.
#[derive(Default)]
struct Said {
    denied: bool,
    lines: Vec<String>,
    warnings: Vec<String>,
    audit: Vec<String>,
}

/// The verdicts, for people: a heading per document (its kind and name),
/// then each rule's verdict, the violations of a denial one per line in
/// the rule's words, warnings, audit annotations, and the changes of a
/// mutation.
fn write_text(
    evaluated: &[Evaluated],
    name: &str,
    metadata: Option<&PolicyMetadata>,
    members: &[String],
    out: &mut dyn Write,
) -> Result<()> {
    let multi = evaluated.len() > 1;
    for (i, e) in evaluated.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let number = if multi { format!("[{}] ", e.input.source.document) } else { String::new() };
        let item = e.input.source.item.map(|n| format!(" (item {n})")).unwrap_or_default();
        writeln!(out, "{number}{} {}{item}", e.target.what(), e.target.object())?;
        let r = &e.response;
        let changes = RuleResult::evaluated_on(Ok(r.clone()), e.object.as_ref()).changes();
        if let Some(code) = r.code {
            writeln!(out, "  {name}: denied, the request is malformed (code {code})")?;
            for line in violations(r.message.as_deref().unwrap_or_default()) {
                writeln!(out, "    - {line}")?;
            }
            continue;
        }
        if members.is_empty() {
            let governed = metadata.is_none_or(|m| e.target.governed_by(m));
            let said = Said {
                denied: !r.accepted,
                lines: violations(r.message.as_deref().unwrap_or_default()).into_iter().map(str::to_string).collect(),
                warnings: r.warnings.clone(),
                audit: audit_lines(r).into_iter().map(|(k, line)| format!("audit annotation `{k}`: {line}")).collect(),
            };
            rule_verdict(out, name, &said, &changes, metadata, governed)?;
        } else {
            bundle_verdict(out, e, members, &changes)?;
        }
    }
    if multi {
        let denied = evaluated.iter().filter(|e| !e.response.accepted).count();
        let word = if denied == 0 { "admitted" } else { "denied" };
        let of = if denied == 0 { evaluated.len() } else { denied };
        writeln!(out, "\n{of} of {} documents {word}", evaluated.len())?;
    }
    Ok(())
}

/// One rule's verdict and what it said.
fn rule_verdict(
    out: &mut dyn Write,
    name: &str,
    said: &Said,
    changes: &[String],
    metadata: Option<&PolicyMetadata>,
    governed: bool,
) -> Result<()> {
    let verdict = match (said.denied, governed, changes.len()) {
        (true, _, _) => format!("denied, {}", aigov_sdk::base::text::count(said.lines.len() as u64, "violation")),
        (false, false, _) => "admitted (not sent to it: its webhook rules do not match this request)".to_string(),
        (false, true, 0) => "admitted".to_string(),
        (false, true, n) => format!("admitted, with {}", aigov_sdk::base::text::count(n as u64, "change")),
    };
    writeln!(out, "  {name}: {verdict}")?;
    for line in &said.lines {
        writeln!(out, "    - {line}")?;
    }
    for w in &said.warnings {
        writeln!(out, "    warning: {w}")?;
    }
    for a in &said.audit {
        writeln!(out, "    {a}")?;
    }
    for c in changes {
        writeln!(out, "    {c}")?;
    }
    if said.denied
        && let Some(docs) = metadata.and_then(|m| m.annotation(aigov_metadata::annotations::SOURCE))
    {
        writeln!(out, "    how to comply: {docs}")?;
    }
    Ok(())
}

/// The bundle's answer, split back per rule by the names its lines carry.
fn bundle_verdict(out: &mut dyn Write, e: &Evaluated, members: &[String], changes: &[String]) -> Result<()> {
    let r = &e.response;
    let owner = |text: &str| -> Option<(usize, String)> {
        members.iter().enumerate().find_map(|(i, m)| text.strip_prefix(m.as_str())?.strip_prefix(": ").map(|rest| (i, rest.to_string())))
    };
    let mut said: Vec<Said> = members.iter().map(|_| Said::default()).collect();
    let mut unowned = Said::default();
    for line in violations(r.message.as_deref().unwrap_or_default()) {
        match owner(line).and_then(|(i, own)| Some((said.get_mut(i)?, own))) {
            Some((s, own)) => s.lines.push(own),
            None => unowned.lines.push(line.to_string()),
        }
    }
    for w in &r.warnings {
        // A warning that already starts with the rule's name keeps it.
        let found = owner(w).or_else(|| members.iter().position(|m| w.starts_with(&format!("{m} "))).map(|i| (i, w.clone())));
        match found.and_then(|(i, own)| Some((said.get_mut(i)?, own))) {
            Some((s, own)) => s.warnings.push(own),
            None => unowned.warnings.push(w.clone()),
        }
    }
    for (k, line) in audit_lines(r) {
        let found = k.split_once('.').and_then(|(rule, own)| Some((members.iter().position(|m| m == rule)?, own.to_string())));
        match found.and_then(|(i, own)| Some((said.get_mut(i)?, own))) {
            Some((s, own)) => s.audit.push(format!("audit annotation `{own}`: {line}")),
            None => unowned.audit.push(format!("audit annotation `{k}`: {line}")),
        }
    }
    let mut admitted = Vec::new();
    for (member, s) in members.iter().zip(said.iter_mut()) {
        s.denied = !s.lines.is_empty();
        let metadata = native::rule(member).map(|m| m.metadata);
        if !metadata.is_none_or(|m| e.target.governed_by(m)) {
            continue;
        }
        if s.denied || !s.warnings.is_empty() || !s.audit.is_empty() {
            rule_verdict(out, member, s, &[], metadata, true)?;
        } else {
            admitted.push(member.as_str());
        }
    }
    if !unowned.lines.is_empty() || !unowned.warnings.is_empty() || !unowned.audit.is_empty() {
        unowned.denied = !unowned.lines.is_empty();
        rule_verdict(out, native::BUNDLE.metadata.name, &unowned, &[], None, true)?;
    }
    if !admitted.is_empty() {
        writeln!(out, "  admitted by {}: {}", aigov_sdk::base::text::count(admitted.len() as u64, "rule"), admitted.join(", "))?;
    }
    if !changes.is_empty() {
        writeln!(out, "  the mutating rules change it:")?;
        for c in changes {
            writeln!(out, "    {c}")?;
        }
    }
    if r.accepted && admitted.is_empty() && changes.is_empty() && r.warnings.is_empty() {
        writeln!(out, "  admitted (no rule turned on governs this request)")?;
    }
    Ok(())
}
