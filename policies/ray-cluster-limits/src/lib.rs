//! `ray-cluster-limits`: Ray clusters (RayCluster, and the cluster embedded in
//! a RayJob or RayService) stay within per-group GPU and replica limits, an
//! optional cap on the cluster's GPUs at maximum scale, and carry the
//! governance labels.
//!
//! A Ray autoscaler scales each worker group up to its `maxReplicas` with
//! nobody in the loop, and KubeRay's default `maxReplicas` is 2147483647. One
//! unbounded worker group can drain a shared GPU pool or, with a node
//! autoscaler, buy one; even 8 workers of 4 GPUs left at maximum scale for a
//! month cost about $70,000 at $3 per GPU-hour. So the bounds are checked when
//! the cluster is submitted, not on the invoice.

mod settings;

use aigov_sdk::text::count;
use aigov_sdk::{
    Cluster, GpuRequest, GpuResources, Malformed, ObjectMeta, Operation, Policy, RayCluster, Request, Verdict,
    WorkerGroup, Workload, WorkloadKind,
};

pub use settings::{COMPUTE_TYPE_LABEL, Settings};

/// KubeRay's default `maxReplicas` (the largest int32), which the API server
/// fills in when the field is absent: no limit.
const KUBERAY_UNBOUNDED: i64 = 2_147_483_647;

/// The rule.
pub struct RayClusterLimits;

impl Policy for RayClusterLimits {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        // Subresources (`status`) and objects being deleted never reach the
        // rule: the SDK admits them.
        if !matches!(req.operation(), Operation::Create | Operation::Update) {
            return Ok(verdict);
        }
        // Decide on the kind before decoding: other kinds are not read at all.
        let kind = req.kind();
        if !matches!(
            WorkloadKind::of(&kind.group, &kind.kind),
            Some(WorkloadKind::RayCluster | WorkloadKind::RayJob | WorkloadKind::RayService)
        ) {
            return Ok(verdict);
        }
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        for p in check(workload, settings)? {
            verdict.violation(p);
        }
        Ok(verdict)
    }
}

/// Every problem of a Ray workload, in document order: the object's labels,
/// the `compute-type` label against the GPUs requested, each worker group,
/// then the cluster's total.
pub fn check(w: &Workload<'_>, s: &Settings) -> Result<Vec<String>, Malformed> {
    let mut out = s.required_labels.check(&w.metadata.labels, "metadata.labels");
    // A RayJob that runs on an existing cluster (`clusterSelector`) embeds no
    // cluster spec: only its labels are checked.
    let Some(ray) = &w.ray else { return Ok(out) };
    let gpus = ClusterGpus::of(ray, &s.gpu_resource_names)?;
    if s.check_compute_type {
        out.extend(compute_type(&w.metadata, ray, &gpus));
    }
    for (group, &per_worker) in ray.worker_groups.iter().zip(&gpus.workers) {
        check_group(group, per_worker, s, &mut out)?;
    }
    if let Some(limit) = s.max_total_gpus {
        out.extend(total(ray, &gpus, limit));
    }
    Ok(out)
}

/// GPUs one pod of each part of a cluster holds, as the scheduler counts
/// them (all containers, init and sidecar containers included).
struct ClusterGpus {
    head: u64,
    /// Per worker group, in order.
    workers: Vec<u64>,
}

impl ClusterGpus {
    fn of(ray: &RayCluster<'_>, names: &GpuResources) -> Result<ClusterGpus, Malformed> {
        let head = match &ray.head {
            Some(t) => t.gpu_units_per_pod(names)?,
            None => 0,
        };
        let workers = ray
            .worker_groups
            .iter()
            .map(|g| g.template.gpu_units_per_pod(names))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClusterGpus { head, workers })
    }
}

/// `` `spec.workerGroupSpecs[1]` (`gpu-workers`) ``, or the path alone for a
/// group without a name.
fn group_ref(g: &WorkerGroup<'_>) -> String {
    match g.name.as_deref() {
        Some(name) if !name.trim().is_empty() => format!("`{}` (`{name}`)", g.path),
        _ => format!("`{}`", g.path),
    }
}

/// `` `gpu-workers` ``, or the path for a group without a name.
fn group_short(g: &WorkerGroup<'_>) -> String {
    match g.name.as_deref() {
        Some(name) if !name.trim().is_empty() => format!("`{name}`"),
        _ => format!("`{}`", g.path),
    }
}

fn check_group(g: &WorkerGroup<'_>, gpus: u64, s: &Settings, out: &mut Vec<String>) -> Result<(), Malformed> {
    let who = group_ref(g);
    for (field, value) in [("replicas", g.replicas), ("minReplicas", g.min_replicas)] {
        if let Some(n) = value
            && n < 0
        {
            out.push(format!("{who} has `{field}: {n}`: set `{field}` to 0 or more"));
        }
    }
    out.extend(replica_range(g, &who));
    let (limit, kind) = if gpus > 0 {
        (s.max_gpu_worker_replicas, "a worker group that requests GPUs")
    } else {
        (s.max_cpu_worker_replicas, "a worker group without GPUs")
    };
    out.extend(max_replicas(g.max_replicas, limit, kind, &who));
    if let Some(hosts) = g.num_of_hosts
        && hosts < 1
    {
        out.push(format!(
            "{who} has `numOfHosts: {hosts}`: set `numOfHosts` to 1 or more (the pods of each worker replica), or leave it out for 1"
        ));
    }
    let max = s.max_gpus_per_worker;
    if gpus > u64::from(max) {
        let containers = g.template.gpu_requests(&s.gpu_resource_names)?;
        out.push(format!(
            "{who} requests {} per worker ({}), but a worker may have at most {max}: request at most {} in each worker pod",
            count(gpus, "GPU"),
            breakdown(&containers),
            count(u64::from(max), "GPU"),
        ));
    }
    Ok(())
}

/// `minReplicas <= replicas <= maxReplicas`, with KubeRay's defaults for
/// absent fields (0, 0, unbounded), as the API server applies them before
/// admission. Negative values are reported on their own, not here.
fn replica_range(g: &WorkerGroup<'_>, who: &str) -> Option<String> {
    let min = g.min_replicas.unwrap_or(0);
    let max = g.max_replicas.unwrap_or(KUBERAY_UNBOUNDED);
    if min < 0 || max < 0 {
        return None;
    }
    if min > max {
        return Some(format!(
            "{who} has `minReplicas: {min}` above `maxReplicas: {max}`: set them so that `minReplicas <= replicas <= maxReplicas`"
        ));
    }
    let replicas = match g.replicas {
        Some(r) if r < 0 => return None,
        Some(r) => r,
        None => 0,
    };
    let stated = match g.replicas {
        Some(r) => format!("has `replicas: {r}`"),
        None => "has no `replicas`, which KubeRay defaults to 0,".into(),
    };
    let range = if max == KUBERAY_UNBOUNDED {
        format!("to {min} or more")
    } else {
        format!("between {min} and {max}")
    };
    if replicas < min {
        Some(format!("{who} {stated} below `minReplicas: {min}`: set `replicas` {range}"))
    } else if replicas > max {
        Some(format!("{who} {stated} above `maxReplicas: {max}`: set `replicas` {range}"))
    } else {
        None
    }
}

/// `maxReplicas` against the group's limit; absent (or KubeRay's default,
/// which is what an absent value becomes) is unbounded.
fn max_replicas(max: Option<i64>, limit: u32, kind: &str, who: &str) -> Option<String> {
    let fix = format!("set `maxReplicas` to at most {limit} (the limit for {kind})");
    match max {
        None => Some(format!("{who} has no `maxReplicas`, so KubeRay lets it scale without limit: {fix}")),
        Some(KUBERAY_UNBOUNDED) => Some(format!(
            "{who} has `maxReplicas: {KUBERAY_UNBOUNDED}`, KubeRay's default for no limit: {fix}"
        )),
        Some(n) if n < 0 => Some(format!(
            "{who} has `maxReplicas: {n}`: set `maxReplicas` between 0 and {limit} (the limit for {kind})"
        )),
        Some(n) if n > i64::from(limit) => Some(format!(
            "{who} has `maxReplicas: {n}`, but {kind} may scale to at most {}: set `maxReplicas` to {limit} or less",
            count(u64::from(limit), "worker")
        )),
        Some(_) => None,
    }
}

/// `in container `ray-worker``, or `4 in `ray-worker`, 2 in `profiler``.
fn breakdown(containers: &[GpuRequest]) -> String {
    let name = |c: &GpuRequest| {
        if c.container_name.is_empty() {
            format!("`{}`", c.container_path)
        } else {
            format!("`{}`", c.container_name)
        }
    };
    match containers {
        [one] => format!("in container {}", name(one)),
        many => many
            .iter()
            .map(|c| format!("{} in {}", c.total(), name(c)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The `compute-type` label against the GPUs the cluster requests: `cpu`
/// with GPUs, or `gpu`/`mixed` without, is a mislabelled cluster. Other
/// values are left to the label check.
fn compute_type(meta: &ObjectMeta<'_>, ray: &RayCluster<'_>, gpus: &ClusterGpus) -> Option<String> {
    let value = meta.label(COMPUTE_TYPE_LABEL)?;
    let first_gpu_user = if gpus.head > 0 {
        Some(format!("the head group (`{}.headGroupSpec`)", ray.path))
    } else {
        ray.worker_groups
            .iter()
            .zip(&gpus.workers)
            .find(|(_, n)| **n > 0)
            .map(|(g, _)| group_ref(g))
    };
    let at = format!("label `{COMPUTE_TYPE_LABEL}` in `metadata.labels` is `{value}`");
    match (value, first_gpu_user) {
        ("cpu", Some(who)) => Some(format!("{at}, but {who} requests GPUs: set it to `gpu` or `mixed`")),
        ("gpu" | "mixed", None) => Some(format!(
            "{at}, but no pod of the Ray cluster in `{}` requests GPUs: set it to `cpu`",
            ray.path
        )),
        _ => None,
    }
}

/// The cluster's GPUs at maximum scale against `limit`: the head, plus each
/// worker group at `maxReplicas` (KubeRay never runs more) times `numOfHosts`
/// pods per replica.
fn total(ray: &RayCluster<'_>, gpus: &ClusterGpus, limit: u32) -> Option<String> {
    let mut sum = gpus.head;
    let mut parts = Vec::new();
    if gpus.head > 0 {
        parts.push(format!("head: {}", gpus.head));
    }
    let mut unbounded = Vec::new();
    for (g, &per_worker) in ray.worker_groups.iter().zip(&gpus.workers) {
        if per_worker == 0 {
            continue;
        }
        let replicas = match g.max_replicas {
            None | Some(KUBERAY_UNBOUNDED) => {
                unbounded.push(group_ref(g));
                continue;
            }
            Some(n) => u64::try_from(n).unwrap_or(0),
        };
        let hosts = u64::try_from(g.num_of_hosts.unwrap_or(1)).unwrap_or(0);
        let n = per_worker.saturating_mul(replicas).saturating_mul(hosts);
        if n == 0 {
            continue;
        }
        sum = sum.saturating_add(n);
        let hosts_factor = if hosts == 1 {
            String::new()
        } else {
            format!(" × {hosts} hosts")
        };
        let workers = if hosts == 1 { count(replicas, "worker") } else { count(replicas, "replica") };
        parts.push(format!(
            "{}: {workers}{hosts_factor} × {} = {n}",
            group_short(g),
            count(per_worker, "GPU")
        ));
    }
    let cap = count(u64::from(limit), "GPU");
    if !unbounded.is_empty() {
        return Some(format!(
            "the Ray cluster in `{}` has no upper bound on GPUs at maximum scale, but a Ray cluster may use at most {cap}: set `maxReplicas` on {}",
            ray.path,
            unbounded.join(", ")
        ));
    }
    (sum > u64::from(limit)).then(|| {
        format!(
            "the Ray cluster in `{}` can grow to {} at maximum scale ({}), but a Ray cluster may use at most {cap}: lower `maxReplicas` or the GPUs per worker",
            ray.path,
            count(sum, "GPU"),
            parts.join(", ")
        )
    })
}

aigov_sdk::export_policy!(RayClusterLimits);

#[cfg(test)]
mod tests;
