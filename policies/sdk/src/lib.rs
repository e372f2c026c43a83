//! The aigov SDK: everything two rules would otherwise write twice.
//!
//! A rule is a pure function over a parsed request:
//!
//! ```text
//! use aigov_sdk::prelude::*;
//!
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
//! `wasm32-unknown-unknown` (both with the crate's default feature `export`),
//! and natively a [`NativePolicy`] the harness links. `export_bundle!` does
//! the same for the bundle of every rule.
//!
//! The SDK is in layers, each importing only from the layers below it (the
//! structure test holds it to this):
//!
//! 1. [`base`]: message wording, wildcard patterns, Kubernetes name syntax,
//!    and the two errors (`Malformed`, `SettingsError`);
//! 2. [`decode`]: the one-pass JSON decoder and its borrowed strings,
//!    paths into a document, the text walker that finds and edits fields,
//!    and errors explained with the field they name;
//! 3. [`model`]: the Kubernetes model rules read: the admission request,
//!    object metadata and pod specs, the workload kinds and their pod
//!    templates (one file per family under `model/workload/`), listed
//!    objects, quantities, scheduling as the scheduler reads it, labels;
//! 4. [`cluster`]: GPUs and the cluster: counting GPUs (resources and DRA
//!    claims), GPU runtimes, cluster lookups and what a failed one does,
//!    namespaces, image references, the `scale` subresource;
//! 5. [`runtime`]: the policy runtime: settings, verdicts, mutation, the
//!    one evaluation path every host calls, the bundle, the metadata, and
//!    the waPC and component exports.
//!
//! The data path: [`model::request`] decodes the AdmissionRequest in one
//! pass, the object straight into the [`model::workload`] model;
//! [`runtime::entry`] admits what no rule judges (subresources and
//! operations the rule's metadata does not list, objects being deleted,
//! bookkeeping updates, exemptions), runs the rule, drops violations an
//! UPDATE's old object already had, applies a mutating rule's edits
//! ([`decode::json`]), and builds Kubewarden's response
//! ([`runtime::verdict`]).

extern crate self as aigov_sdk;

pub mod base;
pub mod cluster;
pub mod decode;
pub mod model;
pub mod prelude;
pub mod runtime;
#[cfg(feature = "testing")]
pub mod testing;

/// The guests' allocator, in modules and components alike: free lists by
/// size class ([`runtime::heap`]).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: runtime::heap::Heap = runtime::heap::Heap::new();

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

pub use base::error::Malformed;
pub use base::glob::Glob;
pub use base::regex::Regex;
pub use base::rule_settings::{RuleSettings, SettingsError};
pub use cluster::gpu::{ExemptGpus, GpuAmount, GpuCounts, GpuFamilies, GpuRequest, GpuResources, GpuUse, MigWeights, ResourceClaims};
pub use cluster::namespaces::{Namespace, NamespaceSelector};
pub use cluster::{Cluster, LookupError, NoCluster, OnLookupError};
pub use decode::dec::{RawStr, Str};
pub use decode::json::Edit;
pub use decode::path::Path;
pub use model::kind::WorkloadKind;
pub use model::label_selector::LabelSelector;
pub use model::labels::{
    AllowedValues, COMPUTE_TYPE_LABEL, COMPUTE_TYPES, LabelScope, LabelSet, LabelSite, PodsOnly, RequiredLabels, compute_type_conflict,
    label_sets,
};
pub use model::listed::{ListedContainer, ListedPod};
pub use model::pod::{Annotations, Container, Labels, ObjectMeta, PodSpec, StrMap};
pub use model::quantity::Quantity;
pub use model::request::{ConnectOptions, Operation, Request};
pub use model::workload::{ContainerList, ContainerRef, PodTemplate, RayCluster, Role, Scale, ScaleWhy, WorkerGroup, Workload};
pub use runtime::entry::Single;
pub use runtime::metadata::PolicyMetadata;
pub use runtime::policy::{Exported, Handler, NativePolicy, Policy};
pub use runtime::settings::Mode;
pub use runtime::verdict::{SettingsResponse, ValidationResponse, Verdict};

#[doc(hidden)]
pub mod __private {
    pub use aigov_sdk_macros::policy_metadata;
    pub use serde_json;
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    pub use wit_bindgen;
}

/// Exports the wasm faces of a [`Handler`]: waPC on `wasm32-wasip1`, the
/// component world on `wasm32-unknown-unknown`. Used by `export_policy!`
/// and `export_bundle!`, gated on the calling crate's `export` feature so
/// that the bundle can link rule crates without their exports.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_wasm {
    ($handler:ty) => {
        /// waPC initialisation: registers `validate`, `validate_settings` and
        /// `protocol_version`. Called once per instance by the host.
        #[cfg(all(feature = "export", target_arch = "wasm32", target_os = "wasi"))]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn wapc_init() {
            $crate::runtime::wapc::register::<$handler>();
        }

        #[cfg(all(feature = "export", target_arch = "wasm32", target_os = "unknown"))]
        const _: () = {
            struct AigovComponent;
            impl $crate::bindings::Guest for AigovComponent {
                fn validate(request: ::std::string::String, settings: ::std::string::String) -> $crate::bindings::Verdict {
                    $crate::runtime::component::validate::<$handler>(&request, &settings)
                }
                fn validate_settings(settings: ::std::string::String) -> $crate::bindings::SettingsVerdict {
                    $crate::runtime::component::validate_settings::<$handler>(&settings)
                }
                fn metadata() -> $crate::bindings::Metadata {
                    $crate::runtime::component::metadata::<$handler>()
                }
            }
    $crate::bindings::__export_admission_policy!(AigovComponent with_types_in $crate::bindings);
        };
    };
}

/// Exports a rule: a Kubewarden waPC module on `wasm32-wasip1`, a component
/// on `wasm32-unknown-unknown`, and natively the constant `AIGOV_POLICY`
/// (a [`NativePolicy`]) the harness links. Embeds and validates the crate's
/// `metadata.yml` at compile time. The rule crate declares
/// `[features] default = ["export"]` and `export = []`.
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        impl $crate::Exported for $policy {
            const METADATA: &'static $crate::runtime::metadata::PolicyMetadata = &$crate::__private::policy_metadata!($policy);
        }

        /// The rule, for the bundle.
        pub type AigovRule = $policy;

        /// This rule's entry points, for the aigov harness.
        pub const AIGOV_POLICY: $crate::NativePolicy = $crate::NativePolicy::of::<$crate::Single<$policy>>();

        /// What the SDK assumes of every rule's settings to read them fast
        /// ([`$crate::runtime::settings::check_defaults`]).
        #[cfg(test)]
        #[test]
        fn aigov_settings_hold_what_the_sdk_assumes() {
            assert_eq!($crate::runtime::settings::check_defaults::<<$policy as $crate::Policy>::Settings>(), Ok(()));
        }

        // Compiled into the bundle (as a module: its build script sets
        // `aigov_bundle`), a rule exports nothing of its own.
        #[cfg(not(aigov_bundle))]
        $crate::__export_wasm!($crate::Single<$policy>);
    };
}

/// Exports the bundle of the listed rules (see [`bundle`]): natively the
/// constant `AIGOV_POLICY`, and the wasm faces with the `export` feature.
/// Its metadata is the union the crate's build script writes to
/// `$OUT_DIR/metadata.yml`.
#[macro_export]
macro_rules! export_bundle {
    ($($rule:ty),* $(,)?) => {
        /// The rules of the bundle, in name order.
        pub static AIGOV_BUNDLE_RULES: &[$crate::runtime::bundle::Entry] = &[$($crate::runtime::bundle::Entry::of::<$rule>()),*];

        /// Each rule of the bundle on its own, natively (for tests and fuzzing).
        pub static AIGOV_RULES: &[$crate::NativePolicy] = &[$($crate::NativePolicy::of::<$crate::Single<$rule>>()),*];

        /// The bundle as a handler.
        pub struct AigovBundle;

        impl $crate::Handler for AigovBundle {
            const METADATA: &'static $crate::runtime::metadata::PolicyMetadata = &$crate::__private::policy_metadata!(out_dir);
            fn validate_payload(payload: &[u8], cluster: &dyn $crate::Cluster) -> $crate::ValidationResponse {
                $crate::runtime::bundle::validate_payload(AIGOV_BUNDLE_RULES, payload, cluster)
            }
            fn validate_request(request: &str, settings: &str, cluster: &dyn $crate::Cluster) -> $crate::ValidationResponse {
                $crate::runtime::bundle::validate_request(AIGOV_BUNDLE_RULES, request, settings, cluster)
            }
            fn validate_settings(settings: &[u8]) -> $crate::SettingsResponse {
                $crate::runtime::bundle::validate_settings(AIGOV_BUNDLE_RULES, settings)
            }
            fn default_settings() -> $crate::__private::serde_json::Value {
                let mut rules = $crate::__private::serde_json::Map::new();
                $(
                    rules.insert(
                        <$rule as $crate::Exported>::METADATA.name.to_string(),
                        <$crate::Single<$rule> as $crate::Handler>::default_settings(),
                    );
                )*
                let mut top = $crate::__private::serde_json::Map::new();
                top.insert("rules".to_string(), $crate::__private::serde_json::Value::Object(rules));
                $crate::__private::serde_json::Value::Object(top)
            }
            fn effective_settings(settings: &str) -> Result<$crate::__private::serde_json::Value, String> {
                // Each rule's settings as that rule reads them; the rest
                // (the bundle's own keys) as given.
                let mut value: $crate::__private::serde_json::Value =
                    $crate::__private::serde_json::from_str(settings).map_err(|e| e.to_string())?;
                if let Some(rules) = value.get_mut("rules").and_then(|r| r.as_object_mut()) {
                    $(
                        let name = <$rule as $crate::Exported>::METADATA.name;
                        if let Some(own) = rules.get_mut(name) {
                            *own = <$crate::Single<$rule> as $crate::Handler>::effective_settings(&own.to_string())
                                .map_err(|e| format!("{name}: {e}"))?;
                        }
                    )*
                }
                Ok(value)
            }
        }

        /// The bundle's entry points, for the aigov harness.
        pub const AIGOV_POLICY: $crate::NativePolicy = $crate::NativePolicy::of::<AigovBundle>();

        $crate::__export_wasm!(AigovBundle);
    };
}
