//! kube-controller-manager's workload controllers (kubernetes/kubernetes
//! `pkg/controller/`): Deployment → ReplicaSet → Pod, ReplicationController
//! → Pod, StatefulSet → Pod, DaemonSet → Pod, CronJob → Job → Pod.

use serde_json::{Map, Value, json};

use crate::Built;
use crate::identity::{CRON_JOB, DAEMON_SET, DEPLOYMENT, JOB, REPLICA_SET, REPLICATION, STATEFUL_SET, ServiceAccount};
use crate::json::{Object, at, int_at, list_at, list_mut, map_at, merged, object_mut, s, set, str_at};
use crate::pod::{Naming, defaulted_template, from_template};

/// The `pod-template-hash` (and revision hash) the model gives every
/// template: the real one hashes the template, which no rule reads.
pub(crate) const HASH: &str = "6d5f8c7b9";

/// The node a DaemonSet's pod is made for.
pub(crate) const NODE: &str = "node-a";

pub(crate) fn built(object: Value, by: &ServiceAccount, parent: &Object<'_>) -> Built {
    let child = Object::of(&object, parent.namespace);
    let lineage = format!("{} → {}", parent.describe(), child.describe());
    Built { object, by: by.controller(), lineage }
}

/// A pod of `template` (a `PodTemplateSpec` inside `parent`) as
/// `controller` creates it (`GetPodFromTemplate`).
pub(crate) fn pod_of(parent: &Object<'_>, template: &Value, name: Naming, by: &ServiceAccount) -> Built {
    built(from_template(template, parent.namespace, name, parent.controller_ref()), by, parent)
}

/// Deployment → ReplicaSet (`pkg/controller/deployment/sync.go`,
/// `getNewReplicaSet`): named `<deployment>-<hash>`, labelled with the
/// template's labels and `pod-template-hash` (never the Deployment's own),
/// annotated with the Deployment's annotations but kubectl's and the
/// revision bookkeeping, and the revision annotations.
pub(crate) fn deployment(d: &Object<'_>) -> Vec<Built> {
    let Some(template) = d.at(&["spec", "template"]) else { return Vec::new() };
    let mut template = defaulted_template(template);
    object_mut(&mut template, &["metadata", "labels"]).insert("pod-template-hash".into(), s(HASH));
    let labels = map_at(&template, &["metadata", "labels"]);
    const SKIPPED: [&str; 6] = [
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/revision",
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
    ];
    let mut annotations: Map<String, Value> = d.annotations().into_iter().filter(|(k, _)| !SKIPPED.contains(&k.as_str())).collect();
    let replicas = int_at(d.value, &["spec", "replicas"]).unwrap_or(1);
    annotations.insert("deployment.kubernetes.io/revision".into(), s("1"));
    annotations.insert("deployment.kubernetes.io/desired-replicas".into(), s(replicas.to_string()));
    annotations.insert("deployment.kubernetes.io/max-replicas".into(), s((replicas + max_surge(d, replicas)).to_string()));
    let mut selector = at(d.value, &["spec", "selector"]).cloned().unwrap_or_else(|| json!({}));
    object_mut(&mut selector, &["matchLabels"]).insert("pod-template-hash".into(), s(HASH));
    let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if let Some(m) = d.at(&["spec", "minReadySeconds"]) {
        set(&mut spec, &["minReadySeconds"], m.clone());
    }
    let rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{HASH}", d.name()),
            "namespace": d.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [d.controller_ref()],
        },
        "spec": spec,
    });
    vec![built(rs, &DEPLOYMENT, d)]
}

/// `maxSurge` in pods (`deploymentutil.MaxSurge`): 25 % rounded up unless
/// set; nothing for the `Recreate` strategy.
fn max_surge(d: &Object<'_>, replicas: i64) -> i64 {
    if str_at(d.value, &["spec", "strategy", "type"]) == Some("Recreate") {
        return 0;
    }
    match d.at(&["spec", "strategy", "rollingUpdate", "maxSurge"]) {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(p)) => p.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()).map_or(0, |p| (replicas * p + 99) / 100),
        _ => (replicas * 25 + 99) / 100,
    }
}

/// ReplicaSet → Pod (`pkg/controller/replicaset`): `generateName`
/// `<replicaset>-`, the template's metadata, one controller reference.
pub(crate) fn replica_set(rs: &Object<'_>) -> Vec<Built> {
    templated_pod(rs, &REPLICA_SET)
}

/// ReplicationController → Pod: as a ReplicaSet, by the replication
/// controller (`pkg/controller/replication`).
pub(crate) fn replication_controller(rc: &Object<'_>) -> Vec<Built> {
    templated_pod(rc, &REPLICATION)
}

fn templated_pod(parent: &Object<'_>, by: &ServiceAccount) -> Vec<Built> {
    let Some(template) = parent.at(&["spec", "template"]) else { return Vec::new() };
    vec![pod_of(parent, template, Naming::Generate(format!("{}-", parent.name())), by)]
}

/// StatefulSet → Pod (`pkg/controller/statefulset/stateful_set_utils.go`,
/// `newVersionedStatefulSetPod`): the first ordinal's pod, `<set>-<n>`,
/// with its identity labels, hostname and subdomain, and a volume for each
/// of the set's volume claim templates (replacing a template volume of the
/// same name).
pub(crate) fn stateful_set(set_: &Object<'_>) -> Vec<Built> {
    let Some(template) = set_.at(&["spec", "template"]) else { return Vec::new() };
    let ordinal = int_at(set_.value, &["spec", "ordinals", "start"]).unwrap_or(0);
    let name = format!("{}-{ordinal}", set_.name());
    let mut built = pod_of(set_, template, Naming::Name(name.clone()), &STATEFUL_SET);
    let pod = &mut built.object;
    let labels = object_mut(pod, &["metadata", "labels"]);
    labels.insert("statefulset.kubernetes.io/pod-name".into(), s(name.clone()));
    labels.insert("apps.kubernetes.io/pod-index".into(), s(ordinal.to_string()));
    labels.insert("controller-revision-hash".into(), s(format!("{}-{HASH}", set_.name())));
    set(pod, &["spec", "hostname"], s(name.clone()));
    if let Some(service) = str_at(set_.value, &["spec", "serviceName"]) {
        set(pod, &["spec", "subdomain"], s(service));
    }
    let claims: Vec<String> = list_at(set_.value, &["spec", "volumeClaimTemplates"])
        .iter()
        .filter_map(|c| str_at(c, &["metadata", "name"]))
        .map(str::to_string)
        .collect();
    if !claims.is_empty() {
        let mut volumes: Vec<Value> = claims
            .iter()
            .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": format!("{c}-{}-{ordinal}", set_.name())}}))
            .collect();
        let kept =
            list_at(pod, &["spec", "volumes"]).iter().filter(|v| str_at(v, &["name"]).is_none_or(|n| !claims.iter().any(|c| c == n)));
        volumes.extend(kept.cloned());
        set(pod, &["spec", "volumes"], Value::Array(volumes));
    }
    vec![built]
}

/// DaemonSet → Pod (`pkg/controller/daemon`, `util/daemonset_util.go`):
/// the pod for one node. The controller picks the nodes from the
/// template's node selector and required affinity, then replaces every
/// required node affinity term of the pod with one that names the node
/// (`ReplaceDaemonSetPodNodeNameNodeAffinity`), keeping `nodeSelector` and
/// preferred terms, and adds the tolerations a daemon needs
/// (`AddOrUpdateDaemonPodTolerations`).
pub(crate) fn daemon_set(ds: &Object<'_>) -> Vec<Built> {
    let Some(template) = ds.at(&["spec", "template"]) else { return Vec::new() };
    let mut template = template.clone();
    let labels = object_mut(&mut template, &["metadata", "labels"]);
    labels.insert("controller-revision-hash".into(), s(HASH));
    labels.insert("pod-template-generation".into(), s("1"));
    let spec = crate::json::object_mut(&mut template, &["spec"]);
    let mut spec = Value::Object(std::mem::take(spec));
    let host_network = at(&spec, &["hostNetwork"]).and_then(Value::as_bool) == Some(true);
    let mut added = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        added.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    for (key, effect) in added {
        add_or_update_toleration(&mut spec, json!({"key": key, "operator": "Exists", "effect": effect}));
    }
    let term = json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]});
    set(&mut spec, &["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"], json!({"nodeSelectorTerms": [term]}));
    set(&mut template, &["spec"], spec);
    vec![pod_of(ds, &template, Naming::Generate(format!("{}-", ds.name())), &DAEMON_SET)]
}

/// `AddOrUpdateTolerationInPodSpec`: a toleration equal to `t` in key,
/// operator, value and effect is replaced by it; otherwise it is appended.
fn add_or_update_toleration(spec: &mut Value, t: Value) {
    let same = |a: &Value| {
        ["key", "operator", "value", "effect"].iter().all(|k| str_at(a, &[k]).unwrap_or_default() == str_at(&t, &[k]).unwrap_or_default())
    };
    let list = list_mut(spec, &["tolerations"]);
    match list.iter_mut().find(|a| same(a)) {
        Some(existing) => *existing = t,
        None => list.push(t),
    }
}

/// Job → Pod (`pkg/controller/job`): the labels the API server added to
/// the template when it created the Job (`generateSelector`), the
/// completion index of an `Indexed` Job's first pod (annotation, label,
/// `JOB_COMPLETION_INDEX` in every container, hostname), and the tracking
/// finalizer.
pub(crate) fn job(job: &Object<'_>) -> Vec<Built> {
    let Some(template) = job.at(&["spec", "template"]) else { return Vec::new() };
    let mut template = template.clone();
    let name = job.name();
    if at(job.value, &["spec", "manualSelector"]).and_then(Value::as_bool) != Some(true) {
        let uid = job.uid();
        let labels = object_mut(&mut template, &["metadata", "labels"]);
        for (k, v) in [
            ("job-name", name.clone()),
            ("batch.kubernetes.io/job-name", name.clone()),
            ("controller-uid", uid.clone()),
            ("batch.kubernetes.io/controller-uid", uid),
        ] {
            labels.entry(k.to_string()).or_insert_with(|| s(v));
        }
    }
    list_mut(&mut template, &["metadata", "finalizers"]).push(s("batch.kubernetes.io/job-tracking"));
    let indexed = str_at(job.value, &["spec", "completionMode"]) == Some("Indexed");
    let prefix = if indexed {
        object_mut(&mut template, &["metadata", "annotations"]).insert("batch.kubernetes.io/job-completion-index".into(), s("0"));
        object_mut(&mut template, &["metadata", "labels"]).insert("batch.kubernetes.io/job-completion-index".into(), s("0"));
        set(&mut template, &["spec", "hostname"], s(format!("{name}-0")));
        let index = json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}});
        for list in ["containers", "initContainers"] {
            for c in list_mut(&mut template, &["spec", list]).iter_mut() {
                if !list_at(c, &["env"]).iter().any(|e| str_at(e, &["name"]) == Some("JOB_COMPLETION_INDEX")) {
                    list_mut(c, &["env"]).push(index.clone());
                }
            }
        }
        format!("{name}-0-")
    } else {
        format!("{name}-")
    };
    vec![pod_of(job, &template, Naming::Generate(prefix), &JOB)]
}

/// CronJob → Job (`pkg/controller/cronjob/utils.go`, `getJobFromTemplate2`):
/// named for its scheduled minute, with the job template's labels and
/// annotations (and the scheduled time), its spec verbatim, then the Job
/// defaults the API server applies.
pub(crate) fn cron_job(cj: &Object<'_>) -> Vec<Built> {
    let Some(job_template) = cj.at(&["spec", "jobTemplate"]) else { return Vec::new() };
    let mut annotations = map_at(job_template, &["metadata", "annotations"]);
    annotations.insert("batch.kubernetes.io/cronjob-scheduled-timestamp".into(), s("2026-11-29T03:00:00Z"));
    let labels = map_at(job_template, &["metadata", "labels"]);
    let spec = at(job_template, &["spec"]).cloned().unwrap_or_else(|| json!({}));
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": format!("{}-29406900", cj.name()),
            "namespace": cj.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [cj.controller_ref()],
        },
        "spec": spec,
    });
    job_defaults(&mut job);
    vec![built(job, &CRON_JOB, cj)]
}

/// The defaults the API server gives a Job (`SetDefaults_Job`): one pod
/// at a time and one completion when neither is set, the template's
/// labels as the Job's when it has none, the pod spec's defaults.
pub(crate) fn job_defaults(job: &mut Value) {
    let (parallelism, completions) = (at(job, &["spec", "parallelism"]).cloned(), at(job, &["spec", "completions"]).cloned());
    match (parallelism, completions) {
        (None, None) => {
            set(job, &["spec", "parallelism"], json!(1));
            set(job, &["spec", "completions"], json!(1));
        }
        (None, Some(_)) => set(job, &["spec", "parallelism"], json!(1)),
        _ => {}
    }
    if map_at(job, &["metadata", "labels"]).is_empty() {
        let labels = map_at(job, &["spec", "template", "metadata", "labels"]);
        set(job, &["metadata", "labels"], Value::Object(labels));
    }
    if let Some(t) = at(job, &["spec", "template"]) {
        let t = defaulted_template(t);
        set(job, &["spec", "template"], t);
    }
}

/// Adds `extra` to a template's labels.
pub(crate) fn label_template(template: &mut Value, extra: &[(&str, String)]) {
    let labels = map_at(template, &["metadata", "labels"]);
    set(template, &["metadata", "labels"], Value::Object(merged(labels, extra)));
}
