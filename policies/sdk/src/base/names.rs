//! Kubernetes' syntax for names, label keys and label values, so settings
//! that can never match an object are refused when they are written, and
//! values a rule writes into an object are ones the API server accepts; and
//! names the node reads its own way (sysctls).

use std::borrow::Cow;

/// How a label name or value must look.
pub const NAME_RULE: &str = "use at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit";

/// A label value, or the name part of a label key: at most 63 characters,
/// letters, digits, `-`, `_` and `.`, beginning and ending with a letter or
/// digit. (A label value may also be empty; use [`label_value`].)
pub fn name_part(s: &str) -> Result<(), String> {
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let ok = s.len() <= 63
        && ends_ok(s.chars().next())
        && ends_ok(s.chars().next_back())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok { Ok(()) } else { Err(NAME_RULE.into()) }
}

/// A label value: empty, or a [`name_part`].
pub fn label_value(s: &str) -> Result<(), String> {
    if s.is_empty() { Ok(()) } else { name_part(s) }
}

/// A lowercase RFC 1123 DNS subdomain (`opencost.io`, a RuntimeClass or
/// Namespace name... ): at most 253 characters, dot-separated parts of
/// lowercase letters, digits and `-`, alphanumeric at both ends.
pub fn dns_subdomain(s: &str) -> Result<(), String> {
    let part_ok = |p: &str| {
        let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        p.len() <= 63
            && alnum(p.chars().next())
            && alnum(p.chars().next_back())
            && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !s.is_empty() && s.len() <= 253 && s.split('.').all(part_ok) {
        Ok(())
    } else {
        Err("use a lowercase DNS subdomain name: at most 253 lowercase letters, digits, `-` and `.`, beginning and ending with a letter or digit".into())
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name part.
pub fn label_key(key: &str) -> Result<(), String> {
    match key.split_once('/') {
        None => name_part(key),
        Some((prefix, name)) => {
            if dns_subdomain(prefix).is_err() {
                return Err(format!("the prefix `{prefix}` must be a lowercase DNS subdomain such as `example.com`"));
            }
            if name.is_empty() {
                return Err("the name after `/` is empty".into());
            }
            name_part(name)
        }
    }
}

/// A wildcard pattern (see [`crate::Glob`]) for label values or names
/// (`NVIDIA-A10*`, `Tesla-?4`): refused when no label value can match it, so
/// a typo (`Tesla T4`) is caught when the setting is written. Characters
/// other than `*` and `?` must be ones label values use; a pattern without
/// wildcards must be a whole [`name_part`].
pub fn label_value_pattern(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("must not be empty".into());
    }
    if !p.contains(['*', '?']) {
        return name_part(p);
    }
    match p.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '*' | '?'))) {
        Some(c) => Err(format!("`{c}` never appears in a label value: {NAME_RULE}")),
        None => Ok(()),
    }
}

/// `text` made into a valid label value: letters, digits, `-`, `_` and
/// `.` kept, everything else replaced by `-`, ends trimmed to a letter or
/// digit, at most 63 characters. `jane.doe@example.com` becomes
/// `jane.doe-example.com`, `system:serviceaccount:ci:deployer` becomes
/// `system-serviceaccount-ci-deployer`.
pub fn to_label_value(text: &str) -> String {
    let mapped: String = text.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' }).collect();
    let mut out: String = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric()).chars().take(63).collect();
    while out.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        out.pop();
    }
    out
}

/// A sysctl name as the kubelet reads it (component-helpers'
/// `sysctl.NormalizeName`, before 1.28 the kubelet's
/// `convertSysctlVariableToDotsSeparator`): the API server accepts `/` as
/// the separator, and when the first separator is `/`, every `/` and `.`
/// are swapped, so `kernel/msgmax` is `kernel.msgmax` and
/// `net/ipv4/conf/eno2.100/rp_filter` is `net.ipv4.conf.eno2/100.rp_filter`.
/// A name whose first separator is `.`, or that has none, is read as
/// written (`net.ipv4.conf.eno2/100.rp_filter` keeps its `/`). The kubelet
/// reads the names in its allowlist the same way, so a pattern written
/// with `/` is read with this too.
pub fn sysctl_name(name: &str) -> Cow<'_, str> {
    if name.chars().find(|c| matches!(c, '.' | '/')) != Some('/') {
        return Cow::Borrowed(name);
    }
    Cow::Owned(
        name.chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_syntax() {
        for good in ["team", "opencost.io/team", "a", "A_b.c-1", "kubernetes.io/x", "a-b.c-d/e"] {
            assert!(label_key(good).is_ok(), "{good}");
        }
        for bad in ["-team", "team-", "te am", "/team", "Foo.io/team", "a..b/x", "a/b/c", "ünï", "x/"] {
            assert!(label_key(bad).is_err(), "{bad}");
        }
        assert!(name_part(&"a".repeat(63)).is_ok());
        assert!(name_part(&"a".repeat(64)).is_err());
        assert!(label_value("").is_ok());
        assert!(dns_subdomain(&format!("{}.io", "a".repeat(61))).is_ok());
        assert!(dns_subdomain("nvidia").is_ok());
        assert!(dns_subdomain("NVIDIA ").is_err());
        assert!(dns_subdomain("").is_err());
        assert!(dns_subdomain("a..b").is_err());
    }

    #[test]
    fn value_patterns() {
        for good in ["Tesla-T4", "NVIDIA-A10*", "*H100*", "?", "*"] {
            assert!(label_value_pattern(good).is_ok(), "{good}");
        }
        for bad in ["", "Tesla T4", "*H100 *", "-x", "NVIDIA/A10*"] {
            assert!(label_value_pattern(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sysctl_names_as_the_kubelet_reads_them() {
        for (written, read) in [
            ("kernel.msgmax", "kernel.msgmax"),
            ("kernel/msgmax", "kernel.msgmax"),
            ("net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"),
            ("net.ipv4.conf.eno2/100.rp_filter", "net.ipv4.conf.eno2/100.rp_filter"),
            ("kernel/shm_rmid_forced", "kernel.shm_rmid_forced"),
            ("vm", "vm"),
            ("", ""),
            ("/kernel", ".kernel"),
            // Patterns are read the same way.
            ("kernel/*", "kernel.*"),
            ("*", "*"),
        ] {
            assert_eq!(sysctl_name(written), read, "{written}");
        }
        assert!(matches!(sysctl_name("kernel.msgmax"), Cow::Borrowed(_)), "nothing copied for a dotted name");
    }

    #[test]
    fn label_values_from_user_names() {
        assert_eq!(to_label_value("jane.doe@example.com"), "jane.doe-example.com");
        assert_eq!(to_label_value("system:serviceaccount:ci:deployer"), "system-serviceaccount-ci-deployer");
        assert_eq!(to_label_value("-x-"), "x");
        assert_eq!(to_label_value("ünï"), "n");
        assert_eq!(to_label_value("@@"), "");
        let long = to_label_value(&format!("{}.{}", "a".repeat(62), "b".repeat(10)));
        assert_eq!(long.len(), 62, "trailing `.` after the cut is trimmed");
        assert!(name_part(&long).is_ok());
    }
}
