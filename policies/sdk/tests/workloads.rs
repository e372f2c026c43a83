//! Workload extraction for every supported kind: which templates are found,
//! at which paths, and how GPUs are counted.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use aigov_sdk::model::kind::WorkloadKind;
use aigov_sdk::model::workload::Workload;
use aigov_sdk::{GpuResources, Request, Role};

fn total(c: aigov_sdk::GpuCounts) -> u64 {
    c.values().sum()
}

fn request(group: &str, kind: &str, object: &str) -> String {
    format!(r#"{{"uid":"u","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}},"operation":"CREATE","object":{object}}}"#)
}

/// Template paths found in an object of `kind`.
fn paths(group: &str, kind: &str, object: &str) -> Vec<String> {
    let json = request(group, kind, object);
    let req = Request::parse(&json).unwrap();
    let w = req.workload().expect("a workload");
    w.templates().map(|t| t.spec_path().to_string()).collect()
}

const T: &str = r#"{"spec":{"containers":[{"name":"c"}]}}"#;

#[test]
fn every_kind_is_known_by_group_and_kind() {
    for k in WorkloadKind::ALL {
        assert_eq!(WorkloadKind::of(k.group(), k.kind()), Some(k), "{k:?}");
    }
    assert_eq!(WorkloadKind::of("batch", "Job"), Some(WorkloadKind::Job));
    assert_eq!(WorkloadKind::of("batch.volcano.sh", "Job"), Some(WorkloadKind::VolcanoJob));
    assert_eq!(WorkloadKind::of("", "ConfigMap"), None);
    assert_eq!(WorkloadKind::of("apps", "Pod"), None, "the group matters");
}

#[test]
fn pods_are_their_own_template() {
    assert_eq!(paths("", "Pod", r#"{"spec":{"containers":[]}}"#), ["spec"]);
}

#[test]
fn controllers() {
    let o = format!(r#"{{"spec":{{"template":{T}}}}}"#);
    for (g, k) in [
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ReplicaSet"),
        ("", "ReplicationController"),
        ("batch", "Job"),
    ] {
        assert_eq!(paths(g, k, &o), ["spec.template.spec"], "{k}");
    }
    let cron = format!(r#"{{"spec":{{"jobTemplate":{{"spec":{{"template":{T}}}}}}}}}"#);
    assert_eq!(paths("batch", "CronJob", &cron), ["spec.jobTemplate.spec.template.spec"]);
}

#[test]
fn ray_kinds() {
    let spec = format!(
        r#"{{"headGroupSpec":{{"template":{T}}},"workerGroupSpecs":[{{"groupName":"a","template":{T}}},{{"groupName":"b","maxReplicas":3,"numOfHosts":2,"template":{T}}}]}}"#
    );
    assert_eq!(
        paths("ray.io", "RayCluster", &format!(r#"{{"spec":{spec}}}"#)),
        ["spec.headGroupSpec.template.spec", "spec.workerGroupSpecs[0].template.spec", "spec.workerGroupSpecs[1].template.spec"]
    );
    assert_eq!(
        paths("ray.io", "RayJob", &format!(r#"{{"spec":{{"rayClusterSpec":{spec},"submitterPodTemplate":{T}}}}}"#)),
        [
            "spec.rayClusterSpec.headGroupSpec.template.spec",
            "spec.rayClusterSpec.workerGroupSpecs[0].template.spec",
            "spec.rayClusterSpec.workerGroupSpecs[1].template.spec",
            "spec.submitterPodTemplate.spec"
        ]
    );
    assert_eq!(
        paths("ray.io", "RayService", &format!(r#"{{"spec":{{"rayClusterConfig":{spec}}}}}"#)),
        [
            "spec.rayClusterConfig.headGroupSpec.template.spec",
            "spec.rayClusterConfig.workerGroupSpecs[0].template.spec",
            "spec.rayClusterConfig.workerGroupSpecs[1].template.spec"
        ]
    );
    let json = request("ray.io", "RayCluster", &format!(r#"{{"spec":{spec}}}"#));
    let req = Request::parse(&json).unwrap();
    let ray = req.workload().unwrap().ray.as_ref().unwrap();
    assert_eq!(ray.worker_groups[1].path.to_string(), "spec.workerGroupSpecs[1]");
    assert_eq!(ray.worker_groups[1].name.as_deref(), Some("b"));
    assert_eq!(ray.worker_groups[1].max_replicas, Some(3));
    assert_eq!(ray.worker_groups[1].num_of_hosts, Some(2));
    assert_eq!(ray.worker_groups[0].max_replicas, None);
}

#[test]
fn ray_job_on_a_shared_cluster_has_only_its_submitter() {
    // KubeRay still submits from a Job's pod (its default one here).
    let on_shared = r#"{"spec":{"clusterSelector":{"ray.io/cluster":"shared"}}}"#;
    assert_eq!(paths("ray.io", "RayJob", on_shared), ["spec.submitterPodTemplate.spec"]);
    let over_http = r#"{"spec":{"clusterSelector":{"ray.io/cluster":"shared"},"submissionMode":"HTTPMode"}}"#;
    assert!(paths("ray.io", "RayJob", over_http).is_empty());
}

#[test]
fn kubeflow_training_operator_kinds() {
    for (kind, field, roles) in [
        ("PyTorchJob", "pytorchReplicaSpecs", ["Master", "Worker"]),
        ("MPIJob", "mpiReplicaSpecs", ["Launcher", "Worker"]),
        ("TFJob", "tfReplicaSpecs", ["Chief", "Worker"]),
        ("JAXJob", "jaxReplicaSpecs", ["Master", "Worker"]),
        ("XGBoostJob", "xgbReplicaSpecs", ["Master", "Worker"]),
        ("PaddleJob", "paddleReplicaSpecs", ["Master", "Worker"]),
    ] {
        // Written in reverse order: paths come out in role-name order, whatever the input order.
        let o = format!(r#"{{"spec":{{"{field}":{{"{}":{{"replicas":2,"template":{T}}},"{}":{{"template":{T}}}}}}}}}"#, roles[1], roles[0]);
        assert_eq!(
            paths("kubeflow.org", kind, &o),
            [format!("spec.{field}.{}.template.spec", roles[0]), format!("spec.{field}.{}.template.spec", roles[1])],
            "{kind}"
        );
    }
}

#[test]
fn trainjob_trainer_overrides_and_patches_are_partial_templates() {
    let o = r#"{"spec":{"trainer":{"numNodes":2,"resourcesPerNode":{"limits":{"nvidia.com/gpu":4}}},
        "podTemplateOverrides":[{"targetJobs":[{"name":"node"}],"metadata":{"labels":{"team":"a"}},
            "spec":{"serviceAccountName":"sa","tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],
                "volumes":[{"name":"h","hostPath":{"path":"/"}}],"containers":[{"name":"sidecar","env":[{"name":"A","value":"b"}]}]}},
            {"targetJobs":[{"name":"dataset-initializer"},{"name":"model-initializer"}],"spec":{"nodeSelector":{"pool":"cpu"}}}]}}"#;
    let json = request("trainer.kubeflow.org", "TrainJob", o);
    let req = Request::parse(&json).unwrap();
    let w = req.workload().unwrap();
    let t: Vec<_> = w.templates().collect();
    assert_eq!(t.len(), 3);
    assert!(t.iter().all(|t| t.is_partial()));
    assert_eq!((t[0].role, t[0].spec_path().to_string()), (Role::Trainer, "spec.trainer".to_string()));
    assert!(t[0].spec.tolerations.is_empty(), "the overrides are templates of their own");
    let gpus = t[0].gpu_requests(&GpuResources::default()).unwrap();
    assert_eq!(gpus[0].container_path.to_string(), "spec.trainer");
    assert_eq!(gpus[0].total(), 4);
    assert_eq!(t[1].role, Role::Override);
    assert_eq!(t[1].spec_path().to_string(), "spec.podTemplateOverrides[0].spec");
    assert_eq!(t[1].labels_path().to_string(), "spec.podTemplateOverrides[0].metadata.labels");
    assert_eq!(t[1].name.as_deref(), Some("node"));
    assert_eq!(t[1].spec.service_account_name.as_deref(), Some("sa"));
    assert_eq!(t[1].spec.volumes[0].host_path.as_ref().map(|h| h.path.to_string()).as_deref(), Some("/"));
    let c = t[1].containers().next().unwrap();
    assert_eq!(t[1].container_path(&c).to_string(), "spec.podTemplateOverrides[0].spec.containers[0]");
    assert!(c.container.image.is_none());
    assert_eq!(t[1].describe(), "the override of replicated job `node`");
    assert_eq!(t[2].name, None);
    assert_eq!(t[2].jobs.iter().map(|j| j.to_string()).collect::<Vec<_>>(), ["dataset-initializer", "model-initializer"]);
    assert_eq!(t[2].describe(), "the override of replicated jobs `dataset-initializer`, `model-initializer`");
    assert_eq!(w.trainer_overrides().map(|t| t.path().to_string()).collect::<Vec<_>>(), ["spec.podTemplateOverrides[0]"]);
    assert!(std::ptr::eq(w.gpu_holder(t[1]).unwrap(), t[0]), "the trainer's GPUs decide for its override");
    assert!(w.gpu_holder(t[2]).is_none(), "the runtime's resources decide for the initializers");
    assert!(std::ptr::eq(w.gpu_holder(t[0]).unwrap(), t[0]));

    // Trainer v2.0: podSpecOverrides with the pod fields beside `targetJobs`.
    let old = r#"{"spec":{"trainer":{},"podSpecOverrides":[{"targetJobs":[{"name":"node"}],"tolerations":[{"operator":"Exists"}]}]}}"#;
    let json = request("trainer.kubeflow.org", "TrainJob", old);
    let req = Request::parse(&json).unwrap();
    let w = req.workload().unwrap();
    let o = w.templates().nth(1).unwrap();
    assert_eq!((o.spec.tolerations.len(), o.spec_path().to_string()), (1, "spec.podSpecOverrides[0]".to_string()));
    assert!(o.metadata.is_none() && o.is_partial());
    assert!(w.gpu_holder(o).is_none(), "no `resourcesPerNode`: the runtime's resources decide");

    // Trainer v2.2+: a runtime patch per replicated job.
    let patched = r#"{"spec":{"runtimePatches":[{"manager":"kueue.x-k8s.io/manager","trainingRuntimeSpec":{"template":{
        "metadata":{"labels":{"js":"x"}},"spec":{"replicatedJobs":[
            {"name":"dataset-initializer","template":{"metadata":{"labels":{"job":"y"}}}},
            {"name":"node","template":{"spec":{"template":{"metadata":{"labels":{"kueue.x-k8s.io/podset":"node"}},
                "spec":{"nodeSelector":{"pool":"gpu"},"securityContext":{"runAsUser":0},
                    "containers":[{"name":"node","securityContext":{"privileged":true}}]}}}}}]}}}}]}}"#;
    let json = request("trainer.kubeflow.org", "TrainJob", patched);
    let req = Request::parse(&json).unwrap();
    let w = req.workload().unwrap();
    let t: Vec<_> = w.templates().collect();
    assert_eq!(t.len(), 1, "no trainer, and a patch of Job metadata only shapes no pod");
    assert_eq!(
        t[0].spec_path().to_string(),
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].template.spec.template.spec"
    );
    assert_eq!((t[0].role, t[0].name.as_deref()), (Role::Override, Some("node")));
    assert_eq!(t[0].describe(), "the runtime patch of replicated job `node`");
    assert_eq!(t[0].labels().unwrap().get("kueue.x-k8s.io/podset").map(|v| &**v), Some("node"));
    assert_eq!(t[0].spec.security_context.as_ref().unwrap().run_as_user, Some(0));
    assert_eq!(t[0].spec.containers[0].security_context.as_ref().unwrap().privileged, Some(true));
    assert!(w.trainer().is_none() && w.gpu_holder(t[0]).is_none());
    assert!(paths("trainer.kubeflow.org", "TrainJob", r#"{"spec":{"runtimeRef":{"name":"x"}}}"#).is_empty());
}

#[test]
fn trainjob_initializer_storage_uris() {
    let o = r#"{"spec":{"initializer":{"model":{"storageUri":"hf://meta-llama/Llama-3.2-1B"},"dataset":{"storageUri":"s3://datasets/alpaca"}},"trainer":{}}}"#;
    let json = request("trainer.kubeflow.org", "TrainJob", o);
    let req = Request::parse(&json).unwrap();
    let tj = req.workload().unwrap().train_job.as_ref().unwrap();
    assert_eq!(tj.model_storage_uri.as_deref(), Some("hf://meta-llama/Llama-3.2-1B"));
    assert_eq!(tj.dataset_storage_uri.as_deref(), Some("s3://datasets/alpaca"));
    let json = request("trainer.kubeflow.org", "TrainJob", r#"{"spec":{"initializer":{"model":null}}}"#);
    let req = Request::parse(&json).unwrap();
    assert!(req.workload().unwrap().train_job.as_ref().unwrap().model_storage_uri.is_none());
    let o = r#"{"spec":{"initializer":{"model":{"env":[{"name":"STORAGE_URI","value":"hf://org/m"}]}}}}"#;
    let json = request("trainer.kubeflow.org", "TrainJob", o);
    let req = Request::parse(&json).unwrap();
    let env = &req.workload().unwrap().train_job.as_ref().unwrap().model_env;
    assert_eq!((&*env[0].name, env[0].value.as_deref()), ("STORAGE_URI", Some("hf://org/m")));
}

#[test]
fn windows_user_namespaces_and_host_process() {
    let json = pod(r#"{"os":{"name":"windows"},"hostUsers":false,"securityContext":{"windowsOptions":{"hostProcess":true}},
        "containers":[{"name":"a","securityContext":{"windowsOptions":{"hostProcess":false}}}]}"#);
    with_template(&json, |t| {
        assert!(t.spec.is_windows());
        assert_eq!(t.spec.host_users, Some(false));
        let pod = t.spec.security_context.as_ref().unwrap();
        assert_eq!(pod.windows_options.as_ref().unwrap().host_process, Some(true));
        let c = t.spec.containers[0].security_context.as_ref().unwrap();
        assert_eq!(c.windows_options.as_ref().unwrap().host_process, Some(false));
    });
    with_template(&pod(r#"{"os":{"name":"linux"},"containers":[]}"#), |t| assert!(!t.spec.is_windows()));
    with_template(&pod(r#"{"containers":[]}"#), |t| assert!(!t.spec.is_windows() && t.spec.host_users.is_none()));
}

#[test]
fn volcano_jobset_and_leaderworkerset() {
    let v =
        format!(r#"{{"spec":{{"minAvailable":8,"tasks":[{{"name":"a","replicas":8,"template":{T}}},{{"name":"b","template":{T}}}]}}}}"#);
    assert_eq!(paths("batch.volcano.sh", "Job", &v), ["spec.tasks[0].template.spec", "spec.tasks[1].template.spec"]);
    let js = format!(r#"{{"spec":{{"replicatedJobs":[{{"name":"w","template":{{"spec":{{"template":{T}}}}}}}]}}}}"#);
    assert_eq!(paths("jobset.x-k8s.io", "JobSet", &js), ["spec.replicatedJobs[0].template.spec.template.spec"]);
    let lws = format!(r#"{{"spec":{{"leaderWorkerTemplate":{{"size":4,"leaderTemplate":{T},"workerTemplate":{T}}}}}}}"#);
    assert_eq!(
        paths("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &lws),
        ["spec.leaderWorkerTemplate.leaderTemplate.spec", "spec.leaderWorkerTemplate.workerTemplate.spec"]
    );
    let lws_no_leader = format!(r#"{{"spec":{{"leaderWorkerTemplate":{{"workerTemplate":{T}}}}}}}"#);
    assert_eq!(paths("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &lws_no_leader), ["spec.leaderWorkerTemplate.workerTemplate.spec"]);
}

#[test]
fn nulls_and_absent_fields_are_empty_not_errors() {
    assert!(paths("apps", "Deployment", r#"{"metadata":null,"spec":null}"#).is_empty());
    assert_eq!(paths("", "Pod", r#"{"metadata":{"labels":null},"spec":{"containers":null,"tolerations":null}}"#), ["spec"]);
    assert_eq!(paths("apps", "Deployment", r#"{"spec":{"template":{"metadata":{}}}}"#), ["spec.template.spec"]);
}

fn pod(spec: &str) -> String {
    request("", "Pod", &format!(r#"{{"spec":{spec}}}"#))
}

fn with_template<R>(json: &str, f: impl FnOnce(&aigov_sdk::PodTemplate<'_>) -> R) -> R {
    let req = Request::parse(json).unwrap();
    let w = req.workload().unwrap();
    let t = w.templates().next().unwrap();
    f(t)
}

#[test]
fn gpu_counting_follows_the_scheduler() {
    let g = GpuResources::default();
    // Limits and requests of one resource: the larger counts, not the sum.
    let json = pod(
        r#"{"containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":"2"},"requests":{"nvidia.com/gpu":"1"}}},{"name":"b","resources":{"requests":{"nvidia.com/gpu":1}}}]}"#,
    );
    assert_eq!(with_template(&json, |t| total(t.gpus_per_pod(&g).unwrap())), 3);
    // Init containers run before the app: the peak, not the sum...
    let json = pod(
        r#"{"initContainers":[{"name":"i","resources":{"limits":{"nvidia.com/gpu":8}}}],"containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":2}}}]}"#,
    );
    assert_eq!(with_template(&json, |t| total(t.gpus_per_pod(&g).unwrap())), 8);
    // ...but sidecars (restartPolicy Always) run alongside and add up.
    let json = pod(
        r#"{"initContainers":[{"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":1}}}],"containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":2}}}]}"#,
    );
    assert_eq!(with_template(&json, |t| total(t.gpus_per_pod(&g).unwrap())), 3);
    // Different GPU resources add up; other resources do not count.
    let json = pod(
        r#"{"containers":[{"name":"a","resources":{"limits":{"nvidia.com/mig-1g.5gb":2,"amd.com/gpu":1,"cpu":"64","example.com/fpga":1}}}]}"#,
    );
    assert_eq!(with_template(&json, |t| total(t.gpus_per_pod(&g).unwrap())), 3);
    let reqs = with_template(&json, |t| t.gpu_requests(&g).unwrap());
    assert_eq!(reqs[0].resources, vec![("amd.com/gpu".to_string(), 1), ("nvidia.com/mig-1g.5gb".to_string(), 2)], "in name order");
}

#[test]
fn gpu_detection_covers_every_container_list() {
    let g = GpuResources::default();
    for (list, path) in [
        ("containers", "spec.containers[1]"),
        ("initContainers", "spec.initContainers[1]"),
        ("ephemeralContainers", "spec.ephemeralContainers[1]"),
    ] {
        let json = pod(&format!(r#"{{"{list}":[{{"name":"x"}},{{"name":"y","resources":{{"limits":{{"nvidia.com/gpu":1}}}}}}]}}"#));
        let reqs = with_template(&json, |t| t.gpu_requests(&g).unwrap());
        assert_eq!(reqs.len(), 1, "{list}");
        assert_eq!(reqs[0].container_path.to_string(), path);
        assert_eq!(reqs[0].container_name, "y");
        assert!(with_template(&json, |t| t.requests_gpu(&g).unwrap()));
    }
    let zero = pod(r#"{"containers":[{"name":"z","resources":{"limits":{"nvidia.com/gpu":"0"},"requests":{"nvidia.com/gpu":0}}}]}"#);
    assert!(!with_template(&zero, |t| t.requests_gpu(&g).unwrap()));
    let frac = pod(r#"{"containers":[{"name":"f","resources":{"limits":{"nvidia.com/gpu":"500m"}}}]}"#);
    assert_eq!(with_template(&frac, |t| total(t.gpus_per_pod(&g).unwrap())), 1, "a fraction rounds up to a whole GPU");
}

#[test]
fn bad_quantities_name_their_path() {
    let g = GpuResources::default();
    let json = request(
        "apps",
        "Deployment",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"a"},{"name":"b","resources":{"requests":{"nvidia.com/gpu":"1.2.3"}}}]}}}}"#,
    );
    let err = with_template(&json, |t| t.gpu_requests(&g).unwrap_err());
    assert_eq!(
        err.0,
        "`spec.template.spec.containers[1].resources.requests[nvidia.com/gpu]`: `1.2.3` is not a valid quantity (expected a number with an optional suffix, like `2`, `500m` or `4Gi`)"
    );
    // A bad quantity of a resource that is not a GPU is not read at all.
    let json = pod(r#"{"containers":[{"name":"a","resources":{"limits":{"cpu":"lots"}}}]}"#);
    assert_eq!(with_template(&json, |t| total(t.gpus_per_pod(&g).unwrap())), 0);
}

#[test]
fn malformed_objects_name_the_field() {
    let json = request("ray.io", "RayCluster", r#"{"spec":{"workerGroupSpecs":[{"maxReplicas":"eight"}]}}"#);
    let err = Request::parse(&json).unwrap_err();
    assert_eq!(
        err.0,
        "the RayCluster is malformed: `spec.workerGroupSpecs[0].maxReplicas`: invalid type: string \"eight\", expected a whole number"
    );
    let json = request("", "Pod", r#"{"spec":{"containers":[{"name":"a","securityContext":{"privileged":"yes"}}]}}"#);
    assert_eq!(
        Request::parse(&json).unwrap_err().0,
        "the Pod is malformed: `spec.containers[0].securityContext.privileged`: invalid type: string \"yes\", expected a boolean"
    );
}

#[test]
fn labels_and_names_borrow_from_the_request() {
    let json = request("", "Pod", r#"{"metadata":{"name":"p","labels":{"team":"ml","esc\"aped":"v\n"}},"spec":{}}"#);
    let req = Request::parse(&json).unwrap();
    let w = req.workload().unwrap();
    assert_eq!(w.metadata.label("team"), Some("ml"));
    assert_eq!(w.metadata.label("esc\"aped"), Some("v\n"), "escaped strings are decoded");
    assert_eq!(w.describe(), "Pod `p`");
    assert!(matches!(w.metadata.labels.get("team").unwrap().0, std::borrow::Cow::Borrowed(_)));
}

#[test]
fn lookups_parse_with_the_same_model() {
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}}"#;
    let w = Workload::parse(WorkloadKind::Pod, pod).unwrap();
    assert_eq!(total(w.templates().next().unwrap().gpus_per_pod(&GpuResources::default()).unwrap()), 2);
}

fn workload_of<R>(group: &str, kind: &str, object: &str, f: impl FnOnce(&Workload<'_>) -> R) -> R {
    let json = request(group, kind, object);
    let req = Request::parse(&json).unwrap();
    f(req.workload().unwrap())
}

fn scales(group: &str, kind: &str, object: &str) -> Vec<(Option<u64>, String)> {
    workload_of(group, kind, object, |w| w.templates().map(|t| (t.scale.pods, t.scale.why.to_string())).collect())
}

#[test]
fn full_scale_pod_counts() {
    assert_eq!(scales("", "Pod", T), [(Some(1), "a Pod".to_string())]);
    let d = format!(r#"{{"spec":{{"replicas":3,"template":{T}}}}}"#);
    assert_eq!(scales("apps", "Deployment", &d), [(Some(3), "`spec.replicas: 3`".to_string())]);
    let d = format!(r#"{{"spec":{{"template":{T}}}}}"#);
    assert_eq!(scales("apps", "StatefulSet", &d)[0].0, Some(1), "absent replicas is 1");
    assert_eq!(scales("apps", "DaemonSet", &d)[0].0, None, "one per node: unbounded");
    let j = format!(r#"{{"spec":{{"parallelism":4,"template":{T}}}}}"#);
    assert_eq!(scales("batch", "Job", &j)[0].0, Some(4));
    let rc = format!(
        r#"{{"spec":{{"headGroupSpec":{{"template":{T}}},"workerGroupSpecs":[{{"groupName":"a","maxReplicas":8,"numOfHosts":4,"template":{T}}},{{"groupName":"b","template":{T}}}]}}}}"#
    );
    let s = scales("ray.io", "RayCluster", &rc);
    assert_eq!(s[0].0, Some(1));
    assert_eq!(s[1], (Some(32), "`spec.workerGroupSpecs[0].maxReplicas: 8` × `spec.workerGroupSpecs[0].numOfHosts: 4`".to_string()));
    assert_eq!(s[2].0, None, "no maxReplicas: unbounded");
    let pj = format!(
        r#"{{"spec":{{"elasticPolicy":{{"minReplicas":1,"maxReplicas":6,"nProcPerNode":4}},"pytorchReplicaSpecs":{{"Master":{{"template":{T}}},"Worker":{{"replicas":2,"template":{T}}}}}}}}}"#
    );
    let s = scales("kubeflow.org", "PyTorchJob", &pj);
    assert_eq!((s[0].0, s[1].0), (Some(1), Some(6)), "elastic workers scale to maxReplicas");
    let above = pj.replace(r#""replicas":2"#, r#""replicas":9"#);
    assert_eq!(
        scales("kubeflow.org", "PyTorchJob", &above)[1],
        (Some(9), "`spec.pytorchReplicaSpecs.Worker.replicas: 9`".to_string()),
        "the operator runs `replicas` workers, above maxReplicas too"
    );
    workload_of("kubeflow.org", "PyTorchJob", &pj, |w| {
        let k = w.kubeflow.as_ref().unwrap();
        assert_eq!(k.nproc_per_node.as_deref(), Some("4"));
        assert_eq!(k.nproc_path.as_ref().unwrap().to_string(), "spec.elasticPolicy.nProcPerNode");
        assert_eq!((k.elastic_min, k.elastic_max), (Some(1), Some(6)));
        let roles: Vec<_> = w.templates().map(|t| (t.role, t.name.as_deref().map(str::to_string))).collect();
        assert_eq!(roles, [(Role::Replica, Some("Master".into())), (Role::Replica, Some("Worker".into()))]);
    });
    let js = format!(
        r#"{{"spec":{{"replicatedJobs":[{{"name":"w","replicas":2,"template":{{"spec":{{"parallelism":4,"template":{T}}}}}}}]}}}}"#
    );
    assert_eq!(scales("jobset.x-k8s.io", "JobSet", &js)[0].0, Some(8));
    let lws = format!(r#"{{"spec":{{"replicas":3,"leaderWorkerTemplate":{{"size":4,"leaderTemplate":{T},"workerTemplate":{T}}}}}}}"#);
    let s = scales("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &lws);
    assert_eq!((s[0].0, s[1].0), (Some(3), Some(9)), "3 leaders, 3 x (4 - 1) workers");
    let lws = format!(r#"{{"spec":{{"replicas":2,"leaderWorkerTemplate":{{"size":4,"workerTemplate":{T}}}}}}}"#);
    assert_eq!(scales("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &lws)[0].0, Some(8), "no leader template: every pod is a worker");
    let v = format!(r#"{{"spec":{{"tasks":[{{"name":"a","replicas":8,"template":{T}}}]}}}}"#);
    assert_eq!(scales("batch.volcano.sh", "Job", &v)[0].0, Some(8));
}

#[test]
fn a_cron_jobs_jobs_at_once() {
    let cron = |spec: &str, job: &str| {
        let cj = format!(r#"{{"spec":{{{spec}"jobTemplate":{{"spec":{{{job}"parallelism":2,"template":{T}}}}}}}}}"#);
        scales("batch", "CronJob", &cj).remove(0)
    };
    let every_minute = r#""schedule":"* * * * *","#;
    assert_eq!(cron(every_minute, "").0, None, "`Allow` (the default) and no deadline: unbounded");
    assert_eq!(cron(&format!(r#"{every_minute}"concurrencyPolicy":"Allow","#), "").0, None);
    assert_eq!(cron(&format!(r#"{every_minute}"concurrencyPolicy":"Forbid","#), "").0, Some(2), "one Job of 2 pods");
    assert_eq!(cron(&format!(r#"{every_minute}"concurrencyPolicy":"Replace","#), "").0, Some(2));
    assert_eq!(
        cron(&format!(r#"{every_minute}"suspend":true,"concurrencyPolicy":"Forbid","#), "").0,
        Some(2),
        "a suspended CronJob counts"
    );
    let deadline = r#""activeDeadlineSeconds":3600,"#;
    assert_eq!(
        cron(every_minute, deadline),
        (
            Some(120),
            "60 Jobs at once (`spec.jobTemplate.spec.activeDeadlineSeconds: 3600` over runs of `spec.schedule` at least 1 min apart) × `spec.jobTemplate.spec.parallelism: 2`"
                .to_string()
        )
    );
    assert_eq!(
        cron(r#""schedule":"*/7 * * * *","#, deadline).0,
        Some(30),
        "runs 7 minutes apart but 4 round the hour (:56 to :00): 15 Jobs of 2 pods"
    );
    assert_eq!(cron(r#""schedule":"0 */2 * * *","#, deadline).0, Some(2), "one Job: it ends before the next starts");
    assert_eq!(cron(r#""schedule":"@every 90s","#, deadline).0, Some(80), "40 Jobs");
    assert_eq!(
        cron(r#""schedule":"0 0 * * *","#, r#""activeDeadlineSeconds":0,"#).0,
        Some(0),
        "a Job past its deadline at once runs no pod"
    );
    assert_eq!(cron(r#""schedule":"61 * * * *","#, deadline).0, None, "a schedule that does not parse bounds nothing");
    assert_eq!(cron(r#""#, deadline).0, None, "nor does no schedule");
    assert_eq!(
        cron(every_minute, &format!(r#"{deadline}"suspend":true,"#)).0,
        None,
        "Jobs created suspended: the deadline counts from resumption"
    );
    assert_eq!(cron(&format!(r#"{every_minute}"concurrencyPolicy":"Sometimes","#), deadline).0, Some(120), "another value runs as `Allow`");
}

#[test]
fn notebooks_and_inference_services() {
    let nb = format!(r#"{{"spec":{{"template":{T}}}}}"#);
    assert_eq!(paths("kubeflow.org", "Notebook", &nb), ["spec.template.spec"]);
    let isvc = r#"{"spec":{"predictor":{"minReplicas":1,"maxReplicas":4,"labels":{"team":"ml"},
        "model":{"modelFormat":{"name":"huggingface"},"storageUri":"hf://meta-llama/Llama-3-8B","resources":{"limits":{"nvidia.com/gpu":"1"}}},
        "containers":[{"name":"sidecar","image":"proxy"}]},
        "transformer":{"containers":[{"name":"t","image":"tr"}]},
        "explainer":{"containers":[{"name":"e","image":"ex"}]}}}"#;
    assert_eq!(paths("serving.kserve.io", "InferenceService", isvc), ["spec.predictor", "spec.transformer", "spec.explainer"]);
    workload_of("serving.kserve.io", "InferenceService", isvc, |w| {
        let p = w.templates().next().unwrap();
        assert_eq!(p.role, Role::Predictor);
        assert_eq!(p.scale.pods, Some(4));
        assert_eq!(p.labels().unwrap().get("team").map(|v| &**v), Some("ml"));
        assert_eq!(p.labels_path().to_string(), "spec.predictor.labels");
        let (model, _) = p.model.as_ref().unwrap();
        assert_eq!(model.storage_uri.as_deref(), Some("hf://meta-llama/Llama-3-8B"));
        let gpus = p.gpu_requests(&GpuResources::default()).unwrap();
        assert_eq!(gpus[0].container_path.to_string(), "spec.predictor.model");
        let names: Vec<String> = p.containers().map(|c| c.container.name.to_string()).collect();
        assert_eq!(names, ["sidecar", "kserve-container"]);
        let t = w.templates().nth(1).unwrap();
        assert_eq!(t.scale.pods, None, "no maxReplicas: the autoscaler is unbounded");
    });
    let legacy = r#"{"spec":{"predictor":{"sklearn":{"storageUri":"gs://models/iris","image":"x"}}}}"#;
    workload_of("serving.kserve.io", "InferenceService", legacy, |w| {
        let p = w.templates().next().unwrap();
        let (model, c) = p.model.as_ref().unwrap();
        assert_eq!(model.field, "sklearn");
        assert_eq!(c.image.as_deref(), Some("x"));
        let first = p.containers().next().unwrap();
        assert_eq!(p.container_path(&first).to_string(), "spec.predictor.sklearn");
    });
}

#[test]
fn inference_service_model_locations() {
    let isvc = r#"{"spec":{"predictor":{"model":{"storage":{"key":"minio","path":"iris","parameters":{"type":"s3","bucket":"models","region":"x"}}},
            "storageUris":[{"uri":"s3://models/base","mountPath":"/mnt/models/base"},{"mountPath":"/mnt/models/x"}]},
        "transformer":{"containers":[{"name":"t"}],"storageUris":[{"uri":"hf://org/tok"}]},
        "explainer":{"art":{"type":"SquareAttack","storageUri":"gs://b/art","image":"art"}}}}"#;
    workload_of("serving.kserve.io", "InferenceService", isvc, |w| {
        let t: Vec<_> = w.templates().collect();
        let (model, _) = t[0].model.as_ref().unwrap();
        let storage = model.storage.as_ref().unwrap();
        assert_eq!(
            (storage.path.as_deref(), storage.kind.as_deref(), storage.bucket.as_deref()),
            (Some("iris"), Some("s3"), Some("models"))
        );
        let uris: Vec<Option<&str>> = t[0].storage_uris.iter().map(|u| u.uri.as_deref()).collect();
        assert_eq!(uris, [Some("s3://models/base"), None]);
        assert_eq!(t[1].storage_uris[0].uri.as_deref(), Some("hf://org/tok"));
        assert!(t[1].model.is_none());
        let (art, c) = t[2].model.as_ref().unwrap();
        assert_eq!((art.field, art.storage_uri.as_deref(), c.image.as_deref()), ("art", Some("gs://b/art"), Some("art")));
        let first = t[2].containers().next().unwrap();
        assert_eq!(t[2].container_path(&first).to_string(), "spec.explainer.art");
    });
}

#[test]
fn job_templates_and_suspend() {
    let cron = format!(r#"{{"spec":{{"suspend":true,"jobTemplate":{{"metadata":{{"labels":{{"a":"b"}}}},"spec":{{"template":{T}}}}}}}}}"#);
    workload_of("batch", "CronJob", &cron, |w| {
        assert_eq!(w.suspend, Some(true));
        assert_eq!(w.job_templates[0].path.to_string(), "spec.jobTemplate");
        assert_eq!(w.job_templates[0].metadata.label("a"), Some("b"));
    });
}

/// Names of the templates [`Workload::training_workers`] picks.
fn training_workers(group: &str, kind: &str, object: &str) -> Vec<String> {
    workload_of(group, kind, object, |w| w.training_workers().map(|t| t.describe()).collect())
}

#[test]
fn training_workers_per_kind() {
    let pj = format!(r#"{{"spec":{{"pytorchReplicaSpecs":{{"Master":{{"template":{T}}},"Worker":{{"replicas":2,"template":{T}}}}}}}}}"#);
    assert_eq!(training_workers("kubeflow.org", "PyTorchJob", &pj), ["replica type `Master`", "replica type `Worker`"]);
    let tf = format!(
        r#"{{"spec":{{"tfReplicaSpecs":{{"Chief":{{"template":{T}}},"PS":{{"template":{T}}},"Evaluator":{{"template":{T}}},"worker":{{"template":{T}}}}}}}}}"#
    );
    assert_eq!(
        training_workers("kubeflow.org", "TFJob", &tf),
        ["replica type `Chief`", "replica type `worker`"],
        "PS and Evaluator are not workers; case is ignored"
    );
    let mpi = format!(
        r#"{{"spec":{{"slotsPerWorker":8,"mpiReplicaSpecs":{{"Launcher":{{"template":{T}}},"Worker":{{"replicas":2,"template":{T}}}}}}}}}"#
    );
    assert_eq!(training_workers("kubeflow.org", "MPIJob", &mpi), ["replica type `Worker`"], "the launcher only runs mpirun");
    workload_of("kubeflow.org", "MPIJob", &mpi, |w| {
        let k = w.kubeflow.as_ref().unwrap();
        assert_eq!((k.slots_per_worker, k.run_launcher_as_worker), (Some(8), None));
    });
    let mpi = format!(
        r#"{{"spec":{{"runLauncherAsWorker":true,"mpiReplicaSpecs":{{"Launcher":{{"template":{T}}},"Worker":{{"template":{T}}}}}}}}}"#
    );
    assert_eq!(training_workers("kubeflow.org", "MPIJob", &mpi), ["replica type `Launcher`", "replica type `Worker`"]);
    let rc = format!(r#"{{"spec":{{"headGroupSpec":{{"template":{T}}},"workerGroupSpecs":[{{"groupName":"gpu","template":{T}}}]}}}}"#);
    assert_eq!(training_workers("ray.io", "RayCluster", &rc), ["worker group `gpu`"], "not the head");
    let lws = format!(r#"{{"spec":{{"leaderWorkerTemplate":{{"size":2,"leaderTemplate":{T},"workerTemplate":{T}}}}}}}"#);
    assert_eq!(training_workers("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &lws), ["the leader template", "the worker template"]);
    let d = format!(r#"{{"spec":{{"template":{T}}}}}"#);
    assert!(training_workers("apps", "Deployment", &d).is_empty(), "not a distributed job");
    assert!(training_workers("", "Pod", T).is_empty());
}

/// A Pod with these owner references, created by `user`, as an AdmissionRequest.
fn pod_request(owners: &str, user: &str) -> String {
    format!(
        r#"{{"uid":"1","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE","userInfo":{{"username":"{user}"}},"object":{{"metadata":{{"ownerReferences":{owners}}},"spec":{{"containers":[]}}}}}}"#
    )
}

#[test]
fn the_controller_is_the_owner_that_sent_the_request() {
    use aigov_sdk::model::trust::TrustedControllers;
    let controller = |owners: &str, user: &str| {
        let text = pod_request(owners, user);
        let req = aigov_sdk::Request::parse(&text).unwrap();
        req.set_trusted_controllers(TrustedControllers::Defaults);
        req.controller().map(|c| (c.kind.to_string(), c.name.to_string()))
    };
    let job =
        r#"[{"apiVersion":"v1","kind":"ConfigMap","name":"x"},{"apiVersion":"batch/v1","kind":"Job","name":"train","controller":true}]"#;
    let job_controller = "system:serviceaccount:kube-system:job-controller";
    assert_eq!(controller(job, job_controller), Some(("Job".into(), "train".into())));
    assert_eq!(controller(job, "system:kube-controller-manager"), Some(("Job".into(), "train".into())));
    assert_eq!(controller(job, "jane@example.com"), None, "a user's owner reference proves nothing");
    assert_eq!(controller(job, "system:serviceaccount:kube-system:replicaset-controller"), None, "another controller's");
    let not_controller = r#"[{"apiVersion":"batch/v1","kind":"Job","name":"x","controller":false}]"#;
    assert_eq!(controller(not_controller, job_controller), None, "an owner that is not the controller");
    for (api_version, kind, user) in [
        ("apps/v1", "ReplicaSet", "system:serviceaccount:kube-system:replicaset-controller"),
        ("v1", "ReplicationController", "system:serviceaccount:kube-system:replication-controller"),
        ("kubeflow.org/v1", "Notebook", "system:serviceaccount:kubeflow:notebook-controller-service-account"),
        ("ray.io/v1", "RayCluster", "system:serviceaccount:ray-system:kuberay-operator"),
        ("v1", "Pod", "system:serviceaccount:lws-system:lws-controller-manager"),
    ] {
        let owners = format!(r#"[{{"apiVersion":"{api_version}","kind":"{kind}","name":"x","controller":true}}]"#);
        assert!(controller(&owners, user).is_some(), "{kind} by {user}");
        assert!(controller(&owners, "jane@example.com").is_none(), "{kind} by a user");
    }
    for (api_version, kind) in
        [("v1", "ConfigMap"), ("argoproj.io/v1alpha1", "Workflow"), ("v1", "Node"), ("kueue.x-k8s.io/v1beta1", "Workload")]
    {
        let owners = format!(r#"[{{"apiVersion":"{api_version}","kind":"{kind}","name":"x","controller":true}}]"#);
        assert!(controller(&owners, "system:kube-controller-manager").is_none(), "{api_version} {kind}: no controller the defaults trust");
    }
}

#[test]
fn every_workload_kind_in_metadata_is_every_kind_the_model_decodes() {
    let mut listed: Vec<(&str, &str)> =
        aigov_metadata::WORKLOAD_RESOURCES.iter().flat_map(|(group, _, resources)| resources.iter().map(move |r| (*group, *r))).collect();
    let mut modelled: Vec<(&str, &str)> = WorkloadKind::ALL.iter().map(|k| (k.group(), k.resource())).collect();
    listed.sort();
    modelled.sort();
    assert_eq!(listed, modelled, "aigov-metadata's WORKLOAD_RESOURCES and WorkloadKind::ALL");
}

#[test]
fn host_ports_as_the_pods_will_have_them() {
    use aigov_sdk::model::pod::HostPort;
    let ports = r#"[{"containerPort":8000},{"containerPort":8001,"hostPort":0},{"containerPort":8002,"hostPort":8002}]"#;
    let object = |host_network: bool| {
        format!(
            r#"{{"spec":{{"selector":{{}},"template":{{"spec":{{"hostNetwork":{host_network},
            "initContainers":[{{"name":"i","ports":[{{"containerPort":7000}}]}}],
            "containers":[{{"name":"c","ports":{ports}}}],
            "ephemeralContainers":[{{"name":"e","ports":[{{"containerPort":6000}}]}}]}}}}}}}}"#
        )
    };
    let found = |host_network: bool| {
        let json = request("apps", "Deployment", &object(host_network));
        let req = Request::parse(&json).unwrap();
        let w = req.workload().unwrap();
        let t = w.templates().next().unwrap();
        t.containers().flat_map(|c| t.host_ports(&c).map(move |(i, p)| (c.container.name.to_string(), i, p))).collect::<Vec<_>>()
    };
    let hp = |port, written, host_network| HostPort { port, written, host_network };
    assert_eq!(found(false), [("c".to_string(), 2, hp(8002, true, false))]);
    assert_eq!(
        found(true),
        [
            ("c".to_string(), 0, hp(8000, false, true)),
            ("c".to_string(), 1, hp(8001, false, true)),
            ("c".to_string(), 2, hp(8002, true, true)),
            ("i".to_string(), 0, hp(7000, false, true)),
        ],
        "containers and init containers, not ephemeral ones"
    );
}
