//! The rules linked natively: the third evaluation next to the module and
//! the component.

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// Every rule under `policies/`, linked natively, in name order.
pub static RULES: &[aigov_sdk::NativePolicy] = aigov_bundle::AIGOV_RULES;

/// The natively linked rule named `name`.
pub fn rule(name: &str) -> Option<&'static aigov_sdk::NativePolicy> {
    RULES.iter().find(|r| r.metadata.name == name)
}

/// Which names a command that takes a rule name accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// The rules only.
    Rules,
    /// The rules and the bundle, `aigov-bundle`.
    RulesAndBundle,
}

/// The rule called `name` (or, where `names` allows it, the bundle): the
/// one lookup of a rule name every command makes, so that a misspelt name
/// is answered the same way everywhere, with the valid names and the
/// closest one ([`unknown`]).
pub fn lookup(name: &str, names: Names) -> anyhow::Result<&'static aigov_sdk::NativePolicy> {
    if names == Names::RulesAndBundle && name == BUNDLE.metadata.name {
        return Ok(&BUNDLE);
    }
    rule(name).ok_or_else(|| unknown(name, names))
}

/// Whether `policy` is the bundle.
pub fn is_bundle(policy: &aigov_sdk::NativePolicy) -> bool {
    std::ptr::eq(policy, &BUNDLE)
}

/// The error for a name that is no rule: the closest valid name, if one
/// is close, and every valid name.
pub fn unknown(name: &str, names: Names) -> anyhow::Error {
    let mut valid: Vec<&str> = self::names().collect();
    if names == Names::RulesAndBundle {
        valid.push(BUNDLE.metadata.name);
    }
    let hint = match closest(name, &valid) {
        Some(near) => format!(": did you mean `{near}`?"),
        None => String::new(),
    };
    let bundle = match names {
        Names::RulesAndBundle => format!(", and `{}` (every rule in one artifact)", BUNDLE.metadata.name),
        Names::Rules => String::new(),
    };
    anyhow::anyhow!(
        "no rule named `{name}`{hint} (rules: {}{bundle}; `aigov rules` describes them)",
        self::names().collect::<Vec<_>>().join(", ")
    )
}

/// The name of `valid` closest to `name` by edit distance, if it is close
/// enough to be a misspelling (a third of its letters, at least 2).
pub fn closest<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    valid.iter().map(|v| (edit_distance(name, v), *v)).filter(|(d, _)| *d <= limit).min_by_key(|(d, _)| *d).map(|(_, v)| v)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = i;
        let mut next = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let left = next.last().copied().unwrap_or(usize::MAX);
            let cost = diagonal + usize::from(ca != *cb);
            next.push(cost.min(above.saturating_add(1)).min(left.saturating_add(1)));
            diagonal = above;
        }
        row = next;
    }
    row.last().copied().unwrap_or_default()
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
    fn a_misspelt_name_gets_the_closest_and_every_valid_one() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        let e = lookup("gpu-runtime-clas", Names::Rules).err().unwrap().to_string();
        assert!(e.starts_with("no rule named `gpu-runtime-clas`: did you mean `gpu-runtime-class`? (rules: "), "{e}");
        assert!(e.contains("exec-guard") && !e.contains("aigov-bundle"), "{e}");
        let e = lookup("aigov-bundel", Names::RulesAndBundle).err().unwrap().to_string();
        assert!(e.contains("did you mean `aigov-bundle`?") && e.contains("and `aigov-bundle` (every rule in one artifact)"), "{e}");
        let e = lookup("nothing-like-it-at-all", Names::RulesAndBundle).err().unwrap().to_string();
        assert!(!e.contains("did you mean"), "{e}");
        assert!(lookup("aigov-bundle", Names::Rules).is_err(), "the bundle only where a command takes it");
        assert!(is_bundle(lookup("aigov-bundle", Names::RulesAndBundle).unwrap()));
        assert_eq!(lookup("exec-guard", Names::Rules).unwrap().metadata.name, "exec-guard");
    }

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
