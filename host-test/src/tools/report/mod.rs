//! Reports in the formats other tools read: Kubernetes PolicyReports, JUnit
//! XML for CI systems, SARIF for code scanning. Each renders a finished
//! [`Report`](crate::tools::scan::Report) of `aigov scan`.

pub mod junit;
pub mod policyreport;
pub mod position;
pub mod sarif;
pub mod spill;

use crate::tools::scan::{DocumentReport, RuleResult};

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
