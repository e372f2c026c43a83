//! Cluster lookups for context-aware rules.
//!
//! The same trait is served by Kubewarden's `kubernetes` waPC host calls in
//! the module, by the WIT `cluster` import in the component, and by the
//! harness's fixtures natively. Lookups return raw JSON; rules decode what
//! they need (for example with [`crate::model::workload::Workload::parse`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

/// Why a lookup failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupError {
    /// The object does not exist.
    NotFound(String),
    /// The host does not let this rule read this kind.
    Forbidden(String),
    /// The lookup was malformed.
    Invalid(String),
    /// The cluster could not answer.
    Unavailable(String),
}

impl LookupError {
    /// The explanation.
    pub fn message(&self) -> &str {
        match self {
            LookupError::NotFound(m) | LookupError::Forbidden(m) | LookupError::Invalid(m) | LookupError::Unavailable(m) => m,
        }
    }

    /// The name of the kind of failure, as the WIT `lookup-error` variant
    /// spells it.
    pub fn tag(&self) -> &'static str {
        match self {
            LookupError::NotFound(_) => "not-found",
            LookupError::Forbidden(_) => "forbidden",
            LookupError::Invalid(_) => "invalid",
            LookupError::Unavailable(_) => "unavailable",
        }
    }

    /// The object `name` of `kind` does not exist, in the same words from
    /// every host, so that a rule's message does not depend on which one
    /// answered.
    pub fn not_found(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> LookupError {
        LookupError::NotFound(match namespace {
            Some(ns) => format!("{kind} `{ns}/{name}` ({api_version}) not found"),
            None => format!("{kind} `{name}` ({api_version}) not found"),
        })
    }

    /// Reads the error Kubewarden's policy-evaluator gives a waPC guest for
    /// a failed `kubernetes` host call (after the guest's `Host error: `),
    /// as its callback handler and kube-client word it:
    ///
    /// - `Callback evaluation failure: Cannot find <apiVersion>/<kind> named
    ///   '<name>' inside of namespace '<Some("ns") or None>'`: the object
    ///   does not exist (a `get`: kube-client's `get_opt` turns the API
    ///   server's 404 into nothing found);
    /// - `Callback evaluation failure: ApiError: <message>: <reason> (Status
    ///   { …, code: <code>, … })`, then kube's cause: the API server refused;
    ///   401 and 403 are forbidden, 404 not found, 400 and 422 invalid, the
    ///   rest unavailable; the message is the API server's own;
    /// - `Policy has not been granted access to Kubernetes <apiVersion>/<kind>
    ///   resources. …`: the policy's metadata does not declare the kind
    ///   (forbidden);
    /// - `Policy has not been granted access to the 'kubernetes/<call>' host
    ///   capability. …`: policy-server did not grant the call (a standalone
    ///   policy-server grants only the `hostCapabilities` of the policy's
    ///   entry; forbidden);
    /// - `… Resource <apiVersion>/<kind> is namespaced, but no namespace was
    ///   provided` and `… resource <apiVersion>/<kind> is cluster wide.
    ///   Cannot search for it inside of a namespace`: invalid;
    /// - anything else (the cluster unreachable, a kind it does not serve):
    ///   unavailable, with the text after `Callback evaluation failure: `.
    pub fn from_kubewarden(text: &str, asked: &Asked<'_>) -> LookupError {
        if text.starts_with(GRANT_REFUSED) || text.starts_with(CAPABILITY_REFUSED) {
            return LookupError::Forbidden(text.to_string());
        }
        let text = text.strip_prefix(CALLBACK_FAILED).unwrap_or(text);
        // policy-evaluator writes the error with anyhow's `Debug`, which
        // adds its causes and, with RUST_BACKTRACE set, a backtrace, each
        // after a blank line: the words are on the first line.
        let line = text.lines().next().unwrap_or_default();
        if let Some(name) = asked.name
            && is_not_found(line, asked, name)
        {
            return LookupError::not_found(asked.api_version, asked.kind, name, asked.namespace);
        }
        if let Some((message, code)) = api_error(text) {
            let message = message.to_string();
            return match code {
                401 | 403 => LookupError::Forbidden(message),
                404 => LookupError::NotFound(message),
                400 | 422 => LookupError::Invalid(message),
                _ => LookupError::Unavailable(message),
            };
        }
        if line.ends_with(NO_NAMESPACE) || line.ends_with(CLUSTER_WIDE) {
            return LookupError::Invalid(line.to_string());
        }
        LookupError::Unavailable(text.to_string())
    }

    /// The answer to every lookup where there is no cluster to ask (`aigov
    /// scan` without `--cluster`): unavailable, saying so in [`OFFLINE`]'s
    /// words. A rule reports it as part of the request not checked
    /// ([`OnLookupError::report`]), never as a denial: no Kubewarden host
    /// gives it.
    pub fn offline() -> LookupError {
        LookupError::Unavailable(OFFLINE.to_string())
    }

    /// Whether this is the answer of a host with no cluster to ask
    /// ([`LookupError::offline`]), from whichever host it came (a module
    /// reads it after `Callback evaluation failure: `).
    pub fn is_offline(&self) -> bool {
        matches!(self, LookupError::Unavailable(m) if first_line(m) == OFFLINE)
    }

    /// The first line of the explanation: hosts may return long texts,
    /// stack traces included, which a person reading a denial does not need.
    pub fn first_line(&self) -> &str {
        first_line(self.message())
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for LookupError {}

/// What a lookup asked for, by which a host's error names it.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The kind's `apiVersion`.
    pub api_version: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The object's name, for a `get`.
    pub name: Option<&'a str>,
    /// The namespace, if the lookup named one.
    pub namespace: Option<&'a str>,
}

/// How policy-evaluator begins its refusal of a host call the policy was
/// not granted.
pub const CAPABILITY_REFUSED: &str = "Policy has not been granted access to the '";
/// What policy-evaluator puts before a failed callback's error.
pub const CALLBACK_FAILED: &str = "Callback evaluation failure: ";
/// How policy-evaluator begins its refusal of a kind the policy's metadata
/// does not declare.
pub const GRANT_REFUSED: &str = "Policy has not been granted access to Kubernetes ";
/// How policy-evaluator ends a `get` of a namespaced kind without a namespace.
pub const NO_NAMESPACE: &str = " is namespaced, but no namespace was provided";
/// How policy-evaluator ends a namespaced listing of a cluster-scoped kind.
pub const CLUSTER_WIDE: &str = " is cluster wide. Cannot search for it inside of a namespace";
/// Where kube-client's `ApiError: <message>: <reason>` ends and the
/// `Debug` of the API server's `Status` begins.
pub const STATUS_DEBUG: &str = " (Status { ";

/// Whether `text` is policy-evaluator's `Cannot find <apiVersion>/<kind>
/// named '<name>' inside of namespace '<namespace>'` for this `get`, the
/// namespace written as Rust's `Debug` writes an `Option<&str>` (`Some("ml")`
/// or `None`; names need no escaping).
fn is_not_found(text: &str, asked: &Asked<'_>, name: &str) -> bool {
    let rest = text
        .strip_prefix("Cannot find ")
        .and_then(|t| t.strip_prefix(asked.api_version))
        .and_then(|t| t.strip_prefix('/'))
        .and_then(|t| t.strip_prefix(asked.kind))
        .and_then(|t| t.strip_prefix(" named '"))
        .and_then(|t| t.strip_prefix(name))
        .and_then(|t| t.strip_prefix("' inside of namespace '"));
    match (rest, asked.namespace) {
        (Some(rest), Some(ns)) => rest.strip_prefix("Some(\"").and_then(|t| t.strip_prefix(ns)) == Some("\")'"),
        (Some(rest), None) => rest == "None'",
        (None, _) => false,
    }
}

/// The API server's message and HTTP code in kube-client's `ApiError:
/// <message>: <reason> (Status { status: Some(Failure), code: 403, … })`.
fn api_error(text: &str) -> Option<(&str, u16)> {
    let rest = text.strip_prefix("ApiError: ")?;
    let (head, status) = rest.split_once(STATUS_DEBUG)?;
    let code = status.split_once("code: ")?.1;
    let digits = code.find(|c: char| !c.is_ascii_digit()).unwrap_or(code.len());
    let code = code.get(..digits)?.parse().ok()?;
    // The reason (`Forbidden`, `BadRequest`, …) follows the last colon.
    let message = head.rsplit_once(':').map_or(head, |(message, _reason)| message);
    Some((message, code))
}

/// The first non-empty line of `text`, trimmed.
pub fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// What a host with no cluster to ask (`aigov scan` without `--cluster`)
/// answers every lookup, as [`LookupError::Unavailable`]: a rule quotes it
/// in what it could not read, which is how [`OnLookupError::report`] knows
/// the lookup was not a cluster's failure.
pub const OFFLINE: &str = "no cluster to ask: scanned without `--cluster`";

/// How a rule's warning begins when a lookup without a cluster
/// ([`OFFLINE`]) left part of the request unchecked: the scan takes such
/// warnings out of the verdict and names what each rule skipped once.
pub const NOT_CHECKED: &str = "not checked without a cluster: ";

/// What a context-aware rule does when a lookup fails (forbidden,
/// unavailable): the `onLookupError` setting of every such rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLookupError {
    /// Reject the request, quoting the first line of the host's error.
    #[default]
    Deny,
    /// Admit it, with a warning quoting the first line of the error.
    Allow,
}

impl OnLookupError {
    /// Records a failed lookup the way every context-aware rule words it:
    /// `what` could not be read (quoting the first line of the host's
    /// error), then with `deny` a violation, `what` + `deny` + "; try again,
    /// or ask your cluster administrators" (`deny`: `, so … cannot be
    /// decided`), with `allow` a warning, `what` + `allow` + " because
    /// `onLookupError` is `allow`" (`allow`: `; admitted`).
    ///
    /// Where there was no cluster to ask (`what` quotes [`OFFLINE`]), the
    /// lookup is no failure of the cluster and `onLookupError` does not
    /// apply: a warning [`NOT_CHECKED`] + what was not read (and, after
    /// `allow`, what it was needed for), whatever the setting.
    pub fn report(self, what: &str, deny: &str, allow: &str, verdict: &mut dyn Report) {
        if what.contains(OFFLINE) {
            let skipped = format!("{what}{allow}").replace(&format!(" ({OFFLINE})"), "").replace(OFFLINE, "");
            let skipped = skipped.strip_suffix("; admitted").unwrap_or(&skipped);
            verdict.warning(format!("{NOT_CHECKED}{skipped}"));
            return;
        }
        match self {
            OnLookupError::Deny => verdict.violation(format!("{what}{deny}; try again, or ask your cluster administrators")),
            OnLookupError::Allow => verdict.warning(format!("{what}{allow} because `onLookupError` is `allow`")),
        }
    }
}

/// Where a failed lookup is reported: a rule's verdict (the runtime's
/// `Verdict` is one). A trait, so that the layers that look things up do
/// not depend on the runtime that builds responses.
pub trait Report {
    /// A problem that refuses the request.
    fn violation(&mut self, message: String);
    /// A warning on an admitted request.
    fn warning(&mut self, message: String);
}

/// The label the API server puts on every Namespace, holding its name
/// (Kubernetes 1.21+; it cannot be removed or changed).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A Namespace's labels ([`NAME_LABEL`] included), or why they could not
/// be read.
pub type NamespaceLabels = Result<BTreeMap<String, String>, LookupError>;

/// Namespace `name`'s labels, looked up and decoded: what
/// [`Cluster::namespace_labels`] does unless the cluster remembers them. A
/// Namespace the cluster returns but that cannot be read is a failed
/// lookup (`invalid`), not a malformed request: the person submitting the
/// workload cannot fix it.
pub fn fetch_labels<C: Cluster + ?Sized>(cluster: &C, name: &str) -> NamespaceLabels {
    let json = cluster.get_resource("v1", "Namespace", name, None)?;
    let meta = crate::model::listed::object_meta(&json, &format!("the Namespace `{name}`")).map_err(|e| LookupError::Invalid(e.0))?;
    let mut labels: BTreeMap<String, String> = meta.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    labels.entry(NAME_LABEL.to_string()).or_insert_with(|| name.to_string());
    Ok(labels)
}

/// Read-only access to cluster state.
pub trait Cluster {
    /// One object as JSON. `api_version` is `v1` or `group/version`; `kind`
    /// is singular PascalCase; `namespace` is `None` for cluster-scoped kinds.
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError>;

    /// A `List` of the kind's objects in one namespace, as JSON.
    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError>;

    /// A `List` of the kind's objects in the whole cluster, as JSON.
    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError>;

    /// The time now, in seconds since the Unix epoch, by the host's clock:
    /// [`host_clock`] unless the host says otherwise.
    fn now(&self) -> Option<i64> {
        host_clock()
    }

    /// Namespace `name`'s labels, looked up and decoded
    /// ([`fetch_labels`]); [`Memoized`] does it
    /// once for every rule of a request.
    fn namespace_labels(&self, name: &str) -> Rc<NamespaceLabels> {
        Rc::new(fetch_labels(self, name))
    }
}

/// The host's wall clock, in seconds since the Unix epoch: natively the
/// system's, in the waPC module WASI preview 1's `clock_time_get` (which
/// Kubewarden links into every waPC module, as it links the `fd_write` and
/// `random_get` the modules already import). `None` in the component,
/// which imports no clock.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn host_clock() -> Option<i64> {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_secs()).ok()
}

/// The host's wall clock: the component imports none.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub fn host_clock() -> Option<i64> {
    None
}

/// A cluster that answers nothing: for hosts without lookups.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCluster;

const NO_CLUSTER: &str = "this host serves no cluster lookups";

impl Cluster for NoCluster {
    fn get_resource(&self, _: &str, _: &str, _: &str, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
    fn list_resources_by_namespace(&self, _: &str, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
    fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
}

/// A cluster that asks `inner` each question once: the bundle hands every
/// rule of one request the same answers (the request's Namespace, the
/// target pod of an exec), where each rule alone would ask the host again.
/// Lives for one request, so nothing it holds can go stale.
pub struct Memoized<'c> {
    inner: &'c dyn Cluster,
    answers: RefCell<Vec<Answer>>,
    /// Namespaces' labels, decoded.
    namespaces: RefCell<Vec<(String, Rc<NamespaceLabels>)>>,
}

/// A question (the call and its arguments) and the host's answer.
type Answer = (Vec<Option<String>>, Result<String, LookupError>);

impl<'c> Memoized<'c> {
    /// Remembers `inner`'s answers.
    pub fn new(inner: &'c dyn Cluster) -> Memoized<'c> {
        Memoized { inner, answers: RefCell::default(), namespaces: RefCell::default() }
    }

    /// The answer to the question `key`, asking `ask` only the first time.
    fn answer(&self, key: &[Option<&str>], ask: impl FnOnce() -> Result<String, LookupError>) -> Result<String, LookupError> {
        let same = |k: &Vec<Option<String>>| k.len() == key.len() && k.iter().zip(key).all(|(a, b)| a.as_deref() == *b);
        if let Some((_, a)) = self.answers.borrow().iter().find(|(k, _)| same(k)) {
            return a.clone();
        }
        let a = ask();
        self.answers.borrow_mut().push((key.iter().map(|k| k.map(str::to_string)).collect(), a.clone()));
        a
    }
}

impl Cluster for Memoized<'_> {
    fn now(&self) -> Option<i64> {
        self.inner.now()
    }
    fn namespace_labels(&self, name: &str) -> Rc<NamespaceLabels> {
        if let Some((_, labels)) = self.namespaces.borrow().iter().find(|(n, _)| n == name) {
            return labels.clone();
        }
        let labels = Rc::new(fetch_labels(self, name));
        self.namespaces.borrow_mut().push((name.to_string(), labels.clone()));
        labels
    }
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        self.answer(&[Some("get"), Some(api_version), Some(kind), Some(name), namespace], || {
            self.inner.get_resource(api_version, kind, name, namespace)
        })
    }
    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        self.answer(&[Some("list"), Some(api_version), Some(kind), Some(namespace), label_selector, field_selector], || {
            self.inner.list_resources_by_namespace(api_version, kind, namespace, label_selector, field_selector)
        })
    }
    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        self.answer(&[Some("list-all"), Some(api_version), Some(kind), label_selector, field_selector], || {
            self.inner.list_resources_all(api_version, kind, label_selector, field_selector)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::listed::{list_items, list_pods, object_meta};

    #[test]
    fn kubewarden_host_errors_are_read_by_kind() {
        let pod = Asked { api_version: "v1", kind: "Pod", name: Some("ghost-0"), namespace: Some("ml") };
        let namespace = Asked { api_version: "v1", kind: "Namespace", name: Some("brand-new"), namespace: None };
        let pods = Asked { api_version: "v1", kind: "Pod", name: None, namespace: Some("ml") };
        let read = LookupError::from_kubewarden;
        // policy-evaluator's words, as a guest receives them.
        assert_eq!(
            read("Callback evaluation failure: Cannot find v1/Pod named 'ghost-0' inside of namespace 'Some(\"ml\")'", &pod),
            LookupError::NotFound("Pod `ml/ghost-0` (v1) not found".into())
        );
        assert_eq!(
            read("Callback evaluation failure: Cannot find v1/Namespace named 'brand-new' inside of namespace 'None'", &namespace),
            LookupError::NotFound("Namespace `brand-new` (v1) not found".into())
        );
        // Another object's absence, or a kind the cluster does not serve, is not this object's.
        assert!(matches!(
            read("Callback evaluation failure: Cannot find v1/Pod named 'other' inside of namespace 'Some(\"ml\")'", &pod),
            LookupError::Unavailable(_)
        ));
        assert_eq!(
            read("Callback evaluation failure: Cannot find resource resource.k8s.io/v1/ResourceClaim", &pod),
            LookupError::Unavailable("Cannot find resource resource.k8s.io/v1/ResourceClaim".into())
        );
        let forbidden = "pods \"trainer-0\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot get resource \"pods\" in API group \"\" in the namespace \"ml\"";
        assert_eq!(
            read(
                &format!(
                    "Callback evaluation failure: ApiError: {forbidden}: Forbidden (Status {{ status: Some(Failure), code: 403, message: {forbidden:?}, metadata: None, reason: \"Forbidden\", details: None }})\n\nCaused by:\n    {forbidden}: Forbidden"
                ),
                &pod
            ),
            LookupError::Forbidden(forbidden.into())
        );
        assert_eq!(
            read(
                "Callback evaluation failure: ApiError: unable to parse requirement: found '=', expected: identifier: BadRequest (Status { status: Some(Failure), code: 400, message: \"x\", metadata: None, reason: \"BadRequest\", details: None })",
                &pods
            ),
            LookupError::Invalid("unable to parse requirement: found '=', expected: identifier".into())
        );
        assert_eq!(
            read(
                "Callback evaluation failure: ApiError: the server could not find the requested resource: NotFound (Status { status: Some(Failure), code: 404, message: \"\", metadata: None, reason: \"NotFound\", details: None })",
                &pods
            ),
            LookupError::NotFound("the server could not find the requested resource".into())
        );
        assert_eq!(
            read(
                "Callback evaluation failure: ApiError: etcdserver: request timed out: Timeout (Status { status: Some(Failure), code: 504, message: \"\", metadata: None, reason: \"Timeout\", details: None })",
                &pods
            ),
            LookupError::Unavailable("etcdserver: request timed out".into())
        );
        let refused = "Policy has not been granted access to Kubernetes v1/Secret resources. The violation has been reported.";
        assert_eq!(read(refused, &pods), LookupError::Forbidden(refused.into()));
        let not_granted = "Policy has not been granted access to the 'kubernetes/list_resources_by_namespace' host capability. The violation has been reported.";
        assert_eq!(read(not_granted, &pods), LookupError::Forbidden(not_granted.into()));
        assert!(matches!(
            read("Callback evaluation failure: Resource v1/Pod is namespaced, but no namespace was provided", &pod),
            LookupError::Invalid(_)
        ));
        assert!(matches!(
            read("Callback evaluation failure: resource v1/Namespace is cluster wide. Cannot search for it inside of a namespace", &pods),
            LookupError::Invalid(_)
        ));
        assert_eq!(
            read(
                "Callback evaluation failure: HyperError: client error (Connect): tcp connect error: Connection refused (os error 111)",
                &pods
            ),
            LookupError::Unavailable("HyperError: client error (Connect): tcp connect error: Connection refused (os error 111)".into())
        );
        // With RUST_BACKTRACE set, anyhow's `Debug` adds a backtrace.
        let backtrace = "\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n   1: policy_evaluator::callback_handler";
        assert_eq!(
            read(
                &format!("Callback evaluation failure: Cannot find v1/Pod named 'ghost-0' inside of namespace 'Some(\"ml\")'{backtrace}"),
                &pod
            ),
            LookupError::NotFound("Pod `ml/ghost-0` (v1) not found".into())
        );
        assert_eq!(
            read(&format!("Callback evaluation failure: Resource v1/Pod is namespaced, but no namespace was provided{backtrace}"), &pod),
            LookupError::Invalid("Resource v1/Pod is namespaced, but no namespace was provided".into())
        );
        assert_eq!(read("ApiError: no status", &pods), LookupError::Unavailable("ApiError: no status".into()));
        assert!(matches!(
            read("Callback evaluation failure: Cannot find v1/Pod named 'ghost-0' inside of namespace 'None'", &pod),
            LookupError::Unavailable(_)
        ));
    }

    #[test]
    fn lists_and_metadata() {
        let items =
            list_items(r#"{"kind":"List","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","labels":{"t":"x"}}}]}"#).unwrap();
        assert_eq!(items.len(), 2);
        let m = object_meta(items[1], "the Namespace").unwrap();
        assert_eq!(m.label("t"), Some("x"));
        assert!(list_items(r#"{"items":{}}"#).is_err());
        assert!(list_items(r#"{"kind":"List"}"#).unwrap().is_empty());
    }

    #[test]
    fn listed_pods_read_in_one_pass_agree_with_items_parsed_one_by_one() {
        let list = r#"{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[
            {"metadata":{"name":"a","namespace":"ml"},"spec":{"initContainers":[{"name":"i","resources":{"limits":{"nvidia.com/gpu":"2"}}}],
             "containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1","cpu":"2"}}},{"name":"d","resources":{"requests":{"nvidia.com/mig-1g.5gb":"3"}}}]},
             "status":{"phase":"Running","conditions":[{"type":"Ready"}]}},
            {"status":{"phase":"Succeeded"},"spec":{"containers":[{"name":"c"}]},"metadata":{"name":"b","deletionTimestamp":"2026-11-26T00:00:00Z"}},
            {"metadata":{"name":"c"},"spec":null,"status":null}]}"#;
        let gpus = crate::cluster::gpu::GpuResources::default();
        let pods = list_pods(list).unwrap();
        let items = list_items(list).unwrap();
        assert_eq!(pods.len(), 3);
        assert_eq!(items.len(), 3);
        for (pod, item) in pods.iter().zip(&items) {
            let parsed = crate::model::workload::Workload::parse(crate::model::kind::WorkloadKind::Pod, item).unwrap();
            let template = parsed.templates().next().unwrap();
            assert_eq!(pod.metadata.name, parsed.metadata.name);
            assert_eq!(pod.metadata.being_deleted, parsed.metadata.being_deleted);
            assert_eq!(pod.gpus_per_pod(&gpus).unwrap(), template.gpus_per_pod(&gpus).unwrap(), "{item}");
        }
        let phases: Vec<Option<&str>> = pods.iter().map(|p| p.phase.as_deref()).collect();
        assert_eq!(phases, [Some("Running"), Some("Succeeded"), None]);
        assert_eq!(pods[0].gpus_per_pod(&gpus).unwrap().get("nvidia.com/gpu"), Some(&2), "init containers are a maximum");
        assert!(pods[1].metadata.being_deleted);
        let e = list_pods(r#"{"items":[{"spec":{"containers":7}}]}"#).err().unwrap().0;
        assert!(e.contains("the cluster's list of Pods"), "{e}");
        assert!(list_pods(r#"{"kind":"List"}"#).unwrap().is_empty());
    }

    /// A lookup without a cluster is neither denied nor allowed by
    /// `onLookupError`: what it skipped is a warning the scan recognises.
    #[test]
    fn offline_lookups_are_not_checked_whatever_on_lookup_error_says() {
        struct Said(Vec<String>, Vec<String>);
        impl Report for Said {
            fn violation(&mut self, m: String) {
                self.0.push(m);
            }
            fn warning(&mut self, m: String) {
                self.1.push(m);
            }
        }
        let offline = LookupError::offline();
        assert!(offline.is_offline());
        assert_eq!(offline.tag(), "unavailable");
        // A module reads it as Kubewarden words a failed callback.
        let asked = Asked { api_version: "v1", kind: "Namespace", name: Some("ml"), namespace: None };
        assert!(LookupError::from_kubewarden(&format!("{CALLBACK_FAILED}{OFFLINE}"), &asked).is_offline());
        assert!(!LookupError::Unavailable("dial tcp: i/o timeout".into()).is_offline());
        assert!(!LookupError::NotFound(OFFLINE.into()).is_offline());
        for on in [OnLookupError::Deny, OnLookupError::Allow] {
            let mut said = Said(Vec::new(), Vec::new());
            let what = format!("the labels of namespace `ml` could not be read ({})", offline.first_line());
            on.report(&what, ", so its pool cannot be decided", ", so its pool was not checked; admitted", &mut said);
            assert!(said.0.is_empty(), "{on:?} denied: {:?}", said.0);
            assert_eq!(
                said.1,
                ["not checked without a cluster: the labels of namespace `ml` could not be read, so its pool was not checked"]
            );
        }
        // A real failure is still `onLookupError`'s to decide.
        let mut said = Said(Vec::new(), Vec::new());
        OnLookupError::Deny.report(
            "the labels of namespace `ml` could not be read (timeout)",
            ", so x cannot be decided",
            "; admitted",
            &mut said,
        );
        assert_eq!(said.0.len(), 1);
    }

    #[test]
    fn first_lines() {
        assert_eq!(first_line("\n  boom: forbidden\n  at frame 1\n  at frame 2"), "boom: forbidden");
        assert_eq!(LookupError::Unavailable("a\nb".into()).first_line(), "a");
        assert_eq!(first_line(""), "");
    }

    #[test]
    fn memoized_asks_each_question_once() {
        struct Counting(std::cell::Cell<u32>);
        impl Cluster for Counting {
            fn get_resource(&self, _: &str, kind: &str, name: &str, _: Option<&str>) -> Result<String, LookupError> {
                self.0.set(self.0.get() + 1);
                if name == "ghost" { Err(LookupError::NotFound(format!("{kind} {name}"))) } else { Ok(format!("{kind} {name}")) }
            }
            fn list_resources_by_namespace(
                &self,
                _: &str,
                _: &str,
                ns: &str,
                _: Option<&str>,
                _: Option<&str>,
            ) -> Result<String, LookupError> {
                self.0.set(self.0.get() + 1);
                Ok(ns.to_string())
            }
            fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
                self.0.set(self.0.get() + 1);
                Ok(String::new())
            }
        }
        let host = Counting(std::cell::Cell::new(0));
        let memo = Memoized::new(&host);
        assert_eq!(memo.get_resource("v1", "Namespace", "ml", None), Ok("Namespace ml".into()));
        assert_eq!(memo.get_resource("v1", "Namespace", "ml", None), Ok("Namespace ml".into()));
        assert_eq!(host.0.get(), 1);
        assert_eq!(memo.get_resource("v1", "Namespace", "ghost", None), Err(LookupError::NotFound("Namespace ghost".into())));
        assert!(memo.get_resource("v1", "Namespace", "ghost", None).is_err());
        assert_eq!(host.0.get(), 2, "a failed lookup is not asked again either");
        // Different questions are asked: another namespace, another selector.
        assert_eq!(memo.get_resource("v1", "Pod", "ml", Some("ml")), Ok("Pod ml".into()));
        assert_eq!(memo.list_resources_by_namespace("v1", "Pod", "ml", None, None), Ok("ml".into()));
        assert_eq!(memo.list_resources_by_namespace("v1", "Pod", "ml", Some("a=b"), None), Ok("ml".into()));
        assert_eq!(memo.list_resources_by_namespace("v1", "Pod", "ml", None, None), Ok("ml".into()));
        assert_eq!(host.0.get(), 5);
    }

    #[test]
    fn memoized_decodes_a_namespaces_labels_once() {
        struct One;
        impl Cluster for One {
            fn get_resource(&self, _: &str, _: &str, name: &str, _: Option<&str>) -> Result<String, LookupError> {
                match name {
                    "ml" => Ok(r#"{"kind":"Namespace","metadata":{"name":"ml","labels":{"team":"nlp"}}}"#.into()),
                    "bad" => Ok("[]".into()),
                    _ => Err(LookupError::NotFound(format!("namespaces \"{name}\" not found"))),
                }
            }
            fn list_resources_by_namespace(
                &self,
                _: &str,
                _: &str,
                _: &str,
                _: Option<&str>,
                _: Option<&str>,
            ) -> Result<String, LookupError> {
                Err(LookupError::Invalid("not served".into()))
            }
            fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
                Err(LookupError::Invalid("not served".into()))
            }
        }
        let memo = Memoized::new(&One);
        let (a, b) = (memo.namespace_labels("ml"), memo.namespace_labels("ml"));
        assert!(Rc::ptr_eq(&a, &b), "decoded once, shared");
        let labels = a.as_ref().as_ref().unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("nlp"));
        assert_eq!(labels.get(NAME_LABEL).map(String::as_str), Some("ml"), "every Namespace carries its name");
        // Alone, a rule's cluster decodes the same labels.
        assert_eq!(One.namespace_labels("ml"), a);
        assert!(matches!(&*memo.namespace_labels("ghost"), Err(LookupError::NotFound(_))));
        assert!(
            matches!(&*memo.namespace_labels("bad"), Err(LookupError::Invalid(m)) if m.contains("the Namespace `bad`")),
            "a Namespace that cannot be read is a failed lookup"
        );
    }
}
