use super::*;

/// (violations, warnings) of a workload.
fn run_with(kind: WorkloadKind, json: &str, s: &Settings) -> Result<(Vec<String>, Vec<String>), Malformed> {
    let w = Workload::parse(kind, json)?;
    let mut v = Verdict::accept();
    for t in w.templates() {
        check_template(t, s, &[], &|_| false, &mut v)?;
    }
    Ok((v.violations().to_vec(), v.warnings().to_vec()))
}

fn pod_with(containers: &str, s: &Settings) -> Vec<String> {
    run_with(WorkloadKind::Pod, &format!(r#"{{"spec":{{"containers":{containers}}}}}"#), s).unwrap().0
}

fn pod(containers: &str) -> Vec<String> {
    pod_with(containers, &Settings::default())
}

const LIMITS: &str = r#""limits":{"cpu":"4","memory":"16Gi"}"#;

#[test]
fn limits_set_pass_and_missing_ones_are_named_per_container() {
    assert!(pod(&format!(r#"[{{"name":"a","resources":{{{LIMITS}}}}}]"#)).is_empty());
    assert_eq!(
        pod(r#"[{"name":"a"},{"name":"b","resources":{"limits":{"cpu":"1"},"requests":{"memory":"1Gi"}}}]"#),
        [
            "container `a` has no `cpu` or `memory` limit: set `spec.containers[0].resources.limits.cpu` and `spec.containers[0].resources.limits.memory`",
            "container `b` has no `memory` limit: set `spec.containers[1].resources.limits.memory`",
        ]
    );
    let three = Settings { required_limits: vec!["cpu".into(), "memory".into(), "ephemeral-storage".into()], ..Settings::default() };
    assert_eq!(
        pod_with(r#"[{"name":"a"}]"#, &three),
        [
            "container `a` has no `cpu`, `memory` or `ephemeral-storage` limit: set `spec.containers[0].resources.limits.cpu`, `spec.containers[0].resources.limits.memory` and `spec.containers[0].resources.limits.ephemeral-storage`"
        ]
    );
    assert_eq!(
        pod(r#"[{"resources":{"limits":{"cpu":"1"}}}]"#),
        ["the container at `spec.containers[0]` has no `memory` limit: set `spec.containers[0].resources.limits.memory`"]
    );
}

#[test]
fn a_zero_limit_is_no_limit() {
    assert_eq!(
        pod(r#"[{"name":"a","resources":{"limits":{"cpu":"0","memory":"0Gi"}}}]"#),
        [
            "container `a` has `cpu` limit `0`, which Kubernetes treats as no limit at all: set `spec.containers[0].resources.limits.cpu` above zero",
            "container `a` has `memory` limit `0Gi`, which Kubernetes treats as no limit at all: set `spec.containers[0].resources.limits.memory` above zero",
        ]
    );
}

#[test]
fn init_and_sidecar_containers_count_ephemeral_ones_cannot() {
    let json = format!(
        r#"{{"spec":{{"containers":[{{"name":"main","resources":{{{LIMITS}}}}}],
        "initContainers":[{{"name":"fetch"}},{{"name":"proxy","restartPolicy":"Always"}}],
        "ephemeralContainers":[{{"name":"debug"}}]}}}}"#
    );
    let (found, _) = run_with(WorkloadKind::Pod, &json, &Settings::default()).unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("init container `fetch` has no `cpu` or `memory` limit: set `spec.initContainers[0].resources.limits.cpu`")
    );
    assert!(found[1].starts_with("sidecar container `proxy` has no"));
    let off = Settings { check_init_containers: false, ..Settings::default() };
    assert!(run_with(WorkloadKind::Pod, &json, &off).unwrap().0.is_empty());
}

#[test]
fn pod_level_limits_cover_cpu_and_memory() {
    let json = r#"{"spec":{"resources":{"limits":{"cpu":"8","memory":"32Gi"}},"containers":[{"name":"a"},{"name":"b","resources":{"limits":{"cpu":"1"}}}]}}"#;
    assert!(run_with(WorkloadKind::Pod, json, &Settings::default()).unwrap().0.is_empty());
    let json = r#"{"spec":{"resources":{"limits":{"cpu":"8"}},"containers":[{"name":"a"}]}}"#;
    assert_eq!(
        run_with(WorkloadKind::Pod, json, &Settings::default()).unwrap().0,
        ["container `a` has no `memory` limit: set `spec.containers[0].resources.limits.memory`"]
    );
    let storage = Settings { required_limits: vec!["ephemeral-storage".into()], ..Settings::default() };
    let json = r#"{"spec":{"resources":{"limits":{"ephemeral-storage":"8Gi"}},"containers":[{"name":"a"}]}}"#;
    assert_eq!(run_with(WorkloadKind::Pod, json, &storage).unwrap().0.len(), 1, "pod-level resources are CPU and memory only");
}

#[test]
fn gpu_requests_must_equal_limits() {
    let c = |res: &str| format!(r#"[{{"name":"t","resources":{{{res}}}}}]"#);
    assert!(pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":2}"#)).is_empty(), "a limit alone sets the request");
    assert!(pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"2"},"requests":{"nvidia.com/gpu":2}"#)).is_empty());
    assert_eq!(
        pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":4},"requests":{"nvidia.com/gpu":2}"#)),
        [
            "container `t` requests `2` `nvidia.com/gpu` but its limit is `4`: GPUs cannot be overcommitted, so Kubernetes requires the request to equal the limit; set `spec.containers[0].resources.requests[nvidia.com/gpu]` to `4`, or leave it out (it defaults to the limit)"
        ]
    );
    assert_eq!(
        pod(&c(r#""limits":{"cpu":"4","memory":"16Gi"},"requests":{"nvidia.com/gpu":1}"#)),
        [
            "container `t` requests `1` `nvidia.com/gpu` without a limit: GPUs cannot be overcommitted, so Kubernetes requires a limit equal to the request; set `spec.containers[0].resources.limits[nvidia.com/gpu]` to `1` (the request can then be left out)"
        ]
    );
    assert_eq!(
        pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"0.5"}"#)),
        [
            "container `t` asks for `0.5` `nvidia.com/gpu` in `spec.containers[0].resources.limits[nvidia.com/gpu]`: a GPU is a whole device, so use a whole number (a share of a GPU is a resource of its own, such as a MIG slice `nvidia.com/mig-1g.10gb`)"
        ]
    );
    assert!(pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1000m"}"#)).is_empty(), "1000m is 1");
    assert!(
        pod(&c(r#""limits":{"cpu":"4","memory":"16Gi","example.com/fpga":1},"requests":{"example.com/fpga":2}"#)).is_empty(),
        "only GPU resources"
    );
}

#[test]
fn malformed_quantities_name_the_field() {
    let e = run_with(
        WorkloadKind::Pod,
        r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"four","memory":"1Gi"}}}]}}"#,
        &Settings::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.0,
        "`spec.containers[0].resources.limits.cpu`: `four` is not a valid quantity (expected a number with an optional suffix, like `2`, `500m` or `4Gi`)"
    );
    let e = run_with(
        WorkloadKind::Pod,
        r#"{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"amd.com/gpu":"x"}}}]}}"#,
        &Settings::default(),
    )
    .unwrap_err();
    assert!(e.0.starts_with("`spec.containers[0].resources.requests[amd.com/gpu]`: `x`"), "{e}");
}

#[test]
fn gpu_pods_can_be_held_to_guaranteed_memory() {
    let s = Settings { gpu_memory_request_equals_limit: true, ..Settings::default() };
    let gpu = r#"{"name":"t","resources":{"limits":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":1},"requests":{"memory":"32Gi"}}}"#;
    let cpu_side = r#"{"name":"log","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"memory":"256Mi"}}}"#;
    assert_eq!(
        pod_with(&format!("[{gpu},{cpu_side}]"), &s),
        [
            "container `t` of a GPU pod requests `memory: 32Gi` but its limit is `64Gi`: set `spec.containers[0].resources.requests.memory` to `64Gi` (or leave it out), so that the node cannot overcommit the memory a GPU job needs",
            "container `log` of a GPU pod requests `memory: 256Mi` but its limit is `1Gi`: set `spec.containers[1].resources.requests.memory` to `1Gi` (or leave it out), so that the node cannot overcommit the memory a GPU job needs",
        ]
    );
    assert!(pod_with(&format!("[{cpu_side}]"), &s).is_empty(), "not a GPU pod");
    assert!(pod(&format!("[{gpu}]")).is_empty(), "off by default");
    let equal = r#"[{"name":"t","resources":{"limits":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":1},"requests":{"memory":"65536Mi"}}}]"#;
    assert!(pod_with(equal, &s).is_empty(), "64Gi is 65536Mi");
    let memory_not_required = Settings { required_limits: vec!["cpu".into()], ..s.clone() };
    assert_eq!(
        pod_with(r#"[{"name":"t","resources":{"limits":{"cpu":"8","nvidia.com/gpu":1}}}]"#, &memory_not_required),
        [
            "container `t` of a GPU pod has no `memory` limit: set `spec.containers[0].resources.limits.memory`, and leave the request out or equal to it, so that the node cannot overcommit the memory a GPU job needs"
        ]
    );
    assert_eq!(
        pod_with(
            r#"[{"name":"t","resources":{"limits":{"cpu":"8","nvidia.com/gpu":1},"requests":{"memory":"8Gi"}}}]"#,
            &memory_not_required
        ),
        [
            "container `t` of a GPU pod requests `memory: 8Gi` without a limit: set `spec.containers[0].resources.limits.memory` to `8Gi`, so that the node cannot overcommit the memory a GPU job needs"
        ]
    );
}

#[test]
fn gpu_caps_per_container_and_per_pod() {
    let s = Settings { max_gpus_per_container: Some(4), max_gpus_per_pod: Some(6), ..Settings::default() };
    let c = |name: &str, gpus: &str| format!(r#"{{"name":"{name}","resources":{{"limits":{{"cpu":"1","memory":"1Gi",{gpus}}}}}}}"#);
    assert!(pod_with(&format!("[{}]", c("a", r#""nvidia.com/gpu":4"#)), &s).is_empty());
    assert_eq!(
        pod_with(&format!("[{},{}]", c("a", r#""nvidia.com/gpu":5"#), c("b", r#""nvidia.com/gpu":2"#)), &s),
        [
            "container `a` requests 5 `nvidia.com/gpu`, but a container may have at most 4 GPUs: request fewer GPUs, or spread the work over more containers or pods",
            "the pod holds 7 `nvidia.com/gpu`, but a pod may hold at most 6 GPUs: request fewer GPUs, or spread the work over more pods",
        ]
    );
    // MIG slices weigh their share of a GPU; vendors are never summed.
    assert!(pod_with(&format!("[{}]", c("m", r#""nvidia.com/mig-1g.10gb":7,"amd.com/gpu":4"#)), &s).is_empty());
    assert_eq!(
        pod_with(&format!("[{}]", c("m", r#""nvidia.com/gpu":4,"nvidia.com/mig-3g.40gb":3"#)), &s),
        [
            "container `m` requests 4 `nvidia.com/gpu` + 3 `nvidia.com/mig-3g.40gb` (3/7 GPU each), 5.29 GPUs in all, but a container may have at most 4 GPUs: request fewer GPUs, or spread the work over more containers or pods",
        ]
    );
    // Init containers run one at a time, before the others: their GPUs are
    // not added to the pod's.
    let json = format!(
        r#"{{"spec":{{"initContainers":[{}],"containers":[{}]}}}}"#,
        c("warmup", r#""nvidia.com/gpu":4"#),
        c("serve", r#""nvidia.com/gpu":4"#)
    );
    assert!(run_with(WorkloadKind::Pod, &json, &s).unwrap().0.is_empty());
}

#[test]
fn controllers_name_the_template() {
    let s = Settings { max_gpus_per_pod: Some(4), ..Settings::default() };
    let rc = r#"{"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"head","resources":{"limits":{"cpu":"2","memory":"8Gi"}}}]}}},
        "workerGroupSpecs":[{"groupName":"gpu","maxReplicas":2,"template":{"spec":{"containers":[{"name":"w","resources":{"limits":{"cpu":"8","nvidia.com/gpu":8}}}]}}}]}}"#;
    let (found, _) = run_with(WorkloadKind::RayCluster, rc, &s).unwrap();
    assert_eq!(
        found,
        [
            "container `w` has no `memory` limit: set `spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.memory`",
            "each pod of worker group `gpu` (`spec.workerGroupSpecs[0].template`) holds 8 `nvidia.com/gpu`, but a pod may hold at most 4 GPUs: request fewer GPUs, or spread the work over more pods",
        ]
    );
    let d = r#"{"spec":{"template":{"spec":{"containers":[{"name":"w","resources":{"limits":{"cpu":"8","memory":"1Gi","nvidia.com/gpu":8}}}]}}}}"#;
    let (found, _) = run_with(WorkloadKind::Deployment, d, &s).unwrap();
    assert_eq!(
        found,
        [
            "each pod of `spec.template` holds 8 `nvidia.com/gpu`, but a pod may hold at most 4 GPUs: request fewer GPUs, or spread the work over more pods"
        ]
    );
}

#[test]
fn inference_service_model_containers_and_trainjob_trainers() {
    let isvc = r#"{"spec":{"predictor":{"model":{"modelFormat":{"name":"pytorch"},"storageUri":"s3://m","resources":{"limits":{"nvidia.com/gpu":1}}}}}}"#;
    let (found, _) = run_with(WorkloadKind::InferenceService, isvc, &Settings::default()).unwrap();
    assert_eq!(
        found,
        [
            "container `kserve-container` has no `cpu` or `memory` limit: set `spec.predictor.model.resources.limits.cpu` and `spec.predictor.model.resources.limits.memory`"
        ]
    );
    let tj = r#"{"spec":{"runtimeRef":{"name":"torch"},"trainer":{"resourcesPerNode":{"limits":{"nvidia.com/gpu":4},"requests":{"nvidia.com/gpu":2}}}}}"#;
    let (found, warned) = run_with(WorkloadKind::TrainJob, tj, &Settings::default()).unwrap();
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("container `trainer` requests `2` `nvidia.com/gpu` but its limit is `4`"), "{found:?}");
    assert!(found[0].contains("set `spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]` to `4`"));
    assert_eq!(
        warned,
        [
            "container `trainer` has no `cpu` or `memory` limit: set `spec.trainer.resourcesPerNode.limits.cpu` and `spec.trainer.resourcesPerNode.limits.memory`, unless the training runtime sets them (this rule does not see it)"
        ]
    );
}

#[test]
fn metadata_governs_every_workload_kind() {
    let m = AIGOV_POLICY.metadata;
    for k in WorkloadKind::ALL {
        assert!(m.governs(k.group(), "v1", k.resource(), None, "CREATE"), "{k:?}");
    }
    assert!(!m.governs("", "v1", "pods", None, "DELETE"));
    assert!(!m.governs("", "v1", "pods", Some("ephemeralcontainers"), "UPDATE"));
}
