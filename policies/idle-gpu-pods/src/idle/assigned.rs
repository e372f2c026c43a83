//! The variables a command may set, found in its text (assignments, `for`
//! variables, `export`, `read` and the other builtins that set a name,
//! `${NAME:=default}`, arithmetic, or any at all through `eval` and
//! `source`), so that what a loop, an `if` or an `a && b` may have changed
//! is forgotten after it, not trusted.

use std::collections::BTreeSet;

use super::super::shell::{Command, CommandKind, List, Part, Pipeline, Word};
use super::argv::program;
use super::expand::{expand_joined, forget_positional};
use super::run::Vars;

/// The variables a command may set, found in its text: so that what a
/// loop, an `if` or an `a && b` may change is not trusted after it.
#[derive(Debug, Default)]
pub(super) struct Assigned {
    names: BTreeSet<String>,
    /// It may set any (`eval`, `source`, a command read from a variable).
    any: bool,
}

impl Assigned {
    pub(super) fn of(c: &Command) -> Assigned {
        let mut a = Assigned::default();
        a.command(c);
        a
    }

    /// Makes what may have been set unknown in `vars`.
    pub(super) fn forget(&self, vars: &mut Vars) {
        if self.any {
            vars.clear();
            return;
        }
        for n in &self.names {
            vars.insert(n.clone(), None);
        }
        if self.names.contains("#") {
            forget_positional(vars);
        }
    }

    fn list(&mut self, l: &List) {
        for item in &l.items {
            self.pipeline(&item.and_or.first);
            for (_, p) in &item.and_or.rest {
                self.pipeline(p);
            }
        }
    }

    pub(super) fn pipeline(&mut self, p: &Pipeline) {
        p.commands.iter().for_each(|c| self.command(c));
    }

    fn command(&mut self, c: &Command) {
        match &c.kind {
            CommandKind::Simple(words) => self.simple(words),
            CommandKind::Group(l) | CommandKind::Subshell(l) => self.list(l),
            CommandKind::Loop { cond, body, .. } => {
                self.list(cond);
                self.list(body);
            }
            CommandKind::If { branches, otherwise } => {
                for (cond, body) in branches {
                    self.list(cond);
                    self.list(body);
                }
                if let Some(l) = otherwise {
                    self.list(l);
                }
            }
            CommandKind::For { var, words, body } => {
                self.names.insert(var.clone());
                words.iter().flatten().for_each(|w| self.parts(&w.parts));
                self.list(body);
            }
            CommandKind::ArithFor { init, cond, step, body } => {
                [init, cond, step].into_iter().for_each(|e| self.arith(e));
                self.list(body);
            }
            CommandKind::Test(words) => words.iter().for_each(|w| self.parts(&w.parts)),
            CommandKind::Arith(e) => self.arith(e),
        }
    }

    fn simple(&mut self, words: &[Word]) {
        words.iter().for_each(|w| self.parts(&w.parts));
        let mut rest = words;
        while let Some((w, r)) = rest.split_first() {
            let Some(name) = assigned_name(w) else { break };
            self.names.insert(name);
            rest = r;
        }
        let Some((cmd, args)) = rest.split_first() else { return };
        let literal = |w: &Word| expand_joined(&w.parts, &Vars::new());
        let Some(cmd) = literal(cmd) else {
            self.any = true;
            return;
        };
        match program(&cmd) {
            "eval" | "source" | "." => self.any = true,
            // The positional parameters.
            "set" | "shift" => {
                self.names.insert("#".to_string());
            }
            "export" | "declare" | "typeset" | "local" | "readonly" | "unset" | "read" | "getopts" | "let" | "mapfile" | "readarray"
            | "command" | "builtin" => {
                for a in args {
                    match literal(a) {
                        Some(t) => self.names.extend(leading_name(&t)),
                        None => self.any = true,
                    }
                }
            }
            // `printf -v NAME`, `wait -p NAME` (bash).
            p @ ("printf" | "wait") => {
                let flag = if p == "printf" { 'v' } else { 'p' };
                if args.iter().filter_map(literal).any(|t| t.starts_with('-') && t.contains(flag)) {
                    self.any = true;
                }
            }
            _ => {}
        }
    }

    /// `${NAME:=default}` and `${NAME=default}` (read as `${NAME:-...}`:
    /// either may set it), and arithmetic in a word.
    fn parts(&mut self, parts: &[Part]) {
        for p in parts {
            match p {
                Part::Param { name, default: Some((_, d)), .. } => {
                    self.names.insert(name.clone());
                    self.parts(d);
                }
                Part::Arith { expr } => self.arith(expr),
                _ => {}
            }
        }
    }

    /// Every name in an arithmetic expression (`i++`, `i = 0`).
    pub(super) fn arith(&mut self, expr: &str) {
        let mut word = String::new();
        for c in expr.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                self.names.extend(leading_name(&word));
                word.clear();
            }
        }
    }
}

/// `NAME` of `NAME=value`, `NAME+=value` or `NAME[i]=value`.
fn assigned_name(w: &Word) -> Option<String> {
    let Some(Part::Lit { text, quoted: false }) = w.parts.first() else { return None };
    let name = leading_name(text)?;
    let after = text.get(name.len()..).unwrap_or("");
    (after.starts_with('=') || after.starts_with("+=") || after.starts_with('[')).then_some(name)
}

/// The name at the start of `text`, if it starts with one.
fn leading_name(text: &str) -> Option<String> {
    let name: String = text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_').then_some(name)
}
