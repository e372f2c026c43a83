//! The admission request, as rules see it.
//!
//! Decoding is one pass over the request text: the header fields rules read
//! are decoded borrowed, and the object is decoded straight into the
//! workload model of its kind (the API server sends `kind` before `object`;
//! when a request does not, the object is kept as raw text and decoded once
//! the kind is known). Everything else is skipped unread. On malformed input
//! the error names the field ([`explain`]), found by walking the text to
//! where serde stopped, so the happy path carries no path tracking.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::Deserialize;

use crate::base::error::Malformed;
use crate::base::glob::{Glob, any_match};
use crate::decode::dec::{Dec, DecError, Decode, R, Str, nullable};
use crate::decode::explain::{decode, explain, locate};
use crate::decode::json;
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::OwnerReference;
use crate::model::trust::TrustedControllers;
use crate::model::workload::{Workload, decode_workload};

/// The admission operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Creation.
    Create,
    /// Update.
    Update,
    /// Deletion.
    Delete,
    /// `exec`, `attach`, `portforward` and other connect subresources.
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

impl<'a> Decode<'a> for Operation {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let at = d.offset();
        let s = d.string()?;
        match &*s {
            "CREATE" => Ok(Operation::Create),
            "UPDATE" => Ok(Operation::Update),
            "DELETE" => Ok(Operation::Delete),
            "CONNECT" => Ok(Operation::Connect),
            other => {
                Err(d.invalid_value(at, format!("unknown variant `{other}`, expected one of `CREATE`, `UPDATE`, `DELETE`, `CONNECT`")))
            }
        }
    }
}

/// Group, version and kind (`apps`, `v1`, `Deployment`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupVersionKind<'a> {
    /// API group; empty for the core group.
    pub group: Str<'a>,
    /// API version.
    pub version: Str<'a>,
    /// Kind.
    pub kind: Str<'a>,
}

/// Group, version and resource (`apps`, `v1`, `deployments`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupVersionResource<'a> {
    /// API group; empty for the core group.
    pub group: Str<'a>,
    /// API version.
    pub version: Str<'a>,
    /// Plural resource name.
    pub resource: Str<'a>,
}

/// Who sent the request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo<'a> {
    /// User name (`jane@example.com`, `system:serviceaccount:ns:sa`).
    pub username: Str<'a>,
    /// Groups the user belongs to.
    pub groups: Vec<Str<'a>>,
}

decode_struct!(GroupVersionKind { "group" => group, "version" => version, "kind" => kind });
decode_struct!(GroupVersionResource { "group" => group, "version" => version, "resource" => resource });
decode_struct!(UserInfo { "username" => username, "groups" => groups });

/// The request's object, as decoded.
#[derive(Clone, Debug, Default)]
pub enum Object<'a> {
    /// No object (`DELETE`), or `null`.
    #[default]
    None,
    /// A workload kind, decoded into the workload model, with its text (for
    /// a mutating rule's edits: the decoder notes where the object ends as it
    /// passes, so it is never searched for).
    Workload(Box<Workload<'a>>, &'a str),
    /// Another kind (a `CONNECT` request's options, a Namespace, ...), kept
    /// as text for rules that decode it themselves ([`Request::object_as`]).
    Raw(&'a str),
    /// A workload kind sent before its `kind`: decoded once the kind is
    /// known ([`Request::from_admission`]).
    Pending(&'a str),
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
    pub old_object: Option<&'a str>,
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

/// Decodes an AdmissionRequest at the decoder's cursor, in one pass: the
/// object of a wanted workload kind straight into the workload model when
/// `kind` came first (the API server sends it first), kept as text to decode
/// afterwards when it did not.
pub fn decode_request<'a>(d: &mut Dec<'a>, wants: Wants<'_>) -> R<AdmissionRequest<'a>> {
    let mut uid = Str::default();
    let mut kind: Option<GroupVersionKind<'a>> = None;
    let mut resource = GroupVersionResource::default();
    let mut sub_resource = None;
    let mut name = None;
    let mut namespace = None;
    let mut operation = None;
    let mut user_info = UserInfo::default();
    let mut object = Object::None;
    let mut old_object = None;
    let mut dry_run = None;
    let start = d.offset();
    if d.peek() != Some(b'{') {
        return Err(d.invalid_type("an AdmissionRequest object"));
    }
    d.object(|d, key| {
        match &*key {
            "uid" => uid = Option::<Str<'a>>::decode(d)?.unwrap_or_default(),
            "kind" => kind = Some(Decode::decode(d)?),
            "resource" => resource = Decode::decode(d)?,
            "subResource" => sub_resource = Decode::decode(d)?,
            "name" => name = Decode::decode(d)?,
            "namespace" => namespace = Decode::decode(d)?,
            "operation" => operation = Some(Decode::decode(d)?),
            "userInfo" => user_info = Decode::decode(d)?,
            "dryRun" => dry_run = Decode::decode(d)?,
            "oldObject" => old_object = Some(d.raw()?).filter(|t| *t != "null"),
            "object" => {
                object = match kind.as_ref().map(|k| WorkloadKind::of(&k.group, &k.kind).filter(|wk| wants(*wk))) {
                    Some(Some(wk)) if !d.null() => {
                        let from = d.offset();
                        let w = decode_workload(wk, d)?;
                        Object::Workload(Box::new(w), d.since(from))
                    }
                    Some(Some(_)) => Object::None,
                    Some(None) => raw(d.raw()?, Object::Raw),
                    None => raw(d.raw()?, Object::Pending),
                };
            }
            _ => d.skip()?,
        }
        Ok(())
    })?;
    let missing = |field: &str| DecError { message: format!("missing field `{field}`"), at: start, syntax: false };
    Ok(AdmissionRequest {
        uid,
        kind: kind.ok_or_else(|| missing("kind"))?,
        resource,
        sub_resource,
        name,
        namespace,
        operation: operation.ok_or_else(|| missing("operation"))?,
        user_info,
        object,
        old_object,
        dry_run,
    })
}

fn raw<'a>(text: &'a str, wrap: fn(&'a str) -> Object<'a>) -> Object<'a> {
    if text == "null" { Object::None } else { wrap(text) }
}

/// Explains an error in a whole request (or a waPC payload, whose request is
/// under `request`): an error inside the object is reported against the
/// object's kind (`the Pod is malformed: `spec.containers``), others against
/// the request.
pub(crate) fn explain_request(text: &str, err: &DecError, prefix: &[&str]) -> Malformed {
    let (path, msg) = locate(text, err);
    let in_request =
        path.0.len() >= prefix.len() && path.0.iter().zip(prefix).all(|(s, p)| matches!(s, crate::decode::path::Seg::Key(k) if k == p));
    let rest = Path(path.0.get(prefix.len()..).unwrap_or_default().to_vec());
    let (what, field) = match rest.0.split_first() {
        Some((crate::decode::path::Seg::Key(k), inner)) if in_request && k == "object" => {
            (format!("the {}", object_kind(text, prefix)), Path(inner.to_vec()))
        }
        _ if in_request && !prefix.is_empty() => ("the admission request".to_string(), rest),
        _ if prefix.is_empty() => ("the admission request".to_string(), path),
        _ => ("the validation request".to_string(), path),
    };
    Malformed(if field.is_root() { format!("{what} is malformed: {msg}") } else { format!("{what} is malformed: `{field}`: {msg}") })
}

/// The object's kind name, read from the request's `kind` (`Pod`), for
/// messages; `object` if it cannot be read.
fn object_kind(text: &str, prefix: &[&str]) -> String {
    json::find(text, &Path::root().keys(prefix).keys(&["kind", "kind"]))
        .and_then(|k| Dec::document::<Str<'_>>(k).ok())
        .filter(|k| !k.is_empty())
        .map_or_else(|| "object".into(), |k| k.to_string())
}

/// One admission request, ready for rules: the header, and the object
/// decoded into the model of its kind.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    header: AdmissionRequest<'a>,
    /// The shared `exemptImages` of the rule evaluating the request (set
    /// by the runtime before the rule runs).
    exempt_images: RefCell<Option<Rc<[Glob]>>>,
    /// Container names left alone as exempt images are: those of an
    /// exception scoped to containers, while the runtime finds what it
    /// excuses ([`crate::runtime::exceptions`]).
    exempt_names: RefCell<Option<Rc<[Glob]>>>,
    /// The shared `trustedControllers` of the rule evaluating the request
    /// (set by the runtime before the rule runs).
    trusted: RefCell<TrustedControllers>,
    /// The shared `gpuDeviceClasses` of the rule evaluating the request
    /// (set by the runtime before the rule runs; `None`: the defaults).
    gpu_device_classes: RefCell<Option<Rc<[Glob]>>>,
    /// [`Request::controller`] for those, once asked: the owner
    /// reference's index.
    controller: Cell<Option<Option<usize>>>,
}

impl<'a> Request<'a> {
    /// Parses an `AdmissionRequest` JSON document.
    pub fn parse(json: &'a str) -> Result<Request<'a>, Malformed> {
        Request::parse_for(json, &all_kinds)
    }

    /// Parses an `AdmissionRequest` JSON document, decoding the object only
    /// if it is one of the workload kinds `wants` names.
    pub fn parse_for(json: &'a str, wants: Wants<'_>) -> Result<Request<'a>, Malformed> {
        let mut d = Dec::new(json);
        match decode_request(&mut d, wants).and_then(|r| d.end().map(|()| r)) {
            Ok(r) => Request::from_admission(r, wants),
            Err(e) => Err(explain_request(json, &e, &[])),
        }
    }

    /// Wraps a decoded request, decoding an object that came before its
    /// kind.
    pub fn from_admission(mut header: AdmissionRequest<'a>, wants: Wants<'_>) -> Result<Request<'a>, Malformed> {
        if let Object::Pending(raw) = header.object {
            header.object = match WorkloadKind::of(&header.kind.group, &header.kind.kind).filter(|k| wants(*k)) {
                Some(kind) => Object::Workload(Box::new(Workload::parse(kind, raw)?), raw),
                None => Object::Raw(raw),
            };
        }
        Ok(Request {
            header,
            exempt_images: RefCell::default(),
            exempt_names: RefCell::default(),
            trusted: RefCell::default(),
            gpu_device_classes: RefCell::default(),
            controller: Cell::default(),
        })
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
        // The document's value, without the JSON whitespace around it.
        let value = object.trim_matches(crate::decode::dec::WHITESPACE);
        header.object = match WorkloadKind::of(&header.kind.group, &header.kind.kind) {
            _ if value == "null" => Object::None,
            Some(kind) => Object::Workload(Box::new(Workload::parse(kind, object)?), value),
            None => match Dec::document::<crate::decode::dec::Skip>(object) {
                Ok(_) => Object::Raw(value),
                Err(e) => return Err(explain(object, &e, "the object")),
            },
        };
        Ok(Request {
            header,
            exempt_images: self.exempt_images.clone(),
            exempt_names: self.exempt_names.clone(),
            trusted: self.trusted.clone(),
            gpu_device_classes: self.gpu_device_classes.clone(),
            controller: Cell::default(),
        })
    }

    /// Sets the images whose containers the rule about to run leaves alone
    /// (the shared `exemptImages`).
    pub fn set_exempt_images(&self, images: Option<Rc<[Glob]>>) {
        *self.exempt_images.borrow_mut() = images;
    }

    /// Sets the container names the rule about to run leaves alone as it
    /// leaves exempt images alone (an exception's `containers`).
    pub fn set_exempt_names(&self, names: Option<Rc<[Glob]>>) {
        *self.exempt_names.borrow_mut() = names;
    }

    /// Sets the DRA device classes whose devices are GPUs for the rule
    /// about to run (the shared `gpuDeviceClasses`; `None`: the defaults).
    pub fn set_gpu_device_classes(&self, classes: Option<Rc<[Glob]>>) {
        *self.gpu_device_classes.borrow_mut() = classes;
    }

    /// The shared `gpuDeviceClasses` set for the rule evaluating the
    /// request, `None` for the defaults (`cluster::gpu` reads them:
    /// `Request::gpu_classes`).
    pub fn gpu_device_classes_set(&self) -> Option<Rc<[Glob]>> {
        self.gpu_device_classes.borrow().clone()
    }

    /// Sets whom the rule about to run trusts as controllers (the shared
    /// `trustedControllers`).
    pub fn set_trusted_controllers(&self, trusted: TrustedControllers) {
        *self.trusted.borrow_mut() = trusted;
        self.controller.set(None);
    }

    /// The controller that made the request's object: its `controller:
    /// true` owner reference, when the request comes from a user the
    /// shared `trustedControllers` lists for that owner's kind. Anyone may
    /// write an owner reference; only the controller submits as itself, so
    /// a user's request is judged as the user's, whatever it says of its
    /// owner. See [`crate::model::trust`].
    pub fn controller(&self) -> Option<&OwnerReference<'a>> {
        let owners = &self.workload()?.metadata.owner_references;
        let at = match self.controller.get() {
            Some(at) => at,
            None => {
                let user = &self.header.user_info.username;
                let at = owners
                    .iter()
                    .position(|o| o.controller == Some(true))
                    .filter(|i| owners.get(*i).is_some_and(|o| self.trusted.borrow().trusts(user, o)));
                self.controller.set(Some(at));
                at
            }
        };
        owners.get(at?)
    }

    /// Whether the rule evaluating the request leaves a container with
    /// image `image` alone (the shared `exemptImages`). A rule that judges
    /// containers one by one asks this for each, and a rule that asks
    /// whether a pod holds GPUs asks it through `ExemptGpus` (a pod whose
    /// GPUs only exempt containers hold is left alone); a rule that counts
    /// what a whole pod holds (a GPU quota) does not, since the exempt
    /// container's share is still the pod's. Image names are chosen by
    /// whoever writes the object.
    pub fn exempt_image(&self, image: Option<&str>) -> bool {
        let images = self.exempt_images.borrow();
        match (images.as_deref(), image) {
            (Some(globs), Some(image)) => any_match(globs, image),
            _ => false,
        }
    }

    /// Whether container `c` of the request's Pod is one the platform
    /// adds from its own configuration, not from the template the Pod was
    /// made from: in a Pod a trusted controller made
    /// ([`Request::controller`]), the training operator's `init-pytorch`
    /// init container in a PyTorchJob's workers (`alpine:3.10` and no
    /// security context unless the operator's
    /// `--pytorch-init-container-template-file` says otherwise), and what
    /// KServe's pod webhook adds to an InferenceService's pods (the
    /// `storage-initializer` init container, the `agent` and `modelcar`
    /// containers) and Knative to a Revision's (`queue-proxy`). The rules
    /// that judge containers one by one leave these to the platform team
    /// that configures them: the author of the workload can change nothing
    /// of them, and the template the Pod came from was judged when its
    /// owner was. A container of the same name that the author wrote is in
    /// the owner's template, judged there.
    pub fn injected(&self, c: &crate::model::workload::ContainerRef<'_, '_>) -> bool {
        use crate::model::workload::ContainerList::{Containers, InitContainers};
        let Some(owner) = self.controller() else { return false };
        let Some(w) = self.workload().filter(|w| w.kind == WorkloadKind::Pod) else { return false };
        let labelled = |key: &str| w.metadata.labels.contains_key(key);
        match (c.list, &*c.container.name) {
            (InitContainers, "init-pytorch") => &*owner.kind == "PyTorchJob",
            (InitContainers, "storage-initializer") | (Containers, "agent" | "modelcar") => labelled("serving.kserve.io/inferenceservice"),
            (Containers, "queue-proxy") => labelled("serving.knative.dev/revision"),
            _ => false,
        }
    }

    /// Whether the rule leaves container `c` alone: its image is exempt
    /// ([`Request::exempt_container`]) or the platform added it
    /// ([`Request::injected`]).
    pub fn leaves_alone(&self, c: &crate::model::workload::ContainerRef<'_, '_>) -> bool {
        self.exempt_container(c.container) || self.injected(c)
    }

    /// [`Request::exempt_image`] of a container's image, or the
    /// container's name is one an exception scoped to containers names.
    pub fn exempt_container(&self, container: &crate::model::pod::Container<'_>) -> bool {
        self.exempt_image(container.image.as_deref())
            || self.exempt_names.borrow().as_deref().is_some_and(|names| any_match(names, &container.name))
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

    /// The namespace the request's object goes into: the request's, else
    /// the object's `metadata.namespace`, else `default` (where the API
    /// server puts a namespaced object submitted without one). An empty
    /// namespace counts as none.
    pub fn object_namespace(&self) -> &str {
        self.namespace()
            .filter(|n| !n.is_empty())
            .or_else(|| self.workload().and_then(|w| w.metadata.namespace.as_deref()).filter(|n| !n.is_empty()))
            .unwrap_or("default")
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
    /// (see [`crate::model::kind::WorkloadKind`]); `None` for other kinds and for requests
    /// without an object (DELETE).
    pub fn workload(&self) -> Option<&Workload<'a>> {
        match &self.header.object {
            Object::Workload(w, _) => Some(w),
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
            Object::Raw(text) | Object::Pending(text) | Object::Workload(_, text) => Some(text),
        }
    }

    /// The old object's JSON text (UPDATE, DELETE), if any.
    pub fn old_object_text(&self) -> Option<&'a str> {
        self.header.old_object.filter(|t| t.trim() != "null")
    }

    /// Decodes the object into a rule-specific model `T`, e.g. the options
    /// of a `CONNECT` request. `Ok(None)` when there is no object; for
    /// workload kinds use [`Request::workload`].
    pub fn object_as<T: Deserialize<'a>>(&self, what: &str) -> Result<Option<T>, Malformed> {
        match &self.header.object {
            Object::Raw(raw) | Object::Pending(raw) => decode(raw, what).map(Some),
            Object::None => Ok(None),
            Object::Workload(_, _) => match self.object_text() {
                Some(text) => decode(text, what).map(Some),
                None => Ok(None),
            },
        }
    }

    /// Whether the object is being deleted (`metadata.deletionTimestamp` is
    /// set): an UPDATE of it only removes finalizers.
    pub fn being_deleted(&self) -> bool {
        match &self.header.object {
            Object::Workload(w, _) => w.metadata.being_deleted,
            Object::Raw(raw) | Object::Pending(raw) => crate::model::listed::object_meta(raw, "the object").is_ok_and(|m| m.being_deleted),
            Object::None => false,
        }
    }
}

/// The options object of a `CONNECT` request (`PodExecOptions`,
/// `PodAttachOptions`, `PodPortForwardOptions`, `PodProxyOptions`): the
/// fields any of them has.
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
    /// The path requested from the pod (proxy only): the URL after
    /// `.../pods/<name>/proxy/`, without its leading slash.
    #[serde(borrow, default)]
    pub path: Option<Str<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::explain::friendly;
    use std::borrow::Cow;

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

    /// A mutating rule edits the object's own text: the value the decoder
    /// passed over, whitespace around it excluded, wherever the object
    /// stands in the request, and in a request rebuilt around another
    /// object.
    #[test]
    fn the_object_text_is_the_value_the_decoder_passed_over() {
        let object = "{\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"p\", \"annotations\": {\"a\": \"{\\\"x\\\": [1]}\"}}\n}";
        let kind = r#""kind": {"group": "", "version": "v1", "kind": "Pod"}"#;
        for json in [
            format!("{{{kind}, \"operation\": \"CREATE\", \"object\" :\n  {object}\n , \"oldObject\": null}}"),
            format!("{{\"object\": \t{object}, \"operation\": \"CREATE\", {kind}}}"),
        ] {
            let req = Request::parse(&json).unwrap();
            assert_eq!(req.workload().unwrap().metadata.annotation("a").as_deref(), Some("{\"x\": [1]}"));
            assert_eq!(req.object_text(), Some(object), "{json}");
            assert_eq!(req.object_text(), json::find(&json, &Path::root().key("object")));
            let spaced = format!(" \n{object}\t");
            let again = req.with_object(&spaced).unwrap();
            assert_eq!(again.object_text(), Some(object));
            assert!(req.with_object(" null ").unwrap().object_text().is_none());
        }
    }

    #[test]
    fn an_object_before_its_kind_is_decoded_afterwards() {
        let json =
            r#"{"object":{"metadata":{"name":"late"}},"operation":"CREATE","kind":{"group":"apps","version":"v1","kind":"Deployment"}}"#;
        let req = Request::parse(json).unwrap();
        assert_eq!(req.workload().unwrap().metadata.name.as_deref(), Some("late"));
        let bad = r#"{"object":{"spec":{"replicas":"x"}},"operation":"CREATE","kind":{"group":"apps","version":"v1","kind":"Deployment"}}"#;
        let e = Request::parse(bad).unwrap_err();
        assert_eq!(e.0, "the Deployment is malformed: `spec.replicas`: invalid type: string \"x\", expected a whole number");
    }

    #[test]
    fn malformed_fields_are_named() {
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"CREATE","userInfo":{"groups":"x"}}"#).unwrap_err();
        assert_eq!(e.0, "the admission request is malformed: `userInfo.groups`: invalid type: string \"x\", expected a list");
        let e = Request::parse(r#"{"kind":{"kind":"Pod"},"operation":"PATCH"}"#).unwrap_err();
        assert!(e.0.contains("`operation`: unknown variant `PATCH`"), "{e}");
        let e = Request::parse("{not json").unwrap_err();
        assert!(e.0.contains("key must be a string at line 1 column 2"), "{e}");
        let e = Request::parse(r#"{"operation":"CREATE"}"#).unwrap_err();
        assert!(e.0.contains("missing field `kind`"), "{e}");
        let e =
            Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":{}}}}"#)
                .unwrap_err();
        assert_eq!(e.0, "the Pod is malformed: `spec.containers`: invalid type: object, expected a list");
        let e =
            Request::parse(r#"{"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":"x"}}"#).unwrap_err();
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
