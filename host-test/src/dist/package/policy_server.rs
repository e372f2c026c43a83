//! `policies.yml`, the configuration of a standalone Kubewarden
//! policy-server: every rule, and the bundle when a rule is turned on.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use aigov_metadata::Metadata;
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::policy::BundleSelection;
use super::{Packaged, yaml};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerPolicy<'a> {
    module: String,
    policy_mode: &'a str,
    allowed_to_mutate: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    context_aware_resources: &'a [aigov_metadata::ContextAwareResource],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    host_capabilities: &'a [String],
    settings: Value,
}

/// `policies.yml` for a standalone `policy-server --policies policies.yml`:
/// every rule, and the bundle running the rules `enable` turns on (when it
/// turns on any).
pub fn policy_server_config(rules: &[Packaged], bundle: &Packaged, enable: &[String], registry: &str) -> Result<String> {
    fn entry<'m>(r: &'m Packaged, m: &'m Metadata, registry: &str, settings: Value) -> ServerPolicy<'m> {
        ServerPolicy {
            module: r.module_url(registry),
            policy_mode: r.mode.as_deref().unwrap_or("protect"),
            allowed_to_mutate: m.mutating,
            context_aware_resources: &m.context_aware_resources,
            host_capabilities: &m.host_capabilities,
            settings,
        }
    }
    let selection = if enable.is_empty() { None } else { Some(BundleSelection::of(rules, enable)?) };
    let mut map: BTreeMap<&str, ServerPolicy<'_>> =
        rules.iter().map(|r| (r.name.as_str(), entry(r, &r.metadata, registry, r.written_settings()))).collect();
    if let Some(s) = &selection {
        map.insert(bundle.name.as_str(), entry(bundle, &s.union, registry, s.settings.clone()));
    }
    let mut out = String::from(
        "# Every aigov rule for a standalone Kubewarden policy-server:\n\
         #   policy-server --policies policies.yml\n\
         # Each rule is served at /validate/<name>. `policyMode: monitor` logs instead of\n\
         # rejecting. Rules with `contextAwareResources` read those kinds from the cluster,\n\
         # so the policy-server needs a kubeconfig or in-cluster credentials allowed to get\n\
         # and list them; their `hostCapabilities` grant the host calls they make for it\n\
         # (kubernetes/get_resource, kubernetes/list_resources_by_namespace), since a\n\
         # standalone policy-server lets a policy make no host call its entry does not list.\n\
         # Settings hold only what differs from each rule's defaults, which\n\
         # <rule>/cluster-admission-policy.yaml lists.\n",
    );
    match &selection {
        Some(s) => {
            let names: Vec<&str> = s.on.iter().map(|r| r.name.as_str()).collect();
            let _ = writeln!(
                out,
                "# {} (/validate/{0}) runs the rules turned on ({}) in one call:\n\
                 # send a request to it OR to those rules' own endpoints, not both.",
                bundle.name,
                names.join(", ")
            );
        }
        None => {
            let _ = writeln!(out, "# No rule is turned on, so {} is not listed (regenerate with --enable).", bundle.name);
        }
    }
    out.push_str(&yaml(&map)?);
    Ok(out)
}
