//! Following a parsed shell script in order, the way the shell would run
//! it: lists and background jobs, `&&` and `||` by the exit status of what
//! came before, pipelines, groups and subshells, `if`, loops (judged by
//! running a first round with what is known and a later one in which what
//! the loop may change is unknown), simple commands with their leading
//! assignments, and the snippets of script text that messages quote.

use super::super::shell::{AndOr, Command, CommandKind, Connector, List, Part, Pipeline, Word};
use super::Dur;
use super::argv::{LAST_JOB, exec_argv};
use super::assigned::Assigned;
use super::expand::{alone, arith, expand, expand_joined};
use super::operands::test_status;
use super::run::{Ctx, Event, Jump, Run, Status, Vars};

pub(super) fn exec_list(run: &mut Run, list: &List, src: &str, vars: &mut Vars, ctx: &Ctx<'_>) -> Status {
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
