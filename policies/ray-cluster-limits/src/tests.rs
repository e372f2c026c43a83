use super::*;
use aigov_sdk::{NoCluster, ValidationResponse};

const LABELS: &str = r#"{"team":"ml","cost-center":"cc-1","workload-type":"ml-training","compute-type":"mixed"}"#;
const CPU_LABELS: &str = r#"{"team":"ml","cost-center":"cc-1","workload-type":"ml-training","compute-type":"cpu"}"#;

/// A worker group: `extra` holds the replica fields, `containers` the
/// worker's containers (and anything else of the pod spec after them).
fn group(name: &str, extra: &str, containers: &str) -> String {
    format!(r#"{{"groupName":"{name}",{extra}"template":{{"spec":{{"containers":{containers}}}}}}}"#)
}

fn gpu(n: u32) -> String {
    format!(r#"[{{"name":"ray-worker","resources":{{"limits":{{"nvidia.com/gpu":{n}}}}}}}]"#)
}

/// One container requesting these resources (`"nvidia.com/gpu":2,"amd.com/gpu":3`).
fn limits(resources: &str) -> String {
    format!(r#"[{{"name":"ray-worker","resources":{{"limits":{{{resources}}}}}}}]"#)
}

const CPU: &str = r#"[{"name":"ray-worker","resources":{"limits":{"cpu":4}}}]"#;

fn cluster(labels: &str, head: &str, groups: &[String]) -> String {
    format!(
        r#"{{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{{"name":"c","labels":{labels}}},
        "spec":{{"headGroupSpec":{{"template":{{"spec":{{"containers":{head}}}}}}},"workerGroupSpecs":[{}]}}}}"#,
        groups.join(",")
    )
}

fn findings_with(json: &str, s: &Settings) -> Findings {
    let w = Workload::parse(WorkloadKind::RayCluster, json).unwrap();
    evaluate(&w, s).unwrap()
}

fn problems_with(json: &str, s: &Settings) -> Vec<String> {
    let w = Workload::parse(WorkloadKind::RayCluster, json).unwrap();
    check(&w, s).unwrap()
}

fn problems(json: &str) -> Vec<String> {
    problems_with(json, &Settings::default())
}

fn no_compute_type() -> Settings {
    Settings { check_compute_type: false, ..Settings::default() }
}

/// One worker group's problems, the `compute-type` check aside.
fn one_group(extra: &str, containers: &str) -> Vec<String> {
    problems_with(&cluster(LABELS, CPU, &[group("g", extra, containers)]), &no_compute_type())
}

/// One worker group's warnings.
fn one_group_warnings(extra: &str, containers: &str) -> Vec<String> {
    findings_with(&cluster(LABELS, CPU, &[group("g", extra, containers)]), &no_compute_type()).warnings
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
    assert_eq!(findings_with(&json, &Settings::default()), Findings::default());
}

#[test]
fn limits_are_inclusive() {
    assert!(one_group(r#""replicas":8,"minReplicas":8,"maxReplicas":8,"#, &gpu(4)).is_empty());
    assert!(one_group(r#""replicas":20,"minReplicas":0,"maxReplicas":20,"#, CPU).is_empty());
}

// ---- GPUs: per family, MIG by weight, breakdowns that add up. ----

#[test]
fn gpus_are_counted_over_every_container_of_the_worker() {
    let two = r#"[{"name":"ray-worker","resources":{"limits":{"nvidia.com/gpu":3}}},
                  {"name":"profiler","resources":{"requests":{"nvidia.com/gpu":"2"}}}]"#;
    assert_eq!(
        one_group(r#""replicas":1,"maxReplicas":2,"#, two),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 5 `nvidia.com/gpu` GPUs per worker (3 in `ray-worker` + 2 in `profiler`), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
    // A sidecar (an init container that keeps running) adds to the worker.
    let sidecar = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":4}}}],
        "initContainers":[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1}}}]"#;
    let p = one_group(r#""maxReplicas":2,"#, sidecar);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("requests 5 `nvidia.com/gpu` GPUs per worker (4 in `w` + 1 in sidecar `s`)"), "{p:?}");
    // A plain init container runs before the others: the larger counts.
    let init = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":4}}}],
        "initContainers":[{"name":"i","resources":{"limits":{"nvidia.com/gpu":2}}}]"#;
    assert!(one_group(r#""maxReplicas":2,"#, init).is_empty());
}

#[test]
fn init_containers_are_a_maximum_and_the_message_says_so() {
    // The regular containers hold 5; the init containers 3 and 2 are not added.
    let regular_wins = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":3}}},{"name":"x","resources":{"limits":{"nvidia.com/gpu":2}}}],
        "initContainers":[{"name":"warmup","resources":{"limits":{"nvidia.com/gpu":3}}},{"name":"check","resources":{"limits":{"nvidia.com/gpu":2}}}]"#;
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, regular_wins),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 5 `nvidia.com/gpu` GPUs per worker (3 in `w` + 2 in `x`; init containers run one at a time, before the others, so their GPUs count as a maximum, not a sum), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
    // The largest init container (with the sidecar started before it) wins.
    let init_wins = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":1}}}],
        "initContainers":[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1}}},
                          {"name":"warmup","resources":{"limits":{"nvidia.com/gpu":6}}},
                          {"name":"check","resources":{"limits":{"nvidia.com/gpu":2}}}]"#;
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, init_wins),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 7 `nvidia.com/gpu` GPUs per worker (1 in sidecar `s` + 6 in init container `warmup`; init containers run one at a time, before the others, so their GPUs count as a maximum, not a sum), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
    // Alone, it is named as the init container it is.
    let only_init = r#"[{"name":"w"}],"initContainers":[{"name":"warmup","resources":{"limits":{"nvidia.com/gpu":6}}}]"#;
    let p = one_group(r#""maxReplicas":2,"#, only_init);
    assert!(p[0].contains("requests 6 `nvidia.com/gpu` GPUs per worker (in init container `warmup`; init containers run"), "{p:?}");
    // Ephemeral containers cannot hold resources.
    let ephemeral = r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":4}}}],"ephemeralContainers":[{"name":"debug","resources":{"limits":{"nvidia.com/gpu":4}}}]"#;
    assert!(one_group(r#""maxReplicas":2,"#, ephemeral).is_empty());
}

/// The explained counts are the SDK's counts, and every breakdown's shares
/// add up to them.
#[test]
fn breakdowns_add_up_to_the_sdks_counts() {
    let specs = [
        r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":3}}},{"name":"x","resources":{"limits":{"nvidia.com/gpu":2,"amd.com/gpu":1}}}],
            "initContainers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":9}}},{"name":"s","restartPolicy":"Always","resources":{"limits":{"amd.com/gpu":2}}},{"name":"b","resources":{"limits":{"amd.com/gpu":2,"nvidia.com/mig-1g.10gb":7}}}]"#,
        r#"[{"name":"w","resources":{"limits":{"nvidia.com/mig-3g.40gb":2},"requests":{"nvidia.com/mig-3g.40gb":1}}}],
            "initContainers":[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/mig-3g.40gb":1}}},{"name":"i","resources":{"limits":{"nvidia.com/mig-3g.40gb":3}}}]"#,
        CPU,
    ];
    let names = GpuResources::default();
    for spec in specs {
        let json = cluster(LABELS, CPU, &[group("g", r#""maxReplicas":1,"#, spec)]);
        let w = Workload::parse(WorkloadKind::RayCluster, &json).unwrap();
        let t = &w.ray.as_ref().unwrap().worker_groups[0].template;
        let pod = PodGpus::of(t, &names).unwrap();
        assert_eq!(pod.counts, t.gpus_per_pod(&names).unwrap(), "{spec}");
        let mut sum = GpuCounts::new();
        for share in &pod.shares {
            for (r, n) in &share.counts {
                *sum.entry(r.clone()).or_default() += n;
            }
        }
        assert_eq!(sum, pod.counts, "{spec}");
    }
}

#[test]
fn a_single_gpu_container_is_named() {
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, &gpu(8)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 8 `nvidia.com/gpu` GPUs per worker (in container `ray-worker`), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
}

#[test]
fn vendors_are_never_added_together() {
    // 2 NVIDIA + 3 AMD is not "5 GPUs": each family is within 4.
    assert!(one_group(r#""maxReplicas":2,"#, &limits(r#""nvidia.com/gpu":2,"amd.com/gpu":3"#)).is_empty());
    // Each family over the limit is its own violation, in family order.
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, &limits(r#""nvidia.com/gpu":5,"amd.com/gpu":8"#)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 8 `amd.com/gpu` GPUs per worker (in container `ray-worker`), but a worker may have at most 4: request at most 4 in each worker pod",
            "`spec.workerGroupSpecs[0]` (`g`) requests 5 `nvidia.com/gpu` GPUs per worker (in container `ray-worker`), but a worker may have at most 4: request at most 4 in each worker pod",
        ]
    );
    // Time-sliced GPUs are shares of a GPU, a family of their own.
    assert!(one_group(r#""maxReplicas":2,"#, &limits(r#""nvidia.com/gpu":4,"nvidia.com/gpu.shared":4"#)).is_empty());
}

#[test]
fn mig_slices_count_by_their_share_of_a_gpu() {
    // Seven 1g slices are one A100's worth.
    assert!(one_group(r#""maxReplicas":2,"#, &limits(r#""nvidia.com/mig-1g.10gb":7"#)).is_empty());
    // 4 whole GPUs and seven 1g slices are 5, with the slices' weight shown.
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, &limits(r#""nvidia.com/gpu":4,"nvidia.com/mig-1g.10gb":7"#)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 5 `nvidia.com/gpu` GPUs per worker (4 `nvidia.com/gpu` + 7 `nvidia.com/mig-1g.10gb` (1/7 GPU each), all in container `ray-worker`), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
    let two =
        r#"[{"name":"a","resources":{"limits":{"nvidia.com/gpu":4}}},{"name":"b","resources":{"limits":{"nvidia.com/mig-3g.40gb":1}}}]"#;
    assert_eq!(
        one_group(r#""maxReplicas":2,"#, two),
        [
            "`spec.workerGroupSpecs[0]` (`g`) requests 4.43 `nvidia.com/gpu` GPUs per worker (4 `nvidia.com/gpu` in `a` + 1 `nvidia.com/mig-3g.40gb` (3/7 GPU each) in `b`), but a worker may have at most 4: request at most 4 in each worker pod"
        ]
    );
    // Weights from settings (A30: four slices).
    let a30 =
        Settings { mig_weights: MigWeights([("nvidia.com/mig-1g.6gb".to_string(), 0.25)].into_iter().collect()), ..no_compute_type() };
    let json = |n: u32| cluster(LABELS, CPU, &[group("g", r#""maxReplicas":2,"#, &limits(&format!(r#""nvidia.com/mig-1g.6gb":{n}"#)))]);
    assert!(problems_with(&json(16), &a30).is_empty(), "16 quarters are 4 GPUs");
    let p = problems_with(&json(17), &a30);
    assert!(
        p[0].contains("requests 4.25 `nvidia.com/gpu` GPUs per worker (17 `nvidia.com/mig-1g.6gb` (1/4 GPU each) in container"),
        "{p:?}"
    );
    // Without the setting, 1g is 1/7: 17 slices are 2.43.
    assert!(problems_with(&json(17), &no_compute_type()).is_empty());
}

#[test]
fn a_gpu_quantity_sum_past_int64_is_malformed() {
    let big = r#"[{"name":"a","resources":{"limits":{"nvidia.com/gpu":"9223372036854775807"}}},{"name":"b","resources":{"limits":{"nvidia.com/gpu":1}}}]"#;
    let json = cluster(LABELS, CPU, &[group("g", r#""maxReplicas":2,"#, big)]);
    let w = Workload::parse(WorkloadKind::RayCluster, &json).unwrap();
    let e = evaluate(&w, &Settings::default()).unwrap_err();
    assert_eq!(
        e.0,
        "`spec.workerGroupSpecs[0].template.spec`: the GPUs of its containers add up to more than a Kubernetes quantity can hold"
    );
}

#[test]
fn amounts_display() {
    assert_eq!(amount(0), "0");
    assert_eq!(amount(4 * ONE), "4");
    assert_eq!(amount(ONE * 3 / 7), "0.43");
    assert_eq!(amount(ONE / 2), "0.5");
    assert_eq!(amount(ONE * 999 / 1000), "1", "rounds up into the next whole");
    assert_eq!(gpus(ONE, "amd.com/gpu"), "1 `amd.com/gpu` GPU");
    assert_eq!(gpus(2 * ONE, "amd.com/gpu"), "2 `amd.com/gpu` GPUs");
}

// ---- The head. ----

#[test]
fn the_head_is_capped_like_a_worker_by_default() {
    let head = |n: u32| cluster(LABELS, &gpu(n), &[group("g", r#""maxReplicas":2,"#, CPU)]);
    assert!(problems(&head(4)).is_empty());
    assert_eq!(
        problems(&head(64)),
        [
            "the head group (`spec.headGroupSpec`) requests 64 `nvidia.com/gpu` GPUs (in container `ray-worker`), but the head may have at most 4: request at most 4 in the head pod and run the rest on worker groups"
        ]
    );
    let eight = Settings { max_gpus_per_worker: 8, ..Settings::default() };
    assert!(problems_with(&head(8), &eight).is_empty(), "the head follows `maxGpusPerWorker`");
    let one = Settings { max_gpus_per_head: Some(1), ..Settings::default() };
    assert_eq!(problems_with(&head(2), &one).len(), 1);
    let none = Settings { max_gpus_per_head: Some(0), ..no_compute_type() };
    assert_eq!(
        problems_with(&head(1), &none),
        [
            "the head group (`spec.headGroupSpec`) requests 1 `nvidia.com/gpu` GPU (in container `ray-worker`), but the head may not request GPUs (`maxGpusPerHead: 0`): remove them from the head and run GPU work on a worker group"
        ]
    );
    assert!(problems_with(&head(0), &none).is_empty());
}

// ---- Worker groups: workers are pods. ----

#[test]
fn max_replicas_limit_depends_on_gpus() {
    assert_eq!(
        one_group(r#""maxReplicas":9,"#, &gpu(1)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 9`, but a worker group that requests GPUs may scale to at most 8 workers: set `maxReplicas` to at most 8"
        ]
    );
    assert_eq!(
        one_group(r#""maxReplicas":21,"#, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 21`, but a worker group without GPUs may scale to at most 20 workers: set `maxReplicas` to at most 20"
        ]
    );
    // A GPU of zero is no GPU.
    assert!(one_group(r#""maxReplicas":12,"#, &gpu(0)).is_empty());
}

#[test]
fn multi_host_groups_count_every_pod() {
    // 8 replicas of 4 hosts are 32 workers.
    assert_eq!(
        one_group(r#""maxReplicas":8,"numOfHosts":4,"#, &gpu(4)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) can scale to 32 workers (`maxReplicas: 8` × `numOfHosts: 4`), but a worker group that requests GPUs may scale to at most 8 workers: set `maxReplicas` to at most 2"
        ]
    );
    assert!(one_group(r#""maxReplicas":2,"numOfHosts":4,"#, &gpu(4)).is_empty());
    assert!(one_group(r#""maxReplicas":5,"numOfHosts":4,"#, CPU).is_empty(), "20 CPU workers");
    // One replica larger than the cap: only `numOfHosts` can fix it.
    assert_eq!(
        one_group(r#""maxReplicas":1,"numOfHosts":16,"#, &gpu(1)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) can scale to 16 workers (`maxReplicas: 1` × `numOfHosts: 16`), but a worker group that requests GPUs may scale to at most 8 workers: lower `numOfHosts` to at most 8 (one replica is already 16 workers)"
        ]
    );
    assert_eq!(
        one_group(r#""numOfHosts":4,"#, &gpu(1)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has no `maxReplicas`, so KubeRay lets it scale without limit: set `maxReplicas` to at most 2 (2 × `numOfHosts: 4` = 8 workers; a worker group that requests GPUs may have at most 8)"
        ]
    );
}

#[test]
fn absent_max_replicas_is_unbounded() {
    assert_eq!(
        one_group(r#""replicas":1,"#, &gpu(1)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has no `maxReplicas`, so KubeRay lets it scale without limit: set `maxReplicas` to at most 8 (the limit for a worker group that requests GPUs)"
        ]
    );
    // What the API server makes of an absent value.
    assert_eq!(
        one_group(r#""replicas":1,"maxReplicas":2147483647,"#, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 2147483647`, KubeRay's default for no limit: set `maxReplicas` to at most 20 (the limit for a worker group without GPUs)"
        ]
    );
}

// ---- Replicas as KubeRay reads them. ----

#[test]
fn replicas_outside_the_range_are_clamped_so_they_warn() {
    let extra = r#""replicas":12,"minReplicas":2,"maxReplicas":10,"#;
    assert!(one_group(extra, CPU).is_empty());
    assert_eq!(
        one_group_warnings(extra, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: 12` above `maxReplicas: 10`, so KubeRay runs 10 workers: set `replicas` between 2 and 10 to say what runs"
        ]
    );
    let extra = r#""replicas":1,"minReplicas":2,"maxReplicas":10,"#;
    assert!(one_group(extra, CPU).is_empty());
    assert_eq!(
        one_group_warnings(extra, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: 1` below `minReplicas: 2`, so KubeRay runs 2 workers: set `replicas` between 2 and 10 to say what runs"
        ]
    );
    // A negative `replicas` is below any `minReplicas`: clamped too.
    assert_eq!(
        one_group_warnings(r#""replicas":-1,"minReplicas":0,"maxReplicas":4,"#, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: -1` below `minReplicas: 0`, so KubeRay runs 0 workers: set `replicas` between 0 and 4 to say what runs"
        ]
    );
    // Multi-host: replicas and the workers they are.
    assert_eq!(
        one_group_warnings(r#""replicas":3,"maxReplicas":2,"numOfHosts":4,"#, &gpu(1)),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: 3` above `maxReplicas: 2`, so KubeRay runs 2 replicas (8 workers): set `replicas` between 0 and 2 to say what runs"
        ]
    );
    // With no upper bound the advice says so (and the bound is a violation).
    let f = findings_with(&cluster(LABELS, CPU, &[group("g", r#""replicas":1,"minReplicas":3,"#, CPU)]), &no_compute_type());
    assert!(f.warnings[0].ends_with("so KubeRay runs 3 workers: set `replicas` to 3 or more to say what runs"), "{f:?}");
    assert!(f.violations[0].message.contains("has no `maxReplicas`"), "{f:?}");
}

#[test]
fn an_omitted_replicas_is_min_replicas() {
    // KubeRay starts `minReplicas`; the API server writes an absent
    // `replicas` as 0, which reads the same.
    for extra in [r#""minReplicas":2,"maxReplicas":10,"#, r#""replicas":0,"minReplicas":2,"maxReplicas":10,"#] {
        let f = findings_with(&cluster(LABELS, CPU, &[group("g", extra, CPU)]), &no_compute_type());
        assert_eq!(f, Findings::default(), "{extra}");
    }
    assert!(one_group(r#""maxReplicas":10,"#, CPU).is_empty(), "absent replicas and minReplicas are 0");
}

#[test]
fn min_above_max_is_refused_by_kuberay_so_it_is_a_violation() {
    let extra = r#""replicas":3,"minReplicas":5,"maxReplicas":2,"#;
    assert_eq!(
        one_group(extra, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `minReplicas: 5` above `maxReplicas: 2`, which KubeRay refuses: set `minReplicas` to at most `maxReplicas`"
        ],
    );
    assert!(one_group_warnings(extra, CPU).is_empty(), "an empty range is reported once, not also for `replicas`");
}

#[test]
fn negative_numbers() {
    assert_eq!(
        one_group(r#""replicas":-1,"minReplicas":-2,"maxReplicas":-3,"numOfHosts":0,"#, CPU),
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `minReplicas: -2`, which KubeRay refuses: set `minReplicas` to 0 or more",
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: -3`, which KubeRay refuses: set `maxReplicas` to at most 20 (the limit for a worker group without GPUs)",
            "`spec.workerGroupSpecs[0]` (`g`) has `numOfHosts: 0`, so KubeRay starts no worker for it: set `numOfHosts` to 1 or more (the pods of each replica), or leave it out for 1",
        ]
    );
}

#[test]
fn replica_fields_beyond_int32_are_malformed() {
    for (field, value) in [("maxReplicas", "2147483648"), ("numOfHosts", "9223372036854775807"), ("replicas", "-2147483649")] {
        let json = cluster(LABELS, CPU, &[group("g", &format!(r#""{field}":{value},"#), CPU)]);
        let w = Workload::parse(WorkloadKind::RayCluster, &json).unwrap();
        let e = evaluate(&w, &Settings::default()).unwrap_err();
        assert_eq!(
            e.0,
            format!(
                "the RayCluster is malformed: `spec.workerGroupSpecs[0].{field}`: invalid value: integer `{value}`, expected a whole number that fits in 32 bits (KubeRay's `int32`)"
            )
        );
    }
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
    assert!(p[2].starts_with("`spec.workerGroupSpecs[2]` (`big-gpu`) requests 8 `nvidia.com/gpu` GPUs per worker"));
}

// ---- The cluster's total. ----

fn capped(total: i64) -> Settings {
    Settings { max_total_gpus: Some(total), ..Settings::default() }
}

#[test]
fn total_gpus_count_the_head_and_multi_host_groups() {
    let json = cluster(
        LABELS,
        &gpu(1),
        &[
            group("a", r#""maxReplicas":2,"numOfHosts":4,"#, &gpu(4)),
            group("b", r#""maxReplicas":3,"#, &gpu(1)),
            group("cpu", r#""maxReplicas":20,"#, CPU),
        ],
    );
    // 1 + 2 × 4 × 4 + 3 × 1 = 36
    assert!(problems_with(&json, &capped(36)).is_empty());
    assert_eq!(
        problems_with(&json, &capped(35)),
        [
            "the Ray cluster in `spec` can grow to 36 `nvidia.com/gpu` GPUs at maximum scale (head: 1 `nvidia.com/gpu`, `a`: 2 replicas × 4 hosts × 4 `nvidia.com/gpu` = 32, `b`: 3 workers × 1 `nvidia.com/gpu` = 3), but a Ray cluster may use at most 35: lower `maxReplicas` or the GPUs per worker"
        ]
    );
    assert!(problems(&json).is_empty(), "no cap by default");
}

#[test]
fn total_gpus_are_per_family_with_mig_weights() {
    let json = cluster(
        LABELS,
        CPU,
        &[
            group("mig", r#""maxReplicas":8,"#, &limits(r#""nvidia.com/gpu":1,"nvidia.com/mig-1g.10gb":7"#)),
            group("amd", r#""maxReplicas":4,"#, &limits(r#""amd.com/gpu":4"#)),
        ],
    );
    // 16 NVIDIA GPUs' worth, 16 AMD GPUs: neither is 32.
    assert!(problems_with(&json, &capped(16)).is_empty());
    let p = problems_with(&json, &capped(15));
    assert_eq!(
        p,
        [
            "the Ray cluster in `spec` can grow to 16 `amd.com/gpu` GPUs at maximum scale (`amd`: 4 workers × 4 `amd.com/gpu` = 16), but a Ray cluster may use at most 15: lower `maxReplicas` or the GPUs per worker",
            "the Ray cluster in `spec` can grow to 16 `nvidia.com/gpu` GPUs at maximum scale (`mig`: 8 workers × (1 `nvidia.com/gpu` + 7 `nvidia.com/mig-1g.10gb` (1/7 GPU each)) = 16), but a Ray cluster may use at most 15: lower `maxReplicas` or the GPUs per worker",
        ]
    );
}

#[test]
fn total_gpus_with_an_unbounded_group() {
    let json = cluster(LABELS, CPU, &[group("a", r#""replicas":1,"#, &gpu(1))]);
    let p = problems_with(&json, &capped(100));
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(
        p[1],
        "the Ray cluster in `spec` has no upper bound on GPUs at maximum scale, but a Ray cluster may use at most 100 GPUs of each family: set `maxReplicas` on `spec.workerGroupSpecs[0]` (`a`)"
    );
}

#[test]
fn huge_numbers_do_not_wrap() {
    let json = cluster(LABELS, CPU, &[group("a", r#""maxReplicas":2147483646,"numOfHosts":2147483647,"#, &gpu(4_000_000_000))]);
    let p = problems_with(&json, &capped(1));
    assert_eq!(p.len(), 3, "{p:?}");
    // 4e9 × 2147483646 × 2147483647, exactly.
    let exact = 4_000_000_000u128 * 2_147_483_646 * 2_147_483_647;
    assert!(p[2].contains(&format!("can grow to {exact} `nvidia.com/gpu` GPUs")), "{p:?}");
}

// ---- Labels. ----

#[test]
fn compute_type_must_match_the_gpus() {
    let labels = |ct: &str| format!(r#"{{"team":"ml","cost-center":"cc","workload-type":"ml-training","compute-type":"{ct}"}}"#);
    let gpu_cluster = |ct: &str| cluster(&labels(ct), CPU, &[group("g", r#""maxReplicas":2,"#, &gpu(1))]);
    let cpu_cluster = |ct: &str| cluster(&labels(ct), CPU, &[group("c", r#""maxReplicas":2,"#, CPU)]);
    assert!(problems(&gpu_cluster("gpu")).is_empty());
    assert!(problems(&gpu_cluster("mixed")).is_empty());
    assert!(problems(&cpu_cluster("cpu")).is_empty());
    assert_eq!(
        problems(&gpu_cluster("cpu")),
        [
            "label `compute-type` in `metadata.labels` is `cpu`, but `spec.workerGroupSpecs[0]` (`g`) requests GPUs: set it to `gpu` or `mixed`"
        ]
    );
    assert_eq!(
        problems(&cpu_cluster("gpu")),
        ["label `compute-type` in `metadata.labels` is `gpu`, but no pod of the Ray cluster in `spec` requests GPUs: set it to `cpu`"]
    );
    let gpu_head = cluster(&labels("cpu"), &gpu(1), &[group("c", r#""maxReplicas":2,"#, CPU)]);
    assert!(problems(&gpu_head)[0].contains("but the head group (`spec.headGroupSpec`) requests GPUs"));
    // A value the label check refuses is not judged twice.
    assert_eq!(problems(&gpu_cluster("GPU")).len(), 1);
    assert!(problems_with(&gpu_cluster("cpu"), &no_compute_type()).is_empty());
}

#[test]
fn labels_come_first_then_the_cluster() {
    let json = cluster(r#"{"team":"ml","compute-type":"cpu"}"#, CPU, &[group("g", r#""maxReplicas":9,"#, &gpu(1))]);
    let p = problems(&json);
    assert_eq!(
        p,
        [
            "labels `cost-center`, `workload-type` are missing from `metadata.labels` (allowed: `cost-center`: any value; `workload-type`: `jupyter-notebook`, `ml-training`, `cpu-training`, `data-processing`, `model-inference`, `report-generation`)",
            "label `compute-type` in `metadata.labels` is `cpu`, but `spec.workerGroupSpecs[0]` (`g`) requests GPUs: set it to `gpu` or `mixed`",
            "`spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 9`, but a worker group that requests GPUs may scale to at most 8 workers: set `maxReplicas` to at most 8",
        ]
    );
    let no_labels = Settings { required_labels: aigov_sdk::RequiredLabels::default(), ..Settings::default() };
    assert_eq!(problems_with(&json, &no_labels).len(), 2, "`requiredLabels: {{}}` checks no labels");
}

#[test]
fn a_rayjob_on_an_existing_cluster_is_checked_for_labels_only() {
    let json = r#"{"metadata":{"name":"j","labels":{"team":"ml"}},"spec":{"entrypoint":"python x.py","clusterSelector":{"ray.io/cluster":"shared"}}}"#;
    let w = Workload::parse(WorkloadKind::RayJob, json).unwrap();
    assert_eq!(
        check(&w, &Settings::default()).unwrap(),
        [
            "labels `compute-type`, `cost-center`, `workload-type` are missing from `metadata.labels` (allowed: `compute-type`: `gpu`, `cpu`, `mixed`; `cost-center`: any value; `workload-type`: `jupyter-notebook`, `ml-training`, `cpu-training`, `data-processing`, `model-inference`, `report-generation`)"
        ]
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
    let json =
        cluster(LABELS, CPU, &[group("g", r#""maxReplicas":2,"#, r#"[{"name":"w","resources":{"limits":{"nvidia.com/gpu":"lots"}}}]"#)]);
    let w = Workload::parse(WorkloadKind::RayCluster, &json).unwrap();
    let e = check(&w, &Settings::default()).err().unwrap();
    assert!(e.0.starts_with("`spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]`"), "{e}");
}

// ---- The request path: operations, kinds, subresources, deletion, UPDATE. ----

fn request(kind: &str, op: &str, extra: &str, object: &str) -> String {
    let group = if kind == "Pod" { "" } else { "ray.io" };
    format!(r#"{{"uid":"u","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}},"operation":"{op}"{extra},"object":{object}}}"#)
}

/// Evaluates through the SDK's entry point, as every host does.
fn respond(json: &str, settings: &str) -> ValidationResponse {
    (AIGOV_POLICY.validate_request)(json, settings, &NoCluster)
}

fn run(json: &str) -> Result<Verdict, Malformed> {
    let r = respond(json, "{}");
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
    for (kind, op, extra) in
        [("RayCluster", "DELETE", ""), ("RayCluster", "UPDATE", r#","subResource":"status""#), ("RayCluster", "CONNECT", "")]
    {
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

fn gpu_cluster(replicas: u32, max: u32) -> String {
    cluster(LABELS, CPU, &[group("g", &format!(r#""replicas":{replicas},"maxReplicas":{max},"#), &gpu(1))])
}

fn update(new: &str, old: &str) -> String {
    request("RayCluster", "UPDATE", &format!(r#","oldObject":{old}"#), new)
}

#[test]
fn an_update_lowering_max_replicas_below_replicas_passes_with_a_warning() {
    let r = respond(&update(&gpu_cluster(6, 4), &gpu_cluster(6, 8)), "{}");
    assert!(r.accepted, "{r:?}");
    assert_eq!(
        r.warnings,
        [
            "`spec.workerGroupSpecs[0]` (`g`) has `replicas: 6` above `maxReplicas: 4`, so KubeRay runs 4 workers: set `replicas` between 0 and 4 to say what runs"
        ]
    );
}

#[test]
fn an_update_may_rein_a_cluster_in_but_not_let_it_grow() {
    // Over the cap of 8 before and after, but less so: admitted.
    let r = respond(&update(&gpu_cluster(6, 12), &gpu_cluster(6, 16)), "{}");
    assert!(r.accepted, "{r:?}");
    assert_eq!(r.warnings.len(), 1, "{r:?}");
    assert!(r.warnings[0].starts_with("ray-cluster-limits (allowed: the object already had this before the update): `spec.workerGroupSpecs[0]` (`g`) has `maxReplicas: 12`"), "{r:?}");
    // Unchanged: admitted too (a label edit, the autoscaler's `replicas`).
    assert!(respond(&update(&gpu_cluster(7, 16), &gpu_cluster(6, 16)), "{}").accepted);
    // Further over the cap: refused.
    let r = respond(&update(&gpu_cluster(6, 20), &gpu_cluster(6, 16)), "{}");
    assert!(!r.accepted, "{r:?}");
    assert!(r.message.unwrap().contains("has `maxReplicas: 20`"));
    // Newly over the cap: refused.
    assert!(!respond(&update(&gpu_cluster(6, 12), &gpu_cluster(6, 8)), "{}").accepted);
    // Without `allowExistingViolations`, every violation counts.
    assert!(!respond(&update(&gpu_cluster(6, 12), &gpu_cluster(6, 16)), r#"{"allowExistingViolations":false}"#).accepted);
    // GPUs per worker, per family, the same way.
    let workers = |n: u32| cluster(LABELS, CPU, &[group("g", r#""maxReplicas":2,"#, &gpu(n))]);
    assert!(respond(&update(&workers(6), &workers(8)), "{}").accepted);
    assert!(!respond(&update(&workers(8), &workers(6)), "{}").accepted);
}

/// A cluster whose templates' claims are read as `claims` says, by the
/// template's path.
fn with_claims(json: &str, s: &Settings, claims: &dyn Fn(&PodTemplate<'_>) -> Option<Vec<PodClaim>>) -> Findings {
    let w = Workload::parse(WorkloadKind::RayCluster, json).unwrap();
    let classes = aigov_sdk::cluster::gpu::default_gpu_device_classes();
    evaluate_claimed(&w, s, &classes, &mut |t| Ok(claims(t))).unwrap()
}

fn gpu_claim(kind: &'static str, object: &str, n: u64) -> PodClaim {
    let spec = aigov_sdk::cluster::gpu::ClaimSpec::of_claim(
        &format!(
            r#"{{"spec":{{"devices":{{"requests":[{{"name":"g","exactly":{{"deviceClassName":"gpu.nvidia.com","count":{n}}}}}]}}}}}}"#
        ),
        "the claim",
    )
    .unwrap();
    PodClaim { index: 0, claim: "gpus".to_string(), kind, object: object.to_string(), spec }
}

const CLAIMING: &str =
    r#"[{"name":"ray-worker","resources":{"claims":[{"name":"gpus"}]}}],"resourceClaims":[{"name":"gpus","resourceClaimName":"x"}]"#;

#[test]
fn a_shared_claim_counts_in_each_pod_and_once_in_the_total() {
    let json = cluster(LABELS, CPU, &[group("a", r#""maxReplicas":4,"#, CLAIMING), group("b", r#""maxReplicas":4,"#, CLAIMING)]);
    let shared = |_: &PodTemplate<'_>| Some(vec![gpu_claim("ResourceClaim", "shared", 3)]);
    let f = with_claims(&json, &capped(2), &shared);
    assert_eq!(f.violations.len(), 1, "{f:?}");
    assert_eq!(
        f.violations[0].message,
        "the Ray cluster in `spec` can grow to 3 `nvidia.com/gpu` GPUs at maximum scale (ResourceClaim `shared`, shared by every pod that names it, once: 3 `nvidia.com/gpu`), but a Ray cluster may use at most 2: lower `maxReplicas`, the GPUs per worker or the devices the shared ResourceClaims claim"
    );
    let per_pod = |t: &PodTemplate<'_>| (!t.spec.resource_claims.is_empty()).then(|| vec![gpu_claim("ResourceClaimTemplate", "t", 5)]);
    let f = with_claims(&json, &capped(100), &per_pod);
    assert_eq!(
        f.violations[0].message,
        "`spec.workerGroupSpecs[0]` (`a`) requests 5 `nvidia.com/gpu` GPUs per worker (in claim `gpus` from ResourceClaimTemplate `t`), but a worker may have at most 4: request at most 4 in each worker pod"
    );
}

#[test]
fn unread_claims_leave_the_compute_type_undecided() {
    let labels = LABELS.replace("mixed", "gpu");
    let json = cluster(&labels, CPU, &[group("a", r#""maxReplicas":4,"#, CLAIMING)]);
    let f = with_claims(&json, &Settings::default(), &|t: &PodTemplate<'_>| t.spec.resource_claims.is_empty().then(Vec::new));
    assert!(f.violations.is_empty(), "{f:?}");
    let f = with_claims(&json, &Settings::default(), &|_: &PodTemplate<'_>| Some(Vec::new()));
    assert!(f.violations[0].message.contains("no pod of the Ray cluster"), "{f:?}");
}
