//! Cron schedules as the CronJob controller reads them: robfig/cron v3's
//! `ParseStandard`, which both the API server (validating `spec.schedule`)
//! and kube-controller-manager's CronJob controller call.
//!
//! What a rule needs of a schedule is how close two of its runs can come:
//! a CronJob whose Jobs may overlap (`concurrencyPolicy: Allow`) and end
//! within `activeDeadlineSeconds` runs at most as many at once as that
//! deadline spans gaps between runs. [`min_gap_seconds`] gives a lower
//! bound on that gap, read from the minute and hour fields and, when the
//! day of the month is `*`, the day of the week, as robfig/cron matches
//! them (`SpecSchedule.Next`, `dayMatches`). The day of the month and the
//! month are not read: they only take runs away, which makes the real gap
//! larger, never smaller. Nor are time zones: a clock set back an hour
//! for daylight saving repeats that hour, and a run in it (robfig/cron
//! steps through real hours) comes again an hour later.

/// Minutes in a week: the period of every schedule read here.
const WEEK: u32 = 7 * 24 * 60;

/// A lower bound on the seconds between two consecutive runs of a cron
/// schedule as a CronJob's `spec.schedule` writes it: five fields (minute,
/// hour, day of month, month, day of week; lists, ranges, steps, `*` and
/// `?`, month and weekday names), a descriptor (`@hourly`, `@daily`,
/// `@midnight`, `@weekly`, `@monthly`, `@yearly`, `@annually`, `@every
/// <duration>`), either after a `CRON_TZ=<zone> ` or `TZ=<zone> ` prefix.
///
/// `None` when the schedule is not one robfig/cron's `ParseStandard`
/// accepts (the API server refuses it), or when a field allows no value
/// at all (`,`: it never runs). Never a panic, whatever the text.
pub fn min_gap_seconds(schedule: &str) -> Option<u64> {
    let spec = without_time_zone(schedule)?;
    if let Some(descriptor) = spec.strip_prefix('@') {
        return self::descriptor(descriptor);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    let [minute, hour, day_of_month, month, day_of_week] = fields.as_slice() else { return None };
    let minutes = field(minute, 0, 59, &[])?;
    let hours = field(hour, 0, 23, &[])?;
    let days_of_month = field(day_of_month, 1, 31, &[])?;
    let months = field(month, 1, 12, &MONTHS)?;
    let days_of_week = field(day_of_week, 0, 6, &DAYS)?;
    if days_of_month.bits == 0 || months.bits == 0 {
        return None;
    }
    // robfig/cron ANDs the two day fields when either is `*`, and ORs them
    // otherwise: only with the day of the month a `*` are the days those
    // of the week alone.
    let days = if days_of_month.star { days_of_week.bits } else { 0x7f };
    gap(minutes.bits, hours.bits, days).map(|minutes| u64::from(minutes) * 60)
}

/// The schedule without robfig/cron's time zone prefix (`CRON_TZ=` or
/// `TZ=`, up to the first space, then trimmed). The zone is not looked
/// up, only read as a name (letters, digits, `/`, `_`, `-`, `+`): `None`
/// when it is not one, or when no space ends it (robfig/cron's slice
/// fails there).
fn without_time_zone(schedule: &str) -> Option<&str> {
    if schedule.is_empty() {
        return None;
    }
    if !(schedule.starts_with("TZ=") || schedule.starts_with("CRON_TZ=")) {
        return Some(schedule);
    }
    let space = schedule.find(' ')?;
    let (zone, rest) = schedule.split_at(space);
    let zone = zone.split_once('=').map(|(_, z)| z)?;
    if !zone.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+')) {
        return None;
    }
    Some(rest.trim())
}

/// The gap of a descriptor (the text after `@`), as the schedule robfig/cron
/// gives it.
fn descriptor(d: &str) -> Option<u64> {
    let (minutes, hours, days): (u64, u64, u64) = match d {
        // At 0:00; the first of the month, or of January, is not read, so
        // these count as daily.
        "yearly" | "annually" | "monthly" | "daily" | "midnight" => (1, 1, 0x7f),
        "weekly" => (1, 1, 1),
        "hourly" => (1, (1 << 24) - 1, 0x7f),
        _ => {
            let duration = d.strip_prefix("every ")?;
            return every(duration);
        }
    };
    gap(minutes, hours, days).map(|m| u64::from(m) * 60)
}

/// `@every <duration>`: robfig/cron's `Every`, the duration (Go's
/// `time.ParseDuration`) rounded down to whole seconds, at least one.
fn every(duration: &str) -> Option<u64> {
    let nanos = go_duration(duration)?;
    Some(u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX).max(1))
}

/// Go's `time.ParseDuration`, in nanoseconds (a negative duration is 0):
/// `[-+]` then numbers with an optional fraction, each with a unit (`ns`,
/// `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), or `0` alone. `None` where Go
/// returns an error, overflow past 2^63 ns included.
fn go_duration(text: &str) -> Option<u128> {
    const LIMIT: u128 = 1 << 63;
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    if s == "0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        let (whole, rest) = s.split_at(digits);
        s = rest;
        let mut fraction = "";
        if let Some(rest) = s.strip_prefix('.') {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            (fraction, s) = rest.split_at(n);
        }
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let unit_len = s.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(s.len());
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let mut value: u128 = 0;
        for b in whole.bytes() {
            value = value.checked_mul(10)?.checked_add(u128::from(b - b'0'))?;
            if value > LIMIT {
                return None;
            }
        }
        value = value.checked_mul(unit)?;
        // Go keeps the fraction's digits while they fit; 18 do.
        let mut numerator: u128 = 0;
        let mut scale: u128 = 1;
        for b in fraction.bytes().take(18) {
            numerator = numerator * 10 + u128::from(b - b'0');
            scale *= 10;
        }
        value = value.checked_add(numerator * unit / scale)?;
        total = total.checked_add(value)?;
        if value > LIMIT || total > LIMIT {
            return None;
        }
    }
    if negative {
        return Some(0);
    }
    (total < LIMIT).then_some(total)
}

/// A field's values as bits (bit `n` for value `n`), and whether a `*` or
/// `?` was in it (with no step above 1), which robfig/cron keeps for the
/// day fields.
struct Field {
    bits: u64,
    star: bool,
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// robfig/cron's `getField`: ranges separated by commas (empty ones
/// skipped), each `getRange`, values within `min..=max`. `names` name the
/// values from `min` on, matched ignoring case.
fn field(text: &str, min: u32, max: u32, names: &[&str]) -> Option<Field> {
    let mut out = Field { bits: 0, star: false };
    for range in text.split(',').filter(|r| !r.is_empty()) {
        let mut parts = range.split('/');
        let span = parts.next().unwrap_or_default();
        let step = parts.next();
        if parts.next().is_some() {
            return None;
        }
        let mut ends = span.split('-');
        let low = ends.next().unwrap_or_default();
        let (mut start, mut end, mut star) = if low == "*" || low == "?" {
            // robfig/cron reads nothing after a `*`'s hyphen.
            (min, max, true)
        } else {
            let start = value(low, min, names)?;
            let end = match (ends.next(), ends.next()) {
                (None, _) => start,
                (Some(high), None) => value(high, min, names)?,
                (Some(_), Some(_)) => return None,
            };
            (start, end, false)
        };
        let step = match step {
            None => 1,
            Some(step) => {
                let step = number(step)?;
                // `N/step` runs from N to the end.
                if !span.contains('-') && !star {
                    end = max;
                }
                if step > 1 {
                    star = false;
                }
                step
            }
        };
        if start < min || end > max || start > end || step == 0 {
            return None;
        }
        while start <= end {
            out.bits |= 1 << start;
            start = start.checked_add(step)?;
        }
        out.star |= star;
    }
    Some(out)
}

/// A value: a name (for months and weekdays) or a number.
fn value(text: &str, min: u32, names: &[&str]) -> Option<u32> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return u32::try_from(i).ok().and_then(|i| i.checked_add(min));
    }
    number(text)
}

/// Go's `strconv.Atoi` of a number robfig/cron accepts: an optional `+`,
/// then decimal digits (a `-` has been split away as a range already, and
/// a negative number is refused).
fn number(text: &str) -> Option<u32> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The smallest gap, in minutes, between two consecutive runs over a week
/// (runs at the minutes of `minutes`, hours of `hours`, weekdays of `days`,
/// Sunday first), going round the week's end; a week for one run a week.
/// `None` when nothing runs.
fn gap(minutes: u64, hours: u64, days: u64) -> Option<u32> {
    let mut first: Option<u32> = None;
    let mut last = 0u32;
    let mut smallest = WEEK;
    for day in (0..7u32).filter(|d| days & (1 << d) != 0) {
        for hour in (0..24u32).filter(|h| hours & (1 << h) != 0) {
            for minute in (0..60u32).filter(|m| minutes & (1 << m) != 0) {
                let at = day * 24 * 60 + hour * 60 + minute;
                if first.is_some() {
                    smallest = smallest.min(at - last);
                }
                first.get_or_insert(at);
                last = at;
            }
        }
    }
    let first = first?;
    Some(smallest.min(first + WEEK - last))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: u64 = 60;
    const HOUR: u64 = 3600;
    const DAY: u64 = 24 * HOUR;

    #[test]
    fn the_minute_field_sets_the_gap_within_an_hour() {
        assert_eq!(min_gap_seconds("* * * * *"), Some(MINUTE));
        assert_eq!(min_gap_seconds("*/5 * * * *"), Some(5 * MINUTE));
        assert_eq!(min_gap_seconds("0,30 * * * *"), Some(30 * MINUTE));
        assert_eq!(min_gap_seconds("0,50 * * * *"), Some(10 * MINUTE), "round the hour: 50 to the next hour's 0");
        assert_eq!(min_gap_seconds("10-12 3 * * *"), Some(MINUTE));
        assert_eq!(min_gap_seconds("5/20 * * * *"), Some(20 * MINUTE), "5, 25, 45");
        assert_eq!(min_gap_seconds("0-30/15 * * * *"), Some(15 * MINUTE), "0, 15, 30, then 30 to the next hour");
        assert_eq!(min_gap_seconds("0,30 9 * * *"), Some(30 * MINUTE), "twice at 9, then the next day");
    }

    #[test]
    fn one_minute_a_day_leaves_the_hours_to_set_the_gap() {
        assert_eq!(min_gap_seconds("0 * * * *"), Some(HOUR));
        assert_eq!(min_gap_seconds("15 */6 * * *"), Some(6 * HOUR));
        assert_eq!(min_gap_seconds("0 2 * * *"), Some(DAY));
        assert_eq!(min_gap_seconds("0 0,20 * * *"), Some(4 * HOUR), "20:00 to the next day's 0:00");
        assert_eq!(min_gap_seconds("59 23 * * *"), Some(DAY));
        assert_eq!(min_gap_seconds("30 1,2 * * *"), Some(HOUR));
    }

    #[test]
    fn days_of_the_month_and_months_are_not_read() {
        assert_eq!(min_gap_seconds("0 0 1 * *"), Some(DAY), "monthly reads as daily: a lower bound");
        assert_eq!(min_gap_seconds("0 0 1 jan *"), Some(DAY));
        assert_eq!(min_gap_seconds("0 0 1,15 * mon"), Some(DAY), "both day fields set: robfig/cron ORs them");
        assert_eq!(min_gap_seconds("0 0 31 2 *"), Some(DAY), "never runs, but no smaller gap than a day can come of it");
    }

    #[test]
    fn days_of_the_week_count_when_the_day_of_the_month_is_any() {
        assert_eq!(min_gap_seconds("0 3 * * 0"), Some(7 * DAY));
        assert_eq!(min_gap_seconds("0 3 ? * SUN"), Some(7 * DAY), "`?` is `*`; names ignore case");
        assert_eq!(min_gap_seconds("0 3 * * mon,thu"), Some(3 * DAY));
        assert_eq!(min_gap_seconds("0 3 * * mon-fri"), Some(DAY));
        assert_eq!(min_gap_seconds("0 3 * * sat,sun"), Some(DAY), "Saturday to Sunday, round the week");
        assert_eq!(min_gap_seconds("0 3 */1 * 1"), Some(7 * DAY), "`*/1` is still `*`");
        assert_eq!(min_gap_seconds("0 3 */2 * 1"), Some(DAY), "a step clears the `*`: the fields are ORed");
    }

    #[test]
    fn descriptors_and_time_zones() {
        assert_eq!(min_gap_seconds("@hourly"), Some(HOUR));
        for d in ["@daily", "@midnight", "@monthly", "@yearly", "@annually"] {
            assert_eq!(min_gap_seconds(d), Some(DAY), "{d}");
        }
        assert_eq!(min_gap_seconds("@weekly"), Some(7 * DAY));
        assert_eq!(min_gap_seconds("@every 90s"), Some(90));
        assert_eq!(min_gap_seconds("@every 1h30m"), Some(90 * MINUTE));
        assert_eq!(min_gap_seconds("@every 1.5h"), Some(90 * MINUTE));
        assert_eq!(min_gap_seconds("@every 1500ms"), Some(1), "rounded down to seconds");
        assert_eq!(min_gap_seconds("@every 10ms"), Some(1), "at least a second");
        assert_eq!(min_gap_seconds("@every 0"), Some(1));
        assert_eq!(min_gap_seconds("@every -5m"), Some(1), "a negative delay is a second");
        assert_eq!(min_gap_seconds("@every 2µs"), Some(1));
        assert_eq!(min_gap_seconds("CRON_TZ=Europe/Paris 0 */2 * * *"), Some(2 * HOUR));
        assert_eq!(min_gap_seconds("TZ=UTC  @hourly"), Some(HOUR), "trimmed after the zone");
        assert_eq!(min_gap_seconds("TZ=America/Argentina/Buenos_Aires */10 * * * *"), Some(10 * MINUTE));
        assert_eq!(min_gap_seconds("TZ=Etc/GMT+5 0 0 * * *"), Some(DAY));
    }

    #[test]
    fn schedules_that_do_not_parse_have_no_gap() {
        for bad in [
            "",
            " ",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * 32 * *",
            "* * * 13 *",
            "* * * * 7",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "1/2/3 * * * *",
            "5-1 * * * *",
            "-1 * * * *",
            "a * * * *",
            "1.5 * * * *",
            "99999999999999999999 * * * *",
            "* * * january *",
            "@fortnightly",
            "@Hourly",
            " @hourly",
            "@hourly ",
            "@every",
            "@every ",
            "@every 5",
            "@every 5x",
            "@every .s",
            "@every 1h-",
            "@every 9999999999h",
            "CRON_TZ=UTC",
            "TZ=UTC",
            "TZ=UTC\t* * * * *",
            "TZ=Europe/Par;is * * * * *",
            ", * * * *",
            "0 0 * * ,",
            "0 0 , * *",
            "0 0 * , *",
            "⁵ * * * *",
        ] {
            assert_eq!(min_gap_seconds(bad), None, "{bad:?}");
        }
        assert_eq!(min_gap_seconds("+5 * * * *"), Some(HOUR), "Go's Atoi reads a plus sign");
        assert_eq!(min_gap_seconds("1,,2 * * * *"), Some(MINUTE), "empty ranges are skipped");
        assert_eq!(min_gap_seconds("*-5 * * * *"), Some(MINUTE), "nothing after a star's hyphen is read");
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h"), Some(3_600_000_000_000));
        assert_eq!(go_duration("+2m3.5s"), Some(123_500_000_000));
        assert_eq!(go_duration(".5s"), Some(500_000_000));
        assert_eq!(go_duration("5.s"), Some(5_000_000_000));
        assert_eq!(go_duration("1h1h"), Some(7_200_000_000_000), "units may repeat");
        assert_eq!(go_duration("2562047h"), Some(2_562_047 * 3_600_000_000_000));
        assert_eq!(go_duration("2562048h"), None, "past Go's int64 nanoseconds");
        assert_eq!(go_duration("1"), None, "a unit is needed");
        assert_eq!(go_duration("-"), None);
        assert_eq!(go_duration("1s "), None);
    }
}
