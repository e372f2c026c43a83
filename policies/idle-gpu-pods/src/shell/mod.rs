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
//!
//! The reader is in three parts: `token` holds what a script is split
//! into (words made of parts, operators, tokens with their spans), `lex`
//! splits the text into those tokens, and `grammar` holds the syntax tree
//! and the parser that builds it from the tokens. This module holds what
//! they share: the error and the bound on nesting.

use std::fmt;

mod grammar;
mod lex;
mod token;

pub use grammar::{AndOr, Command, CommandKind, Connector, List, Pipeline, parse};
pub use token::{Part, Word};

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

#[cfg(test)]
mod tests;
