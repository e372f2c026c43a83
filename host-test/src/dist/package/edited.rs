//! Settings a team edited in a rule's own policy, carried into the bundle,
//! and edits that leave a policy meaning what aigov writes.
//!
//! A team starts with the overlay, one policy per rule, and edits each
//! rule's `spec.settings` in `<rule>/cluster-admission-policy.yaml` (and
//! may uncomment its `spec.mode`). When it switches to the bundle, the
//! bundle's policy must carry those settings, not the defaults:
//! regenerating reads each rule's own policy file, and what its
//! `spec.settings` say becomes the rule's settings for every file written,
//! the bundle's included; its `spec.mode` is kept in it, and in
//! `policies.yml` (the bundle's own `spec.mode` in the bundle's).
//!
//! Since those edits are carried, a policy file edited only there means
//! what aigov writes now ([`judge`]): it is no conflict, and is left as
//! the team wrote it.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::run::admission::parse_documents;
use crate::run::native;
use crate::run::settings::{Contents, read_file};

use super::Packaged;
use super::policy::BUNDLE_DIR;
use super::protected::Edited;

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
                crate::run::settings::explain_refusal(&answer.message.unwrap_or_default(), "spec.mode"),
                path.display()
            );
        }
        let before = (r.written_settings(), r.mode.clone());
        r.settings = over_defaults(rule, &policy.settings);
        r.mode = policy.mode;
        if (r.written_settings(), r.mode.clone()) != before {
            carried.push(r.name.clone());
        }
    }
    Ok(carried)
}

/// The bundle's `spec.mode`, as its policy under `dir` sets it.
pub fn carry_bundle_mode(dir: &Path, bundle: &mut Packaged) -> Result<()> {
    let path = dir.join(BUNDLE_DIR).join("cluster-admission-policy.yaml");
    if !path.is_file() {
        return Ok(());
    }
    if let Contents::Policies(policies) = read_file(&path)?
        && let Some(policy) = policies.into_iter().find(|p| native::is_bundle(p.rule))
    {
        bundle.mode = policy.mode;
    }
    Ok(())
}

/// `settings` over `rule`'s defaults: what the rule runs with.
pub fn over_defaults(rule: &aigov_sdk::NativePolicy, settings: &Value) -> Value {
    let mut out = (rule.default_settings)();
    if let (Some(into), Some(given)) = (out.as_object_mut(), settings.as_object()) {
        into.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out
}

/// What to do with a policy file a team edited since aigov wrote it,
/// `current` its bytes, `new` what aigov writes now, `given` the rules
/// whose settings `--settings` gives.
///
/// Its edits are carried into `new` (settings and mode, [`carry`]), so
/// when it parses to `new` but for comments and layout, and for keys
/// written at their default value, it means what aigov writes: it is left
/// as the team wrote it ([`Edited::Same`]). When it differs from `new`
/// only in the settings of rules `--settings` gives, those win
/// ([`Edited::Superseded`]). Any other edit (or a file that no longer
/// parses) is a conflict.
pub fn judge(relative: &str, current: &[u8], new: &str, given: &BTreeSet<String>) -> Edited {
    let Some(dir) = relative.strip_suffix("/cluster-admission-policy.yaml") else { return Edited::Conflict };
    let parse = |text: &str| parse_documents(text).ok().filter(|d| d.len() == 1).and_then(|mut d| d.pop());
    let (Some(mut current), Some(mut new)) = (std::str::from_utf8(current).ok().and_then(parse), parse(new)) else {
        return Edited::Conflict;
    };
    let take = |doc: &mut Value| doc.get_mut("spec").and_then(Value::as_object_mut).and_then(|s| s.remove("settings"));
    let (was, now) = (take(&mut current).unwrap_or(Value::Null), take(&mut new).unwrap_or(Value::Null));
    if current != new {
        return Edited::Conflict;
    }
    // Each rule's settings, over its defaults, by rule.
    let by_rule = |settings: &Value| -> Vec<(String, Value)> {
        if dir == BUNDLE_DIR {
            let rules = settings.get("rules").and_then(Value::as_object).cloned().unwrap_or_default();
            rules
                .into_iter()
                .map(|(name, s)| {
                    let full = native::rule(&name).map_or(s.clone(), |rule| over_defaults(rule, &s));
                    (name, full)
                })
                .collect()
        } else {
            let full = native::rule(dir).map_or(settings.clone(), |rule| over_defaults(rule, settings));
            vec![(dir.to_string(), full)]
        }
    };
    let (was, now) = (by_rule(&was), by_rule(&now));
    if was == now {
        return Edited::Same;
    }
    let names = |v: &[(String, Value)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let others = |v: &[(String, Value)]| v.iter().filter(|(n, _)| !given.contains(n)).cloned().collect::<Vec<_>>();
    if names(&was) == names(&now) && others(&was) == others(&now) { Edited::Superseded } else { Edited::Conflict }
}
