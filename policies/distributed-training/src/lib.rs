//! `distributed-training`: a multi-worker training job must be consistent
//! before it starts. Its GPU workers request the same GPUs and target the
//! same GPU product; if one requests RDMA or EFA devices, all do; their
//! `NCCL_*` environment is identical and does not switch off the network
//! they request; GPU containers mount a memory-backed `/dev/shm`; a
//! PyTorchJob's `nprocPerNode` and an MPIJob's `slotsPerWorker` match the
//! GPUs per worker; an elastic PyTorchJob's `minReplicas <= maxReplicas`.
//!
//! "Workers" are what [`aigov_sdk::Workload::training_workers`] decides per
//! kind: not an MPIJob launcher, a TFJob parameter server or a Ray head.

mod settings;

use std::collections::BTreeMap;

use aigov_sdk::gpu::describe_counts;
use aigov_sdk::scheduling::label_demand;
use aigov_sdk::{Cluster, ContainerList, GpuCounts, GpuResources, Malformed, Path, Policy, PodTemplate, Request, Verdict, WorkloadKind};

pub use settings::Settings;

/// The rule.
pub struct DistributedTraining;

/// What the rule knows of one worker template.
struct Worker<'w, 'a> {
    t: &'w PodTemplate<'a>,
    gpus: GpuCounts,
    rdma: GpuCounts,
    efa: GpuCounts,
    /// `NCCL_*` of its GPU containers: literal value, or `None` from a
    /// Secret, ConfigMap or field.
    nccl: BTreeMap<String, Option<String>>,
}

impl Policy for DistributedTraining {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, _cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        let Some(w) = req.workload() else { return Ok(v) };
        if let Some(k) = &w.kubeflow
            && let (Some(min), Some(max)) = (k.elastic_min, k.elastic_max)
            && min > max
        {
            v.violation(format!(
                "`spec.elasticPolicy.minReplicas` is {min}, above `spec.elasticPolicy.maxReplicas` ({max}), so the job can never be scaled to a valid size: make `minReplicas` at most `maxReplicas`"
            ));
        }
        let rdma = GpuResources(s.rdma_resource_names.clone());
        let efa = GpuResources(s.efa_resource_names.clone());
        let mut workers = Vec::new();
        for t in w.training_workers() {
            let gpus = t.gpus_per_pod(&s.gpu_resource_names)?;
            workers.push(Worker { t, rdma: t.gpus_per_pod(&rdma)?, efa: t.gpus_per_pod(&efa)?, nccl: nccl_env(t, s)?, gpus });
        }
        let Some(first) = workers.iter().find(|x| !x.gpus.is_empty()) else { return Ok(v) };
        let job = w.describe();
        // Kubeflow jobs say which replica types join the collective, so a
        // CPU-only one among GPU ones is a mismatch; other kinds (Ray, JobSet,
        // Volcano, LWS) mix CPU and GPU templates on purpose.
        let precise = w.kubeflow.is_some();

        for x in &workers {
            if std::ptr::eq(x, first) {
                continue;
            }
            if x.gpus.is_empty() {
                if precise {
                    v.violation(format!(
                        "{} of {job} requests no GPU, but {} requests {} per pod: every worker joins the same collective, so give `{}` the same GPUs",
                        x.t.describe(),
                        first.t.describe(),
                        describe_counts(&first.gpus),
                        x.t.spec_path()
                    ));
                }
                continue;
            }
            if x.gpus != first.gpus {
                v.violation(format!(
                    "{} of {job} requests {} per pod, but {} requests {}: the workers of a distributed job must be alike (the collective runs at the pace of the smallest, and ranks are assigned per GPU), so give `{}` the same GPUs",
                    x.t.describe(),
                    describe_counts(&x.gpus),
                    first.t.describe(),
                    describe_counts(&first.gpus),
                    x.t.spec_path()
                ));
            }
        }

        let gpu_workers: Vec<&Worker<'_, '_>> = workers.iter().filter(|x| !x.gpus.is_empty()).collect();
        check_products(&gpu_workers, s, &job, &mut v);
        check_network(&gpu_workers, "RDMA", |x| &x.rdma, &job, &mut v);
        check_network(&gpu_workers, "EFA", |x| &x.efa, &job, &mut v);
        check_nccl(&gpu_workers, &job, &mut v);
        for x in &gpu_workers {
            check_nccl_contradictions(x, &mut v);
        }
        if s.require_shared_memory {
            for x in &gpu_workers {
                check_shm(x.t, w.ray.is_some(), s, &mut v)?;
            }
        }
        check_processes_per_pod(w, &gpu_workers, &mut v);
        Ok(v)
    }
}

/// `NCCL_*` variables of the template's containers that hold GPUs (the
/// first container that sets one wins, as one process reads one
/// environment).
fn nccl_env(t: &PodTemplate<'_>, s: &Settings) -> Result<BTreeMap<String, Option<String>>, Malformed> {
    let mut out = BTreeMap::new();
    for c in t.containers() {
        if !(c.is_main() || c.is_sidecar()) || t.container_gpus(&c, &s.gpu_resource_names)?.is_empty() {
            continue;
        }
        for e in &c.container.env {
            if e.name.starts_with("NCCL_") && !out.contains_key(&*e.name) {
                let value = if e.from_source { None } else { Some(e.value.as_deref().unwrap_or("").to_string()) };
                out.insert(e.name.to_string(), value);
            }
        }
    }
    Ok(out)
}

fn show(v: Option<&Option<String>>) -> String {
    match v {
        None => "not set".into(),
        Some(None) => "set from a reference".into(),
        Some(Some(s)) => format!("`{s}`"),
    }
}

fn check_products(workers: &[&Worker<'_, '_>], s: &Settings, job: &str, v: &mut Verdict) {
    let label = &s.gpu_product_label;
    let mut first: Option<(&Worker<'_, '_>, Vec<String>)> = None;
    for x in workers {
        let demand = label_demand(&x.t.spec, label);
        let Some(values) = demand.values() else { continue };
        let values: Vec<String> = values.iter().cloned().collect();
        match &first {
            None => first = Some((x, values)),
            Some((f, fv)) if *fv != values => v.violation(format!(
                "{} of {job} targets `{label}` {}, but {} targets {}: workers on different GPU products run at different speeds and may not share an interconnect, so make `{}` select the same product",
                x.t.describe(),
                aigov_sdk::text::one_of(&values),
                f.t.describe(),
                aigov_sdk::text::one_of(fv),
                x.t.spec_path()
            )),
            Some(_) => {}
        }
    }
}

fn check_network<'w, 'a>(workers: &[&'w Worker<'w, 'a>], what: &str, get: impl Fn(&'w Worker<'w, 'a>) -> &'w GpuCounts, job: &str, v: &mut Verdict) {
    let Some(with) = workers.iter().find(|x| !get(x).is_empty()) else { return };
    for x in workers {
        if get(x).is_empty() {
            v.violation(format!(
                "{} of {job} requests no {what} device, but {} requests {}: NCCL falls back to TCP sockets for the whole job when one worker lacks the fast network, so request the same devices in `{}`",
                x.t.describe(),
                with.t.describe(),
                describe_counts(get(with)),
                x.t.spec_path()
            ));
        }
    }
}

fn check_nccl(workers: &[&Worker<'_, '_>], job: &str, v: &mut Verdict) {
    let Some(first) = workers.first() else { return };
    for x in workers.iter().skip(1) {
        let mut diffs = Vec::new();
        for name in first.nccl.keys().chain(x.nccl.keys()) {
            let (a, b) = (x.nccl.get(name), first.nccl.get(name));
            if a != b && !diffs.iter().any(|(n, _)| n == name) {
                diffs.push((name.clone(), format!("`{name}` is {} here and {} there", show(a), show(b))));
            }
        }
        if !diffs.is_empty() {
            let list: Vec<String> = diffs.into_iter().map(|(_, d)| d).collect();
            v.violation(format!(
                "the NCCL environment of {} of {job} differs from that of {}: {}; every rank must use the same NCCL settings, or the collective hangs at its first all-reduce",
                x.t.describe(),
                first.t.describe(),
                list.join(", ")
            ));
        }
    }
}

fn check_nccl_contradictions(x: &Worker<'_, '_>, v: &mut Verdict) {
    let lit = |name: &str| x.nccl.get(name).and_then(|v| v.as_deref()).map(str::trim);
    if !x.rdma.is_empty() && lit("NCCL_IB_DISABLE") == Some("1") {
        v.violation(format!(
            "{} requests RDMA devices ({}) but sets `NCCL_IB_DISABLE=1`, so NCCL never uses them: remove `NCCL_IB_DISABLE` from `{}`, or stop requesting the devices",
            x.t.describe(),
            describe_counts(&x.rdma),
            x.t.spec_path().key("containers")
        ));
    }
    if (!x.rdma.is_empty() || !x.efa.is_empty()) && lit("NCCL_NET").is_some_and(|n| n.eq_ignore_ascii_case("socket")) {
        let devices = if x.rdma.is_empty() { &x.efa } else { &x.rdma };
        v.violation(format!(
            "{} requests {} but sets `NCCL_NET=Socket`, so NCCL uses TCP sockets instead: remove `NCCL_NET` from `{}`, or stop requesting the devices",
            x.t.describe(),
            describe_counts(devices),
            x.t.spec_path().key("containers")
        ));
    }
}

/// `ray`: KubeRay mounts a memory-backed `/dev/shm` (sized to the memory
/// limit) into a Ray pod's first container unless something is mounted
/// there already.
fn check_shm(t: &PodTemplate<'_>, ray: bool, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let min = s.min_shm_bytes();
    for c in t.containers() {
        if !(c.is_main() || c.is_sidecar()) || t.container_gpus(&c, &s.gpu_resource_names)?.is_empty() {
            continue;
        }
        let mount = c.container.volume_mounts.iter().find(|m| m.mount_path.trim_end_matches('/') == "/dev/shm");
        let volume = mount.and_then(|m| t.spec.volumes.iter().enumerate().find(|(_, vol)| vol.name == m.name));
        let memory = volume.and_then(|(i, vol)| vol.empty_dir.as_ref().filter(|e| e.medium.as_deref() == Some("Memory")).map(|e| (i, e)));
        let Some((i, dir)) = memory else {
            if ray && mount.is_none() && c.list == ContainerList::Containers && c.index == 0 {
                continue;
            }
            v.violation(format!(
                "{} of {} has no memory-backed `/dev/shm`, and the container runtime's default is 64 MiB: PyTorch's data loader workers and NCCL exchange data through it and fail with `Bus error` when it is full; mount an `emptyDir` with `medium: Memory` at `/dev/shm` (`{}`)",
                c.describe(),
                t.describe(),
                t.container_path(&c).key("volumeMounts")
            ));
            continue;
        };
        if min > 0
            && let Some(raw) = &dir.size_limit
        {
            let path: Path = t.spec_path().key("volumes").index(i).keys(&["emptyDir", "sizeLimit"]);
            let bytes = raw.parse().map_err(|e| Malformed::new(format!("`{path}`: {e}")))?.ceil_units();
            if bytes < min {
                v.violation(format!(
                    "`{path}` is `{}`, below the {} of shared memory {} needs: raise it to at least `{}`",
                    &*raw.0,
                    s.min_shared_memory.as_deref().unwrap_or(""),
                    c.describe(),
                    s.min_shared_memory.as_deref().unwrap_or("")
                ));
            }
        }
    }
    Ok(())
}

/// A PyTorchJob's `nprocPerNode` and an MPIJob's `slotsPerWorker`, where
/// numbers, are the GPUs per worker pod: one process (rank) per GPU.
fn check_processes_per_pod(w: &aigov_sdk::Workload<'_>, workers: &[&Worker<'_, '_>], v: &mut Verdict) {
    let Some(k) = &w.kubeflow else { return };
    let setting = match w.kind {
        WorkloadKind::PyTorchJob => k.nproc_per_node.as_deref().and_then(|n| n.trim().parse::<u64>().ok()).map(|n| {
            (n, k.nproc_path.as_ref().map_or_else(|| "spec.nprocPerNode".to_string(), ToString::to_string), "torchrun starts that many processes per pod")
        }),
        WorkloadKind::MpiJob => k
            .slots_per_worker
            .and_then(|n| u64::try_from(n).ok())
            .map(|n| (n, "spec.slotsPerWorker".to_string(), "mpirun starts that many ranks per worker")),
        _ => None,
    };
    let Some((n, path, why)) = setting else { return };
    let mut seen = Vec::new();
    for x in workers {
        let units: u64 = x.gpus.values().fold(0, |a, g| a.saturating_add(*g));
        if units != n && !seen.contains(&units) {
            seen.push(units);
            v.violation(format!(
                "`{path}` is {n}, but {} requests {} per pod and {why}, one per GPU: set it to {units}",
                x.t.describe(),
                describe_counts(&x.gpus)
            ));
        }
    }
}

aigov_sdk::export_policy!(DistributedTraining);
