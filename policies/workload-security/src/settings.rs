//! Settings of `workload-security`.
//!
//! Every check is a key. `level` (`baseline` or `restricted`) gives the
//! keys of the Pod Security Standards' controls the values that level asks
//! for; a key given explicitly wins over the level. So settings are read in
//! two steps: into [`Raw`], where every key is optional and a key left out
//! (or `null`) is told apart from one given, then resolved into
//! [`Settings`], which the rule reads and which serializes as the values in
//! force.

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Level {
    /// Baseline: no known privilege escalation.
    Baseline,
    /// Restricted: Baseline plus current pod hardening practice.
    Restricted,
}

/// Declares the rule's settings once: [`Settings`] (the values in force)
/// and [`Raw`] (what was given, every key optional), and resolves one into
/// the other over the level's defaults.
macro_rules! settings {
    ($( $(#[$meta:meta])* $field:ident: $ty:ty, )*) => {
        /// The rule's own settings (the shared `mode`, exemptions and
        /// `allowExistingViolations` come on top), as in force: the level's
        /// values for the keys left out, the keys given over them.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", from = "Raw")]
        pub struct Settings {
            /// `baseline` or `restricted`: the defaults of the keys that
            /// express the Pod Security Standards' controls. `null`: the
            /// rule's own defaults.
            pub level: Option<Level>,
            $( $(#[$meta])* pub $field: $ty, )*
        }

        /// The settings as given: a key left out, or `null`, is `None`.
        #[derive(Debug, Default, Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
        pub struct Raw {
            level: Option<Level>,
            $( $(#[$meta])* $field: Option<$ty>, )*
        }

        impl From<Raw> for Settings {
            fn from(raw: Raw) -> Settings {
                let root_user_given = raw.forbid_root_user.is_some();
                let mut s = Settings::for_level(raw.level);
                $( if let Some(v) = raw.$field { s.$field = v; } )*
                if !root_user_given {
                    s.forbid_root_user = s.require_run_as_non_root;
                }
                s
            }
        }
    };
}

settings! {
    /// Every container runs as non-root: `runAsNonRoot: true` at pod level
    /// (no container setting it `false`) or on every container.
    require_run_as_non_root: bool,
    /// No `runAsUser: 0` at pod or container level. Left out: the value of
    /// `requireRunAsNonRoot`.
    forbid_root_user: bool,
    /// No `privileged: true`, no Windows `hostProcess: true`.
    forbid_privileged: bool,
    /// What `allowPrivilegeEscalation` must be.
    privilege_escalation: PrivilegeEscalation,
    /// Every container drops `NET_RAW` (or `ALL`).
    require_drop_net_raw: bool,
    /// Capabilities every container drops (`ALL` covers every one but
    /// `ALL` itself, which only `ALL` covers).
    required_drop_capabilities: Vec<String>,
    /// Containers add no capability outside `allowedCapabilities`.
    restrict_added_capabilities: bool,
    /// Capabilities containers may add (with or without `CAP_`, any case).
    allowed_capabilities: Vec<String>,
    /// `hostPath` volumes only under `allowedHostPaths`.
    restrict_host_path: bool,
    /// Host path prefixes `hostPath` volumes may use.
    allowed_host_paths: Vec<AllowedHostPath>,
    /// Which of several prefixes covering a path says whether it must be
    /// mounted read-only.
    host_path_precedence: HostPathPrecedence,
    /// Host paths no `hostPath` volume may be, be under or hold (by whole
    /// components), whatever `allowedHostPaths` says.
    forbidden_host_paths: Vec<String>,
    /// Volumes only of the types in `allowedVolumeTypes`.
    restrict_volume_types: bool,
    /// Volume types (the volume source's key: `configMap`, `csi`...).
    allowed_volume_types: Vec<String>,
    /// Drivers `flexVolume` volumes may use.
    allowed_flex_volume_drivers: Vec<Glob>,
    /// No `hostNetwork: true`.
    forbid_host_network: bool,
    /// No `hostPID: true`.
    #[serde(rename = "forbidHostPID")]
    forbid_host_pid: bool,
    /// No `hostIPC: true`.
    #[serde(rename = "forbidHostIPC")]
    forbid_host_ipc: bool,
    /// `hostPort` only in `allowedHostPorts`.
    restrict_host_ports: bool,
    /// Host port ranges containers may use.
    allowed_host_ports: Vec<PortRange>,
    /// No `shareProcessNamespace: true`.
    forbid_share_process_namespace: bool,
    /// Seccomp `RuntimeDefault` or `Localhost`, at pod level or on every
    /// container.
    require_seccomp: bool,
    /// No seccomp profile but `RuntimeDefault` or `Localhost` where one is
    /// set (unset is fine).
    forbid_unconfined_seccomp: bool,
    /// Profiles a `Localhost` seccomp profile may name.
    allowed_seccomp_localhost_profiles: Vec<Glob>,
    /// No AppArmor profile `Unconfined` (field or beta annotation).
    forbid_unconfined_app_armor: bool,
    /// Profiles a `Localhost` AppArmor profile may name.
    allowed_app_armor_localhost_profiles: Vec<Glob>,
    /// SELinux options: which may be set, and whether they must be.
    se_linux: SeLinuxStrategy,
    /// What `procMount` may be.
    proc_mount: ProcMount,
    /// Sysctls only from `allowedSysctls`, never from `forbiddenSysctls`.
    restrict_sysctls: bool,
    /// Sysctls pods may set (wildcards).
    allowed_sysctls: Vec<Glob>,
    /// Sysctls pods may never set (wildcards), whatever `allowedSysctls` says.
    forbidden_sysctls: Vec<Glob>,
    /// No `host` in probes and lifecycle hooks.
    forbid_probe_hosts: bool,
    /// Every container sets `readOnlyRootFilesystem: true`.
    require_read_only_root_filesystem: bool,
    /// The user IDs containers may run as.
    run_as_user: UserStrategy,
    /// The primary group IDs containers may run as.
    run_as_group: GroupStrategy,
    /// The supplemental group IDs a pod may add.
    supplemental_groups: GroupStrategy,
    /// The `fsGroup` a pod may set.
    fs_group: GroupStrategy,
    /// Leave init containers (not sidecars) out of the container checks.
    skip_init_containers: bool,
    /// Leave ephemeral containers out of the container checks.
    skip_ephemeral_containers: bool,
    /// Variables named like credentials come from `valueFrom`, never a
    /// literal `value`.
    forbid_plain_credentials: bool,
    /// Names of variables that hold credentials (wildcards, any case).
    credential_env_names: Vec<Glob>,
}

/// The capabilities the Baseline standard lets containers add: the
/// container runtimes' default set.
pub const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The sysctls the Baseline standard allows (its "safe" set, as the
/// `PodSecurity` admission's latest policy lists them).
pub const SAFE_SYSCTLS: [&str; 14] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

/// The volume types the Restricted standard allows.
pub const RESTRICTED_VOLUME_TYPES: [&str; 9] =
    ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"];

/// Every volume source a pod's volume can have (its key in `spec.volumes[*]`).
pub const VOLUME_TYPES: [&str; 30] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "scaleIO",
    "secret",
    "storageos",
    "vsphereVolume",
];

/// The SELinux types the Baseline standard allows.
pub const BASELINE_SELINUX_TYPES: [&str; 4] = ["container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

impl Default for Settings {
    fn default() -> Self {
        Settings::for_level(None)
    }
}

impl Settings {
    /// The defaults under `level`: the rule's own without one; with one,
    /// every key that expresses a Pod Security Standards control set as
    /// that level asks, the others (credentials, read-only root
    /// filesystems, user and group ranges, what to skip) left at the
    /// rule's own defaults.
    pub fn for_level(level: Option<Level>) -> Settings {
        let any = || vec![Glob::new("*")];
        let mut s = Settings {
            level,
            require_run_as_non_root: true,
            forbid_root_user: true,
            forbid_privileged: true,
            privilege_escalation: PrivilegeEscalation::ForbidTrue,
            require_drop_net_raw: true,
            required_drop_capabilities: Vec::new(),
            restrict_added_capabilities: true,
            allowed_capabilities: Vec::new(),
            restrict_host_path: true,
            allowed_host_paths: Vec::new(),
            host_path_precedence: HostPathPrecedence::AnyWritable,
            forbidden_host_paths: Vec::new(),
            restrict_volume_types: false,
            allowed_volume_types: Vec::new(),
            allowed_flex_volume_drivers: any(),
            forbid_host_network: true,
            forbid_host_pid: true,
            forbid_host_ipc: true,
            restrict_host_ports: false,
            allowed_host_ports: Vec::new(),
            forbid_share_process_namespace: false,
            require_seccomp: true,
            forbid_unconfined_seccomp: false,
            allowed_seccomp_localhost_profiles: any(),
            forbid_unconfined_app_armor: true,
            allowed_app_armor_localhost_profiles: any(),
            se_linux: SeLinuxStrategy::default(),
            proc_mount: ProcMount::Unchecked,
            restrict_sysctls: false,
            allowed_sysctls: Vec::new(),
            forbidden_sysctls: Vec::new(),
            forbid_probe_hosts: false,
            require_read_only_root_filesystem: false,
            run_as_user: UserStrategy::default(),
            run_as_group: GroupStrategy::default(),
            supplemental_groups: GroupStrategy::default(),
            fs_group: GroupStrategy::default(),
            skip_init_containers: false,
            skip_ephemeral_containers: false,
            forbid_plain_credentials: true,
            credential_env_names: default_credential_names(),
        };
        let Some(level) = level else { return s };
        // Baseline.
        s.require_run_as_non_root = false;
        s.forbid_root_user = false;
        s.forbid_privileged = true;
        s.privilege_escalation = PrivilegeEscalation::Unchecked;
        s.require_drop_net_raw = false;
        s.restrict_added_capabilities = true;
        s.allowed_capabilities = BASELINE_CAPABILITIES.map(String::from).to_vec();
        s.restrict_host_path = true;
        s.forbid_host_network = true;
        s.forbid_host_pid = true;
        s.forbid_host_ipc = true;
        s.restrict_host_ports = true;
        s.require_seccomp = false;
        s.forbid_unconfined_seccomp = true;
        s.forbid_unconfined_app_armor = true;
        s.se_linux = SeLinuxStrategy::baseline();
        s.proc_mount = ProcMount::DefaultUnlessUserNamespace;
        s.restrict_sysctls = true;
        s.allowed_sysctls = SAFE_SYSCTLS.map(Glob::new).to_vec();
        s.forbid_probe_hosts = true;
        if level == Level::Restricted {
            s.require_run_as_non_root = true;
            s.forbid_root_user = true;
            s.privilege_escalation = PrivilegeEscalation::RequireFalse;
            s.required_drop_capabilities = vec!["ALL".to_string()];
            s.allowed_capabilities = vec!["NET_BIND_SERVICE".to_string()];
            s.restrict_volume_types = true;
            s.allowed_volume_types = RESTRICTED_VOLUME_TYPES.map(String::from).to_vec();
            s.require_seccomp = true;
            s.proc_mount = ProcMount::Default;
        }
        s
    }
}

/// The default credential variable names.
pub fn default_credential_names() -> Vec<Glob> {
    ["*_API_KEY", "*_TOKEN", "*_SECRET*", "*_PASSWORD", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"].into_iter().map(Glob::new).collect()
}

/// What `allowPrivilegeEscalation` must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PrivilegeEscalation {
    /// Not `true` (absent is allowed: Kubernetes then lets a process gain
    /// privileges, as the Baseline standard tolerates).
    ForbidTrue,
    /// Explicitly `false` on every container (the Restricted standard).
    RequireFalse,
    /// Not checked. (Not `off`: YAML 1.1, which Kubernetes tools speak,
    /// reads an unquoted `off` as `false`.)
    Unchecked,
}

/// What `procMount` may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProcMount {
    /// Not checked.
    Unchecked,
    /// Unset or `Default`, but anything in a pod with `hostUsers: false`
    /// (Baseline since Kubernetes 1.35).
    DefaultUnlessUserNamespace,
    /// Unset or `Default` (Restricted).
    Default,
}

/// Which of several prefixes covering a host path decides whether its
/// mounts must be read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HostPathPrecedence {
    /// A writable prefix wins: read-only only if every covering prefix says
    /// so (PodSecurityPolicy, Gatekeeper).
    AnyWritable,
    /// The longest covering prefix decides (Kubewarden's `hostpaths-psp`).
    LongestPrefix,
}

/// How a host path prefix covers a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PathMatch {
    /// By whole path components: `/data` covers `/data/x`, not `/database`.
    #[default]
    Components,
    /// By characters: `/dev/nvidia` covers `/dev/nvidia0` and
    /// `/dev/nvidiactl`.
    String,
}

/// A host path prefix `hostPath` volumes may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllowedHostPath {
    /// An absolute path; the volume's path (cleaned) must be it or under it.
    pub path_prefix: String,
    /// Whether every mount of such a volume must be `readOnly: true`.
    #[serde(default)]
    pub read_only: bool,
    /// How `pathPrefix` covers a path.
    #[serde(default, rename = "match")]
    pub matching: PathMatch,
}

/// An inclusive range of host ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortRange {
    /// First port.
    pub min: u32,
    /// Last port.
    pub max: u32,
}

/// An inclusive range of user or group IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdRange {
    /// First ID.
    pub min: i64,
    /// Last ID.
    pub max: i64,
}

impl IdRange {
    /// Whether `id` is in the range.
    pub fn contains(&self, id: i64) -> bool {
        self.min <= id && id <= self.max
    }
}

/// How user IDs are checked (PodSecurityPolicy's `runAsUser` rules).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserRule {
    /// Every container runs as a user ID in `ranges`, set at pod or
    /// container level.
    MustRunAs,
    /// Every container has `runAsNonRoot: true` or a non-zero `runAsUser`.
    MustRunAsNonRoot,
    /// Not checked.
    #[default]
    RunAsAny,
}

/// How group IDs are checked (PodSecurityPolicy's group rules).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupRule {
    /// Set, and in `ranges`.
    MustRunAs,
    /// In `ranges` where set.
    MayRunAs,
    /// Not checked.
    #[default]
    RunAsAny,
}

/// The `runAsUser` setting.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct UserStrategy {
    /// The rule.
    pub rule: UserRule,
    /// The allowed IDs, for `MustRunAs`.
    pub ranges: Vec<IdRange>,
}

/// The `runAsGroup`, `supplementalGroups` and `fsGroup` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GroupStrategy {
    /// The rule.
    pub rule: GroupRule,
    /// The allowed IDs, for `MustRunAs` and `MayRunAs`.
    pub ranges: Vec<IdRange>,
}

/// How SELinux options are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeLinuxRule {
    /// Every container has options (its own or the pod's), and they are
    /// allowed.
    MustRunAs,
    /// Options, where set, are allowed.
    MayRunAs,
    /// Not checked.
    #[default]
    RunAsAny,
}

/// The `seLinux` setting.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SeLinuxStrategy {
    /// The rule.
    pub rule: SeLinuxRule,
    /// The options allowed: `seLinuxOptions` are allowed when some entry
    /// matches every field they set.
    pub allowed_options: Vec<SeLinuxEntry>,
}

impl SeLinuxStrategy {
    /// The Baseline standard: a type from [`BASELINE_SELINUX_TYPES`] or
    /// none, any level, no user or role.
    pub fn baseline() -> SeLinuxStrategy {
        let any_level = || Some(Glob::new("*"));
        let mut allowed: Vec<SeLinuxEntry> = BASELINE_SELINUX_TYPES
            .iter()
            .map(|t| SeLinuxEntry { user: None, role: None, kind: Some(Glob::new(*t)), level: any_level() })
            .collect();
        allowed.push(SeLinuxEntry { user: None, role: None, kind: None, level: any_level() });
        SeLinuxStrategy { rule: SeLinuxRule::MayRunAs, allowed_options: allowed }
    }
}

/// One allowed set of SELinux options: each field a pattern (wildcards);
/// a field left out allows only options that leave it unset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SeLinuxEntry {
    /// SELinux user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Glob>,
    /// SELinux role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Glob>,
    /// SELinux type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Glob>,
    /// SELinux level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Glob>,
}

impl Settings {
    /// Whether any check is on.
    fn checks_anything(&self) -> bool {
        let wildcard = |l: &[Glob]| l.len() == 1 && l.first().is_some_and(|g| g.as_str() == "*");
        self.require_run_as_non_root
            || self.forbid_root_user
            || self.forbid_privileged
            || self.privilege_escalation != PrivilegeEscalation::Unchecked
            || self.require_drop_net_raw
            || !self.required_drop_capabilities.is_empty()
            || self.restrict_added_capabilities
            || self.restrict_host_path
            || self.restrict_volume_types
            || !wildcard(&self.allowed_flex_volume_drivers)
            || self.forbid_host_network
            || self.forbid_host_pid
            || self.forbid_host_ipc
            || self.restrict_host_ports
            || self.forbid_share_process_namespace
            || self.require_seccomp
            || self.forbid_unconfined_seccomp
            || !wildcard(&self.allowed_seccomp_localhost_profiles)
            || self.forbid_unconfined_app_armor
            || !wildcard(&self.allowed_app_armor_localhost_profiles)
            || self.se_linux.rule != SeLinuxRule::RunAsAny
            || self.proc_mount != ProcMount::Unchecked
            || self.restrict_sysctls
            || self.forbid_probe_hosts
            || self.require_read_only_root_filesystem
            || self.run_as_user.rule != UserRule::RunAsAny
            || [&self.run_as_group, &self.supplemental_groups, &self.fs_group].iter().any(|g| g.rule != GroupRule::RunAsAny)
            || self.forbid_plain_credentials
    }
}

/// Whether `name` could be a capability: letters, digits and `_`.
fn capability_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A capability as the container runtimes read it: upper case, without
/// `CAP_`.
pub fn capability(name: &str) -> String {
    let upper = name.to_ascii_uppercase();
    match upper.strip_prefix("CAP_") {
        Some(rest) => rest.to_string(),
        None => upper,
    }
}

/// Refuses a list that a check which is off would never read, unless it is
/// what the level (or the rule) gives it anyway.
fn unused<T: PartialEq>(key: &str, check: &str, on: bool, list: &[T], default: &[T]) -> Result<(), SettingsError> {
    if !on && list != default {
        return Err(SettingsError::new(key, format!("has no effect while `{check}` is `false`: remove it, or set `{check}: true`")));
    }
    Ok(())
}

fn id_ranges(key: &str, ranges: &[IdRange]) -> Result<(), SettingsError> {
    for (i, r) in ranges.iter().enumerate() {
        if r.min < 0 {
            return Err(SettingsError::new(format!("{key}.ranges[{i}].min"), format!("`{}` is not an ID: IDs are zero or more", r.min)));
        }
        if r.min > r.max {
            return Err(SettingsError::new(
                format!("{key}.ranges[{i}]"),
                format!("`min` ({}) is above `max` ({}), so no ID is in the range", r.min, r.max),
            ));
        }
    }
    Ok(())
}

fn group_strategy(key: &str, g: &GroupStrategy) -> Result<(), SettingsError> {
    match (g.rule, g.ranges.is_empty()) {
        (GroupRule::RunAsAny, false) => Err(SettingsError::new(
            format!("{key}.ranges"),
            "has no effect with `rule: RunAsAny`: remove it, or use `MustRunAs` or `MayRunAs`",
        )),
        (GroupRule::MustRunAs | GroupRule::MayRunAs, true) => {
            Err(SettingsError::new(format!("{key}.ranges"), "must list at least one range of IDs (`{min: 1000, max: 1999}`) for this rule"))
        }
        _ => id_ranges(key, &g.ranges),
    }
}

impl RuleSettings for Settings {
    const EXEMPTS_IMAGES: bool = true;

    fn validate(&self) -> Result<(), SettingsError> {
        if !self.checks_anything() {
            return Err(SettingsError::whole(
                "every check is off, so the rule would check nothing: turn one on, or do not deploy the rule",
            ));
        }
        let level = Settings::for_level(self.level);
        unused(
            "allowedCapabilities",
            "restrictAddedCapabilities",
            self.restrict_added_capabilities,
            &self.allowed_capabilities,
            &level.allowed_capabilities,
        )?;
        for (key, list) in
            [("allowedCapabilities", &self.allowed_capabilities), ("requiredDropCapabilities", &self.required_drop_capabilities)]
        {
            for (i, c) in list.iter().enumerate() {
                if !capability_name(c) {
                    return Err(SettingsError::new(
                        format!("{key}[{i}]"),
                        format!("`{c}` is not a capability name (such as `NET_BIND_SERVICE`)"),
                    ));
                }
            }
        }
        for (i, c) in self.required_drop_capabilities.iter().enumerate() {
            let name = capability(c);
            if self.restrict_added_capabilities && self.allowed_capabilities.iter().any(|a| capability(a) == name) {
                return Err(SettingsError::new(
                    format!("requiredDropCapabilities[{i}]"),
                    format!("`{c}` must be dropped, but `allowedCapabilities` lets containers add it back: remove it from one of them"),
                ));
            }
        }
        unused("allowedHostPaths", "restrictHostPath", self.restrict_host_path, &self.allowed_host_paths, &level.allowed_host_paths)?;
        for (i, p) in self.allowed_host_paths.iter().enumerate() {
            let key = format!("allowedHostPaths[{i}].pathPrefix");
            let prefix = &p.path_prefix;
            if !prefix.starts_with('/') {
                return Err(SettingsError::new(key, format!("`{prefix}` is not an absolute path, so no host path can be under it")));
            }
            if prefix.split('/').any(|c| c == "..") {
                return Err(SettingsError::new(key, format!("`{prefix}` contains `..`, which Kubernetes refuses in host paths")));
            }
        }
        unused("forbiddenHostPaths", "restrictHostPath", self.restrict_host_path, &self.forbidden_host_paths, &level.forbidden_host_paths)?;
        for (i, path) in self.forbidden_host_paths.iter().enumerate() {
            let key = format!("forbiddenHostPaths[{i}]");
            if !path.starts_with('/') {
                return Err(SettingsError::new(key, format!("`{path}` is not an absolute path, so no host path can be under it")));
            }
            if path.split('/').any(|c| c == "..") {
                return Err(SettingsError::new(key, format!("`{path}` contains `..`, which Kubernetes refuses in host paths")));
            }
            if path.split('/').all(str::is_empty) {
                return Err(SettingsError::new(
                    key,
                    "`/` holds every host path, so it would refuse them all: leave `allowedHostPaths` empty instead",
                ));
            }
            let dead = self
                .allowed_host_paths
                .iter()
                .enumerate()
                .find(|(_, a)| a.matching == PathMatch::Components && super::volumes::has_path_prefix(&a.path_prefix, path));
            if let Some((j, a)) = dead {
                return Err(SettingsError::new(
                    key,
                    format!(
                        "`{path}` holds `{}` (`allowedHostPaths[{j}]`), so that entry would allow nothing: remove one of them",
                        a.path_prefix
                    ),
                ));
            }
            if !self.allowed_host_paths.iter().any(|a| super::volumes::overlaps(a, path)) {
                return Err(SettingsError::new(
                    key,
                    format!(
                        "has no effect: no entry of `allowedHostPaths` allows `{path}`, a path under it or one holding it, so they are refused \
                         already; to allow every host path but this one, add `{{pathPrefix: /}}` to `allowedHostPaths`"
                    ),
                ));
            }
        }
        unused(
            "allowedVolumeTypes",
            "restrictVolumeTypes",
            self.restrict_volume_types,
            &self.allowed_volume_types,
            &level.allowed_volume_types,
        )?;
        for (i, t) in self.allowed_volume_types.iter().enumerate() {
            if t == "*" {
                return Err(SettingsError::new(
                    format!("allowedVolumeTypes[{i}]"),
                    "`*` would allow every type: set `restrictVolumeTypes: false` instead",
                ));
            }
            if !VOLUME_TYPES.contains(&t.as_str()) {
                let hint =
                    VOLUME_TYPES.iter().find(|v| v.eq_ignore_ascii_case(t)).map(|v| format!(" (did you mean `{v}`?)")).unwrap_or_default();
                return Err(SettingsError::new(
                    format!("allowedVolumeTypes[{i}]"),
                    format!(
                        "`{t}` is not a volume type{hint}; the types are the keys of a volume's source, such as `configMap` or `persistentVolumeClaim`"
                    ),
                ));
            }
        }
        non_empty_patterns(&"allowedFlexVolumeDrivers", &self.allowed_flex_volume_drivers)?;
        unused("allowedHostPorts", "restrictHostPorts", self.restrict_host_ports, &self.allowed_host_ports, &level.allowed_host_ports)?;
        for (i, r) in self.allowed_host_ports.iter().enumerate() {
            if r.min == 0 || r.max > 65535 || r.min > r.max {
                return Err(SettingsError::new(
                    format!("allowedHostPorts[{i}]"),
                    format!("`{}-{}` is not a range of ports: `min` and `max` are from 1 to 65535, `min` not above `max`", r.min, r.max),
                ));
            }
        }
        non_empty_patterns(&"allowedSeccompLocalhostProfiles", &self.allowed_seccomp_localhost_profiles)?;
        non_empty_patterns(&"allowedAppArmorLocalhostProfiles", &self.allowed_app_armor_localhost_profiles)?;
        match (self.se_linux.rule, self.se_linux.allowed_options.is_empty()) {
            (SeLinuxRule::RunAsAny, false) if self.se_linux.allowed_options != level.se_linux.allowed_options => {
                return Err(SettingsError::new(
                    "seLinux.allowedOptions",
                    "has no effect with `rule: RunAsAny`: remove it, or use `MayRunAs` or `MustRunAs`",
                ));
            }
            (SeLinuxRule::MustRunAs, true) => {
                return Err(SettingsError::new(
                    "seLinux.allowedOptions",
                    "must list the options containers must run with for `rule: MustRunAs`",
                ));
            }
            _ => {}
        }
        for (i, e) in self.se_linux.allowed_options.iter().enumerate() {
            for (field, p) in [("user", &e.user), ("role", &e.role), ("type", &e.kind), ("level", &e.level)] {
                if p.as_ref().is_some_and(|p| p.as_str().is_empty()) {
                    return Err(SettingsError::new(
                        format!("seLinux.allowedOptions[{i}].{field}"),
                        "must not be empty: leave the field out to allow only options that do not set it",
                    ));
                }
            }
        }
        unused("allowedSysctls", "restrictSysctls", self.restrict_sysctls, &self.allowed_sysctls, &level.allowed_sysctls)?;
        unused("forbiddenSysctls", "restrictSysctls", self.restrict_sysctls, &self.forbidden_sysctls, &level.forbidden_sysctls)?;
        non_empty_patterns(&"allowedSysctls", &self.allowed_sysctls)?;
        non_empty_patterns(&"forbiddenSysctls", &self.forbidden_sysctls)?;
        match (self.run_as_user.rule, self.run_as_user.ranges.is_empty()) {
            (UserRule::RunAsAny | UserRule::MustRunAsNonRoot, false) => {
                return Err(SettingsError::new(
                    "runAsUser.ranges",
                    format!("has no effect with `rule: {:?}`: remove it, or use `MustRunAs`", self.run_as_user.rule),
                ));
            }
            (UserRule::MustRunAs, true) => {
                return Err(SettingsError::new(
                    "runAsUser.ranges",
                    "must list at least one range of IDs (`{min: 1000, max: 1999}`) for this rule",
                ));
            }
            _ => id_ranges("runAsUser", &self.run_as_user.ranges)?,
        }
        group_strategy("runAsGroup", &self.run_as_group)?;
        group_strategy("supplementalGroups", &self.supplemental_groups)?;
        group_strategy("fsGroup", &self.fs_group)?;
        if self.forbid_plain_credentials && self.credential_env_names.is_empty() {
            return Err(SettingsError::new(
                "credentialEnvNames",
                "must list at least one variable name pattern, or set `forbidPlainCredentials: false`",
            ));
        }
        non_empty_patterns(&"credentialEnvNames", &self.credential_env_names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults_turn_every_check_on_but_require_false() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.privilege_escalation, PrivilegeEscalation::ForbidTrue);
        assert!(s.forbid_host_pid && s.forbid_host_ipc && s.require_seccomp && s.forbid_root_user);
        assert!(!s.restrict_volume_types && !s.restrict_host_ports && !s.restrict_sysctls && s.level.is_none());
        let s = Full::<Settings>::parse_valid(
            r#"{"privilegeEscalation":"requireFalse","forbidHostPID":false,"allowedHostPaths":[{"pathPrefix":"/mnt/models","readOnly":true},{"pathPrefix":"/scratch"}]}"#,
        )
        .unwrap()
        .rule;
        assert_eq!(s.privilege_escalation, PrivilegeEscalation::RequireFalse);
        assert!(!s.forbid_host_pid);
        assert!(s.allowed_host_paths[0].read_only && !s.allowed_host_paths[1].read_only);
        assert_eq!(s.allowed_host_paths[1].matching, PathMatch::Components);
    }

    #[test]
    fn a_level_sets_the_defaults_and_a_given_key_wins() {
        let s = accepted::<Settings>(r#"{"level":"baseline"}"#);
        assert_eq!(s, Settings::for_level(Some(Level::Baseline)));
        assert!(!s.require_run_as_non_root && !s.forbid_root_user && !s.require_seccomp && s.forbid_unconfined_seccomp);
        assert_eq!(s.privilege_escalation, PrivilegeEscalation::Unchecked);
        assert_eq!(s.allowed_capabilities.len(), 13);
        assert!(s.forbid_plain_credentials, "credentials are not a Pod Security Standards control");
        let s = accepted::<Settings>(r#"{"level":"restricted","forbidHostNetwork":false,"requireRunAsNonRoot":false}"#);
        assert!(!s.forbid_host_network && s.forbid_host_pid);
        assert_eq!(s.required_drop_capabilities, ["ALL"]);
        assert_eq!(s.proc_mount, ProcMount::Default);
        assert!(!s.forbid_root_user, "follows requireRunAsNonRoot when left out");
        let s = accepted::<Settings>(r#"{"requireRunAsNonRoot":false,"forbidRootUser":true}"#);
        assert!(!s.require_run_as_non_root && s.forbid_root_user);
        // `null` is a key left out.
        assert_eq!(accepted::<Settings>(r#"{"level":null,"requireSeccomp":null}"#), Settings::default());
        // A list the level gives a check that is turned off is no contradiction.
        let s = accepted::<Settings>(r#"{"level":"baseline","restrictAddedCapabilities":false,"restrictSysctls":false}"#);
        assert!(!s.restrict_added_capabilities);
    }

    #[test]
    fn contradictions_and_impossible_values_are_refused() {
        assert!(
            refused::<Settings>(r#"{"restrictAddedCapabilities":false,"allowedCapabilities":["NET_ADMIN"]}"#)
                .starts_with("setting `allowedCapabilities`: has no effect")
        );
        assert!(
            refused::<Settings>(r#"{"allowedCapabilities":["NET ADMIN"]}"#)
                .starts_with("setting `allowedCapabilities[0]`: `NET ADMIN` is not a capability")
        );
        assert!(
            refused::<Settings>(r#"{"allowedCapabilities":["NET_ADMIN"],"requiredDropCapabilities":["cap_net_admin"]}"#)
                .starts_with("setting `requiredDropCapabilities[0]`: `cap_net_admin` must be dropped")
        );
        assert!(
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"mnt/models"}]}"#)
                .starts_with("setting `allowedHostPaths[0].pathPrefix`: `mnt/models` is not an absolute path")
        );
        assert!(refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt/../etc"}]}"#).contains("contains `..`"));
        let any_but = |forbidden: &str| format!(r#"{{"allowedHostPaths":[{{"pathPrefix":"/"}}],"forbiddenHostPaths":{forbidden}}}"#);
        assert_eq!(accepted::<Settings>(&any_but(r#"["/dev"]"#)).forbidden_host_paths, ["/dev"]);
        assert!(refused::<Settings>(&any_but(r#"["dev"]"#)).starts_with("setting `forbiddenHostPaths[0]`: `dev` is not an absolute path"));
        assert!(refused::<Settings>(&any_but(r#"["/dev/../etc"]"#)).contains("contains `..`"));
        assert!(refused::<Settings>(&any_but(r#"["//"]"#)).contains("would refuse them all"));
        assert!(
            refused::<Settings>(r#"{"forbiddenHostPaths":["/dev"]}"#)
                .starts_with("setting `forbiddenHostPaths[0]`: has no effect: no entry of `allowedHostPaths` allows `/dev`")
        );
        assert!(
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt"}],"forbiddenHostPaths":["/dev"]}"#)
                .contains("add `{pathPrefix: /}` to `allowedHostPaths`")
        );
        // Under an allowed prefix; not holding one, which would then allow nothing.
        accepted::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt"}],"forbiddenHostPaths":["/mnt/secrets"]}"#);
        accepted::<Settings>(
            r#"{"allowedHostPaths":[{"pathPrefix":"/dev/nvidia","match":"string"}],"forbiddenHostPaths":["/dev/nvidia-caps"]}"#,
        );
        assert!(
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/"},{"pathPrefix":"/mnt/models/"}],"forbiddenHostPaths":["/mnt"]}"#)
                .starts_with("setting `forbiddenHostPaths[0]`: `/mnt` holds `/mnt/models/` (`allowedHostPaths[1]`), so that entry would allow nothing")
        );
        assert!(
            refused::<Settings>(r#"{"restrictHostPath":false,"forbiddenHostPaths":["/dev"]}"#)
                .starts_with("setting `forbiddenHostPaths`: has no effect while `restrictHostPath` is `false`")
        );
        assert!(
            refused::<Settings>(r#"{"restrictHostPath":false,"allowedHostPaths":[{"pathPrefix":"/mnt"}]}"#)
                .starts_with("setting `allowedHostPaths`: has no effect")
        );
        assert!(
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt","readonly":true}]}"#)
                .starts_with("setting `allowedHostPaths[0].readonly`: unknown setting")
        );
        assert!(refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/dev/nvidia","match":"prefix"}]}"#).contains("unknown variant"));
        assert!(
            refused::<Settings>(r#"{"restrictVolumeTypes":true,"allowedVolumeTypes":["configmap"]}"#)
                .contains("`configmap` is not a volume type (did you mean `configMap`?)")
        );
        assert!(
            refused::<Settings>(r#"{"restrictVolumeTypes":true,"allowedVolumeTypes":["*"]}"#).contains("set `restrictVolumeTypes: false`")
        );
        assert!(refused::<Settings>(r#"{"allowedVolumeTypes":["secret"]}"#).starts_with("setting `allowedVolumeTypes`: has no effect"));
        assert!(
            refused::<Settings>(r#"{"restrictHostPorts":true,"allowedHostPorts":[{"min":0,"max":80}]}"#)
                .contains("is not a range of ports")
        );
        assert!(
            refused::<Settings>(r#"{"restrictHostPorts":true,"allowedHostPorts":[{"min":90,"max":80}]}"#)
                .contains("is not a range of ports")
        );
        assert!(refused::<Settings>(r#"{"restrictHostPorts":true,"allowedHostPorts":[{"min":80}]}"#).contains("missing field `max`"));
        assert!(refused::<Settings>(r#"{"runAsUser":{"rule":"MustRunAs"}}"#).starts_with("setting `runAsUser.ranges`: must list"));
        assert!(
            refused::<Settings>(r#"{"runAsUser":{"rule":"MayRunAs","ranges":[{"min":1,"max":2}]}}"#).contains("unknown variant `MayRunAs`")
        );
        assert!(
            refused::<Settings>(r#"{"runAsUser":{"rule":"MustRunAsNonRoot","ranges":[{"min":1,"max":2}]}}"#)
                .starts_with("setting `runAsUser.ranges`: has no effect with `rule: MustRunAsNonRoot`")
        );
        assert!(
            refused::<Settings>(r#"{"fsGroup":{"rule":"MayRunAs","ranges":[{"min":5,"max":2}]}}"#)
                .starts_with("setting `fsGroup.ranges[0]`: `min` (5) is above `max` (2)")
        );
        assert!(refused::<Settings>(r#"{"runAsGroup":{"rule":"MustRunAs","ranges":[{"min":-1,"max":2}]}}"#).contains("is not an ID"));
        assert!(
            refused::<Settings>(r#"{"supplementalGroups":{"ranges":[{"min":1,"max":2}]}}"#).contains("has no effect with `rule: RunAsAny`")
        );
        assert!(refused::<Settings>(r#"{"seLinux":{"rule":"MustRunAs"}}"#).starts_with("setting `seLinux.allowedOptions`: must list"));
        assert!(
            refused::<Settings>(r#"{"seLinux":{"allowedOptions":[{"type":"spc_t"}]}}"#).contains("has no effect with `rule: RunAsAny`")
        );
        assert!(refused::<Settings>(r#"{"seLinux":{"rule":"MayRunAs","allowedOptions":[{"type":""}]}}"#).contains("must not be empty"));
        assert!(refused::<Settings>(r#"{"allowedSysctls":["kernel.*"]}"#).starts_with("setting `allowedSysctls`: has no effect"));
        assert!(refused::<Settings>(r#"{"restrictSysctls":true,"forbiddenSysctls":[""]}"#).starts_with("setting `forbiddenSysctls[0]`"));
        assert!(
            refused::<Settings>(r#"{"allowedSeccompLocalhostProfiles":[""]}"#).starts_with("setting `allowedSeccompLocalhostProfiles[0]`")
        );
        assert!(refused::<Settings>(r#"{"level":"privileged"}"#).starts_with("setting `level`: unknown variant"));
        assert!(refused::<Settings>(r#"{"procMount":"Unmasked"}"#).starts_with("setting `procMount`: unknown variant"));
        assert!(refused::<Settings>(r#"{"credentialEnvNames":[]}"#).starts_with("setting `credentialEnvNames`: must list"));
        assert!(refused::<Settings>(r#"{"credentialEnvNames":[""]}"#).starts_with("setting `credentialEnvNames[0]`"));
        assert!(refused::<Settings>(r#"{"privilegeEscalation":"false"}"#).starts_with("setting `privilegeEscalation`"));
        assert!(refused::<Settings>(r#"{"forbidHostPid":false}"#).starts_with("setting `forbidHostPid`: unknown setting"));
        let all_off = r#"{"requireRunAsNonRoot":false,"forbidPrivileged":false,"privilegeEscalation":"unchecked","requireDropNetRaw":false,
            "restrictAddedCapabilities":false,"restrictHostPath":false,"forbidHostNetwork":false,"forbidHostPID":false,"forbidHostIPC":false,
            "requireSeccomp":false,"forbidUnconfinedAppArmor":false,"forbidPlainCredentials":false}"#;
        assert!(refused::<Settings>(all_off).starts_with("every check is off"));
    }
}
