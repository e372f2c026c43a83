//! The SDK's decoder and every rule, natively, alone and in the bundle:
//! never a panic; input serde_json refuses is a 400 everywhere; rejections
//! carry a message. See `aigov_sdk::fuzzing`.
#![no_main]

use std::sync::LazyLock;

use aigov_sdk::testing::fuzzing::{Subjects, check_rules, mutate_in_place, subjects_from_env};
use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

static SUBJECTS: LazyLock<Subjects> = LazyLock::new(|| subjects_from_env(aigov_bundle::AIGOV_RULES, &aigov_bundle::AIGOV_POLICY));

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_rules(&SUBJECTS, data) {
        panic!("{e}");
    }
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    mutate_in_place(data, size, max_size, seed, |d, s, m| fuzzer_mutate(d, s, m))
});
