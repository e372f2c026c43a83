//! Required labels: which label keys a workload must carry and, for some,
//! which values they may take. Used by every rule that checks labels, so
//! their settings and messages read the same.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::glob::Glob;
use crate::base::names::{label_key, name_part};
use crate::base::regex::Regex;
use crate::base::rule_settings::SettingsError;
use crate::base::text::quoted;
use crate::decode::path::Path;
use crate::model::pod::Labels;
use crate::model::workload::{PodTemplate, Workload};

/// Label keys mapped to the values they may take. In settings:
///
/// ```yaml
/// requiredLabels:
///   team: []                                   # any non-empty value
///   workload-type: [training, inference]       # one of these
///   owner: {regex: '^[a-z]+\.example\.com$'}   # a value the expression matches
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequiredLabels(pub BTreeMap<String, AllowedValues>);

/// The values a required label (or annotation) may take: a list of
/// values `T` (exact values for labels; patterns such as [`Glob`] where a
/// rule says so), or a regular expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedValues<T = String> {
    /// One of these; an empty list allows any non-empty value.
    List(Vec<T>),
    /// A value the regular expression matches, as Gatekeeper's
    /// `allowedRegex` matches: somewhere in the value, unless anchored
    /// (`^...$`). Written `{regex: ...}`.
    Regex(Regex),
}

/// An entry of an [`AllowedValues`] list.
pub trait AllowedValue {
    /// Whether the entry allows `value`.
    fn allows(&self, value: &str) -> bool;
    /// The entry as written.
    fn text(&self) -> &str;
}

impl AllowedValue for String {
    fn allows(&self, value: &str) -> bool {
        self == value
    }

    fn text(&self) -> &str {
        self
    }
}

impl AllowedValue for Glob {
    fn allows(&self, value: &str) -> bool {
        self.matches(value)
    }

    fn text(&self) -> &str {
        self.as_str()
    }
}

impl<T: AllowedValue> AllowedValues<T> {
    /// Whether a non-empty `value` is allowed.
    pub fn allows(&self, value: &str) -> bool {
        match self {
            AllowedValues::List(list) => list.is_empty() || list.iter().any(|a| a.allows(value)),
            AllowedValues::Regex(re) => re.is_match(value),
        }
    }

    /// Whether any non-empty value is allowed (`[]`).
    pub fn any(&self) -> bool {
        matches!(self, AllowedValues::List(list) if list.is_empty())
    }

    /// What is allowed, for messages: `` `a`, `b` ``, or `` a value matching
    /// the regular expression `^v[0-9]+$` ``.
    pub fn describe(&self) -> String {
        match self {
            AllowedValues::List(list) => quoted(&list.iter().map(AllowedValue::text).collect::<Vec<_>>()),
            AllowedValues::Regex(re) => format!("a value matching the regular expression `{re}`"),
        }
    }
}

impl<T: Serialize> Serialize for AllowedValues<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AllowedValues::List(list) => list.serialize(s),
            AllowedValues::Regex(re) => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("regex", re)?;
                map.end()
            }
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AllowedValues<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AllowedValues<T>, D::Error> {
        struct Allowed<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Allowed<T> {
            type Value = AllowedValues<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of allowed values, or `{regex: ...}`")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AllowedValues<T>, A::Error> {
                let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(v) = seq.next_element::<T>()? {
                    list.push(v);
                }
                Ok(AllowedValues::List(list))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AllowedValues<T>, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "regex" {
                        return Err(de::Error::unknown_field(&key, &["regex"]));
                    }
                    if found.is_some() {
                        return Err(de::Error::duplicate_field("regex"));
                    }
                    found = Some(map.next_value::<Regex>()?);
                }
                found.map(AllowedValues::Regex).ok_or_else(|| de::Error::missing_field("regex"))
            }
        }
        d.deserialize_any(Allowed(PhantomData))
    }
}

impl RequiredLabels {
    /// Builds requirements from `(key, allowed values)` pairs.
    pub fn new<'a>(entries: impl IntoIterator<Item = (&'a str, &'a [&'a str])>) -> RequiredLabels {
        RequiredLabels(
            entries.into_iter().map(|(k, vs)| (k.to_string(), AllowedValues::List(vs.iter().map(|v| v.to_string()).collect()))).collect(),
        )
    }

    /// Checks the requirements under their settings key: label keys and
    /// allowed values must be non-empty and follow Kubernetes' syntax (a key
    /// no object can carry would reject every workload; a value no object
    /// can carry is a typo that never matches); a regular expression must
    /// not be empty (`[]` says "any value").
    pub fn validate(&self, key: &str) -> Result<(), SettingsError> {
        for (label, values) in &self.0 {
            if label.trim().is_empty() {
                return Err(SettingsError::new(key, "a label key must not be empty"));
            }
            if let Err(why) = label_key(label) {
                return Err(SettingsError::new(key, format!("`{label}` is not a valid label key: {why}")));
            }
            match values {
                AllowedValues::List(values) => {
                    if values.iter().any(|v| v.trim().is_empty()) {
                        return Err(SettingsError::new(
                            format!("{key}.{label}"),
                            "allowed values must not be empty; use `[]` to allow any non-empty value",
                        ));
                    }
                    for (i, value) in values.iter().enumerate() {
                        if let Err(why) = name_part(value) {
                            return Err(SettingsError::new(
                                format!("{key}.{label}[{i}]"),
                                format!("`{value}` is not a valid label value: {why}"),
                            ));
                        }
                    }
                }
                AllowedValues::Regex(re) if re.as_str().is_empty() => {
                    return Err(SettingsError::new(
                        format!("{key}.{label}.regex"),
                        "must not be empty; use `[]` to allow any non-empty value",
                    ));
                }
                AllowedValues::Regex(_) => {}
            }
        }
        Ok(())
    }

    /// What is wrong with `labels`, found at `path` (`metadata.labels`,
    /// `spec.template.metadata.labels`): one message for all missing labels,
    /// then one per empty or disallowed value, in key order.
    pub fn check(&self, labels: &Labels<'_>, path: &str) -> Vec<String> {
        self.check_at(labels, &path)
    }

    /// [`RequiredLabels::check`], with the path written only into a
    /// problem.
    fn check_at(&self, labels: &Labels<'_>, path: &dyn fmt::Display) -> Vec<String> {
        let mut problems = Vec::new();
        let missing: Vec<&str> = self.0.keys().filter(|k| !labels.contains_key(k.as_str())).map(String::as_str).collect();
        match missing.as_slice() {
            [] => {}
            [one] => problems.push(format!("label `{one}` is missing from `{path}`{}", self.hint(one))),
            many => problems.push(format!("labels {} are missing from `{path}`{}", quoted(many), self.hints(many))),
        }
        problems.extend(self.check_values(labels, path, |_| true));
        problems
    }

    /// The empty and disallowed values of `labels` (at `path`), in key
    /// order, of the keys `checked` keeps.
    fn check_values(&self, labels: &Labels<'_>, path: &dyn fmt::Display, checked: impl Fn(&str) -> bool) -> Vec<String> {
        let mut problems = Vec::new();
        for (key, allowed) in &self.0 {
            let Some(value) = labels.get(key.as_str()).filter(|_| checked(key)) else { continue };
            if value.trim().is_empty() {
                problems.push(format!("label `{key}` in `{path}` is empty{}", self.hint(key)));
            } else if !allowed.allows(value) {
                problems.push(format!("label `{key}` in `{path}` is `{value}`; allowed: {}", allowed.describe()));
            }
        }
        problems
    }

    /// What each of several missing `keys` may be, when any of them is
    /// restricted: `` (allowed: `team`: any value; `tier`: `gold`, `silver`) ``,
    /// so that one message says everything to write.
    fn hints(&self, keys: &[&str]) -> String {
        let allowed = |key: &str| self.0.get(key).filter(|a| !a.any());
        if !keys.iter().any(|k| allowed(k).is_some()) {
            return String::new();
        }
        let each: Vec<String> = keys
            .iter()
            .map(|k| match allowed(k) {
                Some(a) => format!("`{k}`: {}", a.describe()),
                None => format!("`{k}`: any value"),
            })
            .collect();
        format!(" (allowed: {})", each.join("; "))
    }

    fn hint(&self, key: &str) -> String {
        match self.0.get(key) {
            Some(allowed) if !allowed.any() => format!(" (allowed: {})", allowed.describe()),
            _ => String::new(),
        }
    }

    /// Whether `value` is a value `key` may take: non-empty and allowed
    /// (`false` for a key not required).
    pub fn allows(&self, key: &str, value: &str) -> bool {
        !value.trim().is_empty() && self.0.get(key).is_some_and(|a| a.allows(value))
    }
    /// [`RequiredLabels::check`] on one label set of a workload. When
    /// labels are missing from a job or pod template and the object itself
    /// (`own`) carries them with an allowed value (the most common mistake:
    /// labels on the Deployment, none on its pods), the first message says
    /// what to copy where; `pods_why` says why pod labels matter to the
    /// rule (`OpenCost attributes cost by the labels of the pods`).
    ///
    /// Each problem comes as `(identity, message)`: the identity is the
    /// message without the hint, which depends on the rest of the object;
    /// record it with [`crate::Verdict::violation_keyed`] so that an
    /// UPDATE's old object with the same problem is recognised.
    pub fn check_set(&self, set: &LabelSet<'_, '_>, own: &Labels<'_>, pods_why: &str) -> Vec<(String, String)> {
        match (&set.pods_only, set.inherits) {
            (PodsOnly::Union, Some(object)) => return self.check_union(set, object),
            (_, Some(object)) => return self.check_over(set, Some(object)),
            (PodsOnly::Inherited(components), None) => {
                // A value matters where a component's pods take it.
                let reaches = |key: &str| components.iter().any(|c| !c.contains_key(key));
                return self.check_values(set.labels, &set.path, reaches).into_iter().map(|p| (p.clone(), p)).collect();
            }
            _ if set.partial => return self.check_over(set, None),
            _ => {}
        }
        let mut found: Vec<(String, String)> = self.check_at(set.labels, &set.path).into_iter().map(|p| (p.clone(), p)).collect();
        if let Some((_, first)) = found.first_mut()
            && let Some((hint, every)) = self.copy_hint(set, own, pods_why)
        {
            // When the copy gives every missing label a value, the values
            // each may take are noise beside it.
            let missing: Vec<&str> = self.0.keys().filter(|k| !set.labels.contains_key(k.as_str())).map(String::as_str).collect();
            if every
                && missing.len() > 1
                && let Some(plain) = first.strip_suffix(self.hints(&missing).as_str())
            {
                *first = plain.to_string();
            }
            first.push_str(&hint);
        }
        found
    }

    /// Every label problem of a workload, in document order, as
    /// `(identity, message)`: each label set [`label_sets`] finds for
    /// `scope`, checked with [`RequiredLabels::check_set`].
    pub fn check_workload(&self, workload: &Workload<'_>, scope: LabelScope, by_controller: bool, pods_why: &str) -> Vec<(String, String)> {
        label_sets(workload, scope, by_controller).iter().flat_map(|set| self.check_set(set, &workload.metadata.labels, pods_why)).collect()
    }

    /// A set that adds to other labels: the object's (an InferenceService
    /// component's, `object`), or a training runtime's (a TrainJob's
    /// override, `None`). A label it leaves out is theirs, checked there or
    /// not seen; one it sets must be allowed, and must agree with the
    /// object's, since its pods get the component's value and the rest of
    /// the workload the object's.
    fn check_over(&self, set: &LabelSet<'_, '_>, object: Option<&Labels<'_>>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (key, allowed) in &self.0 {
            let Some(value) = set.labels.get(key.as_str()) else { continue };
            let path = &set.path;
            let m = if value.trim().is_empty() {
                format!("label `{key}` in `{path}` is empty{}", self.hint(key))
            } else if !allowed.allows(value) {
                format!("label `{key}` in `{path}` is `{value}`; allowed: {}", allowed.describe())
            } else if let Some(theirs) = object.and_then(|o| o.get(key.as_str())).filter(|o| *o != value) {
                format!(
                    "label `{key}` in `{path}` is `{value}`, but `metadata.labels` has `{theirs}`: these pods get `{value}` and the rest of the workload `{theirs}`, so make them agree (or leave it out of `{path}`)"
                )
            } else {
                continue;
            };
            out.push((m.clone(), m));
        }
        out
    }

    /// A set whose pods get the object's labels with its own over them,
    /// checked as those pods get them (with `podTemplatesOnly`, see
    /// [`PodsOnly::Union`]): the two together must hold every required
    /// label, and each value it sets must be allowed. The object's own
    /// values are checked on the object's set, once.
    fn check_union(&self, set: &LabelSet<'_, '_>, object: &Labels<'_>) -> Vec<(String, String)> {
        let path = &set.path;
        let missing: Vec<&str> = self
            .0
            .keys()
            .filter(|k| !set.labels.contains_key(k.as_str()) && !object.contains_key(k.as_str()))
            .map(String::as_str)
            .collect();
        let mut out = Vec::new();
        match missing.as_slice() {
            [] => {}
            [one] => out.push(format!(
                "label `{one}` is missing from both `{path}` and `metadata.labels`, the labels KServe gives these pods: set it in either{}",
                self.hint(one)
            )),
            many => out.push(format!(
                "labels {} are missing from both `{path}` and `metadata.labels`, the labels KServe gives these pods: set them in either{}",
                quoted(many),
                self.hints(many)
            )),
        }
        out.extend(self.check_values(set.labels, path, |_| true));
        out.into_iter().map(|p| (p.clone(), p)).collect()
    }

    /// What to copy from the object's labels to a template missing them.
    /// `check` reports missing labels first, so the hint goes on its first
    /// message.
    /// With it, whether it gives every missing label.
    fn copy_hint(&self, set: &LabelSet<'_, '_>, own: &Labels<'_>, pods_why: &str) -> Option<(String, bool)> {
        let why = match set.site {
            LabelSite::Object => return None,
            LabelSite::JobTemplate => "the Jobs created from this template get their labels from it",
            LabelSite::PodTemplate => pods_why,
        };
        let missing = self.0.keys().filter(|key| !set.labels.contains_key(key.as_str())).count();
        let copy: Vec<String> = self
            .0
            .iter()
            .filter(|(key, _)| !set.labels.contains_key(key.as_str()))
            .filter_map(|(key, allowed)| {
                let value = own.get(key.as_str())?;
                let ok = !value.trim().is_empty() && allowed.allows(value);
                ok.then(|| format!("{key}: {value}"))
            })
            .collect();
        if copy.is_empty() {
            return None;
        }
        Some((format!(": {why}, so copy {} from `metadata.labels`", quoted(&copy)), copy.len() == missing))
    }
}

/// Which label sets of a workload a rule checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelScope {
    /// The object's own `metadata.labels` and, for CronJobs and JobSets,
    /// their job templates' (the labels of the Jobs they create). A bare
    /// Pod's own labels are its pod labels and are always checked.
    pub object: bool,
    /// The pod templates of kinds that own them.
    pub pod_templates: bool,
}

impl LabelScope {
    /// The object, its job templates and its pod templates.
    pub const ALL: LabelScope = LabelScope { object: true, pod_templates: true };

    /// What becomes pod labels only: a Pod's own labels, and the pod
    /// templates of every other kind (the `podTemplatesOnly` setting).
    pub const POD_TEMPLATES_ONLY: LabelScope = LabelScope { object: false, pod_templates: true };
}

/// Where a set of labels sits in a workload, and what becomes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelSite {
    /// The object's own `metadata.labels` (a bare Pod's are its pod labels).
    Object,
    /// A job template's metadata: the labels of the Jobs created from it.
    JobTemplate,
    /// A pod template's metadata: the labels of the pods.
    PodTemplate,
}

/// One set of labels in a workload.
#[derive(Clone, Debug)]
pub struct LabelSet<'w, 'a> {
    /// Where the labels are (`metadata.labels`,
    /// `spec.template.metadata.labels`, `spec.predictor.labels`).
    pub path: Path,
    /// The labels.
    pub labels: &'w Labels<'a>,
    /// What they are the labels of.
    pub site: LabelSite,
    /// The part of the workload they describe, as a path prefix: the root
    /// for the object, the job template, or the pod template. The pod
    /// templates whose [`crate::PodTemplate::path`] starts with it are the
    /// pods these labels speak for.
    pub scope: Path,
    /// The object's labels, when the pods get them too and these only add
    /// to them (an InferenceService component: KServe gives its pods the
    /// InferenceService's labels and the component's, the component's
    /// winning).
    pub inherits: Option<&'w Labels<'a>>,
    /// Whether the labels are only part of the pods' (a TrainJob's override
    /// or runtime patch, which the Trainer merges over the pod template of
    /// its training runtime): a label left out may come from the runtime,
    /// which the request does not carry, so only what is written is judged.
    pub partial: bool,
    /// How much of the set is checked when only pod labels count
    /// (`podTemplatesOnly`, [`LabelScope::object`] false).
    pub pods_only: PodsOnly<'w, 'a>,
}

/// What is checked of a set when only pod labels count
/// (`podTemplatesOnly`). An InferenceService's labels are not its pods',
/// but KServe gives each component's pods the InferenceService's labels
/// with the component's over them: the labels to hold to the requirements
/// are that union, per component.
#[derive(Clone, Debug, Default)]
pub enum PodsOnly<'w, 'a> {
    /// All of it, as [`RequiredLabels::check_set`] says.
    #[default]
    Whole,
    /// The InferenceService's own labels: only their values, where a
    /// component's pods take them (the components' labels, listed, leave
    /// the key out); what the pods lack is each component's set's to say.
    Inherited(Vec<&'w Labels<'a>>),
    /// A component's labels over the InferenceService's
    /// ([`LabelSet::inherits`]): the two together must hold every required
    /// label, and each value the component sets must be allowed.
    Union,
}

impl LabelSet<'_, '_> {
    /// Whether a pod template at `template` is covered by these labels.
    pub fn covers(&self, template: &Path) -> bool {
        template.0.starts_with(&self.scope.0)
    }
}

/// Every label set of `workload` that `scope` asks for, in document order:
/// the object's labels, then each job template (CronJob, JobSet) before the
/// pod template inside it, then the pod templates. A TrainJob's trainer,
/// completed by its training runtime, has no labels of its own and is left
/// out; the metadata of its overrides and runtime patches are labels of the
/// pods they shape, over the runtime's: [`LabelSet::partial`]. An
/// InferenceService predictor's workers, whose pods get the predictor's
/// labels ([`crate::PodTemplate::shares_metadata`]), are left out too: the
/// predictor's set covers them. Where the labels of the pods really come
/// from, as the controllers build them:
///
/// - the object's own labels are its pods' labels for a bare Pod, a
///   Kubeflow Notebook (the notebook-controller copies the Notebook's
///   labels onto its pod, and the Notebook CRD's `spec.template` has no
///   `metadata`: the API server prunes it before admission, so the
///   template has no label set) and a KServe InferenceService (KServe gives
///   every component's pods the InferenceService's labels, the
///   component's own `labels` added over them: see [`LabelSet::inherits`]);
///   these are checked whatever `scope.object` says. Where only pod labels
///   count (`scope.object` false, `scope.pod_templates` true), an
///   InferenceService's labels are checked as each component's pods get
///   them ([`PodsOnly`]): its own set only for the values its components
///   take from it, each component's for the union;
/// - an object a trusted controller made (`by_controller`, from
///   [`crate::model::request::Request::controller`]: a Notebook's
///   StatefulSet, a Deployment's ReplicaSet, a ReplicaSet's Pod, a
///   TrainJob's JobSet) has its own labels from that controller, not from
///   its author, so only what reaches its pods is checked (not a JobSet's
///   job templates, which label only the Jobs it makes): a controller's
///   Pod only where `scope.pod_templates` asks for pod labels, since its
///   labels are its template's.
pub fn label_sets<'w, 'a>(workload: &'w Workload<'a>, scope: LabelScope, by_controller: bool) -> Vec<LabelSet<'w, 'a>> {
    use crate::model::kind::WorkloadKind::{InferenceService, Notebook};
    let kind = workload.kind;
    let owns = kind.owns_templates();
    let object_labels_pods = !owns || matches!(kind, Notebook | InferenceService);
    // A controller's copy: its own labels are the controller's. A
    // controller's Pod: its labels are its template's.
    let (copy, controllers_pod) = (owns && by_controller, !owns && by_controller);
    let check_object = if controllers_pod { scope.pod_templates } else { (scope.object && !copy) || object_labels_pods };
    let inherits = (kind == InferenceService).then_some(&workload.metadata.labels);
    let mut components: Vec<&'w Labels<'a>> = Vec::new();
    if inherits.is_some() && !scope.object && scope.pod_templates {
        components = workload.templates().filter(|t| !t.shares_metadata()).filter_map(PodTemplate::labels).collect();
    }
    // With `podTemplatesOnly`, an InferenceService's labels count only as
    // its components' pods get them.
    let union = !components.is_empty();
    let mut sets = Vec::new();
    if check_object {
        sets.push(LabelSet {
            path: Path::root().keys(&["metadata", "labels"]),
            labels: &workload.metadata.labels,
            site: LabelSite::Object,
            scope: Path::root(),
            inherits: None,
            partial: false,
            pods_only: if union { PodsOnly::Inherited(components) } else { PodsOnly::Whole },
        });
    }
    let job = |j: &'w crate::model::workload::JobTemplate<'a>| LabelSet {
        path: j.path.keys(&["metadata", "labels"]),
        labels: &j.metadata.labels,
        site: LabelSite::JobTemplate,
        scope: j.path.clone(),
        inherits: None,
        partial: false,
        pods_only: PodsOnly::Whole,
    };
    // A controller's copy's job templates label only the Jobs it makes,
    // themselves controllers' copies: no pod gets those labels.
    let jobs: &[crate::model::workload::JobTemplate<'a>] = if scope.object && !copy { &workload.job_templates } else { &[] };
    let mut jobs_done = 0;
    for t in workload.templates().filter(|t| owns && kind != Notebook && !t.shares_metadata()) {
        if let Some(i) = jobs.iter().skip(jobs_done).position(|j| t.path().0.starts_with(&j.path.0)) {
            let upto = jobs_done + i + 1;
            sets.extend(jobs.iter().take(upto).skip(jobs_done).map(job));
            jobs_done = upto;
        }
        if scope.pod_templates
            && let Some(labels) = t.labels()
        {
            let pods_only = if union { PodsOnly::Union } else { PodsOnly::Whole };
            sets.push(LabelSet {
                path: t.labels_path(),
                labels,
                site: LabelSite::PodTemplate,
                scope: t.path().clone(),
                inherits,
                partial: t.is_partial(),
                pods_only,
            });
        }
    }
    sets.extend(jobs.iter().skip(jobs_done).map(job));
    sets
}

/// The label that says what a workload computes on.
pub const COMPUTE_TYPE_LABEL: &str = "compute-type";

/// The values of [`COMPUTE_TYPE_LABEL`].
pub const COMPUTE_TYPES: [&str; 3] = ["gpu", "cpu", "mixed"];

/// A `compute-type` label that contradicts the GPUs, as a message: `cpu`
/// where `gpu_user` (a clause naming who requests GPUs, e.g. ``container
/// `train` requests 2 `nvidia.com/gpu` ``) is given, or `gpu`/`mixed` where
/// no pod may get GPUs (`may_get_gpus` false; `none` says so). `path` is
/// where the label is. Other values are left to the label check.
pub fn compute_type_conflict(
    path: &Path,
    value: &str,
    gpu_user: Option<&str>,
    may_get_gpus: bool,
    none: impl FnOnce() -> String,
) -> Option<String> {
    let at = || format!("label `{COMPUTE_TYPE_LABEL}` in `{path}` is `{value}`");
    match value {
        "cpu" => gpu_user.map(|user| format!("{}, but {user}: set it to `gpu` or `mixed`", at())),
        "gpu" | "mixed" if !may_get_gpus => Some(format!("{}, but {}: set it to `cpu`", at(), none())),
        _ => None,
    }
}

/// Whether `selector` selects one of the pods `workload` makes, labelled
/// as their controllers label them (see [`label_sets`]): a Pod's own
/// labels; a Notebook's object labels; an InferenceService component's
/// labels over the InferenceService's; every other kind's pod templates. A
/// template whose labels the object does not hold (a TrainJob's trainer)
/// counts as selected, and so does a workload without templates: a pod the
/// rule cannot see is governed, not skipped.
pub fn pods_selected(workload: &Workload<'_>, selector: &crate::model::label_selector::LabelSelector) -> bool {
    use crate::model::kind::WorkloadKind::{InferenceService, Notebook};
    let own = &workload.metadata.labels;
    if !workload.kind.owns_templates() || workload.kind == Notebook {
        return selector.matches(own);
    }
    let mut templates = workload.templates().peekable();
    if templates.peek().is_none() {
        return true;
    }
    templates.any(|t| {
        let labels = t.labels();
        match labels {
            _ if t.is_partial() => true,
            _ if workload.kind == InferenceService => {
                selector.matches_with(&|k| labels.and_then(|l| l.get(k)).or_else(|| own.get(k)).map(|v| &**v))
            }
            Some(labels) => selector.matches(labels),
            None => selector.matches(&Labels::new()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dec::Str;

    fn labels(pairs: &[(&'static str, &'static str)]) -> Labels<'static> {
        pairs.iter().map(|(k, v)| (Str::from(*k), Str::from(*v))).collect()
    }

    fn reqs() -> RequiredLabels {
        RequiredLabels::new([("team", &[][..]), ("workload-type", &["training", "inference"][..])])
    }

    #[test]
    fn all_good() {
        assert!(reqs().check(&labels(&[("team", "ml"), ("workload-type", "training")]), "metadata.labels").is_empty());
    }

    #[test]
    fn missing_are_reported_together_in_key_order() {
        assert_eq!(
            reqs().check(&labels(&[]), "metadata.labels"),
            [
                "labels `team`, `workload-type` are missing from `metadata.labels` (allowed: `team`: any value; `workload-type`: `training`, `inference`)"
            ],
            "each with what it may be"
        );
        let any = RequiredLabels::new([("team", &[][..]), ("owner", &[][..])]);
        assert_eq!(
            any.check(&labels(&[]), "metadata.labels"),
            ["labels `owner`, `team` are missing from `metadata.labels`"],
            "nothing to say when any value will do"
        );
        let mut re = reqs();
        re.0.insert("version".into(), AllowedValues::Regex(Regex::new("^v[0-9]+$").unwrap()));
        assert_eq!(
            re.check(&labels(&[("team", "ml")]), "metadata.labels"),
            [
                "labels `version`, `workload-type` are missing from `metadata.labels` (allowed: `version`: a value matching the regular expression `^v[0-9]+$`; `workload-type`: `training`, `inference`)"
            ]
        );
        assert_eq!(
            reqs().check(&labels(&[("team", "ml")]), "spec.template.metadata.labels"),
            ["label `workload-type` is missing from `spec.template.metadata.labels` (allowed: `training`, `inference`)"]
        );
    }

    #[test]
    fn empty_and_disallowed_values() {
        assert_eq!(
            reqs().check(&labels(&[("team", " "), ("workload-type", "batch")]), "metadata.labels"),
            [
                "label `team` in `metadata.labels` is empty",
                "label `workload-type` in `metadata.labels` is `batch`; allowed: `training`, `inference`",
            ]
        );
    }

    fn workload(kind: crate::model::kind::WorkloadKind, json: &'static str) -> Workload<'static> {
        Workload::parse(kind, json).unwrap()
    }

    fn paths(sets: &[LabelSet<'_, '_>]) -> Vec<(String, LabelSite, String)> {
        sets.iter().map(|s| (s.path.to_string(), s.site, s.scope.to_string())).collect()
    }

    #[test]
    fn label_sets_in_document_order() {
        use crate::model::kind::WorkloadKind;
        let pod = workload(WorkloadKind::Pod, r#"{"metadata":{"labels":{"a":"b"}},"spec":{}}"#);
        for scope in [LabelScope::ALL, LabelScope::POD_TEMPLATES_ONLY, LabelScope { object: true, pod_templates: false }] {
            assert_eq!(
                paths(&label_sets(&pod, scope, false)),
                [("metadata.labels".into(), LabelSite::Object, String::new())],
                "a Pod's labels are its pod labels"
            );
        }
        let js = workload(
            WorkloadKind::JobSet,
            r#"{"spec":{"replicatedJobs":[{"name":"a","template":{"spec":{"template":{"spec":{}}}}},{"name":"b","template":{"metadata":{},"spec":{}}}]}}"#,
        );
        let all = label_sets(&js, LabelScope::ALL, false);
        assert_eq!(
            paths(&all),
            [
                ("metadata.labels".into(), LabelSite::Object, String::new()),
                (
                    "spec.replicatedJobs[0].template.metadata.labels".into(),
                    LabelSite::JobTemplate,
                    "spec.replicatedJobs[0].template".into()
                ),
                (
                    "spec.replicatedJobs[0].template.spec.template.metadata.labels".into(),
                    LabelSite::PodTemplate,
                    "spec.replicatedJobs[0].template.spec.template".into()
                ),
                (
                    "spec.replicatedJobs[1].template.metadata.labels".into(),
                    LabelSite::JobTemplate,
                    "spec.replicatedJobs[1].template".into()
                ),
            ]
        );
        let t = js.templates().next().unwrap();
        assert!(all[0].covers(t.path()) && all[1].covers(t.path()) && all[2].covers(t.path()) && !all[3].covers(t.path()));
        assert_eq!(paths(&label_sets(&js, LabelScope::POD_TEMPLATES_ONLY, false)).len(), 1, "no job templates with pod templates only");
        assert_eq!(paths(&label_sets(&js, LabelScope { object: true, pod_templates: false }, false)).len(), 3);
        assert_eq!(
            paths(&label_sets(&js, LabelScope::ALL, true)),
            [(
                "spec.replicatedJobs[0].template.spec.template.metadata.labels".into(),
                LabelSite::PodTemplate,
                "spec.replicatedJobs[0].template.spec.template".into()
            )],
            "a controller's JobSet (a TrainJob's): only what reaches its pods"
        );
        let tj = workload(WorkloadKind::TrainJob, r#"{"spec":{"trainer":{"numNodes":2}}}"#);
        assert_eq!(paths(&label_sets(&tj, LabelScope::ALL, false)).len(), 1, "a trainer has no labels of its own");
        assert!(label_sets(&tj, LabelScope::POD_TEMPLATES_ONLY, false).is_empty());
    }

    #[test]
    fn a_predictors_workers_are_covered_by_its_labels() {
        use crate::model::kind::WorkloadKind;
        let isvc = workload(
            WorkloadKind::InferenceService,
            r#"{"metadata":{"annotations":{"serving.kserve.io/deploymentMode":"Standard"}},"spec":{"predictor":{"labels":{"a":"b"},"workerSpec":{"containers":[{"name":"w"}]}}}}"#,
        );
        let sets = label_sets(&isvc, LabelScope::ALL, false);
        assert_eq!(
            paths(&sets),
            [
                ("metadata.labels".into(), LabelSite::Object, String::new()),
                ("spec.predictor.labels".into(), LabelSite::PodTemplate, "spec.predictor".into())
            ],
            "the workers' labels are the predictor's: one set"
        );
        let workers = isvc.templates().find(|t| t.role == crate::model::workload::Role::PredictorWorker).unwrap();
        assert!(sets[1].covers(workers.path()));
        assert_eq!(workers.labels().and_then(|l| l.get("a")).map(|v| &**v), Some("b"));
    }

    #[test]
    fn with_pod_templates_only_an_inference_service_is_checked_per_component() {
        use crate::model::kind::WorkloadKind;
        let isvc = |labels: &str, predictor: &str, transformer: &str| {
            let json = format!(
                r#"{{"metadata":{{"labels":{labels}}},"spec":{{"predictor":{{"labels":{predictor}}},"transformer":{{"labels":{transformer}}}}}}}"#
            );
            Workload::parse(WorkloadKind::InferenceService, Box::leak(json.into_boxed_str())).unwrap()
        };
        let problems = |w: &Workload<'_>, scope| reqs().check_workload(w, scope, false, "").into_iter().map(|(_, m)| m).collect::<Vec<_>>();
        // Per component: each component's pods get both labels.
        let per_component = isvc("{}", r#"{"team":"a","workload-type":"training"}"#, r#"{"team":"b","workload-type":"inference"}"#);
        assert!(problems(&per_component, LabelScope::POD_TEMPLATES_ONLY).is_empty());
        assert_eq!(
            problems(&per_component, LabelScope::ALL),
            [
                "labels `team`, `workload-type` are missing from `metadata.labels` (allowed: `team`: any value; `workload-type`: `training`, `inference`)"
            ],
            "the object's own labels count without `podTemplatesOnly`"
        );
        // The union, per component; the object's values once, where taken.
        let w = isvc(r#"{"workload-type":"batch"}"#, r#"{"team":"a","workload-type":"training"}"#, "{}");
        assert_eq!(
            problems(&w, LabelScope::POD_TEMPLATES_ONLY),
            [
                "label `workload-type` in `metadata.labels` is `batch`; allowed: `training`, `inference`",
                "label `team` is missing from both `spec.transformer.labels` and `metadata.labels`, the labels KServe gives these pods: set it in either"
            ]
        );
        let overridden =
            isvc(r#"{"team":"a","workload-type":"batch"}"#, r#"{"workload-type":"training"}"#, r#"{"workload-type":"inference"}"#);
        assert!(problems(&overridden, LabelScope::POD_TEMPLATES_ONLY).is_empty(), "`batch` reaches no pod");
    }

    #[test]
    fn a_train_jobs_overrides_label_its_pods_over_the_runtime() {
        use crate::model::kind::WorkloadKind;
        let tj = workload(
            WorkloadKind::TrainJob,
            r#"{"metadata":{"labels":{"team":"ml","workload-type":"training"}},"spec":{"trainer":{},"podTemplateOverrides":[
                {"targetJobs":[{"name":"node"}],"metadata":{"labels":{"workload-type":"batch"}}},
                {"targetJobs":[{"name":"node"}],"spec":{}}]}}"#,
        );
        let sets = label_sets(&tj, LabelScope::ALL, false);
        assert_eq!(
            paths(&sets)[1..],
            [
                ("spec.podTemplateOverrides[0].metadata.labels".into(), LabelSite::PodTemplate, "spec.podTemplateOverrides[0]".into()),
                ("spec.podTemplateOverrides[1].metadata.labels".into(), LabelSite::PodTemplate, "spec.podTemplateOverrides[1]".into()),
            ]
        );
        assert!(sets[1].partial && sets[2].partial && !sets[0].partial);
        // What an override writes must be allowed; what it leaves out is the
        // training runtime's, which the request does not carry.
        let found: Vec<String> = reqs().check_workload(&tj, LabelScope::ALL, false, "pods").into_iter().map(|(_, m)| m).collect();
        assert_eq!(
            found,
            ["label `workload-type` in `spec.podTemplateOverrides[0].metadata.labels` is `batch`; allowed: `training`, `inference`"]
        );
    }

    #[test]
    fn copy_hints_name_what_the_object_has_right() {
        use crate::model::kind::WorkloadKind;
        let d = workload(
            WorkloadKind::Deployment,
            r#"{"metadata":{"labels":{"team":"ml","workload-type":"batch"}},"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{}}}}"#,
        );
        let found = reqs().check_workload(&d, LabelScope::ALL, false, "cost tools read pod labels");
        assert_eq!(
            found,
            [
                (
                    "label `workload-type` in `metadata.labels` is `batch`; allowed: `training`, `inference`".to_string(),
                    "label `workload-type` in `metadata.labels` is `batch`; allowed: `training`, `inference`".to_string()
                ),
                (
                    "labels `team`, `workload-type` are missing from `spec.template.metadata.labels` (allowed: `team`: any value; `workload-type`: `training`, `inference`)".to_string(),
                    "labels `team`, `workload-type` are missing from `spec.template.metadata.labels` (allowed: `team`: any value; `workload-type`: `training`, `inference`): cost tools read pod labels, so copy `team: ml` from `metadata.labels`".to_string()
                ),
            ]
        );
    }

    #[test]
    fn compute_type_against_the_gpus() {
        let at = Path::root().keys(&["metadata", "labels"]);
        let none = || "no pod of the Job requests GPUs".to_string();
        let user = Some("container `train` requests 1 `nvidia.com/gpu`");
        assert_eq!(
            compute_type_conflict(&at, "cpu", user, true, none).as_deref(),
            Some(
                "label `compute-type` in `metadata.labels` is `cpu`, but container `train` requests 1 `nvidia.com/gpu`: set it to `gpu` or `mixed`"
            )
        );
        assert_eq!(
            compute_type_conflict(&at, "mixed", None, false, none).as_deref(),
            Some("label `compute-type` in `metadata.labels` is `mixed`, but no pod of the Job requests GPUs: set it to `cpu`")
        );
        assert!(compute_type_conflict(&at, "gpu", None, false, none).is_some());
        // Agreeing values, GPUs that may come from elsewhere (a resource
        // claim), and values the label check owns say nothing here.
        assert_eq!(compute_type_conflict(&at, "cpu", None, false, none), None);
        assert_eq!(compute_type_conflict(&at, "gpu", user, true, none), None);
        assert_eq!(compute_type_conflict(&at, "gpu", None, true, none), None);
        assert_eq!(compute_type_conflict(&at, "tpu", user, true, none), None);
        assert_eq!(compute_type_conflict(&at, "tpu", None, false, none), None);
    }

    #[test]
    fn values_by_regular_expression() {
        let reqs: RequiredLabels =
            serde_json::from_str(r#"{"owner":{"regex":"^[a-z]+\\.example\\.com$"},"env":{"regex":"prod|staging"},"team":[]}"#).unwrap();
        assert!(reqs.validate("requiredLabels").is_ok());
        assert!(reqs.check(&labels(&[("owner", "alice.example.com"), ("env", "prod-eu"), ("team", "ml")]), "metadata.labels").is_empty());
        assert_eq!(
            reqs.check(&labels(&[("owner", "alice.example.org"), ("env", "dev")]), "metadata.labels"),
            [
                "label `team` is missing from `metadata.labels`",
                "label `env` in `metadata.labels` is `dev`; allowed: a value matching the regular expression `prod|staging`",
                "label `owner` in `metadata.labels` is `alice.example.org`; allowed: a value matching the regular expression `^[a-z]+\\.example\\.com$`",
            ]
        );
        assert_eq!(
            reqs.check(&labels(&[("team", "ml"), ("env", "prod")]), "metadata.labels"),
            [
                "label `owner` is missing from `metadata.labels` (allowed: a value matching the regular expression `^[a-z]+\\.example\\.com$`)"
            ]
        );
        assert!(reqs.allows("env", "staging") && !reqs.allows("env", " ") && !reqs.allows("other", "x"));
        // Written back as read: a list stays a list, an expression an object.
        assert_eq!(
            serde_json::to_string(&reqs).unwrap(),
            r#"{"env":{"regex":"prod|staging"},"owner":{"regex":"^[a-z]+\\.example\\.com$"},"team":[]}"#
        );
        let refused = |json: &str| serde_json::from_str::<RequiredLabels>(json).unwrap_err().to_string();
        assert!(refused(r#"{"owner":{"regexp":"x"}}"#).starts_with("unknown field `regexp`, expected `regex`"));
        assert!(refused(r#"{"owner":{}}"#).starts_with("missing field `regex`"));
        assert!(
            refused(r#"{"owner":"x"}"#).starts_with("invalid type: string \"x\", expected a list of allowed values, or `{regex: ...}`")
        );
        assert!(refused(r#"{"owner":{"regex":"(x"}}"#).starts_with("`(x` is not a regular expression aigov reads: missing `)`"));
        let empty: RequiredLabels = serde_json::from_str(r#"{"owner":{"regex":""}}"#).unwrap();
        assert_eq!(
            empty.validate("requiredLabels").unwrap_err().to_string(),
            "setting `requiredLabels.owner.regex`: must not be empty; use `[]` to allow any non-empty value"
        );
    }

    #[test]
    fn settings_validation() {
        assert!(reqs().validate("requiredLabels").is_ok());
        let bad = RequiredLabels::new([("team", &[""][..])]);
        assert_eq!(
            bad.validate("requiredLabels").unwrap_err().to_string(),
            "setting `requiredLabels.team`: allowed values must not be empty; use `[]` to allow any non-empty value"
        );
        let bad = RequiredLabels::new([("cost center", &[][..])]);
        assert!(
            bad.validate("requiredLabels")
                .unwrap_err()
                .to_string()
                .starts_with("setting `requiredLabels`: `cost center` is not a valid label key")
        );
        let bad = RequiredLabels::new([("tier", &["a", "b c"][..])]);
        assert!(
            bad.validate("requiredLabels")
                .unwrap_err()
                .to_string()
                .starts_with("setting `requiredLabels.tier[1]`: `b c` is not a valid label value")
        );
    }
}
