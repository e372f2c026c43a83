//! Tests of the shell reader: how a script is split into words and
//! operators (quotes, expansions, comments, redirections), how it parses
//! into lists and compound commands with their spans, and that what is not
//! read, not closed or nested too deeply is an error, never a guess or a
//! panic.

use super::lex::tokenize;
use super::token::Tok;
use super::*;

fn lit(s: &str, quoted: bool) -> Part {
    Part::Lit { text: s.into(), quoted }
}

/// The words of a script, shown: literal text as is, `$NAME` as
/// `{NAME}`, arithmetic as `((...))`, unknowns as `?`.
fn words(src: &str) -> Vec<String> {
    tokenize(src)
        .unwrap()
        .into_iter()
        .map(|t| match t.tok {
            Tok::Word(w) => show(&w.parts),
            Tok::Op(op) => format!("<{op:?}>"),
        })
        .collect()
}

fn show(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Lit { text, .. } => text.clone(),
            Part::Param { name, default: None, .. } => format!("{{{name}}}"),
            Part::Param { name, default: Some((colon, d)), .. } => format!("{{{name}{}-{}}}", if *colon { ":" } else { "" }, show(d)),
            Part::Arith { expr } => format!("(({expr}))"),
            Part::Unknown => "?".into(),
        })
        .collect()
}

#[test]
fn words_split_on_unquoted_blanks_and_operators() {
    assert_eq!(words("sleep infinity"), ["sleep", "infinity"]);
    assert_eq!(words("  sleep\tinfinity  "), ["sleep", "infinity"]);
    assert_eq!(words("a;b&&c||d|e&"), ["a", "<Semi>", "b", "<AndIf>", "c", "<OrIf>", "d", "<Pipe>", "e", "<Amp>"]);
    assert_eq!(words("a\nb"), ["a", "<Newline>", "b"]);
    assert_eq!(words("(a)"), ["<LParen>", "a", "<RParen>"]);
    assert_eq!(words("a;;b"), ["a", "<CaseEnd>", "b"]);
}

#[test]
fn quotes_are_removed_and_keep_blanks() {
    assert_eq!(words("echo 'sleep infinity'"), ["echo", "sleep infinity"]);
    assert_eq!(words(r#"echo "a  b" c"#), ["echo", "a  b", "c"]);
    assert_eq!(words(r#"a'b'"c"d"#), ["abcd"]);
    assert_eq!(words("''"), [""], "an empty quoted word is a word");
    assert_eq!(words(r#""""#), [""]);
    assert_eq!(words(r"a\ b"), ["a b"]);
    assert_eq!(words("a\\\nb"), ["ab"], "backslash-newline joins lines");
    assert_eq!(words(r#""a\"b\\c\$d\e""#), [r#"a"b\c$d\e"#]);
    assert_eq!(words("'a\\b'"), [r"a\b"], "no escapes inside single quotes");
    assert_eq!(words("$'a\\tb'"), ["a\tb"]);
    let t = tokenize("'while'").unwrap();
    let Tok::Word(w) = &t[0].tok else { panic!() };
    assert_eq!(w.bare(), None, "a quoted word is never a reserved word");
    assert_eq!(w.parts, [lit("while", true)]);
}

#[test]
fn expansions_are_kept_as_parts() {
    assert_eq!(words("sleep $D"), ["sleep", "{D}"]);
    assert_eq!(words("sleep ${D}s"), ["sleep", "{D}s"]);
    assert_eq!(words(r#"sleep "${D:-inf}""#), ["sleep", "{D:-inf}"]);
    assert_eq!(words("sleep ${D-1d}"), ["sleep", "{D-1d}"]);
    assert_eq!(words("sleep ${D:=5}"), ["sleep", "{D:-5}"]);
    assert_eq!(words("sleep $1 $12"), ["sleep", "{1}", "{1}2"], "one digit, as POSIX reads `$12`");
    assert_eq!(words("sleep ${12}"), ["sleep", "{12}"]);
    assert_eq!(words("sleep $((60 * 60))"), ["sleep", "((60 * 60))"]);
    assert_eq!(words("sleep $(( (1+2)*3 ))"), ["sleep", "(( (1+2)*3 ))"]);
    assert_eq!(words("sleep $(cat /x) `date`"), ["sleep", "?", "?"]);
    assert_eq!(words(r#"echo "$(echo ")")" x"#), ["echo", "?", "x"], "quotes inside `$(...)`");
    assert_eq!(words("echo $* $? ${#X} ${X%.*}"), ["echo", "?", "?", "?", "?"]);
    assert_eq!(words("wait $!; exec \"$@\""), ["wait", "{!}", "<Semi>", "exec", "{@}"], "kept by name, for `wait` and `exec`");
    assert_eq!(words("echo $ a$"), ["echo", "$", "a$"]);
    assert_eq!(words("echo ${X:-${Y:-z}}"), ["echo", "{X:-{Y:-z}}"]);
}

#[test]
fn comments_run_to_the_end_of_the_line() {
    assert_eq!(words("# sleep infinity\npython x.py"), ["<Newline>", "python", "x.py"]);
    assert_eq!(words("a # b c"), ["a"]);
    assert_eq!(words("a#b"), ["a#b"], "`#` inside a word is not a comment");
}

#[test]
fn redirections_and_descriptors() {
    assert_eq!(words("a > /dev/null 2>&1"), ["a", "<Redirect(None, Out)>", "/dev/null", "<Redirect(Some(2), Out)>", "1"]);
    assert_eq!(words("cat </dev/null"), ["cat", "<Redirect(None, In)>", "/dev/null"]);
    assert_eq!(words("a &> log"), ["a", "<Redirect(None, Out)>", "log"]);
    assert_eq!(words("echo 2 >x"), ["echo", "2", "<Redirect(None, Out)>", "x"], "a blank before `>`: an argument");
}

#[test]
fn unclosed_things_are_errors() {
    for bad in ["echo 'a", r#"echo "a"#, "echo `a", "echo $(a", "echo ${a", "echo $((1+2)"] {
        assert!(tokenize(bad).is_err(), "{bad}");
    }
}

fn simple_names(l: &List) -> Vec<String> {
    let mut out = Vec::new();
    for item in &l.items {
        let mut pipes = vec![&item.and_or.first];
        pipes.extend(item.and_or.rest.iter().map(|(_, p)| p));
        for p in pipes {
            for c in &p.commands {
                match &c.kind {
                    CommandKind::Simple(w) => out.push(w.iter().map(|w| show(&w.parts)).collect::<Vec<_>>().join(" ")),
                    other => out.push(
                        match other {
                            CommandKind::Group(_) => "group",
                            CommandKind::Subshell(_) => "subshell",
                            CommandKind::Loop { .. } => "loop",
                            CommandKind::If { .. } => "if",
                            CommandKind::For { .. } => "for",
                            CommandKind::ArithFor { .. } => "arith for",
                            CommandKind::Test(_) => "test",
                            CommandKind::Arith(_) => "arith",
                            CommandKind::Simple(_) => "simple",
                        }
                        .to_string(),
                    ),
                }
            }
        }
    }
    out
}

#[test]
fn lists_and_and_or() {
    let l = parse("trap 'exit 0' TERM; sleep infinity & wait").unwrap();
    assert_eq!(simple_names(&l), ["trap exit 0 TERM", "sleep infinity", "wait"]);
    assert_eq!(l.items.iter().map(|i| i.background).collect::<Vec<_>>(), [false, true, false]);
    let l = parse("a && b || c").unwrap();
    assert_eq!(l.items.len(), 1);
    assert_eq!(l.items[0].and_or.rest.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [Connector::And, Connector::Or]);
    let l = parse("a &&\n  b").unwrap();
    assert_eq!(simple_names(&l), ["a", "b"], "a newline after `&&` continues the list");
    let l = parse("a | b | c").unwrap();
    assert_eq!(l.items[0].and_or.first.commands.len(), 3);
    let l = parse("! a").unwrap();
    assert!(l.items[0].and_or.first.bang);
    assert_eq!(parse("").unwrap(), List::default());
    assert_eq!(parse("\n\n").unwrap(), List::default());
}

#[test]
fn compound_commands() {
    let l = parse("while true; do sleep 60; done").unwrap();
    let CommandKind::Loop { until, cond, body } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
    assert!(!until);
    assert_eq!(simple_names(cond), ["true"]);
    assert_eq!(simple_names(body), ["sleep 60"]);
    let l = parse("until false\ndo\n  sleep 1\ndone").unwrap();
    assert!(matches!(l.items[0].and_or.first.commands[0].kind, CommandKind::Loop { until: true, .. }));
    let l = parse("if [ -f x ]; then a; elif b; then c; else d; fi").unwrap();
    let CommandKind::If { branches, otherwise } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
    assert_eq!(branches.len(), 2);
    assert_eq!(simple_names(otherwise.as_ref().unwrap()), ["d"]);
    let l = parse("for i in 1 2 3; do echo $i; done").unwrap();
    let CommandKind::For { var, words, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
    assert_eq!((var.as_str(), words.as_ref().map(Vec::len)), ("i", Some(3)));
    let l = parse("for i\ndo echo $i; done").unwrap();
    let CommandKind::For { var, words, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
    assert_eq!((var.as_str(), words), ("i", &None), "no `in`: the positional parameters");
    assert!(parse("for 'i' in 1; do :; done").is_err(), "not a name");
    let l = parse("{ a; b; } > log; (c; d)").unwrap();
    assert_eq!(simple_names(&l), ["group", "subshell"]);
    let l = parse("while (( 1 )); do :; done").unwrap();
    let CommandKind::Loop { cond, .. } = &l.items[0].and_or.first.commands[0].kind else { panic!() };
    assert_eq!(cond.items[0].and_or.first.commands[0].kind, CommandKind::Arith(" 1 ".into()));
    for (src, want) in [
        ("for ((;;)); do sleep 60; done", ("", "", "")),
        ("for (( ; ; ))\ndo\n  sleep 60\ndone", (" ", " ", " ")),
        ("for((i=0;i<10;i++)) do sleep 1; done", ("i=0", "i<10", "i++")),
        ("for (( i = (1+2); i > 0; i-- )); do :; done", (" i = (1+2)", " i > 0", " i-- ")),
    ] {
        let l = parse(src).unwrap();
        let CommandKind::ArithFor { init, cond, step, body } = &l.items[0].and_or.first.commands[0].kind else { panic!("{src}") };
        assert_eq!((init.as_str(), cond.as_str(), step.as_str()), want, "{src}");
        assert_eq!(body.items.len(), 1, "{src}");
    }
    let src = "for ((;;)); do sleep 60; done; echo after";
    let l = parse(src).unwrap();
    assert_eq!(simple_names(&l), ["arith for", "echo after"]);
    let c = &l.items[0].and_or.first.commands[0];
    assert_eq!(&src[c.span.0..c.span.1], "for ((;;)); do sleep 60; done");
    let l = parse("[[ -f a && -f b ]] && echo yes").unwrap();
    assert_eq!(simple_names(&l), ["test", "echo yes"]);
}

#[test]
fn spans_cover_the_command_text() {
    let src = "echo hi; while true; do sleep 5; done >/dev/null";
    let l = parse(src).unwrap();
    let c = &l.items[1].and_or.first.commands[0];
    assert_eq!(&src[c.span.0..c.span.1], "while true; do sleep 5; done >/dev/null");
    let c = &l.items[0].and_or.first.commands[0];
    assert_eq!(&src[c.span.0..c.span.1], "echo hi");
}

#[test]
fn standard_input_redirections_are_noted() {
    let l = parse("cat < /dev/null; cat 0</x; cat 2</x; cat").unwrap();
    let r: Vec<bool> = l.items.iter().map(|i| i.and_or.first.commands[0].stdin_redirected).collect();
    assert_eq!(r, [true, true, false, false]);
    let l = parse("while read l; do echo $l; done < file").unwrap();
    assert!(l.items[0].and_or.first.commands[0].stdin_redirected);
}

#[test]
fn what_is_not_read_is_an_error_not_a_guess() {
    for bad in [
        "case $x in a) sleep 1;; esac",
        "f() { sleep infinity; }; f",
        "function f { :; }",
        "cat <<EOF\nhi\nEOF",
        "while true; do sleep 1",
        "if a; then b",
        "{ a; ",
        "(a",
        "a && ",
        "a | ",
        "; a",
        "done",
        "a )",
        "echo > ",
        "(( 1 ",
        "for ((;)); do :; done",
        "for ((;;;)); do :; done",
        "for ((;;)); do :;",
        "for ((;;)) { :; }",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} should not be read");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}a{}", "( ".repeat(200), " )".repeat(200));
    assert!(parse(&deep).is_err());
    let ok = format!("{}a{}", "( ".repeat(20), " )".repeat(20));
    assert!(parse(&ok).is_ok());
    let deep = format!("echo {}x{}", "${A:-".repeat(100), "}".repeat(100));
    assert!(tokenize(&deep).is_err());
}

#[test]
fn never_panics_on_odd_input() {
    for s in [
        "\\",
        "$",
        "${",
        "$((",
        "'",
        "\"",
        "`",
        "&&&",
        "|||",
        ";;;",
        ">>>",
        "<<<x",
        "((",
        "))",
        "[[",
        "]]",
        "\u{0}",
        "é $é ${é}",
        "$'\\",
        "a\r\nb",
    ] {
        let _ = parse(s);
    }
}
