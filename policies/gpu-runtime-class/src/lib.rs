//! `gpu-runtime-class`: a pod template that requests a GPU uses the runtime
//! class its vendor's GPUs need (NVIDIA: `nvidia`) and tolerates the taint
//! its GPU nodes carry (NVIDIA: `nvidia.com/gpu:NoSchedule`).
//!
//! Without the runtime class the container starts without the GPU driver
//! hooks and the job dies at its first CUDA call; without the toleration it
//! never schedules onto a GPU node. Both are cheaper to catch at admission.

mod settings;

use aigov_sdk::cluster::gpu_runtime::{self, CalledFor};
use aigov_sdk::model::scheduling::pod_tolerates;
use aigov_sdk::prelude::*;

pub use settings::{Requirement, Settings, Taint};

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
            let gpus = template.gpu_requests(&settings.gpu_resource_names)?;
            let claims = claims(template, namespace, cluster, settings, &mut verdict)?;
            if gpus.is_empty() && claims.is_empty() {
                continue;
            }
            if template.is_partial() {
                verdict.warn(format!(
                    "`{}` requests GPUs; its runtime class and tolerations come from the referenced training runtime, which this rule does not see",
                    template.path()
                ));
                continue;
            }
            for (requirement, why) in gpu_runtime::applicable(&settings.requirements, &gpus, &claims) {
                check_runtime_class(template, requirement, &why, &mut verdict);
                check_toleration(template, requirement, &mut verdict);
            }
        }
        Ok(verdict)
    }
}

/// What the template's DRA claims bring: `(device class, claim)` pairs.
/// A failed lookup denies or warns, as `onLookupError` says.
fn claims(t: &PodTemplate<'_>, ns: &str, cluster: &dyn Cluster, s: &Settings, v: &mut Verdict) -> Result<Vec<(String, String)>, Malformed> {
    let needed_for = (", so their GPUs cannot be checked", "; admitted");
    let found = t.claimed_gpus_or_report(ns, cluster, s.resource_claims.lookup(), s.on_lookup_error, needed_for, v)?;
    Ok(found.into_iter().flat_map(|c| c.classes.into_iter().map(move |class| (class, c.claim.clone()))).collect())
}

fn check_runtime_class(t: &PodTemplate<'_>, r: &Requirement, why: &CalledFor<'_>, v: &mut Verdict) {
    let rc = t.spec.runtime_class_name.as_deref();
    if r.runtime_classes.is_empty() || rc.is_some_and(|rc| r.runtime_classes.iter().any(|a| a == rc)) {
        return;
    }
    let field = t.spec_path().key("runtimeClassName");
    let need = match r.runtime_classes.as_slice() {
        [one] => format!("runtime class `{one}`"),
        many => format!("one of the runtime classes {}", quoted(many)),
    };
    let vendor = &r.vendor;
    v.violation(match rc {
        Some(rc) => format!("`{field}` is `{rc}`, but pods with {vendor} GPUs need {need} ({why})"),
        None => format!("`{field}` is not set, but pods with {vendor} GPUs need {need} ({why})"),
    });
}

fn check_toleration(t: &PodTemplate<'_>, r: &Requirement, v: &mut Verdict) {
    let Some(taint) = &r.taint else { return };
    if pod_tolerates(&t.spec, &taint.node_taint()) {
        return;
    }
    v.violation(format!(
        "`{}` does not tolerate the taint of {} GPU nodes (`{}`), so the pod can never be scheduled there: add `{}`",
        t.spec_path().key("tolerations"),
        r.vendor,
        taint.shown(),
        taint.toleration_shown()
    ));
}

aigov_sdk::export_policy!(GpuRuntimeClass);
