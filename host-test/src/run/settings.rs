//! Settings as people give them, read one way for every command: the
//! `--settings` flag (`FILE` for the rule a command runs, `RULE=FILE` for
//! one of several), where FILE holds a settings object (YAML or JSON) or is
//! a policy file as `aigov manifests` writes it (`ClusterAdmissionPolicy`
//! or `AdmissionPolicy` documents, each one's rule found by its module
//! reference or its `app.kubernetes.io/name` label, its `spec.settings`
//! taken; or the `policies.yml` of a standalone policy-server), or a
//! deployment directory `aigov manifests` wrote (its overlay, or `bundle/`);
//! and what a rule runs with when none are given: its defaults, or, for a
//! rule with no safe default, nothing ([`required`] says what to write).
//!
//! A policy's own fields are checked as its CRD and Kubewarden check them
//! ([`Refused`]): a `spec` field its kind does not have, a `spec.mode`
//! other than `protect` or `monitor`; a file with one is refused, each at
//! its line, by every command that reads it.
//!
//! A policy file or a deployment directory is a team's deployment: the
//! rules it turns on are the rules a command that runs several checks
//! ([`Deployment`], [`select`]), with the settings, the mode and the
//! namespace exclusions of their policies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use aigov_sdk::NativePolicy;
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::run::admission::parse_documents;
use crate::run::native::{self, Names};

/// The `--settings` flag, declared once for every command that takes it.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SettingsArgs {
    /// Settings: FILE for the rule (YAML or JSON, a policy file `aigov
    /// manifests` wrote, whose `spec.settings` are read, or the directory
    /// it wrote: its overlay or its bundle), or RULE=FILE for one rule of
    /// several (repeatable). A policy file or directory is the team's
    /// deployment: commands that run several rules run the rules it turns
    /// on. Without it, a rule runs with its defaults; a rule with no safe
    /// default (trusted-sources) needs it.
    #[arg(long = "settings", value_name = "[RULE=]FILE")]
    pub settings: Vec<SettingsArg>,
}

/// One `--settings` value: `FILE`, or `RULE=FILE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsArg {
    /// The rule named before `=` (a rule, or `aigov-bundle`).
    pub rule: Option<String>,
    /// The file.
    pub file: PathBuf,
}

impl std::str::FromStr for SettingsArg {
    type Err = String;

    /// `RULE=FILE` when the text has an `=` and is not itself a file (a
    /// file whose name holds `=` is read as a file); the rule must exist.
    fn from_str(text: &str) -> Result<SettingsArg, String> {
        if text.is_empty() {
            return Err("expected FILE or RULE=FILE".into());
        }
        match text.split_once('=') {
            Some((rule, file)) if !Path::new(text).exists() => {
                native::lookup(rule, Names::RulesAndBundle).map_err(|e| format!("{e:#}"))?;
                if file.is_empty() {
                    return Err(format!("no file after `{rule}=`: write `{rule}=FILE`"));
                }
                Ok(SettingsArg { rule: Some(rule.to_string()), file: PathBuf::from(file) })
            }
            _ => Ok(SettingsArg { rule: None, file: PathBuf::from(text) }),
        }
    }
}

impl std::fmt::Display for SettingsArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "{rule}={}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

/// Settings read for one rule, and where they came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Given {
    /// The settings, as JSON.
    pub json: String,
    /// The file, and the policy in it if they came from one.
    pub origin: String,
}

/// One policy of a policy file.
#[derive(Clone)]
pub struct Policy {
    /// Its rule (or the bundle).
    pub rule: &'static NativePolicy,
    /// `ClusterAdmissionPolicy `aigov-exec-guard``, for messages.
    pub what: String,
    /// Its `spec.settings` (`{}` when it has none).
    pub settings: Value,
    /// Its `spec.mode` (`policyMode` in `policies.yml`), when it has one.
    pub mode: Option<String>,
    /// The namespaces its `namespaceSelector` keeps requests from
    /// (`kubernetes.io/metadata.name NotIn [...]`), when it has one.
    pub excluded: Option<Vec<String>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("rule", &self.rule.metadata.name)
            .field("what", &self.what)
            .field("settings", &self.settings)
            .field("mode", &self.mode)
            .field("excluded", &self.excluded)
            .finish()
    }
}

/// What a settings file holds.
#[derive(Clone, Debug)]
pub enum Contents {
    /// A settings object (an empty file: `{}`).
    Settings(Value),
    /// Policies, each with its rule and settings.
    Policies(Vec<Policy>),
}

/// The kinds of a Kubewarden policy, whose `spec.settings` are a rule's.
pub const POLICY_KINDS: [&str; 2] = ["ClusterAdmissionPolicy", "AdmissionPolicy"];

/// Where `aigov manifests` writes the overlay, relative to its directory.
pub const OVERLAY: &str = "overlay/kustomization.yaml";

/// Reads a settings file: one settings object, policy documents (or the
/// entries of a policy-server's `policies.yml`), or a deployment directory
/// ([`read_deployment`]). A policy that cannot be read, or has a field
/// refused ([`Refused`]), is an error naming every one, each at its line.
pub fn read_file(path: &Path) -> Result<Contents> {
    if path.is_dir() {
        return read_deployment(path).map(Contents::Policies);
    }
    match read_each(path)? {
        Each::Settings(v) => Ok(Contents::Settings(v)),
        Each::Policies(each) => {
            let mut problems = Vec::new();
            let mut policies = Vec::new();
            for located in each {
                match located.policy {
                    Ok(p) => policies.push(p),
                    Err(e) => problems.push(format!("{e:#}")),
                }
                for r in &located.refused {
                    problems.push(match r.line {
                        Some(line) => format!("{}:{line}: {}", path.display(), r.message),
                        None => format!("{}: {}", path.display(), r.message),
                    });
                }
            }
            if !problems.is_empty() {
                bail!("{}", problems.join("\n"));
            }
            Ok(Contents::Policies(policies))
        }
    }
}

/// What a settings file holds, each policy read on its own: one that
/// cannot be read does not hide the others ([`read_file`] stops at it).
pub enum Each {
    /// A settings object (an empty file: `{}`).
    Settings(Value),
    /// Each policy document (or `policies.yml` entry), in the file's order.
    Policies(Vec<Located>),
}

/// One policy of a file, where it is, and what reading it gave.
pub struct Located {
    /// The policy, or why it could not be read (its rule).
    pub policy: Result<Policy>,
    /// Its fields refused, each at its line: a field its kind does not
    /// have, a mode Kubewarden does not take (the policy is read without it).
    pub refused: Vec<Refused>,
    /// Its document, counted from 0 among the file's non-empty documents;
    /// or, in a `policies.yml`, its entry's name.
    pub at: Place,
    /// The lines it spans (1-based, end excluded), when they can be told.
    pub span: Option<(usize, usize)>,
}

impl Located {
    /// The keys from the top of the file to the policy: none for a
    /// document, the entry's name in a `policies.yml`.
    pub fn root(&self) -> Vec<String> {
        match &self.at {
            Place::Document(_) => Vec::new(),
            Place::Entry(name) => vec![name.clone()],
        }
    }

    /// The keys from the policy to its settings.
    pub fn to_settings(&self) -> Vec<String> {
        let mut path = self.root();
        match &self.at {
            Place::Document(_) => path.extend(["spec".to_string(), "settings".to_string()]),
            Place::Entry(_) => path.push("settings".to_string()),
        }
        path
    }

    /// Where the policy's Kubewarden mode is written: `spec.mode`, or
    /// `policyMode` in a `policies.yml`.
    pub fn mode_field(&self) -> &'static str {
        match &self.at {
            Place::Document(_) => "spec.mode",
            Place::Entry(_) => "policyMode",
        }
    }
}

/// A field of a policy refused (not one of its settings, which its rule
/// checks), and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The keys from the policy to the field (`["spec", "mode"]`).
    pub path: Vec<String>,
    /// Why, naming the policy: `ClusterAdmissionPolicy `x`: `spec.mode` is …`.
    pub message: String,
    /// Its line in the file (1-based), when it can be told.
    pub line: Option<usize>,
}

/// Where a policy is in its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The n-th non-empty document (from 0).
    Document(usize),
    /// The entry of a `policies.yml` so named.
    Entry(String),
}

/// Reads a settings file (not a directory), each policy on its own, each
/// with the lines it spans and its refused fields' lines.
pub fn read_each(path: &Path) -> Result<Each> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    read_text(path, &text)
}

/// [`read_each`] of a file's text, read once (standard input, a pipe).
pub fn read_text(path: &Path, text: &str) -> Result<Each> {
    let mut docs = parse_documents(text)
        .map_err(|e| match crate::run::yaml_hint::hint(text, &e) {
            Some(hint) => anyhow::anyhow!("{e:#}; {hint}"),
            None => e,
        })
        .with_context(|| format!("parsing {}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    // Each refused field at its line, from the policy's span.
    let locate = |mut located: Located| {
        let root = located.root();
        for r in &mut located.refused {
            let keys: Vec<String> = root.iter().chain(&r.path).cloned().collect();
            r.line = located.span.map(|span| crate::run::lines::find(&lines, span, &keys));
        }
        located
    };
    if let [doc] = docs.as_slice()
        && let Some(entries) = server_entries(doc)
    {
        let each = entries
            .iter()
            .map(|(name, entry)| {
                let (policy, refused) = server_policy(path, name, entry);
                let span = crate::run::lines::entry(&lines, name);
                locate(Located { policy, refused, at: Place::Entry(name.clone()), span })
            })
            .collect();
        return Ok(Each::Policies(each));
    }
    let is_policy = |d: &Value| d.get("kind").and_then(Value::as_str).is_some_and(|k| POLICY_KINDS.contains(&k));
    if let Some(other) = docs.iter().position(|d| !is_policy(d)).filter(|_| docs.iter().any(is_policy)) {
        bail!(
            "{}: document {} is no ClusterAdmissionPolicy or AdmissionPolicy, beside policies that are: give a file of policies, or one settings object",
            path.display(),
            other + 1
        );
    }
    if docs.iter().any(is_policy) {
        // The documents' lines, when they can be told apart.
        let spans = crate::run::lines::documents(&lines);
        let spans = if spans.len() == docs.len() { spans } else { Vec::new() };
        let each = docs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (policy, refused) = policy(path, d);
                locate(Located { policy, refused, at: Place::Document(i), span: spans.get(i).copied() })
            })
            .collect();
        return Ok(Each::Policies(each));
    }
    match docs.len() {
        0 => Ok(Each::Settings(json!({}))),
        1 => Ok(Each::Settings(docs.remove(0))),
        n => bail!("{} holds {n} documents; settings are one object (or policy documents)", path.display()),
    }
}

/// Reads a file of settings for one rule: a settings object, as JSON.
/// Policies are refused: which one's would be taken?
pub fn read_settings(path: &Path) -> Result<String> {
    match read_file(path)? {
        Contents::Settings(v) => Ok(v.to_string()),
        Contents::Policies(_) => bail!("{} holds policies: name the rule whose settings to take (`--settings RULE=FILE`)", path.display()),
    }
}

/// A policy document's rule and settings, and its fields refused.
fn policy(path: &Path, doc: &Value) -> (Result<Policy>, Vec<Refused>) {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("(unnamed)");
    let what = format!("{kind} `{name}`");
    let rule = policy_rule(path, &what, doc);
    let mut refused = unknown_spec_fields(&what, doc, rule.as_ref().ok().copied());
    let mode = policy_mode(&what, "spec.mode", doc.pointer("/spec/mode")).unwrap_or_else(|message| {
        refused.push(Refused { path: vec!["spec".into(), "mode".into()], message, line: None });
        None
    });
    let policy = rule.map(|rule| {
        let settings = match doc.pointer("/spec/settings") {
            None | Some(Value::Null) => json!({}),
            Some(s) => s.clone(),
        };
        Policy { rule, what, settings, mode, excluded: excluded_namespaces(doc.pointer("/spec/namespaceSelector")) }
    });
    (policy, refused)
}

/// A policy document's rule: the one its module reference names, else its
/// `app.kubernetes.io/name` label's.
fn policy_rule(path: &Path, what: &str, doc: &Value) -> Result<&'static NativePolicy> {
    let module = doc.pointer("/spec/module").and_then(Value::as_str).unwrap_or_default();
    let label = doc.pointer("/metadata/labels/app.kubernetes.io~1name").and_then(Value::as_str);
    let by_module = module_rule(module);
    match (by_module.and_then(|m| native::lookup(m, Names::RulesAndBundle).ok()), label) {
        (Some(rule), _) => Ok(rule),
        (None, Some(label)) => native::lookup(label, Names::RulesAndBundle).with_context(|| {
            format!(
                "{}: {what}: neither its module `{module}` nor its label `app.kubernetes.io/name: {label}` names a rule",
                path.display()
            )
        }),
        (None, None) => {
            let e = native::unknown(by_module.unwrap_or(module), Names::RulesAndBundle);
            Err(e.context(format!(
                "{}: {what}: its module `{module}` names no rule, and it has no `app.kubernetes.io/name` label naming one",
                path.display()
            )))
        }
    }
}

/// The fields of a Kubewarden policy's `spec`, by kind and version, as the
/// CRDs declare them (`openAPIV3Schema.properties.spec.properties`) in
/// kubewarden-controller's `charts/kubewarden-crds/templates/crds/`
/// `policies.kubewarden.io_clusteradmissionpolicies.yaml` and
/// `policies.kubewarden.io_admissionpolicies.yaml` (commit 3460bb7,
/// 2026-05-21). Neither `spec` keeps unknown fields (only `settings`
/// does), so kubectl's strict field validation refuses any other field,
/// and without it the API server drops it. An AdmissionPolicy has no
/// `namespaceSelector`, `contextAwareResources` or
/// `allowInsideAdmissionControllerNamespace`; `v1alpha2` fewer fields
/// than `v1`.
fn spec_fields(kind: &str, api_version: &str) -> &'static [&'static str] {
    const CLUSTER_V1: &[&str] = &[
        "allowInsideAdmissionControllerNamespace",
        "backgroundAudit",
        "contextAwareResources",
        "failurePolicy",
        "matchConditions",
        "matchPolicy",
        "message",
        "mode",
        "module",
        "mutating",
        "namespaceSelector",
        "objectSelector",
        "policyServer",
        "rules",
        "settings",
        "sideEffects",
        "timeoutEvalSeconds",
        "timeoutSeconds",
    ];
    const NAMESPACED_V1: &[&str] = &[
        "backgroundAudit",
        "failurePolicy",
        "matchConditions",
        "matchPolicy",
        "message",
        "mode",
        "module",
        "mutating",
        "objectSelector",
        "policyServer",
        "rules",
        "settings",
        "sideEffects",
        "timeoutEvalSeconds",
        "timeoutSeconds",
    ];
    const CLUSTER_V1ALPHA2: &[&str] = &[
        "failurePolicy",
        "matchPolicy",
        "mode",
        "module",
        "mutating",
        "namespaceSelector",
        "objectSelector",
        "policyServer",
        "rules",
        "settings",
        "sideEffects",
        "timeoutSeconds",
    ];
    const NAMESPACED_V1ALPHA2: &[&str] = &[
        "failurePolicy",
        "matchPolicy",
        "mode",
        "module",
        "mutating",
        "objectSelector",
        "policyServer",
        "rules",
        "settings",
        "sideEffects",
        "timeoutSeconds",
    ];
    match (kind, api_version == "policies.kubewarden.io/v1alpha2") {
        ("AdmissionPolicy", false) => NAMESPACED_V1,
        ("AdmissionPolicy", true) => NAMESPACED_V1ALPHA2,
        (_, false) => CLUSTER_V1,
        (_, true) => CLUSTER_V1ALPHA2,
    }
}

/// Each field of a policy's `spec` its CRD does not have ([`spec_fields`]),
/// saying what was meant: a setting of its rule (or a shared one, or a
/// rule of the bundle) belongs in `spec.settings`; a field of the other
/// kind of policy, there; else the closest field.
fn unknown_spec_fields(what: &str, doc: &Value, rule: Option<&'static NativePolicy>) -> Vec<Refused> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let Some(spec) = doc.get("spec").and_then(Value::as_object) else { return Vec::new() };
    let fields = spec_fields(kind, api_version);
    let article = if kind.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
    let defaults = rule.map(|r| (r.default_settings)()).unwrap_or_default();
    let is_setting = |key: &str| aigov_sdk::runtime::settings::SHARED_KEYS.contains(&key) || defaults.get(key).is_some();
    let bundle_rule = |key: &str| rule.is_some_and(native::is_bundle) && native::rule(key).is_some();
    let other = if kind == "AdmissionPolicy" { "ClusterAdmissionPolicy" } else { "AdmissionPolicy" };
    let mut out = Vec::new();
    for key in spec.keys().filter(|k| !fields.contains(&k.as_str())) {
        let not = format!("{what}: `spec.{key}` is not a field of {article} {kind}");
        let message = if is_setting(key) {
            format!("{not}: did you mean `spec.settings.{key}`?")
        } else if bundle_rule(key) {
            format!("{not}: did you mean `spec.settings.rules.{key}`?")
        } else if spec_fields(other, api_version).contains(&key.as_str()) {
            format!("{not} (it is a field of a {other}): remove it, or make the policy a {other}")
        } else if let Some(near) = native::closest(key, fields) {
            format!("{not}: did you mean `spec.{near}`?")
        } else {
            let near = defaults
                .as_object()
                .and_then(|d| native::closest(key, &d.keys().map(String::as_str).collect::<Vec<_>>()).map(str::to_string));
            match near {
                Some(near) => format!("{not}: did you mean `spec.settings.{near}`?"),
                None => format!(
                    "{not}, and kubectl refuses it: its fields are {}; the rule's settings go in `spec.settings`",
                    fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
                ),
            }
        };
        out.push(Refused { path: vec!["spec".into(), key.clone()], message, line: None });
    }
    out
}

/// A policy's Kubewarden mode (`field`: `spec.mode`, or `policyMode` in a
/// `policies.yml`), as Kubewarden takes it: `protect` or `monitor`.
/// aigov's own `mode` (`enforce`, `audit`) belongs in the settings:
/// written here, it is refused saying where it goes. The refusal names
/// the policy (`what`), not the file.
fn policy_mode(what: &str, field: &str, mode: Option<&Value>) -> std::result::Result<Option<String>, String> {
    let Some(mode) = mode.filter(|m| !m.is_null()) else { return Ok(None) };
    let at = format!("{what}: `{field}`");
    match mode.as_str() {
        Some(m @ ("protect" | "monitor")) => Ok(Some(m.to_string())),
        Some(m @ ("audit" | "enforce")) => Err(format!(
            "{at} is `{m}`, which Kubewarden refuses: it takes `protect` or `monitor` there. `{m}` is the rule's own `mode`: set `mode: {m}` in the policy's settings, or `{field}: {}` to have Kubewarden report refusals without enforcing them",
            if m == "audit" { "monitor" } else { "protect" }
        )),
        Some(m) => Err(format!("{at} is `{m}`: Kubewarden takes `protect` (refuse) or `monitor` (only report)")),
        None => Err(format!("{at} is {mode}, not a string: Kubewarden takes `protect` or `monitor`")),
    }
}

/// A rule's refusal of its settings (`message`, the rule's words), with a
/// hint where it refuses a Kubewarden policy mode written as its own
/// `mode` (`monitor`, `protect`): that is the policy's `field` (`spec.mode`,
/// or `policyMode` in a `policies.yml`), and the rule's own `mode`, which
/// takes `enforce` or `audit`, that does the same. Said by aigov, not the
/// rule, so that the rules' code does not grow.
pub fn explain_refusal(message: &str, field: &str) -> String {
    let own = message.strip_prefix("rules.").and_then(|rest| rest.split_once(": ")).map_or(message, |(_, rest)| rest);
    let Some(rest) = own.strip_prefix("setting `mode`: unknown variant `") else { return message.to_string() };
    let (value, own_value, does) = match rest.split_once('`').map(|(v, _)| v) {
        Some("monitor") => ("monitor", "audit", "report refusals without enforcing them"),
        Some("protect") => ("protect", "enforce", "refuse what it finds (its default)"),
        _ => return message.to_string(),
    };
    format!(
        "{message}. `{value}` is a value of Kubewarden's `{field}` (`protect` or `monitor`), and the rule's own `mode` takes `enforce` or \
         `audit`: set `{field}: {value}` beside the policy's `settings`, or `mode: {own_value}` in its settings to have the rule {does}"
    )
}

/// The namespaces a policy's `namespaceSelector` keeps requests from: the
/// values of its `kubernetes.io/metadata.name NotIn` expressions (what
/// `aigov manifests` writes); `None` without a selector.
fn excluded_namespaces(selector: Option<&Value>) -> Option<Vec<String>> {
    let selector = selector.filter(|s| !s.is_null())?;
    let mut out = Vec::new();
    for e in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let field = |k: &str| e.get(k).and_then(Value::as_str);
        if field("key") == Some("kubernetes.io/metadata.name") && field("operator") == Some("NotIn") {
            out.extend(e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
        }
    }
    Some(out)
}

/// The entries of a standalone policy-server's `policies.yml`, as `aigov
/// manifests` writes it (a map of names to `{module, policyMode,
/// settings, ...}`), or `None` when `doc` is not one.
pub fn server_entries(doc: &Value) -> Option<&serde_json::Map<String, Value>> {
    let map = doc.as_object().filter(|m| !m.is_empty() && !m.contains_key("kind") && !m.contains_key("apiVersion"))?;
    map.values().all(|v| v.get("module").is_some_and(Value::is_string)).then_some(map)
}

/// One entry of a `policies.yml`, and its fields refused.
fn server_policy(path: &Path, name: &str, entry: &Value) -> (Result<Policy>, Vec<Refused>) {
    let what = format!("policy `{name}`");
    let module = entry.get("module").and_then(Value::as_str).unwrap_or_default();
    let rule = match module_rule(module).and_then(|m| native::lookup(m, Names::RulesAndBundle).ok()) {
        Some(rule) => Ok(rule),
        None => native::lookup(name, Names::RulesAndBundle)
            .with_context(|| format!("{}: {what}: its module `{module}` names no rule", path.display())),
    };
    let mut refused = Vec::new();
    let mode = policy_mode(&what, "policyMode", entry.get("policyMode")).unwrap_or_else(|message| {
        refused.push(Refused { path: vec!["policyMode".into()], message, line: None });
        None
    });
    let policy = rule.map(|rule| {
        let settings = match entry.get("settings") {
            None | Some(Value::Null) => json!({}),
            Some(s) => s.clone(),
        };
        Policy { rule, what, settings, mode, excluded: None }
    });
    (policy, refused)
}

/// The policies of a deployment directory `aigov manifests` wrote: its
/// overlay's (`DIR/overlay/kustomization.yaml`, or `DIR/kustomization.yaml`
/// when DIR is the overlay or `bundle/`), each resource read as a policy
/// file (a directory's `cluster-admission-policy.yaml`), the overlay's
/// `patches` that set `/spec/mode` applied to them.
pub fn read_deployment(dir: &Path) -> Result<Vec<Policy>> {
    let kustomization = [dir.join(OVERLAY), dir.join("kustomization.yaml")].into_iter().find(|p| p.is_file()).with_context(|| {
        format!(
            "{} holds no kustomization.yaml (nor {OVERLAY}): give the directory `aigov manifests` wrote, its overlay/ or bundle/, \
             or a policy file",
            dir.display()
        )
    })?;
    let base = kustomization.parent().unwrap_or(dir);
    let text = std::fs::read_to_string(&kustomization).with_context(|| format!("reading {}", kustomization.display()))?;
    let doc =
        parse_documents(&text).with_context(|| format!("parsing {}", kustomization.display()))?.into_iter().next().unwrap_or_default();
    let mut mode = None;
    for patch in doc.get("patches").and_then(Value::as_array).into_iter().flatten() {
        let ops = patch.get("patch").and_then(Value::as_str).map(parse_documents).transpose()?.unwrap_or_default();
        for op in ops.iter().flat_map(|o| o.as_array().cloned().unwrap_or_default()) {
            if op.get("path").and_then(Value::as_str) == Some("/spec/mode") {
                mode = op.get("value").and_then(Value::as_str).map(str::to_string);
            }
        }
    }
    let mut policies = Vec::new();
    for resource in doc.get("resources").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let path = base.join(resource);
        let file = if path.is_dir() { path.join("cluster-admission-policy.yaml") } else { path };
        match read_file(&file).with_context(|| format!("{}: resource `{resource}`", kustomization.display()))? {
            Contents::Policies(found) => policies.extend(found.into_iter().map(|p| Policy { mode: mode.clone().or(p.mode), ..p })),
            Contents::Settings(_) => bail!("{}: resource `{resource}` is no policy", kustomization.display()),
        }
    }
    if policies.is_empty() {
        bail!("{} turns on no rule: uncomment a rule's line, or regenerate with `aigov manifests --enable RULE`", kustomization.display());
    }
    Ok(policies)
}

/// A bundle's policy as the policies of the rules its `settings.rules`
/// turns on, each with the bundle's mode and namespace exclusions; any
/// other policy as it is.
fn expand(policy: Policy) -> Result<Vec<Policy>> {
    if !native::is_bundle(policy.rule) {
        return Ok(vec![policy]);
    }
    let Some(rules) = policy.settings.get("rules").and_then(Value::as_object) else {
        bail!("{}: the bundle's settings are `rules: {{<rule>: {{…}}}}`, and these have no `rules` object", policy.what);
    };
    rules
        .iter()
        .map(|(name, s)| {
            let rule = native::lookup(name, Names::Rules).with_context(|| format!("{}: `settings.rules.{name}`", policy.what))?;
            Ok(Policy {
                rule,
                what: format!("{}, `settings.rules.{name}`", policy.what),
                settings: if s.is_null() { json!({}) } else { s.clone() },
                mode: policy.mode.clone(),
                excluded: policy.excluded.clone(),
            })
        })
        .collect()
}

/// The rule a module reference names: the repository's last segment,
/// `registry://host/prefix/<rule>:v1.0.0@sha256:…` → `<rule>`.
pub fn module_rule(module: &str) -> Option<&str> {
    let path = module.split_once("://").map_or(module, |(_, rest)| rest);
    let path = path.split_once('@').map_or(path, |(before, _)| before);
    let last = path.rsplit('/').next()?;
    let name = last.split_once(':').map_or(last, |(name, _)| name);
    (!name.is_empty()).then_some(name)
}

/// What a command runs, for reading its `--settings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// One rule (or the bundle), by name: `FILE` is its settings, or the
    /// policy file holding its policy; with the bundle, `RULE=FILE` gives
    /// one rule in it.
    One(&'a str),
    /// One artifact that may be no rule of aigov (`aigov invoke`): `FILE`
    /// or `RULE=FILE`, once.
    Any,
    /// Every rule (`scan`, `simulate`, `bench`): `RULE=FILE`, or a policy
    /// file (the bundle's policy gives each rule turned on in it), or the
    /// bundle's settings (`{rules: {…}}`).
    Every,
}

/// The `--settings` of a command, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The settings of the one rule or artifact the command runs.
    pub whole: Option<Given>,
    /// Settings by rule: with [`Scope::Every`], or inside the bundle.
    pub rules: BTreeMap<String, Given>,
    /// The deployment a policy file, a deployment directory or the
    /// bundle's settings gave: `None` when none was given.
    pub deployment: Option<Deployment>,
}

/// What a team deployed, as the policy files it gave say: the rules
/// turned on, and how their policies receive requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deployment {
    /// Where it was read (the files and directories given).
    pub origin: Vec<String>,
    /// The rules turned on.
    pub rules: BTreeSet<String>,
    /// Rules whose policy runs in Kubewarden's monitor mode (`spec.mode:
    /// monitor`): logged, never refused.
    pub monitored: BTreeSet<String>,
    /// Namespaces the policies' `namespaceSelector` keeps requests from
    /// (their union), when a policy has one.
    pub excluded: Option<Vec<String>>,
}

impl Deployment {
    /// The files it was read from, for messages: `a.yaml and b/`.
    pub fn shown(&self) -> String {
        self.origin.join(" and ")
    }

    fn add(&mut self, origin: &str, policy: &Policy) {
        if !self.origin.iter().any(|o| o == origin) {
            self.origin.push(origin.to_string());
        }
        let name = policy.rule.metadata.name.to_string();
        if policy.mode.as_deref() == Some("monitor") {
            self.monitored.insert(name.clone());
        }
        self.rules.insert(name);
        if let Some(excluded) = &policy.excluded {
            let into = self.excluded.get_or_insert_with(Vec::new);
            for ns in excluded {
                if !into.contains(ns) {
                    into.push(ns.clone());
                }
            }
        }
    }
}

impl Resolved {
    /// The bundle's settings given whole (`{rules: {…}}`) read as the
    /// deployment they are: the rules they turn on (and those given by
    /// name over them), each with its settings, so that [`select`] can
    /// narrow them to `--rules`. Without settings given whole, a copy.
    pub fn whole_as_deployment(&self) -> Result<Resolved> {
        let Some(whole) = &self.whole else { return Ok(self.clone()) };
        let value: Value = serde_json::from_str(&whole.json).with_context(|| whole.origin.clone())?;
        let rules = match value.get("rules") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(rules)) => rules.clone(),
            Some(_) => bail!("{}: the bundle's settings are `rules: {{<rule>: {{…}}}}`, and these have no `rules` object", whole.origin),
        };
        let mut out = Resolved { whole: None, rules: self.rules.clone(), deployment: self.deployment.clone() };
        let deployment = out.deployment.get_or_insert_with(Deployment::default);
        if !deployment.origin.contains(&whole.origin) {
            deployment.origin.push(whole.origin.clone());
        }
        deployment.rules.extend(self.rules.keys().cloned());
        for (name, s) in rules {
            let rule = native::lookup(&name, Names::Rules).with_context(|| format!("{}: `rules.{name}`", whole.origin))?.metadata.name;
            deployment.rules.insert(rule.to_string());
            if !out.rules.contains_key(rule) {
                let s = if s.is_null() { json!({}) } else { s };
                out.rules.insert(rule.to_string(), Given { json: s.to_string(), origin: format!("{}, `rules.{name}`", whole.origin) });
            }
        }
        Ok(out)
    }

    fn set_whole(&mut self, given: Given) -> Result<()> {
        if let Some(before) = &self.whole {
            bail!("settings given twice: {} and {}; give one", before.origin, given.origin);
        }
        self.whole = Some(given);
        Ok(())
    }

    fn set_rule(&mut self, rule: &str, given: Given) -> Result<()> {
        if let Some(before) = self.rules.get(rule) {
            bail!("settings of `{rule}` given twice: {} and {}; give one", before.origin, given.origin);
        }
        self.rules.insert(rule.to_string(), given);
        Ok(())
    }

    /// Each rule the bundle's settings turn on, with its settings; the
    /// rules they turn on are the deployment.
    fn set_bundle_rules(&mut self, settings: &Value, origin: &str) -> Result<()> {
        let Some(rules) = settings.get("rules").and_then(Value::as_object) else {
            bail!("{origin}: the bundle's settings are `rules: {{<rule>: {{…}}}}`, and these have no `rules` object");
        };
        let deployment = self.deployment.get_or_insert_with(Deployment::default);
        if !deployment.origin.iter().any(|o| o == origin) {
            deployment.origin.push(origin.to_string());
        }
        for name in rules.keys() {
            deployment
                .rules
                .insert(native::lookup(name, Names::Rules).with_context(|| format!("{origin}: `rules.{name}`"))?.metadata.name.into());
        }
        for (name, s) in rules {
            let rule = native::lookup(name, Names::Rules).with_context(|| format!("{origin}: `rules.{name}`"))?;
            let s = if s.is_null() { json!({}) } else { s.clone() };
            self.set_rule(rule.metadata.name, Given { json: s.to_string(), origin: format!("{origin}, `rules.{name}`") })?;
        }
        Ok(())
    }
}

/// Reads every `--settings` of a command that runs `scope`.
pub fn resolve(args: &[SettingsArg], scope: Scope<'_>) -> Result<Resolved> {
    let mut out = Resolved::default();
    let bundle = native::BUNDLE.metadata.name;
    for arg in args {
        let file = arg.file.display().to_string();
        // The settings this argument gives, and for which rule (`None`:
        // the one the command runs).
        let mut found: Vec<(Option<&'static str>, Value, String)> = Vec::new();
        match (read_file(&arg.file)?, &arg.rule) {
            (Contents::Settings(v), None) => found.push((None, v, file)),
            (Contents::Settings(v), Some(rule)) => found.push((Some(native::lookup(rule, Names::RulesAndBundle)?.metadata.name), v, file)),
            (Contents::Policies(policies), named) => {
                // A policy-server's policies.yml lists every rule and the
                // bundle: its deployment is the bundle's, when it has one.
                let policies = if policies.iter().any(|p| native::is_bundle(p.rule)) && policies.len() > 1 && named.is_none() {
                    policies.into_iter().filter(|p| native::is_bundle(p.rule)).collect()
                } else {
                    policies
                };
                let whole_bundle = matches!(scope, Scope::One(one) if one == bundle) && named.is_none();
                let policies: Vec<Policy> = if named.as_deref() == Some(bundle) {
                    policies
                } else {
                    policies.into_iter().map(expand).collect::<Result<Vec<_>>>()?.into_iter().flatten().collect()
                };
                let listed = || policies.iter().map(|p| format!("`{}`", p.rule.metadata.name)).collect::<Vec<_>>().join(", ");
                let wanted = match (named, scope) {
                    (Some(rule), _) => Some(rule.as_str()),
                    (None, Scope::One(rule)) if rule != bundle => Some(rule),
                    (None, Scope::One(_)) => None,
                    (None, Scope::Any) if policies.len() == 1 => None,
                    (None, Scope::Any) => {
                        bail!("{file} holds policies of {}: name the rule whose settings to take (`--settings RULE={file}`)", listed())
                    }
                    (None, Scope::Every) => None,
                };
                let take = |p: &Policy| (Some(p.rule.metadata.name), with_mode(p), format!("{file}, {}", p.what));
                match wanted {
                    Some(rule) => match policies.iter().find(|p| p.rule.metadata.name == rule) {
                        Some(p) => found.push(take(p)),
                        None if named.is_some() => bail!("{file} holds no policy of `{rule}` (it holds policies of {})", listed()),
                        None => bail!(
                            "{file} does not turn `{rule}` on (it turns on {}): evaluate one of those, or leave --settings out to run \
                             `{rule}` with its defaults",
                            listed()
                        ),
                    },
                    None => {
                        // Unnamed, the policies are the deployment.
                        let deployment = out.deployment.get_or_insert_with(Deployment::default);
                        for p in &policies {
                            deployment.add(&file, p);
                        }
                        found.extend(policies.iter().map(take));
                        if whole_bundle && policies.is_empty() {
                            bail!("{file} turns on no rule");
                        }
                    }
                }
            }
        }
        for (rule, settings, origin) in found {
            place(&mut out, scope, rule, &settings, origin)?;
        }
    }
    Ok(out)
}

/// A policy's settings as the rule runs under it: in Kubewarden's
/// `monitor` mode nothing is refused, which the rule's own `mode: audit`
/// says (admitted, the refusal reported).
fn with_mode(p: &Policy) -> Value {
    let mut settings = p.settings.clone();
    if p.mode.as_deref() != Some("monitor") {
        return settings;
    }
    // The bundle's own settings are its rules'.
    let each: Vec<&mut Value> = match settings.get_mut("rules").and_then(Value::as_object_mut) {
        Some(rules) if native::is_bundle(p.rule) => rules.values_mut().collect(),
        _ => vec![&mut settings],
    };
    for s in each {
        if s.is_null() {
            *s = json!({});
        }
        if let Some(map) = s.as_object_mut() {
            map.insert("mode".into(), json!("audit"));
        }
    }
    settings
}

/// Puts settings for `rule` (`None`: the one the command runs) where
/// `scope` uses them.
fn place(out: &mut Resolved, scope: Scope<'_>, rule: Option<&'static str>, settings: &Value, origin: String) -> Result<()> {
    let bundle = native::BUNDLE.metadata.name;
    let given = || Given { json: settings.to_string(), origin: origin.clone() };
    match (scope, rule) {
        (Scope::Any, _) => out.set_whole(given()),
        (Scope::One(_), None) => out.set_whole(given()),
        (Scope::One(one), Some(rule)) if rule == one => out.set_whole(given()),
        (Scope::One(one), Some(rule)) if one == bundle => out.set_rule(rule, given()),
        (Scope::One(one), Some(rule)) => {
            bail!("{origin}: these settings are for `{rule}`, but this command runs `{one}`: give `{one}`'s settings")
        }
        (Scope::Every, Some(rule)) if rule == bundle => out.set_bundle_rules(settings, &origin),
        (Scope::Every, Some(rule)) => out.set_rule(rule, given()),
        (Scope::Every, None) if settings.get("rules").is_some_and(Value::is_object) => out.set_bundle_rules(settings, &origin),
        (Scope::Every, None) => bail!(
            "{origin}: these settings are for which rule? This command runs every rule: write `--settings RULE={origin}` \
             (or give a policy file, the directory `aigov manifests` wrote, or the bundle's settings, `rules: {{<rule>: {{…}}}}`)"
        ),
    }
}

/// Why `rule` refuses to run with its defaults (its own words, naming the
/// setting to write), or `None` when its defaults are safe.
pub fn needs_settings(rule: &NativePolicy) -> Option<String> {
    let answer = (rule.validate_settings)(b"{}");
    (!answer.valid).then(|| answer.message.unwrap_or_default())
}

/// The error for a rule with no safe default run without settings: the
/// setting to write (the rule's own message), the flag, and the examples.
pub fn required(rule: &NativePolicy, why: &str) -> anyhow::Error {
    let name = rule.metadata.name;
    let example = match native::example_settings(name) {
        Some(_) => format!("policies/{name}/README.md and host-test/settings/{name}.yaml"),
        None => format!("policies/{name}/README.md"),
    };
    anyhow::anyhow!(
        "`{name}` has no safe default settings and none were given ({why}): write its settings in a file and pass \
         `--settings {name}=FILE`; start from the example in {example}"
    )
}

/// The settings to run `rule` with: those given, else its defaults (`{}`);
/// a rule with no safe default refuses to run without settings.
pub fn for_rule(rule: &NativePolicy, given: Option<&Given>) -> Result<String> {
    match (given, needs_settings(rule)) {
        (Some(given), _) => Ok(given.json.clone()),
        (None, None) => Ok("{}".to_string()),
        (None, Some(why)) => Err(required(rule, &why)),
    }
}

/// The bundle's settings. With `--rules` (`only`), exactly those rules,
/// as [`select`] chooses them from [`Resolved::whole_as_deployment`]: each
/// must be turned on by the deployment or the bundle's settings given,
/// when given, and runs with its settings there (else its defaults); a
/// rule left out needs no settings. Without: the settings given whole
/// (each rule given by name turned on over them); else the rules a
/// deployment turns on, with their settings; else every rule, each with
/// its settings or defaults (a rule with no safe default needs settings).
pub fn for_bundle(resolved: &Resolved, only: &[String]) -> Result<String> {
    if !only.is_empty() {
        let mut on = Map::new();
        for (rule, settings) in select(&resolved.whole_as_deployment()?, only)?.rules {
            on.insert(rule.metadata.name.to_string(), serde_json::from_str(&settings)?);
        }
        return Ok(json!({ "rules": on }).to_string());
    }
    let mut rules = match &resolved.whole {
        Some(given) => {
            let whole: Value = serde_json::from_str(&given.json).with_context(|| given.origin.clone())?;
            match whole.get("rules") {
                None | Some(Value::Null) if resolved.rules.is_empty() => return Ok(given.json.clone()),
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(rules)) => rules.clone(),
                Some(_) => return Ok(given.json.clone()),
            }
        }
        None => {
            let mut on = Map::new();
            for (rule, settings) in select(resolved, &[])?.rules {
                on.insert(rule.metadata.name.to_string(), serde_json::from_str(&settings)?);
            }
            on
        }
    };
    for (name, given) in &resolved.rules {
        rules.insert(name.clone(), serde_json::from_str(&given.json).with_context(|| given.origin.clone())?);
    }
    Ok(json!({ "rules": rules }).to_string())
}

/// The rules a command that runs several checks, with their settings.
#[derive(Clone, Default)]
pub struct Selection {
    /// Each rule with the settings it runs with (JSON), in rule order.
    pub rules: Vec<(&'static NativePolicy, String)>,
    /// Where each rule's settings came from, when given.
    pub origins: BTreeMap<String, String>,
    /// What chose the rules, for the note that names them: `--rules`, or
    /// the deployment's files; `None` when every rule runs.
    pub chosen_by: Option<String>,
    /// Rules whose policy runs in monitor mode (run as `mode: audit`).
    pub monitored: Vec<String>,
    /// Namespaces the deployment's policies receive no request from.
    pub excluded: Option<Vec<String>>,
}

impl Selection {
    /// The notes a command prints on standard error once: which rules it
    /// checks and why, and which run in monitor mode.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.chosen().into_iter().collect::<Vec<_>>();
        if !self.monitored.is_empty() {
            notes.push(format!(
                "in Kubewarden's monitor mode (`spec.mode: monitor`): {}; their refusals are reported as warnings, as a rule's \
                 `mode: audit` reports them",
                self.monitored.join(", ")
            ));
        }
        notes
    }

    /// The note that names the rules checked and what chose them, when
    /// something did.
    pub fn chosen(&self) -> Option<String> {
        let names = self.rules.iter().map(|(r, _)| r.metadata.name).collect::<Vec<_>>().join(", ");
        let n = self.rules.len();
        self.chosen_by.as_deref().map(|by| match by {
            "--rules" => format!("checking the {n} rule(s) `--rules` names: {names}"),
            _ => format!("checking the {n} rule(s) {by} turns on: {names}"),
        })
    }
}

/// The rules a command that runs several rules checks, with their
/// settings: those `--rules` names (`only`), each turned on by the
/// deployment when one was given; else the deployment's; else every rule
/// but those with no safe default and no settings given. Settings given
/// for a rule that is not checked are refused, as is a rule checked with
/// no safe default and no settings.
pub fn select(resolved: &Resolved, only: &[String]) -> Result<Selection> {
    let mut names: Vec<&'static NativePolicy> = Vec::new();
    for name in only {
        let rule = native::lookup(name, Names::Rules).map_err(|e| anyhow::anyhow!("--rules: {e:#}"))?;
        if !names.iter().any(|r| std::ptr::eq(*r, rule)) {
            names.push(rule);
        }
    }
    let deployment = resolved.deployment.as_ref();
    if let Some(d) = deployment
        && let Some(off) = names.iter().find(|r| !d.rules.contains(r.metadata.name))
    {
        bail!(
            "--rules: {} does not turn `{}` on (it turns on {})",
            d.shown(),
            off.metadata.name,
            d.rules.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
        );
    }
    let chosen_by = match (only.is_empty(), deployment) {
        (false, _) => Some("--rules".to_string()),
        (true, Some(d)) => Some(d.shown()),
        (true, None) => None,
    };
    let chosen: Vec<&'static NativePolicy> = match (only.is_empty(), deployment) {
        (false, _) => names,
        (true, Some(d)) => native::RULES.iter().filter(|r| d.rules.contains(r.metadata.name)).collect(),
        (true, None) => native::RULES.iter().collect(),
    };
    let mut selection = Selection {
        chosen_by: chosen_by.clone(),
        monitored: deployment.map(|d| d.monitored.iter().cloned().collect()).unwrap_or_default(),
        excluded: deployment.and_then(|d| d.excluded.clone()),
        ..Selection::default()
    };
    // Settings of a rule the deployment turns on and `--rules` leaves
    // out are the deployment's: not checked today, not refused.
    let deployed = |name: &str| deployment.is_some_and(|d| d.rules.contains(name));
    for (name, given) in &resolved.rules {
        if !chosen.iter().any(|r| r.metadata.name == name) && !deployed(name) {
            match chosen_by.as_deref() {
                Some("--rules") => bail!(
                    "{}: settings for `{name}`, which `--rules` does not name: add it to `--rules`, or leave these settings out",
                    given.origin
                ),
                by => bail!(
                    "{}: settings for `{name}`, which {} does not turn on: turn it on there, or leave these settings out",
                    given.origin,
                    by.unwrap_or("this command")
                ),
            }
        }
    }
    for rule in native::RULES.iter().filter(|r| chosen.iter().any(|c| std::ptr::eq(*c, *r))) {
        let name = rule.metadata.name;
        match (resolved.rules.get(name), needs_settings(rule)) {
            (Some(given), _) => {
                selection.origins.insert(name.to_string(), given.origin.clone());
                selection.rules.push((rule, given.json.clone()));
            }
            (None, None) => selection.rules.push((rule, "{}".to_string())),
            (None, Some(why)) if chosen_by.is_none() => {
                return Err(anyhow::anyhow!(
                    "{:#}; or check only the rules your team turns on: `--settings` with its deployment (the bundle's policy file, or \
                     the directory `aigov manifests` wrote), or `--rules a,b`",
                    required(rule, &why)
                ));
            }
            (None, Some(why)) => return Err(required(rule, &why)),
        }
    }
    Ok(selection)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("aigov-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn arg(text: &str) -> SettingsArg {
        text.parse().unwrap()
    }

    #[test]
    fn file_or_rule_equals_file() {
        assert_eq!(arg("a.yaml"), SettingsArg { rule: None, file: "a.yaml".into() });
        assert_eq!(arg("exec-guard=a.yaml"), SettingsArg { rule: Some("exec-guard".into()), file: "a.yaml".into() });
        assert_eq!(arg("aigov-bundle=b.yaml").rule.as_deref(), Some("aigov-bundle"));
        let e = "exec-gaurd=a.yaml".parse::<SettingsArg>().unwrap_err();
        assert!(e.contains("did you mean `exec-guard`?"), "{e}");
        assert!("exec-guard=".parse::<SettingsArg>().unwrap_err().contains("no file after `exec-guard=`"));
        // A file whose name holds `=` is a file.
        let odd = temp("x=y.yaml", "{}");
        assert_eq!(arg(odd.to_str().unwrap()).rule, None);
    }

    #[test]
    fn module_references_name_their_rule() {
        assert_eq!(module_rule("registry://ghcr.io/aigov-dev/policies/exec-guard:v0.1.0"), Some("exec-guard"));
        assert_eq!(module_rule("registry://127.0.0.1:5000/aigov/gpu-quota:v0.1.0@sha256:abc"), Some("gpu-quota"));
        assert_eq!(module_rule("ghcr.io/x/aigov-bundle"), Some("aigov-bundle"));
        assert_eq!(module_rule(""), None);
    }

    const POLICY: &str = "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n\
        metadata:\n  name: aigov-exec-guard\n  labels: {app.kubernetes.io/name: exec-guard}\n\
        spec:\n  module: registry://registry.example.com/aigov/exec-guard:v0.1.0@sha256:00\n  settings:\n    allowedUsers: [oncall]\n";

    #[test]
    fn policy_files_give_their_rules_settings() {
        let file = temp("policy.yaml", POLICY);
        let path = file.to_str().unwrap();
        let one = resolve(&[arg(path)], Scope::One("exec-guard")).unwrap();
        assert_eq!(one.whole.as_ref().unwrap().json, r#"{"allowedUsers":["oncall"]}"#);
        assert!(one.whole.unwrap().origin.ends_with("policy.yaml, ClusterAdmissionPolicy `aigov-exec-guard`"));
        let e = resolve(&[arg(path)], Scope::One("gpu-quota")).unwrap_err().to_string();
        assert!(e.contains("does not turn `gpu-quota` on (it turns on `exec-guard`)"), "{e}");
        let e = resolve(&[arg(&format!("gpu-quota={path}"))], Scope::One("gpu-quota")).unwrap_err().to_string();
        assert!(e.contains("holds no policy of `gpu-quota` (it holds policies of `exec-guard`)"), "{e}");
        let every = resolve(&[arg(path)], Scope::Every).unwrap();
        assert_eq!(every.rules["exec-guard"].json, r#"{"allowedUsers":["oncall"]}"#);
        // Found by the label when the module names no rule.
        let relabelled = temp("relabelled.yaml", &POLICY.replace("aigov/exec-guard:v0.1.0", "mirror/policy:v1"));
        let r = resolve(&[arg(relabelled.to_str().unwrap())], Scope::Every).unwrap();
        assert!(r.rules.contains_key("exec-guard"));
        let lost = temp(
            "lost.yaml",
            &POLICY
                .replace("aigov/exec-guard:v0.1.0", "mirror/exec-gaurd:v1")
                .replace("  labels: {app.kubernetes.io/name: exec-guard}\n", ""),
        );
        let e = format!("{:#}", resolve(&[arg(lost.to_str().unwrap())], Scope::Every).unwrap_err());
        assert!(e.contains("its module `registry://registry.example.com/mirror/exec-gaurd:v1@sha256:00` names no rule"), "{e}");
        assert!(e.contains("did you mean `exec-guard`?"), "{e}");
    }

    #[test]
    fn every_rule_takes_rule_files_policies_and_the_bundles_settings() {
        let plain = temp("plain.yaml", "allowedUsers: [a]\n");
        let p = plain.to_str().unwrap();
        let e = resolve(&[arg(p)], Scope::Every).unwrap_err().to_string();
        assert!(e.contains("these settings are for which rule?") && e.contains(&format!("--settings RULE={p}")), "{e}");
        let r = resolve(&[arg(&format!("exec-guard={p}"))], Scope::Every).unwrap();
        assert_eq!(r.rules["exec-guard"].json, r#"{"allowedUsers":["a"]}"#);
        let bundle = temp("bundle.yaml", "rules:\n  exec-guard: {allowedUsers: [b]}\n  owner-label: null\n");
        let r = resolve(&[arg(bundle.to_str().unwrap())], Scope::Every).unwrap();
        assert_eq!(r.rules["exec-guard"].json, r#"{"allowedUsers":["b"]}"#);
        assert_eq!(r.rules["owner-label"].json, "{}");
        let e = resolve(&[arg(&format!("exec-guard={p}")), arg(bundle.to_str().unwrap())], Scope::Every).unwrap_err().to_string();
        assert!(e.contains("settings of `exec-guard` given twice"), "{e}");
        // One rule: another rule's settings are refused, the bundle takes them.
        let e = resolve(&[arg(&format!("exec-guard={p}"))], Scope::One("gpu-quota")).unwrap_err().to_string();
        assert!(e.contains("these settings are for `exec-guard`, but this command runs `gpu-quota`"), "{e}");
        let r = resolve(&[arg(&format!("exec-guard={p}"))], Scope::One("aigov-bundle")).unwrap();
        assert!(r.whole.is_none() && r.rules.contains_key("exec-guard"));
    }

    #[test]
    fn a_rule_with_no_safe_default_says_what_to_write() {
        let trusted = native::rule("trusted-sources").unwrap();
        let e = for_rule(trusted, None).unwrap_err().to_string();
        assert!(e.starts_with("`trusted-sources` has no safe default settings and none were given (setting `allowedImages`: "), "{e}");
        assert!(e.contains("--settings trusted-sources=FILE") && e.contains("host-test/settings/trusted-sources.yaml"), "{e}");
        // Every rule: the one with no safe default needs settings, and the
        // error says how to run only the rules a team turned on.
        let e = select(&Resolved::default(), &[]).err().unwrap().to_string();
        assert!(e.starts_with("`trusted-sources` has no safe default") && e.ends_with("`--settings` with its deployment (the bundle's policy file, or the directory `aigov manifests` wrote), or `--rules a,b`"), "{e}");
        assert!(for_bundle(&Resolved::default(), &[]).unwrap_err().to_string().contains("`trusted-sources` has no safe default"));
        // Asked for by name, it needs settings.
        let e = select(&Resolved::default(), &["trusted-sources".into()]).err().unwrap().to_string();
        assert!(e.contains("`trusted-sources` has no safe default"), "{e}");
        assert_eq!(for_rule(native::rule("exec-guard").unwrap(), None).unwrap(), "{}");
        let given = Given { json: r#"{"allowedImages":["registry.example.com/*"],"checkModelSources":false}"#.into(), origin: "f".into() };
        let resolved = Resolved { whole: None, rules: [("trusted-sources".to_string(), given)].into(), deployment: None };
        let bundle: Value = serde_json::from_str(&for_bundle(&resolved, &[]).unwrap()).unwrap();
        assert_eq!(bundle["rules"]["trusted-sources"], json!({"allowedImages": ["registry.example.com/*"], "checkModelSources": false}));
        assert_eq!(bundle["rules"].as_object().unwrap().len(), native::RULES.len());
        assert!((native::BUNDLE.validate_settings)(bundle.to_string().as_bytes()).valid);
    }

    const BUNDLE_POLICY: &str = "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\n\
        metadata: {name: aigov-bundle, labels: {app.kubernetes.io/name: aigov-bundle}}\n\
        spec:\n  module: registry://registry.example.com/aigov/aigov-bundle:v0.1.0@sha256:00\n\
        \x20 namespaceSelector:\n    matchExpressions:\n    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, gpu-operator]}\n\
        \x20 settings:\n    rules:\n      gpu-runtime-class: {mode: audit}\n      idle-gpu-pods: {}\n";

    #[test]
    fn a_deployment_turns_on_exactly_its_rules() {
        let file = temp("bundle.yaml", BUNDLE_POLICY);
        let path = file.to_str().unwrap();
        let r = resolve(&[arg(path)], Scope::Every).unwrap();
        let d = r.deployment.as_ref().unwrap();
        assert_eq!(d.rules.iter().map(String::as_str).collect::<Vec<_>>(), ["gpu-runtime-class", "idle-gpu-pods"]);
        assert_eq!(d.excluded.as_deref(), Some(&["kube-system".to_string(), "gpu-operator".to_string()][..]));
        let chosen = select(&r, &[]).unwrap();
        let names: Vec<&str> = chosen.rules.iter().map(|(r, _)| r.metadata.name).collect();
        assert_eq!(names, ["gpu-runtime-class", "idle-gpu-pods"], "trusted-sources needs nothing: it is off");
        assert_eq!(chosen.rules[0].1, r#"{"mode":"audit"}"#);
        assert!(
            chosen.notes()[0].starts_with("checking the 2 rule(s) ")
                && chosen.notes()[0].ends_with("turns on: gpu-runtime-class, idle-gpu-pods")
        );
        // --rules narrows it, to rules it turns on.
        assert_eq!(select(&r, &["idle-gpu-pods".into()]).unwrap().rules.len(), 1);
        let e = select(&r, &["gpu-quota".into()]).err().unwrap().to_string();
        assert!(e.contains("does not turn `gpu-quota` on (it turns on gpu-runtime-class, idle-gpu-pods)"), "{e}");
        // Settings for a rule that is off are refused, not ignored.
        let plain = temp("quota.yaml", "{}\n");
        let r = resolve(&[arg(path), arg(&format!("gpu-quota={}", plain.display()))], Scope::Every).unwrap();
        let e = select(&r, &[]).err().unwrap().to_string();
        assert!(e.contains("settings for `gpu-quota`, which") && e.contains("does not turn on"), "{e}");
        // One rule of it, for eval; a rule it does not turn on is named.
        let one = resolve(&[arg(path)], Scope::One("gpu-runtime-class")).unwrap();
        assert_eq!(one.whole.unwrap().json, r#"{"mode":"audit"}"#);
        let e = resolve(&[arg(path)], Scope::One("gpu-quota")).unwrap_err().to_string();
        assert!(e.contains("does not turn `gpu-quota` on"), "{e}");
        // The bundle, for eval: those rules only.
        let b = resolve(&[arg(path)], Scope::One("aigov-bundle")).unwrap();
        let settings: Value = serde_json::from_str(&for_bundle(&b, &[]).unwrap()).unwrap();
        assert_eq!(settings, json!({"rules": {"gpu-runtime-class": {"mode": "audit"}, "idle-gpu-pods": {}}}));
    }

    #[test]
    fn the_bundle_takes_rules_as_scan_does() {
        let rules = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let on = |settings: &str| -> Value { serde_json::from_str::<Value>(settings).unwrap()["rules"].clone() };
        // No settings: exactly those rules, with their defaults; trusted-sources,
        // left out, needs nothing.
        let none = resolve(&[], Scope::One("aigov-bundle")).unwrap();
        assert_eq!(
            on(&for_bundle(&none, &rules(&["idle-gpu-pods", "exec-guard"])).unwrap()),
            json!({"exec-guard": {}, "idle-gpu-pods": {}})
        );
        let e = for_bundle(&none, &rules(&["trusted-sources"])).unwrap_err().to_string();
        assert!(e.starts_with("`trusted-sources` has no safe default"), "{e}");
        let e = for_bundle(&none, &rules(&["exec-gaurd"])).unwrap_err().to_string();
        assert!(e.contains("--rules: ") && e.contains("did you mean `exec-guard`?"), "{e}");
        // The bundle's policy: those it turns on, with its settings.
        let policy = temp("bundle-rules.yaml", BUNDLE_POLICY);
        let r = resolve(&[arg(policy.to_str().unwrap())], Scope::One("aigov-bundle")).unwrap();
        assert_eq!(on(&for_bundle(&r, &rules(&["gpu-runtime-class"])).unwrap()), json!({"gpu-runtime-class": {"mode": "audit"}}));
        let e = for_bundle(&r, &rules(&["gpu-quota"])).unwrap_err().to_string();
        assert!(e.contains("does not turn `gpu-quota` on (it turns on gpu-runtime-class, idle-gpu-pods)"), "{e}");
        // The bundle's settings given whole are a deployment too; a rule
        // given by name over them is turned on.
        let whole = temp("bundle-whole.yaml", "rules:\n  exec-guard: {allowedUsers: [b]}\n  owner-label: null\n");
        let over = temp("ts.yaml", "allowedImages: [registry.example.com/*]\n");
        let r = resolve(&[arg(whole.to_str().unwrap()), arg(&format!("trusted-sources={}", over.display()))], Scope::One("aigov-bundle"))
            .unwrap();
        let settings = for_bundle(&r, &rules(&["owner-label", "exec-guard", "trusted-sources"])).unwrap();
        assert_eq!(
            on(&settings),
            json!({"exec-guard": {"allowedUsers": ["b"]}, "owner-label": {}, "trusted-sources": {"allowedImages": ["registry.example.com/*"]}})
        );
        let e = for_bundle(&r, &rules(&["gpu-quota"])).unwrap_err().to_string();
        assert!(e.contains("does not turn `gpu-quota` on"), "{e}");
        // Settings for a rule `--rules` leaves out, outside a deployment, are refused.
        let r = resolve(&[arg(&format!("trusted-sources={}", over.display()))], Scope::One("aigov-bundle")).unwrap();
        let e = for_bundle(&r, &rules(&["exec-guard"])).unwrap_err().to_string();
        assert!(e.contains("settings for `trusted-sources`, which `--rules` does not name"), "{e}");
    }

    #[test]
    fn a_deployment_directory_is_its_overlay_and_its_policies() {
        let dir = std::env::temp_dir().join(format!("aigov-deploy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (rule, settings) in [("exec-guard", "{allowedUsers: [oncall]}"), ("owner-label", "{}")] {
            std::fs::create_dir_all(dir.join(rule)).unwrap();
            let policy = POLICY
                .replace("exec-guard", rule)
                .replace("\n  settings:\n    allowedUsers: [oncall]\n", &format!("\n  settings: {settings}\n"));
            std::fs::write(dir.join(rule).join("cluster-admission-policy.yaml"), policy).unwrap();
        }
        std::fs::create_dir_all(dir.join("overlay")).unwrap();
        let overlay = "resources:\n- ../exec-guard\n# - ../owner-label\n";
        std::fs::write(dir.join(OVERLAY), overlay).unwrap();
        for given in [dir.clone(), dir.join("overlay")] {
            let r = resolve(&[arg(given.to_str().unwrap())], Scope::Every).unwrap();
            let chosen = select(&r, &[]).unwrap();
            assert_eq!(chosen.rules.iter().map(|(r, _)| r.metadata.name).collect::<Vec<_>>(), ["exec-guard"]);
            assert_eq!(chosen.rules[0].1, r#"{"allowedUsers":["oncall"]}"#);
        }
        // The overlay's monitor patch: monitored, run as audit.
        let monitored = format!(
            "{overlay}patches:\n- target: {{kind: ClusterAdmissionPolicy}}\n  patch: |\n    - op: add\n      path: /spec/mode\n      value: monitor\n"
        );
        std::fs::write(dir.join(OVERLAY), monitored).unwrap();
        let r = resolve(&[arg(dir.to_str().unwrap())], Scope::Every).unwrap();
        let chosen = select(&r, &[]).unwrap();
        assert_eq!(chosen.monitored, ["exec-guard"]);
        assert_eq!(chosen.rules[0].1, r#"{"allowedUsers":["oncall"],"mode":"audit"}"#);
        std::fs::write(dir.join(OVERLAY), "resources: []\n").unwrap();
        let e = format!("{:#}", resolve(&[arg(dir.to_str().unwrap())], Scope::Every).unwrap_err());
        assert!(e.contains("turns on no rule"), "{e}");
        let e = format!(
            "{:#}",
            resolve(&[arg(dir.join("exec-guard").parent().unwrap().parent().unwrap().to_str().unwrap())], Scope::Every).unwrap_err()
        );
        assert!(e.contains("holds no kustomization.yaml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_policy_mode_kubewarden_refuses_is_refused_saying_where_it_goes() {
        let with_mode = |mode: &str| POLICY.replace("  settings:\n", &format!("  mode: {mode}\n  settings:\n"));
        for ok in ["protect", "monitor"] {
            let file = temp(&format!("mode-{ok}.yaml"), &with_mode(ok));
            let Contents::Policies(p) = read_file(&file).unwrap() else { panic!("not read as policies") };
            assert_eq!(p[0].mode.as_deref(), Some(ok));
        }
        let file = temp("mode-audit.yaml", &with_mode("audit"));
        let e = format!("{:#}", read_file(&file).err().unwrap());
        assert!(e.contains("ClusterAdmissionPolicy `aigov-exec-guard`: `spec.mode` is `audit`, which Kubewarden refuses"), "{e}");
        assert!(e.contains("set `mode: audit` in the policy's settings, or `spec.mode: monitor`"), "{e}");
        let file = temp("mode-typo.yaml", &with_mode("protected"));
        let e = format!("{:#}", read_file(&file).err().unwrap());
        assert!(e.contains("`spec.mode` is `protected`: Kubewarden takes `protect` (refuse) or `monitor` (only report)"), "{e}");
        let yml = "exec-guard:\n  module: registry://r/exec-guard:v0.1.0@sha256:00\n  policyMode: enforce\n  settings: {}\n";
        let e = format!("{:#}", read_file(&temp("policies-enforce.yml", yml)).err().unwrap());
        assert!(e.contains("policies-enforce.yml:3: policy `exec-guard`: `policyMode` is `enforce`, which Kubewarden refuses"), "{e}");
    }

    #[test]
    fn a_field_the_policys_kind_does_not_have_is_refused_at_its_line() {
        // A setting dedented out of `spec.settings`, and a mode at its line.
        let text = POLICY.replace(
            "  settings:\n    allowedUsers: [oncall]\n",
            "  settings:\n    mode: audit\n    allowedUsers: [oncall]\n  auditNamespaces: [team-a]\n  mode: audit\n",
        );
        let file = temp("spec-fields.yaml", &format!("# the team's policy\n{text}"));
        let Each::Policies(each) = read_each(&file).unwrap() else { panic!("not read as policies") };
        assert_eq!(each[0].span, Some((2, 14)));
        let refused: Vec<(Option<usize>, &str)> = each[0].refused.iter().map(|r| (r.line, r.message.as_str())).collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert_eq!(
            refused[0],
            (
                Some(12),
                "ClusterAdmissionPolicy `aigov-exec-guard`: `spec.auditNamespaces` is not a field of a ClusterAdmissionPolicy: did you \
                 mean `spec.settings.auditNamespaces`?"
            )
        );
        assert_eq!(refused[1].0, Some(13), "the line of `spec.mode`, not of `spec.settings.mode`");
        assert!(refused[1].1.contains("`spec.mode` is `audit`, which Kubewarden refuses"), "{refused:?}");
        assert!(each[0].policy.is_ok(), "read without the fields refused, so that its settings are checked too");
        // Every command that reads the file refuses it, each at its line.
        let e = format!("{:#}", read_file(&file).err().unwrap());
        let path = file.display();
        assert!(e.contains(&format!("{path}:12: ClusterAdmissionPolicy `aigov-exec-guard`: `spec.auditNamespaces` is not a field")), "{e}");
        assert!(e.contains(&format!("\n{path}:13: ClusterAdmissionPolicy `aigov-exec-guard`: `spec.mode` is `audit`")), "{e}");
        let e = format!("{:#}", resolve(&[arg(&path.to_string())], Scope::Every).unwrap_err());
        assert!(e.contains("did you mean `spec.settings.auditNamespaces`?"), "{e}");

        // A setting of the rule; a rule of the bundle; a near field; a
        // field of the other kind; anything else lists the fields.
        let refused = |kind: &str, module: &str, spec: &str| -> Vec<String> {
            let doc = parse_documents(&format!(
                "apiVersion: policies.kubewarden.io/v1\nkind: {kind}\nmetadata: {{name: p}}\nspec: {{module: 'registry://r/{module}:v1', {spec}}}"
            ))
            .unwrap()
            .remove(0);
            let (policy, refused) = policy(Path::new("p.yaml"), &doc);
            assert!(policy.is_ok());
            refused.into_iter().map(|r| r.message).collect()
        };
        assert_eq!(
            refused("ClusterAdmissionPolicy", "exec-guard", "allowedUsers: [a]"),
            [
                "ClusterAdmissionPolicy `p`: `spec.allowedUsers` is not a field of a ClusterAdmissionPolicy: did you mean `spec.settings.allowedUsers`?"
            ]
        );
        assert_eq!(
            refused("ClusterAdmissionPolicy", "aigov-bundle", "gpu-quota: {}"),
            [
                "ClusterAdmissionPolicy `p`: `spec.gpu-quota` is not a field of a ClusterAdmissionPolicy: did you mean `spec.settings.rules.gpu-quota`?"
            ]
        );
        assert_eq!(
            refused("ClusterAdmissionPolicy", "exec-guard", "namespaceSelecter: {}"),
            [
                "ClusterAdmissionPolicy `p`: `spec.namespaceSelecter` is not a field of a ClusterAdmissionPolicy: did you mean `spec.namespaceSelector`?"
            ]
        );
        assert_eq!(
            refused("AdmissionPolicy", "exec-guard", "namespaceSelector: {}"),
            [
                "AdmissionPolicy `p`: `spec.namespaceSelector` is not a field of an AdmissionPolicy (it is a field of a ClusterAdmissionPolicy): remove it, or make the policy a ClusterAdmissionPolicy"
            ]
        );
        let other = refused("ClusterAdmissionPolicy", "exec-guard", "replicas: 2");
        assert!(other[0].ends_with("kubectl refuses it: its fields are `allowInsideAdmissionControllerNamespace`, `backgroundAudit`, `contextAwareResources`, `failurePolicy`, `matchConditions`, `matchPolicy`, `message`, `mode`, `module`, `mutating`, `namespaceSelector`, `objectSelector`, `policyServer`, `rules`, `settings`, `sideEffects`, `timeoutEvalSeconds`, `timeoutSeconds`; the rule's settings go in `spec.settings`"), "{other:?}");
        // Every field of the CRD is taken.
        let every = "allowInsideAdmissionControllerNamespace: false, backgroundAudit: true, contextAwareResources: [], failurePolicy: Fail, \
                     matchConditions: [], matchPolicy: Equivalent, message: m, mode: protect, mutating: false, namespaceSelector: {}, \
                     objectSelector: {}, policyServer: default, rules: [], settings: {}, sideEffects: None, timeoutEvalSeconds: 5, timeoutSeconds: 10";
        assert!(refused("ClusterAdmissionPolicy", "exec-guard", every).is_empty());
    }

    #[test]
    fn a_kubewarden_mode_in_the_settings_points_to_spec_mode() {
        let rule = native::rule("exec-guard").unwrap();
        let refusal = |settings: &str| (rule.validate_settings)(settings.as_bytes()).message.unwrap();
        let monitor = explain_refusal(&refusal(r#"{"mode":"monitor"}"#), "spec.mode");
        assert_eq!(
            monitor,
            "setting `mode`: unknown variant `monitor`, expected `enforce` or `audit`. `monitor` is a value of Kubewarden's `spec.mode` \
             (`protect` or `monitor`), and the rule's own `mode` takes `enforce` or `audit`: set `spec.mode: monitor` beside the policy's \
             `settings`, or `mode: audit` in its settings to have the rule report refusals without enforcing them"
        );
        let protect = explain_refusal(&refusal(r#"{"mode":"protect"}"#), "policyMode");
        assert!(protect.ends_with("set `policyMode: protect` beside the policy's `settings`, or `mode: enforce` in its settings to have the rule refuse what it finds (its default)"), "{protect}");
        // In the bundle, and only for those two values.
        let bundle = (native::BUNDLE.validate_settings)(br#"{"rules":{"exec-guard":{"mode":"monitor"}}}"#).message.unwrap();
        assert!(
            bundle.starts_with("rules.exec-guard: ") && explain_refusal(&bundle, "spec.mode").contains("set `spec.mode: monitor`"),
            "{bundle}"
        );
        let typo = refusal(r#"{"mode":"enforced"}"#);
        assert_eq!(explain_refusal(&typo, "spec.mode"), typo);
    }

    #[test]
    fn a_policy_servers_policies_yml_is_read() {
        let text = "aigov-bundle:\n  module: registry://r/aigov-bundle:v0.1.0@sha256:00\n  policyMode: protect\n  settings: {rules: {exec-guard: {}}}\n\
                    exec-guard:\n  module: registry://r/exec-guard:v0.1.0@sha256:00\n  policyMode: monitor\n  settings: {}\n\
                    owner-label:\n  module: registry://r/owner-label:v0.1.0@sha256:00\n  policyMode: protect\n  settings: {}\n";
        let file = temp("policies.yml", text);
        let Contents::Policies(policies) = read_file(&file).unwrap() else { panic!("not read as policies") };
        assert_eq!(policies.len(), 3);
        assert_eq!(policies[1].mode.as_deref(), Some("monitor"));
        // Its deployment is the bundle's.
        let r = resolve(&[arg(file.to_str().unwrap())], Scope::Every).unwrap();
        assert_eq!(select(&r, &[]).unwrap().rules.iter().map(|(r, _)| r.metadata.name).collect::<Vec<_>>(), ["exec-guard"]);
    }
}
