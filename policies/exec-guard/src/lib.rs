//! `exec-guard`: Only allowed users may exec into or attach to pods that hold GPUs.
//!
//! Skeleton: admits everything until the rule is written.

use aigov_sdk::{Cluster, Malformed, Policy, Request, RuleSettings, Verdict};
use serde::{Deserialize, Serialize};

/// The rule.
pub struct ExecGuard;

/// The rule's own settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {}

impl RuleSettings for Settings {}

impl Policy for ExecGuard {
    type Settings = Settings;

    fn validate(_: &Request<'_>, _: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        Ok(Verdict::accept())
    }
}

aigov_sdk::export_policy!(ExecGuard);
