//! GPUs claimed through DRA counted as GPU resource names: the
//! `deviceClassResources` setting (which resource the devices of each GPU
//! device class count as, `gpu.nvidia.com: nvidia.com/gpu`, with a `*` for
//! the MIG profile a request's selector pins), and the count of one claim
//! spec under it, with the reasons a request cannot be counted. One model
//! for every rule that counts claimed GPUs against limits (`gpu-quota`,
//! `ray-cluster-limits`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::glob::{self, Glob};
use crate::base::rule_settings::SettingsError;
use crate::cluster::gpu::{ClaimSpec, DeviceCount, GpuCounts, GpuResources, Pinned, pinned};

/// The GPU resource name the devices of each DRA device class count as, a
/// `*` standing for the MIG profile the request's selector pins
/// (`device.attributes['gpu.nvidia.com'].profile`): by default
/// `gpu.nvidia.com: nvidia.com/gpu` and `mig.nvidia.com: nvidia.com/mig-*`
/// (NVIDIA's DRA driver), so that a `1g.10gb` slice counts as
/// `nvidia.com/mig-1g.10gb`. A rule that counts claimed GPUs embeds this as
/// its `deviceClassResources` setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeviceClassResources(pub BTreeMap<String, String>);

impl Default for DeviceClassResources {
    fn default() -> Self {
        DeviceClassResources(
            [("gpu.nvidia.com", "nvidia.com/gpu"), ("mig.nvidia.com", "nvidia.com/mig-*")]
                .into_iter()
                .map(|(c, r)| (c.to_string(), r.to_string()))
                .collect(),
        )
    }
}

/// Why a request's GPUs cannot be counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uncounted {
    /// `allocationMode: All`: every matching device of the node, for these
    /// resource names; a number nothing bounds.
    Every(Vec<String>),
    /// A class mapped to a name with a `*` whose selectors pin no single
    /// MIG profile: the name's prefix (`nvidia.com/mig-`).
    Profile(String),
    /// A GPU class (a wildcard of `gpuDeviceClasses`) that no entry maps.
    Unmapped,
}

impl Uncounted {
    /// What to write instead, for the user: `claim a number of devices
    /// with `count` instead of `allocationMode: All``.
    pub fn fix(&self) -> &'static str {
        match self {
            Uncounted::Every(_) => "claim a number of devices with `count` instead of `allocationMode: All`",
            Uncounted::Profile(_) => "select the profile with `device.attributes['gpu.nvidia.com'].profile == '<profile>'`",
            Uncounted::Unmapped => {
                "claim a device class `deviceClassResources` maps, or ask your cluster administrators to map this one to the GPU resource its devices count as"
            }
        }
    }

    /// The refusal of a claim whose GPUs cannot be counted against a cap:
    /// the claim at `field` (from `source`) asks for devices of `class`,
    /// and `limit` says the cap (`a pod may hold at most 8 GPUs`).
    pub fn refusal(&self, field: &dyn std::fmt::Display, source: &str, class: &str, limit: &str) -> String {
        let fix = self.fix();
        match self {
            Uncounted::Every(names) => format!(
                "`{field}` ({source}) claims every matching device of class `{class}` on its node, so the {} it holds has no upper bound, but {limit}: {fix}",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ),
            Uncounted::Profile(prefix) => format!(
                "`{field}` ({source}) claims devices of class `{class}` without pinning their MIG profile in a selector, so which `{prefix}*` slice each is, and how much of a GPU, is unknown, but {limit}: {fix}"
            ),
            Uncounted::Unmapped => format!(
                "`{field}` ({source}) claims devices of class `{class}`, a GPU class `deviceClassResources` does not map to a GPU resource, so the GPUs they bring cannot be counted, but {limit}: {fix}"
            ),
        }
    }
}

/// The GPUs a claim spec brings ([`DeviceClassResources::count`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecGpus {
    /// Per resource name, for each request the largest of its alternatives
    /// (any of them may be allocated), above zero.
    pub counts: GpuCounts,
    /// The requests that cannot be counted, by device class, in request
    /// order; an unmapped class once.
    pub uncounted: Vec<(String, Uncounted)>,
}

impl DeviceClassResources {
    /// The GPUs claim spec `spec` brings, counting the devices of GPU
    /// classes (`classes`, the shared `gpuDeviceClasses`) as the resource
    /// their class maps to.
    pub fn count(&self, spec: &ClaimSpec, classes: &[Glob]) -> SpecGpus {
        let mut out = SpecGpus::default();
        for r in &spec.requests {
            let mut best = GpuCounts::new();
            for c in &r.choices {
                let class = c.device_class.as_str();
                if !classes.iter().any(|g| g.matches(class)) {
                    continue;
                }
                let Some(resource) = self.0.get(class) else {
                    if !out.uncounted.iter().any(|(k, why)| k == class && *why == Uncounted::Unmapped) {
                        out.uncounted.push((class.to_string(), Uncounted::Unmapped));
                    }
                    continue;
                };
                let names: Vec<String> = match resource.split_once('*') {
                    None => vec![resource.clone()],
                    Some((prefix, suffix)) => match pinned(&c.selectors, "gpu.nvidia.com", "profile") {
                        Pinned::OneOf(profiles) => profiles.iter().map(|p| format!("{prefix}{p}{suffix}")).collect(),
                        Pinned::Open | Pinned::Unreadable => {
                            out.uncounted.push((class.to_string(), Uncounted::Profile(prefix.to_string())));
                            continue;
                        }
                    },
                };
                match c.count {
                    DeviceCount::Exactly(n) => {
                        for name in names {
                            let e = best.entry(name).or_default();
                            *e = (*e).max(n);
                        }
                    }
                    DeviceCount::All => out.uncounted.push((class.to_string(), Uncounted::Every(names))),
                }
            }
            for (name, n) in best {
                let e = out.counts.entry(name).or_default();
                *e = e.saturating_add(n);
            }
        }
        out.counts.retain(|_, n| *n > 0);
        out
    }

    /// Checks the setting under `key`: each name a GPU resource name
    /// (`vendor/name`, at most one `*`), and one that `gpus` counts when
    /// given (a rule whose caps are keyed by `gpuResourceNames`).
    pub fn validate(&self, key: &str, gpus: Option<&GpuResources>) -> Result<(), SettingsError> {
        for (class, resource) in &self.0 {
            let at = format!("{key}.{class}");
            if resource.matches('*').count() > 1 || resource.contains('?') || !resource.contains('/') {
                return Err(SettingsError::new(
                    at,
                    format!("`{resource}` is not a GPU resource name (`vendor/name`, with at most one `*` for the MIG profile)"),
                ));
            }
            if let Some(gpus) = gpus
                && !gpus.is_gpu(&resource.replace('*', "1g.10gb"))
            {
                return Err(SettingsError::new(
                    at,
                    format!(
                        "`{resource}` is not a GPU resource under `gpuResourceNames`, so no cap could count it: add it there, or map the class to a GPU resource"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the setting under `key` against the GPU device classes
    /// `classes` (patterns as written, under `classes_key`): every class
    /// mapped is a GPU class, and every literal GPU class is mapped.
    pub fn validate_classes(&self, key: &str, classes_key: &str, classes: &[&str]) -> Result<(), SettingsError> {
        for class in self.0.keys() {
            if !classes.iter().any(|g| glob::matches(g, class)) {
                return Err(SettingsError::new(
                    format!("{key}.{class}"),
                    format!(
                        "`{class}` is not a GPU device class under `{classes_key}`, so its devices would never be counted: add it there, or remove this entry"
                    ),
                ));
            }
        }
        for (i, g) in classes.iter().enumerate() {
            let literal = !g.contains(['*', '?']);
            if literal && !self.0.contains_key(*g) {
                return Err(SettingsError::new(
                    format!("{classes_key}[{i}]"),
                    format!(
                        "`{g}` has no entry in `{key}`, so its devices would be found but never counted: map it to the GPU resource name its devices count as"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> ClaimSpec {
        ClaimSpec::of_claim(json, "the ResourceClaim `c`").unwrap()
    }

    fn counts(pairs: &[(&str, u64)]) -> GpuCounts {
        pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    fn classes() -> Vec<Glob> {
        crate::cluster::gpu::default_gpu_device_classes()
    }

    #[test]
    fn whole_gpus_and_pinned_mig_profiles_count_as_their_resource() {
        let m = DeviceClassResources::default();
        let s = spec(
            r#"{"spec":{"devices":{"requests":[
            {"name":"a","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}},
            {"name":"b","exactly":{"deviceClassName":"mig.nvidia.com","count":3,"selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}},
            {"name":"c","exactly":{"deviceClassName":"nic.example.com","count":8}}]}}}"#,
        );
        let got = m.count(&s, &classes());
        assert_eq!(got.counts, counts(&[("nvidia.com/gpu", 2), ("nvidia.com/mig-1g.10gb", 3)]));
        assert!(got.uncounted.is_empty(), "a class that is no GPU class is not counted, and no problem");
    }

    #[test]
    fn first_available_counts_its_largest_alternative() {
        let s = spec(
            r#"{"spec":{"devices":{"requests":[{"name":"a","firstAvailable":[
            {"name":"big","deviceClassName":"gpu.nvidia.com","count":4},
            {"name":"small","deviceClassName":"gpu.nvidia.com","count":2}]}]}}}"#,
        );
        assert_eq!(DeviceClassResources::default().count(&s, &classes()).counts, counts(&[("nvidia.com/gpu", 4)]));
    }

    #[test]
    fn what_cannot_be_counted_says_why() {
        let m = DeviceClassResources::default();
        let s = spec(
            r#"{"spec":{"devices":{"requests":[
            {"name":"all","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"All"}},
            {"name":"mig","exactly":{"deviceClassName":"mig.nvidia.com"}}]}}}"#,
        );
        let got = m.count(&s, &classes());
        assert!(got.counts.is_empty());
        assert_eq!(
            got.uncounted,
            vec![
                ("gpu.nvidia.com".to_string(), Uncounted::Every(vec!["nvidia.com/gpu".to_string()])),
                ("mig.nvidia.com".to_string(), Uncounted::Profile("nvidia.com/mig-".to_string())),
            ]
        );
        let wide = vec![Glob::new("*.nvidia.com")];
        let s = spec(
            r#"{"spec":{"devices":{"requests":[
            {"name":"a","exactly":{"deviceClassName":"h100.nvidia.com","count":2}},
            {"name":"b","exactly":{"deviceClassName":"h100.nvidia.com","count":2}}]}}}"#,
        );
        assert_eq!(m.count(&s, &wide).uncounted, vec![("h100.nvidia.com".to_string(), Uncounted::Unmapped)], "an unmapped class once");
        assert!(Uncounted::Every(Vec::new()).fix().contains("`count`"));
    }

    #[test]
    fn the_setting_is_checked() {
        let gpus = GpuResources::default();
        let bad = |m: &[(&str, &str)]| {
            DeviceClassResources(m.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect())
                .validate("k", Some(&gpus))
                .unwrap_err()
                .to_string()
        };
        assert!(DeviceClassResources::default().validate("k", Some(&gpus)).is_ok());
        let gaudi = GpuResources(vec![Glob::new("habana.ai/gaudi")]);
        assert!(DeviceClassResources::default().validate("k", Some(&gaudi)).is_err());
        assert!(DeviceClassResources::default().validate("k", None).is_ok(), "without caps keyed by resource name");
        assert!(bad(&[("gpu.nvidia.com", "gpus")]).contains("`gpus` is not a GPU resource name"));
        assert!(bad(&[("gpu.nvidia.com", "example.com/fpga")]).contains("is not a GPU resource under `gpuResourceNames`"));
        let m = DeviceClassResources::default();
        assert!(m.validate_classes("k", "gpuDeviceClasses", &["gpu.nvidia.com", "mig.nvidia.com"]).is_ok());
        assert!(
            m.validate_classes("k", "gpuDeviceClasses", &["gpu.nvidia.com"])
                .unwrap_err()
                .to_string()
                .contains("`mig.nvidia.com` is not a GPU device class")
        );
        assert!(
            m.validate_classes("k", "gpuDeviceClasses", &["gpu.nvidia.com", "mig.nvidia.com", "gpu.amd.com"])
                .unwrap_err()
                .to_string()
                .contains("`gpu.amd.com` has no entry in `k`")
        );
    }
}
