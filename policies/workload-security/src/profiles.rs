//! Security profiles: `Localhost` seccomp and AppArmor profiles against
//! their allowlists, and SELinux options against `seLinux.allowedOptions`,
//! with the words their messages share.

use aigov_sdk::model::pod::{Profile, SeLinuxOptions};
use aigov_sdk::prelude::*;

use super::settings::{SeLinuxEntry, SeLinuxRule};
use super::{Check, Place, for_whom, is_wildcard};

/// The kind of profile a `Localhost` profile name is for.
#[derive(Clone, Copy)]
pub(crate) enum ProfileKind {
    Seccomp,
    AppArmor,
}

impl ProfileKind {
    /// The `securityContext` field that holds it.
    fn field(self) -> &'static str {
        match self {
            ProfileKind::Seccomp => "seccompProfile",
            ProfileKind::AppArmor => "appArmorProfile",
        }
    }

    /// Its name in messages.
    fn name(self) -> &'static str {
        match self {
            ProfileKind::Seccomp => "seccomp",
            ProfileKind::AppArmor => "AppArmor",
        }
    }
}

impl Check<'_, '_> {
    /// A `Localhost` profile from `allowedSeccompLocalhostProfiles` or
    /// `allowedAppArmorLocalhostProfiles`, as `kind` says.
    pub(crate) fn localhost_profile(&mut self, kind: ProfileKind, profile: &Profile<'_>, at: &Path, place: Option<&Place<'_, '_, '_>>) {
        let allowed = match kind {
            ProfileKind::Seccomp => &self.s.allowed_seccomp_localhost_profiles,
            ProfileKind::AppArmor => &self.s.allowed_app_armor_localhost_profiles,
        };
        if profile.kind.as_deref() != Some("Localhost") || is_wildcard(allowed) {
            return;
        }
        let name = profile.localhost_profile.as_deref().unwrap_or_default();
        if aigov_sdk::base::glob::any_match(allowed, name) {
            return;
        }
        self.v.violation(format!(
            "`{}` is `{name}`{}, {}: {}",
            at.keys(&[kind.field(), "localhostProfile"]),
            for_whom(place),
            not_allowed_profile(kind.name(), allowed),
            use_allowed_profile("RuntimeDefault", "", allowed)
        ));
    }

    /// SELinux options, where written, against `seLinux.allowedOptions`.
    pub(crate) fn se_linux_allowed(&mut self, options: &SeLinuxOptions<'_>, at: &Path, place: Option<&Place<'_, '_, '_>>) {
        let strategy = &self.s.se_linux;
        if strategy.rule == SeLinuxRule::RunAsAny || strategy.allowed_options.iter().any(|e| se_linux_matches(e, options)) {
            return;
        }
        let set = se_linux_set(options);
        let fix = match (strategy.rule, strategy.allowed_options.is_empty()) {
            (_, true) => "remove it (the container runtime then gives it a confined context of its own)".to_string(),
            (SeLinuxRule::MustRunAs, false) => {
                format!("use {}", one_of(&strategy.allowed_options.iter().map(se_linux_entry).collect::<Vec<_>>()))
            }
            _ => format!(
                "remove it (the container runtime then gives it a confined context of its own), or use {}",
                one_of(&strategy.allowed_options.iter().map(se_linux_entry).collect::<Vec<_>>())
            ),
        };
        self.v.violation(format!(
            "`{}` sets {set}{}, which is not an allowed SELinux context: {fix}",
            at.key("seLinuxOptions"),
            for_whom(place)
        ));
    }
}

pub(crate) fn not_allowed_profile(what: &str, allowed: &[Glob]) -> String {
    if allowed.is_empty() {
        format!("and `Localhost` {what} profiles are not allowed")
    } else {
        format!("which is not an allowed `Localhost` {what} profile")
    }
}

pub(crate) fn use_allowed_profile(default: &str, prefix: &str, allowed: &[Glob]) -> String {
    if allowed.is_empty() {
        format!("use `{default}`")
    } else {
        let names: Vec<String> = allowed.iter().map(|g| format!("{prefix}{}", g.as_str())).collect();
        format!("use `{default}`, or {}", one_of(&names))
    }
}

/// Whether an entry allows the options: every field they set matches the
/// entry's pattern for it (an entry without the field allows only options
/// without it).
pub(crate) fn se_linux_matches(entry: &SeLinuxEntry, options: &SeLinuxOptions<'_>) -> bool {
    [(&entry.user, &options.user), (&entry.role, &options.role), (&entry.kind, &options.kind), (&entry.level, &options.level)]
        .into_iter()
        .all(|(pattern, value)| match value.as_deref().filter(|v| !v.is_empty()) {
            None => true,
            Some(v) => pattern.as_ref().is_some_and(|p| p.matches(v)),
        })
}

/// `` `user: system_u`, `type: spc_t` `` (the fields set), or `nothing`.
pub(crate) fn se_linux_set(options: &SeLinuxOptions<'_>) -> String {
    let set: Vec<String> = [("user", &options.user), ("role", &options.role), ("type", &options.kind), ("level", &options.level)]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().filter(|v| !v.is_empty()).map(|v| format!("`{k}: {v}`")))
        .collect();
    if set.is_empty() { "nothing".into() } else { set.join(", ") }
}

/// An allowed SELinux entry as YAML: `{type: container_t, level: *}`.
pub(crate) fn se_linux_entry(entry: &SeLinuxEntry) -> String {
    let set: Vec<String> = [("user", &entry.user), ("role", &entry.role), ("type", &entry.kind), ("level", &entry.level)]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {}", v.as_str())))
        .collect();
    format!("{{{}}}", set.join(", "))
}

pub(crate) fn valid_seccomp(p: &Profile<'_>) -> bool {
    matches!(p.kind.as_deref(), Some("RuntimeDefault" | "Localhost"))
}

pub(crate) fn valid_app_armor(p: &Profile<'_>) -> bool {
    matches!(p.kind.as_deref(), Some("RuntimeDefault" | "Localhost"))
}

pub(crate) fn shown(kind: Option<&str>) -> String {
    match kind {
        Some(k) => format!("`{k}`"),
        None => "not set".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn se_linux_entries_match_the_fields_set() {
        let entry = SeLinuxEntry { user: None, role: None, kind: Some(Glob::new("container_t")), level: Some(Glob::new("*")) };
        let options = |user: Option<&'static str>, kind: Option<&'static str>, level: Option<&'static str>| SeLinuxOptions {
            user: user.map(Into::into),
            role: None,
            kind: kind.map(Into::into),
            level: level.map(Into::into),
        };
        assert!(se_linux_matches(&entry, &options(None, Some("container_t"), Some("s0:c1,c2"))));
        assert!(se_linux_matches(&entry, &options(Some(""), None, None)), "empty is unset");
        assert!(!se_linux_matches(&entry, &options(Some("system_u"), Some("container_t"), None)));
        assert!(!se_linux_matches(&entry, &options(None, Some("spc_t"), None)));
        assert_eq!(se_linux_set(&options(Some("system_u"), Some("spc_t"), None)), "`user: system_u`, `type: spc_t`");
        assert_eq!(se_linux_entry(&entry), "{type: container_t, level: *}");
    }
}
