//! Cluster state served from fixture files, through the same host-call path
//! a cluster would use: Kubewarden's `kubernetes/*` waPC host calls for
//! modules, the WIT `cluster` import for components, and the SDK's `Cluster`
//! trait natively.
//!
//! A fixture directory holds YAML or JSON files; each file holds one object,
//! several YAML documents, or a `List`.
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

use std::path::Path;
use std::sync::Arc;

use aigov_sdk::{Cluster, LookupError};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Objects a lookup can see, and lookups that fail.
#[derive(Clone, Debug, Default)]
pub struct FixtureCluster {
    objects: Vec<Value>,
    failures: Vec<Value>,
}

/// The kind of fixture objects that make lookups fail.
pub const LOOKUP_FAILURE: &str = "LookupFailure";

impl FixtureCluster {
    /// A cluster with no objects.
    pub fn empty() -> FixtureCluster {
        FixtureCluster::default()
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
        collect_files(dir, &mut files)?;
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            for doc in crate::run::admission::parse_documents(&text).with_context(|| format!("parsing {}", f.display()))? {
                c.add(doc).with_context(|| format!("in {}", f.display()))?;
            }
        }
        Ok(c)
    }

    fn add(&mut self, object: Value) -> Result<()> {
        if object.is_null() {
            return Ok(());
        }
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
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
        self.objects.push(object);
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

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    fn of_kind<'a>(&'a self, api_version: &'a str, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects.iter().filter(move |o| {
            o.get("apiVersion").and_then(Value::as_str) == Some(api_version)
                && o.get("kind").and_then(Value::as_str) == Some(kind)
        })
    }


    fn get(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        if let Some(e) = self.failure(api_version, kind, Some(name), namespace) {
            return Err(e);
        }
        self.of_kind(api_version, kind)
            .find(|o| meta(o, "name") == Some(name) && meta(o, "namespace") == namespace)
            .map(Value::to_string)
            .ok_or_else(|| {
                LookupError::NotFound(match namespace {
                    Some(ns) => format!("{kind} `{ns}/{name}` ({api_version}) not found"),
                    None => format!("{kind} `{name}` ({api_version}) not found"),
                })
            })
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        if let Some(e) = self.failure(api_version, kind, None, namespace) {
            return Err(e);
        }
        let labels = selector::parse_labels(label_selector.unwrap_or_default()).map_err(LookupError::Invalid)?;
        let fields = selector::parse_fields(field_selector.unwrap_or_default()).map_err(LookupError::Invalid)?;
        let items: Vec<&Value> = self
            .of_kind(api_version, kind)
            .filter(|o| namespace.is_none() || meta(o, "namespace") == namespace)
            .filter(|o| labels.iter().all(|r| r.matches(o.pointer("/metadata/labels"))))
            .filter(|o| fields.iter().all(|r| r.matches(o)))
            .collect();
        Ok(json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}).to_string())
    }
}

fn meta<'a>(o: &'a Value, field: &str) -> Option<&'a str> {
    o.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading cluster directory {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")) {
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
    rule: Arc<str>,
    allowed: Allowed,
}

impl Scoped {
    /// Scopes `cluster` to what rule `rule` declares.
    pub fn new(cluster: Arc<FixtureCluster>, rule: &str, allowed: Allowed) -> Scoped {
        Scoped { cluster, rule: rule.into(), allowed }
    }

    fn allow(&self, api_version: &str, kind: &str) -> Result<(), LookupError> {
        if self.allowed.iter().any(|(v, k)| v == api_version && k == kind) {
            Ok(())
        } else {
            Err(LookupError::Forbidden(format!(
                "`{}` does not declare {kind} ({api_version}) in its contextAwareResources",
                self.rule
            )))
        }
    }
}

impl Cluster for Scoped {
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
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
        self.allow(api_version, kind)?;
        self.cluster.list(api_version, kind, None, label_selector, field_selector)
    }
}

/// Kubernetes label and field selectors.
pub mod selector {
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
    }

    impl LabelReq {
        /// Whether a `metadata.labels` object satisfies the requirement.
        pub fn matches(&self, labels: Option<&Value>) -> bool {
            let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
            match self {
                LabelReq::Exists(k) => get(k).is_some(),
                LabelReq::Absent(k) => get(k).is_none(),
                LabelReq::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
                LabelReq::NotIn(k, vs) => get(k).is_none_or(|v| vs.iter().all(|x| x != v)),
            }
        }
    }

    /// Splits on commas outside parentheses.
    fn split_top(s: &str) -> Vec<&str> {
        let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(s.get(start..i).unwrap_or_default());
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(s.get(start..).unwrap_or_default());
        out.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect()
    }

    fn set(values: &str) -> Result<Vec<String>, String> {
        let inner = values
            .trim()
            .strip_prefix('(')
            .and_then(|v| v.strip_suffix(')'))
            .ok_or_else(|| format!("`{values}` is not a parenthesised value list"))?;
        Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
    }

    /// Parses a label selector (`a=b,c!=d,e in (x,y),f,!g`).
    pub fn parse_labels(s: &str) -> Result<Vec<LabelReq>, String> {
        split_top(s)
            .into_iter()
            .map(|part| {
                if let Some(k) = part.strip_prefix('!') {
                    return Ok(LabelReq::Absent(k.trim().to_string()));
                }
                if let Some((k, v)) = part.split_once(" notin ") {
                    return Ok(LabelReq::NotIn(k.trim().to_string(), set(v)?));
                }
                if let Some((k, v)) = part.split_once(" in ") {
                    return Ok(LabelReq::In(k.trim().to_string(), set(v)?));
                }
                if let Some((k, v)) = part.split_once("!=") {
                    return Ok(LabelReq::NotIn(k.trim().to_string(), vec![v.trim().to_string()]));
                }
                if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                    return Ok(LabelReq::In(k.trim().to_string(), vec![v.trim().to_string()]));
                }
                if part.contains(char::is_whitespace) || part.contains(['(', ')']) {
                    return Err(format!("cannot parse label selector requirement `{part}`"));
                }
                Ok(LabelReq::Exists(part.to_string()))
            })
            .collect()
    }

    /// One field requirement: a dotted path equal (or not) to a value.
    #[derive(Debug, PartialEq, Eq)]
    pub struct FieldReq {
        path: String,
        value: String,
        equal: bool,
    }

    impl FieldReq {
        /// Whether an object satisfies the requirement.
        pub fn matches(&self, object: &Value) -> bool {
            let pointer = format!("/{}", self.path.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == self.value) == self.equal
        }
    }

    /// Parses a field selector (`metadata.name=x,status.phase!=Running`).
    pub fn parse_fields(s: &str) -> Result<Vec<FieldReq>, String> {
        split_top(s)
            .into_iter()
            .map(|part| {
                let (path, value, equal) = if let Some((p, v)) = part.split_once("!=") {
                    (p, v, false)
                } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                    (p, v, true)
                } else {
                    return Err(format!("cannot parse field selector requirement `{part}`"));
                };
                Ok(FieldReq {
                    path: path.trim().to_string(),
                    value: value.trim().to_string(),
                    equal,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn cluster() -> FixtureCluster {
        FixtureCluster::from_objects([
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml", "labels": {"team": "x", "tier": "gpu"}}}),
            json!({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "ml", "labels": {"team": "y"}}},
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "other"}}
            ]}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}),
        ])
        .unwrap()
    }

    fn names(list: &str) -> Vec<String> {
        let v: Value = serde_json::from_str(list).unwrap();
        v["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn get_by_namespace_and_name() {
        let c = cluster();
        assert_eq!(c.len(), 4, "List items are flattened");
        let pod: Value = serde_json::from_str(&c.get("v1", "Pod", "a", Some("other")).unwrap()).unwrap();
        assert_eq!(pod["metadata"]["namespace"], "other");
        assert!(matches!(c.get("v1", "Pod", "zzz", Some("ml")), Err(LookupError::NotFound(m)) if m == "Pod `ml/zzz` (v1) not found"));
        assert!(c.get("v1", "Namespace", "ml", None).is_ok());
    }

    #[test]
    fn list_with_selectors() {
        let c = cluster();
        assert_eq!(names(&c.list("v1", "Pod", Some("ml"), None, None).unwrap()), ["a", "b"]);
        assert_eq!(names(&c.list("v1", "Pod", None, Some("team in (x, z)"), None).unwrap()), ["a"]);
        assert_eq!(names(&c.list("v1", "Pod", None, Some("team!=x"), None).unwrap()), ["b", "a"]);
        assert_eq!(names(&c.list("v1", "Pod", None, Some("!team"), None).unwrap()), ["a"]);
        assert_eq!(names(&c.list("v1", "Pod", None, Some("team,tier=gpu"), None).unwrap()), ["a"]);
        assert_eq!(names(&c.list("v1", "Pod", None, None, Some("metadata.namespace=other")).unwrap()), ["a"]);
        assert!(matches!(c.list("v1", "Pod", None, Some("team in x"), None), Err(LookupError::Invalid(_))));
        assert!(matches!(c.list("v1", "Pod", None, None, Some("nonsense")), Err(LookupError::Invalid(_))));
    }

    #[test]
    fn scoping_forbids_undeclared_kinds() {
        let c = Arc::new(cluster());
        let s = Scoped::new(c, "exec-guard", vec![("v1".to_string(), "Pod".to_string())].into());
        assert!(s.get_resource("v1", "Pod", "a", Some("ml")).is_ok());
        let e = s.get_resource("v1", "Namespace", "ml", None).unwrap_err();
        assert_eq!(e, LookupError::Forbidden("`exec-guard` does not declare Namespace (v1) in its contextAwareResources".into()));
    }

    #[test]
    fn failures_are_served_through_the_same_calls() {
        let c = FixtureCluster::from_objects([
            json!({"apiVersion": "aigov.dev/v1alpha1", "kind": "LookupFailure", "match": {"apiVersion": "v1", "kind": "Pod", "namespace": "ml"},
                   "error": "forbidden", "message": "pods is forbidden\nstack"}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml"}}),
        ])
        .unwrap();
        assert_eq!(c.get("v1", "Pod", "a", Some("ml")).unwrap_err(), LookupError::Forbidden("pods is forbidden\nstack".into()));
        assert!(c.list("v1", "Pod", Some("ml"), None, None).is_err());
        assert!(c.get("v1", "Pod", "a", Some("other")).is_err_and(|e| matches!(e, LookupError::NotFound(_))));
        assert_eq!(c.len(), 1, "failures are not objects");
        assert!(FixtureCluster::from_objects([json!({"apiVersion": "x", "kind": "LookupFailure", "match": {"kind": "Pod"}, "error": "boom"})]).is_err());
    }

    #[test]
    fn objects_need_kind() {
        assert!(FixtureCluster::from_objects([json!({"metadata": {}})]).is_err());
    }
}
