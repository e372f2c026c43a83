//! Running one command, given as its expanded words. Wrappers (`exec`,
//! `env`, `nohup`, `tini`, `timeout`...) are seen through, shells
//! (`sh -c`, `bash -lc`) have their script parsed and followed, and every
//! other program is classified: a wait (`sleep`, `tail -f`, `cat` or `read`
//! on an open standard input, `wait` for background jobs, `pause`, the
//! settings' waiting programs), one that finishes at once without using a
//! GPU (`echo`, `trap`, `nvidia-smi`...), or work. Also how an argv is
//! shown in messages.

use super::super::shell;
use super::Dur;
use super::expand::forget_positional;
use super::operands::{parse_duration, sets_positional, skip_env_options, skip_options, sleep_duration, tail_follow, test_status};
use super::run::{Ctx, Jump, MAX_SHELL_DEPTH, Run, Status, Vars};
use super::script::exec_list;

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
pub(super) fn program(name: &str) -> &str {
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
pub(super) fn exec_argv(run: &mut Run, argv: &[Option<String>], snippet: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
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

/// `wait $!` is read as `wait %+`: bash's name for the last background
/// job, whose process id is not known at admission but whose status is.
pub(super) const LAST_JOB: &str = "%+";

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
