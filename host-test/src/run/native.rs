//! The rules linked natively: the third evaluation next to the module and
//! the component.

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// Every rule under `policies/`, linked natively, in name order.
pub static RULES: &[aigov_sdk::NativePolicy] = aigov_bundle::AIGOV_RULES;

/// The natively linked rule named `name`.
pub fn rule(name: &str) -> Option<&'static aigov_sdk::NativePolicy> {
    RULES.iter().find(|r| r.metadata.name == name)
}

/// The example settings of rule `name` (YAML text), for a rule whose
/// defaults it refuses: `host-test/settings/<name>.yaml`, built in.
pub fn example_settings(name: &str) -> Option<&'static str> {
    EXAMPLE_SETTINGS.iter().find(|(rule, _)| *rule == name).map(|(_, text)| *text)
}

/// The settings a deployment of `rule` starts from: its defaults, with its
/// example settings (if it has any) over them, as JSON.
pub fn deployable_settings(rule: &aigov_sdk::NativePolicy) -> anyhow::Result<serde_json::Value> {
    let mut settings = (rule.default_settings)();
    let Some(text) = example_settings(rule.metadata.name) else { return Ok(settings) };
    let example: serde_json::Value =
        serde_norway::from_str(text).map_err(|e| anyhow::anyhow!("host-test/settings/{}.yaml: {e}", rule.metadata.name))?;
    let (Some(into), Some(from)) = (settings.as_object_mut(), example.as_object()) else {
        anyhow::bail!("host-test/settings/{}.yaml is not an object", rule.metadata.name);
    };
    for (k, v) in from {
        into.insert(k.clone(), v.clone());
    }
    Ok(settings)
}

/// What a generated policy of `rule` writes of `settings`: without the
/// keys whose value is their default, as long as leaving each out changes
/// nothing the rule reads ([`aigov_sdk::Handler::effective_settings`]: a
/// default may follow another key, as `workload-security`'s do `level`).
/// The module pinned beside the settings holds the defaults, so a key left
/// out reads as its default: leaving them out changes nothing but the
/// bytes Kubewarden sends, and a fresh instance reads, with every request
/// (BENCHMARKS.md, "Settings spelt out"). Settings the rule refuses, or
/// anything but an object, are kept whole.
pub fn without_defaults(rule: &aigov_sdk::NativePolicy, settings: &serde_json::Value) -> serde_json::Value {
    let effective = |v: &serde_json::Value| (rule.effective_settings)(&v.to_string()).ok();
    let defaults = (rule.default_settings)();
    let mut out = settings.clone();
    let (Some(whole), Some(keys)) = (effective(settings), settings.as_object()) else { return out };
    for (key, value) in keys {
        if defaults.get(key) != Some(value) {
            continue;
        }
        let mut fewer = out.clone();
        if let Some(map) = fewer.as_object_mut() {
            map.remove(key);
        }
        if effective(&fewer).as_ref() == Some(&whole) {
            out = fewer;
        }
    }
    out
}

/// The settings a generated policy of `rule` carries: its
/// [`deployable_settings`] [`without_defaults`]: `{}`, or the example
/// lists of a rule that refuses its defaults.
pub fn written_settings(rule: &aigov_sdk::NativePolicy) -> anyhow::Result<serde_json::Value> {
    Ok(without_defaults(rule, &deployable_settings(rule)?))
}

/// The names of every rule.
pub fn names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.metadata.name)
}

/// The bundle of every rule, linked natively.
pub static BUNDLE: aigov_sdk::NativePolicy = aigov_bundle::AIGOV_POLICY;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_default_that_follows_another_key_is_kept() {
        let rule = rule("workload-security").unwrap();
        // `forbidRootUser` left out follows `requireRunAsNonRoot`: written
        // out it is `true`, its default, yet leaving it out here makes it
        // `false`.
        let given = json!({"requireRunAsNonRoot": false, "forbidRootUser": true});
        assert_eq!(without_defaults(rule, &given), given);
        let given = json!({"requireRunAsNonRoot": true, "forbidRootUser": true, "forbidPrivileged": true});
        assert_eq!(without_defaults(rule, &given), json!({}));
        let refused = json!({"requireRunAsNonRoot": "yes", "forbidRootUser": true});
        assert_eq!(without_defaults(rule, &refused), refused);
    }
}
