//! Settings of `ray-cluster-limits`.

use aigov_sdk::cluster::device_classes::DeviceClassResources;
use aigov_sdk::model::classification::classification_labels;
use aigov_sdk::prelude::*;
use aigov_sdk::{MigWeights, RequiredLabels};
use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode` and exemptions come on top).
///
/// Limits are whole numbers. They are read as signed numbers so that every
/// value out of range (`0`, `-1`) gets the same refusal from
/// [`RuleSettings::validate`], naming the key and the range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// GPUs of one family (`nvidia.com/gpu` with its MIG slices,
    /// `amd.com/gpu`, ...) one worker pod may request, counted over all its
    /// containers as the scheduler counts them. Default 4.
    pub max_gpus_per_worker: i64,
    /// GPUs of one family the head pod may request. Default `null`: the
    /// same as `maxGpusPerWorker`. `0`: the head may not request GPUs.
    pub max_gpus_per_head: Option<i64>,
    /// Worker pods (`maxReplicas` × `numOfHosts`) of a worker group that
    /// requests GPUs. Default 8.
    pub max_gpu_worker_replicas: i64,
    /// Worker pods (`maxReplicas` × `numOfHosts`) of a worker group without
    /// GPUs. Default 20.
    pub max_cpu_worker_replicas: i64,
    /// GPUs of one family a whole Ray cluster (head and every worker group
    /// at `maxReplicas` × `numOfHosts`, and each ResourceClaim the pods
    /// share once) may use. Default `null`: no cap.
    pub max_total_gpus: Option<i64>,
    /// Labels the RayCluster, RayJob or RayService must carry, each with its
    /// allowed values (`[]`: any non-empty value). Default: `team`,
    /// `cost-center`, `workload-type` one of the SDK's workload types (as
    /// `workload-classification` requires), `compute-type` in `[gpu, cpu,
    /// mixed]`. `{}` checks no labels.
    pub required_labels: RequiredLabels,
    /// Whether a `compute-type` label must agree with the GPUs the cluster
    /// requests (`cpu` only without GPUs; `gpu` and `mixed` only with).
    /// Default `true`.
    pub check_compute_type: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// What one MIG slice is worth, as a fraction of a GPU, for profiles
    /// whose compute share is not `<g>` of 7 (A30: `nvidia.com/mig-1g.6gb:
    /// 0.25`). Default `{}`: every profile by its name.
    pub mig_weights: MigWeights,
    /// The GPU resource name the devices of each DRA device class count as
    /// (`gpu.nvidia.com: nvidia.com/gpu`); a `*` stands for the MIG profile
    /// the request's selector pins, so `mig.nvidia.com: nvidia.com/mig-*`
    /// counts a `1g.10gb` slice as `nvidia.com/mig-1g.10gb` (weighed as
    /// `migWeights` says). The same setting as `gpu-quota`'s.
    pub device_class_resources: DeviceClassResources,
    /// What a failed lookup of a pod template's ResourceClaims and
    /// ResourceClaimTemplates does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_gpus_per_worker: 4,
            max_gpus_per_head: None,
            max_gpu_worker_replicas: 8,
            max_cpu_worker_replicas: 20,
            max_total_gpus: None,
            required_labels: classification_labels(),
            check_compute_type: true,
            gpu_resource_names: GpuResources::default(),
            mig_weights: MigWeights::default(),
            device_class_resources: DeviceClassResources::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

impl Settings {
    /// The head's cap: `maxGpusPerHead`, or `maxGpusPerWorker` when unset.
    pub fn head_limit(&self) -> i64 {
        self.max_gpus_per_head.unwrap_or(self.max_gpus_per_worker)
    }
}

/// Refuses a limit below `min`, always in the same words: the range, the
/// value, and for a value that is in the wrong range only by being zero,
/// what zero would do.
fn at_least(key: &str, value: i64, min: i64, zero_would: &str) -> Result<(), SettingsError> {
    if value >= min {
        return Ok(());
    }
    let range = if min == 0 { "0 or more" } else { "1 or more" };
    let why = if value == 0 { format!(": {zero_would}") } else { String::new() };
    Err(SettingsError::new(key, format!("must be a whole number, {range}, not `{value}`{why}")))
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        at_least("maxGpusPerWorker", self.max_gpus_per_worker, 1, "0 would reject every worker group that requests GPUs")?;
        if let Some(head) = self.max_gpus_per_head {
            at_least("maxGpusPerHead", head, 0, "")?;
        }
        at_least("maxGpuWorkerReplicas", self.max_gpu_worker_replicas, 1, "0 would reject every worker group that requests GPUs")?;
        at_least("maxCpuWorkerReplicas", self.max_cpu_worker_replicas, 1, "0 would reject every worker group without GPUs")?;
        if let Some(total) = self.max_total_gpus {
            at_least("maxTotalGpus", total, 1, "0 would reject every Ray cluster that requests GPUs; use `null` for no cap")?;
        }
        self.required_labels.validate("requiredLabels")?;
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.mig_weights.validate("migWeights")?;
        for name in self.mig_weights.0.keys() {
            let key = format!("migWeights.{name}");
            if !name.starts_with("nvidia.com/mig-") {
                return Err(SettingsError::new(
                    key,
                    "only MIG profiles (`nvidia.com/mig-<g>g.<memory>gb`) take a weight; every other GPU resource counts one GPU per unit",
                ));
            }
            if !self.gpu_resource_names.is_gpu(name) {
                return Err(SettingsError::new(
                    key,
                    format!("`{name}` is not a GPU by `gpuResourceNames`, so this weight would never apply"),
                ));
            }
        }
        // Claimed devices count in the family of the name they map to,
        // whatever `gpuResourceNames` (the containers' GPU resources) says.
        self.device_class_resources.validate("deviceClassResources", None)?;
        Ok(())
    }

    /// `deviceClassResources` maps GPU device classes (the shared
    /// `gpuDeviceClasses`), and every class named there is mapped.
    fn validate_gpu_classes(&self, classes: &[&str]) -> Result<(), SettingsError> {
        self.device_class_resources.validate_classes("deviceClassResources", "gpuDeviceClasses", classes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::refused;

    fn ok(json: &str) -> Settings {
        let s = Full::<Settings>::parse(json).unwrap();
        s.validate().unwrap();
        s.rule
    }

    #[test]
    fn defaults_are_the_blog_posts_limits_and_the_shared_labels() {
        let s = ok("{}");
        assert_eq!(s, Settings::default());
        assert_eq!((s.max_gpus_per_worker, s.max_gpu_worker_replicas, s.max_cpu_worker_replicas), (4, 8, 20));
        assert_eq!(s.max_total_gpus, None);
        assert_eq!(s.max_gpus_per_head, None);
        assert_eq!(s.head_limit(), 4, "the head's cap defaults to the worker's");
        let json = Full::<Settings>::default().to_json();
        assert!(json["maxTotalGpus"].is_null());
        assert!(json["maxGpusPerHead"].is_null());
        assert_eq!(json["migWeights"].to_string(), "{}");
        assert_eq!(
            json["requiredLabels"].to_string(),
            r#"{"compute-type":["gpu","cpu","mixed"],"cost-center":[],"team":[],"workload-type":["jupyter-notebook","ml-training","cpu-training","data-processing","model-inference","report-generation"]}"#
        );
        assert_eq!(json["checkComputeType"], true);
        assert_eq!(json["deviceClassResources"].to_string(), r#"{"gpu.nvidia.com":"nvidia.com/gpu","mig.nvidia.com":"nvidia.com/mig-*"}"#);
        assert_eq!(json["onLookupError"], "deny");
    }

    #[test]
    fn custom_values() {
        let s = ok(r#"{"maxGpusPerWorker":8,"maxTotalGpus":64,"requiredLabels":{},"checkComputeType":false,"maxCpuWorkerReplicas":100}"#);
        assert_eq!(s.max_gpus_per_worker, 8);
        assert_eq!(s.head_limit(), 8);
        assert_eq!(s.max_total_gpus, Some(64));
        assert!(s.required_labels.0.is_empty(), "an empty map checks no labels");
        assert!(!s.check_compute_type);
        assert_eq!(s.max_gpu_worker_replicas, 8, "keys left out keep their defaults");
        assert_eq!(ok(r#"{"maxTotalGpus":null}"#).max_total_gpus, None);
        assert_eq!(ok(r#"{"maxGpusPerHead":0}"#).head_limit(), 0, "a head without GPUs is a policy, not a contradiction");
        assert_eq!(ok(r#"{"maxGpusPerHead":1,"maxGpusPerWorker":8}"#).head_limit(), 1);
    }

    #[test]
    fn every_limit_is_refused_in_the_same_words() {
        assert_eq!(
            refused::<Settings>(r#"{"maxGpusPerWorker":0}"#),
            "setting `maxGpusPerWorker`: must be a whole number, 1 or more, not `0`: 0 would reject every worker group that requests GPUs"
        );
        assert_eq!(
            refused::<Settings>(r#"{"maxGpusPerWorker":-1}"#),
            "setting `maxGpusPerWorker`: must be a whole number, 1 or more, not `-1`"
        );
        assert_eq!(
            refused::<Settings>(r#"{"maxGpuWorkerReplicas":-1}"#),
            "setting `maxGpuWorkerReplicas`: must be a whole number, 1 or more, not `-1`"
        );
        assert_eq!(
            refused::<Settings>(r#"{"maxGpuWorkerReplicas":0}"#),
            "setting `maxGpuWorkerReplicas`: must be a whole number, 1 or more, not `0`: 0 would reject every worker group that requests GPUs"
        );
        assert_eq!(
            refused::<Settings>(r#"{"maxCpuWorkerReplicas":0}"#),
            "setting `maxCpuWorkerReplicas`: must be a whole number, 1 or more, not `0`: 0 would reject every worker group without GPUs"
        );
        assert_eq!(refused::<Settings>(r#"{"maxTotalGpus":-8}"#), "setting `maxTotalGpus`: must be a whole number, 1 or more, not `-8`");
        assert!(refused::<Settings>(r#"{"maxTotalGpus":0}"#).ends_with("use `null` for no cap"));
        assert_eq!(
            refused::<Settings>(r#"{"maxGpusPerHead":-1}"#),
            "setting `maxGpusPerHead`: must be a whole number, 0 or more, not `-1`"
        );
        // Wrong types say the same: a whole number.
        assert_eq!(
            refused::<Settings>(r#"{"maxGpusPerWorker":"4"}"#),
            "setting `maxGpusPerWorker`: invalid type: string \"4\", expected a whole number"
        );
        assert!(
            refused::<Settings>(r#"{"maxGpusPerWorker":2.5}"#)
                .starts_with("setting `maxGpusPerWorker`: invalid type: floating point `2.5`, expected a whole number")
        );
        assert!(
            refused::<Settings>(r#"{"maxTotalGpus":18446744073709551615}"#)
                .starts_with("setting `maxTotalGpus`: invalid value: integer `18446744073709551615`, expected a whole number")
        );
    }

    #[test]
    fn other_wrong_types_are_refused_by_parsing() {
        assert!(refused::<Settings>(r#"{"requiredLabels":["team"]}"#).starts_with("setting `requiredLabels`: invalid type: list"));
        assert!(refused::<Settings>(r#"{"maxGpuPerWorker":4}"#).starts_with("setting `maxGpuPerWorker`: unknown setting"));
        assert!(refused::<Settings>(r#"{"migWeights":[]}"#).starts_with("setting `migWeights`: invalid type: list"));
    }

    #[test]
    fn label_requirements_are_checked() {
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"team":[""]}}"#),
            "setting `requiredLabels.team`: allowed values must not be empty; use `[]` to allow any non-empty value"
        );
        assert!(
            refused::<Settings>(r#"{"requiredLabels":{"cost center":[]}}"#)
                .starts_with("setting `requiredLabels`: `cost center` is not a valid label key")
        );
        assert!(
            refused::<Settings>(r#"{"requiredLabels":{"Example.com/team":[]}}"#)
                .contains("the prefix `Example.com` must be a lowercase DNS subdomain")
        );
        assert!(refused::<Settings>(r#"{"requiredLabels":{"example.com/":[]}}"#).contains("is not a valid label key"));
        assert_eq!(
            refused::<Settings>(r#"{"requiredLabels":{"workload-type":["training","fine tuning"]}}"#),
            format!(
                "setting `requiredLabels.workload-type[1]`: `fine tuning` is not a valid label value: {}",
                aigov_sdk::base::names::NAME_RULE
            )
        );
        assert!(ok(r#"{"requiredLabels":{"example.com/team":[],"tier":["A_1","b.2"]}}"#).required_labels.0.len() == 2);
    }

    #[test]
    fn gpu_resource_names_are_checked() {
        assert!(refused::<Settings>(r#"{"gpuResourceNames":[]}"#).starts_with("setting `gpuResourceNames`: must list at least one"));
        assert_eq!(ok(r#"{"gpuResourceNames":["habana.ai/gaudi"]}"#).gpu_resource_names.0.len(), 1);
    }

    #[test]
    fn device_class_resources_are_checked() {
        assert!(
            refused::<Settings>(r#"{"deviceClassResources":{"gpu.nvidia.com":"gpus"}}"#)
                .starts_with("setting `deviceClassResources.gpu.nvidia.com`: `gpus` is not a GPU resource name")
        );
        assert!(
            refused::<Settings>(r#"{"gpuDeviceClasses":["gpu.nvidia.com","mig.nvidia.com","gpu.amd.com"]}"#)
                .starts_with("setting `gpuDeviceClasses[2]`: `gpu.amd.com` has no entry in `deviceClassResources`")
        );
        assert!(refused::<Settings>(r#"{"onLookupError":"warn"}"#).starts_with("setting `onLookupError`"));
        assert_eq!(ok(r#"{"onLookupError":"allow"}"#).on_lookup_error, OnLookupError::Allow);
    }

    #[test]
    fn mig_weights_are_checked() {
        let s = ok(r#"{"migWeights":{"nvidia.com/mig-1g.6gb":0.25,"nvidia.com/mig-2g.12gb":0.5}}"#);
        assert_eq!(s.mig_weights.0.len(), 2);
        assert_eq!(
            refused::<Settings>(r#"{"migWeights":{"nvidia.com/mig-1g.6gb":0}}"#),
            "setting `migWeights.nvidia.com/mig-1g.6gb`: `0` is not a fraction of a GPU: use a number above 0 and at most 1"
        );
        assert!(refused::<Settings>(r#"{"migWeights":{"nvidia.com/mig-1g.6gb":1.5}}"#).contains("is not a fraction of a GPU"));
        assert!(
            refused::<Settings>(r#"{"migWeights":{"nvidia.com/mig-1g.6gb":"a quarter"}}"#)
                .starts_with("setting `migWeights.nvidia.com/mig-1g.6gb`: invalid type: string")
        );
        assert_eq!(
            refused::<Settings>(r#"{"migWeights":{"nvidia.com/gpu":0.5}}"#),
            "setting `migWeights.nvidia.com/gpu`: only MIG profiles (`nvidia.com/mig-<g>g.<memory>gb`) take a weight; every other GPU resource counts one GPU per unit"
        );
        assert_eq!(
            refused::<Settings>(r#"{"gpuResourceNames":["nvidia.com/gpu"],"migWeights":{"nvidia.com/mig-1g.6gb":0.25}}"#),
            "setting `migWeights.nvidia.com/mig-1g.6gb`: `nvidia.com/mig-1g.6gb` is not a GPU by `gpuResourceNames`, so this weight would never apply"
        );
    }
}
