//! The lexer: splits a script into tokens as a POSIX shell does before
//! parsing. It removes quotes and escapes (single and double quotes,
//! backslashes, bash's `$'...'`), skips comments, blanks and line
//! continuations, reads a number right before `<` or `>` as a file
//! descriptor, and keeps expansions (`$NAME`, `${NAME:-word}`, `$((...))`)
//! as parts of the word; command substitutions and the other forms whose
//! value cannot be known are skipped and kept as unknown parts. An unclosed
//! quote or expansion, or expansions nested too deeply, is an error.

use super::token::{Op, Part, Redir, Tok, Token, Word};
use super::{MAX_DEPTH, ParseError, err};

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
                self.skip_balanced('(', ')', true, "$(")?;
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

    /// Skips to the `close` that balances an `open` the cursor is past
    /// (`$(` or `${`, named `what` in the error), minding backslashes,
    /// nested pairs and, with `quotes`, quoted strings.
    fn skip_balanced(&mut self, open: char, close: char, quotes: bool, what: &str) -> Result<(), ParseError> {
        let unclosed = || err(format!("`{what}` is not closed"));
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return unclosed(),
                Some('\\') => self.i += 2,
                Some('\'') if quotes => {
                    self.i += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                    self.i += 1;
                }
                Some('"') if quotes => {
                    self.i += 1;
                    loop {
                        match self.peek() {
                            None => return unclosed(),
                            Some('\\') => self.i += 2,
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => self.i += 1,
                        }
                    }
                }
                Some(c) if c == open => {
                    depth += 1;
                    self.i += 1;
                }
                Some(c) if c == close => {
                    self.i += 1;
                    match depth.checked_sub(1) {
                        Some(d) => depth = d,
                        None => return Ok(()),
                    }
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
        self.skip_balanced('{', '}', false, "${")?;
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

    fn slice(&self, start: usize, end: usize) -> String {
        self.chars.iter().filter(|(o, _)| *o >= start && *o < end).map(|(_, c)| *c).collect()
    }
}
