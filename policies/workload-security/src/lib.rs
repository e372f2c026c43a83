//! `workload-security`: the pod security controls GPU and ML workloads
//! most often get wrong, on every pod template and every container: run as
//! non-root, no privileged mode or privilege escalation, `NET_RAW` dropped
//! and no added capabilities, no host paths outside an allowlist (device
//! mounts included), no host namespaces, a seccomp profile, no unconfined
//! AppArmor, and no credentials in plain environment values.
//!
//! Where a check overlaps the Kubernetes Pod Security Standards it follows
//! their semantics (pod-admission's `policy` package): a container-level
//! `securityContext` field overrides the pod's; the pod-level field
//! satisfies containers that leave it unset; a bad value is refused where
//! it is written; Windows pods (`spec.os.name: windows`) are exempt from the
//! Linux-only checks (seccomp, capabilities, privilege escalation); pods in
//! a user namespace (`hostUsers: false`) from the non-root checks.

mod settings;

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;

use aigov_sdk::model::pod::{Profile, SecurityContext};
use aigov_sdk::prelude::*;

pub use settings::{AllowedHostPath, PrivilegeEscalation, Settings, default_credential_names};

/// The rule.
pub struct WorkloadSecurity;

/// The beta annotation that sets a container's AppArmor profile.
pub const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

impl Policy for WorkloadSecurity {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        for template in workload.templates() {
            Check { t: template, s: settings, v: &mut verdict }.run(workload);
        }
        Ok(verdict)
    }
}

/// One pod template being checked.
struct Check<'c, 'a> {
    t: &'c PodTemplate<'a>,
    s: &'c Settings,
    v: &'c mut Verdict,
}

/// What the pod-level `securityContext` settles for containers that leave
/// a field unset.
#[derive(Default)]
struct PodLevel {
    run_as_non_root: bool,
    seccomp: bool,
}

impl Check<'_, '_> {
    fn run(mut self, workload: &Workload<'_>) {
        if self.t.is_partial() {
            // A TrainJob's trainer: the pod, its security context included,
            // comes from the training runtime.
            self.v.warn(format!(
                "the pod of `{}` comes from its training runtime, which this rule does not see: only its environment variables are checked here",
                self.t.path()
            ));
            for c in self.t.containers() {
                self.credentials(&c);
            }
            return;
        }
        self.app_armor_annotations(workload);
        self.host_namespaces();
        let pod = self.pod_security_context();
        let host_paths = self.host_path_volumes();
        for c in self.t.containers() {
            self.container(&c, &pod, &host_paths);
        }
        self.host_path_violations(&host_paths);
    }

    fn spec_path(&self) -> Path {
        self.t.spec_path()
    }

    fn is_windows(&self) -> bool {
        self.t.spec.is_windows()
    }

    /// Pods in their own user namespace: root in a container is an
    /// unprivileged user on the node (Pod Security Standards v1.35).
    fn in_user_namespace(&self) -> bool {
        self.t.spec.host_users == Some(false)
    }

    // ------------------------------------------------------------ pod level

    /// `container.apparmor.security.beta.kubernetes.io/<container>`
    /// annotations: `runtime/default`, `localhost/<profile>` or empty only.
    fn app_armor_annotations(&mut self, workload: &Workload<'_>) {
        if !self.s.forbid_unconfined_app_armor {
            return;
        }
        let metadata = match self.t.role {
            Role::Pod => Some(&workload.metadata),
            _ => self.t.metadata.as_ref(),
        };
        let Some(metadata) = metadata else { return };
        let at = self.t.metadata_path().key("annotations");
        for (key, value) in &metadata.annotations {
            let Some(container) = key.strip_prefix(APPARMOR_ANNOTATION_PREFIX) else { continue };
            let value = value.get();
            if value.is_empty() || value == "runtime/default" || value.starts_with("localhost/") {
                continue;
            }
            self.v.violation(format!(
                "annotation `{key}` in `{at}` is `{value}`, which runs container `{container}` without AppArmor confinement: \
                 set it to `runtime/default` or `localhost/<profile>`, or remove it"
            ));
        }
    }

    fn host_namespaces(&mut self) {
        let spec = &self.t.spec;
        let p = self.spec_path();
        if self.s.forbid_host_network && spec.host_network == Some(true) {
            self.v.violation(format!(
                "`{}` is `true`, so the pod shares the node's network stack and can reach every service listening on it: remove it",
                p.key("hostNetwork")
            ));
        }
        if self.s.forbid_host_pid && spec.host_pid == Some(true) {
            self.v.violation(format!(
                "`{}` is `true`, so the pod sees and can signal every process on the node: remove it",
                p.key("hostPID")
            ));
        }
        if self.s.forbid_host_ipc && spec.host_ipc == Some(true) {
            self.v.violation(format!(
                "`{}` is `true`, so the pod shares the node's IPC namespace and shared memory: remove it \
                 (for a larger `/dev/shm`, mount an `emptyDir` with `medium: Memory` there)",
                p.key("hostIPC")
            ));
        }
    }

    /// Checks the pod-level `securityContext` and says what it settles for
    /// the containers.
    fn pod_security_context(&mut self) -> PodLevel {
        let mut pod = PodLevel::default();
        let at = self.spec_path().key("securityContext");
        let Some(sc) = self.t.spec.security_context.as_ref() else { return pod };
        if self.s.forbid_privileged && host_process(sc) {
            self.v.violation(format!(
                "`{}` is `true`, so every container runs as a process on the Windows node itself, with its full access: remove it",
                at.keys(&["windowsOptions", "hostProcess"])
            ));
        }
        if self.s.require_run_as_non_root && !self.in_user_namespace() {
            match sc.run_as_non_root {
                Some(true) => pod.run_as_non_root = true,
                Some(false) => {
                    self.v.violation(format!("`{}` is `false`, so containers may run as root: set it to `true`", at.key("runAsNonRoot")))
                }
                None => {}
            }
            if sc.run_as_user == Some(0) {
                self.v.violation(format!(
                    "`{}` is `0`, so containers run as root: use a non-zero user ID, such as `1000`",
                    at.key("runAsUser")
                ));
            }
        }
        if self.s.require_seccomp
            && !self.is_windows()
            && let Some(profile) = &sc.seccomp_profile
        {
            if valid_seccomp(profile) {
                pod.seccomp = true;
            } else {
                self.v.violation(format!(
                    "`{}` is {}, so containers run without a seccomp filter: set it to `RuntimeDefault` (or `Localhost` with a profile)",
                    at.keys(&["seccompProfile", "type"]),
                    shown(profile.kind.as_deref())
                ));
            }
        }
        if self.s.forbid_unconfined_app_armor
            && let Some(profile) = &sc.app_armor_profile
            && !valid_app_armor(profile)
        {
            self.v.violation(format!(
                "`{}` is {}, so containers run without AppArmor confinement: set it to `RuntimeDefault` (or `Localhost` with a profile), or remove it",
                at.keys(&["appArmorProfile", "type"]),
                shown(profile.kind.as_deref())
            ));
        }
        pod
    }

    // ------------------------------------------------------------ containers

    fn container(&mut self, c: &ContainerRef<'_, '_>, pod: &PodLevel, host_paths: &HostPaths) {
        // Where and who, written when a message first needs them.
        let place = Place { t: self.t, c, at: OnceCell::new(), who: OnceCell::new() };
        let who = place.who();
        let sc = c.container.security_context.as_ref();
        let windows = self.is_windows();

        if self.s.forbid_privileged {
            if sc.and_then(|s| s.privileged) == Some(true) {
                self.v.violation(format!(
                    "`{}` is `true` for {who}, giving it every device and capability of the node: remove it \
                     (GPUs are requested as resources such as `nvidia.com/gpu`, not through privileged mode)",
                    place.at().key("privileged")
                ));
            }
            if sc.is_some_and(host_process) {
                self.v.violation(format!(
                    "`{}` is `true` for {who}, so it runs as a process on the Windows node itself: remove it",
                    place.at().keys(&["windowsOptions", "hostProcess"])
                ));
            }
        }

        if self.s.require_run_as_non_root && !self.in_user_namespace() {
            match sc.and_then(|s| s.run_as_non_root) {
                Some(true) => {}
                Some(false) => self.v.violation(format!(
                    "`{}` is `false` for {who}, so it may run as root: set it to `true`",
                    place.at().key("runAsNonRoot")
                )),
                None if pod.run_as_non_root => {}
                None => self.v.violation(format!(
                    "{who} may run as root: set `runAsNonRoot: true` in `{}` (for every container) or in `{}`",
                    self.spec_path().key("securityContext"),
                    place.at()
                )),
            }
            if sc.and_then(|s| s.run_as_user) == Some(0) {
                self.v.violation(format!(
                    "`{}` is `0` for {who}, so it runs as root: use a non-zero user ID, such as `1000`",
                    place.at().key("runAsUser")
                ));
            }
        }

        if !windows {
            self.privilege_escalation(sc, &place);
            self.capabilities(sc, &place);
        } else if self.s.restrict_added_capabilities {
            // The API server refuses capabilities on Windows pods; should
            // one get through, an added one is still refused.
            self.added_capabilities(sc, &place);
        }

        if self.s.require_seccomp && !windows {
            match sc.and_then(|s| s.seccomp_profile.as_ref()) {
                Some(p) if valid_seccomp(p) => {}
                Some(p) => self.v.violation(format!(
                    "`{}` is {} for {who}, so it runs without a seccomp filter: set it to `RuntimeDefault` (or `Localhost` with a profile)",
                    place.at().keys(&["seccompProfile", "type"]),
                    shown(p.kind.as_deref())
                )),
                None if pod.seccomp => {}
                None => self.v.violation(format!(
                    "{who} runs without a seccomp profile: set `seccompProfile: {{type: RuntimeDefault}}` in `{}` (for every container) or in `{}`",
                    self.spec_path().key("securityContext"),
                    place.at()
                )),
            }
        }

        if self.s.forbid_unconfined_app_armor
            && let Some(p) = sc.and_then(|s| s.app_armor_profile.as_ref())
            && !valid_app_armor(p)
        {
            self.v.violation(format!(
                "`{}` is {} for {who}, so it runs without AppArmor confinement: set it to `RuntimeDefault` (or `Localhost` with a profile), or remove it",
                place.at().keys(&["appArmorProfile", "type"]),
                shown(p.kind.as_deref())
            ));
        }

        self.credentials(c);
        self.read_only_mounts(c, host_paths);
    }

    fn privilege_escalation(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        let who = place.who();
        let field = fmt::from_fn(|f| write!(f, "{}", place.at().key("allowPrivilegeEscalation")));
        match (self.s.privilege_escalation, sc.and_then(|s| s.allow_privilege_escalation)) {
            (PrivilegeEscalation::Unchecked, _) | (_, Some(false)) => {}
            (_, Some(true)) => self.v.violation(format!(
                "`{field}` is `true` for {who}, so its processes can gain privileges (through setuid binaries): set it to `false`"
            )),
            (PrivilegeEscalation::RequireFalse, None) => {
                self.v.violation(format!("{who} does not set `{field}`, which then allows processes to gain privileges: set it to `false`"))
            }
            (PrivilegeEscalation::ForbidTrue, None) => {}
        }
    }

    fn capabilities(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        let who = place.who();
        let caps = sc.and_then(|s| s.capabilities.as_ref());
        if self.s.require_drop_net_raw {
            let drop = caps.map(|c| c.drop.as_slice()).unwrap_or_default();
            let dropped = drop.iter().any(|d| d.eq_ignore_ascii_case("ALL") || d.eq_ignore_ascii_case("NET_RAW"));
            if !dropped {
                let field = place.at().keys(&["capabilities", "drop"]);
                let prefixed = drop.iter().position(|d| d.eq_ignore_ascii_case("CAP_NET_RAW") || d.eq_ignore_ascii_case("CAP_ALL"));
                match prefixed.and_then(|i| drop.get(i).map(|d| (i, d))) {
                    Some((i, d)) => self.v.violation(format!(
                        "`{}` is `{d}` for {who}, which containerd does not recognise (it adds `CAP_` itself), so `NET_RAW` is kept: write `{}`",
                        field.index(i),
                        d.get(4..).unwrap_or_default().to_ascii_uppercase()
                    )),
                    None => self.v.violation(format!(
                        "{who} keeps `NET_RAW`, which lets it forge packets on the node's network (ARP and DNS spoofing): add `NET_RAW` (or `ALL`) to `{field}`"
                    )),
                }
            }
        }
        if self.s.restrict_added_capabilities {
            self.added_capabilities(sc, place);
        }
    }

    fn added_capabilities(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        let who = place.who();
        let Some(caps) = sc.and_then(|s| s.capabilities.as_ref()) else { return };
        if caps.add.is_empty() {
            return;
        }
        let allowed: Vec<String> = self.s.allowed_capabilities.iter().map(|c| capability(c)).collect();
        for (i, add) in caps.add.iter().enumerate() {
            let name = capability(add);
            if allowed.contains(&name) {
                continue;
            }
            let instead = if allowed.is_empty() {
                "no capability may be added".to_string()
            } else {
                format!("only {} may be added", quoted(&self.s.allowed_capabilities))
            };
            let what = if name == "ALL" { "every capability".to_string() } else { format!("`{name}`") };
            self.v.violation(format!("`{}` gives {who} {what}: remove it ({instead})", place.at().keys(&["capabilities", "add"]).index(i)));
        }
    }

    fn credentials(&mut self, c: &ContainerRef<'_, '_>) {
        if !self.s.forbid_plain_credentials {
            return;
        }
        let env = &c.container.env;
        for (i, var) in env.iter().enumerate() {
            let Some(value) = var.value.as_deref() else { continue };
            if value.is_empty() || var.from_source || is_reference(value, env.get(..i).unwrap_or_default()) {
                continue;
            }
            let matches =
                self.s.credential_env_names.iter().any(|p| aigov_sdk::base::glob::matches_ignore_ascii_case(p.as_str(), &var.name));
            if matches {
                self.v.violation(format!(
                    "`{}` holds `{}` of {} in plain text, readable by anyone who can read this workload: \
                     store it in a Secret and use `valueFrom: {{secretKeyRef: {{name: <secret>, key: <key>}}}}` instead",
                    self.t.container_path(c).key("env").index(i).key("value"),
                    var.name,
                    c.describe()
                ));
            }
        }
    }

    // ------------------------------------------------------------ host paths

    /// The template's `hostPath` volumes and what the allowlist says of each.
    fn host_path_volumes(&self) -> HostPaths {
        let mut out = HostPaths::new();
        if !self.s.restrict_host_path {
            return out;
        }
        for (i, vol) in self.t.spec.volumes.iter().enumerate() {
            let Some(hp) = &vol.host_path else { continue };
            let allowance = allowance(&self.s.allowed_host_paths, &hp.path);
            out.insert(vol.name.to_string(), HostPathVolume { index: i, path: hp.path.to_string(), allowance });
        }
        out
    }

    fn read_only_mounts(&mut self, c: &ContainerRef<'_, '_>, host_paths: &HostPaths) {
        for (i, m) in c.container.volume_mounts.iter().enumerate() {
            let Some(vol) = host_paths.get(&*m.name) else { continue };
            let Allowance::ReadOnly(prefix) = &vol.allowance else { continue };
            if m.read_only == Some(true) {
                continue;
            }
            self.v.violation(format!(
                "`{}` mounts hostPath volume `{}` (`{}`) writable in {}, but host paths under `{prefix}` may only be mounted read-only: add `readOnly: true`",
                self.t.container_path(c).key("volumeMounts").index(i),
                m.name,
                vol.path,
                c.describe()
            ));
        }
    }

    fn host_path_violations(&mut self, host_paths: &HostPaths) {
        let mut denied: Vec<(&String, &HostPathVolume)> = host_paths.iter().filter(|(_, v)| v.allowance == Allowance::Denied).collect();
        denied.sort_by_key(|(_, v)| v.index);
        for (name, vol) in denied {
            let field = self.spec_path().key("volumes").index(vol.index).keys(&["hostPath", "path"]);
            let cleaned = clean(&vol.path);
            let why = if self.s.allowed_host_paths.is_empty() {
                "and hostPath volumes are not allowed".to_string()
            } else {
                let prefixes: Vec<&str> = self.s.allowed_host_paths.iter().map(|p| p.path_prefix.as_str()).collect();
                format!("outside the allowed host paths {}", quoted(&prefixes))
            };
            let message = if cleaned == "/dev" || cleaned.starts_with("/dev/") {
                format!(
                    "volume `{name}` mounts the node's device path `{}` (`{field}`), {why}: request the device as a resource \
                     (GPUs as `nvidia.com/gpu`) and let its device plugin mount it",
                    vol.path
                )
            } else {
                format!(
                    "volume `{name}` mounts the node's `{}` (`{field}`), {why}: use a PersistentVolumeClaim, an `emptyDir` or a `configMap` instead",
                    vol.path
                )
            };
            self.v.violation(message);
        }
    }
}

/// A container's `securityContext` path and its description, each written
/// once, when a message first needs it: most containers need neither.
struct Place<'t, 'c, 'a> {
    t: &'t PodTemplate<'a>,
    c: &'c ContainerRef<'c, 'a>,
    at: OnceCell<Path>,
    who: OnceCell<String>,
}

impl Place<'_, '_, '_> {
    fn at(&self) -> &Path {
        self.at.get_or_init(|| self.t.container_path(self.c).key("securityContext"))
    }

    /// `` container `trainer` ``.
    fn who(&self) -> impl fmt::Display + '_ {
        fmt::from_fn(|f| f.write_str(self.who.get_or_init(|| self.c.describe())))
    }
}

/// What the allowlist says of one host path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Allowance {
    /// Under no allowed prefix.
    Denied,
    /// Under an allowed prefix, mounted however.
    Allowed,
    /// Only under read-only prefixes (the first named).
    ReadOnly(String),
}

struct HostPathVolume {
    index: usize,
    path: String,
    allowance: Allowance,
}

type HostPaths = BTreeMap<String, HostPathVolume>;

/// PodSecurityPolicy's `allowedHostPaths` semantics: the path is allowed
/// when some prefix covers it by whole components; it must be read-only
/// only if every prefix that covers it says so.
fn allowance(allowed: &[AllowedHostPath], path: &str) -> Allowance {
    let mut read_only = None;
    for a in allowed {
        if has_path_prefix(path, &a.path_prefix) {
            if !a.read_only {
                return Allowance::Allowed;
            }
            read_only.get_or_insert_with(|| a.path_prefix.clone());
        }
    }
    read_only.map_or(Allowance::Denied, Allowance::ReadOnly)
}

/// Whether `path` is `prefix` or under it, both cleaned first (so
/// `/data/../etc` is not under `/data`, and `/database` is not under
/// `/data`).
fn has_path_prefix(path: &str, prefix: &str) -> bool {
    let (path, prefix) = (clean(path), clean(prefix));
    if !path.starts_with('/') || !prefix.starts_with('/') {
        return false;
    }
    prefix == "/" || path == prefix || path.strip_prefix(&prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// Go's `path.Clean`: one `/` between components, no `.`, `..` resolved
/// lexically (never above the root).
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// A capability as the container runtimes read it: upper case, without
/// `CAP_`.
fn capability(name: &str) -> String {
    let upper = name.to_ascii_uppercase();
    match upper.strip_prefix("CAP_") {
        Some(rest) => rest.to_string(),
        None => upper,
    }
}

fn host_process(sc: &SecurityContext<'_>) -> bool {
    sc.windows_options.as_ref().and_then(|w| w.host_process) == Some(true)
}

fn valid_seccomp(p: &Profile<'_>) -> bool {
    matches!(p.kind.as_deref(), Some("RuntimeDefault" | "Localhost"))
}

fn valid_app_armor(p: &Profile<'_>) -> bool {
    matches!(p.kind.as_deref(), Some("RuntimeDefault" | "Localhost"))
}

fn shown(kind: Option<&str>) -> String {
    match kind {
        Some(k) => format!("`{k}`"),
        None => "not set".into(),
    }
}

/// Whether a value is only a reference to an earlier variable of the same
/// container (`$(HF_TOKEN_FROM_SECRET)`), which Kubernetes expands: the
/// credential is wherever that variable comes from.
fn is_reference(value: &str, earlier: &[aigov_sdk::model::pod::EnvVar<'_>]) -> bool {
    let Some(name) = value.trim().strip_prefix("$(").and_then(|v| v.strip_suffix(')')) else {
        return false;
    };
    earlier.iter().any(|e| &*e.name == name)
}

aigov_sdk::export_policy!(WorkloadSecurity);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths_like_go() {
        for (input, want) in [
            ("/", "/"),
            ("/data", "/data"),
            ("/data/", "/data"),
            ("//data//x/", "/data/x"),
            ("/data/./x", "/data/x"),
            ("/data/../etc", "/etc"),
            ("/../..", "/"),
            ("a/../../b", "../b"),
            ("", "."),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
    }

    #[test]
    fn host_path_prefixes_by_whole_components() {
        assert!(has_path_prefix("/data", "/data"));
        assert!(has_path_prefix("/data/x", "/data/"));
        assert!(!has_path_prefix("/database", "/data"));
        assert!(!has_path_prefix("/data/../etc", "/data"));
        assert!(has_path_prefix("/anything", "/"));
        assert!(!has_path_prefix("data/x", "/data"));
        let allowed = [
            AllowedHostPath { path_prefix: "/mnt".into(), read_only: true },
            AllowedHostPath { path_prefix: "/mnt/scratch".into(), read_only: false },
        ];
        assert_eq!(allowance(&allowed, "/mnt/models"), Allowance::ReadOnly("/mnt".into()));
        assert_eq!(allowance(&allowed, "/mnt/scratch/x"), Allowance::Allowed, "a writable prefix wins");
        assert_eq!(allowance(&allowed, "/etc"), Allowance::Denied);
    }

    fn violations(object: &str, settings: &Settings) -> Vec<String> {
        let request = format!(r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE","object":{object}}}"#);
        let req = Request::parse(&request).unwrap();
        let v = WorkloadSecurity::validate(&req, settings, &aigov_sdk::NoCluster).unwrap();
        v.violations().to_vec()
    }

    #[test]
    fn credential_values_never_reach_a_message() {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c",
            "env":[{"name":"HF_TOKEN","value":"hf_SuperSecretValue"},{"name":"openai_api_key","value":"sk-SuperSecretValue"}]}]}}"#;
        let v = violations(object, &Settings::default());
        let creds: Vec<&String> = v.iter().filter(|m| m.contains("in plain text")).collect();
        assert_eq!(creds.len(), 2, "{v:#?}");
        assert!(v.iter().all(|m| !m.contains("SuperSecretValue")), "{v:#?}");
    }

    #[test]
    fn one_message_per_problem_in_document_order() {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostNetwork":true,
            "containers":[{"name":"a"},{"name":"b","securityContext":{"privileged":true}}],
            "volumes":[{"name":"dev","hostPath":{"path":"/dev"}}]}}"#;
        let v = violations(object, &Settings::default());
        let starts: Vec<String> = v.iter().map(|m| m.split(' ').take(2).collect::<Vec<_>>().join(" ")).collect();
        assert_eq!(
            starts,
            [
                "`spec.hostNetwork` is",
                "container `a`",
                "container `a`",
                "container `a`",
                "`spec.containers[1].securityContext.privileged` is",
                "container `b`",
                "container `b`",
                "container `b`",
                "volume `dev`"
            ],
            "{v:#?}"
        );
    }

    #[test]
    fn capabilities_as_runtimes_read_them() {
        assert_eq!(capability("cap_sys_admin"), "SYS_ADMIN");
        assert_eq!(capability("NET_BIND_SERVICE"), "NET_BIND_SERVICE");
        assert_eq!(capability("all"), "ALL");
    }
}
