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
    /// a namespace no entry selects is not checked. Default: the seed's "no
    /// H100 GPUs in dev namespaces".
    pub products: Vec<Products>,
    /// The node label that names a node's GPU product. Default
    /// `nvidia.com/gpu.product` (NVIDIA GPU feature discovery).
    pub product_label: String,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// GPUs claimed through Dynamic Resource Allocation: the pod's
    /// ResourceClaims and ResourceClaimTemplates are read (on by default),
    /// and a pod whose claims bring GPU devices is held to the same
    /// products.
    pub resource_claims: ResolvedClaims,
    /// The GPU product each DRA device class gives, where a class stands
    /// for one product (`h100.nvidia.com: NVIDIA-H100-80GB-HBM3`): a claim
    /// of such a class is checked as a node selector naming that product
    /// would be. A claim of a class not listed says nothing of its product,
    /// so the pod's node selection must name one. Default: none.
    pub device_class_products: BTreeMap<String, String>,
    /// What a failed lookup (the Namespace, a resource claim) does: `deny`
    /// (default) or `allow`.
    pub on_lookup_error: OnLookupError,
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
            resource_claims: ResolvedClaims::default(),
            device_class_products: BTreeMap::new(),
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
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

impl Settings {
    /// Where the rule finds GPUs, as the SDK's `PodTemplate::gpu_use` reads it.
    pub fn gpu_sources(&self) -> aigov_sdk::cluster::gpu::GpuSources<'_> {
        aigov_sdk::cluster::gpu::GpuSources {
            resources: &self.gpu_resource_names,
            claims: self.resource_claims.lookup(),
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
    }
}
