//! `gpu-access`: only authorized workloads reach GPU nodes, and CPU work
//! stays off them.
//!
//! - A pod template that requests GPUs runs as a service account allowed in
//!   its namespace (`serviceAccounts`) and selects GPU nodes the way the
//!   cluster labels them (`requiredNodeSelector`, by default the Kyverno
//!   example's `accelerator: nvidia-gpu`).
//! - A pod template that requests no GPU does not aim at GPU nodes (node
//!   selector or affinity on a GPU node label) and does not tolerate their
//!   taint: CPU batch jobs parked on GPU nodes take the CPUs and memory GPU
//!   jobs need, and keep the GPUs idle.
//! - A workload labelled `workload-type: cpu-training` requests no GPU and
//!   states a node preference.
//! - Optionally, no container that requests no GPU sets
//!   `NVIDIA_VISIBLE_DEVICES` to devices (under the NVIDIA runtime it would
//!   see the node's GPUs outside every request and quota), and containers
//!   that request GPUs declare it.
//!
//! The namespace's labels are read through the cluster interface only when
//! an entry of `serviceAccounts` selects namespaces by label, once per
//! request.

mod settings;

use aigov_sdk::model::scheduling::{
    LabelDemand, NODE_SELECTOR, PREFERRED_AFFINITY, REQUIRED_AFFINITY, authored_tolerations, demand_field, label_demand,
    made_by_daemon_set, node_chosen_by_daemon_set, tolerates,
};
use aigov_sdk::model::workload::trainer_overrides_lack;
use aigov_sdk::prelude::*;

use aigov_sdk::cluster::namespaces::Reported;

pub use settings::{CpuTraining, DEFAULT_NODE_LABEL, ServiceAccounts, Settings, VISIBLE_DEVICES, VisibleDevices};

/// The rule.
pub struct GpuAccess;

impl Policy for GpuAccess {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = Namespace::of_request(req, cluster);
        let node_agent = is_node_agent(req, workload) && !settings.check_daemon_sets;
        // The service-account entry that applies: found when the first GPU
        // template needs it; `Err(Reported)` once a failed lookup is reported.
        let mut accounts: Option<Result<Option<&ServiceAccounts>, Reported>> = None;
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
                (", so whether its pods hold GPUs cannot be decided", "; admitted"),
                &mut verdict,
            )?;
            if template.role != Role::Override {
                check_visible_devices(template, &exempt, &gpus, settings, node_agent, &mut verdict)?;
            }
            if let Some(c) = settings.cpu_training.as_ref().filter(|c| is_cpu_training(workload, template, c)) {
                check_cpu_training(workload, template, &gpus, c, &mut verdict);
                if !gpus.is_empty() {
                    // The fix is to drop the GPUs, not to get GPU access.
                    continue;
                }
            }
            if gpus.is_empty() {
                // Claims not read may hold GPUs this rule does not see; GPUs
                // of exempt containers make no CPU pod.
                if !node_agent && !gpus.unresolved && !exempt.holds_gpus() {
                    check_stays_off_gpu_nodes(req, template, settings, &mut verdict);
                }
                continue;
            }
            let entry = *accounts.get_or_insert_with(|| {
                namespace.entry(
                    &settings.service_accounts,
                    |a| &a.namespaces,
                    settings.on_lookup_error,
                    "which service accounts may use GPUs there",
                    &mut verdict,
                )
            });
            if let Ok(Some(entry)) = entry {
                check_service_account(workload, template, &gpus, entry, namespace.name(), &mut verdict);
            }
            // A DaemonSet's pod is on a node its controller matched against
            // the DaemonSet's own selection, judged when the DaemonSet was;
            // the term naming that node replaced its required affinity.
            let chosen = node_chosen_by_daemon_set(req, template).is_some();
            check_gpu_node_selection(workload, template, &gpus, settings, chosen, &mut verdict);
        }
        Ok(verdict)
    }
}

/// `visibleDevices`: a container that requests no GPU (no GPU resource, no
/// claim that brings GPUs) must not set `NVIDIA_VISIBLE_DEVICES` to
/// devices; a container that requests a GPU resource of `requireWithGpu`
/// must set it. The variable's last definition is the one the container
/// gets. `node_agent`: a DaemonSet's pods (left alone unless
/// `checkDaemonSets`).
fn check_visible_devices(
    t: &PodTemplate<'_>,
    exempt: &ExemptGpus,
    gpus: &GpuUse,
    s: &Settings,
    node_agent: bool,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let vd = &s.visible_devices;
    if !vd.refuse_without_gpu && vd.require_with_gpu.is_empty() {
        return Ok(());
    }
    for c in t.containers() {
        let path = t.container_path(&c);
        if exempt.container(&path) {
            continue;
        }
        let resources = t.container_gpus(&c, &s.gpu_resource_names)?;
        let claims = &c.container.resources.claims;
        let by_claims = claims.iter().any(|cl| gpus.claims.iter().any(|g| g.claim == *cl.name));
        let set = c.container.env.iter().enumerate().rfind(|(_, e)| *e.name == *VISIBLE_DEVICES);
        // Claims not read may hold GPUs this rule does not see.
        let unseen = gpus.unresolved && !claims.is_empty();
        let holds_none = resources.is_empty() && !by_claims && !unseen;
        if vd.refuse_without_gpu
            && !node_agent
            && holds_none
            && let Some((i, e)) = set
        {
            let field = path.key("env").index(i);
            let who = c.describe();
            let fix = "request the GPUs it needs (`nvidia.com/gpu`), or set it to `void`";
            match e.value.as_deref().map(str::trim) {
                _ if e.from_source => v.violation(format!(
                    "`{field}` sets `{VISIBLE_DEVICES}` from `valueFrom`, which this rule cannot read, but {who} requests no GPU: under the NVIDIA container runtime a value naming devices would show it the node's GPUs with no request, no quota and no scheduling; {fix}"
                )),
                None | Some("" | "void" | "none") => {}
                Some(value) => v.violation(format!(
                    "`{field}` sets `{VISIBLE_DEVICES}` to `{value}`, but {who} requests no GPU: under the NVIDIA container runtime it would see the node's GPUs with no request, no quota and no scheduling; {fix}"
                )),
            }
        }
        let required: Vec<&str> =
            resources.iter().map(|(n, _)| n.as_str()).filter(|n| vd.require_with_gpu.iter().any(|g| g.matches(n))).collect();
        if !required.is_empty() && set.is_none() && !t.is_partial() {
            v.violation(format!(
                "{} requests {} but does not set `{VISIBLE_DEVICES}`, which says its image is built to use NVIDIA GPUs: add it to `{}`",
                c.describe(),
                quoted(&required),
                path.key("env")
            ));
        }
    }
    Ok(())
}

/// A DaemonSet, or a Pod its DaemonSet controller created: an agent that
/// runs on every node by design.
fn is_node_agent(req: &Request<'_>, w: &Workload<'_>) -> bool {
    w.kind == WorkloadKind::DaemonSet || made_by_daemon_set(req)
}

/// Whether the workload or the template carries the CPU training label.
fn is_cpu_training(w: &Workload<'_>, t: &PodTemplate<'_>, c: &CpuTraining) -> bool {
    let has = |m: &ObjectMeta<'_>| m.label(&c.label) == Some(c.value.as_str());
    has(&w.metadata) || t.metadata.as_ref().is_some_and(has)
}

/// The path of a field of the pod spec.
fn spec_field(t: &PodTemplate<'_>, keys: &[&str]) -> Path {
    t.spec_path().keys(keys)
}

/// The service account the pods run as. A TrainJob's trainer writes none:
/// the overrides that shape its pods may, each judged where it writes one,
/// or its training runtime, which this rule does not see. An override
/// that writes none leaves the runtime's.
fn check_service_account(w: &Workload<'_>, t: &PodTemplate<'_>, gpus: &GpuUse, e: &ServiceAccounts, ns: &str, v: &mut Verdict) {
    let spec = &t.spec;
    let named = spec.service_account_name.as_deref().or(spec.service_account.as_deref()).filter(|s| !s.is_empty());
    if t.role == Role::Override && (named.is_none() || e.allowed.is_empty()) {
        return;
    }
    let account = spec.service_account();
    if e.allowed.iter().any(|g| g.matches(account)) {
        return;
    }
    if e.allowed.is_empty() {
        v.violation(format!(
            "`{}` requests GPUs ({}), but no workload in namespace `{ns}` may use GPUs: run it in a namespace with GPU access, or ask your cluster administrators",
            t.spec_path(),
            gpus
        ));
        return;
    }
    let allowed: Vec<&str> = e.allowed.iter().map(|g| g.as_str()).collect();
    let fix = match allowed.iter().find(|a| !a.contains(['*', '?'])) {
        Some(a) => format!("set `serviceAccountName: {a}`"),
        None => format!("run as a service account matching {}", quoted(&allowed)),
    };
    if t.role == Role::Trainer {
        let overridden = w
            .trainer_overrides()
            .any(|o| o.spec.service_account_name.as_deref().or(o.spec.service_account.as_deref()).is_some_and(|s| !s.is_empty()));
        if !overridden {
            v.warn(format!(
                "the trainer requests GPUs ({}) and {}; its training runtime may, but this rule does not see it: pods that request GPUs in namespace `{ns}` must run as {}",
                gpus,
                trainer_overrides_lack("sets a service account"),
                one_of(&allowed)
            ));
        }
        return;
    }
    let field = if spec.service_account_name.as_deref().is_some_and(|s| !s.is_empty())
        || spec.service_account.as_deref().is_none_or(str::is_empty)
    {
        spec_field(t, &["serviceAccountName"])
    } else {
        spec_field(t, &["serviceAccount"])
    };
    let is = match named {
        Some(a) => format!("is `{a}`"),
        None => "is not set, so the pods run as `default`".into(),
    };
    v.violation(format!(
        "`{field}` {is}, but pods that request GPUs ({}) in namespace `{ns}` must run as {}: {fix}",
        gpus,
        one_of(&allowed)
    ));
}

/// GPU pods select GPU nodes as `requiredNodeSelector` says. A TrainJob's
/// override or runtime patch that shapes GPU pods must select them so where
/// it selects the label at all; where it does not, the training runtime
/// may (its `nodeSelector` is merged with the override's), and the
/// trainer is warned once for what no override of its pods selects.
/// `chosen`: the pod's node was chosen by its DaemonSet
/// (`node_chosen_by_daemon_set`), so what its node selection leaves open
/// was pinned by the DaemonSet's.
fn check_gpu_node_selection(w: &Workload<'_>, t: &PodTemplate<'_>, gpus: &GpuUse, s: &Settings, chosen: bool, v: &mut Verdict) {
    let mut missing: Vec<String> = Vec::new();
    for (key, value) in &s.required_node_selector {
        match label_demand(&t.spec, key) {
            LabelDemand::Open if chosen => {}
            LabelDemand::Open
                if t.role == Role::Trainer && w.trainer_overrides().any(|o| label_demand(&o.spec, key) != LabelDemand::Open) => {}
            LabelDemand::Open => missing.push(format!("{key}: {}", yaml_value(value))),
            LabelDemand::OneOf(values) if values.iter().all(|x| x == value) => {}
            LabelDemand::OneOf(values) => {
                let field = match demand_field(&t.spec, key) {
                    Some(f) => spec_field(t, f),
                    None => spec_field(t, &[]),
                };
                let got: Vec<&str> = values.iter().map(String::as_str).collect();
                v.violation(format!(
                    "`{field}` selects nodes with `{key}` {}, but pods that request GPUs ({}) must select exactly `{key}: {value}`",
                    one_of(&got),
                    gpus
                ));
            }
        }
    }
    if missing.is_empty() {
        return;
    }
    if t.role == Role::Override {
        return;
    }
    let add = format!("nodeSelector: {{{}}}", missing.join(", "));
    if t.is_partial() {
        v.warn(format!(
            "the trainer requests GPUs ({}) and {}; its training runtime may, but this rule does not see it: GPU pods need `{add}`",
            gpus,
            trainer_overrides_lack("selects GPU nodes")
        ));
        return;
    }
    v.violation(format!(
        "`{}` requests GPUs ({}) but does not select GPU nodes: add `{add}` (or a required node affinity with the same values)",
        t.spec_path(),
        gpus
    ));
}

/// A node label selection aimed at GPU nodes: where, and what.
struct Aim {
    field: &'static [&'static str],
    label: String,
}

/// The places the template's node selection aims at GPU nodes: a node
/// selector or a required or preferred affinity expression with a positive
/// operator (`In`, `Exists`, `Gt`, `Lt`) on a GPU node label, or on a
/// `requiredNodeSelector` label with its GPU value. `NotIn` and
/// `DoesNotExist` keep pods away and are fine.
fn aims(t: &PodTemplate<'_>, s: &Settings) -> Vec<Aim> {
    let gpu_key = |k: &str| s.gpu_node_labels.iter().any(|g| g.matches(k));
    let mut out: Vec<Aim> = Vec::new();
    let mut push = |field: &'static [&'static str], label: String| {
        if !out.iter().any(|a| a.field == field && a.label == label) {
            out.push(Aim { field, label });
        }
    };
    for (k, val) in &t.spec.node_selector {
        if gpu_key(k) {
            push(NODE_SELECTOR, format!("{k}"));
        } else if s.required_node_selector.get(&**k).is_some_and(|gv| gv == &**val) {
            push(NODE_SELECTOR, format!("{k}: {val}"));
        }
    }
    let mut expressions = |field: &'static [&'static str],
                           reqs: &mut dyn Iterator<Item = &aigov_sdk::model::pod::SelectorRequirement<'_>>| {
        for r in reqs {
            let positive = matches!(&*r.operator, "In" | "Exists" | "Gt" | "Lt");
            if !positive {
                continue;
            }
            if gpu_key(&r.key) {
                push(field, r.key.to_string());
            } else if let Some(gv) = s.required_node_selector.get(&*r.key) {
                let hits = match &*r.operator {
                    "In" => r.values.iter().any(|x| x == gv.as_str()),
                    "Exists" => true,
                    _ => false,
                };
                if hits {
                    push(field, format!("{}: {gv}", r.key));
                }
            }
        }
    };
    if let Some(ns) = t.spec.required_node_affinity() {
        expressions(REQUIRED_AFFINITY, &mut ns.node_selector_terms.iter().flat_map(|t| t.match_expressions.iter()));
    }
    expressions(PREFERRED_AFFINITY, &mut t.spec.preferred_node_affinity().iter().flat_map(|p| p.preference.match_expressions.iter()));
    out
}

fn check_stays_off_gpu_nodes(req: &Request<'_>, t: &PodTemplate<'_>, s: &Settings, v: &mut Verdict) {
    // A TrainJob's override shapes the trainer's pods (see `gpu_holder`).
    let who = if t.is_partial() { "the trainer".to_string() } else { format!("`{}`", t.spec_path()) };
    for aim in aims(t, s) {
        let how = if aim.field == PREFERRED_AFFINITY { "prefers" } else { "selects" };
        v.violation(format!(
            "`{}` {how} GPU nodes (`{}`), but {who} requests no GPU: remove it, so that GPU nodes stay free for GPU work",
            spec_field(t, aim.field),
            aim.label
        ));
    }
    for (i, tol) in authored_tolerations(req, t) {
        let tolerated: Vec<String> = s.gpu_taints.iter().filter(|g| tolerates(tol, &g.taint())).map(ToString::to_string).collect();
        if tolerated.is_empty() {
            continue;
        }
        let field = t.spec_path().key("tolerations").index(i);
        let every = tol.key.as_deref().is_none_or(str::is_empty);
        let what = match (every, tolerated.len()) {
            (true, 1) => format!("tolerates every taint, the GPU node taint {} included", quoted(&tolerated)),
            (true, _) => format!("tolerates every taint, the GPU node taints {} included", quoted(&tolerated)),
            (false, 1) => format!("tolerates the GPU node taint {}", quoted(&tolerated)),
            (false, _) => format!("tolerates the GPU node taints {}", quoted(&tolerated)),
        };
        v.violation(format!(
            "`{field}` {what}, but {who} requests no GPU: remove it, so that CPU work does not take GPU nodes' CPUs and memory"
        ));
    }
}

fn check_cpu_training(w: &Workload<'_>, t: &PodTemplate<'_>, gpus: &GpuUse, c: &CpuTraining, v: &mut Verdict) {
    let label = format!("{}: {}", c.label, c.value);
    // An override's GPUs are the trainer's, reported there; a node
    // preference it leaves out is the training runtime's.
    if t.role == Role::Override {
        return;
    }
    for g in &gpus.requests {
        let names: Vec<&str> = g.resources.iter().map(|(n, _)| n.as_str()).collect();
        let at = if t.is_partial() { t.path().key("resourcesPerNode") } else { g.container_path.key("resources") };
        v.violation(format!(
            "`{at}` requests GPUs ({}), but the workload is labelled `{label}`, and CPU training requests no GPU: remove the GPU request, or label the workload for GPU training",
            quoted(&names)
        ));
    }
    for claim in &gpus.claims {
        v.violation(format!(
            "`{}` claims GPUs ({}), but the workload is labelled `{label}`, and CPU training requests no GPU: remove the claim, or label the workload for GPU training",
            spec_field(t, &["resourceClaims"]),
            claim.describe()
        ));
    }
    if !c.require_node_preference {
        return;
    }
    let states = |spec: &aigov_sdk::model::pod::PodSpec<'_>| {
        !spec.node_selector.is_empty()
            || !spec.preferred_node_affinity().is_empty()
            || spec.required_node_affinity().is_some_and(|n| !n.node_selector_terms.is_empty())
    };
    if states(&t.spec) || (t.role == Role::Trainer && w.trainer_overrides().any(|o| states(&o.spec))) {
        return;
    }
    let ask = "add a `nodeSelector` for the CPU nodes it should run on, or a preferred node affinity";
    if t.is_partial() {
        v.warn(format!(
            "the trainer is labelled `{label}` and {}; its training runtime may, but this rule does not see it: {ask}",
            trainer_overrides_lack("states a node preference")
        ));
        return;
    }
    v.violation(format!("`{}` states no node preference, but CPU training workloads (`{label}`) must: {ask}", t.spec_path()));
}

aigov_sdk::export_policy!(GpuAccess);
