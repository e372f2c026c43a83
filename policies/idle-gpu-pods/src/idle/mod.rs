//! Whether a container's command only waits.
//!
//! The command line (`command` + `args`, after the kubelet's `$(VAR)`
//! expansion) is read as the program it runs: wrappers (`exec`, `env`,
//! `tini --`, `nohup`, `timeout`) are seen through, shells (`sh -c`,
//! `bash -lc`, `/bin/sh -ec`) have their script parsed by [`super::shell`],
//! and every command is classified: one that waits (`sleep`, `tail -f`,
//! `cat` or `read` on an open standard input, `wait` for waiting jobs, an
//! interactive shell, a loop that never ends and does nothing), one that
//! finishes at once without using a GPU (`echo`, `export`, `trap`,
//! `nvidia-smi`...), or work (anything else, and anything not understood).
//! The script is then followed in order, the way the shell would run it,
//! with the exit status of each command where it can be told (so that
//! `while sleep 60`, `until false` and `a && b` are read as the shell runs
//! them), and judged: does the container do anything but wait?
//!
//! The reader is in parts: `argv` runs one command given as words, seeing
//! through wrappers and into shells; `operands` reads the operands of the
//! programs it knows (`sleep`, `tail`, `test`, wrappers' options);
//! `script` follows a parsed script (lists, `&&` and `||`, pipelines, `if`,
//! loops, assignments); `expand` expands words and arithmetic against what
//! is known of the variables; `assigned` finds what a command may set; and
//! `run` holds what is recorded while following, and how it is judged.
//! This module holds what the rule uses: `judge`, the facts it is given
//! about the container, and the finding and durations it returns.

use std::cell::Cell;
use std::collections::BTreeMap;

mod argv;
mod assigned;
mod expand;
mod operands;
mod run;
mod script;

use argv::{display_argv, exec_argv};
use run::{Ctx, MAX_STEPS, Run};

/// How long something waits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dur {
    /// This many seconds.
    Finite(f64),
    /// Until the container is stopped.
    Forever,
    /// Cannot be told (a variable whose value is not known, a loop that
    /// ends on a condition).
    Unknown,
}

impl Dur {
    fn plus(self, other: Dur) -> Dur {
        match (self, other) {
            (Dur::Forever, _) | (_, Dur::Forever) => Dur::Forever,
            (Dur::Unknown, _) | (_, Dur::Unknown) => Dur::Unknown,
            (Dur::Finite(a), Dur::Finite(b)) => Dur::Finite(a + b),
        }
    }

    fn max(self, other: Dur) -> Dur {
        match (self, other) {
            (Dur::Forever, _) | (_, Dur::Forever) => Dur::Forever,
            (Dur::Unknown, _) | (_, Dur::Unknown) => Dur::Unknown,
            (Dur::Finite(a), Dur::Finite(b)) => Dur::Finite(a.max(b)),
        }
    }

    fn min(self, other: Dur) -> Dur {
        match (self, other) {
            (Dur::Forever, d) | (d, Dur::Forever) => d,
            (Dur::Unknown, _) | (_, Dur::Unknown) => Dur::Unknown,
            (Dur::Finite(a), Dur::Finite(b)) => Dur::Finite(a.min(b)),
        }
    }

    fn is_zero(self) -> bool {
        self == Dur::Finite(0.0)
    }

    /// Whether it is at least `threshold` seconds.
    pub fn at_least(self, threshold: f64) -> bool {
        match self {
            Dur::Forever => true,
            Dur::Finite(s) => s >= threshold,
            Dur::Unknown => false,
        }
    }
}

/// What the reader is told about the container.
#[derive(Clone, Debug, Default)]
pub struct Container {
    /// Environment variables with the values known at admission (`None`:
    /// set from a Secret, ConfigMap or field, value unknown).
    pub env: BTreeMap<String, Option<String>>,
    /// Whether the container's standard input is open (`stdin: true`), so
    /// that `cat`, `read` or a bare shell wait for someone to type.
    pub stdin_open: bool,
}

/// Programs that count as waiting forever besides the built-in ones
/// (settings), by name.
#[derive(Clone, Copy, Debug)]
pub struct Extra<'s>(pub &'s [String]);

/// What a container's command does, as far as it can be told.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// It only waits: nothing but `waits` (and commands that finish at
    /// once), for `total`.
    Idle {
        /// The waiting commands, as written.
        waits: Vec<String>,
        /// How long, in all.
        total: Dur,
    },
    /// It does `work`, then waits for `total` (or, `maybe`, may wait
    /// forever, depending on how the work ends) while the container keeps
    /// its GPUs.
    WorkThenWait {
        /// The first command that does work.
        work: String,
        /// The waiting commands after the last work.
        waits: Vec<String>,
        /// How long they wait.
        total: Dur,
        /// Whether the wait depends on the work's exit status.
        maybe: bool,
    },
}

/// Judges a command line: `None` when it does work, or cannot be told.
pub fn judge(argv: &[Option<String>], c: &Container, extra: Extra<'_>, long: f64) -> Option<Finding> {
    let mut run = Run::default();
    let mut vars = c.env.clone();
    let budget = Cell::new(MAX_STEPS);
    let ctx = Ctx { stdin_open: c.stdin_open, extra, depth: 0, loops: 0, budget: &budget };
    let snippet = display_argv(argv);
    exec_argv(&mut run, argv, &snippet, &mut vars, &ctx);
    run.finding(long)
}

#[cfg(test)]
mod tests;
