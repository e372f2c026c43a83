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
//! goes through while anything new is refused; but not one inside a pod
//! template the update makes a controller create pods from (a changed
//! template that rolls, a scale-up, a resumed workload:
//! [`Request::rollout`]), which those pods would carry and be refused
//! for, when the rule judges any of what is created; violations a matching
//! exception in force excuses are dropped too, each with a warning
//! ([`crate::runtime::exceptions`]); edits of a mutating rule are
//! applied only when the request is admitted and is a CREATE or UPDATE, and
//! on UPDATE only where the API server accepts them
//! ([`mutate::update_allows`]; the others become warnings).

use std::collections::BTreeMap;
use std::fmt::Write as _;

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
use crate::runtime::verdict::{SettingsResponse, ValidationResponse, written};

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
                mutated_object: mutated.and_then(written),
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
        // What the controllers create from this update carries what is
        // inside the template it is built from: refused then, so refused now.
        let rollout = if violations.iter().any(|(key, _)| existing.contains(key)) { request.rollout() } else { None };
        let rollout = rollout.filter(|r| judges_any::<P>(r.creates, &settings.rule));
        let mut kept = Vec::with_capacity(violations.len());
        for (key, v) in violations {
            if !existing.contains(&key) {
                kept.push((key, v));
            } else if let Some(why) = rollout.as_ref().and_then(|r| r.carries(&v)) {
                kept.push((key, format!("{v} ({why})")));
            } else {
                outcome.warnings.push(format!("{} (allowed: the object already had this before the update): {v}", P::METADATA.name));
            }
        }
        violations = kept;
    }
    if !violations.is_empty() && !shared.exceptions.is_empty() {
        violations = excuse::<P>(request, settings, cluster, violations, &mut outcome);
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

/// Key of the audit annotation that lists the violations exceptions excused.
pub const EXCEPTIONS_ANNOTATION: &str = "exceptions";

/// The violations the shared `exceptions` leave: each exception that
/// matches the request excuses what it covers while in force, with a
/// warning per violation excused; one expired, or whose date the host
/// cannot tell, excuses nothing and says so ([`crate::runtime::exceptions`]).
fn excuse<P: Exported>(
    request: &Request<'_>,
    settings: &Settings<P::Settings>,
    cluster: &dyn Cluster,
    violations: Vec<(String, String)>,
    outcome: &mut Outcome,
) -> Vec<(String, String)> {
    let name = P::METADATA.name;
    let shared = &settings.shared;
    let now = cluster.now();
    let mut left = violations;
    let mut excused = Vec::new();
    for (n, e) in shared.exceptions_for(name, request) {
        if left.is_empty() {
            break;
        }
        let covered: Vec<String> = if e.scoped_to_containers() {
            match without_containers::<P>(request, settings, cluster, e) {
                Some(remaining) => left.iter().map(|(k, _)| k).filter(|k| !remaining.contains(k)).cloned().collect(),
                None => Vec::new(),
            }
        } else {
            left.iter().map(|(k, _)| k.clone()).collect()
        };
        if covered.is_empty() {
            continue;
        }
        let (until, reason) = (&e.until, &e.reason);
        match now {
            None => outcome.warnings.push(format!(
                "{name}: exception {n} ({reason}) not applied: this host gives the rule no clock to tell whether `until: {until}` has passed; the Kubewarden module and the native harness read one"
            )),
            Some(now) if !e.in_force(now) => outcome.warnings.push(format!(
                "{name}: exception {n} expired on {until} ({reason}): what it excused is refused again; fix the workload, or give the exception a later `until`"
            )),
            Some(_) => {
                let (out, kept): (Vec<_>, Vec<_>) = left.into_iter().partition(|(k, _)| covered.contains(k));
                left = kept;
                for (_, v) in out {
                    outcome.warnings.push(format!("{name} (excused by exception {n} until {until}: {reason}): {v}"));
                    excused.push(format!("exception {n} until {until}: {v}"));
                }
            }
        }
    }
    if !excused.is_empty() {
        outcome.audit_annotations.insert(EXCEPTIONS_ANNOTATION.into(), excused.join("\n"));
    }
    left
}

/// The identities of the violations rule `P` finds when the containers
/// exception `e` names (by image or by name) are left alone as exempt
/// images are; `None` when it cannot say.
fn without_containers<P: Exported>(
    request: &Request<'_>,
    settings: &Settings<P::Settings>,
    cluster: &dyn Cluster,
    e: &crate::runtime::exceptions::Exception,
) -> Option<Vec<String>> {
    let shared = &settings.shared;
    let images: Vec<_> = shared.exemptions.images.iter().chain(&e.images).cloned().collect();
    request.set_exempt_images(Some(images.into()));
    request.set_exempt_names(Some(e.containers.clone().into()));
    let again = P::validate(request, &settings.rule, cluster);
    request.set_exempt_images(shared.exempt_images());
    request.set_exempt_names(None);
    again.ok().map(|v| v.violation_keys().to_vec())
}

/// Whether rule `P`, with its settings `rule`, judges any of `kinds`
/// (what controllers create from a workload, down to its pods).
fn judges_any<P: Exported>(kinds: &[WorkloadKind], rule: &P::Settings) -> bool {
    use crate::base::rule_settings::RuleSettings as _;
    kinds.iter().any(|k| P::METADATA.lists(k.group(), k.resource()) && rule.judges_kind(k.kind()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NoCluster;
    use crate::runtime::metadata::Rule;
    use crate::runtime::verdict::Verdict;

    /// Refuses every container whose image has no tag, one by one.
    struct Tagged;

    #[derive(Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    struct NoSettings {}

    impl crate::base::rule_settings::RuleSettings for NoSettings {
        const EXEMPTS_IMAGES: bool = true;
    }

    impl crate::runtime::policy::Policy for Tagged {
        type Settings = NoSettings;
        fn validate(request: &Request<'_>, _: &NoSettings, _: &dyn Cluster) -> Result<crate::runtime::verdict::Verdict, Malformed> {
            let mut v = Verdict::default();
            for t in request.workload().iter().flat_map(|w| w.templates()) {
                for c in t.containers().filter(|c| !request.leaves_alone(c)) {
                    let image = c.container.image.as_deref().unwrap_or("");
                    if !image.contains(':') {
                        v.violation_keyed(&*c.container.name, format!("container `{}`: tag the image", c.container.name));
                    }
                }
            }
            Ok(v)
        }
    }

    impl Exported for Tagged {
        const METADATA: &'static PolicyMetadata = &PolicyMetadata {
            name: "tagged",
            version: "0.1.0",
            rules: &[Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods"], operations: &["CREATE", "UPDATE"] }],
            mutating: false,
            background_audit: true,
            context_aware_resources: &[],
            annotations: &[],
        };
    }

    /// A cluster whose clock says `now`.
    struct At(Option<i64>);

    impl Cluster for At {
        fn get_resource(&self, a: &str, k: &str, n: &str, ns: Option<&str>) -> Result<String, crate::cluster::LookupError> {
            NoCluster.get_resource(a, k, n, ns)
        }
        fn list_resources_by_namespace(
            &self,
            a: &str,
            k: &str,
            ns: &str,
            l: Option<&str>,
            f: Option<&str>,
        ) -> Result<String, crate::cluster::LookupError> {
            NoCluster.list_resources_by_namespace(a, k, ns, l, f)
        }
        fn list_resources_all(&self, a: &str, k: &str, l: Option<&str>, f: Option<&str>) -> Result<String, crate::cluster::LookupError> {
            NoCluster.list_resources_all(a, k, l, f)
        }
        fn now(&self) -> Option<i64> {
            self.0
        }
    }

    fn request(namespace: &str) -> String {
        format!(
            r#"{{"uid":"1","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"{namespace}","operation":"CREATE","userInfo":{{"username":"u"}},"object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","labels":{{"app":"bert"}}}},"spec":{{"containers":[{{"name":"trainer","image":"train"}},{{"name":"sidecar","image":"registry.example.com/log"}}]}}}}}}"#
        )
    }

    const BEFORE: i64 = 1_803_859_199; // 2027-02-28T23:59:59Z
    const AFTER: i64 = 1_803_859_200; // 2027-03-01T00:00:00Z

    fn answer(exceptions: &str, namespace: &str, now: Option<i64>) -> ValidationResponse {
        let settings = format!(r#"{{"exceptions":{exceptions}}}"#);
        validate_request::<Tagged>(&request(namespace), &settings, &At(now))
    }

    #[test]
    fn an_exception_in_force_excuses_what_it_matches_and_says_so() {
        let e = r#"[{"namespaces":["team-*"],"objectSelector":{"matchLabels":{"app":"bert"}},"until":"2027-03-01","reason":"moving to tagged images"}]"#;
        let r = answer(e, "team-nlp", Some(BEFORE));
        assert!(r.accepted, "{r:?}");
        assert_eq!(
            r.warnings,
            [
                "tagged (excused by exception 1 until 2027-03-01: moving to tagged images): container `trainer`: tag the image",
                "tagged (excused by exception 1 until 2027-03-01: moving to tagged images): container `sidecar`: tag the image",
            ]
        );
        assert_eq!(
            r.audit_annotations.get(EXCEPTIONS_ANNOTATION).map(String::as_str),
            Some(
                "exception 1 until 2027-03-01: container `trainer`: tag the image\nexception 1 until 2027-03-01: container `sidecar`: tag the image"
            )
        );
        // Another namespace, another rule, another label: not matched.
        for (e, ns) in [
            (e, "web"),
            (r#"[{"rules":["other-rule"],"until":"2027-03-01","reason":"r"}]"#, "team-nlp"),
            (r#"[{"objectSelector":{"matchLabels":{"app":"gpt"}},"until":"2027-03-01","reason":"r"}]"#, "team-nlp"),
        ] {
            let r = answer(e, ns, Some(BEFORE));
            assert!(!r.accepted && r.warnings.is_empty(), "{e} {ns}: {r:?}");
        }
        let r = answer(r#"[{"rules":["other-rule","tagged"],"until":"2027-03-01","reason":"r"}]"#, "x", Some(BEFORE));
        assert!(r.accepted);
    }

    #[test]
    fn an_expired_exception_excuses_nothing_and_says_so() {
        let r = answer(r#"[{"until":"2027-03-01","reason":"moving"}]"#, "ml", Some(AFTER));
        assert!(!r.accepted);
        assert_eq!(r.message.as_deref(), Some("container `trainer`: tag the image\ncontainer `sidecar`: tag the image"));
        assert_eq!(
            r.warnings,
            [
                "tagged: exception 1 expired on 2027-03-01 (moving): what it excused is refused again; fix the workload, or give the exception a later `until`"
            ]
        );
        let r = answer(r#"[{"until":"2027-03-01","reason":"moving"}]"#, "ml", None);
        assert!(!r.accepted);
        assert!(r.warnings[0].starts_with("tagged: exception 1 (moving) not applied: this host gives the rule no clock"), "{r:?}");
    }

    #[test]
    fn an_exception_scoped_to_containers_excuses_only_theirs() {
        for e in [
            r#"[{"images":["registry.example.com/*"],"until":"2027-03-01","reason":"vendor sidecar"}]"#,
            r#"[{"containers":["side*"],"until":"2027-03-01","reason":"vendor sidecar"}]"#,
        ] {
            let r = answer(e, "ml", Some(BEFORE));
            assert!(!r.accepted);
            assert_eq!(r.message.as_deref(), Some("container `trainer`: tag the image"), "{e}");
            assert_eq!(
                r.warnings,
                ["tagged (excused by exception 1 until 2027-03-01: vendor sidecar): container `sidecar`: tag the image"]
            );
        }
        // Two exceptions: each excuses its own.
        let two = r#"[{"containers":["sidecar"],"until":"2027-03-01","reason":"a"},{"containers":["trainer"],"until":"2020-01-01","reason":"b"}]"#;
        let r = answer(two, "ml", Some(BEFORE));
        assert_eq!(r.message.as_deref(), Some("container `trainer`: tag the image"));
        assert_eq!(r.warnings.len(), 2, "{r:?}");
        assert!(r.warnings[1].starts_with("tagged: exception 2 expired on 2020-01-01 (b)"));
    }

    #[test]
    fn exceptions_are_settings_like_any_other() {
        let check = |s: &str| validate_settings::<Tagged>(s.as_bytes()).message;
        assert_eq!(check(r#"{"exceptions":[{"until":"2027-03-01","reason":"r"}]}"#), None);
        assert_eq!(check(r#"{"exceptions":[{"until":"2027-03-01"}]}"#).unwrap(), "setting `exceptions[0]`: missing field `reason`");
        assert_eq!(
            check(r#"{"exceptions":[{"until":"2027-03-01","reason":"r","namespace":["a"]}]}"#).unwrap(),
            "setting `exceptions[0].namespace`: unknown setting; known settings are `rules`, `namespaces`, `objectSelector`, `images`, `containers`, `until`, `reason`"
        );
        assert_eq!(
            check(r#"{"exceptions":[{"until":"2027-31-01","reason":"r"}]}"#).unwrap(),
            "setting `exceptions[0].until`: `2027-31-01` is not a date (`2027-03-01`) or an RFC 3339 date-time (`2027-03-01T00:00:00Z`)"
        );
    }
}
