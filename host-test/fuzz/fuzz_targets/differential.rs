//! The one-pass decoder against serde_json: the same document re-encoded by
//! serde_json, and with its object before its kind, decodes to the same
//! model and gets the same answers from every rule. See `aigov_sdk::fuzzing`.
#![no_main]

use std::sync::LazyLock;

use aigov_sdk::fuzzing::{Subjects, check_differential, mutate};
use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

/// Each rule with the settings `aigov fuzz-corpus` wrote
/// (`$AIGOV_FUZZ_DIR/settings.json`; defaults without it).
static SUBJECTS: LazyLock<Subjects> = LazyLock::new(|| {
    let dir = std::env::var("AIGOV_FUZZ_DIR").unwrap_or_else(|_| "target/fuzz".into());
    let text = std::fs::read_to_string(format!("{dir}/settings.json")).unwrap_or_else(|_| "{}".into());
    let settings: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    Subjects::new(aigov_bundle::AIGOV_RULES, &aigov_bundle::AIGOV_POLICY, |name| settings.get(name).map(|s| s.to_string()))
});

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_differential(&SUBJECTS, data) {
        panic!("{e}");
    }
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if seed % 2 == 0
        && let Some(m) = mutate(&data[..size], seed)
        && m.len() <= max_size
    {
        data[..m.len()].copy_from_slice(&m);
        return m.len();
    }
    fuzzer_mutate(data, size, max_size)
});
