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
}
