//! Settings of `mig-profiles`.

use std::collections::BTreeMap;

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

/// Where the profiles a namespace may use come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileSource {
    /// `allowedProfiles` in these settings.
    #[default]
    #[serde(rename = "settings")]
    Settings,
    /// The namespace's ResourceQuotas: a profile is allowed when a quota
    /// that covers the pod sets `requests.nvidia.com/mig-<profile>` above
    /// zero (as SUSE's `pod-mig-partitions` policy decides).
    #[serde(rename = "fromResourceQuota")]
    FromResourceQuota,
}

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// `settings` (default): the profiles of `allowedProfiles`;
    /// `fromResourceQuota`: the profiles the namespace's ResourceQuotas set.
    pub profile_source: ProfileSource,
    /// Namespace names (wildcards allowed) to the MIG profiles their pods
    /// may request (`1g.10gb`, `3g.*`); a namespace gets the profiles of
    /// every entry that matches it, and a namespace no entry matches may
    /// use none. Default: every namespace, every profile.
    pub allowed_profiles: BTreeMap<String, Vec<Glob>>,
    /// Whether one container may request slices of more than one MIG
    /// profile. Default off.
    pub allow_multiple_profiles: bool,
    /// Deprecated: DRA claims are always resolved, and the device classes
    /// that are GPUs are the shared `gpuDeviceClasses`. Still read:
    /// `gpuDeviceClasses` here replaces the shared key for this rule,
    /// `resolve: false` switches claim lookups off (see the README).
    #[serde(skip_serializing_if = "ResourceClaims::is_unset")]
    pub resource_claims: ResourceClaims,
    /// DRA device classes of MIG slices whose profile a request's selector
    /// pins (`device.attributes['gpu.nvidia.com'].profile == '1g.10gb'`, as
    /// NVIDIA's DRA driver publishes it). Default `mig.nvidia.com`.
    pub mig_device_classes: Vec<Glob>,
    /// DRA device classes that stand for one MIG profile each
    /// (`mig-1g10gb.example.com: 1g.10gb`). Default none.
    pub device_class_profiles: BTreeMap<String, String>,
    /// What a failed lookup (ResourceQuotas with `fromResourceQuota`, a
    /// resource claim) does: `deny` (default) or `allow`.
    pub on_lookup_error: OnLookupError,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            profile_source: ProfileSource::Settings,
            allowed_profiles: default_profiles(),
            allow_multiple_profiles: false,
            resource_claims: ResourceClaims::default(),
            mig_device_classes: vec![Glob::new("mig.nvidia.com")],
            device_class_profiles: BTreeMap::new(),
            on_lookup_error: OnLookupError::Deny,
        }
    }
}

fn default_profiles() -> BTreeMap<String, Vec<Glob>> {
    [("*".to_string(), vec![Glob::new("*")])].into_iter().collect()
}

/// The MIG profile of a resource name or profile pattern: the part after
/// `nvidia.com/mig-`, or the text itself.
pub fn profile_of(text: &str) -> &str {
    text.strip_prefix(super::MIG_PREFIX).unwrap_or(text)
}

/// Whether `p` is written like a MIG profile: `[<n>c.]<n>g.<n>gb`, then
/// optionally a suffix after `.` or `+` (`1g.10gb`, `1c.3g.40gb`,
/// `1g.10gb.me`, `1g.5gb.shared`).
pub fn is_profile(p: &str) -> bool {
    fn number(s: &str) -> Option<&str> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        (end > 0).then(|| s.get(end..)).flatten()
    }
    let rest = match number(p).and_then(|r| r.strip_prefix("c.")) {
        Some(r) => r,
        None => p,
    };
    let Some(rest) = number(rest).and_then(|r| r.strip_prefix("g.")) else { return false };
    let Some(rest) = number(rest).and_then(|r| r.strip_prefix("gb")) else { return false };
    rest.is_empty() || (rest.len() > 1 && (rest.starts_with('.') || rest.starts_with('+')))
}

impl RuleSettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.profile_source == ProfileSource::FromResourceQuota && self.allowed_profiles != default_profiles() {
            return Err(SettingsError::new(
                "allowedProfiles",
                "is not used with `profileSource: fromResourceQuota`, where the namespace's ResourceQuotas say which profiles it may use: remove it, or set `profileSource: settings`",
            ));
        }
        for (ns, profiles) in &self.allowed_profiles {
            let at = format!("allowedProfiles.{ns}");
            if ns.trim().is_empty() {
                return Err(SettingsError::new("allowedProfiles", "a namespace pattern must not be empty"));
            }
            if profiles.is_empty() {
                return Err(SettingsError::new(
                    at,
                    "is empty and allows nothing: a namespace no entry matches may use no MIG profile already, so remove the entry",
                ));
            }
            non_empty_patterns(&at, profiles)?;
            for (i, p) in profiles.iter().enumerate() {
                let profile = profile_of(p.as_str());
                if !p.as_str().contains(['*', '?']) && !is_profile(profile) {
                    return Err(SettingsError::new(
                        format!("{at}[{i}]"),
                        format!(
                            "`{}` is not a MIG profile: write profiles as NVIDIA names them, such as `1g.10gb` or `3g.40gb`",
                            p.as_str()
                        ),
                    ));
                }
            }
        }
        self.resource_claims.validate("resourceClaims")?;
        non_empty_patterns(&"migDeviceClasses", &self.mig_device_classes)?;
        for (class, profile) in &self.device_class_profiles {
            if !is_profile(profile) {
                return Err(SettingsError::new(
                    format!("deviceClassProfiles.{class}"),
                    format!("`{profile}` is not a MIG profile: write profiles as NVIDIA names them, such as `1g.10gb` or `3g.40gb`"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::{accepted, refused};

    #[test]
    fn defaults() {
        let s = accepted::<Settings>("{}");
        assert_eq!(s, Settings::default());
        assert_eq!(s.allowed_profiles["*"], [Glob::new("*")]);
        let q = accepted::<Settings>(r#"{"profileSource":"fromResourceQuota","onLookupError":"allow"}"#);
        assert_eq!(q.profile_source, ProfileSource::FromResourceQuota);
    }

    #[test]
    fn profiles() {
        for p in ["1g.10gb", "7g.80gb", "1c.3g.40gb", "1g.10gb.me", "1g.5gb+me", "2g.20gb.shared", "nvidia.com/mig-1g.10gb"] {
            assert!(is_profile(profile_of(p)), "{p}");
        }
        for p in ["gpu", "1g", "1g.10", "g.10gb", "1g.10gb.", "1g.10gbx", "amd.com/gpu", "3g.40GB"] {
            assert!(!is_profile(profile_of(p)), "{p}");
        }
    }

    #[test]
    fn settings_that_can_never_match_are_refused() {
        assert!(
            refused::<Settings>(r#"{"allowedProfiles":{"ml-*":["3g.40GB"]}}"#)
                .starts_with("setting `allowedProfiles.ml-*[0]`: `3g.40GB` is not a MIG profile")
        );
        assert!(refused::<Settings>(r#"{"allowedProfiles":{"ml-*":[]}}"#).starts_with("setting `allowedProfiles.ml-*`: is empty"));
        assert!(
            refused::<Settings>(r#"{"allowedProfiles":{"ml-*":[""]}}"#).starts_with("setting `allowedProfiles.ml-*[0]`: must not be empty")
        );
        assert!(
            refused::<Settings>(r#"{"allowedProfiles":{"":["1g.10gb"]}}"#).starts_with("setting `allowedProfiles`: a namespace pattern")
        );
        assert!(
            refused::<Settings>(r#"{"profileSource":"fromResourceQuota","allowedProfiles":{"ml":["1g.10gb"]}}"#)
                .starts_with("setting `allowedProfiles`: is not used")
        );
        assert!(refused::<Settings>(r#"{"profileSource":"quota"}"#).starts_with("setting `profileSource`"));
        assert!(Full::<Settings>::parse_valid(r#"{"allowedProfiles":{"ml":["nvidia.com/mig-1g.10gb","2g.*"]}}"#).is_ok());
        assert!(
            refused::<Settings>(r#"{"deviceClassProfiles":{"small.example.com":"small"}}"#)
                .starts_with("setting `deviceClassProfiles.small.example.com`: `small` is not a MIG profile")
        );
        assert!(refused::<Settings>(r#"{"migDeviceClasses":[""]}"#).starts_with("setting `migDeviceClasses[0]`"));
        let s = accepted::<Settings>(r#"{"resourceClaims":{"resolve":true}}"#);
        assert_eq!(s.mig_device_classes, [Glob::new("mig.nvidia.com")]);
    }
}
