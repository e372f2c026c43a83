//! Settings of `gpu-access`.

use std::collections::BTreeMap;

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::base::names::{label_key, label_value, name_part};
use aigov_sdk::model::classification::{CPU_TRAINING, WORKLOAD_TYPE_LABEL};
use aigov_sdk::model::scheduling::TaintSetting;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The service accounts pods that request GPUs may run as, per
    /// namespace: the first entry whose `namespaces` selects the pod's
    /// namespace applies; in a namespace no entry selects, any service
    /// account may. Default: `gpu-training` everywhere, as in the Kyverno example.
    pub service_accounts: Vec<ServiceAccounts>,
    /// Node labels pods that request GPUs must pin, with `nodeSelector` or
    /// required node affinity, to these values. Default the Kyverno
    /// example's `accelerator: nvidia-gpu`. These labels mark GPU nodes too.
    pub required_node_selector: BTreeMap<String, String>,
    /// Node label keys (wildcards allowed) that only GPU nodes carry: pod
    /// templates that request no GPU must not aim at them.
    pub gpu_node_labels: Vec<Glob>,
    /// Taints GPU nodes carry: pod templates that request no GPU must not
    /// tolerate them.
    pub gpu_taints: Vec<TaintSetting>,
    /// CPU training workloads: what marks them, and whether they must state
    /// a node preference; `null` turns the check off.
    pub cpu_training: Option<CpuTraining>,
    /// Whether the checks of templates without GPUs apply to DaemonSets
    /// (and the pods they create) too. Default `false`: node agents (log
    /// shippers, monitoring exporters) run on every node, GPU nodes
    /// included, by design.
    pub check_daemon_sets: bool,
    /// `NVIDIA_VISIBLE_DEVICES`, which exposes a node's GPUs to a container
    /// under the NVIDIA container runtime, whatever it requests. Default:
    /// not checked.
    pub visible_devices: VisibleDevices,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// What a failed lookup (the Namespace, a resource claim) does: `deny`
    /// (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

/// The GPU node label of the Kyverno example this rule comes from.
pub const DEFAULT_NODE_LABEL: (&str, &str) = ("accelerator", "nvidia-gpu");

impl Default for Settings {
    fn default() -> Self {
        Settings {
            service_accounts: vec![ServiceAccounts { namespaces: NamespaceSelector::default(), allowed: vec![Glob::new("gpu-training")] }],
            required_node_selector: [(DEFAULT_NODE_LABEL.0.to_string(), DEFAULT_NODE_LABEL.1.to_string())].into_iter().collect(),
            gpu_node_labels: [
                "nvidia.com/*",
                "amd.com/*",
                "cloud.google.com/gke-accelerator",
                "feature.node.kubernetes.io/pci-10de.present",
            ]
            .into_iter()
            .map(Glob::new)
            .collect(),
            gpu_taints: vec![TaintSetting::no_schedule("nvidia.com/gpu")],
            cpu_training: Some(CpuTraining::default()),
            check_daemon_sets: false,
            visible_devices: VisibleDevices::default(),
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

/// The service accounts GPU pods in some namespaces may run as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccounts {
    /// The namespaces this entry applies to (names, labels, or both).
    pub namespaces: NamespaceSelector,
    /// Service account name patterns (`*`, `?` wildcards); `[]`: no pod in
    /// these namespaces may request GPUs.
    pub allowed: Vec<Glob>,
}

/// The variable the NVIDIA container runtime reads to expose GPUs.
pub const VISIBLE_DEVICES: &str = "NVIDIA_VISIBLE_DEVICES";

/// What containers may do with `NVIDIA_VISIBLE_DEVICES`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct VisibleDevices {
    /// Refuse a container that requests no GPU but sets
    /// `NVIDIA_VISIBLE_DEVICES` to devices (`all`, indices, UUIDs, or a
    /// value from `valueFrom`); `void`, `none` and the empty value expose
    /// none. Node agents (DaemonSets) are left alone unless
    /// `checkDaemonSets`. Default `false`.
    pub refuse_without_gpu: bool,
    /// GPU resource names (wildcards allowed) whose containers must set
    /// `NVIDIA_VISIBLE_DEVICES` (Gatekeeper's `K8sNoUnsupportedGpu`:
    /// `nvidia.com/gpu`). Default none.
    pub require_with_gpu: Vec<Glob>,
}

/// What marks CPU training workloads, and what they must do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CpuTraining {
    /// The label key (on the workload or its pod template).
    pub label: String,
    /// The label value.
    pub value: String,
    /// Whether they must state a node preference (`nodeSelector`, or node
    /// affinity, preferred or required). Default `true`.
    pub require_node_preference: bool,
}

impl Default for CpuTraining {
    fn default() -> Self {
        CpuTraining { label: WORKLOAD_TYPE_LABEL.into(), value: CPU_TRAINING.into(), require_node_preference: true }
    }
}

impl RuleSettings for Settings {
    /// A container whose image `exemptImages` lists holds no GPU for this
    /// rule and is not checked for `NVIDIA_VISIBLE_DEVICES`: a pod whose
    /// every GPU is held by such containers is left alone, neither held to
    /// the GPU checks nor kept off GPU nodes as a CPU pod.
    const EXEMPTS_IMAGES: bool = true;

    fn validate(&self) -> Result<(), SettingsError> {
        for (i, e) in self.service_accounts.iter().enumerate() {
            e.namespaces.validate(&format!("serviceAccounts[{i}].namespaces"))?;
            let at = format!("serviceAccounts[{i}].allowed");
            non_empty_patterns(&at, &e.allowed)?;
            for (j, g) in e.allowed.iter().enumerate() {
                if let Some(c) =
                    g.as_str().chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '*' | '?')))
                {
                    return Err(SettingsError::new(
                        format!("{at}[{j}]"),
                        format!(
                            "`{g}` can never match a service account name: `{c}` never appears in one (lowercase letters, digits, `-` and `.`)"
                        ),
                    ));
                }
            }
        }
        for (k, v) in &self.required_node_selector {
            label_key(k)
                .map_err(|why| SettingsError::new("requiredNodeSelector", format!("`{k}` is not a valid node label key: {why}")))?;
            label_value(v).map_err(|why| {
                SettingsError::new(format!("requiredNodeSelector.{k}"), format!("`{v}` is not a valid node label value: {why}"))
            })?;
            if v.is_empty() {
                return Err(SettingsError::new(format!("requiredNodeSelector.{k}"), "must not be empty: name the value GPU nodes carry"));
            }
        }
        non_empty_patterns(&"gpuNodeLabels", &self.gpu_node_labels)?;
        for (i, g) in self.gpu_node_labels.iter().enumerate() {
            if let Some(c) = g.as_str().chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '*' | '?'))) {
                return Err(SettingsError::new(
                    format!("gpuNodeLabels[{i}]"),
                    format!("`{g}` can never match a node label key: `{c}` never appears in one"),
                ));
            }
        }
        for (i, t) in self.gpu_taints.iter().enumerate() {
            t.validate(&format!("gpuTaints[{i}]"))?;
        }
        if let Some(c) = &self.cpu_training {
            label_key(&c.label)
                .map_err(|why| SettingsError::new("cpuTraining.label", format!("`{}` is not a valid label key: {why}", c.label)))?;
            name_part(&c.value)
                .map_err(|why| SettingsError::new("cpuTraining.value", format!("`{}` is not a valid label value: {why}", c.value)))?;
        }
        non_empty_patterns(&"visibleDevices.requireWithGpu", &self.visible_devices.require_with_gpu)?;
        for (i, g) in self.visible_devices.require_with_gpu.iter().enumerate() {
            if !g.as_str().contains(['*', '?']) && !self.gpu_resource_names.is_gpu(g.as_str()) {
                return Err(SettingsError::new(
                    format!("visibleDevices.requireWithGpu[{i}]"),
                    format!(
                        "`{g}` is not a GPU resource under `gpuResourceNames`, so no container would ever be asked: add it there, or remove it"
                    ),
                ));
            }
        }
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

impl Settings {
    /// Where the rule finds GPUs, as the SDK's `PodTemplate::gpu_use` reads it.
    pub fn gpu_sources<'s>(&'s self, classes: &'s [Glob]) -> aigov_sdk::cluster::gpu::GpuSources<'s> {
        aigov_sdk::cluster::gpu::GpuSources {
            resources: &self.gpu_resource_names,
            claims: self.resource_claims.lookup(classes),
            on_lookup_error: self.on_lookup_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults_are_the_seeds() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.required_node_selector.get("accelerator").map(String::as_str), Some("nvidia-gpu"));
        assert_eq!(s.cpu_training.as_ref().unwrap().value, "cpu-training");
        let s = accepted::<Settings>(r#"{"cpuTraining":null,"requiredNodeSelector":{}}"#);
        assert!(s.cpu_training.is_none() && s.required_node_selector.is_empty());
        let s = accepted::<Settings>(r#"{"cpuTraining":{"requireNodePreference":false}}"#);
        assert_eq!(s.cpu_training.unwrap().label, "workload-type", "partial entries keep the other defaults");
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert!(
            refused::<Settings>(r#"{"serviceAccounts":[{"namespaces":{},"allowed":["GPU_training"]}]}"#)
                .starts_with("setting `serviceAccounts[0].allowed[0]`: `GPU_training` can never match")
        );
        assert!(
            refused::<Settings>(r#"{"serviceAccounts":[{"namespaces":{},"allowed":[""]}]}"#)
                .starts_with("setting `serviceAccounts[0].allowed[0]`: must not be empty")
        );
        assert!(refused::<Settings>(r#"{"serviceAccounts":[{"allowed":["a"]}]}"#).contains("namespaces"));
        assert!(
            refused::<Settings>(r#"{"requiredNodeSelector":{"accelerator":""}}"#)
                .starts_with("setting `requiredNodeSelector.accelerator`: must not be empty")
        );
        assert!(refused::<Settings>(r#"{"requiredNodeSelector":{"a b":"x"}}"#).starts_with("setting `requiredNodeSelector`: `a b`"));
        assert!(refused::<Settings>(r#"{"gpuNodeLabels":["nvidia.com/gpu present"]}"#).starts_with("setting `gpuNodeLabels[0]`"));
        assert!(
            refused::<Settings>(r#"{"gpuTaints":[{"key":"nvidia.com/gpu","effect":"noschedule"}]}"#)
                .starts_with("setting `gpuTaints[0].effect`")
        );
        assert!(refused::<Settings>(r#"{"cpuTraining":{"value":"cpu training"}}"#).starts_with("setting `cpuTraining.value`"));
        assert!(refused::<Settings>(r#"{"cpuTraining":{"labels":"x"}}"#).contains("unknown setting"));
        assert!(
            refused::<Settings>(r#"{"visibleDevices":{"requireWithGpu":["example.com/fpga"]}}"#)
                .starts_with("setting `visibleDevices.requireWithGpu[0]`: `example.com/fpga` is not a GPU resource")
        );
        assert!(
            refused::<Settings>(r#"{"visibleDevices":{"requireWithGpu":[""]}}"#).starts_with("setting `visibleDevices.requireWithGpu[0]`")
        );
        assert!(refused::<Settings>(r#"{"visibleDevices":{"refuse":true}}"#).contains("unknown setting"));
        let s = accepted::<Settings>(r#"{"visibleDevices":{"refuseWithoutGpu":true}}"#);
        assert!(s.visible_devices.refuse_without_gpu && s.visible_devices.require_with_gpu.is_empty());
    }
}
