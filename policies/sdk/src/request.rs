//! The admission request, as rules see it.
//!
//! Decoding is one pass over the request text: the header fields rules read
//! are decoded borrowed, and the object is decoded straight into the
//! workload model of its kind (the API server sends `kind` before `object`;
//! when a request does not, the object is kept as raw text and decoded once
//! the kind is known). Everything else is skipped unread. On malformed input
//! the error names the field ([`explain`]), found by walking the text to
//! where serde stopped, so the happy path carries no path tracking.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json::{self, Path};
use crate::workload::{Workload, WorkloadKind, WorkloadSeed};

/// A string from the request: borrowed from the request bytes unless the JSON
/// string contains escapes. Unlike `Cow<str>`, it borrows wherever it appears,
/// inside lists and maps too.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Str<'a>(pub Cow<'a, str>);

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Str<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Str<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Self {
        Str(Cow::Borrowed(s))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Deserializes `null` as the type's default: hand-written YAML often has
/// `labels:` or `tolerations:` with nothing after it.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The admission operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(expecting = "one of `CREATE`, `UPDATE`, `DELETE`, `CONNECT`")]
pub enum Operation {
    /// Creation.
    #[serde(rename = "CREATE")]
    Create,
    /// Update.
    #[serde(rename = "UPDATE")]
    Update,
    /// Deletion.
    #[serde(rename = "DELETE")]
    Delete,
    /// `exec`, `attach`, `portforward` and other connect subresources.
    #[serde(rename = "CONNECT")]
    Connect,
}

impl Operation {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Group, version and kind (`apps`, `v1`, `Deployment`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(expecting = "an object")]
pub struct GroupVersionKind<'a> {
    /// API group; empty for the core group.
    #[serde(borrow, default)]
    pub group: Str<'a>,
    /// API version.
    #[serde(borrow, default)]
    pub version: Str<'a>,
    /// Kind.
    #[serde(borrow, default)]
    pub kind: Str<'a>,
}

/// Group, version and resource (`apps`, `v1`, `deployments`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(expecting = "an object")]
pub struct GroupVersionResource<'a> {
    /// API group; empty for the core group.
    #[serde(borrow, default)]
    pub group: Str<'a>,
    /// API version.
    #[serde(borrow, default)]
    pub version: Str<'a>,
    /// Plural resource name.
    #[serde(borrow, default)]
    pub resource: Str<'a>,
}

/// Who sent the request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(expecting = "an object")]
pub struct UserInfo<'a> {
    /// User name (`jane@example.com`, `system:serviceaccount:ns:sa`).
    #[serde(borrow, default)]
    pub username: Str<'a>,
    /// Groups the user belongs to.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub groups: Vec<Str<'a>>,
}

/// The request's object, as decoded.
#[derive(Clone, Debug, Default)]
pub enum Object<'a> {
    /// No object (`DELETE`), or `null`.
    #[default]
    None,
    /// A workload kind, decoded into the workload model.
    Workload(Box<Workload<'a>>),
    /// Another kind (a `CONNECT` request's options, a Namespace, ...), kept
    /// as text for rules that decode it themselves ([`Request::object_as`]).
    Raw(&'a RawValue),
    /// A workload kind sent before its `kind`: decoded once the kind is
    /// known ([`Request::from_admission`]).
    Pending(&'a RawValue),
}

/// An `admission.k8s.io/v1` `AdmissionRequest`, reduced to what rules read.
#[derive(Clone, Debug)]
pub struct AdmissionRequest<'a> {
    /// Request identifier.
    pub uid: Str<'a>,
    /// Kind of the object (for `CONNECT`, the options kind, e.g. `PodExecOptions`).
    pub kind: GroupVersionKind<'a>,
    /// Resource being requested.
    pub resource: GroupVersionResource<'a>,
    /// Subresource (`exec`, `attach`, `status`), if any.
    pub sub_resource: Option<Str<'a>>,
    /// Name of the object (for `CONNECT`, the pod).
    pub name: Option<Str<'a>>,
    /// Namespace of the object.
    pub namespace: Option<Str<'a>>,
    /// Operation.
    pub operation: Operation,
    /// Requesting user.
    pub user_info: UserInfo<'a>,
    /// The new object (absent on DELETE).
    pub object: Object<'a>,
    /// The existing object (UPDATE and DELETE), undecoded until needed.
    pub old_object: Option<&'a RawValue>,
    /// Whether this is a dry run.
    pub dry_run: Option<bool>,
}

/// Which workload kinds a reader wants decoded: the kinds its metadata
/// routes to it. Objects of other kinds stay raw text, so a rule never
/// rejects a kind it does not govern because it could not decode it.
pub type Wants<'w> = &'w dyn Fn(WorkloadKind) -> bool;

/// Every workload kind.
pub fn all_kinds(_: WorkloadKind) -> bool {
    true
}

impl<'de: 'a, 'a> Deserialize<'de> for AdmissionRequest<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RequestVisitor(&all_kinds))
    }
}

/// Decodes an AdmissionRequest, decoding only the workload kinds `wants`
/// names.
#[derive(Clone, Copy)]
pub struct RequestSeed<'w>(pub Wants<'w>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = AdmissionRequest<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(RequestVisitor(self.0))
    }
}

struct RequestVisitor<'w>(Wants<'w>);

impl<'de> Visitor<'de> for RequestVisitor<'_> {
    type Value = AdmissionRequest<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AdmissionRequest object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut uid = None;
        let mut kind: Option<GroupVersionKind<'de>> = None;
        let mut resource = None;
        let mut sub_resource = None;
        let mut name = None;
        let mut namespace = None;
        let mut operation = None;
        let mut user_info = None;
        let mut object = Object::None;
        let mut old_object = None;
        let mut dry_run = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match &*key {
                "uid" => uid = map.next_value()?,
                "kind" => kind = Some(map.next_value()?),
                "resource" => resource = map.next_value()?,
                "subResource" => sub_resource = map.next_value()?,
                "name" => name = map.next_value()?,
                "namespace" => namespace = map.next_value()?,
                "operation" => operation = Some(map.next_value()?),
                "userInfo" => user_info = map.next_value()?,
                "dryRun" => dry_run = map.next_value()?,
                "oldObject" => old_object = map.next_value::<Option<&'de RawValue>>()?,
                "object" => {
                    object = match &kind {
                        Some(k) => match WorkloadKind::of(&k.group, &k.kind).filter(|wk| (self.0)(*wk)) {
                            Some(wk) => map.next_value_seed(ObjectSeed(wk))?,
                            None => raw(map.next_value::<Option<&'de RawValue>>()?, Object::Raw),
                        },
                        None => raw(map.next_value::<Option<&'de RawValue>>()?, Object::Pending),
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(AdmissionRequest {
            uid: uid.unwrap_or_default(),
            kind: kind.ok_or_else(|| de::Error::missing_field("kind"))?,
            resource: resource.unwrap_or_default(),
            sub_resource,
            name,
            namespace,
            operation: operation.ok_or_else(|| de::Error::missing_field("operation"))?,
            user_info: user_info.unwrap_or_default(),
            object,
            old_object,
            dry_run,
        })
    }
}

fn raw<'a>(value: Option<&'a RawValue>, wrap: fn(&'a RawValue) -> Object<'a>) -> Object<'a> {
    match value {
        Some(v) if v.get() != "null" => wrap(v),
        _ => Object::None,
    }
}

/// Decodes `object` (or `null`) as the workload kind already read.
struct ObjectSeed(WorkloadKind);

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Object<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Object<'de>, D::Error> {
        struct V(WorkloadKind);
        impl<'de> Visitor<'de> for V {
            type Value = Object<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_none<E: de::Error>(self) -> Result<Object<'de>, E> {
                Ok(Object::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Object<'de>, E> {
                Ok(Object::None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Object<'de>, D::Error> {
                WorkloadSeed(self.0).deserialize(d).map(|w| Object::Workload(Box::new(w)))
            }
        }
        d.deserialize_option(V(self.0))
    }
}

/// Input the rule cannot evaluate: malformed JSON, a field of the wrong type,
/// an invalid quantity. Rejected with code 400 and this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

impl Malformed {
    /// A malformed-input error with this message.
    pub fn new(message: impl Into<String>) -> Malformed {
        Malformed(message.into())
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Malformed {}

/// Rewords a serde message for people: Kubernetes' names for JSON types,
/// never a Rust type name.
pub fn friendly(msg: &str) -> String {
    let mut m = msg.to_string();
    for t in ["u8", "u16", "u32", "u64", "usize"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number, zero or more");
    }
    for t in ["i8", "i16", "i32", "i64", "isize"] {
        m = m.replace(&format!("expected {t}"), "expected a whole number");
    }
    for t in ["f32", "f64"] {
        m = m.replace(&format!("expected {t}"), "expected a number");
    }
    // Any `struct Name` or `enum Name` left (types without an `expecting`).
    for word in ["struct ", "enum "] {
        while let Some(i) = m.find(&format!("expected {word}")) {
            let start = i + "expected ".len();
            let end = m
                .get(start + word.len()..)
                .and_then(|rest| rest.find(|c: char| !c.is_alphanumeric() && c != '_'))
                .map_or(m.len(), |n| start + word.len() + n);
            m.replace_range(start..end, "an object");
        }
    }
    m.replace("expected a sequence", "expected a list")
        .replace("invalid type: sequence", "invalid type: list")
        .replace("invalid type: map", "invalid type: object")
        .replace("expected a map", "expected an object")
        .replace("unit value", "null")
        .replace("expected a borrowed string", "expected a string")
}

/// Explains a decoding error of `text` as a person needs it: what was
/// malformed (`what`), the field (found from where serde stopped), and the
/// problem in Kubernetes' words. Syntax errors keep their line and column.
pub fn explain(text: &str, err: &serde_json::Error, what: &str) -> Malformed {
    let (what, path, msg) = locate_error(text, err, what);
    Malformed(if path.is_root() {
        format!("{what} is malformed: {msg}")
    } else {
        format!("{what} is malformed: `{path}`: {msg}")
    })
}

fn locate_error(text: &str, err: &serde_json::Error, what: &str) -> (String, Path, String) {
    let mut msg = err.to_string();
    let positional = err.is_syntax() || err.is_eof();
    if !positional && let Some(i) = msg.find(" at line ") {
        msg.truncate(i);
    }
    let path = if err.is_eof() {
        Path::root()
    } else {
        json::path_at(text, json::offset_of(text, err.line(), err.column()))
    };
    (what.to_string(), path, friendly(&msg))
}

/// Explains an error in a whole request (or a waPC payload, whose request is
/// under `request`): an error inside the object is reported against the
/// object's kind (`the Pod is malformed: `spec.containers``), others against
/// the request.
pub(crate) fn explain_request(text: &str, err: &serde_json::Error, prefix: &[&str]) -> Malformed {
    let (_, path, msg) = locate_error(text, err, "");
    let in_request = path.0.len() >= prefix.len()
        && path.0.iter().zip(prefix).all(|(s, p)| *s == json::Seg::Key((*p).to_string()));
    let rest = Path(path.0.get(prefix.len()..).unwrap_or_default().to_vec());
    let (what, field) = match rest.0.split_first() {
        Some((json::Seg::Key(k), inner)) if in_request && k == "object" => {
            (format!("the {}", object_kind(text, prefix)), Path(inner.to_vec()))
        }
        _ if in_request && !prefix.is_empty() => ("the admission request".to_string(), rest),
        _ if prefix.is_empty() => ("the admission request".to_string(), path),
        _ => ("the validation request".to_string(), path),
    };
    Malformed(if field.is_root() {
        format!("{what} is malformed: {msg}")
    } else {
        format!("{what} is malformed: `{field}`: {msg}")
    })
}

/// The object's kind name, read from the request's `kind` (`Pod`), for
/// messages; `object` if it cannot be read.
fn object_kind(text: &str, prefix: &[&str]) -> String {
    let mut path = Path::root();
    for p in prefix {
        path = path.key(p);
    }
    json::find(text, &path.keys(&["kind", "kind"]))
        .and_then(|k| serde_json::from_str::<String>(k).ok())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "object".into())
}

/// Decodes borrowed JSON into `T`, explaining errors against `what`
/// (`the Namespace`): for objects rules read from lookups.
pub fn decode<'a, T: Deserialize<'a>>(json: &'a str, what: &str) -> Result<T, Malformed> {
    serde_json::from_str(json).map_err(|e| explain(json, &e, what))
}

/// One admission request, ready for rules: the header, and the object
/// decoded into the model of its kind.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    header: AdmissionRequest<'a>,
    /// The request text and where the object sits in it, to find the
    /// object's own text when a mutating rule edits it.
    source: Option<(&'a str, &'static [&'static str])>,
}

impl<'a> Request<'a> {
    /// Parses an `AdmissionRequest` JSON document.
    pub fn parse(json: &'a str) -> Result<Request<'a>, Malformed> {
        Request::parse_for(json, &all_kinds)
    }

    /// Parses an `AdmissionRequest` JSON document, decoding the object only
    /// if it is one of the workload kinds `wants` names.
    pub fn parse_for(json: &'a str, wants: Wants<'_>) -> Result<Request<'a>, Malformed> {
        let mut de = serde_json::Deserializer::from_str(json);
        match RequestSeed(wants).deserialize(&mut de).and_then(|r| de.end().map(|()| r)) {
            Ok(r) => Request::from_admission(r, Some((json, &["object"])), wants),
            Err(e) => Err(explain_request(json, &e, &[])),
        }
    }

    /// Wraps a decoded request, decoding an object that came before its
    /// kind. `source` is the text the request was decoded from and the path
    /// of the object in it.
    pub fn from_admission(
        mut header: AdmissionRequest<'a>,
        source: Option<(&'a str, &'static [&'static str])>,
        wants: Wants<'_>,
    ) -> Result<Request<'a>, Malformed> {
        if let Object::Pending(raw) = header.object {
            header.object = match WorkloadKind::of(&header.kind.group, &header.kind.kind).filter(|k| wants(*k)) {
                Some(kind) => Object::Workload(Box::new(Workload::parse(kind, raw.get())?)),
                None => Object::Raw(raw),
            };
        }
        Ok(Request { header, source })
    }

    /// The same request with another object (an old object, or a mutated
    /// one), decoded as the request's kind.
    pub fn with_object<'b>(&self, object: &'b str) -> Result<Request<'b>, Malformed>
    where
        'a: 'b,
    {
        let h = &self.header;
        let mut header: AdmissionRequest<'b> = AdmissionRequest {
            uid: h.uid.clone(),
            kind: h.kind.clone(),
            resource: h.resource.clone(),
            sub_resource: h.sub_resource.clone(),
            name: h.name.clone(),
            namespace: h.namespace.clone(),
            operation: h.operation,
            user_info: h.user_info.clone(),
            object: Object::None,
            old_object: h.old_object,
            dry_run: h.dry_run,
        };
        header.object = match WorkloadKind::of(&header.kind.group, &header.kind.kind) {
            _ if object.trim() == "null" => Object::None,
            Some(kind) => Object::Workload(Box::new(Workload::parse(kind, object)?)),
            None => match serde_json::from_str::<&RawValue>(object) {
                Ok(raw) => Object::Raw(raw),
                Err(e) => return Err(explain(object, &e, "the object")),
            },
        };
        Ok(Request { header, source: Some((object, &[])) })
    }

    /// The parsed header fields.
    pub fn admission(&self) -> &AdmissionRequest<'a> {
        &self.header
    }

    /// The operation.
    pub fn operation(&self) -> Operation {
        self.header.operation
    }

    /// Group, version and kind of the object.
    pub fn kind(&self) -> &GroupVersionKind<'a> {
        &self.header.kind
    }

    /// The namespace, if namespaced.
    pub fn namespace(&self) -> Option<&str> {
        self.header.namespace.as_deref()
    }

    /// The object's name (for `CONNECT`, the pod's).
    pub fn name(&self) -> Option<&str> {
        self.header.name.as_deref()
    }

    /// The subresource (`exec`, `attach`, `portforward`), if any.
    pub fn sub_resource(&self) -> Option<&str> {
        self.header.sub_resource.as_deref()
    }

    /// The resource (`pods`, `deployments`).
    pub fn resource(&self) -> &GroupVersionResource<'a> {
        &self.header.resource
    }

    /// The requesting user.
    pub fn user(&self) -> &UserInfo<'a> {
        &self.header.user_info
    }

    /// The object as a workload, if it is one of the supported workload kinds
    /// (see [`crate::WorkloadKind`]); `None` for other kinds and for requests
    /// without an object (DELETE).
    pub fn workload(&self) -> Option<&Workload<'a>> {
        match &self.header.object {
            Object::Workload(w) => Some(w),
            _ => None,
        }
    }

    /// Whether the request carries an object.
    pub fn has_object(&self) -> bool {
        !matches!(self.header.object, Object::None)
    }

    /// The object's JSON text, found in the request text (for mutation).
    pub fn object_text(&self) -> Option<&'a str> {
        match &self.header.object {
            Object::None => None,
            Object::Raw(raw) | Object::Pending(raw) => Some(raw.get()),
            Object::Workload(_) => {
                let (text, path) = self.source?;
                let mut p = Path::root();
                for k in path {
                    p = p.key(k);
                }
                json::find(text, &p)
            }
        }
    }

    /// The old object's JSON text (UPDATE, DELETE), if any.
    pub fn old_object_text(&self) -> Option<&'a str> {
        self.header.old_object.map(RawValue::get).filter(|t| t.trim() != "null")
    }

    /// Decodes the object into a rule-specific model `T`, e.g. the options
    /// of a `CONNECT` request. `Ok(None)` when there is no object; for
    /// workload kinds use [`Request::workload`].
    pub fn object_as<T: Deserialize<'a>>(&self, what: &str) -> Result<Option<T>, Malformed> {
        match &self.header.object {
            Object::Raw(raw) | Object::Pending(raw) => decode(raw.get(), what).map(Some),
            Object::None => Ok(None),
            Object::Workload(_) => match self.object_text() {
                Some(text) => decode(text, what).map(Some),
                None => Ok(None),
            },
        }
    }

    /// Whether the object is being deleted (`metadata.deletionTimestamp` is
    /// set): an UPDATE of it only removes finalizers.
    pub fn being_deleted(&self) -> bool {
        match &self.header.object {
            Object::Workload(w) => w.metadata.being_deleted,
            Object::Raw(raw) | Object::Pending(raw) => serde_json::from_str::<MetaOnly<'_>>(raw.get())
                .ok()
                .and_then(|o| o.metadata)
                .is_some_and(|m| m.being_deleted),
            Object::None => false,
        }
    }
}

#[derive(Deserialize)]
struct MetaOnly<'a> {
    #[serde(borrow, default)]
    metadata: Option<crate::pod::ObjectMeta<'a>>,
}

/// The options object of a `CONNECT` request (`PodExecOptions`,
/// `PodAttachOptions`, `PodPortForwardOptions`): the fields any of them has.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct ConnectOptions<'a> {
    /// Target container.
    #[serde(borrow, default)]
    pub container: Option<Str<'a>>,
    /// Command to run (exec only).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub command: Vec<Str<'a>>,
    /// Whether a TTY is requested.
    #[serde(default)]
    pub tty: bool,
    /// Whether stdin is attached.
    #[serde(default)]
    pub stdin: bool,
    /// Forwarded ports (portforward only).
    #[serde(default, deserialize_with = "nullable")]
    pub ports: Vec<i64>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn header_fields_borrow_and_the_object_is_decoded_in_the_same_pass() {
        let json = r#"{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},
            "resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml",
            "operation":"CREATE","userInfo":{"username":"alice","groups":["g1"],"extra":{"x":["y"]}},
            "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}},"oldObject":null,"options":{}}"#;
        let req = Request::parse(json).unwrap();
        assert_eq!(req.operation(), Operation::Create);
        assert_eq!(req.namespace(), Some("ml"));
        assert_eq!(req.user().username, "alice");
        assert!(matches!(req.user().username.0, Cow::Borrowed(_)));
        assert!(matches!(req.user().groups[0].0, Cow::Borrowed(_)), "borrows inside lists too");
        assert_eq!(req.workload().unwrap().metadata.name.as_deref(), Some("p"));
        assert_eq!(req.object_text(), Some(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#));
        assert_eq!(req.old_object_text(), None);
    }

    #[test]
    fn an_object_before_its_kind_is_decoded_afterwards() {
        let json = r#"{"object":{"metadata":{"name":"late"}},"operation":"CREATE","kind":{"group":"apps","version":"v1","kind":"Deployment"}}"#;
        let req = Request::parse(json).unwrap();
        assert_eq!(req.workload().unwrap().metadata.name.as_deref(), Some("late"));
        let bad = r#"{"object":{"spec":{"replicas":"x"}},"operation":"CREATE","kind":{"group":"apps","version":"v1","kind":"Deployment"}}"#;
        let e = Request::parse(bad).unwrap_err();
        assert_eq!(e.0, "the Deployment is malformed: `spec.replicas`: invalid type: string \"x\", expected a whole number");
    }

    #[test]
    fn malformed_fields_are_named() {
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"CREATE","userInfo":{"groups":"x"}}"#).unwrap_err();
        assert_eq!(
            e.0,
            "the admission request is malformed: `userInfo.groups`: invalid type: string \"x\", expected a list"
        );
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"PATCH"}"#).unwrap_err();
        assert!(e.0.contains("`operation`: unknown variant `PATCH`"), "{e}");
        let e = Request::parse("{not json").unwrap_err();
        assert!(e.0.contains("key must be a string at line 1 column 2"), "{e}");
        let e = Request::parse(r#"{"operation":"CREATE"}"#).unwrap_err();
        assert!(e.0.contains("missing field `kind`"), "{e}");
        let e = Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":{}}}}"#).unwrap_err();
        assert_eq!(e.0, "the Pod is malformed: `spec.containers`: invalid type: object, expected a list");
        let e = Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":"x"}}"#).unwrap_err();
        assert_eq!(e.0, "the Pod is malformed: `spec`: invalid type: string \"x\", expected an object");
    }

    #[test]
    fn delete_has_no_workload() {
        let json = r#"{"kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"DELETE","object":null,"oldObject":{"metadata":{}}}"#;
        let req = Request::parse(json).unwrap();
        assert!(req.workload().is_none());
        assert!(!req.has_object());
        assert_eq!(req.old_object_text(), Some(r#"{"metadata":{}}"#));
    }

    #[test]
    fn other_kinds_stay_raw() {
        let json = r#"{"kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"UPDATE","object":{"metadata":{"deletionTimestamp":"x"},"spec":"anything"}}"#;
        let req = Request::parse(json).unwrap();
        assert!(req.workload().is_none());
        assert!(req.being_deleted());
        assert_eq!(req.object_text(), Some(r#"{"metadata":{"deletionTimestamp":"x"},"spec":"anything"}"#));
    }

    #[test]
    fn friendly_words() {
        assert_eq!(friendly("invalid type: map, expected struct PodSpec"), "invalid type: object, expected an object");
        assert_eq!(friendly("expected u32"), "expected a whole number, zero or more");
        assert_eq!(friendly("invalid type: null, expected enum Mode"), "invalid type: null, expected an object");
    }
}
