//! `gpu-runtime-defaults` (mutating): the twin of `gpu-runtime-class`. A
//! pod template that requests a GPU and lacks the runtime class its
//! vendor's GPUs need, or a toleration of the taint its GPU nodes carry,
//! gets them, from the same `requirements` setting.
//!
//! Deployed beside `gpu-runtime-class`, the mutation comes first (Kubernetes
//! calls mutating webhooks before validating ones, and the bundle runs its
//! mutating rules first), so what the validation would have refused for a
//! missing default is admitted with the default filled in; a runtime class
//! the author chose that the GPUs cannot use is still refused.

mod settings;

use aigov_sdk::cluster::gpu_runtime::{self, CalledFor};
use aigov_sdk::model::scheduling::{author_tolerates, pod_tolerates};
use aigov_sdk::prelude::*;
use aigov_sdk::runtime::mutate::{self, may_edit_template};

pub use settings::{Requirement, Settings, Taint};

/// The rule.
pub struct GpuRuntimeDefaults;

impl Policy for GpuRuntimeDefaults {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        let Some(w) = req.workload() else {
            return Ok(v);
        };
        // A controller's copy (a Deployment's ReplicaSet) follows its owner.
        if mutate::controlled_copy(req) {
            return Ok(v);
        }
        let namespace = req.object_namespace();
        for t in w.templates() {
            if !may_edit_template(req, t) {
                continue;
            }
            if t.role == Role::Override {
                tolerate_in_override(w, t, s, &mut v)?;
                continue;
            }
            // Containers whose image `exemptImages` lists hold no GPU here,
            // as for `gpu-runtime-class`, which reads the same settings.
            let exempt = ExemptGpus::of(t, req, &s.gpu_resource_names)?;
            let gpus = exempt.requests(t.gpu_requests(&s.gpu_resource_names)?);
            let claims = claims(t, &exempt, namespace, cluster, s, &req.gpu_classes(), &mut v)?;
            if gpus.is_empty() && claims.is_empty() {
                continue;
            }
            if t.is_partial() {
                // Tolerations an override of the trainer's pods writes
                // replace the runtime's, and get the GPU toleration there.
                let what = if w.trainer_overrides().any(|o| !o.spec.tolerations.is_empty()) {
                    "its runtime class comes"
                } else {
                    "its runtime class and tolerations come"
                };
                v.warn(format!(
                    "`{}` requests GPUs; {what} from the referenced training runtime, which this rule cannot fill in",
                    t.path()
                ));
                continue;
            }
            fill_in(req, t, &gpu_runtime::applicable(&s.requirements, &gpus, &claims), &mut v);
        }
        Ok(v)
    }
}

/// The runtime class and tolerations one template lacks, for the
/// requirements its GPUs call for (in settings order: the first that names
/// a runtime class sets it). A toleration the DaemonSet controller adds to
/// every daemon pod is not the author's, and fills in nothing (the
/// DaemonSet was filled in without it).
fn fill_in(req: &Request<'_>, t: &PodTemplate<'_>, applicable: &[(&Requirement, CalledFor<'_>)], v: &mut Verdict) {
    let mut runtime_class = t.spec.runtime_class_name.as_deref().map(str::to_string);
    let mut added: Vec<&Taint> = Vec::new();
    for (r, why) in applicable {
        if let Some(first) = r.runtime_classes.first() {
            match &runtime_class {
                None => {
                    v.edit(mutate::spec_field(t, "runtimeClassName", first));
                    runtime_class = Some(first.clone());
                }
                Some(rc) if r.runtime_classes.contains(rc) => {}
                Some(rc) => v.warn(format!(
                    "`{}` is `{rc}`, but pods with {} GPUs need {} ({why}); left as is, since the author chose it",
                    t.spec_path().key("runtimeClassName"),
                    r.vendor,
                    match r.runtime_classes.as_slice() {
                        [one] => format!("runtime class `{one}`"),
                        many => format!("one of the runtime classes {}", quoted(many)),
                    }
                )),
            }
        }
        if let Some(taint) = &r.taint
            && !author_tolerates(req, t, &taint.node_taint())
            && !added.contains(&taint)
        {
            let (operator, value) = taint.toleration();
            v.edit(mutate::toleration(t, &taint.key, operator, value, Some(&taint.effect)));
            added.push(taint);
        }
    }
}

/// A TrainJob's override or runtime patch of the trainer's pods that
/// writes `tolerations`: the Trainer merges it over the training runtime's
/// pod template, where they replace the runtime's (a list without a merge
/// key), so they get the toleration of the GPU nodes' taint the trainer's
/// GPUs call for. An override that writes none leaves the runtime's
/// alone; it has no runtime class to fill in.
fn tolerate_in_override(w: &Workload<'_>, t: &PodTemplate<'_>, s: &Settings, v: &mut Verdict) -> Result<(), Malformed> {
    if t.spec.tolerations.is_empty() {
        return Ok(());
    }
    let Some(trainer) = w.gpu_holder(t) else { return Ok(()) };
    let gpus = trainer.gpu_requests(&s.gpu_resource_names)?;
    let mut added: Vec<&Taint> = Vec::new();
    for (r, _) in gpu_runtime::applicable(&s.requirements, &gpus, &[]) {
        if let Some(taint) = &r.taint
            && !pod_tolerates(&t.spec, &taint.node_taint())
            && !added.contains(&taint)
        {
            let (operator, value) = taint.toleration();
            v.edit(mutate::toleration(t, &taint.key, operator, value, Some(&taint.effect)));
            added.push(taint);
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
    let needed_for = (", so the rule cannot tell which GPU defaults the pod needs", "; admitted without GPU defaults for them");
    t.claimed_classes_counted(exempt, ns, cluster, s.resource_claims.lookup(classes), s.on_lookup_error, needed_for, v)
}

aigov_sdk::export_policy!(GpuRuntimeDefaults);
