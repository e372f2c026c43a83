//! Settings as people give them, read one way for every command: the
//! `--settings` flag (`FILE` for the rule a command runs, `RULE=FILE` for
//! one of several), where FILE holds a settings object (YAML or JSON) or is
//! a policy file as `aigov manifests` writes it (`ClusterAdmissionPolicy`
//! or `AdmissionPolicy` documents, each one's rule found by its module
//! reference or its `app.kubernetes.io/name` label, its `spec.settings`
//! taken); and what a rule runs with when none are given: its defaults, or,
//! for a rule with no safe default, nothing ([`required`] says what to
//! write).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aigov_sdk::NativePolicy;
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::run::admission::parse_documents;
use crate::run::native::{self, Names};

/// The `--settings` flag, declared once for every command that takes it.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SettingsArgs {
    /// Settings: FILE for the rule (YAML or JSON, or a policy file `aigov
    /// manifests` wrote, whose `spec.settings` are read), or RULE=FILE for
    /// one rule of several (repeatable). Without it, a rule runs with its
    /// defaults; a rule with no safe default (trusted-sources) needs it.
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
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("rule", &self.rule.metadata.name)
            .field("what", &self.what)
            .field("settings", &self.settings)
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

/// Reads a settings file: one settings object, or policy documents.
pub fn read_file(path: &Path) -> Result<Contents> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut docs = parse_documents(&text).with_context(|| format!("parsing {}", path.display()))?;
    let is_policy = |d: &Value| d.get("kind").and_then(Value::as_str).is_some_and(|k| POLICY_KINDS.contains(&k));
    if let Some(other) = docs.iter().position(|d| !is_policy(d)).filter(|_| docs.iter().any(is_policy)) {
        bail!(
            "{}: document {} is no ClusterAdmissionPolicy or AdmissionPolicy, beside policies that are: give a file of policies, or one settings object",
            path.display(),
            other + 1
        );
    }
    if docs.iter().any(is_policy) {
        return docs.iter().map(|d| policy(path, d)).collect::<Result<_>>().map(Contents::Policies);
    }
    match docs.len() {
        0 => Ok(Contents::Settings(json!({}))),
        1 => Ok(Contents::Settings(docs.remove(0))),
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

/// A policy document's rule and settings.
fn policy(path: &Path, doc: &Value) -> Result<Policy> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("(unnamed)");
    let what = format!("{kind} `{name}`");
    let module = doc.pointer("/spec/module").and_then(Value::as_str).unwrap_or_default();
    let label = doc.pointer("/metadata/labels/app.kubernetes.io~1name").and_then(Value::as_str);
    let by_module = module_rule(module);
    let rule = match (by_module.and_then(|m| native::lookup(m, Names::RulesAndBundle).ok()), label) {
        (Some(rule), _) => rule,
        (None, Some(label)) => native::lookup(label, Names::RulesAndBundle).with_context(|| {
            format!(
                "{}: {what}: neither its module `{module}` nor its label `app.kubernetes.io/name: {label}` names a rule",
                path.display()
            )
        })?,
        (None, None) => {
            let e = native::unknown(by_module.unwrap_or(module), Names::RulesAndBundle);
            return Err(e.context(format!(
                "{}: {what}: its module `{module}` names no rule, and it has no `app.kubernetes.io/name` label naming one",
                path.display()
            )));
        }
    };
    let settings = match doc.pointer("/spec/settings") {
        None | Some(Value::Null) => json!({}),
        Some(s) => s.clone(),
    };
    Ok(Policy { rule, what, settings })
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
}

impl Resolved {
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

    /// Each rule the bundle's settings turn on, with its settings.
    fn set_bundle_rules(&mut self, settings: &Value, origin: &str) -> Result<()> {
        let Some(rules) = settings.get("rules").and_then(Value::as_object) else {
            bail!("{origin}: the bundle's settings are `rules: {{<rule>: {{…}}}}`, and these have no `rules` object");
        };
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
                let listed = || policies.iter().map(|p| format!("`{}`", p.rule.metadata.name)).collect::<Vec<_>>().join(", ");
                let wanted = match (named, scope) {
                    (Some(rule), _) => Some(rule.as_str()),
                    (None, Scope::One(rule)) => Some(rule),
                    (None, Scope::Any) if policies.len() == 1 => None,
                    (None, Scope::Any) => {
                        bail!("{file} holds policies of {}: name the rule whose settings to take (`--settings RULE={file}`)", listed())
                    }
                    (None, Scope::Every) => None,
                };
                let take = |p: &Policy| (Some(p.rule.metadata.name), p.settings.clone(), format!("{file}, {}", p.what));
                match wanted {
                    Some(rule) => match policies.iter().find(|p| p.rule.metadata.name == rule) {
                        Some(p) => found.push(take(p)),
                        // The bundle takes the policies of its rules.
                        None if rule == bundle && named.is_none() => found.extend(policies.iter().map(take)),
                        None => bail!("{file} holds no policy of `{rule}` (it holds policies of {})", listed()),
                    },
                    None => found.extend(policies.iter().map(take)),
                }
            }
        }
        for (rule, settings, origin) in found {
            place(&mut out, scope, rule, &settings, origin)?;
        }
    }
    Ok(out)
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
             (or give a policy file, or the bundle's settings, `rules: {{<rule>: {{…}}}}`)"
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

/// The bundle's settings: those given whole (each rule given by name
/// turned on over them), else every rule turned on, each with its
/// settings or defaults; a rule with no safe default needs settings.
pub fn for_bundle(resolved: &Resolved) -> Result<String> {
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
            let mut every = Map::new();
            for rule in native::RULES {
                let given = resolved.rules.get(rule.metadata.name);
                every.insert(rule.metadata.name.to_string(), serde_json::from_str(&for_rule(rule, given)?)?);
            }
            every
        }
    };
    for (name, given) in &resolved.rules {
        rules.insert(name.clone(), serde_json::from_str(&given.json).with_context(|| given.origin.clone())?);
    }
    Ok(json!({ "rules": rules }).to_string())
}

/// Settings by rule for a command that runs every rule: those given, and
/// an error naming every rule with no safe default that has none.
pub fn for_every_rule(resolved: &Resolved) -> Result<BTreeMap<String, Given>> {
    let missing: Vec<anyhow::Error> = native::RULES
        .iter()
        .filter(|r| !resolved.rules.contains_key(r.metadata.name))
        .filter_map(|r| needs_settings(r).map(|why| required(r, &why)))
        .collect();
    if let Some(first) = missing.into_iter().reduce(|a, b| anyhow::anyhow!("{a:#}; and {b:#}")) {
        return Err(first);
    }
    Ok(resolved.rules.clone())
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
        assert!(for_every_rule(&Resolved::default()).unwrap_err().to_string().contains("`trusted-sources` has no safe default"));
        assert!(for_bundle(&Resolved::default()).unwrap_err().to_string().contains("`trusted-sources` has no safe default"));
        assert_eq!(for_rule(native::rule("exec-guard").unwrap(), None).unwrap(), "{}");
        let given = Given { json: r#"{"allowedImages":["registry.example.com/*"],"checkModelSources":false}"#.into(), origin: "f".into() };
        let resolved = Resolved { whole: None, rules: [("trusted-sources".to_string(), given)].into() };
        let bundle: Value = serde_json::from_str(&for_bundle(&resolved).unwrap()).unwrap();
        assert_eq!(bundle["rules"]["trusted-sources"], json!({"allowedImages": ["registry.example.com/*"], "checkModelSources": false}));
        assert_eq!(bundle["rules"].as_object().unwrap().len(), native::RULES.len());
        assert!((native::BUNDLE.validate_settings)(bundle.to_string().as_bytes()).valid);
    }
}
