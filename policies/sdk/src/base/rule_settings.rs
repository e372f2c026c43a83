//! What a rule's settings are: a type serde reads, with defaults, and the
//! checks serde cannot make ([`RuleSettings`]); and the error that names
//! the key a setting is refused for ([`SettingsError`]). The shared
//! settings blocks several rules embed (GPU resources, taints, label
//! requirements) are checked with it at every layer.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A settings problem, naming the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    /// The offending key (`maxGpusPerWorker`, `allowedRuntimeClasses[1]`), if any.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl SettingsError {
    /// A problem with one key.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> SettingsError {
        SettingsError { key: Some(key.into()), message: message.into() }
    }

    /// A problem with the settings as a whole.
    pub fn whole(message: impl Into<String>) -> SettingsError {
        SettingsError { key: None, message: message.into() }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "setting `{k}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SettingsError {}

/// A rule's own settings: a serde struct with `rename_all = "camelCase"`,
/// `deny_unknown_fields` and `default`, whose [`Default`] is the documented
/// defaults.
pub trait RuleSettings: DeserializeOwned + Serialize + Default + 'static {
    /// Checks values serde cannot: contradictions, empty lists, bad patterns.
    fn validate(&self) -> Result<(), SettingsError> {
        Ok(())
    }

    /// Checks what depends on the DRA device classes that are GPUs, the
    /// shared `gpuDeviceClasses` (`classes`, patterns as written): a device
    /// class a rule's own setting maps that is no GPU class, or the reverse.
    fn validate_gpu_classes(&self, classes: &[&str]) -> Result<(), SettingsError> {
        let _ = classes;
        Ok(())
    }

    /// Whether the rule, so configured, judges workloads of `kind` (a kind
    /// name: `Pod`, `ReplicaSet`) when its webhook rules send them. A rule
    /// whose settings choose its kinds (`model-provenance`'s `kinds`) says
    /// which: an UPDATE keeps a violation its old object had inside a pod
    /// template the update makes controllers build from only when the rule
    /// judges none of what they build.
    fn judges_kind(&self, kind: &str) -> bool {
        let _ = kind;
        true
    }

    /// Whether [`RuleSettings::validate`] refuses the defaults: the rule
    /// has no safe default and must be configured (`trusted-sources` must
    /// be told which registries to trust). [`check_defaults`] holds every
    /// rule to what it says here.
    const REQUIRES_SETTINGS: bool = false;

    /// Whether the rule judges containers one by one and leaves alone those
    /// whose image the shared `exemptImages` lists (asking
    /// `Request::exempt_container`, or `ExemptGpus` for whether a pod
    /// holds GPUs). A rule that counts what whole pods hold does not, and
    /// refuses the setting rather than ignore it.
    const EXEMPTS_IMAGES: bool = false;

    /// Why a rule that does not exempt images refuses `exemptImages`.
    const NO_EXEMPT_IMAGES_BECAUSE: &'static str =
        "this rule judges whole pods, not containers one by one, so it cannot leave a container out by its image";
}
