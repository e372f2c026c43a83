//! Edits mutating rules make, built from the paths the workload model
//! gives, so no rule writes JSON paths or re-serialises an object by hand.
//! The SDK applies them to the request's object text ([`crate::decode::json`]):
//! what a rule does not touch stays byte for byte as the client sent it.
//!
//! A mutating rule must be idempotent: run on its own output, it finds
//! nothing left to change. The helpers here only write what is missing
//! (`SetIfAbsent`), and the rule checks the model before adding to a list.
//!
//! Where and when to edit matters as much as what: [`may_edit_template`]
//! (never a Pod's spec on UPDATE, never a template an UPDATE leaves alone),
//! [`controlled_copy`] (a ReplicaSet its Deployment made is the
//! Deployment's business), [`pod_metadata_path`] (where labels and
//! annotations reach the pods, a Notebook's included).

use crate::decode::json::{self, Edit, quote};
use crate::decode::path::Path;
use crate::model::kind::WorkloadKind;
use crate::model::pod::NodeSelectorTerm;
use crate::model::request::{Operation, Request};
use crate::model::workload::{PodTemplate, Role, Workload};

/// Whether the request changes the value at `path` of its object: always on
/// CREATE (and on an UPDATE without its old object); on UPDATE, when the old
/// object has nothing there or something else, compared as JSON values (key
/// order and spacing do not count); never on DELETE or CONNECT.
pub fn changes(req: &Request<'_>, path: &Path) -> bool {
    match req.operation() {
        Operation::Create => true,
        Operation::Update => {
            let (Some(new), Some(old)) = (req.object_text(), req.old_object_text()) else {
                return true;
            };
            match (json::find(new, path), json::find(old, path)) {
                (Some(a), Some(b)) => a != b && !same_json(a, b),
                (None, None) => false,
                _ => true,
            }
        }
        Operation::Delete | Operation::Connect => false,
    }
}

fn same_json(a: &str, b: &str) -> bool {
    match (serde_json::from_str::<serde_json::Value>(a), serde_json::from_str::<serde_json::Value>(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether a mutating rule may edit pod template `t` in this request:
///
/// - on CREATE, yes;
/// - on UPDATE of a Pod, no: a pod's spec is immutable once created (but
///   for images, `activeDeadlineSeconds` and added tolerations), so an edit
///   would get the whole update refused. Pods are set up when created;
/// - on UPDATE of another kind, only when the update itself changes the
///   template ([`changes`]). An unrelated edit (a label, `replicas`) of a
///   workload created before the rule then never rolls its pods out, and a
///   template Kubernetes keeps immutable (a started Job's) is touched only
///   by an update that touches it anyway. An update that drops what the
///   rule added changes the template, so the rule puts it back;
/// - on DELETE and CONNECT, no;
/// - never the pod a controller makes because the object names none
///   ([`PodTemplate::is_default`]): it is not in the object.
pub fn may_edit_template(req: &Request<'_>, t: &PodTemplate<'_>) -> bool {
    if t.is_default() {
        return false;
    }
    match req.operation() {
        Operation::Create => true,
        Operation::Update => t.role != Role::Pod && changes(req, t.path()),
        Operation::Delete | Operation::Connect => false,
    }
}

/// Whether the API server accepts an edit at `path` of the object on this
/// request. Only an UPDATE of a kind whose pod templates Kubernetes keeps
/// immutable can refuse one:
///
/// - a Job's `spec.template` (and a JobSet's replicated jobs, which its
///   webhook keeps alike) may not change once created, but for the "mutable
///   scheduling directives" of a Job that is suspended and has never
///   started (`status.startTime` unset): the template's labels and
///   annotations, `nodeSelector`, `affinity`, `tolerations` and
///   `schedulingGates` (Kubernetes' `validateJobUpdate`; Kueue relies on
///   it when it admits a suspended Job);
/// - everything outside the pod templates (the object's own metadata, a
///   CronJob's job template) may change.
///
/// A Pod's spec is left alone on UPDATE by [`may_edit_template`] already.
/// An edit the API server would refuse gets the whole request refused, so
/// the SDK drops it and says so in a warning (see `entry`).
pub fn update_allows(req: &Request<'_>, path: &Path) -> bool {
    if req.operation() != Operation::Update {
        return true;
    }
    let Some(w) = req.workload() else { return true };
    if !matches!(w.kind, WorkloadKind::Job | WorkloadKind::JobSet) {
        return true;
    }
    let Some(t) = w.templates().find(|t| path.0.starts_with(&t.path().0)) else { return true };
    if !suspended_and_never_started(req) {
        return false;
    }
    let after = |prefix: &Path| match path.0.get(prefix.0.len()) {
        Some(crate::decode::path::Seg::Key(k)) if path.0.starts_with(&prefix.0) => Some(k.clone()),
        _ => None,
    };
    matches!(after(&t.metadata_path()).as_deref(), Some("labels" | "annotations"))
        || matches!(after(&t.spec_path()).as_deref(), Some("nodeSelector" | "affinity" | "tolerations" | "schedulingGates"))
}

/// Whether the UPDATE's old object was suspended (`spec.suspend: true`)
/// and had never started (no `status.startTime`).
fn suspended_and_never_started(req: &Request<'_>) -> bool {
    let Some(old) = req.old_object_text() else { return false };
    json::find(old, &Path::root().keys(&["spec", "suspend"])) == Some("true")
        && json::find(old, &Path::root().keys(&["status", "startTime"])).is_none_or(|v| v == "null")
}

/// Whether an UPDATE changes nothing its author asked for: the object and
/// its old object are equal once the API server's and the controllers'
/// bookkeeping is set aside: `status`, `metadata.finalizers`,
/// `metadata.managedFields`, `metadata.resourceVersion`,
/// `metadata.generation`, and owner references that were only removed
/// (the garbage collector orphaning dependents, `kubectl delete
/// --cascade=orphan`). Such an update must never be refused or changed:
/// refusing the garbage collector's leaves the owner `Terminating` for
/// ever. Owner references added are not bookkeeping: they change which
/// controller a rule trusts.
pub fn bookkeeping_only(req: &Request<'_>) -> bool {
    if req.operation() != Operation::Update {
        return false;
    }
    let (Some(new), Some(old)) = (req.object_text(), req.old_object_text()) else { return false };
    same_but(new, old, &["status"], &|key, new, old| match key {
        "metadata" => {
            same_but(new, old, &["finalizers", "managedFields", "resourceVersion", "generation", "ownerReferences"], &|_, _, _| false)
                && owners_only_removed(new, old)
        }
        _ => false,
    })
}

/// Whether two objects have the same members in the same order, as text,
/// but for the members `ignored`, and those `special` says are alike. The
/// API server writes an object and its old object with one encoder, so
/// what it did not change reads the same; anything else (members in
/// another order, other spacing) is not alike, which only means "not
/// bookkeeping": the update is then judged as any other.
fn same_but(new: &str, old: &str, ignored: &[&str], special: &dyn Fn(&str, &str, &str) -> bool) -> bool {
    let (Some(mut new), Some(mut old)) = (json::members(new), json::members(old)) else { return false };
    new.retain(|(k, _)| !ignored.contains(&&**k));
    old.retain(|(k, _)| !ignored.contains(&&**k));
    new.len() == old.len() && new.iter().zip(&old).all(|((kn, vn), (ko, vo))| kn == ko && (vn == vo || special(kn, vn, vo)))
}

/// Whether every owner reference the new metadata holds, the old held too.
fn owners_only_removed(new_meta: &str, old_meta: &str) -> bool {
    fn owners(meta: &str) -> Option<Vec<&str>> {
        json::find(meta, &Path::root().key("ownerReferences")).filter(|v| *v != "null").map_or(Some(Vec::new()), json::elements)
    }
    match (owners(new_meta), owners(old_meta)) {
        (Some(new), Some(old)) => new.iter().all(|o| old.contains(o)),
        _ => false,
    }
}

/// Whether the workload is a controller's copy of someone else's templates:
/// a kind that owns pod templates, with a controlling owner reference (a
/// ReplicaSet its Deployment made, a Job its CronJob made, a RayCluster its
/// RayJob made, a StatefulSet a Notebook made). Mutating rules leave these
/// alone: the owner's templates were edited when it was submitted, and an
/// edited copy no longer matches what its controller expects (the
/// Deployment controller, finding no ReplicaSet equal to its template,
/// would create new ones without end). Pods are not copies: they are made
/// from templates, and no controller compares them back.
pub fn controlled_copy(req: &Request<'_>) -> bool {
    req.workload().is_some_and(|w| w.kind.owns_templates()) && req.controller().is_some()
}

/// Where labels and annotations that reach the pods of template `t` are
/// written: the template's metadata (`spec.template.metadata`; a Pod's own
/// `metadata`; an InferenceService component's own `labels` and
/// `annotations`), but a Notebook's own `metadata`: its template has no
/// metadata (the field is pruned), and the notebook controller copies the
/// Notebook's labels onto its pod. `None` for a TrainJob's trainer, whose
/// pod metadata comes from its training runtime, and for an
/// InferenceService predictor's workers, whose pods get the predictor's
/// ([`PodTemplate::shares_metadata`]): written there, it reaches them.
pub fn pod_metadata_path(w: &Workload<'_>, t: &PodTemplate<'_>) -> Option<Path> {
    if t.is_partial() || t.is_default() || t.shares_metadata() {
        return None;
    }
    if t.role == Role::Pod || w.kind == WorkloadKind::Notebook {
        return Some(Path::root().key("metadata"));
    }
    Some(t.metadata_path())
}

/// Sets label `key` in the metadata at `metadata` (`metadata`,
/// `spec.template.metadata`) to `value`; `overwrite: false` leaves an
/// existing value alone.
pub fn label(metadata: &Path, key: &str, value: &str, overwrite: bool) -> Edit {
    let path = metadata.keys(&["labels", key]);
    if overwrite { Edit::Set { path, value: quote(value) } } else { Edit::SetIfAbsent { path, value: quote(value) } }
}

/// Sets annotation `key` in the metadata at `metadata` to `value`, if not set.
pub fn annotation(metadata: &Path, key: &str, value: &str) -> Edit {
    Edit::SetIfAbsent { path: metadata.keys(&["annotations", key]), value: quote(value) }
}

/// Sets a string field of a pod spec (`runtimeClassName`), if not set.
pub fn spec_field(t: &PodTemplate<'_>, field: &str, value: &str) -> Edit {
    Edit::SetIfAbsent { path: t.spec_path().key(field.to_string()), value: quote(value) }
}

/// Appends a toleration (`{key, operator, value?, effect?}`) to a pod spec.
pub fn toleration(t: &PodTemplate<'_>, key: &str, operator: &str, value: Option<&str>, effect: Option<&str>) -> Edit {
    let mut json = format!("{{\"key\":{},\"operator\":{}", quote(key), quote(operator));
    if let Some(v) = value {
        json.push_str(&format!(",\"value\":{}", quote(v)));
    }
    if let Some(e) = effect {
        json.push_str(&format!(",\"effect\":{}", quote(e)));
    }
    json.push('}');
    Edit::Append { path: t.spec_path().key("tolerations"), value: json }
}

/// A node selector requirement as JSON: `{"key":..,"operator":..,"values":[..]}`.
pub fn requirement(key: &str, operator: &str, values: &[&str]) -> String {
    let mut json = format!("{{\"key\":{},\"operator\":{}", quote(key), quote(operator));
    if !values.is_empty() {
        let vs: Vec<String> = values.iter().map(|v| quote(v)).collect();
        json.push_str(&format!(",\"values\":[{}]", vs.join(",")));
    }
    json.push('}');
    json
}

/// Whether a term already holds `requirement` (same key, operator, values).
pub fn term_has(term: &NodeSelectorTerm<'_>, key: &str, operator: &str, values: &[&str]) -> bool {
    term.match_expressions.iter().any(|r| {
        &*r.key == key && &*r.operator == operator && r.values.len() == values.len() && r.values.iter().zip(values).all(|(a, b)| &**a == *b)
    })
}

/// Makes the pod's required node affinity also demand `key operator
/// values`. The terms of `requiredDuringSchedulingIgnoredDuringExecution`
/// are ORed, so the requirement is added to every term that lacks it (each
/// way of scheduling the pod keeps it); without terms, one term holding it is
/// created. Everything else in the affinity is kept.
pub fn require_node(t: &PodTemplate<'_>, key: &str, operator: &str, values: &[&str]) -> Vec<Edit> {
    let expr = requirement(key, operator, values);
    let terms_path =
        t.spec_path().keys(&["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
    match t.spec.required_node_affinity() {
        Some(ns) if !ns.node_selector_terms.is_empty() => ns
            .node_selector_terms
            .iter()
            .enumerate()
            .filter(|(_, term)| !term_has(term, key, operator, values))
            .map(|(i, _)| Edit::Append { path: terms_path.index(i).key("matchExpressions"), value: expr.clone() })
            .collect(),
        _ => vec![Edit::Set { path: terms_path, value: format!("[{{\"matchExpressions\":[{expr}]}}]") }],
    }
}

/// [`require_node`] for several requirements at once: each one is added to
/// every term that lacks it; without terms, one term holding them all is
/// created. (Calling [`require_node`] once per requirement on a pod without
/// terms would create the term once per requirement, each replacing the
/// one before, since the edits are computed from the same model.)
pub fn require_nodes(t: &PodTemplate<'_>, requirements: &[(&str, &str, &[&str])]) -> Vec<Edit> {
    let has_terms = t.spec.required_node_affinity().is_some_and(|ns| !ns.node_selector_terms.is_empty());
    if has_terms {
        return requirements.iter().flat_map(|(k, op, vs)| require_node(t, k, op, vs)).collect();
    }
    if requirements.is_empty() {
        return Vec::new();
    }
    let exprs: Vec<String> = requirements.iter().map(|(k, op, vs)| requirement(k, op, vs)).collect();
    let terms_path =
        t.spec_path().keys(&["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
    vec![Edit::Set { path: terms_path, value: format!("[{{\"matchExpressions\":[{}]}}]", exprs.join(",")) }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::json::apply;
    use crate::model::kind::WorkloadKind;
    use crate::model::workload::Workload;

    fn with<R>(json: &str, f: impl FnOnce(&PodTemplate<'_>) -> R) -> R {
        let w = Workload::parse(WorkloadKind::Deployment, json).unwrap();
        f(w.templates().next().unwrap())
    }

    #[test]
    fn node_requirements_join_every_term() {
        let d = r#"{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}},"containers":[]}}}}"#;
        let edits = with(d, |t| require_node(t, "nvidia.com/gpu.present", "NotIn", &["true"]));
        assert_eq!(edits.len(), 2);
        let out = apply(d, &edits).unwrap();
        assert_eq!(out.matches("nvidia.com/gpu.present").count(), 2);
        let again = with(&out, |t| require_node(t, "nvidia.com/gpu.present", "NotIn", &["true"]));
        assert!(again.is_empty(), "idempotent");
        let bare = r#"{"spec":{"template":{"spec":{"containers":[]}}}}"#;
        let out = apply(bare, &with(bare, |t| require_node(t, "gpu", "NotIn", &["true"]))).unwrap();
        assert_eq!(
            out,
            r#"{"spec":{"template":{"spec":{"containers":[],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu","operator":"NotIn","values":["true"]}]}]}}}}}}}"#
        );
    }

    #[test]
    fn several_node_requirements_make_one_term() {
        let bare = r#"{"spec":{"template":{"spec":{"containers":[]}}}}"#;
        let reqs: &[(&str, &str, &[&str])] = &[("pool", "In", &["cpu", "spot"]), ("gpu", "DoesNotExist", &[])];
        let out = apply(bare, &with(bare, |t| require_nodes(t, reqs))).unwrap();
        assert!(out.contains(r#""nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["cpu","spot"]},{"key":"gpu","operator":"DoesNotExist"}]}]"#), "{out}");
        assert!(with(&out, |t| require_nodes(t, reqs)).is_empty(), "idempotent");
        let two = r#"{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}]}}},"containers":[]}}}}"#;
        let edits = with(two, |t| require_nodes(t, reqs));
        assert_eq!(edits.len(), 3, "pool to both terms, gpu to the second");
        let out = apply(two, &edits).unwrap();
        assert!(with(&out, |t| require_nodes(t, reqs)).is_empty(), "idempotent");
        assert!(with(bare, |t| require_nodes(t, &[])).is_empty());
    }

    fn request(op: &str, kind: (&str, &str), object: &str, old: Option<&str>) -> String {
        let old = old.map(|o| format!(",\"oldObject\":{o}")).unwrap_or_default();
        format!(
            r#"{{"uid":"1","kind":{{"group":"{}","version":"v1","kind":"{}"}},"operation":"{op}","userInfo":{{"username":"u"}},"object":{object}{old}}}"#,
            kind.0, kind.1
        )
    }

    #[test]
    fn templates_are_edited_on_create_and_when_an_update_changes_them() {
        let d = r#"{"metadata":{"name":"d"},"spec":{"replicas":1,"template":{"metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c"}]}}}}"#;
        let scaled = r#"{"metadata":{"name":"d"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c"}]},"metadata":{"labels":{"a":"1"}}}}}"#;
        let edited = r#"{"metadata":{"name":"d"},"spec":{"replicas":1,"template":{"metadata":{"labels":{"a":"2"}},"spec":{"containers":[{"name":"c"}]}}}}"#;
        let deploy = ("apps", "Deployment");
        let may = |text: &str| {
            let r = Request::parse(text).unwrap();
            let t = r.workload().unwrap().templates().next().unwrap().clone();
            may_edit_template(&r, &t)
        };
        assert!(may(&request("CREATE", deploy, d, None)));
        assert!(!may(&request("UPDATE", deploy, scaled, Some(d))), "replicas only; the template's keys in another order");
        assert!(may(&request("UPDATE", deploy, edited, Some(d))), "the template changes");
        assert!(may(&request("UPDATE", deploy, d, None)), "no old object to compare with");
        let pod = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"b"}]}}"#;
        let old_pod = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"a"}]}}"#;
        assert!(may(&request("CREATE", ("", "Pod"), pod, None)));
        assert!(!may(&request("UPDATE", ("", "Pod"), pod, Some(old_pod))), "a pod's spec is immutable");
        let text = request("UPDATE", deploy, edited, Some(d));
        let r = Request::parse(&text).unwrap();
        assert!(changes(&r, &Path::root().keys(&["spec", "template", "metadata"])));
        assert!(!changes(&r, &Path::root().keys(&["spec", "replicas"])));
        assert!(!changes(&r, &Path::root().keys(&["spec", "paused"])), "absent from both");
    }

    #[test]
    fn bookkeeping_is_status_finalizers_and_owners_removed() {
        let pod =
            |meta: &str, status: &str| format!(r#"{{"metadata":{{"name":"p"{meta}}},"spec":{{"containers":[{{"name":"c"}}]}}{status}}}"#);
        let owner = r#","ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"1","controller":true}]"#;
        let check = |new: &str, old: &str| {
            let text = request("UPDATE", ("", "Pod"), new, Some(old));
            bookkeeping_only(&Request::parse(&text).unwrap())
        };
        assert!(check(&pod("", ""), &pod(owner, "")), "the garbage collector orphaning a pod");
        assert!(check(
            &pod(r#","resourceVersion":"2""#, r#","status":{"phase":"Running"}"#),
            &pod(r#","resourceVersion":"1","finalizers":["f"]"#, "")
        ));
        assert!(!check(&pod(owner, ""), &pod("", "")), "an owner added is not bookkeeping");
        assert!(!check(&pod(r#","labels":{"a":"b"}"#, ""), &pod("", "")), "a label is the user's");
        let other_spec = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"d"}]}}"#;
        assert!(!check(other_spec, &pod("", "")));
        assert!(
            !check(&pod("", ""), r#"{"spec":{"containers":[{"name":"c"}]},"metadata":{"name":"p"}}"#),
            "another order: judged as any update"
        );
        let create = request("CREATE", ("", "Pod"), &pod("", ""), None);
        assert!(!bookkeeping_only(&Request::parse(&create).unwrap()));
    }

    #[test]
    fn a_jobs_template_changes_only_in_scheduling_directives_while_suspended() {
        let job = |suspend: bool, status: &str| {
            format!(
                r#"{{"metadata":{{"name":"j"}},"spec":{{"suspend":{suspend},"template":{{"spec":{{"containers":[{{"name":"c"}}]}}}}}}{status}}}"#
            )
        };
        let allows = |old: &str, path: &[&str]| {
            let text = request("UPDATE", ("batch", "Job"), &job(false, ""), Some(old));
            update_allows(&Request::parse(&text).unwrap(), &Path::root().keys(path))
        };
        let suspended = job(true, "");
        assert!(allows(&suspended, &["spec", "template", "spec", "tolerations"]));
        assert!(allows(&suspended, &["spec", "template", "spec", "nodeSelector", "pool"]));
        assert!(allows(&suspended, &["spec", "template", "metadata", "labels", "owner"]));
        assert!(!allows(&suspended, &["spec", "template", "spec", "runtimeClassName"]));
        assert!(allows(&suspended, &["metadata", "labels", "owner"]), "the Job's own metadata");
        let started = job(true, r#","status":{"startTime":"2026-11-27T08:00:00Z"}"#);
        assert!(!allows(&started, &["spec", "template", "spec", "tolerations"]), "suspended again after it started");
        assert!(!allows(&job(false, ""), &["spec", "template", "spec", "tolerations"]));
        let text =
            request("UPDATE", ("apps", "Deployment"), r#"{"spec":{"template":{"spec":{}}}}"#, Some(r#"{"spec":{"template":{"spec":{}}}}"#));
        assert!(update_allows(&Request::parse(&text).unwrap(), &Path::root().keys(&["spec", "template", "spec", "runtimeClassName"])));
    }

    #[test]
    fn controller_copies_and_pod_metadata() {
        let rs = r#"{"metadata":{"name":"d-1","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","controller":true}]},"spec":{"template":{"spec":{"containers":[]}}}}"#;
        let by = |user: &str, kind: (&str, &str), object: &str| {
            request("CREATE", kind, object, None).replace(r#""username":"u""#, &format!(r#""username":"{user}""#))
        };
        let made = by("system:serviceaccount:kube-system:deployment-controller", ("apps", "ReplicaSet"), rs);
        assert!(controlled_copy(&Request::parse(&made).unwrap()));
        let forged = by("jane", ("apps", "ReplicaSet"), rs);
        assert!(!controlled_copy(&Request::parse(&forged).unwrap()), "a user's owner reference makes no copy");
        let pod = r#"{"metadata":{"name":"d-1-x","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"d-1","controller":true}]},"spec":{"containers":[]}}"#;
        let pod_req = by("system:serviceaccount:kube-system:replicaset-controller", ("", "Pod"), pod);
        let pod_req = Request::parse(&pod_req).unwrap();
        assert!(!controlled_copy(&pod_req), "pods are not copies");
        assert_eq!(pod_req.controller().map(|o| &*o.kind), Some("ReplicaSet"));
        let p = Workload::parse(WorkloadKind::Pod, pod).unwrap();
        let t = p.templates().next().unwrap();
        assert_eq!(pod_metadata_path(&p, t).unwrap().to_string(), "metadata");
        let nb =
            Workload::parse(WorkloadKind::Notebook, r#"{"metadata":{"name":"n"},"spec":{"template":{"spec":{"containers":[]}}}}"#).unwrap();
        assert_eq!(pod_metadata_path(&nb, nb.templates().next().unwrap()).unwrap().to_string(), "metadata");
        let d = Workload::parse(WorkloadKind::Deployment, r#"{"spec":{"template":{"spec":{"containers":[]}}}}"#).unwrap();
        assert_eq!(pod_metadata_path(&d, d.templates().next().unwrap()).unwrap().to_string(), "spec.template.metadata");
        let tj = Workload::parse(WorkloadKind::TrainJob, r#"{"spec":{"trainer":{"resourcesPerNode":{"limits":{"nvidia.com/gpu":1}}}}}"#)
            .unwrap();
        assert!(tj.templates().next().is_none_or(|t| pod_metadata_path(&tj, t).is_none()));
        let isvc = Workload::parse(
            WorkloadKind::InferenceService,
            r#"{"metadata":{"annotations":{"serving.kserve.io/deploymentMode":"Standard"}},"spec":{"predictor":{"workerSpec":{}}}}"#,
        )
        .unwrap();
        let paths: Vec<Option<String>> = isvc.templates().map(|t| pod_metadata_path(&isvc, t).map(|p| p.to_string())).collect();
        assert_eq!(paths, [Some("spec.predictor".to_string()), None], "the workers' pods get the predictor's metadata");
    }

    #[test]
    fn labels_tolerations_and_fields() {
        let d = r#"{"metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"owner":"bob"}},"spec":{"containers":[]}}}}"#;
        let edits = with(d, |t| {
            vec![
                label(&t.metadata_path(), "owner", "jane", false),
                label(&Path::root().key("metadata"), "owner", "jane", false),
                spec_field(t, "runtimeClassName", "nvidia"),
                toleration(t, "nvidia.com/gpu", "Exists", None, Some("NoSchedule")),
            ]
        });
        let out = apply(d, &edits).unwrap();
        assert!(out.contains(r#""labels":{"owner":"bob"}"#), "not overwritten: {out}");
        assert!(out.contains(r#""metadata":{"name":"d","labels":{"owner":"jane"}}"#), "{out}");
        assert!(out.contains(r#""runtimeClassName":"nvidia""#));
        assert!(out.contains(r#""tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]"#));
    }
}
