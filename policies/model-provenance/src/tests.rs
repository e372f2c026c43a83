use super::*;

const ANN: &str = r#"{"ai/version":"v2.1.0","ai/dataset":"support-tickets-vault"}"#;
const LABELS: &str = r#"{"data-classification":"confidential"}"#;

fn problems_with(kind: WorkloadKind, json: &str, s: &Settings) -> Vec<String> {
    problems_by(kind, json, false, s)
}

/// The problems with an object a trusted controller made (`by_controller`),
/// or its author.
fn problems_by(kind: WorkloadKind, json: &str, by_controller: bool, s: &Settings) -> Vec<String> {
    let w = Workload::parse(kind, json).unwrap();
    check(&w, by_controller, s).into_iter().map(|(_, m)| m).collect()
}

fn problems(kind: WorkloadKind, json: &str) -> Vec<String> {
    problems_with(kind, json, &Settings::default())
}

fn deployment(ann: &str, labels: &str, tpl_ann: &str, tpl_labels: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"d","annotations":{ann},"labels":{labels}}},"spec":{{"template":{{"metadata":{{"annotations":{tpl_ann},"labels":{tpl_labels}}},"spec":{{"containers":[{{"name":"c"}}]}}}}}}}}"#
    )
}

#[test]
fn documented_workloads_pass() {
    assert!(problems(WorkloadKind::Deployment, &deployment(ANN, LABELS, "{}", LABELS)).is_empty());
}

#[test]
fn missing_annotations_are_one_message_with_their_patterns() {
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment("null", LABELS, "{}", LABELS)),
        [
            "annotations `ai/dataset`, `ai/version` are missing from `metadata.annotations`: add `ai/dataset` with a value matching `*-vault` and `ai/version` with a value matching `v*`"
        ]
    );
    let s = Settings {
        required_annotations: [("example.com/model-card".to_string(), AllowedValues::List(vec![]))].into_iter().collect(),
        ..Settings::default()
    };
    assert_eq!(
        problems_with(WorkloadKind::Deployment, &deployment("{}", LABELS, "{}", LABELS), &s),
        ["annotation `example.com/model-card` is missing from `metadata.annotations`: add `example.com/model-card` with a value"]
    );
}

#[test]
fn annotations_on_the_pods_only_get_a_hint() {
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment("{}", LABELS, ANN, LABELS)),
        [
            "annotations `ai/dataset`, `ai/version` are missing from `metadata.annotations`: add `ai/dataset` with a value matching `*-vault` and `ai/version` with a value matching `v*` \
          (`spec.template.metadata.annotations` has `ai/dataset`, `ai/version`: provenance is read from the workload's own `metadata.annotations`, so copy them there)"
        ]
    );
    let one = r#"{"ai/version":"v2.1.0"}"#;
    let found = problems(WorkloadKind::Deployment, &deployment(r#"{"ai/dataset":"x-vault"}"#, LABELS, one, LABELS));
    assert!(found[0].ends_with("(`spec.template.metadata.annotations` has `ai/version`: provenance is read from the workload's own `metadata.annotations`, so copy it there)"), "{found:?}");
}

#[test]
fn values_must_match_a_pattern() {
    let bad = r#"{"ai/version":"2.1.0","ai/dataset":" "}"#;
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment(bad, LABELS, "{}", LABELS)),
        [
            "annotation `ai/dataset` in `metadata.annotations` is empty: set a value matching `*-vault`",
            "annotation `ai/version` in `metadata.annotations` is `2.1.0`, which does not match `v*`: set a value matching `v*`",
        ]
    );
    let s = Settings {
        required_annotations: [("ai/version".to_string(), AllowedValues::List(vec![Glob::new("v*"), Glob::new("release-*")]))]
            .into_iter()
            .collect(),
        ..Settings::default()
    };
    let found = problems_with(WorkloadKind::Deployment, &deployment(r#"{"ai/version":"2"}"#, LABELS, "{}", LABELS), &s);
    assert_eq!(
        found,
        [
            "annotation `ai/version` in `metadata.annotations` is `2`, which does not match any of `v*`, `release-*`: set a value matching any of `v*`, `release-*`"
        ]
    );
    assert!(problems_with(WorkloadKind::Deployment, &deployment(r#"{"ai/version":"release-7"}"#, LABELS, "{}", LABELS), &s).is_empty());
}

#[test]
fn classification_on_the_workload_and_its_pods() {
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment(ANN, LABELS, "{}", "{}")),
        [
            "label `data-classification` is missing from `spec.template.metadata.labels` (allowed: `public`, `internal`, `confidential`, `restricted`): \
          network policies and data tools select pods by their labels, so copy `data-classification: confidential` from `metadata.labels`"
        ]
    );
    assert_eq!(
        problems(
            WorkloadKind::Deployment,
            &deployment(ANN, r#"{"data-classification":"secret"}"#, "{}", r#"{"data-classification":"public"}"#)
        ),
        ["label `data-classification` in `metadata.labels` is `secret`; allowed: `public`, `internal`, `confidential`, `restricted`"]
    );
    assert_eq!(
        problems(
            WorkloadKind::Deployment,
            &deployment(ANN, r#"{"data-classification":"restricted"}"#, "{}", r#"{"data-classification":"public"}"#)
        ),
        [
            "label `data-classification` in `spec.template.metadata.labels` is `public`, but the workload's `metadata.labels` says `restricted`: set it to `restricted` here too, or classify the workload as `public`"
        ]
    );
    let s = Settings { require_on_pod_templates: false, ..Settings::default() };
    assert!(problems_with(WorkloadKind::Deployment, &deployment(ANN, LABELS, "{}", "{}"), &s).is_empty());
}

#[test]
fn kubeflow_jobs_check_every_replica_template_and_trainjobs_the_top() {
    let t = |labels: &str| {
        format!(r#"{{"replicas":1,"template":{{"metadata":{{"labels":{labels}}},"spec":{{"containers":[{{"name":"pytorch"}}]}}}}}}"#)
    };
    let job = format!(
        r#"{{"metadata":{{"annotations":{ANN},"labels":{LABELS}}},"spec":{{"pytorchReplicaSpecs":{{"Master":{},"Worker":{}}}}}}}"#,
        t(LABELS),
        t("{}")
    );
    let found = problems(WorkloadKind::PyTorchJob, &job);
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("label `data-classification` is missing from `spec.pytorchReplicaSpecs.Worker.template.metadata.labels`"));
    let tj = r#"{"metadata":{"name":"sft"},"spec":{"runtimeRef":{"name":"torch"},"trainer":{"numNodes":2}}}"#;
    assert_eq!(
        problems(WorkloadKind::TrainJob, tj),
        [
            "annotations `ai/dataset`, `ai/version` are missing from `metadata.annotations`: add `ai/dataset` with a value matching `*-vault` and `ai/version` with a value matching `v*`",
            "label `data-classification` is missing from `metadata.labels` (allowed: `public`, `internal`, `confidential`, `restricted`)",
        ]
    );
}

#[test]
fn inference_services_lend_their_labels_to_the_components() {
    // KServe gives every component's pods the InferenceService's labels,
    // the component's own `labels` over them.
    let isvc = format!(
        r#"{{"metadata":{{"annotations":{ANN},"labels":{LABELS}}},"spec":{{"predictor":{{"model":{{"modelFormat":{{"name":"sklearn"}},"storageUri":"gs://m"}}}}}}}}"#
    );
    assert_eq!(problems(WorkloadKind::InferenceService, &isvc), Vec::<String>::new());
    let contradicting = format!(
        r#"{{"metadata":{{"annotations":{ANN},"labels":{LABELS}}},"spec":{{"predictor":{{"labels":{{"data-classification":"public"}},"model":{{"modelFormat":{{"name":"sklearn"}},"storageUri":"gs://m"}}}}}}}}"#
    );
    let found = problems(WorkloadKind::InferenceService, &contradicting);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("label `data-classification` in `spec.predictor.labels` is `public`, but `metadata.labels` has `"),
        "{found:?}"
    );
    let unlabelled = format!(
        r#"{{"metadata":{{"annotations":{ANN}}},"spec":{{"predictor":{{"labels":{LABELS},"model":{{"modelFormat":{{"name":"sklearn"}},"storageUri":"gs://m"}}}}}}}}"#
    );
    let found = problems(WorkloadKind::InferenceService, &unlabelled);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("label `data-classification` is missing from `metadata.labels`"), "{found:?}");
}

#[test]
fn metadata_lists_what_settings_may_name() {
    let m = AIGOV_POLICY.metadata;
    for k in DEFAULT_KINDS {
        let kind = WorkloadKind::ALL.into_iter().find(|w| w.kind() == k).unwrap();
        assert!(m.governs(kind.group(), "v1", kind.resource(), None, "CREATE"), "{k}");
    }
    // Pods are sent for `kinds: [Pod]` (`requiredPodAnnotations`), and
    // admitted unread by default: pods carry their controller's provenance.
    assert!(m.governs("", "v1", "pods", None, "CREATE") && !Settings::default().governs(WorkloadKind::Pod));
    assert!(!m.governs("batch", "v1", "jobs", None, "CREATE"));
    assert!(!m.governs("apps", "v1", "deployments", None, "DELETE"));
}

fn pod_settings() -> Settings {
    aigov_sdk::testing::settings::accepted::<Settings>(
        r#"{"requiredPodAnnotations":{"ai-controls/audit-logging":["enabled"],"example.com/runbook":{"regex":"^https://"}},"kinds":["Pod","Deployment","InferenceService","TrainJob"]}"#,
    )
}

#[test]
fn pod_annotations_are_read_where_the_pods_get_them() {
    let s = pod_settings();
    let pods = r#"{"ai-controls/audit-logging":"enabled","example.com/runbook":"https://runbooks.example.com/rag"}"#;
    assert!(problems_with(WorkloadKind::Deployment, &deployment(ANN, LABELS, pods, LABELS), &s).is_empty());
    // On the Deployment only: its annotations never reach its pods.
    assert_eq!(
        problems_with(
            WorkloadKind::Deployment,
            &deployment(
                r#"{"ai/version":"v1","ai/dataset":"a-vault","ai-controls/audit-logging":"enabled"}"#,
                LABELS,
                r#"{"example.com/runbook":"http://wiki/rag"}"#,
                LABELS
            ),
            &s
        ),
        [
            "annotation `ai-controls/audit-logging` is missing from `spec.template.metadata.annotations`: add `ai-controls/audit-logging` with a value matching `enabled` \
             (`metadata.annotations` has `ai-controls/audit-logging`, but the workload's own annotations do not reach its pods: copy it to `spec.template.metadata.annotations`)",
            "annotation `example.com/runbook` in `spec.template.metadata.annotations` is `http://wiki/rag`, which does not match the regular expression `^https://`: \
             set a value matching the regular expression `^https://`",
        ]
    );
}

#[test]
fn pods_in_kinds_are_checked_and_a_controllers_pod_only_for_what_pods_carry() {
    let s = pod_settings();
    let pod = |meta: &str| format!(r#"{{"metadata":{meta},"spec":{{"containers":[{{"name":"c"}}]}}}}"#);
    let bare = pod(&format!(r#"{{"name":"p","labels":{LABELS},"annotations":{ANN}}}"#));
    assert_eq!(
        problems_with(WorkloadKind::Pod, &bare, &s),
        [
            "annotations `ai-controls/audit-logging`, `example.com/runbook` are missing from `metadata.annotations`: add `ai-controls/audit-logging` with a value matching `enabled` \
          and `example.com/runbook` with a value matching the regular expression `^https://`"
        ]
    );
    // A ReplicaSet's pod, created by the ReplicaSet controller: the
    // Deployment's provenance is not asked of it, the pod annotations are.
    let owned = pod(&format!(
        r#"{{"name":"p","labels":{LABELS},"annotations":{{"ai-controls/audit-logging":"off","example.com/runbook":"https://x"}},
            "ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u","controller":true}}]}}"#
    ));
    assert_eq!(
        problems_by(WorkloadKind::Pod, &owned, true, &s),
        [
            "annotation `ai-controls/audit-logging` in `metadata.annotations` is `off`, which does not match `enabled`: set a value matching `enabled`"
        ]
    );
}

#[test]
fn inference_service_pods_get_the_services_annotations_and_trainers_are_not_read() {
    let s = pod_settings();
    let isvc = r#"{"metadata":{"name":"m","labels":{"data-classification":"internal"},
        "annotations":{"ai/version":"v3","ai/dataset":"faq-vault","ai-controls/audit-logging":"enabled"}},
        "spec":{"predictor":{"annotations":{"example.com/runbook":"https://r"},"model":{"storageUri":"s3://m/x"}},
                "transformer":{"containers":[{"name":"t"}]}}}"#;
    assert_eq!(
        problems_with(WorkloadKind::InferenceService, isvc, &s),
        [
            "annotation `example.com/runbook` is missing from `spec.transformer.annotations`: add `example.com/runbook` with a value matching the regular expression `^https://`"
        ]
    );
    let tj = r#"{"metadata":{"name":"j","labels":{"data-classification":"internal"},"annotations":{"ai/version":"v3","ai/dataset":"faq-vault"}},
        "spec":{"trainer":{"image":"x"}}}"#;
    assert!(problems_with(WorkloadKind::TrainJob, tj, &s).is_empty());
}
