//! A reader for the shell that container command lines are written in:
//! POSIX shell words (quotes, escapes, parameter and arithmetic expansion)
//! and the grammar of lists, pipelines, `&&`/`||`, groups, subshells,
//! `while`/`until`/`if`/`for` (and bash's `for ((;;))`) and redirections.
//!
//! It parses; it never runs anything. Expansions are kept as parts of a
//! word and expanded later against what is known of the environment, so
//! `sleep "$DURATION"` can be read once `DURATION` is known. What the reader
//! does not understand (`case`, functions, here-documents) is an error,
//! which the caller treats as "not understood", never as a guess.

use std::fmt;

/// Deepest nesting of groups, loops and `${...}` defaults read: beyond it
/// the script is not understood (hostile input cannot exhaust the stack).
const MAX_DEPTH: usize = 64;

/// Why a script was not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

/// A piece of a shell word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal text, quotes removed. `quoted`: it came from quotes or a
    /// backslash escape, so it is never a reserved word.
    Lit { text: String, quoted: bool },
    /// `$NAME`, `${NAME}`, `$1`, `$!`, `$@`, or `${NAME:-word}` / `${NAME-word}` /
    /// `${NAME:=word}` / `${NAME=word}` (`default`: whether an empty value
    /// takes the default too, and the default's parts).
    Param { name: String, default: Option<(bool, Vec<Part>)>, quoted: bool },
    /// `$((expression))`: the expression text.
    Arith { expr: String },
    /// A value that cannot be known without running something: `$(...)`,
    /// backquotes, `$*`, `$?`, `${#NAME}`, `${NAME%pattern}`...
    Unknown,
}

/// A shell word: the parts it is made of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The parts, in order.
    pub parts: Vec<Part>,
}

impl Word {
    /// The word's text when it is plain unquoted literal text: how reserved
    /// words (`while`, `{`, `done`) and `[[ ]]` are recognised.
    pub fn bare(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Lit { text, quoted: false }] => Some(text),
            _ => None,
        }
    }

    fn push_lit(&mut self, c: char, quoted: bool) {
        if let Some(Part::Lit { text, quoted: q }) = self.parts.last_mut()
            && *q == quoted
        {
            text.push(c);
            return;
        }
        self.parts.push(Part::Lit { text: c.to_string(), quoted });
    }
}

/// A redirection operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redir {
    /// `<`
    In,
    /// `<&`
    DupIn,
    /// `<>`
    ReadWrite,
    /// `<<<` (bash here-string)
    HereString,
    /// `<<`, `<<-`
    HereDoc,
    /// `>`, `>|`, `>>`, `>&`, `&>`, `&>>`
    Out,
}

/// An operator token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `;`
    Semi,
    /// `;;`, `;&`, `;;&` (only inside `case`)
    CaseEnd,
    /// `&`
    Amp,
    /// `&&`
    AndIf,
    /// `||`
    OrIf,
    /// `|`, `|&`
    Pipe,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// A newline.
    Newline,
    /// A redirection, with its file descriptor number if one was written
    /// (`2>&1`).
    Redirect(Option<u32>, Redir),
}

/// A token: a word or an operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A word.
    Word(Word),
    /// An operator.
    Op(Op),
}

/// A token and where it is in the script (byte offsets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Offset of its first byte.
    pub start: usize,
    /// Offset just past its last byte.
    pub end: usize,
}

/// Splits a script into tokens, as a POSIX shell does before parsing.
pub fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    Lexer { chars: src.char_indices().collect(), i: 0, len: src.len() }.run()
}

struct Lexer {
    chars: Vec<(usize, char)>,
    i: usize,
    len: usize,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Characters that end an unquoted word.
fn is_meta(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '&' | '|' | ';' | '(' | ')' | '<' | '>')
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).map(|&(_, c)| c)
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.i + n).map(|&(_, c)| c)
    }

    fn offset(&self) -> usize {
        self.chars.get(self.i).map_or(self.len, |&(o, _)| o)
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(n, c)| self.peek_at(n) == Some(c))
    }

    fn run(mut self) -> Result<Vec<Token>, ParseError> {
        let mut out = Vec::new();
        loop {
            // Blanks, and backslash-newline line continuations between words.
            loop {
                match self.peek() {
                    Some(' ' | '\t' | '\r') => self.i += 1,
                    Some('\\') if self.peek_at(1) == Some('\n') => self.i += 2,
                    _ => break,
                }
            }
            let Some(c) = self.peek() else { break };
            let start = self.offset();
            if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                continue;
            }
            if let Some(op) = self.operator(None) {
                out.push(Token { tok: Tok::Op(op), start, end: self.offset() });
                continue;
            }
            let word = self.word(0)?;
            // A word of digits right before `<` or `>` is a file descriptor.
            let fd = match word.bare() {
                Some(d) if matches!(self.peek(), Some('<' | '>')) && !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()) => {
                    d.parse::<u32>().ok()
                }
                _ => None,
            };
            if let Some(fd) = fd
                && let Some(op) = self.operator(Some(fd))
            {
                out.push(Token { tok: Tok::Op(op), start, end: self.offset() });
                continue;
            }
            out.push(Token { tok: Tok::Word(word), start, end: self.offset() });
        }
        Ok(out)
    }

    /// Reads an operator at the cursor, if there is one.
    fn operator(&mut self, fd: Option<u32>) -> Option<Op> {
        const OPS: [(&str, Op); 24] = [
            ("&>>", Op::Redirect(None, Redir::Out)),
            ("&>", Op::Redirect(None, Redir::Out)),
            ("&&", Op::AndIf),
            ("&", Op::Amp),
            ("||", Op::OrIf),
            ("|&", Op::Pipe),
            ("|", Op::Pipe),
            (";;&", Op::CaseEnd),
            (";;", Op::CaseEnd),
            (";&", Op::CaseEnd),
            (";", Op::Semi),
            ("(", Op::LParen),
            (")", Op::RParen),
            ("\n", Op::Newline),
            ("<<<", Op::Redirect(None, Redir::HereString)),
            ("<<-", Op::Redirect(None, Redir::HereDoc)),
            ("<<", Op::Redirect(None, Redir::HereDoc)),
            ("<&", Op::Redirect(None, Redir::DupIn)),
            ("<>", Op::Redirect(None, Redir::ReadWrite)),
            ("<", Op::Redirect(None, Redir::In)),
            (">>", Op::Redirect(None, Redir::Out)),
            (">&", Op::Redirect(None, Redir::Out)),
            (">|", Op::Redirect(None, Redir::Out)),
            (">", Op::Redirect(None, Redir::Out)),
        ];
        for (text, op) in OPS {
            if self.starts_with(text) {
                // `&>` takes no descriptor number; the others do.
                if fd.is_some() && !matches!(op, Op::Redirect(..)) {
                    return None;
                }
                self.i += text.chars().count();
                return Some(match op {
                    Op::Redirect(_, r) => Op::Redirect(fd, r),
                    other => other,
                });
            }
        }
        None
    }

    /// Reads one word (the cursor is on its first character).
    fn word(&mut self, depth: usize) -> Result<Word, ParseError> {
        let mut w = Word::default();
        while let Some(c) = self.peek() {
            if is_meta(c) || c == '\r' {
                break;
            }
            match c {
                '\\' => {
                    self.i += 1;
                    match self.peek() {
                        Some('\n') => self.i += 1,
                        Some(n) => {
                            w.push_lit(n, true);
                            self.i += 1;
                        }
                        None => w.push_lit('\\', true),
                    }
                }
                '\'' => {
                    self.i += 1;
                    if w.parts.is_empty() || !matches!(w.parts.last(), Some(Part::Lit { quoted: true, .. })) {
                        w.parts.push(Part::Lit { text: String::new(), quoted: true });
                    }
                    loop {
                        match self.peek() {
                            None => return err("a single quote is not closed"),
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(c) => {
                                w.push_lit(c, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.i += 1;
                    self.double_quoted(&mut w, depth)?;
                }
                '`' => {
                    self.backquoted()?;
                    w.parts.push(Part::Unknown);
                }
                '$' => self.dollar(&mut w, false, depth)?,
                c => {
                    w.push_lit(c, false);
                    self.i += 1;
                }
            }
        }
        Ok(w)
    }

    /// Reads the inside of `"..."` (the cursor is past the opening quote).
    fn double_quoted(&mut self, w: &mut Word, depth: usize) -> Result<(), ParseError> {
        // `""` is an empty word, not no word.
        if !matches!(w.parts.last(), Some(Part::Lit { quoted: true, .. })) {
            w.parts.push(Part::Lit { text: String::new(), quoted: true });
        }
        loop {
            match self.peek() {
                None => return err("a double quote is not closed"),
                Some('"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some('\n') => self.i += 1,
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            w.push_lit(c, true);
                            self.i += 1;
                        }
                        Some(c) => {
                            w.push_lit('\\', true);
                            w.push_lit(c, true);
                            self.i += 1;
                        }
                        None => return err("a double quote is not closed"),
                    }
                }
                Some('`') => {
                    self.backquoted()?;
                    w.parts.push(Part::Unknown);
                }
                Some('$') => self.dollar(w, true, depth)?,
                Some(c) => {
                    w.push_lit(c, true);
                    self.i += 1;
                }
            }
        }
    }

    /// Skips a backquoted command substitution (the cursor is on the
    /// opening backquote).
    fn backquoted(&mut self) -> Result<(), ParseError> {
        self.i += 1;
        loop {
            match self.peek() {
                None => return err("a backquote is not closed"),
                Some('\\') => self.i += 2,
                Some('`') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// Reads an expansion starting with `$` (the cursor is on the `$`).
    fn dollar(&mut self, w: &mut Word, quoted: bool, depth: usize) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return err("expansions are nested too deeply");
        }
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.i += 3;
                let start = self.offset();
                let mut paren = 0usize;
                loop {
                    match self.peek() {
                        None => return err("`$((` is not closed"),
                        Some('(') => paren += 1,
                        Some(')') if paren == 0 && self.peek_at(1) == Some(')') => {
                            let end = self.offset();
                            self.i += 2;
                            let expr = self.slice(start, end);
                            w.parts.push(Part::Arith { expr });
                            return Ok(());
                        }
                        Some(')') if paren == 0 => return err("`$((` is not closed"),
                        Some(')') => paren -= 1,
                        Some(_) => {}
                    }
                    self.i += 1;
                }
            }
            Some('(') => {
                self.i += 2;
                self.skip_command_substitution()?;
                w.parts.push(Part::Unknown);
                Ok(())
            }
            Some('{') => {
                self.i += 2;
                self.braced(w, quoted, depth)
            }
            Some('\'') if !quoted => {
                // bash's $'...': C-style escapes.
                self.i += 2;
                if !matches!(w.parts.last(), Some(Part::Lit { quoted: true, .. })) {
                    w.parts.push(Part::Lit { text: String::new(), quoted: true });
                }
                loop {
                    match self.peek() {
                        None => return err("a `$'` quote is not closed"),
                        Some('\'') => {
                            self.i += 1;
                            return Ok(());
                        }
                        Some('\\') => {
                            let c = match self.peek_at(1) {
                                Some('n') => '\n',
                                Some('t') => '\t',
                                Some(c) => c,
                                None => return err("a `$'` quote is not closed"),
                            };
                            w.push_lit(c, true);
                            self.i += 2;
                        }
                        Some(c) => {
                            w.push_lit(c, true);
                            self.i += 1;
                        }
                    }
                }
            }
            Some(c) if is_name_start(c) => {
                self.i += 1;
                let mut name = String::new();
                while let Some(c) = self.peek().filter(|c| is_name_char(*c)) {
                    name.push(c);
                    self.i += 1;
                }
                w.parts.push(Part::Param { name, default: None, quoted });
                Ok(())
            }
            Some(c) if c.is_ascii_digit() => {
                self.i += 2;
                w.parts.push(Part::Param { name: c.to_string(), default: None, quoted });
                Ok(())
            }
            Some(c @ ('!' | '@')) => {
                // `$!` (the last background job) and `$@` (the positional
                // parameters) are kept by name: `wait $!` and `exec "$@"`
                // are read with them.
                self.i += 2;
                w.parts.push(Part::Param { name: c.to_string(), default: None, quoted });
                Ok(())
            }
            Some('*' | '#' | '?' | '$' | '-') => {
                self.i += 2;
                w.parts.push(Part::Unknown);
                Ok(())
            }
            _ => {
                // A lone `$` is itself.
                w.push_lit('$', quoted);
                self.i += 1;
                Ok(())
            }
        }
    }

    /// Skips `$(...)` (the cursor is past `$(`), minding quotes and nested
    /// parentheses.
    fn skip_command_substitution(&mut self) -> Result<(), ParseError> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return err("`$(` is not closed"),
                Some('\\') => self.i += 2,
                Some('\'') => {
                    self.i += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                    self.i += 1;
                }
                Some('"') => {
                    self.i += 1;
                    loop {
                        match self.peek() {
                            None => return err("`$(` is not closed"),
                            Some('\\') => self.i += 2,
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => self.i += 1,
                        }
                    }
                }
                Some('(') => {
                    depth += 1;
                    self.i += 1;
                }
                Some(')') if depth == 0 => {
                    self.i += 1;
                    return Ok(());
                }
                Some(')') => {
                    depth -= 1;
                    self.i += 1;
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// Reads `${...}` (the cursor is past `${`).
    fn braced(&mut self, w: &mut Word, quoted: bool, depth: usize) -> Result<(), ParseError> {
        let mut name = String::new();
        match self.peek() {
            Some(c) if is_name_start(c) => {
                while let Some(c) = self.peek().filter(|c| is_name_char(*c)) {
                    name.push(c);
                    self.i += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while let Some(c) = self.peek().filter(char::is_ascii_digit) {
                    name.push(c);
                    self.i += 1;
                }
            }
            _ => {}
        }
        if !name.is_empty() && self.peek() == Some('}') {
            self.i += 1;
            w.parts.push(Part::Param { name, default: None, quoted });
            return Ok(());
        }
        let colon = self.peek() == Some(':');
        let op = if colon { self.peek_at(1) } else { self.peek() };
        if !name.is_empty() && matches!(op, Some('-' | '=')) {
            self.i += if colon { 2 } else { 1 };
            let default = self.default_word(quoted, depth + 1)?;
            w.parts.push(Part::Param { name, default: Some((colon, default)), quoted });
            return Ok(());
        }
        // Any other form: skip to the matching brace.
        self.skip_braced()?;
        w.parts.push(Part::Unknown);
        Ok(())
    }

    /// Reads the word of `${NAME:-word}` up to the closing brace.
    fn default_word(&mut self, quoted: bool, depth: usize) -> Result<Vec<Part>, ParseError> {
        let mut w = Word::default();
        loop {
            match self.peek() {
                None => return err("`${` is not closed"),
                Some('}') => {
                    self.i += 1;
                    return Ok(w.parts);
                }
                Some('\\') => {
                    self.i += 1;
                    if let Some(c) = self.peek() {
                        w.push_lit(c, true);
                        self.i += 1;
                    }
                }
                Some('\'') if !quoted => {
                    self.i += 1;
                    loop {
                        match self.peek() {
                            None => return err("a single quote is not closed"),
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(c) => {
                                w.push_lit(c, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                Some('"') => {
                    self.i += 1;
                    self.double_quoted(&mut w, depth)?;
                }
                Some('$') => self.dollar(&mut w, quoted, depth)?,
                Some('`') => {
                    self.backquoted()?;
                    w.parts.push(Part::Unknown);
                }
                Some(c) => {
                    w.push_lit(c, quoted);
                    self.i += 1;
                }
            }
        }
    }

    fn skip_braced(&mut self) -> Result<(), ParseError> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return err("`${` is not closed"),
                Some('\\') => self.i += 2,
                Some('{') => {
                    depth += 1;
                    self.i += 1;
                }
                Some('}') if depth == 0 => {
                    self.i += 1;
                    return Ok(());
                }
                Some('}') => {
                    depth -= 1;
                    self.i += 1;
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn slice(&self, start: usize, end: usize) -> String {
        self.chars.iter().filter(|(o, _)| *o >= start && *o < end).map(|(_, c)| *c).collect()
    }
}

// ------------------------------------------------------------------ grammar

/// A list: and-or lists run one after the other (or in the background).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    /// The items, in order.
    pub items: Vec<Item>,
}

/// One and-or list of a list, and whether it ends with `&`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The and-or list.
    pub and_or: AndOr,
    /// Whether it runs in the background (`&`).
    pub background: bool,
}

/// Pipelines joined by `&&` and `||`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AndOr {
    /// The first pipeline.
    pub first: Pipeline,
    /// The others, each with the operator before it.
    pub rest: Vec<(Connector, Pipeline)>,
}

/// `&&` or `||`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connector {
    /// `&&`: runs when the previous pipeline succeeded.
    And,
    /// `||`: runs when the previous pipeline failed.
    Or,
}

/// Commands joined by `|`, optionally negated with `!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// `!`.
    pub bang: bool,
    /// The commands.
    pub commands: Vec<Command>,
}

/// A command and where it is in the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// What it is.
    pub kind: CommandKind,
    /// Byte offsets of its text in the script.
    pub span: (usize, usize),
    /// Whether its standard input is redirected (`< file`), so it does not
    /// read the container's.
    pub stdin_redirected: bool,
}

/// The kinds of command the reader understands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Words: assignments, the command name, its arguments.
    Simple(Vec<Word>),
    /// `{ list; }`
    Group(List),
    /// `( list )`
    Subshell(List),
    /// `while cond; do body; done`, or `until` (`until: true`).
    Loop { until: bool, cond: List, body: List },
    /// `if cond; then body; elif ...; else ...; fi`
    If { branches: Vec<(List, List)>, otherwise: Option<List> },
    /// `for name in words; do body; done` (`words`: `None` without `in`,
    /// when it goes through the positional parameters).
    For { var: String, words: Option<Vec<Word>>, body: List },
    /// `for ((init; cond; step)); do body; done` (bash): the expressions'
    /// text, each possibly empty (an empty `cond` is always true).
    ArithFor { init: String, cond: String, step: String, body: List },
    /// `[[ ... ]]` (bash): its words.
    Test(Vec<Word>),
    /// `(( expression ))` (bash): the expression text.
    Arith(String),
}

/// Parses a script.
pub fn parse(src: &str) -> Result<List, ParseError> {
    let tokens = tokenize(src)?;
    let mut p = Parser { src, tokens, i: 0, depth: 0 };
    let list = p.list(&[])?;
    match p.tokens.get(p.i) {
        None => Ok(list),
        Some(t) => err(format!("unexpected `{}`", p.text(t.start, t.end))),
    }
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.i).map(|t| &t.tok)
    }

    fn peek_op(&self) -> Option<Op> {
        match self.peek() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        }
    }

    fn peek_bare(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => w.bare(),
            _ => None,
        }
    }

    fn text(&self, start: usize, end: usize) -> &str {
        self.src.get(start..end).unwrap_or("")
    }

    fn start(&self) -> usize {
        self.tokens.get(self.i).map_or(self.src.len(), |t| t.start)
    }

    fn last_end(&self) -> usize {
        self.i.checked_sub(1).and_then(|j| self.tokens.get(j)).map_or(0, |t| t.end)
    }

    fn skip_newlines(&mut self) {
        while self.peek_op() == Some(Op::Newline) {
            self.i += 1;
        }
    }

    fn expect_bare(&mut self, word: &str) -> Result<(), ParseError> {
        if self.peek_bare() == Some(word) {
            self.i += 1;
            Ok(())
        } else {
            err(format!("`{word}` is missing"))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH { err("the script is nested too deeply") } else { Ok(()) }
    }

    /// A list, up to (not including) one of the `stop` words, `)`, `;;` or
    /// the end.
    fn list(&mut self, stop: &[&str]) -> Result<List, ParseError> {
        let mut list = List::default();
        loop {
            self.skip_newlines();
            match self.peek() {
                None | Some(Tok::Op(Op::RParen | Op::CaseEnd)) => break,
                Some(Tok::Word(w)) if w.bare().is_some_and(|b| stop.contains(&b)) => break,
                _ => {}
            }
            let and_or = self.and_or()?;
            match self.peek_op() {
                Some(Op::Semi | Op::Newline) => {
                    self.i += 1;
                    list.items.push(Item { and_or, background: false });
                }
                Some(Op::Amp) => {
                    self.i += 1;
                    list.items.push(Item { and_or, background: true });
                }
                _ => {
                    list.items.push(Item { and_or, background: false });
                    break;
                }
            }
        }
        Ok(list)
    }

    fn and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let c = match self.peek_op() {
                Some(Op::AndIf) => Connector::And,
                Some(Op::OrIf) => Connector::Or,
                _ => break,
            };
            self.i += 1;
            self.skip_newlines();
            rest.push((c, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let bang = self.peek_bare() == Some("!");
        if bang {
            self.i += 1;
        }
        let mut commands = vec![self.command()?];
        while self.peek_op() == Some(Op::Pipe) {
            self.i += 1;
            self.skip_newlines();
            commands.push(self.command()?);
        }
        Ok(Pipeline { bang, commands })
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        self.enter()?;
        let start = self.start();
        let kind = match (self.peek(), self.peek_bare()) {
            (None, _) => return err("a command is missing at the end"),
            (Some(Tok::Op(Op::LParen)), _) => self.paren()?,
            (_, Some("{")) => {
                self.i += 1;
                let l = self.list(&["}"])?;
                self.expect_bare("}")?;
                CommandKind::Group(l)
            }
            (_, Some(kw @ ("while" | "until"))) => {
                let until = kw == "until";
                self.i += 1;
                let cond = self.list(&["do"])?;
                self.expect_bare("do")?;
                let body = self.list(&["done"])?;
                self.expect_bare("done")?;
                CommandKind::Loop { until, cond, body }
            }
            (_, Some("if")) => self.if_()?,
            (_, Some("for")) => self.for_()?,
            (_, Some("[[")) => {
                self.i += 1;
                let mut words = Vec::new();
                loop {
                    match self.peek() {
                        None => return err("`]]` is missing"),
                        Some(Tok::Word(w)) if w.bare() == Some("]]") => {
                            self.i += 1;
                            break;
                        }
                        Some(Tok::Word(w)) => {
                            words.push(w.clone());
                            self.i += 1;
                        }
                        Some(Tok::Op(_)) => self.i += 1,
                    }
                }
                CommandKind::Test(words)
            }
            (_, Some(kw @ ("case" | "function" | "select" | "coproc"))) => return err(format!("`{kw}` is not read")),
            (_, Some(kw @ ("then" | "else" | "elif" | "fi" | "do" | "done" | "}" | "esac" | "in"))) => {
                return err(format!("unexpected `{kw}`"));
            }
            (Some(Tok::Op(op)), _) if !matches!(op, Op::Redirect(..)) => {
                let (s, e) = self.tokens.get(self.i).map_or((0, 0), |t| (t.start, t.end));
                return err(format!("unexpected `{}`", self.text(s, e).replace('\n', "newline")));
            }
            _ => return self.simple(start).inspect(|_| self.depth -= 1),
        };
        let stdin_redirected = self.redirects()?;
        self.depth -= 1;
        Ok(Command { kind, span: (start, self.last_end()), stdin_redirected })
    }

    /// `(( expression ))` at the cursor: the expression's text, the cursor
    /// moved past `))`; `None` (cursor unmoved) when the cursor is not on `((`.
    fn double_paren(&mut self) -> Result<Option<String>, ParseError> {
        let Some(open) = self.tokens.get(self.i).filter(|t| t.tok == Tok::Op(Op::LParen)).map(|t| t.end) else { return Ok(None) };
        let next = self.tokens.get(self.i + 1);
        let Some(n) = next.filter(|n| n.tok == Tok::Op(Op::LParen) && n.start == open) else { return Ok(None) };
        // Find the matching `))` in the text.
        let inner = n.end;
        let mut depth = 0usize;
        let mut end = None;
        let bytes = self.src.as_bytes();
        let mut k = inner;
        while let Some(&b) = bytes.get(k) {
            match b {
                b'(' => depth += 1,
                b')' if depth == 0 => {
                    if bytes.get(k + 1) == Some(&b')') {
                        end = Some(k);
                    }
                    break;
                }
                b')' => depth -= 1,
                _ => {}
            }
            k += 1;
        }
        let Some(end) = end else { return err("`((` is not closed") };
        let expr = self.text(inner, end).to_string();
        while self.tokens.get(self.i).is_some_and(|t| t.start < end + 2) {
            self.i += 1;
        }
        Ok(Some(expr))
    }

    /// `( list )` or `(( expression ))`.
    fn paren(&mut self) -> Result<CommandKind, ParseError> {
        if let Some(expr) = self.double_paren()? {
            return Ok(CommandKind::Arith(expr));
        }
        self.i += 1;
        let l = self.list(&[])?;
        if self.peek_op() != Some(Op::RParen) {
            return err("`)` is missing");
        }
        self.i += 1;
        Ok(CommandKind::Subshell(l))
    }

    fn if_(&mut self) -> Result<CommandKind, ParseError> {
        self.i += 1;
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let cond = self.list(&["then"])?;
            self.expect_bare("then")?;
            let body = self.list(&["elif", "else", "fi"])?;
            branches.push((cond, body));
            match self.peek_bare() {
                Some("elif") => self.i += 1,
                Some("else") => {
                    self.i += 1;
                    otherwise = Some(self.list(&["fi"])?);
                    self.expect_bare("fi")?;
                    break;
                }
                _ => {
                    self.expect_bare("fi")?;
                    break;
                }
            }
        }
        Ok(CommandKind::If { branches, otherwise })
    }

    fn for_(&mut self) -> Result<CommandKind, ParseError> {
        self.i += 1;
        if let Some(expr) = self.double_paren()? {
            let mut parts = expr.split(';').map(str::to_string);
            let (Some(init), Some(cond), Some(step), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
                return err("`for ((` needs three expressions separated by `;`");
            };
            let body = self.do_done()?;
            return Ok(CommandKind::ArithFor { init, cond, step, body });
        }
        let var = match self.peek() {
            Some(Tok::Word(w)) => w.bare().map(str::to_string),
            _ => None,
        };
        let Some(var) = var else { return err("`for` needs a variable name") };
        self.i += 1;
        self.skip_newlines();
        let mut words = None;
        if self.peek_bare() == Some("in") {
            self.i += 1;
            let mut list = Vec::new();
            while let Some(Tok::Word(w)) = self.peek() {
                list.push(w.clone());
                self.i += 1;
            }
            words = Some(list);
        }
        let body = self.do_done()?;
        Ok(CommandKind::For { var, words, body })
    }

    /// `[;] do list done`, after a `for` head: the list.
    fn do_done(&mut self) -> Result<List, ParseError> {
        if matches!(self.peek_op(), Some(Op::Semi | Op::Newline)) {
            self.i += 1;
        }
        self.skip_newlines();
        self.expect_bare("do")?;
        let body = self.list(&["done"])?;
        self.expect_bare("done")?;
        Ok(body)
    }

    /// Redirections after a compound command; whether one of them is the
    /// standard input.
    fn redirects(&mut self) -> Result<bool, ParseError> {
        let mut stdin = false;
        while let Some(Op::Redirect(fd, r)) = self.peek_op() {
            self.i += 1;
            stdin |= self.redirect_target(fd, r)?;
        }
        Ok(stdin)
    }

    /// Consumes a redirection's target; whether it replaces the standard
    /// input.
    fn redirect_target(&mut self, fd: Option<u32>, r: Redir) -> Result<bool, ParseError> {
        if r == Redir::HereDoc {
            return err("here-documents are not read");
        }
        match self.peek() {
            Some(Tok::Word(_)) => self.i += 1,
            _ => return err("a redirection has no target"),
        }
        Ok(matches!(r, Redir::In | Redir::DupIn | Redir::ReadWrite | Redir::HereString) && fd.unwrap_or(0) == 0)
    }

    fn simple(&mut self, start: usize) -> Result<Command, ParseError> {
        let mut words = Vec::new();
        let mut stdin_redirected = false;
        loop {
            match self.peek() {
                Some(Tok::Word(w)) => {
                    words.push(w.clone());
                    self.i += 1;
                }
                Some(Tok::Op(Op::Redirect(fd, r))) => {
                    let (fd, r) = (*fd, *r);
                    self.i += 1;
                    stdin_redirected |= self.redirect_target(fd, r)?;
                }
                Some(Tok::Op(Op::LParen)) if words.len() == 1 => return err("function definitions are not read"),
                _ => break,
            }
        }
        Ok(Command { kind: CommandKind::Simple(words), span: (start, self.last_end()), stdin_redirected })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str, quoted: bool) -> Part {
        Part::Lit { text: s.into(), quoted }
    }

    /// The words of a script, shown: literal text as is, `$NAME` as
    /// `{NAME}`, arithmetic as `((...))`, unknowns as `?`.
    fn words(src: &str) -> Vec<String> {
        tokenize(src)
            .unwrap()
            .into_iter()
            .map(|t| match t.tok {
                Tok::Word(w) => show(&w.parts),
                Tok::Op(op) => format!("<{op:?}>"),
            })
            .collect()
    }

    fn show(parts: &[Part]) -> String {
        parts
            .iter()
            .map(|p| match p {
                Part::Lit { text, .. } => text.clone(),
                Part::Param { name, default: None, .. } => format!("{{{name}}}"),
                Part::Param { name, default: Some((colon, d)), .. } => format!("{{{name}{}-{}}}", if *colon { ":" } else { "" }, show(d)),
                Part::Arith { expr } => format!("(({expr}))"),
                Part::Unknown => "?".into(),
            })
            .collect()
    }

    #[test]
    fn words_split_on_unquoted_blanks_and_operators() {
        assert_eq!(words("sleep infinity"), ["sleep", "infinity"]);
        assert_eq!(words("  sleep\tinfinity  "), ["sleep", "infinity"]);
        assert_eq!(words("a;b&&c||d|e&"), ["a", "<Semi>", "b", "<AndIf>", "c", "<OrIf>", "d", "<Pipe>", "e", "<Amp>"]);
        assert_eq!(words("a\nb"), ["a", "<Newline>", "b"]);
        assert_eq!(words("(a)"), ["<LParen>", "a", "<RParen>"]);
        assert_eq!(words("a;;b"), ["a", "<CaseEnd>", "b"]);
    }

    #[test]
    fn quotes_are_removed_and_keep_blanks() {
        assert_eq!(words("echo 'sleep infinity'"), ["echo", "sleep infinity"]);
        assert_eq!(words(r#"echo "a  b" c"#), ["echo", "a  b", "c"]);
        assert_eq!(words(r#"a'b'"c"d"#), ["abcd"]);
        assert_eq!(words("''"), [""], "an empty quoted word is a word");
        assert_eq!(words(r#""""#), [""]);
        assert_eq!(words(r"a\ b"), ["a b"]);
        assert_eq!(words("a\\\nb"), ["ab"], "backslash-newline joins lines");
        assert_eq!(words(r#""a\"b\\c\$d\e""#), [r#"a"b\c$d\e"#]);
        assert_eq!(words("'a\\b'"), [r"a\b"], "no escapes inside single quotes");
        assert_eq!(words("$'a\\tb'"), ["a\tb"]);
        let t = tokenize("'while'").unwrap();
        let Tok::Word(w) = &t[0].tok else { panic!() };
        assert_eq!(w.bare(), None, "a quoted word is never a reserved word");
        assert_eq!(w.parts, [lit("while", true)]);
    }

    #[test]
    fn expansions_are_kept_as_parts() {
        assert_eq!(words("sleep $D"), ["sleep", "{D}"]);
        assert_eq!(words("sleep ${D}s"), ["sleep", "{D}s"]);
        assert_eq!(words(r#"sleep "${D:-inf}""#), ["sleep", "{D:-inf}"]);
        assert_eq!(words("sleep ${D-1d}"), ["sleep", "{D-1d}"]);
        assert_eq!(words("sleep ${D:=5}"), ["sleep", "{D:-5}"]);
        assert_eq!(words("sleep $1 $12"), ["sleep", "{1}", "{1}2"], "one digit, as POSIX reads `$12`");
        assert_eq!(words("sleep ${12}"), ["sleep", "{12}"]);
        assert_eq!(words("sleep $((60 * 60))"), ["sleep", "((60 * 60))"]);
        assert_eq!(words("sleep $(( (1+2)*3 ))"), ["sleep", "(( (1+2)*3 ))"]);
        assert_eq!(words("sleep $(cat /x) `date`"), ["sleep", "?", "?"]);
        assert_eq!(words(r#"echo "$(echo ")")" x"#), ["echo", "?", "x"], "quotes inside `$(...)`");
        assert_eq!(words("echo $* $? ${#X} ${X%.*}"), ["echo", "?", "?", "?", "?"]);
        assert_eq!(words("wait $!; exec \"$@\""), ["wait", "{!}", "<Semi>", "exec", "{@}"], "kept by name, for `wait` and `exec`");
        assert_eq!(words("echo $ a$"), ["echo", "$", "a$"]);
        assert_eq!(words("echo ${X:-${Y:-z}}"), ["echo", "{X:-{Y:-z}}"]);
    }

    #[test]
    fn comments_run_to_the_end_of_the_line() {
        assert_eq!(words("# sleep infinity\npython x.py"), ["<Newline>", "python", "x.py"]);
        assert_eq!(words("a # b c"), ["a"]);
        assert_eq!(words("a#b"), ["a#b"], "`#` inside a word is not a comment");
    }

    #[test]
    fn redirections_and_descriptors() {
        assert_eq!(words("a > /dev/null 2>&1"), ["a", "<Redirect(None, Out)>", "/dev/null", "<Redirect(Some(2), Out)>", "1"]);
        assert_eq!(words("cat </dev/null"), ["cat", "<Redirect(None, In)>", "/dev/null"]);
        assert_eq!(words("a &> log"), ["a", "<Redirect(None, Out)>", "log"]);
        assert_eq!(words("echo 2 >x"), ["echo", "2", "<Redirect(None, Out)>", "x"], "a blank before `>`: an argument");
    }

    #[test]
    fn unclosed_things_are_errors() {
        for bad in ["echo 'a", r#"echo "a"#, "echo `a", "echo $(a", "echo ${a", "echo $((1+2)"] {
            assert!(tokenize(bad).is_err(), "{bad}");
        }
    }

    fn simple_names(l: &List) -> Vec<String> {
        let mut out = Vec::new();
        for item in &l.items {
            let mut pipes = vec![&item.and_or.first];
            pipes.extend(item.and_or.rest.iter().map(|(_, p)| p));
            for p in pipes {
                for c in &p.commands {
                    match &c.kind {
                        CommandKind::Simple(w) => out.push(w.iter().map(|w| show(&w.parts)).collect::<Vec<_>>().join(" ")),
                        other => out.push(
                            match other {
                                CommandKind::Group(_) => "group",
                                CommandKind::Subshell(_) => "subshell",
                                CommandKind::Loop { .. } => "loop",
                                CommandKind::If { .. } => "if",
                                CommandKind::For { .. } => "for",
                                CommandKind::ArithFor { .. } => "arith for",
                                CommandKind::Test(_) => "test",
                                CommandKind::Arith(_) => "arith",
                                CommandKind::Simple(_) => "simple",
                            }
                            .to_string(),
                        ),
                    }
                }
            }
        }
        out
    }

    #[test]
    fn lists_and_and_or() {
        let l = parse("trap 'exit 0' TERM; sleep infinity & wait").unwrap();
        assert_eq!(simple_names(&l), ["trap exit 0 TERM", "sleep infinity", "wait"]);
        assert_eq!(l.items.iter().map(|i| i.background).collect::<Vec<_>>(), [false, true, false]);
        let l = parse("a && b || c").unwrap();
        assert_eq!(l.items.len(), 1);
        assert_eq!(l.items[0].and_or.rest.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [Connector::And, Connector::Or]);
        let l = parse("a &&\n  b").unwrap();
        assert_eq!(simple_names(&l), ["a", "b"], "a newline after `&&` continues the list");
        let l = parse("a | b | c").unwrap();
        assert_eq!(l.items[0].and_or.first.commands.len(), 3);
        let l = parse("! a").unwrap();
        assert!(l.items[0].and_or.first.bang);
        assert_eq!(parse("").unwrap(), List::default());
        assert_eq!(parse("\n\n").unwrap(), List::default());
    }

    #[test]
    fn compound_commands() {
        let l = parse("while true; do sleep 60; done").unwrap();
        let CommandKind::Loop { until, cond, body } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
        assert!(!until);
        assert_eq!(simple_names(cond), ["true"]);
        assert_eq!(simple_names(body), ["sleep 60"]);
        let l = parse("until false\ndo\n  sleep 1\ndone").unwrap();
        assert!(matches!(l.items[0].and_or.first.commands[0].kind, CommandKind::Loop { until: true, .. }));
        let l = parse("if [ -f x ]; then a; elif b; then c; else d; fi").unwrap();
        let CommandKind::If { branches, otherwise } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
        assert_eq!(branches.len(), 2);
        assert_eq!(simple_names(otherwise.as_ref().unwrap()), ["d"]);
        let l = parse("for i in 1 2 3; do echo $i; done").unwrap();
        let CommandKind::For { var, words, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
        assert_eq!((var.as_str(), words.as_ref().map(Vec::len)), ("i", Some(3)));
        let l = parse("for i\ndo echo $i; done").unwrap();
        let CommandKind::For { var, words, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
        assert_eq!((var.as_str(), words), ("i", &None), "no `in`: the positional parameters");
        assert!(parse("for 'i' in 1; do :; done").is_err(), "not a name");
        let l = parse("{ a; b; } > log; (c; d)").unwrap();
        assert_eq!(simple_names(&l), ["group", "subshell"]);
        let l = parse("while (( 1 )); do :; done").unwrap();
        let CommandKind::Loop { cond, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
        assert_eq!(cond.items[0].and_or.first.commands[0].kind, CommandKind::Arith(" 1 ".into()));
        for (src, want) in [
            ("for ((;;)); do sleep 60; done", ("", "", "")),
            ("for (( ; ; ))\ndo\n  sleep 60\ndone", (" ", " ", " ")),
            ("for((i=0;i<10;i++)) do sleep 1; done", ("i=0", "i<10", "i++")),
            ("for (( i = (1+2); i > 0; i-- )); do :; done", (" i = (1+2)", " i > 0", " i-- ")),
        ] {
            let l = parse(src).unwrap();
            let CommandKind::ArithFor { init, cond, step, body } = &l.items[0].and_or.first.commands[0].kind else { panic!("{src}") };
            assert_eq!((init.as_str(), cond.as_str(), step.as_str()), want, "{src}");
            assert_eq!(body.items.len(), 1, "{src}");
        }
        let src = "for ((;;)); do sleep 60; done; echo after";
        let l = parse(src).unwrap();
        assert_eq!(simple_names(&l), ["arith for", "echo after"]);
        let c = &l.items[0].and_or.first.commands[0];
        assert_eq!(&src[c.span.0..c.span.1], "for ((;;)); do sleep 60; done");
        let l = parse("[[ -f a && -f b ]] && echo yes").unwrap();
        assert_eq!(simple_names(&l), ["test", "echo yes"]);
    }

    #[test]
    fn spans_cover_the_command_text() {
        let src = "echo hi; while true; do sleep 5; done >/dev/null";
        let l = parse(src).unwrap();
        let c = &l.items[1].and_or.first.commands[0];
        assert_eq!(&src[c.span.0..c.span.1], "while true; do sleep 5; done >/dev/null");
        let c = &l.items[0].and_or.first.commands[0];
        assert_eq!(&src[c.span.0..c.span.1], "echo hi");
    }

    #[test]
    fn standard_input_redirections_are_noted() {
        let l = parse("cat < /dev/null; cat 0</x; cat 2</x; cat").unwrap();
        let r: Vec<bool> = l.items.iter().map(|i| i.and_or.first.commands[0].stdin_redirected).collect();
        assert_eq!(r, [true, true, false, false]);
        let l = parse("while read l; do echo $l; done < file").unwrap();
        assert!(l.items[0].and_or.first.commands[0].stdin_redirected);
    }

    #[test]
    fn what_is_not_read_is_an_error_not_a_guess() {
        for bad in [
            "case $x in a) sleep 1;; esac",
            "f() { sleep infinity; }; f",
            "function f { :; }",
            "cat <<EOF\nhi\nEOF",
            "while true; do sleep 1",
            "if a; then b",
            "{ a; ",
            "(a",
            "a && ",
            "a | ",
            "; a",
            "done",
            "a )",
            "echo > ",
            "(( 1 ",
            "for ((;)); do :; done",
            "for ((;;;)); do :; done",
            "for ((;;)); do :;",
            "for ((;;)) { :; }",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not be read");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}a{}", "( ".repeat(200), " )".repeat(200));
        assert!(parse(&deep).is_err());
        let ok = format!("{}a{}", "( ".repeat(20), " )".repeat(20));
        assert!(parse(&ok).is_ok());
        let deep = format!("echo {}x{}", "${A:-".repeat(100), "}".repeat(100));
        assert!(tokenize(&deep).is_err());
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "\\",
            "$",
            "${",
            "$((",
            "'",
            "\"",
            "`",
            "&&&",
            "|||",
            ";;;",
            ">>>",
            "<<<x",
            "((",
            "))",
            "[[",
            "]]",
            "\u{0}",
            "é $é ${é}",
            "$'\\",
            "a\r\nb",
        ] {
            let _ = parse(s);
        }
    }
}
