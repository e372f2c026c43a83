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

use aigov_sdk::cluster::gpu::ClaimSpec;
use aigov_sdk::model::scheduling::{LabelDemand, demand_field, label_demand, node_chosen_by_daemon_set};
use aigov_sdk::model::workload::trainer_overrides_lack;
use aigov_sdk::prelude::*;

use aigov_sdk::cluster::namespaces::Reported;

pub use settings::{AdminAccess, DeviceClasses, GFD_PRODUCT_LABEL, Products, Settings};

/// The rule.
pub struct GpuClassByNamespace;

impl Policy for GpuClassByNamespace {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        if let Some(kind) = claim_kind(req) {
            check_claim_object(req, kind, settings, cluster, &mut verdict)?;
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = Namespace::of_request(req, cluster);
        // Which entry applies, found when the first GPU template needs it.
        let mut entry: Option<Result<Option<&Products>, Reported>> = None;
        for template in workload.templates() {
            // A TrainJob's override or runtime patch writes no resources:
            // the trainer's decide for the pods it shapes, and the training
            // runtime's, which this rule does not see, for any other.
            let Some(holder) = workload.gpu_holder(template) else { continue };
            // Containers whose image `exemptImages` lists hold no GPU here.
            let exempt = ExemptGpus::of(holder, req, &settings.gpu_resource_names)?;
            let gpus = holder.gpu_use_counted(
                settings.gpu_sources(&req.gpu_classes()),
                &exempt,
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
            // A DaemonSet's pod is on a node its controller matched against
            // the DaemonSet's own selection, judged when the DaemonSet was;
            // the term naming that node replaced its required affinity.
            let from = Origin { workload, chosen_by_daemon_set: node_chosen_by_daemon_set(req, template).is_some() };
            check(&from, template, &gpus, products, settings, namespace.name(), &mut verdict);
        }
        Ok(verdict)
    }
}

/// `ResourceClaim` or `ResourceClaimTemplate`, when the request is for one
/// of them (`resource.k8s.io`).
fn claim_kind(req: &Request<'_>) -> Option<&'static str> {
    let k = req.kind();
    match (&*k.group, &*k.kind) {
        ("resource.k8s.io", "ResourceClaim") => Some("ResourceClaim"),
        ("resource.k8s.io", "ResourceClaimTemplate") => Some("ResourceClaimTemplate"),
        _ => None,
    }
}

/// A ResourceClaim or ResourceClaimTemplate itself: every device class its
/// requests may be given is one its namespace may request (`deviceClasses`,
/// and the products `deviceClassProducts` says the classes stand for), and
/// `adminAccess` only where `adminAccess` allows it.
fn check_claim_object(req: &Request<'_>, kind: &str, s: &Settings, cluster: &dyn Cluster, v: &mut Verdict) -> Result<(), Malformed> {
    let Some(text) = req.object_text() else { return Ok(()) };
    let (spec, at) = if kind == "ResourceClaim" {
        (ClaimSpec::of_claim(text, "the ResourceClaim")?, Path::root().keys(ClaimSpec::CLAIM))
    } else {
        (ClaimSpec::of_template(text, "the ResourceClaimTemplate")?, Path::root().keys(ClaimSpec::TEMPLATE))
    };
    if spec.requests.is_empty() {
        return Ok(());
    }
    let namespace = Namespace::of_request(req, cluster);
    let ns = namespace.name().to_string();
    let classes = if !s.device_classes.is_empty() {
        namespace.entry(&s.device_classes, |e| &e.namespaces, s.on_lookup_error, "which device classes its claims may request", v)
    } else {
        Ok(None)
    };
    let products = if s.device_class_products.is_empty() {
        Ok(None)
    } else {
        namespace.entry(&s.products, |p| &p.namespaces, s.on_lookup_error, "which GPU products its pods may use", v)
    };
    let requests = at.keys(&["devices", "requests"]);
    for (i, r) in spec.requests.iter().enumerate() {
        let rpath = requests.index(i);
        for (j, c) in r.choices.iter().enumerate() {
            let field = r.choice_path(&rpath, j, "deviceClassName");
            let class = c.device_class.as_str();
            if let Ok(Some(e)) = &classes
                && !e.allows(class)
            {
                v.violation(format!(
                    "`{field}` is `{class}`, a device class claims in namespace `{ns}` may not request; they may request {}: request one of those, or ask your cluster administrators",
                    may_request(e)
                ));
                continue;
            }
            if let Ok(Some(p)) = &products
                && let Some(product) = s.device_class_products.get(class)
                && !p.allows(product)
            {
                v.violation(format!(
                    "`{field}` is `{class}` (GPU product `{product}`, as `deviceClassProducts` says), which pods in namespace `{ns}` may not use; they may use {}",
                    may_use(p)
                ));
            }
        }
        if r.admin_access
            && let Some(a) = &s.admin_access
        {
            check_admin_access(req, &namespace, a, &r.admin_access_path(&rpath), s.on_lookup_error, v);
        }
    }
    Ok(())
}

/// `adminAccess: true` in a request: allowed when the requesting user, one
/// of their groups or the claim's namespace is.
fn check_admin_access(req: &Request<'_>, namespace: &Namespace<'_>, a: &AdminAccess, field: &Path, on: OnLookupError, v: &mut Verdict) {
    let user = req.user();
    let name: &str = &user.username;
    if a.users.iter().any(|g| g.matches(name)) || user.groups.iter().any(|grp| a.groups.iter().any(|g| g.matches(grp))) {
        return;
    }
    if let Some(sel) = &a.namespaces {
        match namespace.matches(sel) {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                namespace.lookup_failed(e, on, "whether its claims may ask for admin access", v);
                return;
            }
        }
    }
    let ns = namespace.name();
    v.violation(format!(
        "`{field}` is `true`, which gives the claim's pods access to devices other pods hold, for monitoring and management, but user `{name}` may not ask for it in namespace `{ns}`: remove it, or ask your cluster administrators to create the claim in a namespace set aside for device administration"
    ));
}

/// What claims may request: `` one of `gpu.nvidia.com`, `mig.nvidia.com` ``,
/// or `` any class but `*h100*` ``.
fn may_request(e: &DeviceClasses) -> String {
    let denied: Vec<&str> = e.denied.iter().map(|g| g.as_str()).collect();
    let allowed: Vec<&str> = e.allowed.iter().map(|g| g.as_str()).collect();
    match (allowed.is_empty(), denied.is_empty()) {
        (true, _) => format!("any class but {}", quoted(&denied)),
        (false, true) => one_of(&allowed),
        (false, false) => format!("{} but not {}", one_of(&allowed), quoted(&denied)),
    }
}

/// Where a template comes from.
struct Origin<'w, 'a> {
    /// The workload that holds it.
    workload: &'w Workload<'a>,
    /// The pod's node was chosen by its DaemonSet
    /// (`node_chosen_by_daemon_set`), so a product its node selection
    /// leaves open was pinned by the DaemonSet's, judged at the DaemonSet.
    chosen_by_daemon_set: bool,
}

/// Checks one template that holds GPUs against the entry that applies:
/// the products its claims' device classes give, then the products its
/// node selection lets it land on.
/// A TrainJob's override or runtime patch is judged on the products it
/// selects; one it leaves out is the training runtime's (its `nodeSelector`
/// is merged with the override's), and the trainer is warned once for
/// what no override of its pods selects. A DaemonSet's pod whose node its
/// controller chose is judged on its DaemonSet's selection ([`Origin`]).
fn check(from: &Origin<'_, '_>, t: &PodTemplate<'_>, gpus: &GpuUse, p: &Products, s: &Settings, ns: &str, v: &mut Verdict) {
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
        LabelDemand::Open if from.chosen_by_daemon_set || !unknown_product || (!p.required && !bound) || t.role == Role::Override => {}
        LabelDemand::Open => {
            let how = match example(p) {
                Some(e) => format!("set `nodeSelector: {{{key}: {}}}`, or a required node affinity on `{key}`", yaml_value(e)),
                None => format!("select one with `nodeSelector` or a required node affinity on `{key}`"),
            };
            if t.is_partial() {
                if !from.workload.trainer_overrides().any(|o| label_demand(&o.spec, key) != LabelDemand::Open) {
                    v.warn(format!(
                        "the trainer requests GPUs ({gpus}) and {}; its training runtime may, but this rule does not see it: pods in namespace `{ns}` may use {}",
                        trainer_overrides_lack("selects a GPU product"),
                        may_use(p),
                    ));
                }
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
/// required affinity.
fn selection_path(t: &PodTemplate<'_>, key: &str) -> Path {
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
