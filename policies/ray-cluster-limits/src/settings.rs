//! Settings of `ray-cluster-limits`.

use aigov_sdk::{GpuResources, RequiredLabels, RuleSettings, SettingsError};
use serde::{Deserialize, Serialize};

/// The label that says what a Ray cluster computes on.
pub const COMPUTE_TYPE_LABEL: &str = "compute-type";

/// The rule's own settings (the shared `mode` and exemptions come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// GPUs one worker pod of a worker group may request, counted over all
    /// its containers. Default 4.
    pub max_gpus_per_worker: u32,
    /// `maxReplicas` of a worker group that requests GPUs. Default 8.
    pub max_gpu_worker_replicas: u32,
    /// `maxReplicas` of a worker group without GPUs. Default 20.
    pub max_cpu_worker_replicas: u32,
    /// GPUs a whole Ray cluster (head and every worker group at
    /// `maxReplicas`, times `numOfHosts`) may use. Default `null`: no cap.
    pub max_total_gpus: Option<u32>,
    /// Labels the RayCluster, RayJob or RayService must carry, each with its
    /// allowed values (`[]`: any non-empty value). Default: `team`,
    /// `cost-center`, `workload-type` in `[training, inference,
    /// development]`, `compute-type` in `[gpu, cpu, mixed]`. `{}` checks no
    /// labels.
    pub required_labels: RequiredLabels,
    /// Whether a `compute-type` label must agree with the GPUs the cluster
    /// requests (`cpu` only without GPUs; `gpu` and `mixed` only with).
    /// Default `true`.
    pub check_compute_type: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_gpus_per_worker: 4,
            max_gpu_worker_replicas: 8,
            max_cpu_worker_replicas: 20,
            max_total_gpus: None,
            required_labels: RequiredLabels::new([
                ("team", &[][..]),
                ("cost-center", &[][..]),
                ("workload-type", &["training", "inference", "development"][..]),
                (COMPUTE_TYPE_LABEL, &["gpu", "cpu", "mixed"][..]),
            ]),
            check_compute_type: true,
            gpu_resource_names: GpuResources::default(),
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        let at_least_one = |key: &str, value: u32, why: &str| {
            if value == 0 {
                Err(SettingsError::new(key, format!("must be at least 1, or {why}")))
            } else {
                Ok(())
            }
        };
        at_least_one(
            "maxGpusPerWorker",
            self.max_gpus_per_worker,
            "every worker group that requests GPUs would be rejected",
        )?;
        at_least_one(
            "maxGpuWorkerReplicas",
            self.max_gpu_worker_replicas,
            "no worker group that requests GPUs could ever start a worker",
        )?;
        at_least_one(
            "maxCpuWorkerReplicas",
            self.max_cpu_worker_replicas,
            "no worker group without GPUs could ever start a worker",
        )?;
        if let Some(total) = self.max_total_gpus {
            at_least_one(
                "maxTotalGpus",
                total,
                "every Ray cluster that requests GPUs would be rejected; use `null` for no cap",
            )?;
        }
        self.required_labels.validate("requiredLabels")?;
        self.gpu_resource_names.validate("gpuResourceNames")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;
    use aigov_sdk::settings::Settings as Full;

    fn err(json: &str) -> String {
        Full::<Settings>::parse_valid(json).expect_err("settings must be refused").to_string()
    }

    fn ok(json: &str) -> Settings {
        let s = Full::<Settings>::parse(json).unwrap();
        s.validate().unwrap();
        s.rule
    }

    #[test]
    fn defaults_are_the_seed_limits() {
        let s = ok("{}");
        assert_eq!(s, Settings::default());
        assert_eq!((s.max_gpus_per_worker, s.max_gpu_worker_replicas, s.max_cpu_worker_replicas), (4, 8, 20));
        assert_eq!(s.max_total_gpus, None);
        let json = Full::<Settings>::default().to_json();
        assert!(json["maxTotalGpus"].is_null());
        assert_eq!(
            json["requiredLabels"].to_string(),
            r#"{"compute-type":["gpu","cpu","mixed"],"cost-center":[],"team":[],"workload-type":["training","inference","development"]}"#
        );
        assert_eq!(json["checkComputeType"], true);
    }

    #[test]
    fn custom_values() {
        let s = ok(r#"{"maxGpusPerWorker":8,"maxTotalGpus":64,"requiredLabels":{},"checkComputeType":false,"maxCpuWorkerReplicas":100}"#);
        assert_eq!(s.max_gpus_per_worker, 8);
        assert_eq!(s.max_total_gpus, Some(64));
        assert!(s.required_labels.0.is_empty(), "an empty map checks no labels");
        assert!(!s.check_compute_type);
        assert_eq!(s.max_gpu_worker_replicas, 8, "keys left out keep their defaults");
        assert_eq!(ok(r#"{"maxTotalGpus":null}"#).max_total_gpus, None);
    }

    #[test]
    fn negatives_and_wrong_types_are_refused_by_parsing() {
        assert_eq!(
            err(r#"{"maxGpuWorkerReplicas":-1}"#),
            "setting `maxGpuWorkerReplicas`: invalid value: integer `-1`, expected a whole number, zero or more"
        );
        assert_eq!(
            err(r#"{"maxTotalGpus":-8}"#),
            "setting `maxTotalGpus`: invalid value: integer `-8`, expected a whole number, zero or more"
        );
        assert!(err(r#"{"maxGpusPerWorker":"4"}"#).starts_with("setting `maxGpusPerWorker`: invalid type: string \"4\""));
        assert!(err(r#"{"maxGpusPerWorker":2.5}"#).starts_with("setting `maxGpusPerWorker`: invalid type: floating point"));
        assert!(err(r#"{"requiredLabels":["team"]}"#).starts_with("setting `requiredLabels`: invalid type: list"));
        assert!(err(r#"{"maxGpuPerWorker":4}"#).starts_with("setting `maxGpuPerWorker`: unknown setting"));
    }

    #[test]
    fn zero_limits_are_contradictions() {
        assert_eq!(
            err(r#"{"maxGpusPerWorker":0}"#),
            "setting `maxGpusPerWorker`: must be at least 1, or every worker group that requests GPUs would be rejected"
        );
        assert!(err(r#"{"maxGpuWorkerReplicas":0}"#).starts_with("setting `maxGpuWorkerReplicas`: must be at least 1"));
        assert!(err(r#"{"maxCpuWorkerReplicas":0}"#).starts_with("setting `maxCpuWorkerReplicas`: must be at least 1"));
        assert!(err(r#"{"maxTotalGpus":0}"#).ends_with("use `null` for no cap"));
    }

    #[test]
    fn label_requirements_are_checked() {
        assert_eq!(
            err(r#"{"requiredLabels":{"team":[""]}}"#),
            "setting `requiredLabels.team`: allowed values must not be empty; use `[]` to allow any non-empty value"
        );
        assert!(err(r#"{"requiredLabels":{"cost center":[]}}"#).starts_with("setting `requiredLabels`: `cost center` is not a valid label key"));
        assert!(err(r#"{"requiredLabels":{"Example.com/team":[]}}"#).contains("the prefix `Example.com` must be a lowercase DNS subdomain"));
        assert!(err(r#"{"requiredLabels":{"example.com/":[]}}"#).contains("is not a valid label key"));
        assert_eq!(
            err(r#"{"requiredLabels":{"workload-type":["training","fine tuning"]}}"#),
            format!("setting `requiredLabels.workload-type[1]`: `fine tuning` is not a valid label value: {}", aigov_sdk::names::NAME_RULE)
        );
        assert!(ok(r#"{"requiredLabels":{"example.com/team":[],"tier":["A_1","b.2"]}}"#).required_labels.0.len() == 2);
    }

    #[test]
    fn gpu_resource_names_are_checked() {
        assert!(err(r#"{"gpuResourceNames":[]}"#).starts_with("setting `gpuResourceNames`: must list at least one"));
        assert_eq!(ok(r#"{"gpuResourceNames":["habana.ai/gaudi"]}"#).gpu_resource_names.0.len(), 1);
    }
}
