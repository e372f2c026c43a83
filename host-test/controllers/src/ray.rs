//! KubeRay (`ray-project/kuberay` v1.7.0, `ray-operator/controllers/ray/`):
//! RayCluster → head and worker Pods (`common/pod.go`:
//! `DefaultHeadPodTemplate`, `DefaultWorkerPodTemplate`, `BuildPod`,
//! `BuildAutoscalerContainer`), RayJob → RayCluster and submitter Job
//! (`rayjob_controller.go`, `common/job.go`), RayService → RayCluster
//! (`rayservice_controller.go`).

use serde_json::{Map, Value, json};

use crate::Built;
use crate::core::{built, job_defaults};
use crate::identity::KUBERAY;
use crate::json::{Object, at, list_at, list_mut, map_at, merged, object_mut, s, set, set_default, str_at};
use crate::pod::{Naming, from_template};

/// RayCluster → one head pod and one pod per worker group, all created by
/// the KubeRay operator ([`head`], [`worker`]).
pub(crate) fn ray_cluster(rc: &Object<'_>) -> Vec<Built> {
    let spec = rc.at(&["spec"]).cloned().unwrap_or_else(|| json!({}));
    let serve = rc.labels().get("ray.io/originated-from-crd").and_then(Value::as_str) == Some("RayService");
    let mut out = Vec::new();
    if let Some(group) = at(&spec, &["headGroupSpec"]) {
        let template = head(rc, &spec, group, serve);
        let name = Naming::Generate(format!("{}-head-", truncated(&rc.name())));
        out.push(built(from_template(&template, rc.namespace, name, rc.controller_ref()), &KUBERAY, rc));
    }
    for group in list_at(&spec, &["workerGroupSpecs"]) {
        let template = worker(rc, &spec, group, serve);
        let prefix = format!("{}-{}", rc.name(), str_at(group, &["groupName"]).unwrap_or_default());
        let name = Naming::Generate(format!("{}-worker-", truncated(&prefix)));
        out.push(built(from_template(&template, rc.namespace, name, rc.controller_ref()), &KUBERAY, rc));
    }
    out
}

/// A name prefix cut to 50 characters (`utils.PodName`, `CheckName`).
fn truncated(prefix: &str) -> String {
    prefix.chars().take(50).collect()
}

fn autoscaling(spec: &Value) -> bool {
    at(spec, &["enableInTreeAutoscaling"]).and_then(Value::as_bool) == Some(true)
}

/// The head pod's template: the group's template with KubeRay's labels,
/// its Ray container set up ([`ray_container`]), and with in-tree
/// autoscaling the `autoscaler` container appended ([`autoscaler`]), the
/// `ray-logs` volume both mount, and the head's service account (its own,
/// else one named after the cluster, which KubeRay creates).
fn head(rc: &Object<'_>, spec: &Value, group: &Value, serve: bool) -> Value {
    let mut t = at(group, &["template"]).cloned().unwrap_or_else(|| json!({}));
    labels(&mut t, rc, group, "head", "headgroup", serve.then_some("false"));
    object_mut(&mut t, &["metadata", "annotations"]).insert("ray.io/ft-enabled".into(), s("false"));
    ray_container(&mut t, rc, group, true);
    if autoscaling(spec) {
        let v2 = str_at(spec, &["autoscalerOptions", "version"]) == Some("v2");
        if let Some(ray) = list_mut(&mut t, &["spec", "containers"]).first_mut() {
            list_mut(ray, &["volumeMounts"]).push(json!({"name": "ray-logs", "mountPath": "/tmp/ray"}));
            if let Some(v) = str_at(spec, &["autoscalerOptions", "version"]) {
                list_mut(ray, &["env"]).push(json!({"name": "RAY_enable_autoscaler_v2", "value": (v == "v2").to_string()}));
            }
        }
        let image = list_at(&t, &["spec", "containers"]).first().and_then(|c| str_at(c, &["image"])).map(str::to_string);
        list_mut(&mut t, &["spec", "containers"]).push(autoscaler(spec, image.as_deref()));
        list_mut(&mut t, &["spec", "volumes"]).push(json!({"name": "ray-logs", "emptyDir": {}}));
        if str_at(&t, &["spec", "serviceAccountName"]).is_none_or(str::is_empty) {
            set(&mut t, &["spec", "serviceAccountName"], s(truncated(&rc.name())));
        }
        if v2 {
            set(&mut t, &["spec", "restartPolicy"], s("Never"));
        }
    }
    t
}

/// A worker group's pod template: KubeRay's labels, its Ray container set
/// up, and the `wait-gcs-ready` init container KubeRay puts before the
/// Ray container (on by default: the Ray container's image, pull policy,
/// security context, environment and mounts, 200m and 256Mi), and the
/// head's address in every init container.
fn worker(rc: &Object<'_>, spec: &Value, group: &Value, serve: bool) -> Value {
    let mut t = at(group, &["template"]).cloned().unwrap_or_else(|| json!({}));
    let group_name = str_at(group, &["groupName"]).unwrap_or_default().to_string();
    labels(&mut t, rc, group, "worker", &group_name, serve.then_some("true"));
    let ray = list_at(&t, &["spec", "containers"]).first().cloned().unwrap_or_else(|| json!({}));
    let mut wait = json!({
        "name": "wait-gcs-ready",
        "command": ["/bin/bash", "-c", "--"],
        "args": [format!("SECONDS=0; while true; do if (( SECONDS <= 120 )); then if ray health-check --address {}-head-svc.{}.svc.cluster.local:6379 > /dev/null 2>&1; then break; fi; fi; sleep 5; done", rc.name(), rc.namespace)],
        "resources": {"limits": {"cpu": "200m", "memory": "256Mi"}, "requests": {"cpu": "200m", "memory": "256Mi"}},
    });
    for key in ["image", "imagePullPolicy", "securityContext", "env", "volumeMounts"] {
        if let Some(v) = at(&ray, &[key]) {
            set(&mut wait, &[key], v.clone());
        }
    }
    list_mut(&mut t, &["spec", "initContainers"]).push(wait);
    let head_svc = format!("{}-head-svc", rc.name());
    for c in list_mut(&mut t, &["spec", "initContainers"]).iter_mut() {
        list_mut(c, &["env"]).extend([
            json!({"name": "FQ_RAY_IP", "value": format!("{head_svc}.{}.svc.cluster.local", rc.namespace)}),
            json!({"name": "RAY_IP", "value": head_svc}),
        ]);
    }
    ray_container(&mut t, rc, group, false);
    if autoscaling(spec) && str_at(spec, &["autoscalerOptions", "version"]) == Some("v2") {
        set(&mut t, &["spec", "restartPolicy"], s("Never"));
    }
    t
}

/// KubeRay's pod labels (`labelPod`): the template's, the group's own
/// `labels` over them, then KubeRay's (`ray.io/cluster`, `ray.io/node-type`
/// and `ray.io/group` always win; the rest only where unset).
fn labels(t: &mut Value, rc: &Object<'_>, group: &Value, node_type: &str, group_name: &str, serve: Option<&str>) {
    let mut l = map_at(t, &["metadata", "labels"]);
    l.extend(map_at(group, &["labels"]));
    for (k, v) in [
        ("ray.io/is-ray-node", "yes".to_string()),
        ("ray.io/identifier", format!("{}-{node_type}", rc.name())),
        ("app.kubernetes.io/name", "kuberay".to_string()),
        ("app.kubernetes.io/created-by", "kuberay-operator".to_string()),
    ] {
        l.entry(k.to_string()).or_insert_with(|| s(v));
    }
    let mut fixed =
        vec![("ray.io/cluster", rc.name()), ("ray.io/node-type", node_type.to_string()), ("ray.io/group", group_name.to_string())];
    if let Some(serve) = serve {
        fixed.push(("ray.io/serve", serve.to_string()));
    }
    set(t, &["metadata", "labels"], Value::Object(merged(l, &fixed)));
}

/// The Ray container (the first): the metrics port, the environment
/// KubeRay gives it, and a memory-backed `/dev/shm` sized to its memory
/// limit (else request) unless something is mounted there or
/// `rayStartParams` names a plasma directory.
fn ray_container(t: &mut Value, rc: &Object<'_>, group: &Value, head: bool) {
    let plasma = at(group, &["rayStartParams", "plasma-directory"]).is_some();
    let mut shm: Option<Value> = None;
    if let Some(c) = list_mut(t, &["spec", "containers"]).first_mut() {
        if !list_at(c, &["ports"]).iter().any(|p| str_at(p, &["name"]) == Some("metrics")) {
            list_mut(c, &["ports"]).push(json!({"name": "metrics", "containerPort": 8080}));
        }
        let mut env = vec![
            json!({"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}}),
            json!({"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
            json!({"name": "RAY_CLOUD_INSTANCE_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
            json!({"name": "RAY_NODE_TYPE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}}}),
            json!({"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"}),
        ];
        if !head {
            let svc = format!("{}-head-svc", rc.name());
            env.push(json!({"name": "FQ_RAY_IP", "value": format!("{svc}.{}.svc.cluster.local", rc.namespace)}));
            env.push(json!({"name": "RAY_IP", "value": svc}));
        }
        list_mut(c, &["env"]).extend(env);
        let mounted =
            list_at(c, &["volumeMounts"]).iter().any(|m| str_at(m, &["mountPath"]).map(|p| p.trim_end_matches('/')) == Some("/dev/shm"));
        if !plasma && !mounted {
            let size = at(c, &["resources", "limits", "memory"]).or_else(|| at(c, &["resources", "requests", "memory"])).cloned();
            let mut dir = json!({"medium": "Memory"});
            if let Some(size) = size {
                set(&mut dir, &["sizeLimit"], size);
            }
            shm = Some(json!({"name": "shared-mem", "emptyDir": dir}));
            list_mut(c, &["volumeMounts"]).push(json!({"name": "shared-mem", "mountPath": "/dev/shm"}));
        }
    }
    if let Some(volume) = shm {
        list_mut(t, &["spec", "volumes"]).push(volume);
    }
}

/// The `autoscaler` container KubeRay appends to the head pod
/// (`BuildAutoscalerContainer`, then `mergeAutoscalerOverrides`): the
/// head's Ray image, `IfNotPresent`, 500m and 512Mi, no security context;
/// `autoscalerOptions` replaces its resources, image, pull policy,
/// security context, command and args, and adds to its environment and
/// mounts.
pub(crate) fn autoscaler(spec: &Value, ray_image: Option<&str>) -> Value {
    let args = "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)";
    let mut c = json!({
        "name": "autoscaler",
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/bash", "-c", "--"],
        "args": [args],
        "env": [
            {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "RAY_HEAD_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": args},
        ],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
        "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray"}],
    });
    if let Some(image) = ray_image {
        set(&mut c, &["image"], s(image));
    }
    let options = map_at(spec, &["autoscalerOptions"]);
    for key in ["resources", "image", "imagePullPolicy", "securityContext"] {
        if let Some(v) = options.get(key).filter(|v| !v.is_null()) {
            set(&mut c, &[key], v.clone());
        }
    }
    for key in ["command", "args"] {
        if let Some(v) = options.get(key).filter(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
            set(&mut c, &[key], v.clone());
        }
    }
    for key in ["env", "envFrom", "volumeMounts"] {
        if let Some(Value::Array(extra)) = options.get(key) {
            list_mut(&mut c, &[key]).extend(extra.iter().cloned());
        }
    }
    c
}

/// The RayCluster a RayJob or RayService makes: named `<parent>-<5
/// characters>`, its parent's labels and annotations with KubeRay's
/// origin labels, its spec the parent's cluster spec.
fn cluster_of(parent: &Object<'_>, spec_field: &str, extra_labels: &[(&str, String)]) -> Option<Value> {
    let spec = parent.at(&["spec", spec_field])?.clone();
    let mut labels = vec![("ray.io/originated-from-cr-name", parent.name()), ("ray.io/originated-from-crd", parent.kind().to_string())];
    labels.extend(extra_labels.iter().cloned());
    Some(json!({
        "apiVersion": parent.api_version(),
        "kind": "RayCluster",
        "metadata": {
            "name": crate::json::generated(&format!("{}-", parent.name())),
            "namespace": parent.namespace,
            "labels": merged(parent.labels(), &labels),
            "annotations": parent.annotations(),
            "ownerReferences": [parent.controller_ref()],
        },
        "spec": spec,
    }))
}

/// RayJob → its RayCluster (unless it runs on an existing one,
/// `clusterSelector`) and, in `K8sJobMode` (the default), the submitter
/// Job named after the RayJob (`createK8sJobIfNeed`): its
/// `submitterPodTemplate`, or a `ray-job-submitter` container of the head's
/// image with 1 CPU and 1Gi, no security context. In `SidecarMode` the
/// submitter is a container of the head pod instead.
pub(crate) fn ray_job(job: &Object<'_>) -> Vec<Built> {
    let mode = str_at(job.value, &["spec", "submissionMode"]).unwrap_or("K8sJobMode");
    let selector = !map_at(job.value, &["spec", "clusterSelector"]).is_empty();
    let head_image = list_at(job.value, &["spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "containers"])
        .first()
        .and_then(|c| str_at(c, &["image"]))
        .map(str::to_string);
    let submitter = || {
        let mut c = json!({
            "name": "ray-job-submitter",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}},
        });
        if let Some(image) = &head_image {
            set(&mut c, &["image"], s(image.clone()));
        }
        c
    };
    let mut out = Vec::new();
    if !selector {
        let extra = [("ray.io/job-submission-mode", mode.to_string())];
        if let Some(mut cluster) = cluster_of(job, "rayClusterSpec", &extra) {
            if mode == "SidecarMode" {
                let mut c = submitter();
                configure_submitter(&mut c);
                list_mut(&mut cluster, &["spec", "headGroupSpec", "template", "spec", "containers"]).push(c);
                set(&mut cluster, &["spec", "headGroupSpec", "template", "spec", "restartPolicy"], s("Never"));
            }
            out.push(built(cluster, &KUBERAY, job));
        }
    }
    if mode == "K8sJobMode" {
        let origin = [
            ("ray.io/originated-from-cr-name", job.name()),
            ("ray.io/originated-from-crd", "RayJob".to_string()),
            ("app.kubernetes.io/created-by", "kuberay-operator".to_string()),
        ];
        let mut template = match job.at(&["spec", "submitterPodTemplate"]) {
            Some(t) => t.clone(),
            None => json!({"spec": {"restartPolicy": "Never", "containers": [submitter()]}}),
        };
        if let Some(first) = list_mut(&mut template, &["spec", "containers"]).first_mut() {
            configure_submitter(first);
        }
        let labels = map_at(&template, &["metadata", "labels"]);
        set(&mut template, &["metadata", "labels"], Value::Object(merged(labels, &origin)));
        let backoff = at(job.value, &["spec", "submitterConfig", "backoffLimit"]).cloned().unwrap_or(json!(2));
        let mut submit = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job.name(), "namespace": job.namespace, "labels": merged(Map::new(), &origin), "ownerReferences": [job.controller_ref()]},
            "spec": {"backoffLimit": backoff, "template": template},
        });
        job_defaults(&mut submit);
        out.push(built(submit, &KUBERAY, job));
    }
    out
}

/// `configureSubmitterContainer`: `ray job submit` as the command when it
/// has none, and the submission's environment.
fn configure_submitter(c: &mut Value) {
    if list_at(c, &["command"]).is_empty() {
        set(c, &["command"], json!(["/bin/bash", "-ce", "--"]));
        set(
            c,
            &["args"],
            json!([
                "until ray job status --address http://$RAY_DASHBOARD_ADDRESS; do sleep 2; done; ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id $RAY_JOB_SUBMISSION_ID -- python main.py"
            ]),
        );
    }
    list_mut(c, &["env"]).extend([
        json!({"name": "PYTHONUNBUFFERED", "value": "1"}),
        json!({"name": "RAY_DASHBOARD_ADDRESS", "value": "head-svc:8265"}),
        json!({"name": "RAY_JOB_SUBMISSION_ID", "value": "submission"}),
    ]);
}

/// RayService → its RayCluster (`constructRayClusterForRayService`).
pub(crate) fn ray_service(svc: &Object<'_>) -> Vec<Built> {
    let mut out = Vec::new();
    if let Some(mut cluster) = cluster_of(svc, "rayClusterConfig", &[]) {
        let annotations = object_mut(&mut cluster, &["metadata", "annotations"]);
        annotations.insert(
            "ray.io/num-worker-groups".into(),
            s(list_at(svc.value, &["spec", "rayClusterConfig", "workerGroupSpecs"]).len().to_string()),
        );
        set_default(&mut cluster, &["metadata", "labels"], json!({}));
        out.push(built(cluster, &KUBERAY, svc));
    }
    out
}
