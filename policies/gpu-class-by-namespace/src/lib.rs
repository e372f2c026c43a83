//! `gpu-class-by-namespace`: pods that request GPUs in the namespaces a
//! setting selects run only on the GPU products allowed there ("dev may use
//! T4 and A10, never H100"), and name a product at all.
//!
//! A GPU product is a node label value (`nvidia.com/gpu.product`, written by
//! NVIDIA's GPU feature discovery: `Tesla-T4`, `NVIDIA-A10`,
//! `NVIDIA-H100-80GB-HBM3`). The rule reads which products a pod template
//! can land on from its `nodeSelector` and required node affinity, as the
//! scheduler does, and matches them against the entry of `products` whose
//! namespace selector selects the pod's namespace (its labels are read
//! through the cluster interface, once, and only when a selector needs
//! them).

mod settings;

use aigov_sdk::model::scheduling::{LabelDemand, demand_field, label_demand};
use aigov_sdk::prelude::*;

use aigov_sdk::cluster::namespaces::Reported;

pub use settings::{GFD_PRODUCT_LABEL, Products, Settings};

/// The rule.
pub struct GpuClassByNamespace;

impl Policy for GpuClassByNamespace {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = Namespace::of_request(req, cluster);
        // Which entry applies, found when the first GPU template needs it.
        let mut entry: Option<Result<Option<&Products>, Reported>> = None;
        for template in workload.templates() {
            let gpus = template.gpu_use(
                settings.gpu_sources(),
                namespace.name(),
                cluster,
                (", so the GPU products its pods get cannot be checked", "; admitted"),
                &mut verdict,
            )?;
            if gpus.is_empty() {
                continue;
            }
            let products = *entry.get_or_insert_with(|| {
                namespace.entry(
                    &settings.products,
                    |p| &p.namespaces,
                    settings.on_lookup_error,
                    "which GPU products its pods may use",
                    &mut verdict,
                )
            });
            let Ok(Some(products)) = products else {
                return Ok(verdict);
            };
            check(template, &gpus, products, settings, namespace.name(), &mut verdict);
        }
        Ok(verdict)
    }
}

/// Checks one template that holds GPUs against the entry that applies:
/// the products its claims' device classes give, then the products its
/// node selection lets it land on.
fn check(t: &PodTemplate<'_>, gpus: &GpuUse, p: &Products, s: &Settings, ns: &str, v: &mut Verdict) {
    let key = s.product_label.as_str();
    let mut unknown_product = !gpus.requests.is_empty();
    for claim in &gpus.claims {
        for class in &claim.classes {
            let Some(product) = s.device_class_products.get(class) else {
                unknown_product = true;
                continue;
            };
            if !p.allows(product) {
                v.violation(format!(
                    "`{}` claims devices of class `{class}` (GPU product `{product}`, as `deviceClassProducts` says) through {}, which pods in namespace `{ns}` may not use; they may use {}",
                    t.spec_path().key("resourceClaims"),
                    claim.source,
                    may_use(p),
                ));
            }
        }
    }
    // A pod bound to a node by name skips the scheduler; the kubelet still
    // refuses it on a node its node selection does not match, so it must
    // name a product for the check to mean anything.
    let bound = t.spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
    match label_demand(&t.spec, key) {
        LabelDemand::OneOf(values) => {
            let bad: Vec<&str> = values.iter().map(String::as_str).filter(|x| !p.allows(x)).collect();
            if bad.is_empty() {
                return;
            }
            let products = if bad.len() == 1 { "GPU product" } else { "GPU products" };
            v.violation(format!(
                "`{}` selects {products} {} for `{key}`, which pods in namespace `{ns}` may not use; they may use {}",
                selection_path(t, key),
                quoted(&bad),
                may_use(p),
            ));
        }
        LabelDemand::Open if !unknown_product || (!p.required && !bound) => {}
        LabelDemand::Open => {
            let how = match example(p) {
                Some(e) => format!("set `nodeSelector: {{{key}: {}}}`, or a required node affinity on `{key}`", yaml_value(&e)),
                None => format!("select one with `nodeSelector` or a required node affinity on `{key}`"),
            };
            if t.is_partial() {
                v.warn(format!(
                    "the trainer requests GPUs ({gpus}) and `spec.podTemplateOverrides` selects no GPU product; its training runtime may, but this rule does not see it: pods in namespace `{ns}` may use {}",
                    may_use(p),
                ));
                return;
            }
            if bound && !p.required {
                v.violation(format!(
                    "`{}` binds the pod to a node by name, skipping the scheduler, and the pod requests GPUs ({gpus}) but selects no GPU product, so it can be bound to any GPU node; pods in namespace `{ns}` may use {}: {how} (the kubelet refuses the pod on a node that does not match it)",
                    t.spec_path().key("nodeName"),
                    may_use(p),
                ));
                return;
            }
            v.violation(format!(
                "`{}` requests GPUs ({gpus}) but selects no GPU product, so its pods can land on any GPU node; pods in namespace `{ns}` may use {}: {how}",
                t.spec_path(),
                may_use(p),
            ));
        }
    }
}

/// The field that pins the product label: the node selector or the
/// required affinity (a TrainJob's trainer: its pod template overrides).
fn selection_path(t: &PodTemplate<'_>, key: &str) -> Path {
    if t.is_partial() {
        return Path::root().keys(&["spec", "podTemplateOverrides"]);
    }
    match demand_field(&t.spec, key) {
        Some(field) => t.spec_path().keys(field),
        None => t.spec_path(),
    }
}

/// What pods may use: `` one of `Tesla-T4`, `NVIDIA-A10` ``, with the
/// exceptions, or `` any product but `*H100*` ``.
fn may_use(p: &Products) -> String {
    let denied: Vec<&str> = p.denied.iter().map(|g| g.as_str()).collect();
    let allowed: Vec<&str> = p.allowed.iter().map(|g| g.as_str()).collect();
    match (allowed.is_empty(), denied.is_empty()) {
        (true, true) => "any product".into(),
        (true, false) => format!("any product but {}", quoted(&denied)),
        (false, true) => one_of(&allowed),
        (false, false) => format!("{} but not {}", one_of(&allowed), quoted(&denied)),
    }
}

/// A product to suggest: the first allowed one without wildcards.
fn example(p: &Products) -> Option<&str> {
    p.allowed.iter().map(|g| g.as_str()).find(|g| !g.contains(['*', '?']))
}

aigov_sdk::export_policy!(GpuClassByNamespace);
