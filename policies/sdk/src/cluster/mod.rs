//! Layer 4, GPUs and the cluster: reading the cluster through the host and
//! what a failed lookup does ([`lookup`], re-exported here), GPUs counted
//! the way the scheduler counts them, from resources and DRA claims
//! ([`gpu`]), claimed GPUs counted as resource names ([`device_classes`]), the runtime classes and tolerations vendors' GPUs need
//! ([`gpu_runtime`]), namespaces selected by name or label ([`namespaces`]),
//! image references ([`image`]) and the `scale` subresource ([`scale`]).
//! Imports only the layers below.

pub mod device_classes;
pub mod gpu;
pub mod gpu_runtime;
pub mod image;
pub mod lookup;
pub mod namespaces;
pub mod scale;

pub use lookup::*;
