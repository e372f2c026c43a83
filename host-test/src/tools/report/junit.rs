//! JUnit XML: a test suite per rule, a test case per document the rule
//! governs (documents it does not govern are listed as skipped), a rejection
//! a `<failure>` carrying every violation, a rule that could not run an
//! `<error>`, warnings in `<system-out>`; and, when a file could not be read
//! or parsed, a suite `aigov-scan` with an `<error>` test case per such
//! file, so that a CI system shows why the job failed. Valid against the
//! Jenkins/Surefire `junit-10.xsd` that CI systems read.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;

use super::model::{Item, Note, Outcome, Report, RuleInfo};
use super::spill::Spill;

/// Escapes text for an XML attribute or element.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && c != '\t' && c != '\r' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// One rule's test suite: its test cases, kept until its counts are known.
struct Suite {
    cases: Spill,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

/// JUnit XML written as the documents arrive: each rule's test cases go to
/// its own spill, and [`Writer::finish`] writes the suites, whose counts
/// head them, one after the other.
pub struct Writer {
    rules: Vec<RuleInfo>,
    suites: Vec<Suite>,
    /// Files that could not be read or parsed.
    errors: Vec<Note>,
}

/// The suite of the files that could not be read or parsed.
pub const READ_SUITE: &str = "aigov-scan";

impl Writer {
    /// A writer for a report on `rules`, spilling each suite with `spill`.
    pub fn new(rules: Vec<RuleInfo>, spill: &dyn Fn(&str) -> Result<Spill>) -> Result<Writer> {
        let suites = rules
            .iter()
            .map(|r| Ok(Suite { cases: spill(&format!("junit-{}", r.name))?, tests: 0, failures: 0, errors: 0, skipped: 0 }))
            .collect::<Result<_>>()?;
        Ok(Writer { rules, suites, errors: Vec::new() })
    }

    /// Adds what the scan yielded: documents make a test case per rule, a
    /// file that could not be read or parsed one in [`READ_SUITE`].
    pub fn add(&mut self, item: &Item) -> Result<()> {
        let doc = match item {
            Item::Document(doc) => doc,
            Item::Error(note) => {
                self.errors.push(note.clone());
                return Ok(());
            }
            Item::Skipped(_) | Item::Overridden(_) | Item::Defaulted(_) => return Ok(()),
        };
        let name = esc(&format!("{}: {} {}", doc.source, doc.target.what(), doc.target.object()));
        for ((rule, suite), result) in self.rules.iter().zip(&mut self.suites).zip(&doc.results) {
            suite.tests += 1;
            let mut case = format!("    <testcase name=\"{name}\" classname=\"aigov.{}\" time=\"0\"", esc(&rule.name));
            let body = match result.outcome {
                Outcome::NotGoverned => {
                    suite.skipped += 1;
                    "      <skipped message=\"not governed by this rule\"/>\n".to_string()
                }
                Outcome::Pass => String::new(),
                Outcome::Mutate => {
                    format!("      <system-out>{}</system-out>\n", esc(&format!("changed by the rule:\n{}", result.changes().join("\n"))))
                }
                Outcome::Warn => format!("      <system-out>{}</system-out>\n", esc(&super::message(result))),
                Outcome::Deny => {
                    suite.failures += 1;
                    let violations = result.violations();
                    format!(
                        "      <failure type=\"denied\" message=\"{}\">{}</failure>\n",
                        esc(&format!("{} violation(s): {}", violations.len(), violations.first().unwrap_or(&""))),
                        esc(&violations.join("\n"))
                    )
                }
                Outcome::Error => {
                    suite.errors += 1;
                    format!("      <error type=\"error\" message=\"{}\"/>\n", esc(&super::message(result)))
                }
            };
            if body.is_empty() {
                case.push_str("/>\n");
            } else {
                let _ = write!(case, ">\n{body}    </testcase>\n");
            }
            suite.cases.write(case.as_bytes())?;
        }
        Ok(())
    }

    /// Writes the whole report.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let (tests, failures, errors) = self.suites.iter().fold((0, 0, 0), |(t, f, e), s| (t + s.tests, f + s.failures, e + s.errors));
        let (tests, errors) = (tests + self.errors.len(), errors + self.errors.len());
        write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"aigov scan\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0\">\n"
        )?;
        for (rule, suite) in self.rules.iter().zip(&mut self.suites) {
            writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"0\" version=\"{}\">",
                esc(&rule.name),
                suite.tests,
                suite.failures,
                suite.errors,
                suite.skipped,
                esc(&rule.version)
            )?;
            suite.cases.copy_to(out)?;
            out.write_all(b"  </testsuite>\n")?;
        }
        if !self.errors.is_empty() {
            let n = self.errors.len();
            writeln!(
                out,
                "  <testsuite name=\"{READ_SUITE}\" tests=\"{n}\" failures=\"0\" errors=\"{n}\" skipped=\"0\" time=\"0\" version=\"{}\">",
                env!("CARGO_PKG_VERSION")
            )?;
            for note in &self.errors {
                // Named after the file and, when the parser said, the
                // document that does not parse.
                let mut name = note.source.file.clone();
                if note.source.document > 0 {
                    let _ = write!(name, " #{}", note.source.document);
                }
                writeln!(
                    out,
                    "    <testcase name=\"{}\" classname=\"aigov.read\" time=\"0\">\n      <error type=\"unreadable\" message=\"{}\">{}</error>\n    </testcase>",
                    esc(&name),
                    esc(&note.reason),
                    esc(&note.reason)
                )?;
            }
            out.write_all(b"  </testsuite>\n")?;
        }
        out.write_all(b"</testsuites>\n")?;
        Ok(())
    }
}

/// A finished report as JUnit XML.
pub fn render(report: &Report) -> Result<String> {
    let mut w = Writer::new(report.rules.clone(), &Spill::memory)?;
    super::model::replay(report, &mut |item| w.add(item))?;
    let mut out = Vec::new();
    w.finish(&mut out)?;
    Ok(String::from_utf8(out)?)
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(esc("a<b>&\"c\"\n'\u{1}"), "a&lt;b&gt;&amp;&quot;c&quot;&#10;&apos;\u{fffd}");
    }
}
