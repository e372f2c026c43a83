//! Layer 5, the policy runtime: what a rule is ([`policy`]), its settings
//! ([`settings`]) and the shared ones ([`shared`], [`exceptions`]), verdicts and Kubewarden's responses
//! ([`verdict`]), mutation ([`mutate`]), the one evaluation path every
//! host calls ([`entry`]), the bundle ([`bundle`]), the metadata
//! ([`metadata`]), the guests' allocator ([`heap`]), and the waPC and
//! component exports.

pub mod bundle;
pub mod entry;
pub mod exceptions;
#[allow(unsafe_code)]
pub mod heap;
pub mod metadata;
pub mod mutate;
pub mod policy;
pub mod settings;
pub mod shared;
pub mod verdict;

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub mod wapc;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod component;
