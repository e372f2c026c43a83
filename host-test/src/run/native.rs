//! The rules linked natively: the third evaluation next to the module and
//! the component.

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// The natively linked rule named `name`.
pub fn rule(name: &str) -> Option<&'static aigov_sdk::NativePolicy> {
    RULES.iter().find(|r| r.metadata.name == name)
}

/// The names of every rule.
pub fn names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.metadata.name)
}

/// The bundle of every rule, linked natively.
pub static BUNDLE: aigov_sdk::NativePolicy = aigov_bundle::AIGOV_POLICY;
