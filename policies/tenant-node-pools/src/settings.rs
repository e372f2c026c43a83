//! Settings of `tenant-node-pools`.

use std::collections::BTreeMap;

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::base::names::{label_key, name_part};
use aigov_sdk::model::scheduling::TaintSetting;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// The Namespace label that names its tenant, read through the cluster
    /// interface; `null`: tenants come from `tenants` only. Default
    /// `tenant`.
    pub tenant_label: Option<String>,
    /// Tenants by namespace name patterns (tenant: patterns), tried before
    /// the Namespace label; a namespace matching one tenant's patterns needs
    /// no lookup.
    pub tenants: BTreeMap<String, Vec<Glob>>,
    /// The node label whose value names the tenant a node belongs to.
    /// Default `tenant`.
    pub pool_label: String,
    /// The taint dedicated nodes carry, with the tenant as its value (`key`
    /// and `effect`; no `value`); `null`: pools are not tainted. Default
    /// `{key: tenant, effect: NoSchedule}`.
    pub pool_taint: Option<TaintSetting>,
    /// What pods in namespaces without a tenant do: `allow` (run anywhere
    /// but on tenants' pools; default), `deny`, or `sharedPool` (run on the
    /// pool `sharedPool` names, as if it were their tenant).
    pub without_tenant: WithoutTenant,
    /// The pool label value of the shared pool, for `withoutTenant:
    /// sharedPool`. Default `shared`.
    pub shared_pool: String,
    /// Which pods must select their tenant's pool: `all` (default), `gpu`
    /// (pods that request GPUs), or `none` (only the checks that keep pods
    /// off other tenants' pools apply).
    pub require_pool: RequirePool,
    /// Extended resources that count as GPUs (wildcards allowed), for
    /// `requirePool: gpu`.
    pub gpu_resource_names: GpuResources,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// What a failed lookup (the Namespace, a resource claim) does: `deny`
    /// (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tenant_label: Some("tenant".into()),
            tenants: BTreeMap::new(),
            pool_label: "tenant".into(),
            pool_taint: Some(TaintSetting::no_schedule("tenant")),
            without_tenant: WithoutTenant::Allow,
            shared_pool: "shared".into(),
            require_pool: RequirePool::All,
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

/// What pods in namespaces without a tenant do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WithoutTenant {
    /// They run anywhere but on tenants' pools.
    #[default]
    Allow,
    /// They are refused.
    Deny,
    /// They run on the shared pool.
    SharedPool,
}

/// Which pods must select their tenant's pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RequirePool {
    /// Every pod.
    #[default]
    All,
    /// Pods that request GPUs.
    Gpu,
    /// None: pods are only kept off other tenants' pools.
    None,
}

impl Settings {
    /// The tenants whose namespace patterns match `namespace`, in name order.
    pub fn mapped_tenants(&self, namespace: &str) -> Vec<&str> {
        self.tenants.iter().filter(|(_, patterns)| patterns.iter().any(|g| g.matches(namespace))).map(|(t, _)| t.as_str()).collect()
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if let Some(l) = &self.tenant_label {
            label_key(l).map_err(|why| SettingsError::new("tenantLabel", format!("`{l}` is not a valid label key: {why}")))?;
        } else if self.tenants.is_empty() {
            return Err(SettingsError::new(
                "tenants",
                "must name at least one tenant when `tenantLabel` is `null`, or no namespace would have a tenant",
            ));
        }
        for (tenant, patterns) in &self.tenants {
            name_part(tenant).map_err(|why| {
                SettingsError::new("tenants", format!("`{tenant}` cannot be a tenant: it must be a node label value ({why})"))
            })?;
            if patterns.is_empty() {
                return Err(SettingsError::new(format!("tenants.{tenant}"), "must list at least one namespace pattern"));
            }
            non_empty_patterns(&format_args!("tenants.{tenant}"), patterns)?;
        }
        label_key(&self.pool_label)
            .map_err(|why| SettingsError::new("poolLabel", format!("`{}` is not a valid node label key: {why}", self.pool_label)))?;
        if let Some(t) = &self.pool_taint {
            t.validate("poolTaint")?;
            if t.value.is_some() {
                return Err(SettingsError::new("poolTaint.value", "must not be set: the taint's value is each tenant's name"));
            }
        }
        if self.without_tenant == WithoutTenant::SharedPool {
            name_part(&self.shared_pool).map_err(|why| {
                SettingsError::new("sharedPool", format!("`{}` is not a valid node label value: {why}", self.shared_pool))
            })?;
            if self.tenants.contains_key(&self.shared_pool) {
                return Err(SettingsError::new(
                    "sharedPool",
                    format!("`{}` is also a tenant in `tenants`: the shared pool must not be a tenant's", self.shared_pool),
                ));
            }
        }
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

impl Settings {
    /// Where the rule finds GPUs, as the SDK's `PodTemplate::gpu_use` reads it.
    pub fn gpu_sources<'s>(&'s self, classes: &'s [Glob]) -> aigov_sdk::cluster::gpu::GpuSources<'s> {
        aigov_sdk::cluster::gpu::GpuSources {
            resources: &self.gpu_resource_names,
            claims: self.resource_claims.lookup(classes),
            on_lookup_error: self.on_lookup_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        let s = Full::<Settings>::parse_valid(r#"{"tenantLabel":null,"tenants":{"team-a":["team-a","team-a-*"],"team-b":["team-b-*"]},"withoutTenant":"sharedPool","poolTaint":null}"#)
            .unwrap()
            .rule;
        assert_eq!(s.mapped_tenants("team-a-dev"), ["team-a"]);
        assert!(s.mapped_tenants("kube-system").is_empty());
        assert!(s.pool_taint.is_none());
    }

    #[test]
    fn contradictions_are_refused() {
        assert!(refused::<Settings>(r#"{"tenantLabel":null}"#).starts_with("setting `tenants`: must name at least one tenant"));
        assert!(refused::<Settings>(r#"{"tenants":{"Team A":["a-*"]}}"#).starts_with("setting `tenants`: `Team A` cannot be a tenant"));
        assert!(refused::<Settings>(r#"{"tenants":{"a":[]}}"#).starts_with("setting `tenants.a`: must list at least one"));
        assert!(refused::<Settings>(r#"{"tenants":{"a":[""]}}"#).starts_with("setting `tenants.a[0]`: must not be empty"));
        assert!(refused::<Settings>(r#"{"poolTaint":{"key":"tenant","value":"a"}}"#).starts_with("setting `poolTaint.value`"));
        assert!(
            refused::<Settings>(r#"{"withoutTenant":"sharedPool","sharedPool":"a","tenants":{"a":["a-*"]}}"#)
                .starts_with("setting `sharedPool`: `a` is also a tenant")
        );
        assert!(refused::<Settings>(r#"{"withoutTenant":"shared"}"#).contains("withoutTenant"));
        assert!(refused::<Settings>(r#"{"poolLabel":"node pool"}"#).starts_with("setting `poolLabel`"));
    }
}
