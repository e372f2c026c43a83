//! `gpu-runtime-class`: a pod template that requests a GPU must use an
//! allowed runtime class (default `nvidia`) and tolerate the GPU node taint
//! (default key `nvidia.com/gpu`, operator `Exists`).
//!
//! Without the runtime class the container starts without the GPU driver
//! hooks and the job dies at its first CUDA call; without the toleration it
//! never schedules onto a GPU node. Both are cheaper to catch at admission.

mod settings;

use aigov_sdk::text::one_of;
use aigov_sdk::workload::Toleration;
use aigov_sdk::{Cluster, GpuRequest, Malformed, Policy, PodTemplate, Request, Verdict};

pub use settings::{RequiredToleration, Settings};

/// The rule.
pub struct GpuRuntimeClass;

impl Policy for GpuRuntimeClass {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload()? else {
            return Ok(verdict);
        };
        for template in workload.templates() {
            let gpus = template.gpu_requests(&settings.gpu_resource_names)?;
            let Some(first) = gpus.first() else { continue };
            if template.is_partial() {
                verdict.warn(format!(
                    "`{}` requests GPUs; its runtime class and tolerations come from the referenced training runtime, which this rule does not see",
                    template.path()
                ));
                continue;
            }
            check_runtime_class(template, settings, first, gpus.len(), &mut verdict);
            check_toleration(template, settings, &mut verdict);
        }
        Ok(verdict)
    }
}

fn check_runtime_class(t: &PodTemplate<'_>, s: &Settings, first: &GpuRequest, n: usize, v: &mut Verdict) {
    let field = format!("{}.runtimeClassName", t.spec_path());
    let allowed = one_of(&s.allowed_runtime_classes);
    let why = gpu_summary(first, n);
    match t.spec.runtime_class_name.as_deref() {
        Some(rc) if s.allowed_runtime_classes.iter().any(|a| a == rc) => {}
        Some(rc) => v.violation(format!(
            "`{field}` is `{rc}`, but pods that request GPUs must use runtime class {allowed} ({why})"
        )),
        None => v.violation(format!(
            "`{field}` is not set, but pods that request GPUs must use runtime class {allowed} ({why})"
        )),
    }
}

fn check_toleration(t: &PodTemplate<'_>, s: &Settings, v: &mut Verdict) {
    let Some(required) = &s.required_toleration else { return };
    if t.spec.tolerations.iter().any(|have| covers(have, required)) {
        return;
    }
    v.violation(format!(
        "`{}.tolerations` has no toleration for the GPU node taint: add `{}`",
        t.spec_path(),
        describe(required)
    ));
}

/// Whether a pod toleration tolerates every taint `required` tolerates, by
/// Kubernetes' matching rules (an empty key with `Exists` tolerates all keys;
/// an empty effect all effects).
fn covers(have: &Toleration<'_>, required: &RequiredToleration) -> bool {
    let op_exists = have.operator.as_deref() == Some("Exists");
    let key_ok = match have.key.as_deref() {
        None | Some("") => op_exists,
        Some(k) => k == required.key,
    };
    let value_ok = op_exists
        || (required.operator == "Equal" && have.value.as_deref().unwrap_or("") == required.value.as_deref().unwrap_or(""));
    let effect_ok = match have.effect.as_deref() {
        None | Some("") => true,
        Some(e) => required.effect.as_deref() == Some(e),
    };
    key_ok && value_ok && effect_ok
}

fn describe(t: &RequiredToleration) -> String {
    let mut s = format!("{{key: {}, operator: {}", t.key, t.operator);
    if let Some(v) = &t.value {
        s.push_str(&format!(", value: {v}"));
    }
    if let Some(e) = &t.effect {
        s.push_str(&format!(", effect: {e}"));
    }
    s.push('}');
    s
}

fn gpu_summary(first: &GpuRequest, n: usize) -> String {
    let (name, count) = first.resources.first().map_or(("", 0), |(r, c)| (r.as_str(), *c));
    let more = match n {
        0 | 1 => String::new(),
        2 => " and 1 other container".into(),
        _ => format!(" and {} other containers", n - 1),
    };
    format!(
        "container `{}` requests {count} `{name}`{more}",
        first.container_name
    )
}

aigov_sdk::export_policy!(GpuRuntimeClass);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use aigov_sdk::Str;

    fn tol(key: Option<&'static str>, op: Option<&'static str>, value: Option<&'static str>, effect: Option<&'static str>) -> Toleration<'static> {
        Toleration {
            key: key.map(Str::from),
            operator: op.map(Str::from),
            value: value.map(Str::from),
            effect: effect.map(Str::from),
        }
    }

    #[test]
    fn toleration_coverage_follows_kubernetes() {
        let exists = RequiredToleration::default();
        assert!(covers(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, None), &exists));
        assert!(covers(&tol(None, Some("Exists"), None, None), &exists), "tolerate-everything");
        assert!(!covers(&tol(Some("nvidia.com/gpu"), Some("Equal"), Some("true"), None), &exists), "Equal is narrower than Exists");
        assert!(!covers(&tol(Some("nvidia.com/gpu"), Some("Exists"), None, Some("NoSchedule")), &exists), "one effect is narrower than all");
        assert!(!covers(&tol(Some("other"), Some("Exists"), None, None), &exists));
        assert!(!covers(&tol(None, None, None, None), &exists), "empty key needs Exists");

        let equal = RequiredToleration {
            key: "gpu".into(),
            operator: "Equal".into(),
            value: Some("a100".into()),
            effect: Some("NoSchedule".into()),
        };
        assert!(covers(&tol(Some("gpu"), None, Some("a100"), None), &equal), "operator defaults to Equal");
        assert!(covers(&tol(Some("gpu"), Some("Equal"), Some("a100"), Some("NoSchedule")), &equal));
        assert!(!covers(&tol(Some("gpu"), Some("Equal"), Some("h100"), None), &equal));
        assert!(!covers(&tol(Some("gpu"), Some("Exists"), None, Some("NoExecute")), &equal));
    }

    #[test]
    fn toleration_is_described_as_yaml() {
        assert_eq!(describe(&RequiredToleration::default()), "{key: nvidia.com/gpu, operator: Exists}");
    }
}
