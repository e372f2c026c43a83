//! The one evaluation path. The waPC module, the component, the bundle and
//! the native harness all call these functions, so they cannot disagree by
//! construction of the glue; only by the compiler or the host.
//!
//! Before a rule runs, the SDK admits what no rule should judge:
//! - requests its webhook rules would never route to it (a subresource such
//!   as `pods/status` or `pods/ephemeralcontainers` the metadata does not
//!   list, an operation it does not list);
//! - updates of objects being deleted (`deletionTimestamp` set): a
//!   controller removing its finalizer sends exactly that, and refusing it
//!   leaves the object terminating forever;
//! - updates that change only bookkeeping (`status`, finalizers, owner
//!   references removed by the garbage collector: see
//!   [`mutate::bookkeeping_only`]), checked only when the rule would refuse
//!   or change the object, so the common update costs nothing more;
//! - exempt namespaces, users and groups, and objects the shared
//!   `objectSelector` and `podSelector` do not select
//!   ([`crate::runtime::shared`]).
//!
//! After it runs: on UPDATE with `allowExistingViolations` (the default),
//! violations the old object already had are dropped (and reported as
//! warnings), so a label edit on a workload created before the rule existed
//! goes through while anything new is refused; edits of a mutating rule are
//! applied only when the request is admitted and is a CREATE or UPDATE, and
//! on UPDATE only where the API server accepts them
//! ([`mutate::update_allows`]; the others become warnings).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::value::RawValue;

use crate::base::error::Malformed;
use crate::base::rule_settings::SettingsError;
use crate::cluster::Cluster;
use crate::decode::dec::Dec;
use crate::decode::json::{self, Edit};
use crate::model::kind::WorkloadKind;
use crate::model::request::{AdmissionRequest, Operation, Request, Wants, decode_request, explain_request};
use crate::runtime::metadata::PolicyMetadata;
use crate::runtime::mutate;
use crate::runtime::policy::{Exported, Handler};
use crate::runtime::settings::{Mode, Settings, cached};
use crate::runtime::verdict::{SettingsResponse, ValidationResponse};

/// Key of the audit annotation that carries what audit mode let through.
pub const AUDIT_ANNOTATION: &str = "violations";

/// Decodes a Kubewarden `validate` payload (`{"request": ...,
/// "settings": ...}`): the request (its object decoded in the same pass
/// when `wants` its kind) and the settings text.
pub fn decode_payload<'t>(text: &'t str, wants: Wants<'_>) -> Result<(Request<'t>, &'t str), Malformed> {
    let mut d = Dec::new(text);
    let mut request: Option<AdmissionRequest<'t>> = None;
    let mut settings: Option<&'t str> = None;
    let decoded = (|| {
        if d.peek() != Some(b'{') {
            return Err(d.invalid_type("an object with `request` and `settings`"));
        }
        d.object(|d, key| {
            match &*key {
                "request" => request = Some(decode_request(d, wants)?),
                "settings" => settings = Some(d.raw()?).filter(|s| *s != "null"),
                _ => d.skip()?,
            }
            Ok(())
        })?;
        d.end()
    })();
    match (decoded, request) {
        (Ok(()), Some(r)) => Ok((Request::from_admission(r, wants)?, settings.unwrap_or("{}"))),
        (Ok(()), None) => Err(Malformed("the validation request is malformed: missing field `request`".into())),
        (Err(e), _) => {
            // Explain an error inside the request against the request's own
            // text, so the message (positions included) is the one the
            // component gives for the same request.
            if let Some(request) = json::find(text, &crate::decode::path::Path::root().key("request"))
                && let Err(inner) = Request::parse_for(request, wants)
            {
                return Err(inner);
            }
            Err(explain_request(text, &e, &["request"]))
        }
    }
}

/// Whether rule `P`'s webhook rules list workload kind `k`'s resource.
pub fn wanted<P: Exported>(k: WorkloadKind) -> bool {
    P::METADATA.lists(k.group(), k.resource())
}

/// A waPC payload as text: UTF-8 checked sixteen bytes at a time in the
/// guests (`simdutf8` with wasm's simd128; core's check reads a wasm32 word,
/// four), or the 400 a payload that is not UTF-8 gets.
pub(crate) fn payload_text(payload: &[u8]) -> Result<&str, ValidationResponse> {
    simdutf8::basic::from_utf8(payload).map_err(|_| ValidationResponse::reject("the validation request is not UTF-8 JSON", Some(400)))
}

/// Settings as text, checked as [`payload_text`] checks a payload, or the
/// refusal settings that are not UTF-8 get.
pub(crate) fn settings_text(settings: &[u8]) -> Result<&str, SettingsResponse> {
    simdutf8::basic::from_utf8(settings).map_err(|_| SettingsResponse { valid: false, message: Some("settings are not UTF-8 JSON".into()) })
}

/// Validates a Kubewarden `validate` payload.
pub fn validate_payload<P: Exported>(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
    let text = match payload_text(payload) {
        Ok(text) => text,
        Err(refused) => return refused,
    };
    match decode_payload(text, &wanted::<P>) {
        Ok((request, settings)) => evaluate::<P>(&request, settings, cluster),
        Err(e) => ValidationResponse::reject(e.0, Some(400)),
    }
}

/// Validates an `AdmissionRequest` JSON document with settings JSON (the
/// component's `validate`).
pub fn validate_request<P: Exported>(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    match Request::parse_for(request, &wanted::<P>) {
        Ok(r) => evaluate::<P>(&r, settings, cluster),
        Err(e) => ValidationResponse::reject(e.0, Some(400)),
    }
}

/// Validates a settings document (Kubewarden's `validate_settings`).
pub fn validate_settings<P: Exported>(settings: &[u8]) -> SettingsResponse {
    let text = match settings_text(settings) {
        Ok(text) => text,
        Err(refused) => return refused,
    };
    match Settings::<P::Settings>::parse_checked(text) {
        Ok(_) => SettingsResponse { valid: true, message: None },
        Err(e) => SettingsResponse { valid: false, message: Some(e.to_string()) },
    }
}

fn evaluate<P: Exported>(request: &Request<'_>, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    match run::<P>(request, settings, cluster) {
        Ok(mut outcome) => {
            outcome.apply_edits(request);
            outcome.into_response(P::METADATA.name)
        }
        Err(e) => ValidationResponse::reject(format!("invalid settings: {e}"), Some(400)),
    }
}

/// What one rule made of one request, before it becomes a response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The rule's mode.
    pub mode: Mode,
    /// Violations (after dropping those the old object already had).
    pub violations: Vec<String>,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Audit annotations.
    pub audit_annotations: BTreeMap<String, String>,
    /// The input could not be evaluated: why.
    pub malformed: Option<String>,
    /// The edits a mutating rule makes, to be applied (in enforce mode, on
    /// an admitted CREATE or UPDATE, only those the API server accepts).
    pub edits: Vec<Edit>,
    /// The edited object, once [`Outcome::apply_edits`] applied them.
    pub mutated: Option<String>,
}

impl Outcome {
    /// Applies [`Outcome::edits`] to the request's object: the edited object
    /// in [`Outcome::mutated`] (nothing when they change nothing), or why
    /// they cannot be applied in [`Outcome::malformed`]. A rule alone does
    /// this; the bundle applies every mutating rule's edits to one
    /// document instead ([`crate::runtime::bundle`]).
    pub fn apply_edits(&mut self, request: &Request<'_>) {
        if self.edits.is_empty() {
            return;
        }
        let edits = std::mem::take(&mut self.edits);
        match mutate(request, &edits) {
            Ok(m) => self.mutated = m,
            Err(e) => self.malformed = Some(e.0),
        }
    }

    /// Whether the rule rejects the request (in enforce mode).
    pub fn rejects(&self) -> bool {
        self.mode == Mode::Enforce && (self.malformed.is_some() || !self.violations.is_empty())
    }

    /// Kubewarden's response for a rule named `name`.
    pub fn into_response(self, name: &str) -> ValidationResponse {
        let Outcome { mode, violations, mut warnings, mut audit_annotations, malformed, mutated, .. } = self;
        match (malformed, mode) {
            (Some(m), Mode::Enforce) => return ValidationResponse::reject(m, Some(400)),
            (Some(m), Mode::Audit) => {
                warnings.push(format!("{name} (audit mode, not enforced): cannot evaluate: {m}"));
                audit_annotations.insert(AUDIT_ANNOTATION.into(), format!("cannot evaluate: {m}"));
            }
            (None, _) => {}
        }
        if violations.is_empty() {
            return ValidationResponse {
                accepted: true,
                mutated_object: mutated.and_then(|m| RawValue::from_string(m).ok()),
                warnings,
                audit_annotations,
                ..ValidationResponse::default()
            };
        }
        let message = violations.join("\n");
        match mode {
            Mode::Enforce => {
                ValidationResponse { accepted: false, message: Some(message), warnings, audit_annotations, ..ValidationResponse::default() }
            }
            Mode::Audit => {
                warnings.extend(violations.iter().map(|v| format!("{name} (audit mode, not enforced): {v}")));
                audit_annotations.insert(AUDIT_ANNOTATION.into(), message);
                ValidationResponse { accepted: true, warnings, audit_annotations, ..ValidationResponse::default() }
            }
        }
    }
}

/// Whether `metadata`'s webhook rules would route `request` to the rule. A
/// request without `resource` (hand-written) is routed by its subresource
/// alone: one the metadata never lists is not.
pub fn routed(metadata: &PolicyMetadata, request: &Request<'_>) -> bool {
    let r = request.resource();
    let op = request.operation().as_str();
    if r.resource.is_empty() {
        return match request.sub_resource() {
            None => true,
            Some(sub) => metadata
                .rules
                .iter()
                .any(|rule| rule.resources.iter().any(|res| res.split_once('/').is_some_and(|(_, s)| s == sub || s == "*"))),
        };
    }
    metadata.governs(&r.group, &r.version, &r.resource, request.sub_resource(), op)
}

/// Runs rule `P` on a request with its settings text (parsed once per
/// instance and settings).
pub fn run<P: Exported>(request: &Request<'_>, settings: &str, cluster: &dyn Cluster) -> Result<Outcome, SettingsError> {
    let settings = cached::<P::Settings>(settings)?;
    Ok(run_with::<P>(request, &settings, cluster))
}

/// Runs rule `P` on a request with parsed settings.
pub fn run_with<P: Exported>(request: &Request<'_>, settings: &Settings<P::Settings>, cluster: &dyn Cluster) -> Outcome {
    let shared = &settings.shared;
    let mut outcome = Outcome { mode: shared.mode_for(request), ..Outcome::default() };
    if !routed(P::METADATA, request) || (request.operation() == Operation::Update && request.being_deleted()) || shared.skips(request) {
        return outcome;
    }
    request.set_exempt_images(shared.exempt_images());
    request.set_trusted_controllers(shared.trusted_controllers.clone());
    request.set_gpu_device_classes(Some(std::rc::Rc::clone(&shared.gpu_device_classes)));
    let verdict = match P::validate(request, &settings.rule, cluster) {
        Ok(v) => v,
        Err(e) => {
            outcome.malformed = Some(e.0);
            return outcome;
        }
    };
    let parts = verdict.into_parts();
    let (mut violations, mut edits) = (parts.violations, parts.edits);
    if (!violations.is_empty() || !edits.is_empty()) && mutate::bookkeeping_only(request) {
        return outcome;
    }
    outcome.warnings = parts.warnings;
    outcome.audit_annotations = parts.audit_annotations;
    if !violations.is_empty() && shared.allow_existing_violations && request.operation() == Operation::Update {
        let existing = existing_violations::<P>(request, settings, cluster);
        let (kept, old): (Vec<_>, Vec<_>) = violations.into_iter().partition(|(key, _)| !existing.contains(key));
        violations = kept;
        outcome.warnings.extend(
            old.into_iter().map(|(_, v)| format!("{} (allowed: the object already had this before the update): {v}", P::METADATA.name)),
        );
    }
    outcome.violations = violations.into_iter().map(|(_, v)| v).collect();
    if request.operation() == Operation::Update && !edits.is_empty() {
        let (kept, refused): (Vec<Edit>, Vec<Edit>) = edits.into_iter().partition(|e| mutate::update_allows(request, e.path()));
        edits = kept;
        let what = request.workload().map(|w| w.kind.kind()).unwrap_or("object");
        outcome.warnings.extend(refused.iter().map(|e| {
            format!(
                "{} (not applied): would {}, but Kubernetes allows no change to the pod template of an existing {what} beyond its scheduling directives, and those only while it is suspended and has never started; recreate the {what} to get it",
                P::METADATA.name,
                describe(e)
            )
        }));
    }
    if !edits.is_empty() && outcome.violations.is_empty() && matches!(request.operation(), Operation::Create | Operation::Update) {
        match outcome.mode {
            Mode::Enforce => outcome.edits = edits,
            Mode::Audit => outcome
                .warnings
                .extend(edits.iter().map(|e| format!("{} (audit mode, not applied): would {}", P::METADATA.name, describe(e)))),
        }
    }
    outcome
}

/// The identities of the violations the request's old object already had.
fn existing_violations<P: Exported>(request: &Request<'_>, settings: &Settings<P::Settings>, cluster: &dyn Cluster) -> Vec<String> {
    let Some(old) = request.old_object_text() else { return Vec::new() };
    let Ok(old_request) = request.with_object(old) else { return Vec::new() };
    match P::validate(&old_request, &settings.rule, cluster) {
        Ok(v) => v.violation_keys().to_vec(),
        Err(_) => Vec::new(),
    }
}

/// The object with `edits` applied; `None` when nothing changed.
pub(crate) fn mutate(request: &Request<'_>, edits: &[Edit]) -> Result<Option<String>, Malformed> {
    let Some(text) = request.object_text() else { return Ok(None) };
    let out = json::apply(text, edits).map_err(|e| Malformed(format!("the change cannot be applied: {e}")))?;
    Ok((out != text).then_some(out))
}

/// `set `metadata.labels.owner` to `"jane"``, for audit-mode warnings.
pub fn describe(edit: &Edit) -> String {
    let mut s = String::new();
    let _ = match edit {
        Edit::Set { path, value } | Edit::SetIfAbsent { path, value } => write!(s, "set `{path}` to `{value}`"),
        Edit::Append { path, value } => write!(s, "add `{value}` to `{path}`"),
    };
    s
}

/// One rule as a [`Handler`].
pub struct Single<P>(std::marker::PhantomData<P>);

impl<P: Exported> Handler for Single<P> {
    const METADATA: &'static PolicyMetadata = P::METADATA;
    fn validate_payload(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
        validate_payload::<P>(payload, cluster)
    }
    fn validate_request(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
        validate_request::<P>(request, settings, cluster)
    }
    fn validate_settings(settings: &[u8]) -> SettingsResponse {
        validate_settings::<P>(settings)
    }
    fn default_settings() -> serde_json::Value {
        crate::runtime::settings::Settings::<P::Settings>::default().to_json()
    }
    fn effective_settings(settings: &str) -> Result<serde_json::Value, String> {
        crate::runtime::settings::Settings::<P::Settings>::parse(settings).map(|s| s.to_json()).map_err(|e| e.to_string())
    }
}
