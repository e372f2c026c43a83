//! Settings of `idle-gpu-pods`.

use aigov_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// Programs that run other programs: listing one in `waitingCommands`
/// would make every command line through it "waiting".
const RUNS_OTHERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "ash",
    "zsh",
    "ksh",
    "mksh",
    "yash",
    "busybox",
    "env",
    "exec",
    "nohup",
    "setsid",
    "time",
    "command",
    "builtin",
    "nice",
    "tini",
    "tini-static",
    "dumb-init",
    "catatonit",
    "stdbuf",
    "timeout",
];

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// A command that does nothing but sleep for this many seconds or more
    /// (in all) only waits. Default 3600 (an hour).
    pub long_sleep_seconds: u64,
    /// When `command` is empty, read `args` as the command line (the
    /// image's entrypoint is assumed to run its arguments, as `tini`,
    /// NVIDIA's `nvidia_entrypoint.sh` and images without an entrypoint
    /// do). Default `true`.
    pub args_as_command: bool,
    /// Further programs that wait forever, by name (`sshd`). Default none.
    pub waiting_commands: Vec<String>,
    /// Warn (never reject) when a GPU container keeps waiting after its
    /// work (`python train.py; sleep infinity`). Default `true`.
    pub warn_wait_after_work: bool,
    /// Pods that request GPUs and have no controller must set
    /// `activeDeadlineSeconds`, at most this. Default `null`: not required.
    pub max_active_deadline_seconds: Option<u64>,
    /// With `maxActiveDeadlineSeconds`: Jobs that request GPUs (and the
    /// Jobs of CronJobs and JobSets) must be bounded too, by the Job's
    /// `activeDeadlineSeconds` or their pod template's, at most that.
    /// Default `false`: bare Pods only.
    pub require_job_deadline: bool,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// What a failed claim lookup does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gpu_resource_names: GpuResources::default(),
            long_sleep_seconds: 3600,
            args_as_command: true,
            waiting_commands: Vec::new(),
            warn_wait_after_work: true,
            max_active_deadline_seconds: None,
            require_job_deadline: false,
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

impl RuleSettings for Settings {
    const EXEMPTS_IMAGES: bool = true;

    fn validate(&self) -> Result<(), SettingsError> {
        if self.long_sleep_seconds == 0 {
            return Err(SettingsError::new(
                "longSleepSeconds",
                "must be 1 or more: with 0, a container that sleeps for a second before its work would only wait",
            ));
        }
        for (i, name) in self.waiting_commands.iter().enumerate() {
            let key = format!("waitingCommands[{i}]");
            if name.trim().is_empty() {
                return Err(SettingsError::new(key, "must not be empty"));
            }
            if name.contains('/') || name.chars().any(char::is_whitespace) {
                return Err(SettingsError::new(
                    key,
                    format!(
                        "`{name}` can never match: give the program's name without a path or arguments (`sshd`, not `/usr/sbin/sshd -D`)"
                    ),
                ));
            }
            if RUNS_OTHERS.contains(&name.as_str()) {
                return Err(SettingsError::new(
                    key,
                    format!("`{name}` runs other programs, whose commands the rule reads; list the program that waits instead"),
                ));
            }
        }
        if self.max_active_deadline_seconds == Some(0) {
            return Err(SettingsError::new(
                "maxActiveDeadlineSeconds",
                "must be 1 or more (the API server refuses `activeDeadlineSeconds: 0`), or `null` not to require a deadline",
            ));
        }
        if self.require_job_deadline && self.max_active_deadline_seconds.is_none() {
            return Err(SettingsError::new(
                "requireJobDeadline",
                "needs `maxActiveDeadlineSeconds`, the longest deadline a GPU Job may set (`9223372036854775807` for any deadline)",
            ));
        }
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.long_sleep_seconds, 3600);
        assert!(s.args_as_command && s.warn_wait_after_work);
        assert_eq!(s.max_active_deadline_seconds, None);
        let s = accepted::<Settings>(r#"{"maxActiveDeadlineSeconds":86400,"waitingCommands":["sshd"]}"#);
        assert_eq!(s.max_active_deadline_seconds, Some(86400));
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        assert!(refused::<Settings>(r#"{"longSleepSeconds":0}"#).starts_with("setting `longSleepSeconds`: must be 1 or more"));
        assert!(refused::<Settings>(r#"{"longSleepSeconds":-5}"#).starts_with("setting `longSleepSeconds`: invalid value"));
        assert!(
            refused::<Settings>(r#"{"waitingCommands":["/usr/sbin/sshd"]}"#)
                .starts_with("setting `waitingCommands[0]`: `/usr/sbin/sshd` can never match")
        );
        assert!(refused::<Settings>(r#"{"waitingCommands":["sshd -D"]}"#).starts_with("setting `waitingCommands[0]`"));
        assert!(refused::<Settings>(r#"{"waitingCommands":[""]}"#).starts_with("setting `waitingCommands[0]`: must not be empty"));
        assert!(refused::<Settings>(r#"{"waitingCommands":["bash"]}"#).contains("runs other programs"));
        assert!(
            refused::<Settings>(r#"{"maxActiveDeadlineSeconds":0}"#).starts_with("setting `maxActiveDeadlineSeconds`: must be 1 or more")
        );
        assert!(refused::<Settings>(r#"{"maxActiveDeadline":10}"#).starts_with("setting `maxActiveDeadline`: unknown setting"));
        assert!(refused::<Settings>(r#"{"gpuResourceNames":[]}"#).starts_with("setting `gpuResourceNames`"));
        assert!(
            refused::<Settings>(r#"{"requireJobDeadline":true}"#)
                .starts_with("setting `requireJobDeadline`: needs `maxActiveDeadlineSeconds`")
        );
        let s = accepted::<Settings>(r#"{"requireJobDeadline":true,"maxActiveDeadlineSeconds":9223372036854775807}"#);
        assert!(s.require_job_deadline);
    }
}
