//! Reading and writing the JSON objects controllers build, with no
//! panicking access: a missing or mistyped field reads as absent.

use serde_json::{Map, Value, json};

/// The value at `path` (object keys) below `v`.
pub(crate) fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

/// The string at `path`, if it is one.
pub(crate) fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    at(v, path).and_then(Value::as_str)
}

/// The integer at `path`, if it is one.
pub(crate) fn int_at(v: &Value, path: &[&str]) -> Option<i64> {
    at(v, path).and_then(Value::as_i64)
}

/// The list at `path`; empty when absent.
pub(crate) fn list_at<'v>(v: &'v Value, path: &[&str]) -> &'v [Value] {
    at(v, path).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The map at `path`; empty when absent.
pub(crate) fn map_at(v: &Value, path: &[&str]) -> Map<String, Value> {
    at(v, path).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The object at `path` below `v`, created (replacing anything that is not
/// an object) on the way.
pub(crate) fn object_mut<'v>(v: &'v mut Value, path: &[&str]) -> &'v mut Map<String, Value> {
    let mut v = v;
    for k in path {
        if !v.is_object() {
            *v = Value::Object(Map::new());
        }
        let Value::Object(m) = v else { unreachable_object() };
        v = m.entry((*k).to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable_object(),
    }
}

/// The value at `path` below `v`, created (as an empty object) on the way.
pub(crate) fn value_mut<'v>(v: &'v mut Value, path: &[&str]) -> &'v mut Value {
    let Some((last, parents)) = path.split_last() else { return v };
    object_mut(v, parents).entry((*last).to_string()).or_insert_with(|| Value::Object(Map::new()))
}

/// The list at `path` below `v`, created on the way.
pub(crate) fn list_mut<'v>(v: &'v mut Value, path: &[&str]) -> &'v mut Vec<Value> {
    let Some((last, parents)) = path.split_last() else { unreachable_object() };
    let parent = object_mut(v, parents);
    let slot = parent.entry((*last).to_string()).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    match slot {
        Value::Array(a) => a,
        _ => unreachable_object(),
    }
}

/// Sets `path` to `value`, creating the objects on the way.
pub(crate) fn set(v: &mut Value, path: &[&str], value: Value) {
    if let Some((last, parents)) = path.split_last() {
        object_mut(v, parents).insert((*last).to_string(), value);
    }
}

/// Sets `path` to `value` unless something is there already.
pub(crate) fn set_default(v: &mut Value, path: &[&str], value: Value) {
    if let Some((last, parents)) = path.split_last() {
        object_mut(v, parents).entry((*last).to_string()).or_insert(value);
    }
}

/// `object_mut` made `v` an object just before matching it.
#[allow(clippy::panic)]
fn unreachable_object() -> ! {
    panic!("a value just made an object is not one")
}

/// The object a controller builds from, with the namespace it is in.
pub(crate) struct Object<'v> {
    pub(crate) value: &'v Value,
    pub(crate) namespace: &'v str,
}

impl<'v> Object<'v> {
    pub(crate) fn of(value: &'v Value, namespace: &'v str) -> Object<'v> {
        Object { value, namespace }
    }

    /// `apiVersion`.
    pub(crate) fn api_version(&self) -> &'v str {
        str_at(self.value, &["apiVersion"]).unwrap_or_default()
    }

    /// The API group (`""` for the core group).
    pub(crate) fn group(&self) -> &'v str {
        self.api_version().rsplit_once('/').map_or("", |(g, _)| g)
    }

    /// `kind`.
    pub(crate) fn kind(&self) -> &'v str {
        str_at(self.value, &["kind"]).unwrap_or_default()
    }

    /// The object's name: `metadata.name`, else the name the API server
    /// makes of `generateName` (five characters appended), else `unnamed`.
    pub(crate) fn name(&self) -> String {
        match (str_at(self.value, &["metadata", "name"]), str_at(self.value, &["metadata", "generateName"])) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some(g)) if !g.is_empty() => generated(g),
            _ => "unnamed".to_string(),
        }
    }

    /// `metadata.uid`, else one made up from the kind and name (objects in
    /// case files have none; owner references need one).
    pub(crate) fn uid(&self) -> String {
        match str_at(self.value, &["metadata", "uid"]) {
            Some(u) if !u.is_empty() => u.to_string(),
            _ => format!("uid-of-{}-{}", self.kind().to_ascii_lowercase(), self.name()),
        }
    }

    /// `metadata.labels`.
    pub(crate) fn labels(&self) -> Map<String, Value> {
        map_at(self.value, &["metadata", "labels"])
    }

    /// `metadata.annotations`.
    pub(crate) fn annotations(&self) -> Map<String, Value> {
        map_at(self.value, &["metadata", "annotations"])
    }

    /// The field at `path`.
    pub(crate) fn at(&self, path: &[&str]) -> Option<&'v Value> {
        at(self.value, path)
    }

    /// The controller owner reference its children carry
    /// (`metav1.NewControllerRef`).
    pub(crate) fn controller_ref(&self) -> Value {
        json!({
            "apiVersion": self.api_version(),
            "kind": self.kind(),
            "name": self.name(),
            "uid": self.uid(),
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }

    /// `` Deployment `train` ``, for lineages.
    pub(crate) fn describe(&self) -> String {
        format!("{} `{}`", self.kind(), self.name())
    }
}

/// The name the API server gives an object with `generateName: prefix`:
/// the prefix cut to 58 characters and five random ones (here fixed, so
/// that children are the same from one run to the next).
pub(crate) fn generated(prefix: &str) -> String {
    let cut: String = prefix.chars().take(58).collect();
    format!("{cut}x7k2p")
}

/// `value` as a JSON string.
pub(crate) fn s(value: impl Into<String>) -> Value {
    Value::String(value.into())
}

/// Adds `extra` to the labels or annotations `base`, `extra` winning.
pub(crate) fn merged(mut base: Map<String, Value>, extra: &[(&str, String)]) -> Map<String, Value> {
    for (k, v) in extra {
        base.insert((*k).to_string(), s(v.clone()));
    }
    base
}
