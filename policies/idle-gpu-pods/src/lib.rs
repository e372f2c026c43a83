//! `idle-gpu-pods`: a pod template that requests GPUs must not hold them
//! with a command that only waits (`sleep infinity`, `tail -f /dev/null`,
//! `while true; do sleep 60; done`, a shell waiting on a terminal), and a
//! GPU Pod created on its own, or a GPU Job, may be required to set a
//! deadline.
//!
//! Pods kept alive with `sleep infinity` and used over SSH or `kubectl exec`
//! as personal machines hold their GPUs for days while doing nothing. The
//! command is read the way the shell reads it (see [`shell`] and [`idle`]),
//! never by searching for a substring, so `echo "sleep infinity"` is not
//! idle and `sh -c 'trap : TERM; sleep infinity & wait'` is.

mod idle;
mod settings;
mod shell;

use std::collections::BTreeMap;

use aigov_sdk::model::pod::EnvVar;
use aigov_sdk::prelude::*;

pub use idle::{Dur, Finding};
pub use settings::Settings;

/// The rule.
pub struct IdleGpuPods;

impl Policy for IdleGpuPods {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let namespace = req.object_namespace();
        for template in workload.templates() {
            let claimed = claimed(template, namespace, cluster, settings, &req.gpu_classes(), &mut verdict)?;
            let mut holders = Vec::new();
            for c in template.containers() {
                let gpus = template.container_gpus(&c, &settings.gpu_resource_names)?;
                let claims: Vec<&str> =
                    c.container.resources.claims.iter().map(|cl| &*cl.name).filter(|n| claimed.iter().any(|x| x == n)).collect();
                let held = (!gpus.is_empty() || !claims.is_empty()).then_some(Held { gpus, claims });
                holders.push((c, held));
            }
            if holders.iter().all(|(_, g)| g.is_none()) {
                continue;
            }
            for (c, gpus) in holders.iter().filter(|(c, _)| !req.exempt_container(c.container)) {
                check_container(template, c, gpus.as_ref(), settings, &mut verdict);
            }
            // A deadline is the pod's (or the Job's), asked when a container
            // `exemptImages` does not list holds GPUs, as Gatekeeper's
            // `K8sGpuActiveDeadline` asks it.
            if holders.iter().all(|(c, g)| g.is_none() || req.exempt_container(c.container)) {
                continue;
            }
            let bare_pod = workload.kind == WorkloadKind::Pod && template.role == Role::Pod && req.controller().is_none();
            if bare_pod && let Some(max) = settings.max_active_deadline_seconds {
                check_deadline(template, max, &mut verdict);
            }
            if settings.require_job_deadline
                && let Some(max) = settings.max_active_deadline_seconds
                && let Some(job) = job_deadline(req, workload, template)?
            {
                check_job_deadline(template, &job, max, &mut verdict);
            }
        }
        Ok(verdict)
    }
}

/// The Job spec a template belongs to: where its `activeDeadlineSeconds`
/// is, and its value.
struct JobDeadline {
    field: Path,
    seconds: Option<i64>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JobSpecWire {
    #[serde(default)]
    active_deadline_seconds: Option<i64>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JobTemplateWire {
    #[serde(default)]
    spec: Option<JobSpecWire>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ReplicatedJobWire {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    template: Option<JobTemplateWire>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SpecWire {
    #[serde(default)]
    active_deadline_seconds: Option<i64>,
    #[serde(default)]
    job_template: Option<JobTemplateWire>,
    #[serde(default)]
    replicated_jobs: Option<Vec<ReplicatedJobWire>>,
}

#[derive(serde::Deserialize, Default)]
struct ObjectWire {
    #[serde(default)]
    spec: Option<SpecWire>,
}

/// The Job deadline that bounds a template's pods: a Job's
/// `spec.activeDeadlineSeconds`, a CronJob's
/// `spec.jobTemplate.spec.activeDeadlineSeconds`, a JobSet replicated
/// job's `spec.replicatedJobs[i].template.spec.activeDeadlineSeconds`.
/// `None` for other kinds.
fn job_deadline(req: &Request<'_>, w: &Workload<'_>, t: &PodTemplate<'_>) -> Result<Option<JobDeadline>, Malformed> {
    if !matches!(w.kind, WorkloadKind::Job | WorkloadKind::CronJob | WorkloadKind::JobSet) {
        return Ok(None);
    }
    let spec = req.object_as::<ObjectWire>(&w.describe())?.and_then(|o| o.spec).unwrap_or_default();
    let root = Path::root().key("spec");
    Ok(match w.kind {
        WorkloadKind::Job => Some(JobDeadline { field: root.key("activeDeadlineSeconds"), seconds: spec.active_deadline_seconds }),
        WorkloadKind::CronJob => Some(JobDeadline {
            field: root.keys(&["jobTemplate", "spec", "activeDeadlineSeconds"]),
            seconds: spec.job_template.and_then(|j| j.spec).and_then(|s| s.active_deadline_seconds),
        }),
        _ => spec.replicated_jobs.unwrap_or_default().into_iter().enumerate().find(|(_, j)| j.name.as_deref() == t.name.as_deref()).map(
            |(i, j)| JobDeadline {
                field: root.key("replicatedJobs").index(i).keys(&["template", "spec", "activeDeadlineSeconds"]),
                seconds: j.template.and_then(|t| t.spec).and_then(|s| s.active_deadline_seconds),
            },
        ),
    })
}

/// A GPU Job is bounded when its own `activeDeadlineSeconds` (the whole
/// Job, retries included) or its pod template's (each pod) is at most
/// `max`.
fn check_job_deadline(t: &PodTemplate<'_>, job: &JobDeadline, max: u64, v: &mut Verdict) {
    let within = |n: Option<i64>| n.is_some_and(|n| u64::try_from(n).is_ok_and(|n| n <= max));
    let pod = t.spec.active_deadline_seconds;
    if within(job.seconds) || within(pod) {
        return;
    }
    #[allow(clippy::cast_precision_loss)]
    let limit = format!("{max} ({})", human(max as f64));
    let pod_field = t.spec_path().key("activeDeadlineSeconds");
    let over = |field: &Path, n: i64| {
        #[allow(clippy::cast_precision_loss)]
        let shown = human(n as f64);
        format!("`{field}` is {n} ({shown}), above the {limit} a Job that requests GPUs may run: lower it to at most {max}")
    };
    match (job.seconds, pod) {
        (Some(n), _) => v.violation(over(&job.field, n)),
        (None, Some(n)) => v.violation(over(&pod_field, n)),
        (None, None) => v.violation(format!(
            "`{}` is not set, but a Job that requests GPUs must be bounded, to at most {limit}, so that its GPUs are released even if it never ends: set it (it bounds the whole Job, retries included), or set `{pod_field}` (each pod)",
            job.field
        )),
    }
}

/// The names of the template's pod-level claims that bring GPUs (with
/// `resourceClaims.resolve`); a failed lookup denies or warns, as
/// `onLookupError` says.
fn claimed(
    t: &PodTemplate<'_>,
    ns: &str,
    cluster: &dyn Cluster,
    s: &Settings,
    classes: &[Glob],
    v: &mut Verdict,
) -> Result<Vec<String>, Malformed> {
    let needed_for = (", so whether its GPUs sit idle cannot be checked", "; admitted");
    let found = t.claimed_gpus_or_report(ns, cluster, s.resource_claims.lookup(classes), s.on_lookup_error, needed_for, v)?;
    Ok(found.into_iter().map(|c| c.claim).collect())
}

/// What a container holds: `1 `nvidia.com/gpu``, `the GPUs of resource
/// claim `gpu``; `None` for no GPU. The flag: more than one GPU.
/// The GPUs a container holds: its resources, and the GPU claims it names.
struct Held<'a> {
    gpus: Vec<(String, u64)>,
    claims: Vec<&'a str>,
}

impl Held<'_> {
    /// `` 4 `nvidia.com/gpu` ``, and whether that is more than one GPU:
    /// written only into a finding.
    fn describe(&self) -> (String, bool) {
        let mut parts: Vec<String> = self.gpus.iter().map(|(name, n)| format!("{n} `{name}`")).collect();
        parts.extend(self.claims.iter().map(|c| format!("the GPUs of resource claim `{c}`")));
        let total: u64 = self.gpus.iter().map(|(_, n)| *n).sum();
        (parts.join(" and "), total > 1 || !self.claims.is_empty())
    }
}

/// The command line a container runs, after the kubelet's `$(VAR)`
/// expansion, and the field it comes from; `None` when the image's own
/// command runs (not in the request).
fn command_line(
    c: &ContainerRef<'_, '_>,
    env: &BTreeMap<String, Option<String>>,
    args_as_command: bool,
) -> Option<(Vec<Option<String>>, &'static str)> {
    let k = c.container;
    let field = if !k.command.is_empty() {
        "command"
    } else if args_as_command && k.args.first().is_some_and(|a| !a.starts_with('-')) {
        "args"
    } else {
        return None;
    };
    let words = k.command.iter().chain(k.args.iter()).map(|w| kube_expand(w, env)).collect();
    Some((words, field))
}

/// The kubelet's expansion of `$(VAR)` in `command`, `args` and env
/// values: a defined variable is replaced (`None` when its value is not
/// known at admission), `$$` is a `$`, anything else stays as written.
fn kube_expand(s: &str, env: &BTreeMap<String, Option<String>>) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(rest.get(..i).unwrap_or(""));
        let after = rest.get(i + 1..).unwrap_or("");
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(close) = inner.find(')')
        {
            let name = inner.get(..close).unwrap_or("");
            match env.get(name) {
                Some(Some(v)) => out.push_str(v),
                Some(None) => return None,
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = inner.get(close + 1..).unwrap_or("");
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Some(out)
}

/// The container's environment as known at admission: literal values
/// (expanded against the variables before them, as the kubelet does),
/// `None` for values from Secrets, ConfigMaps and fields.
fn environment(env: &[EnvVar<'_>]) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for e in env {
        let value = if e.from_source { None } else { kube_expand(e.value.as_deref().unwrap_or(""), &out) };
        out.insert(e.name.to_string(), value);
    }
    out
}

/// `1d`, `36h`, `90m`, `45s`.
fn human(secs: f64) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let s = secs.ceil().max(0.0) as u64;
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// `` `sleep infinity` ``, or `` `sleep 30m` and `sleep 40m` ``.
fn quoted_waits(waits: &[String]) -> String {
    waits.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(" and ")
}

fn check_container(t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>, gpus: Option<&Held<'_>>, s: &Settings, v: &mut Verdict) {
    let init = c.list == ContainerList::InitContainers && !c.is_sidecar();
    let runs_alongside = c.is_main() || c.is_sidecar();
    // Ephemeral containers hold no resources; other containers matter only
    // when they hold GPUs, init containers whenever the pod does.
    if c.list == ContainerList::EphemeralContainers || (runs_alongside && gpus.is_none()) {
        return;
    }
    let env = environment(&c.container.env);
    let Some((argv, field)) = command_line(c, &env, s.args_as_command) else { return };
    let facts = idle::Container { env, stdin_open: c.container.stdin == Some(true) };
    #[allow(clippy::cast_precision_loss)]
    let long = s.long_sleep_seconds as f64;
    let Some(finding) = idle::judge(&argv, &facts, idle::Extra(&s.waiting_commands), long) else { return };
    let path = t.container_path(c).key(field);
    let from_args = if field == "args" { " (its `args`, run by the image's entrypoint)" } else { "" };
    let who = c.describe();
    if init {
        if let Finding::Idle { waits, total: Dur::Forever } = &finding {
            v.violation(format!(
                "{who} never finishes ({} never ends), so the pod never starts and holds its GPUs while it waits: make the init container's command (`{path}`) end, or remove the init container",
                quoted_waits(waits)
            ));
        }
        return;
    }
    let Some((held, many)) = gpus.map(Held::describe) else { return };
    let (the_gpus, sit) = if many { ("the GPUs", "sit") } else { ("the GPU", "sits") };
    match finding {
        Finding::Idle { waits, total } => {
            let (what, how_long) = match total {
                Dur::Finite(secs) => (format!("{} takes {}", quoted_waits(&waits), human(secs)), format!("for {}", human(secs))),
                _ => (format!("{} never ends", quoted_waits(&waits)), "for as long as the pod runs".to_string()),
            };
            v.violation(format!(
                "{who} requests {held} but its command{from_args} only waits ({what}), so {the_gpus} {sit} idle {how_long}: make `{path}` run the work itself, as a Job that ends and releases {the_gpus} when it is done, or use a Notebook for interactive work"
            ));
        }
        Finding::WorkThenWait { work, waits, total, maybe } => {
            if !s.warn_wait_after_work {
                return;
            }
            let may = if maybe { "may then wait" } else { "then waits" };
            let how = match total {
                Dur::Finite(secs) => format!("for {}", human(secs)),
                _ => "forever".to_string(),
            };
            v.warn(format!(
                "{who} requests {held}; its command{from_args} runs `{work}` and {may} {how} ({}), holding {the_gpus} after the work is done: let `{path}` end when the work ends, and run it as a Job",
                quoted_waits(&waits)
            ));
        }
    }
}

fn check_deadline(t: &PodTemplate<'_>, max: u64, v: &mut Verdict) {
    let field: Path = t.spec_path().key("activeDeadlineSeconds");
    #[allow(clippy::cast_precision_loss)]
    let limit = format!("{max} ({})", human(max as f64));
    match t.spec.active_deadline_seconds {
        None => v.violation(format!(
            "`{field}` is not set, but a Pod that requests GPUs and has no controller must set it, to at most {limit}, so that its GPUs are released even if nobody deletes it: set it, or run the work as a Job"
        )),
        Some(n) if u64::try_from(n).is_ok_and(|n| n > max) => {
            #[allow(clippy::cast_precision_loss)]
            let shown = human(n as f64);
            v.violation(format!(
                "`{field}` is {n} ({shown}), above the {limit} a Pod that requests GPUs may run: lower it to at most {max}, or run the work as a Job"
            ));
        }
        Some(_) => {}
    }
}

aigov_sdk::export_policy!(IdleGpuPods);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_expansion() {
        let env: BTreeMap<String, Option<String>> = [("D".to_string(), Some("infinity".to_string())), ("S".to_string(), None)].into();
        assert_eq!(kube_expand("$(D)", &env).as_deref(), Some("infinity"));
        assert_eq!(kube_expand("x$(D)y", &env).as_deref(), Some("xinfinityy"));
        assert_eq!(kube_expand("$$(D)", &env).as_deref(), Some("$(D)"), "escaped");
        assert_eq!(kube_expand("$(NOPE)", &env).as_deref(), Some("$(NOPE)"), "undefined: left as written");
        assert_eq!(kube_expand("$(S)", &env), None, "from a Secret: unknown");
        assert_eq!(kube_expand("$D $(D", &env).as_deref(), Some("$D $(D"), "shell syntax and an unclosed reference stay");
        assert_eq!(kube_expand("", &env).as_deref(), Some(""));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(86_400.0), "1d");
        assert_eq!(human(129_600.0), "36h");
        assert_eq!(human(5400.0), "90m");
        assert_eq!(human(3601.0), "3601s");
        assert_eq!(human(0.5), "1s");
    }
}
