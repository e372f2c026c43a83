#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use super::*;
use aigov_sdk::NoCluster;

const LABELS: &str = r#"{"team":"ml","cost-center":"cc-1","workload-type":"training","compute-type":"mixed"}"#;
const CPU_LABELS: &str = r#"{"team":"ml","cost-center":"cc-1","workload-type":"training","compute-type":"cpu"}"#;

/// A worker group: `extra` holds the replica fields, `containers` the
/// worker's containers.
fn group(name: &str, extra: &str, containers: &str) -> String {
    format!(r#"{{"groupName":"{name}",{extra}"template":{{"spec":{{"containers":{containers}}}}}}}"#)
}

fn gpu(n: u32) -> String {
    format!(r#"[{{"name":"ray-worker","resources":{{"limits":{{"nvidia.com/gpu":{n}}}}}}}]"#)
}

const CPU: &str = r#"[{"name":"ray-worker","resources":{"limits":{"cpu":4}}}]"#;

fn cluster(labels: &str, head: &str, groups: &[String]) -> String {
    format!(
        r#"{{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{{"name":"c","labels":{labels}}},
        "spec":{{"headGroupSpec":{{"template":{{"spec":{{"containers":{head}}}}}}},"workerGroupSpecs":[{}]}}}}"#,
        groups.join(",")
    )
}

fn problems_with(json: &str, s: &Settings) -> Vec<String> {
    let w = Workload::parse(WorkloadKind::RayCluster, json).unwrap();
    check(&w, s).unwrap()
}

fn problems(json: &str) -> Vec<String> {
    problems_with(json, &Settings::default())
}

/// One worker group's problems, the `compute-type` check aside.
fn one_group(extra: &str, containers: &str) -> Vec<String> {
    let s = Settings {
        check_compute_type: false,
        ..Settings::default()
    };
    problems_with(&cluster(LABELS, CPU, &[group("g", extra, containers)]), &s)
}

#[test]
fn the_seed_mixed_cluster_passes() {
    let json = cluster(
        LABELS,
        CPU,
        &[
            group("cpu-workers", r#""replicas":4,"minReplicas":2,"maxReplicas":10,"#, CPU),
            group("gpu-workers", r#""replicas":2,"minReplicas":0,"maxReplicas":4,"#, &gpu(1)),
        ],
    );
    assert_eq!(problems(&json), Vec::<String>::new());
}

#[test]
fn limits_are_inclusive() {
    assert!(one_group(r#""replicas":8,"minReplicas":8,"maxReplicas":8,"#, &gpu(4)).is_empty());
    assert!(one_group(r#""replicas":20,"minReplicas":0,"maxReplicas":20,"#, CPU).is_empty());
}

#[test]
fn gpus_are_counted_over_every_container_of_the_worker() {
    let two = r#"[{"name":"ray-worker","resources":{"limits":{"nvidia.com/gpu":3}}},
                  {"name":"profiler","resources":{"requests":{"nvidia.com/mig-1g.10gb":"2"}}}]"#;
    assert_eq!(
        one_group(r#""replicas":1,"maxReplicas":2,"#, two),
        ["`spec.workerGroupSpecs[0]` (`g`) requests 5 GPUs per worker (3 in `ray-worker`, 2 in `profiler`), but a worker may have at most 4: request at most 4 GPUs in each worker pod"]
    );
    // A sidecar (an init container that keeps running) adds to the worker.
    let sidecar = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":4}}}],
        "initContainers":[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1}}}]"#;
    let p = one_group(r#""maxReplicas":2,"#, sidecar);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("requests 5 GPUs per worker (4 in `w`, 1 in `s`)"), "{p:?}");
    // A plain init container runs before the others: the larger counts.
    let init = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":4}}}],
        "initContainers":[{"name":"i","resources":{"limits":{"nvidia.com/gpu":2}}}]"#;
    assert!(one_group(r#""maxReplicas":2,"#, init).is_empty());
}

#[test]
fn a_single_gpu_container_is_named() {
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, &gpu(8)),
        ["`spec.workerGroupSpecs[0]` (`g`) requests 8 GPUs per worker (in container `ray-worker`), but a worker may have at most 4: request at most 4 GPUs in each worker pod"]
    );
}

#[test]
fn max_replicas_limit_depends_on_gpus() {
    assert_eq!(
        one_group(r#""maxReplicas":9,"#, &gpu(1)),
        ["`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 9`, but a worker group that requests GPUs may scale to at most 8 workers: set `maxReplicas` to 8 or less"]
    );
    assert_eq!(
        one_group(r#""maxReplicas":21,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 21`, but a worker group without GPUs may scale to at most 20 workers: set `maxReplicas` to 20 or less"]
    );
    // A GPU of zero is no GPU.
    assert!(one_group(r#""maxReplicas":12,"#, &gpu(0)).is_empty());
}

#[test]
fn absent_max_replicas_is_unbounded() {
    assert_eq!(
        one_group(r#""replicas":1,"#, &gpu(1)),
        ["`spec.workerGroupSpecs[0]` (`g`) has no `maxReplicas`, so KubeRay lets it scale without limit: set `maxReplicas` to at most 8 (the limit for a worker group that requests GPUs)"]
    );
    // What the API server makes of an absent value.
    assert_eq!(
        one_group(r#""replicas":1,"maxReplicas":2147483647,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 2147483647`, KubeRay's default for no limit: set `maxReplicas` to at most 20 (the limit for a worker group without GPUs)"]
    );
}

#[test]
fn replica_ranges() {
    assert_eq!(
        one_group(r#""replicas":3,"minReplicas":5,"maxReplicas":2,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has `minReplicas: 5` above `maxReplicas: 2`: set them so that `minReplicas <= replicas <= maxReplicas`"],
        "an empty range is reported once, not also for `replicas`"
    );
    assert_eq!(
        one_group(r#""replicas":12,"minReplicas":2,"maxReplicas":10,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has `replicas: 12` above `maxReplicas: 10`: set `replicas` between 2 and 10"]
    );
    assert_eq!(
        one_group(r#""replicas":1,"minReplicas":2,"maxReplicas":10,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has `replicas: 1` below `minReplicas: 2`: set `replicas` between 2 and 10"]
    );
    // The API server defaults an absent `replicas` to 0 before admission.
    assert_eq!(
        one_group(r#""minReplicas":2,"maxReplicas":10,"#, CPU),
        ["`spec.workerGroupSpecs[0]` (`g`) has no `replicas`, which KubeRay defaults to 0, below `minReplicas: 2`: set `replicas` between 2 and 10"]
    );
    assert!(one_group(r#""maxReplicas":10,"#, CPU).is_empty(), "absent replicas and minReplicas are 0");
}

#[test]
fn an_unbounded_range_says_so() {
    let p = one_group(r#""replicas":1,"minReplicas":3,"#, CPU);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].ends_with("below `minReplicas: 3`: set `replicas` to 3 or more"), "{p:?}");
    assert!(p[1].contains("has no `maxReplicas`"), "{p:?}");
}

#[test]
fn negative_numbers_are_violations() {
    assert_eq!(
        one_group(r#""replicas":-1,"minReplicas":-2,"maxReplicas":-3,"numOfHosts":0,"#, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: -1`: set `replicas` to 0 or more",
            "`spec.workerGroupSpecs[0]` (`g`) has `minReplicas: -2`: set `minReplicas` to 0 or more",
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: -3`: set `maxReplicas` between 0 and 20 (the limit for a worker group without GPUs)",
            "`spec.workerGroupSpecs[0]` (`g`) has `numOfHosts: 0`: set `numOfHosts` to 1 or more (the pods of each worker replica), or leave it out for 1",
        ]
    );
    let p = one_group(r#""replicas":-1,"minReplicas":0,"maxReplicas":4,"#, CPU);
    assert_eq!(p.len(), 1, "a negative `replicas` is not also out of range: {p:?}");
}

#[test]
fn groups_without_a_name_are_named_by_path() {
    let json = cluster(CPU_LABELS, CPU, &[format!(r#"{{"maxReplicas":30,"template":{{"spec":{{"containers":{CPU}}}}}}}"#)]);
    let p = problems(&json);
    assert!(p[0].starts_with("`spec.workerGroupSpecs[0]` has `maxReplicas: 30`"), "{p:?}");
}

#[test]
fn every_group_is_reported_in_order() {
    let json = cluster(
        LABELS,
        CPU,
        &[
            group("ok", r#""maxReplicas":4,"#, CPU),
            group("big-cpu", r#""maxReplicas":30,"#, CPU),
            group("big-gpu", r#""maxReplicas":16,"#, &gpu(8)),
        ],
    );
    let p = problems(&json);
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p[0].starts_with("`spec.workerGroupSpecs[1]` (`big-cpu`) has `maxReplicas: 30`"));
    assert!(p[1].starts_with("`spec.workerGroupSpecs[2]` (`big-gpu`) has `maxReplicas: 16`"));
    assert!(p[2].starts_with("`spec.workerGroupSpecs[2]` (`big-gpu`) requests 8 GPUs per worker"));
}

fn capped(total: u32) -> Settings {
    Settings {
        max_total_gpus: Some(total),
        ..Settings::default()
    }
}

#[test]
fn total_gpus_count_the_head_and_multi_host_groups() {
    let json = cluster(
        LABELS,
        &gpu(1),
        &[
            group("a", r#""maxReplicas":4,"numOfHosts":2,"#, &gpu(4)),
            group("b", r#""maxReplicas":3,"#, &gpu(1)),
            group("cpu", r#""maxReplicas":20,"#, CPU),
        ],
    );
    // 1 + 4 × 2 × 4 + 3 × 1 = 36
    assert!(problems_with(&json, &capped(36)).is_empty());
    assert_eq!(
        problems_with(&json, &capped(35)),
        ["the Ray cluster in `spec` can grow to 36 GPUs at maximum scale (head: 1, `a`: 4 replicas × 2 hosts × 4 GPUs = 32, `b`: 3 workers × 1 GPU = 3), but a Ray cluster may use at most 35 GPUs: lower `maxReplicas` or the GPUs per worker"]
    );
    assert!(problems(&json).is_empty(), "no cap by default");
}

#[test]
fn total_gpus_with_an_unbounded_group() {
    let json = cluster(LABELS, CPU, &[group("a", r#""replicas":1,"#, &gpu(1))]);
    let p = problems_with(&json, &capped(100));
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(
        p[1],
        "the Ray cluster in `spec` has no upper bound on GPUs at maximum scale, but a Ray cluster may use at most 100 GPUs: set `maxReplicas` on `spec.workerGroupSpecs[0]` (`a`)"
    );
}

#[test]
fn huge_numbers_saturate() {
    let json = cluster(
        LABELS,
        CPU,
        &[group("a", r#""maxReplicas":2147483646,"numOfHosts":9223372036854775807,"#, &gpu(4_000_000_000))],
    );
    let p = problems_with(&json, &capped(1));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p[2].contains(&format!("can grow to {} GPUs", u64::MAX)), "{p:?}");
}

#[test]
fn compute_type_must_match_the_gpus() {
    let labels = |ct: &str| format!(r#"{{"team":"ml","cost-center":"cc","workload-type":"training","compute-type":"{ct}"}}"#);
    let gpu_cluster = |ct: &str| cluster(&labels(ct), CPU, &[group("g", r#""maxReplicas":2,"#, &gpu(1))]);
    let cpu_cluster = |ct: &str| cluster(&labels(ct), CPU, &[group("c", r#""maxReplicas":2,"#, CPU)]);
    assert!(problems(&gpu_cluster("gpu")).is_empty());
    assert!(problems(&gpu_cluster("mixed")).is_empty());
    assert!(problems(&cpu_cluster("cpu")).is_empty());
    assert_eq!(
        problems(&gpu_cluster("cpu")),
        ["label `compute-type` in `metadata.labels` is `cpu`, but `spec.workerGroupSpecs[0]` (`g`) requests GPUs: set it to `gpu` or `mixed`"]
    );
    assert_eq!(
        problems(&cpu_cluster("gpu")),
        ["label `compute-type` in `metadata.labels` is `gpu`, but no pod of the Ray cluster in `spec` requests GPUs: set it to `cpu`"]
    );
    let gpu_head = cluster(&labels("cpu"), &gpu(1), &[group("c", r#""maxReplicas":2,"#, CPU)]);
    assert!(problems(&gpu_head)[0].contains("but the head group (`spec.headGroupSpec`) requests GPUs"));
    // A value the label check refuses is not judged twice.
    assert_eq!(problems(&gpu_cluster("GPU")).len(), 1);
    let off = Settings {
        check_compute_type: false,
        ..Settings::default()
    };
    assert!(problems_with(&gpu_cluster("cpu"), &off).is_empty());
}

#[test]
fn labels_come_first_then_the_cluster() {
    let json = cluster(r#"{"team":"ml","compute-type":"cpu"}"#, CPU, &[group("g", r#""maxReplicas":9,"#, &gpu(1))]);
    let p = problems(&json);
    assert_eq!(
        p,
        [
            "labels `cost-center`, `workload-type` are missing from `metadata.labels`",
            "label `compute-type` in `metadata.labels` is `cpu`, but `spec.workerGroupSpecs[0]` (`g`) requests GPUs: set it to `gpu` or `mixed`",
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 9`, but a worker group that requests GPUs may scale to at most 8 workers: set `maxReplicas` to 8 or less",
        ]
    );
    let no_labels = Settings {
        required_labels: aigov_sdk::RequiredLabels::default(),
        ..Settings::default()
    };
    assert_eq!(problems_with(&json, &no_labels).len(), 2, "`requiredLabels: {{}}` checks no labels");
}

#[test]
fn a_rayjob_on_an_existing_cluster_is_checked_for_labels_only() {
    let json = r#"{"metadata":{"name":"j","labels":{"team":"ml"}},"spec":{"entrypoint":"python x.py","clusterSelector":{"ray.io/cluster":"shared"}}}"#;
    let w = Workload::parse(WorkloadKind::RayJob, json).unwrap();
    assert_eq!(
        check(&w, &Settings::default()).unwrap(),
        ["labels `compute-type`, `cost-center`, `workload-type` are missing from `metadata.labels`"]
    );
}

#[test]
fn embedded_cluster_paths() {
    let spec = format!(r#"{{"workerGroupSpecs":[{}]}}"#, group("g", r#""maxReplicas":30,"#, CPU));
    let job = format!(r#"{{"metadata":{{"labels":{CPU_LABELS}}},"spec":{{"rayClusterSpec":{spec}}}}}"#);
    let w = Workload::parse(WorkloadKind::RayJob, &job).unwrap();
    let p = check(&w, &capped(1)).unwrap();
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with("`spec.rayClusterSpec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 30`"), "{p:?}");
    let svc = format!(r#"{{"metadata":{{"labels":{LABELS}}},"spec":{{"rayClusterConfig":{spec}}}}}"#);
    let w = Workload::parse(WorkloadKind::RayService, &svc).unwrap();
    let p = check(&w, &Settings::default()).unwrap();
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].contains("but no pod of the Ray cluster in `spec.rayClusterConfig` requests GPUs"), "{p:?}");
    assert!(p[1].starts_with("`spec.rayClusterConfig.workerGroupSpecs[0]` (`g`) has `maxReplicas: 30`"), "{p:?}");
}

#[test]
fn a_bad_gpu_quantity_is_malformed() {
    let json = cluster(LABELS, CPU, &[group("g", r#""maxReplicas":2,"#, r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":"lots"}}}]"#)]);
    let w = Workload::parse(WorkloadKind::RayCluster, &json).unwrap();
    let e = check(&w, &Settings::default()).err().unwrap();
    assert!(e.0.starts_with("`spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]`"), "{e}");
}

// ---- The request path: operations, kinds, subresources, deletion. ----

fn request(kind: &str, op: &str, extra: &str, object: &str) -> String {
    let group = if kind == "Pod" { "" } else { "ray.io" };
    format!(
        r#"{{"uid":"u","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}},"operation":"{op}"{extra},"object":{object}}}"#
    )
}

/// Evaluates through the SDK's entry point, as every host does.
fn run(json: &str) -> Result<Verdict, Malformed> {
    let r = (AIGOV_POLICY.validate_request)(json, "{}", &NoCluster);
    if r.code == Some(400) {
        return Err(Malformed(r.message.unwrap_or_default()));
    }
    let mut v = Verdict::accept();
    for line in r.violations() {
        v.violation(line);
    }
    Ok(v)
}

fn oversized() -> String {
    cluster(CPU_LABELS, CPU, &[group("g", r#""maxReplicas":30,"#, CPU)])
}

#[test]
fn create_and_update_are_governed() {
    for op in ["CREATE", "UPDATE"] {
        let v = run(&request("RayCluster", op, "", &oversized())).unwrap();
        assert_eq!(v.violations().len(), 1, "{op}");
    }
}

#[test]
fn other_operations_kinds_and_subresources_are_admitted() {
    let bad = oversized();
    for (kind, op, extra) in [
        ("RayCluster", "DELETE", ""),
        ("RayCluster", "UPDATE", r#","subResource":"status""#),
        ("RayCluster", "CONNECT", ""),
    ] {
        assert!(run(&request(kind, op, extra, &bad)).unwrap().is_accepted(), "{kind} {op} {extra}");
    }
    // Other kinds are not even decoded: a broken Pod is not this rule's business.
    assert!(run(&request("Pod", "CREATE", "", r#"{"spec":{"containers":"x"}}"#)).unwrap().is_accepted());
    let widget = r#"{"uid":"u","kind":{"group":"ray.io","version":"v1","kind":"RayWidget"},"operation":"CREATE","object":{"spec":5}}"#;
    assert!(run(widget).unwrap().is_accepted());
}

#[test]
fn an_update_of_an_object_being_deleted_is_admitted() {
    let dying = oversized().replacen(r#""name":"c""#, r#""name":"c","deletionTimestamp":"2025-01-01T00:00:00Z""#, 1);
    assert!(run(&request("RayCluster", "UPDATE", "", &dying)).unwrap().is_accepted());
    // On CREATE the timestamp means nothing.
    assert!(!run(&request("RayCluster", "CREATE", "", &dying)).unwrap().is_accepted());
    let alive = oversized().replacen(r#""name":"c""#, r#""name":"c","deletionTimestamp":null"#, 1);
    assert!(!run(&request("RayCluster", "UPDATE", "", &alive)).unwrap().is_accepted());
}

#[test]
fn malformed_objects_are_errors() {
    let e = run(&request("RayCluster", "CREATE", "", r#"{"spec":{"workerGroupSpecs":[{"maxReplicas":"eight"}]}}"#)).unwrap_err();
    assert!(e.0.contains("`spec.workerGroupSpecs[0].maxReplicas`"), "{e}");
}
