//! Settings of `gpu-runtime-class`: the SDK's, which `gpu-runtime-defaults`
//! reads too, so one settings block serves both (tested in the SDK).

pub use aigov_sdk::cluster::gpu_runtime::{PodRuntimeClasses, Requirement, Settings, SharedMemory, Taint};
