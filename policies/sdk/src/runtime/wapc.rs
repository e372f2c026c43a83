//! The Kubewarden face: waPC operations and the `kubewarden`/`kubernetes`
//! host calls. Compiled only for `wasm32-wasip1`.

use serde::Serialize;
use wapc_guest::{CallResult, host_call, register_function};

use crate::cluster::{Asked, Cluster, LookupError};
use crate::runtime::policy::Handler;

/// Registers the artifact's waPC operations. Called from `wapc_init`.
pub fn register<H: Handler>() {
    register_function("validate", validate::<H>);
    register_function("validate_settings", validate_settings::<H>);
    register_function("protocol_version", protocol_version);
}

fn validate<H: Handler>(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&H::validate_payload(payload, &WapcCluster))?)
}

fn validate_settings<H: Handler>(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&H::validate_settings(payload))?)
}

fn protocol_version(_: &[u8]) -> CallResult {
    Ok(br#""v1""#.to_vec())
}

/// Cluster lookups through Kubewarden's waPC host capabilities.
struct WapcCluster;

#[derive(Serialize)]
struct GetResource<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    disable_cache: bool,
}

#[derive(Serialize)]
struct ListResources<'a> {
    api_version: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label_selector: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field_selector: Option<&'a str>,
}

/// One `kubernetes` host call. Kubewarden's errors are words, not codes:
/// [`LookupError::from_kubewarden`] reads them by what was asked.
fn call<T: Serialize>(operation: &str, request: &T, asked: Asked<'_>) -> Result<String, LookupError> {
    let payload = serde_json::to_vec(request).map_err(|e| LookupError::Invalid(e.to_string()))?;
    match host_call("kubewarden", "kubernetes", operation, &payload) {
        Ok(bytes) => {
            String::from_utf8(bytes).map_err(|_| LookupError::Unavailable(format!("the host's `{operation}` answer is not UTF-8")))
        }
        Err(e) => {
            let text = e.to_string();
            Err(LookupError::from_kubewarden(text.strip_prefix("Host error: ").unwrap_or(&text), &asked))
        }
    }
}

impl Cluster for WapcCluster {
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        let asked = Asked { api_version, kind, name: Some(name), namespace };
        call("get_resource", &GetResource { api_version, kind, name, namespace, disable_cache: false }, asked)
    }

    fn list_resources_by_namespace(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        call(
            "list_resources_by_namespace",
            &ListResources { api_version, kind, namespace: Some(namespace), label_selector, field_selector },
            Asked { api_version, kind, name: None, namespace: Some(namespace) },
        )
    }

    fn list_resources_all(
        &self,
        api_version: &str,
        kind: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<String, LookupError> {
        call(
            "list_resources_all",
            &ListResources { api_version, kind, namespace: None, label_selector, field_selector },
            Asked { api_version, kind, name: None, namespace: None },
        )
    }
}
