//! JobSet (`kubernetes-sigs/jobset`, `pkg/controllers/jobset_controller.go`),
//! LeaderWorkerSet (`kubernetes-sigs/lws`, `pkg/controllers/`,
//! `pkg/webhooks/pod_webhook.go`) and Volcano Jobs (`volcano-sh/volcano`,
//! `pkg/controllers/job/`).

use serde_json::{Map, Value, json};

use crate::core::{HASH, built, job_defaults, label_template};
use crate::identity::{JOBSET, LWS, VOLCANO};
use crate::json::{Object, at, int_at, list_at, list_mut, map_at, merged, object_mut, s, set, set_default, str_at};
use crate::pod::{Naming, from_template};
use crate::{Built, Lookup};

const JS: &str = "jobset.sigs.k8s.io/";

/// JobSet → one Job per replicated job (its first index; `constructJob`):
/// named `<jobset>-<replicatedJob>-0`, with JobSet's keys as labels and
/// annotations on the Job and its pod template (`labelAndAnnotateObject`),
/// the defaults JobSet's webhook gives (`Indexed` completion, `OnFailure`
/// restarts, pods named in the JobSet's subdomain), and the JobSet's
/// `suspend`.
pub(crate) fn job_set(js: &Object<'_>) -> Vec<Built> {
    let name = js.name();
    let jobs = list_at(js.value, &["spec", "replicatedJobs"]);
    let global: i64 = jobs.iter().map(|j| int_at(j, &["replicas"]).unwrap_or(1)).sum();
    let dns = at(js.value, &["spec", "network", "enableDNSHostnames"]).and_then(Value::as_bool) != Some(false);
    let subdomain = str_at(js.value, &["spec", "network", "subdomain"]).map_or_else(|| name.clone(), str::to_string);
    let exclusive = js.annotations().get("alpha.jobset.sigs.k8s.io/exclusive-topology").cloned();
    let mut out = Vec::new();
    let mut global_index = 0;
    for rjob in jobs {
        let rname = str_at(rjob, &["name"]).unwrap_or_default().to_string();
        let job_name = format!("{name}-{rname}-0");
        let keys = vec![
            ("jobset-name", name.clone()),
            ("jobset-uid", js.uid()),
            ("replicatedjob-name", rname.clone()),
            ("restart-attempt", "0".to_string()),
            ("replicatedjob-replicas", int_at(rjob, &["replicas"]).unwrap_or(1).to_string()),
            ("global-replicas", global.to_string()),
            ("job-index", "0".to_string()),
            ("job-key", format!("key-{job_name}")),
            ("job-global-index", global_index.to_string()),
            ("group-name", str_at(rjob, &["groupName"]).unwrap_or("default").to_string()),
        ];
        global_index += int_at(rjob, &["replicas"]).unwrap_or(1);
        let keys: Vec<(String, String)> = keys.into_iter().map(|(k, v)| (format!("{JS}{k}"), v)).collect();
        let keys: Vec<(&str, String)> = keys.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let mut template = at(rjob, &["template"]).cloned().unwrap_or_else(|| json!({}));
        let labels = merged(map_at(&template, &["metadata", "labels"]), &keys);
        let mut annotations = merged(map_at(&template, &["metadata", "annotations"]), &keys);
        let pod_exclusive = exclusive
            .clone()
            .or_else(|| map_at(&template, &["metadata", "annotations"]).get("alpha.jobset.sigs.k8s.io/exclusive-topology").cloned());
        if let Some(e) = &pod_exclusive {
            annotations.insert("alpha.jobset.sigs.k8s.io/exclusive-topology".into(), e.clone());
        }
        set_default(&mut template, &["spec", "completionMode"], s("Indexed"));
        if let Some(pod) = at(&template, &["spec", "template"]).cloned() {
            let mut pod = pod;
            let pod_labels = merged(map_at(&pod, &["metadata", "labels"]), &keys);
            let mut pod_annotations = merged(map_at(&pod, &["metadata", "annotations"]), &keys);
            if let Some(e) = &pod_exclusive {
                pod_annotations.insert("alpha.jobset.sigs.k8s.io/exclusive-topology".into(), e.clone());
            }
            set(&mut pod, &["metadata", "labels"], Value::Object(pod_labels));
            set(&mut pod, &["metadata", "annotations"], Value::Object(pod_annotations));
            set_default(&mut pod, &["spec", "restartPolicy"], s("OnFailure"));
            if dns {
                set_default(&mut pod, &["spec", "subdomain"], s(subdomain.clone()));
            }
            set(&mut template, &["spec", "template"], pod);
        }
        if let Some(suspend) = at(js.value, &["spec", "suspend"]) {
            set(&mut template, &["spec", "suspend"], suspend.clone());
        }
        let mut job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job_name, "namespace": js.namespace, "labels": labels, "annotations": annotations, "ownerReferences": [js.controller_ref()]},
            "spec": at(&template, &["spec"]).cloned().unwrap_or_else(|| json!({})),
        });
        job_defaults(&mut job);
        out.push(built(job, &JOBSET, js));
    }
    out
}

const LWS_KEY: &str = "leaderworkerset.sigs.k8s.io/";

fn lws_key(k: &str) -> String {
    format!("{LWS_KEY}{k}")
}

/// LeaderWorkerSet → its leader StatefulSet `<lws>`, owned by the
/// LeaderWorkerSet (`constructLeaderStatefulSetApplyConfiguration`): the
/// LeaderWorkerSet's labels and annotations and LWS's own, and for its pod
/// template the `leaderTemplate`, or the `workerTemplate` when it has
/// none. The workers come from each leader Pod ([`lws_leader_pod`]).
pub(crate) fn leader_worker_set(lws: &Object<'_>) -> Vec<Built> {
    let name = lws.name();
    let lwt = at(lws.value, &["spec", "leaderWorkerTemplate"]).cloned().unwrap_or_else(|| json!({}));
    let size = int_at(&lwt, &["size"]).unwrap_or(1);
    let replicas = int_at(lws.value, &["spec", "replicas"]).unwrap_or(1);
    let Some(template) = at(&lwt, &["leaderTemplate"]).or_else(|| at(&lwt, &["workerTemplate"])) else { return Vec::new() };
    let mut template = template.clone();
    label_template(
        &mut template,
        &[(&lws_key("worker-index"), "0".into()), (&lws_key("name"), name.clone()), (&lws_key("template-revision-hash"), HASH.into())],
    );
    let mut pod_annotations = map_at(&template, &["metadata", "annotations"]);
    pod_annotations.insert(lws_key("size"), s(size.to_string()));
    if let Some(e) = lws.annotations().get(&lws_key("exclusive-topology")) {
        pod_annotations.insert(lws_key("exclusive-topology"), e.clone());
    }
    set(&mut template, &["metadata", "annotations"], Value::Object(pod_annotations));
    let labels = merged(lws.labels(), &[(&lws_key("name"), name.clone()), (&lws_key("template-revision-hash"), HASH.into())]);
    let annotations = merged(lws.annotations(), &[(&lws_key("replicas"), replicas.to_string())]);
    let mut spec = json!({
        "replicas": replicas,
        "serviceName": name,
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {lws_key("name"): name, lws_key("worker-index"): "0"}},
        "template": template,
    });
    if let Some(claims) = at(&lwt, &["volumeClaimTemplates"]) {
        set(&mut spec, &["volumeClaimTemplates"], claims.clone());
    }
    let sts = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": lws.namespace, "labels": labels, "annotations": annotations, "ownerReferences": [lws.controller_ref()]},
        "spec": spec,
    });
    vec![built(sts, &LWS, lws)]
}

/// A LeaderWorkerSet's leader Pod → its group's worker StatefulSet
/// `<leader pod>`, owned by the leader **Pod** (`pkg/controllers/pod_controller.go`,
/// `constructWorkerStatefulSetApplyConfiguration`), built by the LWS
/// controller from the LeaderWorkerSet it reads back: `size - 1` workers
/// from ordinal 1. Nothing for any other Pod, or a group of one.
pub(crate) fn lws_leader_pod(pod: &Object<'_>, lookup: &dyn Lookup) -> Vec<Built> {
    let labels = pod.labels();
    let (Some(lws_name), Some("0")) =
        (labels.get(&lws_key("name")).and_then(Value::as_str), labels.get(&lws_key("worker-index")).and_then(Value::as_str))
    else {
        return Vec::new();
    };
    let Some(lws) = lookup.get("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", Some(pod.namespace), lws_name) else { return Vec::new() };
    let lws = Object::of(&lws, pod.namespace);
    let size = int_at(lws.value, &["spec", "leaderWorkerTemplate", "size"]).unwrap_or(1);
    let Some(template) = lws.at(&["spec", "leaderWorkerTemplate", "workerTemplate"]).filter(|_| size > 1) else { return Vec::new() };
    let leader = pod.name();
    let group = labels.get(&lws_key("group-index")).and_then(Value::as_str).unwrap_or("0").to_string();
    let key = labels.get(&lws_key("group-key")).and_then(Value::as_str).unwrap_or_default().to_string();
    let group_labels = [
        (lws_key("group-index"), group),
        (lws_key("name"), lws_name.to_string()),
        (lws_key("group-key"), key),
        (lws_key("template-revision-hash"), HASH.to_string()),
    ];
    let group_labels: Vec<(&str, String)> = group_labels.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let mut template = template.clone();
    label_template(&mut template, &group_labels);
    let annotations = object_mut(&mut template, &["metadata", "annotations"]);
    annotations.insert(lws_key("size"), s(size.to_string()));
    annotations.insert(lws_key("leader-name"), s(leader.clone()));
    let sts = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": leader,
            "namespace": pod.namespace,
            "labels": merged(lws.labels(), &group_labels),
            "annotations": lws.annotations(),
            "ownerReferences": [pod.controller_ref()],
        },
        "spec": {
            "replicas": size - 1,
            "ordinals": {"start": 1},
            "serviceName": lws.name(),
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": Map::from_iter(group_labels.iter().take(3).map(|(k, v)| ((*k).to_string(), s(v.clone()))))},
            "template": template,
        },
    });
    vec![built(sts, &LWS, pod)]
}

/// The pod mutating webhooks the operators install, as they run on a pod a
/// controller creates: LWS's (`pkg/webhooks/pod_webhook.go`: group and
/// worker indexes, and the `LWS_*` variables first in every container and
/// init container, replacing the pod's own) and JobSet's (the exclusive
/// placement affinity of a job's leader pod).
pub(crate) fn pod_webhooks(pod: &mut Value) {
    let labels = map_at(pod, &["metadata", "labels"]);
    let name = str_at(pod, &["metadata", "name"]).unwrap_or_default().to_string();
    let namespace = str_at(pod, &["metadata", "namespace"]).unwrap_or_default().to_string();
    if let Some(lws) = labels.get(&lws_key("name")).and_then(Value::as_str).map(str::to_string) {
        let ordinal = name.rsplit('-').next().unwrap_or("0").to_string();
        let leader = labels.get(&lws_key("worker-index")).and_then(Value::as_str) == Some("0");
        let (group, index) = if leader {
            let l = object_mut(pod, &["metadata", "labels"]);
            l.insert(lws_key("group-index"), s(ordinal.clone()));
            l.insert(lws_key("group-key"), s(format!("key-{namespace}-{name}")));
            (ordinal, "0".to_string())
        } else {
            object_mut(pod, &["metadata", "labels"]).insert(lws_key("worker-index"), s(ordinal.clone()));
            (labels.get(&lws_key("group-index")).and_then(Value::as_str).unwrap_or("0").to_string(), ordinal)
        };
        let size = map_at(pod, &["metadata", "annotations"]).get(&lws_key("size")).and_then(Value::as_str).unwrap_or("1").to_string();
        let vars =
            [("LWS_LEADER_ADDRESS", format!("{lws}-{group}.{lws}.{namespace}")), ("LWS_GROUP_SIZE", size), ("LWS_WORKER_INDEX", index)];
        for list in ["containers", "initContainers"] {
            for c in list_mut(pod, &["spec", list]).iter_mut() {
                let mut env: Vec<Value> = vars.iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
                env.extend(list_at(c, &["env"]).iter().filter(|e| !vars.iter().any(|(k, _)| str_at(e, &["name"]) == Some(k))).cloned());
                set(c, &["env"], Value::Array(env));
            }
        }
    }
    let annotations = map_at(pod, &["metadata", "annotations"]);
    if labels.contains_key(&format!("{JS}jobset-name"))
        && annotations.get("batch.kubernetes.io/job-completion-index").and_then(Value::as_str) == Some("0")
        && let Some(topology) = annotations.get("alpha.jobset.sigs.k8s.io/exclusive-topology").and_then(Value::as_str)
    {
        let key = labels.get(&format!("{JS}job-key")).cloned().unwrap_or(Value::Null);
        list_mut(pod, &["spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]).push(json!({
            "labelSelector": {"matchExpressions": [{"key": format!("{JS}job-key"), "operator": "In", "values": [key]}]},
            "namespaceSelector": {}, "topologyKey": topology
        }));
        list_mut(pod, &["spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]).push(json!({
            "labelSelector": {"matchExpressions": [
                {"key": format!("{JS}job-key"), "operator": "Exists"},
                {"key": format!("{JS}job-key"), "operator": "NotIn", "values": [key]}
            ]},
            "namespaceSelector": {}, "topologyKey": topology
        }));
    }
}

/// Volcano Job → one pod per task (its first index; `createJobPod`): named
/// `<job>-<task>-0`, Volcano's labels and annotations, the Job's scheduler
/// and priority class where the task sets none, and what the Job's plugins
/// add (`pkg/controllers/job/plugins`: `env`, `svc`, `ssh`, `pytorch`).
pub(crate) fn volcano_job(job: &Object<'_>) -> Vec<Built> {
    let name = job.name();
    let queue = str_at(job.value, &["spec", "queue"]).unwrap_or("default").to_string();
    let plugins = map_at(job.value, &["spec", "plugins"]);
    let tasks = list_at(job.value, &["spec", "tasks"]);
    let mut out = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let task_name = str_at(task, &["name"]).map_or_else(|| format!("default{i}"), str::to_string);
        let Some(template) = at(task, &["template"]) else { continue };
        let mut template = template.clone();
        let pod_name = format!("{name}-{task_name}-0");
        let volcano = |k: &str| format!("volcano.sh/{k}");
        label_template(
            &mut template,
            &[
                (&volcano("task-index"), "0".into()),
                (&volcano("job-name"), name.clone()),
                (&volcano("task-spec"), task_name.clone()),
                (&volcano("job-namespace"), job.namespace.to_string()),
                (&volcano("queue-name"), queue.clone()),
            ],
        );
        let annotations = object_mut(&mut template, &["metadata", "annotations"]);
        for (k, v) in [
            (volcano("task-index"), "0".to_string()),
            (volcano("task-spec"), task_name.clone()),
            ("scheduling.k8s.io/group-name".to_string(), format!("{name}-{}", job.uid())),
            (volcano("job-name"), name.clone()),
            (volcano("queue-name"), queue.clone()),
            (volcano("job-version"), "0".to_string()),
            (volcano("template-uid"), format!("{name}-{task_name}")),
            (volcano("job-retry-count"), "0".to_string()),
        ] {
            annotations.insert(k, s(v));
        }
        for (field, from) in [("schedulerName", "schedulerName"), ("priorityClassName", "priorityClassName")] {
            if let Some(v) = str_at(job.value, &["spec", from]) {
                set_default(&mut template, &["spec", field], s(v));
            }
        }
        for (plugin, _) in &plugins {
            volcano_plugin(plugin, &mut template, &name, &pod_name, &task_name, tasks);
        }
        let pod = from_template(&template, job.namespace, Naming::Name(pod_name), job.controller_ref());
        out.push(built(pod, &VOLCANO, job));
    }
    out
}

fn volcano_plugin(plugin: &str, template: &mut Value, job: &str, pod: &str, task: &str, tasks: &[Value]) {
    let every = |template: &mut Value, f: &dyn Fn(&mut Value)| {
        for list in ["containers", "initContainers"] {
            for c in list_mut(template, &["spec", list]).iter_mut() {
                f(c);
            }
        }
    };
    match plugin {
        "env" => every(template, &|c| {
            list_mut(c, &["env"]).extend([json!({"name": "VK_TASK_INDEX", "value": "0"}), json!({"name": "VC_TASK_INDEX", "value": "0"})]);
        }),
        "svc" => {
            set_default(template, &["spec", "hostname"], s(pod));
            set_default(template, &["spec", "subdomain"], s(job));
            let env: Vec<Value> = tasks
                .iter()
                .filter_map(|t| str_at(t, &["name"]))
                .flat_map(|t| {
                    let up = t.to_ascii_uppercase().replace('-', "_");
                    [
                        json!({"name": format!("VC_{up}_HOSTS"), "valueFrom": {"configMapKeyRef": {"name": format!("{job}-svc"), "key": format!("VC_{up}_HOSTS")}}}),
                        json!({"name": format!("VC_{up}_NUM"), "valueFrom": {"configMapKeyRef": {"name": format!("{job}-svc"), "key": format!("VC_{up}_NUM")}}}),
                    ]
                })
                .collect();
            every(template, &|c| {
                list_mut(c, &["env"]).extend(env.iter().cloned());
                list_mut(c, &["volumeMounts"]).push(json!({"name": format!("{job}-svc"), "mountPath": "/etc/volcano"}));
            });
            list_mut(template, &["spec", "volumes"])
                .push(json!({"name": format!("{job}-svc"), "configMap": {"name": format!("{job}-svc")}}));
        }
        "ssh" => {
            every(template, &|c| {
                list_mut(c, &["volumeMounts"]).push(json!({"name": format!("{job}-ssh"), "mountPath": "/root/.ssh", "subPath": ".ssh"}));
            });
            list_mut(template, &["spec", "volumes"])
                .push(json!({"name": format!("{job}-ssh"), "secret": {"secretName": format!("{job}-ssh"), "defaultMode": 0o600}}));
        }
        "pytorch" => {
            let rank = if task == "master" { "0" } else { "1" };
            let world: i64 = tasks.iter().map(|t| int_at(t, &["replicas"]).unwrap_or(1)).sum();
            let env = [
                json!({"name": "MASTER_ADDR", "value": format!("{job}-master-0.{job}")}),
                json!({"name": "MASTER_PORT", "value": "23456"}),
                json!({"name": "WORLD_SIZE", "value": world.to_string()}),
                json!({"name": "RANK", "value": rank}),
            ];
            for c in list_mut(template, &["spec", "containers"]).iter_mut() {
                list_mut(c, &["env"]).extend(env.iter().cloned());
                if !list_at(c, &["ports"]).iter().any(|p| str_at(p, &["name"]) == Some("pytorchjob-port")) {
                    list_mut(c, &["ports"]).push(json!({"name": "pytorchjob-port", "containerPort": 23456}));
                }
            }
        }
        _ => {}
    }
}
