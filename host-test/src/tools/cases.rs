//! Test cases as data: `policies/<rule>/tests/cases/*.yaml`, each evaluated
//! natively, as a Kubewarden module and as a component. A case passes when
//! every form meets the expectation and all three give the same responses.
//!
//! Expectations are strict: a field a case leaves out means "none" (no
//! message on an admission, no warnings, no audit annotations, no code), so a
//! case cannot pass because the value it should check is absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use aigov_sdk::{SettingsResponse, ValidationResponse};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::run::admission::{Submission, to_admission_request};
use crate::run::artifact::{BUNDLE, Evaluator, component_path, module_path, require};
use crate::run::cluster::FixtureCluster;

/// One string or several.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(untagged)]
pub enum Fragments {
    /// Nothing expected.
    #[default]
    None,
    /// One fragment.
    One(String),
    /// Several fragments.
    Many(Vec<String>),
}

impl Fragments {
    /// As a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Fragments::None => Vec::new(),
            Fragments::One(s) => vec![s.clone()],
            Fragments::Many(v) => v.clone(),
        }
    }
}

/// The request of a case: a plain object with how it is submitted, or a
/// verbatim AdmissionRequest. In the file, one mapping: `object` or
/// `admissionRequest`, beside the fields of a [`Submission`]
/// (`operation`, `user`, `groups`, `namespace`, `name`, `subResource`,
/// `oldObject`), read as a derived `Deserialize` with
/// `deny_unknown_fields` reads them.
#[derive(Clone, Debug, Default)]
pub struct CaseRequest {
    /// The object (a manifest, or `PodExecOptions` for `CONNECT`).
    pub object: Option<Value>,
    /// A complete AdmissionRequest, used as is.
    pub admission_request: Option<Value>,
    /// How the object is submitted.
    pub submission: Submission,
}

/// Every field of a case's `request`, in the order an error lists them.
static REQUEST_FIELDS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| ["object", "admissionRequest"].into_iter().chain(Submission::FIELDS).collect());

/// A key of a case's `request`: one of [`REQUEST_FIELDS`], refused as it
/// is read otherwise, so that the error points at it.
struct Key;

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = &'static str;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> std::result::Result<&'static str, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl serde::de::Visitor<'_> for Key {
    type Value = &'static str;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> std::result::Result<&'static str, E> {
        REQUEST_FIELDS.iter().copied().find(|f| *f == key).ok_or_else(|| E::unknown_field(key, REQUEST_FIELDS.as_slice()))
    }
}

impl<'de> Deserialize<'de> for CaseRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<CaseRequest, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = CaseRequest;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("struct CaseRequest")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<CaseRequest, A::Error> {
                use serde::de::Error as _;
                let mut request = CaseRequest::default();
                let mut seen = Vec::new();
                while let Some(key) = map.next_key_seed(Key)? {
                    let (name, slot) = match key {
                        "object" => ("object", &mut request.object),
                        "admissionRequest" => ("admissionRequest", &mut request.admission_request),
                        _ if request.submission.read_field(key, &mut seen, &mut map)? => continue,
                        _ => return Err(A::Error::unknown_field(key, REQUEST_FIELDS.as_slice())),
                    };
                    if seen.contains(&name) {
                        return Err(A::Error::duplicate_field(name));
                    }
                    seen.push(name);
                    *slot = map.next_value()?;
                }
                Ok(request)
            }
        }
        deserializer.deserialize_struct("CaseRequest", REQUEST_FIELDS.as_slice(), Fields)
    }
}

/// What the rule must answer.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// `validate_settings` must refuse the settings with a message containing this.
    pub settings_error: Option<String>,
    /// Whether the request is admitted (required when the case has a request).
    pub accepted: Option<bool>,
    /// The response code (absent: none).
    pub code: Option<u16>,
    /// Fragments the message must contain (required for rejections; a case
    /// that admits must not expect a message).
    #[serde(default)]
    pub message: Fragments,
    /// One fragment per expected warning, in order (absent: no warnings).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Audit annotation keys and fragments of their values (absent: none).
    #[serde(default)]
    pub audit_annotations: BTreeMap<String, String>,
    /// The JSON Patch (RFC 6902) the mutation amounts to: applied to the
    /// request's object it must give the mutated object exactly (absent,
    /// with no `mutatedObject`: no mutation).
    pub patch: Option<Vec<Value>>,
    /// The whole object after mutation.
    pub mutated_object: Option<Value>,
}

/// One case file.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// What the case shows, in a sentence.
    pub description: String,
    /// The rule's settings (default `{}`).
    #[serde(default = "empty_object")]
    pub settings: Value,
    /// Objects cluster lookups can see.
    #[serde(default)]
    pub cluster: Vec<Value>,
    /// The request; absent for settings-only cases.
    pub request: Option<CaseRequest>,
    /// The expected answer.
    pub expect: Expect,
    /// The rule's verdict on what the controllers build from the object,
    /// where it is not its verdict on the object itself, and why
    /// ([`crate::tools::children`]).
    pub children: Option<crate::tools::children::Expect>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Case {
    /// Reads and checks a case file.
    pub fn load(path: &Path) -> Result<Case> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let case: Case = serde_norway::from_str(&text).with_context(|| format!("{} is not a valid case file", path.display()))?;
        case.check().with_context(|| format!("{} is not a valid case file", path.display()))?;
        Ok(case)
    }

    fn check(&self) -> Result<()> {
        if self.description.trim().is_empty() {
            bail!("`description` must say what the case shows");
        }
        match (&self.request, &self.expect.accepted) {
            (None, _) if self.expect.settings_error.is_none() => {
                bail!("a case without a request must expect a `settingsError`")
            }
            (None, Some(_)) => bail!("`expect.accepted` needs a request"),
            (Some(_), None) => bail!("a case with a request must say whether it is `accepted`"),
            _ => {}
        }
        if let Some(r) = &self.request
            && r.object.is_some() == r.admission_request.is_some()
        {
            bail!("`request` needs exactly one of `object` and `admissionRequest`");
        }
        if self.expect.patch.is_some() && self.expect.mutated_object.is_some() {
            bail!("expect either `patch` or `mutatedObject`, not both");
        }
        if (self.expect.patch.is_some() || self.expect.mutated_object.is_some()) && self.expect.accepted != Some(true) {
            bail!("a mutation is only returned with an admission: `accepted: true`");
        }
        match self.expect.accepted {
            Some(false) if self.expect.message.to_vec().is_empty() => {
                bail!("a rejection must say which `message` it expects")
            }
            Some(true) if !self.expect.message.to_vec().is_empty() => {
                bail!("an admission has no message; expect `warnings` instead")
            }
            _ => {}
        }
        Ok(())
    }

    /// The AdmissionRequest JSON of the case, if it has a request.
    pub fn admission_request(&self) -> Result<Option<String>> {
        let Some(r) = &self.request else { return Ok(None) };
        let value = match (&r.admission_request, &r.object) {
            (Some(ar), _) => ar.clone(),
            (None, Some(object)) => to_admission_request(object.clone(), &r.submission)?,
            (None, None) => bail!("`request` needs `object` or `admissionRequest`"),
        };
        Ok(Some(value.to_string()))
    }
}

/// Every case file of a rule, in name order, as (name, path).
pub fn case_files(policies: &Path, rule: &str) -> Result<Vec<(String, PathBuf)>> {
    let dir = policies.join(rule).join("tests").join("cases");
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.to_string(), p)))
        .collect();
    files.sort();
    Ok(files)
}

/// The bundle in its three forms, loaded once for every rule's cases.
pub type Bundle = Arc<Vec<Evaluator>>;

/// Loads the bundle natively and its two artifacts from `artifacts`.
pub fn load_bundle(engine: &wasmtime::Engine, artifacts: &Path) -> Result<Bundle> {
    let mut evaluators = vec![Evaluator::native(&crate::run::native::BUNDLE)];
    for path in [module_path(artifacts, BUNDLE), component_path(artifacts, BUNDLE)] {
        let path = require(artifacts, path, Some(NATIVE_HINT))?;
        evaluators.push(Evaluator::from_file(engine, &path)?);
    }
    Ok(Arc::new(evaluators))
}

/// What `aigov test` can do without artifacts.
const NATIVE_HINT: &str = "run the cases natively only with --native";

/// The forms of one rule: its own three, and the bundle's three with only
/// the rule enabled.
pub struct Forms {
    /// Native, module, component, in that order.
    pub evaluators: Vec<Evaluator>,
    /// The bundle: native, module, component.
    pub bundle: Bundle,
    /// The rule's name.
    pub rule: String,
}

impl Forms {
    /// Loads the native rule and its two artifacts from `artifacts`.
    pub fn load(engine: &wasmtime::Engine, artifacts: &Path, rule: &str, bundle: Bundle) -> Result<Forms> {
        let native = crate::run::native::rule(rule).with_context(|| format!("no rule named `{rule}` is linked into aigov"))?;
        let mut evaluators = vec![Evaluator::native(native)];
        for path in [module_path(artifacts, rule), component_path(artifacts, rule)] {
            let path = require(artifacts, path, Some(NATIVE_HINT))?;
            let e = Evaluator::from_file(engine, &path)?;
            if e.name != rule {
                bail!("{} says it is rule `{}`, not `{rule}`", path.display(), e.name);
            }
            evaluators.push(e);
        }
        Ok(Forms { evaluators, bundle, rule: rule.to_string() })
    }
}

/// Runs one case on every form. `Ok(())` when all forms meet the expectation
/// and agree; otherwise every problem found.
pub fn run(forms: &Forms, case: &Case) -> std::result::Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let settings = case.settings.to_string();
    let cluster = match FixtureCluster::from_objects(case.cluster.clone()) {
        Ok(c) => Arc::new(c),
        Err(e) => return Err(vec![format!("bad `cluster`: {e:#}")]),
    };
    let request = match case.admission_request() {
        Ok(r) => r,
        Err(e) => return Err(vec![format!("bad `request`: {e:#}")]),
    };

    let original: Option<Value> = request
        .as_deref()
        .and_then(|r| serde_json::from_str::<Value>(r).ok())
        .and_then(|r| r.get("object").cloned())
        .filter(|o| !o.is_null());
    let mut settings_answers: Vec<(&str, SettingsResponse)> = Vec::new();
    let mut answers: Vec<(&str, ValidationResponse)> = Vec::new();
    // The component reads no clock: where the native rule's answer depends
    // on one (an exception's `until`), the component must answer as the
    // native rule does without a clock, not as the case expects.
    let clockless = clockless_answer(forms, case, request.as_deref(), &settings);
    for e in &forms.evaluators {
        if let (Some(req), Some(want), true) = (&request, &clockless, e.form() == "component") {
            match e.validate(req, &settings, &cluster) {
                Ok(r) if r == *want => {}
                Ok(r) => problems.push(format!(
                    "component disagrees with the native rule without a clock: {} vs {}",
                    serde_json::to_string(&r).unwrap_or_default(),
                    serde_json::to_string(want).unwrap_or_default()
                )),
                Err(err) => problems.push(format!("component: validate failed: {err:#}")),
            }
            if let Ok(r) = e.validate_settings(&settings) {
                settings_answers.push((e.form(), r));
            }
            continue;
        }
        match e.validate_settings(&settings) {
            Ok(r) => {
                check_settings(&case.expect, &r).into_iter().for_each(|p| problems.push(format!("{}: {p}", e.form())));
                settings_answers.push((e.form(), r));
            }
            Err(err) => problems.push(format!("{}: validate_settings failed: {err:#}", e.form())),
        }
        if let Some(req) = &request {
            match e.validate(req, &settings, &cluster) {
                Ok(r) => {
                    check_response(&case.expect, &r, original.as_ref())
                        .into_iter()
                        .for_each(|p| problems.push(format!("{}: {p}", e.form())));
                    answers.push((e.form(), r));
                }
                Err(err) => problems.push(format!("{}: validate failed: {err:#}", e.form())),
            }
        }
    }
    disagreements(&settings_answers, &mut problems);
    disagreements(&answers, &mut problems);
    if let (Some(req), Some((_, first))) = (&request, answers.first()) {
        let native = forms.evaluators.iter().find_map(Evaluator::native_rule).or_else(|| crate::run::native::rule(&forms.rule));
        problems.extend(children_agree(&forms.rule, native, req, first, &settings, &cluster, case.children.as_ref()));
    }
    if let (Some(req), Some((_, first))) = (&request, answers.first())
        && let Some(mutated) = &first.mutated_object
    {
        idempotent(forms, req, mutated.get(), &settings, &cluster, &mut problems);
    }
    if let (Some((_, single_settings)), Some(single)) = (settings_answers.first(), answers.first().map(|(_, r)| r)) {
        bundle_agrees(forms, &settings, single_settings, (single, clockless.as_ref()), request.as_deref(), &cluster, &mut problems);
    } else if let Some((_, single_settings)) = settings_answers.first() {
        bundle_agrees_on_settings(forms, &settings, single_settings, &mut problems);
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// The native rule's answer without a clock, when it differs from its
/// answer with one: what the component, which imports no clock, must say.
fn clockless_answer(forms: &Forms, case: &Case, request: Option<&str>, settings: &str) -> Option<ValidationResponse> {
    let request = request?;
    let native = forms.evaluators.first().filter(|e| e.form() == "native")?;
    let with = native.validate(request, settings, &Arc::new(FixtureCluster::from_objects(case.cluster.clone()).ok()?)).ok()?;
    let without = FixtureCluster::from_objects(case.cluster.clone()).ok()?.without_clock();
    let without = native.validate(request, settings, &Arc::new(without)).ok()?;
    (with != without).then_some(without)
}

/// The parent-child property ([`crate::tools::children`]), natively: the
/// rule's verdict on what the controllers build from the case's object is
/// its verdict on the object, or what the case's `children` says.
fn children_agree(
    rule: &str,
    native: Option<&'static aigov_sdk::NativePolicy>,
    request: &str,
    answer: &ValidationResponse,
    settings: &str,
    cluster: &Arc<FixtureCluster>,
    expects: Option<&crate::tools::children::Expect>,
) -> Vec<String> {
    use crate::tools::children;
    let Some(native) = native else { return vec![format!("no rule named `{rule}` is linked into aigov")] };
    match children::judge(native, request, answer, settings, cluster) {
        Ok(outcome) => children::check(answer, &outcome, expects).into_iter().map(|p| format!("children: {p}")).collect(),
        Err(e) => vec![format!("children: {e:#}")],
    }
}

/// A mutating rule run on its own output changes nothing more, and admits it.
fn idempotent(forms: &Forms, request: &str, mutated: &str, settings: &str, cluster: &Arc<FixtureCluster>, problems: &mut Vec<String>) {
    let Some(again) = resubmitted(request, mutated) else {
        return problems.push("the mutated object is not JSON".into());
    };
    for e in &forms.evaluators {
        match e.validate(&again, settings, cluster) {
            Ok(r) if r.accepted && r.mutated_object.is_none() => {}
            Ok(r) => problems.push(format!(
                "{}: not idempotent: run on its own output it answers {}",
                e.form(),
                serde_json::to_string(&r).unwrap_or_default()
            )),
            Err(err) => problems.push(format!("{}: validate failed on the mutated object: {err:#}", e.form())),
        }
    }
}

/// `request` with its object replaced by `mutated`: a mutating rule's
/// output submitted again. `None` when either is not JSON.
pub fn resubmitted(request: &str, mutated: &str) -> Option<String> {
    match (serde_json::from_str::<Value>(request), serde_json::from_str::<Value>(mutated)) {
        (Ok(Value::Object(mut r)), Ok(m)) => {
            r.insert("object".into(), m);
            Some(Value::Object(r).to_string())
        }
        _ => None,
    }
}

/// The bundle's settings with only `rule` enabled.
pub fn bundle_settings(rule: &str, settings: &str) -> String {
    format!("{{\"rules\":{{{}:{settings}}}}}", serde_json::to_string(rule).unwrap_or_default())
}

/// What the bundle must say of settings the rule answered `single` to.
fn expected_bundle_settings(rule: &str, single: &SettingsResponse) -> SettingsResponse {
    SettingsResponse {
        valid: single.valid,
        message: single.message.as_ref().map(|m| format!("{}{m}", aigov_sdk::runtime::bundle::settings_prefix(rule))),
    }
}

fn bundle_agrees_on_settings(forms: &Forms, settings: &str, single: &SettingsResponse, problems: &mut Vec<String>) {
    let want = expected_bundle_settings(&forms.rule, single);
    let bundled = bundle_settings(&forms.rule, settings);
    for e in forms.bundle.iter() {
        match e.validate_settings(&bundled) {
            Ok(r) if r == want => {}
            Ok(r) => problems.push(format!(
                "{} disagrees with the rule on its settings: {} vs {}",
                e.form(),
                serde_json::to_string(&r).unwrap_or_default(),
                serde_json::to_string(&want).unwrap_or_default()
            )),
            Err(err) => problems.push(format!("{}: validate_settings failed: {err:#}", e.form())),
        }
    }
}

/// The bundle, with only this rule enabled, must answer what the rule
/// answers: the same verdict, each violation and warning prefixed with the
/// rule's name and audit annotations keyed under it; settings errors under
/// `rules.<rule>`; a request no rule can read, word for word.
fn bundle_agrees(
    forms: &Forms,
    settings: &str,
    single_settings: &SettingsResponse,
    (single, clockless): (&ValidationResponse, Option<&ValidationResponse>),
    request: Option<&str>,
    cluster: &Arc<FixtureCluster>,
    problems: &mut Vec<String>,
) {
    bundle_agrees_on_settings(forms, settings, single_settings, problems);
    let Some(request) = request else { return };
    let rule = forms.rule.as_str();
    let want = if !single_settings.valid {
        let m = single.message.as_deref().unwrap_or_default();
        let rest = m.strip_prefix("invalid settings: ").unwrap_or(m);
        ValidationResponse::reject(format!("invalid settings: {}{rest}", aigov_sdk::runtime::bundle::settings_prefix(rule)), single.code)
    } else if single.code == Some(400) && request_unreadable(rule, request) {
        // The request (or its object) cannot be read: the bundle says so
        // once, before asking any rule.
        single.clone()
    } else {
        aigov_sdk::runtime::bundle::prefixed(rule, single.clone())
    };
    let bundled = bundle_settings(rule, settings);
    // The bundle's component reads no clock either.
    let clockless = clockless.map(|c| aigov_sdk::runtime::bundle::prefixed(rule, c.clone()));
    for e in forms.bundle.iter() {
        let want = match &clockless {
            Some(c) if e.form() == "bundle (component)" => c,
            _ => &want,
        };
        match e.validate(request, &bundled, cluster) {
            Ok(r) if r == *want => {}
            Ok(r) => problems.push(format!(
                "{} disagrees with the rule: {} vs {}",
                e.form(),
                serde_json::to_string(&r).unwrap_or_default(),
                serde_json::to_string(want).unwrap_or_default()
            )),
            Err(err) => problems.push(format!("{}: validate failed: {err:#}", e.form())),
        }
    }
}

/// Whether the SDK refuses the request before the rule runs: its header,
/// or an object of a kind the rule governs, cannot be decoded.
fn request_unreadable(rule: &str, request: &str) -> bool {
    let Some(native) = crate::run::native::rule(rule) else { return false };
    let wanted = |k: aigov_sdk::WorkloadKind| native.metadata.lists(k.group(), k.resource());
    aigov_sdk::Request::parse_for(request, &wanted).is_err()
}

fn disagreements<T: PartialEq + serde::Serialize>(answers: &[(&str, T)], problems: &mut Vec<String>) {
    if let Some((first_form, first)) = answers.first() {
        for (form, answer) in answers.iter().skip(1) {
            if answer != first {
                let show = |v: &T| serde_json::to_string(v).unwrap_or_default();
                problems.push(format!("{form} disagrees with {first_form}: {} vs {}", show(answer), show(first)));
            }
        }
    }
}

fn check_settings(expect: &Expect, r: &SettingsResponse) -> Vec<String> {
    match (&expect.settings_error, r.valid, &r.message) {
        (None, true, None) => vec![],
        (None, _, m) => vec![format!("settings should be valid, got {}", m.as_deref().unwrap_or("invalid without a message"))],
        (Some(_), true, _) => vec!["settings should be refused, but were accepted".into()],
        (Some(want), false, Some(m)) if m.contains(want.as_str()) => vec![],
        (Some(want), false, m) => vec![format!("settings error should contain {want:?}, got {:?}", m.as_deref().unwrap_or_default())],
    }
}

fn check_response(expect: &Expect, r: &ValidationResponse, original: Option<&Value>) -> Vec<String> {
    let mut p = Vec::new();
    if let Some(accepted) = expect.accepted
        && r.accepted != accepted
    {
        p.push(format!(
            "expected {}, got {} (message: {})",
            if accepted { "admission" } else { "rejection" },
            if r.accepted { "admission" } else { "rejection" },
            r.message.as_deref().unwrap_or("none")
        ));
    }
    if r.code != expect.code {
        p.push(format!("expected code {:?}, got {:?}", expect.code, r.code));
    }
    let fragments = expect.message.to_vec();
    match &r.message {
        None if !fragments.is_empty() => p.push(format!("expected a message containing {fragments:?}, got none")),
        Some(m) if fragments.is_empty() => p.push(format!("expected no message, got {m:?}")),
        Some(m) => {
            for f in &fragments {
                if !m.contains(f.as_str()) {
                    p.push(format!("message should contain {f:?}; it is {m:?}"));
                }
            }
        }
        None => {}
    }
    if r.warnings.len() != expect.warnings.len() {
        p.push(format!("expected {} warning(s), got {:?}", expect.warnings.len(), r.warnings));
    } else {
        for (want, got) in expect.warnings.iter().zip(&r.warnings) {
            if !got.contains(want.as_str()) {
                p.push(format!("warning should contain {want:?}; it is {got:?}"));
            }
        }
    }
    let want_keys: Vec<&String> = expect.audit_annotations.keys().collect();
    let got_keys: Vec<&String> = r.audit_annotations.keys().collect();
    if want_keys != got_keys {
        p.push(format!("expected audit annotations {want_keys:?}, got {:?}", r.audit_annotations));
    } else {
        for (k, want) in &expect.audit_annotations {
            if let Some(got) = r.audit_annotations.get(k)
                && !got.contains(want.as_str())
            {
                p.push(format!("audit annotation `{k}` should contain {want:?}; it is {got:?}"));
            }
        }
    }
    p.extend(check_mutation(expect, r, original));
    p
}

/// The mutated object against `patch` or `mutatedObject` (absent: none).
fn check_mutation(expect: &Expect, r: &ValidationResponse, original: Option<&Value>) -> Vec<String> {
    let got: Option<Value> = match r.mutated_object.as_ref().map(|m| serde_json::from_str(m.get())) {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(e)) => return vec![format!("the mutated object is not JSON: {e}")],
    };
    let want = match (&expect.patch, &expect.mutated_object) {
        (None, None) => None,
        (_, Some(whole)) => Some(whole.clone()),
        (Some(ops), None) => {
            let Some(mut doc) = original.cloned() else {
                return vec!["`patch` needs a request with an object".into()];
            };
            let patch: json_patch::Patch = match serde_json::from_value(Value::Array(ops.clone())) {
                Ok(p) => p,
                Err(e) => return vec![format!("`patch` is not a JSON Patch: {e}")],
            };
            if let Err(e) = json_patch::patch(&mut doc, &patch) {
                return vec![format!("`patch` does not apply to the request's object: {e}")];
            }
            Some(doc)
        }
    };
    match (want, got) {
        (None, None) => vec![],
        (None, Some(g)) => vec![format!("expected no mutation, got the patch {}", diff(original, &g))],
        (Some(_), None) => vec!["expected a mutation, got none".into()],
        (Some(w), Some(g)) if w == g => vec![],
        (Some(w), Some(g)) => vec![format!("the mutation differs: it amounts to {}, expected {}", diff(original, &g), diff(original, &w))],
    }
}

/// The JSON Patch from `original` to `to`, as compact JSON.
pub fn diff(original: Option<&Value>, to: &Value) -> String {
    let from = original.cloned().unwrap_or(Value::Null);
    serde_json::to_string(&json_patch::diff(&from, to)).unwrap_or_default()
}

/// Runs `aigov test`: every case of `rules` (default: every rule) six
/// ways, or natively only when `artifacts` is `None`, one line per case on
/// `out`; exit status 1 when a case fails.
pub fn test(rules: &[String], artifacts: Option<&Path>, policies: &Path, out: &mut dyn std::io::Write) -> Result<std::process::ExitCode> {
    use crate::run::native::{self, Names};
    let mut every = rules.is_empty();
    for rule in rules {
        // The bundle runs every rule's cases: `aigov-bundle` names them all.
        every |= native::is_bundle(native::lookup(rule, Names::RulesAndBundle)?);
    }
    if !policies.is_dir() {
        let whole = std::path::absolute(policies).unwrap_or_else(|_| policies.to_path_buf());
        bail!(
            "no policies directory at {} (--policies): run aigov test in the aigov repository, or point --policies at its `policies/`",
            whole.display()
        );
    }
    let engine = crate::run::engine::new_engine()?;
    let rules: Vec<String> = if every { native::names().map(str::to_string).collect() } else { rules.to_vec() };
    let (mut passed, mut failed) = (0usize, 0usize);
    let bundle = match artifacts {
        Some(dir) => load_bundle(&engine, dir)?,
        None => Arc::new(vec![Evaluator::native(&crate::run::native::BUNDLE)]),
    };
    let agree = if artifacts.is_some() { "native, module, component and the bundle agree" } else { "native rule and native bundle agree" };
    for rule in &rules {
        let forms = match artifacts {
            Some(dir) => Forms::load(&engine, dir, rule, bundle.clone())?,
            None => {
                let policy = crate::run::native::rule(rule).with_context(|| format!("no rule named {rule:?}"))?;
                Forms { evaluators: vec![Evaluator::native(policy)], bundle: bundle.clone(), rule: rule.clone() }
            }
        };
        for (name, path) in case_files(policies, rule)? {
            let id = format!("{rule}/{name}");
            let outcome = Case::load(&path).map_err(|e| vec![format!("{e:#}")]).and_then(|c| run(&forms, &c));
            match outcome {
                Ok(()) => {
                    passed += 1;
                    writeln!(out, "ok     {id} ({agree})")?;
                }
                Err(problems) => {
                    failed += 1;
                    writeln!(out, "FAILED {id}")?;
                    for p in problems {
                        writeln!(out, "         {p}")?;
                    }
                }
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok(if failed == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(yaml: &str) -> Result<Case> {
        let c: Case = serde_norway::from_str(yaml)?;
        c.check()?;
        Ok(c)
    }

    #[test]
    fn case_files_are_checked() {
        assert!(case("description: x\nexpect: {settingsError: y}\n").is_ok());
        assert!(case("description: x\nexpect: {accepted: true}\n").is_err(), "no request");
        assert!(case("description: x\nrequest: {object: {}}\nexpect: {}\n").is_err(), "no accepted");
        assert!(case("description: x\nrequest: {object: {}}\nexpect: {accepted: false}\n").is_err(), "rejection without message");
        assert!(case("description: x\nrequest: {object: {}}\nexpect: {accepted: true, message: m}\n").is_err());
        assert!(case("description: x\nrequest: {}\nexpect: {accepted: true}\n").is_err(), "no object");
        assert!(case("description: x\nrequest: {object: {}}\nexpect: {accepted: true}\nextra: 1\n").is_err(), "unknown key");
        assert!(case("description: x\nrequest: {object: {}, oops: 1}\nexpect: {accepted: true}\n").is_err(), "unknown request key");
    }

    /// A case's `request` reads as the derived struct that declared the
    /// submission's fields a second time did: the same values, the same
    /// errors (with their place and the fields they list).
    #[test]
    fn requests_read_as_a_derived_struct_reads_them() {
        mod derived {
            use super::*;
            /// Named as ours is, for the errors that name it.
            #[derive(Debug, Deserialize)]
            #[serde(rename_all = "camelCase", deny_unknown_fields)]
            pub struct CaseRequest {
                pub object: Option<Value>,
                pub admission_request: Option<Value>,
                pub operation: Option<String>,
                pub user: Option<String>,
                pub groups: Option<Vec<String>>,
                pub namespace: Option<String>,
                pub name: Option<String>,
                pub sub_resource: Option<String>,
                pub old_object: Option<Value>,
            }
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct With<T> {
            request: T,
        }
        for yaml in [
            "request: {object: {kind: Pod}, operation: UPDATE, user: 123, groups: [a, 1], namespace: true, name: 007, subResource: exec, oldObject: {a: [1, 2.5, null]}}",
            "request: {admissionRequest: {uid: x}}",
            "request:\n  object: {}\n  oops: 1\n",
            "request:\n  object: {}\n  object: {}\n",
            "request:\n  user: a\n  user: b\n",
            "request:\n  operation: null\n  operation: b\n",
            "request: {groups: a}",
            "request: {object: {}, operation: [x]}",
            "request: [1]",
            "request: 3",
            "request: {}",
            "request: {0: x}",
            "request: {[a]: x}",
        ] {
            let ours = serde_norway::from_str::<With<CaseRequest>>(yaml).map(|w| {
                let s = w.request.submission;
                (
                    w.request.object,
                    w.request.admission_request,
                    s.operation,
                    s.user,
                    s.groups,
                    s.namespace,
                    s.name,
                    s.sub_resource,
                    s.old_object,
                )
            });
            let derived = serde_norway::from_str::<With<derived::CaseRequest>>(yaml).map(|w| {
                let d = w.request;
                (d.object, d.admission_request, d.operation, d.user, d.groups, d.namespace, d.name, d.sub_resource, d.old_object)
            });
            assert_eq!(ours.map_err(|e| e.to_string()), derived.map_err(|e| e.to_string()), "{yaml}");
        }
    }

    /// A key left out reads as its default: every case's request gets the
    /// same answer with the settings a policy would spell out and with
    /// what the generated policy writes, and with each case's own settings
    /// and those settings without the keys at their defaults.
    #[test]
    fn settings_without_their_defaults_decide_every_case_alike() {
        use crate::run::native;
        let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
        let mut compared = 0;
        for rule in native::RULES {
            let name = rule.metadata.name;
            let full = native::deployable_settings(rule).unwrap();
            let written = native::written_settings(rule).unwrap();
            assert!(written.to_string().len() * 2 < full.to_string().len(), "{name}: {written}");
            let native_rule = Evaluator::native(rule);
            for (case_name, path) in case_files(&policies, name).unwrap() {
                let case = Case::load(&path).unwrap();
                let Some(request) = case.admission_request().unwrap() else { continue };
                let cluster = std::sync::Arc::new(FixtureCluster::from_objects(case.cluster.clone()).unwrap());
                let answer = |settings: &Value| {
                    serde_json::to_value(native_rule.validate(&request, &settings.to_string(), &cluster).unwrap()).unwrap()
                };
                assert_eq!(answer(&full), answer(&written), "{name}/{case_name}, the generated policy's settings");
                let own = native::without_defaults(rule, &case.settings);
                assert_eq!(answer(&case.settings), answer(&own), "{name}/{case_name}: {} and {own}", case.settings);
                compared += 1;
            }
        }
        assert!(compared > 500, "only {compared} cases");
    }

    #[test]
    fn absent_expectations_mean_none() {
        let e = Expect { accepted: Some(true), ..Expect::default() };
        let mut r = ValidationResponse::accept();
        assert!(check_response(&e, &r, None).is_empty());
        r.warnings.push("w".into());
        assert_eq!(check_response(&e, &r, None).len(), 1, "an unexpected warning fails");
        let mut r = ValidationResponse::accept();
        r.audit_annotations.insert("k".into(), "v".into());
        assert_eq!(check_response(&e, &r, None).len(), 1, "an unexpected annotation fails");
        let mut r = ValidationResponse::accept();
        r.mutated_object = serde_json::value::RawValue::from_string("{}".into()).ok();
        assert_eq!(check_response(&e, &r, None).len(), 1, "an unexpected mutation fails");
        let r = ValidationResponse::reject("m", Some(400));
        let e = Expect { accepted: Some(false), message: Fragments::One("m".into()), ..Expect::default() };
        assert_eq!(check_response(&e, &r, None).len(), 1, "an unexpected code fails");
    }

    #[test]
    fn mutations_are_checked_as_patches() {
        let original = serde_json::json!({"metadata": {"name": "p", "labels": {"a": "1"}}});
        let mutated = r#"{"metadata":{"name":"p","labels":{"a":"1","owner":"jane"}}}"#;
        let mut r = ValidationResponse::accept();
        r.mutated_object = serde_json::value::RawValue::from_string(mutated.into()).ok();
        let ok = Expect {
            accepted: Some(true),
            patch: Some(vec![serde_json::json!({"op": "add", "path": "/metadata/labels/owner", "value": "jane"})]),
            ..Expect::default()
        };
        assert!(check_mutation(&ok, &r, Some(&original)).is_empty());
        let wrong = Expect {
            accepted: Some(true),
            patch: Some(vec![serde_json::json!({"op": "add", "path": "/metadata/labels/owner", "value": "bob"})]),
            ..Expect::default()
        };
        let p = check_mutation(&wrong, &r, Some(&original));
        assert_eq!(p.len(), 1);
        assert!(p.first().is_some_and(|m| m.contains("the mutation differs")), "{p:?}");
        assert!(
            case("description: x\nrequest: {object: {}}\nexpect: {accepted: false, message: m, patch: []}\n").is_err(),
            "mutation needs admission"
        );
    }

    #[test]
    fn disagreement_is_reported() {
        let mut problems = Vec::new();
        disagreements(&[("native", ValidationResponse::accept()), ("module", ValidationResponse::reject("x", None))], &mut problems);
        assert_eq!(problems.len(), 1);
    }
}
