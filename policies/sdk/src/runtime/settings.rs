//! Settings: the keys every rule shares, plus the rule's own.
//!
//! Every rule accepts the shared keys ([`crate::runtime::shared`]: `mode`,
//! `auditNamespaces`, the exemptions, the selectors and
//! `allowExistingViolations`). The rest belongs to the rule's own settings
//! type, a serde struct with `deny_unknown_fields`, so a typo in a key is an
//! error, never a silently ignored setting; `validate_settings` refuses a
//! list where the rule's type holds an object too (serde's derive would
//! read it as the struct's fields in order).
//!
//! Settings are parsed in one pass, without an intermediate
//! `serde_json::Value`: the shared keys are taken out of the top-level
//! object as serde meets them, the rest is decoded into the rule's type.
//! Settings that pass refuses are read again the long way (the members
//! split first), whose errors name the key from where serde stopped.
//! Settings without a key are the defaults, read without decoding anything.
//! A host that keeps its instance (`kwctl bench`, a warm waPC instance)
//! sends the same settings with every request; [`cached`] parses them once.
//! A fresh instance per request (as policy-server runs them) reads them on
//! every request, which is why the common cases are made cheap.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::base::rule_settings::{RuleSettings, SettingsError};
use crate::decode::dec::Str;
use crate::decode::explain::friendly;
use crate::decode::json;
use crate::runtime::shared::is_shared;

pub use crate::runtime::shared::{Exemptions, Mode, SHARED_KEYS, Shared};

/// A rule's complete settings: shared keys plus the rule's own.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings<R> {
    /// The shared keys.
    pub shared: Shared,
    /// The rule's own settings.
    pub rule: R,
}

impl<R> Settings<R> {
    /// `rule` with the shared keys at their defaults.
    fn with_defaults(rule: R) -> Settings<R> {
        Settings { shared: Shared::default(), rule }
    }
}

impl Settings<()> {
    /// These shared keys with `rule`.
    fn with_rule<R>(self, rule: R) -> Settings<R> {
        Settings { shared: self.shared, rule }
    }
}

impl<R: Default> Default for Settings<R> {
    fn default() -> Self {
        Settings::with_defaults(R::default())
    }
}

/// Reads a settings object as rule settings `R`, taking the shared keys
/// out into `shared` as they come ([`Settings::read_once`]).
struct OwnKeys<'s, R> {
    shared: &'s mut Settings<()>,
    rule: PhantomData<R>,
}

impl<'de, R: DeserializeOwned> de::Visitor<'de> for OwnKeys<'_, R> {
    type Value = R;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<R, A::Error> {
        R::deserialize(OwnMembers { map, shared: self.shared })
    }
}

/// The members of a settings object but the shared keys, which it reads
/// into `shared` as it passes them: a map for the rule's type to decode.
struct OwnMembers<'s, A> {
    map: A,
    shared: &'s mut Settings<()>,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for OwnMembers<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Str<'de>>()? else { return Ok(None) };
            if !is_shared(&key) {
                return seed.deserialize(de::value::StrDeserializer::<A::Error>::new(&key)).map(Some);
            }
            self.map.next_value_seed(SharedKey { shared: &mut self.shared.shared, key: &key })?;
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

impl<'de, A: de::MapAccess<'de>> de::Deserializer<'de> for OwnMembers<'_, A> {
    type Error = A::Error;

    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Reads the value of shared key `key` into `shared`.
struct SharedKey<'s, 'k> {
    shared: &'s mut Shared,
    key: &'k str,
}

impl<'de> de::DeserializeSeed<'de> for SharedKey<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.shared.take(self.key, d)
    }
}

/// The top-level members of a settings object, by key (of a key given
/// twice, the last).
#[derive(Deserialize)]
#[serde(transparent)]
struct Members<'a>(#[serde(borrow)] Option<BTreeMap<Str<'a>, &'a RawValue>>);

impl<R: RuleSettings> Settings<R> {
    /// Parses a settings object (`null` means all defaults). Unknown keys,
    /// wrong types and out-of-range values are errors that name the key.
    pub fn parse(json: &str) -> Result<Settings<R>, SettingsError> {
        Ok(Settings::read(json)?.unwrap_or_default())
    }

    /// Parses and checks a settings object: what `validate_settings` and
    /// every evaluation accept.
    pub fn parse_valid(json: &str) -> Result<Settings<R>, SettingsError> {
        // Settings without a key are the defaults, which serde would read
        // from `{}` and which pass the rule's checks unless the rule
        // requires settings ([`check_defaults`], which every rule's tests
        // run): a rule left at its defaults is set up without decoding or
        // checking anything. A fresh instance per request (as policy-server
        // runs them) pays this for every rule of the bundle on every request.
        let (settings, checked) = match Settings::read(json)? {
            None => (Settings::default(), !R::REQUIRES_SETTINGS),
            Some(settings) => (settings, false),
        };
        if !checked {
            settings.validate()?;
        }
        Ok(settings)
    }

    /// [`Settings::parse`], or `None` for an object without members (or
    /// `null`): all defaults.
    fn read(json: &str) -> Result<Option<Settings<R>>, SettingsError> {
        let body = json.trim_matches(crate::decode::dec::WHITESPACE);
        if body == "null"
            || body
                .strip_prefix('{')
                .and_then(|b| b.strip_suffix('}'))
                .is_some_and(|b| b.trim_matches(crate::decode::dec::WHITESPACE).is_empty())
        {
            return Ok(None);
        }
        // One pass: the shared keys taken out as serde meets them, the rest
        // decoded into the rule's type. Whatever that pass refuses is read
        // again the long way, which gives every message, and reads a rule's
        // key given twice (which serde's derive refuses) as its last value.
        if body.starts_with('{')
            && let Ok(settings) = Settings::read_once(json)
        {
            return Ok(Some(settings));
        }
        Settings::read_split(json)
    }

    /// [`Settings::parse_valid`], and a list where the rule's settings hold
    /// an object refused ([`no_list_read_as_object`]): what
    /// `validate_settings` accepts. Kubewarden checks a policy's settings
    /// with `validate_settings` before the policy serves a request, so a
    /// request's reading ([`cached`]) skips this comparison, which would
    /// cost a fresh instance a serialization of the settings.
    pub fn parse_checked(json: &str) -> Result<Settings<R>, SettingsError> {
        let settings = Settings::parse_valid(json)?;
        // Only settings holding a list can hold one where an object
        // belongs, and only settings types with a struct inside (a few)
        // hold an object below the top-level one.
        if json.contains('[') {
            let rule = serde_json::to_string(&settings.rule).unwrap_or_default();
            if rule.get(1..).is_some_and(|inner| inner.contains('{')) {
                no_list_read_as_object(json, &rule)?;
            }
        }
        Ok(settings)
    }

    /// [`Settings::read`] in one pass over `json` (an object).
    fn read_once(json: &str) -> Result<Settings<R>, serde_json::Error> {
        let mut shared = Settings::with_defaults(());
        let mut d = serde_json::Deserializer::from_str(json);
        let rule = de::Deserializer::deserialize_map(&mut d, OwnKeys { shared: &mut shared, rule: PhantomData })?;
        d.end()?;
        Ok(shared.with_rule(rule))
    }

    /// [`Settings::read`] the long way: the top-level members split into
    /// the shared keys and the rule's own, then the rule's decoded.
    fn read_split(json: &str) -> Result<Option<Settings<R>>, SettingsError> {
        let members = match serde_json::from_str::<Members<'_>>(json) {
            Ok(Members(Some(m))) if !m.is_empty() => m,
            Ok(Members(_)) => return Ok(None),
            Err(e) if e.is_syntax() || e.is_eof() => {
                return Err(SettingsError::whole(format!("settings are not valid JSON: {e}")));
            }
            Err(_) => {
                let what = match json.trim_start().as_bytes().first() {
                    Some(b'[') => "a list",
                    Some(b'"') => "a string",
                    Some(b't' | b'f') => "a boolean",
                    _ => "a number",
                };
                return Err(SettingsError::whole(format!("settings must be an object, got {what}")));
            }
        };
        // The shared keys first, the rule's own decoded last: its defaults
        // are built once, by serde, not also for a `Settings::default()`
        // the decoded value would replace.
        let mut out = Settings::with_defaults(());
        let mut rest = String::from("{");
        for (key, raw) in &members {
            if is_shared(key) {
                let mut d = serde_json::Deserializer::from_str(raw.get());
                out.shared.take(key, &mut d).and_then(|()| d.end()).map_err(|e| describe(raw.get(), &e, key))?;
                continue;
            }
            if rest.len() > 1 {
                rest.push(',');
            }
            rest.push_str(&json::quote(key));
            rest.push(':');
            rest.push_str(raw.get());
        }
        rest.push('}');
        // Through the same adapter as the one pass (there are no shared
        // keys left to take out), so that the rule's type is decoded by one
        // body of code, not two.
        let rule = Settings::<R>::read_once(&rest).map_err(|e| describe(&rest, &e, ""))?.rule;
        Ok(Some(out.with_rule(rule)))
    }

    /// Checks the parsed settings: shared keys, then the rule's own checks.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.shared.validate(if R::EXEMPTS_IMAGES { Ok(()) } else { Err(R::NO_EXEMPT_IMAGES_BECAUSE) })?;
        self.rule.validate()?;
        let classes: Vec<&str> = self.shared.gpu_device_classes.iter().map(|g| g.as_str()).collect();
        self.rule.validate_gpu_classes(&classes)
    }

    /// The settings as JSON, shared keys included; the defaults when
    /// called on `Settings::default()`.
    pub fn to_json(&self) -> Value {
        let mut map = match serde_json::to_value(&self.rule) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        self.shared.write(&mut map);
        Value::Object(map)
    }
}

/// Checks what [`Settings::parse_valid`] assumes of rule settings `R`, which
/// every rule's tests hold it to (`export_policy!` writes the test): its
/// defaults pass its own checks exactly when [`RuleSettings::REQUIRES_SETTINGS`]
/// is false, and serde reads `{}` as exactly the defaults (compared as
/// JSON), so that settings without a key need neither decoding nor checking;
/// none of its keys is a shared key (one could never be set); and its
/// defaults, every key spelt out, read the same in one pass as the long way.
pub fn check_defaults<R: RuleSettings>() -> Result<(), String> {
    let defaults = Settings::<R>::default();
    match (defaults.validate(), R::REQUIRES_SETTINGS) {
        (Ok(()), false) | (Err(_), true) => {}
        (Err(e), false) => return Err(format!("the defaults are refused ({e}), but `REQUIRES_SETTINGS` is false")),
        (Ok(()), true) => return Err("`REQUIRES_SETTINGS` is true, but the defaults are accepted".to_string()),
    }
    let read: R = serde_json::from_str("{}").map_err(|e| format!("`{{}}` is refused: {e}"))?;
    match (serde_json::to_value(&read), serde_json::to_value(&defaults.rule)) {
        (Ok(a), Ok(b)) if a == b => {}
        (a, b) => return Err(format!("`{{}}` reads as {a:?}, but the defaults are {b:?}")),
    }
    // A key of the rule's own named as a shared one could never be set:
    // the shared keys are taken out before the rule's type sees the rest.
    match serde_json::to_value(&defaults.rule) {
        Ok(Value::Object(keys)) => {
            if let Some(k) = SHARED_KEYS.iter().find(|k| keys.contains_key(**k)) {
                return Err(format!("the rule's own settings have the shared key `{k}`"));
            }
        }
        other => return Err(format!("the defaults are not an object: {other:?}")),
    }
    // Every key spelt out (as a policy that writes out every default
    // carries them) is read in one pass, to what the long way reads.
    let full = defaults.to_json().to_string();
    let once = Settings::<R>::read_once(&full).map_err(|e| format!("the one pass refuses the defaults spelt out: {e}"))?;
    match Settings::<R>::read_split(&full) {
        Ok(Some(long)) if long.to_json() == once.to_json() => Ok(()),
        other => Err(format!(
            "the defaults spelt out read as {} in one pass, as {:?} the long way",
            once.to_json(),
            other.map(|s| s.map(|s| s.to_json()))
        )),
    }
}

/// One rule type's last parsed settings: `(type, text, settings)`.
type Cached = (TypeId, String, Rc<dyn Any>);

thread_local! {
    /// The last settings each rule type parsed.
    static CACHE: RefCell<Vec<Cached>> = const { RefCell::new(Vec::new()) };
}

/// Parses and checks settings, reusing the result when the same rule type
/// was last given the same text on this thread (a warm instance receives
/// its settings with every request).
pub fn cached<R: RuleSettings>(json: &str) -> Result<Rc<Settings<R>>, SettingsError> {
    let id = TypeId::of::<R>();
    let hit = CACHE.with(|c| {
        c.borrow().iter().find(|(t, text, _)| *t == id && text == json).and_then(|(_, _, s)| s.clone().downcast::<Settings<R>>().ok())
    });
    if let Some(s) = hit {
        return Ok(s);
    }
    let parsed = Rc::new(Settings::<R>::parse_valid(json)?);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|(t, _, _)| *t != id);
        c.push((id, json.to_string(), parsed.clone()));
    });
    Ok(parsed)
}

/// Refuses settings `given` where it holds a list and the rule's settings
/// as read from it (`read`, serialized) hold an object: serde's derive
/// reads a list as a struct's fields in order, so `"cpuTraining": []` would
/// be the defaults and `[["nvidia.com/gpu", "NoSchedule"]]` a taint,
/// silently. Walks the two texts side by side, by key and by index, into
/// the containers `read` holds only (keys only `given` holds, the shared
/// ones, are not the rule's).
fn no_list_read_as_object(given: &str, read: &str) -> Result<(), SettingsError> {
    /// The steps down to the list, innermost first, gathered only once one
    /// is found.
    fn walk(given: &str, read: &str) -> Result<(), Vec<crate::decode::path::Seg>> {
        let first = |text: &str| text.trim_start_matches(crate::decode::dec::WHITESPACE).bytes().next();
        let container = |text: &str| matches!(first(text), Some(b'{' | b'['));
        let within = |step: crate::decode::path::Seg| {
            move |mut steps: Vec<crate::decode::path::Seg>| {
                steps.push(step);
                steps
            }
        };
        match (first(given), first(read)) {
            (Some(b'['), Some(b'{')) => Err(Vec::new()),
            (Some(b'{'), Some(b'{')) => {
                let (Some(given), Some(read)) = (json::members(given), json::members(read)) else { return Ok(()) };
                for (key, value) in &given {
                    if let Some((_, r)) = read.iter().find(|(k, _)| k == key)
                        && container(r)
                    {
                        walk(value, r).map_err(within(crate::decode::path::Seg::Key(key.to_string().into())))?;
                    }
                }
                Ok(())
            }
            (Some(b'['), Some(b'[')) => {
                let (Some(given), Some(read)) = (json::elements(given), json::elements(read)) else { return Ok(()) };
                for (i, (value, r)) in given.iter().zip(&read).enumerate() {
                    if container(r) {
                        walk(value, r).map_err(within(crate::decode::path::Seg::Index(i)))?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(given, read).map_err(|mut steps| {
        steps.reverse();
        SettingsError::new(crate::decode::path::Path(steps).to_string(), "invalid type: list, expected an object")
    })
}

/// Turns a serde error in `text` (the value of `key`, or the rule's own
/// settings when `key` is empty) into a message a person can act on,
/// naming the key.
fn describe(text: &str, err: &serde_json::Error, key: &str) -> SettingsError {
    let mut serde_msg = err.to_string();
    if let Some(i) = serde_msg.find(" at line ") {
        serde_msg.truncate(i);
    }
    let inner = json::path_at(text, json::offset_of(text, err.line(), err.column())).to_string();
    let path = match (key.is_empty(), inner.is_empty()) {
        (true, _) => inner,
        (false, true) => key.to_string(),
        (false, false) if inner.starts_with('[') => format!("{key}{inner}"),
        (false, false) => format!("{key}.{inner}"),
    };
    if let Some(rest) = serde_msg.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected =
            expected.trim_start_matches(", expected one of ").trim_start_matches(", expected ").trim_start_matches(", there are no fields");
        let shared = SHARED_KEYS.map(|k| format!("`{k}`")).join(", ");
        let known = match (expected.is_empty(), path.contains('.')) {
            (true, false) => shared,
            (true, true) => "none".to_string(),
            (false, false) => format!("{expected}, {shared}"),
            (false, true) => expected.to_string(),
        };
        let key = if path.is_empty() { field.to_string() } else { path };
        return SettingsError::new(key, format!("unknown setting; known settings are {known}"));
    }
    let msg = friendly(&serde_msg);
    if path.is_empty() { SettingsError::whole(msg) } else { SettingsError::new(path, msg) }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Demo {
        max_gpus: u32,
        names: Vec<String>,
        nested: Nested,
    }
    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Nested {
        limit: u32,
    }
    impl RuleSettings for Demo {
        fn validate(&self) -> Result<(), SettingsError> {
            if self.names.iter().any(String::is_empty) {
                return Err(SettingsError::new("names", "must not hold an empty name"));
            }
            Ok(())
        }
    }

    fn err(json: &str) -> String {
        Settings::<Demo>::parse_checked(json).expect_err("settings must be refused").to_string()
    }

    #[test]
    fn defaults_and_shared_keys() {
        let s = Settings::<Demo>::parse("{}").unwrap();
        assert_eq!(s.shared.mode, Mode::Enforce);
        assert!(s.shared.allow_existing_violations);
        assert_eq!(s.rule, Demo::default());
        let s = Settings::<Demo>::parse(r#"{"mode":"audit","exemptNamespaces":["kube-*"],"maxGpus":3,"allowExistingViolations":false}"#)
            .unwrap();
        assert_eq!(s.shared.mode, Mode::Audit);
        assert_eq!(s.shared.exemptions.namespaces, vec![crate::base::glob::Glob::new("kube-*")]);
        assert_eq!(s.rule.max_gpus, 3);
        assert!(!s.shared.allow_existing_violations);
        assert!(Settings::<Demo>::parse("null").is_ok());
        assert_eq!(Settings::<Demo>::parse(r#"{"mode":null}"#).unwrap().shared.mode, Mode::Enforce, "null keeps the default");
    }

    #[test]
    fn settings_without_a_key_are_the_defaults_unread() {
        assert_eq!(check_defaults::<Demo>(), Ok(()));
        for empty in ["{}", " { } ", "null", "{\n}"] {
            assert_eq!(Settings::<Demo>::parse_valid(empty).unwrap(), Settings::default(), "{empty:?}");
        }
        assert!(Settings::<Demo>::parse_valid("[]").is_err(), "a list is not settings");
        assert!(Settings::<Demo>::parse_valid("{").is_err());
    }

    #[test]
    fn one_pass_reads_as_the_long_way() {
        let same = [
            r#"{"maxGpus":3}"#,
            " {\"names\": [\"a\", \"b\"], \"nested\": {\"limit\": 2}}\n",
            r#"{"maxGpus":3,"mode":"audit"}"#,
            r#"{"mode":"audit","exemptNamespaces":["kube-*"],"exemptUsers":["u"],"exemptGroups":["g"],"allowExistingViolations":false,"maxGpus":2}"#,
            r#"{"mode":null,"allowExistingViolations":null,"exemptUsers":null,"maxGpus":2}"#,
            r#"{"auditNamespaces":["team-*"],"exemptImages":["reg/*"],"podSelector":{"matchLabels":{"ai":"true"}},"maxGpus":2}"#,
            r#"{"objectSelector":{"matchLabels":{"a":"b"}},"objectSelector":null}"#,
            r#"{"objectSelector":{"matchLabel":{"a":"b"}}}"#,
            r#"{"podSelector":{"matchExpressions":[{"key":"a","operator":"Into"}]}}"#,
            r#"{"exemptImages":"reg/*"}"#,
            r#"{"mode":"bogus","maxGpus":2}"#,
            r#"{"mode":"bogus","mode":"audit","maxGpus":2}"#,
            r#"{"mode":"audit","mode":"bogus"}"#,
            r#"{"exemptGroups":["ok",3],"maxGpus":2}"#,
            r#"{"exemptNamespaces":[""],"maxGpus":2}"#,
            r#"{"maxGpus":2,"mode":"audit","mdoe":"audit"}"#,
            r#"{"nested":{"mode":"audit"}}"#,
            r#"{"names":["mode"],"maxGpus":1}"#,
            r#"{"maxGpus":1,"maxGpus":2}"#,
            r#"{"mo\u0064e":"audit","maxGpus":1}"#,
            r#"{"maxGpus":null}"#,
            r#"{"maxGpus":-1}"#,
            r#"{"mxGpus":1}"#,
            r#"{"nested":{"limit":true}}"#,
            r#"{"maxGpus":1} x"#,
            r#"{"maxGpus":1"#,
            "[]",
            "[1]",
            r#""x""#,
            "{ }",
            "null",
            "",
        ];
        for text in same {
            assert_eq!(Settings::<Demo>::read(text), Settings::<Demo>::read_split(text), "{text}");
        }
        // The one pass reads shared keys and the rule's own alike.
        let text = r#"{"mode":"audit","maxGpus":2,"exemptUsers":["u"],"nested":{"limit":1}}"#;
        let once = Settings::<Demo>::read_once(text).unwrap();
        assert_eq!((once.shared.mode, once.rule.max_gpus, once.rule.nested.limit), (Mode::Audit, 2, 1));
        assert_eq!(Some(once), Settings::<Demo>::read_split(text).unwrap());
        // A key given twice: serde's derive refuses it, the long way reads the last.
        assert!(Settings::<Demo>::read_once(r#"{"maxGpus":1,"maxGpus":2}"#).is_err());
        assert_eq!(Settings::<Demo>::parse(r#"{"maxGpus":1,"maxGpus":2}"#).unwrap().rule.max_gpus, 2);
    }

    #[test]
    fn check_defaults_refuses_what_the_shortcut_would_get_wrong() {
        // `{}` read by serde differs from `Default` (a field default of its own).
        #[derive(Default, Serialize, Deserialize)]
        #[serde(default)]
        struct OwnFieldDefault {
            #[serde(default = "three")]
            n: u32,
        }
        fn three() -> u32 {
            3
        }
        impl RuleSettings for OwnFieldDefault {}
        let e = check_defaults::<OwnFieldDefault>().unwrap_err();
        assert!(e.starts_with("`{}` reads as Ok(Object {\"n\": Number(3)})"), "{e}");
        // Defaults the rule's own checks refuse.
        #[derive(Serialize, Deserialize)]
        #[serde(default)]
        struct BadDefaults {
            names: Vec<String>,
        }
        impl Default for BadDefaults {
            fn default() -> Self {
                BadDefaults { names: vec![String::new()] }
            }
        }
        impl RuleSettings for BadDefaults {
            fn validate(&self) -> Result<(), SettingsError> {
                if self.names.iter().any(String::is_empty) {
                    Err(SettingsError::new("names", "must not hold an empty name"))
                } else {
                    Ok(())
                }
            }
        }
        assert_eq!(
            check_defaults::<BadDefaults>().unwrap_err(),
            "the defaults are refused (setting `names`: must not hold an empty name), but `REQUIRES_SETTINGS` is false"
        );
        // A rule that must be configured, saying so, and one saying so wrongly.
        #[derive(Debug, Default, Serialize, Deserialize)]
        #[serde(default)]
        struct MustConfigure {
            names: Vec<String>,
        }
        impl RuleSettings for MustConfigure {
            fn validate(&self) -> Result<(), SettingsError> {
                if self.names.is_empty() { Err(SettingsError::new("names", "must list a name")) } else { Ok(()) }
            }
            const REQUIRES_SETTINGS: bool = true;
        }
        assert_eq!(check_defaults::<MustConfigure>(), Ok(()));
        assert_eq!(Settings::<MustConfigure>::parse_valid("{}").unwrap_err().to_string(), "setting `names`: must list a name");
        assert!(Settings::<MustConfigure>::parse("{}").is_ok(), "parse alone does not check");
        #[derive(Default, Serialize, Deserialize)]
        #[serde(default)]
        struct WronglyRequired {
            n: u32,
        }
        impl RuleSettings for WronglyRequired {
            const REQUIRES_SETTINGS: bool = true;
        }
        assert_eq!(check_defaults::<WronglyRequired>().unwrap_err(), "`REQUIRES_SETTINGS` is true, but the defaults are accepted");
        // A rule's own key named as a shared one.
        #[derive(Default, Serialize, Deserialize)]
        #[serde(default)]
        struct OwnMode {
            mode: u32,
        }
        impl RuleSettings for OwnMode {}
        assert_eq!(check_defaults::<OwnMode>().unwrap_err(), "the rule's own settings have the shared key `mode`");
        // `{}` refused: a field without a default.
        #[derive(Default, Serialize, Deserialize)]
        struct Required {
            n: u32,
        }
        impl RuleSettings for Required {}
        assert_eq!(check_defaults::<Required>().unwrap_err(), "`{}` is refused: missing field `n` at line 1 column 2");
    }

    #[test]
    fn unknown_keys_name_the_key_and_the_alternatives() {
        let e = err(r#"{"mdoe":"audit"}"#);
        assert!(e.starts_with("setting `mdoe`: unknown setting; known settings are `maxGpus`, `names`, `nested`, `mode`"), "{e}");
        let e = err(r#"{"nested":{"limt":1}}"#);
        assert_eq!(e, "setting `nested.limt`: unknown setting; known settings are `limit`");
    }

    #[test]
    fn wrong_types_and_negatives_name_the_key() {
        assert_eq!(err(r#"{"maxGpus":-1}"#), "setting `maxGpus`: invalid value: integer `-1`, expected a whole number, zero or more");
        assert_eq!(err(r#"{"maxGpus":"8"}"#), "setting `maxGpus`: invalid type: string \"8\", expected a whole number, zero or more");
        assert_eq!(err(r#"{"names":[1]}"#), "setting `names[0]`: invalid type: integer `1`, expected a string");
        assert_eq!(
            err(r#"{"nested":{"limit":true}}"#),
            "setting `nested.limit`: invalid type: boolean `true`, expected a whole number, zero or more"
        );
        assert_eq!(
            err(r#"{"objectSelector":{"matchLabel":{"a":"b"}}}"#),
            "setting `objectSelector.matchLabel`: unknown setting; known settings are `matchLabels` or `matchExpressions`"
        );
        assert_eq!(err(r#"{"exemptImages":"reg/*"}"#), "setting `exemptImages`: invalid type: string \"reg/*\", expected a list");
        assert_eq!(err(r#"{"mode":"enforcing"}"#), "setting `mode`: unknown variant `enforcing`, expected `enforce` or `audit`");
        assert_eq!(err(r#"{"exemptUsers":"bob"}"#), "setting `exemptUsers`: invalid type: string \"bob\", expected a list");
        assert_eq!(err(r#"{"exemptGroups":["ok", 3]}"#), "setting `exemptGroups[1]`: invalid type: integer `3`, expected a string");
        assert_eq!(
            err(r#"{"allowExistingViolations":"yes"}"#),
            "setting `allowExistingViolations`: invalid type: string \"yes\", expected a boolean"
        );
    }

    #[test]
    fn a_list_where_an_object_belongs_is_refused() {
        // Serde's derive would read these as the nested struct's fields in
        // order: `[]` as its defaults, `[7]` as `limit: 7`.
        assert_eq!(err(r#"{"nested":[]}"#), "setting `nested`: invalid type: list, expected an object");
        assert_eq!(err(r#"{"names":["a"],"nested":[7]}"#), "setting `nested`: invalid type: list, expected an object");
        // In a list of structs, by index; lists of values are untouched.
        #[derive(Debug, Default, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
        struct Listed {
            limits: Vec<Nested>,
            names: Vec<String>,
        }
        impl RuleSettings for Listed {}
        let listed = |json: &str| Settings::<Listed>::parse_checked(json).map(|s| s.rule.limits.len()).map_err(|e| e.to_string());
        assert_eq!(listed(r#"{"limits":[{"limit":1},[2]]}"#), Err("setting `limits[1]`: invalid type: list, expected an object".into()));
        assert_eq!(listed(r#"{"limits":[{"limit":1},{"limit":2}],"names":["x"],"exemptUsers":["a"]}"#), Ok(2));
        assert_eq!(listed(r#"{"limits":[]}"#), Ok(0));
    }

    #[test]
    fn whole_document_problems() {
        assert_eq!(err("[]"), "settings must be an object, got a list");
        assert_eq!(err("3"), "settings must be an object, got a number");
        assert!(err("{").starts_with("settings are not valid JSON"));
    }

    #[test]
    fn rule_and_shared_validation() {
        assert_eq!(err(r#"{"names":[""]}"#), "setting `names`: must not hold an empty name");
        assert_eq!(err(r#"{"exemptNamespaces":[""]}"#), "setting `exemptNamespaces[0]`: must not be empty");
    }

    #[test]
    fn defaults_serialize_with_shared_keys() {
        let v = Settings::<Demo>::default().to_json();
        assert_eq!(v["mode"], "enforce");
        assert_eq!(v["exemptUsers"], serde_json::json!([]));
        assert_eq!(v["allowExistingViolations"], true);
    }

    #[test]
    fn the_cache_returns_the_same_settings_for_the_same_text() {
        let a = cached::<Demo>(r#"{"maxGpus":2}"#).unwrap();
        let b = cached::<Demo>(r#"{"maxGpus":2}"#).unwrap();
        assert!(Rc::ptr_eq(&a, &b));
        let c = cached::<Demo>(r#"{"maxGpus":3}"#).unwrap();
        assert_eq!(c.rule.max_gpus, 3);
        assert!(cached::<Demo>(r#"{"maxGpus":-3}"#).is_err());
    }
}
