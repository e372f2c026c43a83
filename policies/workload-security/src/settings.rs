//! Settings of `workload-security`.

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top). Every check is on by default but
/// `privilegeEscalation: requireFalse`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Every container runs as non-root: `runAsNonRoot: true` at pod level
    /// (no container setting it `false`) or on every container; and no
    /// `runAsUser: 0`.
    pub require_run_as_non_root: bool,
    /// No `privileged: true`, no Windows `hostProcess: true`.
    pub forbid_privileged: bool,
    /// What `allowPrivilegeEscalation` must be.
    pub privilege_escalation: PrivilegeEscalation,
    /// Every container drops `NET_RAW` (or `ALL`).
    pub require_drop_net_raw: bool,
    /// Containers add no capability outside `allowedCapabilities`.
    pub restrict_added_capabilities: bool,
    /// Capabilities containers may add (with or without `CAP_`, any case).
    pub allowed_capabilities: Vec<String>,
    /// `hostPath` volumes only under `allowedHostPaths`.
    pub restrict_host_path: bool,
    /// Host path prefixes `hostPath` volumes may use.
    pub allowed_host_paths: Vec<AllowedHostPath>,
    /// No `hostNetwork: true`.
    pub forbid_host_network: bool,
    /// No `hostPID: true`.
    #[serde(rename = "forbidHostPID")]
    pub forbid_host_pid: bool,
    /// No `hostIPC: true`.
    #[serde(rename = "forbidHostIPC")]
    pub forbid_host_ipc: bool,
    /// Seccomp `RuntimeDefault` or `Localhost`, at pod level or on every
    /// container.
    pub require_seccomp: bool,
    /// No AppArmor profile `Unconfined` (field or beta annotation).
    pub forbid_unconfined_app_armor: bool,
    /// Variables named like credentials come from `valueFrom`, never a
    /// literal `value`.
    pub forbid_plain_credentials: bool,
    /// Names of variables that hold credentials (wildcards, any case).
    pub credential_env_names: Vec<Glob>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            require_run_as_non_root: true,
            forbid_privileged: true,
            privilege_escalation: PrivilegeEscalation::ForbidTrue,
            require_drop_net_raw: true,
            restrict_added_capabilities: true,
            allowed_capabilities: Vec::new(),
            restrict_host_path: true,
            allowed_host_paths: Vec::new(),
            forbid_host_network: true,
            forbid_host_pid: true,
            forbid_host_ipc: true,
            require_seccomp: true,
            forbid_unconfined_app_armor: true,
            forbid_plain_credentials: true,
            credential_env_names: default_credential_names(),
        }
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

/// A host path prefix `hostPath` volumes may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllowedHostPath {
    /// An absolute path; the volume's path must be it or under it, by whole
    /// path components (`/data` allows `/data/x`, not `/database`).
    pub path_prefix: String,
    /// Whether every mount of such a volume must be `readOnly: true`.
    #[serde(default)]
    pub read_only: bool,
}

impl Settings {
    /// Whether any check is on.
    fn checks_anything(&self) -> bool {
        self.require_run_as_non_root
            || self.forbid_privileged
            || self.privilege_escalation != PrivilegeEscalation::Unchecked
            || self.require_drop_net_raw
            || self.restrict_added_capabilities
            || self.restrict_host_path
            || self.forbid_host_network
            || self.forbid_host_pid
            || self.forbid_host_ipc
            || self.require_seccomp
            || self.forbid_unconfined_app_armor
            || self.forbid_plain_credentials
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if !self.checks_anything() {
            return Err(SettingsError::whole(
                "every check is off, so the rule would check nothing: turn one on, or do not deploy the rule",
            ));
        }
        if !self.restrict_added_capabilities && !self.allowed_capabilities.is_empty() {
            return Err(SettingsError::new(
                "allowedCapabilities",
                "has no effect while `restrictAddedCapabilities` is `false`: remove it, or set `restrictAddedCapabilities: true`",
            ));
        }
        for (i, c) in self.allowed_capabilities.iter().enumerate() {
            if c.is_empty() || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(SettingsError::new(
                    format!("allowedCapabilities[{i}]"),
                    format!("`{c}` is not a capability name (such as `NET_BIND_SERVICE`)"),
                ));
            }
        }
        if !self.restrict_host_path && !self.allowed_host_paths.is_empty() {
            return Err(SettingsError::new(
                "allowedHostPaths",
                "has no effect while `restrictHostPath` is `false`: remove it, or set `restrictHostPath: true`",
            ));
        }
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
        assert!(s.forbid_host_pid && s.forbid_host_ipc && s.require_seccomp);
        let s = Full::<Settings>::parse_valid(
            r#"{"privilegeEscalation":"requireFalse","forbidHostPID":false,"allowedHostPaths":[{"pathPrefix":"/mnt/models","readOnly":true},{"pathPrefix":"/scratch"}]}"#,
        )
        .unwrap()
        .rule;
        assert_eq!(s.privilege_escalation, PrivilegeEscalation::RequireFalse);
        assert!(!s.forbid_host_pid);
        assert!(s.allowed_host_paths[0].read_only && !s.allowed_host_paths[1].read_only);
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
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"mnt/models"}]}"#)
                .starts_with("setting `allowedHostPaths[0].pathPrefix`: `mnt/models` is not an absolute path")
        );
        assert!(refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt/../etc"}]}"#).contains("contains `..`"));
        assert!(
            refused::<Settings>(r#"{"restrictHostPath":false,"allowedHostPaths":[{"pathPrefix":"/mnt"}]}"#)
                .starts_with("setting `allowedHostPaths`: has no effect")
        );
        assert!(
            refused::<Settings>(r#"{"allowedHostPaths":[{"pathPrefix":"/mnt","readonly":true}]}"#)
                .starts_with("setting `allowedHostPaths[0].readonly`: unknown setting")
        );
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
