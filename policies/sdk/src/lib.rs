//! The aigov SDK: everything two rules would otherwise write twice.
//!
//! A rule is a pure function over a parsed request:
//!
//! ```text
//! pub struct GpuRuntimeClass;
//! impl Policy for GpuRuntimeClass {
//!     type Settings = Settings;
//!     fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> { … }
//! }
//! aigov_sdk::export_policy!(GpuRuntimeClass);
//! ```
//!
//! `export_policy!` makes the crate a Kubewarden waPC module on
//! `wasm32-wasip1`, a component of the `aigov:policy/admission-policy` world on
//! `wasm32-unknown-unknown`, and natively a [`NativePolicy`] the harness links.
//!
//! The SDK owns the request model ([`Request`]), workload extraction
//! ([`Workload`], [`PodTemplate`]), quantities, wildcards, the shared settings
//! (`mode`, exemptions), verdicts and the cluster-lookup trait.

extern crate self as aigov_sdk;

pub mod cluster;
pub mod entry;
pub mod glob;
pub mod labels;
pub mod metadata;
pub mod quantity;
pub mod request;
pub mod settings;
pub mod text;
pub mod verdict;
pub mod workload;

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub mod wapc;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod component;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[allow(unsafe_code, missing_docs, clippy::all)]
pub mod bindings {
    //! Bindings for the `aigov:policy/admission-policy` world, generated once
    //! for every rule crate.
    wit_bindgen::generate!({
        path: "../../wit",
        world: "admission-policy",
        pub_export_macro: true,
        export_macro_name: "__export_admission_policy",
        default_bindings_module: "::aigov_sdk::bindings",
        runtime_path: "::aigov_sdk::__private::wit_bindgen::rt",
    });
}

pub use cluster::{Cluster, LookupError, NoCluster};
pub use glob::Glob;
pub use labels::RequiredLabels;
pub use metadata::PolicyMetadata;
pub use quantity::Quantity;
pub use request::{ConnectOptions, Malformed, Operation, Request, Str};
pub use settings::{GpuResources, Mode, RuleSettings, SettingsError};
pub use verdict::{SettingsResponse, ValidationResponse, Verdict};
pub use workload::{ContainerList, ContainerRef, GpuRequest, ObjectMeta, PodTemplate, RayCluster, WorkerGroup, Workload, WorkloadKind};

/// An admission rule.
pub trait Policy {
    /// The rule's own settings (the shared `mode` and exemptions are handled
    /// by the SDK before `validate` is called).
    type Settings: RuleSettings;

    /// Evaluates one request. Return `Ok(Verdict::accept())` for kinds and
    /// operations the rule does not govern, and `Err(Malformed)` only when the
    /// input cannot be evaluated (rejected with code 400).
    fn validate(request: &Request<'_>, settings: &Self::Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed>;
}

/// A rule made exportable by `export_policy!`: its metadata is attached.
pub trait Exported: Policy {
    /// The rule's metadata, from its `metadata.yml`.
    const METADATA: &'static PolicyMetadata;
}

/// A rule's entry points as native functions, for the aigov harness.
#[derive(Clone, Copy)]
pub struct NativePolicy {
    /// The rule's metadata.
    pub metadata: &'static PolicyMetadata,
    /// Kubewarden `validate`: the `{"request", "settings"}` payload in.
    pub validate: fn(&[u8], &dyn Cluster) -> ValidationResponse,
    /// Component `validate`: request JSON and settings JSON in.
    pub validate_request: fn(&str, &str, &dyn Cluster) -> ValidationResponse,
    /// `validate_settings`.
    pub validate_settings: fn(&[u8]) -> SettingsResponse,
    /// The default settings, shared keys included, as JSON.
    pub default_settings: fn() -> serde_json::Value,
}

impl NativePolicy {
    /// The entry points of rule `P`.
    pub const fn of<P: Exported>() -> NativePolicy {
        NativePolicy {
            metadata: P::METADATA,
            validate: entry::validate_payload::<P>,
            validate_request: entry::validate_request::<P>,
            validate_settings: entry::validate_settings::<P>,
            default_settings: default_settings::<P>,
        }
    }
}

fn default_settings<P: Exported>() -> serde_json::Value {
    settings::Settings::<P::Settings>::default().to_json()
}

#[doc(hidden)]
pub mod __private {
    pub use aigov_sdk_macros::policy_metadata;
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    pub use wit_bindgen;
}

/// Exports a rule: a Kubewarden waPC module on `wasm32-wasip1`, a component
/// on `wasm32-unknown-unknown`, and natively the constant `AIGOV_POLICY`
/// (a [`NativePolicy`]) the harness links. Embeds and validates the crate's
/// `metadata.yml` at compile time.
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        impl $crate::Exported for $policy {
            const METADATA: &'static $crate::metadata::PolicyMetadata = &$crate::__private::policy_metadata!();
        }

        /// This rule's entry points, for the aigov harness.
        pub const AIGOV_POLICY: $crate::NativePolicy = $crate::NativePolicy::of::<$policy>();

        /// waPC initialisation: registers `validate`, `validate_settings` and
        /// `protocol_version`. Called once per instance by the host.
        #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn wapc_init() {
            $crate::wapc::register::<$policy>();
        }

        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        const _: () = {
            struct AigovComponent;
            impl $crate::bindings::Guest for AigovComponent {
                fn validate(request: ::std::string::String, settings: ::std::string::String) -> $crate::bindings::Verdict {
                    $crate::component::validate::<$policy>(&request, &settings)
                }
                fn validate_settings(settings: ::std::string::String) -> $crate::bindings::SettingsVerdict {
                    $crate::component::validate_settings::<$policy>(&settings)
                }
                fn metadata() -> $crate::bindings::Metadata {
                    $crate::component::metadata::<$policy>()
                }
            }
            $crate::bindings::__export_admission_policy!(AigovComponent with_types_in $crate::bindings);
        };
    };
}
