//! Refusing YAML and JSON nested too deep to parse, in time linear in the
//! text, before the parsers see it.
//!
//! The YAML parser (libyaml, under `serde_norway`) looks, for every token,
//! at each flow collection (`[`, `{`) open around it, so n nested brackets
//! take time in n²: 100,000 of them (a 200 KB file) took 28 s before the
//! deserializer refused them, since it allows [`MAX_DEPTH`] levels, as
//! `serde_json` does (whose refusal a JSON file then met in the YAML parser
//! too). [`check`] refuses a text whose flow collections nest deeper than
//! that, in one pass and at most [`MAX_DEPTH`] more over any part of it, so
//! a hostile file cannot stall a scan.
//!
//! How. Outside flow collections YAML's syntax hangs on indentation (block
//! scalars, plain scalars over several lines), which only the parser itself
//! follows exactly. Inside one it does not: after a `[` or `{` that opens a
//! collection, where each quoted or plain scalar, comment, tag and anchor
//! starts and ends follows from the text alone ([`read_flow`], libyaml's
//! scanner rules for flow context). So each `[` and `{` of the text is taken
//! as one that may open a collection, and the text after it read as the
//! inside of one, counting depth: the bracket that truly opens a deep nest
//! is among them and read exactly as the parser reads it, so no quote,
//! comment or block scalar before it can hide it. A bracket in a comment or
//! a string is read the same way; the price is that a text in which such a
//! reading finds more than [`MAX_DEPTH`] brackets left open (more than 128
//! unclosed `[` in a string, say) is refused though the parser would take
//! it. A reading that comes between two tokens to a place another one
//! passed there at least as deep stops, since the rest would be the same:
//! no place is read more than [`MAX_DEPTH`] + 1 times.

/// The deepest nesting of flow collections accepted: the YAML
/// deserializer's and `serde_json`'s own limit, which refuse anything
/// deeper anyway.
pub const MAX_DEPTH: usize = 128;

/// Where a text nests too deep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep {
    /// Line of the bracket that opens level [`MAX_DEPTH`] + 1, from 1.
    pub line: usize,
    /// Its column, in characters, from 1.
    pub column: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "brackets (`[`, `{{`) nest more than {MAX_DEPTH} levels deep at line {}, column {}; the YAML and JSON parsers allow \
             {MAX_DEPTH}: flatten the document",
            self.line, self.column
        )
    }
}

impl std::error::Error for TooDeep {}

/// Refuses `text` when its flow collections (`[...]`, `{...}`, all of JSON)
/// nest deeper than [`MAX_DEPTH`]; in time linear in its length.
pub fn check(text: &str) -> Result<(), TooDeep> {
    // libyaml stops at the first character it cannot read: nothing after
    // it is parsed.
    let end = text.char_indices().find(|(_, c)| !readable(*c)).map_or(text.len(), |(i, _)| i);
    let bytes = text.as_bytes().get(..end).unwrap_or_default();
    // For each place a reading was at between two tokens: its depth there
    // plus one (0: none was).
    let mut seen = vec![0u8; bytes.len() + 1];
    for (at, b) in bytes.iter().enumerate() {
        if matches!(b, b'[' | b'{')
            && seen.get(at) == Some(&0)
            && let Some(deep) = read_flow(bytes, at, &mut seen)
        {
            let before = text.get(..deep).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            return Err(TooDeep { line, column });
        }
    }
    Ok(())
}

/// The characters libyaml reads (its reader refuses the rest).
fn readable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// The length of the line break at `i` (`\r`, `\n`, NEL, LS, PS, as libyaml
/// counts them), or 0.
fn line_break(bytes: &[u8], i: usize) -> usize {
    match (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2)) {
        (Some(b'\r' | b'\n'), _, _) => 1,
        (Some(0xC2), Some(0x85), _) => 2,
        (Some(0xE2), Some(0x80), Some(0xA8 | 0xA9)) => 3,
        _ => 0,
    }
}

fn blank(bytes: &[u8], i: usize) -> bool {
    matches!(bytes.get(i), Some(b' ' | b'\t'))
}

/// A blank, a line break or the end.
fn blank_or_end(bytes: &[u8], i: usize) -> bool {
    i >= bytes.len() || blank(bytes, i) || line_break(bytes, i) > 0
}

/// Whether `i` starts a line (libyaml's column 0).
fn line_start(bytes: &[u8], i: usize) -> bool {
    i == 0
        || matches!(bytes.get(i - 1), Some(b'\r' | b'\n'))
        || (i >= 2 && line_break(bytes, i - 2) == 2)
        || (i >= 3 && line_break(bytes, i - 3) == 3)
}

/// `---` or `...` at the start of a line, then a blank, a break or the end.
fn document_marker(bytes: &[u8], i: usize) -> bool {
    line_start(bytes, i) && matches!(bytes.get(i..i + 3), Some(b"---" | b"...")) && blank_or_end(bytes, i + 3)
}

/// Characters of a tag (libyaml's URI characters; `,`, `[` and `]` too
/// in a verbatim `!<...>` tag).
fn tag_char(b: u8, verbatim: bool) -> bool {
    b.is_ascii_alphanumeric() || b"-_;/?:@&=+$.%!~*'()".contains(&b) || (verbatim && b",[]".contains(&b))
}

/// Reads the text from `start` (a `[` or `{`) as the inside of the flow
/// collection it would open, as libyaml's scanner reads flow context, until
/// the collection closes; `Some(place)` of a bracket that opens level
/// [`MAX_DEPTH`] + 1. Stops early where the parser would stop with an error,
/// and where another reading has been, between tokens, at least as deep.
fn read_flow(bytes: &[u8], start: usize, seen: &mut [u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    loop {
        // Between tokens.
        let mark = u8::try_from(depth + 1).unwrap_or(u8::MAX);
        match seen.get_mut(i) {
            Some(s) if *s >= mark => return None,
            Some(s) => *s = mark,
            None => return None,
        }
        let b = *bytes.get(i)?;
        let eol = line_break(bytes, i);
        if eol > 0 {
            i += eol;
            continue;
        }
        if line_start(bytes, i) {
            if bytes.get(i..i + 3) == Some(b"\xEF\xBB\xBF") {
                i += 3;
                continue;
            }
            // A document marker or a directive inside a collection: the
            // parser stops there.
            if document_marker(bytes, i) || b == b'%' {
                return None;
            }
        }
        match b {
            b' ' | b'\t' => i += 1,
            b'#' => {
                while i < bytes.len() && line_break(bytes, i) == 0 {
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
                i += 1;
            }
            // Entries, keys, values (and `-` before a blank, which the
            // parser refuses here).
            b',' | b'?' | b':' => i += 1,
            b'-' if blank_or_end(bytes, i + 1) => i += 1,
            b'*' | b'&' => {
                i += 1;
                while bytes.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-') {
                    i += 1;
                }
            }
            b'!' => {
                i += 1;
                let verbatim = bytes.get(i) == Some(&b'<');
                if verbatim {
                    i += 1;
                }
                while bytes.get(i).is_some_and(|c| tag_char(*c, verbatim)) {
                    i += 1;
                }
                if verbatim && bytes.get(i) == Some(&b'>') {
                    i += 1;
                }
            }
            b'\'' | b'"' => i = quoted(bytes, i)?,
            // No token starts with these in flow context: the parser stops.
            b'|' | b'>' | b'%' | b'@' | b'`' => return None,
            _ => i = plain(bytes, i)?,
        }
    }
}

/// The end of the quoted scalar starting at `start` (its quote), or `None`
/// where the parser stops with an error (the end of the text, a document
/// marker).
fn quoted(bytes: &[u8], start: usize) -> Option<usize> {
    let quote = *bytes.get(start)?;
    let mut i = start + 1;
    loop {
        if document_marker(bytes, i) {
            return None;
        }
        let b = *bytes.get(i)?;
        if quote == b'\'' && b == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
            i += 2;
        } else if b == quote {
            return Some(i + 1);
        } else if quote == b'"' && b == b'\\' {
            i += 2;
        } else {
            i += 1;
        }
    }
}

/// The end of the plain scalar starting at `start`, in flow context (where
/// it ends at `,[]{}`, at `: `, at ` #`, at a document marker), or `None`
/// where the parser stops with an error.
fn plain(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        if document_marker(bytes, i) || bytes.get(i) == Some(&b'#') {
            return Some(i);
        }
        while !blank_or_end(bytes, i) {
            let b = *bytes.get(i)?;
            let next = bytes.get(i + 1).copied();
            if b == b':' && next.is_some_and(|n| b",?[]{}".contains(&n)) {
                return None;
            }
            if (b == b':' && blank_or_end(bytes, i + 1)) || b",[]{}".contains(&b) {
                return Some(i);
            }
            i += 1;
        }
        if i >= bytes.len() {
            return Some(i);
        }
        // Blanks and line breaks, then the scalar goes on (no indentation
        // counts in flow context).
        loop {
            if blank(bytes, i) {
                i += 1;
            } else if line_break(bytes, i) > 0 {
                i += line_break(bytes, i);
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// What the YAML parser says of `text` (given the time to: only for
    /// small nests).
    fn parser(text: &str) -> Result<(), String> {
        for de in serde_norway::Deserializer::from_str(text) {
            <serde_json::Value as serde::Deserialize>::deserialize(de).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    #[test]
    fn a_hundred_thousand_brackets_are_refused_at_the_one_too_many() {
        let yaml = format!("apiVersion: v1\nkind: ConfigMap\ndata: {}\n", nest(100_000));
        let e = check(&yaml).unwrap_err();
        assert_eq!(e, TooDeep { line: 3, column: "data: ".len() + MAX_DEPTH + 1 });
        assert!(e.to_string().starts_with("brackets (`[`, `{`) nest more than 128 levels deep at line 3, column 135;"), "{e}");
        let json = format!("{}{}", "{\"a\": ".repeat(100_000), "}".repeat(100_000));
        assert_eq!(check(&json).unwrap_err(), TooDeep { line: 1, column: 6 * MAX_DEPTH + 1 });
    }

    #[test]
    fn the_limit_is_the_parsers() {
        assert_eq!(check(&nest(MAX_DEPTH)), Ok(()));
        assert_eq!(parser(&nest(MAX_DEPTH)), Ok(()));
        assert!(check(&nest(MAX_DEPTH + 1)).is_err());
        assert!(parser(&nest(MAX_DEPTH + 1)).unwrap_err().contains("recursion limit"));
        // Block collections around them count for the parser, not here.
        assert_eq!(check(&format!("a:\n  b:\n    - {}\n", nest(MAX_DEPTH))), Ok(()));
    }

    /// A nest the parser reads as one, behind what could make a simpler
    /// pre-scan lose count (a quote it would take to open a string, a
    /// comment, a block scalar, closing brackets in strings): refused all
    /// the same.
    #[test]
    fn nothing_before_a_nest_hides_it() {
        let deep = nest(MAX_DEPTH + 1);
        for (before, after, parser_says) in [
            // A quote in a block scalar, in plain scalars, in a tag (which
            // the deserializer then refuses, having read the tag as one and
            // the nest after it: a quote would have run to the end).
            ("a: |\n  '\nb: ", "", "recursion limit"),
            ("a: >-\n    \"x\n    y\nb: ", "", "recursion limit"),
            ("a: it's\nb: [it's, ", "]", "recursion limit"),
            ("a: [!'x ", "]", "invalid type: enum"),
            ("a: [\"\\\"\", 'it''s', ", "]", "recursion limit"),
            // A `#` that starts no comment, and one that does.
            ("a: [\" #\", a#b, ", "]", "recursion limit"),
            ("a: [x, # ]]]]\n ", "]", "recursion limit"),
            // Closing brackets that close nothing.
            ("a: \"]]]]\"\nb: x]]]\nc: [']]]]', ", "]", "recursion limit"),
            ("a: |\n  ]]]]]]\nb: ", "", "recursion limit"),
            // A byte-order mark at the start of a line.
            ("a: [\n\u{feff}'x', ", "]", "recursion limit"),
        ] {
            let text = format!("{before}{deep}{after}\n");
            let said = parser(&text).unwrap_err();
            assert!(said.contains(parser_says), "the parser reads no nest in {text:?}: {said}");
            assert!(check(&text).is_err(), "{before:?} hides the nest");
        }
    }

    #[test]
    fn brackets_in_strings_comments_and_block_scalars_are_not_nesting() {
        let text = "\
# see [1], {2} and [3
apiVersion: v1
kind: ConfigMap
metadata: {name: a, labels: {team: x}}
data:
  a: \"[[[{{\"
  b: '[a-z'
  script: |
    if [ -f x ]; then echo '['; fi
    {\"a\": [[1], {\"b\": [2]}]}
  c: x[[[
  d: [\"]\", '[', \"a[[[b\"]
";
        assert_eq!(parser(text), Ok(()));
        assert_eq!(check(text), Ok(()));
    }

    /// The price: brackets that a string leaves open, and the reading from
    /// the first of them does not, past the limit.
    #[test]
    fn more_than_the_limit_of_unclosed_brackets_in_a_string_is_refused() {
        let text = format!("a: \"{}\"\n", "[".repeat(MAX_DEPTH + 1));
        assert_eq!(parser(&text), Ok(()));
        assert!(check(&text).is_err());
    }

    #[test]
    fn where_the_parser_stops_reading_stops() {
        // A document marker inside a collection ends a reading there (the
        // parser stops at it); the brackets after it are counted afresh.
        let half = "[".repeat(100);
        assert_eq!(check(&format!("a: {half}\n---\nb: {half}")), Ok(()));
        assert!(check(&format!("a: {half}\nb: {half}")).is_err());
        assert!(parser(&format!("a: [\n---\n{}", nest(5))).is_err());
        // libyaml reads no further than a character it refuses.
        assert_eq!(check(&format!("a: {half}\u{1}{half}")), Ok(()));
        assert!(parser(&format!("a: [x\u{1}{}", nest(5))).is_err());
    }

    #[test]
    fn unclosed_brackets_in_every_line_are_read_once() {
        // Each `[` in a comment starts a reading that would run to the
        // end; each stops where the one before it passed (else 10^10 steps).
        assert_eq!(check(&"# [\n".repeat(100_000)), Ok(()));
        assert_eq!(check(&"a: |\n  [ x\n".repeat(50_000)), Ok(()));
    }
}
