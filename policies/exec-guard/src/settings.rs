//! Settings of `exec-guard`.

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// The rule's own settings (the shared `mode` and exemptions come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Users who may exec into, attach to (and, when guarded, port-forward
    /// or proxy to) any pod, GPU or not. Wildcards allowed
    /// (`system:serviceaccount:velero:*`). Default none.
    pub allowed_users: Vec<Glob>,
    /// Groups whose members may do the same. Wildcards allowed. Default
    /// `["system:masters"]`.
    pub allowed_groups: Vec<Glob>,
    /// Whether anyone may exec into a pod that holds no GPU (the pod is looked
    /// up to find out). Default `true`: `kubectl cp` and `oc rsync` into CPU
    /// pods keep working.
    pub allow_non_gpu_pods: bool,
    /// Whether `pods/portforward` and `pods/proxy` are guarded like exec
    /// and attach: both reach a server listening in the pod (a Jupyter
    /// server), so guarding one without the other leaves it open. Default
    /// `false`.
    pub guard_port_forward: bool,
    /// Extended resources that count as GPUs (wildcards allowed).
    pub gpu_resource_names: GpuResources,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// What a failed lookup (forbidden, unavailable) does: `deny` (default)
    /// or `allow`. A pod that does not exist is always denied.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allowed_users: Vec::new(),
            allowed_groups: vec![Glob::new("system:masters")],
            allow_non_gpu_pods: true,
            guard_port_forward: false,
            gpu_resource_names: GpuResources::default(),
            resource_claims: ResourceClaims::default(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        non_empty_patterns(&"allowedUsers", &self.allowed_users)?;
        non_empty_patterns(&"allowedGroups", &self.allowed_groups)?;
        self.gpu_resource_names.validate("gpuResourceNames")?;
        self.resource_claims.validate("resourceClaims")
    }
}

impl Settings {
    /// Why the user may open a session anywhere: the first `allowedUsers`
    /// pattern matching the user name, else the first of the user's groups
    /// (in request order) matching an `allowedGroups` pattern. `None` when
    /// neither matches.
    pub fn allowance<'s, S: AsRef<str>>(&'s self, user: &str, groups: &'s [S]) -> Option<Allowance<'s>> {
        if let Some(p) = self.allowed_users.iter().find(|p| p.matches(user)) {
            return Some(Allowance::User(p.as_str()));
        }
        groups.iter().map(AsRef::as_ref).find(|g| self.allowed_groups.iter().any(|p| p.matches(g))).map(Allowance::Group)
    }
}

/// Why a user is allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowance<'s> {
    /// The user name matches this `allowedUsers` pattern.
    User(&'s str),
    /// The user belongs to this group, which `allowedGroups` lists.
    Group(&'s str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;

    fn parse(json: &str) -> Result<Settings, String> {
        let s = Full::<Settings>::parse(json).map_err(|e| e.to_string())?;
        s.validate().map_err(|e| e.to_string())?;
        Ok(s.rule)
    }

    #[test]
    fn defaults() {
        let s = parse("{}").unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.allowed_groups, vec![Glob::new("system:masters")]);
        assert!(s.allowed_users.is_empty());
        assert!(s.allow_non_gpu_pods);
        assert!(!s.guard_port_forward);
        assert_eq!(s.gpu_resource_names, GpuResources::default());
    }

    #[test]
    fn every_key_is_read() {
        let s = parse(
            r#"{"allowedUsers":["alice@example.com","system:serviceaccount:velero:*"],
                "allowedGroups":["platform-*"],"allowNonGpuPods":false,"guardPortForward":true,
                "gpuResourceNames":["habana.ai/gaudi"]}"#,
        )
        .unwrap();
        assert_eq!(s.allowed_users.len(), 2);
        assert_eq!(s.allowed_groups, vec![Glob::new("platform-*")]);
        assert!(!s.allow_non_gpu_pods);
        assert!(s.guard_port_forward);
        assert!(s.gpu_resource_names.is_gpu("habana.ai/gaudi"));
        assert!(!s.gpu_resource_names.is_gpu("nvidia.com/gpu"));
    }

    #[test]
    fn empty_lists_are_allowed_but_empty_patterns_are_not() {
        let s = parse(r#"{"allowedGroups":[]}"#).unwrap();
        assert!(s.allowed_groups.is_empty(), "nobody but the shared exemptions may exec into GPU pods");
        assert_eq!(parse(r#"{"allowedGroups":["admins", " "]}"#).unwrap_err(), "setting `allowedGroups[1]`: must not be empty");
        assert_eq!(parse(r#"{"allowedUsers":[""]}"#).unwrap_err(), "setting `allowedUsers[0]`: must not be empty");
        assert!(parse(r#"{"gpuResourceNames":[]}"#).unwrap_err().starts_with("setting `gpuResourceNames`: must list at least one"));
    }

    #[test]
    fn typos_and_wrong_types_name_the_key() {
        let e = parse(r#"{"allowedGroup":["admins"]}"#).unwrap_err();
        assert!(e.starts_with("setting `allowedGroup`: unknown setting; known settings are `allowedUsers`, `allowedGroups`"), "{e}");
        assert_eq!(
            parse(r#"{"allowNonGpuPods":"yes"}"#).unwrap_err(),
            "setting `allowNonGpuPods`: invalid type: string \"yes\", expected a boolean"
        );
        assert_eq!(
            parse(r#"{"allowedUsers":"alice"}"#).unwrap_err(),
            "setting `allowedUsers`: invalid type: string \"alice\", expected a list"
        );
    }

    #[test]
    fn allowance_prefers_the_user_then_the_first_matching_group() {
        let s = parse(r#"{"allowedUsers":["*@platform.example.com"],"allowedGroups":["system:masters","sre-*"]}"#).unwrap();
        assert_eq!(s.allowance("bob@platform.example.com", &["sre-oncall"]), Some(Allowance::User("*@platform.example.com")));
        assert_eq!(
            s.allowance("carol@example.com", &["system:authenticated", "sre-oncall", "system:masters"]),
            Some(Allowance::Group("sre-oncall"))
        );
        assert_eq!(s.allowance("dave@example.com", &["system:authenticated"]), None);
        assert_eq!(s.allowance("platform.example.com", &[] as &[&str]), None);
    }
}
