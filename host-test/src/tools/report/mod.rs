//! The reports of `aigov scan`: the [`model`] every writer reads (and
//! that the scan fills), and the writers, each writing the items of a scan
//! as they arrive or rendering a finished [`Report`](model::Report): the
//! verdict table and JSON, and the formats other tools read (Kubernetes
//! PolicyReports, JUnit XML for CI systems, SARIF for code scanning).
//! Writers import the model, never the scan.

pub mod json;
pub mod junit;
pub mod model;
pub mod policyreport;
pub mod position;
pub mod sarif;
pub mod spill;
pub mod table;

use model::{DocumentReport, RuleResult};

/// The message a result carries: the rejection's message, the warnings, or
/// why the rule could not be evaluated.
pub fn message(result: &RuleResult) -> String {
    if let Some(e) = &result.error {
        return e.clone();
    }
    match &result.response {
        Some(r) if !r.accepted => r.message.clone().unwrap_or_default(),
        Some(r) => r.warnings.join("\n"),
        None => String::new(),
    }
}

/// `apiVersion` of a document's object.
pub fn api_version(doc: &DocumentReport) -> String {
    match doc.target.group.as_str() {
        "" => doc.target.version.clone(),
        g => format!("{g}/{}", doc.target.version),
    }
}
