//! The aigov harness: one wasmtime engine running aigov rules as Kubewarden
//! waPC modules and as components, next to the same rules linked natively.
//!
//! - [`artifact`]: load any module or component and evaluate requests with
//!   it; annotate modules with Kubewarden metadata; build components.
//! - [`cases`]: every rule's test cases, three ways, with agreement checks.
//! - [`admission`]: from a manifest, AdmissionRequest or AdmissionReview to
//!   the request a policy receives.
//! - [`cluster`]: cluster lookups served from fixture files.
//! - [`oci`], [`registry`], [`layout`], [`package`]: the bundle as OCI
//!   artifacts in registries and on disk, and the deployment manifests.

pub mod admission;
pub mod artifact;
pub mod bench;
pub mod cases;
pub mod cluster;
pub mod component;
pub mod engine;
pub mod layout;
pub mod native;
pub mod oci;
pub mod package;
pub mod registry;
pub mod scan;
pub mod wapc;
