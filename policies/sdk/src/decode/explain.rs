//! Malformed input explained as a person needs it: what was malformed,
//! the field (found by walking the text to where decoding stopped, so the
//! happy path tracks no path), and the problem in Kubernetes' words.

use serde::Deserialize;

use crate::base::error::Malformed;
use crate::decode::dec::{Dec, DecError, Decode};
use crate::decode::json;
use crate::decode::path::Path;

/// Rewords a serde message for people: Kubernetes' names for JSON types,
/// never a Rust type name.
pub fn friendly(msg: &str) -> String {
    let mut m = msg.to_string();
    for t in ["u8", "u16", "u32", "u64", "usize"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number, zero or more");
    }
    for t in ["i8", "i16", "i32", "i64", "isize"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number");
    }
    for t in ["f32", "f64"] {
        m = m.replace(&format!("expected {t}"), "expected a number");
    }
    // Any `struct Name` or `enum Name` left (types without an `expecting`).
    for word in ["struct ", "enum "] {
        while let Some(i) = m.find(&format!("expected {word}")) {
            let start = i + "expected ".len();
            let end = m
                .get(start + word.len()..)
                .and_then(|rest| rest.find(|c: char| !c.is_alphanumeric() && c != '_'))
                .map_or(m.len(), |n| start + word.len() + n);
            m.replace_range(start..end, "an object");
        }
    }
    m.replace("expected a sequence", "expected a list")
        .replace("invalid type: sequence", "invalid type: list")
        .replace("invalid type: map", "invalid type: object")
        .replace("expected a map", "expected an object")
        .replace("unit value", "null")
        .replace("expected a borrowed string", "expected a string")
}

/// Explains a decoding error in `text` as a person needs it: what was
/// malformed (`what`), the field (from the error's position), and the
/// problem in Kubernetes' words. Syntax errors keep their line and column.
pub fn explain(text: &str, err: &DecError, what: &str) -> Malformed {
    let (path, msg) = locate(text, err);
    Malformed(if path.is_root() { format!("{what} is malformed: {msg}") } else { format!("{what} is malformed: `{path}`: {msg}") })
}

/// The field and the message of a decoding error.
pub(crate) fn locate(text: &str, err: &DecError) -> (Path, String) {
    let path = json::path_at(text, err.at);
    let msg = if err.syntax {
        let before = text.get(..err.at.min(text.len())).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{} at line {line} column {column}", err.message)
    } else {
        err.message.clone()
    };
    (path, msg)
}

/// Explains a serde error in `text` (rule-specific models decoded with
/// serde, such as a `CONNECT` request's options).
pub fn explain_serde(text: &str, err: &serde_json::Error, what: &str) -> Malformed {
    let mut msg = err.to_string();
    let positional = err.is_syntax() || err.is_eof();
    if !positional && let Some(i) = msg.find(" at line ") {
        msg.truncate(i);
    }
    let path = if err.is_eof() { Path::root() } else { json::path_at(text, json::offset_of(text, err.line(), err.column())) };
    let msg = friendly(&msg);
    Malformed(if path.is_root() { format!("{what} is malformed: {msg}") } else { format!("{what} is malformed: `{path}`: {msg}") })
}

/// Decodes borrowed JSON into a serde type `T`, explaining errors against
/// `what` (`the Namespace`): for rule-specific models.
pub fn decode<'a, T: Deserialize<'a>>(json: &'a str, what: &str) -> Result<T, Malformed> {
    serde_json::from_str(json).map_err(|e| explain_serde(json, &e, what))
}

/// Decodes a whole document with the SDK's decoder (the model types),
/// explaining errors against `what`.
pub fn decode_model<'a, T: Decode<'a>>(json: &'a str, what: &str) -> Result<T, Malformed> {
    Dec::document(json).map_err(|e| explain(json, &e, what))
}
