//! Cluster state served from fixture files, through the same host-call path
//! a cluster would use: Kubewarden's `kubernetes/*` waPC host calls for
//! modules, the WIT `cluster` import for components, and the SDK's `Cluster`
//! trait natively.
//!
//! A fixture directory holds YAML or JSON files; each file holds one object,
//! several YAML documents, or a `List`.
//!
//! Lookups are answered as the API server (through Kubewarden) answers them:
//! - label selectors in `labels.Parse` syntax (`a=b`, `a!=b`, `a in (x,y)`,
//!   `a notin (x)`, `a`, `!a`, `a>3`), field selectors with `=`, `==` and
//!   `!=` on the field labels each kind indexes (every kind:
//!   `metadata.name`, `metadata.namespace`; Pods: `status.phase`,
//!   `spec.nodeName` and the others the API server indexes); a selector the
//!   API server would refuse fails the lookup with `invalid`, never a crash;
//! - a cluster-scoped kind (`Namespace`, `Node`, ...) cannot be listed in a
//!   namespace (`invalid`), and is found by name whatever namespace a `get`
//!   passes; a namespaced built-in kind needs one;
//! - every `v1` Namespace carries the label `kubernetes.io/metadata.name`
//!   with its name, as the API server sets it;
//! - a list is a `<Kind>List` of the kind's `apiVersion`.
//!
//! A fixture can also make lookups fail, the way a cluster does (the API
//! server down, RBAC refusing the policy server), so that a rule's
//! `onLookupError` is tested through the same host-call path:
//!
//! ```yaml
//! apiVersion: aigov.dev/v1alpha1
//! kind: LookupFailure
//! metadata: {name: api-server-down}
//! match: {apiVersion: v1, kind: Pod}      # and optionally name, namespace
//! error: unavailable                       # not-found, forbidden, invalid, unavailable
//! message: |
//!   Get "https://10.96.0.1:443/api/v1/namespaces/ml/pods/x": dial tcp: i/o timeout
//!   goroutine 1 [running]: ...
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use aigov_sdk::cluster::{CAPABILITY_REFUSED, CLUSTER_WIDE, GRANT_REFUSED, NO_NAMESPACE};
use aigov_sdk::{Cluster, LookupError};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Objects a lookup can see, and lookups that fail.
#[derive(Clone, Debug, Default)]
pub struct FixtureCluster {
    objects: Vec<Value>,
    /// Each object's JSON text, written at its first lookup and kept, as a
    /// host's cache keeps what it serves: fixtures never change, and the
    /// bundle's rules look up the same few objects for every request
    /// (writing them anew was a third of the bundle's native cost).
    texts: Vec<OnceLock<String>>,
    failures: Vec<Value>,
    /// Where each kind's objects are, so that a lookup in a dump of tens of
    /// thousands of objects (`aigov simulate`) reads only the ones it asks for.
    kinds: HashMap<(String, String), KindIndex>,
    /// No cluster to ask (`aigov scan` without `--cluster`): every lookup
    /// is answered [`LookupError::offline`].
    offline: bool,
    /// No clock for the rule (the component's case): [`Cluster::now`] is
    /// `None`.
    clockless: bool,
}

/// One kind's objects, as indexes into `objects`, in the order they were added.
#[derive(Clone, Debug, Default)]
struct KindIndex {
    all: Vec<usize>,
    /// By `metadata.namespace` (`None`: the object has none).
    by_namespace: HashMap<Option<String>, Vec<usize>>,
    /// By namespace and name: the first object added with them.
    by_name: HashMap<(Option<String>, String), usize>,
}

/// The kind of fixture objects that make lookups fail.
pub const LOOKUP_FAILURE: &str = "LookupFailure";

impl FixtureCluster {
    /// A cluster with no objects.
    pub fn empty() -> FixtureCluster {
        FixtureCluster::default()
    }

    /// No cluster at all, as `aigov scan` without `--cluster` has: every
    /// lookup is answered `unavailable` in [`aigov_sdk::cluster::OFFLINE`]'s
    /// words, which the rules report as not checked rather than as a
    /// cluster's failure (an empty cluster would answer that nothing
    /// exists, which a rule must refuse).
    pub fn offline() -> FixtureCluster {
        FixtureCluster { offline: true, ..FixtureCluster::default() }
    }

    /// The same cluster for a rule that reads no clock, as the component
    /// reads none ([`aigov_sdk::cluster::host_clock`]).
    pub fn without_clock(mut self) -> FixtureCluster {
        self.clockless = true;
        self
    }

    /// Whether this is [`FixtureCluster::offline`].
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// A cluster holding these objects (`List`s are flattened).
    pub fn from_objects(objects: impl IntoIterator<Item = Value>) -> Result<FixtureCluster> {
        let mut c = FixtureCluster::default();
        for o in objects {
            c.add(o)?;
        }
        Ok(c)
    }

    /// Loads every `.yaml`, `.yml` and `.json` file under `dir`, in name order.
    pub fn from_dir(dir: &Path) -> Result<FixtureCluster> {
        let mut c = FixtureCluster::default();
        let mut files = Vec::new();
        collect_files(dir, &mut Vec::new(), &mut files)?;
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            for doc in crate::run::admission::parse_documents(&text).with_context(|| format!("parsing {}", f.display()))? {
                c.add(doc).with_context(|| format!("in {}", f.display()))?;
            }
        }
        Ok(c)
    }

    fn add(&mut self, mut object: Value) -> Result<()> {
        if object.is_null() {
            return Ok(());
        }
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if kind == "List" || kind.ends_with("List") && object.get("items").is_some() {
            for item in object.get("items").and_then(Value::as_array).into_iter().flatten() {
                self.add(item.clone())?;
            }
            return Ok(());
        }
        if object.get("apiVersion").and_then(Value::as_str).is_none() || kind.is_empty() {
            bail!("a fixture object needs `apiVersion` and `kind`");
        }
        if kind == LOOKUP_FAILURE {
            let error = object.get("error").and_then(Value::as_str).unwrap_or_default();
            if !matches!(error, "not-found" | "forbidden" | "invalid" | "unavailable") {
                bail!("a LookupFailure needs `error`: one of not-found, forbidden, invalid, unavailable");
            }
            if object.pointer("/match/kind").and_then(Value::as_str).is_none() {
                bail!("a LookupFailure needs `match.kind` (and `match.apiVersion`)");
            }
            self.failures.push(object);
            return Ok(());
        }
        if kind == "Namespace" && object.get("apiVersion").and_then(Value::as_str) == Some("v1") {
            // The API server labels every Namespace with its name (since
            // Kubernetes 1.21), overwriting any other value, so that
            // selectors can pick namespaces by name.
            let name = meta(&object, "name").unwrap_or_default().to_string();
            if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                let labels = m.entry("labels").or_insert_with(|| json!({}));
                if labels.is_null() {
                    *labels = json!({});
                }
                if let Some(l) = labels.as_object_mut() {
                    l.insert(NAMESPACE_NAME_LABEL.to_string(), Value::String(name));
                }
            }
        }
        let key = (object.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string(), kind);
        let namespace = meta(&object, "namespace").map(str::to_string);
        let at = self.objects.len();
        let index = self.kinds.entry(key).or_default();
        index.all.push(at);
        index.by_namespace.entry(namespace.clone()).or_default().push(at);
        if let Some(name) = meta(&object, "name") {
            index.by_name.entry((namespace, name.to_string())).or_insert(at);
        }
        self.objects.push(object);
        self.texts.push(OnceLock::new());
        Ok(())
    }

    /// The failure a lookup of `kind` (and `name`, `namespace`) must give, if a
    /// `LookupFailure` fixture matches it.
    fn failure(&self, api_version: &str, kind: &str, name: Option<&str>, namespace: Option<&str>) -> Option<LookupError> {
        self.failures.iter().find_map(|f| {
            let m = |field: &str| f.pointer(&format!("/match/{field}")).and_then(Value::as_str);
            let fits = m("kind") == Some(kind)
                && m("apiVersion").is_none_or(|v| v == api_version)
                && m("name").is_none_or(|n| Some(n) == name)
                && m("namespace").is_none_or(|n| Some(n) == namespace);
            if !fits {
                return None;
            }
            let message = f.get("message").and_then(Value::as_str).unwrap_or("lookup failed").to_string();
            Some(match f.get("error").and_then(Value::as_str) {
                Some("not-found") => LookupError::NotFound(message),
                Some("forbidden") => LookupError::Forbidden(message),
                Some("invalid") => LookupError::Invalid(message),
                _ => LookupError::Unavailable(message),
            })
        })
    }

    /// The object of `api_version` and `kind` named `name` (in
    /// `namespace`, for a namespaced kind), if the cluster holds it.
    pub fn object(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<&Value> {
        let namespace = match scope::of(api_version, kind) {
            scope::Scope::Cluster => None,
            _ => namespace,
        };
        let at = self.kind(api_version, kind)?.by_name.get(&(namespace.map(str::to_string), name.to_string()))?;
        self.objects.get(*at)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The JSON text of object `at`.
    fn text(&self, at: usize) -> Option<&str> {
        let object = self.objects.get(at)?;
        Some(self.texts.get(at)?.get_or_init(|| object.to_string()))
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<&KindIndex> {
        self.kinds.get(&(api_version.to_string(), kind.to_string()))
    }

    /// `get`: a namespaced kind needs a namespace (Kubewarden refuses the
    /// lookup without one); a cluster-scoped kind is found by name alone,
    /// whatever namespace the rule passes (Kubewarden ignores it).
    fn get(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        let scope = scope::of(api_version, kind);
        let namespace = match (scope, namespace) {
            (scope::Scope::Cluster, _) => None,
            (scope::Scope::Namespaced, None) => {
                return Err(LookupError::Invalid(format!("Resource {api_version}/{kind}{NO_NAMESPACE}")));
            }
            (_, ns) => ns,
        };
        if self.offline {
            return Err(LookupError::offline());
        }
        if let Some(e) = self.failure(api_version, kind, Some(name), namespace) {
            return Err(e);
        }
        self.kind(api_version, kind)
            .and_then(|k| k.by_name.get(&(namespace.map(str::to_string), name.to_string())))
            .and_then(|at| self.text(*at))
            .map(str::to_string)
            .ok_or_else(|| LookupError::not_found(api_version, kind, name, namespace))
    }

    /// `list`: filtered by label and field selectors as the API server
    /// filters (a selector it cannot parse, or a field it does not index
    /// for the kind, is `invalid`); a cluster-scoped kind cannot be listed
    /// in a namespace. The answer is a `<Kind>List`, as Kubewarden returns.
    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        if namespace.is_some() && scope::of(api_version, kind) == scope::Scope::Cluster {
            return Err(LookupError::Invalid(format!("resource {api_version}/{kind}{CLUSTER_WIDE}")));
        }
        if self.offline {
            return Err(LookupError::offline());
        }
        if let Some(e) = self.failure(api_version, kind, None, namespace) {
            return Err(e);
        }
        let labels = selector::parse_labels(label_selector.unwrap_or_default()).map_err(LookupError::Invalid)?;
        let fields = selector::parse_fields(field_selector.unwrap_or_default(), api_version, kind).map_err(LookupError::Invalid)?;
        let at: &[usize] = match (self.kind(api_version, kind), namespace) {
            (None, _) => &[],
            (Some(k), None) => &k.all,
            (Some(k), Some(ns)) => k.by_namespace.get(&Some(ns.to_string())).map_or(&[], Vec::as_slice),
        };
        // The fields in the order a `serde_json::Value` map keeps them
        // (sorted), as the answers were written before, byte for byte.
        let quoted =
            |s: &str| serde_json::to_string(s).map_err(|e| LookupError::Unavailable(format!("cannot encode the {kind} list: {e}")));
        let items: Vec<&str> = at
            .iter()
            .filter(|&&i| {
                self.objects
                    .get(i)
                    .is_some_and(|o| labels.iter().all(|r| r.matches(o.pointer("/metadata/labels"))) && fields.iter().all(|r| r.matches(o)))
            })
            .filter_map(|&i| self.text(i))
            .collect();
        Ok(format!(
            r#"{{"apiVersion":{},"items":[{}],"kind":{},"metadata":{{}}}}"#,
            quoted(api_version)?,
            items.join(","),
            quoted(&format!("{kind}List"))?
        ))
    }
}

/// The label the API server puts on every Namespace: its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn meta<'a>(o: &'a Value, field: &str) -> Option<&'a str> {
    o.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// The fixture files under `dir` (or `dir` itself, a file): each directory
/// walked once however many links lead to it (`seen`, by canonical path:
/// a link to a directory above it would never end), and only regular
/// files read (a named pipe would wait for a writer forever).
fn collect_files(dir: &Path, seen: &mut Vec<std::path::PathBuf>, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let canonical = dir.canonicalize().with_context(|| format!("reading cluster directory {}", dir.display()))?;
    if seen.contains(&canonical) {
        return Ok(());
    }
    seen.push(canonical);
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading cluster directory {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, seen, out)?;
        } else if path.is_file() && matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")) {
            out.push(path);
        }
    }
    Ok(())
}

/// The kinds one rule may look up: its `contextAwareResources`, as
/// `(apiVersion, kind)` pairs.
pub type Allowed = Arc<[(String, String)]>;

/// The fixture cluster as one rule sees it: only the kinds in its
/// `contextAwareResources`, as policy-server enforces.
#[derive(Clone)]
pub struct Scoped {
    cluster: Arc<FixtureCluster>,
    allowed: Allowed,
    capabilities: Option<Capabilities>,
}

/// The host calls a Kubewarden module may make (`kubernetes/get_resource`),
/// from its metadata's `hostCapabilities`.
pub type Capabilities = Arc<[String]>;

impl Scoped {
    /// Scopes `cluster` to the kinds a rule declares. A lookup of another
    /// kind is refused in policy-server's words.
    pub fn new(cluster: Arc<FixtureCluster>, allowed: Allowed) -> Scoped {
        Scoped { cluster, allowed, capabilities: None }
    }

    /// Also grants only these host calls, as a standalone policy-server
    /// grants a module only the `hostCapabilities` of its `policies.yml`
    /// entry: a call of another is refused in policy-evaluator's words,
    /// before its kind is looked at.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Scoped {
        self.capabilities = Some(capabilities);
        self
    }

    fn grant(&self, call: &str) -> Result<(), LookupError> {
        let capability = format!("kubernetes/{call}");
        match &self.capabilities {
            Some(granted) if !granted.contains(&capability) => {
                Err(LookupError::Forbidden(format!("{CAPABILITY_REFUSED}{capability}' host capability. The violation has been reported.")))
            }
            _ => Ok(()),
        }
    }

    fn allow(&self, api_version: &str, kind: &str) -> Result<(), LookupError> {
        if self.allowed.iter().any(|(v, k)| v == api_version && k == kind) {
            Ok(())
        } else {
            Err(LookupError::Forbidden(format!("{GRANT_REFUSED}{api_version}/{kind} resources. The violation has been reported.")))
        }
    }
}

impl Cluster for Scoped {
    fn now(&self) -> Option<i64> {
        if self.cluster.clockless { None } else { aigov_sdk::cluster::host_clock() }
    }

    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        self.grant("get_resource")?;
        self.allow(api_version, kind)?;
        self.cluster.get(api_version, kind, name, namespace)
    }

    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        self.grant("list_resources_by_namespace")?;
        self.allow(api_version, kind)?;
        self.cluster.list(api_version, kind, Some(namespace), label_selector, field_selector)
    }

    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        self.grant("list_resources_all")?;
        self.allow(api_version, kind)?;
        self.cluster.list(api_version, kind, None, label_selector, field_selector)
    }
}

/// One lookup a rule made, as it crossed the host-call boundary: the
/// `cluster` function (its WIT name), its arguments in WIT order (an absent
/// option is `None`), and what the cluster answered.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Lookup {
    /// `get-resource`, `list-resources-by-namespace` or `list-resources-all`.
    pub function: &'static str,
    /// The arguments, in the order the WIT function takes them.
    pub args: Vec<Option<String>>,
    /// The answer.
    pub answer: LookupAnswer,
}

/// What a lookup returned: `{"ok": json}` or `{"err": {"tag", "val"}}`, the
/// error as the WIT `lookup-error` variant (`tag` its case name).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LookupAnswer {
    /// The object or list, as JSON.
    Ok(String),
    /// The failure.
    Err {
        /// `not-found`, `forbidden`, `invalid` or `unavailable`.
        tag: &'static str,
        /// The explanation.
        val: String,
    },
}

impl LookupAnswer {
    fn of(answer: &Result<String, LookupError>) -> LookupAnswer {
        match answer {
            Ok(json) => LookupAnswer::Ok(json.clone()),
            Err(e) => LookupAnswer::Err { tag: e.tag(), val: e.message().to_string() },
        }
    }
}

/// A cluster that answers through another and keeps every lookup with its
/// answer, in order: what a host must replay to give a rule the same
/// cluster (`aigov build export-cases`).
pub struct Recording<C> {
    inner: C,
    lookups: std::sync::Mutex<Vec<Lookup>>,
}

impl<C: Cluster> Recording<C> {
    /// Records the lookups `inner` answers.
    pub fn new(inner: C) -> Recording<C> {
        Recording { inner, lookups: std::sync::Mutex::new(Vec::new()) }
    }

    /// The lookups so far, in the order they were made.
    pub fn lookups(&self) -> Vec<Lookup> {
        self.lookups.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn keep(&self, function: &'static str, args: &[Option<&str>], answer: Result<String, LookupError>) -> Result<String, LookupError> {
        let lookup = Lookup { function, args: args.iter().map(|a| a.map(str::to_string)).collect(), answer: LookupAnswer::of(&answer) };
        self.lookups.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(lookup);
        answer
    }
}

impl<C: Cluster> Cluster for Recording<C> {
    fn now(&self) -> Option<i64> {
        self.inner.now()
    }

    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        let answer = self.inner.get_resource(api_version, kind, name, namespace);
        self.keep("get-resource", &[Some(api_version), Some(kind), Some(name), namespace], answer)
    }

    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        let answer = self.inner.list_resources_by_namespace(api_version, kind, namespace, label_selector, field_selector);
        self.keep("list-resources-by-namespace", &[Some(api_version), Some(kind), Some(namespace), label_selector, field_selector], answer)
    }

    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        let answer = self.inner.list_resources_all(api_version, kind, label_selector, field_selector);
        self.keep("list-resources-all", &[Some(api_version), Some(kind), label_selector, field_selector], answer)
    }
}

/// Which kinds are cluster-scoped, for the kinds the fixtures hold. Kinds
/// of other API groups (custom resources) have an unknown scope: the
/// fixture then takes the rule's word for it.
pub mod scope {
    /// A kind's scope.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Scope {
        /// Objects live in a namespace.
        Namespaced,
        /// Objects live outside namespaces.
        Cluster,
        /// Not known to the fixture cluster.
        Unknown,
    }

    const CLUSTER: &[(&str, &str)] = &[
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("networking.k8s.io", "IngressClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "Cohort"),
        ("scheduling.volcano.sh", "Queue"),
        ("policies.kubewarden.io", "ClusterAdmissionPolicy"),
    ];

    /// Groups whose every kind the fixture knows: a kind of these groups
    /// not listed as cluster-scoped is namespaced.
    const BUILT_IN: &[&str] = &[
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "node.k8s.io",
        "storage.k8s.io",
        "networking.k8s.io",
        "discovery.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "resource.k8s.io",
    ];

    /// The scope of `kind` in `api_version` (`v1`, `group/version`).
    pub fn of(api_version: &str, kind: &str) -> Scope {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if CLUSTER.iter().any(|(g, k)| *g == group && *k == kind) {
            Scope::Cluster
        } else if BUILT_IN.contains(&group) {
            Scope::Namespaced
        } else {
            Scope::Unknown
        }
    }
}

/// Kubernetes label and field selectors, parsed and matched as the API
/// server does (`labels.Parse`, `fields.ParseSelector` and the field labels
/// each kind indexes).
pub mod selector {
    use aigov_sdk::base::names::{label_key, label_value};
    use serde_json::Value;

    /// One label requirement.
    #[derive(Debug, PartialEq, Eq)]
    pub enum LabelReq {
        /// `key`
        Exists(String),
        /// `!key`
        Absent(String),
        /// `key=v`, `key==v`, `key in (a,b)`
        In(String, Vec<String>),
        /// `key!=v`, `key notin (a,b)`
        NotIn(String, Vec<String>),
        /// `key>n`
        Gt(String, i64),
        /// `key<n`
        Lt(String, i64),
    }

    impl LabelReq {
        /// Whether a `metadata.labels` object satisfies the requirement.
        pub fn matches(&self, labels: Option<&Value>) -> bool {
            let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
            let int = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
            match self {
                LabelReq::Exists(k) => get(k).is_some(),
                LabelReq::Absent(k) => get(k).is_none(),
                LabelReq::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
                LabelReq::NotIn(k, vs) => get(k).is_none_or(|v| vs.iter().all(|x| x != v)),
                LabelReq::Gt(k, n) => int(k).is_some_and(|v| v > *n),
                LabelReq::Lt(k, n) => int(k).is_some_and(|v| v < *n),
            }
        }
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Tok {
        Id(String),
        In,
        NotIn,
        Eq,
        DoubleEq,
        NotEq,
        Gt,
        Lt,
        Not,
        Open,
        Close,
        Comma,
    }

    impl Tok {
        fn text(&self) -> String {
            match self {
                Tok::Id(s) => s.clone(),
                Tok::In => "in".into(),
                Tok::NotIn => "notin".into(),
                Tok::Eq => "=".into(),
                Tok::DoubleEq => "==".into(),
                Tok::NotEq => "!=".into(),
                Tok::Gt => ">".into(),
                Tok::Lt => "<".into(),
                Tok::Not => "!".into(),
                Tok::Open => "(".into(),
                Tok::Close => ")".into(),
                Tok::Comma => ",".into(),
            }
        }
    }

    /// `labels.Parse`'s lexer: identifiers run until whitespace or one of
    /// `,()=!<>`; `in` and `notin` are keywords.
    fn lex(s: &str) -> Vec<Tok> {
        let mut out = Vec::new();
        let mut chars = s.chars().peekable();
        while let Some(&c) = chars.peek() {
            match c {
                c if c.is_whitespace() => {
                    chars.next();
                }
                ',' | '(' | ')' | '<' | '>' => {
                    chars.next();
                    out.push(match c {
                        ',' => Tok::Comma,
                        '(' => Tok::Open,
                        ')' => Tok::Close,
                        '<' => Tok::Lt,
                        _ => Tok::Gt,
                    });
                }
                '=' | '!' => {
                    chars.next();
                    let doubled = chars.peek() == Some(&'=');
                    if doubled {
                        chars.next();
                    }
                    out.push(match (c, doubled) {
                        ('=', false) => Tok::Eq,
                        ('=', true) => Tok::DoubleEq,
                        ('!', true) => Tok::NotEq,
                        _ => Tok::Not,
                    });
                }
                _ => {
                    let mut id = String::new();
                    while let Some(&c) = chars.peek() {
                        if c.is_whitespace() || ",()=!<>".contains(c) {
                            break;
                        }
                        id.push(c);
                        chars.next();
                    }
                    out.push(match id.as_str() {
                        "in" => Tok::In,
                        "notin" => Tok::NotIn,
                        _ => Tok::Id(id),
                    });
                }
            }
        }
        out
    }

    fn key(t: Option<&Tok>) -> Result<String, String> {
        match t {
            Some(Tok::Id(k)) => {
                label_key(k).map_err(|why| format!("invalid label key `{k}`: {why}"))?;
                Ok(k.clone())
            }
            Some(other) => Err(format!("found `{}`, expected a label key", other.text())),
            None => Err("expected a label key at the end of the selector".into()),
        }
    }

    fn value(v: &str) -> Result<String, String> {
        label_value(v).map_err(|why| format!("invalid label value `{v}`: {why}"))?;
        Ok(v.to_string())
    }

    /// Parses a label selector (`a=b,c!=d,e in (x,y),f,!g,h>3`): empty is
    /// no requirement; anything `labels.Parse` refuses is an error.
    pub fn parse_labels(s: &str) -> Result<Vec<LabelReq>, String> {
        let toks = lex(s);
        let mut out = Vec::new();
        let mut i = 0;
        if toks.is_empty() {
            return Ok(out);
        }
        loop {
            let req = match toks.get(i) {
                Some(Tok::Not) => {
                    i += 1;
                    let k = key(toks.get(i))?;
                    i += 1;
                    LabelReq::Absent(k)
                }
                Some(Tok::Id(_)) => {
                    let k = key(toks.get(i))?;
                    i += 1;
                    match toks.get(i) {
                        None | Some(Tok::Comma) => LabelReq::Exists(k),
                        Some(op @ (Tok::Eq | Tok::DoubleEq | Tok::NotEq)) => {
                            i += 1;
                            // `key=` is the empty value.
                            let v = match toks.get(i) {
                                None | Some(Tok::Comma) => String::new(),
                                Some(t @ (Tok::Id(_) | Tok::In | Tok::NotIn)) => {
                                    i += 1;
                                    value(&t.text())?
                                }
                                Some(t) => return Err(format!("found `{}`, expected a value after `{}`", t.text(), op.text())),
                            };
                            if *op == Tok::NotEq { LabelReq::NotIn(k, vec![v]) } else { LabelReq::In(k, vec![v]) }
                        }
                        Some(op @ (Tok::Gt | Tok::Lt)) => {
                            i += 1;
                            let n = match toks.get(i) {
                                Some(Tok::Id(v)) => {
                                    v.parse::<i64>().map_err(|_| format!("`{v}` after `{}` is not an integer", op.text()))?
                                }
                                _ => return Err(format!("expected an integer after `{}`", op.text())),
                            };
                            i += 1;
                            if *op == Tok::Gt { LabelReq::Gt(k, n) } else { LabelReq::Lt(k, n) }
                        }
                        Some(op @ (Tok::In | Tok::NotIn)) => {
                            i += 1;
                            if toks.get(i) != Some(&Tok::Open) {
                                return Err(format!("expected `(` after `{}`", op.text()));
                            }
                            i += 1;
                            let mut values = Vec::new();
                            loop {
                                match toks.get(i) {
                                    Some(t @ (Tok::Id(_) | Tok::In | Tok::NotIn)) => {
                                        values.push(value(&t.text())?);
                                        i += 1;
                                        match toks.get(i) {
                                            Some(Tok::Comma) => i += 1,
                                            Some(Tok::Close) => {
                                                i += 1;
                                                break;
                                            }
                                            _ => return Err(format!("`{k} {}`: expected `,` or `)` after a value", op.text())),
                                        }
                                    }
                                    Some(Tok::Close) => {
                                        i += 1;
                                        break;
                                    }
                                    _ => return Err(format!("`{k} {}`: expected a value or `)`", op.text())),
                                }
                            }
                            if values.is_empty() {
                                return Err(format!("`{k} {}`: the set of values must not be empty", op.text()));
                            }
                            if *op == Tok::In { LabelReq::In(k, values) } else { LabelReq::NotIn(k, values) }
                        }
                        Some(t) => return Err(format!("found `{}` after `{k}`, expected an operator, `,` or the end", t.text())),
                    }
                }
                Some(t) => return Err(format!("found `{}`, expected `!` or a label key", t.text())),
                None => return Err("expected a requirement after `,`".into()),
            };
            out.push(req);
            match toks.get(i) {
                None => return Ok(out),
                Some(Tok::Comma) => i += 1,
                Some(t) => return Err(format!("found `{}`, expected `,` or the end of the selector", t.text())),
            }
        }
    }

    /// One field requirement: a field label equal (or not) to a value.
    #[derive(Debug, PartialEq, Eq)]
    pub struct FieldReq {
        pointer: String,
        absent: &'static str,
        value: String,
        equal: bool,
    }

    impl FieldReq {
        /// Whether an object satisfies the requirement.
        pub fn matches(&self, object: &Value) -> bool {
            let actual = match object.pointer(&self.pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => self.absent.to_string(),
                Some(other) => other.to_string(),
            };
            (actual == self.value) == self.equal
        }
    }

    /// The field labels the API server indexes for a kind, with where each
    /// lives in the object and what it reads as when absent. Every kind has
    /// `metadata.name` and `metadata.namespace`.
    fn field(api_version: &str, kind: &str, label: &str) -> Option<(String, &'static str)> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let at = |p: &str| Some((p.to_string(), ""));
        match (group, kind, label) {
            (_, _, "metadata.name") => at("/metadata/name"),
            (_, _, "metadata.namespace") => at("/metadata/namespace"),
            (
                "",
                "Pod",
                "spec.nodeName"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "spec.serviceAccountName"
                | "status.phase"
                | "status.podIP"
                | "status.nominatedNodeName",
            ) => at(&format!("/{}", label.replace('.', "/"))),
            ("", "Pod", "spec.hostNetwork") => Some(("/spec/hostNetwork".into(), "false")),
            ("", "Namespace", "status.phase") => at("/status/phase"),
            ("", "Node", "spec.unschedulable") => Some(("/spec/unschedulable".into(), "false")),
            ("", "Secret", "type") => at("/type"),
            ("", "ReplicationController", "status.replicas") | ("apps", "ReplicaSet", "status.replicas") => {
                Some(("/status/replicas".into(), "0"))
            }
            ("batch", "Job", "status.successful") => Some(("/status/succeeded".into(), "0")),
            ("", "Event", l) if l.starts_with("involvedObject.") => at(&format!("/{}", l.replace('.', "/"))),
            ("", "Event", "reason" | "type" | "reportingComponent") => at(&format!("/{label}")),
            ("", "Event", "source") => at("/source/component"),
            // Custom resources index what their definition's
            // `selectableFields` name, which the fixture cannot know: any
            // path is taken as one.
            (g, _, l) if g.contains('.') && !g.ends_with(".k8s.io") => at(&format!("/{}", l.replace('.', "/"))),
            _ => None,
        }
    }

    /// Splits on commas not escaped with `\`.
    fn split_terms(s: &str) -> Vec<String> {
        let (mut out, mut cur, mut escaped) = (Vec::new(), String::new(), false);
        for c in s.chars() {
            match (escaped, c) {
                (true, _) => {
                    cur.push(c);
                    escaped = false;
                }
                (false, '\\') => {
                    cur.push(c);
                    escaped = true;
                }
                (false, ',') => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        out.push(cur);
        out
    }

    /// Removes `\` escapes from a field value (`\,` `\=` `\\`); a lone `\`
    /// or an escape of anything else is an error, as in `fields.UnescapeValue`.
    fn unescape(v: &str) -> Result<String, String> {
        let (mut out, mut chars) = (String::new(), v.chars());
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence `\\{e}` in `{v}`")),
                None => return Err(format!("`{v}` ends with an unescaped `\\`")),
            }
        }
        Ok(out)
    }

    /// The operator of a term: the first `!=`, `==` or `=` not escaped.
    fn split_term(term: &str) -> Option<(&str, &str, bool)> {
        let bytes = term.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes.get(i) {
                Some(b'\\') => i += 2,
                Some(b'!') if bytes.get(i + 1) == Some(&b'=') => return Some((term.get(..i)?, term.get(i + 2..)?, false)),
                Some(b'=') if bytes.get(i + 1) == Some(&b'=') => return Some((term.get(..i)?, term.get(i + 2..)?, true)),
                Some(b'=') => return Some((term.get(..i)?, term.get(i + 1..)?, true)),
                _ => i += 1,
            }
        }
        None
    }

    /// Parses a field selector for `kind` (`metadata.name=x,status.phase!=Running`):
    /// only `=`, `==` and `!=`, and only the field labels the kind
    /// indexes (the API server refuses others with `field label not
    /// supported`).
    pub fn parse_fields(s: &str, api_version: &str, kind: &str) -> Result<Vec<FieldReq>, String> {
        let mut out = Vec::new();
        for part in split_terms(s) {
            if part.is_empty() {
                continue;
            }
            let (label, value, equal) = split_term(&part).ok_or_else(|| format!("invalid field selector: cannot understand `{part}`"))?;
            let (pointer, absent) = field(api_version, kind, label)
                .ok_or_else(|| format!("field label not supported: `{label}` (for {kind} {api_version})"))?;
            out.push(FieldReq { pointer, absent, value: unescape(value)?, equal });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
