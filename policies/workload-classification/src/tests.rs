use super::*;

const CPU: &str = r#"{"team":"fraud","cost-center":"cc-42","workload-type":"data-processing","compute-type":"cpu"}"#;
const GPU: &str = r#"{"team":"fraud","cost-center":"cc-42","workload-type":"ml-training","compute-type":"gpu"}"#;

fn problems_with(kind: WorkloadKind, json: &str, s: &Settings) -> Vec<String> {
    let w = Workload::parse(kind, json).unwrap();
    check(&w, false, s, &offline())
        .unwrap()
        .into_iter()
        .filter_map(|f| match f {
            Finding::Violation(_, m) => Some(m),
            Finding::Warning(_) => None,
        })
        .collect()
}

/// No cluster: these tests' templates have no claims, so nothing is asked.
fn offline() -> Claims<'static, 'static> {
    Claims { request: None, cluster: &aigov_sdk::cluster::NoCluster }
}

fn problems(kind: WorkloadKind, json: &str) -> Vec<String> {
    problems_with(kind, json, &Settings::default())
}

fn deployment(labels: &str, tpl: &str, gpus: u32) -> String {
    format!(
        r#"{{"metadata":{{"name":"d","labels":{labels}}},"spec":{{"template":{{"metadata":{{"labels":{tpl}}},"spec":{{"containers":[{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":{gpus}}}}}}}]}}}}}}}}"#
    )
}

#[test]
fn classified_workloads_pass() {
    assert!(problems(WorkloadKind::Deployment, &deployment(CPU, CPU, 0)).is_empty());
    assert!(problems(WorkloadKind::Deployment, &deployment(GPU, GPU, 1)).is_empty());
}

#[test]
fn missing_labels_name_the_place_and_what_to_copy() {
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment(CPU, r#"{"app":"etl"}"#, 0)),
        ["labels `compute-type`, `cost-center`, `team`, `workload-type` are missing from `spec.template.metadata.labels`: \
          cost tools attribute cost by the labels of the pods, so copy `compute-type: cpu`, `cost-center: cc-42`, `team: fraud`, \
          `workload-type: data-processing` from `metadata.labels`"]
    );
    assert_eq!(
        problems(
            WorkloadKind::Pod,
            r#"{"metadata":{"labels":{"team":"fraud","cost-center":"cc-42","workload-type":"training","compute-type":"cpu"}},"spec":{}}"#
        ),
        [
            "label `workload-type` in `metadata.labels` is `training`; allowed: `jupyter-notebook`, `ml-training`, `cpu-training`, `data-processing`, `model-inference`, `report-generation`"
        ]
    );
}

#[test]
fn compute_type_must_agree_with_the_gpus() {
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment(CPU, CPU, 2)),
        [
            "label `compute-type` in `metadata.labels` is `cpu`, but container `c` in `spec.template` requests 2 `nvidia.com/gpu`: set it to `gpu` or `mixed`",
            "label `compute-type` in `spec.template.metadata.labels` is `cpu`, but container `c` in `spec.template` requests 2 `nvidia.com/gpu`: set it to `gpu` or `mixed`",
        ]
    );
    assert_eq!(
        problems(WorkloadKind::Deployment, &deployment(GPU, GPU, 0)),
        [
            "label `compute-type` in `metadata.labels` is `gpu`, but no pod of the Deployment requests GPUs: set it to `cpu`",
            "label `compute-type` in `spec.template.metadata.labels` is `gpu`, but no pod of the Deployment requests GPUs: set it to `cpu`",
        ]
    );
    assert_eq!(
        problems(
            WorkloadKind::Pod,
            r#"{"metadata":{"labels":{"team":"a","cost-center":"b","workload-type":"ml-training","compute-type":"mixed"}},"spec":{"containers":[{"name":"c"}]}}"#
        ),
        ["label `compute-type` in `metadata.labels` is `mixed`, but the Pod requests no GPUs: set it to `cpu`"]
    );
    let off = Settings { check_compute_type: false, ..Settings::default() };
    assert!(problems_with(WorkloadKind::Deployment, &deployment(GPU, GPU, 0), &off).is_empty());
}

#[test]
fn a_mixed_ray_cluster_may_label_each_group_as_it_is_or_as_the_cluster_is() {
    let group = |labels: &str, gpus: u32| {
        format!(
            r#"{{"groupName":"g{gpus}","template":{{"metadata":{{"labels":{labels}}},"spec":{{"containers":[{{"name":"ray-worker","resources":{{"limits":{{"nvidia.com/gpu":{gpus}}}}}}}]}}}}}}"#
        )
    };
    let mixed = CPU.replace("\"cpu\"", "\"mixed\"");
    let rc = |head: &str, cpu_group: &str, gpu_group: &str| {
        format!(
            r#"{{"metadata":{{"labels":{mixed}}},"spec":{{"headGroupSpec":{{"template":{{"metadata":{{"labels":{head}}},"spec":{{"containers":[{{"name":"ray-head"}}]}}}}}},"workerGroupSpecs":[{},{}]}}}}"#,
            group(cpu_group, 0),
            group(gpu_group, 1)
        )
    };
    assert!(problems(WorkloadKind::RayCluster, &rc(&mixed, &mixed, &mixed)).is_empty(), "the cluster's value on every pod");
    assert!(problems(WorkloadKind::RayCluster, &rc(CPU, CPU, GPU)).is_empty(), "each group's own value");
    assert_eq!(
        problems(WorkloadKind::RayCluster, &rc(CPU, CPU, CPU)),
        [
            "label `compute-type` in `spec.workerGroupSpecs[1].template.metadata.labels` is `cpu`, but container `ray-worker` in worker group `g1` requests 1 `nvidia.com/gpu`: set it to `gpu` or `mixed`"
        ]
    );
}

#[test]
fn resource_claims_may_bring_gpus() {
    let pod = r#"{"metadata":{"labels":{"team":"a","cost-center":"b","workload-type":"ml-training","compute-type":"gpu"}},"spec":{"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"}],"containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}]}}"#;
    assert!(problems(WorkloadKind::Pod, pod).is_empty());
}

#[test]
fn pod_templates_only_skips_the_controller_and_its_job_templates() {
    let s = Settings { pod_templates_only: true, ..Settings::default() };
    assert!(problems_with(WorkloadKind::Deployment, &deployment("{}", CPU, 0), &s).is_empty());
    let cron = format!(r#"{{"spec":{{"jobTemplate":{{"spec":{{"template":{{"metadata":{{"labels":{CPU}}},"spec":{{}}}}}}}}}}}}"#);
    assert!(problems_with(WorkloadKind::CronJob, &cron, &s).is_empty());
    assert_eq!(problems(WorkloadKind::CronJob, &cron).len(), 2, "the CronJob and its job template by default");
    assert_eq!(problems_with(WorkloadKind::Pod, r#"{"spec":{}}"#, &s).len(), 1, "a Pod's labels are its pod labels");
}

#[test]
fn malformed_gpu_quantities_are_refused() {
    let w = Workload::parse(
        WorkloadKind::Pod,
        r#"{"metadata":{"labels":{}},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"one"}}}]}}"#,
    )
    .unwrap();
    let e = check(&w, false, &Settings::default(), &offline()).unwrap_err();
    assert!(e.0.starts_with("`spec.containers[0].resources.limits[nvidia.com/gpu]`: `one` is not a valid quantity"), "{e}");
}

#[test]
fn metadata_governs_every_workload_kind() {
    let m = AIGOV_POLICY.metadata;
    for k in WorkloadKind::ALL {
        assert!(m.governs(k.group(), "v1", k.resource(), None, "CREATE"), "{k:?}");
    }
    assert!(!m.governs("", "v1", "pods", None, "DELETE"));
}
