//! Where a field is in the YAML a person wrote: line and column of a field
//! path (`spec.containers[0].image`) in a document of a file, for SARIF.
//!
//! The file is read again with an event parser that keeps source positions
//! (`saphyr-parser`); the documents are numbered as `aigov scan` numbers them
//! (empty documents skipped, `List` items by index). A path that does not
//! exist in the document is located at its deepest existing parent: a
//! missing `spec.runtimeClassName` points at `spec`.

use saphyr_parser::{Event, Parser, Span};

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// A YAML node with where it starts.
#[derive(Clone, Debug)]
enum Node {
    Scalar(Position, String),
    /// Entries: key, where the key is, value.
    Map(Position, Vec<(String, Position, Node)>),
    Seq(Position, Vec<Node>),
}

impl Node {
    fn at(&self) -> Position {
        match self {
            Node::Scalar(p, _) | Node::Map(p, _) | Node::Seq(p, _) => *p,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Node::Scalar(_, s) if s.is_empty() || s == "~" || s == "null" || s == "Null" || s == "NULL")
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(_, entries) => entries.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
}

/// The documents of a file, with positions.
#[derive(Debug)]
pub struct Located {
    docs: Vec<Node>,
}

fn position(span: &Span) -> Position {
    Position { line: span.start.line(), column: span.start.col() + 1 }
}

impl Located {
    /// Reads a file's text. `None` when it is not YAML the parser reads (the
    /// report then names the file without a region).
    pub fn parse(text: &str) -> Option<Located> {
        // A byte-order mark is no column.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut events = Vec::new();
        for e in Parser::new_from_str(text) {
            let (event, span) = e.ok()?;
            events.push((event, position(&span)));
        }
        let mut docs = Vec::new();
        let mut i = 0;
        while i < events.len() {
            if matches!(events.get(i), Some((Event::DocumentStart(_), _))) {
                i += 1;
                let node = build(&events, &mut i)?;
                if !node.is_null() {
                    docs.push(node);
                }
            } else {
                i += 1;
            }
        }
        Some(Located { docs })
    }

    /// Where `path` is in document `document` (1-based, as the scan counts
    /// them), item `item` of a `List` if given. The deepest existing step of
    /// the path; the document's start if nothing of it exists.
    pub fn locate(&self, document: usize, item: Option<usize>, path: &[Step]) -> Option<Position> {
        let mut node = self.docs.get(document.checked_sub(1)?)?;
        if let Some(i) = item {
            match node.get("items") {
                Some(Node::Seq(_, items)) => node = items.get(i.checked_sub(1)?)?,
                _ => return Some(node.at()),
            }
        }
        let mut at = node.at();
        for step in path {
            let next = match (step, node) {
                (Step::Key(k), Node::Map(_, entries)) => entries.iter().find(|(key, _, _)| key == k).map(|(_, p, v)| (*p, v)),
                (Step::Index(i), Node::Seq(_, items)) => items.get(*i).map(|v| (v.at(), v)),
                _ => None,
            };
            match next {
                Some((p, v)) => {
                    at = p;
                    node = v;
                }
                None => break,
            }
        }
        Some(at)
    }
}

/// Builds the node starting at `events[*i]`, leaving `*i` after it.
fn build(events: &[(Event<'_>, Position)], i: &mut usize) -> Option<Node> {
    let (event, at) = events.get(*i)?;
    *i += 1;
    Some(match event {
        Event::Scalar(s, ..) => Node::Scalar(*at, s.to_string()),
        // An alias is shown where it is used.
        Event::Alias(_) => Node::Scalar(*at, String::from("*alias")),
        Event::SequenceStart(..) => {
            let mut items = Vec::new();
            while !matches!(events.get(*i), Some((Event::SequenceEnd, _)) | None) {
                items.push(build(events, i)?);
            }
            *i += 1;
            Node::Seq(*at, items)
        }
        Event::MappingStart(..) => {
            let mut entries = Vec::new();
            while !matches!(events.get(*i), Some((Event::MappingEnd, _)) | None) {
                let key = build(events, i)?;
                let value = build(events, i)?;
                let name = match &key {
                    Node::Scalar(_, s) => s.clone(),
                    _ => String::new(),
                };
                entries.push((name, key.at(), value));
            }
            *i += 1;
            Node::Map(*at, entries)
        }
        // A document with nothing in it.
        Event::DocumentEnd => {
            *i -= 1;
            Node::Scalar(*at, String::new())
        }
        _ => return None,
    })
}

/// The field path a violation names: the first backquoted span that reads as
/// one (`spec.containers[0].image`, `metadata.labels`,
/// `spec.containers[0].resources.limits[nvidia.com/gpu]`: a key that holds
/// dots or slashes in brackets), rooted at `metadata`, `spec`, `data` or
/// `status`. `None` when the message names no field.
pub fn field_path(message: &str) -> Option<Vec<Step>> {
    message.split('`').skip(1).step_by(2).find_map(parse_path)
}

fn parse_path(text: &str) -> Option<Vec<Step>> {
    let root = text.split(['.', '[']).next()?;
    if !matches!(root, "metadata" | "spec" | "data" | "status") {
        return None;
    }
    let mut steps = Vec::new();
    let mut rest = text;
    loop {
        // A name, then any number of `[index]` or `[key]`.
        let (name, after) = rest.split_at_checked(rest.find(['.', '[']).unwrap_or(rest.len()))?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return None;
        }
        steps.push(Step::Key(name.to_string()));
        rest = after;
        while let Some(open) = rest.strip_prefix('[') {
            let (inside, after) = open.split_once(']')?;
            let key = inside.trim_matches(|c| c == '"' || c == '\'');
            if key.is_empty() {
                return None;
            }
            steps.push(match key.parse() {
                Ok(i) if key.bytes().all(|b| b.is_ascii_digit()) => Step::Index(i),
                _ => Step::Key(key.to_string()),
            });
            rest = after;
        }
        if rest.is_empty() {
            return Some(steps);
        }
        rest = rest.strip_prefix('.')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# a comment
apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
    - name: main
      image: pytorch
---
---
apiVersion: v1
kind: List
items:
  - kind: Pod
    spec:
      runtimeClassName: runc
";

    fn at(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    #[test]
    fn fields_are_found_where_they_are_written() {
        let l = Located::parse(TEXT).unwrap();
        let p = field_path("`spec.containers[0].image` is `pytorch`").unwrap();
        assert_eq!(l.locate(1, None, &p), at(9, 7));
        assert_eq!(l.locate(1, None, &field_path("`metadata.name`").unwrap()), at(5, 3));
    }

    #[test]
    fn a_missing_field_is_located_at_its_parent() {
        let l = Located::parse(TEXT).unwrap();
        assert_eq!(l.locate(1, None, &field_path("`spec.runtimeClassName` is not set").unwrap()), at(6, 1));
        assert_eq!(l.locate(1, None, &field_path("`spec.containers[3].image`").unwrap()), at(7, 3));
    }

    #[test]
    fn documents_are_counted_as_the_scan_counts_them_and_list_items_too() {
        let l = Located::parse(TEXT).unwrap();
        // The empty document between the two `---` does not count.
        assert_eq!(l.locate(2, Some(1), &field_path("`spec.runtimeClassName`").unwrap()), at(17, 7));
        assert_eq!(l.locate(3, None, &[]), None);
    }

    #[test]
    fn only_field_paths_are_read_as_paths() {
        assert_eq!(
            field_path("label `team` is missing from `metadata.labels`").unwrap(),
            vec![Step::Key("metadata".into()), Step::Key("labels".into())]
        );
        assert_eq!(field_path("image `nvcr.io/x:1` is not allowed"), None);
        assert_eq!(field_path("`spec.a[]`"), None);
        assert_eq!(field_path("`spec.a[0`"), None);
        assert_eq!(field_path("`spec..a`"), None);
        assert_eq!(
            field_path("`spec.workerGroupSpecs[1].template`").unwrap(),
            vec![Step::Key("spec".into()), Step::Key("workerGroupSpecs".into()), Step::Index(1), Step::Key("template".into())]
        );
    }

    #[test]
    fn keys_in_brackets_are_keys() {
        assert_eq!(
            field_path("`spec.containers[0].resources.limits[nvidia.com/gpu]`: `four` is not a valid quantity").unwrap(),
            vec![
                Step::Key("spec".into()),
                Step::Key("containers".into()),
                Step::Index(0),
                Step::Key("resources".into()),
                Step::Key("limits".into()),
                Step::Key("nvidia.com/gpu".into()),
            ]
        );
        assert_eq!(
            field_path("`metadata.annotations[\"ai/version\"].x`").unwrap(),
            vec![Step::Key("metadata".into()), Step::Key("annotations".into()), Step::Key("ai/version".into()), Step::Key("x".into())]
        );
        assert_eq!(
            field_path("`spec.a[x][2]`").unwrap(),
            vec![Step::Key("spec".into()), Step::Key("a".into()), Step::Key("x".into()), Step::Index(2)]
        );
        let text = "\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    spec:
      containers:
        - name: main
          resources:
            limits: {cpu: 1, nvidia.com/gpu: four}
";
        let l = Located::parse(text).unwrap();
        let p = field_path("`spec.containers[0].resources.limits[nvidia.com/gpu]`: `four` is not a valid quantity").unwrap();
        assert_eq!(l.locate(1, Some(1), &p), at(10, 30));
        let one = Located::parse("kind: Pod\nspec:\n  containers:\n  - resources:\n      limits:\n        nvidia.com/gpu: x\n").unwrap();
        assert_eq!(one.locate(1, None, &p), at(6, 9));
        // A key that is not there: its parent.
        let p = field_path("`spec.containers[0].resources.limits[amd.com/gpu]`").unwrap();
        assert_eq!(one.locate(1, None, &p), at(5, 7));
    }

    #[test]
    fn json_documents_have_positions_too() {
        let l = Located::parse("{\"kind\": \"Pod\",\n \"spec\": {\"hostNetwork\": true}}").unwrap();
        assert_eq!(l.locate(1, None, &field_path("`spec.hostNetwork`").unwrap()), at(2, 11));
    }
}
