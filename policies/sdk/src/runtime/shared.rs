//! The settings every rule shares, and what they decide before a rule runs.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `mode` | `enforce` | `audit`: admit, and report what would have been refused as warnings and an audit annotation |
//! | `auditNamespaces` | `[]` | namespaces (wildcards allowed) where the rule audits whatever `mode` says: enforce in some, audit in others |
//! | `exemptNamespaces`, `exemptUsers`, `exemptGroups` | `[]` | requests in these namespaces, or by these users or groups, are not evaluated |
//! | `exemptImages` | `[]` | containers whose image matches are not checked by rules that judge containers one by one |
//! | `objectSelector` | `{}` | a label selector: the rule runs only on objects whose labels (or whose old object's labels) it selects |
//! | `podSelector` | `{}` | a label selector: the rule runs only on objects whose pods (as their templates make them) it selects |
//! | `allowExistingViolations` | `true` | on UPDATE, a violation the old object already had does not block the update |
//! | `trustedControllers` | the upstream controllers ([`crate::model::trust`]) | who may submit an object as made by the controller its owner reference names |
//! | `exceptions` | `[]` | scoped, expiring exceptions: violations they excuse are admitted with a warning until their date ([`crate::runtime::exceptions`]) |
//! | `gpuDeviceClasses` | `gpu.nvidia.com`, `mig.nvidia.com` ([`crate::cluster::gpu::DEFAULT_GPU_DEVICE_CLASSES`]) | the DRA device classes whose devices are GPUs, for every rule that asks whether a pod holds GPUs |
//!
//! `objectSelector` is the webhook's: matched as the API server matches a
//! webhook's `objectSelector` (`k8s.io/apiserver` `MatchObjectSelector`),
//! against the object and the old object, either one selected enough; an
//! object that cannot carry labels (the options of a `CONNECT`) is never
//! selected by a selector with a requirement. The per-rule policies
//! `aigov manifests` writes carry it as their `spec.objectSelector`, so the
//! API server does not even call the rule; the bundle, one policy for many
//! rules, applies it rule by rule.
//!
//! `podSelector` is what only a rule can decide: a Deployment's labels say
//! nothing of its pods, its template's do. It selects an object when one of
//! the pods it makes, or one its old object made, carries matching labels:
//! a Pod's own labels, a pod template's (a Notebook's and an
//! InferenceService's object labels, which their controllers give the pods,
//! an InferenceService component's added over them). A template whose labels
//! the request does not hold (a TrainJob's trainer, completed from its
//! runtime) counts as selected, so an unknown pod is governed, not skipped.
//! Requests that carry no pods (`CONNECT`, a scale, a Namespace) are not
//! narrowed by it.
//!
//! Labels and image names are chosen by whoever writes the object: a
//! selector or an exempt image is a way to opt workloads in or out, not a
//! boundary against a user who wants out. Exempt users and namespaces are.

use std::rc::Rc;

use serde::Deserialize;
use serde::de;
use serde_json::{Map, Value};

use crate::base::glob::{Glob, any_match, non_empty_patterns};
use crate::base::rule_settings::SettingsError;
use crate::cluster::gpu::{shared_default_gpu_device_classes, validate_gpu_device_classes};
use crate::model::label_selector::LabelSelector;
use crate::model::labels::pods_selected;
use crate::model::request::{Operation, Request};
use crate::model::trust::TrustedControllers;
use crate::runtime::exceptions::Exception;

/// What a rule does with a request it would reject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Reject it.
    #[default]
    Enforce,
    /// Admit it, and report the violations as warnings and an audit
    /// annotation.
    Audit,
}

impl Mode {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Audit => "audit",
        }
    }
}

/// Who and what a rule does not apply to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// Namespaces (wildcards allowed: `kube-*`).
    pub namespaces: Vec<Glob>,
    /// User names (`system:serviceaccount:ci:*`).
    pub users: Vec<Glob>,
    /// Groups (`platform-admins`).
    pub groups: Vec<Glob>,
    /// Container images (`registry.example.com/monitoring/*`).
    pub images: Vec<Glob>,
}

impl Exemptions {
    /// Whether the request is exempt: its namespace, its user or one of the
    /// user's groups is listed.
    pub fn exempts(&self, req: &Request<'_>) -> bool {
        req.namespace().is_some_and(|ns| any_match(&self.namespaces, ns))
            || any_match(&self.users, &req.user().username)
            || req.user().groups.iter().any(|g| any_match(&self.groups, g))
    }
}

/// The keys every rule shares.
pub const SHARED_KEYS: [&str; 12] = [
    "mode",
    "auditNamespaces",
    "exemptNamespaces",
    "exemptUsers",
    "exemptGroups",
    "exemptImages",
    "objectSelector",
    "podSelector",
    "allowExistingViolations",
    "trustedControllers",
    "exceptions",
    "gpuDeviceClasses",
];

/// The shared settings' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    /// `mode`.
    pub mode: Mode,
    /// `auditNamespaces`.
    pub audit_namespaces: Vec<Glob>,
    /// `exemptNamespaces`, `exemptUsers`, `exemptGroups`, `exemptImages`.
    pub exemptions: Exemptions,
    /// `objectSelector`.
    pub object_selector: LabelSelector,
    /// `podSelector`.
    pub pod_selector: LabelSelector,
    /// `allowExistingViolations`.
    pub allow_existing_violations: bool,
    /// `trustedControllers`.
    pub trusted_controllers: TrustedControllers,
    /// `exceptions`.
    pub exceptions: Vec<Exception>,
    /// `gpuDeviceClasses`: the DRA device classes whose devices are GPUs
    /// (`cluster::gpu`).
    pub gpu_device_classes: Rc<[Glob]>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            mode: Mode::Enforce,
            audit_namespaces: Vec::new(),
            exemptions: Exemptions::default(),
            object_selector: LabelSelector::default(),
            pod_selector: LabelSelector::default(),
            allow_existing_violations: true,
            trusted_controllers: TrustedControllers::Defaults,
            exceptions: Vec::new(),
            gpu_device_classes: shared_default_gpu_device_classes(),
        }
    }
}

/// Whether `key` is a shared key.
pub fn is_shared(key: &str) -> bool {
    SHARED_KEYS.contains(&key)
}

impl Shared {
    /// Reads shared key `key` (one [`is_shared`] accepts) from `d`; `null`
    /// keeps the default.
    pub(crate) fn take<'de, D: de::Deserializer<'de>>(&mut self, key: &str, d: D) -> Result<(), D::Error> {
        fn or_default<'de, T: Deserialize<'de> + Default, D: de::Deserializer<'de>>(d: D) -> Result<T, D::Error> {
            Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
        }
        match key {
            "mode" => self.mode = or_default(d)?,
            "auditNamespaces" => self.audit_namespaces = or_default(d)?,
            "exemptNamespaces" => self.exemptions.namespaces = or_default(d)?,
            "exemptUsers" => self.exemptions.users = or_default(d)?,
            "exemptGroups" => self.exemptions.groups = or_default(d)?,
            "exemptImages" => self.exemptions.images = or_default(d)?,
            "objectSelector" => self.object_selector = or_default(d)?,
            "podSelector" => self.pod_selector = or_default(d)?,
            "allowExistingViolations" => self.allow_existing_violations = Option::<bool>::deserialize(d)?.unwrap_or(true),
            "trustedControllers" => self.trusted_controllers = or_default(d)?,
            "exceptions" => self.exceptions = or_default(d)?,
            "gpuDeviceClasses" => {
                self.gpu_device_classes = match Option::<Vec<Glob>>::deserialize(d)? {
                    Some(classes) => Rc::from(classes),
                    None => shared_default_gpu_device_classes(),
                };
            }
            _ => return Err(de::Error::custom(format_args!("`{key}` is not a shared setting"))),
        }
        Ok(())
    }

    /// Checks the values: no empty pattern, selectors as the API server
    /// validates them, and `exemptImages` only for a rule that judges
    /// containers one by one (`exempts_images`: `Ok`, or why not).
    pub fn validate(&self, exempts_images: Result<(), &str>) -> Result<(), SettingsError> {
        if let Err(why) = exempts_images
            && !self.exemptions.images.is_empty()
        {
            return Err(SettingsError::new(
                "exemptImages",
                format!("{why}; exempt by namespace, user or group, or narrow the rule with `objectSelector` or `podSelector`"),
            ));
        }
        for (key, list) in [
            ("auditNamespaces", &self.audit_namespaces),
            ("exemptNamespaces", &self.exemptions.namespaces),
            ("exemptUsers", &self.exemptions.users),
            ("exemptGroups", &self.exemptions.groups),
            ("exemptImages", &self.exemptions.images),
        ] {
            non_empty_patterns(&key, list)?;
        }
        self.object_selector.validate("objectSelector")?;
        self.pod_selector.validate("podSelector")?;
        for (i, e) in self.exceptions.iter().enumerate() {
            e.validate(i, exempts_images)?;
        }
        self.trusted_controllers.validate("trustedControllers")?;
        validate_gpu_device_classes("gpuDeviceClasses", &self.gpu_device_classes)
    }

    /// Adds the shared keys to a settings object.
    pub fn write(&self, map: &mut Map<String, Value>) {
        let globs = |l: &[Glob]| Value::from(l.iter().map(|g| g.as_str()).collect::<Vec<_>>());
        let selector = |s: &LabelSelector| serde_json::to_value(s).unwrap_or_else(|_| Value::Object(Map::new()));
        map.insert("mode".into(), Value::from(self.mode.as_str()));
        map.insert("auditNamespaces".into(), globs(&self.audit_namespaces));
        map.insert("exemptNamespaces".into(), globs(&self.exemptions.namespaces));
        map.insert("exemptUsers".into(), globs(&self.exemptions.users));
        map.insert("exemptGroups".into(), globs(&self.exemptions.groups));
        map.insert("exemptImages".into(), globs(&self.exemptions.images));
        map.insert("objectSelector".into(), selector(&self.object_selector));
        map.insert("podSelector".into(), selector(&self.pod_selector));
        map.insert("allowExistingViolations".into(), Value::from(self.allow_existing_violations));
        map.insert(
            "trustedControllers".into(),
            serde_json::to_value(&self.trusted_controllers).unwrap_or_else(|_| Value::Array(Vec::new())),
        );
        map.insert("exceptions".into(), serde_json::to_value(&self.exceptions).unwrap_or_else(|_| Value::Array(Vec::new())));
        map.insert("gpuDeviceClasses".into(), globs(&self.gpu_device_classes));
    }

    /// The mode for `req`: `audit` in an audit namespace, else `mode`.
    pub fn mode_for(&self, req: &Request<'_>) -> Mode {
        match req.namespace() {
            Some(ns) if any_match(&self.audit_namespaces, ns) => Mode::Audit,
            _ => self.mode,
        }
    }

    /// Whether the rule leaves `req` alone: exempt, or not selected.
    pub fn skips(&self, req: &Request<'_>) -> bool {
        self.exemptions.exempts(req)
            || (!self.object_selector.is_empty() && !object_selected(&self.object_selector, req))
            || (!self.pod_selector.is_empty() && !selected(req, &|r| pods_of_selected(&self.pod_selector, r), true))
    }

    /// The exceptions (with their numbers, from 1) that match `req` for
    /// rule `rule`: they name it or no rule, and their namespaces and
    /// object selector match ([`crate::runtime::exceptions`]).
    pub fn exceptions_for<'s>(&'s self, rule: &'s str, req: &'s Request<'_>) -> impl Iterator<Item = (usize, &'s Exception)> + 's {
        self.exceptions.iter().enumerate().filter_map(move |(i, e)| {
            let matched =
                e.covers(rule) && e.matches_namespace(req) && (e.object_selector.is_empty() || object_selected(&e.object_selector, req));
            matched.then_some((i + 1, e))
        })
    }

    /// The exempt images as the request carries them to the rule
    /// ([`Request::exempt_container`]): `None` when there are none.
    pub fn exempt_images(&self) -> Option<Rc<[Glob]>> {
        (!self.exemptions.images.is_empty()).then(|| Rc::from(self.exemptions.images.as_slice()))
    }
}

/// Whether `test` holds for the request's object or for its old object
/// (the old one read only when the new one is not selected); `unknown`
/// when neither says (`test` gives `None` for both).
fn selected(req: &Request<'_>, test: &dyn Fn(&Request<'_>) -> Option<bool>, unknown: bool) -> bool {
    let new = if req.has_object() { test(req) } else { None };
    if new == Some(true) {
        return true;
    }
    let old = req.old_object_text().and_then(|old| req.with_object(old).ok()).and_then(|old| test(&old));
    match (new, old) {
        (_, Some(true)) => true,
        (None, None) => unknown,
        _ => false,
    }
}

/// Whether `selector` selects the request's object or its old object, as
/// the API server matches a webhook's `objectSelector`.
fn object_selected(selector: &LabelSelector, req: &Request<'_>) -> bool {
    selected(req, &|r| objects_selected(selector, r), false)
}

/// Whether the object's labels are selected; `Some(false)` for an object
/// that cannot carry labels (a `CONNECT`'s options), as the API server
/// reads one.
fn objects_selected(selector: &LabelSelector, req: &Request<'_>) -> Option<bool> {
    if req.operation() == Operation::Connect {
        return Some(false);
    }
    if let Some(w) = req.workload() {
        return Some(selector.matches(&w.metadata.labels));
    }
    let text = req.object_text()?;
    Some(crate::model::listed::object_meta(text, "the object").is_ok_and(|m| selector.matches(&m.labels)))
}

/// Whether one of the object's pods is selected; `None` when the request
/// carries no pods.
fn pods_of_selected(selector: &LabelSelector, req: &Request<'_>) -> Option<bool> {
    req.workload().map(|w| pods_selected(w, selector))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(json: &str) -> Shared {
        let mut s = Shared::default();
        let members: Map<String, Value> = serde_json::from_str(json).unwrap();
        for (k, v) in members {
            s.take(&k, v).unwrap();
        }
        s.validate(Ok(())).unwrap();
        s
    }

    fn pod(labels: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","labels":{labels}}},"spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}"#
        )
    }

    fn request(op: &str, kind: &str, object: &str, old: &str) -> String {
        format!(
            r#"{{"uid":"1","kind":{{"group":"{g}","version":"v1","kind":"{k}"}},"resource":{{"group":"","version":"v1","resource":"x"}},"namespace":"ml","operation":"{op}","userInfo":{{"username":"u"}},"object":{object},"oldObject":{old}}}"#,
            g = if kind == "Deployment" { "apps" } else { "" },
            k = kind
        )
    }

    #[test]
    fn the_object_selector_reads_the_object_or_the_old_one() {
        let s = shared(r#"{"objectSelector":{"matchLabels":{"team":"ml"}}}"#);
        let yes = pod(r#"{"team":"ml"}"#);
        let no = pod(r#"{"team":"web"}"#);
        for (op, new, old, skipped) in [
            ("CREATE", yes.as_str(), "null", false),
            ("CREATE", no.as_str(), "null", true),
            ("UPDATE", no.as_str(), yes.as_str(), false),
            ("UPDATE", yes.as_str(), no.as_str(), false),
            ("DELETE", "null", yes.as_str(), false),
            ("DELETE", "null", no.as_str(), true),
        ] {
            let text = request(op, "Pod", new, old);
            let req = Request::parse(&text).unwrap();
            assert_eq!(s.skips(&req), skipped, "{op} {new} {old}");
        }
        // An options object cannot carry labels: a selector with a
        // requirement never selects a CONNECT, one without selects all.
        let exec = request("CONNECT", "PodExecOptions", r#"{"kind":"PodExecOptions","command":["sh"]}"#, "null");
        let req = Request::parse(&exec).unwrap();
        assert!(s.skips(&req));
        let none = shared(r#"{"objectSelector":{"matchExpressions":[{"key":"team","operator":"DoesNotExist"}]}}"#);
        assert!(none.skips(&req), "not even `DoesNotExist` selects what has no labels");
        assert!(!shared("{}").skips(&req));
    }

    #[test]
    fn the_pod_selector_reads_the_pod_templates() {
        let s = shared(r#"{"podSelector":{"matchLabels":{"ai":"true"}}}"#);
        let deployment = |object_labels: &str, pod_labels: &str| {
            format!(
                r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"d","labels":{object_labels}}},"spec":{{"template":{{"metadata":{{"labels":{pod_labels}}},"spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}}}}}"#
            )
        };
        for (object, pods, skipped) in [("{}", r#"{"ai":"true"}"#, false), (r#"{"ai":"true"}"#, "{}", true)] {
            let text = request("CREATE", "Deployment", &deployment(object, pods), "null");
            assert_eq!(s.skips(&Request::parse(&text).unwrap()), skipped, "{object} {pods}");
        }
        let text = request("CREATE", "Pod", &pod(r#"{"ai":"true"}"#), "null");
        assert!(!s.skips(&Request::parse(&text).unwrap()));
        // A request without pods is not narrowed.
        let exec = request("CONNECT", "PodExecOptions", r#"{"kind":"PodExecOptions"}"#, "null");
        assert!(!s.skips(&Request::parse(&exec).unwrap()));
    }

    #[test]
    fn audit_namespaces_turn_enforcement_into_audit_there() {
        let s = shared(r#"{"auditNamespaces":["team-*"]}"#);
        let at = |ns: &str| {
            let text = request("CREATE", "Pod", &pod("{}"), "null").replace(r#""namespace":"ml""#, &format!(r#""namespace":"{ns}""#));
            s.mode_for(&Request::parse(&text).unwrap())
        };
        assert_eq!(at("team-a"), Mode::Audit);
        assert_eq!(at("prod"), Mode::Enforce);
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut s = Shared::default();
        s.take("exemptImages", Value::from(vec![""])).unwrap();
        assert_eq!(s.validate(Ok(())).unwrap_err().to_string(), "setting `exemptImages[0]`: must not be empty");
        let mut s = Shared::default();
        s.take("exemptImages", Value::from(vec!["registry.example.com/*"])).unwrap();
        assert!(s.validate(Ok(())).is_ok());
        assert_eq!(
            s.validate(Err("it judges pods")).unwrap_err().to_string(),
            "setting `exemptImages`: it judges pods; exempt by namespace, user or group, or narrow the rule with `objectSelector` or `podSelector`"
        );
        let mut s = Shared::default();
        s.take("podSelector", serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).unwrap();
        assert_eq!(
            s.validate(Ok(())).unwrap_err().to_string(),
            "setting `podSelector.matchExpressions[0].values`: `In` needs at least one value"
        );
    }
}
