//! JUnit XML: a test suite per rule, a test case per document the rule
//! governs (documents it does not govern are listed as skipped), a rejection
//! a `<failure>` carrying every violation, a rule that could not run an
//! `<error>`, warnings in `<system-out>`. Valid against the Jenkins/Surefire
//! `junit-10.xsd` that CI systems read.

use std::fmt::Write as _;

use crate::tools::scan::{Outcome, Report};

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

/// The report as JUnit XML.
pub fn render(report: &Report) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut errors) = (0usize, 0usize, 0usize);
    for (r, rule) in report.rules.iter().enumerate() {
        let (mut t, mut f, mut e, mut s) = (0usize, 0usize, 0usize, 0usize);
        let mut cases = String::new();
        for doc in &report.documents {
            let Some(result) = doc.results.get(r) else { continue };
            t += 1;
            let name = esc(&format!("{}: {} {}", doc.source, doc.target.what(), doc.target.object()));
            let _ = write!(cases, "    <testcase name=\"{name}\" classname=\"aigov.{}\" time=\"0\"", esc(&rule.name));
            let body = match result.outcome {
                Outcome::NotGoverned => {
                    s += 1;
                    "      <skipped message=\"not governed by this rule\"/>\n".to_string()
                }
                Outcome::Pass => String::new(),
                Outcome::Mutate => format!("      <system-out>{}</system-out>\n", esc(&format!("changed by the rule:\n{}", result.changes().join("\n")))),
                Outcome::Warn => format!("      <system-out>{}</system-out>\n", esc(&super::message(result))),
                Outcome::Deny => {
                    f += 1;
                    let violations = result.violations();
                    format!(
                        "      <failure type=\"denied\" message=\"{}\">{}</failure>\n",
                        esc(&format!("{} violation(s): {}", violations.len(), violations.first().unwrap_or(&""))),
                        esc(&violations.join("\n"))
                    )
                }
                Outcome::Error => {
                    e += 1;
                    format!("      <error type=\"error\" message=\"{}\"/>\n", esc(&super::message(result)))
                }
            };
            if body.is_empty() {
                cases.push_str("/>\n");
            } else {
                let _ = write!(cases, ">\n{body}    </testcase>\n");
            }
        }
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{t}\" failures=\"{f}\" errors=\"{e}\" skipped=\"{s}\" time=\"0\" version=\"{}\">\n{cases}  </testsuite>\n",
            esc(&rule.name),
            esc(&rule.version)
        );
        tests += t;
        failures += f;
        errors += e;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"aigov scan\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"0\">\n{suites}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(esc("a<b>&\"c\"\n'\u{1}"), "a&lt;b&gt;&amp;&quot;c&quot;&#10;&apos;\u{fffd}");
    }
}
