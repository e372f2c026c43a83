//! Which namespaces a setting applies to, and the request's Namespace read
//! through the cluster interface at most once.
//!
//! Rules that treat namespaces differently (GPU classes for `dev-*`, quotas
//! per team, tenants) choose them with a [`NamespaceSelector`] in their
//! settings: name patterns, a Kubernetes label selector on the Namespace's
//! labels, or both:
//!
//! ```yaml
//! namespaces: {names: ["dev-*", sandbox]}              # by name: no lookup
//! namespaces: {matchLabels: {env: dev}}                 # by label: one Namespace lookup
//! namespaces:
//!   names: ["team-*"]
//!   matchExpressions: [{key: tier, operator: NotIn, values: [prod]}]
//! namespaces: {}                                        # every namespace
//! ```
//!
//! A [`Namespace`] is the request's namespace. Its labels are read with one
//! `get_resource("v1", "Namespace", name)` (Kubewarden's
//! `kubernetes/get_resource`; the rule lists `{apiVersion: v1, kind:
//! Namespace}` in `contextAwareResources`) the first time a selector or the
//! rule needs them, and kept for the rest of the request: a rule may ask as
//! often as it likes. Selectors by name alone never look anything up.
//!
//! ```text
//! let ns = Namespace::of_request(req, cluster);
//! match ns.first_match(&settings.entries, |e| &e.namespaces) {
//!     Ok(Some(i)) => /* entry i applies */,
//!     Ok(None) => /* no entry selects this namespace */,
//!     Err(e) => ns.lookup_failed(e, settings.on_lookup_error, "which GPUs it may use", &mut verdict),
//! }
//! ```

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::base::glob::{Glob, any_match, non_empty_patterns};
use crate::base::rule_settings::SettingsError;
use crate::cluster::lookup::{Cluster, LookupError, NamespaceLabels, OnLookupError, Report};
use crate::model::label_selector::{self, LabelSelectorRequirement};
use crate::model::request::Request;

pub use crate::cluster::lookup::NAME_LABEL;

/// Which namespaces a setting applies to: a namespace is selected when its
/// name matches one of `names` (any name when `names` is empty) and its
/// labels satisfy `matchLabels` and every `matchExpressions` requirement
/// (Kubernetes' label selector semantics). The empty selector `{}` selects
/// every namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NamespaceSelector {
    /// Namespace name patterns (`*` and `?` wildcards); empty: any name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<Glob>,
    /// Labels the Namespace must carry with exactly these values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Further label requirements, all of which must hold.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl NamespaceSelector {
    /// Selects namespaces by name pattern only.
    pub fn names<S: Into<String>>(patterns: impl IntoIterator<Item = S>) -> NamespaceSelector {
        NamespaceSelector { names: patterns.into_iter().map(|p| Glob::new(p.into())).collect(), ..NamespaceSelector::default() }
    }

    /// Selects namespaces carrying these labels.
    pub fn labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> NamespaceSelector {
        NamespaceSelector {
            match_labels: labels.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..NamespaceSelector::default()
        }
    }

    /// Checks the selector under its settings key (`classes[0].namespaces`):
    /// no empty name pattern, label keys and values Kubernetes accepts, and
    /// operators with the values they need.
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        non_empty_patterns(&format_args!("{key}.names"), &self.names)?;
        label_selector::validate_parts(key, &self.match_labels, &self.match_expressions)
    }

    /// Whether the selector reads labels at all (by name only: no lookup).
    /// A selector on [`NAME_LABEL`] alone needs no lookup either: every
    /// Namespace carries its name there.
    pub fn needs_labels(&self) -> bool {
        self.match_labels.keys().any(|k| k != NAME_LABEL) || self.match_expressions.iter().any(|r| r.key != NAME_LABEL)
    }

    /// Whether `name` matches the name patterns (labels not considered).
    pub fn matches_name(&self, name: &str) -> bool {
        self.names.is_empty() || any_match(&self.names, name)
    }

    /// Whether labels satisfy the label part (names not considered).
    pub fn matches_labels<'l>(&self, labels: &dyn Fn(&str) -> Option<&'l str>) -> bool {
        label_selector::selects(&self.match_labels, &self.match_expressions, labels)
    }
}

/// A failed lookup, already reported on the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported;

/// The request's namespace, its labels read from the cluster at most once.
pub struct Namespace<'c> {
    name: String,
    cluster: &'c dyn Cluster,
    labels: OnceCell<Rc<NamespaceLabels>>,
}

impl<'c> Namespace<'c> {
    /// Namespace `name`, read through `cluster` when needed.
    pub fn new(name: &str, cluster: &'c dyn Cluster) -> Namespace<'c> {
        Namespace { name: name.to_string(), cluster, labels: OnceCell::new() }
    }

    /// The namespace a request's object goes into: the request's, else the
    /// object's `metadata.namespace`, else `default` (where the API server
    /// puts a namespaced object submitted without one).
    pub fn of_request(req: &Request<'_>, cluster: &'c dyn Cluster) -> Namespace<'c> {
        Namespace::new(req.object_namespace(), cluster)
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Namespace's labels, [`NAME_LABEL`] included: looked up on the
    /// first call ([`crate::cluster::lookup::fetch_labels`]), kept for the next; in the bundle,
    /// looked up and decoded once for every rule
    /// ([`Cluster::namespace_labels`]).
    pub fn labels(&self) -> Result<&BTreeMap<String, String>, &LookupError> {
        self.labels.get_or_init(|| self.cluster.namespace_labels(&self.name)).as_ref().as_ref()
    }

    /// One label of the Namespace (looked up as [`Namespace::labels`]).
    pub fn label(&self, key: &str) -> Result<Option<&str>, &LookupError> {
        Ok(self.labels()?.get(key).map(String::as_str))
    }

    /// Whether the Namespace has been looked up in this request.
    pub fn looked_up(&self) -> bool {
        self.labels.get().is_some()
    }

    /// Whether the selector selects this namespace. Reads the labels only
    /// when the name matches and the selector needs them.
    pub fn matches(&self, selector: &NamespaceSelector) -> Result<bool, &LookupError> {
        if !selector.matches_name(&self.name) {
            return Ok(false);
        }
        if !selector.needs_labels() {
            let name = self.name.as_str();
            return Ok(selector.matches_labels(&|k: &str| (k == NAME_LABEL).then_some(name)));
        }
        let labels = self.labels()?;
        Ok(selector.matches_labels(&|k: &str| labels.get(k).map(String::as_str)))
    }

    /// The index of the first entry whose selector selects this namespace,
    /// trying entries in order (a lookup failure is returned as soon as an
    /// entry needs labels, since that entry might have applied).
    pub fn first_match<T>(&self, entries: &[T], selector: impl Fn(&T) -> &NamespaceSelector) -> Result<Option<usize>, &LookupError> {
        for (i, e) in entries.iter().enumerate() {
            if self.matches(selector(e))? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Records a failed Namespace lookup the way every context-aware rule
    /// words it, quoting only the first line of the host's error: with
    /// `deny`, a violation; with `allow`, a warning. `needed_for` says what
    /// the labels decide (`which GPU products pods may use`).
    pub fn lookup_failed(&self, error: &LookupError, on: OnLookupError, needed_for: &str, verdict: &mut dyn Report) {
        let what = format!("the labels of namespace `{}` could not be read ({})", self.name, error.first_line());
        on.report(&what, &format!(", so {needed_for} cannot be decided"), &format!(", so {needed_for} was not checked; admitted"), verdict);
    }

    /// The first of `entries` whose selector matches the namespace, as
    /// [`Self::first_match`]; a failed label lookup is reported on `verdict`
    /// ([`Self::lookup_failed`]) and gives [`Reported`]: the caller stops
    /// deciding what the entry would have told it.
    pub fn entry<'e, T>(
        &self,
        entries: &'e [T],
        selector: impl Fn(&T) -> &NamespaceSelector,
        on: OnLookupError,
        needed_for: &str,
        verdict: &mut dyn Report,
    ) -> Result<Option<&'e T>, Reported> {
        match self.first_match(entries, selector) {
            Ok(i) => Ok(i.and_then(|i| entries.get(i))),
            Err(e) => {
                self.lookup_failed(e, on, needed_for, verdict);
                Err(Reported)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::cluster::NoCluster;
    use crate::runtime::verdict::Verdict;

    /// A cluster with one Namespace, counting lookups.
    struct One {
        json: &'static str,
        gets: Cell<u32>,
    }

    impl Cluster for One {
        fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
            self.gets.set(self.gets.get() + 1);
            assert_eq!((api_version, kind, namespace), ("v1", "Namespace", None));
            if name == "dev-alice" { Ok(self.json.to_string()) } else { Err(LookupError::NotFound(format!("namespace {name} not found"))) }
        }
        fn list_resources_by_namespace(&self, _: &str, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
            Err(LookupError::Invalid("not served".into()))
        }
        fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
            Err(LookupError::Invalid("not served".into()))
        }
    }

    fn cluster() -> One {
        One {
            json: r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev-alice","labels":{"env":"dev","team":"nlp"}}}"#,
            gets: Cell::new(0),
        }
    }

    fn sel(json: &str) -> NamespaceSelector {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn names_need_no_lookup() {
        let c = cluster();
        let ns = Namespace::new("dev-alice", &c);
        assert!(ns.matches(&NamespaceSelector::names(["dev-*"])).unwrap());
        assert!(!ns.matches(&NamespaceSelector::names(["prod-*", "ml"])).unwrap());
        assert!(ns.matches(&NamespaceSelector::default()).unwrap(), "`{{}}` selects every namespace");
        assert!(ns.matches(&sel(r#"{"matchLabels":{"kubernetes.io/metadata.name":"dev-alice"}}"#)).unwrap());
        assert_eq!(c.gets.get(), 0);
        assert!(!ns.looked_up());
    }

    #[test]
    fn labels_are_read_once() {
        let c = cluster();
        let ns = Namespace::new("dev-alice", &c);
        assert!(ns.matches(&NamespaceSelector::labels([("env", "dev")])).unwrap());
        assert!(!ns.matches(&NamespaceSelector::labels([("env", "prod")])).unwrap());
        assert!(ns.matches(&sel(r#"{"names":["dev-*"],"matchExpressions":[{"key":"tier","operator":"DoesNotExist"},{"key":"team","operator":"In","values":["nlp","cv"]}]}"#)).unwrap());
        assert!(!ns.matches(&sel(r#"{"matchExpressions":[{"key":"team","operator":"NotIn","values":["nlp"]}]}"#)).unwrap());
        assert_eq!(ns.label("team").unwrap(), Some("nlp"));
        assert_eq!(ns.label(NAME_LABEL).unwrap(), Some("dev-alice"), "the API server's name label");
        assert_eq!(c.gets.get(), 1);
        // A name that does not match never reads labels.
        let c = cluster();
        let ns = Namespace::new("prod", &c);
        assert!(!ns.matches(&sel(r#"{"names":["dev-*"],"matchLabels":{"env":"dev"}}"#)).unwrap());
        assert_eq!(c.gets.get(), 0);
    }

    #[test]
    fn first_match_in_order_and_failures() {
        let c = cluster();
        let ns = Namespace::new("dev-alice", &c);
        let entries = [NamespaceSelector::names(["prod-*"]), NamespaceSelector::labels([("env", "dev")]), NamespaceSelector::default()];
        assert_eq!(ns.first_match(&entries, |s| s).unwrap(), Some(1));
        let ns = Namespace::new("ml", &NoCluster);
        assert!(ns.first_match(&entries, |s| s).is_err(), "the label entry might have applied");
        assert_eq!(ns.first_match(&entries[..1], |s| s).unwrap(), None);
        let mut v = Verdict::accept();
        let e = ns.labels().unwrap_err().clone();
        ns.lookup_failed(&e, OnLookupError::Deny, "which GPUs pods may use", &mut v);
        assert_eq!(
            v.violations(),
            [
                "the labels of namespace `ml` could not be read (this host serves no cluster lookups), so which GPUs pods may use cannot be decided; try again, or ask your cluster administrators"
            ]
        );
        let mut v = Verdict::accept();
        ns.lookup_failed(&e, OnLookupError::Allow, "which GPUs pods may use", &mut v);
        assert!(v.is_accepted());
        assert!(v.warnings()[0].ends_with("admitted because `onLookupError` is `allow`"));
        let mut v = Verdict::accept();
        assert_eq!(ns.entry(&entries, |s| s, OnLookupError::Deny, "which GPUs pods may use", &mut v), Err(Reported));
        assert_eq!(v.violations().len(), 1, "the failed lookup is reported");
        let ns = Namespace::new("dev-alice", &c);
        let mut v = Verdict::accept();
        assert_eq!(ns.entry(&entries, |s| s, OnLookupError::Deny, "x", &mut v), Ok(entries.get(1)));
        assert!(v.is_accepted() && v.warnings().is_empty());
    }

    #[test]
    fn an_unreadable_namespace_is_a_failed_lookup() {
        let c = One { json: r#"{"metadata":{"labels":["x"]}}"#, gets: Cell::new(0) };
        let ns = Namespace::new("dev-alice", &c);
        assert!(matches!(ns.labels(), Err(LookupError::Invalid(m)) if m.starts_with("the Namespace `dev-alice` is malformed")));
    }

    #[test]
    fn validation_names_the_key() {
        let err = |json: &str| sel(json).validate("classes[0].namespaces").unwrap_err().to_string();
        assert!(
            sel(r#"{"names":["dev-*"],"matchLabels":{"env":"dev"},"matchExpressions":[{"key":"a","operator":"Exists"}]}"#)
                .validate("k")
                .is_ok()
        );
        assert_eq!(err(r#"{"names":[""]}"#), "setting `classes[0].namespaces.names[0]`: must not be empty");
        assert!(
            err(r#"{"matchLabels":{"a b":"x"}}"#)
                .starts_with("setting `classes[0].namespaces.matchLabels`: `a b` is not a valid label key")
        );
        assert!(
            err(r#"{"matchLabels":{"env":"d e v"}}"#)
                .starts_with("setting `classes[0].namespaces.matchLabels.env`: `d e v` is not a valid label value")
        );
        assert_eq!(
            err(r#"{"matchExpressions":[{"key":"a","operator":"In"}]}"#),
            "setting `classes[0].namespaces.matchExpressions[0].values`: `In` needs at least one value"
        );
        assert_eq!(
            err(r#"{"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]}"#),
            "setting `classes[0].namespaces.matchExpressions[0].values`: must be empty with `Exists`"
        );
        assert!(serde_json::from_str::<NamespaceSelector>(r#"{"name":["x"]}"#).is_err(), "unknown keys are refused");
        assert!(serde_json::from_str::<NamespaceSelector>(r#"{"matchExpressions":[{"key":"a","operator":"exists"}]}"#).is_err());
    }
}
