//! The bundle: every rule linked into one policy that evaluates the enabled
//! ones on a single parse of the request, so a whole catalogue costs one
//! webhook call.
//!
//! Settings name the rules to run, each with its own settings; a rule
//! absent from `rules` is off:
//!
//! ```yaml
//! rules:
//!   gpu-runtime-class: {}
//!   opencost-labels: {mode: audit}
//! ```
//!
//! Mutating rules run first, in name order, each on the object as the one
//! before left it (as Kubernetes runs mutating webhooks before validating
//! ones); then the validating rules, in name order, on the final object.
//! Lookups are asked once per request ([`Memoized`]), whichever rules ask.
//! The response merges every rule's: each violation line and warning
//! prefixed with the rule's name (`gpu-runtime-class: ...`), each audit
//! annotation key with the rule's name and a dot; the mutated object is
//! returned only when every rule admits the request.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::base::error::Malformed;
use crate::base::rule_settings::SettingsError;
use crate::cluster::{Cluster, Memoized};
use crate::decode::dec::{Dec, Str};
use crate::decode::json;
use crate::decode::path::Path;
use crate::model::kind::WorkloadKind;
use crate::model::request::{Request, all_kinds};
use crate::runtime::entry::{self, Outcome};
use crate::runtime::metadata::PolicyMetadata;
use crate::runtime::policy::Exported;
use crate::runtime::verdict::{SettingsResponse, ValidationResponse, written};

/// One rule of the bundle, type-erased.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The rule's metadata.
    pub metadata: &'static PolicyMetadata,
    run: fn(&Request<'_>, &str, &dyn Cluster) -> Result<Outcome, SettingsError>,
    check: fn(&[u8]) -> SettingsResponse,
}

impl Entry {
    /// The entry of rule `P`.
    pub const fn of<P: Exported>() -> Entry {
        Entry { metadata: P::METADATA, run: entry::run::<P>, check: entry::validate_settings::<P> }
    }

    /// The rule's name.
    pub fn name(&self) -> &'static str {
        self.metadata.name
    }
}

/// The bundle's settings: `rules` maps rule names to their settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object")]
struct BundleSettings<'a> {
    #[serde(borrow, default)]
    rules: Option<BTreeMap<Str<'a>, &'a RawValue>>,
}

/// The enabled rules, each with where its settings are in the bundle's
/// settings text (`None`: `null`, read as `{}`), or why the settings are
/// refused.
type Spans = Result<Vec<(Entry, Option<Range<usize>>)>, String>;

/// The last bundle settings read on a thread.
struct LastRead {
    /// The rule list's address and length.
    rules: (usize, usize),
    text: String,
    spans: Spans,
}

thread_local! {
    /// A warm instance receives the same settings with every request;
    /// reading them again cost about 38,000 instructions per call.
    static ENABLED: RefCell<Option<LastRead>> = const { RefCell::new(None) };
}

/// The enabled rules in evaluation order (mutating first, each group in
/// name order), with their settings text.
fn enabled<'s>(rules: &[Entry], settings: &'s str) -> Result<Vec<(Entry, &'s str)>, String> {
    let key = (rules.as_ptr() as usize, rules.len());
    ENABLED.with(|c| {
        let mut last = c.borrow_mut();
        if !last.as_ref().is_some_and(|l| l.rules == key && l.text == settings) {
            *last = None;
        }
        let read = last.get_or_insert_with(|| LastRead { rules: key, text: settings.to_string(), spans: enabled_spans(rules, settings) });
        match &read.spans {
            Ok(spans) => Ok(spans.iter().map(|(e, span)| (*e, span.clone().and_then(|r| settings.get(r)).unwrap_or("{}"))).collect()),
            Err(m) => Err(m.clone()),
        }
    })
}

/// [`enabled`], read afresh.
fn enabled_spans(rules: &[Entry], settings: &str) -> Spans {
    if let Some(spans) = enabled_quickly(rules, settings) {
        return Ok(spans);
    }
    enabled_spans_by_serde(rules, settings)
}

/// [`enabled_spans`] of the settings every deployment writes (`rules`
/// mapping each rule once to its settings), read with the SDK's decoder: a
/// fresh instance reads them on every request, and serde's derive cost
/// about 500 fuel a rule. `None` for anything else (a list, another key, a
/// rule named twice or unknown, malformed JSON): read by serde, whose
/// messages say what is wrong.
fn enabled_quickly(rules: &[Entry], settings: &str) -> Option<Vec<(Entry, Option<Range<usize>>)>> {
    let mut out: Vec<(Entry, Option<Range<usize>>)> = Vec::new();
    let mut d = Dec::new(settings);
    let mut read_rules = false;
    d.object(|d, key| {
        if &*key != "rules" || read_rules {
            return Err(d.invalid_type("the bundle's settings"));
        }
        read_rules = true;
        d.object(|d, name| {
            let Some(entry) = rules.iter().find(|r| r.name() == &*name).filter(|e| !out.iter().any(|(o, _)| o.name() == e.name())) else {
                return Err(d.invalid_type("a rule named once"));
            };
            let raw = d.raw()?;
            let start = (raw.as_ptr() as usize).wrapping_sub(settings.as_ptr() as usize);
            out.push((*entry, (raw != "null").then_some(start..start + raw.len())));
            Ok(())
        })
    })
    .and_then(|()| d.end())
    .ok()?;
    out.sort_by_key(|(e, _)| (!e.metadata.mutating, e.name()));
    Some(out)
}

/// [`enabled_spans`] by serde: every refusal worded.
fn enabled_spans_by_serde(rules: &[Entry], settings: &str) -> Spans {
    // serde's derive reads a list as the struct's fields in order, so `[]`
    // turned the bundle silently off; a rule alone refuses a list.
    if settings.trim_start_matches(crate::decode::dec::WHITESPACE).starts_with('[')
        && serde_json::from_str::<serde::de::IgnoredAny>(settings).is_ok()
    {
        return Err("bundle settings: invalid type: list, expected an object".into());
    }
    let parsed: BundleSettings<'_> = match serde_json::from_str::<Option<BundleSettings<'_>>>(settings) {
        Ok(s) => s.unwrap_or(BundleSettings { rules: None }),
        Err(e) => {
            let mut m = crate::decode::explain::friendly(&e.to_string());
            if !(e.is_syntax() || e.is_eof())
                && let Some(i) = m.find(" at line ")
            {
                m.truncate(i);
            }
            return Err(if m.starts_with("unknown field") {
                format!("setting {}; the bundle's only setting is `rules`", m.trim_start_matches("unknown field "))
            } else {
                format!("bundle settings: {m}")
            });
        }
    };
    let mut out = Vec::new();
    for (name, raw) in parsed.rules.unwrap_or_default() {
        let Some(entry) = rules.iter().find(|r| r.name() == &*name) else {
            let known: Vec<String> = rules.iter().map(|r| format!("`{}`", r.name())).collect();
            return Err(format!("setting `rules.{}`: no such rule; the bundle has {}", &*name, known.join(", ")));
        };
        // Where the rule's settings are in the text (they are borrowed from it).
        let start = (raw.get().as_ptr() as usize).wrapping_sub(settings.as_ptr() as usize);
        let span = (raw.get() != "null").then_some(start..start + raw.get().len());
        out.push((*entry, span));
    }
    out.sort_by_key(|(e, _)| (!e.metadata.mutating, e.name()));
    Ok(out)
}

/// The prefix of a rule's settings messages in the bundle.
pub fn settings_prefix(name: &str) -> String {
    format!("rules.{name}: ")
}

/// Checks the bundle's settings: the `rules` map and each rule's settings.
pub fn validate_settings(rules: &[Entry], settings: &[u8]) -> SettingsResponse {
    let text = match entry::settings_text(settings) {
        Ok(text) => text,
        Err(refused) => return refused,
    };
    let enabled = match enabled(rules, text) {
        Ok(e) => e,
        Err(m) => return SettingsResponse { valid: false, message: Some(m) },
    };
    for (entry, s) in enabled {
        let r = (entry.check)(s.as_bytes());
        if !r.valid {
            let m = r.message.unwrap_or_default();
            return SettingsResponse { valid: false, message: Some(format!("{}{m}", settings_prefix(entry.name()))) };
        }
    }
    SettingsResponse { valid: true, message: None }
}

/// Validates a Kubewarden payload with the bundle.
pub fn validate_payload(rules: &[Entry], payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
    let text = match entry::payload_text(payload) {
        Ok(text) => text,
        Err(refused) => return refused,
    };
    // One pass, every workload kind decoded. Should the object be
    // malformed, decode again wanting only the kinds the enabled rules
    // govern (the settings follow the request, so they are not known
    // during the first pass): a rule never rejects a kind it does not
    // govern, in the bundle as alone.
    match entry::decode_payload(text, &all_kinds) {
        Ok((request, settings)) => evaluate(rules, &request, settings, cluster),
        Err(first) => {
            let settings = json::find(text, &Path::root().key("settings")).unwrap_or("{}");
            let Ok(enabled) = enabled(rules, settings) else {
                return ValidationResponse::reject(first.0, Some(400));
            };
            let wants = |k: WorkloadKind| enabled.iter().any(|(e, _)| e.metadata.lists(k.group(), k.resource()));
            match entry::decode_payload(text, &wants) {
                Ok((request, settings)) => evaluate(rules, &request, settings, cluster),
                Err(e) => ValidationResponse::reject(e.0, Some(400)),
            }
        }
    }
}

/// Validates an AdmissionRequest JSON document with the bundle.
pub fn validate_request(rules: &[Entry], request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    let enabled = match enabled(rules, settings) {
        Ok(e) => e,
        Err(m) => return ValidationResponse::reject(format!("invalid settings: {m}"), Some(400)),
    };
    let wants = |k: WorkloadKind| enabled.iter().any(|(e, _)| e.metadata.lists(k.group(), k.resource()));
    match Request::parse_for(request, &wants) {
        Ok(r) => evaluate_enabled(&enabled, &r, cluster),
        Err(e) => ValidationResponse::reject(e.0, Some(400)),
    }
}

/// Runs every enabled rule on one parsed request and merges the answers.
pub fn evaluate(rules: &[Entry], request: &Request<'_>, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    match enabled(rules, settings) {
        Ok(enabled) => evaluate_enabled(&enabled, request, cluster),
        Err(m) => ValidationResponse::reject(format!("invalid settings: {m}"), Some(400)),
    }
}

/// [`evaluate`] with the enabled rules already read.
fn evaluate_enabled(enabled: &[(Entry, &str)], request: &Request<'_>, cluster: &dyn Cluster) -> ValidationResponse {
    let mut answers: Vec<(&'static str, ValidationResponse)> = Vec::new();
    // Rules of one request ask the same questions (the request's
    // Namespace): the host answers each once.
    let cluster = Memoized::new(cluster);
    match run(enabled, request, &cluster, &mut answers) {
        Ok(mutated) => merge(answers, mutated),
        Err(refused) => refused,
    }
}

/// Runs `enabled` on `request`, each answer into `answers`: the mutating
/// rules (first in the order) on the object as sent, their edits applied in
/// turn to one copy of it, then the validating rules on the result, decoded
/// once (not at all when no validating rule is on). Kubernetes runs mutating webhooks one after another, each on the
/// object the one before left; the mutating rules edit disjoint fields
/// (node affinity of CPU templates, runtime class and tolerations of GPU
/// templates, owner labels), and none reads what another writes, so each
/// decides the same on the object as sent, and its edits, applied in the
/// same order, give the same object, without a decoding and a walk of the
/// whole object per rule. Returns the mutated object, or the settings
/// error that stops the bundle.
fn run(
    enabled: &[(Entry, &str)],
    request: &Request<'_>,
    cluster: &dyn Cluster,
    answers: &mut Vec<(&'static str, ValidationResponse)>,
) -> Result<Option<String>, ValidationResponse> {
    let settings_error = |entry: &Entry, e: SettingsError| {
        ValidationResponse::reject(format!("invalid settings: {}{e}", settings_prefix(entry.name())), Some(400))
    };
    let split = enabled.iter().position(|(e, _)| !e.metadata.mutating).unwrap_or(enabled.len());
    let (mutating, validating) = enabled.split_at(split);
    let mut doc: Option<json::Doc> = None;
    for (entry, s) in mutating {
        let mut outcome = (entry.run)(request, s, cluster).map_err(|e| settings_error(entry, e))?;
        let edits = std::mem::take(&mut outcome.edits);
        if !edits.is_empty()
            && let Some(text) = request.object_text()
        {
            let d = doc.get_or_insert_with(|| json::Doc::new(text));
            if let Err(e) = d.apply_all(&edits) {
                outcome.malformed = Some(format!("the change cannot be applied: {e}"));
            }
        }
        answers.push((entry.name(), outcome.into_response(entry.name())));
    }
    let mutated = doc.map(json::Doc::into_text).filter(|t| Some(t.as_str()) != request.object_text());
    // The patched object is decoded again only for validating rules to
    // judge: with none on, nothing reads it.
    let Some(text) = mutated.as_ref().filter(|_| !validating.is_empty()) else {
        for (entry, s) in validating {
            let outcome = (entry.run)(request, s, cluster).map_err(|e| settings_error(entry, e))?;
            answers.push((entry.name(), outcome.into_response(entry.name())));
        }
        return Ok(mutated);
    };
    match request.with_object(text) {
        Ok(r) => {
            for (entry, s) in validating {
                let outcome = (entry.run)(&r, s, cluster).map_err(|e| settings_error(entry, e))?;
                answers.push((entry.name(), outcome.into_response(entry.name())));
            }
        }
        Err(Malformed(m)) => {
            for (entry, _) in validating {
                let outcome = Outcome { malformed: Some(m.clone()), ..Outcome::default() };
                answers.push((entry.name(), outcome.into_response(entry.name())));
            }
        }
    }
    Ok(mutated)
}

/// A rule's response as the bundle reports it: violation lines and
/// warnings prefixed with `name: ` (warnings that already start with the
/// name keep theirs), audit annotation keys with `name.`.
pub fn prefixed(name: &str, r: ValidationResponse) -> ValidationResponse {
    ValidationResponse {
        accepted: r.accepted,
        message: r.message.map(|m| {
            let mut out = String::with_capacity(m.len() + 4 * (name.len() + 2));
            for (i, line) in m.lines().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.extend([name, ": ", line]);
            }
            out
        }),
        code: r.code,
        mutated_object: r.mutated_object,
        warnings: r
            .warnings
            .into_iter()
            .map(|w| if w.strip_prefix(name).is_some_and(|rest| rest.starts_with(' ')) { w } else { [name, ": ", &w].concat() })
            .collect(),
        audit_annotations: r.audit_annotations.into_iter().map(|(k, v)| ([name, ".", &k].concat(), v)).collect(),
    }
}

fn merge(answers: Vec<(&'static str, ValidationResponse)>, mutated: Option<String>) -> ValidationResponse {
    let mut out = ValidationResponse::accept();
    let mut lines = Vec::new();
    for (name, r) in answers {
        let r = prefixed(name, r);
        if !r.accepted {
            out.accepted = false;
            if r.code.is_some() {
                out.code = r.code;
            }
        }
        lines.extend(r.message);
        out.warnings.extend(r.warnings);
        out.audit_annotations.extend(r.audit_annotations);
    }
    if !lines.is_empty() {
        out.message = Some(lines.join("\n"));
    }
    if out.accepted {
        out.mutated_object = mutated.and_then(written);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_reading_agrees_with_serde() {
        static META: PolicyMetadata = PolicyMetadata {
            name: "b-rule",
            version: "0.1.0",
            rules: &[],
            mutating: false,
            background_audit: true,
            context_aware_resources: &[],
            annotations: &[],
        };
        static MUTATING: PolicyMetadata = PolicyMetadata { name: "a-rule", mutating: true, ..META };
        fn run(_: &Request<'_>, _: &str, _: &dyn Cluster) -> Result<Outcome, SettingsError> {
            Ok(Outcome::default())
        }
        fn check(_: &[u8]) -> SettingsResponse {
            SettingsResponse { valid: true, message: None }
        }
        let rules = [Entry { metadata: &META, run, check }, Entry { metadata: &MUTATING, run, check }];
        let spans = |r: Spans| r.map(|v| v.into_iter().map(|(e, span)| (e.name(), span)).collect::<Vec<_>>());
        for text in [
            "{}",
            "null",
            r#"{"rules":null}"#,
            r#"{"rules":{}}"#,
            r#" { "rules" : { "b-rule" : { "mode" : "audit" } , "a-rule" : null } } "#,
            r#"{"rules":{"b-rule":{},"a-rule":{"x":[1,{"y":"\"}"}]}}}"#,
        ] {
            assert!(enabled_quickly(&rules, text).is_some(), "{text}");
            assert_eq!(spans(enabled_spans(&rules, text)), spans(enabled_spans_by_serde(&rules, text)), "{text}");
        }
        // What only serde words: read by serde.
        for text in
            ["[]", r#"{"rule":{}}"#, r#"{"rules":{"c-rule":{}}}"#, r#"{"rules":{"b-rule":{},"b-rule":{}}}"#, r#"{"rules":{"b-rule":{}"#]
        {
            assert!(enabled_quickly(&rules, text).is_none(), "{text}");
        }
    }

    #[test]
    fn a_list_is_not_the_bundles_settings() {
        for list in ["[]", " [{}]", r#"[{"gpu-quota":{}}]"#] {
            assert_eq!(enabled_spans(&[], list).err().unwrap(), "bundle settings: invalid type: list, expected an object", "{list}");
        }
        assert!(enabled_spans(&[], "[").err().unwrap().starts_with("bundle settings: EOF while parsing a list"));
        for none in ["{}", "null", r#"{"rules":null}"#, r#"{"rules":{}}"#] {
            assert!(enabled_spans(&[], none).unwrap().is_empty(), "{none}");
        }
        assert_eq!(enabled_spans(&[], r#"{"rules":{"x":{}}}"#).err().unwrap(), "setting `rules.x`: no such rule; the bundle has ");
    }
}
