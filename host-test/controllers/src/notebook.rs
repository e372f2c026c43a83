//! Kubeflow's notebook controller (`kubeflow/kubeflow` v1.10.0,
//! `components/notebook-controller/controllers/notebook_controller.go`,
//! `generateStatefulSet`): a Notebook → a StatefulSet of the same name,
//! whose pods carry the Notebook's labels.

use serde_json::{Map, Value, json};

use crate::Built;
use crate::core::built;
use crate::identity::NOTEBOOK;
use crate::json::{Object, at, list_at, list_mut, s, set, set_default, str_at};

/// Notebook → StatefulSet: no labels or annotations of its own; its pod
/// template labelled `statefulset` and `notebook-name` with the Notebook's
/// labels over them, annotated with the Notebook's annotations but those
/// naming kubectl or notebooks; the Notebook's pod spec with the first
/// container's working directory, port 8888 and `NB_PREFIX` where unset,
/// and `fsGroup: 100` when the pod has no security context. The
/// Notebook's own `spec.template.metadata` is not used.
pub(crate) fn notebook(nb: &Object<'_>) -> Vec<Built> {
    let name = nb.name();
    let mut labels = Map::new();
    labels.insert("statefulset".into(), s(name.clone()));
    labels.insert("notebook-name".into(), s(name.clone()));
    labels.extend(nb.labels());
    let annotations: Map<String, Value> =
        nb.annotations().into_iter().filter(|(k, _)| !k.contains("kubectl") && !k.contains("notebook")).collect();
    let mut spec = at(nb.value, &["spec", "template", "spec"]).cloned().unwrap_or_else(|| json!({}));
    if let Some(c) = list_mut(&mut spec, &["containers"]).first_mut() {
        if str_at(c, &["workingDir"]).is_none_or(str::is_empty) {
            set(c, &["workingDir"], s("/home/jovyan"));
        }
        if at(c, &["ports"]).is_none() {
            set(c, &["ports"], json!([{"name": "notebook-port", "containerPort": 8888, "protocol": "TCP"}]));
        }
        if !list_at(c, &["env"]).iter().any(|e| str_at(e, &["name"]) == Some("NB_PREFIX")) {
            list_mut(c, &["env"]).push(json!({"name": "NB_PREFIX", "value": format!("/notebook/{}/{name}", nb.namespace)}));
        }
    }
    set_default(&mut spec, &["securityContext"], json!({"fsGroup": 100}));
    let stopped = nb.annotations().contains_key("kubeflow-resource-stopped");
    let sts = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": nb.namespace, "ownerReferences": [nb.controller_ref()]},
        "spec": {
            "replicas": if stopped { 0 } else { 1 },
            "serviceName": "",
            "selector": {"matchLabels": {"statefulset": name}},
            "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec},
        },
    });
    vec![built(sts, &NOTEBOOK, nb)]
}
