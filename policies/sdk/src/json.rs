//! A small JSON text walker, for the two things serde does not do for us:
//!
//! - **naming the field of a decoding error** ([`path_at`]): serde_json
//!   reports where it stopped as a line and column; walking the text up to
//!   that position gives the path of the value it was reading
//!   (`spec.containers[0].resources`). This replaces a path-tracking
//!   deserializer wrapper, which doubles the code of every decoded type and
//!   slows the happy path; the walk runs on the error path only;
//! - **editing a document without re-serialising it** ([`Edit`], [`apply`]):
//!   a mutating rule's edits are spliced into the original text, so every
//!   byte it did not touch (key order, number spelling, escapes) stays as
//!   the client sent it.
//!
//! The walker assumes the text is JSON that serde already read (or read up
//! to the error position); on anything else it stops and reports what it
//! has, never panics.

use std::fmt::Write as _;

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

impl From<&str> for Seg {
    fn from(key: &str) -> Seg {
        Seg::Key(key.to_string())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::Index(i)
    }
}

/// A path into a JSON document.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(pub Vec<Seg>);

impl Path {
    /// The document itself.
    pub fn root() -> Path {
        Path(Vec::new())
    }

    /// This path extended by one key.
    pub fn key(&self, key: &str) -> Path {
        let mut p = self.clone();
        p.0.push(Seg::Key(key.to_string()));
        p
    }

    /// This path extended by one index.
    pub fn index(&self, i: usize) -> Path {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// This path extended by several keys.
    pub fn keys(&self, keys: &[&str]) -> Path {
        let mut p = self.clone();
        p.0.extend(keys.iter().map(|k| Seg::Key((*k).to_string())));
        p
    }

    /// Whether this is the document itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// As an RFC 6901 JSON Pointer (`/spec/containers/0`).
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        for s in &self.0 {
            out.push('/');
            match s {
                Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
                Seg::Index(i) => {
                    let _ = write!(out, "{i}");
                }
            }
        }
        out
    }
}

/// `spec.containers[0].name`, the form messages use.
impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ walker

/// A cursor over JSON text.
struct Cursor<'t> {
    b: &'t [u8],
    i: usize,
}

impl<'t> Cursor<'t> {
    fn new(text: &'t str) -> Cursor<'t> {
        Cursor { b: text.as_bytes(), i: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Skips a string whose opening quote is at the cursor; returns its raw
    /// contents (escapes not decoded).
    fn string(&mut self) -> Option<&'t str> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        loop {
            match self.b.get(j)? {
                b'"' => break,
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
        self.i = j + 1;
        std::str::from_utf8(self.b.get(start..j)?).ok()
    }

    /// Skips one value; `None` if the text ends or is not JSON.
    fn value(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                // Containers are skipped by depth; strings are skipped whole
                // so their brackets do not count.
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }
}

/// The decoded text of a raw JSON string's contents.
fn unescape(raw: &str) -> String {
    if !raw.contains('\\') {
        return raw.to_string();
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_string())
}

/// The byte offset of a serde_json error position (1-based line and
/// column, the column counted in bytes).
pub fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0usize;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n + 1 == line {
            return (offset + column).min(text.len());
        }
        offset += l.len();
    }
    text.len()
}

/// The path of the value the text is in at byte `offset`: where serde_json
/// stopped when it reported an error.
pub fn path_at(text: &str, offset: usize) -> Path {
    enum Frame {
        Obj { key: Option<String>, expect_key: bool },
        Arr { index: usize },
    }
    let mut c = Cursor::new(text);
    let mut stack: Vec<Frame> = Vec::new();
    while c.i < offset {
        c.ws();
        let Some(b) = c.peek() else { break };
        match b {
            b'{' => {
                stack.push(Frame::Obj { key: None, expect_key: true });
                c.i += 1;
            }
            b'[' => {
                stack.push(Frame::Arr { index: 0 });
                c.i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                c.i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Arr { index }) => *index += 1,
                    Some(Frame::Obj { expect_key, .. }) => *expect_key = true,
                    None => {}
                }
                c.i += 1;
            }
            b':' => c.i += 1,
            b'"' => {
                let Some(s) = c.string() else { break };
                if let Some(Frame::Obj { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    *key = Some(unescape(s));
                    *expect_key = false;
                }
            }
            _ => {
                if c.value().is_none() {
                    break;
                }
            }
        }
    }
    let mut path = Path::root();
    for f in stack {
        match f {
            Frame::Obj { key: Some(k), .. } => path.0.push(Seg::Key(k)),
            Frame::Obj { key: None, .. } => {}
            Frame::Arr { index } => path.0.push(Seg::Index(index)),
        }
    }
    path
}

// ------------------------------------------------------------------- edits

/// One change to a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Sets the value at `path` (JSON text), creating missing objects on the
    /// way and replacing a `null`.
    Set {
        /// Where.
        path: Path,
        /// The new value, as JSON text.
        value: String,
    },
    /// Sets the value at `path` only if nothing (or `null`) is there.
    SetIfAbsent {
        /// Where.
        path: Path,
        /// The new value, as JSON text.
        value: String,
    },
    /// Appends a value to the array at `path`, creating the array (and
    /// missing objects on the way) if absent or `null`.
    Append {
        /// The array.
        path: Path,
        /// The new element, as JSON text.
        value: String,
    },
}

impl Edit {
    /// The path the edit writes to.
    pub fn path(&self) -> &Path {
        match self {
            Edit::Set { path, .. } | Edit::SetIfAbsent { path, .. } | Edit::Append { path, .. } => path,
        }
    }
}

/// Why an edit could not be applied: the document does not have the shape
/// the edit expects (an array where an object must be).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditError(pub String);

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a path leads in a document: the byte span of the value found, or
/// where the first missing step would be inserted.
enum Found {
    /// The value's span.
    Value(usize, usize),
    /// The first `depth` segments exist; the container they lead to spans
    /// `start..end` (an object or array, or `null` to be replaced).
    Missing { depth: usize, start: usize, end: usize },
}

/// The span of a value at the cursor.
fn span(c: &mut Cursor<'_>) -> Option<(usize, usize)> {
    c.ws();
    let start = c.i;
    c.value()?;
    Some((start, c.i))
}

/// Finds `path` in `text`.
fn locate(text: &str, path: &Path) -> Result<Found, EditError> {
    let bad = |p: &[Seg]| EditError(format!("the object is not valid JSON at `{}`", Path(p.to_vec())));
    let mut c = Cursor::new(text);
    let (mut start, mut end) = span(&mut c).ok_or_else(|| bad(&[]))?;
    for (depth, seg) in path.0.iter().enumerate() {
        let here = path.0.get(..depth).unwrap_or_default();
        let found = match (seg, text.as_bytes().get(start)) {
            (Seg::Key(key), Some(b'{')) => member(text, start, key).map_err(|()| bad(here))?,
            (Seg::Index(i), Some(b'[')) => element(text, start, *i).map_err(|()| bad(here))?,
            (_, Some(b'n')) => None,
            (Seg::Key(_), _) => {
                return Err(EditError(format!("`{}` is not an object", Path(here.to_vec()))));
            }
            (Seg::Index(_), _) => {
                return Err(EditError(format!("`{}` is not a list", Path(here.to_vec()))));
            }
        };
        match found {
            Some((s, e)) => (start, end) = (s, e),
            None => return Ok(Found::Missing { depth, start, end }),
        }
    }
    Ok(Found::Value(start, end))
}

/// The span of member `key` of the object starting at `start`.
fn member(text: &str, start: usize, key: &str) -> Result<Option<(usize, usize)>, ()> {
    let mut c = Cursor { b: text.as_bytes(), i: start + 1 };
    loop {
        c.ws();
        match c.peek().ok_or(())? {
            b'}' => return Ok(None),
            b',' => {
                c.i += 1;
                continue;
            }
            b'"' => {}
            _ => return Err(()),
        }
        let k = c.string().ok_or(())?;
        c.ws();
        if c.peek() != Some(b':') {
            return Err(());
        }
        c.i += 1;
        let v = span(&mut c).ok_or(())?;
        if k == key || (k.contains('\\') && unescape(k) == key) {
            return Ok(Some(v));
        }
    }
}

/// The span of element `index` of the array starting at `start`.
fn element(text: &str, start: usize, index: usize) -> Result<Option<(usize, usize)>, ()> {
    let mut c = Cursor { b: text.as_bytes(), i: start + 1 };
    let mut n = 0usize;
    loop {
        c.ws();
        match c.peek().ok_or(())? {
            b']' => return Ok(None),
            b',' => {
                c.i += 1;
                continue;
            }
            _ => {}
        }
        let v = span(&mut c).ok_or(())?;
        if n == index {
            return Ok(Some(v));
        }
        n += 1;
    }
}

/// The text of the value at `path`, if the document has one there.
pub fn find<'t>(text: &'t str, path: &Path) -> Option<&'t str> {
    match locate(text, path).ok()? {
        Found::Value(s, e) => text.get(s..e),
        Found::Missing { .. } => None,
    }
}

/// The string at `path`, decoded (escapes resolved), if the document has a
/// string there.
pub fn find_string(text: &str, path: &Path) -> Option<String> {
    find(text, path).and_then(|t| serde_json::from_str::<String>(t).ok())
}

/// JSON text of a string.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `value` wrapped in objects for the remaining keys of `rest`.
fn nest(rest: &[Seg], value: &str) -> Result<String, EditError> {
    let mut out = value.to_string();
    for seg in rest.iter().rev() {
        match seg {
            Seg::Key(k) => out = format!("{{{}:{out}}}", quote(k)),
            Seg::Index(_) => return Err(EditError("cannot create a list element by index".into())),
        }
    }
    Ok(out)
}

/// Inserts `"key": value` into the object spanning `start..end`, or
/// `value` into the array spanning `start..end`, as its last member.
fn insert(text: &str, start: usize, end: usize, member: &str) -> String {
    let inner = text.get(start + 1..end - 1).unwrap_or_default();
    let sep = if inner.trim().is_empty() { "" } else { "," };
    let mut out = String::with_capacity(text.len() + member.len() + 1);
    out.push_str(text.get(..end - 1).unwrap_or_default());
    out.push_str(sep);
    out.push_str(member);
    out.push_str(text.get(end - 1..).unwrap_or_default());
    out
}

fn replace(text: &str, start: usize, end: usize, value: &str) -> String {
    let mut out = String::with_capacity(text.len() + value.len());
    out.push_str(text.get(..start).unwrap_or_default());
    out.push_str(value);
    out.push_str(text.get(end..).unwrap_or_default());
    out
}

/// Puts `value` at `path`, creating what is missing.
fn put(text: &str, path: &Path, value: &str, only_if_absent: bool) -> Result<String, EditError> {
    match locate(text, path)? {
        Found::Value(s, e) => {
            let is_null = text.get(s..e) == Some("null");
            if only_if_absent && !is_null {
                Ok(text.to_string())
            } else {
                Ok(replace(text, s, e, value))
            }
        }
        Found::Missing { depth, start, end } => {
            let rest = path.0.get(depth..).unwrap_or_default();
            match (text.as_bytes().get(start), rest.split_first()) {
                (Some(b'n'), _) => Ok(replace(text, start, end, &nest(rest, value)?)),
                (Some(b'{'), Some((Seg::Key(k), more))) => {
                    Ok(insert(text, start, end, &format!("{}:{}", quote(k), nest(more, value)?)))
                }
                _ => Err(EditError(format!("`{path}` cannot be created"))),
            }
        }
    }
}

/// Applies edits in order, each to the result of the one before.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let mut doc = text.to_string();
    for edit in edits {
        doc = match edit {
            Edit::Set { path, value } => put(&doc, path, value, false)?,
            Edit::SetIfAbsent { path, value } => put(&doc, path, value, true)?,
            Edit::Append { path, value } => match locate(&doc, path)? {
                Found::Value(s, e) if doc.as_bytes().get(s) == Some(&b'[') => insert(&doc, s, e, value),
                Found::Value(s, e) if doc.get(s..e) == Some("null") => replace(&doc, s, e, &format!("[{value}]")),
                Found::Value(..) => return Err(EditError(format!("`{path}` is not a list"))),
                Found::Missing { .. } => put(&doc, path, &format!("[{value}]"), false)?,
            },
        };
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn at(text: &str, needle: &str) -> String {
        let offset = text.find(needle).unwrap() + needle.len();
        path_at(text, offset).to_string()
    }

    #[test]
    fn paths_of_positions() {
        let t = r#"{"a":{"b":[1,{"c":"x"},[2,3]],"d e":null},"f":"}"}"#;
        assert_eq!(at(t, r#""c":"x""#), "a.b[1].c");
        assert_eq!(at(t, "[2,3"), "a.b[2][1]");
        assert_eq!(at(t, r#""d e":null"#), "a.d e");
        assert_eq!(at(t, r#""f":"}""#), "f", "brackets inside strings do not count");
        assert_eq!(at(t, "{"), "");
        let escaped = r#"{"k\"ey":{"x":1}}"#;
        assert_eq!(at(escaped, r#""x":1"#), "k\"ey.x");
    }

    #[test]
    fn serde_positions_name_the_field() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            a: Vec<Inner>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Inner {
            n: u32,
        }
        let text = "{\"a\": [{\"n\": 1},\n {\"n\": \"two\"}]}";
        let e = serde_json::from_str::<S>(text).unwrap_err();
        let off = offset_of(text, e.line(), e.column());
        assert_eq!(path_at(text, off).to_string(), "a[1].n");
        let text = r#"{"a": [{"m": 1}]}"#;
        let e = serde_json::from_str::<S>(text).unwrap_err();
        assert!(e.to_string().contains("missing field `n`"));
        assert_eq!(path_at(text, offset_of(text, e.line(), e.column())).to_string(), "a[0]");
    }

    #[test]
    fn set_replaces_and_creates() {
        let t = r#"{"metadata":{"name":"p","labels":{"a":"1"}},"spec":{"n":1.0e3}}"#;
        let p = Path::root().keys(&["metadata", "labels", "owner"]);
        let out = apply(t, &[Edit::Set { path: p.clone(), value: quote("jane") }]).unwrap();
        assert_eq!(out, r#"{"metadata":{"name":"p","labels":{"a":"1","owner":"jane"}},"spec":{"n":1.0e3}}"#);
        let out = apply(t, &[Edit::Set { path: Path::root().keys(&["metadata", "labels", "a"]), value: quote("2") }]).unwrap();
        assert_eq!(out, r#"{"metadata":{"name":"p","labels":{"a":"2"}},"spec":{"n":1.0e3}}"#);
        let out = apply(t, &[Edit::Set { path: Path::root().keys(&["metadata", "annotations", "x/y"]), value: quote("z") }]).unwrap();
        assert_eq!(out, r#"{"metadata":{"name":"p","labels":{"a":"1"},"annotations":{"x/y":"z"}},"spec":{"n":1.0e3}}"#);
        let out = apply(r#"{"metadata":{"labels":null}}"#, &[Edit::Set { path: p, value: quote("j") }]).unwrap();
        assert_eq!(out, r#"{"metadata":{"labels":{"owner":"j"}}}"#);
        let out = apply("{ }", &[Edit::Set { path: Path::root().key("a"), value: "1".into() }]).unwrap();
        assert_eq!(out, r#"{ "a":1}"#);
    }

    #[test]
    fn set_if_absent_and_append() {
        let t = r#"{"spec":{"runtimeClassName":"nvidia","tolerations":[{"key":"a"}]}}"#;
        let rc = Path::root().keys(&["spec", "runtimeClassName"]);
        assert_eq!(apply(t, &[Edit::SetIfAbsent { path: rc, value: quote("x") }]).unwrap(), t);
        let tol = Path::root().keys(&["spec", "tolerations"]);
        let out = apply(t, &[Edit::Append { path: tol.clone(), value: r#"{"key":"b"}"#.into() }]).unwrap();
        assert_eq!(out, r#"{"spec":{"runtimeClassName":"nvidia","tolerations":[{"key":"a"},{"key":"b"}]}}"#);
        let out = apply(r#"{"spec":{}}"#, &[Edit::Append { path: tol.clone(), value: "1".into() }]).unwrap();
        assert_eq!(out, r#"{"spec":{"tolerations":[1]}}"#);
        let out = apply(r#"{"spec":{"tolerations":[]}}"#, &[Edit::Append { path: tol, value: "1".into() }]).unwrap();
        assert_eq!(out, r#"{"spec":{"tolerations":[1]}}"#);
    }

    #[test]
    fn indexes_and_shape_errors() {
        let t = r#"{"spec":{"containers":[{"name":"a"},{"name":"b"}]}}"#;
        let p = Path::root().keys(&["spec", "containers"]).index(1).key("image");
        let out = apply(t, &[Edit::Set { path: p, value: quote("x") }]).unwrap();
        assert_eq!(out, r#"{"spec":{"containers":[{"name":"a"},{"name":"b","image":"x"}]}}"#);
        let p = Path::root().keys(&["spec", "containers", "x"]);
        assert!(apply(t, &[Edit::Set { path: p, value: "1".into() }]).is_err());
        let p = Path::root().keys(&["spec", "containers"]).index(5).key("image");
        assert!(apply(t, &[Edit::Set { path: p, value: "1".into() }]).is_err());
    }

    #[test]
    fn strings_are_found_decoded() {
        let t = r#"{"metadata":{"labels":{"owner":"jane"},"annotations":{"aigov.dev/owner":"jane\u0040example.com"},"n":1}}"#;
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "labels", "owner"])).as_deref(), Some("jane"));
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "annotations", "aigov.dev/owner"])).as_deref(), Some("jane@example.com"));
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "n"])), None, "not a string");
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "x"])), None);
    }

    #[test]
    fn pointers() {
        assert_eq!(Path::root().keys(&["metadata", "labels", "a/b~c"]).pointer(), "/metadata/labels/a~1b~0c");
        assert_eq!(Path::root().key("x").index(3).pointer(), "/x/3");
    }
}
