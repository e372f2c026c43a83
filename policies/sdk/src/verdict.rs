//! Verdicts: what a rule found, and the Kubewarden responses built from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a rule found in one request: violations (each a complete message for
/// the person who submitted the workload), warnings, audit annotations.
///
/// Violations are reported in the order the rule adds them, which is document
/// order when the rule walks the object in order: never hash order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    violations: Vec<String>,
    warnings: Vec<String>,
    audit_annotations: BTreeMap<String, String>,
}

impl Verdict {
    /// A verdict with nothing to report: the request is admitted.
    pub fn accept() -> Verdict {
        Verdict::default()
    }

    /// Records a violation. Write it for the person who submitted the
    /// workload: lowercase start, no trailing period, field paths and allowed
    /// values in backticks.
    pub fn violation(&mut self, message: impl Into<String>) {
        self.violations.push(message.into());
    }

    /// Records a warning, returned to the client whatever the outcome.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    /// Records an audit annotation (a key/value in the API server's audit log).
    pub fn annotate(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.audit_annotations.insert(key.into(), value.into());
    }

    /// The violations, in order.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Whether the rule found nothing to reject.
    pub fn is_accepted(&self) -> bool {
        self.violations.is_empty()
    }

    pub(crate) fn into_parts(self) -> (Vec<String>, Vec<String>, BTreeMap<String, String>) {
        (self.violations, self.warnings, self.audit_annotations)
    }
}

/// Kubewarden's `ValidationResponse`, as a policy returns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationResponse {
    /// Whether the request is admitted.
    pub accepted: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP status of a rejection: 400 for malformed input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The whole mutated object, for mutating rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutated_object: Option<serde_json::Value>,
    /// Warnings for the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Audit annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
}

impl ValidationResponse {
    /// An admission.
    pub fn accept() -> ValidationResponse {
        ValidationResponse {
            accepted: true,
            ..ValidationResponse::default()
        }
    }

    /// A rejection with a message and optional code.
    pub fn reject(message: impl Into<String>, code: Option<u16>) -> ValidationResponse {
        ValidationResponse {
            accepted: false,
            message: Some(message.into()),
            code,
            ..ValidationResponse::default()
        }
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
