//! The model against what each controller's source says it builds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use serde_json::{Value, json};

use super::*;

fn all(object: Value) -> Vec<Built> {
    descendants(&object, "ml", &Nothing).unwrap()
}

fn kinds(built: &[Built]) -> Vec<String> {
    built.iter().map(|b| format!("{} by {}", b.kind(), b.by.name)).collect()
}

fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "registry.example.com/train:1", "resources": {"limits": {"nvidia.com/gpu": 1}}}]})
}

#[test]
fn a_deployment_makes_a_replica_set_that_makes_pods() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "train", "labels": {"team": "a"}, "annotations": {"note": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "t"}}, "template": {"metadata": {"labels": {"app": "t"}}, "spec": pod_spec()}}});
    let built = all(d);
    assert_eq!(kinds(&built), ["ReplicaSet by deployment-controller", "Pod by replicaset-controller"]);
    let rs = &built[0].object;
    assert_eq!(
        rs["metadata"]["labels"],
        json!({"app": "t", "pod-template-hash": "6d5f8c7b9"}),
        "the template's labels, never the Deployment's"
    );
    assert_eq!(rs["metadata"]["annotations"]["note"], "x");
    assert!(rs["metadata"]["annotations"].get("kubectl.kubernetes.io/last-applied-configuration").is_none());
    assert_eq!(rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"], "5");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    let pod = &built[1].object;
    assert_eq!(pod["metadata"]["generateName"], "train-6d5f8c7b9-");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], 1, "requests from limits");
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    assert_eq!(built[1].lineage, "Deployment `train` → ReplicaSet `train-6d5f8c7b9` → Pod `train-6d5f8c7b9-x7k2p`");
    assert_eq!(built[1].by.identity.username, "system:serviceaccount:kube-system:replicaset-controller");
}

#[test]
fn a_daemon_set_pod_names_its_node_instead_of_the_required_affinity() {
    let affinity = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]}}]}});
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {"nodeSelector": {"gpu": "yes"}, "affinity": affinity, "hostNetwork": true,
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
            "containers": [{"name": "c", "image": "i:1", "ports": [{"containerPort": 9400}]}]}}}});
    let built = all(ds);
    assert_eq!(kinds(&built), ["Pod by daemon-set-controller"]);
    let spec = &built[0].object["spec"];
    assert_eq!(
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]})
    );
    assert!(spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].is_array(), "preferred terms kept");
    assert_eq!(spec["nodeSelector"], json!({"gpu": "yes"}), "nodeSelector kept");
    let tolerations = spec["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 7, "{tolerations:?}");
    assert!(tolerations[0].get("tolerationSeconds").is_none(), "the matching user toleration is replaced");
    assert!(tolerations.iter().any(|t| t["key"] == "node.kubernetes.io/network-unavailable"), "host network");
    assert_eq!(spec["containers"][0]["ports"][0]["hostPort"], 9400, "host network makes ports host ports");
}

#[test]
fn a_cron_job_makes_jobs_that_make_pods() {
    let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "etl"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"metadata": {"labels": {"team": "a"}},
            "spec": {"completionMode": "Indexed", "completions": 2, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}});
    let built = all(cj);
    assert_eq!(kinds(&built), ["Job by cronjob-controller", "Pod by job-controller"]);
    assert_eq!(built[0].object["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(built[0].object["spec"]["parallelism"], 1);
    let pod = &built[1].object;
    assert_eq!(pod["metadata"]["labels"]["batch.kubernetes.io/job-name"], "etl-29406900");
    assert_eq!(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"], "0");
    assert_eq!(pod["spec"]["containers"][0]["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always", "no tag is latest");
}

#[test]
fn a_stateful_set_pod_mounts_its_claims() {
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
            "template": {"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}], "containers": [{"name": "c", "image": "i:1"}]}}}});
    let built = all(sts);
    let pod = &built[0].object;
    assert_eq!(pod["metadata"]["name"], "db-0");
    assert_eq!(pod["spec"]["volumes"][0], json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}));
    assert_eq!(pod["spec"]["volumes"][1]["name"], "cfg");
    assert_eq!(pod["spec"]["subdomain"], "db");
}

#[test]
fn an_autoscaling_ray_cluster_gets_the_autoscaler_container() {
    let rc = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
        "spec": {"enableInTreeAutoscaling": true, "autoscalerOptions": {"securityContext": {"capabilities": {"drop": ["ALL"]}}, "env": [{"name": "X", "value": "1"}]},
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.47.1", "resources": {"limits": {"memory": "8Gi"}}}]}}},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "maxReplicas": 4,
                "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.47.1-gpu", "securityContext": {"runAsNonRoot": true}}]}}}]}});
    let built = all(rc);
    assert_eq!(kinds(&built), ["Pod by kuberay-operator", "Pod by kuberay-operator"]);
    let head = &built[0].object["spec"];
    let autoscaler = &head["containers"][1];
    assert_eq!(autoscaler["name"], "autoscaler");
    assert_eq!(autoscaler["image"], "rayproject/ray:2.47.1", "the head's image");
    assert_eq!(autoscaler["securityContext"], json!({"capabilities": {"drop": ["ALL"]}}));
    assert_eq!(autoscaler["env"].as_array().unwrap().last().unwrap()["name"], "X", "options' env appended");
    assert_eq!(head["serviceAccountName"], "rc", "the cluster's own service account");
    assert_eq!(head["volumes"][0], json!({"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}));
    let worker = &built[1].object;
    assert_eq!(worker["metadata"]["labels"]["ray.io/group"], "gpu");
    assert_eq!(worker["spec"]["initContainers"][0]["name"], "wait-gcs-ready");
    assert_eq!(worker["spec"]["initContainers"][0]["securityContext"], json!({"runAsNonRoot": true}), "the Ray container's, copied");
}

#[test]
fn a_ray_job_makes_a_cluster_and_a_submitter() {
    let rj = json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj", "labels": {"team": "a"}},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "rayproject/ray:2"}]}}}}}});
    let built = all(rj);
    assert_eq!(
        kinds(&built),
        ["RayCluster by kuberay-operator", "Pod by kuberay-operator", "Job by kuberay-operator", "Pod by job-controller"]
    );
    assert_eq!(built[0].object["metadata"]["labels"]["team"], "a");
    assert_eq!(built[3].object["spec"]["containers"][0]["name"], "ray-job-submitter");
    assert_eq!(built[3].object["spec"]["containers"][0]["image"], "rayproject/ray:2");
}

#[test]
fn a_leader_worker_set_makes_a_worker_set_owned_by_each_leader_pod() {
    let lws = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "llm", "labels": {"team": "a"}},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4,
            "workerTemplate": {"metadata": {"labels": {"role": "w"}}, "spec": {"containers": [{"name": "vllm", "image": "v:1", "env": [{"name": "LWS_GROUP_SIZE", "value": "9"}]}]}}}}});
    let built = all(lws);
    assert_eq!(
        kinds(&built),
        [
            "StatefulSet by lws-controller-manager",
            "Pod by statefulset-controller",
            "StatefulSet by lws-controller-manager",
            "Pod by statefulset-controller"
        ]
    );
    let workers = &built[2].object;
    assert_eq!(workers["metadata"]["ownerReferences"][0]["kind"], "Pod");
    assert_eq!(workers["metadata"]["name"], "llm-0");
    assert_eq!(workers["spec"]["replicas"], 3);
    let worker = &built[3].object;
    assert_eq!(worker["metadata"]["name"], "llm-0-1");
    assert_eq!(worker["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"], "1");
    assert_eq!(
        worker["spec"]["containers"][0]["env"][1],
        json!({"name": "LWS_GROUP_SIZE", "value": "4"}),
        "LWS's variables replace the pod's"
    );
}

#[test]
fn an_inference_service_with_workers_makes_two_deployments() {
    let isvc = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "llm", "labels": {"team": "a"}, "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment", "serving.kserve.io/autoscalerClass": "none"}},
        "spec": {"predictor": {"labels": {"team": "b"}, "model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m", "image": "vllm:1"},
            "workerSpec": {"tensorParallelSize": 2, "pipelineParallelSize": 2, "hostNetwork": true, "containers": [{"name": "w", "image": "vllm:1"}]}}}});
    let built = all(isvc);
    assert_eq!(kinds(&built)[..2], ["Deployment by kserve-controller-manager", "ReplicaSet by deployment-controller"]);
    let head = &built[0].object;
    assert_eq!(head["metadata"]["labels"]["team"], "b", "the component's labels win");
    assert_eq!(head["spec"]["template"]["spec"]["containers"][0]["name"], "kserve-container");
    let worker = built.iter().find(|b| b.object["metadata"]["name"] == "llm-predictor-worker").unwrap();
    assert_eq!(worker.object["spec"]["replicas"], 3, "TP × PP nodes, less the head");
    assert_eq!(worker.object["spec"]["template"]["spec"]["hostNetwork"], true);
    assert_eq!(worker.object["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
}

/// The `torch-distributed` ClusterTrainingRuntime of the Trainer's
/// manifests, with what a platform team adds: a security context, a
/// sidecar, a volume, a node selector and a toleration.
struct Runtime;

impl Lookup for Runtime {
    fn get(&self, _: &str, kind: &str, _: Option<&str>, name: &str) -> Option<Value> {
        (kind == "ClusterTrainingRuntime" && name == "torch").then(|| {
            json!({"spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {
                "metadata": {"labels": {"platform": "ml"}},
                "spec": {"replicatedJobs": [
                {"name": "dataset-initializer", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "kubeflow/dataset-initializer:v2.1.0"}]}}}}},
                {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"metadata": {"labels": {"app": "train"}}, "spec": {
                        "securityContext": {"runAsUser": 1000},
                        "nodeSelector": {"pool": "gpu"},
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
                        "containers": [
                            {"name": "node", "image": "pytorch:1", "resources": {"limits": {"cpu": "8", "memory": "64Gi"}},
                                "securityContext": {"runAsNonRoot": true}, "env": [{"name": "A", "value": "1"}]},
                            {"name": "metrics", "image": "exporter:1"}]}}}}}
            ]}}}})
        })
    }
}

fn train_job(spec: Value) -> Value {
    json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "ft"}, "spec": spec})
}

#[test]
fn a_train_job_needs_its_runtime() {
    let tj = train_job(
        json!({"runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 2, "image": "t:2", "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}}),
    );
    let err = descendants(&tj, "ml", &Nothing).unwrap_err();
    assert!(err.0.contains("ClusterTrainingRuntime `torch`"), "{err}");
    let built = descendants(&tj, "ml", &Runtime).unwrap();
    assert_eq!(
        kinds(&built),
        [
            "JobSet by kubeflow-trainer-controller-manager",
            "Job by jobset-controller-manager",
            "Pod by job-controller",
            "Job by jobset-controller-manager",
            "Pod by job-controller"
        ]
    );
    assert_eq!(built[0].object["metadata"]["labels"], json!({"platform": "ml"}), "the runtime's JobSet labels");
    let node = &built[3].object;
    assert_eq!(node["spec"]["parallelism"], 2, "`numNodes` pods at once");
    assert_eq!(node["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"], "trainer", "the step label reaches the Job");
    let pod = &built[4].object;
    assert!(pod["metadata"]["labels"].get("trainer.kubeflow.org/trainjob-ancestor-step").is_none(), "but not the pods");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["image"], "t:2");
    assert_eq!(
        c["resources"]["limits"],
        json!({"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 4}),
        "v2.3: `resourcesPerNode` merged over the runtime's, key by key"
    );
    assert_eq!(pod["spec"]["securityContext"], json!({"runAsUser": 1000}), "the runtime's");
    assert!(c["env"].as_array().unwrap().iter().any(|e| e["name"] == "PET_MASTER_ADDR"));
    assert_eq!(built[1].object["spec"]["parallelism"], 1);
}

#[test]
fn pod_template_overrides_merge_as_the_trainer_2_1_merges_them() {
    let tj = train_job(json!({"runtimeRef": {"name": "torch"},
        "labels": {"cost": "a"},
        "trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
        "podTemplateOverrides": [
            {"targetJobs": [{"name": "node"}],
                "metadata": {"labels": {"team": "a"}, "annotations": {"x": "1"}, "finalizers": ["f"]},
                "spec": {"serviceAccountName": "trainer",
                    "nodeSelector": {"zone": "z1"},
                    "tolerations": [{"key": "tenant", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
                    "volumes": [{"name": "data", "hostPath": {"path": "/data"}}, {"name": "cache", "emptyDir": {}}],
                    "containers": [{"name": "metrics", "env": [{"name": "TOKEN", "value": "t"}], "volumeMounts": [{"name": "cache", "mountPath": "/c"}]}]}},
            {"targetJobs": [{"name": "node"}, {"name": "nowhere"}], "spec": {"nodeSelector": {"zone": "z2"}}}]}));
    let built = descendants(&tj, "ml", &Runtime).unwrap();
    assert_eq!(built[0].object["metadata"]["labels"], json!({"platform": "ml", "cost": "a"}), "`spec.labels` label the JobSet");
    assert!(built[3].object["metadata"]["labels"].get("cost").is_none(), "and not its Jobs");
    let initializer = &built[2].object["spec"];
    assert!(initializer.get("serviceAccountName").is_none_or(|s| s == "default"), "an override touches only its targets");
    let pod = &built[4].object;
    assert_eq!(pod["metadata"]["labels"]["team"], "a", "the override's labels are the pods'");
    assert_eq!(pod["metadata"]["labels"]["app"], "train", "merged with the runtime's");
    assert_eq!(pod["metadata"]["annotations"]["x"], "1");
    let template = &built[0].object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"];
    assert!(template["metadata"].get("finalizers").is_none(), "only labels and annotations are taken");
    let spec = &template["spec"];
    assert_eq!(spec["serviceAccountName"], "trainer");
    assert_eq!(spec["nodeSelector"], json!({"pool": "gpu", "zone": "z2"}), "maps merge; later overrides win");
    assert_eq!(
        spec["tolerations"],
        json!([{"key": "tenant", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]),
        "tolerations have no merge key: replaced"
    );
    assert_eq!(
        spec["volumes"][0],
        json!({"name": "data", "persistentVolumeClaim": {"claimName": "data"}, "hostPath": {"path": "/data"}}),
        "volumes merge by name, without `$retainKeys` keeping both sources"
    );
    assert_eq!(spec["volumes"][1], json!({"name": "cache", "emptyDir": {}}));
    let metrics = spec["containers"].as_array().unwrap().iter().find(|c| c["name"] == "metrics").unwrap();
    assert_eq!(metrics["image"], "exporter:1", "containers merge by name");
    assert_eq!(metrics["env"][0]["name"], "TOKEN");
    assert_eq!(metrics["volumeMounts"][0]["mountPath"], "/c");
    assert_eq!(spec["containers"][0]["resources"], json!({"limits": {"nvidia.com/gpu": 4}}), "v2.1: `resourcesPerNode` replaces");
}

#[test]
fn pod_spec_overrides_merge_as_the_trainer_2_0_merges_them() {
    let tj = train_job(json!({"runtimeRef": {"name": "torch"}, "trainer": {},
        "podSpecOverrides": [{"targetJobs": [{"name": "node"}], "serviceAccountName": "sa", "tolerations": []}]}));
    let built = descendants(&tj, "ml", &Runtime).unwrap();
    let spec = &built[0].object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"];
    assert_eq!(spec["serviceAccountName"], "sa");
    assert_eq!(spec["tolerations"], json!([]));
    assert!(spec.get("targetJobs").is_none());
}

#[test]
fn runtime_patches_merge_as_the_trainer_2_2_merges_them() {
    let tj = train_job(json!({"runtimeRef": {"name": "torch"}, "trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
        "runtimePatches": [
            {"manager": "example.com/user", "trainingRuntimeSpec": {"template": {
                "metadata": {"labels": {"cost": "a"}},
                "spec": {"replicatedJobs": [
                    {"name": "nowhere", "template": {"spec": {"template": {"spec": {"serviceAccountName": "x"}}}}},
                    {"name": "node", "template": {
                        "metadata": {"labels": {"job-label": "j"}},
                        "spec": {"template": {
                            "metadata": {"labels": {"team": "a"}},
                            "spec": {"securityContext": {"runAsUser": 0},
                                "containers": [{"name": "node", "securityContext": {"privileged": true}, "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}}}}}]}}}},
            {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                {"name": "node", "template": {"spec": {"template": {
                    "metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}},
                    "spec": {"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
                        "tolerations": [{"key": "flavor", "operator": "Exists"}]}}}}}]}}}}]}));
    let built = descendants(&tj, "ml", &Runtime).unwrap();
    let js = &built[0].object;
    assert_eq!(js["metadata"]["labels"], json!({"platform": "ml", "cost": "a"}), "a patch's `template.metadata` labels the JobSet");
    assert_eq!(js["spec"]["replicatedJobs"].as_array().unwrap().len(), 2, "a replicated job the runtime lacks is not added");
    let job = &built[3].object;
    assert_eq!(job["metadata"]["labels"]["job-label"], "j", "a patch's Job metadata labels the Jobs");
    assert!(job["metadata"]["labels"].get("cost").is_none());
    let pod = &built[4].object;
    assert_eq!(pod["metadata"]["labels"]["team"], "a");
    assert_eq!(pod["metadata"]["labels"]["kueue.x-k8s.io/podset"], "node");
    assert!(pod["metadata"]["labels"].get("job-label").is_none(), "Job labels do not reach the pods");
    let spec = &pod["spec"];
    assert_eq!(spec["securityContext"], json!({"runAsUser": 0}));
    assert_eq!(spec["containers"][0]["securityContext"], json!({"runAsNonRoot": true, "privileged": true}), "merged");
    assert_eq!(spec["containers"][0]["volumeMounts"][0]["mountPath"], "/d");
    assert_eq!(spec["nodeSelector"], json!({"pool": "gpu", "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}));
    assert_eq!(spec["tolerations"][0], json!({"key": "flavor", "operator": "Exists"}), "Kueue's, replacing the runtime's");
    assert!(spec["tolerations"].as_array().unwrap().iter().all(|t| t["key"] != "nvidia.com/gpu"));
    assert_eq!(spec["containers"][0]["resources"]["limits"], json!({"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 4}));
}

#[test]
fn a_notebook_pod_carries_the_notebooks_labels() {
    let nb = json!({"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "metadata": {"name": "nb", "labels": {"team": "a"}, "annotations": {"notebooks.kubeflow.org/x": "1", "keep": "y"}},
        "spec": {"template": {"spec": {"containers": [{"name": "nb", "image": "jupyter:1"}]}}}});
    let built = all(nb);
    assert_eq!(kinds(&built), ["StatefulSet by notebook-controller-service-account", "Pod by statefulset-controller"]);
    assert!(built[0].object["metadata"].get("labels").is_none(), "the StatefulSet has no labels of its own");
    let pod = &built[1].object;
    assert_eq!(pod["metadata"]["labels"]["team"], "a");
    assert_eq!(pod["metadata"]["annotations"], json!({"keep": "y"}));
    assert_eq!(pod["spec"]["securityContext"], json!({"fsGroup": 100}));
}

#[test]
fn training_operator_pods_get_its_labels_and_init_container() {
    let pj = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pj"},
        "spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "image": "p:1"}]}}},
            "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pytorch", "image": "p:1"}]}}}}}});
    let built = all(pj);
    assert_eq!(kinds(&built), ["Pod by training-operator", "Pod by training-operator"]);
    let worker = built.iter().find(|b| b.object["metadata"]["name"] == "pj-worker-0").unwrap();
    assert_eq!(worker.object["spec"]["initContainers"][0]["image"], "alpine:3.10");
    assert_eq!(worker.object["metadata"]["labels"]["training.kubeflow.org/replica-type"], "worker");
    assert_eq!(worker.object["spec"]["restartPolicy"], "OnFailure");
}

#[test]
fn every_controller_submits_as_its_service_account() {
    for (owner, c) in identities() {
        assert!(c.identity.username.starts_with("system:serviceaccount:"), "{owner}");
        assert!(c.identity.groups.contains(&"system:authenticated".to_string()));
    }
}

#[test]
fn kserves_pod_webhook_adds_the_storage_initializer_for_a_downloaded_model() {
    let isvc = |uri: &str| {
        json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "iris", "annotations": {"serving.kserve.io/deploymentMode": "Standard"}},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"}, "storageUri": uri, "image": "sklearn:1"}}}})
    };
    let built = all(isvc("s3://models/iris"));
    assert_eq!(
        kinds(&built),
        ["Deployment by kserve-controller-manager", "ReplicaSet by deployment-controller", "Pod by replicaset-controller"]
    );
    let template = &built[0].object["spec"]["template"]["spec"];
    let none = |spec: &Value| spec.get("initContainers").and_then(Value::as_array).is_none_or(Vec::is_empty);
    assert!(none(template), "the Deployment's template does not hold it: the webhook adds it to the Pod");
    let pod = &built[2].object["spec"];
    let init = &pod["initContainers"][0];
    assert_eq!(init["name"], "storage-initializer");
    assert_eq!(init["image"], "kserve/storage-initializer:v0.16.0");
    assert_eq!(init["args"], json!(["s3://models/iris", "/mnt/models"]));
    assert_eq!(init["resources"], json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "100Mi"}}));
    assert!(init.get("securityContext").is_none());
    assert_eq!(init["volumeMounts"], json!([{"name": "kserve-provision-location", "mountPath": "/mnt/models"}]));
    assert_eq!(init["imagePullPolicy"], "IfNotPresent", "the API server defaults what the webhook added");
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    assert!(mounts.contains(&json!({"name": "kserve-provision-location", "mountPath": "/mnt/models", "readOnly": true})), "{mounts:?}");
    assert!(pod["volumes"].as_array().unwrap().contains(&json!({"name": "kserve-provision-location", "emptyDir": {}})));
    for uri in ["pvc://models/iris", "oci://registry.example.com/iris:1"] {
        let built = all(isvc(uri));
        assert!(none(&built[2].object["spec"]), "{uri}: mounted or a modelcar, nothing to download");
    }
}

#[test]
fn kserve_counts_multi_node_gpus_from_requests_and_builds_workers_only_in_standard_mode() {
    let isvc = |mode: &str, resources: Value| {
        json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm", "annotations": {"serving.kserve.io/deploymentMode": mode, "serving.kserve.io/autoscalerClass": "none"}},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m", "resources": resources.clone()},
                "workerSpec": {"tensorParallelSize": 4, "pipelineParallelSize": 2, "containers": [{"name": "worker-container", "resources": resources}]}}}})
    };
    let gpus = |d: &Built| d.object["spec"]["template"]["spec"]["containers"][0]["resources"].clone();
    let worker = |built: &[Built]| built.iter().find(|b| b.object["metadata"]["name"] == "llm-predictor-worker").cloned();
    // Requests of 4: two nodes of 4 (`computeRayNodeAndGPUs`, case 1).
    let built = all(isvc("Standard", json!({"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}})));
    let w = worker(&built).unwrap();
    assert_eq!(w.object["spec"]["replicas"], 1);
    assert_eq!(gpus(&w)["limits"]["nvidia.com/gpu"], "4");
    assert_eq!(gpus(&built[0])["requests"]["nvidia.com/gpu"], "4");
    // Limits alone are not read: eight nodes of one GPU, written over them.
    let built = all(isvc("Standard", json!({"limits": {"nvidia.com/gpu": "4"}})));
    let w = worker(&built).unwrap();
    assert_eq!(w.object["spec"]["replicas"], 7);
    assert_eq!(gpus(&w), json!({"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}));
    assert_eq!(gpus(&built[0]), json!({"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}));
    // Knative mode: the head alone, its GPUs as written.
    let built = all(isvc("Knative", json!({"limits": {"nvidia.com/gpu": "4"}})));
    assert!(worker(&built).is_none(), "{:?}", kinds(&built));
    assert_eq!(gpus(&built[0]), json!({"limits": {"nvidia.com/gpu": "4"}}));
}

/// `old` with `edit` applied at JSON pointer `at`.
fn edited(old: &Value, at: &str, edit: Value) -> Value {
    let mut new = old.clone();
    *new.pointer_mut(at).unwrap() = edit;
    new
}

#[test]
fn an_update_builds_when_the_template_changes_or_the_count_grows() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
        "spec": {"replicas": 2, "template": {"spec": pod_spec()}}});
    let bumped = edited(&d, "/spec/template/spec/containers/0/image", json!("registry.example.com/train:2"));
    let rebuild = update_builds(&d, &bumped).unwrap();
    assert!(rebuild.why.contains("new ReplicaSet"));
    assert_eq!(rebuild.from, bumped, "built from the new object");
    assert!(update_builds(&d, &edited(&d, "/spec/replicas", json!(3))).is_some(), "a scale-up");
    assert_eq!(update_builds(&d, &edited(&d, "/spec/replicas", json!(1))), None, "a scale-down creates nothing");
    assert_eq!(update_builds(&d, &edited(&d, "/metadata", json!({"name": "vllm", "labels": {"team": "a"}}))), None);
    let mut paused = bumped.clone();
    paused["spec"]["paused"] = json!(true);
    assert_eq!(update_builds(&d, &paused), None, "a paused Deployment makes no ReplicaSet (sync.go)");

    let rs = edited(&d, "/kind", json!("ReplicaSet"));
    let rs_bumped = edited(&rs, "/spec/template/spec/containers/0/image", json!("x:2"));
    assert_eq!(update_builds(&rs, &rs_bumped), None, "a ReplicaSet's new template reaches only later pods");

    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
        "spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": pod_spec()}}});
    assert_eq!(update_builds(&ds, &edited(&ds, "/spec/template/spec/containers/0/image", json!("x:2"))), None);
    let ds = edited(&ds, "/spec/updateStrategy/type", json!("RollingUpdate"));
    assert!(update_builds(&ds, &edited(&ds, "/spec/template/spec/containers/0/image", json!("x:2"))).is_some());
}

#[test]
fn an_update_builds_for_jobs_resumed_grown_or_scheduled_later() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"suspend": true, "template": {"spec": pod_spec()}}});
    assert!(update_builds(&job, &edited(&job, "/spec/suspend", json!(false))).is_some(), "Kueue resuming it");
    assert_eq!(update_builds(&job, &edited(&job, "/spec/template/spec/containers/0/image", json!("x:2"))), None);
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": pod_spec()}}}}});
    assert!(update_builds(&cron, &edited(&cron, "/spec/jobTemplate/spec/template/spec/containers/0/image", json!("x:2"))).is_some());
    assert_eq!(update_builds(&cron, &edited(&cron, "/spec/schedule", json!("@hourly"))), None);
    let ray = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
        "spec": {"headGroupSpec": {"template": {"spec": pod_spec()}},
                 "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "template": {"spec": pod_spec()}}]}});
    let grown = edited(&ray, "/spec/workerGroupSpecs/0/replicas", json!(2));
    let rebuild = update_builds(&ray, &grown).unwrap();
    assert_eq!(kinds(&all(rebuild.from)), ["Pod by kuberay-operator"], "only the grown group's worker, no head");
    let mut two = ray.clone();
    two["spec"]["workerGroupSpecs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"groupName": "h", "replicas": 1, "template": {"spec": pod_spec()}}));
    let rebuild = update_builds(&two, &edited(&two, "/spec/workerGroupSpecs/1/replicas", json!(3))).unwrap();
    assert_eq!(rebuild.from["spec"]["workerGroupSpecs"].as_array().unwrap().len(), 1);
    assert_eq!(rebuild.from["spec"]["workerGroupSpecs"][0]["groupName"], "h");
    assert_eq!(
        update_builds(&ray, &edited(&ray, "/spec/workerGroupSpecs/0/template/spec/containers/0/image", json!("x:2"))),
        None,
        "KubeRay does not roll a RayCluster's pods"
    );
    let pt = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": pod_spec()}}}}});
    assert!(update_builds(&pt, &edited(&pt, "/spec/pytorchReplicaSpecs/Worker/replicas", json!(4))).is_some());
    assert_eq!(update_builds(&pt, &edited(&pt, "/spec/pytorchReplicaSpecs/Worker/replicas", json!(1))), None);
    let rs = json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "s"},
        "spec": {"rayClusterConfig": {"workerGroupSpecs": [{"groupName": "g", "replicas": 2, "template": {"spec": pod_spec()}}]}}});
    assert_eq!(
        update_builds(&rs, &edited(&rs, "/spec/rayClusterConfig/workerGroupSpecs/0/replicas", json!(1))),
        None,
        "replicas are outside the hash"
    );
    assert!(
        update_builds(&rs, &edited(&rs, "/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/image", json!("x:2")))
            .is_some()
    );
}
