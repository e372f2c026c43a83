//! Natively, as a Kubewarden module and as a component, every rule gives
//! the same answer (needs `make artifacts`; slower: two wasm instances per
//! rule and input). See `aigov::tools::fuzzing`.
#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use aigov::tools::fuzzing::{Forms, subjects};
use aigov_sdk::testing::fuzzing::mutate_in_place;
use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

static FORMS: LazyLock<Forms> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let subjects = subjects(&root.join("policies"));
    let engine = aigov::run::engine::new_engine().unwrap_or_else(|e| panic!("wasmtime: {e:#}"));
    Forms::load(&engine, &root.join("artifacts"), &subjects).unwrap_or_else(|e| panic!("{e:#} (run `make artifacts`)"))
});

fuzz_target!(|data: &[u8]| {
    if let Err(e) = FORMS.check(data) {
        panic!("{e}");
    }
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    mutate_in_place(data, size, max_size, seed, |d, s, m| fuzzer_mutate(d, s, m))
});
