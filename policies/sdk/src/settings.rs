//! Settings: the keys every rule shares, plus the rule's own.
//!
//! Every rule accepts `mode` (`enforce` or `audit`) and the exemptions
//! `exemptNamespaces`, `exemptUsers` and `exemptGroups` (wildcards allowed).
//! The rest belongs to the rule's own settings type, a serde struct with
//! `deny_unknown_fields`, so a typo in a key is an error, never a silently
//! ignored setting.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::glob::{Glob, any_match};
use crate::request::Request;

/// What a rule does with a request it would reject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Reject it.
    #[default]
    Enforce,
    /// Admit it, and report the violations as warnings and an audit
    /// annotation.
    Audit,
}

/// Who and where a rule does not apply to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// Namespaces (wildcards allowed: `kube-*`).
    pub namespaces: Vec<Glob>,
    /// User names (`system:serviceaccount:ci:*`).
    pub users: Vec<Glob>,
    /// Groups (`platform-admins`).
    pub groups: Vec<Glob>,
}

impl Exemptions {
    /// Whether the request is exempt: its namespace, its user or one of the
    /// user's groups is listed.
    pub fn exempts(&self, req: &Request<'_>) -> bool {
        req.namespace().is_some_and(|ns| any_match(&self.namespaces, ns))
            || any_match(&self.users, &req.user().username)
            || req.user().groups.iter().any(|g| any_match(&self.groups, g))
    }
}

/// A settings problem, naming the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    /// The offending key (`maxGpusPerWorker`, `allowedRuntimeClasses[1]`), if any.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl SettingsError {
    /// A problem with one key.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> SettingsError {
        SettingsError {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// A problem with the settings as a whole.
    pub fn whole(message: impl Into<String>) -> SettingsError {
        SettingsError {
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "setting `{k}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SettingsError {}

/// A rule's own settings: a serde struct with `rename_all = "camelCase"`,
/// `deny_unknown_fields` and `default`, whose [`Default`] is the documented
/// defaults.
pub trait RuleSettings: DeserializeOwned + Serialize + Default {
    /// Checks values serde cannot: contradictions, empty lists, bad patterns.
    fn validate(&self) -> Result<(), SettingsError> {
        Ok(())
    }
}

/// The keys every rule shares.
pub const SHARED_KEYS: [&str; 4] = ["mode", "exemptNamespaces", "exemptUsers", "exemptGroups"];

/// A rule's complete settings: shared keys plus the rule's own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings<R> {
    /// `mode`.
    pub mode: Mode,
    /// `exemptNamespaces`, `exemptUsers`, `exemptGroups`.
    pub exemptions: Exemptions,
    /// The rule's own settings.
    pub rule: R,
}

impl<R: RuleSettings> Settings<R> {
    /// Parses a settings object (`null` means all defaults). Unknown keys,
    /// wrong types and out-of-range values are errors that name the key.
    pub fn parse(json: &str) -> Result<Settings<R>, SettingsError> {
        let value: Value = serde_json::from_str(json)
            .map_err(|e| SettingsError::whole(format!("settings are not valid JSON: {e}")))?;
        let mut map = match value {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(SettingsError::whole(format!(
                    "settings must be an object, got {}",
                    type_name(&other)
                )));
            }
        };
        let mode = take(&mut map, "mode")?.unwrap_or_default();
        let exemptions = Exemptions {
            namespaces: take(&mut map, "exemptNamespaces")?.unwrap_or_default(),
            users: take(&mut map, "exemptUsers")?.unwrap_or_default(),
            groups: take(&mut map, "exemptGroups")?.unwrap_or_default(),
        };
        let rule: R = serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
            let path = e.path().to_string();
            describe(&path, &e.into_inner().to_string())
        })?;
        Ok(Settings {
            mode,
            exemptions,
            rule,
        })
    }

    /// Parses and checks a settings object: what `validate_settings` and
    /// every evaluation accept.
    pub fn parse_valid(json: &str) -> Result<Settings<R>, SettingsError> {
        let settings = Settings::parse(json)?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks the parsed settings: shared keys, then the rule's own checks.
    pub fn validate(&self) -> Result<(), SettingsError> {
        for (key, list) in [
            ("exemptNamespaces", &self.exemptions.namespaces),
            ("exemptUsers", &self.exemptions.users),
            ("exemptGroups", &self.exemptions.groups),
        ] {
            non_empty_patterns(key, list)?;
        }
        self.rule.validate()
    }

    /// The settings as JSON, shared keys included; the defaults when
    /// called on `Settings::default()`.
    pub fn to_json(&self) -> Value {
        let mut map = match serde_json::to_value(&self.rule) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let globs = |l: &[Glob]| Value::from(l.iter().map(|g| g.as_str()).collect::<Vec<_>>());
        map.insert(
            "mode".into(),
            Value::from(match self.mode {
                Mode::Enforce => "enforce",
                Mode::Audit => "audit",
            }),
        );
        map.insert("exemptNamespaces".into(), globs(&self.exemptions.namespaces));
        map.insert("exemptUsers".into(), globs(&self.exemptions.users));
        map.insert("exemptGroups".into(), globs(&self.exemptions.groups));
        Value::Object(map)
    }
}

/// Refuses empty patterns in a list setting: an empty namespace pattern
/// would exempt cluster-scoped objects without anyone meaning it.
pub fn non_empty_patterns(key: &str, list: &[Glob]) -> Result<(), SettingsError> {
    for (i, g) in list.iter().enumerate() {
        if g.as_str().trim().is_empty() {
            return Err(SettingsError::new(format!("{key}[{i}]"), "must not be empty"));
        }
    }
    Ok(())
}

fn take<T: DeserializeOwned>(map: &mut Map<String, Value>, key: &str) -> Result<Option<T>, SettingsError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_path_to_error::deserialize(v).map(Some).map_err(|e| {
            let path = e.path().to_string();
            let full = if path == "." { key.to_string() } else { format!("{key}{}", index_path(&path)) };
            describe(&full, &e.into_inner().to_string())
        }),
    }
}

/// `[0]` stays `[0]`; `.x` stays `.x`; a bare `x` becomes `.x`.
fn index_path(path: &str) -> String {
    if path.starts_with('[') || path.starts_with('.') {
        path.to_string()
    } else {
        format!(".{path}")
    }
}

/// Turns a serde message into one a person can act on, naming the key.
fn describe(path: &str, serde_msg: &str) -> SettingsError {
    let msg = friendly(serde_msg);
    if let Some(rest) = serde_msg.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = expected
            .trim_start_matches(", expected one of ")
            .trim_start_matches(", expected ")
            .trim_start_matches(", there are no fields");
        let shared = SHARED_KEYS.map(|k| format!("`{k}`")).join(", ");
        let known = if expected.is_empty() { shared } else { format!("{expected}, {shared}") };
        // The path already ends with the unknown key (`a.b` for key `b` in `a`).
        let key = if path == "." || path.is_empty() { field.to_string() } else { path.to_string() };
        return SettingsError::new(key, format!("unknown setting; known settings are {known}"));
    }
    if path == "." || path.is_empty() {
        SettingsError::whole(msg)
    } else {
        SettingsError::new(path, msg)
    }
}

fn friendly(msg: &str) -> String {
    let mut m = msg.to_string();
    for t in ["u8", "u16", "u32", "u64", "usize"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number, zero or more");
    }
    for t in ["i32", "i64"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number");
    }
    m.replace("expected struct ", "expected an object ")
        .replace("expected a sequence", "expected a list")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The extended resources that count as GPUs: wildcard patterns, by default
/// `nvidia.com/gpu`, `nvidia.com/mig-*` and `amd.com/gpu`. A rule that looks
/// at GPUs embeds this as its `gpuResourceNames` setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GpuResources(pub Vec<Glob>);

impl Default for GpuResources {
    fn default() -> Self {
        GpuResources(vec![
            Glob::new("nvidia.com/gpu"),
            Glob::new("nvidia.com/mig-*"),
            Glob::new("amd.com/gpu"),
        ])
    }
}

impl GpuResources {
    /// Whether a resource name is a GPU resource.
    pub fn is_gpu(&self, resource: &str) -> bool {
        // Every GPU resource is an extended resource (`vendor/name`); checking
        // for the slash first skips cpu, memory and ephemeral-storage cheaply.
        resource.contains('/') && any_match(&self.0, resource)
    }

    /// Checks the list under its settings key: at least one non-empty pattern.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        if self.0.is_empty() {
            return Err(SettingsError::new(
                key,
                "must list at least one resource name, or no GPU would ever be detected",
            ));
        }
        non_empty_patterns(key, &self.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Demo {
        max_gpus: u32,
        names: Vec<String>,
        gpu_resource_names: GpuResources,
    }
    impl RuleSettings for Demo {
        fn validate(&self) -> Result<(), SettingsError> {
            self.gpu_resource_names.validate("gpuResourceNames")
        }
    }

    fn err(json: &str) -> String {
        Settings::<Demo>::parse_valid(json).expect_err("settings must be refused").to_string()
    }

    #[test]
    fn defaults_and_shared_keys() {
        let s = Settings::<Demo>::parse("{}").unwrap();
        assert_eq!(s.mode, Mode::Enforce);
        assert_eq!(s.rule, Demo::default());
        let s = Settings::<Demo>::parse(r#"{"mode":"audit","exemptNamespaces":["kube-*"],"maxGpus":3}"#).unwrap();
        assert_eq!(s.mode, Mode::Audit);
        assert_eq!(s.exemptions.namespaces, vec![Glob::new("kube-*")]);
        assert_eq!(s.rule.max_gpus, 3);
        assert!(Settings::<Demo>::parse("null").is_ok());
    }

    #[test]
    fn unknown_keys_name_the_key_and_the_alternatives() {
        let e = err(r#"{"mdoe":"audit"}"#);
        assert!(e.starts_with("setting `mdoe`: unknown setting; known settings are `maxGpus`, `names`, `gpuResourceNames`, `mode`"), "{e}");
    }

    #[test]
    fn wrong_types_and_negatives_name_the_key() {
        assert_eq!(
            err(r#"{"maxGpus":-1}"#),
            "setting `maxGpus`: invalid value: integer `-1`, expected a whole number, zero or more"
        );
        assert_eq!(err(r#"{"maxGpus":"8"}"#), "setting `maxGpus`: invalid type: string \"8\", expected a whole number, zero or more");
        assert_eq!(err(r#"{"names":[1]}"#), "setting `names[0]`: invalid type: integer `1`, expected a string");
        assert_eq!(err(r#"{"mode":"enforcing"}"#), "setting `mode`: unknown variant `enforcing`, expected `enforce` or `audit`");
        assert_eq!(err(r#"{"exemptUsers":"bob"}"#), "setting `exemptUsers`: invalid type: string \"bob\", expected a list");
        assert_eq!(err(r#"{"exemptGroups":["ok", 3]}"#), "setting `exemptGroups[1]`: invalid type: integer `3`, expected a string");
    }

    #[test]
    fn whole_document_problems() {
        assert_eq!(err("[]"), "settings must be an object, got a list");
        assert!(err("{").starts_with("settings are not valid JSON"));
    }

    #[test]
    fn rule_and_shared_validation() {
        assert_eq!(
            err(r#"{"gpuResourceNames":[]}"#),
            "setting `gpuResourceNames`: must list at least one resource name, or no GPU would ever be detected"
        );
        assert_eq!(err(r#"{"exemptNamespaces":[""]}"#), "setting `exemptNamespaces[0]`: must not be empty");
    }

    #[test]
    fn defaults_serialize_with_shared_keys() {
        let v = Settings::<Demo>::default().to_json();
        assert_eq!(v["mode"], "enforce");
        assert_eq!(v["gpuResourceNames"][1], "nvidia.com/mig-*");
        assert_eq!(v["exemptUsers"], serde_json::json!([]));
    }

    #[test]
    fn gpu_resource_matching() {
        let g = GpuResources::default();
        assert!(g.is_gpu("nvidia.com/gpu"));
        assert!(g.is_gpu("nvidia.com/mig-3g.20gb"));
        assert!(g.is_gpu("amd.com/gpu"));
        assert!(!g.is_gpu("cpu"));
        assert!(!g.is_gpu("nvidia.com/gpu.shared"));
    }
}
