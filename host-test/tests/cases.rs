//! `cargo test`: every case file of every rule becomes a named test
//! (`gpu-runtime-class::gpu-pod-without-runtime-class`), run natively, as a
//! module and as a component. Needs `make artifacts` first; a missing
//! artifact fails every case of its rule rather than skipping it.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use aigov::tools::cases::{self, Case, Forms};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let policies = root.join("policies");
    let artifacts = std::env::var_os("AIGOV_ARTIFACTS").map_or_else(|| root.join("artifacts"), PathBuf::from);
    let engine = match aigov::run::engine::new_engine() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot start wasmtime: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut trials = Vec::new();
    let bundle = match cases::load_bundle(&engine, &artifacts) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    for rule in aigov::run::native::names() {
        let forms = Forms::load(&engine, &artifacts, rule, bundle.clone()).map(Arc::new).map_err(|e| format!("{e:#}"));
        let files = match cases::case_files(&policies, rule) {
            Ok(f) if !f.is_empty() => f,
            Ok(_) => {
                trials.push(Trial::test(format!("{rule}::has-cases"), move || Err(Failed::from("no case files"))));
                continue;
            }
            Err(e) => {
                let msg = format!("{e:#}");
                trials.push(Trial::test(format!("{rule}::has-cases"), move || Err(Failed::from(msg))));
                continue;
            }
        };
        for (name, path) in files {
            let forms = forms.clone();
            trials.push(Trial::test(format!("{rule}::{name}"), move || {
                let forms = forms.map_err(Failed::from)?;
                let case = Case::load(&path).map_err(|e| Failed::from(format!("{e:#}")))?;
                cases::run(&forms, &case).map_err(|problems| Failed::from(problems.join("\n")))
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
