//! `gpu-node-avoidance` (mutating): a pod template that requests no GPU
//! gets a required node affinity that keeps its pods off GPU nodes (by
//! default `nvidia.com/gpu.present NotIn [true]`), merged into the affinity
//! it already has, and an annotation saying the platform added it.
//!
//! CPU work that lands on a GPU node takes the CPU and memory the GPU jobs
//! of that node need, and the GPUs sit idle. Asking every author to add the
//! affinity does not scale: people forget. The platform adds it for them.

mod settings;

use aigov_sdk::cluster::gpu::{ClaimLookup, ClaimsRead, Unread};
use aigov_sdk::model::pod::SelectorRequirement;
use aigov_sdk::model::scheduling::made_by_daemon_set;
use aigov_sdk::prelude::*;
use aigov_sdk::runtime::mutate::{self, may_edit_template, pod_metadata_path};

pub use settings::{NodeRequirement, Operator, Settings};

/// The rule.
pub struct GpuNodeAvoidance;

impl Policy for GpuNodeAvoidance {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        let Some(w) = req.workload() else {
            return Ok(v);
        };
        // A controller's copy (a Deployment's ReplicaSet) follows its owner;
        // a DaemonSet's pods belong on their node (as a node's mirror pods
        // do, which are bound to it by `nodeName`, below). A Node named as
        // controller by anyone but its kubelet proves nothing.
        if mutate::controlled_copy(req) || made_by_daemon_set(req) {
            return Ok(v);
        }
        for t in w.templates() {
            if t.is_partial() || !may_edit_template(req, t) || t.requests_gpu(&s.gpu_resource_names)? {
                continue;
            }
            // A pod bound to a node by name skips the scheduler, and the
            // kubelet would refuse it on a GPU node.
            if t.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
                continue;
            }
            let act = match gpu_label_choice(&t.spec, s) {
                Choice::None => match require_nodes(t, s) {
                    edits if edits.is_empty() => continue,
                    edits => Act::Edit(edits),
                },
                Choice::Own => continue,
                Choice::GpuNodes(field, shown) => Act::Warn(field, shown),
            };
            // DRA claims are read only now, where the answer decides.
            if !claims_bring_no_gpu(t, req, cluster, &mut v)? {
                continue;
            }
            let edits = match act {
                Act::Edit(edits) => edits,
                Act::Warn(field, shown) => {
                    v.warn(format!(
                        "`{}.{field}` selects GPU nodes (`{shown}`), but {} requests no GPU: its pods take CPU and memory the GPU jobs there need; left as is, select other nodes unless these are needed",
                        t.spec_path(),
                        who(t)
                    ));
                    continue;
                }
            };
            for e in edits {
                v.edit(e);
            }
            if let Some(meta) = pod_metadata_path(w, t) {
                let what: Vec<String> = s.node_requirements.iter().map(NodeRequirement::shown).collect();
                v.edit(mutate::annotation(
                    &meta,
                    &s.annotation,
                    &format!(
                        "required node affinity added by the platform: the pod requests no GPU, so it stays off GPU nodes ({})",
                        what.join(", ")
                    ),
                ));
            }
        }
        Ok(v)
    }
}

/// What the rule does to a template that requests no GPU, once its
/// claims say they bring none either.
enum Act {
    /// These edits.
    Edit(Vec<Edit>),
    /// Nothing but a warning: it selects GPU nodes, by this field and this
    /// selection.
    Warn(&'static str, String),
}

/// Whether template `t`'s DRA claims bring no GPU (true without claims,
/// reading nothing): each claim is read in the object's namespace, devices
/// of the shared `gpuDeviceClasses` counting as GPUs. A claim of a GPU
/// device class makes a GPU pod, left alone; so does one that cannot be
/// read, with a warning on `v`, since the rule never edits on a guess.
fn claims_bring_no_gpu(t: &PodTemplate<'_>, req: &Request<'_>, cluster: &dyn Cluster, v: &mut Verdict) -> Result<bool, Malformed> {
    if t.spec.resource_claims.is_empty() {
        return Ok(true);
    }
    let classes = req.gpu_classes();
    match t.read_claims(req.object_namespace(), cluster, ClaimLookup::shared(&classes))? {
        ClaimsRead::Read(gpus) => Ok(gpus.is_empty()),
        ClaimsRead::Unread(unread) => {
            let then = match unread.unread {
                Unread::Pending => {
                    "so the pods are left without the affinity that keeps CPU pods off GPU nodes; a pod created once the template exists gets it if its claims bring no GPU"
                }
                Unread::Failed | Unread::Offline => {
                    "so the pods may claim GPUs and are left without the affinity that keeps CPU pods off GPU nodes"
                }
            };
            unread.warn(then, v);
            Ok(false)
        }
    }
}

/// The edits that merge `nodeRequirements` into template `t`'s required
/// node affinity (none when it holds them already).
fn require_nodes(t: &PodTemplate<'_>, s: &Settings) -> Vec<Edit> {
    let values: Vec<Vec<&str>> = s.node_requirements.iter().map(|r| r.values.iter().map(String::as_str).collect()).collect();
    let requirements: Vec<(&str, &str, &[&str])> =
        s.node_requirements.iter().zip(&values).map(|(r, vs)| (r.key.as_str(), r.operator.as_str(), vs.as_slice())).collect();
    mutate::require_nodes(t, &requirements)
}

/// What the template's own node selection says about GPU nodes.
enum Choice {
    /// Nothing: the rule adds its requirements.
    None,
    /// It names a GPU node label and keeps off GPU nodes (or on nodes the
    /// requirements allow) by itself: left alone.
    Own,
    /// It selects GPU nodes, by this field (`nodeSelector`,
    /// `affinity.nodeAffinity`) and this selection: left alone, with a
    /// warning.
    GpuNodes(&'static str, String),
}

/// Reads the template's `nodeSelector` and required node affinity for GPU
/// node labels (`gpuNodeLabels` and the requirements' own keys). A pod that
/// names one has chosen about GPU nodes itself; adding a requirement that
/// contradicts its choice would leave it pending forever.
fn gpu_label_choice(spec: &PodSpec<'_>, s: &Settings) -> Choice {
    let is_gpu_label = |key: &str| s.node_requirements.iter().any(|r| r.key == key) || s.gpu_node_labels.iter().any(|g| g.matches(key));
    // Whether nodes whose `key` has one of `values` (any value, for none)
    // are GPU nodes: every value fails a requirement on that key, or the
    // key is a label only GPU nodes carry.
    let gpu_node = |key: &str, values: &[&str]| {
        let own: Vec<&NodeRequirement> = s.node_requirements.iter().filter(|r| r.key == key).collect();
        own.is_empty() || (!values.is_empty() && values.iter().all(|v| own.iter().any(|r| !r.allows(Some(v)))))
    };
    let mut choice = Choice::None;
    for (key, value) in &spec.node_selector {
        if is_gpu_label(key) {
            if gpu_node(key, &[value]) {
                return Choice::GpuNodes("nodeSelector", format!("{key}: {value}"));
            }
            choice = Choice::Own;
        }
    }
    let terms = spec.required_node_affinity().map(|ns| ns.node_selector_terms.as_slice()).unwrap_or_default();
    for r in terms.iter().flat_map(|t| &t.match_expressions).filter(|r| is_gpu_label(&r.key)) {
        if aims_at_gpu_nodes(r, &gpu_node) {
            let values: Vec<&str> = r.values.iter().map(|v| &**v).collect();
            let shown = if values.is_empty() {
                format!("{} {}", r.key, r.operator)
            } else {
                format!("{} {} [{}]", r.key, r.operator, values.join(", "))
            };
            return Choice::GpuNodes("affinity.nodeAffinity", shown);
        }
        choice = Choice::Own;
    }
    choice
}

/// Whether a required expression on a GPU node label aims the pod at GPU
/// nodes: `In` values that are all GPU values; `Exists`, `Gt` or `Lt` on a
/// label only GPU nodes carry (a GPU product, count or memory size).
fn aims_at_gpu_nodes(r: &SelectorRequirement<'_>, gpu_node: &dyn Fn(&str, &[&str]) -> bool) -> bool {
    match &*r.operator {
        "In" => {
            let values: Vec<&str> = r.values.iter().map(|v| &**v).collect();
            !values.is_empty() && gpu_node(&r.key, &values)
        }
        "Exists" | "Gt" | "Lt" => gpu_node(&r.key, &[]),
        _ => false,
    }
}

/// `the pod`, `` worker group `cpu` ``, `` the template ``.
fn who(t: &PodTemplate<'_>) -> String {
    match t.role {
        Role::Template => "the template".into(),
        _ => t.describe(),
    }
}

aigov_sdk::export_policy!(GpuNodeAvoidance);
