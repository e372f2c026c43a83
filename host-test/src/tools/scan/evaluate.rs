//! Evaluating the documents of `aigov scan` (and `aigov simulate`): every
//! rule loaded once and shared by the workers (a rule's own artifact
//! compiled only when first needed); a worker per core, each with warm
//! instances; the validating rules answering in one call of the bundle,
//! whose merged answer is split back per rule by the names its lines carry,
//! and each mutating rule in a call of its own; the items handed on in file
//! and document order as soon as they are decided.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use aigov_sdk::runtime::metadata::PolicyMetadata;
use aigov_sdk::{NativePolicy, ValidationResponse};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::run::admission::{Identity, admission_request, is_verbatim};
use crate::run::artifact::{self, Evaluator, Warm};
use crate::run::cluster::FixtureCluster;
use crate::run::settings::{self, Given, Scope, Selection, SettingsArgs};
use crate::run::{engine, native};
use crate::tools::report::model::{DocumentReport, Form, Item, Note, Report, RuleInfo, RuleResult, Source, Target};
use crate::tools::scan::read::{Input, Left, collect_files, documents, failed_document, not_an_object, read_file, shown};

/// The flags that choose the rules' form and settings, shared by `aigov
/// scan` and `aigov simulate`.
#[derive(clap::Args, Debug)]
pub struct EvaluatorArgs {
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Only these rules (comma-separated; each turned on by the deployment
    /// `--settings` gives, if one is given). Without it, the rules the
    /// deployment turns on, or every rule.
    #[arg(long, value_delimiter = ',', value_name = "RULE,...")]
    pub rules: Vec<String>,
    /// Evaluate with the components instead of the Kubewarden modules.
    #[arg(long, conflicts_with = "native")]
    pub component: bool,
    /// Evaluate with the rules linked into aigov (no artifacts needed).
    #[arg(long)]
    pub native: bool,
}

impl EvaluatorArgs {
    /// The form the flags choose.
    pub fn form(&self) -> Form {
        match (self.component, self.native) {
            (true, _) => Form::Component,
            (_, true) => Form::Native,
            _ => Form::Module,
        }
    }

    /// A scan's configuration with the artifacts, rules, settings and
    /// form the flags choose (and nothing to scan yet), and what chose the
    /// rules ([`settings::select`]: the rules `--rules` names, or those the
    /// deployment `--settings` gives turns on, or every rule that can run).
    pub fn config(&self) -> Result<(Config, Selection)> {
        let selection = settings::select(&settings::resolve(&self.settings.settings, Scope::Every)?, &self.rules)?;
        let settings = selection
            .rules
            .iter()
            .filter_map(|(rule, json)| {
                let name = rule.metadata.name;
                let origin = selection.origins.get(name)?;
                Some((name.to_string(), Given { json: json.clone(), origin: origin.clone() }))
            })
            .collect();
        let rules = selection.rules.iter().map(|(r, _)| r.metadata.name.to_string()).collect();
        let excluded_namespaces = selection.excluded.clone().unwrap_or_default();
        let config =
            Config { artifacts: self.artifacts.clone(), settings, rules, excluded_namespaces, form: self.form(), ..Config::default() };
        Ok((config, selection))
    }
}

/// What to scan and how.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Files and directories.
    pub paths: Vec<PathBuf>,
    /// Where the artifacts are.
    pub artifacts: PathBuf,
    /// Cluster fixtures for lookups.
    pub cluster: Option<PathBuf>,
    /// Settings by rule name (a rule without: its defaults, or the
    /// example settings of a rule that has no safe default).
    pub settings: BTreeMap<String, Given>,
    /// The rules to run, by name (empty: every rule).
    pub rules: Vec<String>,
    /// Namespaces whose objects are not evaluated, as a policy's
    /// `namespaceSelector` keeps their requests away (each such document
    /// is skipped, saying so).
    pub excluded_namespaces: Vec<String>,
    /// Which form evaluates.
    pub form: Form,
    /// Who submits (`--user`, `--group`).
    pub identity: Identity,
    /// `--namespace`: the namespace of a plain object that names none
    /// (else `default`, said in the report).
    pub namespace: Option<String>,
    /// What already runs, when the documents are a cluster's objects
    /// (`aigov simulate`): see [`Running`].
    pub running: Option<Arc<Running>>,
    /// How the documents are evaluated.
    pub strategy: Strategy,
    /// Workers evaluating documents (0: one per core).
    pub jobs: usize,
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
    for rule in config.settings.keys().chain(&config.rules) {
        if native::rule(rule).is_none() {
            bail!("no rule named `{rule}`");
        }
    }
    let loaded = native::RULES
        .iter()
        .filter(|rule| config.rules.is_empty() || config.rules.iter().any(|r| r == rule.metadata.name))
        .map(|rule| {
            let name = rule.metadata.name;
            let path = match config.form {
                Form::Native => None,
                Form::Module | Form::Component => Some(artifact::require(
                    &config.artifacts,
                    artifact_path(config, name),
                    Some("run the rules linked into aigov with --native"),
                )?),
            };
            let loaded = Loaded { rule, path, evaluator: std::sync::OnceLock::new(), settings: String::new() };
            let settings = match config.settings.get(name) {
                Some(given) => {
                    let settings = given.json.clone();
                    let answer = loaded.evaluator(engine)?.validate_settings(&settings)?;
                    if !answer.valid {
                        let message = settings::explain_refusal(&answer.message.unwrap_or_default(), "spec.mode");
                        bail!("{}: `{name}` refuses these settings: {message}", given.origin);
                    }
                    settings
                }
                // The settings a generated policy writes: `{}`, or the
                // example settings of a rule that refuses its defaults
                // (host-test/settings/<rule>.yaml, built in), for the
                // library's callers: the command line refuses to run such
                // a rule without settings (`EvaluatorArgs::config`).
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

/// The objects of a cluster dump (`aigov simulate`), each submitted as
/// the CREATE that made it: what the scheduler and the API server set
/// after admission (`status`, a Pod's `spec.nodeName`, `managedFields`,
/// `resourceVersion`, ...) taken out; an object its controller made (a `controller: true` owner reference of a
/// kind [`aigov_sdk::model::trust::DEFAULTS`] lists) judged through that
/// controller when the dump holds it (one Deployment, not its ReplicaSet
/// and three Pods), else submitted as that controller's identity.
#[derive(Clone, Debug, Default)]
pub struct Running {
    /// Every object of the dump: `(apiVersion's group, kind, namespace,
    /// name)`, and its `uid`.
    objects: std::collections::HashSet<(String, String, String, String)>,
    uids: std::collections::HashSet<String>,
}

impl Running {
    /// The index of `objects`.
    pub fn of<'v>(objects: impl IntoIterator<Item = &'v Value>) -> Running {
        let mut r = Running::default();
        for o in objects {
            let at = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
            let group = at("/apiVersion").rsplit_once('/').map_or("", |(g, _)| g).to_string();
            r.objects.insert((group, at("/kind"), at("/metadata/namespace"), at("/metadata/name")));
            let uid = at("/metadata/uid");
            if !uid.is_empty() {
                r.uids.insert(uid);
            }
        }
        r
    }

    /// The controller owner reference of `object` of a kind a known
    /// controller manages: `(kind.group, name, in the dump)`.
    fn controller(&self, object: &Value) -> Option<(String, String, bool)> {
        let owners = object.pointer("/metadata/ownerReferences")?.as_array()?;
        let owner = owners.iter().find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))?;
        let at = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or_default();
        let group = at("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        let kind = if group.is_empty() { at("kind").to_string() } else { format!("{}.{group}", at("kind")) };
        aigov_sdk::model::trust::DEFAULTS.iter().find(|(owners, _)| owners.contains(&kind.as_str()))?;
        let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
        let present = (!at("uid").is_empty() && self.uids.contains(at("uid")))
            || self.objects.contains(&(group.to_string(), at("kind").to_string(), namespace.to_string(), at("name").to_string()));
        Some((kind, at("name").to_string(), present))
    }
}

/// The fields the scheduler, the kubelet and the API server write after
/// an object was admitted: left out when a running object is judged as
/// the CREATE that made it.
pub const SET_AFTER_ADMISSION: [&str; 8] = [
    "/status",
    "/spec/nodeName",
    "/metadata/managedFields",
    "/metadata/resourceVersion",
    "/metadata/generation",
    "/metadata/deletionTimestamp",
    "/metadata/deletionGracePeriodSeconds",
    "/metadata/selfLink",
];

/// Removes the field at JSON Pointer `pointer` (of plain keys) from `value`.
fn remove_at(value: &mut Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else { return };
    let parent = if parent.is_empty() { Some(value) } else { value.pointer_mut(parent) };
    if let Some(map) = parent.and_then(Value::as_object_mut) {
        map.remove(key);
    }
}

/// A plain object as `config` submits it: a running object without what
/// was set after admission (`Err`: judged through its controller, why),
/// the namespace `--namespace` gives one that names none. Returns whether the object names no namespace and none
/// was given (it is judged in `default`), and the user to submit it as
/// (a running object's controller).
fn submitted(value: &mut Value, config: &Config) -> std::result::Result<(bool, Option<String>), String> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut user = None;
    if let Some(running) = &config.running {
        if let Some((owner, name, present)) = running.controller(value) {
            if present {
                return Err(format!("judged through its controller, {owner} `{name}`, which the dump holds"));
            }
            user = aigov_sdk::model::trust::DEFAULTS
                .iter()
                .find(|(owners, _)| owners.contains(&owner.as_str()))
                .and_then(|(_, users)| users.first())
                .map(|u| u.to_string());
        }
        for pointer in SET_AFTER_ADMISSION {
            if pointer != "/spec/nodeName" || kind == "Pod" {
                remove_at(value, pointer);
            }
        }
    }
    let namespaced = !crate::run::admission::CLUSTER_SCOPED.contains(&kind.as_str())
        && !crate::run::admission::CONNECT_KINDS.iter().any(|(k, _)| *k == kind);
    let named = value.pointer("/metadata/namespace").and_then(Value::as_str).is_some_and(|ns| !ns.is_empty());
    let mut defaulted = false;
    if namespaced && !named {
        match (&config.namespace, value.as_object_mut()) {
            (Some(ns), Some(map)) => {
                let meta = map.entry("metadata").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
            _ => defaulted = true,
        }
    }
    Ok((defaulted, user))
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
    /// Whether it names no namespace and was judged in `default`.
    defaulted: bool,
}

/// A document as a request, or why it is not evaluated.
fn prepare(mut input: Input, config: &Config) -> std::result::Result<Prepared, Note> {
    if let Some(reason) = not_an_object(&input.value) {
        return Err(Note { source: input.source, reason });
    }
    let verbatim = is_verbatim(&input.value);
    let (defaulted, controller) = if verbatim {
        (false, None)
    } else {
        submitted(&mut input.value, config).map_err(|reason| Note { source: input.source.clone(), reason })?
    };
    let identity = match controller {
        Some(user) if config.identity.user.is_none() => {
            Identity { user: Some(user), groups: vec!["system:serviceaccounts".into(), "system:authenticated".into()] }
        }
        _ => config.identity.clone(),
    };
    let (mut request, changed) = match admission_request(input.value, &identity) {
        Ok(r) => r,
        Err(e) => return Err(Note { source: input.source, reason: format!("cannot make an admission request of it: {e:#}") }),
    };
    let target = Target::of(&request);
    let excluded = |ns: &str| config.excluded_namespaces.iter().any(|x| x == ns);
    let in_excluded = match (&target.namespace, target.kind.as_str()) {
        (Some(ns), _) => excluded(ns).then(|| ns.clone()),
        (None, "Namespace") => target.name.clone().filter(|n| excluded(n)),
        (None, _) => None,
    };
    if let Some(ns) = in_excluded {
        return Err(Note {
            source: input.source,
            reason: format!("in namespace `{ns}`, from which the policies' `namespaceSelector` keeps requests away"),
        });
    }
    let text = request.to_string();
    let original = request.as_object_mut().and_then(|m| m.remove("object")).filter(|o| !o.is_null());
    Ok(Prepared { source: input.source, target, text, original, verbatim, overridden: !changed.is_empty(), defaulted })
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
    let config = Config { identity: identity.clone(), ..Config::default() };
    for input in inputs {
        let p = match prepare(input, &config) {
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

/// Documents per unit of work handed to a worker.
const CHUNK: usize = 32;

/// Units of work in flight (read, being evaluated, or waiting to be
/// written in order) per worker: what bounds the scan's memory.
const WINDOW_PER_WORKER: usize = 4;

/// A unit of work: the documents (or a file's error) it holds, in order.
enum Work {
    Input(Input),
    Error(Note),
    /// A small file's text, parsed by the worker: its name as the reports
    /// show it, and the text.
    File(String, String),
}

/// Files up to this size are parsed by the workers, in parallel; larger
/// ones by the reader, which cuts their documents into chunks.
const SMALL_FILE: usize = 256 << 10;

/// The note of a file that cannot be read or parsed (naming the document
/// that does not parse, when the parser said which).
fn unreadable(shown: String, e: &anyhow::Error) -> Note {
    Note { source: Source { file: shown, document: failed_document(e), ..Source::default() }, reason: format!("{e:#}") }
}

/// A scan ready to run: rules loaded, files listed.
pub struct Scanner {
    config: Config,
    cluster: Arc<FixtureCluster>,
    rules: Rules,
    files: Vec<PathBuf>,
    left: Vec<Left>,
    engine: wasmtime::Engine,
}

impl Scanner {
    /// Loads the rules and lists the files; the cluster lookups are answered
    /// from `cluster` (whatever `config.cluster` says).
    pub fn new(config: &Config, cluster: Arc<FixtureCluster>) -> Result<Scanner> {
        let engine = engine::new_engine()?;
        let rules = load_rules(&engine, config)?;
        let collected = collect_files(&config.paths, config.cluster.as_deref())?;
        Ok(Scanner { config: config.clone(), cluster, rules, files: collected.files, left: collected.left, engine })
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

    /// Paths the walk did not read (pipes, sockets, devices, directories
    /// reached again through a link), each a skipped item ahead of the
    /// documents.
    pub fn left(&self) -> &[Left] {
        &self.left
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
        for l in &self.left {
            let source = Source { file: shown(&l.path), document: 0, item: None, multi: false };
            sink(Item::Skipped(Note { source, reason: l.reason.clone() }))?;
        }
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
                    let entries: Vec<Work> = match read_file(f) {
                        Ok((name, text)) if text.len() <= SMALL_FILE => {
                            small.push(Work::File(name, text));
                            if small.len() >= CHUNK && !send(std::mem::take(&mut small)) {
                                return;
                            }
                            continue;
                        }
                        Ok((name, text)) => match documents(&name, &text) {
                            Ok(docs) => docs.into_iter().map(Work::Input).collect(),
                            Err(e) => vec![Work::Error(unreadable(name, &e))],
                        },
                        Err(e) => vec![Work::Error(unreadable(shown(f), &e))],
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
                let (work_rx, rules, cluster, config, engine, found, stopped) =
                    (&work_rx, &self.rules, &self.cluster, &self.config, &self.engine, &found, &stopped);
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
                        let mut evaluate = |input: Input, items: &mut Vec<Item>| match prepare(input, config) {
                            Err(note) => items.push(Item::Skipped(note)),
                            Ok(p) => {
                                if p.overridden {
                                    items.push(Item::Overridden(p.source.clone()));
                                }
                                if p.defaulted {
                                    items.push(Item::Defaulted(p.source.clone()));
                                }
                                let results = worker.results(&p);
                                items.push(Item::Document(DocumentReport { source: p.source, target: p.target, results }));
                            }
                        };
                        for work in chunk {
                            match work {
                                Work::Error(note) => items.push(Item::Error(note)),
                                Work::Input(input) => evaluate(input, &mut items),
                                Work::File(name, text) => match documents(&name, &text) {
                                    Ok(docs) => {
                                        found.fetch_add(docs.len(), std::sync::atomic::Ordering::Relaxed);
                                        for input in docs {
                                            evaluate(input, &mut items);
                                        }
                                    }
                                    Err(e) => {
                                        found.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                        items.push(Item::Error(unreadable(name, &e)));
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
        let p = prepare(input, &self.config).map_err(|n| anyhow::anyhow!("{}", n.reason))?;
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
        None => FixtureCluster::offline(),
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
