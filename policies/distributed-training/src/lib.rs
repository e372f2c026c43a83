//! `distributed-training`: a multi-worker training job must be consistent
//! before it starts. The GPU workers that join one collective request the
//! same GPUs and target the same GPU product; if one requests RDMA or EFA
//! devices, all do; the `NCCL_*` variables that choose transport, topology,
//! algorithm or protocol are the same on each ([`nccl`]); no worker switches
//! off the network it requests; GPU containers mount a memory-backed
//! `/dev/shm`; a PyTorchJob's `nprocPerNode` and an MPIJob's
//! `slotsPerWorker` match the GPUs per worker; an elastic PyTorchJob's
//! `minReplicas <= maxReplicas`.
//!
//! "Workers" are what [`aigov_sdk::Workload::training_workers`] decides per
//! kind: not an MPIJob launcher, a TFJob parameter server or a Ray head.
//! Which of them join one collective is [`Collective`]'s business: every
//! worker of a Kubeflow job, LeaderWorkerSet or TrainJob; the Volcano tasks a
//! framework plugin makes ranks; no two Ray worker groups or JobSet
//! replicated jobs, which are separate roles.

mod nccl;
mod settings;

use std::collections::BTreeMap;

use aigov_sdk::cluster::gpu::{ClaimLookup, ClaimsRead, describe_counts};
use aigov_sdk::decode::explain::decode_model;
use aigov_sdk::decode::json;
use aigov_sdk::model::scheduling::label_demand;
use aigov_sdk::prelude::*;
use aigov_sdk::{GpuCounts, Str};

pub use settings::Settings;

/// The rule.
pub struct DistributedTraining;

/// What the rule knows of one worker template.
struct Worker<'w, 'a> {
    t: &'w PodTemplate<'a>,
    gpus: GpuCounts,
    /// GPU devices its pods claim through DRA, by the device classes a
    /// claim may be given (`` `gpu.nvidia.com` ``, or the alternatives of
    /// `firstAvailable`): devices per pod, `None` for `allocationMode:
    /// All`.
    claimed: BTreeMap<String, Option<u64>>,
    /// Its claims could not be read: its GPUs are unknown, and it is not
    /// compared.
    unknown: bool,
    rdma: GpuCounts,
    efa: GpuCounts,
    /// `NCCL_*` of its GPU containers: literal value, or `None` from a
    /// Secret, ConfigMap or field.
    nccl: BTreeMap<String, Option<String>>,
}

impl Policy for DistributedTraining {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
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
        let classes = req.gpu_classes();
        let mut workers = Vec::new();
        for t in w.training_workers() {
            let gpus = t.gpus_per_pod(&s.gpu_resource_names)?;
            let (claimed, unknown) = claimed(w, t, req.object_namespace(), cluster, &classes, &mut v)?;
            workers.push(Worker {
                t,
                rdma: t.gpus_per_pod(&rdma)?,
                efa: t.gpus_per_pod(&efa)?,
                nccl: nccl_env(t, s)?,
                gpus,
                claimed,
                unknown,
            });
        }
        let gpu_workers: Vec<&Worker<'_, '_>> = workers.iter().filter(|x| x.holds_gpus()).collect();
        if gpu_workers.is_empty() {
            return Ok(v);
        }
        let job = w.describe();

        // Across templates: only those whose pods join one collective.
        let collective = Collective::of(req, w)?;
        let members: Vec<&Worker<'_, '_>> = workers.iter().filter(|x| collective.includes(x.t)).collect();
        check_gpus(&members, w.kubeflow.is_some(), &job, &mut v);
        let gpu_members: Vec<&Worker<'_, '_>> = members.iter().copied().filter(|x| x.holds_gpus()).collect();
        check_products(&gpu_members, s, &job, &mut v);
        check_network(&gpu_members, "RDMA", |x| &x.rdma, &job, &mut v);
        check_network(&gpu_members, "EFA", |x| &x.efa, &job, &mut v);
        check_nccl(&gpu_members, &job, &mut v);

        // Each template on its own.
        for x in &gpu_workers {
            check_nccl_contradictions(x, &mut v);
        }
        if s.require_shared_memory {
            for x in &gpu_workers {
                if x.t.is_partial() {
                    check_trainer_shm(w, x.t, s, &mut v)?;
                } else {
                    check_shm(x.t, w.ray.is_some(), s, &mut v)?;
                }
            }
        }
        check_processes_per_pod(w, &gpu_workers, &mut v);
        Ok(v)
    }
}

/// The worker templates whose pods join one collective, as the kind's
/// controller wires them: only these must agree with each other.
enum Collective {
    /// Every worker template. A Kubeflow operator puts every worker replica
    /// type in one world (`WORLD_SIZE`, `TF_CONFIG`, the MPI hostfile); a
    /// LeaderWorkerSet group is one multi-node replica, and a leader that
    /// holds GPUs is one of its ranks; a TrainJob has one trainer template.
    All,
    /// The Volcano tasks a framework plugin makes ranks of one world, by
    /// task name.
    Tasks(Vec<String>),
    /// No two templates: each is its own role. KubeRay's worker groups are
    /// heterogeneous by design (Ray Serve replicas share no collective, Ray
    /// Train and Ray Data place work by resources across groups); a JobSet's
    /// replicated jobs (a driver and workers, a learner and rollout workers)
    /// and a Volcano Job's tasks without a framework plugin are whatever the
    /// program makes of them. A template's own pods are alike by
    /// construction.
    None,
}

impl Collective {
    fn of(req: &Request<'_>, w: &Workload<'_>) -> Result<Collective, Malformed> {
        Ok(match w.kind {
            WorkloadKind::RayCluster | WorkloadKind::RayJob | WorkloadKind::RayService | WorkloadKind::JobSet => Collective::None,
            WorkloadKind::VolcanoJob => match volcano_ranks(req)? {
                tasks if tasks.is_empty() => Collective::None,
                tasks => Collective::Tasks(tasks),
            },
            _ => Collective::All,
        })
    }

    fn includes(&self, t: &PodTemplate<'_>) -> bool {
        match self {
            Collective::All => true,
            Collective::Tasks(tasks) => t.name.as_deref().is_some_and(|n| tasks.iter().any(|task| task == n)),
            Collective::None => false,
        }
    }
}

/// The tasks of a Volcano Job that its framework plugins make ranks of one
/// world, as Volcano's controller does: the `pytorch` plugin's master and
/// worker tasks (it gives both `MASTER_ADDR`, `WORLD_SIZE` and `RANK`), the
/// `tensorflow` plugin's chief and worker tasks (the collective of
/// `MultiWorkerMirroredStrategy`; parameter servers and the evaluator are
/// not in it). The `mpi` plugin's hostfile holds one task, the workers, and
/// its master only runs `mpirun`. Read from the object's text with the
/// SDK's decoder, as the SDK's model has no `spec.plugins`.
fn volcano_ranks(req: &Request<'_>) -> Result<Vec<String>, Malformed> {
    const RANKS: [(&str, [(&str, &str); 2]); 2] =
        [("pytorch", [("master", "master"), ("worker", "worker")]), ("tensorflow", [("chief", "chief"), ("worker", "worker")])];
    let plugins = req.object_text().and_then(|text| json::find(text, &Path::root().keys(&["spec", "plugins"])));
    let plugins = plugins.and_then(json::members).unwrap_or_default();
    let mut tasks = Vec::new();
    for (plugin, roles) in RANKS {
        let Some((_, args)) = plugins.iter().find(|(name, _)| name == plugin) else { continue };
        let args: Vec<Str<'_>> =
            decode_model::<Option<Vec<Str<'_>>>>(args, &format!("`spec.plugins.{plugin}` of the Volcano Job"))?.unwrap_or_default();
        for (flag, default) in roles {
            tasks.push(go_flag(&args, flag).unwrap_or(default).to_string());
        }
    }
    Ok(tasks)
}

/// The value Go's `flag` package gives the string flag `name` in `args`
/// (`--name=value`, `-name=value`, `--name value`), as Volcano's plugins
/// parse their arguments; `None` when not set. Parsing stops at the first
/// argument that is not a flag, as Go's does.
fn go_flag<'s>(args: &'s [Str<'_>], name: &str) -> Option<&'s str> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|f| !f.is_empty() && !f.starts_with('-')) else {
            break;
        };
        let (key, value) = match flag.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (flag, it.next().map(|v| &**v)),
        };
        if key == name {
            found = value;
        }
    }
    found
}

impl Worker<'_, '_> {
    /// Whether its pods hold GPUs: resources, or devices of GPU classes
    /// claimed through DRA.
    fn holds_gpus(&self) -> bool {
        !self.gpus.is_empty() || !self.claimed.is_empty()
    }

    /// `4 `nvidia.com/gpu``, `2 devices of class `gpu.nvidia.com``.
    fn describe_gpus(&self) -> String {
        let mut parts = Vec::new();
        if !self.gpus.is_empty() {
            parts.push(describe_counts(&self.gpus));
        }
        for (classes, n) in &self.claimed {
            parts.push(match n {
                Some(1) => format!("1 device of class {classes}"),
                Some(n) => format!("{n} devices of class {classes}"),
                None => format!("every device of class {classes} on its node"),
            });
        }
        parts.join(" and ")
    }

    /// GPUs per pod, when every one is counted (not `allocationMode: All`).
    fn units(&self) -> Option<u64> {
        let claimed = self.claimed.values().try_fold(0u64, |a, n| n.map(|n| a.saturating_add(n)))?;
        Some(self.gpus.values().fold(claimed, |a, g| a.saturating_add(*g)))
    }
}

/// The GPU devices template `t`'s pods claim through DRA (its
/// ResourceClaims and ResourceClaimTemplates read in `ns`, devices of the
/// shared `gpuDeviceClasses`), by the classes a claim may be given; and
/// whether they could not be read (a failed lookup, a template not
/// created yet: a warning says the worker is not compared).
fn claimed(
    w: &Workload<'_>,
    t: &PodTemplate<'_>,
    ns: &str,
    cluster: &dyn Cluster,
    classes: &[Glob],
    v: &mut Verdict,
) -> Result<(BTreeMap<String, Option<u64>>, bool), Malformed> {
    let mut out: BTreeMap<String, Option<u64>> = BTreeMap::new();
    let found = match t.read_claims(ns, cluster, ClaimLookup::shared(classes))? {
        ClaimsRead::Read(found) => found,
        ClaimsRead::Unread(unread) => {
            let then = format!("so the GPUs of {} of {} are unknown and not compared with the other workers'", t.describe(), w.describe());
            unread.warn(&then, v);
            return Ok((out, true));
        }
    };
    for c in found {
        let key = c.classes.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" or ");
        let e = out.entry(key).or_insert(Some(0));
        *e = match (*e, c.devices) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
    }
    Ok((out, false))
}

/// Every member requests the same GPUs per pod as the first GPU member;
/// `precise` (Kubeflow, whose worker replica types all join the
/// collective): a member without GPUs beside GPU members is a mismatch too.
fn check_gpus(members: &[&Worker<'_, '_>], precise: bool, job: &str, v: &mut Verdict) {
    let Some(first) = members.iter().find(|x| x.holds_gpus() && !x.unknown) else { return };
    for x in members {
        if std::ptr::eq(*x, *first) || x.unknown {
            continue;
        }
        if !x.holds_gpus() {
            if precise {
                v.violation(format!(
                    "{} of {job} requests no GPU, but {} requests {} per pod: every worker joins the same collective, so give `{}` the same GPUs",
                    x.t.describe(),
                    first.t.describe(),
                    first.describe_gpus(),
                    x.t.spec_path()
                ));
            }
            continue;
        }
        if x.gpus != first.gpus || x.claimed != first.claimed {
            v.violation(format!(
                "{} of {job} requests {} per pod, but {} requests {}: the workers of one collective must be alike (it runs at the pace of the smallest, and ranks are assigned per GPU), so give `{}` the same GPUs",
                x.t.describe(),
                x.describe_gpus(),
                first.t.describe(),
                first.describe_gpus(),
                x.t.spec_path()
            ));
        }
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
                aigov_sdk::base::text::one_of(&values),
                f.t.describe(),
                aigov_sdk::base::text::one_of(fv),
                x.t.spec_path()
            )),
            Some(_) => {}
        }
    }
}

fn check_network<'w, 'a>(
    workers: &[&'w Worker<'w, 'a>],
    what: &str,
    get: impl Fn(&'w Worker<'w, 'a>) -> &'w GpuCounts,
    job: &str,
    v: &mut Verdict,
) {
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

/// The `NCCL_*` variables that must agree ([`nccl::must_agree`]) have the
/// same value on every member as on the first; logging and other
/// process-local variables may differ.
fn check_nccl(workers: &[&Worker<'_, '_>], job: &str, v: &mut Verdict) {
    let Some(first) = workers.first() else { return };
    for x in workers.iter().skip(1) {
        let mut diffs: Vec<(&str, String)> = Vec::new();
        for name in first.nccl.keys().chain(x.nccl.keys()) {
            let (a, b) = (x.nccl.get(name), first.nccl.get(name));
            if a != b && nccl::must_agree(name) && !diffs.iter().any(|(n, _)| n == name) {
                diffs.push((name, format!("`{name}` is {} here and {} there", show(a), show(b))));
            }
        }
        if !diffs.is_empty() {
            let list: Vec<String> = diffs.into_iter().map(|(_, d)| d).collect();
            v.violation(format!(
                "the NCCL environment of {} of {job} differs from that of {}: {}; these variables choose the network, transport, topology, algorithm or protocol, and ranks that choose differently fail to connect or hang at their first collective, so set the same values in `{}` (logging variables such as `NCCL_DEBUG` may differ)",
                x.t.describe(),
                first.t.describe(),
                list.join(", "),
                x.t.spec_path().key("containers")
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

/// Every GPU container of a worker mounts a memory-backed `/dev/shm` of at
/// least `minSharedMemory` ([`PodTemplate::dev_shm_shortfall`]).
fn check_shm(t: &PodTemplate<'_>, ray: bool, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let min = s.min_shm_bytes();
    for c in t.containers() {
        if !(c.is_main() || c.is_sidecar()) || t.container_gpus(&c, &s.gpu_resource_names)?.is_empty() {
            continue;
        }
        if let Some(short) = t.dev_shm_shortfall(&c, ray, min)? {
            shm_violation(t, &c, short, s, v);
        }
    }
    Ok(())
}

/// The violation for container `c` of `t` short of `/dev/shm`.
fn shm_violation(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>, short: ShmShortfall<'_>, s: &Settings, v: &mut Verdict) {
    match short {
            ShmShortfall::NotInMemory => v.violation(format!(
                "{} of {} has no memory-backed `/dev/shm`, and the container runtime's default is 64 MiB: PyTorch's data loader workers and NCCL exchange data through it and fail with `Bus error` when it is full; mount an `emptyDir` with `medium: Memory` at `/dev/shm` (`{}`)",
                c.describe(),
                t.describe(),
                t.container_path(c).key("volumeMounts")
            )),
            ShmShortfall::Below { field, size } => {
                let want = s.min_shared_memory.as_deref().unwrap_or("");
                v.violation(format!(
                    "`{field}` is `{size}`, below the {want} of shared memory {} needs: raise it to at least `{want}`",
                    c.describe()
                ));
            }
    }
}

/// A TrainJob's trainer writes no volumes: its pods' `/dev/shm` is the
/// training runtime's, which the request does not carry, unless an
/// override of the trainer's replicated job mounts one (the Trainer merges
/// its `volumes` and its containers' `volumeMounts` over the runtime's).
/// An override that mounts `/dev/shm` from a volume it writes is judged as
/// any template; without one (or from a volume of the runtime's), a warning says where it must come from, and the
/// JobSet the Trainer builds, with the runtime's pods in full, is judged
/// when it is created.
fn check_trainer_shm(w: &aigov_sdk::Workload<'_>, trainer: &PodTemplate<'_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    let min = s.min_shm_bytes();
    let mut mounted = false;
    for o in w.trainer_overrides() {
        for c in o.containers() {
            let shm = c.container.volume_mounts.iter().find(|m| m.mount_path.trim_end_matches('/') == "/dev/shm");
            if shm.is_some_and(|m| o.spec.volumes.iter().any(|vol| vol.name == m.name)) {
                mounted = true;
                if let Some(short) = o.dev_shm_shortfall(&c, false, min)? {
                    shm_violation(o, &c, short, s, v);
                }
            }
        }
    }
    if !mounted {
        v.warn(format!(
            "`{}` requests GPUs; its memory-backed `/dev/shm` must come from the referenced training runtime, which this rule does not see ({}): the JobSet Kubeflow Trainer builds from it is checked when it is created",
            trainer.path(),
            aigov_sdk::model::workload::trainer_overrides_lack("mounts `/dev/shm`")
        ));
    }
    Ok(())
}

/// A PyTorchJob's `nprocPerNode` and an MPIJob's `slotsPerWorker`, where
/// numbers, are the GPUs per worker pod: one process (rank) per GPU.
fn check_processes_per_pod(w: &aigov_sdk::Workload<'_>, workers: &[&Worker<'_, '_>], v: &mut Verdict) {
    let Some(k) = &w.kubeflow else { return };
    let setting = match w.kind {
        WorkloadKind::PyTorchJob => k.nproc_per_node.as_deref().and_then(|n| n.trim().parse::<u64>().ok()).map(|n| {
            (
                n,
                k.nproc_path.as_ref().map_or_else(|| "spec.nprocPerNode".to_string(), ToString::to_string),
                "torchrun starts that many processes per pod",
            )
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
        let Some(units) = x.units().filter(|_| !x.unknown) else { continue };
        if units != n && !seen.contains(&units) {
            seen.push(units);
            v.violation(format!(
                "`{path}` is {n}, but {} requests {} per pod and {why}, one per GPU: set it to {units}",
                x.t.describe(),
                x.describe_gpus()
            ));
        }
    }
}

aigov_sdk::export_policy!(DistributedTraining);

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::NoCluster;

    /// The violations for `object`, a CREATE with default settings.
    fn violations(api_version: &str, kind: &str, resource: &str, object: &str) -> Result<Vec<String>, Malformed> {
        let (group, version) = api_version.split_once('/').unwrap();
        let gvk = format!(r#"{{"group":"{group}","version":"{version}","kind":"{kind}"}}"#);
        let gvr = format!(r#"{{"group":"{group}","version":"{version}","resource":"{resource}"}}"#);
        let json = format!(
            r#"{{"uid":"u","kind":{gvk},"resource":{gvr},"namespace":"ml","operation":"CREATE","userInfo":{{"username":"u"}},"object":{object}}}"#
        );
        let req = Request::parse(&json)?;
        Ok(DistributedTraining::validate(&req, &Settings::default(), &NoCluster)?.violations().to_vec())
    }

    /// A GPU container with `gpus` GPUs, its `env` (JSON list) and a
    /// memory-backed `/dev/shm`.
    fn spec(gpus: u32, env: &str) -> String {
        format!(
            r#"{{"volumes":[{{"name":"dshm","emptyDir":{{"medium":"Memory"}}}}],"containers":[{{"name":"c","image":"i","env":{env},"resources":{{"limits":{{"nvidia.com/gpu":{gpus}}}}},"volumeMounts":[{{"name":"dshm","mountPath":"/dev/shm"}}]}}]}}"#
        )
    }

    fn volcano(plugins: &str, tasks: &[(&str, String)]) -> Result<Vec<String>, Malformed> {
        let tasks: Vec<String> =
            tasks.iter().map(|(name, spec)| format!(r#"{{"name":"{name}","replicas":2,"template":{{"spec":{spec}}}}}"#)).collect();
        let object = format!(
            r#"{{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{{"name":"vj"}},"spec":{{{plugins}"tasks":[{}]}}}}"#,
            tasks.join(",")
        );
        violations("batch.volcano.sh/v1alpha1", "Job", "jobs", &object)
    }

    fn pytorch_job(master_env: &str, worker_env: &str) -> Vec<String> {
        let object = format!(
            r#"{{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"p"}},"spec":{{"pytorchReplicaSpecs":{{"Master":{{"template":{{"spec":{}}}}},"Worker":{{"template":{{"spec":{}}}}}}}}}}}"#,
            spec(8, master_env),
            spec(8, worker_env)
        );
        violations("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", &object).unwrap()
    }

    fn strs(args: &[&'static str]) -> Vec<Str<'static>> {
        args.iter().map(|a| Str(std::borrow::Cow::Borrowed(*a))).collect()
    }

    #[test]
    fn go_flags_are_read_as_volcano_reads_them() {
        let args = strs(&["--master=leader", "-worker", "w", "--port=1"]);
        assert_eq!(go_flag(&args, "master"), Some("leader"));
        assert_eq!(go_flag(&args, "worker"), Some("w"));
        assert_eq!(go_flag(&args, "chief"), None);
        assert_eq!(go_flag(&strs(&["--master=a", "--master=b"]), "master"), Some("b"), "the last one wins");
        assert_eq!(go_flag(&strs(&["extra", "--master=a"]), "master"), None, "parsing stops at a non-flag");
        assert_eq!(go_flag(&strs(&["--", "--master=a"]), "master"), None, "and at `--`");
    }

    #[test]
    fn only_the_tasks_a_framework_plugin_makes_ranks_are_compared() {
        let tasks = [("master", spec(8, "[]")), ("worker", spec(4, "[]"))];
        assert!(volcano("", &tasks).unwrap().is_empty(), "no plugin: tasks are roles");
        assert!(volcano(r#""plugins":{"svc":[],"mpi":[]},"#, &tasks).unwrap().is_empty());
        let found = volcano(r#""plugins":{"pytorch":null},"#, &tasks).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("task `worker` of Job `vj` requests 4 `nvidia.com/gpu` per pod, but task `master` requests 8"),
            "{found:?}"
        );

        // TensorFlow: the chief and the workers, not the parameter servers.
        let tf = [("ps", spec(1, "[]")), ("chief", spec(8, "[]")), ("worker", spec(8, "[]"))];
        assert!(volcano(r#""plugins":{"tensorflow":[]},"#, &tf).unwrap().is_empty());
        let tf = [("ps", spec(1, "[]")), ("chief", spec(8, "[]")), ("trainer", spec(4, "[]"))];
        let found = volcano(r#""plugins":{"tensorflow":["--worker=trainer"]},"#, &tf).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("task `trainer` of Job `vj` requests 4"), "{found:?}");
    }

    #[test]
    fn malformed_plugin_arguments_name_the_field() {
        let tasks = [("master", spec(8, "[]")), ("worker", spec(8, "[]"))];
        let err = volcano(r#""plugins":{"pytorch":"--master=m"},"#, &tasks).unwrap_err();
        assert!(err.0.contains("`spec.plugins.pytorch` of the Volcano Job"), "{}", err.0);
    }

    #[test]
    fn ray_worker_groups_are_not_compared_with_each_other() {
        let group = |name: &str, gpus: u32, env: &str| format!(r#"{{"groupName":"{name}","template":{{"spec":{}}}}}"#, spec(gpus, env));
        let object = format!(
            r#"{{"apiVersion":"ray.io/v1","kind":"RayService","metadata":{{"name":"s"}},"spec":{{"rayClusterConfig":{{"headGroupSpec":{{"template":{{"spec":{{"containers":[{{"name":"h","image":"i"}}]}}}}}},"workerGroupSpecs":[{},{}]}}}}}}"#,
            group("l4", 1, r#"[{"name":"NCCL_SOCKET_IFNAME","value":"eth0"}]"#),
            group("a100", 4, r#"[{"name":"NCCL_NET","value":"Socket"}]"#)
        );
        assert_eq!(violations("ray.io/v1", "RayService", "rayservices", &object).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn only_variables_that_must_agree_are_compared() {
        let debug = r#"[{"name":"NCCL_DEBUG","value":"INFO"},{"name":"NCCL_DEBUG_FILE","value":"/tmp/nccl.%h.%p"},{"name":"NCCL_IB_TIMEOUT","value":"23"}]"#;
        assert!(pytorch_job(debug, "[]").is_empty());
        let found = pytorch_job(
            r#"[{"name":"NCCL_DEBUG","value":"INFO"},{"name":"NCCL_PROTO","value":"Simple"}]"#,
            r#"[{"name":"NCCL_PROTO","value":"LL128"}]"#,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`NCCL_PROTO` is `LL128` here and `Simple` there;"), "{found:?}");
        assert!(!found[0].contains("`NCCL_DEBUG` is"), "logging is not listed: {found:?}");
    }
}
