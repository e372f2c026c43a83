//! Where things are in a YAML file, by its lines, for refusals an editor
//! jumps to (`FILE:LINE: …`): its documents, a `policies.yml`'s entries,
//! and the line of a key path (`spec.settings.mode`) in one of them. Read
//! from the text as written, not from the parsed value, which has no lines.

/// Whether a line holds something (not blank, not only a comment).
fn content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The non-empty documents of a file: (first line, line after the last),
/// 1-based, split at `---` lines.
pub fn documents(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.starts_with("---") || line.starts_with("...") {
            if let Some(s) = start.take() {
                out.push((s, n));
            }
            // `--- {…}`: the document starts on this line.
            if line.get(3..).is_some_and(content) {
                start = Some(n);
            }
        } else if start.is_none() && content(line) {
            start = Some(n);
        }
    }
    if let Some(s) = start {
        out.push((s, lines.len() + 1));
    }
    out
}

/// The lines of `policies.yml`'s entry `name`: its line, to the next
/// top-level key.
pub fn entry(lines: &[&str], name: &str) -> Option<(usize, usize)> {
    let start = lines.iter().position(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(':')))?;
    let end = lines
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, l)| l.chars().next().is_some_and(|c| !c.is_whitespace() && c != '#'))
        .map_or(lines.len(), |(i, _)| i);
    Some((start + 1, end + 1))
}

/// The line of the deepest key of `path` found within `span` (1-based, end
/// excluded); the span's first line when none is. Each key is looked for
/// among its parent's own keys, by indentation (so `spec.mode` is not
/// found at `spec.settings.mode`), or in a flow mapping on its parent's
/// line; where that finds fewer keys (a file that is not indented as
/// block YAML is, such as JSON), each key on a line after its parent's.
pub fn find(lines: &[&str], span: (usize, usize), path: &[String]) -> usize {
    let nested = nested(lines, span, path);
    let loose = loose(lines, span, path);
    if loose.0 > nested.0 { loose.1 } else { nested.1 }
}

/// Where a line's key starts: its indentation, past the `- ` of list items.
fn key_column(line: &str) -> usize {
    let mut rest = line.trim_start();
    while let Some(after) = rest.strip_prefix("- ") {
        rest = after.trim_start();
    }
    line.len() - rest.len()
}

/// [`find`] by indentation: how many keys of `path` were found, and the
/// line of the last.
fn nested(lines: &[&str], (start, end): (usize, usize), path: &[String]) -> (usize, usize) {
    let line = |n: usize| lines.get(n.wrapping_sub(1)).copied().unwrap_or_default();
    let mut found = (0, start);
    // The block the next key is in (its lines, end excluded), and the line
    // of its parent key, whose flow mapping may hold it.
    let (mut from, mut to, mut parent) = (start, end, None::<usize>);
    for key in path {
        let own = |n: usize| Some(n) != parent && content(line(n));
        let column = (from..to).find(|&n| own(n)).map(|n| key_column(line(n)));
        let hit = parent.filter(|&n| in_flow(line(n), key)).or_else(|| {
            let column = column?;
            (from..to).find(|&n| own(n) && key_column(line(n)) == column && line(n).get(column..).is_some_and(|t| starts_with_key(t, key)))
        });
        let Some(n) = hit else { break };
        found = (found.0 + 1, n);
        let column = key_column(line(n));
        let block_end = (n + 1..to).find(|&m| content(line(m)) && key_column(line(m)) <= column).unwrap_or(to);
        (from, to, parent) = (n, block_end, Some(n));
    }
    found
}

/// [`find`] leniently: each key on a line at or after its parent's.
fn loose(lines: &[&str], (start, end): (usize, usize), path: &[String]) -> (usize, usize) {
    let mut found = (0, start);
    let mut from = start;
    for key in path {
        match (from..end).find(|&n| lines.get(n - 1).is_some_and(|l| names_key(l, key))) {
            Some(n) => {
                found = (found.0 + 1, n);
                from = n;
            }
            None => break,
        }
    }
    found
}

/// Whether `text` starts with `key:` (bare or quoted).
fn starts_with_key(text: &str, key: &str) -> bool {
    [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .any(|k| text.strip_prefix(k.as_str()).is_some_and(|r| r.trim_start().starts_with(':')))
}

/// Whether a flow mapping on the line writes `key:`.
fn in_flow(line: &str, key: &str) -> bool {
    line.match_indices(['{', ',']).any(|(i, _)| line.get(i + 1..).is_some_and(|r| starts_with_key(r.trim_start(), key)))
}

/// Whether a line writes `key:` (block style, as a list item, quoted, or
/// inside a flow mapping).
fn names_key(line: &str, key: &str) -> bool {
    let t = line.trim_start().trim_start_matches("- ").trim_start();
    starts_with_key(t, key) || in_flow(t, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &str) -> Vec<String> {
        keys.split('.').map(String::from).collect()
    }

    #[test]
    fn documents_and_keys_are_found_at_their_lines() {
        let text = "a: 1\n---\n# c\nspec:\n  settings:\n    rules:\n      exec-guard: {guardPortForward: maybe}\n";
        let lines: Vec<&str> = text.lines().collect();
        let docs = documents(&lines);
        assert_eq!(docs, [(1, 2), (4, 8)]);
        assert_eq!(find(&lines, docs[1], &path("spec.settings.rules.exec-guard.guardPortForward")), 7);
        assert_eq!(find(&lines, docs[1], &path("spec.settings.nothing")), 5, "the deepest key found");
    }

    #[test]
    fn a_key_is_its_parents_not_a_deeper_ones() {
        let text = "kind: ClusterAdmissionPolicy\nspec:\n  settings:\n    mode: monitor\n    auditNamespaces: [a]\n  rules:\n  - operations: [CREATE]\n    mode: x\n  mode: audit\n  auditNamespaces: [b]\nother:\n  mode: y\n";
        let lines: Vec<&str> = text.lines().collect();
        let all = (1, lines.len() + 1);
        assert_eq!(find(&lines, all, &path("spec.mode")), 9);
        assert_eq!(find(&lines, all, &path("spec.auditNamespaces")), 10);
        assert_eq!(find(&lines, all, &path("spec.settings.mode")), 4);
        assert_eq!(find(&lines, all, &path("other.mode")), 12);
        // A flow mapping on the parent's line; JSON, found loosely.
        let flow: Vec<&str> = ["spec: {mode: audit, settings: {}}"].to_vec();
        assert_eq!(find(&flow, (1, 2), &path("spec.mode")), 1);
        let json: Vec<&str> = "{\n\"spec\": {\n  \"mode\": \"audit\"\n}}".lines().collect();
        assert_eq!(find(&json, (1, 5), &path("spec.mode")), 3);
        // policies.yml: an entry, and a key of it.
        let yml: Vec<&str> = "a:\n  module: m\nb:\n  policyMode: audit\n  settings: {}\n".lines().collect();
        let b = entry(&yml, "b").unwrap();
        assert_eq!(b, (3, 6));
        assert_eq!(find(&yml, b, &path("b.policyMode")), 4);
    }
}
