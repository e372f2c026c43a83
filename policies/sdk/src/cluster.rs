//! Cluster lookups for context-aware rules.
//!
//! The same trait is served by Kubewarden's `kubernetes` waPC host calls in
//! the module, by the WIT `cluster` import in the component, and by the
//! harness's fixtures natively. Lookups return raw JSON; rules decode what
//! they need (for example with [`crate::Workload::parse`]).

use std::fmt;

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
            LookupError::NotFound(m)
            | LookupError::Forbidden(m)
            | LookupError::Invalid(m)
            | LookupError::Unavailable(m) => m,
        }
    }

    /// The tag a waPC host puts before the message to carry the kind
    /// (`not-found: ...`); hosts that send no tag give `Unavailable`.
    pub fn tag(&self) -> &'static str {
        match self {
            LookupError::NotFound(_) => "not-found",
            LookupError::Forbidden(_) => "forbidden",
            LookupError::Invalid(_) => "invalid",
            LookupError::Unavailable(_) => "unavailable",
        }
    }

    /// Reads a waPC host error: `tag: message`, or an untagged message.
    pub fn from_tagged(text: &str) -> LookupError {
        let (tag, rest) = text.split_once(": ").unwrap_or(("", text));
        match tag {
            "not-found" => LookupError::NotFound(rest.to_string()),
            "forbidden" => LookupError::Forbidden(rest.to_string()),
            "invalid" => LookupError::Invalid(rest.to_string()),
            "unavailable" => LookupError::Unavailable(rest.to_string()),
            _ => LookupError::Unavailable(text.to_string()),
        }
    }

    /// The first line of the explanation: hosts may return long texts,
    /// stack traces included, which a person reading a denial does not need.
    pub fn first_line(&self) -> &str {
        first_line(self.message())
    }

    /// `tag: message`, as a waPC host sends it.
    pub fn to_tagged(&self) -> String {
        format!("{}: {}", self.tag(), self.message())
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for LookupError {}

/// The items of a `List` a lookup returned, each as JSON text (decode a
/// Pod with [`crate::Workload::parse`], any object's metadata with
/// [`object_meta`]).
pub fn list_items(list: &str) -> Result<Vec<&str>, crate::Malformed> {
    list_of(list, "the cluster's list", |d| d.raw())
}

/// The Pods of a `List` a lookup returned, each decoded in the same pass
/// as the list, with the slim model of [`crate::listed`] (metadata, phase,
/// containers' resources; the rest skipped): one reading of a namespace's
/// pods, where [`list_items`] and then [`crate::Workload::parse`] of each
/// item read every pod twice, in full. A rule that counts what every
/// listed pod holds wants this; one that reads more of a few pods wants
/// `list_items`.
pub fn list_pods(list: &str) -> Result<Vec<crate::listed::ListedPod<'_>>, crate::Malformed> {
    list_of(list, "the cluster's list of Pods", crate::dec::Decode::decode)
}

/// Each element of a `List`'s `items`, read by `item` as the list goes by;
/// `what` names the list in an error.
fn list_of<'a, T>(list: &'a str, what: &str, mut item: impl FnMut(&mut crate::dec::Dec<'a>) -> crate::dec::R<T>) -> Result<Vec<T>, crate::Malformed> {
    let mut items = Vec::new();
    let mut d = crate::dec::Dec::new(list);
    let decoded = d
        .object(|d, key| {
            if &*key == "items" {
                d.list(|d| {
                    items.push(item(d)?);
                    Ok(())
                })
            } else {
                d.skip()
            }
        })
        .and_then(|()| d.end());
    decoded.map_err(|e| crate::request::explain(list, &e, what))?;
    Ok(items)
}

/// The metadata of an object a lookup returned (a Namespace's labels, a
/// ResourceQuota's name).
pub fn object_meta<'a>(json: &'a str, what: &str) -> Result<crate::ObjectMeta<'a>, crate::Malformed> {
    let mut meta = crate::ObjectMeta::default();
    let mut d = crate::dec::Dec::new(json);
    let decoded = d
        .object(|d, key| {
            if &*key == "metadata" {
                meta = crate::dec::Decode::decode(d)?;
                Ok(())
            } else {
                d.skip()
            }
        })
        .and_then(|()| d.end());
    decoded.map_err(|e| crate::request::explain(json, &e, what))?;
    Ok(meta)
}

/// The first non-empty line of `text`, trimmed.
pub fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

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

/// Read-only access to cluster state.
pub trait Cluster {
    /// One object as JSON. `api_version` is `v1` or `group/version`; `kind`
    /// is singular PascalCase; `namespace` is `None` for cluster-scoped kinds.
    fn get_resource(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<String, LookupError>;

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
}

/// A cluster that answers nothing: for hosts without lookups.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCluster;

const NO_CLUSTER: &str = "this host serves no cluster lookups";

impl Cluster for NoCluster {
    fn get_resource(&self, _: &str, _: &str, _: &str, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
    fn list_resources_by_namespace(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: Option<&str>,
    ) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
    fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Unavailable(NO_CLUSTER.into()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn tags_round_trip_and_untagged_text_is_unavailable() {
        for e in [
            LookupError::NotFound("pod `a/b` not found".into()),
            LookupError::Forbidden("x".into()),
            LookupError::Invalid("y: z".into()),
            LookupError::Unavailable("down".into()),
        ] {
            assert_eq!(LookupError::from_tagged(&e.to_tagged()), e);
        }
        assert_eq!(
            LookupError::from_tagged("Cannot find v1/Pod named 'x'"),
            LookupError::Unavailable("Cannot find v1/Pod named 'x'".into())
        );
    }

    #[test]
    fn lists_and_metadata() {
        let items = list_items(r#"{"kind":"List","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","labels":{"t":"x"}}}]}"#).unwrap();
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
        let gpus = crate::GpuResources::default();
        let pods = list_pods(list).unwrap();
        let items = list_items(list).unwrap();
        assert_eq!(pods.len(), 3);
        assert_eq!(items.len(), 3);
        for (pod, item) in pods.iter().zip(&items) {
            let parsed = crate::Workload::parse(crate::WorkloadKind::Pod, item).unwrap();
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

    #[test]
    fn first_lines() {
        assert_eq!(first_line("\n  boom: forbidden\n  at frame 1\n  at frame 2"), "boom: forbidden");
        assert_eq!(LookupError::Unavailable("a\nb".into()).first_line(), "a");
        assert_eq!(first_line(""), "");
    }
}
