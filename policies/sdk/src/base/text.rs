//! Message formatting shared by rules, so every rule words lists the same way.

/// `` `a`, `b`, `c` ``.
pub fn quoted<S: AsRef<str>>(values: &[S]) -> String {
    values.iter().map(|v| format!("`{}`", v.as_ref())).collect::<Vec<_>>().join(", ")
}

/// `` `a` `` for one value, `` one of `a`, `b`, `c` `` for several.
pub fn one_of<S: AsRef<str>>(values: &[S]) -> String {
    match values {
        [one] => format!("`{}`", one.as_ref()),
        _ => format!("one of {}", quoted(values)),
    }
}

/// `"1 GPU"`, `"4 GPUs"`: a count with its noun, pluralised with `s`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A string as a YAML value a user can paste into a manifest: as it is,
/// or double-quoted where YAML would read it as something else. Kubernetes
/// reads manifests as YAML 1.1, where `true`, `yes`, `on`, `y` (in any
/// case), `null`, `~` and anything starting like a number are not strings:
/// `nodeSelector: {nvidia.com/gpu.present: true}` is refused by the API
/// server, `"true"` is what was meant.
pub fn yaml_value(s: &str) -> std::borrow::Cow<'_, str> {
    const NOT_STRINGS: [&str; 11] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", ""];
    let plain = !NOT_STRINGS.iter().any(|w| s.eq_ignore_ascii_case(w))
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if plain {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_counts() {
        assert_eq!(quoted(&["a", "b"]), "`a`, `b`");
        assert_eq!(one_of(&["nvidia"]), "`nvidia`");
        assert_eq!(one_of(&["a", "b", "c"]), "one of `a`, `b`, `c`");
        assert_eq!(count(1, "GPU"), "1 GPU");
        assert_eq!(count(8, "GPU"), "8 GPUs");
    }

    #[test]
    fn yaml_values_that_would_not_read_as_strings_are_quoted() {
        for plain in ["team-a", "nvidia-gpu", "H100", "NVIDIA-A100-SXM4-80GB", "gpu.nvidia.com"] {
            assert_eq!(yaml_value(plain), plain);
        }
        for (value, quoted) in [("true", r#""true""#), ("Yes", r#""Yes""#), ("1", r#""1""#), ("1e3", r#""1e3""#), ("", r#""""#)] {
            assert_eq!(yaml_value(value), quoted);
        }
        assert_eq!(yaml_value("a: b"), r#""a: b""#);
        assert_eq!(yaml_value(r#"say "hi""#), r#""say \"hi\"""#);
    }
}
