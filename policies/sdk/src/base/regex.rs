//! Regular expressions in settings (Gatekeeper's `allowedRegex`): the part
//! of RE2's syntax such policies use, matched in time proportional to the
//! text times the pattern (a Thompson automaton run breadth-first, as RE2
//! and Go run them), so no value can make a match slow, and without
//! recursion over the text, so no value can exhaust the stack.
//!
//! Read as RE2 reads them:
//!
//! - literals, and any ASCII punctuation escaped (`\.`, `\/`, `\-`, `\$`);
//!   `\n`, `\t`, `\r`, `\f`, `\v`, `\a`, `\xHH`, `\x{H...}`;
//! - `.` (any character but a line feed, unless `(?s)`);
//! - classes: `[a-z0-9_-]`, `[^/]`, a leading `]` literal, the Perl classes
//!   `\d \w \s` (and `\D \W \S`) inside or outside them, and the ASCII
//!   classes `[[:alpha:]]`, `[[:^digit:]]`...;
//! - anchors `^ $` (the text's start and end, or a line's with `(?m)`),
//!   `\A \z`, word boundaries `\b \B`;
//! - groups `( )`, `(?: )`, `(?P<name> )`, `(?<name> )`; alternation `|`;
//! - repetition `* + ? {n} {n,} {n,m}`, at most 1000, and their lazy forms
//!   (which match the same texts); a `{` that starts no repetition is a
//!   literal;
//! - flags `(?i)` (ASCII letters in either case; other letters as written),
//!   `(?s)`, `(?m)`, `(?U)`, for the rest of the group or scoped
//!   (`(?i:...)`), and cleared with `-` (`(?-i)`).
//!
//! Refused, with the reason: back references and look-around (RE2 has
//! neither: a pattern using them means something else there), Unicode
//! classes (`\p{L}`), `\Q...\E`, and patterns larger than 10,000 steps
//! once repetitions are expanded.
//!
//! As in RE2, Go's `regexp.MatchString` and Gatekeeper's `regex.match`, a
//! text matches when the expression matches some part of it: anchor it
//! (`^...$`) to match whole values.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest count a repetition may have (RE2's).
const MAX_REPEAT: u32 = 1000;

/// The largest program, in steps, a pattern may compile to.
const MAX_PROGRAM: usize = 10_000;

/// The deepest nesting of groups.
const MAX_DEPTH: usize = 100;

/// A compiled regular expression.
#[derive(Clone)]
pub struct Regex {
    source: String,
    program: Vec<Inst>,
    sets: Vec<Set>,
}

impl Regex {
    /// Compiles `pattern`; the error says what is wrong and where.
    pub fn new(pattern: &str) -> Result<Regex, String> {
        let mut parser = Parser { chars: pattern.chars().collect(), pos: 0, flags: Flags::default() };
        let node = parser.alternation(0)?;
        if parser.pos < parser.chars.len() {
            // `alternation` stops only at the end or at a `)` it did not open.
            return Err("unmatched `)`: remove it, or escape it as `\\)`".into());
        }
        let mut c = Compiler { program: Vec::new(), sets: Vec::new() };
        c.emit(&node)?;
        c.push(Inst::Match)?;
        Ok(Regex { source: pattern.to_string(), program: c.program, sets: c.sets })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the expression matches some part of `text`.
    pub fn is_match(&self, text: &str) -> bool {
        let n = self.program.len();
        let mut current = Threads::new(n);
        let mut next = Threads::new(n);
        let mut stack = Vec::new();
        let mut prev: Option<char> = None;
        let mut rest = text;
        loop {
            let ahead = rest.chars().next();
            // A thread starting here: the match may begin anywhere.
            if self.add(&mut current, &mut stack, 0, prev, ahead) {
                return true;
            }
            let Some(c) = ahead else { return false };
            rest = rest.get(c.len_utf8()..).unwrap_or_default();
            let after = rest.chars().next();
            next.clear();
            for &pc in &current.dense {
                if let Some(Inst::Char(set)) = self.program.get(pc)
                    && self.sets.get(*set).is_some_and(|s| s.contains(c))
                    && self.add(&mut next, &mut stack, pc + 1, Some(c), after)
                {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
            prev = Some(c);
        }
    }

    /// Adds the thread at `pc` and every thread it reaches without reading
    /// a character (between `prev` and `next`); whether one of them is a
    /// match.
    fn add(&self, list: &mut Threads, stack: &mut Vec<usize>, pc: usize, prev: Option<char>, next: Option<char>) -> bool {
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if !list.insert(pc) {
                continue;
            }
            match self.program.get(pc) {
                Some(Inst::Match) => return true,
                Some(Inst::Jump(to)) => stack.push(*to),
                Some(Inst::Split(a, b)) => {
                    stack.push(*b);
                    stack.push(*a);
                }
                Some(Inst::Look(look)) if look.holds(prev, next) => stack.push(pc + 1),
                _ => {}
            }
        }
        false
    }
}

impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        self.source == other.source
    }
}

impl Eq for Regex {}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Regex({:?})", self.source)
    }
}

impl fmt::Display for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Serialize for Regex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for Regex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Regex, D::Error> {
        let text = String::deserialize(d)?;
        Regex::new(&text).map_err(|why| serde::de::Error::custom(format!("`{text}` is not a regular expression aigov reads: {why}")))
    }
}

/// The threads at one position: a sparse set of program counters, in the
/// order they were added.
struct Threads {
    dense: Vec<usize>,
    seen: Vec<bool>,
}

impl Threads {
    fn new(n: usize) -> Threads {
        Threads { dense: Vec::with_capacity(n), seen: vec![false; n] }
    }

    /// Adds `pc`; `false` if it was there already (or is out of range).
    fn insert(&mut self, pc: usize) -> bool {
        match self.seen.get_mut(pc) {
            Some(seen) if !*seen => {
                *seen = true;
                self.dense.push(pc);
                true
            }
            _ => false,
        }
    }

    fn clear(&mut self) {
        for &pc in &self.dense {
            if let Some(seen) = self.seen.get_mut(pc) {
                *seen = false;
            }
        }
        self.dense.clear();
    }
}

/// One step of a program.
#[derive(Clone, Copy, Debug)]
enum Inst {
    /// Read a character of the set with this index.
    Char(usize),
    /// Go on if the position is such.
    Look(Look),
    /// Go on at both.
    Split(usize, usize),
    /// Go on there.
    Jump(usize),
    /// A match.
    Match,
}

/// What an assertion asks of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    TextStart,
    TextEnd,
    LineStart,
    LineEnd,
    WordBoundary,
    NotWordBoundary,
}

impl Look {
    fn holds(self, prev: Option<char>, next: Option<char>) -> bool {
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        match self {
            Look::TextStart => prev.is_none(),
            Look::TextEnd => next.is_none(),
            Look::LineStart => prev.is_none_or(|c| c == '\n'),
            Look::LineEnd => next.is_none_or(|c| c == '\n'),
            Look::WordBoundary => word(prev) != word(next),
            Look::NotWordBoundary => word(prev) == word(next),
        }
    }
}

/// A set of characters: sorted, disjoint, non-adjacent ranges of code
/// points.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Set(Vec<(u32, u32)>);

const MAX_CHAR: u32 = 0x10_FFFF;

impl Set {
    fn of(ranges: &[(char, char)]) -> Set {
        let mut s = Set::default();
        for &(lo, hi) in ranges {
            s.add(lo as u32, hi as u32);
        }
        s
    }

    /// Adds `lo..=hi`, keeping the ranges sorted and merged (by hand: a
    /// set holds a few ranges, and a sort would weigh on every guest).
    fn add(&mut self, lo: u32, hi: u32) {
        // The ranges that touch or overlap the new one are merged into it.
        let start = self.0.partition_point(|&(_, h)| h.saturating_add(1) < lo);
        let end = self.0.partition_point(|&(l, _)| l <= hi.saturating_add(1));
        let (mut lo, mut hi) = (lo, hi);
        for &(l, h) in self.0.get(start..end).unwrap_or_default() {
            lo = lo.min(l);
            hi = hi.max(h);
        }
        self.0.splice(start..end.max(start), [(lo, hi)]);
    }

    fn union(&mut self, other: &Set) {
        for &(lo, hi) in &other.0 {
            self.add(lo, hi);
        }
    }

    fn negated(&self) -> Set {
        let mut out = Vec::new();
        let mut from = 0u32;
        for &(lo, hi) in &self.0 {
            if lo > from {
                out.push((from, lo - 1));
            }
            from = hi.saturating_add(1);
        }
        if from <= MAX_CHAR {
            out.push((from, MAX_CHAR));
        }
        Set(out)
    }

    fn contains(&self, c: char) -> bool {
        let c = c as u32;
        let i = self.0.partition_point(|&(_, hi)| hi < c);
        self.0.get(i).is_some_and(|&(lo, _)| lo <= c)
    }

    /// The set with the other case of its ASCII letters. (Other letters are
    /// not folded: Unicode's case tables would grow every guest for values,
    /// label values above all, that are ASCII.)
    fn folded(&self) -> Set {
        let mut out = self.clone();
        for &(lo, hi) in &self.0 {
            for (from, to, lower) in [(u32::from(b'a'), u32::from(b'z'), true), (u32::from(b'A'), u32::from(b'Z'), false)] {
                let (l, h) = (lo.max(from), hi.min(to));
                if l <= h {
                    if lower {
                        out.add(l - 32, h - 32);
                    } else {
                        out.add(l + 32, h + 32);
                    }
                }
            }
        }
        out
    }
}

fn perl_class(c: char) -> Option<Set> {
    let (set, negate) = match c {
        'd' | 'D' => (Set::of(&[('0', '9')]), c == 'D'),
        'w' | 'W' => (Set::of(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]), c == 'W'),
        's' | 'S' => (Set::of(&[('\t', '\n'), ('\x0c', '\r'), (' ', ' ')]), c == 'S'),
        _ => return None,
    };
    Some(if negate { set.negated() } else { set })
}

fn ascii_class(name: &str) -> Option<Set> {
    let ranges: &[(char, char)] = match name {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7f')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1f'), ('\x7f', '\x7f')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "print" => &[(' ', '~')],
        "lower" => &[('a', 'z')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')],
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    };
    Some(Set::of(ranges))
}

/// A parsed pattern.
#[derive(Debug)]
enum Node {
    Empty,
    Set(Set),
    Look(Look),
    Concat(Vec<Node>),
    Alternation(Vec<Node>),
    Repeat { node: Box<Node>, min: u32, max: Option<u32> },
}

#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    /// `i`: letters in either case.
    fold: bool,
    /// `s`: `.` matches a line feed too.
    dot_nl: bool,
    /// `m`: `^` and `$` match at lines' starts and ends.
    multi_line: bool,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    flags: Flags,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Where `pair` next occurs from `start`, counted from `start`.
    fn find_from(&self, start: usize, pair: [char; 2]) -> Option<usize> {
        self.chars.get(start..)?.windows(2).position(|w| w == pair)
    }

    fn eat(&mut self, c: char) -> bool {
        let yes = self.peek() == Some(c);
        if yes {
            self.pos += 1;
        }
        yes
    }

    /// `a|b|...`, up to the end or a `)`.
    fn alternation(&mut self, depth: usize) -> Result<Node, String> {
        let mut branches = vec![self.concat(depth)?];
        while self.eat('|') {
            branches.push(self.concat(depth)?);
        }
        Ok(if branches.len() == 1 { branches.pop().unwrap_or(Node::Empty) } else { Node::Alternation(branches) })
    }

    /// Atoms with their repetitions, up to `|`, `)` or the end.
    fn concat(&mut self, depth: usize) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let Some(atom) = self.atom(depth)? else { continue };
            let atom = self.repetitions(atom)?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    /// The repetitions after an atom (one, and a `?` making it lazy).
    fn repetitions(&mut self, atom: Node) -> Result<Node, String> {
        let Some((min, max, len)) = self.repeat_here() else { return Ok(atom) };
        let op: String = self.chars.iter().skip(self.pos).take(len).collect();
        self.pos += len;
        self.eat('?');
        if let Some((_, _, len2)) = self.repeat_here() {
            let more: String = self.chars.iter().skip(self.pos).take(len2).collect();
            return Err(format!("bad repetition operator `{op}{more}`: repeat a group instead, such as `(?:x{op}){more}`"));
        }
        Ok(Node::Repeat { node: Box::new(atom), min, max })
    }

    /// A repetition operator at the current position: its counts and
    /// length.
    fn repeat_here(&self) -> Option<(u32, Option<u32>, usize)> {
        match self.peek()? {
            '*' => Some((0, None, 1)),
            '+' => Some((1, None, 1)),
            '?' => Some((0, Some(1), 1)),
            '{' => {
                let text: String = self.chars.iter().skip(self.pos + 1).take_while(|c| **c != '}').collect();
                if self.chars.get(self.pos + 1 + text.chars().count()) != Some(&'}') {
                    return None;
                }
                let count =
                    |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().unwrap_or(u32::MAX));
                let (min, max) = match text.split_once(',') {
                    None => {
                        let n = count(&text)?;
                        (n, Some(n))
                    }
                    Some((lo, "")) => (count(lo)?, None),
                    Some((lo, hi)) => (count(lo)?, Some(count(hi)?)),
                };
                Some((min, max, text.chars().count() + 2))
            }
            _ => None,
        }
    }

    /// One atom, or `None` for a flag group that only set flags.
    fn atom(&mut self, depth: usize) -> Result<Option<Node>, String> {
        let Some(c) = self.peek() else { return Ok(Some(Node::Empty)) };
        if let Some((_, _, len)) = self.repeat_here() {
            let op: String = self.chars.iter().skip(self.pos).take(len).collect();
            return Err(format!("missing argument to repetition operator `{op}`: escape it (`\\{c}`) to match it literally"));
        }
        self.pos += 1;
        Ok(Some(match c {
            '(' => return self.group(depth),
            '[' => self.class()?,
            '.' if self.flags.dot_nl => Node::Set(Set(vec![(0, MAX_CHAR)])),
            '.' => Node::Set(Set::of(&[('\n', '\n')]).negated()),
            '^' => Node::Look(if self.flags.multi_line { Look::LineStart } else { Look::TextStart }),
            '$' => Node::Look(if self.flags.multi_line { Look::LineEnd } else { Look::TextEnd }),
            '\\' => self.escape()?,
            c => self.literal(c),
        }))
    }

    fn literal(&self, c: char) -> Node {
        let set = Set::of(&[(c, c)]);
        Node::Set(if self.flags.fold { set.folded() } else { set })
    }

    /// After `(`: a group, or flags.
    fn group(&mut self, depth: usize) -> Result<Option<Node>, String> {
        if depth >= MAX_DEPTH {
            return Err(format!("groups are nested more than {MAX_DEPTH} deep"));
        }
        let saved = self.flags;
        if self.eat('?') {
            match self.peek() {
                Some(':') => self.pos += 1,
                Some('P') if self.peek_at(1) == Some('<') => {
                    self.pos += 2;
                    self.group_name()?;
                }
                Some('<') if !matches!(self.peek_at(1), Some('=' | '!')) => {
                    self.pos += 1;
                    self.group_name()?;
                }
                Some('=' | '!' | '<') => {
                    return Err("look-around (`(?=`, `(?!`, `(?<=`, `(?<!`) is not RE2 syntax: write the pattern without it".into());
                }
                _ => {
                    // Flags: `(?i)` for the rest of the group, `(?i:...)` for its own.
                    let scoped = self.flags()?;
                    if !scoped {
                        return Ok(None);
                    }
                }
            }
        }
        let node = self.alternation(depth + 1)?;
        if !self.eat(')') {
            return Err("missing `)`: close every group".into());
        }
        self.flags = saved;
        Ok(Some(node))
    }

    fn group_name(&mut self) -> Result<(), String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        if self.pos == start || !self.eat('>') {
            return Err("a group name is letters, digits and `_`, closed by `>`, such as `(?P<team>...)`".into());
        }
        Ok(())
    }

    /// Reads flags after `(?` up to `)` (they apply to the rest of the
    /// enclosing group: `false`) or `:` (to a group of their own: `true`).
    fn flags(&mut self) -> Result<bool, String> {
        let mut on = true;
        let mut any = false;
        loop {
            let Some(c) = self.peek() else { return Err("missing `)` after the flags".into()) };
            self.pos += 1;
            match c {
                'i' => self.flags.fold = on,
                's' => self.flags.dot_nl = on,
                'm' => self.flags.multi_line = on,
                // Ungreedy: a yes-or-no match is the same either way.
                'U' => {}
                '-' if on => {
                    on = false;
                    continue;
                }
                ')' | ':' if any => return Ok(c == ':'),
                _ => return Err(format!("`(?{c}`: the flags RE2 reads are `i`, `m`, `s` and `U`, as in `(?i)` or `(?i:...)`")),
            }
            any = true;
        }
    }

    /// After `\` outside a class.
    fn escape(&mut self) -> Result<Node, String> {
        let Some(c) = self.peek() else { return Err("a trailing `\\` escapes nothing: write `\\\\` for a backslash".into()) };
        self.pos += 1;
        if let Some(set) = perl_class(c) {
            return Ok(Node::Set(set));
        }
        Ok(match c {
            'b' => Node::Look(Look::WordBoundary),
            'B' => Node::Look(Look::NotWordBoundary),
            'A' => Node::Look(Look::TextStart),
            'z' => Node::Look(Look::TextEnd),
            _ => {
                let lit = self.escaped_char(c)?;
                self.literal(lit)
            }
        })
    }

    /// The character an escape `\c` stands for (the `\` read, `c` too).
    fn escaped_char(&mut self, c: char) -> Result<char, String> {
        Ok(match c {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'f' => '\x0c',
            'v' => '\x0b',
            'a' => '\x07',
            'x' => self.hex()?,
            '1'..='9' => return Err(format!("`\\{c}`: back references are not RE2 syntax")),
            'p' | 'P' => {
                return Err(format!("`\\{c}`: Unicode classes are not supported: write the characters as a class, such as `[a-zA-Z]`"));
            }
            'Q' => return Err("`\\Q...\\E` is not supported: escape each special character with `\\`".into()),
            c if c.is_ascii_punctuation() => c,
            c => return Err(format!("unknown escape `\\{c}`")),
        })
    }

    /// After `\x`: two hexadecimal digits, or any number in braces.
    fn hex(&mut self) -> Result<char, String> {
        let digits: String = if self.eat('{') {
            let d: String = self.chars.iter().skip(self.pos).take_while(|c| **c != '}').collect();
            self.pos += d.chars().count();
            if !self.eat('}') {
                return Err("`\\x{` needs a closing `}`".into());
            }
            d
        } else {
            let d: String = self.chars.iter().skip(self.pos).take(2).collect();
            self.pos += d.chars().count();
            if d.len() != 2 {
                return Err(format!("`\\x{d}` is not a character: write two hexadecimal digits, `\\xHH`, or `\\x{{H...}}`"));
            }
            d
        };
        let bad = || format!("`\\x{digits}` is not a character: write `\\xHH` or `\\x{{H...}}` in hexadecimal");
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) || digits.len() > 8 {
            return Err(bad());
        }
        u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32).ok_or_else(bad)
    }

    /// After `[`: a class up to its `]`.
    fn class(&mut self) -> Result<Node, String> {
        let negate = self.eat('^');
        let mut set = Set::default();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else { return Err("missing `]` at the end of a character class".into()) };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            // `[:alpha:]`, `[:^alpha:]`
            if c == '['
                && self.peek_at(1) == Some(':')
                && let Some(len) = self.find_from(self.pos + 2, [':', ']'])
            {
                let name: String = self.chars.iter().skip(self.pos + 2).take(len).collect();
                let (neg, plain) = match name.strip_prefix('^') {
                    Some(n) => (true, n.to_string()),
                    None => (false, name.clone()),
                };
                let Some(class) = ascii_class(&plain) else {
                    return Err(format!(
                        "`[:{name}:]` is not an ASCII class: use `alnum`, `alpha`, `digit`, `lower`, `upper`, `space`, `punct`, `xdigit`..."
                    ));
                };
                set.union(&if neg { class.negated() } else { class });
                self.pos += 2 + name.chars().count() + 2;
                continue;
            }
            self.pos += 1;
            let lo = if c == '\\' {
                let Some(e) = self.peek() else { return Err("missing `]` at the end of a character class".into()) };
                self.pos += 1;
                if let Some(class) = perl_class(e) {
                    set.union(&class);
                    continue;
                }
                self.escaped_char(e)?
            } else {
                c
            };
            // A range, unless the `-` ends the class.
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|n| n != ']') {
                self.pos += 1;
                let Some(h) = self.peek() else { return Err("missing `]` at the end of a character class".into()) };
                self.pos += 1;
                let hi = if h == '\\' {
                    let Some(e) = self.peek() else { return Err("missing `]` at the end of a character class".into()) };
                    self.pos += 1;
                    if perl_class(e).is_some() {
                        return Err(format!("`{lo}-\\{e}`: a range ends at a character, not a class"));
                    }
                    self.escaped_char(e)?
                } else {
                    h
                };
                if lo > hi {
                    return Err(format!("`{lo}-{hi}` is not a range: write the lower character first"));
                }
                set.add(lo as u32, hi as u32);
            } else {
                set.add(lo as u32, lo as u32);
            }
        }
        if self.flags.fold {
            set = set.folded();
        }
        Ok(Node::Set(if negate { set.negated() } else { set }))
    }
}

struct Compiler {
    program: Vec<Inst>,
    sets: Vec<Set>,
}

impl Compiler {
    fn push(&mut self, inst: Inst) -> Result<usize, String> {
        if self.program.len() >= MAX_PROGRAM {
            return Err(format!(
                "the pattern is too large (more than {MAX_PROGRAM} steps once its repetitions are written out): repeat less"
            ));
        }
        self.program.push(inst);
        Ok(self.program.len() - 1)
    }

    fn patch(&mut self, at: usize, inst: Inst) {
        if let Some(slot) = self.program.get_mut(at) {
            *slot = inst;
        }
    }

    fn emit(&mut self, node: &Node) -> Result<(), String> {
        match node {
            Node::Empty => {}
            Node::Set(set) => {
                let i = match self.sets.iter().position(|s| s == set) {
                    Some(i) => i,
                    None => {
                        self.sets.push(set.clone());
                        self.sets.len() - 1
                    }
                };
                self.push(Inst::Char(i))?;
            }
            Node::Look(look) => {
                self.push(Inst::Look(*look))?;
            }
            Node::Concat(items) => {
                for item in items {
                    self.emit(item)?;
                }
            }
            Node::Alternation(branches) => {
                let mut jumps = Vec::new();
                let last = branches.len().saturating_sub(1);
                for (i, branch) in branches.iter().enumerate() {
                    if i == last {
                        self.emit(branch)?;
                        break;
                    }
                    let split = self.push(Inst::Split(0, 0))?;
                    self.emit(branch)?;
                    jumps.push(self.push(Inst::Jump(0))?);
                    let next = self.program.len();
                    self.patch(split, Inst::Split(split + 1, next));
                }
                let end = self.program.len();
                for j in jumps {
                    self.patch(j, Inst::Jump(end));
                }
            }
            Node::Repeat { node, min, max } => {
                if *min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
                    return Err(format!("a repetition counts at most {MAX_REPEAT}"));
                }
                if let Some(max) = max
                    && max < min
                {
                    return Err(format!("`{{{min},{max}}}` repeats at least more than at most: write the smaller count first"));
                }
                for _ in 0..*min {
                    self.emit(node)?;
                }
                match max {
                    None => {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit(node)?;
                        self.push(Inst::Jump(split))?;
                        let end = self.program.len();
                        self.patch(split, Inst::Split(split + 1, end));
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.emit(node)?;
                        }
                        let end = self.program.len();
                        for s in splits {
                            self.patch(s, Inst::Split(s + 1, end));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}")).is_match(text)
    }

    fn err(pattern: &str) -> String {
        Regex::new(pattern).err().unwrap_or_else(|| panic!("{pattern} compiled"))
    }

    #[test]
    fn a_match_is_found_anywhere_unless_anchored() {
        assert!(m("ab", "xxabyy"));
        assert!(!m("^ab", "xxab"));
        assert!(!m("ab$", "abx"));
        assert!(m("^ab$", "ab"));
        assert!(m("", "anything") && m("", ""));
        assert!(m("^$", "") && !m("^$", "a"));
        assert!(!m("^a$", "a\n"), "`$` is the end of the text, as in RE2");
        assert!(m("(?m)^b$", "a\nb\nc"));
        assert!(m(r"\Aab\z", "ab") && !m(r"\Aab\z", "abc"));
    }

    #[test]
    fn gatekeepers_examples() {
        let owner = r"^[a-zA-Z]+.agilebank.demo$";
        assert!(m(owner, "alice.agilebank.demo"));
        assert!(!m(owner, "alice.agilebank.demo.evil") && !m(owner, "alice.agilebank") && !m(owner, "al1ce.agilebank.demo"));
        let email = r"^([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,6}|[a-z]{1,39})$";
        assert!(m(email, "jane.doe@example.com") && m(email, "octocat"));
        assert!(!m(email, "Octo Cat") && !m(email, "jane@example.c") && !m(email, &"a".repeat(40)));
        let url =
            r"^(http:\/\/www\.|https:\/\/www\.|http:\/\/|https:\/\/)?[a-z0-9]+([\-\.]{1}[a-z0-9]+)*\.[a-z]{2,5}(:[0-9]{1,5})?(\/.*)?$";
        assert!(m(url, "https://runbooks.example.com/llm-serving") && m(url, "wiki.example.org:8080/x"));
        assert!(!m(url, "ftp://example.com") && !m(url, "https://example"));
    }

    #[test]
    fn classes() {
        assert!(m("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "ml-team-1") && !m("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "ml-team-"));
        assert!(m("^[^/]+$", "abc") && !m("^[^/]+$", "a/b"));
        assert!(m("^[]a]+$", "]a]") && m("^[a-]+$", "a-a") && m(r"^[\]\\]+$", r"]\"));
        assert!(m(r"^\d{3}-\w+\s?$", "123-abc_9 ") && !m(r"^\d{3}$", "12a"));
        assert!(m(r"^\D\W\S$", "a-b") && !m(r"^\D$", "5"));
        assert!(m(r"^[\d.]+$", "1.25") && m(r"^[^\s]+$", "x") && !m(r"^[^\s]+$", "a b"));
        assert!(m("^[[:alpha:]][[:digit:]]+$", "v12") && !m("^[[:^digit:]]$", "1"));
        assert!(m("^.$", "é") && !m("^.$", "\n") && m("(?s)^.$", "\n"));
        assert!(m(r"^\x41\x{263a}$", "A☺"));
    }

    #[test]
    fn repetition_and_alternation() {
        assert!(m("^(dev|staging|prod)$", "staging") && !m("^(dev|staging|prod)$", "production"));
        assert!(m("^(?:a|b)*c$", "ababc") && m("^a+?b??c*?$", "aab"));
        assert!(m("^a{2}$", "aa") && !m("^a{2}$", "aaa") && m("^a{2,}$", "aaaa") && m("^a{1,3}$", "aaa") && !m("^a{1,3}$", "aaaa"));
        assert!(m("^a{0}b$", "b") && m("^a{,2}$", "a{,2}"), "`{{,2}}` is no repetition in RE2: literal");
        assert!(m("^x{$", "x{") && m("^(|a)$", "") && m("^a|$", ""));
        assert!(m("^(a*)*$", "aaaa"), "an empty loop ends");
        assert!(m(r"\bteam\b", "ml team") && !m(r"\bteam\b", "teams") && m(r"\Bea\B", "team"));
    }

    #[test]
    fn flags() {
        assert!(m("(?i)^prod$", "PROD") && !m("^prod$", "PROD"));
        assert!(m("^(?i:prod)-X$", "Prod-X") && !m("^(?i:prod)-X$", "Prod-x"));
        assert!(m("(?i)^[a-c]+$", "AbC") && !m("(?i)^É$", "é"), "ASCII letters only");
        assert!(m("^(?i)a(?-i)b$", "Ab") && !m("^(?i)a(?-i)b$", "AB"));
        assert!(m("(?U)^a+$", "aaa") && m("(?P<team>^[a-z]+$)", "ml") && m("(?<t>x)", "x"));
    }

    #[test]
    fn what_re2_would_read_otherwise_is_refused() {
        assert!(err("(a").contains("missing `)`"));
        assert!(err("a)").contains("unmatched `)`"));
        assert!(err("[a-").contains("missing `]`"));
        assert!(err("[z-a]").contains("`z-a` is not a range"));
        assert!(err("*a").contains("missing argument to repetition operator `*`"));
        assert!(err("a**").contains("bad repetition operator `**`"));
        assert!(err("a{2}{3}").contains("bad repetition operator"));
        assert!(err(r"(a)\1").contains("back references"));
        assert!(err("(?=a)").contains("look-around") && err("(?<!a)").contains("look-around"));
        assert!(err(r"\p{L}").contains("Unicode classes"));
        assert!(err(r"\q").contains("unknown escape"));
        assert!(err("a{1001}").contains("at most 1000"));
        assert!(err("a{3,2}").contains("smaller count first"));
        assert!(err("(?x)a").contains("flags RE2 reads"));
        assert!(err("[[:letter:]]").contains("not an ASCII class"));
        assert!(err("(a{1000}){1000}").contains("too large"));
        assert!(err(&"(".repeat(200)).contains("nested"));
        assert!(err("\\").contains("trailing"));
    }

    #[test]
    fn sets_stay_sorted_and_merged() {
        let mut s = Set::default();
        for (lo, hi) in [(10, 12), (1, 2), (20, 30), (3, 4), (13, 13), (25, 40), (0, 0), (6, 8)] {
            s.add(lo, hi);
        }
        assert_eq!(s.0, [(0, 4), (6, 8), (10, 13), (20, 40)]);
        s.add(5, 19);
        assert_eq!(s.0, [(0, 40)]);
        assert_eq!(Set::of(&[('b', 'c'), ('a', 'a')]).negated().0, [(0, 0x60), (0x64, MAX_CHAR)]);
    }

    #[test]
    fn matching_is_linear() {
        // The classic catastrophic case for backtracking engines.
        let evil = Regex::new("^(a+)+$").unwrap();
        let text = format!("{}b", "a".repeat(20_000));
        assert!(!evil.is_match(&text));
        let nested = Regex::new("^(a|aa)*(a|aa)*c$").unwrap();
        assert!(!nested.is_match(&"a".repeat(5_000)));
    }

    #[test]
    fn settings_read_and_write_the_source() {
        let r: Regex = serde_json::from_str(r#""^v[0-9]+$""#).unwrap();
        assert_eq!((r.as_str(), serde_json::to_string(&r).unwrap().as_str()), ("^v[0-9]+$", r#""^v[0-9]+$""#));
        let e = serde_json::from_str::<Regex>(r#""[a""#).unwrap_err().to_string();
        assert!(e.starts_with("`[a` is not a regular expression aigov reads: missing `]`"), "{e}");
    }
}
