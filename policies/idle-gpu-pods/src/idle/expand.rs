//! Expansion of shell words against what is known of the variables:
//! parameters (`$NAME`, `${NAME:-default}`, the positional parameters and
//! `"$@"`), field splitting of unquoted expansions, and the integer
//! arithmetic of `$((...))`. A value that cannot be known at admission
//! expands to `None`, never to a guess.

use super::super::shell::{Part, Word};
use super::run::Vars;

/// A variable's value: `Some(Some(v))` known, `Some(None)` set but unknown,
/// `None` when nothing says (it may come from the image or `envFrom`).
fn lookup<'v>(vars: &'v Vars, name: &str) -> Option<&'v Option<String>> {
    vars.get(name)
}

/// Forgets the positional parameters (`$1`, `$@`...): `shift` or `set --`
/// changed them.
pub(super) fn forget_positional(vars: &mut Vars) {
    vars.retain(|k, _| k != "#" && !k.parse::<u32>().is_ok_and(|n| n > 0));
}

/// The positional parameters `$1`...`$N`, when their number is known.
fn positional(vars: &Vars) -> Option<Vec<Option<String>>> {
    let n: usize = lookup(vars, "#")?.as_deref()?.parse().ok()?;
    if n > 4096 {
        return None;
    }
    Some((1..=n).map(|i| lookup(vars, &i.to_string()).cloned().flatten()).collect())
}

/// Expands a word into fields, as the shell does before running a command:
/// parameters and arithmetic replaced, unquoted expansions split on blanks.
/// A field is `None` when part of it cannot be known.
pub(super) fn expand(w: &Word, vars: &Vars) -> Vec<Option<String>> {
    let mut fields: Vec<Option<String>> = Vec::new();
    let mut cur: Option<Option<String>> = None;
    fn append(cur: &mut Option<Option<String>>, text: Option<&str>) {
        *cur = Some(match (cur.take(), text) {
            (None, t) => t.map(str::to_string),
            (Some(Some(mut s)), Some(t)) => {
                s.push_str(t);
                Some(s)
            }
            _ => None,
        });
    }
    // `"$@"` alone: one field per positional parameter, none when there are
    // none; `$@` is split further.
    if let Some(("@", quoted)) = alone(w) {
        let Some(params) = positional(vars) else { return vec![None] };
        for p in params {
            match (quoted, p) {
                (false, Some(p)) => fields.extend(p.split_whitespace().map(|f| Some(f.to_string()))),
                (_, p) => fields.push(p),
            }
        }
        return fields;
    }
    for part in &w.parts {
        match part {
            Part::Lit { text, .. } => append(&mut cur, Some(text)),
            Part::Unknown => append(&mut cur, None),
            Part::Arith { expr } => {
                let v = arith(expr, vars).map(|n| n.to_string());
                append(&mut cur, v.as_deref());
            }
            Part::Param { name, default, quoted } => {
                let value = param(name, default.as_ref(), vars);
                match (quoted, value) {
                    (true, v) => append(&mut cur, v.as_deref()),
                    (false, None) => append(&mut cur, None),
                    (false, Some(v)) => {
                        // Field splitting on blanks.
                        let starts_blank = v.starts_with(char::is_whitespace);
                        let ends_blank = v.ends_with(char::is_whitespace);
                        let pieces: Vec<&str> = v.split_whitespace().collect();
                        if pieces.is_empty() {
                            if starts_blank && cur.is_some() {
                                fields.extend(cur.take());
                            }
                            continue;
                        }
                        if starts_blank && cur.is_some() {
                            fields.extend(cur.take());
                        }
                        let n = pieces.len();
                        for (i, p) in pieces.into_iter().enumerate() {
                            append(&mut cur, Some(p));
                            if i + 1 < n || ends_blank {
                                fields.extend(cur.take());
                            }
                        }
                    }
                }
            }
        }
    }
    fields.extend(cur);
    fields
}

/// The parameter a word is made of, and whether it is quoted: `$!`,
/// `"$@"` (beside nothing but the empty text of the quotes).
pub(super) fn alone(w: &Word) -> Option<(&str, bool)> {
    let mut param = None;
    for p in &w.parts {
        match p {
            Part::Lit { text, .. } if text.is_empty() => {}
            Part::Param { name, default: None, quoted } if param.is_none() => param = Some((name.as_str(), *quoted)),
            _ => return None,
        }
    }
    param
}

/// A word expanded without field splitting (assignment values, defaults).
pub(super) fn expand_joined(parts: &[Part], vars: &Vars) -> Option<String> {
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Lit { text, .. } => out.push_str(text),
            Part::Unknown => return None,
            Part::Arith { expr } => out.push_str(&arith(expr, vars)?.to_string()),
            Part::Param { name, default, .. } => out.push_str(&param(name, default.as_ref(), vars)?),
        }
    }
    Some(out)
}

/// `$NAME` or `${NAME:-default}`.
fn param(name: &str, default: Option<&(bool, Vec<Part>)>, vars: &Vars) -> Option<String> {
    match (lookup(vars, name), default) {
        (Some(Some(v)), Some((true, d))) if v.is_empty() => expand_joined(d, vars),
        (Some(Some(v)), _) => Some(v.clone()),
        (Some(None), _) => None,
        // Unset here, but the image or `envFrom` may set it: not known,
        // whatever the default says.
        (None, _) => None,
    }
}

/// Integer arithmetic of `$((...))`: numbers, variables, `+ - * / %` and
/// parentheses; `None` for anything else or an overflow.
pub(super) fn arith(expr: &str, vars: &Vars) -> Option<i128> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Arith { t: tokens, i: 0, vars, depth: 0 };
    let v = p.sum()?;
    (p.i == p.t.len()).then_some(v)
}

struct Arith<'v> {
    t: Vec<char>,
    i: usize,
    vars: &'v Vars,
    depth: usize,
}

impl Arith<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }

    fn sum(&mut self) -> Option<i128> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == '+' { v.checked_add(r)? } else { v.checked_sub(r)? };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i128> {
        let mut v = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            v = match op {
                '*' => v.checked_mul(r)?,
                '/' => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i128> {
        match self.peek()? {
            '-' => {
                self.i += 1;
                self.unary()?.checked_neg()
            }
            '+' => {
                self.i += 1;
                self.unary()
            }
            '(' => {
                self.depth += 1;
                if self.depth > 32 {
                    return None;
                }
                self.i += 1;
                let v = self.sum()?;
                if self.peek()? != ')' {
                    return None;
                }
                self.i += 1;
                self.depth -= 1;
                Some(v)
            }
            c if c.is_ascii_digit() => {
                let mut n: i128 = 0;
                while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
                    n = n.checked_mul(10)?.checked_add(i128::from(d))?;
                    self.i += 1;
                }
                Some(n)
            }
            c if c == '$' || c.is_ascii_alphabetic() || c == '_' => {
                if c == '$' {
                    self.i += 1;
                }
                let mut name = String::new();
                while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    name.push(c);
                    self.i += 1;
                }
                let value = lookup(self.vars, &name)?.as_deref()?;
                value.trim().parse::<i128>().ok()
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let v = Vars::new();
        assert_eq!(arith("60*60*24", &v), Some(86400));
        assert_eq!(arith(" (1 + 2) * 3 ", &v), Some(9));
        assert_eq!(arith("7 / 2", &v), Some(3));
        assert_eq!(arith("-5 + 10 % 3", &v), Some(-4));
        assert_eq!(arith("1 / 0", &v), None);
        assert_eq!(arith("X + 1", &v), None);
        assert_eq!(arith("99999999999999999999999999999999999999999 * 10", &v), None);
        assert_eq!(arith("1 < 2", &v), None, "comparisons are not read");
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(arith(&deep, &v), None);
    }
}
