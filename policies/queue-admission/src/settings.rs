//! Settings of `queue-admission`.

use std::collections::BTreeMap;

use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// Which queues the namespaces matching `namespaces` may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceQueues {
    /// Namespace names (wildcards allowed).
    pub namespaces: Vec<Glob>,
    /// Queue names (wildcards allowed).
    pub queues: Vec<Glob>,
}

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Namespaces whose jobs must name a queue (wildcards). Default every
    /// namespace (`*`); exempt others with `exemptNamespaces`.
    pub governed_namespaces: Vec<Glob>,
    /// The label Kueue reads. Default `kueue.x-k8s.io/queue-name`.
    pub queue_label: String,
    /// Only jobs that request GPUs must name a queue. Default `false`.
    pub gpu_jobs_only: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// The queues each namespace may use; the first entry whose
    /// `namespaces` match applies; none: any queue. Default `[]`.
    pub allowed_queues: Vec<NamespaceQueues>,
    /// The node label that names the GPU product. Default
    /// `nvidia.com/gpu.product`.
    pub gpu_product_label: String,
    /// The queues for each GPU product (label value): a job that targets
    /// the product must use one of them. Default `{}`.
    pub product_queues: BTreeMap<String, Vec<Glob>>,
    /// Volcano Jobs must name `spec.queue` (Volcano would otherwise put
    /// them in `default`). Default `true`.
    pub require_volcano_queue: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            governed_namespaces: vec![Glob::new("*")],
            queue_label: "kueue.x-k8s.io/queue-name".into(),
            gpu_jobs_only: false,
            gpu_resource_names: GpuResources::default(),
            allowed_queues: Vec::new(),
            gpu_product_label: "nvidia.com/gpu.product".into(),
            product_queues: BTreeMap::new(),
            require_volcano_queue: true,
        }
    }
}

fn queue_patterns(key: &str, list: &[Glob]) -> Result<(), SettingsError> {
    if list.is_empty() {
        return Err(SettingsError::new(key, "must list at least one queue; a namespace that may use no queue could run no job"));
    }
    for (i, g) in list.iter().enumerate() {
        let p = g.as_str();
        let literal = p.replace('*', "a");
        if p.is_empty() || aigov_sdk::base::names::label_value(&literal).is_err() {
            return Err(SettingsError::new(format!("{key}[{i}]"), format!("`{p}` can never match a queue name (a label value)")));
        }
    }
    Ok(())
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.governed_namespaces.is_empty() {
            return Err(SettingsError::new(
                "governedNamespaces",
                "must list at least one namespace pattern; to switch the rule off, do not deploy it",
            ));
        }
        for (key, label) in [("queueLabel", &self.queue_label), ("gpuProductLabel", &self.gpu_product_label)] {
            if aigov_sdk::base::names::label_key(label).is_err() {
                return Err(SettingsError::new(key, format!("`{label}` is not a valid label key")));
            }
        }
        self.gpu_resource_names.validate("gpuResourceNames")?;
        for (i, rule) in self.allowed_queues.iter().enumerate() {
            if rule.namespaces.is_empty() {
                return Err(SettingsError::new(format!("allowedQueues[{i}].namespaces"), "must list at least one namespace pattern"));
            }
            queue_patterns(&format!("allowedQueues[{i}].queues"), &rule.queues)?;
        }
        for (product, queues) in &self.product_queues {
            if aigov_sdk::base::names::label_value(product).is_err() || product.is_empty() {
                return Err(SettingsError::new(
                    format!("productQueues.{product}"),
                    format!("`{product}` is not a label value, so no node could carry it"),
                ));
            }
            queue_patterns(&format!("productQueues.{product}"), queues)?;
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
        let s = accepted::<Settings>(
            r#"{"allowedQueues":[{"namespaces":["team-*"],"queues":["team-*-queue"]}],"productQueues":{"NVIDIA-H100-80GB-HBM3":["h100"]}}"#,
        );
        assert_eq!(s.allowed_queues.len(), 1);
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        assert!(refused::<Settings>(r#"{"governedNamespaces":[]}"#).starts_with("setting `governedNamespaces`"));
        assert!(refused::<Settings>(r#"{"queueLabel":"bad label"}"#).starts_with("setting `queueLabel`"));
        assert!(
            refused::<Settings>(r#"{"allowedQueues":[{"namespaces":["a"],"queues":[]}]}"#)
                .starts_with("setting `allowedQueues[0].queues`: must list")
        );
        assert!(
            refused::<Settings>(r#"{"allowedQueues":[{"namespaces":[],"queues":["q"]}]}"#)
                .starts_with("setting `allowedQueues[0].namespaces`")
        );
        assert!(
            refused::<Settings>(r#"{"allowedQueues":[{"namespaces":["a"],"queues":["no such queue"]}]}"#)
                .starts_with("setting `allowedQueues[0].queues[0]`")
        );
        assert!(refused::<Settings>(r#"{"productQueues":{"H100":[]}}"#).starts_with("setting `productQueues.H100`"));
        assert!(refused::<Settings>(r#"{"allowedQueues":[{"namespaces":["a"],"queues":["q"],"extra":1}]}"#).contains("unknown"));
    }
}
