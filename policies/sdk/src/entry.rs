//! The one evaluation path. The waPC module, the component and the native
//! harness all call these functions, so the three cannot disagree by
//! construction of the glue; only by the compiler or the host.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::request::{AdmissionRequest, Request, decode};
use crate::settings::{Mode, Settings};
use crate::verdict::{SettingsResponse, ValidationResponse};
use crate::{Cluster, Exported};

/// Key of the audit annotation that carries what audit mode let through.
pub const AUDIT_ANNOTATION: &str = "violations";

/// Kubewarden's `validate` payload: `{"request": ..., "settings": ...}`.
#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow)]
    request: AdmissionRequest<'a>,
    #[serde(borrow, default)]
    settings: Option<&'a RawValue>,
}

/// The same payload with the request left undecoded, to explain errors.
#[derive(Deserialize)]
struct RawPayload<'a> {
    #[serde(borrow)]
    request: &'a RawValue,
}

/// Validates a Kubewarden `validate` payload.
pub fn validate_payload<P: Exported>(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
    let Ok(text) = std::str::from_utf8(payload) else {
        return ValidationResponse::reject("the validation request is not UTF-8 JSON", Some(400));
    };
    // One pass on the happy path. On error, decode the request on its own so
    // the message is the one the component gives for the same request.
    match serde_json::from_str::<Payload<'_>>(text) {
        Ok(p) => evaluate::<P>(p.request, p.settings.map_or("{}", RawValue::get), cluster),
        Err(_) => {
            let message = match decode::<RawPayload<'_>>(text, "the validation request") {
                Err(e) => e.0,
                Ok(raw) => match decode::<AdmissionRequest<'_>>(raw.request.get(), "the admission request") {
                    Err(e) => e.0,
                    Ok(_) => "the validation request is malformed: `settings` is not valid JSON".into(),
                },
            };
            ValidationResponse::reject(message, Some(400))
        }
    }
}

/// Validates an `AdmissionRequest` JSON document with settings JSON (the
/// component's `validate`).
pub fn validate_request<P: Exported>(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    match decode::<AdmissionRequest<'_>>(request, "the admission request") {
        Ok(r) => evaluate::<P>(r, settings, cluster),
        Err(e) => ValidationResponse::reject(e.0, Some(400)),
    }
}

/// Validates a settings document (Kubewarden's `validate_settings`).
pub fn validate_settings<P: Exported>(settings: &[u8]) -> SettingsResponse {
    let Ok(text) = std::str::from_utf8(settings) else {
        return SettingsResponse {
            valid: false,
            message: Some("settings are not UTF-8 JSON".into()),
        };
    };
    match Settings::<P::Settings>::parse_valid(text).map(drop) {
        Ok(()) => SettingsResponse { valid: true, message: None },
        Err(e) => SettingsResponse {
            valid: false,
            message: Some(e.to_string()),
        },
    }
}

fn evaluate<P: Exported>(request: AdmissionRequest<'_>, settings: &str, cluster: &dyn Cluster) -> ValidationResponse {
    let settings = match Settings::<P::Settings>::parse_valid(settings) {
        Ok(s) => s,
        Err(e) => return ValidationResponse::reject(format!("invalid settings: {e}"), Some(400)),
    };
    let request = Request::new(request);
    if settings.exemptions.exempts(&request) {
        return ValidationResponse::accept();
    }
    let outcome = P::validate(&request, &settings.rule, cluster);
    let name = P::METADATA.name;
    match (outcome, settings.mode) {
        (Ok(verdict), mode) => {
            let (violations, mut warnings, mut audit_annotations) = verdict.into_parts();
            if violations.is_empty() {
                return ValidationResponse {
                    accepted: true,
                    warnings,
                    audit_annotations,
                    ..ValidationResponse::default()
                };
            }
            let message = violations.join("; ");
            match mode {
                Mode::Enforce => ValidationResponse {
                    accepted: false,
                    message: Some(message),
                    warnings,
                    audit_annotations,
                    ..ValidationResponse::default()
                },
                Mode::Audit => {
                    warnings.extend(violations.iter().map(|v| format!("{name} (audit mode, not enforced): {v}")));
                    audit_annotations.insert(AUDIT_ANNOTATION.into(), message);
                    ValidationResponse {
                        accepted: true,
                        warnings,
                        audit_annotations,
                        ..ValidationResponse::default()
                    }
                }
            }
        }
        (Err(malformed), Mode::Enforce) => ValidationResponse::reject(malformed.0, Some(400)),
        (Err(malformed), Mode::Audit) => {
            let mut r = ValidationResponse::accept();
            r.warnings.push(format!("{name} (audit mode, not enforced): cannot evaluate: {malformed}"));
            r.audit_annotations.insert(AUDIT_ANNOTATION.into(), format!("cannot evaluate: {malformed}"));
            r
        }
    }
}
