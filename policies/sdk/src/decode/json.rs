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

use std::borrow::Cow;

use crate::decode::path::{Path, Seg};

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

    /// Skips a string whose opening quote is at the cursor; returns the
    /// byte range of its raw contents (escapes not decoded).
    fn skip_string(&mut self) -> Option<(usize, usize)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        loop {
            // Straight to the next quote, backslash or control character,
            // eight bytes at a time, as the decoder reads strings: strings
            // are most of a Kubernetes object's bytes.
            j = crate::decode::dec::plain_run_end(self.b, j);
            match self.b.get(j)? {
                b'"' => break,
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
        self.i = j + 1;
        Some((start, j))
    }

    /// [`Self::skip_string`], as text.
    fn string(&mut self) -> Option<&'t str> {
        let (start, end) = self.skip_string()?;
        std::str::from_utf8(self.b.get(start..end)?).ok()
    }

    /// Skips one value; `None` if the text ends or is not JSON.
    fn value(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.skip_string().map(drop),
            b'{' | b'[' => {
                // Containers are skipped by depth, jumping from one bracket
                // or quote to the next; strings are skipped whole so their
                // brackets do not count.
                let mut depth = 0usize;
                loop {
                    self.i += self.b.get(self.i..)?.iter().position(|&c| matches!(c, b'"' | b'{' | b'[' | b'}' | b']'))?;
                    match self.peek()? {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        _ => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
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

/// The members of the object `text` holds, as (key, the value's text), in
/// order; `None` if it holds no object. For text serde has read already:
/// separators are not checked.
pub fn members(text: &str) -> Option<Vec<(Cow<'_, str>, &str)>> {
    items(text, b'{', b'}', |c| {
        let raw = c.string()?;
        let key = if raw.contains('\\') { Cow::Owned(unescape(raw)) } else { Cow::Borrowed(raw) };
        c.ws();
        c.i += usize::from(c.peek()? == b':');
        c.ws();
        Some((key, value_text(c)?))
    })
}

/// The elements' texts of the array `text` holds, in order; `None` if it
/// holds no array. For text serde has read already, as [`members`].
pub fn elements(text: &str) -> Option<Vec<&str>> {
    items(text, b'[', b']', value_text)
}

/// The items of the container `text` holds between `open` and `close`,
/// each read by `item` from its first byte; `None` if `text` holds none.
fn items<'t, T>(text: &'t str, open: u8, close: u8, mut item: impl FnMut(&mut Cursor<'t>) -> Option<T>) -> Option<Vec<T>> {
    let mut out = Vec::new();
    let mut c = Cursor::new(text);
    c.ws();
    if c.peek()? != open {
        return None;
    }
    c.i += 1;
    loop {
        c.ws();
        match c.peek()? {
            b if b == close => return Some(out),
            b',' => c.i += 1,
            _ => out.push(item(&mut c)?),
        }
    }
}

/// The text of the value at the cursor, which moves past it.
fn value_text<'t>(c: &mut Cursor<'t>) -> Option<&'t str> {
    let start = c.i;
    c.value()?;
    std::str::from_utf8(c.b.get(start..c.i)?).ok()
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
        // Whitespace can end at the offset: the value there is the one the
        // position names, not a step into it.
        if c.i >= offset {
            break;
        }
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
            Frame::Obj { key: Some(k), .. } => path.0.push(Seg::Key(Cow::Owned(k))),
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

/// The end of the value starting at `start`.
fn end_of(text: &str, start: usize) -> Option<usize> {
    let mut c = Cursor { b: text.as_bytes(), i: start };
    c.value()?;
    Some(c.i)
}

/// The ends of the values a walk skipped, by where they start, kept while
/// one document is edited several times: each edit walks from the root
/// again, and a long value before its target (a `kubectl apply` annotation
/// of several KiB, `managedFields`) is read once, not once per edit. A
/// vector sorted by start: a few dozen entries, searched by bisection and
/// moved in place by a splice.
#[derive(Default)]
struct Skips {
    ends: Vec<(usize, usize)>,
    keep: bool,
}

impl Skips {
    /// Skips that remember nothing: for a single lookup.
    fn none() -> Skips {
        Skips::default()
    }

    /// Skips that remember, for a sequence of edits.
    fn kept() -> Skips {
        Skips { keep: true, ..Skips::default() }
    }

    /// The end of the value starting at `start`. A container's members
    /// whose ends are known are jumped over, not read again (a
    /// `last-applied-configuration` annotation of several KiB, read once by
    /// the edit that walked into `metadata`, is not read again when a later
    /// edit skips `metadata` whole).
    fn end(&mut self, text: &str, start: usize) -> Option<usize> {
        let at = match self.ends.binary_search_by_key(&start, |&(s, _)| s) {
            Ok(found) => return self.ends.get(found).map(|&(_, e)| e),
            Err(at) => at,
        };
        let end = if self.ends.is_empty() { end_of(text, start)? } else { self.container_end(text, start)? };
        if self.keep {
            self.ends.insert(at, (start, end));
        }
        Some(end)
    }

    /// [`end_of`], jumping over the members (and keys) whose ends are known.
    fn container_end(&self, text: &str, start: usize) -> Option<usize> {
        let mut c = Cursor { b: text.as_bytes(), i: start };
        if !matches!(c.peek()?, b'{' | b'[') {
            return end_of(text, start);
        }
        c.i += 1;
        loop {
            c.ws();
            match c.peek()? {
                b'}' | b']' => return Some(c.i + 1),
                b',' | b':' => c.i += 1,
                _ => match self.ends.binary_search_by_key(&c.i, |&(s, _)| s) {
                    Ok(found) => c.i = self.ends.get(found)?.1,
                    Err(_) => c.value()?,
                },
            }
        }
    }

    /// Remembers that the value starting at `start` ends at `end`.
    fn remember(&mut self, start: usize, end: usize) {
        if self.keep
            && let Err(at) = self.ends.binary_search_by_key(&start, |&(s, _)| s)
        {
            self.ends.insert(at, (start, end));
        }
    }

    /// Follows a splice that replaced `removed` bytes at `at` with `added`
    /// bytes: values after it move, values around it grow or shrink,
    /// values it touched are forgotten. Starts keep their order.
    fn spliced(&mut self, at: usize, removed: usize, added: usize) {
        let cut = at + removed;
        let moved = |x: usize| x - removed + added;
        self.ends.retain_mut(|(s, e)| {
            if *e <= at {
                true
            } else if *s >= cut {
                (*s, *e) = (moved(*s), moved(*e));
                true
            } else if *s < at && *e >= cut {
                *e = moved(*e);
                true
            } else {
                false
            }
        });
    }
}

/// Finds `path` in `text`. Only the values on the way are entered, and only
/// the last one is skipped to its end: the members before each step are
/// skipped, the rest of the document is never read.
fn locate(text: &str, path: &Path, skips: &mut Skips) -> Result<Found, EditError> {
    let bad = |p: &[Seg]| EditError(format!("the object is not valid JSON at `{}`", Path(p.to_vec())));
    let mut c = Cursor::new(text);
    c.ws();
    let mut start = c.i;
    for (depth, seg) in path.0.iter().enumerate() {
        let here = path.0.get(..depth).unwrap_or_default();
        let found = match (seg, text.as_bytes().get(start)) {
            (Seg::Key(key), Some(b'{')) => member(text, start, key, skips).map_err(|()| bad(here))?,
            (Seg::Index(i), Some(b'[')) => element(text, start, *i, skips).map_err(|()| bad(here))?,
            (_, Some(b'n')) => None,
            (_, None) => return Err(bad(here)),
            (Seg::Key(_), _) => {
                return Err(EditError(format!("`{}` is not an object", Path(here.to_vec()))));
            }
            (Seg::Index(_), _) => {
                return Err(EditError(format!("`{}` is not a list", Path(here.to_vec()))));
            }
        };
        match found {
            Some(s) => start = s,
            None => {
                let end = skips.end(text, start).ok_or_else(|| bad(here))?;
                return Ok(Found::Missing { depth, start, end });
            }
        }
    }
    let end = skips.end(text, start).ok_or_else(|| bad(&path.0))?;
    Ok(Found::Value(start, end))
}

/// Where the value of member `key` of the object starting at `start` starts.
fn member(text: &str, start: usize, key: &str, skips: &mut Skips) -> Result<Option<usize>, ()> {
    let mut c = Cursor { b: text.as_bytes(), i: start + 1 };
    loop {
        c.ws();
        match c.peek().ok_or(())? {
            b'}' => {
                // Walked to its end: a missing member is inserted there.
                skips.remember(start, c.i + 1);
                return Ok(None);
            }
            b',' => {
                c.i += 1;
                continue;
            }
            b'"' => {}
            _ => return Err(()),
        }
        let (ks, ke) = c.skip_string().ok_or(())?;
        let k = text.as_bytes().get(ks..ke).ok_or(())?;
        c.ws();
        if c.peek() != Some(b':') {
            return Err(());
        }
        c.i += 1;
        c.ws();
        let matches = k == key.as_bytes() || (k.contains(&b'\\') && std::str::from_utf8(k).is_ok_and(|k| unescape(k) == key));
        if matches {
            return Ok(Some(c.i));
        }
        c.i = skips.end(text, c.i).ok_or(())?;
    }
}

/// Where element `index` of the array starting at `start` starts.
fn element(text: &str, start: usize, index: usize, skips: &mut Skips) -> Result<Option<usize>, ()> {
    let mut c = Cursor { b: text.as_bytes(), i: start + 1 };
    let mut n = 0usize;
    loop {
        c.ws();
        match c.peek().ok_or(())? {
            b']' => {
                skips.remember(start, c.i + 1);
                return Ok(None);
            }
            b',' => {
                c.i += 1;
                continue;
            }
            _ => {}
        }
        if n == index {
            return Ok(Some(c.i));
        }
        c.i = skips.end(text, c.i).ok_or(())?;
        n += 1;
    }
}

/// The text of the value at `path`, if the document has one there.
pub fn find<'t>(text: &'t str, path: &Path) -> Option<&'t str> {
    match locate(text, path, &mut Skips::none()).ok()? {
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

/// A document being edited, with what its walks have learnt: several sets
/// of edits applied to one copy in turn ([`Doc::apply_all`]) walk it once
/// for everything they skip, not once per set.
pub struct Doc {
    text: String,
    skips: Skips,
}

impl Doc {
    /// A document to edit, starting from `text`.
    pub fn new(text: &str) -> Doc {
        Doc { text: text.to_string(), skips: Skips::kept() }
    }

    /// Applies `edits` in order, each to the result of the one before; on
    /// an error, none of them (the document is as it was).
    pub fn apply_all(&mut self, edits: &[Edit]) -> Result<(), EditError> {
        let before = (self.text.clone(), self.skips.ends.clone());
        for edit in edits {
            let done = match edit {
                Edit::Set { path, value } => self.put(path, value, false),
                Edit::SetIfAbsent { path, value } => self.put(path, value, true),
                Edit::Append { path, value } => self.append(path, value),
            };
            if let Err(e) = done {
                (self.text, self.skips.ends) = before;
                return Err(e);
            }
        }
        Ok(())
    }

    /// The edited text.
    pub fn into_text(self) -> String {
        self.text
    }

    /// Replaces `start..end` with `value`.
    fn replace(&mut self, start: usize, end: usize, value: &str) {
        self.text.replace_range(start..end, value);
        self.skips.spliced(start, end - start, value.len());
    }

    /// Inserts `"key": value` into the object spanning `start..end`, or
    /// `value` into the array spanning `start..end`, as its last member.
    fn insert(&mut self, start: usize, end: usize, member: &str) {
        let empty = self.text.get(start + 1..end - 1).unwrap_or_default().trim().is_empty();
        let piece = if empty { member.to_string() } else { format!(",{member}") };
        self.replace(end - 1, end - 1, &piece);
    }

    /// Puts `value` at `path`, creating what is missing.
    fn put(&mut self, path: &Path, value: &str, only_if_absent: bool) -> Result<(), EditError> {
        match locate(&self.text, path, &mut self.skips)? {
            Found::Value(s, e) => {
                let is_null = self.text.get(s..e) == Some("null");
                if !only_if_absent || is_null {
                    self.replace(s, e, value);
                }
                Ok(())
            }
            Found::Missing { depth, start, end } => {
                let rest = path.0.get(depth..).unwrap_or_default();
                match (self.text.as_bytes().get(start), rest.split_first()) {
                    (Some(b'n'), _) => self.replace(start, end, &nest(rest, value)?),
                    (Some(b'{'), Some((Seg::Key(k), more))) => {
                        self.insert(start, end, &format!("{}:{}", quote(k), nest(more, value)?));
                    }
                    _ => return Err(EditError(format!("`{path}` cannot be created"))),
                }
                Ok(())
            }
        }
    }

    /// Appends `value` to the list at `path`, creating it if absent or null.
    fn append(&mut self, path: &Path, value: &str) -> Result<(), EditError> {
        match locate(&self.text, path, &mut self.skips)? {
            Found::Value(s, e) if self.text.as_bytes().get(s) == Some(&b'[') => self.insert(s, e, value),
            Found::Value(s, e) if self.text.get(s..e) == Some("null") => self.replace(s, e, &format!("[{value}]")),
            Found::Value(..) => return Err(EditError(format!("`{path}` is not a list"))),
            Found::Missing { .. } => self.put(path, &format!("[{value}]"), false)?,
        }
        Ok(())
    }
}

/// Applies edits in order, each to the result of the one before.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let mut doc = Doc::new(text);
    doc.apply_all(edits)?;
    Ok(doc.text)
}

/// Whether `text` holds `needle` anywhere: a quick test before decoding
/// (a false hit costs only the decoding). memchr's `memmem` searches
/// sixteen bytes at a time in the guests, with wasm's simd128; core's
/// `str::contains` cost about eight instructions a byte there, a quarter
/// of `gpu-quota`'s work on a Pod list.
pub fn mentions(text: &str, needle: &str) -> bool {
    memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_finds_text_anywhere() {
        let list = format!(r#"{{"items":[{}{{"spec":{{"resourceClaims":[]}}}}]}}"#, r#"{"spec":{"containers":[]}},"#.repeat(40));
        assert!(mentions(&list, "\"resourceClaims\""));
        assert!(!mentions(&list, "\"resourceClaim\""));
        assert!(mentions("ab", "ab") && !mentions("a", "ab") && mentions("x", ""));
    }

    #[test]
    fn members_and_elements_split_a_container_into_texts() {
        let text = r#" { "a" : [1, {"b": "]"}] , "c\u0064":{} ,"e":"x}" } "#;
        let got: Vec<(String, &str)> = members(text).unwrap().into_iter().map(|(k, v)| (k.into_owned(), v)).collect();
        assert_eq!(got, [("a".to_string(), r#"[1, {"b": "]"}]"#), ("cd".to_string(), "{}"), ("e".to_string(), r#""x}""#)]);
        assert_eq!(elements(r#"[1, {"b": "]"}]"#).unwrap(), ["1", r#"{"b": "]"}"#]);
        assert_eq!(elements(" [ ] ").unwrap(), Vec::<&str>::new());
        assert_eq!(members("{}").unwrap(), []);
        assert!(members("[]").is_none() && elements("{}").is_none() && members(r#"{"a":1"#).is_none());
    }

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
    fn a_value_after_whitespace_is_where_the_path_ends() {
        // The SDK's decoder reports a bad value at its first byte, after
        // the whitespace before it: the path is the value's, not its first
        // element's (the `rules` fuzz target's finding).
        assert_eq!(path_at("\t\t[]", 2).to_string(), "");
        assert_eq!(path_at(r#"{"a": []}"#, 6).to_string(), "a");
        assert_eq!(path_at(r#"{"a":[]}"#, 5).to_string(), "a");
        let text = "{\"a\": [1,\n  {\"n\": 2}]}";
        assert_eq!(path_at(text, text.find("{\"n").unwrap()).to_string(), "a[1]");
        assert_eq!(path_at(text, text.find(" 2").unwrap() + 1).to_string(), "a[1].n");
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

    /// A key the code spells is borrowed, one built at run time owned; the
    /// two are the same key to every comparison and in every form.
    #[test]
    fn literal_and_built_keys_are_the_same_key() {
        let literal = Path::root().key("spec").index(0).key("name");
        let built = Path::root().key(String::from("spec")).index(0).key(format!("na{}", "me"));
        assert!(matches!(&literal.0[0], Seg::Key(Cow::Borrowed("spec"))));
        assert!(matches!(&built.0[0], Seg::Key(Cow::Owned(_))));
        assert_eq!(literal, built);
        assert_eq!(literal, Path::root().keys(&["spec"]).index(0).keys(&["name"]));
        assert_eq!(literal.cmp(&built), std::cmp::Ordering::Equal);
        assert_eq!((literal.to_string(), literal.pointer()), ("spec[0].name".to_string(), "/spec/0/name".to_string()));
        let hash = |p: &Path| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            p.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&literal), hash(&built));
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
    fn edits_in_a_row_agree_with_edits_one_at_a_time() {
        // Each edit of a row reuses what the walks before it learnt (where
        // values end); one edit at a time, nothing is reused.
        let long = "x\\\"y".repeat(200);
        let doc = format!(
            r#"{{"metadata":{{"annotations":{{"last":"{long}","b":[1,{{"c":"}}]"}}]}},"labels":{{}}}},"spec":{{"a":[{{"m":{{}}}},{{"m":null}}],"z":"{long}","t":{{"metadata":{{"labels":{{"k":"v"}}}}}}}}}}"#
        );
        let root = Path::root();
        let edits = vec![
            Edit::Set { path: root.keys(&["metadata", "labels", "owner"]), value: quote("jane") },
            Edit::Set { path: root.keys(&["metadata", "annotations", "owner"]), value: quote("jane@x") },
            Edit::Append { path: root.keys(&["spec", "a"]).index(0).keys(&["m", "l"]), value: "1".into() },
            Edit::Set { path: root.keys(&["spec", "a"]).index(1).keys(&["m", "k"]), value: "true".into() },
            Edit::Set { path: root.keys(&["metadata", "annotations", "last"]), value: quote("short") },
            Edit::Append { path: root.keys(&["spec", "a"]).index(0).keys(&["m", "l"]), value: "{\"x\":[]}".into() },
            Edit::SetIfAbsent { path: root.keys(&["spec", "t", "metadata", "labels", "k"]), value: quote("w") },
            Edit::Set { path: root.keys(&["spec", "t", "metadata", "labels", "owner"]), value: quote("jane") },
            // Shorter, before values the walks to `spec.t` skipped: they move.
            Edit::Set { path: root.keys(&["metadata", "annotations", "last"]), value: quote("again") },
            Edit::Set { path: root.keys(&["spec", "t", "metadata", "labels", "team"]), value: quote("ml") },
            Edit::Append { path: root.keys(&["spec", "tolerations"]), value: "{}".into() },
            Edit::Set { path: root.keys(&["spec", "z"]), value: "0".into() },
            Edit::Set { path: root.keys(&["status"]), value: "{}".into() },
        ];
        let together = apply(&doc, &edits).unwrap();
        // What the walks remember stays true after every splice.
        let mut d = Doc { text: doc.clone(), skips: Skips::kept() };
        let mut remembered = 0;
        for e in &edits {
            match e {
                Edit::Set { path, value } => d.put(path, value, false).unwrap(),
                Edit::SetIfAbsent { path, value } => d.put(path, value, true).unwrap(),
                Edit::Append { path, value } => d.append(path, value).unwrap(),
            }
            for &(start, end) in &d.skips.ends {
                assert_eq!(end_of(&d.text, start), Some(end), "after {e:?}: the value at {start}");
            }
            assert!(d.skips.ends.windows(2).all(|w| w[0].0 < w[1].0), "after {e:?}: the starts are not in order");
            remembered += d.skips.ends.len();
        }
        assert!(remembered > 20, "the walks remembered {remembered} values");
        assert_eq!(d.text, together);
        let mut one_by_one = doc.clone();
        for e in &edits {
            one_by_one = apply(&one_by_one, std::slice::from_ref(e)).unwrap();
        }
        assert_eq!(together, one_by_one);
        let v: serde_json::Value = serde_json::from_str(&together).unwrap();
        assert_eq!(v["metadata"]["labels"]["owner"], "jane");
        assert_eq!(v["metadata"]["annotations"]["last"], "again");
        assert_eq!(v["metadata"]["annotations"]["b"][1]["c"], "}]");
        assert_eq!(v["spec"]["a"][0]["m"]["l"], serde_json::json!([1, {"x": []}]));
        assert_eq!(v["spec"]["a"][1]["m"]["k"], true);
        assert_eq!(v["spec"]["t"]["metadata"]["labels"], serde_json::json!({"k": "v", "owner": "jane", "team": "ml"}));
        assert_eq!(v["spec"]["z"], 0);
        assert_eq!(v["spec"]["tolerations"], serde_json::json!([{}]));
        assert_eq!(v["status"], serde_json::json!({}));
    }

    /// The edits the mutating rules make to a RayCluster (owner labels and
    /// annotations everywhere, runtime class, tolerations and node affinity
    /// in its templates), applied to one document that remembers what its
    /// walks skipped, give the text a walk that remembers nothing gives:
    /// byte for byte, what the bundle and a rule alone wrote before they
    /// remembered containers' ends.
    #[test]
    fn a_raycluster_edited_by_every_mutating_rule_is_the_same_text() {
        let request = include_str!("../../../../host-test/bench/raycluster-request.json");
        let object = find(request, &Path::root().key("object")).unwrap();
        let spec = Path::root().key("spec");
        let templates = [
            spec.keys(&["headGroupSpec", "template"]),
            spec.keys(&["workerGroupSpecs"]).index(0).key("template"),
            spec.keys(&["workerGroupSpecs"]).index(1).key("template"),
        ];
        let mut edits = Vec::new();
        for meta in std::iter::once(Path::root().key("metadata")).chain(templates.iter().map(|t| t.key("metadata"))) {
            edits.push(Edit::Set { path: meta.keys(&["labels", "owner"]), value: quote("jane.doe-example.com") });
            edits.push(Edit::Set { path: meta.keys(&["annotations", "aigov.dev/owner"]), value: quote("jane.doe@example.com") });
        }
        for t in &templates {
            let terms =
                t.keys(&["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
            edits.push(Edit::Set {
                path: terms,
                value: r#"[{"matchExpressions":[{"key":"nvidia.com/gpu.present","operator":"NotIn","values":["true"]}]}]"#.into(),
            });
            edits.push(Edit::SetIfAbsent { path: t.keys(&["spec", "runtimeClassName"]), value: quote("nvidia") });
            edits.push(Edit::Append {
                path: t.keys(&["spec", "tolerations"]),
                value: r#"{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}"#.into(),
            });
        }
        // In sets, as the bundle applies one rule's after another's.
        let mut doc = Doc::new(object);
        for set in edits.chunks(5) {
            doc.apply_all(set).unwrap();
        }
        let mut forgetful = Doc { text: object.to_string(), skips: Skips::none() };
        forgetful.apply_all(&edits).unwrap();
        assert!(forgetful.skips.ends.is_empty());
        assert_eq!(doc.text, forgetful.text);
        assert_eq!(apply(object, &edits).unwrap(), forgetful.text);
        assert_eq!(doc.text.matches("jane.doe@example.com").count(), 4 + object.matches("jane.doe@example.com").count());
        serde_json::from_str::<serde::de::IgnoredAny>(&doc.text).unwrap();
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
        assert_eq!(
            find_string(t, &Path::root().keys(&["metadata", "annotations", "aigov.dev/owner"])).as_deref(),
            Some("jane@example.com")
        );
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "n"])), None, "not a string");
        assert_eq!(find_string(t, &Path::root().keys(&["metadata", "x"])), None);
    }

    #[test]
    fn pointers() {
        assert_eq!(Path::root().keys(&["metadata", "labels", "a/b~c"]).pointer(), "/metadata/labels/a~1b~0c");
        assert_eq!(Path::root().key("x").index(3).pointer(), "/x/3");
    }
}
