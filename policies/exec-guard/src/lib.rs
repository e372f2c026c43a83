//! `exec-guard`: only allowed users may exec into or attach to pods that hold
//! GPUs (and port-forward or proxy to them, when configured).
//!
//! A GPU pod kept alive with `sleep infinity` and entered with `kubectl exec`
//! is a personal virtual machine: its GPUs sit idle between commands while
//! other people's jobs wait for them. The rule sees `CONNECT` requests on
//! `pods/exec` and `pods/attach` (and `pods/portforward` and `pods/proxy`,
//! which both reach the pod's ports, with `guardPortForward`), admits users and groups listed in `allowedUsers` and
//! `allowedGroups`, and, with `allowNonGpuPods` (the default), everyone whose
//! target pod requests no GPU: it looks the pod up through the cluster
//! capability to find out. A pod that cannot be looked up or read is treated
//! as a GPU pod. Every session it evaluates is recorded in the `exec` audit
//! annotation: who, where, which container, which command, and the verdict.

mod settings;

use std::fmt::Write as _;

use aigov_sdk::cluster::gpu::ClaimError;
use aigov_sdk::prelude::*;

use aigov_sdk::ConnectOptions;

pub use settings::{Allowance, Settings};

/// Key of the audit annotation that records every session the rule evaluates.
pub const AUDIT_KEY: &str = "exec";

/// The rule.
pub struct ExecGuard;

impl Policy for ExecGuard {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let Some(session) = Session::of(req, settings.guard_port_forward) else {
            return Ok(Verdict::accept());
        };
        let sub = session.subresource();
        let name = req
            .name()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Malformed::new(format!("the `CONNECT` request on `pods/{sub}` does not name the pod")))?;
        let (pod, port) = match session {
            Session::Proxy => split_proxy_name(name).ok_or_else(|| {
                Malformed::new(format!(
                    "the `CONNECT` request on `pods/proxy` names `{name}`, which is not `pod`, `pod:port` or `scheme:pod:port` (scheme `http` or `https`)"
                ))
            })?,
            Session::Exec | Session::Attach | Session::PortForward => (name, None),
        };
        let namespace = req
            .namespace()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Malformed::new(format!("the `CONNECT` request on `pods/{sub}` has no namespace")))?;
        let options: ConnectOptions<'_> = req.object_as(&format!("the {}", session.options_kind()))?.unwrap_or_default();
        let user = req.user();
        let target = Target { session, namespace, pod, port, user: &user.username, options: &options };

        let finding = match settings.allowance(&user.username, &user.groups) {
            Some(allowance) => Finding::Allowed(allowance),
            None if settings.allow_non_gpu_pods => check_pod(cluster, namespace, pod, settings, &req.gpu_classes()),
            None => Finding::Reserved,
        };

        let mut verdict = Verdict::accept();
        verdict.annotate(AUDIT_KEY, audit_record(&target, &finding));
        if let Finding::LookupAllowed { why } = &finding {
            if why == aigov_sdk::cluster::OFFLINE {
                // No cluster to ask (a scan without one): not checked.
                let what = format!("the pod could not be looked up ({why})");
                settings.on_lookup_error.report(&what, "", ", so whether it holds GPUs was not checked", &mut verdict);
            } else {
                verdict.warn(format!(
                    "the pod could not be checked for GPUs ({why}); the session is allowed because `onLookupError` is `allow`"
                ));
            }
        }
        if let Some(message) = denial(&target, &finding, settings) {
            verdict.violation(message);
        }
        Ok(verdict)
    }
}

/// A `CONNECT` subresource the rule governs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Session {
    Exec,
    Attach,
    PortForward,
    /// `pods/proxy`: HTTP through the API server to one of the pod's ports
    /// (`kubectl proxy`, then `/api/v1/namespaces/ml/pods/nb-0:8888/proxy/`).
    Proxy,
}

impl Session {
    /// The session a request opens, if the rule governs it: `CONNECT` on
    /// `pods/exec` or `pods/attach`, and on `pods/portforward` and
    /// `pods/proxy` when guarded: both reach a server listening in the pod
    /// (the Jupyter server a port-forward reaches answers the proxy too),
    /// so one setting guards both.
    /// A request without `resource` counts as one on pods (fail closed).
    fn of(req: &Request<'_>, guard_port_forward: bool) -> Option<Session> {
        if req.operation() != Operation::Connect {
            return None;
        }
        let r = req.resource();
        if !r.group.is_empty() || !(r.resource == "pods" || r.resource.is_empty()) {
            return None;
        }
        match req.sub_resource()? {
            "exec" => Some(Session::Exec),
            "attach" => Some(Session::Attach),
            "portforward" if guard_port_forward => Some(Session::PortForward),
            "proxy" if guard_port_forward => Some(Session::Proxy),
            _ => None,
        }
    }

    fn subresource(self) -> &'static str {
        match self {
            Session::Exec => "exec",
            Session::Attach => "attach",
            Session::PortForward => "portforward",
            Session::Proxy => "proxy",
        }
    }

    fn options_kind(self) -> &'static str {
        match self {
            Session::Exec => "PodExecOptions",
            Session::Attach => "PodAttachOptions",
            Session::PortForward => "PodPortForwardOptions",
            Session::Proxy => "PodProxyOptions",
        }
    }

    /// `exec into`, as in "exec into pod `ml/trainer` is denied".
    fn action(self) -> &'static str {
        match self {
            Session::Exec => "exec into",
            Session::Attach => "attach to",
            Session::PortForward => "port-forward to",
            Session::Proxy => "proxy to",
        }
    }
}

/// The session being opened.
struct Target<'r> {
    session: Session,
    namespace: &'r str,
    pod: &'r str,
    /// The port a proxy request names (`nb-0:8888`), if any.
    port: Option<&'r str>,
    user: &'r str,
    options: &'r ConnectOptions<'r>,
}

/// What the rule found out about a session.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Finding<'s> {
    /// The user or one of its groups is allowed: no lookup.
    Allowed(Allowance<'s>),
    /// The pod was looked up and requests no GPU.
    NoGpu,
    /// The pod holds GPUs: this many, of these resources (sorted).
    Gpu { gpus: u64, resources: Vec<String> },
    /// The pod could not be looked up or read: why, and whether the lookup
    /// said it does not exist.
    Unchecked { why: String, not_found: bool },
    /// `allowNonGpuPods` is off and the user is not allowed.
    Reserved,
    /// The lookup failed and `onLookupError: allow` admits: why.
    LookupAllowed { why: String },
}

/// Looks the target pod up and counts its GPUs: extended resources, and
/// devices of GPU classes its resource claims request (DRA). Every failure
/// is an `Unchecked` finding, which denies: a rule that cannot see the pod
/// must not guess that it holds no GPU (unless `onLookupError: allow` says
/// a failed lookup admits).
fn check_pod<'s>(cluster: &dyn Cluster, namespace: &str, pod: &str, s: &Settings, classes: &[Glob]) -> Finding<'s> {
    let json = match cluster.get_resource("v1", "Pod", pod, Some(namespace)) {
        Ok(json) => json,
        Err(e) => return lookup_failed(&e, s),
    };
    let workload = match Workload::parse(WorkloadKind::Pod, &json) {
        Ok(w) => w,
        Err(e) => return unreadable(e.0),
    };
    let gpus = &s.gpu_resource_names;
    let mut held: u64 = 0;
    let mut resources: Vec<String> = Vec::new();
    for template in workload.templates() {
        let requests = match template.gpu_requests(gpus) {
            Ok(r) => r,
            Err(e) => return unreadable(format!("the Pod's {}", e.0)),
        };
        // The scheduler's count (init containers run before the others);
        // ephemeral containers cannot hold resources, so if only they claim
        // GPUs, count what they claim.
        let per_pod = template.gpu_units_per_pod(gpus).unwrap_or(0);
        let claimed = requests.iter().map(|r| r.total()).fold(0, u64::saturating_add);
        held = held.saturating_add(if per_pod > 0 { per_pod } else { claimed });
        resources.extend(requests.into_iter().flat_map(|r| r.resources.into_iter().map(|(name, _)| name)));
        match template.claimed_gpus(namespace, cluster, s.resource_claims.lookup(classes)) {
            Ok(claims) => {
                for c in claims {
                    // `allocationMode: All` takes every GPU on the node: at least one.
                    held = held.saturating_add(c.devices.unwrap_or(1));
                    resources.push(c.source_ref());
                }
            }
            Err(ClaimError::Lookup(e) | ClaimError::TemplatePending(_, e)) => return lookup_failed(&e, s),
            Err(ClaimError::Malformed(e)) => return unreadable(e.0),
        }
    }
    if resources.is_empty() {
        return Finding::NoGpu;
    }
    resources.sort();
    resources.dedup();
    Finding::Gpu { gpus: held, resources }
}

/// A lookup that failed: the first line of the host's explanation (hosts
/// may send whole stack traces). With `onLookupError: allow`, a failure
/// other than "not found" admits.
fn lookup_failed<'s>(e: &LookupError, s: &Settings) -> Finding<'s> {
    let not_found = matches!(e, LookupError::NotFound(_));
    // Without a cluster to ask, the pod is not checked, whatever the
    // setting (and said so: see `OnLookupError::report`).
    if e.is_offline() || (!not_found && s.on_lookup_error == OnLookupError::Allow) {
        return Finding::LookupAllowed { why: e.first_line().to_string() };
    }
    Finding::Unchecked { why: e.first_line().to_string(), not_found }
}

fn unreadable<'s>(why: String) -> Finding<'s> {
    Finding::Unchecked { why, not_found: false }
}

/// The message of a denial; `None` when the session is allowed.
fn denial(t: &Target<'_>, finding: &Finding<'_>, s: &Settings) -> Option<String> {
    if matches!(finding, Finding::Allowed(_) | Finding::NoGpu | Finding::LookupAllowed { .. }) {
        return None;
    }
    let what = format!("{} pod `{}/{}` is denied", t.session.action(), t.namespace, t.pod);
    let ask = match who(s) {
        Some(w) => format!("ask {w}"),
        None => "ask your cluster administrators".to_string(),
    };
    match finding {
        Finding::Allowed(_) | Finding::NoGpu | Finding::LookupAllowed { .. } => None,
        Finding::Gpu { gpus, resources } => {
            let instead = match t.session {
                Session::Exec | Session::Attach => "copy files through a pod without GPUs that mounts the same volume",
                Session::PortForward | Session::Proxy => "serve notebooks and dashboards from a pod without GPUs",
            };
            Some(format!(
                "{what}: it holds {} ({}), and interactive sessions keep GPU pods running as personal machines while their GPUs sit idle and other jobs wait for them; run the work as a Job that exits when it is done, {instead}, or, to debug this pod, {ask}",
                count(*gpus, "GPU"),
                quoted(resources),
            ))
        }
        Finding::Unchecked { why, not_found } => {
            let next = if *not_found { "check the pod's name and namespace and try again" } else { "try again in a moment" };
            Some(format!(
                "{what}: the pod could not be checked for GPUs: {why}; only pods known to hold no GPU are open to everyone, so {next}, or {ask}"
            ))
        }
        Finding::Reserved => {
            let only = match who(s) {
                Some(w) => format!("only {w} may"),
                None => "nobody may".to_string(),
            };
            Some(format!(
                "{what}: on this cluster {only} open interactive sessions in pods, which otherwise end up used as personal machines; run the work as a Job that exits when it is done, or {ask}"
            ))
        }
    }
}

/// Who may open sessions anywhere, for messages, e.g.
/// ``a member of `system:masters` `` or
/// ``` `alice@example.com` or a member of one of `a`, `b` ```; `None` when
/// nobody is allowed.
fn who(s: &Settings) -> Option<String> {
    let users: Vec<&str> = s.allowed_users.iter().map(|g| g.as_str()).collect();
    let groups: Vec<&str> = s.allowed_groups.iter().map(|g| g.as_str()).collect();
    match (users.is_empty(), groups.is_empty()) {
        (true, true) => None,
        (true, false) => Some(format!("a member of {}", one_of(&groups))),
        (false, true) => Some(one_of(&users)),
        (false, false) => Some(format!("{} or a member of {}", one_of(&users), one_of(&groups))),
    }
}

/// The audit record of one session: a compact JSON object with a fixed key
/// order, so the same request always gives the same string.
fn audit_record(t: &Target<'_>, finding: &Finding<'_>) -> String {
    let mut out = String::from("{");
    let (verdict, reason) = match finding {
        Finding::Allowed(Allowance::User(_)) => ("allow", "allowed-user"),
        Finding::Allowed(Allowance::Group(_)) => ("allow", "allowed-group"),
        Finding::NoGpu => ("allow", "no-gpu"),
        Finding::Gpu { .. } => ("deny", "gpu-pod"),
        Finding::Unchecked { .. } => ("deny", "pod-not-checked"),
        Finding::Reserved => ("deny", "not-allowed"),
        Finding::LookupAllowed { .. } => ("allow", "lookup-failed-allowed"),
    };
    field(&mut out, "verdict", verdict);
    field(&mut out, "reason", reason);
    match finding {
        Finding::Allowed(Allowance::User(m) | Allowance::Group(m)) => field(&mut out, "match", m),
        Finding::Gpu { gpus, resources } => {
            let _ = write!(out, ",\"gpus\":{gpus}");
            list(&mut out, "gpuResources", resources);
        }
        Finding::Unchecked { why, .. } | Finding::LookupAllowed { why } => field(&mut out, "error", why),
        Finding::NoGpu | Finding::Reserved => {}
    }
    field(&mut out, "subresource", t.session.subresource());
    field(&mut out, "namespace", t.namespace);
    field(&mut out, "pod", t.pod);
    match t.options.container.as_deref() {
        Some(c) => field(&mut out, "container", c),
        None => out.push_str(",\"container\":null"),
    }
    field(&mut out, "user", t.user);
    match t.session {
        Session::Exec | Session::Attach => list(&mut out, "command", &t.options.command),
        Session::PortForward => {
            let ports: Vec<String> = t.options.ports.iter().map(i64::to_string).collect();
            let _ = write!(out, ",\"ports\":[{}]", ports.join(","));
        }
        Session::Proxy => {
            match t.port {
                Some(p) => field(&mut out, "port", p),
                None => out.push_str(",\"port\":null"),
            }
            field(&mut out, "path", t.options.path.as_deref().unwrap_or(""));
        }
    }
    let _ = write!(out, ",\"stdin\":{},\"tty\":{}}}", t.options.stdin, t.options.tty);
    out
}

/// The pod and port a `pods/proxy` request names, read as the API server
/// reads it (`net.SplitSchemeNamePort`): `pod`, `pod:port` or
/// `scheme:pod:port`, the scheme `http`, `https` or empty, the pod not
/// empty; the port may be a name (`nb-0:http`). `None` when the API server
/// would refuse the name itself.
fn split_proxy_name(name: &str) -> Option<(&str, Option<&str>)> {
    let mut parts = name.split(':');
    let (scheme, pod, port) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(pod), None, _, _) => ("", pod, None),
        (Some(pod), Some(port), None, _) => ("", pod, Some(port)),
        (Some(scheme), Some(pod), Some(port), None) => (scheme, pod, Some(port)),
        _ => return None,
    };
    if pod.is_empty() || !matches!(scheme, "" | "http" | "https") {
        return None;
    }
    Some((pod, port.filter(|p| !p.is_empty())))
}

/// `,"key":"value"` (no comma first when `out` is just the opening brace).
fn field(out: &mut String, key: &str, value: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    json_string(out, key);
    out.push(':');
    json_string(out, value);
}

/// `,"key":["a","b"]`.
fn list<S: AsRef<str>>(out: &mut String, key: &str, values: &[S]) {
    out.push(',');
    json_string(out, key);
    out.push_str(":[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, v.as_ref());
    }
    out.push(']');
}

/// A JSON string literal (RFC 8259 escaping).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

aigov_sdk::export_policy!(ExecGuard);

#[cfg(test)]
mod tests;
