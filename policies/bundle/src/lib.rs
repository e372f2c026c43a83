//! `aigov-bundle`: every aigov rule in one policy. The rules enabled in its
//! settings run on a single parse of the request, and their answers merge
//! into one response (see `aigov_sdk::bundle`), so a cluster that runs the
//! whole catalogue pays one webhook call per request, not one per rule.
//!
//! ```yaml
//! rules:
//!   gpu-runtime-class: {}
//!   opencost-labels: {mode: audit}
//! ```

include!(concat!(env!("OUT_DIR"), "/rules.rs"));
