//! Settings of `model-provenance`.

use std::collections::BTreeMap;

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::base::names::label_key;
use aigov_sdk::prelude::*;
use aigov_sdk::{AllowedValues, Exported, RequiredLabels};
use serde::{Deserialize, Serialize};

/// The label that classifies the data a workload touches.
pub const CLASSIFICATION_LABEL: &str = "data-classification";

/// The classifications allowed by default.
pub const CLASSIFICATIONS: [&str; 4] = ["public", "internal", "confidential", "restricted"];

/// The kinds governed by default: model serving (`InferenceService`, and
/// the `Deployment`s and `StatefulSet`s model servers run as) and the
/// training kinds (Kubeflow's training operator and Trainer).
pub const DEFAULT_KINDS: [&str; 10] =
    ["InferenceService", "Deployment", "StatefulSet", "PyTorchJob", "MPIJob", "TFJob", "JAXJob", "XGBoostJob", "PaddleJob", "TrainJob"];

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The workload kinds that must document their model, by kind name.
    /// Default: `InferenceService`, `Deployment`, `StatefulSet` and the
    /// training kinds. May also name `Pod`, `LeaderWorkerSet`,
    /// `RayService`, `RayJob` and `JobSet` (the other kinds the webhook
    /// rules send).
    pub kinds: Vec<String>,
    /// Annotations the workload's own `metadata.annotations` must carry,
    /// each with the wildcard patterns its value must match (`[]`: any
    /// non-empty value), or a regular expression (`{regex: ...}`). Default:
    /// the Kyverno example's `ai/version: v*` and `ai/dataset: *-vault`.
    pub required_annotations: BTreeMap<String, AllowedValues<Glob>>,
    /// Labels the workload (and, with `requireOnPodTemplates`, its pod
    /// templates) must carry, each with its allowed values (`[]`: any
    /// non-empty value). Default: `data-classification` in `public`,
    /// `internal`, `confidential`, `restricted`.
    pub required_labels: RequiredLabels,
    /// Whether the pod templates must carry the labels too, with the same
    /// value as the workload. Default `true`: network policies and data
    /// loss prevention tools select pods, not their controllers.
    pub require_on_pod_templates: bool,
    /// Annotations every pod of a governed workload must carry (its pod
    /// templates' `metadata.annotations`, a Pod's own), with values as in
    /// `requiredAnnotations`: controls that belong to each pod, such as
    /// audit logging. Default `{}`: none.
    pub required_pod_annotations: BTreeMap<String, AllowedValues<Glob>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            kinds: DEFAULT_KINDS.iter().map(|k| k.to_string()).collect(),
            required_annotations: [("ai/version", "v*"), ("ai/dataset", "*-vault")]
                .into_iter()
                .map(|(k, p)| (k.to_string(), AllowedValues::List(vec![Glob::new(p)])))
                .collect(),
            required_labels: RequiredLabels::new([(CLASSIFICATION_LABEL, &CLASSIFICATIONS[..])]),
            require_on_pod_templates: true,
            required_pod_annotations: BTreeMap::new(),
        }
    }
}

/// The kinds the rule's webhook rules send it, and so the kinds `kinds` may
/// name, in the SDK's order.
pub fn governable() -> impl Iterator<Item = WorkloadKind> {
    WorkloadKind::ALL.into_iter().filter(|k| is_governable(*k))
}

/// Whether the rule's webhook rules send it `kind`.
fn is_governable(kind: WorkloadKind) -> bool {
    <super::ModelProvenance as Exported>::METADATA.lists(kind.group(), kind.resource())
}

impl Settings {
    /// Whether workloads of `kind` are governed.
    pub fn governs(&self, kind: WorkloadKind) -> bool {
        self.kinds.iter().any(|k| k == kind.kind())
    }
}

/// Annotation keys Kubernetes accepts, each with patterns or an expression
/// that can be met.
fn annotation_requirements(key: &str, map: &BTreeMap<String, AllowedValues<Glob>>) -> Result<(), SettingsError> {
    for (name, values) in map {
        if let Err(why) = label_key(name) {
            return Err(SettingsError::new(key, format!("`{name}` is not a valid annotation key: {why}")));
        }
        match values {
            // An empty value is reported as empty, so an empty pattern
            // could never be met.
            AllowedValues::List(patterns) => non_empty_patterns(&format_args!("{key}.{name}"), patterns)?,
            AllowedValues::Regex(re) if re.as_str().is_empty() => {
                return Err(SettingsError::new(format!("{key}.{name}.regex"), "must not be empty; use `[]` to allow any non-empty value"));
            }
            AllowedValues::Regex(_) => {}
        }
    }
    Ok(())
}

impl RuleSettings for Settings {
    fn judges_kind(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }

    fn validate(&self) -> Result<(), SettingsError> {
        if self.kinds.is_empty() {
            return Err(SettingsError::new("kinds", "must list at least one kind, or the rule would check nothing"));
        }
        for (i, kind) in self.kinds.iter().enumerate() {
            if !WorkloadKind::ALL.into_iter().find(|k| k.kind() == kind).is_some_and(is_governable) {
                let known: Vec<&str> = governable().map(WorkloadKind::kind).collect();
                return Err(SettingsError::new(
                    format!("kinds[{i}]"),
                    format!("`{kind}` is not a kind this rule receives; use {}", aigov_sdk::base::text::quoted(&known)),
                ));
            }
        }
        if self.required_annotations.is_empty() && self.required_labels.0.is_empty() && self.required_pod_annotations.is_empty() {
            return Err(SettingsError::new(
                "requiredAnnotations",
                "and `requiredLabels` are both empty, so the rule would check nothing: require an annotation or a label, or set `requiredPodAnnotations`",
            ));
        }
        annotation_requirements("requiredAnnotations", &self.required_annotations)?;
        annotation_requirements("requiredPodAnnotations", &self.required_pod_annotations)?;
        self.required_labels.validate("requiredLabels")
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
        let json = Full::<Settings>::default().to_json();
        assert_eq!(json["requiredAnnotations"].to_string(), r#"{"ai/dataset":["*-vault"],"ai/version":["v*"]}"#);
        assert_eq!(json["requiredLabels"].to_string(), r#"{"data-classification":["public","internal","confidential","restricted"]}"#);
        assert_eq!(json["kinds"].as_array().unwrap().len(), 10);
        assert!(s.governs(WorkloadKind::InferenceService) && s.governs(WorkloadKind::TrainJob));
        assert!(!s.governs(WorkloadKind::Pod) && !s.governs(WorkloadKind::RayJob) && !s.governs(WorkloadKind::Job));
    }

    #[test]
    fn every_default_kind_and_the_optional_ones_are_governable() {
        let g: Vec<&str> = governable().map(WorkloadKind::kind).collect();
        for k in DEFAULT_KINDS.iter().chain(&["LeaderWorkerSet", "RayService", "RayJob", "JobSet"]) {
            assert!(g.contains(k), "{k}");
        }
        assert!(g.contains(&"Pod") && !g.contains(&"Job") && !g.contains(&"Notebook"));
        let s = ok(r#"{"kinds":["LeaderWorkerSet","RayService"]}"#);
        assert!(s.governs(WorkloadKind::LeaderWorkerSet) && !s.governs(WorkloadKind::Deployment));
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert!(
            refused::<Settings>(r#"{"kinds":["Deployment","Job"]}"#)
                .starts_with("setting `kinds[1]`: `Job` is not a kind this rule receives; use `Pod`, `Deployment`")
        );
        assert!(refused::<Settings>(r#"{"kinds":["deployment"]}"#).starts_with("setting `kinds[0]`: `deployment` is not a kind"));
        assert!(refused::<Settings>(r#"{"kinds":[]}"#).starts_with("setting `kinds`: must list at least one kind"));
        assert!(
            refused::<Settings>(r#"{"requiredAnnotations":{},"requiredLabels":{}}"#)
                .starts_with("setting `requiredAnnotations`: and `requiredLabels` are both empty")
        );
        assert!(ok(r#"{"requiredLabels":{}}"#).required_labels.0.is_empty(), "annotations alone");
        assert!(
            ok(r#"{"requiredLabels":{},"requiredAnnotations":{},"requiredPodAnnotations":{"ai/audit":["on"]}}"#)
                .governs(WorkloadKind::Deployment),
            "pod annotations alone"
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredPodAnnotations":{"ai/audit":{"regex":""}}}"#),
            "setting `requiredPodAnnotations.ai/audit.regex`: must not be empty; use `[]` to allow any non-empty value"
        );
        assert!(
            refused::<Settings>(r#"{"requiredAnnotations":{"ai/version":{"regex":"v(1"}}}"#)
                .starts_with("setting `requiredAnnotations.ai/version`: `v(1` is not a regular expression aigov reads: missing `)`")
        );
        assert!(
            refused::<Settings>(r#"{"requiredAnnotations":{"ai version":[]}}"#)
                .starts_with("setting `requiredAnnotations`: `ai version` is not a valid annotation key")
        );
        assert_eq!(
            refused::<Settings>(r#"{"requiredAnnotations":{"ai/version":["v*",""]}}"#),
            "setting `requiredAnnotations.ai/version[1]`: must not be empty"
        );
        assert!(
            refused::<Settings>(r#"{"requiredLabels":{"data-classification":["top secret"]}}"#)
                .starts_with("setting `requiredLabels.data-classification[0]`: `top secret` is not a valid label value")
        );
        assert!(
            refused::<Settings>(r#"{"requiredAnnotations":{"ai/version":"v*"}}"#)
                .starts_with("setting `requiredAnnotations.ai/version`: invalid type: string")
        );
        assert!(refused::<Settings>(r#"{"requiredAnnotation":{}}"#).starts_with("setting `requiredAnnotation`: unknown setting"));
    }
}
