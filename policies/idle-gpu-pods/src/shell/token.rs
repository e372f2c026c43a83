//! What the shell reader splits a script into: words, each made of parts
//! (literal text with its quoting, parameters, arithmetic, and values that
//! cannot be known without running something), operators (`;`, `&&`, `|`,
//! parentheses, newlines, redirections with their descriptor), and tokens,
//! each a word or an operator with the byte offsets it covers in the
//! script. The lexer (`lex`) produces them and the parser (`grammar`)
//! reads them; the words are expanded later, by the caller.

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

    pub(super) fn push_lit(&mut self, c: char, quoted: bool) {
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
