//! Settings of `resource-limits`.

use std::collections::BTreeMap;
use std::fmt;

use aigov_sdk::base::names::label_key;
use aigov_sdk::cluster::device_classes::DeviceClassResources;
use aigov_sdk::prelude::*;
use aigov_sdk::{MigWeights, Quantity};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Resources every container must set a limit for. Default `cpu` and
    /// `memory`, as the Kyverno example requires. `[]` checks no limits, only the GPU rules.
    pub required_limits: Vec<String>,
    /// Resources every container must request (a limit alone counts:
    /// Kubernetes copies it to the request). Default `[]`.
    pub required_requests: Vec<String>,
    /// The largest limit a container may set, per resource. Default `{}`.
    pub max_limits: BTreeMap<String, Amount>,
    /// The smallest limit a container may set, per resource. Default `{}`.
    pub min_limits: BTreeMap<String, Amount>,
    /// The largest request a container may make, per resource (a request
    /// left out is the limit). Default `{}`.
    pub max_requests: BTreeMap<String, Amount>,
    /// The smallest request a container may make, per resource. Default
    /// `{}`.
    pub min_requests: BTreeMap<String, Amount>,
    /// The largest ratio of a container's limit to its request, per
    /// resource, as a LimitRange's `maxLimitRequestRatio`: both must be set
    /// (a request left out is the limit) and above zero. Default `{}`.
    pub max_limit_request_ratio: BTreeMap<String, Amount>,
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
    /// The GPU resource name the devices of each DRA device class count as
    /// (`gpu.nvidia.com: nvidia.com/gpu`); a `*` stands for the MIG profile
    /// the request's selector pins, so `mig.nvidia.com: nvidia.com/mig-*`
    /// counts a `1g.10gb` slice as `nvidia.com/mig-1g.10gb` (weighed as
    /// `migWeights` says). The same setting as `gpu-quota`'s. Read only
    /// while a GPU cap is set.
    pub device_class_resources: DeviceClassResources,
    /// What a failed lookup of a pod template's ResourceClaims and
    /// ResourceClaimTemplates does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            required_limits: vec!["cpu".into(), "memory".into()],
            required_requests: Vec::new(),
            max_limits: BTreeMap::new(),
            min_limits: BTreeMap::new(),
            max_requests: BTreeMap::new(),
            min_requests: BTreeMap::new(),
            max_limit_request_ratio: BTreeMap::new(),
            check_init_containers: true,
            gpu_memory_request_equals_limit: false,
            max_gpus_per_container: None,
            max_gpus_per_pod: None,
            gpu_resource_names: GpuResources::default(),
            mig_weights: MigWeights::default(),
            device_class_resources: DeviceClassResources::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

/// A quantity in settings, as Kubernetes writes one (`"500m"`, `"4Gi"`) or
/// as a number (`2`, `1.5`); kept as written, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amount(pub String);

impl Amount {
    /// The quantity in thousandths, rounded up (settings were validated,
    /// so it parses; 0 if not).
    pub fn millis(&self) -> u64 {
        Quantity::parse(&self.0).map_or(0, |q| q.ceil_millis())
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Amount;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity, such as `\"500m\"`, `\"4Gi\"` or `2`")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Amount, E> {
                Ok(Amount(v.to_string()))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Amount, E> {
                Ok(Amount(v.to_string()))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Amount, E> {
                Ok(Amount(v.to_string()))
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Amount, E> {
                Ok(Amount(v.to_string()))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A list of resource names: valid, not GPUs (which would refuse every pod
/// without GPUs), not repeated.
fn resource_names(key: &str, names: &[String], gpus: &GpuResources) -> Result<(), SettingsError> {
    for (i, name) in names.iter().enumerate() {
        let key = format!("{key}[{i}]");
        if name.trim().is_empty() {
            return Err(SettingsError::new(key, "must not be empty"));
        }
        if let Err(why) = label_key(name) {
            return Err(SettingsError::new(key, format!("`{name}` is not a resource name: {why}")));
        }
        if gpus.is_gpu(name) {
            return Err(SettingsError::new(
                key,
                format!(
                    "`{name}` is a GPU resource: requiring it of every container would refuse every pod without GPUs; GPU limits are checked whenever GPUs are requested"
                ),
            ));
        }
        if names.iter().take(i).any(|n| n == name) {
            return Err(SettingsError::new(key, format!("`{name}` is listed twice")));
        }
    }
    Ok(())
}

/// Resource names mapped to quantities above zero.
fn amounts(key: &str, map: &BTreeMap<String, Amount>) -> Result<(), SettingsError> {
    for (name, amount) in map {
        if let Err(why) = label_key(name) {
            return Err(SettingsError::new(key, format!("`{name}` is not a resource name: {why}")));
        }
        let key = format!("{key}.{name}");
        match Quantity::parse(&amount.0) {
            Err(why) => return Err(SettingsError::new(key, why.to_string())),
            Ok(q) if !q.is_positive() => {
                return Err(SettingsError::new(key, format!("`{amount}` must be above zero; leave `{name}` out for no bound")));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

impl Settings {
    /// Whether a GPU cap is set, so that the GPUs claimed through DRA
    /// count.
    pub fn caps_gpus(&self) -> bool {
        self.max_gpus_per_container.is_some() || self.max_gpus_per_pod.is_some()
    }
}

impl RuleSettings for Settings {
    const EXEMPTS_IMAGES: bool = true;

    /// `deviceClassResources` maps GPU device classes (the shared
    /// `gpuDeviceClasses`), and every class named there is mapped.
    fn validate_gpu_classes(&self, classes: &[&str]) -> Result<(), SettingsError> {
        self.device_class_resources.validate_classes("deviceClassResources", "gpuDeviceClasses", classes)
    }

    fn validate(&self) -> Result<(), SettingsError> {
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.mig_weights.validate("migWeights")?;
        resource_names("requiredLimits", &self.required_limits, &self.gpu_resource_names)?;
        resource_names("requiredRequests", &self.required_requests, &self.gpu_resource_names)?;
        for (key, map) in [
            ("maxLimits", &self.max_limits),
            ("minLimits", &self.min_limits),
            ("maxRequests", &self.max_requests),
            ("minRequests", &self.min_requests),
            ("maxLimitRequestRatio", &self.max_limit_request_ratio),
        ] {
            amounts(key, map)?;
        }
        // Bounds nothing can meet: a minimum above a maximum, or a request
        // above a limit, which Kubernetes refuses.
        for (min_key, mins, max_key, maxes) in [
            ("minLimits", &self.min_limits, "maxLimits", &self.max_limits),
            ("minRequests", &self.min_requests, "maxRequests", &self.max_requests),
            ("minRequests", &self.min_requests, "maxLimits", &self.max_limits),
        ] {
            for (name, min) in mins {
                if let Some(max) = maxes.get(name)
                    && min.millis() > max.millis()
                {
                    return Err(SettingsError::new(
                        format!("{min_key}.{name}"),
                        format!("`{min}` is above `{max_key}.{name}` (`{max}`), so no container could pass: lower one or raise the other"),
                    ));
                }
            }
        }
        for (name, ratio) in &self.max_limit_request_ratio {
            if ratio.millis() < 1000 {
                return Err(SettingsError::new(
                    format!("maxLimitRequestRatio.{name}"),
                    format!(
                        "`{ratio}` is below 1, which only a request above its limit could meet, and Kubernetes refuses those: use 1 or more"
                    ),
                ));
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
        // Claimed devices count in the family of the name they map to,
        // whatever `gpuResourceNames` (the containers' GPU resources) says.
        self.device_class_resources.validate("deviceClassResources", None)?;
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
        assert_eq!(json["deviceClassResources"].to_string(), r#"{"gpu.nvidia.com":"nvidia.com/gpu","mig.nvidia.com":"nvidia.com/mig-*"}"#);
        assert_eq!(json["onLookupError"], "deny");
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
    fn requests_bounds_and_ratios() {
        let s = ok("{}");
        assert!(
            s.required_requests.is_empty() && s.max_limits.is_empty() && s.min_requests.is_empty() && s.max_limit_request_ratio.is_empty()
        );
        let s = ok(
            r#"{"requiredRequests":["cpu","memory"],"maxLimits":{"cpu":2,"memory":"4Gi"},"minRequests":{"cpu":0.25},"maxLimitRequestRatio":{"cpu":"1.5"}}"#,
        );
        assert_eq!((s.max_limits["cpu"].millis(), s.max_limits["memory"].millis()), (2000, 4 * 1024 * 1024 * 1024 * 1000));
        assert_eq!(s.min_requests["cpu"].millis(), 250, "numbers are quantities");
        assert_eq!(Full::<Settings>::default().to_json()["maxLimits"].to_string(), "{}");
        assert!(
            refused::<Settings>(r#"{"requiredRequests":["cpu","cpu"]}"#)
                .starts_with("setting `requiredRequests[1]`: `cpu` is listed twice")
        );
        assert_eq!(
            refused::<Settings>(r#"{"maxRequests":{"cpu":"0"}}"#),
            "setting `maxRequests.cpu`: `0` must be above zero; leave `cpu` out for no bound"
        );
        assert!(
            refused::<Settings>(r#"{"maxLimits":{"cpu":"two"}}"#).starts_with("setting `maxLimits.cpu`: `two` is not a valid quantity")
        );
        assert!(
            refused::<Settings>(r#"{"maxLimits":{"CPU limit":"2"}}"#)
                .starts_with("setting `maxLimits`: `CPU limit` is not a resource name")
        );
        assert!(
            refused::<Settings>(r#"{"minLimits":{"cpu":"4"},"maxLimits":{"cpu":"2"}}"#)
                .starts_with("setting `minLimits.cpu`: `4` is above `maxLimits.cpu` (`2`)")
        );
        assert!(
            refused::<Settings>(r#"{"maxLimitRequestRatio":{"memory":"0.9"}}"#)
                .starts_with("setting `maxLimitRequestRatio.memory`: `0.9` is below 1")
        );
        assert!(
            refused::<Settings>(r#"{"maxLimits":{"cpu":true}}"#)
                .starts_with("setting `maxLimits.cpu`: invalid type: boolean `true`, expected a quantity")
        );
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_key() {
        assert!(refused::<Settings>(r#"{"requiredLimit":["cpu"]}"#).starts_with("setting `requiredLimit`: unknown setting"));
        assert!(refused::<Settings>(r#"{"requiredLimits":"cpu"}"#).starts_with("setting `requiredLimits`: invalid type: string"));
        assert!(refused::<Settings>(r#"{"maxGpusPerPod":-1}"#).starts_with("setting `maxGpusPerPod`: invalid value: integer `-1`"));
    }
}
