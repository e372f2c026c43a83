//! The admission request, as rules see it.
//!
//! Parsing is sparse and borrowed: only the fields rules read are decoded,
//! strings borrow from the request bytes unless they contain escapes, and the
//! object stays a raw JSON slice until a rule asks for it. The object is then
//! decoded once, into the model of its kind ([`Request::workload`]).

use std::borrow::{Borrow, Cow};
use std::cell::OnceCell;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::workload::{self, Workload};

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
pub struct UserInfo<'a> {
    /// User name (`jane@example.com`, `system:serviceaccount:ns:sa`).
    #[serde(borrow, default)]
    pub username: Str<'a>,
    /// Groups the user belongs to.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub groups: Vec<Str<'a>>,
}

/// An `admission.k8s.io/v1` `AdmissionRequest`, reduced to what rules read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest<'a> {
    /// Request identifier.
    #[serde(borrow, default)]
    pub uid: Str<'a>,
    /// Kind of the object (for `CONNECT`, the options kind, e.g. `PodExecOptions`).
    #[serde(borrow)]
    pub kind: GroupVersionKind<'a>,
    /// Resource being requested.
    #[serde(borrow, default)]
    pub resource: GroupVersionResource<'a>,
    /// Subresource (`exec`, `attach`, `status`), if any.
    #[serde(borrow, default)]
    pub sub_resource: Option<Str<'a>>,
    /// Name of the object (for `CONNECT`, the pod).
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    /// Namespace of the object.
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    /// Operation.
    pub operation: Operation,
    /// Requesting user.
    #[serde(borrow, default)]
    pub user_info: UserInfo<'a>,
    /// The new object (absent on DELETE), undecoded.
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
    /// Whether this is a dry run.
    #[serde(default)]
    pub dry_run: Option<bool>,
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

/// Decodes borrowed JSON into `T`. On failure, decodes again with path
/// tracking, so the message names the field (`spec.template.spec.containers:
/// invalid type ...`) instead of a byte offset. The slow path only runs on
/// malformed input.
pub(crate) fn decode<'a, T: Deserialize<'a>>(json: &'a str, what: &str) -> Result<T, Malformed> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(_) => {
            let mut de = serde_json::Deserializer::from_str(json);
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Ok(v) => Ok(v),
                Err(e) => Err(Malformed(describe(what, &e.path().to_string(), e.inner()))),
            }
        }
    }
}

fn describe(what: &str, path: &str, err: &serde_json::Error) -> String {
    let mut msg = err.to_string();
    // The byte position is noise for the field errors; keep it for syntax errors.
    if !err.is_syntax()
        && !err.is_eof()
        && let Some(i) = msg.find(" at line ")
    {
        msg.truncate(i);
    }
    if path.is_empty() || path == "." {
        format!("{what} is malformed: {msg}")
    } else {
        format!("{what} is malformed: `{path}`: {msg}")
    }
}

/// One admission request, ready for rules: the parsed header, and the object
/// decoded on first use into the model of its kind.
pub struct Request<'a> {
    raw: AdmissionRequest<'a>,
    workload: OnceCell<Result<Option<Workload<'a>>, Malformed>>,
}

impl<'a> Request<'a> {
    /// Parses an `AdmissionRequest` JSON document.
    pub fn parse(json: &'a str) -> Result<Request<'a>, Malformed> {
        Ok(Request::new(decode(json, "the admission request")?))
    }

    /// Wraps an already parsed request.
    pub fn new(raw: AdmissionRequest<'a>) -> Request<'a> {
        Request {
            raw,
            workload: OnceCell::new(),
        }
    }

    /// The parsed header fields.
    pub fn admission(&self) -> &AdmissionRequest<'a> {
        &self.raw
    }

    /// The operation.
    pub fn operation(&self) -> Operation {
        self.raw.operation
    }

    /// Group, version and kind of the object.
    pub fn kind(&self) -> &GroupVersionKind<'a> {
        &self.raw.kind
    }

    /// The namespace, if namespaced.
    pub fn namespace(&self) -> Option<&str> {
        self.raw.namespace.as_deref()
    }

    /// The object's name (for `CONNECT`, the pod's).
    pub fn name(&self) -> Option<&str> {
        self.raw.name.as_deref()
    }

    /// The subresource (`exec`, `attach`, `portforward`), if any.
    pub fn sub_resource(&self) -> Option<&str> {
        self.raw.sub_resource.as_deref()
    }

    /// The resource (`pods`, `deployments`).
    pub fn resource(&self) -> &GroupVersionResource<'a> {
        &self.raw.resource
    }

    /// The requesting user.
    pub fn user(&self) -> &UserInfo<'a> {
        &self.raw.user_info
    }

    /// The raw object JSON, if the request carries one.
    pub fn object_json(&self) -> Option<&'a str> {
        self.raw.object.map(RawValue::get)
    }

    /// The object as a workload, if it is one of the supported workload kinds
    /// (see [`crate::WorkloadKind`]). `Ok(None)` for other kinds and for
    /// requests without an object (DELETE); `Err` if the object does not
    /// match its kind's schema. Decoded once, on first call.
    pub fn workload(&self) -> Result<Option<&Workload<'a>>, Malformed> {
        let cached = self.workload.get_or_init(|| {
            let Some(kind) = workload::WorkloadKind::of(&self.raw.kind.group, &self.raw.kind.kind)
            else {
                return Ok(None);
            };
            match self.object_json() {
                None => Ok(None),
                Some(json) if json.trim() == "null" => Ok(None),
                Some(json) => Workload::parse(kind, json).map(Some),
            }
        });
        match cached {
            Ok(w) => Ok(w.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Decodes the object into a rule-specific model `T`, e.g. the options of
    /// a `CONNECT` request. `Ok(None)` when there is no object.
    pub fn object_as<T: Deserialize<'a>>(&self, what: &str) -> Result<Option<T>, Malformed> {
        match self.object_json() {
            None => Ok(None),
            Some(json) if json.trim() == "null" => Ok(None),
            Some(json) => decode(json, what).map(Some),
        }
    }
}

/// The options object of a `CONNECT` request (`PodExecOptions`,
/// `PodAttachOptions`, `PodPortForwardOptions`): the fields any of them has.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    fn header_fields_borrow_and_object_stays_raw() {
        let json = r#"{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},
            "resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml",
            "operation":"CREATE","userInfo":{"username":"alice","groups":["g1"],"extra":{"x":["y"]}},
            "object":{"apiVersion":"v1","kind":"Pod"},"oldObject":null,"options":{}}"#;
        let req = Request::parse(json).unwrap();
        assert_eq!(req.operation(), Operation::Create);
        assert_eq!(req.namespace(), Some("ml"));
        assert_eq!(req.user().username, "alice");
        assert!(matches!(req.user().username.0, Cow::Borrowed(_)));
        assert!(matches!(req.user().groups[0].0, Cow::Borrowed(_)), "borrows inside lists too");
        assert_eq!(req.object_json(), Some(r#"{"apiVersion":"v1","kind":"Pod"}"#));
    }

    #[test]
    fn malformed_fields_are_named() {
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"CREATE","userInfo":{"groups":"x"}}"#)
            .err()
            .expect("wrong type must be refused");
        assert_eq!(
            e.0,
            "the admission request is malformed: `userInfo.groups`: invalid type: string \"x\", expected a sequence"
        );
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"PATCH"}"#).err().unwrap();
        assert!(e.0.contains("`operation`: unknown variant `PATCH`"), "{e}");
        let e = Request::parse("{not json").err().unwrap();
        assert!(e.0.contains("key must be a string at line 1 column 2"), "{e}");
        let e = Request::parse(r#"{"operation":"CREATE"}"#).err().unwrap();
        assert!(e.0.contains("missing field `kind`"), "{e}");
    }

    #[test]
    fn delete_has_no_workload() {
        let json = r#"{"kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"DELETE","object":null}"#;
        let req = Request::parse(json).unwrap();
        assert!(req.workload().unwrap().is_none());
    }

    #[test]
    fn unknown_kinds_are_not_decoded() {
        let json = r#"{"kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","object":{"spec":"anything"}}"#;
        let req = Request::parse(json).unwrap();
        assert!(req.workload().unwrap().is_none());
    }
}
