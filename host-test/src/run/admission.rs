//! Turning what a person has (a manifest, an AdmissionRequest, an
//! AdmissionReview; YAML or JSON) into the `AdmissionRequest` a policy
//! receives.

use aigov_sdk::WorkloadKind;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The user a plain object is submitted as, unless told otherwise.
pub const DEFAULT_USER: &str = "jane.doe@example.com";

/// The groups of the default user.
pub const DEFAULT_GROUPS: [&str; 1] = ["system:authenticated"];

/// Parses YAML or JSON text holding one or more documents, as
/// [`parse_documents`] does, reading a file that is one JSON object with
/// the JSON parser (several times faster than the YAML one, and the same
/// value: JSON is YAML); anything else, or JSON the JSON parser refuses,
/// goes to the YAML parser.
pub fn parse_manifests(text: &str) -> Result<Vec<Value>> {
    let text = without_bom(text);
    crate::run::nesting::check(text)?;
    // `\uD83D\uDE00`: the JSON parser joins a surrogate pair, the YAML
    // parser refuses it.
    if text.trim_start().starts_with('{')
        && !text.contains("\\ud")
        && !text.contains("\\uD")
        && let Ok(Strict(v)) = serde_json::from_str::<Strict>(text)
        && !has_float(&v)
    {
        return Ok(vec![v]);
    }
    parse_yaml(text)
}

/// Whether a value holds a number that is not an integer. The two parsers
/// read integers alike, but not every other number: `-0` (the JSON parser's
/// float `-0.0`, the YAML parser's integer `0`), integers too large for 64
/// bits (a float to the one, an error to the other). Manifests rarely hold
/// any (quantities are strings), so such a file simply takes the YAML path.
fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Parses YAML or JSON text holding one or more documents. Empty documents
/// are skipped, and a byte-order mark at the start (which some Windows
/// editors write). Text nested too deep to parse in reasonable time is
/// refused first ([`crate::run::nesting`]).
pub fn parse_documents(text: &str) -> Result<Vec<Value>> {
    let text = without_bom(text);
    crate::run::nesting::check(text)?;
    parse_yaml(text)
}

/// The text without the UTF-8 byte-order mark it may start with (the YAML
/// parser reads one there as the start of a second document).
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The error of a document that does not parse: which one, counted from 1
/// as the YAML parser reads them (empty ones too). The context of the
/// parser's error, so that a caller can tell which document failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidDocument(pub usize);

impl std::fmt::Display for InvalidDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {} is not valid YAML or JSON", self.0)
    }
}

/// A value read as [`Value`] reads it, but a mapping that holds a key twice
/// is refused, naming the key, as the API server and kubectl refuse it
/// (`Value` keeps the last, silently: `cat a.yaml b.yaml` without `---`
/// would lose an object).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid YAML or JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` appears twice in one mapping (kubectl refuses that; two objects in one file need `---` between them)"
                )));
            }
            let Strict(value) = map.next_value()?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

fn parse_yaml(text: &str) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    for (i, de) in serde_norway::Deserializer::from_str(text).enumerate() {
        let Strict(v) = Strict::deserialize(de).context(InvalidDocument(i + 1))?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// How a plain object is submitted: the request fields of `aigov eval`'s
/// and `aigov invoke`'s flags and of a case file's `request` (beside its
/// object), declared here once. The doc comments are the flags' help.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Submission {
    /// Operation for a plain object: CREATE (default), UPDATE, DELETE, CONNECT.
    /// Refused with an AdmissionRequest or AdmissionReview.
    #[arg(long)]
    pub operation: Option<String>,
    /// Requesting user (replaces an AdmissionRequest's userInfo.username).
    #[arg(long)]
    pub user: Option<String>,
    /// Requesting user's groups, repeatable (replace an AdmissionRequest's
    /// userInfo.groups).
    #[arg(long = "group")]
    pub groups: Option<Vec<String>>,
    /// Namespace for a plain object (default: the object's, else `default`).
    /// Refused with an AdmissionRequest or AdmissionReview.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Object name for a plain object; the pod, for exec/attach options.
    /// Refused with an AdmissionRequest or AdmissionReview.
    #[arg(long)]
    pub name: Option<String>,
    /// Subresource (`exec`, ...); implied by the options kinds. Not a flag.
    #[arg(skip)]
    pub sub_resource: Option<String>,
    /// The old object, for `UPDATE` (default: the object itself). Not a flag.
    #[arg(skip)]
    pub old_object: Option<Value>,
}

impl Submission {
    /// The fields as a case file spells them, in order.
    pub const FIELDS: [&str; 7] = ["operation", "user", "groups", "namespace", "name", "subResource", "oldObject"];

    /// Reads the value of the field `key` (one of [`Submission::FIELDS`])
    /// from `map`, as a derived `Deserialize` would (`seen` holds the
    /// fields read so far, to refuse one given twice); `Ok(false)` when
    /// `key` is none of them. For a struct that holds a submission's fields
    /// beside its own, as a case file's `request` does.
    pub fn read_field<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        key: &str,
        seen: &mut Vec<&'static str>,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        fn read<'de, A: serde::de::MapAccess<'de>, T: Deserialize<'de>>(
            slot: &mut Option<T>,
            key: &'static str,
            seen: &mut Vec<&'static str>,
            map: &mut A,
        ) -> Result<bool, A::Error> {
            if seen.contains(&key) {
                return Err(serde::de::Error::duplicate_field(key));
            }
            seen.push(key);
            *slot = map.next_value()?;
            Ok(true)
        }
        match key {
            "operation" => read(&mut self.operation, "operation", seen, map),
            "user" => read(&mut self.user, "user", seen, map),
            "groups" => read(&mut self.groups, "groups", seen, map),
            "namespace" => read(&mut self.namespace, "namespace", seen, map),
            "name" => read(&mut self.name, "name", seen, map),
            "subResource" => read(&mut self.sub_resource, "subResource", seen, map),
            "oldObject" => read(&mut self.old_object, "oldObject", seen, map),
            _ => Ok(false),
        }
    }

    /// Who submits: `--user` and `--group`.
    pub fn identity(&self) -> Identity {
        Identity { user: self.user.clone(), groups: self.groups.clone().unwrap_or_default() }
    }

    /// The flags that describe a plain object's submission and cannot apply
    /// to a verbatim request.
    pub fn plain_object_only(&self) -> Vec<&'static str> {
        [("--operation", self.operation.is_some()), ("--namespace", self.namespace.is_some()), ("--name", self.name.is_some())]
            .into_iter()
            .filter_map(|(flag, given)| given.then_some(flag))
            .collect()
    }
}

/// What kind of document `input` is, and the AdmissionRequest it amounts to.
pub fn to_admission_request(input: Value, how: &Submission) -> Result<Value> {
    let kind = input.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind == "AdmissionReview" {
        return input.get("request").cloned().filter(Value::is_object).context("the AdmissionReview has no `request` object");
    }
    let is_request = input.get("operation").is_some() && input.get("kind").is_some_and(Value::is_object);
    if is_request {
        return Ok(input);
    }
    from_object(input, how)
}

/// The one document of a request file (`aigov eval`, `aigov invoke`), as
/// the AdmissionRequest it amounts to with `how`: a plain object is
/// submitted with it all; a verbatim AdmissionRequest or AdmissionReview
/// takes `how`'s user and groups into its `userInfo` and refuses the fields
/// that would change what the request is. With the request, what to tell
/// the person when a verbatim request's `userInfo` was replaced.
pub fn read_request(path: &std::path::Path, how: &Submission) -> Result<(Value, Option<String>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut docs = parse_documents(&text).with_context(|| format!("parsing {}", path.display()))?;
    if docs.len() != 1 {
        bail!("{} holds {} documents; a request is one (use `aigov scan` for many)", path.display(), docs.len());
    }
    request_of(docs.remove(0), &path.display().to_string(), how)
}

/// The AdmissionRequest one document (from `source`, for messages)
/// amounts to with `how`, as [`read_request`] reads it.
pub fn request_of(doc: Value, source: &str, how: &Submission) -> Result<(Value, Option<String>)> {
    if !is_verbatim(&doc) {
        return Ok((to_admission_request(doc, how)?, None));
    }
    let what =
        if doc.get("kind").and_then(Value::as_str) == Some("AdmissionReview") { "an AdmissionReview" } else { "an AdmissionRequest" };
    let refused = how.plain_object_only();
    if !refused.is_empty() {
        bail!(
            "{source} is {what}, used verbatim: {} cannot apply to it (they describe how a plain object is submitted); \
             edit the request's `operation`, `namespace` or `name`, or pass the plain object instead. \
             --user and --group do apply: they replace its userInfo",
            refused.join(", ")
        );
    }
    let (request, changed) = admission_request(doc, &how.identity())?;
    let note = (!changed.is_empty()).then(|| format!("{source} is {what}, used verbatim but for {}", changed.join(", ")));
    Ok((request, note))
}

/// The `uid` of the AdmissionRequest built for a plain object.
pub const REQUEST_UID: &str = "00000000-0000-4000-8000-000000000000";

/// `CONNECT` option kinds and the subresource each stands for.
pub const CONNECT_KINDS: [(&str, &str); 4] =
    [("PodExecOptions", "exec"), ("PodAttachOptions", "attach"), ("PodPortForwardOptions", "portforward"), ("PodProxyOptions", "proxy")];

fn connect_subresource(kind: &str) -> Option<&'static str> {
    CONNECT_KINDS.iter().find(|(k, _)| *k == kind).map(|(_, s)| *s)
}

/// Kinds that live outside namespaces: a plain object of one of them is
/// submitted without a namespace.
pub const CLUSTER_SCOPED: [&str; 12] = [
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "StorageClass",
    "PriorityClass",
    "RuntimeClass",
    "ClusterQueue",
    "ResourceFlavor",
    "ClusterAdmissionPolicy",
];

/// The plural resource name of a kind.
pub fn plural(group: &str, kind: &str) -> String {
    if let Some(k) = WorkloadKind::of(group, kind) {
        return k.resource().to_string();
    }
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y').filter(|s| !s.ends_with(['a', 'e', 'i', 'o', 'u'])) {
        format!("{stem}ies")
    } else if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") || lower.ends_with("sh") {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// Builds the AdmissionRequest the API server would send for `object`.
pub fn from_object(object: Value, how: &Submission) -> Result<Value> {
    let Some(obj) = object.as_object() else {
        bail!("expected a Kubernetes object, an AdmissionRequest or an AdmissionReview, got {object}");
    };
    let api_version = obj.get("apiVersion").and_then(Value::as_str).context("the object has no `apiVersion`")?;
    let kind = obj.get("kind").and_then(Value::as_str).context("the object has no `kind`")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let meta = |f: &str| obj.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).map(str::to_string);

    let (resource, sub_resource, default_op) = match connect_subresource(kind) {
        Some(sub) => ("pods".to_string(), Some(sub.to_string()), "CONNECT"),
        None => (plural(group, kind), None, "CREATE"),
    };
    let operation = how.operation.clone().unwrap_or_else(|| default_op.to_string());
    if !matches!(operation.as_str(), "CREATE" | "UPDATE" | "DELETE" | "CONNECT") {
        bail!("unknown operation `{operation}`: use CREATE, UPDATE, DELETE or CONNECT");
    }
    let sub_resource = how.sub_resource.clone().or(sub_resource);
    let name = how.name.clone().or_else(|| meta("name"));
    if sub_resource.is_some() && name.is_none() {
        bail!("a {kind} request needs the pod's name (--name)");
    }
    let namespace = if CLUSTER_SCOPED.contains(&kind) {
        None
    } else {
        Some(how.namespace.clone().or_else(|| meta("namespace")).unwrap_or_else(|| "default".into()))
    };
    let user = how.user.clone().unwrap_or_else(|| DEFAULT_USER.into());
    let groups = how.groups.clone().unwrap_or_else(|| DEFAULT_GROUPS.iter().map(|g| g.to_string()).collect());

    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let mut req = Map::new();
    req.insert("uid".into(), json!(REQUEST_UID));
    req.insert("kind".into(), gvk.clone());
    req.insert("resource".into(), gvr.clone());
    req.insert("requestKind".into(), gvk);
    req.insert("requestResource".into(), gvr);
    if let Some(s) = &sub_resource {
        req.insert("subResource".into(), json!(s));
        req.insert("requestSubResource".into(), json!(s));
    }
    if let Some(n) = name {
        req.insert("name".into(), json!(n));
    }
    if let Some(ns) = namespace {
        req.insert("namespace".into(), json!(ns));
    }
    req.insert("operation".into(), json!(operation));
    req.insert("userInfo".into(), json!({"username": user, "groups": groups}));
    match operation.as_str() {
        "DELETE" => {
            req.insert("object".into(), Value::Null);
            req.insert("oldObject".into(), object);
        }
        "UPDATE" => {
            let old = how.old_object.clone().unwrap_or_else(|| object.clone());
            req.insert("object".into(), object);
            req.insert("oldObject".into(), old);
        }
        _ => {
            req.insert("object".into(), object);
        }
    }
    req.insert("dryRun".into(), json!(false));
    Ok(Value::Object(req))
}

/// Who submits the requests: `--user` and `--group` of `aigov eval` and
/// `aigov scan`. A plain object is submitted with them (else a default
/// user); an AdmissionRequest or AdmissionReview is used verbatim but for
/// the `userInfo` fields they replace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// `--user`: replaces `userInfo.username`.
    pub user: Option<String>,
    /// `--group` (repeatable): replace `userInfo.groups`.
    pub groups: Vec<String>,
}

impl Identity {
    /// Neither `--user` nor `--group`.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.groups.is_empty()
    }

    /// The flags given, for messages: `--user`, `--group`, `--user and --group`.
    pub fn flags(&self) -> &'static str {
        match (self.user.is_some(), !self.groups.is_empty()) {
            (true, true) => "--user and --group",
            (true, false) => "--user",
            (false, true) => "--group",
            (false, false) => "no identity flag",
        }
    }

    /// How a plain object is submitted.
    pub fn submission(&self) -> Submission {
        Submission { user: self.user.clone(), groups: (!self.groups.is_empty()).then(|| self.groups.clone()), ..Submission::default() }
    }

    /// Replaces `userInfo.username` and/or `userInfo.groups` of an
    /// AdmissionRequest (other `userInfo` fields are kept) and says what it
    /// changed, e.g. ``userInfo.username `jane` → `admin` (--user)``.
    pub fn apply(&self, request: &mut Value) -> Result<Vec<String>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let Some(map) = request.as_object_mut() else {
            bail!("the AdmissionRequest is not an object");
        };
        let info = map.entry("userInfo").or_insert_with(|| json!({}));
        if info.is_null() {
            *info = json!({});
        }
        let Some(info) = info.as_object_mut() else {
            bail!("the AdmissionRequest's `userInfo` is not an object");
        };
        let mut changed = Vec::new();
        if let Some(user) = &self.user {
            let old = info.insert("username".into(), json!(user));
            changed.push(format!("userInfo.username {} → `{user}` (--user)", shown(old.as_ref())));
        }
        if !self.groups.is_empty() {
            let old = info.insert("groups".into(), json!(self.groups));
            changed.push(format!("userInfo.groups {} → {} (--group)", shown(old.as_ref()), json!(self.groups)));
        }
        Ok(changed)
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(unset)".into(),
        Some(Value::String(s)) => format!("`{s}`"),
        Some(other) => other.to_string(),
    }
}

/// Whether a document is used verbatim, as an AdmissionReview or an
/// AdmissionRequest, rather than submitted as a plain object: the test
/// [`to_admission_request`] makes.
pub fn is_verbatim(doc: &Value) -> bool {
    let kind = doc.get("kind");
    kind.and_then(Value::as_str) == Some("AdmissionReview") || (doc.get("operation").is_some() && kind.is_some_and(Value::is_object))
}

/// The AdmissionRequest of a document, submitted as `identity`: a plain
/// object with it, a verbatim request with its `userInfo` replaced. Also
/// returns what was replaced in a verbatim request.
pub fn admission_request(doc: Value, identity: &Identity) -> Result<(Value, Vec<String>)> {
    let verbatim = is_verbatim(&doc);
    let mut request = to_admission_request(doc, &identity.submission())?;
    let changed = if verbatim { identity.apply(&mut request)? } else { Vec::new() };
    Ok((request, changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_refused_by_name() {
        // Two objects concatenated without `---`, in YAML and in JSON.
        let two = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n";
        for text in [two, r#"{"kind": "Pod", "metadata": {"name": "a", "name": "b"}}"#] {
            for parsed in [parse_manifests(text), parse_documents(text)] {
                let e = format!("{:#}", parsed.unwrap_err());
                assert!(e.starts_with("document 1 is not valid YAML or JSON: "), "{e}");
                assert!(e.contains("appears twice in one mapping (kubectl refuses that"), "{e}");
            }
        }
        assert!(format!("{:#}", parse_documents(two).unwrap_err()).contains("the key `apiVersion` appears twice"));
        // Alike keys in different mappings are fine; values read as before.
        let v = parse_manifests("a: {name: x}\nb: {name: y}\nc: [1, -2, 1.5, null, true]\n").unwrap();
        assert_eq!(v, [json!({"a": {"name": "x"}, "b": {"name": "y"}, "c": [1, -2, 1.5, null, true]})]);
        let v = parse_manifests(r#"{"a": {"name": "x"}, "b": [1, {"name": "y"}]}"#).unwrap();
        assert_eq!(v, [json!({"a": {"name": "x"}, "b": [1, {"name": "y"}]})]);
    }

    #[test]
    fn plain_objects_become_create_requests() {
        let obj = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r", "namespace": "ml"}});
        let r = to_admission_request(obj, &Submission::default()).unwrap();
        assert_eq!(r["kind"], json!({"group": "ray.io", "version": "v1", "kind": "RayCluster"}));
        assert_eq!(r["resource"]["resource"], "rayclusters");
        assert_eq!(r["operation"], "CREATE");
        assert_eq!(r["namespace"], "ml");
        assert_eq!(r["userInfo"]["username"], DEFAULT_USER);
        assert_eq!(r["object"]["metadata"]["name"], "r");
    }

    #[test]
    fn exec_options_become_connect_requests() {
        let obj = json!({"apiVersion": "v1", "kind": "PodExecOptions", "command": ["bash"]});
        let how = Submission { name: Some("trainer-0".into()), namespace: Some("ml".into()), ..Submission::default() };
        let r = to_admission_request(obj.clone(), &how).unwrap();
        assert_eq!(r["operation"], "CONNECT");
        assert_eq!(r["resource"]["resource"], "pods");
        assert_eq!(r["subResource"], "exec");
        assert_eq!(r["name"], "trainer-0");
        assert!(to_admission_request(obj, &Submission::default()).is_err(), "needs the pod name");
    }

    #[test]
    fn reviews_and_requests_pass_through() {
        let req = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE"});
        assert_eq!(to_admission_request(req.clone(), &Submission::default()).unwrap(), req);
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req});
        assert_eq!(to_admission_request(review, &Submission::default()).unwrap()["uid"], "1");
    }

    #[test]
    fn delete_and_update_carry_old_objects() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let del = Submission { operation: Some("DELETE".into()), ..Submission::default() };
        let r = from_object(obj.clone(), &del).unwrap();
        assert!(r["object"].is_null());
        assert_eq!(r["oldObject"]["metadata"]["name"], "p");
        let upd = Submission { operation: Some("UPDATE".into()), ..Submission::default() };
        assert_eq!(from_object(obj, &upd).unwrap()["oldObject"]["kind"], "Pod");
    }

    #[test]
    fn plurals() {
        assert_eq!(plural("", "Pod"), "pods");
        assert_eq!(plural("batch.volcano.sh", "Job"), "jobs");
        assert_eq!(plural("x", "NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("x", "Ingress"), "ingresses");
        assert_eq!(plural("x", "Gateway"), "gateways");
    }

    #[test]
    fn json_files_parse_as_the_yaml_parser_reads_them() {
        for text in [
            r#"{"a": 1, "b": -0, "c": 1.0, "d": 1e3, "e": 1.5e300, "f": -12, "g": 18446744073709551615}"#,
            r#"{"big": 123456789012345678901234567890, "neg": -9223372036854775808, "tiny": 5e-324}"#,
            r#"{"s": "tab\tnew\nline \"q\" \\ \/ \u00e9 \ud83d\ude00 é", "e": "", "n": null, "t": true, "l": [], "o": {}}"#,
            "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}\n\n",
            r#"{"twice": 1, "twice": 2}"#,
            r#"  {"nested": [{"a": [1, [2, {"b": null}]]}]}"#,
            r#"{"pair": "\uD83D\uDE00"}"#,
            r#"{"s": "tab\tnew\nline \"q\" \\ \/ \u00e9 é"}"#,
        ] {
            let (fast, yaml) = (parse_manifests(text), parse_documents(text));
            assert_eq!(fast.as_ref().ok(), yaml.as_ref().ok(), "{text}");
            assert_eq!(fast.map_err(|e| format!("{e:#}")).err(), yaml.map_err(|e| format!("{e:#}")).err(), "{text}");
        }
        // Not one JSON object: the YAML parser.
        assert_eq!(parse_manifests("{a: 1}\n").unwrap(), vec![json!({"a": 1})]);
        assert_eq!(parse_manifests("{\"a\": 1}\n---\n{\"b\": 2}\n").unwrap().len(), 2);
        assert!(parse_manifests("{\"a\": ").is_err());
    }

    #[test]
    fn multi_document_yaml() {
        let docs = parse_documents("a: 1\n---\n---\nb: [1, 2]\n").unwrap();
        assert_eq!(docs, vec![json!({"a": 1}), json!({"b": [1, 2]})]);
        assert_eq!(parse_documents(r#"{"json": true}"#).unwrap(), vec![json!({"json": true})]);
    }
}
