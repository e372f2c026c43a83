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
//! `wasm32-unknown-unknown` (both with the crate's default feature `export`),
//! and natively a [`NativePolicy`] the harness links. `export_bundle!` does
//! the same for the bundle of every rule.
//!
//! The data path: [`request`] decodes the AdmissionRequest in one pass, the
//! object straight into the [`workload`] model ([`pod`] holds the pod-level
//! types); [`entry`] admits what no rule judges (subresources and operations
//! the rule's metadata does not list, objects being deleted, exemptions),
//! runs the rule, drops violations an UPDATE's old object already had,
//! applies a mutating rule's edits ([`json`]), and builds Kubewarden's
//! response ([`verdict`]). [`gpu`], [`gpu_runtime`], [`scheduling`], [`labels`],
//! [`label_selector`], [`names`], [`namespaces`], [`image`] and [`quantity`]
//! hold what rules share.

extern crate self as aigov_sdk;

pub mod bundle;
pub mod cluster;
pub mod dec;
pub mod entry;
#[cfg(not(target_arch = "wasm32"))]
pub mod fuzzing;
pub mod glob;
pub mod gpu;
pub mod gpu_runtime;
pub mod image;
pub mod json;
pub mod label_selector;
pub mod labels;
pub mod listed;
pub mod metadata;
pub mod mutate;
pub mod names;
pub mod namespaces;
pub mod pod;
pub mod quantity;
pub mod request;
pub mod scale;
pub mod scheduling;
pub mod settings;
pub mod text;
pub mod verdict;
pub mod workload;

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub mod wapc;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod component;

/// The components' allocator: dlmalloc, as std's on this target, but a
/// release (0.2.14) that starts with the heap the guest was linked with
/// (`__heap_base` to `__heap_end`: the initial memory the Makefile's
/// `WASM_MEMORY` sets) before it grows memory. std's (0.2.11) grows on the
/// first allocation, and in a pooled host each growth costs an `mprotect`
/// during the call and another when the slot is reused: about a fifth of a
/// fresh component's request (BENCHMARKS.md). The modules' allocator
/// (wasi-libc's malloc) already starts there.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[global_allocator]
static ALLOCATOR: Heap = Heap;

/// [`dlmalloc::GlobalDlmalloc`] behind calls that are not inlined: its
/// methods are `#[inline]`, and inlined into every allocating function they
/// made each component about 48 KiB larger (std's allocator is reached the
/// same way, through a call).
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
struct Heap;

// SAFETY: every method forwards its arguments unchanged to dlmalloc's
// `GlobalAlloc`, whose contract is the one each caller already upholds.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Heap {
    #[inline(never)]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as for the impl.
        unsafe { dlmalloc::GlobalDlmalloc.alloc(layout) }
    }
    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as for the impl.
        unsafe { dlmalloc::GlobalDlmalloc.dealloc(ptr, layout) }
    }
    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as for the impl.
        unsafe { dlmalloc::GlobalDlmalloc.alloc_zeroed(layout) }
    }
    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for the impl.
        unsafe { dlmalloc::GlobalDlmalloc.realloc(ptr, layout, new_size) }
    }
}

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

pub use cluster::{Cluster, LookupError, NoCluster, OnLookupError};
pub use glob::Glob;
pub use gpu::{GpuAmount, GpuCounts, GpuFamilies, GpuRequest, GpuResources, GpuUse, MigWeights, ResolvedClaims, ResourceClaims};
pub use json::{Edit, Path};
pub use label_selector::LabelSelector;
pub use labels::{COMPUTE_TYPE_LABEL, COMPUTE_TYPES, LabelScope, LabelSet, LabelSite, RequiredLabels, compute_type_conflict, label_sets};
pub use metadata::PolicyMetadata;
pub use namespaces::{Namespace, NamespaceSelector};
pub use pod::{Annotations, Container, Labels, ObjectMeta, PodSpec, StrMap};
pub use quantity::Quantity;
pub use request::{ConnectOptions, Malformed, Operation, RawStr, Request, Str};
pub use settings::{Mode, RuleSettings, SettingsError};
pub use verdict::{SettingsResponse, ValidationResponse, Verdict};
pub use listed::{ListedContainer, ListedPod};
pub use workload::{ContainerList, ContainerRef, PodTemplate, RayCluster, Role, Scale, ScaleWhy, WorkerGroup, Workload, WorkloadKind};

/// An admission rule.
pub trait Policy {
    /// The rule's own settings (the shared `mode`, exemptions and
    /// `allowExistingViolations` are handled by the SDK before `validate` is
    /// called).
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

/// What an artifact answers: one rule, or the bundle. The waPC, component
/// and native faces are generic over it.
pub trait Handler {
    /// The artifact's metadata.
    const METADATA: &'static PolicyMetadata;
    /// Kubewarden `validate`: the `{"request", "settings"}` payload.
    fn validate_payload(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse;
    /// Component `validate`: request JSON and settings JSON.
    fn validate_request(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse;
    /// `validate_settings`.
    fn validate_settings(settings: &[u8]) -> SettingsResponse;
    /// The default settings, shared keys included, as JSON.
    fn default_settings() -> serde_json::Value;
}

/// One rule as a [`Handler`].
pub struct Single<P>(std::marker::PhantomData<P>);

impl<P: Exported> Handler for Single<P> {
    const METADATA: &'static PolicyMetadata = P::METADATA;
    fn validate_payload(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
        entry::validate_payload::<P>(payload, cluster)
    }
    fn validate_request(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
        entry::validate_request::<P>(request, settings, cluster)
    }
    fn validate_settings(settings: &[u8]) -> SettingsResponse {
        entry::validate_settings::<P>(settings)
    }
    fn default_settings() -> serde_json::Value {
        settings::Settings::<P::Settings>::default().to_json()
    }
}

/// An artifact's entry points as native functions, for the aigov harness.
#[derive(Clone, Copy)]
pub struct NativePolicy {
    /// The metadata.
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
    /// The entry points of handler `H`.
    pub const fn of<H: Handler>() -> NativePolicy {
        NativePolicy {
            metadata: H::METADATA,
            validate: H::validate_payload,
            validate_request: H::validate_request,
            validate_settings: H::validate_settings,
            default_settings: H::default_settings,
        }
    }
}

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
            $crate::wapc::register::<$handler>();
        }

        #[cfg(all(feature = "export", target_arch = "wasm32", target_os = "unknown"))]
        const _: () = {
            struct AigovComponent;
            impl $crate::bindings::Guest for AigovComponent {
                fn validate(request: ::std::string::String, settings: ::std::string::String) -> $crate::bindings::Verdict {
                    $crate::component::validate::<$handler>(&request, &settings)
                }
                fn validate_settings(settings: ::std::string::String) -> $crate::bindings::SettingsVerdict {
                    $crate::component::validate_settings::<$handler>(&settings)
                }
                fn metadata() -> $crate::bindings::Metadata {
                    $crate::component::metadata::<$handler>()
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
            const METADATA: &'static $crate::metadata::PolicyMetadata = &$crate::__private::policy_metadata!($policy);
        }

        /// The rule, for the bundle.
        pub type AigovRule = $policy;

        /// This rule's entry points, for the aigov harness.
        pub const AIGOV_POLICY: $crate::NativePolicy = $crate::NativePolicy::of::<$crate::Single<$policy>>();

        /// What the SDK assumes of every rule's settings to read them fast
        /// ([`$crate::settings::check_defaults`]).
        #[cfg(test)]
        #[test]
        fn aigov_settings_hold_what_the_sdk_assumes() {
            assert_eq!($crate::settings::check_defaults::<<$policy as $crate::Policy>::Settings>(), Ok(()));
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
        pub static AIGOV_BUNDLE_RULES: &[$crate::bundle::Entry] = &[$($crate::bundle::Entry::of::<$rule>()),*];

        /// Each rule of the bundle on its own, natively (for tests and fuzzing).
        pub static AIGOV_RULES: &[$crate::NativePolicy] = &[$($crate::NativePolicy::of::<$crate::Single<$rule>>()),*];

        /// The bundle as a handler.
        pub struct AigovBundle;

        impl $crate::Handler for AigovBundle {
            const METADATA: &'static $crate::metadata::PolicyMetadata = &$crate::__private::policy_metadata!(out_dir);
            fn validate_payload(payload: &[u8], cluster: &dyn $crate::Cluster) -> $crate::ValidationResponse {
                $crate::bundle::validate_payload(AIGOV_BUNDLE_RULES, payload, cluster)
            }
            fn validate_request(request: &str, settings: &str, cluster: &dyn $crate::Cluster) -> $crate::ValidationResponse {
                $crate::bundle::validate_request(AIGOV_BUNDLE_RULES, request, settings, cluster)
            }
            fn validate_settings(settings: &[u8]) -> $crate::SettingsResponse {
                $crate::bundle::validate_settings(AIGOV_BUNDLE_RULES, settings)
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
        }

        /// The bundle's entry points, for the aigov harness.
        pub const AIGOV_POLICY: $crate::NativePolicy = $crate::NativePolicy::of::<AigovBundle>();

        $crate::__export_wasm!(AigovBundle);
    };
}
