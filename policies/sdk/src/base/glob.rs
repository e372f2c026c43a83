//! Shell-style wildcards for names in settings: `*` matches any run of
//! characters (including none), `?` exactly one; everything else literally.
//! `nvidia.com/mig-*`, `kube-*`, `system:serviceaccount:ci:*`.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A wildcard pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob(Cow<'static, str>);

impl Glob {
    /// A pattern from its text. Every string is a valid pattern.
    pub fn new(pattern: impl Into<Cow<'static, str>>) -> Glob {
        Glob(pattern.into())
    }

    /// The pattern text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` matches the whole pattern.
    ///
    /// Iterative with single-star backtracking: linear in practice, and no
    /// recursion, so hostile input cannot exhaust the stack. Kubernetes names
    /// are ASCII and match byte-wise without allocating; other text is
    /// compared character by character.
    pub fn matches(&self, text: &str) -> bool {
        matches(&self.0, text)
    }
}

/// Whether `text` matches the whole of `pattern` (see [`Glob::matches`]),
/// for a pattern held as text: nothing is copied to make a [`Glob`].
pub fn matches(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        wildcard(pattern.as_bytes(), text.as_bytes(), b'*', b'?', |a, b| a == b)
    } else {
        let p: Vec<char> = pattern.chars().collect();
        let t: Vec<char> = text.chars().collect();
        wildcard(&p, &t, '*', '?', |a, b| a == b)
    }
}

/// [`matches`], with ASCII letters matching either case (environment
/// variable names: `*_token` matches `API_TOKEN`), without upper-casing
/// copies of either.
pub fn matches_ignore_ascii_case(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        wildcard(pattern.as_bytes(), text.as_bytes(), b'*', b'?', |a, b| a.eq_ignore_ascii_case(&b))
    } else {
        let p: Vec<char> = pattern.chars().collect();
        let t: Vec<char> = text.chars().collect();
        wildcard(&p, &t, '*', '?', |a, b| a.eq_ignore_ascii_case(&b))
    }
}

fn wildcard<T: Copy + PartialEq>(p: &[T], t: &[T], star_sym: T, any_sym: T, same: impl Fn(T, T) -> bool) -> bool {
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(&c) if c == star_sym => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == any_sym || t.get(ti).is_some_and(|&x| same(c, x)) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..).is_some_and(|rest| rest.iter().all(|&c| c == star_sym))
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Glob::new)
    }
}

impl Serialize for Glob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Whether any pattern in `patterns` matches `text`.
pub fn any_match(patterns: &[Glob], text: &str) -> bool {
    patterns.iter().any(|p| p.matches(text))
}

/// Refuses empty patterns in a list setting: an empty namespace pattern
/// would exempt cluster-scoped objects without anyone meaning it. `key` is
/// written only into an error (`&format_args!(..)` builds one for free).
pub fn non_empty_patterns(key: &dyn fmt::Display, list: &[Glob]) -> Result<(), crate::base::rule_settings::SettingsError> {
    for (i, g) in list.iter().enumerate() {
        if g.as_str().trim().is_empty() {
            return Err(crate::base::rule_settings::SettingsError::new(format!("{key}[{i}]"), "must not be empty"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        let held = Glob::new(p.to_string()).matches(t);
        assert_eq!(held, matches(p, t), "`{p}` against `{t}`: the Glob and the text disagree");
        held
    }

    #[test]
    fn literals_and_wildcards() {
        assert!(m("nvidia.com/gpu", "nvidia.com/gpu"));
        assert!(!m("nvidia.com/gpu", "nvidia.com/gpus"));
        assert!(m("nvidia.com/mig-*", "nvidia.com/mig-1g.5gb"));
        assert!(m("nvidia.com/mig-*", "nvidia.com/mig-"));
        assert!(!m("nvidia.com/mig-*", "nvidia.com/gpu"));
        assert!(m("*", ""));
        assert!(m("kube-*", "kube-system"));
        assert!(m("*-system", "kube-system"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("pod-?", "pod-1"));
        assert!(!m("pod-?", "pod-12"));
        assert!(m("**", "anything"));
        assert!(!m("", "x"));
        assert!(m("", ""));
        assert!(m("équipe-?", "équipe-ü"), "non-ASCII compares by character");
        assert!(!m("équipe-?", "équipe-üü"));
    }

    #[test]
    fn either_case_matches_as_upper_casing_both_would() {
        for (p, t) in [
            ("*_token", "API_TOKEN"),
            ("*PASSWORD*", "db_password_file"),
            ("aws_secret_access_key", "AWS_Secret_Access_Key"),
            ("*_KEY", "API_KEYS"),
            ("?", "ü"),
            ("Ü*", "ü-x"),
            ("équipe-*", "ÉQUIPE-a"),
            ("pod-?", "POD-1"),
        ] {
            let upper = matches(&p.to_ascii_uppercase(), &t.to_ascii_uppercase());
            assert_eq!(matches_ignore_ascii_case(p, t), upper, "`{p}` against `{t}`");
        }
        assert!(matches_ignore_ascii_case("*_token", "API_TOKEN"));
        assert!(!matches_ignore_ascii_case("Ü*", "ü-x"), "only ASCII letters fold");
        assert!(!matches("*_token", "API_TOKEN"), "matches itself stays exact");
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let text = "a".repeat(10_000);
        assert!(!m(&format!("{}b", "*a".repeat(50)), &text));
        assert!(m(&"*a".repeat(50), &text));
    }
}
