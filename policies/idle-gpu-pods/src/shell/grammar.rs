//! The syntax tree of a script and the parser that builds it from the
//! lexer's tokens: lists of and-or lists, pipelines, simple commands, and
//! the compound commands the reader understands (groups, subshells,
//! `while`/`until`, `if`, `for`, bash's `for ((;;))`, `[[ ]]` and `(( ))`),
//! each with the span of its text and whether its standard input is
//! redirected. `case`, functions, here-documents, anything else it does not
//! read and nesting deeper than the bound are errors, never guesses.

use super::lex::tokenize;
use super::token::{Op, Redir, Tok, Token, Word};
use super::{MAX_DEPTH, ParseError, err};

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
