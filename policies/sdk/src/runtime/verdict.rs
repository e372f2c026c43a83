//! Verdicts: what a rule found, and the Kubewarden responses built from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::decode::json::{Edit, quote};
use crate::decode::path::Path;

/// What a rule found in one request: violations (each a complete message for
/// the person who submitted the workload), warnings, audit annotations, and
/// for mutating rules the edits to make to the object.
///
/// Violations are reported in the order the rule adds them, which is document
/// order when the rule walks the object in order: never hash order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    violations: Vec<String>,
    /// What each violation is, for telling whether an UPDATE's old object
    /// had it too: the message itself unless the rule said otherwise.
    keys: Vec<String>,
    warnings: Vec<String>,
    audit_annotations: BTreeMap<String, String>,
    edits: Vec<Edit>,
}

/// One line: a violation or warning never spans lines, so a response's
/// message holds exactly one violation per line.
fn one_line(message: String) -> String {
    // Bytes, sixteen at a time (memchr, with wasm's simd128): a `char`
    // pattern decodes every character, and a byte loop still costs about
    // five instructions a byte of every message, to find none.
    if memchr::memchr2(b'\n', b'\r', message.as_bytes()).is_some() {
        message.replace("\r\n", " ").replace(['\n', '\r'], " ")
    } else {
        message
    }
}

impl Verdict {
    /// A verdict with nothing to report: the request is admitted.
    pub fn accept() -> Verdict {
        Verdict::default()
    }

    /// Records a violation. Write it for the person who submitted the
    /// workload: lowercase start, no trailing period, field paths and allowed
    /// values in backticks. Line breaks are replaced by spaces.
    pub fn violation(&mut self, message: impl Into<String>) {
        let m = one_line(message.into());
        self.keys.push(m.clone());
        self.violations.push(m);
    }

    /// Records a violation whose identity is `key` rather than its message:
    /// for messages that carry advice depending on the rest of the object
    /// (a hint to copy a label the object has), so the same problem in an
    /// UPDATE's old object is recognised as already there.
    pub fn violation_keyed(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.keys.push(key.into());
        self.violations.push(one_line(message.into()));
    }

    /// The identities of the violations, in order (see
    /// [`Verdict::violation_keyed`]).
    pub fn violation_keys(&self) -> &[String] {
        &self.keys
    }

    /// Records a warning, returned to the client whatever the outcome.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(one_line(message.into()));
    }

    /// Records an audit annotation (a key/value in the API server's audit log).
    pub fn annotate(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.audit_annotations.insert(key.into(), value.into());
    }

    /// Records an edit of the object (mutating rules only). Edits apply in
    /// the order they are recorded; the SDK applies them only when the
    /// request is admitted.
    pub fn edit(&mut self, edit: Edit) {
        self.edits.push(edit);
    }

    /// Sets a string at `path` (creating missing objects on the way).
    pub fn set_string(&mut self, path: Path, value: &str) {
        self.edit(Edit::Set { path, value: quote(value) });
    }

    /// The violations, in order.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// The warnings, in order.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The edits, in order.
    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// Whether the rule found nothing to reject.
    pub fn is_accepted(&self) -> bool {
        self.violations.is_empty()
    }

    pub(crate) fn into_parts(self) -> Parts {
        Parts {
            violations: self.keys.into_iter().zip(self.violations).collect(),
            warnings: self.warnings,
            audit_annotations: self.audit_annotations,
            edits: self.edits,
        }
    }
}

/// A verdict taken apart by the SDK's evaluation.
pub(crate) struct Parts {
    /// `(identity, message)` of each violation.
    pub violations: Vec<(String, String)>,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
    pub edits: Vec<Edit>,
}

/// Kubewarden's `ValidationResponse`, as a policy returns it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ValidationResponse {
    /// Whether the request is admitted.
    pub accepted: bool,
    /// Why not: one violation per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP status of a rejection: 400 for malformed input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The whole mutated object, for mutating rules (JSON, as the rule
    /// produced it: untouched parts byte for byte as the request had them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutated_object: Option<Box<RawValue>>,
    /// Warnings for the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Audit annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
}

impl PartialEq for ValidationResponse {
    fn eq(&self, other: &Self) -> bool {
        self.accepted == other.accepted
            && self.message == other.message
            && self.code == other.code
            && self.mutated_object.as_ref().map(|o| o.get()) == other.mutated_object.as_ref().map(|o| o.get())
            && self.warnings == other.warnings
            && self.audit_annotations == other.audit_annotations
    }
}

impl Eq for ValidationResponse {}

impl ValidationResponse {
    /// An admission.
    pub fn accept() -> ValidationResponse {
        ValidationResponse { accepted: true, ..ValidationResponse::default() }
    }

    /// A rejection with a message and optional code.
    pub fn reject(message: impl Into<String>, code: Option<u16>) -> ValidationResponse {
        ValidationResponse { accepted: false, message: Some(message.into()), code, ..ValidationResponse::default() }
    }

    /// The violations of a rejection: the message's lines.
    pub fn violations(&self) -> Vec<&str> {
        self.message.as_deref().map(|m| m.lines().collect()).unwrap_or_default()
    }
}

/// A patched object the SDK wrote, as the response's `mutated_object`,
/// without reading it again: `RawValue::from_string` checks that its text
/// is JSON, a second full read of the object (about 200,000 instructions on
/// a 15 KiB RayCluster) of text valid by construction: the request's
/// object, which the decoder read whole, with JSON values the SDK wrote
/// ([`crate::decode::json::quote`], the mutate helpers) spliced in where a
/// value or member goes ([`crate::decode::json::Doc`]).
///
/// serde_json builds a boxed raw value without checking it when its
/// `Deserialize` is handed the text as a string (its own deserializer does
/// so once it has checked it); [`Written`] hands it over. Should a future
/// serde_json ask for anything else, the text is checked as before.
pub(crate) fn written(text: String) -> Option<Box<RawValue>> {
    let mut slot = Some(text);
    match <Box<RawValue> as Deserialize>::deserialize(Written(&mut slot)) {
        Ok(raw) => Some(raw),
        Err(_) => slot.and_then(|text| RawValue::from_string(text).ok()),
    }
}

/// Hands a text to a raw value's `Deserialize` as the one member of the
/// struct it asks for, the text taken from the slot only when it is asked
/// for as a string.
struct Written<'s>(&'s mut Option<String>);

impl<'de> serde::Deserializer<'de> for Written<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0.take() {
            Some(text) => visitor.visit_string(text),
            None => Err(serde::de::Error::custom("the text was taken")),
        }
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(WrittenMember { name: Some(name), text: self.0 })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The one member [`Written`] gives: the struct's name as key, the text as value.
struct WrittenMember<'s> {
    name: Option<&'static str>,
    text: &'s mut Option<String>,
}

impl<'de> serde::de::MapAccess<'de> for WrittenMember<'_> {
    type Error = serde::de::value::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        match self.name.take() {
            Some(name) => seed.deserialize(serde::de::value::StrDeserializer::<Self::Error>::new(name)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        seed.deserialize(Written(self.text))
    }
}

/// Kubewarden's settings validation response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsResponse {
    /// Whether the settings are usable.
    pub valid: bool,
    /// What is wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl crate::cluster::Report for Verdict {
    fn violation(&mut self, message: String) {
        Verdict::violation(self, message);
    }
    fn warning(&mut self, message: String) {
        self.warn(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_object_is_not_read_again() {
        let text = r#"{"metadata":{"labels":{"owner":"jane"}},"spec":{"n":1.0e3}}"#;
        assert_eq!(written(text.to_string()).unwrap().get(), text);
        // Taken as it is, unchecked: what `RawValue::from_string` refuses.
        assert!(RawValue::from_string("{\"a\":".into()).is_err());
        assert_eq!(written("{\"a\":".to_string()).unwrap().get(), "{\"a\":");
        let r = ValidationResponse { mutated_object: written(text.to_string()), ..ValidationResponse::accept() };
        let out = serde_json::to_string(&r).unwrap();
        assert_eq!(out, format!(r#"{{"accepted":true,"mutated_object":{text}}}"#));
    }
}
