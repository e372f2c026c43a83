//! Settings of `gpu-class-by-namespace`.

use aigov_sdk::base::names::{label_key, label_value_pattern};
use aigov_sdk::prelude::*;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The node label NVIDIA's GPU feature discovery puts on GPU nodes, naming
/// the product (`Tesla-T4`, `NVIDIA-A10`, `NVIDIA-H100-80GB-HBM3`).
pub const GFD_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Which GPU products pods in which namespaces may use, in order: the
    /// first entry whose `namespaces` selects the pod's namespace applies;
    /// a namespace no entry selects is not checked. Default: "no H100 GPUs in
    /// dev namespaces", as NVIDIA's Kyverno guide writes it.
    pub products: Vec<Products>,
    /// The node label that names a node's GPU product. Default
    /// `nvidia.com/gpu.product` (NVIDIA GPU feature discovery).
    pub product_label: String,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// The GPU product each DRA device class gives, where a class stands
    /// for one product (`h100.nvidia.com: NVIDIA-H100-80GB-HBM3`): a claim
    /// of such a class is checked as a node selector naming that product
    /// would be. A claim of a class not listed says nothing of its product,
    /// so the pod's node selection must name one. Default: none.
    pub device_class_products: BTreeMap<String, String>,
    /// Which DRA device classes the ResourceClaims and
    /// ResourceClaimTemplates of which namespaces may request, in order:
    /// the first entry whose `namespaces` selects the claim's namespace
    /// applies; a namespace no entry selects is not checked. Default: none
    /// (claim objects are not checked).
    pub device_classes: Vec<DeviceClasses>,
    /// Who may create ResourceClaims and ResourceClaimTemplates that ask
    /// for `adminAccess` (access to devices other pods hold): requests in
    /// the namespaces `namespaces` selects, or by the users and groups
    /// listed. Default `null`: not checked (Kubernetes' own gate, the
    /// namespace label `resource.kubernetes.io/admin-access`, still holds).
    pub admin_access: Option<AdminAccess>,
    /// What a failed lookup (the Namespace, a resource claim) does: `deny`
    /// (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

/// The device classes claims in some namespaces may request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClasses {
    /// The namespaces this entry applies to (names, labels, or both).
    pub namespaces: NamespaceSelector,
    /// Device class patterns claims may request (`*`, `?` wildcards);
    /// empty or absent: any class not denied.
    #[serde(default)]
    pub allowed: Vec<Glob>,
    /// Device class patterns claims may not request, even when `allowed`
    /// matches.
    #[serde(default)]
    pub denied: Vec<Glob>,
}

impl DeviceClasses {
    /// Whether claims may request device class `class`.
    pub fn allows(&self, class: &str) -> bool {
        (self.allowed.is_empty() || self.allowed.iter().any(|g| g.matches(class))) && !self.denied.iter().any(|g| g.matches(class))
    }
}

/// Who may ask for DRA admin access: any one of the three suffices.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdminAccess {
    /// Namespaces whose claims may ask for it; absent: none by namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<NamespaceSelector>,
    /// Requesting users who may (`*`, `?` wildcards;
    /// `system:serviceaccount:<namespace>:<name>` for service accounts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<Glob>,
    /// Groups whose members may.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Glob>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            products: vec![Products {
                namespaces: NamespaceSelector::names(["dev", "dev-*", "*-dev"]),
                allowed: Vec::new(),
                denied: vec![Glob::new("*H100*")],
                required: true,
            }],
            product_label: GFD_PRODUCT_LABEL.into(),
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            device_class_products: BTreeMap::new(),
            device_classes: Vec::new(),
            admin_access: None,
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

/// The GPU products pods in some namespaces may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Products {
    /// The namespaces this entry applies to (names, labels, or both).
    pub namespaces: NamespaceSelector,
    /// Product patterns pods may select (`*`, `?` wildcards); empty or
    /// absent: any product not denied.
    #[serde(default)]
    pub allowed: Vec<Glob>,
    /// Product patterns pods may not select, even when `allowed` matches.
    #[serde(default)]
    pub denied: Vec<Glob>,
    /// Whether GPU pods must select a product at all (default `true`): a
    /// pod that names none can land on any GPU node, the forbidden ones
    /// included.
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

impl Products {
    /// Whether pods may run on GPU product `value`.
    pub fn allows(&self, value: &str) -> bool {
        (self.allowed.is_empty() || self.allowed.iter().any(|g| g.matches(value))) && !self.denied.iter().any(|g| g.matches(value))
    }
}

impl RuleSettings for Settings {
    /// A container whose image `exemptImages` lists holds no GPU for this
    /// rule: a pod whose every GPU is held by such containers need not
    /// pick a product. Claim objects have no image and are always judged.
    const EXEMPTS_IMAGES: bool = true;

    fn validate(&self) -> Result<(), SettingsError> {
        if self.products.is_empty() {
            return Err(SettingsError::new("products", "must list at least one entry, or the rule would check nothing"));
        }
        for (i, p) in self.products.iter().enumerate() {
            let at = |field: &str| format!("products[{i}].{field}");
            p.namespaces.validate(&at("namespaces"))?;
            for (list, patterns) in [("allowed", &p.allowed), ("denied", &p.denied)] {
                for (j, g) in patterns.iter().enumerate() {
                    if let Err(why) = label_value_pattern(g.as_str()) {
                        return Err(SettingsError::new(
                            format!("products[{i}].{list}[{j}]"),
                            format!("`{g}` can never match a GPU product label: {why}"),
                        ));
                    }
                }
            }
            if p.allowed.is_empty() && p.denied.is_empty() && !p.required && i + 1 == self.products.len() {
                return Err(SettingsError::new(
                    at("required"),
                    "is `false` and the entry allows and denies nothing: as the last entry it would check nothing (such an entry only serves as an exception before broader ones)",
                ));
            }
            for (j, g) in p.allowed.iter().enumerate() {
                let literal = !g.as_str().contains(['*', '?']);
                if let Some(d) = p.denied.iter().find(|d| literal && d.matches(g.as_str())) {
                    return Err(SettingsError::new(
                        format!("products[{i}].allowed[{j}]"),
                        format!("`{g}` is also denied by `{d}`, so it can never be used"),
                    ));
                }
            }
        }
        if let Err(why) = label_key(&self.product_label) {
            return Err(SettingsError::new("productLabel", format!("`{}` is not a valid node label key: {why}", self.product_label)));
        }
        for (class, product) in &self.device_class_products {
            if let Err(why) = aigov_sdk::base::names::name_part(product) {
                return Err(SettingsError::new(
                    format!("deviceClassProducts.{class}"),
                    format!("`{product}` is not a GPU product label value: {why}"),
                ));
            }
        }
        for (i, e) in self.device_classes.iter().enumerate() {
            e.namespaces.validate(&format!("deviceClasses[{i}].namespaces"))?;
            if e.allowed.is_empty() && e.denied.is_empty() {
                return Err(SettingsError::new(
                    format!("deviceClasses[{i}]"),
                    "allows and denies nothing, so it would check nothing: give `allowed` or `denied`",
                ));
            }
            for (list, patterns) in [("allowed", &e.allowed), ("denied", &e.denied)] {
                for (j, g) in patterns.iter().enumerate() {
                    device_class_pattern(g).map_err(|why| SettingsError::new(format!("deviceClasses[{i}].{list}[{j}]"), why))?;
                }
            }
            for (j, g) in e.allowed.iter().enumerate() {
                if let Some(d) = e.denied.iter().find(|d| !g.as_str().contains(['*', '?']) && d.matches(g.as_str())) {
                    return Err(SettingsError::new(
                        format!("deviceClasses[{i}].allowed[{j}]"),
                        format!("`{g}` is also denied by `{d}`, so it can never be requested"),
                    ));
                }
            }
        }
        if let Some(a) = &self.admin_access {
            if let Some(n) = &a.namespaces {
                n.validate("adminAccess.namespaces")?;
            }
            aigov_sdk::base::glob::non_empty_patterns(&"adminAccess.users", &a.users)?;
            aigov_sdk::base::glob::non_empty_patterns(&"adminAccess.groups", &a.groups)?;
        }
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

/// A device class pattern that some DeviceClass name (a DNS subdomain) can
/// match.
fn device_class_pattern(g: &Glob) -> Result<(), String> {
    let p = g.as_str();
    match p.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '*' | '?'))) {
        Some(c) => Err(format!(
            "`{p}` can never match a device class: `{c}` never appears in a DeviceClass name (lowercase letters, digits, `-` and `.`)"
        )),
        None if p.is_empty() => Err("must not be empty".into()),
        None => Ok(()),
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
    fn defaults_are_the_seeds() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert!(!s.products[0].allows("NVIDIA-H100-80GB-HBM3"));
        assert!(s.products[0].allows("NVIDIA-A10"));
    }

    #[test]
    fn one_line_dev_may_use_t4_and_a10() {
        let s = Full::<Settings>::parse_valid(
            r#"{"products":[{"namespaces":{"names":["dev-*"]},"allowed":["Tesla-T4","NVIDIA-A10","NVIDIA-A10G"]}]}"#,
        )
        .unwrap()
        .rule;
        let p = &s.products[0];
        assert!(p.required, "required defaults to true");
        assert!(p.allows("Tesla-T4") && p.allows("NVIDIA-A10G"));
        assert!(!p.allows("NVIDIA-H100-80GB-HBM3") && !p.allows("NVIDIA-A100-SXM4-80GB"));
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert_eq!(
            refused::<Settings>(r#"{"products":[]}"#),
            "setting `products`: must list at least one entry, or the rule would check nothing"
        );
        assert!(
            refused::<Settings>(r#"{"products":[{"namespaces":{},"allowed":["Tesla T4"]}]}"#)
                .starts_with("setting `products[0].allowed[0]`: `Tesla T4` can never match")
        );
        assert!(refused::<Settings>(r#"{"products":[{"namespaces":{},"required":false}]}"#).starts_with("setting `products[0].required`"));
        assert!(
            Full::<Settings>::parse_valid(r#"{"products":[{"namespaces":{"names":["dev-lab"]},"required":false},{"namespaces":{"names":["dev-*"]},"allowed":["Tesla-T4"]}]}"#).is_ok(),
            "an exception before a broader entry"
        );
        assert_eq!(
            refused::<Settings>(r#"{"products":[{"namespaces":{},"allowed":["NVIDIA-H100-80GB-HBM3"],"denied":["*H100*"]}]}"#),
            "setting `products[0].allowed[0]`: `NVIDIA-H100-80GB-HBM3` is also denied by `*H100*`, so it can never be used"
        );
        assert!(
            refused::<Settings>(r#"{"products":[{"namespaces":{"names":[""]},"denied":["*H100*"]}]}"#)
                .starts_with("setting `products[0].namespaces.names[0]`")
        );
        assert!(refused::<Settings>(r#"{"products":[{"allowed":["x"]}]}"#).contains("namespaces"), "namespaces is required");
        assert!(refused::<Settings>(r#"{"productLabel":"nvidia.com/gpu product"}"#).starts_with("setting `productLabel`"));
        assert!(refused::<Settings>(r#"{"products":[{"namespaces":{},"allow":["x"]}]}"#).contains("unknown setting"));
        assert!(
            refused::<Settings>(r#"{"deviceClasses":[{"namespaces":{}}]}"#)
                .starts_with("setting `deviceClasses[0]`: allows and denies nothing")
        );
        assert!(
            refused::<Settings>(r#"{"deviceClasses":[{"namespaces":{},"allowed":["GPU.nvidia.com"]}]}"#)
                .starts_with("setting `deviceClasses[0].allowed[0]`: `GPU.nvidia.com` can never match a device class")
        );
        assert!(
            refused::<Settings>(r#"{"deviceClasses":[{"namespaces":{},"allowed":["gpu.nvidia.com"],"denied":["*.nvidia.com"]}]}"#)
                .starts_with("setting `deviceClasses[0].allowed[0]`: `gpu.nvidia.com` is also denied")
        );
        assert!(refused::<Settings>(r#"{"adminAccess":{"users":[""]}}"#).starts_with("setting `adminAccess.users[0]`"));
        assert!(
            refused::<Settings>(r#"{"adminAccess":{"namespaces":{"names":[""]}}}"#)
                .starts_with("setting `adminAccess.namespaces.names[0]`")
        );
        assert!(refused::<Settings>(r#"{"adminAccess":{"user":["a"]}}"#).contains("unknown setting"));
        let s = accepted::<Settings>(r#"{"adminAccess":{}}"#);
        assert_eq!(s.admin_access, Some(AdminAccess::default()), "`{{}}`: admin access refused everywhere");
    }
}
