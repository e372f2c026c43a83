//! What every controller shares: a pod made from a template, and what the
//! API server adds to every object before a validating webhook sees it.
//!
//! Sources (kubernetes/kubernetes): `pkg/controller/controller_utils.go`
//! (`GetPodFromTemplate`), `pkg/apis/core/v1/defaults.go`
//! (`SetDefaults_PodSpec`, `SetDefaults_Container`, `SetDefaults_Pod`),
//! `plugin/pkg/admission/serviceaccount` and
//! `plugin/pkg/admission/defaulttolerationseconds`.

use serde_json::{Map, Value, json};

use crate::json::{at, list_at, list_mut, object_mut, set, set_default, str_at};

/// A pod built from `template` (a `PodTemplateSpec`) as a controller
/// creates it: the template's labels, annotations and finalizers, its spec
/// verbatim, `owner` as the one owner reference; named `name`, or by the
/// API server from `generate_name`.
pub fn from_template(template: &Value, namespace: &str, name: Naming, owner: Value) -> Value {
    let mut metadata = Map::new();
    match name {
        Naming::Name(n) => {
            metadata.insert("name".into(), Value::String(n));
        }
        Naming::Generate(prefix) => {
            metadata.insert("name".into(), Value::String(crate::json::generated(&prefix)));
            metadata.insert("generateName".into(), Value::String(prefix));
        }
    }
    metadata.insert("namespace".into(), Value::String(namespace.to_string()));
    for key in ["labels", "annotations", "finalizers"] {
        if let Some(v) = at(template, &["metadata", key]).filter(|v| !v.is_null()) {
            metadata.insert(key.into(), v.clone());
        }
    }
    metadata.insert("ownerReferences".into(), json!([owner]));
    let spec = at(template, &["spec"]).cloned().unwrap_or_else(|| json!({}));
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    admitted_pod(&mut pod);
    pod
}

/// How a built object is named.
pub enum Naming {
    /// A fixed name (a StatefulSet's `train-0`).
    Name(String),
    /// A prefix the API server completes (a ReplicaSet's `train-6d5f8c7b9-`).
    Generate(String),
}

/// The defaults the API server gives every pod spec, a Pod's and every
/// built-in kind's template alike, when it decodes the object
/// (`SetDefaults_PodSpec`, `SetDefaults_Container`): what a webhook sees
/// even where the author wrote nothing.
pub fn template_defaults(spec: &mut Value) {
    set_default(spec, &["dnsPolicy"], json!("ClusterFirst"));
    set_default(spec, &["restartPolicy"], json!("Always"));
    set_default(spec, &["securityContext"], json!({}));
    set_default(spec, &["terminationGracePeriodSeconds"], json!(30));
    set_default(spec, &["schedulerName"], json!("default-scheduler"));
    if let Some(sa) = str_at(spec, &["serviceAccountName"]).filter(|s| !s.is_empty()).map(str::to_string) {
        // The v1 conversion fills the deprecated field from the new one.
        set(spec, &["serviceAccount"], json!(sa));
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in list_mut(spec, &[list]).iter_mut() {
            container_defaults(c);
        }
    }
}

fn container_defaults(c: &mut Value) {
    let policy = pull_policy(str_at(c, &["image"]));
    set_default(c, &["imagePullPolicy"], json!(policy));
    set_default(c, &["terminationMessagePath"], json!("/dev/termination-log"));
    set_default(c, &["terminationMessagePolicy"], json!("File"));
    for p in list_mut(c, &["ports"]).iter_mut() {
        set_default(p, &["protocol"], json!("TCP"));
    }
}

/// `SetDefaults_Container`'s pull policy: `Always` for an image tagged
/// `latest` or with neither tag nor digest (`parsers.ParseImageName` reads
/// that as `latest`), else `IfNotPresent`.
fn pull_policy(image: Option<&str>) -> &'static str {
    let Some(image) = image.filter(|i| !i.is_empty()) else { return "IfNotPresent" };
    let (name, digest) = image.split_once('@').map_or((image, false), |(n, _)| (n, true));
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
        None if digest => "IfNotPresent",
        None => "Always",
    }
}

/// Everything the API server does to a pod a controller creates before a
/// validating webhook sees it: the pod spec defaults, the Pod-only
/// defaults (`SetDefaults_Pod`), and the default admission plugins that
/// change pods (ServiceAccount, DefaultTolerationSeconds).
pub fn admitted_pod(pod: &mut Value) {
    let spec = crate::json::object_mut(pod, &["spec"]);
    let mut spec_value = Value::Object(std::mem::take(spec));
    template_defaults(&mut spec_value);
    pod_defaults(&mut spec_value);
    service_account(&mut spec_value);
    default_toleration_seconds(&mut spec_value);
    set(pod, &["spec"], spec_value);
    pod_webhooks(pod);
}

/// The mutating webhooks of the controllers modelled here that change
/// pods at their creation (LeaderWorkerSet's, JobSet's, KServe's), then
/// the API server's defaults for what they added: it decodes, and so
/// defaults, the object each webhook returns (the ServiceAccount plugin
/// ran before them and is not run again).
fn pod_webhooks(pod: &mut Value) {
    crate::batch::pod_webhooks(pod);
    crate::serving::pod_webhook(pod);
    if let Some(spec) = pod.get_mut("spec") {
        template_defaults(spec);
    }
}

/// `SetDefaults_Pod`: requests copied from limits where unset, service
/// links on, and under `hostNetwork` every container and init container
/// port's `hostPort` set to its `containerPort` (Pods only since 1.28).
fn pod_defaults(spec: &mut Value) {
    let host_network = at(spec, &["hostNetwork"]).and_then(Value::as_bool) == Some(true);
    for list in ["containers", "initContainers"] {
        for c in list_mut(spec, &[list]).iter_mut() {
            let limits = crate::json::map_at(c, &["resources", "limits"]);
            if !limits.is_empty() {
                let requests = object_mut(c, &["resources", "requests"]);
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
            if host_network {
                for p in list_mut(c, &["ports"]).iter_mut() {
                    let host = at(p, &["hostPort"]).and_then(Value::as_i64).unwrap_or(0);
                    if let (0, Some(port)) = (host, at(p, &["containerPort"]).cloned()) {
                        set(p, &["hostPort"], port);
                    }
                }
            }
        }
    }
    set_default(spec, &["enableServiceLinks"], json!(true));
}

/// The ServiceAccount admission plugin on a pod's creation: the `default`
/// service account when none is named, and, unless the pod opts out, the
/// projected API token volume mounted into every container and init
/// container that has nothing at its path.
fn service_account(spec: &mut Value) {
    if str_at(spec, &["serviceAccountName"]).is_none_or(str::is_empty) {
        set(spec, &["serviceAccountName"], json!("default"));
        set(spec, &["serviceAccount"], json!("default"));
    }
    if at(spec, &["automountServiceAccountToken"]).and_then(Value::as_bool) == Some(false) {
        return;
    }
    const PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let volume = list_at(spec, &["volumes"])
        .iter()
        .filter_map(|v| str_at(v, &["name"]))
        .find(|n| n.starts_with("kube-api-access-"))
        .map_or_else(|| "kube-api-access-x7k2p".to_string(), str::to_string);
    let mut mounted = false;
    for list in ["containers", "initContainers"] {
        for c in list_mut(spec, &[list]).iter_mut() {
            if list_at(c, &["volumeMounts"]).iter().any(|m| str_at(m, &["mountPath"]) == Some(PATH)) {
                continue;
            }
            list_mut(c, &["volumeMounts"]).push(json!({"name": volume, "readOnly": true, "mountPath": PATH}));
            mounted = true;
        }
    }
    if mounted && !list_at(spec, &["volumes"]).iter().any(|v| str_at(v, &["name"]) == Some(volume.as_str())) {
        list_mut(spec, &["volumes"]).push(json!({
            "name": volume,
            "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}
        }));
    }
}

/// The DefaultTolerationSeconds admission plugin: tolerate `not-ready` and
/// `unreachable` nodes for 300 s unless a toleration already covers that
/// key (or every key) with `NoExecute` (or every effect).
fn default_toleration_seconds(spec: &mut Value) {
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let covered = list_at(spec, &["tolerations"]).iter().any(|t| {
            let k = str_at(t, &["key"]).unwrap_or_default();
            let e = str_at(t, &["effect"]).unwrap_or_default();
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        });
        if !covered {
            list_mut(spec, &["tolerations"]).push(json!({
                "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300
            }));
        }
    }
}

/// The template of a built-in kind's object as the API server stores it:
/// its pod spec defaulted ([`template_defaults`]).
pub fn defaulted_template(template: &Value) -> Value {
    let mut t = template.clone();
    if at(&t, &["spec"]).is_some_and(Value::is_object) {
        template_defaults(crate::json::value_mut(&mut t, &["spec"]));
    }
    t
}
