//! `opencost-labels`: every workload, and every pod template inside it,
//! carries the labels OpenCost attributes cost by: `opencost.io/team` (any
//! non-empty value) and `opencost.io/workload-category` (`training`,
//! `inference`, `development` or `data-processing`).
//!
//! OpenCost reads the labels of the pods, not of their controllers: a
//! Deployment labelled at the top but not in `spec.template` runs unlabelled
//! pods, whose cost lands in `__unallocated__`. So the rule checks the
//! object's own `metadata.labels` and, for kinds that own pod templates, each
//! template's. CronJobs and JobSets also hold job templates whose labels become
//! the labels of the Jobs they create; those Jobs are workloads this rule
//! checks too, so their templates are checked when the CronJob or JobSet is
//! submitted rather than failing later, when the controller creates the Jobs.

mod settings;

use aigov_sdk::LabelScope;
use aigov_sdk::prelude::*;

pub use settings::{CATEGORY_LABEL, Settings, TEAM_LABEL};

/// The rule.
pub struct OpencostLabels;

impl Policy for OpencostLabels {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // DELETE and CONNECT carry no workload; subresources and objects
        // being deleted never reach the rule (the SDK admits them).
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        for (key, message) in check(workload, req.controller().is_some(), settings) {
            verdict.violation_keyed(key, message);
        }
        Ok(verdict)
    }
}

/// Why pod labels matter to this rule, for the hint on a template missing
/// labels the object has.
const PODS_WHY: &str = "OpenCost attributes cost by the labels of the pods";

/// Every problem, in document order: what it is (for telling whether an
/// UPDATE's old object had it), and the message with its hint. The label
/// sets (the object, CronJob and JobSet job templates, pod templates) and
/// the copy hints are the SDK's, shared with `workload-classification`.
fn check(workload: &Workload<'_>, by_controller: bool, settings: &Settings) -> Vec<(String, String)> {
    let scope = LabelScope { object: !settings.pod_templates_only, pod_templates: settings.require_on_pod_templates };
    settings.required_labels.check_workload(workload, scope, by_controller, PODS_WHY)
}

aigov_sdk::export_policy!(OpencostLabels);

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::NoCluster;

    const LABELS: &str = r#"{"opencost.io/team":"ml-platform","opencost.io/workload-category":"training"}"#;

    fn request(api_version: &str, kind: &str, op: &str, extra: &str, object: &str) -> String {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        format!(
            r#"{{"uid":"u","kind":{{"group":"{group}","version":"{version}","kind":"{kind}"}},"operation":"{op}"{extra},"object":{object}}}"#
        )
    }

    /// Evaluates through the SDK's entry point, as every host does.
    fn eval_with(json: &str, settings: &Settings) -> Result<Vec<String>, Malformed> {
        let settings = serde_json::to_string(settings).unwrap();
        let r = (AIGOV_POLICY.validate_request)(json, &settings, &NoCluster);
        match (r.accepted, r.code) {
            (_, Some(400)) => Err(Malformed(r.message.unwrap_or_default())),
            _ => Ok(r.violations().into_iter().map(str::to_string).collect()),
        }
    }

    fn eval(api_version: &str, kind: &str, object: &str) -> Vec<String> {
        eval_with(&request(api_version, kind, "CREATE", "", object), &Settings::default()).unwrap()
    }

    fn deployment(labels: &str, template_labels: &str) -> String {
        format!(
            r#"{{"metadata":{{"name":"d","labels":{labels}}},"spec":{{"template":{{"metadata":{{"labels":{template_labels}}},"spec":{{"containers":[{{"name":"c"}}]}}}}}}}}"#
        )
    }

    #[test]
    fn labelled_pod_is_admitted_and_an_unlabelled_one_is_told_both_labels() {
        let pod = |labels: &str| format!(r#"{{"metadata":{{"name":"p","labels":{labels}}},"spec":{{"containers":[]}}}}"#);
        assert!(eval("v1", "Pod", &pod(LABELS)).is_empty());
        assert_eq!(
            eval("v1", "Pod", &pod("null")),
            [
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`)"
            ]
        );
    }

    #[test]
    fn empty_team_and_disallowed_category() {
        let pod = r#"{"metadata":{"labels":{"opencost.io/team":"","opencost.io/workload-category":"batch"}},"spec":{}}"#;
        assert_eq!(
            eval("v1", "Pod", pod),
            [
                "label `opencost.io/team` in `metadata.labels` is empty",
                "label `opencost.io/workload-category` in `metadata.labels` is `batch`; allowed: `training`, `inference`, `development`, `data-processing`",
            ]
        );
    }

    #[test]
    fn labels_on_the_deployment_only_get_a_precise_hint() {
        assert!(eval("apps/v1", "Deployment", &deployment(LABELS, LABELS)).is_empty());
        assert_eq!(
            eval("apps/v1", "Deployment", &deployment(LABELS, r#"{"app":"x"}"#)),
            ["labels `opencost.io/team`, `opencost.io/workload-category` are missing from `spec.template.metadata.labels`: \
              OpenCost attributes cost by the labels of the pods, so copy `opencost.io/team: ml-platform`, \
              `opencost.io/workload-category: training` from `metadata.labels`"]
        );
    }

    #[test]
    fn the_hint_lists_only_what_the_object_has_right() {
        let own = r#"{"opencost.io/team":"ml","opencost.io/workload-category":"batch"}"#;
        assert_eq!(
            eval("apps/v1", "Deployment", &deployment(own, "{}")),
            [
                "label `opencost.io/workload-category` in `metadata.labels` is `batch`; allowed: `training`, `inference`, `development`, `data-processing`",
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `spec.template.metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`): \
                 OpenCost attributes cost by the labels of the pods, so copy `opencost.io/team: ml` from `metadata.labels`",
            ]
        );
        // Nothing to copy from: no hint.
        assert_eq!(
            eval("apps/v1", "Deployment", &deployment("{}", "{}")),
            [
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`)",
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `spec.template.metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`)",
            ]
        );
        // A template whose values are wrong (not missing) gets the plain message.
        let wrong = r#"{"opencost.io/team":"ml","opencost.io/workload-category":"batch"}"#;
        assert_eq!(
            eval("apps/v1", "Deployment", &deployment(LABELS, wrong)),
            [
                "label `opencost.io/workload-category` in `spec.template.metadata.labels` is `batch`; allowed: `training`, `inference`, `development`, `data-processing`"
            ]
        );
    }

    #[test]
    fn missing_labels_come_first_from_the_sdk() {
        // `copy_hint` relies on it: the hint goes on the first message.
        let labels: aigov_sdk::Labels<'_> = [(aigov_sdk::Str::from(CATEGORY_LABEL), aigov_sdk::Str::from("batch"))].into_iter().collect();
        let found = Settings::default().required_labels.check(&labels, "x");
        assert!(found.first().unwrap().starts_with("label `opencost.io/team` is missing"), "{found:?}");
    }

    #[test]
    fn pod_templates_are_optional_by_setting() {
        let settings = Settings { require_on_pod_templates: false, ..Settings::default() };
        let json = request("apps/v1", "Deployment", "CREATE", "", &deployment(LABELS, "{}"));
        assert!(eval_with(&json, &settings).unwrap().is_empty());
        let json = request("apps/v1", "Deployment", "CREATE", "", &deployment("{}", LABELS));
        assert_eq!(
            eval_with(&json, &settings).unwrap(),
            [
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`)"
            ]
        );
    }

    #[test]
    fn cronjob_job_template_then_pod_template() {
        let cron = format!(
            r#"{{"metadata":{{"labels":{LABELS}}},"spec":{{"schedule":"0 2 * * *","jobTemplate":{{"metadata":{{}},"spec":{{"template":{{"spec":{{"containers":[]}}}}}}}}}}}}"#
        );
        assert_eq!(
            eval("batch/v1", "CronJob", &cron),
            [
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `spec.jobTemplate.metadata.labels`: \
                 the Jobs created from this template get their labels from it, so copy `opencost.io/team: ml-platform`, \
                 `opencost.io/workload-category: training` from `metadata.labels`",
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `spec.jobTemplate.spec.template.metadata.labels`: \
                 OpenCost attributes cost by the labels of the pods, so copy `opencost.io/team: ml-platform`, \
                 `opencost.io/workload-category: training` from `metadata.labels`",
            ]
        );
        // Job templates are checked even when pod templates are not: they
        // are the Jobs' own labels.
        let settings = Settings { require_on_pod_templates: false, ..Settings::default() };
        let found = eval_with(&request("batch/v1", "CronJob", "CREATE", "", &cron), &settings).unwrap();
        assert_eq!(found.len(), 1);
        assert!(found.first().unwrap().contains("`spec.jobTemplate.metadata.labels`"));
    }

    #[test]
    fn jobset_locations_are_in_document_order() {
        let rj = |labels: &str| {
            format!(
                r#"{{"name":"w","template":{{"metadata":{{"labels":{labels}}},"spec":{{"template":{{"metadata":{{"labels":{labels}}},"spec":{{}}}}}}}}}}"#
            )
        };
        let js = format!(
            r#"{{"metadata":{{"labels":{LABELS}}},"spec":{{"replicatedJobs":[{},{},{}]}}}}"#,
            rj("{}"),
            rj(LABELS),
            rj(r#"{"opencost.io/team":"ml"}"#)
        );
        let found = eval("jobset.x-k8s.io/v1alpha2", "JobSet", &js);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].contains("from `spec.replicatedJobs[0].template.metadata.labels`: the Jobs"));
        assert!(found[1].contains("from `spec.replicatedJobs[0].template.spec.template.metadata.labels`: OpenCost"));
        assert!(found[2].contains("from `spec.replicatedJobs[2].template.metadata.labels`"));
        assert!(found[3].contains("from `spec.replicatedJobs[2].template.spec.template.metadata.labels`"));
        assert!(found[3].ends_with("so copy `opencost.io/workload-category: training` from `metadata.labels`"));
    }

    #[test]
    fn raycluster_head_and_workers() {
        let t = |labels: &str| format!(r#"{{"metadata":{{"labels":{labels}}},"spec":{{"containers":[]}}}}"#);
        let rc = format!(
            r#"{{"metadata":{{"labels":{LABELS}}},"spec":{{"headGroupSpec":{{"template":{}}},"workerGroupSpecs":[{{"groupName":"cpu","template":{}}},{{"groupName":"gpu","template":{}}}]}}}}"#,
            t(LABELS),
            t("{}"),
            t(LABELS)
        );
        let found = eval("ray.io/v1", "RayCluster", &rc);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("are missing from `spec.workerGroupSpecs[0].template.metadata.labels`: OpenCost"));
    }

    #[test]
    fn trainjob_is_checked_at_the_top_only() {
        let tj = r#"{"metadata":{"name":"sft"},"spec":{"runtimeRef":{"name":"torch"},"trainer":{"resourcesPerNode":{"limits":{"nvidia.com/gpu":4}}}}}"#;
        assert_eq!(
            eval("trainer.kubeflow.org/v1alpha1", "TrainJob", tj),
            [
                "labels `opencost.io/team`, `opencost.io/workload-category` are missing from `metadata.labels` (allowed: `opencost.io/team`: any value; `opencost.io/workload-category`: `training`, `inference`, `development`, `data-processing`)"
            ]
        );
    }

    #[test]
    fn ungoverned_requests_are_admitted() {
        let s = Settings::default();
        let pod = r#"{"metadata":{"name":"p"},"spec":{}}"#;
        for (op, extra) in [("DELETE", ""), ("UPDATE", r#","subResource":"status""#)] {
            assert!(eval_with(&request("v1", "Pod", op, extra, pod), &s).unwrap().is_empty(), "{op}");
        }
        let delete = r#"{"uid":"u","kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"DELETE","object":null}"#;
        assert!(eval_with(delete, &s).unwrap().is_empty());
        let exec = request("v1", "PodExecOptions", "CONNECT", r#","subResource":"exec""#, r#"{"command":["sh"]}"#);
        assert!(eval_with(&exec, &s).unwrap().is_empty());
        assert!(eval("v1", "ConfigMap", r#"{"metadata":{"name":"c"},"data":{"spec":"x"}}"#).is_empty());
    }

    #[test]
    fn updates_are_checked_unless_the_object_is_being_deleted() {
        let s = Settings::default();
        let live = r#"{"metadata":{"name":"p","finalizers":["x"]},"spec":{}}"#;
        assert_eq!(eval_with(&request("v1", "Pod", "UPDATE", "", live), &s).unwrap().len(), 1);
        let dying = r#"{"metadata":{"name":"p","deletionTimestamp":"2025-01-01T00:00:00Z","finalizers":["x"]},"spec":{}}"#;
        assert!(eval_with(&request("v1", "Pod", "UPDATE", "", dying), &s).unwrap().is_empty());
        assert_eq!(eval_with(&request("v1", "Pod", "CREATE", "", dying), &s).unwrap().len(), 1, "only updates");
    }

    #[test]
    fn malformed_labels_are_refused_naming_the_field() {
        let s = Settings::default();
        let pod = r#"{"metadata":{"labels":{"opencost.io/team":42}},"spec":{}}"#;
        let e = eval_with(&request("v1", "Pod", "CREATE", "", pod), &s).unwrap_err();
        assert_eq!(e.0, "the Pod is malformed: `metadata.labels.opencost.io/team`: invalid type: integer `42`, expected a string");
        let cron = r#"{"spec":{"jobTemplate":{"metadata":{"labels":["team"]},"spec":{}}}}"#;
        let e = eval_with(&request("batch/v1", "CronJob", "CREATE", "", cron), &s).unwrap_err();
        assert!(e.0.starts_with("the CronJob is malformed: `spec.jobTemplate.metadata.labels`: invalid type: list"), "{e}");
    }

    #[test]
    fn metadata_governs_every_workload_kind() {
        let m = AIGOV_POLICY.metadata;
        for k in aigov_sdk::WorkloadKind::ALL {
            for op in ["CREATE", "UPDATE"] {
                assert!(m.governs(k.group(), "v1", k.resource(), None, op), "{k:?} {op}");
            }
        }
        assert!(!m.governs("", "v1", "pods", None, "DELETE"));
        assert_eq!(m.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(m.annotation("io.kubewarden.policy.version"), Some(env!("CARGO_PKG_VERSION")));
    }
}
