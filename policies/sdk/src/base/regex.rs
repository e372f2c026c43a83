//! Regular expressions in settings (Gatekeeper's `allowedRegex`): the part
//! of RE2's syntax such policies use, matched in a time bounded by the
//! text's length times a cost fixed when the pattern is read, so no value
//! can make a match slow, and without recursion over the text, so no value
//! can exhaust the stack.
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
//! classes (`\p{L}`), `\Q...\E`, and patterns whose match would cost more
//! than [`MAX_COST`] steps per character of the text.
//!
//! As in RE2, Go's `regexp.MatchString` and Gatekeeper's `regex.match`, a
//! text matches when the expression matches some part of it: anchor it
//! (`^...$`) to match whole values.
//!
//! # How it matches
//!
//! A backtracking engine takes exponential time on `^(a+)+$`; a Thompson
//! automaton run breadth-first (RE2's and Go's fallback) takes the text's
//! length times the number of states, and a counted repetition writes its
//! body out once per count: `[a-z]{1,1000}q` is 2,000 states, a 250 KB
//! annotation 500 million steps, seconds past the admission deadline.
//! Here the pattern's syntax tree is evaluated once per character, each
//! node holding bit vectors rather than flags (a Glushkov automaton,
//! simulated bit-parallel): what each of its characters and classes last
//! matched, and what may enter it next. A counted repetition is not
//! written out: it gives its body one bit per count (one *lane*), and
//! passing from one count to the next is a shift of the body's vectors,
//! so `[a-z]{1,1000}` is one class node with 1,000 lanes, 16 machine words
//! shifted per character. Characters in a row (`https://`) are one node
//! too, a lane per character, and `a|b|c` is the class `[abc]`. The work
//! per character is fixed when the pattern is compiled (its
//! [`cost`](Regex::cost): a few steps per node and per distinct class, and
//! about three per 64 lanes of each node), and a pattern costing more than
//! [`MAX_COST`] is refused when the settings are read; an anchored pattern
//! (`^...`) stops at the first character no branch of it can take.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest count a repetition may have (RE2's).
const MAX_REPEAT: u32 = 1000;

/// The most steps (a node visited, or 64 of its lanes) a pattern may cost
/// per character of the text it is matched against. At this bound a
/// 256 KiB value (the most annotations an object may carry) is matched in
/// about a quarter of a second inside wasmtime (`BENCHMARKS.md`, "A
/// regular expression on a long value"); an alternation of about 25
/// names, or Gatekeeper's URL example, costs half of it.
pub const MAX_COST: usize = 512;

/// The steps of visiting a node, beside reading and writing its vectors:
/// measured, a node costs about as much as reading and writing four
/// words.
const NODE_COST: usize = 4;

/// The steps of looking a character up in a set.
const SET_COST: usize = 2;

/// The deepest nesting of groups.
const MAX_DEPTH: usize = 100;

/// A compiled regular expression.
#[derive(Clone)]
pub struct Regex {
    source: String,
    /// Boxed, so that a setting holding a regex (`AllowedValues`) stays as
    /// small as one holding a list: settings are built on every request.
    program: Box<Program>,
}

/// A compiled pattern.
#[derive(Clone)]
struct Program {
    /// The syntax tree in preorder: a node's children come after it.
    ops: Vec<Op>,
    /// The children of concatenations and alternations (`Kind::Concat(from, to)`).
    kids: Vec<usize>,
    /// The sets of chains (`Kind::Chain`).
    chain: Vec<usize>,
    sets: Vec<Set>,
    /// Words of bit vectors the match needs.
    words: usize,
    /// Steps per character of the text.
    cost: usize,
    /// Every match starts at the text's start (`^...`, `\A...`).
    anchored: bool,
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
        let mut c = Compiler { ops: Vec::new(), kids: Vec::new(), chain: Vec::new(), sets: Vec::new(), words: 0, cost: 0 };
        c.emit(&node, 1)?;
        Ok(Regex {
            source: pattern.to_string(),
            program: Box::new(Program {
                ops: c.ops,
                kids: c.kids,
                chain: c.chain,
                sets: c.sets,
                words: c.words,
                cost: c.cost,
                anchored: anchored(&node),
            }),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The steps a match costs per character of the text (at most
    /// [`MAX_COST`]).
    pub fn cost(&self) -> usize {
        self.program.cost
    }

    /// Whether the expression matches some part of `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.run(text).0
    }

    /// Whether the expression matches some part of `text`, and the steps
    /// taken: words of bit vectors read or written, and nodes visited.
    fn run(&self, text: &str) -> (bool, u64) {
        let re = &*self.program;
        let mut m = Machine { v: vec![0; re.words], pass: vec![false; re.ops.len()], hits: vec![false; re.sets.len()], steps: 0 };
        let mut prev: Option<char> = None;
        let mut chars = text.chars();
        let mut next = chars.next();
        loop {
            // Between `prev` and `next`: what the text read so far lets
            // every node end with, and whether the whole expression does.
            m.settle(re, prev, next);
            let root_passes = m.pass.first().copied().unwrap_or(false);
            let root_ends = re.ops.first().is_some_and(|r| m.any(r.last, r.lanes));
            if root_ends || root_passes {
                return (true, m.steps);
            }
            let Some(c) = next else { return (false, m.steps) };
            // A match may start here: the root is entered, and so is
            // every node a character may be read into.
            m.enter(re);
            let alive = m.read(re, c);
            if re.anchored && !alive {
                // Nothing but the text's start enters an anchored pattern.
                return (false, m.steps);
            }
            prev = Some(c);
            next = chars.next();
        }
    }
}

/// Whether every match of `node` starts at the text's start.
fn anchored(node: &Node) -> bool {
    match node {
        Node::Look(Look::TextStart) => true,
        Node::Empty | Node::Set(_) | Node::Look(_) => false,
        Node::Concat(items) => {
            for item in items {
                match item {
                    n if anchored(n) => return true,
                    // Zero-width: the next item starts where this one did.
                    Node::Look(_) | Node::Empty => {}
                    _ => return false,
                }
            }
            false
        }
        Node::Alternation(branches) => !branches.is_empty() && branches.iter().all(anchored),
        Node::Repeat { node, min, .. } => *min > 0 && anchored(node),
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

/// A node of the compiled syntax tree. Its vectors hold one bit per lane:
/// per copy that the counted repetitions around it make of it, the copies
/// of the outermost repetition varying slowest.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: Kind,
    /// Its lanes (1 outside counted repetitions).
    lanes: usize,
    /// Where its `last` vector starts: the lanes in which the text read so
    /// far can end with this node just finished (for a class: just read).
    last: usize,
    /// Where its `entry` vector starts: the lanes in which the next
    /// character may be read into this node (for a class: read by it).
    entry: usize,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Empty,
    Look(Look),
    /// A character of the set with this index.
    Set(usize),
    /// Characters of the sets `chain[from..to]`, one after the other:
    /// a literal such as `https://`, matched as one shift of vectors with
    /// a lane per character (and per lane of the node); `read` holds what
    /// each character just read, `ready` what each may read next, `mask`
    /// which of them the character being read is in.
    Chain {
        from: usize,
        to: usize,
        read: usize,
        ready: usize,
        mask: usize,
    },
    /// Children `kids[from..to]`, one after the other.
    Concat(usize, usize),
    /// Children `kids[from..to]`, any of them.
    Alternation(usize, usize),
    /// The node `body` (the next op), `min` to `copies` times, or, when
    /// `looped`, `min` times and then any number more: then its last copy
    /// (lane) repeats itself. The body has `copies` times this node's
    /// lanes; `scratch` is a vector as wide, for folding its copies.
    Repeat {
        body: usize,
        min: usize,
        copies: usize,
        looped: bool,
        scratch: usize,
    },
}

/// The state of one match: every node's vectors, side by side in `v`.
struct Machine {
    v: Vec<u64>,
    /// Per node: whether it can be passed without reading a character
    /// where the text is now (an empty group, `^` at the start).
    pass: Vec<bool>,
    /// Per set: whether the character being read is in it.
    hits: Vec<bool>,
    /// Words read or written, and nodes visited.
    steps: u64,
}

/// Words holding `lanes` bits.
fn words(lanes: usize) -> usize {
    lanes.div_ceil(64)
}

/// The bits of a vector's last word that are lanes.
fn last_mask(lanes: usize) -> u64 {
    match lanes % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

impl Machine {
    fn word(&self, at: usize) -> u64 {
        self.v.get(at).copied().unwrap_or(0)
    }

    fn put(&mut self, at: usize, w: u64) {
        if let Some(slot) = self.v.get_mut(at) {
            *slot = w;
        }
    }

    fn passes(&self, op: usize) -> bool {
        self.pass.get(op).copied().unwrap_or(false)
    }

    /// Whether any lane of the vector at `at` is set.
    fn any(&mut self, at: usize, lanes: usize) -> bool {
        let n = words(lanes);
        self.steps += n as u64;
        self.v.get(at..at + n).is_some_and(|w| w.iter().any(|&w| w != 0))
    }

    /// Whether any of lanes `from..to` of the vector at `at` is set.
    fn any_in(&mut self, at: usize, from: usize, to: usize) -> bool {
        if from >= to {
            return false;
        }
        let (first, last) = (from / 64, (to - 1) / 64);
        self.steps += (last - first + 1) as u64;
        (first..=last).any(|i| {
            let mut w = self.word(at + i);
            if i == first {
                w &= u64::MAX << (from % 64);
            }
            if i == last {
                w &= last_mask(to);
            }
            w != 0
        })
    }

    fn zero(&mut self, at: usize, lanes: usize) {
        let n = words(lanes);
        self.steps += n as u64;
        if let Some(w) = self.v.get_mut(at..at + n) {
            w.fill(0);
        }
    }

    /// Sets lanes `from..to` of the vector at `at`.
    fn fill(&mut self, at: usize, from: usize, to: usize) {
        let mut lane = from;
        while lane < to {
            let (i, bit) = (lane / 64, lane % 64);
            let n = (to - lane).min(64 - bit);
            let bits = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << bit };
            let w = self.word(at + i) | bits;
            self.put(at + i, w);
            lane += n;
        }
    }

    /// `dst = src` (or `dst |= src`), vectors of `lanes`.
    fn copy(&mut self, dst: usize, src: usize, lanes: usize, or: bool) {
        let n = words(lanes);
        self.steps += n as u64;
        if n == 1 {
            let w = self.word(src) | if or { self.word(dst) } else { 0 };
            self.put(dst, w);
            return;
        }
        for i in 0..n {
            let w = self.word(src + i);
            let old = if or { self.word(dst + i) } else { 0 };
            self.put(dst + i, old | w);
        }
    }

    /// `dst |= src` on lanes `from..to` only.
    fn or_in(&mut self, dst: usize, src: usize, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let (first, last) = (from / 64, (to - 1) / 64);
        self.steps += (last - first + 1) as u64;
        for i in first..=last {
            let mut w = self.word(src + i);
            if i == first {
                w &= u64::MAX << (from % 64);
            }
            if i == last {
                w &= last_mask(to);
            }
            let old = self.word(dst + i);
            self.put(dst + i, old | w);
        }
    }

    /// `dst = src << by` (or `dst |= src << by`), vectors of `lanes`;
    /// `dst` may be `src`.
    fn shift_up(&mut self, dst: usize, src: usize, lanes: usize, by: usize, or: bool) {
        let n = words(lanes);
        self.steps += n as u64;
        let (ws, bs) = (by / 64, by % 64);
        // From the top down: a word is read before it is written.
        for i in (0..n).rev() {
            let hi = if i >= ws { self.word(src + i - ws) } else { 0 };
            let lo = if i > ws && bs > 0 { self.word(src + i - ws - 1) } else { 0 };
            let mut w = if bs == 0 { hi } else { (hi << bs) | (lo >> (64 - bs)) };
            if i + 1 == n {
                w &= last_mask(lanes);
            }
            let old = if or { self.word(dst + i) } else { 0 };
            self.put(dst + i, old | w);
        }
    }

    /// `dst = src >> by` (or `dst |= src >> by`): `src` of `lanes`, `dst`
    /// of `into` lanes (at most as many); `dst` may be `src`.
    fn shift_down(&mut self, dst: usize, into: usize, src: usize, lanes: usize, by: usize, or: bool) {
        let (n, m) = (words(lanes), words(into.min(lanes)));
        self.steps += m as u64;
        let (ws, bs) = (by / 64, by % 64);
        // From the bottom up: a word is read before it is written.
        for i in 0..m {
            let lo = if i + ws < n { self.word(src + i + ws) } else { 0 };
            let hi = if i + ws + 1 < n && bs > 0 { self.word(src + i + ws + 1) } else { 0 };
            let mut w = if bs == 0 { lo } else { (lo >> bs) | (hi << (64 - bs)) };
            if i + 1 == m {
                w &= last_mask(into.min(lanes));
            }
            let old = if or { self.word(dst + i) } else { 0 };
            self.put(dst + i, old | w);
        }
    }

    /// From the leaves up: every node's `last` vector and whether it can
    /// be passed, between `prev` and `next`.
    fn settle(&mut self, re: &Program, prev: Option<char>, next: Option<char>) {
        for (i, op) in re.ops.iter().enumerate().rev() {
            self.steps += 1;
            let pass = match op.kind {
                Kind::Empty => true,
                Kind::Look(look) => look.holds(prev, next),
                // Its `last` is what `read` left.
                Kind::Set(_) => false,
                Kind::Chain { from, to, read, .. } => {
                    // It ends where its last character was just read.
                    let n = to.saturating_sub(from);
                    self.shift_down(op.last, op.lanes, read, n * op.lanes, (n - 1) * op.lanes, false);
                    false
                }
                Kind::Concat(from, to) => {
                    // It ends where its last child ends, or an earlier one
                    // if those after it can be passed.
                    let kids = re.kids.get(from..to).unwrap_or_default();
                    let mut all = true;
                    for (i, &k) in kids.iter().rev().enumerate() {
                        let Some(kid) = re.ops.get(k) else { continue };
                        self.copy(op.last, kid.last, op.lanes, i > 0);
                        if !self.passes(k) {
                            all = false;
                            break;
                        }
                    }
                    if kids.is_empty() {
                        self.zero(op.last, op.lanes);
                    }
                    all
                }
                Kind::Alternation(from, to) => {
                    let kids = re.kids.get(from..to).unwrap_or_default();
                    self.zero(op.last, op.lanes);
                    let mut any = false;
                    for &k in kids {
                        if let Some(kid) = re.ops.get(k) {
                            self.copy(op.last, kid.last, op.lanes, true);
                        }
                        any = any || self.passes(k);
                    }
                    any
                }
                Kind::Repeat { body, min, copies, scratch, .. } => {
                    let Some(b) = re.ops.get(body) else { continue };
                    let body_passes = self.passes(body);
                    // It ends where copy `k` ends, for `k + 1 >= min`; if the
                    // body can be passed, where any copy ends.
                    let from = if body_passes { 0 } else { min.max(1) - 1 };
                    if op.lanes == 1 {
                        let ends = self.any_in(b.last, from, copies);
                        self.zero(op.last, 1);
                        self.put(op.last, u64::from(ends));
                    } else {
                        // Fold copies `from..` onto the first: halve their
                        // number until one is left.
                        self.shift_down(scratch, b.lanes, b.last, b.lanes, from * op.lanes, false);
                        let mut n = copies - from;
                        while n > 1 {
                            let half = n.div_ceil(2);
                            self.shift_down(scratch, b.lanes, scratch, b.lanes, half * op.lanes, true);
                            n = half;
                        }
                        self.shift_down(op.last, op.lanes, scratch, b.lanes, 0, false);
                    }
                    min == 0 || body_passes
                }
            };
            if let Some(p) = self.pass.get_mut(i) {
                *p = pass;
            }
        }
    }

    /// From the root down: the lanes in which the next character may be
    /// read into each node, a match starting here too.
    fn enter(&mut self, re: &Program) {
        if let Some(root) = re.ops.first() {
            self.put(root.entry, 1);
        }
        for op in &re.ops {
            self.steps += 1;
            match op.kind {
                Kind::Empty | Kind::Look(_) | Kind::Set(_) => {}
                Kind::Chain { from, to, read, ready, .. } => {
                    // Its first character is entered with it, each next one
                    // where the one before was just read.
                    let lanes = to.saturating_sub(from) * op.lanes;
                    self.shift_up(ready, read, lanes, op.lanes, false);
                    self.copy(ready, op.entry, op.lanes, true);
                }
                Kind::Concat(from, to) => {
                    // The first child is entered with the node; each next
                    // one where the one before it ends, or is entered and
                    // can be passed.
                    let mut before: Option<usize> = None;
                    for &k in re.kids.get(from..to).unwrap_or_default() {
                        let Some(kid) = re.ops.get(k) else { continue };
                        match before.and_then(|b| re.ops.get(b).map(|o| (b, o))) {
                            None => self.copy(kid.entry, op.entry, op.lanes, false),
                            Some((b, prior)) => {
                                self.copy(kid.entry, prior.last, op.lanes, false);
                                if self.passes(b) {
                                    self.copy(kid.entry, prior.entry, op.lanes, true);
                                }
                            }
                        }
                        before = Some(k);
                    }
                }
                Kind::Alternation(from, to) => {
                    for &k in re.kids.get(from..to).unwrap_or_default() {
                        if let Some(kid) = re.ops.get(k) {
                            self.copy(kid.entry, op.entry, op.lanes, false);
                        }
                    }
                }
                Kind::Repeat { body, copies, looped, .. } => {
                    let Some(b) = re.ops.get(body) else { continue };
                    // Copy 0 is entered with the node; copy `k + 1` where
                    // copy `k` ends; the looping copy where it ends itself.
                    self.shift_up(b.entry, b.last, b.lanes, op.lanes, false);
                    self.copy(b.entry, op.entry, op.lanes, true);
                    if looped {
                        self.or_in(b.entry, b.last, (copies - 1) * op.lanes, b.lanes);
                    }
                    if self.passes(body) {
                        // Passing a copy enters the next: every copy after
                        // an entered one is entered.
                        let mut by = op.lanes;
                        while by < b.lanes {
                            self.shift_up(b.entry, b.entry, b.lanes, by, true);
                            by *= 2;
                        }
                    }
                }
            }
        }
    }

    /// Reads `c`: a class ends in the lanes it was entered in if `c` is in
    /// it, and nowhere else. Whether any lane of any class is left.
    fn read(&mut self, re: &Program, c: char) -> bool {
        for (hit, set) in self.hits.iter_mut().zip(&re.sets) {
            *hit = set.contains(c);
        }
        self.steps += re.sets.len() as u64;
        let mut alive = false;
        for op in &re.ops {
            match op.kind {
                Kind::Set(s) => {
                    if self.hits.get(s).copied().unwrap_or(false) {
                        self.copy(op.last, op.entry, op.lanes, false);
                        alive = alive || (re.anchored && self.any(op.last, op.lanes));
                    } else {
                        self.zero(op.last, op.lanes);
                    }
                }
                Kind::Chain { from, to, read, ready, mask } => {
                    let sets = re.chain.get(from..to).unwrap_or_default();
                    let lanes = sets.len() * op.lanes;
                    self.steps += sets.len() as u64 / 8;
                    if op.lanes == 1 {
                        // A bit per character, 64 to a word.
                        for (i, chunk) in sets.chunks(64).enumerate() {
                            let mut w = 0u64;
                            for (bit, &s) in chunk.iter().enumerate() {
                                w |= u64::from(self.hits.get(s).copied().unwrap_or(false)) << bit;
                            }
                            self.put(mask + i, w);
                        }
                    } else {
                        self.zero(mask, lanes);
                        for (i, &s) in sets.iter().enumerate() {
                            if self.hits.get(s).copied().unwrap_or(false) {
                                self.fill(mask, i * op.lanes, (i + 1) * op.lanes);
                            }
                        }
                    }
                    let n = words(lanes);
                    self.steps += n as u64;
                    for i in 0..n {
                        let w = self.word(ready + i) & self.word(mask + i);
                        self.put(read + i, w);
                        alive = alive || w != 0;
                    }
                }
                _ => {}
            }
        }
        alive
    }
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
    ops: Vec<Op>,
    kids: Vec<usize>,
    chain: Vec<usize>,
    sets: Vec<Set>,
    words: usize,
    cost: usize,
}

impl Compiler {
    /// Room for a vector of `lanes` bits.
    fn vector(&mut self, lanes: usize) -> usize {
        let at = self.words;
        self.words += words(lanes);
        at
    }

    /// The index of `set`, added if new (each set is looked a character
    /// up in once per character).
    fn set(&mut self, set: &Set) -> Result<usize, String> {
        match self.sets.iter().position(|s| s == set) {
            Some(i) => Ok(i),
            None => {
                self.charge(SET_COST)?;
                self.sets.push(set.clone());
                Ok(self.sets.len() - 1)
            }
        }
    }

    /// Adds a chain of `sets` (two or more), with `lanes` copies of it.
    fn chain(&mut self, sets: &[&Set], lanes: usize) -> Result<usize, String> {
        let inner = lanes.saturating_mul(sets.len());
        self.charge(2 * NODE_COST + 3 * words(lanes) + 5 * words(inner) + sets.len() / 4)?;
        let last = self.vector(lanes);
        let entry = self.vector(lanes);
        let (read, ready, mask) = (self.vector(inner), self.vector(inner), self.vector(inner));
        let from = self.chain.len();
        for set in sets {
            let i = self.set(set)?;
            self.chain.push(i);
        }
        let to = self.chain.len();
        self.ops.push(Op { kind: Kind::Chain { from, to, read, ready, mask }, lanes, last, entry });
        Ok(self.ops.len() - 1)
    }

    /// Adds `steps` to the cost per character, refusing past [`MAX_COST`].
    fn charge(&mut self, steps: usize) -> Result<(), String> {
        self.cost = self.cost.saturating_add(steps);
        if self.cost > MAX_COST {
            return Err(format!(
                "the pattern is too large: matching it would take more than {MAX_COST} steps per character of a value \
                 (a few per literal, class or group, and a counted repetition its group again per 64 counts): \
                 allow fewer alternatives (a list of values rather than `a|b|...`), repeat less, or nest fewer counted repetitions"
            ));
        }
        Ok(())
    }

    /// Adds `node`, with `lanes` copies of it, and what is under it; its index.
    fn emit(&mut self, node: &Node, lanes: usize) -> Result<usize, String> {
        match node {
            // Characters in a row alone: their chain stands for the group.
            Node::Concat(items) if items.len() > 1 && items.iter().all(|n| matches!(n, Node::Set(_))) => {
                let sets: Vec<&Set> = items.iter().filter_map(|n| if let Node::Set(s) = n { Some(s) } else { None }).collect();
                return self.chain(&sets, lanes);
            }
            // `a|b|c` is `[abc]`.
            Node::Alternation(branches) if branches.iter().all(|n| matches!(n, Node::Set(_))) => {
                let mut union = Set::default();
                for branch in branches {
                    if let Node::Set(s) = branch {
                        union.union(s);
                    }
                }
                return self.emit(&Node::Set(union), lanes);
            }
            _ => {}
        }
        // Every node is visited three times per character and its vectors
        // read and written about three times.
        self.charge(NODE_COST + 3 * words(lanes))?;
        let last = self.vector(lanes);
        let entry = self.vector(lanes);
        let at = self.ops.len();
        self.ops.push(Op { kind: Kind::Empty, lanes, last, entry });
        let kind = match node {
            Node::Empty => Kind::Empty,
            Node::Look(look) => Kind::Look(*look),
            Node::Set(set) => Kind::Set(self.set(set)?),
            Node::Concat(items) | Node::Alternation(items) => {
                let mut kids = Vec::with_capacity(items.len());
                let mut rest = items.as_slice();
                while let Some((item, after)) = rest.split_first() {
                    // Characters in a row make one chain.
                    let run: Vec<&Set> = match node {
                        Node::Concat(_) => rest.iter().map_while(|n| if let Node::Set(s) = n { Some(s) } else { None }).collect(),
                        _ => Vec::new(),
                    };
                    if run.len() > 1 {
                        kids.push(self.chain(&run, lanes)?);
                        rest = rest.get(run.len()..).unwrap_or_default();
                    } else {
                        kids.push(self.emit(item, lanes)?);
                        rest = after;
                    }
                }
                let from = self.kids.len();
                self.kids.extend(kids);
                let to = self.kids.len();
                if matches!(node, Node::Concat(_)) { Kind::Concat(from, to) } else { Kind::Alternation(from, to) }
            }
            Node::Repeat { node: body, min, max } => {
                if *min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
                    return Err(format!("a repetition counts at most {MAX_REPEAT}"));
                }
                if let Some(max) = max
                    && max < min
                {
                    return Err(format!("`{{{min},{max}}}` repeats at least more than at most: write the smaller count first"));
                }
                // `{0}`: nothing.
                if *max == Some(0) {
                    return Ok(at);
                }
                let (min, looped) = (*min as usize, max.is_none());
                // One lane per count, and with no upper count, one more
                // that repeats itself.
                let copies = match max {
                    Some(max) => *max as usize,
                    None => min + 1,
                };
                let inner = lanes.saturating_mul(copies);
                let body_words = words(inner);
                // Shifting copies along, and folding them (with lanes of
                // their own) or filling them (a body that may be passed
                // without reading) in about log2(copies) shifts each.
                let log = (usize::BITS - copies.leading_zeros()) as usize;
                let fold = if lanes > 1 { log } else { 0 };
                let fill = if nullable(body) { log } else { 0 };
                self.charge(body_words.saturating_mul(3 + fold + fill))?;
                let scratch = if lanes > 1 { self.vector(inner) } else { 0 };
                let body = self.emit(body, inner)?;
                Kind::Repeat { body, min, copies, looped, scratch }
            }
        };
        if let Some(op) = self.ops.get_mut(at) {
            op.kind = kind;
        }
        Ok(at)
    }
}

/// Whether `node` may match without reading a character (if its anchors
/// hold).
fn nullable(node: &Node) -> bool {
    match node {
        Node::Empty | Node::Look(_) => true,
        Node::Set(_) => false,
        Node::Concat(items) => items.iter().all(nullable),
        Node::Alternation(branches) => branches.iter().any(nullable),
        Node::Repeat { node, min, .. } => *min == 0 || nullable(node),
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

    /// 250 KB of lowercase letters but `q`, the most annotations an object
    /// carries, in the worst case for a Thompson automaton: every count of
    /// `[a-z]{1,1000}` alive at every character.
    fn letters() -> String {
        let mut rng = Rng(7);
        (0..250_000).map(|_| char::from(b"abcdefghijklmnoprstuvwxyz"[rng.below(25) as usize])).collect()
    }

    #[test]
    fn a_counted_repetition_costs_a_shift_not_a_state_per_count() {
        let text = letters();
        let (ab, a) = ("ab".repeat(125_000), "a".repeat(250_000));
        // Written out, `[a-z]{1,1000}q` is 2,000 states, 1,000 of them live
        // at each character here: 250 million steps. As lanes, it is a
        // 1,000-bit shift per character.
        for (pattern, text, most) in [
            ("[a-z]{1,1000}q", &text, 150),
            ("(ab){1,1000}c", &ab, 350),
            ("(?:a|aa){1,500}c", &a, 250),
            ("(?:(?:[a-z]{1,3}){1,10}){1,40}q", &text, 400),
        ] {
            let re = Regex::new(pattern).unwrap();
            assert!(re.cost() <= most, "`{pattern}` costs {}", re.cost());
            let (found, steps) = re.run(text);
            assert!(!found, "{pattern}");
            assert!(steps <= (text.len() as u64 + 1) * re.cost() as u64, "`{pattern}`: {steps} steps");
        }
        let (found, steps) = Regex::new("[a-z]{1,1000}q").unwrap().run(&format!("{text}q"));
        assert!(found && steps > 250_000, "the last character decides: {steps}");
        // An anchored pattern stops where no branch of it goes on.
        let (found, steps) = Regex::new("^v[0-9]+$").unwrap().run(&text);
        assert!(!found && steps < 200, "{steps}");
    }

    #[test]
    fn a_pattern_too_costly_to_match_is_refused() {
        assert!(err("(a{1000}){1000}").contains("too large"));
        let names: Vec<String> = (0..200).map(|i| format!("team-{i}")).collect();
        let e = err(&format!("^({})$", names.join("|")));
        assert!(e.starts_with(&format!("the pattern is too large: matching it would take more than {MAX_COST} steps")), "{e}");
        assert!(e.contains("a list of values"), "{e}");
        // Twenty names are fine.
        assert!(m(&format!("^({})$", names.get(..20).unwrap().join("|")), "team-19"));
        // Three counts nested: 3,000 lanes.
        assert!(err("(?:(?:[a-z]{1,3}){1,10}){1,100}q").contains("too large"));
        assert!(Regex::new("(?:(?:[a-z]{1,3}){1,10}){1,40}q").unwrap().cost() <= MAX_COST);
    }

    /// A pseudo-random source for the differential test (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.below(from.len() as u64) as usize]
        }

        /// A random pattern: literals, classes, anchors, groups,
        /// alternations and repetitions, counts crossing 64 lanes.
        fn pattern(&mut self, depth: u32) -> String {
            let atom = |r: &mut Rng| -> String {
                r.pick(&[
                    "a", "b", "c", "ab", "abc", "[ab]", "[^a]", ".", r"\w", r"\b", r"\B", "^", "$", "(?m:^)", "(?m:$)", "(?i:A)", r"\n",
                ])
                .to_string()
            };
            if depth == 0 {
                return atom(self);
            }
            let mut p = match self.below(5) {
                0 => atom(self),
                1 => format!("{}{}", self.pattern(depth - 1), self.pattern(depth - 1)),
                2 => format!("(?:{}|{})", self.pattern(depth - 1), self.pattern(depth - 1)),
                3 => format!("({}{}{})", self.pattern(depth - 1), self.pattern(depth - 1), self.pattern(depth - 1)),
                _ => format!("(?:{})", self.pattern(depth - 1)),
            };
            if self.below(2) == 0 {
                p = format!("(?:{p})");
                let rep = match self.below(9) {
                    0 => "*".to_string(),
                    1 => "+".to_string(),
                    2 => "?".to_string(),
                    3 => format!("{{{}}}", self.below(4)),
                    4 => format!("{{{},}}", self.below(4)),
                    5 => {
                        let lo = self.below(4);
                        format!("{{{lo},{}}}", lo + self.below(4))
                    }
                    6 => {
                        let lo = self.below(70);
                        format!("{{{lo},{}}}", lo + self.below(70))
                    }
                    7 => format!("{{{},}}", 60 + self.below(10)),
                    _ => format!("{{1,{}}}", 60 + self.below(80)),
                };
                p.push_str(&rep);
                if self.below(4) == 0 {
                    p.push('?');
                }
            }
            p
        }

        fn text(&mut self) -> String {
            let len = match self.below(4) {
                0 => self.below(4),
                1 | 2 => self.below(16),
                _ => self.below(200),
            };
            let alphabet = ["a", "a", "b", "c", "A", " ", "\n", "_"];
            (0..len).map(|_| self.pick(&alphabet)).collect()
        }
    }

    #[test]
    fn it_agrees_with_the_regex_crate_on_random_patterns() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut compared, mut matched) = (0, 0);
        for _ in 0..3_000 {
            let depth = 1 + rng.below(4) as u32;
            let pattern = rng.pattern(depth);
            let Ok(ours) = Regex::new(&pattern) else { continue };
            // The same pattern with its word classes and boundaries ASCII,
            // as RE2's are (the crate's are Unicode by default).
            let ascii = pattern.replace(r"\w", r"(?-u:\w)").replace(r"\b", r"(?-u:\b)").replace(r"\B", r"(?-u:\B)");
            let Ok(theirs) = regex::Regex::new(&ascii) else { continue };
            for _ in 0..12 {
                let text = rng.text();
                let want = theirs.is_match(&text);
                let (found, steps) = ours.run(&text);
                assert_eq!(found, want, "`{pattern}` on {text:?}");
                let bound = (text.chars().count() as u64 + 1) * ours.cost() as u64;
                assert!(steps <= bound, "`{pattern}` on {text:?}: {steps} steps, more than {bound}");
                compared += 1;
                matched += usize::from(want);
            }
        }
        assert!(compared > 25_000 && matched > compared / 5 && matched < compared * 4 / 5, "{compared} compared, {matched} matched");
    }

    #[test]
    fn settings_read_and_write_the_source() {
        let r: Regex = serde_json::from_str(r#""^v[0-9]+$""#).unwrap();
        assert_eq!((r.as_str(), serde_json::to_string(&r).unwrap().as_str()), ("^v[0-9]+$", r#""^v[0-9]+$""#));
        let e = serde_json::from_str::<Regex>(r#""[a""#).unwrap_err().to_string();
        assert!(e.starts_with("`[a` is not a regular expression aigov reads: missing `]`"), "{e}");
    }
}
