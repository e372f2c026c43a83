//! What a YAML error most likely means, in plain words, beside the
//! parser's line and column: a tab in the indentation, a value that needs
//! quotes (`*`, `{`, `: ` in it), a line indented wrong. Hand-edited
//! policies fail to parse for these few reasons far more often than for
//! any other, and the parser's own words ("mapping values are not allowed
//! in this context") do not say which.

/// The likely cause of YAML error `error` in `text`, naming the line,
/// when one of the common ones fits.
pub fn hint(text: &str, error: &anyhow::Error) -> Option<String> {
    let message = format!("{error:#}");
    let (line, column) = position(&message)?;
    let lines: Vec<&str> = text.lines().collect();
    // An error at the end of the text is reported on the line after it.
    let at = *lines.get(line.checked_sub(1)?).or(lines.last())?;
    let indent: String = at.chars().take_while(|c| c.is_whitespace()).collect();
    if indent.contains('\t') || at.chars().nth(column.saturating_sub(1)) == Some('\t') {
        return Some(format!(
            "likely cause: line {line} is indented with a tab; YAML indents with spaces only, so replace the tab with spaces"
        ));
    }
    let value = at.split_once(':').map(|(_, v)| v.trim());
    if message.contains("alias") || message.contains("unknown anchor") {
        return Some(format!(
            "likely cause: a value on line {line} starts with `*`, which YAML reads as a reference to an anchor: put it in quotes (`'*'`)"
        ));
    }
    if message.contains("flow mapping") || message.contains("flow sequence") {
        return Some(format!(
            "likely cause: a value starting with `{{` or `[` (line {}) is read as a mapping or a list and never closes: close it, or put the value in quotes",
            flow_start(&message).unwrap_or(line)
        ));
    }
    if message.contains("mapping values are not allowed") {
        if value.is_some_and(|v| v.contains(": ") && !v.starts_with(['\'', '"', '{', '['])) {
            return Some(format!(
                "likely cause: the value on line {line} holds `: `, which YAML reads as another key: put the value in quotes (`key: 'a: b'`)"
            ));
        }
        if let Some((above, text_above)) = previous(&lines, line) {
            let above_indent = text_above.len() - text_above.trim_start().len();
            if indent.len() > above_indent && text_above.split_once(':').is_some_and(|(_, v)| !v.trim().is_empty()) {
                return Some(format!(
                    "likely cause: line {line} is indented deeper than line {above}, whose value is already given: line it up with the keys beside it"
                ));
            }
        }
        return Some(format!("likely cause: line {line} holds a `: ` YAML cannot place: quote the value, or check the line's indentation"));
    }
    if message.contains("did not find expected key") || message.contains("block sequence entries are not allowed") {
        return Some(format!(
            "likely cause: line {line} is not indented as the keys beside it are: indent it by exactly as many spaces as they are"
        ));
    }
    if message.contains("cannot start any token") {
        let c = at.chars().nth(column.saturating_sub(1)).unwrap_or(' ');
        return Some(format!("likely cause: a value on line {line} starts with `{c}`, which YAML reserves: put the value in quotes"));
    }
    None
}

/// The first `at line L column C` of a parser's message.
fn position(message: &str) -> Option<(usize, usize)> {
    let rest = &message[message.find("at line ")? + "at line ".len()..];
    let (line, rest) = rest.split_once(" column ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}

/// The line a flow mapping or list starts on (`while parsing a flow mapping at line L`).
fn flow_start(message: &str) -> Option<usize> {
    let rest = &message[message.find("while parsing a flow")?..];
    position(rest).map(|(line, _)| line)
}

/// The last non-blank, non-comment line above `line` (1-based), with its number.
fn previous<'a>(lines: &[&'a str], line: usize) -> Option<(usize, &'a str)> {
    (1..line).rev().find_map(|n| {
        let text = *lines.get(n - 1)?;
        let t = text.trim();
        (!t.is_empty() && !t.starts_with('#')).then_some((n, text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> String {
        let e = crate::run::admission::parse_documents(text).unwrap_err();
        hint(text, &e).unwrap_or_default()
    }

    #[test]
    fn the_common_mistakes_are_named() {
        assert!(said("a:\n\tb: 1\n").contains("line 2 is indented with a tab"));
        assert!(said("spec:\n  settings:\n    allowedImages: [*]\n").contains("starts with `*`"));
        assert!(said("spec:\n  settings:\n    a: *x\n").contains("starts with `*`"));
        assert!(said("spec:\n  settings:\n    note: see: here\n").contains("the value on line 3 holds `: `"));
        assert!(said("spec:\n  settings:\n    sel: {a\n    b: 1\n").contains("(line 3) is read as a mapping or a list"));
        assert!(said("spec:\n  settings:\n    a: 1\n   b: 2\n").contains("line 4 is not indented as the keys beside it are"));
        assert!(said("spec:\n  settings:\n    a: 1\n      b: 2\n").contains("line 4 is indented deeper than line 3"));
        assert!(said("a: `x`\n").contains("starts with `` ` ``") || said("a: `x`\n").contains("which YAML reserves"));
    }
}
