//! `exceptions`: scoped, expiring exceptions, the shared setting every rule
//! reads ([`crate::runtime::shared`]).
//!
//! ```yaml
//! exceptions:
//!   - rules: [gpu-runtime-class]         # optional: the rules it excuses
//!     namespaces: [team-nlp]             # optional: namespace globs
//!     objectSelector: {matchLabels: {app.kubernetes.io/name: bert}}  # optional
//!     images: [registry.example.com/legacy/*]   # optional, with containers:
//!     containers: [trainer]                     # the containers it excuses
//!     until: "2027-03-01"                # required: RFC 3339 date or date-time
//!     reason: migrating to the nvidia runtime by March   # required
//! ```
//!
//! An exception matches a request when every scope it gives matches, as a
//! Kyverno `PolicyException` does: `rules` names the rule evaluating the
//! request (absent: any rule whose settings carry it, so one file can be
//! given to several rules, and an exception naming only other rules is
//! inert in this one), `namespaces` matches the request's namespace (a
//! cluster-scoped object matches no namespace list), `objectSelector`
//! selects the object or the old object, as the shared `objectSelector`
//! does (the webhook's matching). A matching exception excuses every
//! violation of the request, except when it gives `images` or
//! `containers`: then it excuses only what the rule finds in the
//! containers whose image matches one of `images` or whose name matches one
//! of `containers`. The rule is run again with those containers left alone
//! as `exemptImages` leaves them, and the violations that go away are the
//! ones excused; only rules that judge containers one by one accept these
//! two keys, as only they accept `exemptImages`.
//!
//! `until` is a date (`2027-03-01`, the first instant of that day in UTC)
//! or a date-time with an offset (`2027-03-01T12:00:00Z`,
//! `2027-03-01T12:00:00+01:00`); the exception applies before that
//! instant, by the host's clock. Kubewarden gives waPC modules WASI preview
//! 1, whose `clock_time_get` the module reads (the modules already import
//! WASI preview 1 for `fd_write` and `random_get`); natively the system
//! clock is read. The component imports no clock (it imports nothing but
//! `aigov:policy/cluster`), so it cannot tell whether an exception has
//! expired: it applies none, and says so in a warning. A policy lives
//! longer than the settings check that loaded it, so `until` is judged on
//! every request, not when the settings are read.
//!
//! Every exception that matches a request the rule would refuse is
//! reported: applied (a warning `excused by exception N (until DATE):
//! REASON: VIOLATION` and the audit annotation `exceptions`), expired (a
//! warning `exception N expired on DATE (REASON): ...`, and the violations
//! are refused as if it were absent), or not checkable (the component).
//! The numbers count from 1 in the order of the `exceptions` list.
//! Exceptions are applied after `allowExistingViolations`, before audit mode
//! reports what is left.

use serde::{Deserialize, Serialize};

use crate::base::glob::{Glob, any_match, non_empty_patterns};
use crate::base::rule_settings::SettingsError;
use crate::model::label_selector::LabelSelector;
use crate::model::request::Request;

/// One entry of `exceptions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Exception {
    /// The rules it excuses; empty: whichever rule reads it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Namespaces (wildcards allowed); empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<Glob>,
    /// Objects it excuses, by label.
    #[serde(default, skip_serializing_if = "LabelSelector::is_empty")]
    pub object_selector: LabelSelector,
    /// Containers it excuses, by image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Glob>,
    /// Containers it excuses, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<Glob>,
    /// When it stops applying, as written.
    pub until: String,
    /// Why, for whoever reads the warning.
    pub reason: String,
}

impl Exception {
    /// Checks the entry at index `i` of `exceptions`: `until` and `reason`
    /// given, patterns not empty, the selector valid, and `images` or
    /// `containers` only for a rule that judges containers one by one.
    pub fn validate(&self, i: usize, exempts_images: Result<(), &str>) -> Result<(), SettingsError> {
        let key = |k: &str| format!("exceptions[{i}].{k}");
        if self.reason.trim().is_empty() {
            return Err(SettingsError::new(key("reason"), "say why the exception exists, for whoever reads the warning it adds"));
        }
        if until_seconds(&self.until).is_none() {
            return Err(SettingsError::new(
                key("until"),
                format!("`{}` is not a date (`2027-03-01`) or an RFC 3339 date-time (`2027-03-01T00:00:00Z`)", self.until),
            ));
        }
        for (name, list) in [("namespaces", &self.namespaces), ("images", &self.images), ("containers", &self.containers)] {
            non_empty_patterns(&key(name), list)?;
        }
        if let Some(at) = self.rules.iter().position(|r| r.trim().is_empty()) {
            return Err(SettingsError::new(format!("exceptions[{i}].rules[{at}]"), "must not be empty"));
        }
        if let Err(why) = exempts_images
            && (!self.images.is_empty() || !self.containers.is_empty())
        {
            let which = if self.images.is_empty() { "containers" } else { "images" };
            return Err(SettingsError::new(key(which), format!("{why}; scope the exception by namespace or `objectSelector`")));
        }
        self.object_selector.validate(&key("objectSelector"))
    }

    /// Whether it names rule `rule` (or no rule).
    pub fn covers(&self, rule: &str) -> bool {
        self.rules.is_empty() || self.rules.iter().any(|r| r == rule)
    }

    /// Whether its namespaces match the request's (a cluster-scoped
    /// request matches no namespace list); its object selector is matched
    /// by [`crate::runtime::shared::Shared::exceptions_for`].
    pub fn matches_namespace(&self, req: &Request<'_>) -> bool {
        self.namespaces.is_empty() || req.namespace().is_some_and(|ns| any_match(&self.namespaces, ns))
    }

    /// Whether it excuses only some containers.
    pub fn scoped_to_containers(&self) -> bool {
        !self.images.is_empty() || !self.containers.is_empty()
    }

    /// Whether it still applies at `now` (seconds since the epoch).
    pub fn in_force(&self, now: i64) -> bool {
        until_seconds(&self.until).is_some_and(|until| now < until)
    }
}

/// `until` in seconds since the Unix epoch: a date's first instant in UTC,
/// or an RFC 3339 date-time (`T` or `t` or a space between the two, `Z` or
/// an offset, fractions of a second ignored). `None` when it is neither.
pub fn until_seconds(text: &str) -> Option<i64> {
    let text = text.trim();
    let date = text.get(..10)?;
    let days = days(date)?;
    let rest = text.get(10..)?;
    if rest.is_empty() {
        return Some(days * 86_400);
    }
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (h, m, s) = (number(rest.get(0..2)?)?, number(rest.get(3..5)?)?, number(rest.get(6..8)?)?);
    if rest.get(2..3)? != ":" || rest.get(5..6)? != ":" || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut zone = rest.get(8..)?;
    if let Some(fraction) = zone.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        zone = fraction.get(digits..)?;
    }
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.get(0..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let (oh, om) = (number(zone.get(1..3)?)?, number(zone.get(4..6)?)?);
            if zone.len() != 6 || zone.get(3..4)? != ":" || oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    Some(days * 86_400 + h * 3600 + m * 60 + s - offset)
}

/// Two or more ASCII digits as a number.
fn number(digits: &str) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date, checked against the
/// calendar (proleptic Gregorian, as RFC 3339's).
fn days(date: &str) -> Option<i64> {
    if date.get(4..5)? != "-" || date.get(7..8)? != "-" {
        return None;
    }
    let (y, m, d) = (number(date.get(0..4)?)?, number(date.get(5..7)?)?, number(date.get(8..10)?)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > month_days {
        return None;
    }
    // Howard Hinnant's `days_from_civil`.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_reads_dates_and_date_times() {
        assert_eq!(until_seconds("1970-01-01"), Some(0));
        assert_eq!(until_seconds("2027-03-01"), Some(1_803_859_200));
        assert_eq!(until_seconds("2027-03-01T00:00:00Z"), Some(1_803_859_200));
        assert_eq!(until_seconds("2027-03-01T01:00:00+01:00"), Some(1_803_859_200));
        assert_eq!(until_seconds("2027-02-28T23:00:00.5-01:00"), Some(1_803_859_200));
        assert_eq!(until_seconds("2024-02-29"), Some(1_709_164_800));
        for bad in
            ["", "2027", "2027-3-1", "2027-02-29", "2027-13-01", "2027-03-01T25:00:00Z", "2027-03-01T00:00:00", "March 2027", "2027-03-01Z"]
        {
            assert_eq!(until_seconds(bad), None, "{bad}");
        }
    }

    fn exception(json: &str) -> Exception {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn validation_names_the_key() {
        let e = exception(r#"{"until":"2027-03-01","reason":""}"#);
        assert_eq!(
            e.validate(0, Ok(())).unwrap_err().to_string(),
            "setting `exceptions[0].reason`: say why the exception exists, for whoever reads the warning it adds"
        );
        let e = exception(r#"{"until":"next March","reason":"r"}"#);
        assert_eq!(
            e.validate(2, Ok(())).unwrap_err().to_string(),
            "setting `exceptions[2].until`: `next March` is not a date (`2027-03-01`) or an RFC 3339 date-time (`2027-03-01T00:00:00Z`)"
        );
        let e = exception(r#"{"until":"2027-03-01","reason":"r","containers":["trainer"]}"#);
        assert!(e.validate(0, Ok(())).is_ok());
        assert_eq!(
            e.validate(0, Err("it counts what a whole pod holds")).unwrap_err().to_string(),
            "setting `exceptions[0].containers`: it counts what a whole pod holds; scope the exception by namespace or `objectSelector`"
        );
        assert!(serde_json::from_str::<Exception>(r#"{"until":"2027-03-01","reason":"r","namespace":["a"]}"#).is_err());
        assert!(serde_json::from_str::<Exception>(r#"{"reason":"r"}"#).is_err(), "`until` is required");
    }

    #[test]
    fn in_force_before_until_only() {
        let e = exception(r#"{"until":"2027-03-01","reason":"r"}"#);
        assert!(e.in_force(1_803_859_199));
        assert!(!e.in_force(1_803_859_200));
        assert!(e.covers("any-rule"));
        let e = exception(r#"{"rules":["a"],"until":"2027-03-01","reason":"r"}"#);
        assert!(e.covers("a") && !e.covers("b"));
    }
}
