//! How the programs the reader knows read their operands, without running
//! anything: the options of wrappers (`env`, `nice`, `tini`...) before the
//! command they run, what `test` or `[` returns when its operands alone
//! tell, whether `set` replaces the positional parameters, how long `sleep`
//! waits (its operands read as GNU coreutils and busybox read them), and
//! whether `tail` follows.

use super::Dur;
use super::run::Status;

/// The command after `env`'s options and assignments; `None` for options
/// that are not understood (`-S`, which splits a string into a command).
pub(super) fn skip_env_options(args: &[Option<String>]) -> Option<&[Option<String>]> {
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
pub(super) fn skip_options<'a>(args: &'a [Option<String>], takes_value: &[&str]) -> &'a [Option<String>] {
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

/// What `test` or `[ ... ]` returns, when its operands tell without
/// looking at files: `[ 1 ]`, `[ ! x ]`, `[ -n x ]`, `[ -z x ]`, `[ a = b ]`,
/// `[ a != b ]`; `Maybe` for anything else.
pub(super) fn test_status(operands: &[Option<String>]) -> Status {
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
pub(super) fn sets_positional(args: &[Option<String>]) -> bool {
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

/// What `sleep` with these operands waits; `None` when `sleep` refuses
/// them (and exits at once, failing).
pub(super) fn sleep_duration(args: &[Option<String>]) -> Option<Dur> {
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
pub(super) fn tail_follow(args: &[Option<String>]) -> Option<Dur> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
