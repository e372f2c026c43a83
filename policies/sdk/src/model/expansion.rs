//! The kubelet's `$(VAR)` expansion of container `env` values, `command`
//! and `args` (`third_party/forked/golang/expansion`, `Expand`): `$$` is
//! an escaped `$`, `$(NAME)` a reference to a variable, and anything else,
//! an unclosed `$(` or a `$` before another character included, is text
//! as written. What a reference expands to is the caller's to say: in
//! `env`, the variables of `envFrom` and the `env` entries before it (the
//! last of a name winning, `env` over `envFrom`), then the service links;
//! a name none of them defines stays as written, `$(NAME)`. Expansion is
//! one pass: the text a reference brings in is not expanded again.

/// One piece of a value, as the kubelet's expansion reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'s> {
    /// Text the container gets as written (`$$` gives `$`).
    Text(&'s str),
    /// A reference, `$(NAME)`: the variable's name.
    Var(&'s str),
}

/// The pieces of `value`, in order. Adjacent text may come as several
/// pieces.
pub fn pieces(value: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        let (before, from) = rest.split_at(i);
        if !before.is_empty() {
            out.push(Piece::Text(before));
        }
        // `from` starts with the `$`.
        let after = from.get(1..).unwrap_or_default();
        match after.chars().next() {
            // A lone `$` at the end is kept.
            None => {
                out.push(Piece::Text(from));
                rest = "";
            }
            Some('$') => {
                out.push(Piece::Text("$"));
                rest = after.get(1..).unwrap_or_default();
            }
            Some('(') => {
                let inner = after.get(1..).unwrap_or_default();
                match inner.find(')') {
                    Some(close) => {
                        out.push(Piece::Var(inner.get(..close).unwrap_or_default()));
                        rest = inner.get(close + 1..).unwrap_or_default();
                    }
                    // Unclosed: `$(` is text, and scanning goes on after it.
                    None => {
                        out.push(Piece::Text(from.get(..2).unwrap_or_default()));
                        rest = inner;
                    }
                }
            }
            // `$` and the character after it, as written.
            Some(c) => {
                let end = 1 + c.len_utf8();
                out.push(Piece::Text(from.get(..end).unwrap_or_default()));
                rest = from.get(end..).unwrap_or_default();
            }
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// `value` expanded with `lookup` (`None`: the name is not defined, and the
/// reference stays as written), as the kubelet expands it.
pub fn expand<'v>(value: &str, mut lookup: impl FnMut(&str) -> Option<&'v str>) -> String {
    let mut out = String::new();
    for piece in pieces(value) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => match lookup(name) {
                Some(v) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<&'static str> {
        match name {
            "D" => Some("infinity"),
            "EMPTY" => Some(""),
            _ => None,
        }
    }

    #[test]
    fn as_the_kubelet_expands() {
        // Escapes, references, unknown names and unclosed ones, as `Expand` reads them.
        for (input, want) in [
            ("$(D)", "infinity"),
            ("x$(D)y", "xinfinityy"),
            ("$(D)$(D)", "infinityinfinity"),
            ("$$(D)", "$(D)"),
            ("$$$(D)", "$infinity"),
            ("$$$$(D)", "$$(D)"),
            ("$(NOPE)", "$(NOPE)"),
            ("$(EMPTY)x", "x"),
            ("$()", "$()"),
            ("$(D", "$(D"),
            ("$($(D)", "$($(D)"),
            ("$D", "$D"),
            ("$", "$"),
            ("x$", "x$"),
            ("$$", "$"),
            ("", ""),
            ("no references", "no references"),
        ] {
            assert_eq!(expand(input, env), want, "{input:?}");
        }
    }

    #[test]
    fn pieces_tell_text_from_references() {
        assert_eq!(pieces("Bearer $(TOKEN)"), [Piece::Text("Bearer "), Piece::Var("TOKEN")]);
        assert_eq!(pieces("$$(TOKEN)"), [Piece::Text("$"), Piece::Text("(TOKEN)")]);
        assert_eq!(pieces(" $(A) "), [Piece::Text(" "), Piece::Var("A"), Piece::Text(" ")]);
        assert!(pieces("").is_empty());
    }
}
