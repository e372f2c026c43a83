//! The harness's integration tests, one module each, in one test binary:
//! every test binary links wasmtime and the harness, and one link instead of
//! twelve takes a minute of CPU off `make test`. (`cases`, `registry` and
//! `wasmtime_cli` stay binaries of their own: `make` runs them apart.)
//! Most need `make artifacts` first.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;
mod layers;

mod bench_smoke;
mod cli;
mod docs;
mod export_cases;
mod forms_fuzz;
mod late_failures;
mod limits;
mod manifests;
mod mutation;
mod one_program;
mod preinit;
mod reports;
mod robustness;
mod scan_deployment;
mod scan_samples;
mod simulate;
mod sparse_model;
mod structure;
mod template;
