//! Input a rule cannot evaluate: the error every decoding step reports.

use std::fmt;

/// Input the rule cannot evaluate: malformed JSON, a field of the wrong type,
/// an invalid quantity. Rejected with code 400 and this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

impl Malformed {
    /// A malformed-input error with this message.
    pub fn new(message: impl Into<String>) -> Malformed {
        Malformed(message.into())
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Malformed {}
