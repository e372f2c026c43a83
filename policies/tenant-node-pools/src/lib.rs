//! `tenant-node-pools`: each tenant's pods run on the tenant's dedicated
//! node pool, and never on another tenant's.
//!
//! Nodes are labelled with the tenant they belong to (`tenant: team-a`) and
//! usually tainted with it (`tenant=team-a:NoSchedule`). A namespace belongs
//! to a tenant by a settings map of namespace patterns, or by its own
//! `tenant` label, read through the cluster interface (once per request).
//! A tenant's pod templates must select their pool (`nodeSelector` or
//! required node affinity pinning the pool label to the tenant), must not
//! select, or prefer, another tenant's pool, and must not tolerate another
//! tenant's taint. Since tenants are known only one namespace at a time,
//! "another tenant" is any pool value but one's own: a toleration on the
//! pool taint key with another value, or `Exists` on that key, or a
//! tolerate-everything toleration, reaches other tenants' nodes.

mod settings;

use std::collections::BTreeSet;

use aigov_sdk::model::pod::NodeSelectorTerm;
use aigov_sdk::model::scheduling::{
    LabelDemand, PREFERRED_AFFINITY, REQUIRED_AFFINITY, Taint, authored_tolerations, demand_field, label_demand, node_chosen_by_daemon_set,
    term_values, tolerates,
};
use aigov_sdk::model::workload::trainer_overrides_lack;
use aigov_sdk::prelude::*;

pub use settings::{RequirePool, Settings, WithoutTenant};

/// The rule.
pub struct TenantNodePools;

impl Policy for TenantNodePools {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        if workload.templates().next().is_none() {
            return Ok(verdict);
        }
        let namespace = Namespace::of_request(req, cluster);
        let ns = namespace.name();
        let owner = match tenant_of(&namespace, settings) {
            Ok(Some(tenant)) => Owner::Tenant(tenant),
            Ok(None) => match settings.without_tenant {
                WithoutTenant::Allow => Owner::Nobody,
                WithoutTenant::SharedPool => Owner::Shared(settings.shared_pool.clone()),
                WithoutTenant::Deny => {
                    let label = match &settings.tenant_label {
                        Some(l) => format!("no `{l}` label, and "),
                        None => String::new(),
                    };
                    verdict.violation(format!(
                        "namespace `{ns}` belongs to no tenant ({label}no namespace pattern of this rule's `tenants` matches it), and workloads run only in tenants' namespaces: ask your cluster administrators to assign it to a tenant"
                    ));
                    return Ok(verdict);
                }
            },
            Err(Unknown::Ambiguous(tenants)) => {
                verdict.violation(format!(
                    "namespace `{ns}` matches the namespace patterns of several tenants ({}) in this rule's `tenants`, so its node pool is unknown: ask your cluster administrators to fix the rule's settings",
                    quoted(&tenants)
                ));
                return Ok(verdict);
            }
            Err(Unknown::Lookup(e)) => {
                namespace.lookup_failed(e, settings.on_lookup_error, "which tenant's node pool its pods may use", &mut verdict);
                return Ok(verdict);
            }
        };
        let ctx = Context { settings, owner: &owner, ns, req };
        for template in workload.templates() {
            // A pod bound to a node by name skips the scheduler, and the
            // kubelet checks only `NoExecute` taints: its node selection,
            // which the kubelet does check, is all that keeps it on its pool.
            let bound = template.spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
            // A TrainJob's override or runtime patch is merged over its
            // training runtime's pod template: what it selects and
            // tolerates must be allowed, and a selection it leaves out is
            // the runtime's (the trainer is warned for its pods).
            let must_select = owner.pool().is_some()
                && template.role != Role::Override
                && (bound
                    || match settings.require_pool {
                        RequirePool::All => true,
                        RequirePool::Gpu => !template
                            .gpu_use(
                                settings.gpu_sources(&req.gpu_classes()),
                                ns,
                                cluster,
                                (", so whether its pods must run on their tenant's pool cannot be decided", "; admitted"),
                                &mut verdict,
                            )?
                            .is_empty(),
                        RequirePool::None => false,
                    });
            check_selection(workload, template, &ctx, must_select, bound, &mut verdict);
            check_tolerations(template, &ctx, &mut verdict);
        }
        Ok(verdict)
    }
}

/// Why a namespace's tenant is not known.
enum Unknown<'n> {
    /// Several tenants' patterns match it.
    Ambiguous(Vec<String>),
    /// Its labels could not be read.
    Lookup(&'n LookupError),
}

/// The namespace's tenant: from `tenants` (no lookup), else from its label.
fn tenant_of<'n>(ns: &'n Namespace<'_>, s: &Settings) -> Result<Option<String>, Unknown<'n>> {
    match s.mapped_tenants(ns.name()).as_slice() {
        [] => {}
        [one] => return Ok(Some((*one).to_string())),
        many => return Err(Unknown::Ambiguous(many.iter().map(|t| (*t).to_string()).collect())),
    }
    let Some(label) = &s.tenant_label else { return Ok(None) };
    match ns.label(label) {
        Ok(v) => Ok(v.filter(|v| !v.is_empty()).map(str::to_string)),
        Err(e) => Err(Unknown::Lookup(e)),
    }
}

/// Whose pool the namespace's pods run on.
enum Owner {
    /// The namespace's tenant's.
    Tenant(String),
    /// No tenant: the shared pool's.
    Shared(String),
    /// No tenant: anywhere but on tenants' pools.
    Nobody,
}

impl Owner {
    /// The pool label value of the pods' own pool.
    fn pool(&self) -> Option<&str> {
        match self {
            Owner::Tenant(t) | Owner::Shared(t) => Some(t),
            Owner::Nobody => None,
        }
    }
}

/// What every check needs.
struct Context<'a> {
    settings: &'a Settings,
    owner: &'a Owner,
    ns: &'a str,
    req: &'a Request<'a>,
}

impl Context<'_> {
    /// `namespace `x` belongs to tenant `a``.
    fn whose(&self) -> String {
        let ns = self.ns;
        match self.owner {
            Owner::Tenant(t) => format!("namespace `{ns}` belongs to tenant `{t}`"),
            Owner::Shared(p) => format!("namespace `{ns}` belongs to no tenant, and its pods run on the shared pool `{p}`"),
            Owner::Nobody => format!("namespace `{ns}` belongs to no tenant"),
        }
    }

    /// What to select instead.
    fn select_instead(&self) -> String {
        match self.owner.pool() {
            Some(p) => format!("select `{}: {p}` instead", self.settings.pool_label),
            None => "remove it".into(),
        }
    }
}

/// The path of a field of the pod spec.
fn spec_field(t: &PodTemplate<'_>, keys: &[&str]) -> Path {
    t.spec_path().keys(keys)
}

/// `node pool of tenant `b`` / `node pools of tenants `b`, `c``.
fn pools_of(values: &[&str]) -> String {
    match values {
        [one] => format!("node pool of tenant `{one}`"),
        many => format!("node pools of tenants {}", quoted(many)),
    }
}

/// What one node selector term aims at on `key`: the values it confines
/// the label to (its `In` values, less what `NotIn` removes, as the SDK's
/// [`term_values`] reads a term), or every value (`Exists`, `Gt`, `Lt`
/// without `In`); `None` when it does not aim at the key.
fn term_aim(term: &NodeSelectorTerm<'_>, key: &str) -> Option<Aim> {
    let on_key = |op: &str| term.match_expressions.iter().any(|r| &*r.key == key && &*r.operator == op);
    if on_key("In") {
        return term_values(term, key).map(Aim::Values);
    }
    (on_key("Exists") || on_key("Gt") || on_key("Lt")).then_some(Aim::Any)
}

/// What a pod's node selection aims at on the pool label.
enum Aim {
    Values(BTreeSet<String>),
    Any,
}

fn check_selection(w: &Workload<'_>, t: &PodTemplate<'_>, c: &Context<'_>, must_select: bool, bound: bool, v: &mut Verdict) {
    let key = c.settings.pool_label.as_str();
    let own = c.owner.pool();
    // The field is written only into a violation.
    let report_others = |field: &dyn Fn() -> Path, how: &str, values: &BTreeSet<String>, v: &mut Verdict| {
        let others: Vec<&str> = values.iter().map(String::as_str).filter(|x| Some(*x) != own).collect();
        if !others.is_empty() {
            v.violation(format!(
                "`{}` {how} the {} (node label `{key}`), but {}: {}",
                field(),
                pools_of(&others),
                c.whose(),
                c.select_instead()
            ));
        }
    };
    match label_demand(&t.spec, key) {
        LabelDemand::OneOf(values) => {
            let field = || spec_field(t, demand_field(&t.spec, key).unwrap_or_default());
            report_others(&field, "selects", &values, v);
        }
        LabelDemand::Open if bound && own.is_none() && c.settings.pool_taint.is_some() => v.violation(format!(
            "`{}` binds the pod to a node by name, skipping the scheduler and the pools' `NoSchedule` taints, but {}, so nothing keeps it off tenants' pools: add a required node affinity `{{key: {key}, operator: DoesNotExist}}` (the kubelet refuses the pod on a node that does not match it), or remove `nodeName`",
            t.spec_path().key("nodeName"),
            c.whose()
        )),
        LabelDemand::Open => {
            let required = t.spec.required_node_affinity().map(|n| n.node_selector_terms.iter().collect::<Vec<_>>()).unwrap_or_default();
            let preferred: Vec<&NodeSelectorTerm<'_>> = t.spec.preferred_node_affinity().iter().map(|p| &p.preference).collect();
            for (field, how, terms) in [(REQUIRED_AFFINITY, "selects", required), (PREFERRED_AFFINITY, "prefers", preferred)] {
                let mut values = BTreeSet::new();
                let mut any = false;
                for term in terms {
                    match term_aim(term, key) {
                        Some(Aim::Values(vs)) => values.extend(vs),
                        Some(Aim::Any) => any = true,
                        None => {}
                    }
                }
                if any {
                    v.violation(format!(
                        "`{}` {how} nodes of every tenant's pool (`{key}` with any value), but {}: {}",
                        spec_field(t, field),
                        c.whose(),
                        c.select_instead()
                    ));
                }
                report_others(&|| spec_field(t, field), how, &values, v);
            }
            // A DaemonSet's pod is on a node its controller matched
            // against the DaemonSet's own selection, judged when the
            // DaemonSet was; the term naming that node replaced it.
            if node_chosen_by_daemon_set(c.req, t).is_some() {
                return;
            }
            let Some(pool) = own.filter(|_| must_select) else { return };
            let (which, since) = match c.owner {
                Owner::Tenant(t) => (format!("the node pool of tenant `{t}`"), format!("namespace `{}` belongs to tenant `{t}`", c.ns)),
                _ => (format!("the shared node pool `{pool}`"), format!("namespace `{}` belongs to no tenant", c.ns)),
            };
            if t.is_partial() {
                // An override of the trainer's pods that selects the pool
                // label is judged where it does.
                if !w.trainer_overrides().any(|o| label_demand(&o.spec, key) != LabelDemand::Open) {
                    v.warn(format!(
                        "the trainer must select {which} (`{key}: {pool}`), since {since}; {}, and its training runtime may, but this rule does not see it",
                        trainer_overrides_lack("selects it")
                    ));
                }
                return;
            }
            if bound {
                v.violation(format!(
                    "`{}` binds the pod to a node by name, skipping the scheduler and the pools' taints, so the pod must select {which}, since {since}: add `nodeSelector: {{{key}: {}}}` (the kubelet refuses the pod on a node that does not match it), or remove `nodeName`",
                    t.spec_path().key("nodeName"),
                    yaml_value(pool)
                ));
                return;
            }
            v.violation(format!(
                "`{}` must select {which}, since {since}: add `nodeSelector: {{{key}: {}}}`, or a required node affinity pinning `{key}` to `{pool}`",
                t.spec_path(),
                yaml_value(pool)
            ));
        }
    }
}

fn check_tolerations(t: &PodTemplate<'_>, c: &Context<'_>, v: &mut Verdict) {
    let Some(taint) = &c.settings.pool_taint else { return };
    let own = c.owner.pool();
    let instead = match own {
        Some(p) => format!("tolerate only `{}={p}:{}`", taint.key, taint.effect),
        None => "remove it".into(),
    };
    for (i, tol) in authored_tolerations(c.req, t) {
        let exists = tol.operator.as_deref() == Some("Exists");
        let value = if exists { "" } else { tol.value.as_deref().unwrap_or("") };
        // An `Equal` toleration of one's own pool, or of a taint with no
        // value (no tenant's), reaches no other tenant's nodes.
        if !exists && (value.is_empty() || Some(value) == own) {
            continue;
        }
        if !tolerates(tol, &Taint { key: &taint.key, value, effect: &taint.effect }) {
            continue;
        }
        let what = if tol.key.as_deref().is_none_or(str::is_empty) {
            format!("tolerates every taint, other tenants' dedicated taints (`{}=…:{}`) included", taint.key, taint.effect)
        } else if exists {
            format!("tolerates the dedicated taint of every tenant (`{}` with any value)", taint.key)
        } else {
            format!("tolerates the dedicated taint of tenant `{value}` (`{}={value}:{}`)", taint.key, taint.effect)
        };
        let field = t.spec_path().key("tolerations").index(i);
        v.violation(format!("`{field}` {what}, but {}: {instead}", c.whose()));
    }
}

aigov_sdk::export_policy!(TenantNodePools);
