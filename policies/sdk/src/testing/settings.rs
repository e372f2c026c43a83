//! What a rule's settings tests ask: is this refused, and with what words;
//! is this accepted, and as what.

use crate::base::rule_settings::RuleSettings;
use crate::runtime::settings::Settings;

/// The message rule settings `json` are refused with, as
/// `validate_settings` words it; panics if they are accepted.
pub fn refused<R: RuleSettings>(json: &str) -> String {
    match Settings::<R>::parse_valid(json) {
        Ok(_) => panic!("settings must be refused: {json}"),
        Err(e) => e.to_string(),
    }
}

/// The rule's own settings `json` gives (the shared keys read and set
/// aside), checked as `validate_settings` checks them; panics if refused.
pub fn accepted<R: RuleSettings>(json: &str) -> R {
    match Settings::<R>::parse_valid(json) {
        Ok(s) => s.rule,
        Err(e) => panic!("settings must be accepted: {json}: {e}"),
    }
}
