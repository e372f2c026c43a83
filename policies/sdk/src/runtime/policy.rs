//! What a rule is ([`Policy`]), what an artifact answers ([`Handler`]: one
//! rule, or the bundle), and the native face the harness links
//! ([`NativePolicy`]).

use crate::base::error::Malformed;
use crate::base::rule_settings::RuleSettings;
use crate::cluster::Cluster;
use crate::model::request::Request;
use crate::runtime::metadata::PolicyMetadata;
use crate::runtime::verdict::{SettingsResponse, ValidationResponse, Verdict};

/// An admission rule.
pub trait Policy {
    /// The rule's own settings (the shared `mode`, exemptions and
    /// `allowExistingViolations` are handled by the SDK before `validate` is
    /// called).
    type Settings: RuleSettings;

    /// Evaluates one request. Return `Ok(Verdict::accept())` for kinds and
    /// operations the rule does not govern, and `Err(Malformed)` only when the
    /// input cannot be evaluated (rejected with code 400).
    fn validate(request: &Request<'_>, settings: &Self::Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed>;
}

/// A rule made exportable by `export_policy!`: its metadata is attached.
pub trait Exported: Policy {
    /// The rule's metadata, from its `metadata.yml`.
    const METADATA: &'static PolicyMetadata;
}

/// What an artifact answers: one rule, or the bundle. The waPC, component
/// and native faces are generic over it.
pub trait Handler {
    /// The artifact's metadata.
    const METADATA: &'static PolicyMetadata;
    /// Kubewarden `validate`: the `{"request", "settings"}` payload.
    fn validate_payload(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse;
    /// Component `validate`: request JSON and settings JSON.
    fn validate_request(request: &str, settings: &str, cluster: &dyn Cluster) -> ValidationResponse;
    /// `validate_settings`.
    fn validate_settings(settings: &[u8]) -> SettingsResponse;
    /// The default settings, shared keys included, as JSON.
    fn default_settings() -> serde_json::Value;
    /// Every setting as `settings` (JSON) decide it, keys left out at the
    /// value they take, as JSON: two settings objects configure the same
    /// policy exactly when these agree. A key's default may follow another
    /// key (`workload-security`'s `level`), so comparing a key with the
    /// defaults alone cannot tell whether leaving it out changes anything.
    fn effective_settings(settings: &str) -> Result<serde_json::Value, String>;
}

/// An artifact's entry points as native functions, for the aigov harness.
#[derive(Clone, Copy)]
pub struct NativePolicy {
    /// The metadata.
    pub metadata: &'static PolicyMetadata,
    /// Kubewarden `validate`: the `{"request", "settings"}` payload in.
    pub validate: fn(&[u8], &dyn Cluster) -> ValidationResponse,
    /// Component `validate`: request JSON and settings JSON in.
    pub validate_request: fn(&str, &str, &dyn Cluster) -> ValidationResponse,
    /// `validate_settings`.
    pub validate_settings: fn(&[u8]) -> SettingsResponse,
    /// The default settings, shared keys included, as JSON.
    pub default_settings: fn() -> serde_json::Value,
    /// [`Handler::effective_settings`].
    pub effective_settings: fn(&str) -> Result<serde_json::Value, String>,
}

impl NativePolicy {
    /// The entry points of handler `H`.
    pub const fn of<H: Handler>() -> NativePolicy {
        NativePolicy {
            metadata: H::METADATA,
            validate: H::validate_payload,
            validate_request: H::validate_request,
            validate_settings: H::validate_settings,
            default_settings: H::default_settings,
            effective_settings: H::effective_settings,
        }
    }
}
