//! Settings of `resource-limits`.

use aigov_sdk::MigWeights;
use aigov_sdk::base::names::label_key;
use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Resources every container must set a limit for. Default `cpu` and
    /// `memory` (the seed's). `[]` checks no limits, only the GPU rules.
    pub required_limits: Vec<String>,
    /// Whether init containers (those that run to completion, and sidecars)
    /// are held to `requiredLimits` too. Default `true`: an init container
    /// that downloads a model runs with the same node as everything else.
    pub check_init_containers: bool,
    /// Whether the containers of a pod that requests GPUs must request as
    /// much memory as their limit (the request left out counts: it defaults
    /// to the limit). Default `false`.
    pub gpu_memory_request_equals_limit: bool,
    /// GPUs one container may request. Default `null`: no cap.
    pub max_gpus_per_container: Option<u32>,
    /// GPUs one pod may hold, counted as the scheduler counts them. Default
    /// `null`: no cap.
    pub max_gpus_per_pod: Option<u32>,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// How much of a GPU a MIG profile is, for the caps. Default: its
    /// compute slices out of 7.
    pub mig_weights: MigWeights,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            required_limits: vec!["cpu".into(), "memory".into()],
            check_init_containers: true,
            gpu_memory_request_equals_limit: false,
            max_gpus_per_container: None,
            max_gpus_per_pod: None,
            gpu_resource_names: GpuResources::default(),
            mig_weights: MigWeights::default(),
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.mig_weights.validate("migWeights")?;
        for (i, name) in self.required_limits.iter().enumerate() {
            let key = format!("requiredLimits[{i}]");
            if name.trim().is_empty() {
                return Err(SettingsError::new(key, "must not be empty"));
            }
            if let Err(why) = label_key(name) {
                return Err(SettingsError::new(key, format!("`{name}` is not a resource name: {why}")));
            }
            if self.gpu_resource_names.is_gpu(name) {
                return Err(SettingsError::new(
                    key,
                    format!(
                        "`{name}` is a GPU resource: requiring it of every container would refuse every pod without GPUs; GPU limits are checked whenever GPUs are requested"
                    ),
                ));
            }
            if self.required_limits.iter().take(i).any(|n| n == name) {
                return Err(SettingsError::new(key, format!("`{name}` is listed twice")));
            }
        }
        for (key, cap) in [("maxGpusPerContainer", self.max_gpus_per_container), ("maxGpusPerPod", self.max_gpus_per_pod)] {
            if cap == Some(0) {
                return Err(SettingsError::new(
                    key,
                    "must be at least 1, or every workload that requests GPUs would be rejected; use `null` for no cap",
                ));
            }
        }
        if let (Some(c), Some(p)) = (self.max_gpus_per_container, self.max_gpus_per_pod)
            && c > p
        {
            return Err(SettingsError::new(
                "maxGpusPerContainer",
                format!(
                    "`{c}` is above `maxGpusPerPod` (`{p}`), which no container can reach: a container's GPUs are its pod's; lower it, or leave it `null`"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    fn ok(json: &str) -> Settings {
        accepted::<Settings>(json)
    }

    #[test]
    fn defaults_are_the_seeds() {
        let s = ok("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.required_limits, ["cpu", "memory"]);
        assert!(s.check_init_containers && !s.gpu_memory_request_equals_limit);
        assert_eq!((s.max_gpus_per_container, s.max_gpus_per_pod), (None, None));
        let json = Full::<Settings>::default().to_json();
        assert!(json["maxGpusPerPod"].is_null() && json["maxGpusPerContainer"].is_null());
        assert_eq!(json["requiredLimits"].to_string(), r#"["cpu","memory"]"#);
    }

    #[test]
    fn custom_values() {
        let s = ok(
            r#"{"requiredLimits":["memory","ephemeral-storage","hugepages-2Mi"],"maxGpusPerPod":8,"maxGpusPerContainer":8,"gpuMemoryRequestEqualsLimit":true}"#,
        );
        assert_eq!(s.required_limits.len(), 3);
        assert_eq!(s.max_gpus_per_pod, Some(8));
        assert!(ok(r#"{"requiredLimits":[]}"#).required_limits.is_empty(), "only the GPU checks");
    }

    #[test]
    fn settings_that_can_never_hold_are_refused() {
        assert_eq!(
            refused::<Settings>(r#"{"maxGpusPerPod":0}"#),
            "setting `maxGpusPerPod`: must be at least 1, or every workload that requests GPUs would be rejected; use `null` for no cap"
        );
        assert!(refused::<Settings>(r#"{"maxGpusPerContainer":0}"#).starts_with("setting `maxGpusPerContainer`: must be at least 1"));
        assert!(
            refused::<Settings>(r#"{"maxGpusPerContainer":8,"maxGpusPerPod":4}"#)
                .starts_with("setting `maxGpusPerContainer`: `8` is above `maxGpusPerPod` (`4`)")
        );
        assert!(refused::<Settings>(r#"{"requiredLimits":["cpu",""]}"#).starts_with("setting `requiredLimits[1]`: must not be empty"));
        assert!(
            refused::<Settings>(r#"{"requiredLimits":["CPU limit"]}"#)
                .starts_with("setting `requiredLimits[0]`: `CPU limit` is not a resource name")
        );
        assert!(
            refused::<Settings>(r#"{"requiredLimits":["cpu","nvidia.com/gpu"]}"#)
                .starts_with("setting `requiredLimits[1]`: `nvidia.com/gpu` is a GPU resource")
        );
        assert!(
            refused::<Settings>(r#"{"requiredLimits":["cpu","cpu"]}"#).starts_with("setting `requiredLimits[1]`: `cpu` is listed twice")
        );
        assert!(
            refused::<Settings>(r#"{"migWeights":{"nvidia.com/mig-1g.6gb":2}}"#).starts_with("setting `migWeights.nvidia.com/mig-1g.6gb`")
        );
        assert!(refused::<Settings>(r#"{"gpuResourceNames":[]}"#).starts_with("setting `gpuResourceNames`: must list at least one"));
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_key() {
        assert!(refused::<Settings>(r#"{"requiredLimit":["cpu"]}"#).starts_with("setting `requiredLimit`: unknown setting"));
        assert!(refused::<Settings>(r#"{"requiredLimits":"cpu"}"#).starts_with("setting `requiredLimits`: invalid type: string"));
        assert!(refused::<Settings>(r#"{"maxGpusPerPod":-1}"#).starts_with("setting `maxGpusPerPod`: invalid value: integer `-1`"));
    }
}
