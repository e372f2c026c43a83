//! Settings of `gpu-node-avoidance`.

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::base::names::{label_key, label_value};
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// What the added node affinity requires of a node, ANDed into every
    /// required term. Default: `nvidia.com/gpu.present NotIn [true]`, the
    /// label NVIDIA's GPU feature discovery puts on GPU nodes.
    pub node_requirements: Vec<NodeRequirement>,
    /// Node labels that only GPU nodes carry (wildcards): a pod template
    /// whose node selection names one has chosen its nodes itself and is
    /// left alone.
    pub gpu_node_labels: Vec<Glob>,
    /// The annotation that says the platform added the affinity.
    pub annotation: String,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            node_requirements: vec![NodeRequirement {
                key: "nvidia.com/gpu.present".into(),
                operator: Operator::NotIn,
                values: vec!["true".into()],
            }],
            gpu_node_labels: [
                "nvidia.com/gpu.*",
                "nvidia.com/mig.*",
                "amd.com/gpu.*",
                "feature.node.kubernetes.io/pci-10de.present",
                "cloud.google.com/gke-accelerator",
                "karpenter.k8s.aws/instance-gpu-*",
                "accelerator",
            ]
            .into_iter()
            .map(Glob::new)
            .collect(),
            annotation: "aigov.dev/gpu-node-avoidance".into(),
            gpu_resource_names: GpuResources::default(),
        }
    }
}

/// A node selector requirement, as in a pod's node affinity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeRequirement {
    /// Node label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.
    pub operator: Operator,
    /// Values: one or more for `In` and `NotIn`, none for `Exists` and
    /// `DoesNotExist`, one integer for `Gt` and `Lt`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// A node selector operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "one of `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`")]
pub enum Operator {
    /// The label has one of the values.
    In,
    /// The label is absent or has none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is an integer greater than the value.
    Gt,
    /// The label is an integer less than the value.
    Lt,
}

impl Operator {
    /// The spelling Kubernetes uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

impl NodeRequirement {
    /// Whether a node whose label `key` has `value` (`None`: the node has
    /// no such label) meets the requirement, as the scheduler decides.
    pub fn allows(&self, value: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        let number = |v: &str| v.parse::<i64>().ok();
        let bound = self.values.first().and_then(|b| number(b));
        match (self.operator, value) {
            (Operator::In, v) => v.is_some_and(listed),
            (Operator::NotIn, v) => !v.is_some_and(listed),
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
            (Operator::Gt, Some(v)) => number(v).zip(bound).is_some_and(|(n, b)| n > b),
            (Operator::Lt, Some(v)) => number(v).zip(bound).is_some_and(|(n, b)| n < b),
            (Operator::Gt | Operator::Lt, None) => false,
        }
    }

    /// `nvidia.com/gpu.present NotIn [true]`.
    pub fn shown(&self) -> String {
        if self.values.is_empty() {
            format!("{} {}", self.key, self.operator.as_str())
        } else {
            format!("{} {} [{}]", self.key, self.operator.as_str(), self.values.join(", "))
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.node_requirements.is_empty() {
            return Err(SettingsError::new("nodeRequirements", "must list at least one requirement, or the rule would add nothing"));
        }
        for (i, r) in self.node_requirements.iter().enumerate() {
            let at = |field: &str| format!("nodeRequirements[{i}].{field}");
            if let Err(why) = label_key(&r.key) {
                return Err(SettingsError::new(at("key"), format!("`{}` is not a valid node label key: {why}", r.key)));
            }
            let n = r.values.len();
            match r.operator {
                Operator::In | Operator::NotIn if n == 0 => {
                    return Err(SettingsError::new(at("values"), format!("`{}` needs at least one value", r.operator.as_str())));
                }
                Operator::Exists | Operator::DoesNotExist if n > 0 => {
                    return Err(SettingsError::new(at("values"), format!("`{}` takes no values", r.operator.as_str())));
                }
                Operator::Gt | Operator::Lt if n != 1 || r.values.first().and_then(|v| v.parse::<i64>().ok()).is_none() => {
                    return Err(SettingsError::new(at("values"), format!("`{}` takes exactly one integer value", r.operator.as_str())));
                }
                _ => {}
            }
            for (j, v) in r.values.iter().enumerate() {
                if let Err(why) = label_value(v) {
                    return Err(SettingsError::new(
                        format!("nodeRequirements[{i}].values[{j}]"),
                        format!("`{v}` is not a valid label value: {why}"),
                    ));
                }
            }
        }
        // Two requirements on one key that no value meets together keep
        // every pod the rule edits from being scheduled anywhere.
        for (i, a) in self.node_requirements.iter().enumerate() {
            for b in self.node_requirements.iter().skip(i + 1).filter(|b| b.key == a.key) {
                // The values that could tell: those listed, the integers
                // next to them, a value listed nowhere, and no label.
                let mut candidates: Vec<Option<String>> = vec![None, Some(String::new())];
                for v in a.values.iter().chain(&b.values) {
                    candidates.push(Some(v.clone()));
                    if let Ok(n) = v.parse::<i64>() {
                        candidates.extend([n.saturating_sub(1), n.saturating_add(1)].map(|m| Some(m.to_string())));
                    }
                }
                if !candidates.iter().any(|v| a.allows(v.as_deref()) && b.allows(v.as_deref())) {
                    return Err(SettingsError::new(
                        "nodeRequirements",
                        format!("`{}` and `{}` contradict each other: no node can meet both", a.shown(), b.shown()),
                    ));
                }
            }
        }
        non_empty_patterns(&"gpuNodeLabels", &self.gpu_node_labels)?;
        if let Err(why) = label_key(&self.annotation) {
            return Err(SettingsError::new("annotation", format!("`{}` is not a valid annotation key: {why}", self.annotation)));
        }
        self.gpu_resource_names.validate("gpuResourceNames")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    fn req(op: Operator, values: &[&str]) -> NodeRequirement {
        NodeRequirement { key: "k".into(), operator: op, values: values.iter().map(|v| v.to_string()).collect() }
    }

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.node_requirements[0].shown(), "nvidia.com/gpu.present NotIn [true]");
        assert!(s.gpu_node_labels.iter().any(|g| g.matches("nvidia.com/gpu.product")));
    }

    #[test]
    fn requirements_match_as_the_scheduler_matches() {
        let not_gpu = req(Operator::NotIn, &["true"]);
        assert!(not_gpu.allows(None) && not_gpu.allows(Some("false")) && !not_gpu.allows(Some("true")));
        assert!(req(Operator::In, &["cpu"]).allows(Some("cpu")) && !req(Operator::In, &["cpu"]).allows(None));
        assert!(req(Operator::Exists, &[]).allows(Some("")) && !req(Operator::Exists, &[]).allows(None));
        assert!(req(Operator::DoesNotExist, &[]).allows(None));
        assert!(
            req(Operator::Lt, &["1"]).allows(Some("0"))
                && !req(Operator::Lt, &["1"]).allows(Some("x"))
                && !req(Operator::Lt, &["1"]).allows(None)
        );
        assert!(req(Operator::Gt, &["1"]).allows(Some("2")));
    }

    #[test]
    fn settings_that_can_never_work_are_refused() {
        assert!(refused::<Settings>(r#"{"nodeRequirements":[]}"#).starts_with("setting `nodeRequirements`: must list"));
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a","operator":"NotIn"}]}"#)
                .starts_with("setting `nodeRequirements[0].values`: `NotIn` needs")
        );
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a","operator":"Exists","values":["x"]}]}"#)
                .starts_with("setting `nodeRequirements[0].values`: `Exists` takes no")
        );
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a","operator":"Gt","values":["two"]}]}"#).contains("exactly one integer")
        );
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a b","operator":"Exists"}]}"#)
                .starts_with("setting `nodeRequirements[0].key`")
        );
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a","operator":"NotEqual","values":["x"]}]}"#)
                .contains("one of `In`, `NotIn`")
        );
        assert!(
            refused::<Settings>(
                r#"{"nodeRequirements":[{"key":"a","operator":"In","values":["x"]},{"key":"a","operator":"NotIn","values":["x"]}]}"#
            )
            .contains("contradict each other")
        );
        assert!(
            refused::<Settings>(r#"{"nodeRequirements":[{"key":"a","operator":"Exists"},{"key":"a","operator":"DoesNotExist"}]}"#)
                .contains("contradict")
        );
        assert!(
            Full::<Settings>::parse_valid(
                r#"{"nodeRequirements":[{"key":"a","operator":"Gt","values":["1"]},{"key":"a","operator":"Lt","values":["5"]}]}"#
            )
            .is_ok()
        );
        assert!(
            Full::<Settings>::parse_valid(
                r#"{"nodeRequirements":[{"key":"a","operator":"NotIn","values":["x"]},{"key":"a","operator":"NotIn","values":["y"]}]}"#
            )
            .is_ok()
        );
        assert!(refused::<Settings>(r#"{"annotation":"not valid/"}"#).starts_with("setting `annotation`"));
        assert!(refused::<Settings>(r#"{"gpuNodeLabels":[""]}"#).starts_with("setting `gpuNodeLabels"));
    }
}
