//! The aigov harness: one wasmtime engine running aigov rules as Kubewarden
//! waPC modules and as components, next to the same rules linked natively;
//! the distribution of the bundle; and the tools people run.
//!
//! - [`run`]: running artifacts. The engine, the waPC host for modules, the
//!   component host, cluster lookups served from fixture files, loading an
//!   artifact and evaluating requests with it (and building artifacts:
//!   annotating modules, componentizing), the rules linked natively, and
//!   turning manifests into the AdmissionRequests a policy receives.
//! - [`dist`]: distributing them. OCI artifacts, the image layout on disk,
//!   registries, cosign signatures, and the deployment manifests.
//! - [`tools`]: what people run, each subcommand of `aigov` in a module of
//!   its own. One request against one rule (`eval`), test cases three ways,
//!   the offline scan (reading, evaluating, and the report model its
//!   writers read), the benchmark, reports in other tools' formats, the
//!   steps that build the artifacts, what an artifact or the build holds
//!   (`inspect`), the case corpus as the component host answers it, for
//!   other hosts to replay, a request quoted for `wasmtime run --invoke`,
//!   and the playground's data and local server.
//!
//! Each folder may use those above it in this list, never one below, and
//! `main.rs` (the command line: its flags, and which module runs each
//! subcommand) uses them all; `tests/suite/structure.rs` holds the modules
//! to these layers.

pub mod run {
    //! Running artifacts.
    pub mod admission;
    pub mod artifact;
    pub mod cluster;
    pub mod compiled;
    pub mod component;
    pub mod engine;
    pub mod lines;
    pub mod native;
    pub mod nesting;
    pub mod preinit;
    pub mod settings;
    pub mod wapc;
    pub mod yaml_hint;
}

pub mod dist {
    //! Distributing artifacts.
    pub mod layout;
    pub mod oci;
    pub mod package;
    pub mod registry;
    #[cfg(feature = "signing")]
    pub mod sign;
}

pub mod tools {
    //! Tools for people.
    pub mod bench;
    pub mod build;
    pub mod cases;
    pub mod children;
    pub mod eval;
    pub mod export_cases;
    pub mod fuzzing;
    pub mod inspect;
    pub mod invoke;
    pub mod playground;
    pub mod report;
    pub mod scan;
    pub mod scanbench;
    pub mod settings_check;
    pub mod simulate;
    pub mod sizes;
}
