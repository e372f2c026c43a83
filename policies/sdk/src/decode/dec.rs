//! The request decoder: a small pull parser over the request text and a
//! [`Decode`] trait the model implements, field by field.
//!
//! Why not serde's derive, as for settings: a derived deserializer is a
//! visitor per type, monomorphised and inlined at every place the type
//! appears (inside `Option`, in a list, behind a null-tolerant wrapper), and
//! each also decodes structs from JSON arrays. For a model of this size that
//! was most of every rule's module (740 KiB). Here every type has one
//! decoding function, strings borrow from the input unless escaped, unknown
//! fields are skipped (and validated) without allocating, `null` reads as
//! absent, and errors carry the byte offset, from which
//! [`crate::decode::json::path_at`] names the field.
//!
//! The parser accepts exactly RFC 8259 JSON, as serde_json does (same
//! nesting limit of 128), so a document one rejects the other rejects too
//! (the differential fuzz target holds the two to that).

use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// serde_json's words for a raw control character inside a string.
const CONTROL_CHARACTER: &str = "control character (\\u0000-\\u001F) found while parsing a string";

/// Nesting deeper than this is refused, as serde_json refuses it.
const MAX_DEPTH: u32 = 128;

/// Why decoding stopped, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecError {
    /// What is wrong, in serde's words ("invalid type: string \"x\",
    /// expected a list").
    pub message: String,
    /// Byte offset: the start of the offending value, or where the syntax
    /// broke.
    pub at: usize,
    /// Whether this is a syntax error (the text is not JSON), reported with
    /// its line and column, rather than a value of the wrong type.
    pub syntax: bool,
}

/// A decoding result.
pub type R<T> = Result<T, DecError>;

/// A pull parser over JSON text.
pub struct Dec<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// Whether values skipped inside objects and lists are skimmed (their
    /// extent found at byte speed, not validated): [`Dec::skimming`].
    skim: bool,
}

/// Where the run of plain string characters starting at `i` ends: the
/// index of the first `"`, `\\` or control character (below 0x20) at or
/// after `i`, or the end of `b`. Most of a request is strings (names,
/// images, labels, commands, the escaped `last-applied-configuration`), so
/// they are scanned sixteen bytes at a time with wasm's simd128 in the
/// guests, then (and natively) eight at a time with a 64-bit word.
#[inline]
pub(crate) fn plain_run_end(b: &[u8], i: usize) -> usize {
    run_end::<true>(b, i)
}

/// Where the run of string characters starting at `i` ends when only the
/// string's end matters ([`Dec::skim`]): the first `"` or `\\` at or after
/// `i`, or the end of `b`, found as [`plain_run_end`] finds it.
#[inline]
fn quote_or_backslash(b: &[u8], i: usize) -> usize {
    run_end::<false>(b, i)
}

/// The first `"` or `\\` (and with `CONTROL`, byte below 0x20) at or after
/// `i`, or the end of `b`. In the word loop, for each test
/// `(v - 0x01..) & !v & 0x80..` has the high bit of a byte set where `v`'s
/// byte is zero (or, with 0x20, below 0x20), exact for the lowest such
/// byte, which is the one wanted (borrows only reach bytes above it).
#[inline(always)]
fn run_end<const CONTROL: bool>(b: &[u8], mut i: usize) -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_load, v128_or};
        while let Some(chunk) = b.get(i..i + 16) {
            // SAFETY: `chunk` is sixteen readable bytes; `v128_load` reads
            // them unaligned.
            #[allow(unsafe_code)]
            let v = unsafe { v128_load(chunk.as_ptr().cast::<v128>()) };
            let mut hits = v128_or(u8x16_eq(v, u8x16_splat(b'"')), u8x16_eq(v, u8x16_splat(b'\\')));
            if CONTROL {
                hits = v128_or(hits, u8x16_lt(v, u8x16_splat(0x20)));
            }
            let mask = u8x16_bitmask(hits);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES << 7;
    while let Some(chunk) = b.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else { break };
        let x = u64::from_le_bytes(word);
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let mut hits = (quote.wrapping_sub(ONES) & !quote) | (backslash.wrapping_sub(ONES) & !backslash);
        if CONTROL {
            hits |= x.wrapping_sub(ONES * 0x20) & !x;
        }
        hits &= HIGH;
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(c) = b.get(i) {
        if *c == b'"' || *c == b'\\' || (CONTROL && *c < 0x20) {
            break;
        }
        i += 1;
    }
    i
}

/// A type the request decoder can produce.
pub trait Decode<'a>: Sized {
    /// Decodes one value (a `null` where the type has an empty form is that
    /// form: absent).
    fn decode(d: &mut Dec<'a>) -> R<Self>;
}

impl<'a> Dec<'a> {
    /// A parser at the start of `text`.
    pub fn new(text: &'a str) -> Dec<'a> {
        Dec { text, b: text.as_bytes(), i: 0, depth: 0, skim: false }
    }

    /// A parser at the start of `text` that skims the objects and lists it
    /// skips: their extent is found at byte speed (strings and brackets
    /// only), and what is in them is not validated. For text the API server
    /// wrote (a lookup's answer), never for the request: what it decodes
    /// is checked as [`Dec::new`] checks it, and a skipped value that does
    /// not end (a string or bracket left open) is reported as `new` reports
    /// it.
    pub fn skimming(text: &'a str) -> Dec<'a> {
        Dec { skim: true, ..Dec::new(text) }
    }

    /// Whether this parser skims what it skips ([`Dec::skimming`]).
    pub fn is_skimming(&self) -> bool {
        self.skim
    }

    /// Skips an object or a list at byte speed: its text, without checking
    /// what is in it beyond where strings and brackets end. `None`, with the
    /// cursor where it was, when it does not end (or no object or list is
    /// next).
    #[inline(never)]
    pub fn skim(&mut self) -> Option<&'a str> {
        let b = self.b;
        let start = self.i + b.get(self.i..)?.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))?;
        if !matches!(b.get(start), Some(b'{' | b'[')) {
            return None;
        }
        let mut i = start;
        let mut open = 0usize;
        while let Some(&c) = b.get(i) {
            i += 1;
            match c {
                b'"' => loop {
                    i = quote_or_backslash(b, i);
                    match b.get(i)? {
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 2,
                    }
                },
                b'{' | b'[' => open += 1,
                b'}' | b']' => {
                    open -= 1;
                    if open == 0 {
                        self.i = i;
                        return self.text.get(start..i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The byte offset of the cursor.
    pub fn offset(&self) -> usize {
        self.i
    }

    /// The text from byte offset `from` to the cursor, without the JSON
    /// whitespace before it: the value just decoded, when `from` is the
    /// offset before it.
    pub fn since(&self, from: usize) -> &'a str {
        self.text.get(from..self.i).unwrap_or_default().trim_start_matches(crate::decode::dec::WHITESPACE)
    }

    /// Decodes a whole document as `T`: one value, then only whitespace.
    pub fn document<T: Decode<'a>>(text: &'a str) -> R<T> {
        let mut d = Dec::new(text);
        let v = T::decode(&mut d)?;
        d.end()?;
        Ok(v)
    }

    /// Requires the rest of the text to be whitespace.
    pub fn end(&mut self) -> R<()> {
        self.ws();
        if self.i < self.b.len() { Err(self.syntax("trailing characters")) } else { Ok(()) }
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next significant byte, after whitespace.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn syntax(&self, message: &str) -> DecError {
        DecError { message: message.to_string(), at: self.i, syntax: true }
    }

    fn eof(&self, what: &str) -> DecError {
        DecError { message: format!("EOF while parsing {what}"), at: self.i, syntax: true }
    }

    /// "invalid type: <what is here>, expected <expected>", at the value
    /// under the cursor (which is not consumed).
    #[inline(never)]
    pub fn invalid_type(&mut self, expected: &str) -> DecError {
        self.ws();
        let at = self.i;
        let found = self.describe_here();
        DecError { message: format!("invalid type: {found}, expected {expected}"), at, syntax: false }
    }

    /// A value error ("invalid value: ...") at `at`.
    pub fn invalid_value(&self, at: usize, message: String) -> DecError {
        DecError { message, at, syntax: false }
    }

    /// How serde names the value under the cursor, in Kubernetes' words.
    #[inline(never)]
    fn describe_here(&mut self) -> String {
        let save = self.i;
        let out = match self.b.get(self.i) {
            Some(b'"') => match self.string() {
                Ok(s) => format!("string {:?}", &*s),
                Err(_) => "string".into(),
            },
            Some(b'{') => "object".into(),
            Some(b'[') => "list".into(),
            Some(b't') => "boolean `true`".into(),
            Some(b'f') => "boolean `false`".into(),
            Some(b'n') => "null".into(),
            Some(_) => match self.number() {
                Ok((text, true)) => format!("integer `{text}`"),
                Ok((text, false)) => format!("floating point `{text}`"),
                Err(_) => "value".into(),
            },
            None => "nothing".into(),
        };
        self.i = save;
        out
    }

    /// Consumes `null` if it is next.
    pub fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.b.get(self.i..self.i + 4) == Some(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    #[inline(never)]
    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(())
        } else if self.i + word.len() > self.b.len() && self.b.get(self.i..).is_some_and(|rest| word.starts_with(rest)) {
            self.i = self.b.len();
            Err(self.eof("a value"))
        } else {
            Err(self.syntax("expected ident"))
        }
    }

    /// A string, borrowed unless it holds escapes.
    #[inline(never)]
    pub fn string(&mut self) -> R<Str<'a>> {
        if self.peek() != Some(b'"') {
            return Err(self.invalid_type("a string"));
        }
        self.i += 1;
        let start = self.i;
        self.i = plain_run_end(self.b, self.i);
        match self.b.get(self.i) {
            None => Err(self.eof("a string")),
            Some(b'"') => {
                let s = self.text.get(start..self.i).unwrap_or_default();
                self.i += 1;
                Ok(Str(Cow::Borrowed(s)))
            }
            Some(b'\\') => self.escaped(start),
            Some(_) => Err(self.syntax(CONTROL_CHARACTER)),
        }
    }

    /// The rest of a string with escapes, decoded.
    #[inline(never)]
    fn escaped(&mut self, start: usize) -> R<Str<'a>> {
        let mut out = String::from(self.text.get(start..self.i).unwrap_or_default());
        loop {
            match self.b.get(self.i) {
                None => return Err(self.eof("a string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(Str(Cow::Owned(out)));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(&e) = self.b.get(self.i) else { return Err(self.eof("a string")) };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode()?),
                        _ => return Err(self.syntax("invalid escape")),
                    }
                }
                Some(c) if *c < 0x20 => return Err(self.syntax(CONTROL_CHARACTER)),
                Some(_) => {
                    // Copy a run of plain characters (whole UTF-8 sequences).
                    let run = self.i;
                    self.i = plain_run_end(self.b, self.i);
                    out.push_str(self.text.get(run..self.i).unwrap_or_default());
                }
            }
        }
    }

    #[inline(never)]
    fn hex4(&mut self) -> R<u32> {
        let Some(h) = self.b.get(self.i..self.i + 4) else {
            self.i = self.b.len();
            return Err(self.eof("a string"));
        };
        let mut v = 0u32;
        for c in h {
            let d = (*c as char).to_digit(16).ok_or_else(|| self.syntax("invalid escape"))?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    #[inline(never)]
    fn unicode(&mut self) -> R<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                    return Err(self.syntax("lone leading surrogate in hex escape"));
                }
                self.i += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone leading surrogate in hex escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone leading surrogate in hex escape")),
            c => c,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid unicode code point"))
    }

    /// A number's text, and whether it is an integer (no fraction or
    /// exponent), validated by JSON's grammar.
    #[inline(never)]
    fn number(&mut self) -> R<(&'a str, bool)> {
        let start = self.i;
        let mut integer = true;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => {
                self.i += 1;
                if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return Err(self.syntax("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
            }
            None => return Err(self.eof("a value")),
            Some(_) => return Err(self.syntax("expected value")),
        }
        if self.b.get(self.i) == Some(&b'.') {
            integer = false;
            self.i += 1;
            if !self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return Err(if self.i >= self.b.len() { self.eof("a value") } else { self.syntax("invalid number") });
            }
            while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            integer = false;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return Err(if self.i >= self.b.len() { self.eof("a value") } else { self.syntax("invalid number") });
            }
            while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
        }
        let text = self.text.get(start..self.i).unwrap_or_default();
        // serde_json reads numbers as f64 past the integers: one that
        // overflows to infinity is refused there, so here too.
        if (!integer || text.len() > 18) && text.parse::<f64>().is_ok_and(f64::is_infinite) {
            self.i = start;
            return Err(self.syntax("number out of range"));
        }
        Ok((text, integer))
    }

    /// A whole number that fits an `i64`.
    #[inline(never)]
    pub fn int(&mut self) -> R<i64> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {
                let at = self.i;
                let (text, integer) = self.number()?;
                if !integer {
                    self.i = at;
                    return Err(self.invalid_type("a whole number"));
                }
                text.parse::<i64>().map_err(|_| self.invalid_value(at, format!("invalid value: integer `{text}`, expected a whole number")))
            }
            _ => Err(self.invalid_type("a whole number")),
        }
    }

    /// `true` or `false`.
    #[inline(never)]
    pub fn boolean(&mut self) -> R<bool> {
        match self.peek() {
            Some(b't') if self.b.get(self.i..self.i + 4) == Some(b"true") => {
                self.i += 4;
                Ok(true)
            }
            Some(b'f') if self.b.get(self.i..self.i + 5) == Some(b"false") => {
                self.i += 5;
                Ok(false)
            }
            _ => Err(self.invalid_type("a boolean")),
        }
    }

    /// A string, or a number kept as written (resource quantities and
    /// `nprocPerNode` in hand-written YAML).
    #[inline(never)]
    pub fn string_or_number(&mut self, expected: &str) -> R<Str<'a>> {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => {
                let (text, _) = self.number()?;
                Ok(Str(Cow::Borrowed(text)))
            }
            _ => Err(self.invalid_type(expected)),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.syntax("recursion limit exceeded"));
        }
        Ok(())
    }

    /// Walks an object: `each` is called with every key and must consume its
    /// value. `null` is an empty object.
    pub fn object(&mut self, each: impl FnMut(&mut Dec<'a>, Str<'a>) -> R<()>) -> R<()> {
        self.walk_object(Dec::string, each)
    }

    /// [`Dec::object`], with each key read by `key` (decoded, or only
    /// validated when the object is skipped).
    #[inline(always)]
    fn walk_object<K>(&mut self, key: impl Fn(&mut Dec<'a>) -> R<K>, mut each: impl FnMut(&mut Dec<'a>, K) -> R<()>) -> R<()> {
        if self.null() {
            return Ok(());
        }
        if self.peek() != Some(b'{') {
            return Err(self.invalid_type("an object"));
        }
        self.enter()?;
        self.i += 1;
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            match self.peek() {
                Some(b'"') => {}
                None => return Err(self.eof("an object")),
                Some(_) => return Err(self.syntax("key must be a string")),
            }
            let key = key(self)?;
            match self.peek() {
                Some(b':') => self.i += 1,
                None => return Err(self.eof("an object")),
                Some(_) => return Err(self.syntax("expected `:`")),
            }
            if self.peek().is_none() {
                return Err(self.eof("a value"));
            }
            each(self, key)?;
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    if self.peek() == Some(b'}') {
                        return Err(self.syntax("trailing comma"));
                    }
                }
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                None => return Err(self.eof("an object")),
                Some(_) => return Err(self.syntax("expected `,` or `}`")),
            }
        }
    }

    /// Walks a list: `each` is called for every element and must consume
    /// it. `null` is an empty list.
    pub fn list(&mut self, mut each: impl FnMut(&mut Dec<'a>) -> R<()>) -> R<()> {
        if self.null() {
            return Ok(());
        }
        if self.peek() != Some(b'[') {
            return Err(self.invalid_type("a list"));
        }
        self.enter()?;
        self.i += 1;
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if self.peek().is_none() {
                return Err(self.eof("a list"));
            }
            each(self)?;
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    if self.peek() == Some(b']') {
                        return Err(self.syntax("trailing comma"));
                    }
                }
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                None => return Err(self.eof("a list")),
                Some(_) => return Err(self.syntax("expected `,` or `]`")),
            }
        }
    }

    /// Skips one value, validating it.
    #[inline(never)]
    pub fn skip(&mut self) -> R<()> {
        match self.peek() {
            None => Err(self.eof("a value")),
            Some(b'{' | b'[') if self.skim && self.skim().is_some() => Ok(()),
            Some(b'"') => self.skip_string().map(drop),
            // The keys of a skipped object are validated, not decoded.
            Some(b'{') => self.walk_object(|d| d.skip_string().map(drop), |d, ()| d.skip()),
            Some(b'[') => self.list(Dec::skip),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => self.number().map(drop),
        }
    }

    /// Skips a string (validated); whether it holds escapes.
    #[inline(never)]
    fn skip_string(&mut self) -> R<bool> {
        self.i += 1;
        let mut escaped = false;
        loop {
            match self.b.get(self.i) {
                None => return Err(self.eof("a string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    self.i += 1;
                    escaped = true;
                    match self.b.get(self.i) {
                        None => return Err(self.eof("a string")),
                        Some(b'u') => {
                            self.i += 1;
                            self.unicode()?;
                        }
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(_) => {
                            self.i += 1;
                            return Err(self.syntax("invalid escape"));
                        }
                    }
                }
                Some(c) if *c < 0x20 => return Err(self.syntax(CONTROL_CHARACTER)),
                Some(_) => self.i = plain_run_end(self.b, self.i),
            }
        }
    }

    /// A string kept as the request spells it, validated, to be decoded
    /// when read ([`RawStr`]).
    pub fn raw_string(&mut self) -> R<RawStr<'a>> {
        if self.peek() != Some(b'"') {
            return Err(self.invalid_type("a string"));
        }
        let start = self.i;
        let escaped = self.skip_string()?;
        Ok(RawStr { quoted: self.text.get(start..self.i).unwrap_or_default(), escaped })
    }

    /// Skips one value and returns its text.
    #[inline(never)]
    pub fn raw(&mut self) -> R<&'a str> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Ok(self.text.get(start..self.i).unwrap_or_default())
    }

    /// Skips one value; whether it was anything but `null`.
    #[inline(never)]
    pub fn is_set(&mut self) -> R<bool> {
        if self.null() {
            return Ok(false);
        }
        self.skip()?;
        Ok(true)
    }
}

/// Any value, skipped (validated).
pub struct Skip;

impl<'a> Decode<'a> for Skip {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.skip().map(|()| Skip)
    }
}

impl<'a> Decode<'a> for Str<'a> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.string()
    }
}

impl<'a> Decode<'a> for RawStr<'a> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.raw_string()
    }
}

impl<'a> Decode<'a> for bool {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.boolean()
    }
}

impl<'a> Decode<'a> for i64 {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.int()
    }
}

impl<'a, T: Decode<'a>> Decode<'a> for Option<T> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        if d.null() { Ok(None) } else { T::decode(d).map(Some) }
    }
}

/// A large value kept on the heap, so that the frames of the decoders that
/// hold it stay small: a fresh instance pays a page fault for every page of
/// shadow stack it reaches.
impl<'a, T: Decode<'a>> Decode<'a> for Box<T> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        T::decode(d).map(Box::new)
    }
}

impl<'a, T: Decode<'a>> Decode<'a> for Vec<T> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = Vec::new();
        d.list(|d| {
            out.push(T::decode(d)?);
            Ok(())
        })?;
        Ok(out)
    }
}

impl<'a, V: Decode<'a>> Decode<'a> for BTreeMap<Str<'a>, V> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = BTreeMap::new();
        d.object(|d, k| {
            out.insert(k, V::decode(d)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// Implements [`Decode`] for a struct with a `Default`: an object whose
/// listed keys decode into the named fields (each field's own `Decode`),
/// other keys skipped, `null` the default. One decoding function per type,
/// not inlined into its users.
#[macro_export]
#[doc(hidden)]
macro_rules! decode_struct {
    ($ty:ident { $($key:literal => $field:ident),* $(,)? }) => {
        impl<'a> $ty<'a> {
            /// Decodes the value of `key` into its field; `false` (nothing
            /// consumed) when the key is not one of this type's.
            #[allow(dead_code)]
            pub(crate) fn decode_field(&mut self, key: &str, d: &mut $crate::decode::dec::Dec<'a>) -> $crate::decode::dec::R<bool> {
                match key {
                    $($key => self.$field = $crate::decode::dec::Decode::decode(d)?,)*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }

        impl<'a> $crate::decode::dec::Decode<'a> for $ty<'a> {
            #[inline(never)]
            fn decode(d: &mut $crate::decode::dec::Dec<'a>) -> $crate::decode::dec::R<Self> {
                let mut out = $ty::default();
                d.object(|d, key| {
                    if !out.decode_field(&key, d)? {
                        d.skip()?;
                    }
                    Ok(())
                })?;
                Ok(out)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> DecError {
        let mut d = Dec::new(text);
        d.skip().and_then(|()| d.end()).unwrap_err()
    }

    #[test]
    fn a_skim_finds_where_a_value_ends() {
        let text = r#" {"a":[1,"]}\"",{"b":{}}],"c":"{"} ,7"#;
        let mut d = Dec::skimming(text);
        assert_eq!(d.skim(), Some(r#"{"a":[1,"]}\"",{"b":{}}],"c":"{"}"#));
        assert_eq!(d.peek(), Some(b','));
        // Not an object or a list, or one that does not end: nothing moves.
        for text in [r#""x""#, "7", r#"{"a":[1}"#, r#"{"a":"}"#, "[[]"] {
            let mut d = Dec::skimming(text);
            assert_eq!(d.skim(), None, "{text}");
            assert_eq!(d.offset(), 0);
        }
        // What it skips it only skims; `new` validates.
        assert!(Dec::skimming(r#"{"a":[7,],"b":x}"#).skip().is_ok());
        assert!(Dec::new(r#"{"a":[7,],"b":x}"#).skip().is_err());
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut d = Dec::new(r#"["plain", "esc\"aped\u00e9\ud83d\ude00", "\n"]"#);
        let v: Vec<Str<'_>> = Vec::decode(&mut d).unwrap();
        assert!(matches!(v[0].0, Cow::Borrowed("plain")));
        assert_eq!(&*v[1], "esc\"apedé😀");
        assert_eq!(&*v[2], "\n");
    }

    /// A string kept raw reads as the decoded string reads, borrowed when
    /// it holds no escapes, and is refused where and as a decoded one is.
    #[test]
    fn raw_strings_read_as_decoded_strings() {
        let texts = [r#""plain""#, r#""""#, r#""esc\"aped\u00e9\ud83d\ude00 \n\/\\""#, r#""{\"kind\":\"Pod\"}""#];
        for text in texts {
            let raw = Dec::document::<RawStr<'_>>(text).unwrap();
            let decoded = Dec::document::<Str<'_>>(text).unwrap();
            assert_eq!(raw.get(), decoded, "{text}");
            assert_eq!(format!("{raw:?}"), format!("{decoded:?}"));
            assert_eq!(matches!(raw.get().0, Cow::Borrowed(_)), !text.contains('\\'), "{text}");
        }
        assert_eq!(&*RawStr::default().get(), "");
        for bad in ["null", "1", "{}", r#""\x""#, r#""ab\ud800""#, "\"a\u{1}b\"", r#""abc"#, r#""\u12"#] {
            let raw = Dec::document::<RawStr<'_>>(bad).map(drop).unwrap_err();
            let decoded = Dec::document::<Str<'_>>(bad).map(drop).unwrap_err();
            assert_eq!((raw.message, raw.at), (decoded.message, decoded.at), "{bad}");
        }
    }

    /// The word-at-a-time scan finds what a byte-by-byte scan finds: every
    /// stopping byte and the bytes around each boundary of the classes
    /// (below and at 0x20, the quote and backslash and their neighbours,
    /// 0x7f, UTF-8 lead and continuation bytes), at every position of a
    /// buffer longer than two words, after every kind of background byte,
    /// and from every starting offset.
    #[test]
    fn plain_runs_end_where_a_byte_scan_ends() {
        fn naive(b: &[u8], mut i: usize) -> usize {
            while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
                i += 1;
            }
            i
        }
        let probes = [0x00, 0x01, 0x1f, 0x20, 0x21, b'"', 0x23, b'[', b'\\', b']', b'a', 0x7f, 0x80, 0xa2, 0xdc, 0xe2, 0xff];
        for background in [b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff] {
            for len in 0..20 {
                for at in 0..len {
                    for probe in probes {
                        let mut b = vec![background; len];
                        b[at] = probe;
                        for start in 0..=len {
                            assert_eq!(plain_run_end(&b, start), naive(&b, start), "{b:x?} from {start}");
                        }
                    }
                }
            }
        }
        let mut d = Dec::new(r#"["0123456789abcdef\"after a word\u00e9", "ends\u0041", "x\tyz"]"#);
        let v: Vec<Str<'_>> = Vec::decode(&mut d).unwrap();
        assert_eq!(&*v[0], "0123456789abcdef\"after a wordé");
        assert_eq!(&*v[1], "endsA");
        assert_eq!(&*v[2], "x\tyz");
        assert_eq!(err("\"0123456789\u{1}abc\"").at, 11, "a control character is refused where it stands");
    }

    #[test]
    fn validation_matches_json() {
        for bad in [
            "1e999",
            "-1e400",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "\"\\x\"",
            "\"\u{1}\"",
            "{\"a\" 1}",
            "[1 2]",
            "tru",
            "nul",
            "\"\\ud800\"",
            "1 2",
            "{1:2}",
            "\"abc",
        ] {
            assert!(serde_json::from_str::<serde_json::Value>(bad).is_err(), "serde accepts {bad}");
            let mut d = Dec::new(bad);
            assert!(d.skip().and_then(|()| d.end()).is_err(), "accepted {bad:?}");
        }
        for good in ["{}", "[]", "-0", "1e-3", "1.5E+3", "\"\\u0041\"", " { \"a\" : [ null , true , false ] } "] {
            let mut d = Dec::new(good);
            assert!(d.skip().and_then(|()| d.end()).is_ok(), "refused {good:?}");
        }
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(err(&deep).message, "recursion limit exceeded");
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        let mut d = Dec::new(&ok);
        assert!(d.skip().is_ok());
    }

    #[test]
    fn type_errors_say_what_was_found() {
        let mut d = Dec::new(r#"{"a": "x"}"#);
        let e = d.object(|d, _| d.int().map(drop)).unwrap_err();
        assert_eq!(e.message, "invalid type: string \"x\", expected a whole number");
        assert_eq!(e.at, 6);
        let mut d = Dec::new("1.5");
        assert_eq!(d.int().unwrap_err().message, "invalid type: floating point `1.5`, expected a whole number");
        let mut d = Dec::new("99999999999999999999");
        assert!(d.int().unwrap_err().message.starts_with("invalid value: integer `99999999999999999999`"));
        let mut d = Dec::new("{}");
        assert_eq!(d.list(|d| d.skip()).unwrap_err().message, "invalid type: object, expected a list");
        let mut d = Dec::new("1e3");
        assert_eq!(&*d.string_or_number("q").unwrap(), "1e3", "kept as written: quantities read exponents");
    }
}

/// What JSON counts as whitespace (`str::trim` would take more).
pub const WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

// ------------------------------------------------------------ strings

/// A string from the request: borrowed from the request bytes unless the JSON
/// string contains escapes. Unlike `Cow<str>`, it borrows wherever it appears,
/// inside lists and maps too.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Str<'a>(pub Cow<'a, str>);

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Str<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Str<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Self {
        Str(Cow::Borrowed(s))
    }
}

/// A string value kept as the request spells it (validated, quotes
/// included) and decoded only when read: for the values rules rarely read
/// and requests often carry large. Annotations are the case: `kubectl apply`
/// writes the whole object, escaped, into
/// `kubectl.kubernetes.io/last-applied-configuration`, and unescaping it on
/// every request would cost more than the rest of the object.
#[derive(Clone, Copy)]
pub struct RawStr<'a> {
    pub(crate) quoted: &'a str,
    pub(crate) escaped: bool,
}

impl<'a> RawStr<'a> {
    /// The value, decoded: borrowed unless it holds escapes.
    pub fn get(&self) -> Str<'a> {
        if self.escaped {
            // Validated when it was decoded, so this cannot fail.
            Dec::new(self.quoted).string().unwrap_or_default()
        } else {
            Str(Cow::Borrowed(self.quoted.get(1..self.quoted.len().saturating_sub(1)).unwrap_or_default()))
        }
    }
}

impl Default for RawStr<'_> {
    fn default() -> Self {
        RawStr { quoted: "\"\"", escaped: false }
    }
}

impl fmt::Debug for RawStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.get(), f)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Deserializes `null` as the type's default: hand-written YAML often has
/// `labels:` or `tolerations:` with nothing after it.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
