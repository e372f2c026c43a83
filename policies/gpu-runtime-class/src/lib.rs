//! `gpu-runtime-class`: a pod template that requests a GPU uses the runtime
//! class its vendor's GPUs need (NVIDIA: `nvidia`) and tolerates the taint
//! its GPU nodes carry (NVIDIA: `nvidia.com/gpu:NoSchedule`).
//!
//! Without the runtime class the container starts without the GPU driver
//! hooks and the job dies at its first CUDA call; without the toleration it
//! never schedules onto a GPU node. Both are cheaper to catch at admission.
//!
//! Optionally, every pod (GPU or not) runs only with the runtime classes
//! `podRuntimeClasses` allows, and every container that holds GPUs mounts a
//! memory-backed `/dev/shm` (`sharedMemory`).

mod settings;

use aigov_sdk::cluster::gpu_runtime::{self, CalledFor};
use aigov_sdk::model::pod::Toleration;
use aigov_sdk::model::scheduling::{author_tolerates, authored_tolerations, pod_tolerates, why_not_tolerated};
use aigov_sdk::prelude::*;

pub use settings::{PodRuntimeClasses, Requirement, Settings, SharedMemory, Taint};

/// The rule.
pub struct GpuRuntimeClass;

impl Policy for GpuRuntimeClass {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = req.object_namespace();
        for template in workload.templates() {
            if template.role == Role::Override {
                check_override(workload, template, settings, &mut verdict)?;
                continue;
            }
            // Containers whose image `exemptImages` lists hold no GPU here,
            // as in Gatekeeper's `K8sRequiredGpuRuntimeClass`.
            let exempt = ExemptGpus::of(template, req, &settings.gpu_resource_names)?;
            let gpus = exempt.requests(template.gpu_requests(&settings.gpu_resource_names)?);
            let claims = claims(template, &exempt, namespace, cluster, settings, &req.gpu_classes(), &mut verdict)?;
            if template.is_partial() {
                if !gpus.is_empty() || !claims.is_empty() {
                    // Tolerations an override of the trainer's pods writes
                    // replace the runtime's, and are checked there.
                    let what = if workload.trainer_overrides().any(|o| !o.spec.tolerations.is_empty()) {
                        "its runtime class comes"
                    } else {
                        "its runtime class and tolerations come"
                    };
                    verdict.warn(format!(
                        "`{}` requests GPUs; {what} from the referenced training runtime, which this rule does not see",
                        template.path()
                    ));
                }
                continue;
            }
            let mut runtime_class_refused = false;
            for (requirement, why) in gpu_runtime::applicable(&settings.requirements, &gpus, &claims) {
                runtime_class_refused |= check_runtime_class(template, requirement, &why, &mut verdict);
                check_toleration(req, template, requirement, &mut verdict);
            }
            if let Some(p) = &settings.pod_runtime_classes
                && !runtime_class_refused
            {
                check_pod_runtime_class(template, p, &mut verdict);
            }
            if let Some(m) = &settings.shared_memory
                && (!gpus.is_empty() || !claims.is_empty())
            {
                check_shared_memory(template, &exempt, &gpus, &claims, m, workload.ray.is_some(), &mut verdict)?;
            }
        }
        Ok(verdict)
    }
}

/// A TrainJob's override or runtime patch of the trainer's pods: the
/// Trainer merges it over the training runtime's pod template, where
/// `tolerations` (a list without a merge key) replace the runtime's. So
/// tolerations it writes must tolerate the GPU nodes' taint the trainer's
/// GPUs call for; none written leaves the runtime's. It names no runtime
/// class (the override has no such field).
fn check_override(w: &Workload<'_>, t: &PodTemplate<'_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    if t.spec.tolerations.is_empty() {
        return Ok(());
    }
    let Some(trainer) = w.gpu_holder(t) else { return Ok(()) };
    let gpus = trainer.gpu_requests(&s.gpu_resource_names)?;
    for (r, why) in gpu_runtime::applicable(&s.requirements, &gpus, &[]) {
        let Some(taint) = &r.taint else { continue };
        if pod_tolerates(&t.spec, &taint.node_taint()) {
            continue;
        }
        let at = t.spec_path().key("tolerations");
        v.violation(format!(
            "`{at}` replaces the training runtime's tolerations in the trainer's pods ({why}), but does not tolerate the taint of {} GPU nodes (`{}`), so they can never be scheduled there: {}",
            r.vendor,
            taint.shown(),
            toleration_fix(&at, t.spec.tolerations.iter().enumerate(), taint)
        ));
    }
    Ok(())
}

/// `podRuntimeClasses`: the runtime class any pod names is allowed, and one
/// is named where `required`.
fn check_pod_runtime_class(t: &PodTemplate<'_>, p: &PodRuntimeClasses, v: &mut Verdict) {
    let field = t.spec_path().key("runtimeClassName");
    let allowed: Vec<&str> = p.allowed.iter().map(|g| g.as_str()).collect();
    let denied: Vec<&str> = p.denied.iter().map(|g| g.as_str()).collect();
    let may = match (allowed.is_empty(), denied.is_empty()) {
        (true, _) => format!("any runtime class but {}", quoted(&denied)),
        (false, true) => one_of(&allowed),
        (false, false) => format!("{} but not {}", one_of(&allowed), quoted(&denied)),
    };
    match t.spec.runtime_class_name.as_deref().filter(|rc| !rc.is_empty()) {
        Some(rc) if !p.allows(rc) => v.violation(format!(
            "`{field}` is `{rc}`, a runtime class pods may not use in this cluster; they may use {may}: set one of those, or ask your cluster administrators"
        )),
        Some(_) => {}
        None if p.required => v.violation(format!(
            "`{field}` is not set, so the pod would run with the node's default runtime handler, which pods may not use in this cluster; they may use {may}: set one of those"
        )),
        None => {}
    }
}

/// `sharedMemory`: every regular or sidecar container that holds GPUs
/// (resources, or a GPU claim it names) mounts a memory-backed `emptyDir`
/// at `/dev/shm`, of at least `minSize` when it sets a `sizeLimit`; an
/// exempt one is not asked. `ray`: KubeRay mounts one (sized to the memory
/// limit) into a Ray pod's first container unless something is mounted
/// there already.
fn check_shared_memory(
    t: &PodTemplate<'_>,
    exempt: &ExemptGpus,
    gpus: &[aigov_sdk::GpuRequest],
    claims: &[(String, String)],
    m: &SharedMemory,
    ray: bool,
    v: &mut Verdict,
) -> Result<(), Malformed> {
    let min = m.min_bytes();
    for c in t.containers() {
        if !(c.is_main() || c.is_sidecar()) {
            continue;
        }
        let path = t.container_path(&c);
        if exempt.container(&path) {
            continue;
        }
        let by_resources = gpus.iter().any(|g| g.container_path == path);
        let by_claims = c.container.resources.claims.iter().any(|cl| claims.iter().any(|(_, name)| *name == *cl.name));
        if !by_resources && !by_claims {
            continue;
        }
        match t.dev_shm_shortfall(&c, ray, min)? {
            None => {}
            Some(ShmShortfall::NotInMemory) => v.violation(format!(
                "{} holds GPUs but has no memory-backed `/dev/shm`, and the container runtime's default is 64 MiB: PyTorch's data loader workers and NCCL exchange data through it and fail with `Bus error` when it is full; mount an `emptyDir` with `medium: Memory` at `/dev/shm` (`{}`)",
                c.describe(),
                path.key("volumeMounts")
            )),
            Some(ShmShortfall::Below { field, size }) => {
                let want = m.min_size.as_deref().unwrap_or("");
                v.violation(format!(
                    "`{field}` is `{size}`, below the {want} of shared memory {} needs: raise it to at least `{want}`",
                    c.describe()
                ));
            }
        }
    }
    Ok(())
}

/// What the template's DRA claims bring: `(device class, claim)` pairs,
/// but for claims only exempt containers name (not looked up at all when
/// no other claim counts). A failed lookup denies or warns, as
/// `onLookupError` says.
fn claims(
    t: &PodTemplate<'_>,
    exempt: &ExemptGpus,
    ns: &str,
    cluster: &dyn Cluster,
    s: &Settings,
    classes: &[Glob],
    v: &mut Verdict,
) -> Result<Vec<(String, String)>, Malformed> {
    let needed_for = (", so their GPUs cannot be checked", "; admitted");
    t.claimed_classes_counted(exempt, ns, cluster, s.resource_claims.lookup(classes), s.on_lookup_error, needed_for, v)
}

/// Whether the template's runtime class was refused.
fn check_runtime_class(t: &PodTemplate<'_>, r: &Requirement, why: &CalledFor<'_>, v: &mut Verdict) -> bool {
    let rc = t.spec.runtime_class_name.as_deref();
    if r.runtime_classes.is_empty() || rc.is_some_and(|rc| r.runtime_classes.iter().any(|a| a == rc)) {
        return false;
    }
    let field = t.spec_path().key("runtimeClassName");
    let need = match r.runtime_classes.as_slice() {
        [one] => format!("runtime class `{one}`"),
        many => format!("one of the runtime classes {}", quoted(many)),
    };
    let vendor = &r.vendor;
    // The first class listed is the one to set (`Requirement::runtime_classes`).
    let set = r.runtime_classes.first().map(String::as_str).unwrap_or_default();
    v.violation(match rc {
        Some(rc) => format!("`{field}` is `{rc}`, but pods with {vendor} GPUs need {need} ({why}): set `runtimeClassName: {set}`"),
        None => format!(
            "`{field}` is not set, but pods with {vendor} GPUs need {need} ({why}): add `runtimeClassName: {set}` to `{}`",
            t.spec_path()
        ),
    });
    true
}

/// The template tolerates the GPU node taint; in a DaemonSet's pod, by a
/// toleration its author wrote, not one the DaemonSet controller adds to
/// every daemon pod (the DaemonSet was judged without those).
fn check_toleration(req: &Request<'_>, t: &PodTemplate<'_>, r: &Requirement, v: &mut Verdict) {
    let Some(taint) = &r.taint else { return };
    if author_tolerates(req, t, &taint.node_taint()) {
        return;
    }
    let at = t.spec_path().key("tolerations");
    v.violation(format!(
        "`{at}` does not tolerate the taint of {} GPU nodes (`{}`), so the pod can never be scheduled there: {}",
        r.vendor,
        taint.shown(),
        toleration_fix(&at, authored_tolerations(req, t), taint)
    ));
}

/// What to write: the toleration of `taint`, and first, for each of the
/// `tolerations` (at `at`) that names the taint's key but misses it (a
/// toleration of `nvidia.com/gpu=true` beside GKE's
/// `nvidia.com/gpu=present` taint), which one and why, as the scheduler
/// decides it.
fn toleration_fix<'t, 'a: 't>(at: &Path, tolerations: impl Iterator<Item = (usize, &'t Toleration<'a>)>, taint: &Taint) -> String {
    let near: Vec<String> = tolerations
        .filter_map(|(i, tol)| {
            let why = why_not_tolerated(tol, &taint.node_taint());
            (!why.is_empty()).then(|| format!("`{}` names its key, but {}", at.index(i), why.join("; and ")))
        })
        .collect();
    let want = taint.toleration_shown();
    match near.as_slice() {
        [] => format!("add `{want}`"),
        [one] => format!("{one}: change it to `{want}`"),
        many => format!("{}: change one of them to `{want}`", many.join("; ")),
    }
}

aigov_sdk::export_policy!(GpuRuntimeClass);
