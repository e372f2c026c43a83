//! Settings a team edited in a rule's own policy, carried into the bundle.
//!
//! A team starts with the overlay, one policy per rule, and edits each
//! rule's `spec.settings` in `<rule>/cluster-admission-policy.yaml`. When
//! it switches to the bundle, the bundle's policy must carry those
//! settings, not the defaults: regenerating reads each rule's own policy
//! file, and what its `spec.settings` say becomes the rule's settings for
//! every file written, the bundle's included.

use std::path::Path;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::run::native;
use crate::run::settings::{Contents, read_file};

use super::Packaged;

/// Where a rule's own policy is, relative to the output directory.
pub fn policy_path(rule: &str) -> String {
    format!("{rule}/cluster-admission-policy.yaml")
}

/// Reads each rule's own policy under `dir`, if there is one, and gives
/// the rule the settings its `spec.settings` hold (over its defaults).
/// Returns the rules whose settings differ from what aigov writes without
/// them. Settings the rule refuses stop the regeneration: they would stop
/// the bundle's policy from loading.
pub fn carry(dir: &Path, rules: &mut [Packaged]) -> Result<Vec<String>> {
    let mut carried = Vec::new();
    for r in rules.iter_mut() {
        let Some(rule) = native::rule(&r.name) else { continue };
        let path = dir.join(policy_path(&r.name));
        if !path.is_file() {
            continue;
        }
        let Contents::Policies(policies) = read_file(&path)? else {
            bail!("{}: not a policy file; move it away, or regenerate into another directory", path.display());
        };
        let Some(policy) = policies.into_iter().find(|p| p.rule.metadata.name == r.name) else {
            bail!("{}: holds no policy of `{}`; move it away, or regenerate into another directory", path.display(), r.name);
        };
        let answer = (rule.validate_settings)(policy.settings.to_string().as_bytes());
        if !answer.valid {
            bail!(
                "{}: `{}` refuses its spec.settings: {}; fix them (`aigov settings check {}`) and regenerate",
                path.display(),
                r.name,
                answer.message.unwrap_or_default(),
                path.display()
            );
        }
        let mut settings = (rule.default_settings)();
        if let (Some(into), Value::Object(edited)) = (settings.as_object_mut(), policy.settings) {
            into.extend(edited);
        }
        let before = r.written_settings();
        r.settings = settings;
        if r.written_settings() != before {
            carried.push(r.name.clone());
        }
    }
    Ok(carried)
}
