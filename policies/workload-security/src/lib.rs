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

mod profiles;
mod settings;
mod volumes;

use profiles::{ProfileKind, not_allowed_profile, se_linux_entry, shown, use_allowed_profile, valid_app_armor, valid_seccomp};
use volumes::HostPaths;

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;

use aigov_sdk::base::names::sysctl_name;
use aigov_sdk::model::expansion::{Piece, pieces};
use aigov_sdk::model::pod::{EnvVar, Handler, SecurityContext};
use aigov_sdk::prelude::*;

pub use settings::{
    AllowedHostPath, BASELINE_CAPABILITIES, GroupRule, GroupStrategy, HostPathPrecedence, IdRange, Level, PathMatch, PortRange,
    PrivilegeEscalation, ProcMount, RESTRICTED_VOLUME_TYPES, SAFE_SYSCTLS, SeLinuxEntry, SeLinuxRule, SeLinuxStrategy, Settings, UserRule,
    UserStrategy, capability, default_credential_names,
};

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
            Check { t: template, s: settings, v: &mut verdict, req, written_only: template.is_partial() }.run(workload);
        }
        Ok(verdict)
    }
}

/// One pod template being checked.
struct Check<'c, 'a> {
    t: &'c PodTemplate<'a>,
    s: &'c Settings,
    v: &'c mut Verdict,
    /// The request, for the shared `exemptImages`.
    req: &'c Request<'a>,
    /// Only part of a pod (a TrainJob's override or runtime patch, merged
    /// over its training runtime's pod template): what it writes is judged,
    /// and what it leaves out is the runtime's, which this rule does not
    /// see, so nothing is asked for.
    written_only: bool,
}

/// What the pod-level `securityContext` settles for containers that leave
/// a field unset.
#[derive(Default)]
struct PodLevel {
    run_as_non_root: bool,
    seccomp: bool,
    /// `runAsNonRoot` as written.
    non_root: Option<bool>,
    /// `runAsUser` as written.
    user: Option<i64>,
    /// `runAsGroup` as written.
    group: Option<i64>,
    /// Whether `seLinuxOptions` is set.
    se_linux: bool,
}

impl Check<'_, '_> {
    fn run(mut self, workload: &Workload<'_>) {
        if self.t.role == Role::Trainer {
            // A TrainJob's trainer: the pod, its security context included,
            // comes from the training runtime, with the overrides merged
            // over it (each checked as a template of its own).
            self.v.warn(format!(
                "the pod of `{}` comes from its training runtime, which this rule does not see: only what the TrainJob writes is checked here (the trainer's environment, `spec.podTemplateOverrides`, `spec.runtimePatches`)",
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
            if self.skipped(&c) {
                self.credentials(&c);
            } else {
                self.container(&c, &pod, &host_paths);
            }
        }
        self.volumes(&host_paths);
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

    /// Whether the settings leave this container out of the container
    /// checks (`skipInitContainers`, `skipEphemeralContainers`, the shared
    /// `exemptImages`, a container the platform added: `Request::injected`). Sidecars run beside the main containers for the
    /// pod's life: never skipped as init containers.
    fn skipped(&self, c: &ContainerRef<'_, '_>) -> bool {
        if self.req.leaves_alone(c) {
            return true;
        }
        match c.list {
            ContainerList::InitContainers => self.s.skip_init_containers && !c.is_sidecar(),
            ContainerList::EphemeralContainers => self.s.skip_ephemeral_containers,
            ContainerList::Containers | ContainerList::Model | ContainerList::Added => false,
        }
    }

    // ------------------------------------------------------------ pod level

    /// `container.apparmor.security.beta.kubernetes.io/<container>`
    /// annotations: `runtime/default`, `localhost/<profile>` or empty only.
    fn app_armor_annotations(&mut self, workload: &Workload<'_>) {
        let localhost_listed = !is_wildcard(&self.s.allowed_app_armor_localhost_profiles);
        if !self.s.forbid_unconfined_app_armor && !localhost_listed {
            return;
        }
        let metadata = match self.t.role {
            Role::Pod => Some(&workload.metadata),
            // The predictor's annotations, read with the predictor.
            _ if self.t.shares_metadata() => None,
            _ => self.t.metadata.as_ref(),
        };
        let Some(metadata) = metadata else { return };
        let at = self.t.metadata_path().key("annotations");
        for (key, value) in &metadata.annotations {
            let Some(container) = key.strip_prefix(APPARMOR_ANNOTATION_PREFIX) else { continue };
            let value = value.get();
            if let Some(profile) = value.strip_prefix("localhost/") {
                if !aigov_sdk::base::glob::any_match(&self.s.allowed_app_armor_localhost_profiles, profile) {
                    self.v.violation(format!(
                        "annotation `{key}` in `{at}` is `{value}`, {}: {}",
                        not_allowed_profile("AppArmor", &self.s.allowed_app_armor_localhost_profiles),
                        use_allowed_profile("runtime/default", "localhost/", &self.s.allowed_app_armor_localhost_profiles),
                    ));
                }
                continue;
            }
            if !self.s.forbid_unconfined_app_armor || value.is_empty() || value == "runtime/default" {
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
        if self.s.forbid_share_process_namespace && spec.share_process_namespace == Some(true) {
            self.v.violation(format!(
                "`{}` is `true`, so every container sees and can signal the others' processes and read their files and environment \
                 through `/proc`: remove it",
                p.key("shareProcessNamespace")
            ));
        }
    }

    /// Checks the pod-level `securityContext` and says what it settles for
    /// the containers.
    fn pod_security_context(&mut self) -> PodLevel {
        let mut pod = PodLevel::default();
        let at = self.spec_path().key("securityContext");
        let Some(sc) = self.t.spec.security_context.as_ref() else {
            self.pod_groups(None, &at);
            return pod;
        };
        pod.non_root = sc.run_as_non_root;
        pod.user = sc.run_as_user;
        pod.group = sc.run_as_group;
        pod.se_linux = sc.se_linux_options.is_some();
        if self.s.forbid_privileged && host_process(sc) {
            self.v.violation(format!(
                "`{}` is `true`, so every container runs as a process on the Windows node itself, with its full access: remove it",
                at.keys(&["windowsOptions", "hostProcess"])
            ));
        }
        let userns = self.in_user_namespace();
        if self.s.require_run_as_non_root && !userns {
            match sc.run_as_non_root {
                Some(true) => pod.run_as_non_root = true,
                Some(false) => {
                    self.v.violation(format!("`{}` is `false`, so containers may run as root: set it to `true`", at.key("runAsNonRoot")))
                }
                None => {}
            }
        }
        if self.s.forbid_root_user && !userns && sc.run_as_user == Some(0) {
            self.v
                .violation(format!("`{}` is `0`, so containers run as root: use a non-zero user ID, such as `1000`", at.key("runAsUser")));
        } else if let Some(user) = sc.run_as_user {
            self.user_in_ranges(user, &at, None);
        }
        if let Some(group) = sc.run_as_group {
            self.group_in_ranges(group, &at, None);
        }
        if !self.is_windows()
            && let Some(profile) = &sc.seccomp_profile
        {
            if valid_seccomp(profile) {
                pod.seccomp = true;
            } else if self.s.require_seccomp || self.s.forbid_unconfined_seccomp {
                self.v.violation(format!(
                    "`{}` is {}, so containers run without a seccomp filter: set it to `RuntimeDefault` (or `Localhost` with a profile)",
                    at.keys(&["seccompProfile", "type"]),
                    shown(profile.kind.as_deref())
                ));
            }
            self.localhost_profile(ProfileKind::Seccomp, profile, &at, None);
        }
        if let Some(profile) = &sc.app_armor_profile {
            if self.s.forbid_unconfined_app_armor && !valid_app_armor(profile) {
                self.v.violation(format!(
                    "`{}` is {}, so containers run without AppArmor confinement: set it to `RuntimeDefault` (or `Localhost` with a profile), or remove it",
                    at.keys(&["appArmorProfile", "type"]),
                    shown(profile.kind.as_deref())
                ));
            }
            self.localhost_profile(ProfileKind::AppArmor, profile, &at, None);
        }
        if let Some(options) = &sc.se_linux_options {
            self.se_linux_allowed(options, &at, None);
        }
        self.pod_groups(Some(sc), &at);
        self.sysctls(sc, &at);
        pod
    }

    /// `supplementalGroups` and `fsGroup`, which only the pod sets.
    fn pod_groups(&mut self, sc: Option<&SecurityContext<'_>>, at: &Path) {
        let windows = self.is_windows();
        let rule = &self.s.supplemental_groups;
        if rule.rule != GroupRule::RunAsAny {
            let groups = sc.map(|s| s.supplemental_groups.as_slice()).unwrap_or_default();
            if groups.is_empty() && rule.rule == GroupRule::MustRunAs && !windows && !self.written_only {
                self.v.violation(format!(
                    "the pod sets no supplemental groups: set `{}` to group IDs in {}",
                    at.key("supplementalGroups"),
                    ranges(&rule.ranges)
                ));
            }
            for (i, g) in groups.iter().enumerate() {
                if !in_ranges(*g, &rule.ranges) {
                    self.v.violation(format!(
                        "`{}` is `{g}`, outside the allowed supplemental group IDs {}: remove it, or use a group ID in them",
                        at.key("supplementalGroups").index(i),
                        ranges(&rule.ranges)
                    ));
                }
            }
        }
        let rule = &self.s.fs_group;
        if rule.rule != GroupRule::RunAsAny {
            match sc.and_then(|s| s.fs_group) {
                Some(g) if !in_ranges(g, &rule.ranges) => self.v.violation(format!(
                    "`{}` is `{g}`, outside the allowed `fsGroup` IDs {}: use a group ID in them",
                    at.key("fsGroup"),
                    ranges(&rule.ranges)
                )),
                None if rule.rule == GroupRule::MustRunAs && !windows && !self.written_only => self.v.violation(format!(
                    "the pod sets no `fsGroup`, so its volumes keep the owner their files have: set `{}` to a group ID in {}",
                    at.key("fsGroup"),
                    ranges(&rule.ranges)
                )),
                _ => {}
            }
        }
    }

    /// Each sysctl by the name the kubelet reads (`kernel/msgmax` is
    /// `kernel.msgmax`), against patterns read the same way.
    fn sysctls(&mut self, sc: &SecurityContext<'_>, at: &Path) {
        if !self.s.restrict_sysctls {
            return;
        }
        for (i, sysctl) in sc.sysctls.iter().enumerate() {
            let name = &*sysctl.name;
            let read = sysctl_name(name);
            let field = at.key("sysctls").index(i).key("name");
            let shown = fmt::from_fn(|f| {
                write!(f, "`{name}`")?;
                if read != name { write!(f, " (`{read}` to the kubelet)") } else { Ok(()) }
            });
            if sysctl_matches(&self.s.forbidden_sysctls, &read) {
                self.v.violation(format!("`{field}` is {shown}, a sysctl pods may not set: remove it"));
            } else if !sysctl_matches(&self.s.allowed_sysctls, &read) {
                let allowed: Vec<&str> = self.s.allowed_sysctls.iter().map(Glob::as_str).collect();
                let why = if allowed.is_empty() {
                    "and pods may set no sysctls".to_string()
                } else {
                    format!("which is not one of the sysctls pods may set ({})", quoted(&allowed))
                };
                self.v.violation(format!("`{field}` is {shown}, {why}: remove it"));
            }
        }
    }

    // ------------------------------------------------------------ containers

    fn container(&mut self, c: &ContainerRef<'_, '_>, pod: &PodLevel, host_paths: &HostPaths) {
        // Where and who, written when a message first needs them.
        let place = Place { t: self.t, c, at: OnceCell::new(), who: OnceCell::new() };
        let who = place.who();
        let sc = c.container.security_context.as_ref();
        let windows = self.is_windows();
        let userns = self.in_user_namespace();

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

        if self.s.require_run_as_non_root && !userns {
            match sc.and_then(|s| s.run_as_non_root) {
                Some(true) => {}
                Some(false) => self.v.violation(format!(
                    "`{}` is `false` for {who}, so it may run as root: set it to `true`",
                    place.at().key("runAsNonRoot")
                )),
                None if pod.run_as_non_root || self.written_only => {}
                None => self.v.violation(format!(
                    "{who} may run as root: set `runAsNonRoot: true` in `{}` (for every container) or in `{}`",
                    self.spec_path().key("securityContext"),
                    place.at()
                )),
            }
        }
        let user = sc.and_then(|s| s.run_as_user);
        if self.s.forbid_root_user && !userns && user == Some(0) {
            self.v.violation(format!(
                "`{}` is `0` for {who}, so it runs as root: use a non-zero user ID, such as `1000`",
                place.at().key("runAsUser")
            ));
        } else if let Some(user) = user {
            self.user_in_ranges(user, place.at(), Some(&place));
        }
        self.user_rule(sc, pod, &place);
        self.group_rule(sc, pod, &place);

        if !windows {
            self.privilege_escalation(sc, &place);
            self.capabilities(sc, &place);
        } else if self.s.restrict_added_capabilities {
            // The API server refuses capabilities on Windows pods; should
            // one get through, an added one is still refused.
            self.added_capabilities(sc, &place);
        }

        if !windows {
            let profile = sc.and_then(|s| s.seccomp_profile.as_ref());
            match profile {
                Some(p) if valid_seccomp(p) => {}
                Some(p) if self.s.require_seccomp || self.s.forbid_unconfined_seccomp => self.v.violation(format!(
                    "`{}` is {} for {who}, so it runs without a seccomp filter: set it to `RuntimeDefault` (or `Localhost` with a profile)",
                    place.at().keys(&["seccompProfile", "type"]),
                    shown(p.kind.as_deref())
                )),
                Some(_) => {}
                None if pod.seccomp || !self.s.require_seccomp || self.written_only => {}
                None => self.v.violation(format!(
                    "{who} runs without a seccomp profile: set `seccompProfile: {{type: RuntimeDefault}}` in `{}` (for every container) or in `{}`",
                    self.spec_path().key("securityContext"),
                    place.at()
                )),
            }
            if let Some(p) = profile {
                self.localhost_profile(ProfileKind::Seccomp, p, place.at(), Some(&place));
            }
        }

        if let Some(p) = sc.and_then(|s| s.app_armor_profile.as_ref()) {
            if self.s.forbid_unconfined_app_armor && !valid_app_armor(p) {
                self.v.violation(format!(
                    "`{}` is {} for {who}, so it runs without AppArmor confinement: set it to `RuntimeDefault` (or `Localhost` with a profile), or remove it",
                    place.at().keys(&["appArmorProfile", "type"]),
                    shown(p.kind.as_deref())
                ));
            }
            self.localhost_profile(ProfileKind::AppArmor, p, place.at(), Some(&place));
        }

        match sc.and_then(|s| s.se_linux_options.as_ref()) {
            Some(options) => self.se_linux_allowed(options, place.at(), Some(&place)),
            None if self.s.se_linux.rule == SeLinuxRule::MustRunAs && !pod.se_linux && !windows && !self.written_only => {
                self.v.violation(format!(
                    "{who} runs with no SELinux options: set `seLinuxOptions` in `{}` (for every container) or in `{}` to {}",
                    self.spec_path().key("securityContext"),
                    place.at(),
                    one_of(&self.s.se_linux.allowed_options.iter().map(se_linux_entry).collect::<Vec<_>>())
                ))
            }
            None => {}
        }

        self.proc_mount(sc, &place);
        self.read_only_root_filesystem(sc, &place);
        self.host_ports(c, &place);
        self.probe_hosts(c, &place);
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
            (PrivilegeEscalation::RequireFalse, None) if self.written_only => {}
            (PrivilegeEscalation::RequireFalse, None) => {
                self.v.violation(format!("{who} does not set `{field}`, which then allows processes to gain privileges: set it to `false`"))
            }
            (PrivilegeEscalation::ForbidTrue, None) => {}
        }
    }

    fn capabilities(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        let who = place.who();
        let caps = sc.and_then(|s| s.capabilities.as_ref());
        let drop = caps.map(|c| c.drop.as_slice()).unwrap_or_default();
        let field = || place.at().keys(&["capabilities", "drop"]);
        // Only part of a pod: a `drop` list written replaces the runtime's
        // (a list without a merge key), so it must drop what is required;
        // none written leaves the runtime's.
        if self.written_only && drop.is_empty() {
            if self.s.restrict_added_capabilities {
                self.added_capabilities(sc, place);
            }
            return;
        }
        let all_required = self.s.required_drop_capabilities.iter().any(|c| c.eq_ignore_ascii_case("ALL"));
        let all_missing = all_required && dropped(drop, "ALL") != Dropped::Yes;
        // Dropping `ALL`, which the message about it asks for, drops
        // `NET_RAW` too: one message, not two.
        if self.s.require_drop_net_raw && !all_missing {
            match dropped(drop, "NET_RAW") {
                Dropped::Yes => {}
                Dropped::Prefixed(i, d) => self.v.violation(prefixed_drop(&field().index(i), d, &who, "NET_RAW")),
                Dropped::No => self.v.violation(format!(
                    "{who} keeps `NET_RAW`, which lets it forge packets on the node's network (ARP and DNS spoofing): add `NET_RAW` (or `ALL`) to `{}`",
                    field()
                )),
            }
        }
        if !self.s.required_drop_capabilities.is_empty() {
            let mut missing: Vec<String> = Vec::new();
            for required in &self.s.required_drop_capabilities {
                let name = capability(required);
                if missing.contains(&name) || (name == "NET_RAW" && self.s.require_drop_net_raw) {
                    continue;
                }
                match dropped(drop, &name) {
                    Dropped::Yes => {}
                    Dropped::Prefixed(i, d) => self.v.violation(prefixed_drop(&field().index(i), d, &who, &name)),
                    Dropped::No => missing.push(name),
                }
            }
            if missing.iter().any(|m| m == "ALL") {
                self.v.violation(format!(
                    "{who} does not drop `ALL` capabilities: add `ALL` to `{}` (and add back in `capabilities.add` only what it needs)",
                    field()
                ));
            } else if !missing.is_empty() {
                let them = if missing.len() == 1 { "it" } else { "them" };
                self.v.violation(format!("{who} keeps {}, which it must drop: add {them} (or `ALL`) to `{}`", quoted(&missing), field()));
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

    /// `runAsUser` ranges, where the user ID is written (`place` for a
    /// container's, `None` for the pod's).
    fn user_in_ranges(&mut self, user: i64, at: &Path, place: Option<&Place<'_, '_, '_>>) {
        let rule = &self.s.run_as_user;
        if rule.rule != UserRule::MustRunAs || in_ranges(user, &rule.ranges) {
            return;
        }
        self.v.violation(format!(
            "`{}` is `{user}`{}, outside the allowed user IDs {}: use a user ID in them",
            at.key("runAsUser"),
            for_whom(place),
            ranges(&rule.ranges)
        ));
    }

    fn group_in_ranges(&mut self, group: i64, at: &Path, place: Option<&Place<'_, '_, '_>>) {
        let rule = &self.s.run_as_group;
        if rule.rule == GroupRule::RunAsAny || in_ranges(group, &rule.ranges) {
            return;
        }
        self.v.violation(format!(
            "`{}` is `{group}`{}, outside the allowed group IDs {}: use a group ID in them",
            at.key("runAsGroup"),
            for_whom(place),
            ranges(&rule.ranges)
        ));
    }

    /// `runAsUser: {rule: MustRunAs | MustRunAsNonRoot}`: what the
    /// container runs as, its own value or the pod's.
    fn user_rule(&mut self, sc: Option<&SecurityContext<'_>>, pod: &PodLevel, place: &Place<'_, '_, '_>) {
        let who = place.who();
        let user = sc.and_then(|s| s.run_as_user).or(pod.user);
        let userns = self.in_user_namespace();
        match self.s.run_as_user.rule {
            UserRule::RunAsAny => {}
            UserRule::MustRunAs => {
                if user.is_none() && !self.is_windows() && !self.written_only {
                    self.v.violation(format!(
                        "{who} sets no user ID: set `runAsUser` in `{}` (for every container) or in `{}` to one in {}",
                        self.spec_path().key("securityContext"),
                        place.at(),
                        ranges(&self.s.run_as_user.ranges)
                    ));
                }
            }
            UserRule::MustRunAsNonRoot => {
                // `requireRunAsNonRoot` asks for more, and `forbidRootUser`
                // has refused a `0` where it is written.
                if self.s.require_run_as_non_root && !userns {
                    return;
                }
                let non_root = sc.and_then(|s| s.run_as_non_root).or(pod.non_root);
                match user {
                    Some(0) if self.s.forbid_root_user && !userns => {}
                    Some(0) => self.v.violation(format!(
                        "{who} runs as user `0`, root: set `runAsUser` in `{}` to a non-zero user ID, such as `1000`",
                        place.at()
                    )),
                    Some(_) => {}
                    None if non_root == Some(true) || self.written_only => {}
                    None => self.v.violation(format!(
                        "{who} may run as root: set `runAsNonRoot: true` or a non-zero `runAsUser` in `{}` (for every container) or in `{}`",
                        self.spec_path().key("securityContext"),
                        place.at()
                    )),
                }
            }
        }
    }

    fn group_rule(&mut self, sc: Option<&SecurityContext<'_>>, pod: &PodLevel, place: &Place<'_, '_, '_>) {
        if let Some(group) = sc.and_then(|s| s.run_as_group) {
            self.group_in_ranges(group, place.at(), Some(place));
        }
        let rule = &self.s.run_as_group;
        if rule.rule == GroupRule::MustRunAs
            && sc.and_then(|s| s.run_as_group).or(pod.group).is_none()
            && !self.is_windows()
            && !self.written_only
        {
            self.v.violation(format!(
                "{} sets no group ID: set `runAsGroup` in `{}` (for every container) or in `{}` to one in {}",
                place.who(),
                self.spec_path().key("securityContext"),
                place.at(),
                ranges(&rule.ranges)
            ));
        }
    }

    fn proc_mount(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        let Some(mount) = sc.and_then(|s| s.proc_mount.as_deref()) else { return };
        let checked = match self.s.proc_mount {
            ProcMount::Unchecked => false,
            ProcMount::DefaultUnlessUserNamespace => !self.in_user_namespace(),
            ProcMount::Default => true,
        };
        if checked && mount != "Default" {
            self.v.violation(format!(
                "`{}` is `{mount}` for {}, which gives it the node's `/proc` without the masks that hide the kernel's sensitive files: \
                 remove it (or set it to `Default`)",
                place.at().key("procMount"),
                place.who()
            ));
        }
    }

    fn read_only_root_filesystem(&mut self, sc: Option<&SecurityContext<'_>>, place: &Place<'_, '_, '_>) {
        // The API server refuses the field on Windows pods.
        if !self.s.require_read_only_root_filesystem || self.is_windows() {
            return;
        }
        match sc.and_then(|s| s.read_only_root_filesystem) {
            Some(true) => {}
            Some(false) => self.v.violation(format!(
                "`{}` is `false` for {}, so it can change the files of its image: set it to `true` \
                 (and mount an `emptyDir` where it must write)",
                place.at().key("readOnlyRootFilesystem"),
                place.who()
            )),
            None if self.written_only => {}
            None => self.v.violation(format!(
                "{} can write to its root filesystem: set `readOnlyRootFilesystem: true` in `{}` \
                 (and mount an `emptyDir` where it must write)",
                place.who(),
                place.at()
            )),
        }
    }

    /// Host ports as the pods will have them: a `containerPort` under
    /// `hostNetwork` is one, the API server writing it into `hostPort`.
    fn host_ports(&mut self, c: &ContainerRef<'_, '_>, place: &Place<'_, '_, '_>) {
        if !self.s.restrict_host_ports {
            return;
        }
        for (i, hp) in self.t.host_ports(c) {
            let p = hp.port;
            if self.s.allowed_host_ports.iter().any(|r| i64::from(r.min) <= p && p <= i64::from(r.max)) {
                continue;
            }
            let why = if self.s.allowed_host_ports.is_empty() {
                "and host ports are not allowed".to_string()
            } else {
                let allowed: Vec<String> =
                    self.s.allowed_host_ports.iter().map(|r| range_text(i64::from(r.min), i64::from(r.max))).collect();
                format!("outside the allowed host ports {}", quoted(&allowed))
            };
            let port = self.t.container_path(c).key("ports").index(i);
            let field = port.key(if hp.written { "hostPort" } else { "containerPort" });
            if hp.host_network {
                // Removing `hostPort` changes nothing: the API server sets it again.
                let how = if hp.written { "even without it" } else { "(the API server sets `hostPort` to it on the pods)" };
                let instead = if self.s.allowed_host_ports.is_empty() { "" } else { ", or listen on an allowed port" };
                self.v.violation(format!(
                    "`{field}` is `{p}` for {}, and `{}` makes port {p} a host port {how}, so it takes that port on the node's own addresses, \
                     {why}: remove `hostNetwork` and reach the container through a Service{instead}",
                    place.who(),
                    self.spec_path().key("hostNetwork"),
                ));
            } else {
                self.v.violation(format!(
                    "`{field}` is `{p}` for {}, so it takes that port on the node's own addresses, {why}: remove it \
                     (reach the container through a Service)",
                    place.who()
                ));
            }
        }
    }

    /// `host` in probes and lifecycle hooks: the kubelet would connect
    /// from the node to another host.
    fn probe_hosts(&mut self, c: &ContainerRef<'_, '_>, place: &Place<'_, '_, '_>) {
        if !self.s.forbid_probe_hosts {
            return;
        }
        let container = c.container;
        let lifecycle = container.lifecycle.as_ref();
        let handlers: [(&[&str], Option<&Handler<'_>>); 5] = [
            (&["livenessProbe"], container.liveness_probe.as_ref()),
            (&["readinessProbe"], container.readiness_probe.as_ref()),
            (&["startupProbe"], container.startup_probe.as_ref()),
            (&["lifecycle", "postStart"], lifecycle.and_then(|l| l.post_start.as_ref())),
            (&["lifecycle", "preStop"], lifecycle.and_then(|l| l.pre_stop.as_ref())),
        ];
        for (keys, handler) in handlers {
            let Some(handler) = handler else { continue };
            for (action, target) in [("httpGet", &handler.http_get), ("tcpSocket", &handler.tcp_socket)] {
                let Some(host) = target.as_ref().and_then(|t| t.host.as_deref()).filter(|h| !h.is_empty()) else { continue };
                self.v.violation(format!(
                    "`{}` is `{host}` for {}, so the kubelet connects from the node to that host instead of the pod: \
                     remove it (the pod's own IP is used)",
                    self.t.container_path(c).keys(keys).key(action).key("host"),
                    place.who()
                ));
            }
        }
    }

    /// Variables named like credentials whose value, as the kubelet
    /// expands it, holds text written in the workload: in the value itself,
    /// or in an earlier variable a `$(VAR)` brings in.
    fn credentials(&mut self, c: &ContainerRef<'_, '_>) {
        if !self.s.forbid_plain_credentials {
            return;
        }
        let env = &c.container.env;
        let named = |var: &EnvVar<'_>| {
            !var.from_source
                && var.value.as_deref().is_some_and(|v| !v.is_empty())
                && self.s.credential_env_names.iter().any(|p| aigov_sdk::base::glob::matches_ignore_ascii_case(p.as_str(), &var.name))
        };
        if !env.iter().any(named) {
            return;
        }
        let written = written_text(env);
        for (i, (var, w)) in env.iter().zip(&written).enumerate() {
            let Some(&origin) = w.from.first() else { continue };
            if !named(var) {
                continue;
            }
            let at = self.t.container_path(c).key("env");
            let field = at.index(i).key("value");
            let head =
                format!("`{field}` holds `{}` of {} in plain text, readable by anyone who can read this workload", var.name, c.describe());
            let secret_ref = "`valueFrom: {secretKeyRef: {name: <secret>, key: <key>}}`";
            let message = match (w.from.contains(&i), w.via, env.get(origin)) {
                (false, Some(via), Some(source)) => format!(
                    "{head}: `$({via})` expands to the text written in `{}` (`{}`): store that in a Secret and set `{}` with {secret_ref} instead",
                    at.index(origin).key("value"),
                    source.name,
                    source.name
                ),
                _ => format!("{head}: store it in a Secret and use {secret_ref} instead"),
            };
            self.v.violation(message);
        }
    }

    // ------------------------------------------------------------ volumes
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

/// `` for container `trainer` `` after a container's field; nothing after
/// the pod's.
fn for_whom(place: Option<&Place<'_, '_, '_>>) -> String {
    place.map(|p| format!(" for {}", p.who())).unwrap_or_default()
}

/// Whether a sysctl name, as the kubelet reads it, matches a pattern,
/// read as the kubelet reads the patterns of its allowlist (`kernel/*` is
/// `kernel.*`).
fn sysctl_matches(patterns: &[Glob], name: &str) -> bool {
    patterns.iter().any(|p| aigov_sdk::base::glob::matches(&sysctl_name(p.as_str()), name))
}

/// Whether a pattern list is `["*"]`, which allows everything.
fn is_wildcard(list: &[Glob]) -> bool {
    matches!(list, [only] if only.as_str() == "*")
}

fn in_ranges(id: i64, allowed: &[IdRange]) -> bool {
    allowed.iter().any(|r| r.contains(id))
}

fn range_text(min: i64, max: i64) -> String {
    if min == max { min.to_string() } else { format!("{min}-{max}") }
}

/// `` `1000-1999`, `3000` ``.
fn ranges(allowed: &[IdRange]) -> String {
    quoted(&allowed.iter().map(|r| range_text(r.min, r.max)).collect::<Vec<_>>())
}

/// Whether a container's `capabilities.drop` drops a capability.
#[derive(Debug, PartialEq, Eq)]
enum Dropped<'d> {
    Yes,
    /// Only spelt with `CAP_`, which containerd does not read (at this index).
    Prefixed(usize, &'d str),
    No,
}

/// Names read as containerd and CRI-O read them: in any case, without
/// `CAP_` (containerd adds it itself, so `CAP_NET_RAW` drops nothing). `ALL`
/// drops every capability; only `ALL` drops `ALL`.
fn dropped<'d>(drop: &'d [aigov_sdk::Str<'_>], cap: &str) -> Dropped<'d> {
    let covers = |d: &str| d.eq_ignore_ascii_case(cap) || (cap != "ALL" && d.eq_ignore_ascii_case("ALL"));
    if drop.iter().any(|d| covers(d)) {
        return Dropped::Yes;
    }
    let prefixed =
        drop.iter().enumerate().find(|(_, d)| d.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("CAP_")) && d.get(4..).is_some_and(covers));
    match prefixed {
        Some((i, d)) => Dropped::Prefixed(i, d),
        None => Dropped::No,
    }
}

fn prefixed_drop(field: &Path, d: &str, who: &dyn fmt::Display, cap: &str) -> String {
    let kept = if cap == "ALL" { "no capability is dropped".to_string() } else { format!("`{cap}` is kept") };
    format!(
        "`{field}` is `{d}` for {who}, which containerd does not recognise (it adds `CAP_` itself), so {kept}: write `{}`",
        d.get(4..).unwrap_or_default().to_ascii_uppercase()
    )
}

fn host_process(sc: &SecurityContext<'_>) -> bool {
    sc.windows_options.as_ref().and_then(|w| w.host_process) == Some(true)
}

/// What the kubelet's expansion puts in one `env` entry's value of text
/// written in the workload.
#[derive(Default)]
struct Written<'e> {
    /// The entries whose written text (other than blanks) ends up in the
    /// value, in the order it does: the entry itself, or earlier ones its
    /// `$(VAR)` references bring in.
    from: Vec<usize>,
    /// The first reference that brought such text in.
    via: Option<&'e str>,
}

/// For each entry of a container's `env`, the text written in the workload
/// its value holds once the kubelet has expanded it: `$(NAME)` is the
/// value of the last entry of that name before it (itself expanded);
/// a name no earlier entry defines is a variable of `envFrom` (a Secret or
/// ConfigMap), a service link, or stays as written (`$(NAME)`), none of
/// which is text written here; `valueFrom` values are never expanded and
/// hold none; `$$` is a `$` written here.
fn written_text<'e>(env: &'e [EnvVar<'_>]) -> Vec<Written<'e>> {
    let mut last: BTreeMap<&'e str, usize> = BTreeMap::new();
    let mut out: Vec<Written<'e>> = Vec::with_capacity(env.len());
    for (i, var) in env.iter().enumerate() {
        let mut w = Written::default();
        let value = var.value.as_deref().filter(|_| !var.from_source).unwrap_or_default();
        for piece in pieces(value) {
            match piece {
                Piece::Text(t) => {
                    if !t.trim().is_empty() && !w.from.contains(&i) {
                        w.from.push(i);
                    }
                }
                Piece::Var(name) => {
                    let Some(earlier) = last.get(name).and_then(|k| out.get(*k)) else { continue };
                    if !earlier.from.is_empty() && w.via.is_none() {
                        w.via = Some(name);
                    }
                    for f in &earlier.from {
                        if !w.from.contains(f) {
                            w.from.push(*f);
                        }
                    }
                }
            }
        }
        last.insert(&var.name, i);
        out.push(w);
    }
    out
}

aigov_sdk::export_policy!(WorkloadSecurity);

#[cfg(test)]
mod tests {
    use super::*;

    fn violations(object: &str, settings: &Settings) -> Vec<String> {
        let request = format!(r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE","object":{object}}}"#);
        let req = Request::parse(&request).unwrap();
        let v = WorkloadSecurity::validate(&req, settings, &aigov_sdk::NoCluster).unwrap();
        v.violations().to_vec()
    }

    #[test]
    fn exempt_containers_volumes_do_not_depend_on_the_skip_flags() {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
            "securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},
            "containers":[{"name":"agent","image":"reg.example/agent:1","volumeMounts":[{"name":"run","mountPath":"/run/host"}]},
                {"name":"app","image":"reg.example/app:1","securityContext":{"capabilities":{"drop":["ALL"]}}}],
            "volumes":[{"name":"run","hostPath":{"path":"/run"}}]}}"#;
        let request = format!(r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE","object":{object}}}"#);
        let req = Request::parse(&request).unwrap();
        req.set_exempt_images(Some(std::rc::Rc::from(vec![Glob::new("reg.example/agent:*")])));
        for (init, ephemeral) in [(false, false), (true, false), (false, true), (true, true)] {
            let settings = Settings { skip_init_containers: init, skip_ephemeral_containers: ephemeral, ..Settings::default() };
            let v = WorkloadSecurity::validate(&req, &settings, &aigov_sdk::NoCluster).unwrap();
            assert!(v.violations().is_empty(), "skipInitContainers: {init}, skipEphemeralContainers: {ephemeral}: {:#?}", v.violations());
        }
    }

    #[test]
    fn credential_values_never_reach_a_message() {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c",
            "env":[{"name":"HF_TOKEN","value":"hf_SuperSecretValue"},{"name":"openai_api_key","value":"sk-SuperSecretValue"},
            {"name":"UPSTREAM","value":"SuperSecretValue"},{"name":"GITHUB_TOKEN","value":"$(UPSTREAM)"}]}]}}"#;
        let v = violations(object, &Settings::default());
        let creds: Vec<&String> = v.iter().filter(|m| m.contains("in plain text")).collect();
        assert_eq!(creds.len(), 3, "{v:#?}");
        assert!(v.iter().all(|m| !m.contains("SuperSecretValue")), "{v:#?}");
    }

    #[test]
    fn written_text_follows_the_kubelets_expansion() {
        let env: Vec<EnvVar<'_>> = [
            ("A", Some("sk-secret"), false),
            ("B", Some("$(A)"), false),
            ("C", Some("$(B) $(LATER)"), false),
            ("D", Some("$$(A)"), false),
            ("A", None, true),
            ("E", Some(" $(A) "), false),
            ("F", Some("$(F)x"), false),
            ("LATER", Some("text"), false),
        ]
        .into_iter()
        .map(|(name, value, from_source)| EnvVar { name: name.into(), value: value.map(Into::into), from_source })
        .collect();
        let w = written_text(&env);
        let summary: Vec<(Vec<usize>, Option<&str>)> = w.iter().map(|w| (w.from.clone(), w.via)).collect();
        assert_eq!(
            summary,
            [
                (vec![0], None),
                (vec![0], Some("A")),
                (vec![0], Some("B")),
                (vec![3], None),
                (vec![], None),
                (vec![], None),
                (vec![6], None),
                (vec![7], None),
            ]
        );
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
        let drop: Vec<aigov_sdk::Str<'_>> = ["net_admin", "CAP_SYS_ADMIN"].into_iter().map(aigov_sdk::Str::from).collect();
        assert_eq!(dropped(&drop, "NET_ADMIN"), Dropped::Yes);
        assert_eq!(dropped(&drop, "SYS_ADMIN"), Dropped::Prefixed(1, "CAP_SYS_ADMIN"));
        assert_eq!(dropped(&drop, "NET_RAW"), Dropped::No);
        let all: Vec<aigov_sdk::Str<'_>> = ["All"].into_iter().map(aigov_sdk::Str::from).collect();
        assert_eq!(dropped(&all, "NET_RAW"), Dropped::Yes);
        assert_eq!(dropped(&all, "ALL"), Dropped::Yes);
        assert_eq!(dropped(&drop, "ALL"), Dropped::No, "only `ALL` drops `ALL`");
    }
}
