//! Tests of `judge` on whole command lines: plain waits and work, shells
//! and their scripts, the common idle scripts, loops however spelt, work
//! then wait, exit statuses, standard input, variables from the
//! environment, positional parameters, wrappers, the settings' waiting
//! programs, the bounds on nested shells and loops, and how an argv is
//! shown.

use super::run::MAX_SHELL_DEPTH;
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
        Finding::WorkThenWait { work: "python train.py".into(), waits: vec!["sleep infinity".into()], total: Dur::Forever, maybe: false }
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
    assert!(is_idle(&judge_with(&["sh", "-c", "SLEEP=10 true; sleep $SLEEP"], &c, &[])), "a prefix assignment is for that command only");
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
fn display() {
    assert_eq!(display_argv(&argv(&["sleep", "infinity"])), "sleep infinity");
    assert_eq!(display_argv(&argv(&["sh", "-c", "sleep 1; it's"])), r"sh -c 'sleep 1; it'\''s'");
    assert_eq!(display_argv(&[Some("a".into()), None]), "a …");
}
