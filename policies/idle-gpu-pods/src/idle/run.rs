//! What the reader records while it follows a command in its head: the
//! events in order (work, waits, and forever waits that only may happen),
//! whether the shell has stopped, loops forever or waits forever, its
//! background jobs, and the `break`, `continue` and `exit` that may end a
//! loop; then how a run is judged into a finding. Also how a command ended
//! (`Status`, for `&&` and `||`), the context a command runs in (`Ctx`)
//! and the bounds that keep hostile scripts cheap to follow.

use std::cell::Cell;
use std::collections::BTreeMap;

use super::{Dur, Extra, Finding};

/// One thing that happened, in order.
#[derive(Clone, Debug)]
pub(super) enum Event {
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
pub(super) enum Jump {
    Break,
    Continue,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Run {
    pub(super) events: Vec<Event>,
    /// `exit` or `exec`: this shell ends, nothing after it runs.
    pub(super) stopped: bool,
    /// A loop that never ends is running: nothing after it runs, and the
    /// shell never returns.
    pub(super) endless: bool,
    /// A foreground wait was forever: nothing after it runs.
    pub(super) forever: bool,
    /// Background jobs: the longest wait of those that only wait, and
    /// whether some do work.
    pub(super) bg_wait: Option<(Dur, String)>,
    pub(super) bg_work: bool,
    /// How the last background job ends (what `wait $!` returns).
    pub(super) bg_status: Option<Status>,
    /// `break` or `continue` ran: the rest of the loop's round is skipped.
    pub(super) jump: Option<Jump>,
    /// A `break` may run: the innermost loop around it may end.
    pub(super) may_break: bool,
    /// An `exit`, `exec`, `break 2`... may run: every loop around it may end.
    pub(super) may_exit: bool,
}

impl Run {
    /// A run that knows the background jobs of `outer` (a loop's rounds,
    /// which may `wait` for them).
    pub(super) fn beside(outer: &Run) -> Run {
        Run { bg_wait: outer.bg_wait.clone(), bg_work: outer.bg_work, bg_status: outer.bg_status, ..Run::default() }
    }

    /// Nothing after this point runs, ever.
    pub(super) fn ended(&self) -> bool {
        self.stopped || self.endless || self.forever
    }

    /// Nothing after this point runs in this round.
    pub(super) fn blocked(&self) -> bool {
        self.ended() || self.jump.is_some()
    }

    /// A loop around this run may end because of it: it exits, breaks out,
    /// or may.
    pub(super) fn leaves(&self) -> bool {
        self.stopped || self.may_exit || self.may_break || self.jump == Some(Jump::Break)
    }

    /// Notes that `sub` may have run: its `exit` and `break` may happen.
    pub(super) fn may_leave(&mut self, sub: &Run) {
        self.may_exit |= sub.may_exit || sub.stopped;
        self.may_break |= sub.may_break || sub.jump == Some(Jump::Break);
    }

    /// Forgets how a shell or subshell ended: its `exit` ends only itself,
    /// and its jobs are not the caller's to wait for.
    pub(super) fn returned(mut self) -> Run {
        self.stopped = false;
        self.jump = None;
        self.may_break = false;
        self.may_exit = false;
        self.bg_wait = None;
        self.bg_work = false;
        self.bg_status = None;
        self
    }

    pub(super) fn work(&mut self, what: &str) {
        self.events.push(Event::Work(what.to_string()));
    }

    pub(super) fn wait(&mut self, d: Dur, what: &str) {
        if d == Dur::Forever {
            self.forever = true;
        }
        if !d.is_zero() {
            self.events.push(Event::Wait(d, what.to_string()));
        }
    }

    pub(super) fn has_work(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Work(_)))
    }

    /// The total wait of the run's events.
    pub(super) fn waited(&self) -> Dur {
        self.events.iter().fold(Dur::Finite(0.0), |acc, e| match e {
            Event::Wait(d, _) => acc.plus(*d),
            _ => acc,
        })
    }

    pub(super) fn first_work(&self) -> Option<&str> {
        self.events.iter().find_map(|e| match e {
            Event::Work(w) => Some(w.as_str()),
            _ => None,
        })
    }

    /// Appends a sub-run's events as if they ran here, in order.
    pub(super) fn absorb(&mut self, sub: Run) {
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
    pub(super) fn absorb_maybe(&mut self, sub: &Run) {
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

    pub(super) fn note_bg_wait(&mut self, d: Dur, what: &str) {
        self.bg_wait = Some(match self.bg_wait.take() {
            Some((old, w)) if old.max(d) == old => (old, w),
            _ => (d, what.to_string()),
        });
    }

    pub(super) fn waits(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Wait(_, w) => Some(w.clone()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn finding(&self, long: f64) -> Option<Finding> {
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
pub(super) enum Status {
    /// It certainly succeeded (`true`, `echo`, `sleep`).
    Ok,
    /// It certainly failed (`false`).
    Fail,
    /// Either (a test, or work).
    Maybe,
}

pub(super) struct Ctx<'s> {
    pub(super) stdin_open: bool,
    pub(super) extra: Extra<'s>,
    /// Nesting of shells inside shells (`sh -c "bash -c '...'"`).
    pub(super) depth: usize,
    /// Loops around the command, in this shell (`break` outside a loop
    /// does nothing).
    pub(super) loops: usize,
    /// Commands the reader may still follow: each loop is followed twice,
    /// so nested loops would take time exponential in their depth.
    pub(super) budget: &'s Cell<u32>,
}

/// How deep shells may nest before the script is treated as not understood.
pub(super) const MAX_SHELL_DEPTH: usize = 8;

/// How many commands the reader follows in all before the rest of the
/// script is treated as not understood (work).
pub(super) const MAX_STEPS: u32 = 10_000;

pub(super) type Vars = BTreeMap<String, Option<String>>;
