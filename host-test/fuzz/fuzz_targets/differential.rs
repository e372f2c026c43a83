//! The one-pass decoder against serde_json: the same document re-encoded by
//! serde_json, and with its object before its kind, decodes to the same
//! model and gets the same answers from every rule. See `aigov_sdk::fuzzing`.
#![no_main]

use std::sync::LazyLock;

use aigov_sdk::testing::fuzzing::{Subjects, check_differential, mutate_in_place, subjects_from_env};
use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

static SUBJECTS: LazyLock<Subjects> = LazyLock::new(|| subjects_from_env(aigov_bundle::AIGOV_RULES, &aigov_bundle::AIGOV_POLICY));

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_differential(&SUBJECTS, data) {
        panic!("{e}");
    }
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    mutate_in_place(data, size, max_size, seed, |d, s, m| fuzzer_mutate(d, s, m))
});
