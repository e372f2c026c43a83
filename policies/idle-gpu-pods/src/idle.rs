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

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use super::shell::{self, AndOr, Command, CommandKind, Connector, List, Part, Pipeline, Word};

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

/// One thing that happened, in order.
#[derive(Clone, Debug)]
enum Event {
    /// Work was done (a command that is not a wait or an instant no-op).
    Work(String),
    /// A wait of this long.
    Wait(Dur, String),
    /// A forever wait that happens only if something before it fails (or
    /// succeeds): `train || sleep infinity`.
    MaybeForever(String),
}

/// `break` or `continue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jump {
    Break,
    Continue,
}

#[derive(Clone, Debug, Default)]
struct Run {
    events: Vec<Event>,
    /// `exit` or `exec`: this shell ends, nothing after it runs.
    stopped: bool,
    /// A loop that never ends is running: nothing after it runs, and the
    /// shell never returns.
    endless: bool,
    /// A foreground wait was forever: nothing after it runs.
    forever: bool,
    /// Background jobs: the longest wait of those that only wait, and
    /// whether some do work.
    bg_wait: Option<(Dur, String)>,
    bg_work: bool,
    /// How the last background job ends (what `wait $!` returns).
    bg_status: Option<Status>,
    /// `break` or `continue` ran: the rest of the loop's round is skipped.
    jump: Option<Jump>,
    /// A `break` may run: the innermost loop around it may end.
    may_break: bool,
    /// An `exit`, `exec`, `break 2`... may run: every loop around it may end.
    may_exit: bool,
}

impl Run {
    /// A run that knows the background jobs of `outer` (a loop's rounds,
    /// which may `wait` for them).
    fn beside(outer: &Run) -> Run {
        Run { bg_wait: outer.bg_wait.clone(), bg_work: outer.bg_work, bg_status: outer.bg_status, ..Run::default() }
    }

    /// Nothing after this point runs, ever.
    fn ended(&self) -> bool {
        self.stopped || self.endless || self.forever
    }

    /// Nothing after this point runs in this round.
    fn blocked(&self) -> bool {
        self.ended() || self.jump.is_some()
    }

    /// A loop around this run may end because of it: it exits, breaks out,
    /// or may.
    fn leaves(&self) -> bool {
        self.stopped || self.may_exit || self.may_break || self.jump == Some(Jump::Break)
    }

    /// Notes that `sub` may have run: its `exit` and `break` may happen.
    fn may_leave(&mut self, sub: &Run) {
        self.may_exit |= sub.may_exit || sub.stopped;
        self.may_break |= sub.may_break || sub.jump == Some(Jump::Break);
    }

    /// Forgets how a shell or subshell ended: its `exit` ends only itself,
    /// and its jobs are not the caller's to wait for.
    fn returned(mut self) -> Run {
        self.stopped = false;
        self.jump = None;
        self.may_break = false;
        self.may_exit = false;
        self.bg_wait = None;
        self.bg_work = false;
        self.bg_status = None;
        self
    }

    fn work(&mut self, what: &str) {
        self.events.push(Event::Work(what.to_string()));
    }

    fn wait(&mut self, d: Dur, what: &str) {
        if d == Dur::Forever {
            self.forever = true;
        }
        if !d.is_zero() {
            self.events.push(Event::Wait(d, what.to_string()));
        }
    }

    fn has_work(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Work(_)))
    }

    /// The total wait of the run's events.
    fn waited(&self) -> Dur {
        self.events.iter().fold(Dur::Finite(0.0), |acc, e| match e {
            Event::Wait(d, _) => acc.plus(*d),
            _ => acc,
        })
    }

    fn first_work(&self) -> Option<&str> {
        self.events.iter().find_map(|e| match e {
            Event::Work(w) => Some(w.as_str()),
            _ => None,
        })
    }

    /// Appends a sub-run's events as if they ran here, in order.
    fn absorb(&mut self, sub: Run) {
        self.forever |= sub.forever;
        self.stopped |= sub.stopped;
        self.endless |= sub.endless;
        self.bg_work |= sub.bg_work;
        if let Some((d, w)) = sub.bg_wait {
            self.note_bg_wait(d, &w);
        }
        self.bg_status = sub.bg_status.or(self.bg_status);
        self.jump = sub.jump.or(self.jump);
        self.may_break |= sub.may_break;
        self.may_exit |= sub.may_exit;
        self.events.extend(sub.events);
    }

    /// Records a sub-run that may or may not have run (`a && b` when `a`
    /// may fail): its work counts, a forever wait is only possible.
    fn absorb_maybe(&mut self, sub: &Run) {
        self.may_leave(sub);
        if let Some(w) = sub.first_work() {
            self.work(w);
        }
        if sub.forever
            && let Some(w) = sub.waits().into_iter().next()
        {
            self.events.push(Event::MaybeForever(w));
        }
    }

    fn note_bg_wait(&mut self, d: Dur, what: &str) {
        self.bg_wait = Some(match self.bg_wait.take() {
            Some((old, w)) if old.max(d) == old => (old, w),
            _ => (d, what.to_string()),
        });
    }

    fn waits(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Wait(_, w) => Some(w.clone()),
                _ => None,
            })
            .collect()
    }

    fn finding(&self, long: f64) -> Option<Finding> {
        let last_work = self.events.iter().rposition(|e| matches!(e, Event::Work(_)));
        let after = match last_work {
            Some(i) => self.events.get(i + 1..).unwrap_or_default(),
            None => self.events.as_slice(),
        };
        let mut total = Dur::Finite(0.0);
        let mut waits = Vec::new();
        let mut maybe = None;
        for e in after {
            match e {
                Event::Wait(d, w) => {
                    total = total.plus(*d);
                    if waits.len() < 3 {
                        waits.push(w.clone());
                    }
                }
                Event::MaybeForever(w) => maybe = maybe.or(Some(w.clone())),
                Event::Work(_) => {}
            }
        }
        match self.first_work() {
            None if total.at_least(long) => Some(Finding::Idle { waits, total }),
            // `nvidia-smi && sleep infinity`: it waits forever or ends at
            // once; either way it never works.
            None => maybe.map(|w| Finding::Idle { waits: vec![w], total: Dur::Forever }),
            Some(work) if total.at_least(long) => Some(Finding::WorkThenWait { work: work.to_string(), waits, total, maybe: false }),
            Some(work) => maybe.map(|w| Finding::WorkThenWait { work: work.to_string(), waits: vec![w], total: Dur::Forever, maybe: true }),
        }
    }
}

/// How a command ended, for `&&` and `||`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// It certainly succeeded (`true`, `echo`, `sleep`).
    Ok,
    /// It certainly failed (`false`).
    Fail,
    /// Either (a test, or work).
    Maybe,
}

struct Ctx<'s> {
    stdin_open: bool,
    extra: Extra<'s>,
    /// Nesting of shells inside shells (`sh -c "bash -c '...'"`).
    depth: usize,
    /// Loops around the command, in this shell (`break` outside a loop
    /// does nothing).
    loops: usize,
    /// Commands the reader may still follow: each loop is followed twice,
    /// so nested loops would take time exponential in their depth.
    budget: &'s Cell<u32>,
}

/// How deep shells may nest before the script is treated as not understood.
const MAX_SHELL_DEPTH: usize = 8;

/// How many commands the reader follows in all before the rest of the
/// script is treated as not understood (work).
const MAX_STEPS: u32 = 10_000;

type Vars = BTreeMap<String, Option<String>>;

// ----------------------------------------------------------------- argv

/// `sleep infinity`, `sh -c 'sleep 1'`: argv shown the way it would be typed.
pub fn display_argv(argv: &[Option<String>]) -> String {
    argv.iter()
        .map(|a| match a {
            None => "…".to_string(),
            Some(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c)) => s.clone(),
            Some(s) => format!("'{}'", s.replace('\'', "'\\''")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last path component: `/usr/bin/sleep` is `sleep`.
fn program(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Commands that finish at once and do nothing with a GPU.
const INSTANT: &[&str] = &[
    ":",
    "true",
    "false",
    "echo",
    "printf",
    "export",
    "set",
    "unset",
    "readonly",
    "local",
    "declare",
    "typeset",
    "cd",
    "umask",
    "ulimit",
    "trap",
    "shift",
    "alias",
    "hash",
    "type",
    "test",
    "[",
    "nvidia-smi",
    "printenv",
    "date",
    "hostname",
    "id",
    "whoami",
    "uname",
    "pwd",
    "ls",
    "mkdir",
    "touch",
    "chmod",
    "ln",
];

/// Of those, the ones that never fail (for `a && b` / `a || b`).
const ALWAYS_OK: &[&str] =
    &[":", "true", "echo", "printf", "export", "set", "unset", "readonly", "local", "declare", "typeset", "trap", "alias", "hash"];

const SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "yash"];

/// Runs (in the reader's head) one command, given as expanded words.
fn exec_argv(run: &mut Run, argv: &[Option<String>], snippet: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let Some(first) = argv.first() else { return Status::Ok };
    let Some(name) = first.as_deref().map(program) else {
        run.work(snippet);
        return Status::Maybe;
    };
    let args = argv.get(1..).unwrap_or_default();
    match name {
        "exec" => {
            if args.is_empty() {
                return Status::Ok;
            }
            let s = exec_argv(run, args, snippet, vars, ctx);
            run.stopped = true;
            s
        }
        "env" => match skip_env_options(args) {
            Some(rest) if !rest.is_empty() => exec_argv(run, rest, snippet, vars, ctx),
            Some(_) => Status::Ok,
            None => {
                run.work(snippet);
                Status::Maybe
            }
        },
        "nohup" | "setsid" | "time" | "command" | "builtin" => exec_argv(run, args, snippet, vars, ctx),
        "nice" | "tini" | "tini-static" | "dumb-init" | "catatonit" | "stdbuf" => {
            let takes_value: &[&str] = match name {
                "nice" => &["-n"],
                "tini" | "tini-static" => &["-p", "-e"],
                "dumb-init" => &["-r", "--rewrite"],
                "stdbuf" => &["-i", "-o", "-e"],
                _ => &[],
            };
            let rest = skip_options(args, takes_value);
            if rest.is_empty() { Status::Ok } else { exec_argv(run, rest, snippet, vars, ctx) }
        }
        "timeout" => exec_timeout(run, args, snippet, vars, ctx),
        "busybox" => exec_argv(run, args, snippet, vars, ctx),
        s if SHELLS.contains(&s) => exec_shell(run, args, snippet, vars, ctx),
        "sleep" => {
            let d = sleep_duration(args);
            match d {
                Some(d) => {
                    run.wait(d, snippet);
                    // An operand not known may be one `sleep` refuses.
                    if args.iter().all(Option::is_some) { Status::Ok } else { Status::Maybe }
                }
                None => Status::Fail,
            }
        }
        "tail" => {
            if let Some(d) = tail_follow(args) {
                run.wait(d, snippet);
            }
            Status::Ok
        }
        "cat" => {
            let operands: Vec<&Option<String>> =
                args.iter().filter(|a| a.as_deref().is_none_or(|a| a == "-" || !a.starts_with('-'))).collect();
            if operands.iter().all(|a| a.as_deref() == Some("-")) && ctx.stdin_open {
                run.wait(Dur::Forever, snippet);
            }
            Status::Ok
        }
        "read" => {
            if ctx.stdin_open {
                run.wait(Dur::Forever, snippet);
            }
            Status::Maybe
        }
        "wait" => {
            if run.bg_work {
                run.wait(Dur::Unknown, snippet);
            } else if let Some((d, what)) = run.bg_wait.clone() {
                run.wait(d, &what);
            }
            match args {
                // Without operands `wait` returns 0; `wait $!` returns what
                // the last background job returned.
                [] => Status::Ok,
                [Some(job)] if job == LAST_JOB => run.bg_status.unwrap_or(Status::Maybe),
                _ => Status::Maybe,
            }
        }
        "pause" => {
            run.wait(Dur::Forever, snippet);
            Status::Ok
        }
        "python" | "python3" | "ipython" | "ipython3" if args.is_empty() && ctx.stdin_open => {
            run.wait(Dur::Forever, snippet);
            Status::Ok
        }
        "exit" | "return" => {
            run.stopped = true;
            Status::Ok
        }
        "break" | "continue" if ctx.loops > 0 => {
            // `break 2`, `continue 2`: this loop ends, and perhaps the ones
            // around it.
            let one = match args {
                [] => true,
                [Some(n)] => n == "1",
                _ => false,
            };
            run.jump = Some(if name == "break" || !one { Jump::Break } else { Jump::Continue });
            run.may_exit |= !one;
            Status::Ok
        }
        "[" => match args.split_last() {
            Some((Some(close), operands)) if close == "]" => test_status(operands),
            Some((None, _)) => Status::Maybe,
            // `[` without `]` is an error.
            _ => Status::Fail,
        },
        "test" => test_status(args),
        "set" => {
            if sets_positional(args) {
                forget_positional(vars);
            }
            Status::Ok
        }
        "shift" => {
            forget_positional(vars);
            Status::Ok
        }
        n if ctx.extra.0.iter().any(|e| e == n) => {
            run.wait(Dur::Forever, snippet);
            Status::Ok
        }
        n if ALWAYS_OK.contains(&n) => Status::Ok,
        "false" => Status::Fail,
        // Outside a loop, `break` and `continue` do nothing.
        "break" | "continue" => Status::Maybe,
        n if INSTANT.contains(&n) => Status::Maybe,
        _ => {
            run.work(snippet);
            Status::Maybe
        }
    }
}

/// The command after `env`'s options and assignments; `None` for options
/// that are not understood (`-S`, which splits a string into a command).
fn skip_env_options(args: &[Option<String>]) -> Option<&[Option<String>]> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else { return Some(args.get(i..).unwrap_or_default()) };
        match a {
            "--" => return Some(args.get(i + 1..).unwrap_or_default()),
            "-u" | "--unset" | "-C" | "--chdir" => i += 2,
            "-S" | "--split-string" => return None,
            _ if a.starts_with("-S") || a.starts_with("--split-string") => return None,
            _ if a.starts_with('-') && a.len() > 1 => i += 1,
            _ if a.contains('=') && !a.starts_with('=') => i += 1,
            _ => return Some(args.get(i..).unwrap_or_default()),
        }
    }
    Some(&[])
}

/// Skips a wrapper's options (those in `takes_value` consume the next word)
/// and an ending `--`.
fn skip_options<'a>(args: &'a [Option<String>], takes_value: &[&str]) -> &'a [Option<String>] {
    let mut i = 0;
    while let Some(Some(a)) = args.get(i) {
        if a == "--" {
            return args.get(i + 1..).unwrap_or_default();
        }
        if !a.starts_with('-') || a.len() == 1 {
            break;
        }
        // `nice -5 cmd`: an old-style niceness.
        i += if takes_value.contains(&a.as_str()) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or_default()
}

/// `wait $!` is read as `wait %+`: bash's name for the last background
/// job, whose process id is not known at admission but whose status is.
const LAST_JOB: &str = "%+";

/// What `test` or `[ ... ]` returns, when its operands tell without
/// looking at files: `[ 1 ]`, `[ ! x ]`, `[ -n x ]`, `[ -z x ]`, `[ a = b ]`,
/// `[ a != b ]`; `Maybe` for anything else.
fn test_status(operands: &[Option<String>]) -> Status {
    let ok = |b: bool| if b { Status::Ok } else { Status::Fail };
    let known: Option<Vec<&str>> = operands.iter().map(Option::as_deref).collect();
    match known.as_deref() {
        Some([]) => Status::Fail,
        Some([s]) => ok(!s.is_empty()),
        Some(["!", s]) => ok(s.is_empty()),
        Some(["-n", s]) => ok(!s.is_empty()),
        Some(["-z", s]) => ok(s.is_empty()),
        Some([a, "=", b]) => ok(a == b),
        Some([a, "!=", b]) => ok(a != b),
        _ => Status::Maybe,
    }
}

/// Whether `set` with these arguments replaces the positional parameters
/// (`set -- a b`, `set a b`), rather than only setting options (`set -e`,
/// `set -o pipefail`).
fn sets_positional(args: &[Option<String>]) -> bool {
    let mut k = 0;
    while let Some(a) = args.get(k) {
        match a.as_deref() {
            Some("--") => return true,
            Some(o) if (o.starts_with('-') || o.starts_with('+')) && o.len() > 1 => k += if o.contains('o') { 2 } else { 1 },
            // `set -` leaves them alone unless operands follow.
            Some("-") => k += 1,
            _ => return true,
        }
    }
    false
}

/// Forgets the positional parameters (`$1`, `$@`...): `shift` or `set --`
/// changed them.
fn forget_positional(vars: &mut Vars) {
    vars.retain(|k, _| k != "#" && !k.parse::<u32>().is_ok_and(|n| n > 0));
}

/// The positional parameters `$1`...`$N`, when their number is known.
fn positional(vars: &Vars) -> Option<Vec<Option<String>>> {
    let n: usize = lookup(vars, "#")?.as_deref()?.parse().ok()?;
    if n > 4096 {
        return None;
    }
    Some((1..=n).map(|i| lookup(vars, &i.to_string()).cloned().flatten()).collect())
}

/// `timeout [options] DURATION command...`: the command, cut short.
fn exec_timeout(run: &mut Run, args: &[Option<String>], snippet: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let rest = skip_options(args, &["-s", "--signal", "-k", "--kill-after"]);
    let Some((limit, cmd)) = rest.split_first() else { return Status::Fail };
    let limit = match limit.as_deref().map(parse_duration) {
        Some(Some(Dur::Finite(0.0))) => Dur::Forever, // `timeout 0`: no limit
        Some(Some(d)) => d,
        _ => Dur::Unknown,
    };
    let mut sub = Run::default();
    let status = exec_argv(&mut sub, cmd, snippet, vars, ctx);
    if let Some(w) = sub.first_work() {
        run.work(w);
    }
    let waited = sub.waited().min(limit);
    run.wait(waited, snippet);
    status
}

/// `sh`/`bash` and their options: runs the `-c` script, reads a script
/// file (work), or reads commands from standard input.
fn exec_shell(run: &mut Run, args: &[Option<String>], snippet: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let mut c_flag = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else { break };
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        let long_with_value = ["--rcfile", "--init-file"];
        if long_with_value.contains(&a) {
            i += 2;
            continue;
        }
        if a.starts_with("--") {
            i += 1;
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let mut consumes = 0;
            for ch in a.chars().skip(1) {
                match ch {
                    'c' => c_flag = true,
                    'o' | 'O' => consumes += 1,
                    _ => {}
                }
            }
            i += 1 + consumes;
            continue;
        }
        break;
    }
    let operands = args.get(i..).unwrap_or_default();
    if c_flag {
        let Some(script) = operands.first() else { return Status::Fail };
        let Some(script) = script.as_deref() else {
            run.work(snippet);
            return Status::Maybe;
        };
        if ctx.depth >= MAX_SHELL_DEPTH {
            run.work(snippet);
            return Status::Maybe;
        }
        let list = match shell::parse(script) {
            Ok(l) => l,
            Err(_) => {
                run.work(snippet);
                return Status::Maybe;
            }
        };
        // `sh -c script name args...`: `$0`, `$1`... and their number, `$#`.
        let mut inner = vars.clone();
        forget_positional(&mut inner);
        let params = operands.get(1..).unwrap_or_default();
        for (n, v) in params.iter().enumerate() {
            inner.insert(n.to_string(), v.clone());
        }
        inner.insert("#".to_string(), Some(params.len().saturating_sub(1).to_string()));
        let sub_ctx = Ctx { stdin_open: ctx.stdin_open, extra: ctx.extra, depth: ctx.depth + 1, loops: 0, budget: ctx.budget };
        let mut sub = Run::default();
        let status = exec_list(&mut sub, &list, script, &mut inner, &sub_ctx);
        // The script's end ends the shell (its `exit` only that shell): its
        // background jobs do not outlive it as far as the container is
        // concerned.
        run.absorb(sub.returned());
        return status;
    }
    if operands.is_empty() {
        // Commands from standard input: an interactive shell.
        if ctx.stdin_open {
            run.wait(Dur::Forever, snippet);
        }
        return Status::Ok;
    }
    run.work(snippet);
    Status::Maybe
}

/// What `sleep` with these operands waits; `None` when `sleep` refuses
/// them (and exits at once, failing).
fn sleep_duration(args: &[Option<String>]) -> Option<Dur> {
    let mut total = Dur::Finite(0.0);
    let mut any = false;
    for a in args {
        match a.as_deref() {
            Some("--") => continue,
            Some(s) => total = total.plus(parse_duration(s)?),
            None => total = total.plus(Dur::Unknown),
        }
        any = true;
    }
    any.then_some(total)
}

/// A `sleep` operand, as GNU coreutils and busybox read it: a number
/// (`strtod`: decimals, exponents, `inf`, `infinity`) and an optional unit
/// `s`, `m`, `h` or `d`.
pub fn parse_duration(s: &str) -> Option<Dur> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().last() {
        Some((i, c @ ('s' | 'm' | 'h' | 'd'))) if !s.eq_ignore_ascii_case("inf") => {
            let n = s.get(..i).unwrap_or("");
            // `inf` ends in `f`, `infinity` in `y`: neither is a unit.
            (n, c)
        }
        _ => (s, 's'),
    };
    let lower = num.to_ascii_lowercase();
    let bare = lower.strip_prefix('+').unwrap_or(&lower);
    if bare == "inf" || bare == "infinity" {
        return Some(Dur::Forever);
    }
    if bare.is_empty()
        || !bare.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '-' | '+'))
        || !bare.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return None;
    }
    let value: f64 = bare.parse().ok()?;
    if value < 0.0 || value.is_nan() {
        return None;
    }
    let mult = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 1.0,
    };
    let secs = value * mult;
    Some(if secs.is_finite() { Dur::Finite(secs) } else { Dur::Forever })
}

/// What `tail` with these arguments waits: `Forever` when it follows
/// (`-f`, `-F`, `--follow`), `Unknown` with `--pid` (it ends with that
/// process), `None` when it prints and exits.
fn tail_follow(args: &[Option<String>]) -> Option<Dur> {
    let mut follow = false;
    let mut pid = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let Some(a) = a.as_deref() else { continue };
        if a == "--" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, has_value) = long.split_once('=').map_or((long, false), |(n, _)| (n, true));
            match name {
                "follow" => follow = true,
                "pid" => {
                    pid = true;
                    if !has_value {
                        i += 1;
                    }
                }
                "lines" | "bytes" | "sleep-interval" | "max-unchanged-stats" if !has_value => i += 1,
                _ => {}
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let cluster = a.get(1..).unwrap_or("");
            if cluster.chars().all(|c| c.is_ascii_digit()) {
                continue; // `tail -20`
            }
            for (k, ch) in cluster.char_indices() {
                match ch {
                    'f' | 'F' => follow = true,
                    'n' | 'c' | 's' => {
                        // The value is the rest of the cluster, or the next word.
                        if cluster.get(k + 1..).unwrap_or("").is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    match (follow, pid) {
        (true, true) => Some(Dur::Unknown),
        (true, false) => Some(Dur::Forever),
        _ => None,
    }
}

// --------------------------------------------------------------- scripts

fn exec_list(run: &mut Run, list: &List, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let mut status = Status::Ok;
    for item in &list.items {
        if run.blocked() {
            break;
        }
        if item.background {
            let mut sub = Run::default();
            let mut v = vars.clone();
            run.bg_status = Some(exec_and_or(&mut sub, &item.and_or, src, &mut v, ctx));
            if sub.has_work() || sub.bg_work {
                run.bg_work = true;
                // Work running beside the rest of the script.
                if let Some(w) = sub.first_work() {
                    run.work(w);
                }
            } else {
                let waited = sub.waited();
                if !waited.is_zero() {
                    let what = sub.waits().into_iter().next().unwrap_or_default();
                    run.note_bg_wait(waited, &what);
                }
            }
            status = Status::Ok;
        } else {
            status = exec_and_or(run, &item.and_or, src, vars, ctx);
        }
    }
    status
}

fn exec_and_or(run: &mut Run, ao: &AndOr, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let mut status = exec_pipeline(run, &ao.first, src, vars, ctx);
    for (conn, p) in &ao.rest {
        if run.blocked() {
            break;
        }
        let runs = match (conn, status) {
            (Connector::And, Status::Ok) | (Connector::Or, Status::Fail) => Some(true),
            (Connector::And, Status::Fail) | (Connector::Or, Status::Ok) => Some(false),
            (_, Status::Maybe) => None,
        };
        match runs {
            Some(true) => status = exec_pipeline(run, p, src, vars, ctx),
            Some(false) => {}
            None => {
                let mut sub = Run::default();
                let mut v = vars.clone();
                exec_pipeline(&mut sub, p, src, &mut v, ctx);
                run.absorb_maybe(&sub);
                // What it may have set is no longer known.
                let mut set = Assigned::default();
                set.pipeline(p);
                set.forget(vars);
                status = Status::Maybe;
            }
        }
    }
    status
}

fn exec_pipeline(run: &mut Run, p: &Pipeline, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let status = match p.commands.as_slice() {
        [one] => exec_command(run, one, src, vars, ctx, ctx.stdin_open),
        many => {
            // Each command reads the previous one's output; the pipeline
            // lasts as long as its longest part.
            let mut longest = Dur::Finite(0.0);
            let mut what = String::new();
            let mut status = Status::Ok;
            for (k, c) in many.iter().enumerate() {
                let mut sub = Run::default();
                let mut v = vars.clone();
                status = exec_command(&mut sub, c, src, &mut v, ctx, k == 0 && ctx.stdin_open);
                if let Some(w) = sub.first_work() {
                    run.work(w);
                }
                // The pipeline ends when all its parts have.
                run.endless |= sub.endless;
                let waited = sub.waited();
                if longest.max(waited) != longest {
                    longest = waited;
                    what = sub.waits().into_iter().next().unwrap_or_default();
                }
            }
            run.wait(longest, &what);
            status
        }
    };
    match (p.bang, status) {
        (true, Status::Ok) => Status::Fail,
        (true, Status::Fail) => Status::Ok,
        (_, s) => s,
    }
}

/// A command's text for messages: blanks and newlines collapsed, at most
/// 80 characters.
fn snippet(src: &str, c: &Command) -> String {
    let text = src.get(c.span.0..c.span.1).unwrap_or("");
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > 80 {
        let cut: String = collapsed.chars().take(79).collect();
        format!("{cut}…")
    } else {
        collapsed
    }
}

fn exec_command(run: &mut Run, c: &Command, src: &str, vars: &mut Vars, ctx: &Ctx<'_>, stdin_open: bool) -> Status {
    let stdin_open = stdin_open && !c.stdin_redirected;
    let here = Ctx { stdin_open, extra: ctx.extra, depth: ctx.depth, loops: ctx.loops, budget: ctx.budget };
    let what = snippet(src, c);
    let Some(left) = ctx.budget.get().checked_sub(1) else {
        run.work(&what);
        return Status::Maybe;
    };
    ctx.budget.set(left);
    match &c.kind {
        CommandKind::Simple(words) => exec_simple(run, words, &what, vars, &here),
        CommandKind::Group(l) => exec_list(run, l, src, vars, &here),
        CommandKind::Subshell(l) => {
            let mut v = vars.clone();
            let mut sub = Run::default();
            let s = exec_list(&mut sub, l, src, &mut v, &here);
            // `exit` in a subshell ends only the subshell, and its jobs are
            // not the parent's to wait for.
            run.absorb(sub.returned());
            s
        }
        CommandKind::Loop { until, cond, body } => exec_loop(run, Round::While { until: *until, cond }, body, c, src, vars, &here),
        CommandKind::For { var, body, .. } => exec_loop(run, Round::Words { var }, body, c, src, vars, &here),
        CommandKind::ArithFor { init, cond, step, body } => exec_loop(run, Round::Arith { init, cond, step }, body, c, src, vars, &here),
        CommandKind::If { branches, otherwise } => {
            let mut waits: Option<Dur> = None;
            let mut first_wait = String::new();
            let mut any_forever = false;
            for (cond, body) in branches {
                let mut sub = Run::default();
                let mut v = vars.clone();
                exec_list(&mut sub, cond, src, &mut v, &here);
                run.may_leave(&sub);
                if let Some(w) = sub.first_work() {
                    run.work(w);
                }
                let before = sub.waited();
                let mut b = Run::default();
                exec_list(&mut b, body, src, &mut v, &here);
                run.may_leave(&b);
                if let Some(w) = b.first_work() {
                    run.work(w);
                }
                let total = before.plus(b.waited());
                any_forever |= total == Dur::Forever;
                if first_wait.is_empty() {
                    first_wait = b.waits().into_iter().next().unwrap_or_default();
                }
                waits = Some(waits.map_or(total, |w| w.min(total)));
            }
            let else_wait = match otherwise {
                Some(l) => {
                    let mut b = Run::default();
                    let mut v = vars.clone();
                    exec_list(&mut b, l, src, &mut v, &here);
                    run.may_leave(&b);
                    if let Some(w) = b.first_work() {
                        run.work(w);
                    }
                    b.waited()
                }
                None => Dur::Finite(0.0),
            };
            // Which branch ran is not known, nor what it set.
            Assigned::of(c).forget(vars);
            any_forever |= else_wait == Dur::Forever;
            let least = waits.map_or(else_wait, |w| w.min(else_wait));
            if least == Dur::Forever {
                run.wait(Dur::Forever, &what);
            } else if any_forever {
                run.events.push(Event::MaybeForever(what.clone()));
            } else if !least.is_zero() {
                run.wait(Dur::Unknown, &what);
            }
            Status::Maybe
        }
        // `[[ word ]]`: whether the word is empty.
        CommandKind::Test(words) => match words.as_slice() {
            [w] => test_status(&[expand_joined(&w.parts, vars)]),
            _ => Status::Maybe,
        },
        CommandKind::Arith(e) => match arith(e, vars) {
            Some(0) => Status::Fail,
            Some(_) => Status::Ok,
            None => Status::Maybe,
        },
    }
}

/// How a loop decides whether to go round again.
#[derive(Clone, Copy)]
enum Round<'l> {
    /// `while cond` (`until: false`) or `until cond`.
    While { until: bool, cond: &'l List },
    /// `for ((init; cond; step))`: the condition, empty for always.
    Arith { init: &'l str, cond: &'l str, step: &'l str },
    /// `for var in words`: once per word, and it ends.
    Words { var: &'l str },
}

/// Runs a loop's test once: `Some(true)` when it certainly goes round,
/// `Some(false)` when it certainly ends, `None` when either may happen.
fn go_round(run: &mut Run, round: Round<'_>, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Option<bool> {
    match round {
        Round::While { until, cond } => match (exec_list(run, cond, src, vars, ctx), until) {
            (Status::Ok, false) | (Status::Fail, true) => Some(true),
            (Status::Fail, false) | (Status::Ok, true) => Some(false),
            (Status::Maybe, _) => None,
        },
        Round::Arith { cond, .. } if cond.trim().is_empty() => Some(true),
        Round::Arith { cond, .. } => arith(cond, vars).map(|n| n != 0),
        Round::Words { .. } => None,
    }
}

/// A loop, judged by running its rounds in the reader's head: the first
/// with what is known, then a later one in which everything the loop may
/// change is unknown. It never ends when both rounds certainly go round
/// again and nothing in it may `break` or `exit`: `while true`,
/// `while sleep 60`, `until false`, `while sleep 1 & wait $!`,
/// `for ((;;))`. A loop that never ends and does no work only waits,
/// however it is spelt; one that works is a service, and nothing after it
/// runs.
fn exec_loop(run: &mut Run, round: Round<'_>, body: &List, c: &Command, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    let what = snippet(src, c);
    let inner = Ctx { stdin_open: ctx.stdin_open, extra: ctx.extra, depth: ctx.depth, loops: ctx.loops + 1, budget: ctx.budget };
    let changed = Assigned::of(c);
    let mut v = vars.clone();
    match round {
        Round::Words { var } => {
            v.insert(var.to_string(), None);
        }
        Round::Arith { init, cond, step } => {
            // The expressions set their variables: not known from the start.
            let mut set = Assigned::default();
            [init, cond, step].into_iter().for_each(|e| set.arith(e));
            set.forget(&mut v);
        }
        Round::While { .. } => {}
    }
    let mut first = Run::beside(run);
    let goes = go_round(&mut first, round, src, &mut v, &inner);
    if first.ended() || goes == Some(false) {
        // The test never returns, ends the shell, or fails at once: the
        // body never runs.
        first.jump = None;
        first.may_break = false;
        run.absorb(first);
        *vars = v;
        return if goes == Some(false) { Status::Ok } else { Status::Maybe };
    }
    let certain = goes == Some(true);
    exec_list(&mut first, body, src, &mut v, &inner);
    if certain && (first.ended() || first.jump == Some(Jump::Break)) {
        // The first round ends the shell, waits forever or breaks out: the
        // loop runs once.
        first.jump = None;
        first.may_break = false;
        run.absorb(first);
        *vars = v;
        return Status::Maybe;
    }
    // A later round, trusting nothing the loop may have changed.
    let mut later = Run::beside(&first);
    let mut w = v.clone();
    changed.forget(&mut w);
    let again = go_round(&mut later, round, src, &mut w, &inner);
    if !later.blocked() && again != Some(false) {
        exec_list(&mut later, body, src, &mut w, &inner);
    }
    let endless = certain && again == Some(true) && !first.leaves() && !later.leaves();
    run.may_exit |= first.may_exit || first.stopped || later.may_exit || later.stopped;
    changed.forget(vars);
    match first.first_work().or_else(|| later.first_work()) {
        Some(work) => {
            run.work(work);
            // A loop that works forever: a service; nothing after it runs.
            run.endless |= endless;
        }
        None if endless => run.wait(Dur::Forever, &what),
        // Forever only if the test holds the first time.
        None if first.forever || later.forever => run.events.push(Event::MaybeForever(what)),
        None if !first.waited().is_zero() || !later.waited().is_zero() => run.wait(Dur::Unknown, &what),
        None => {}
    }
    Status::Maybe
}

fn exec_simple(run: &mut Run, words: &[Word], what: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
    // Leading assignments: `NAME=value`.
    let mut k = 0;
    let mut assigned: Vec<(String, Option<String>)> = Vec::new();
    while let Some(w) = words.get(k) {
        let Some((name, value)) = assignment(w, vars) else { break };
        assigned.push((name, value));
        k += 1;
    }
    let rest = words.get(k..).unwrap_or_default();
    let waits = rest.first().and_then(Word::bare) == Some("wait");
    let mut argv: Vec<Option<String>> = Vec::new();
    for w in rest {
        if waits && alone(w).is_some_and(|(name, _)| name == "!") {
            argv.push(Some(LAST_JOB.to_string()));
        } else {
            argv.extend(expand(w, vars));
        }
    }
    if argv.is_empty() {
        // Only assignments: they set shell variables.
        for (n, v) in assigned {
            vars.insert(n, v);
        }
        return Status::Ok;
    }
    // Assignments before a command are for that command only.
    let mut scoped;
    let vars = if assigned.is_empty() {
        vars
    } else {
        scoped = vars.clone();
        scoped.extend(assigned);
        &mut scoped
    };
    exec_argv(run, &argv, what, vars, ctx)
}

/// `NAME=value` (an unquoted name and `=` at the start of the word): the
/// name and the value's expansion.
fn assignment(w: &Word, vars: &Vars) -> Option<(String, Option<String>)> {
    let Some(Part::Lit { text, quoted: false }) = w.parts.first() else { return None };
    let (name, value_start) = text.split_once('=')?;
    if name.is_empty()
        || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let mut parts = vec![Part::Lit { text: value_start.to_string(), quoted: true }];
    parts.extend(w.parts.iter().skip(1).cloned());
    // Assignment values are not split into fields.
    let value = expand_joined(&parts, vars);
    Some((name.to_string(), value))
}

// ------------------------------------------------------------ expansion

/// A variable's value: `Some(Some(v))` known, `Some(None)` set but unknown,
/// `None` when nothing says (it may come from the image or `envFrom`).
fn lookup<'v>(vars: &'v Vars, name: &str) -> Option<&'v Option<String>> {
    vars.get(name)
}

/// Expands a word into fields, as the shell does before running a command:
/// parameters and arithmetic replaced, unquoted expansions split on blanks.
/// A field is `None` when part of it cannot be known.
fn expand(w: &Word, vars: &Vars) -> Vec<Option<String>> {
    let mut fields: Vec<Option<String>> = Vec::new();
    let mut cur: Option<Option<String>> = None;
    fn append(cur: &mut Option<Option<String>>, text: Option<&str>) {
        *cur = Some(match (cur.take(), text) {
            (None, t) => t.map(str::to_string),
            (Some(Some(mut s)), Some(t)) => {
                s.push_str(t);
                Some(s)
            }
            _ => None,
        });
    }
    // `"$@"` alone: one field per positional parameter, none when there are
    // none; `$@` is split further.
    if let Some(("@", quoted)) = alone(w) {
        let Some(params) = positional(vars) else { return vec![None] };
        for p in params {
            match (quoted, p) {
                (false, Some(p)) => fields.extend(p.split_whitespace().map(|f| Some(f.to_string()))),
                (_, p) => fields.push(p),
            }
        }
        return fields;
    }
    for part in &w.parts {
        match part {
            Part::Lit { text, .. } => append(&mut cur, Some(text)),
            Part::Unknown => append(&mut cur, None),
            Part::Arith { expr } => {
                let v = arith(expr, vars).map(|n| n.to_string());
                append(&mut cur, v.as_deref());
            }
            Part::Param { name, default, quoted } => {
                let value = param(name, default.as_ref(), vars);
                match (quoted, value) {
                    (true, v) => append(&mut cur, v.as_deref()),
                    (false, None) => append(&mut cur, None),
                    (false, Some(v)) => {
                        // Field splitting on blanks.
                        let starts_blank = v.starts_with(char::is_whitespace);
                        let ends_blank = v.ends_with(char::is_whitespace);
                        let pieces: Vec<&str> = v.split_whitespace().collect();
                        if pieces.is_empty() {
                            if starts_blank && cur.is_some() {
                                fields.extend(cur.take());
                            }
                            continue;
                        }
                        if starts_blank && cur.is_some() {
                            fields.extend(cur.take());
                        }
                        let n = pieces.len();
                        for (i, p) in pieces.into_iter().enumerate() {
                            append(&mut cur, Some(p));
                            if i + 1 < n || ends_blank {
                                fields.extend(cur.take());
                            }
                        }
                    }
                }
            }
        }
    }
    fields.extend(cur);
    fields
}

/// The parameter a word is made of, and whether it is quoted: `$!`,
/// `"$@"` (beside nothing but the empty text of the quotes).
fn alone(w: &Word) -> Option<(&str, bool)> {
    let mut param = None;
    for p in &w.parts {
        match p {
            Part::Lit { text, .. } if text.is_empty() => {}
            Part::Param { name, default: None, quoted } if param.is_none() => param = Some((name.as_str(), *quoted)),
            _ => return None,
        }
    }
    param
}

/// A word expanded without field splitting (assignment values, defaults).
fn expand_joined(parts: &[Part], vars: &Vars) -> Option<String> {
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Lit { text, .. } => out.push_str(text),
            Part::Unknown => return None,
            Part::Arith { expr } => out.push_str(&arith(expr, vars)?.to_string()),
            Part::Param { name, default, .. } => out.push_str(&param(name, default.as_ref(), vars)?),
        }
    }
    Some(out)
}

/// `$NAME` or `${NAME:-default}`.
fn param(name: &str, default: Option<&(bool, Vec<Part>)>, vars: &Vars) -> Option<String> {
    match (lookup(vars, name), default) {
        (Some(Some(v)), Some((true, d))) if v.is_empty() => expand_joined(d, vars),
        (Some(Some(v)), _) => Some(v.clone()),
        (Some(None), _) => None,
        // Unset here, but the image or `envFrom` may set it: not known,
        // whatever the default says.
        (None, _) => None,
    }
}

/// Integer arithmetic of `$((...))`: numbers, variables, `+ - * / %` and
/// parentheses; `None` for anything else or an overflow.
fn arith(expr: &str, vars: &Vars) -> Option<i128> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Arith { t: tokens, i: 0, vars, depth: 0 };
    let v = p.sum()?;
    (p.i == p.t.len()).then_some(v)
}

struct Arith<'v> {
    t: Vec<char>,
    i: usize,
    vars: &'v Vars,
    depth: usize,
}

impl Arith<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }

    fn sum(&mut self) -> Option<i128> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == '+' { v.checked_add(r)? } else { v.checked_sub(r)? };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i128> {
        let mut v = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            v = match op {
                '*' => v.checked_mul(r)?,
                '/' => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i128> {
        match self.peek()? {
            '-' => {
                self.i += 1;
                self.unary()?.checked_neg()
            }
            '+' => {
                self.i += 1;
                self.unary()
            }
            '(' => {
                self.depth += 1;
                if self.depth > 32 {
                    return None;
                }
                self.i += 1;
                let v = self.sum()?;
                if self.peek()? != ')' {
                    return None;
                }
                self.i += 1;
                self.depth -= 1;
                Some(v)
            }
            c if c.is_ascii_digit() => {
                let mut n: i128 = 0;
                while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
                    n = n.checked_mul(10)?.checked_add(i128::from(d))?;
                    self.i += 1;
                }
                Some(n)
            }
            c if c == '$' || c.is_ascii_alphabetic() || c == '_' => {
                if c == '$' {
                    self.i += 1;
                }
                let mut name = String::new();
                while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    name.push(c);
                    self.i += 1;
                }
                let value = lookup(self.vars, &name)?.as_deref()?;
                value.trim().parse::<i128>().ok()
            }
            _ => None,
        }
    }
}

// -------------------------------------------------------- assignments

/// The variables a command may set, found in its text: so that what a
/// loop, an `if` or an `a && b` may change is not trusted after it.
#[derive(Debug, Default)]
struct Assigned {
    names: BTreeSet<String>,
    /// It may set any (`eval`, `source`, a command read from a variable).
    any: bool,
}

impl Assigned {
    fn of(c: &Command) -> Assigned {
        let mut a = Assigned::default();
        a.command(c);
        a
    }

    /// Makes what may have been set unknown in `vars`.
    fn forget(&self, vars: &mut Vars) {
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

    fn pipeline(&mut self, p: &Pipeline) {
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
    fn arith(&mut self, expr: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: f64 = 3600.0;

    fn argv(parts: &[&str]) -> Vec<Option<String>> {
        parts.iter().map(|s| Some(s.to_string())).collect()
    }

    fn judge_with(parts: &[&str], c: &Container, extra: &[String]) -> Option<Finding> {
        judge(&argv(parts), c, Extra(extra), HOUR)
    }

    fn j(parts: &[&str]) -> Option<Finding> {
        judge_with(parts, &Container::default(), &[])
    }

    fn sh(script: &str) -> Option<Finding> {
        j(&["/bin/sh", "-c", script])
    }

    fn idle(f: Option<Finding>) -> (Vec<String>, Dur) {
        match f {
            Some(Finding::Idle { waits, total }) => (waits, total),
            other => panic!("expected idle, got {other:?}"),
        }
    }

    fn is_idle(f: &Option<Finding>) -> bool {
        matches!(f, Some(Finding::Idle { .. }))
    }

    fn tty() -> Container {
        Container { stdin_open: true, ..Container::default() }
    }

    #[test]
    fn durations_read_like_gnu_sleep() {
        assert_eq!(parse_duration("infinity"), Some(Dur::Forever));
        assert_eq!(parse_duration("inf"), Some(Dur::Forever));
        assert_eq!(parse_duration("INF"), Some(Dur::Forever));
        assert_eq!(parse_duration("Infinity"), Some(Dur::Forever));
        assert_eq!(parse_duration("+inf"), Some(Dur::Forever));
        assert_eq!(parse_duration("infs"), Some(Dur::Forever), "a unit after inf");
        assert_eq!(parse_duration("10"), Some(Dur::Finite(10.0)));
        assert_eq!(parse_duration("1.5h"), Some(Dur::Finite(5400.0)));
        assert_eq!(parse_duration("2d"), Some(Dur::Finite(172_800.0)));
        assert_eq!(parse_duration("30m"), Some(Dur::Finite(1800.0)));
        assert_eq!(parse_duration("5s"), Some(Dur::Finite(5.0)));
        assert_eq!(parse_duration(".5"), Some(Dur::Finite(0.5)));
        assert_eq!(parse_duration("1e6"), Some(Dur::Finite(1e6)));
        assert_eq!(parse_duration("1e999"), Some(Dur::Forever), "overflows to infinity");
        for bad in ["", "-1", "abc", "1x", "nan", "h", "1hh", "0x10"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn plain_waits() {
        assert_eq!(idle(j(&["sleep", "infinity"])), (vec!["sleep infinity".to_string()], Dur::Forever));
        assert_eq!(idle(j(&["/usr/bin/sleep", "inf"])).1, Dur::Forever);
        assert_eq!(idle(j(&["sleep", "86400"])).1, Dur::Finite(86400.0));
        assert_eq!(idle(j(&["sleep", "1h"])).1, Dur::Finite(3600.0), "the threshold itself counts");
        assert_eq!(idle(j(&["sleep", "30m", "40m"])).1, Dur::Finite(4200.0), "GNU sleep adds its operands");
        assert_eq!(j(&["sleep", "59m"]), None);
        assert_eq!(j(&["sleep", "10"]), None);
        assert_eq!(j(&["sleep"]), None, "sleep without an operand fails at once");
        assert_eq!(j(&["sleep", "forever"]), None, "refused by sleep");
        assert!(is_idle(&j(&["tail", "-f", "/dev/null"])));
        assert!(is_idle(&j(&["tail", "-F", "/dev/null"])));
        assert!(is_idle(&j(&["tail", "--follow=name", "/var/log/app.log"])));
        assert!(is_idle(&j(&["tail", "-n", "0", "-f", "/dev/null"])));
        assert!(is_idle(&j(&["tail", "-fn0", "/dev/null"])));
        assert_eq!(j(&["tail", "-n0f", "/dev/null"]), None, "`0f` is the value of `-n`: tail refuses it");
        assert_eq!(j(&["tail", "-n", "-f", "x"]), None, "`-f` is the value of `-n` here: no follow... and then it exits");
        assert_eq!(j(&["tail", "/dev/null"]), None, "without -f tail exits");
        assert_eq!(j(&["tail", "-20", "log"]), None);
        assert_eq!(j(&["tail", "-f", "--pid=1", "log"]), None, "ends with the process");
        assert!(is_idle(&j(&["pause"])));
        assert!(is_idle(&j(&["/pause"])));
    }

    #[test]
    fn work_is_not_idle() {
        assert_eq!(j(&["python", "train.py"]), None);
        assert_eq!(j(&["torchrun", "--nproc_per_node=8", "train.py"]), None);
        assert_eq!(j(&["jupyter", "lab"]), None);
        assert_eq!(j(&["sleep-tool", "infinity"]), None, "only `sleep` itself sleeps");
        assert_eq!(j(&["/opt/sleep/run.sh"]), None);
        assert_eq!(j(&[]), None);
        assert_eq!(judge(&[None, Some("infinity".into())], &Container::default(), Extra(&[]), HOUR), None, "an unknown program");
    }

    #[test]
    fn shells_run_their_script() {
        assert!(is_idle(&sh("sleep infinity")));
        assert!(is_idle(&j(&["bash", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["bash", "-lc", "sleep infinity"])));
        assert!(is_idle(&j(&["/bin/bash", "-l", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["sh", "-ec", "sleep infinity"])));
        assert!(is_idle(&j(&["bash", "-o", "pipefail", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["bash", "--login", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["bash", "--norc", "-xc", "sleep infinity"])));
        assert!(is_idle(&j(&["busybox", "sh", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["zsh", "-c", "sleep infinity"])));
        assert!(is_idle(&j(&["sh", "-c", "--", "sleep infinity"])));
        assert_eq!(j(&["sh", "-c"]), None, "no script: the shell fails");
        assert_eq!(j(&["bash", "entrypoint.sh"]), None, "a script file: not seen");
        assert_eq!(j(&["sh", "-c", "sleep infinity'"]), None, "a script that does not parse is not judged");
    }

    #[test]
    fn the_common_idle_scripts() {
        for s in [
            "sleep infinity",
            "exec sleep infinity",
            "sleep inf",
            "tail -f /dev/null",
            "exec tail -f /dev/null",
            "while true; do sleep 3600; done",
            "while :; do sleep 1; done",
            "while true\ndo\n  sleep 60\ndone",
            "until false; do sleep 10; done",
            "while [ 1 ]; do sleep 5; done",
            "while (( 1 )); do sleep 5; done",
            "while true; do :; done",
            "trap 'exit 0' TERM; sleep infinity & wait",
            "trap : TERM INT; sleep infinity & wait $!",
            "trap \"exit\" SIGTERM SIGINT\nwhile true; do sleep 1 & wait $!; done",
            "echo started; sleep infinity",
            "nvidia-smi && sleep infinity",
            "nvidia-smi; tail -f /dev/null",
            "set -e; export A=1; cd /workspace && sleep infinity",
            "mkdir -p /tmp/x && touch /tmp/x/ready && sleep infinity",
            "sleep infinity > /dev/null 2>&1",
            "{ echo hi; sleep infinity; }",
            "(sleep infinity)",
            "sleep 86400",
            "sleep 43200; sleep 43200",
            "echo 'waiting'\nsleep 1d",
            "exec /usr/bin/env sleep infinity",
            "env -u DEBUG sleep infinity",
            "nohup sleep infinity",
            "exec tini -- sleep infinity",
            "timeout 0 sleep infinity",
            "tail -f /dev/null | cat",
            "true && sleep infinity",
            "sleep infinity || echo done",
            "false || sleep infinity",
            "# keep the pod alive\nsleep infinity",
            "sleep $((60*60*24))",
            "D=infinity; sleep $D",
            "D=infinity; sleep \"${D}\"",
            "sh -c 'sleep infinity'",
            "bash -c \"exec sleep infinity\"",
        ] {
            assert!(is_idle(&sh(s)), "{s:?} should be idle, got {:?}", sh(s));
        }
    }

    #[test]
    fn scripts_that_work_are_not_idle() {
        for s in [
            "python train.py",
            "echo 'sleep infinity'",
            "echo sleep infinity",
            "printf '%s\\n' 'tail -f /dev/null'",
            "# sleep infinity\npython train.py",
            "sleep 10 && python train.py",
            "sleep 3600 && python train.py",
            "sleep infinity & python train.py",
            "while true; do python poll.py; sleep 60; done",
            "while [ ! -f /tmp/done ]; do sleep 5; done",
            "for i in 1 2 3; do sleep 1; done",
            "if [ -n \"$DEBUG\" ]; then sleep infinity; fi; python train.py",
            "[ -n \"$DEBUG\" ] && sleep infinity; python train.py",
            "timeout 10m sleep infinity",
            "sleep $DURATION",
            "sleep $(cat /etc/duration)",
            "D=$(date); sleep \"$D\"",
            "case $X in a) sleep infinity;; esac",
            "f() { sleep infinity; }; f",
            "exit 0; sleep infinity",
            "exec python serve.py; sleep infinity",
            "cat /etc/hostname",
            "cat",
            "read line",
            "bash",
            "python",
            "sleep 10",
        ] {
            assert!(!is_idle(&sh(s)), "{s:?} should not be idle, got {:?}", sh(s));
        }
    }

    #[test]
    fn work_then_wait_is_told_apart() {
        let f = sh("python train.py; sleep infinity").unwrap();
        assert_eq!(
            f,
            Finding::WorkThenWait {
                work: "python train.py".into(),
                waits: vec!["sleep infinity".into()],
                total: Dur::Forever,
                maybe: false
            }
        );
        let Some(Finding::WorkThenWait { maybe, .. }) = sh("python train.py && sleep infinity") else { panic!() };
        assert!(maybe, "only if the training succeeds");
        let Some(Finding::WorkThenWait { maybe, .. }) = sh("python train.py || sleep infinity") else { panic!() };
        assert!(maybe);
        let Some(Finding::WorkThenWait { work, .. }) = sh("python train.py & sleep infinity") else { panic!() };
        assert_eq!(work, "python train.py", "background work, then the foreground waits");
        assert!(matches!(sh("jupyter lab --ip=0.0.0.0 &\nsleep infinity"), Some(Finding::WorkThenWait { .. })));
        assert_eq!(sh("python train.py & wait"), None, "waiting for the work is fine");
        assert_eq!(sh("python train.py; sleep 60"), None);
        assert!(matches!(sh("python train.py; sleep 2h"), Some(Finding::WorkThenWait { .. })));
        assert_eq!(
            sh("sleep infinity; python never.py").map(|f| matches!(f, Finding::Idle { .. })),
            Some(true),
            "nothing after a forever wait runs"
        );
    }

    #[test]
    fn loops_that_only_wait_are_idle_however_spelt() {
        for s in [
            // The condition waits, the body does nothing.
            "while sleep 3600; do :; done",
            "while sleep 1; do true; done",
            "while sleep 60; do echo alive; done",
            "while /bin/sleep 1; do :; done",
            "until ! sleep 60; do :; done",
            // The VS Code dev-container keep-alive, and waiting for a
            // background sleep in the body.
            "while sleep 1000 & wait $!; do :; done",
            "while true; do sleep 1 & wait; done",
            "while :; do sleep 1 & wait $!; done",
            // Conditions that always hold.
            "while :; do sleep 1; done",
            "until false; do sleep 1; done",
            "until /bin/false; do sleep 1; done",
            "while ! false; do sleep 1; done",
            "while true && true; do sleep 1; done",
            "while [ 1 ]; do sleep 1; done",
            "while [ -n x ]; do sleep 1; done",
            "while test yes = yes; do sleep 1; done",
            "while [[ 1 ]]; do sleep 1; done",
            "while ((1)); do sleep 1; done",
            "X=1; while [ \"$X\" = 1 ]; do sleep 1; done",
            // bash's arithmetic `for`.
            "for ((;;)); do sleep 60; done",
            "for (( ; ; )); do sleep 60; done",
            "for ((;;))\ndo\n  sleep 60\ndone",
            "for ((i=0; ; i++)); do sleep 1; done",
            "for ((;1;)); do :; done",
            // What comes before and around them.
            "set -e; while sleep 3600; do :; done",
            "set -euo pipefail\nwhile sleep 3600; do :; done",
            "exec bash -c 'while sleep 3600; do :; done'",
            "trap 'exit 0' TERM\nwhile sleep 1000 & wait $!; do :; done",
            "while true; do sleep 1; continue; python never.py; done",
            "while true; do for i in 1 2 3; do sleep 1; break; done; done",
            "while true; do while true; do sleep 1; break; done; done",
            "i=0; while true; do i=$((i+1)); sleep 60; done",
            "while true; do sleep 60; done & wait",
            "while true; do (exit 1); sleep 1; done",
            "while true; do sh -c 'exit 0'; sleep 1; done",
            "while true; do sleep 1; break; done; sleep infinity",
            "while true; do nvidia-smi; sleep 60; done",
        ] {
            let f = sh(s);
            assert!(matches!(f, Some(Finding::Idle { total: Dur::Forever, .. })), "{s:?} should be idle forever, got {f:?}");
        }
        for (args, s) in [(["bash", "-c"], "while sleep 3600; do :; done"), (["sh", "-ec"], "for ((;;)); do sleep 60; done")] {
            let mut argv = args.to_vec();
            argv.push(s);
            assert!(is_idle(&j(&argv)), "{argv:?}");
        }
        assert_eq!(
            idle(sh("while sleep 1000 & wait $!; do :; done")),
            (vec!["while sleep 1000 & wait $!; do :; done".to_string()], Dur::Forever),
            "the loop is named"
        );
    }

    #[test]
    fn the_dev_container_command() {
        // What the devcontainers CLI runs when it overrides the command:
        // `exec "$@"` with no arguments does nothing, then the loop waits.
        let script = "echo Container started\ntrap \"exit 0\" 15\n\nexec \"$@\"\nwhile sleep 1000 & wait $!; do :; done";
        assert_eq!(idle(j(&["/bin/sh", "-c", script, "-"])).1, Dur::Forever);
        // With the image's command as arguments, that command runs instead.
        assert_eq!(j(&["/bin/sh", "-c", script, "-", "python", "train.py"]), None);
        assert!(is_idle(&j(&["/bin/sh", "-c", script, "-", "sleep", "infinity"])));
        assert!(is_idle(&j(&["/bin/sh", "-c", script])), "no `$0` either: still no arguments");
    }

    #[test]
    fn loops_that_work_or_end_are_not_idle() {
        for s in [
            // Work in the loop.
            "while true; do python train.py; sleep 60; done",
            "while sleep 60; do curl -fsS http://server/poll; done",
            "while python check.py; do sleep 60; done",
            "until python check.py; do sleep 60; done",
            "for ((;;)); do python step.py; sleep 1; done",
            "while sleep 1000 & wait $!; do ./sync.sh; done",
            // Waiting that ends, then work.
            "for i in 1 2 3; do sleep 1; done; python train.py",
            "for i in 1 2 3; do sleep 3600; done; python train.py",
            "for ((i=0;i<10;i++)); do sleep 1; done; python train.py",
            "for ((i=0;i<10;i++)); do sleep 3600; done; python train.py",
            "while [ ! -f /tmp/ready ]; do sleep 5; done; python train.py",
            "until [ -f /tmp/ready ]; do sleep 5; done; python train.py",
            "while ! nvidia-smi; do sleep 5; done; python train.py",
            "while sleep 60; do [ -f /tmp/ready ] && break; done; python train.py",
            "while true; do sleep 60; if [ -f /tmp/ready ]; then break; fi; done; python train.py",
            "while true; do sleep 5; [ -f /tmp/stop ] && exit 0; done",
            "while true; do sleep 5; if [ -f /tmp/stop ]; then exit 0; fi; done",
            "while true; do sleep 5; test -f /tmp/go && exec python train.py; done",
            "while true; do for i in 1 2; do sleep 1; break 2; done; done; python train.py",
            "while true; do sleep 1; break; done; python train.py",
            "while true; do sleep 1; exit 0; done",
            // A condition that changes, or is not known.
            "X=1; while [ \"$X\" = 1 ]; do sleep 1; X=0; done; python train.py",
            "X=1; while [ \"$X\" = 1 ]; do sleep 1; read X; done; python train.py",
            "D=1; while sleep $D; do D=x; done; python train.py",
            "D=1; while sleep $D; do D=$((D*2)); done",
            "while [ ! -f /never ]; do sleep 60; done",
            "while read line; do :; done",
            "while sleep $INTERVAL; do :; done",
            "while read line; do sleep 1; done; python train.py",
            "while [ -n \"$1\" ]; do sleep 1; shift; done; python train.py",
            "while [ \"$(cat /tmp/state)\" = wait ]; do sleep 5; done; python train.py",
            // Not a loop the reader can follow.
            "while true; do eval \"$STEP\"; sleep 1; done",
            "while sleep 1; do $CMD; done",
        ] {
            let f = sh(s);
            assert!(!is_idle(&f), "{s:?} should not be idle, got {f:?}");
        }
        assert_eq!(sh("for i in 1 2 3; do sleep 1; done; python train.py"), None);
        assert_eq!(sh("while sleep 60; do curl -fsS http://server/poll; done"), None, "a poller is work");
    }

    #[test]
    fn loops_that_end_or_break_keep_what_comes_after() {
        let f = sh("while true; do python serve.py; done; sleep infinity");
        assert_eq!(f, None, "a service loop never returns: the sleep never runs");
        let f = sh("sh -c 'while true; do python serve.py; done'; sleep infinity");
        assert_eq!(f, None, "nor when the service loop is in a shell of its own");
        assert_eq!(sh("while true; do python serve.py; done | tee log; sleep infinity"), None, "nor when it feeds a pipeline");
        let f = sh("bash -c 'python train.py; exit 0'; sleep infinity");
        assert!(matches!(f, Some(Finding::WorkThenWait { .. })), "an inner shell's `exit` ends only that shell: {f:?}");
        let f = sh("while false; do sleep infinity; done; python train.py");
        assert_eq!(f, None, "the body never runs");
        assert!(
            matches!(sh("while [ -f /tmp/x ]; do sleep infinity; done"), Some(Finding::Idle { .. })),
            "it may wait forever, and never works"
        );
        assert_eq!(sh("break; sleep 2h; python train.py"), None, "`break` outside a loop does nothing");
        assert_eq!(sh("D=inf; for i in 1; do D=1; done; sleep $D"), None, "what a loop sets is not known after it");
        assert_eq!(sh("D=inf; if [ -f x ]; then D=1; fi; sleep $D"), None, "nor what an `if` sets");
        assert_eq!(sh("D=inf; [ -f x ] && D=1; sleep $D"), None, "nor what `a && b` may set");
        assert!(is_idle(&sh("D=inf; while true; do sleep 1; break; done; sleep $D")), "a loop that ran once keeps its variables");
    }

    #[test]
    fn statuses_of_tests_waits_and_sleeps() {
        assert!(is_idle(&sh("[ x ] && sleep infinity")));
        assert!(is_idle(&sh("[ '' ] || sleep infinity")));
        assert!(is_idle(&sh("test a != b && sleep infinity")));
        assert!(is_idle(&sh("(( 2 > 1 )) || true; sleep infinity")));
        assert!(is_idle(&sh("sleep 1 & wait $! && sleep infinity")));
        assert!(is_idle(&sh("sleep 1 & wait && sleep infinity")), "`wait` without operands returns 0");
        assert!(
            matches!(sh("python x.py & wait $! && sleep infinity"), Some(Finding::WorkThenWait { maybe: true, .. })),
            "the job's status is not known"
        );
        assert!(!is_idle(&sh("sleep $D || python train.py")), "a `sleep` whose operand is not known may fail");
        assert!(!is_idle(&sh("[ -f /x ] && sleep infinity; python train.py")));
    }

    #[test]
    fn positional_parameters() {
        assert!(is_idle(&j(&["sh", "-c", "exec \"$@\"", "-", "sleep", "infinity"])));
        assert!(is_idle(&j(&["sh", "-c", "exec $@", "-", "sleep infinity"])), "unquoted: split");
        assert_eq!(j(&["sh", "-c", "exec \"$@\"", "-", "sleep infinity"]), None, "quoted: one word, no such program");
        assert!(is_idle(&j(&["sh", "-c", "\"$@\"; sleep infinity", "-"])), "no parameters: no command");
        assert_eq!(j(&["sh", "-c", "shift; exec \"$@\"", "-", "sleep", "infinity"]), None, "after `shift`, not known");
        assert_eq!(j(&["sh", "-c", "set -- python x.py; exec \"$@\"; sleep infinity", "-"]), None, "after `set --`, not known");
        assert!(is_idle(&j(&["sh", "-c", "set -eu; exec \"$@\"", "-", "sleep", "infinity"])), "`set -eu` sets options only");
        assert!(is_idle(&sh("exec \"$@\"; sleep infinity")), "nothing after the script: no parameters");
        assert_eq!(j(&["python", "-c", "exec \"$@\"", "-"]), None, "not a shell");
        assert_eq!(j(&["sh", "-c", "sh -c 'sleep \"$1\"'", "-", "infinity"]), None, "an inner shell has its own parameters");
    }

    #[test]
    fn standard_input_waits_only_when_open() {
        assert_eq!(j(&["cat"]), None, "stdin closed: cat reads nothing and exits");
        assert!(is_idle(&judge_with(&["cat"], &tty(), &[])));
        assert!(is_idle(&judge_with(&["cat", "-"], &tty(), &[])));
        assert_eq!(judge_with(&["cat", "/etc/os-release"], &tty(), &[]), None);
        assert!(is_idle(&judge_with(&["bash"], &tty(), &[])), "an interactive shell");
        assert!(is_idle(&judge_with(&["/bin/bash", "-l"], &tty(), &[])));
        assert!(is_idle(&judge_with(&["python3"], &tty(), &[])), "a REPL");
        assert_eq!(judge_with(&["python3", "x.py"], &tty(), &[]), None);
        assert!(is_idle(&judge_with(&["sh", "-c", "read x"], &tty(), &[])));
        assert_eq!(judge_with(&["sh", "-c", "cat < /dev/null"], &tty(), &[]), None, "redirected: not the terminal");
        assert_eq!(judge_with(&["sh", "-c", "echo x | cat"], &tty(), &[]), None, "cat reads the pipe");
        assert_eq!(j(&["bash"]), None, "stdin closed: bash exits");
    }

    #[test]
    fn variables_from_the_environment() {
        let mut c = Container::default();
        c.env.insert("SLEEP".into(), Some("infinity".into()));
        c.env.insert("SECRET".into(), None);
        c.env.insert("EMPTY".into(), Some(String::new()));
        assert!(is_idle(&judge_with(&["sh", "-c", "sleep $SLEEP"], &c, &[])));
        assert!(is_idle(&judge_with(&["sh", "-c", "sleep ${EMPTY:-inf}"], &c, &[])));
        assert_eq!(judge_with(&["sh", "-c", "sleep ${UNSET:-inf}"], &c, &[]), None, "unset here may be set by the image");
        assert_eq!(judge_with(&["sh", "-c", "sleep $SECRET"], &c, &[]), None);
        assert!(is_idle(&judge_with(
            &["sh", "-c", "sleep $((SECS))"],
            &Container { env: [("SECS".to_string(), Some("7200".to_string()))].into(), stdin_open: false },
            &[]
        )));
        assert!(is_idle(&judge_with(&["sh", "-c", "CMD='sleep infinity'; $CMD"], &c, &[])), "field splitting");
        assert_eq!(judge_with(&["sh", "-c", "CMD='sleep infinity'; \"$CMD\""], &c, &[]), None, "quoted: one word, no such program");
        assert!(is_idle(&judge_with(&["sh", "-c", "sleep \"$1\"", "_", "infinity"], &c, &[])), "positional parameters");
        assert!(
            is_idle(&judge_with(&["sh", "-c", "SLEEP=10 true; sleep $SLEEP"], &c, &[])),
            "a prefix assignment is for that command only"
        );
        assert!(!is_idle(&judge_with(&["sh", "-c", "SLEEP=10; sleep $SLEEP"], &c, &[])));
    }

    #[test]
    fn extra_waiting_programs() {
        let extra = vec!["sshd".to_string()];
        assert!(is_idle(&judge_with(&["/usr/sbin/sshd", "-D"], &Container::default(), &extra)));
        assert_eq!(j(&["/usr/sbin/sshd", "-D"]), None, "not by default: MPI workers run sshd");
    }

    #[test]
    fn wrappers_are_seen_through() {
        assert!(is_idle(&j(&["tini", "--", "sleep", "infinity"])));
        assert!(is_idle(&j(&["/tini", "-s", "-p", "SIGTERM", "--", "sleep", "infinity"])));
        assert!(is_idle(&j(&["dumb-init", "--single-child", "sleep", "infinity"])));
        assert!(is_idle(&j(&["/usr/bin/env", "sleep", "infinity"])));
        assert!(is_idle(&j(&["env", "A=1", "B=2", "sleep", "infinity"])));
        assert_eq!(j(&["env", "-S", "sleep infinity"]), None, "not understood: not judged");
        assert!(is_idle(&j(&["nice", "-n", "10", "sleep", "infinity"])));
        assert!(is_idle(&j(&["timeout", "2d", "sleep", "infinity"])), "capped at 2 days, still long");
        assert_eq!(j(&["timeout", "60", "sleep", "infinity"]), None);
        assert_eq!(j(&["timeout", "-s", "KILL", "60", "sleep", "infinity"]), None);
        assert!(is_idle(&j(&["busybox", "sleep", "infinity"])));
        assert_eq!(j(&["env"]), None);
    }

    #[test]
    fn nested_shells_are_bounded() {
        let mut s = "sleep infinity".to_string();
        for _ in 0..5 {
            s = format!("sh -c {}", display_argv(&[Some(s)]));
        }
        assert!(is_idle(&sh(&s)), "five levels: {s}");
        let mut s = "sleep infinity".to_string();
        for _ in 0..MAX_SHELL_DEPTH + 1 {
            s = format!("sh -c {}", display_argv(&[Some(s)]));
        }
        assert_eq!(sh(&s), None, "beyond the depth limit: not judged");
    }

    #[test]
    fn nested_loops_are_bounded() {
        let started = std::time::Instant::now();
        let deep = format!("{}sleep 1{}; sleep infinity", "for i in 1 2; do ".repeat(40), "; done".repeat(40));
        assert_eq!(sh(&deep), None, "too much to follow: not judged");
        let deep = format!("{}sleep 1{}", "while true; do ".repeat(40), "; done".repeat(40));
        assert!(is_idle(&sh(&deep)), "the innermost loop never ends: the others go round once");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let nested = format!("{}sleep 1{}; sleep infinity", "for i in 1 2; do ".repeat(5), "; done".repeat(5));
        assert!(is_idle(&sh(&nested)), "a few levels are followed");
    }

    #[test]
    fn arithmetic() {
        let v = Vars::new();
        assert_eq!(arith("60*60*24", &v), Some(86400));
        assert_eq!(arith(" (1 + 2) * 3 ", &v), Some(9));
        assert_eq!(arith("7 / 2", &v), Some(3));
        assert_eq!(arith("-5 + 10 % 3", &v), Some(-4));
        assert_eq!(arith("1 / 0", &v), None);
        assert_eq!(arith("X + 1", &v), None);
        assert_eq!(arith("99999999999999999999999999999999999999999 * 10", &v), None);
        assert_eq!(arith("1 < 2", &v), None, "comparisons are not read");
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(arith(&deep, &v), None);
    }

    #[test]
    fn display() {
        assert_eq!(display_argv(&argv(&["sleep", "infinity"])), "sleep infinity");
        assert_eq!(display_argv(&argv(&["sh", "-c", "sleep 1; it's"])), r"sh -c 'sleep 1; it'\''s'");
        assert_eq!(display_argv(&[Some("a".into()), None]), "a …");
    }
}
