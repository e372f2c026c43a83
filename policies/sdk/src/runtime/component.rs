//! The component face: the `admission-policy` world's exports and the
//! `cluster` import. Compiled only for `wasm32-unknown-unknown`.

use crate::bindings::aigov::policy::cluster as wit;
use crate::bindings::{Metadata, ResourceKind, Rule, SettingsVerdict, Verdict};
use crate::cluster::{Cluster, LookupError};
use crate::runtime::policy::Handler;

/// `validate` export.
pub fn validate<H: Handler>(request: &str, settings: &str) -> Verdict {
    let r = H::validate_request(request, settings, &ComponentCluster);
    Verdict {
        accepted: r.accepted,
        message: r.message,
        code: r.code,
        mutated_object: r.mutated_object.map(|v| v.get().to_string()),
        warnings: r.warnings,
        audit_annotations: r.audit_annotations.into_iter().collect(),
    }
}

/// `validate-settings` export.
pub fn validate_settings<H: Handler>(settings: &str) -> SettingsVerdict {
    let r = H::validate_settings(settings.as_bytes());
    SettingsVerdict { valid: r.valid, message: r.message }
}

/// `metadata` export.
pub fn metadata<H: Handler>() -> Metadata {
    let m = H::METADATA;
    let strings = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    Metadata {
        name: m.name.into(),
        version: m.version.into(),
        rules: m
            .rules
            .iter()
            .map(|r| Rule {
                api_groups: strings(r.api_groups),
                api_versions: strings(r.api_versions),
                resources: strings(r.resources),
                operations: strings(r.operations),
            })
            .collect(),
        mutating: m.mutating,
        background_audit: m.background_audit,
        context_aware_resources: m
            .context_aware_resources
            .iter()
            .map(|c| ResourceKind { api_version: c.api_version.into(), kind: c.kind.into() })
            .collect(),
        annotations: m.annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

/// Cluster lookups through the imported `cluster` interface.
struct ComponentCluster;

fn convert(e: wit::LookupError) -> LookupError {
    match e {
        wit::LookupError::NotFound(m) => LookupError::NotFound(m),
        wit::LookupError::Forbidden(m) => LookupError::Forbidden(m),
        wit::LookupError::Invalid(m) => LookupError::Invalid(m),
        wit::LookupError::Unavailable(m) => LookupError::Unavailable(m),
    }
}

impl Cluster for ComponentCluster {
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        wit::get_resource(api_version, kind, name, namespace).map_err(convert)
    }

    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        wit::list_resources_by_namespace(api_version, kind, namespace, label_selector, field_selector).map_err(convert)
    }

    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        wit::list_resources_all(api_version, kind, label_selector, field_selector).map_err(convert)
    }
}
