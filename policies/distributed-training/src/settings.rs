//! Settings of `distributed-training`.

use aigov_sdk::Quantity;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// The node label that names the GPU product. Default
    /// `nvidia.com/gpu.product` (GPU feature discovery).
    pub gpu_product_label: String,
    /// InfiniBand / RoCE device resources (wildcards allowed). Default
    /// `rdma/*` (the k8s-rdma-shared-dev-plugin and SR-IOV resources).
    pub rdma_resource_names: Vec<Glob>,
    /// AWS EFA device resources (wildcards allowed). Default
    /// `vpc.amazonaws.com/efa`.
    pub efa_resource_names: Vec<Glob>,
    /// Every GPU container of a worker mounts a memory-backed `/dev/shm`.
    /// Default `true`.
    pub require_shared_memory: bool,
    /// The smallest `sizeLimit` a memory-backed `/dev/shm` may have, when
    /// it sets one. Default `1Gi`; `null` for no minimum.
    pub min_shared_memory: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gpu_resource_names: GpuResources::default(),
            gpu_product_label: "nvidia.com/gpu.product".into(),
            rdma_resource_names: vec![Glob::new("rdma/*")],
            efa_resource_names: vec![Glob::new("vpc.amazonaws.com/efa")],
            require_shared_memory: true,
            min_shared_memory: Some("1Gi".into()),
        }
    }
}

impl Settings {
    /// `minSharedMemory` in bytes (0 for none); valid settings parse.
    pub fn min_shm_bytes(&self) -> u64 {
        self.min_shared_memory.as_deref().and_then(|q| Quantity::parse(q).ok()).map_or(0, |q| q.ceil_units())
    }
}

fn names(key: &str, list: &[Glob]) -> Result<(), SettingsError> {
    for (i, g) in list.iter().enumerate() {
        let p = g.as_str();
        if p.trim().is_empty() || p.chars().any(char::is_whitespace) {
            return Err(SettingsError::new(format!("{key}[{i}]"), format!("`{p}` can never match a resource name")));
        }
    }
    Ok(())
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        self.gpu_resource_names.validate("gpuResourceNames")?;
        if aigov_sdk::base::names::label_key(&self.gpu_product_label).is_err() {
            return Err(SettingsError::new(
                "gpuProductLabel",
                format!("`{}` is not a valid label key, so no node could carry it", self.gpu_product_label),
            ));
        }
        names("rdmaResourceNames", &self.rdma_resource_names)?;
        names("efaResourceNames", &self.efa_resource_names)?;
        for (i, g) in self.rdma_resource_names.iter().enumerate() {
            if self.gpu_resource_names.is_gpu(g.as_str()) {
                return Err(SettingsError::new(
                    format!("rdmaResourceNames[{i}]"),
                    format!("`{}` is also a GPU resource (`gpuResourceNames`)", g.as_str()),
                ));
            }
        }
        if let Some(q) = &self.min_shared_memory {
            match Quantity::parse(q) {
                Err(e) => return Err(SettingsError::new("minSharedMemory", format!("`{q}` is not a quantity: {e}"))),
                Ok(v) if !v.is_positive() => {
                    return Err(SettingsError::new("minSharedMemory", format!("`{q}` must be above zero, or `null` for no minimum")));
                }
                Ok(_) => {}
            }
            if !self.require_shared_memory {
                return Err(SettingsError::new(
                    "minSharedMemory",
                    "applies only with `requireSharedMemory: true`; set it to `null` when shared memory is not required",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.min_shm_bytes(), 1 << 30);
        let s = accepted::<Settings>(r#"{"requireSharedMemory":false,"minSharedMemory":null}"#);
        assert_eq!(s.min_shm_bytes(), 0);
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        assert!(refused::<Settings>(r#"{"minSharedMemory":"lots"}"#).starts_with("setting `minSharedMemory`: `lots` is not a quantity"));
        assert!(refused::<Settings>(r#"{"minSharedMemory":"0"}"#).starts_with("setting `minSharedMemory`: `0` must be above zero"));
        assert!(refused::<Settings>(r#"{"requireSharedMemory":false}"#).starts_with("setting `minSharedMemory`: applies only"));
        assert!(refused::<Settings>(r#"{"gpuProductLabel":"not a label"}"#).starts_with("setting `gpuProductLabel`"));
        assert!(
            refused::<Settings>(r#"{"rdmaResourceNames":["nvidia.com/gpu"]}"#)
                .starts_with("setting `rdmaResourceNames[0]`: `nvidia.com/gpu` is also a GPU resource")
        );
        assert!(refused::<Settings>(r#"{"efaResourceNames":[""]}"#).starts_with("setting `efaResourceNames[0]`"));
        assert!(refused::<Settings>(r#"{"nccl":true}"#).starts_with("setting `nccl`: unknown setting"));
    }
}
