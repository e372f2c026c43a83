//! The table report of `aigov scan`: a verdict table (a row per document
//! and, under it, the rules that did more than admit it; with `--wide`, a
//! column per rule), then what the rules said, document by document (each
//! violation a bullet, each change a diff line, wrapped to the width but
//! never inside a `code span`), what was not evaluated, and a summary line
//! that says what the exit status is.

use std::io::Write;

use anyhow::Result;

use super::model::{
    DocumentReport, FailOn, Form, Item, Note, Outcome, Report, RuleInfo, RuleResult, Summary, Tally, Unchecked, audit_lines, fails,
    nothing_checked, replay, violations,
};
use super::spill::Spill;

/// Width the message section is wrapped to.
pub const WRAP_WIDTH: usize = 100;

/// Splits text into words for wrapping, keeping `backtick spans` whole so a
/// field path or a value to copy is never broken across lines.
fn words(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_tick = false;
    for c in text.chars() {
        if c == '`' {
            in_tick = !in_tick;
        }
        if c.is_whitespace() && !in_tick {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    // A span too long for a line (or an unbalanced backtick) is split at
    // its spaces after all.
    out.into_iter()
        .flat_map(|w| {
            if w.chars().count() > width && w.contains(' ') {
                w.split(' ').filter(|p| !p.is_empty()).map(str::to_string).collect()
            } else {
                vec![w]
            }
        })
        .collect()
}

/// Wraps `text` to `width` columns; words longer than a line get a line of
/// their own.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(20);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in words(text, width) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Appends `text` as an indented bullet, wrapped.
fn bullet(out: &mut String, indent: usize, text: &str, width: usize) {
    let pad = " ".repeat(indent);
    for (i, line) in wrap(text, width.saturating_sub(indent + 2)).iter().enumerate() {
        let mark = if i == 0 { "- " } else { "  " };
        out.push_str(&format!("{pad}{mark}{line}\n"));
    }
}

/// Appends a diff line (`+ path: value`), wrapped, its continuation lines
/// indented under the path.
fn diff_line(out: &mut String, indent: usize, line: &str, width: usize) {
    let pad = " ".repeat(indent);
    let (mark, rest) = line.split_at(line.find(' ').map_or(0, |i| i + 1));
    for (i, l) in wrap(rest, width.saturating_sub(indent + 2)).iter().enumerate() {
        let m = if i == 0 { mark } else { "  " };
        out.push_str(&format!("{pad}{m}{l}\n"));
    }
}

/// The messages of one document under "What the rules said" (`i` is its
/// 0-based number in the report).
fn document_details(out: &mut String, i: usize, d: &DocumentReport, rules: &[RuleInfo], width: usize) {
    out.push_str(&format!("\n[{}] {} {}  ({})\n", i + 1, d.target.what(), d.target.object(), d.source));
    for (rule, r) in rules.iter().zip(&d.results) {
        if !r.has_details() {
            continue;
        }
        let about = if rule.description.is_empty() { String::new() } else { format!(" ({})", rule.description) };
        match (&r.response, &r.error) {
            (_, Some(error)) => {
                out.push_str(&format!("  ERROR {} could not evaluate it\n", rule.name));
                bullet(out, 4, error, width);
            }
            (Some(resp), None) => {
                let head = match r.outcome {
                    Outcome::Deny => "DENY ",
                    Outcome::Warn => "warn ",
                    Outcome::Mutate => "mutate ",
                    _ => "note ",
                };
                let count = match (r.violations().len(), r.changes().len()) {
                    (0, 0) => String::new(),
                    (0, 1) => ": 1 change".to_string(),
                    (0, n) => format!(": {n} changes"),
                    (1, _) => ": 1 violation".to_string(),
                    (n, _) => format!(": {n} violations"),
                };
                // The rule's description may be long: wrapped, as the
                // messages are.
                for (i, line) in wrap(&format!("{head}{}{about}{count}", rule.name), width.saturating_sub(4)).iter().enumerate() {
                    out.push_str(if i == 0 { "  " } else { "    " });
                    out.push_str(line);
                    out.push('\n');
                }
                if let Some(message) = resp.message.as_deref().filter(|_| !resp.accepted) {
                    let code = match resp.code {
                        Some(400) => " (the request is malformed, code 400)",
                        _ => "",
                    };
                    if !code.is_empty() {
                        out.push_str(&format!("    rejected{code}:\n"));
                    }
                    for v in violations(message) {
                        bullet(out, 4, v, width);
                    }
                }
                for w in &resp.warnings {
                    bullet(out, 4, &format!("warning: {w}"), width);
                }
                for change in r.changes() {
                    diff_line(out, 4, &change, width);
                }
                for (k, line) in audit_lines(resp) {
                    bullet(out, 4, &format!("audit annotation `{k}`: {line}"), width);
                }
                if !resp.accepted
                    && let Some(docs) = &rule.docs
                {
                    out.push_str(&format!("    docs (what it checks, how to comply, settings): {docs}\n"));
                }
            }
            (None, None) => {}
        }
    }
}

/// How the verdict table is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// A row per document with its verdict (the strictest of any rule's),
    /// and under it the rules that did more than admit it, by outcome: fits
    /// a terminal of 80 to 120 columns whatever the number of rules.
    #[default]
    Compact,
    /// A row per document and a column per rule (`--wide`): as wide as the
    /// rules' names, over 300 columns with twenty.
    Wide,
}

/// The outcomes the compact table names rules under, strictest first, with
/// the label it gives them.
const ACTING: [(Outcome, &str); 4] =
    [(Outcome::Error, "ERROR"), (Outcome::Deny, "DENY"), (Outcome::Warn, "warn"), (Outcome::Mutate, "mutate")];

/// The directory (ending in `/`) `a` and `b` both lie in, or `""`.
fn common_dir<'a>(a: &'a str, b: &str) -> &'a str {
    let same = a.char_indices().zip(b.chars()).take_while(|((_, x), y)| x == y).last().map_or(0, |((i, c), _)| i + c.len_utf8());
    a.get(..same).and_then(|p| p.rfind('/')).and_then(|i| a.get(..=i)).unwrap_or("")
}

/// The table report, written as the documents arrive: the rows (their
/// column widths known only at the end) and the messages go to a spill,
/// and [`Writer::finish`] writes the whole report.
pub struct Writer {
    form: Form,
    rules: Vec<RuleInfo>,
    files: usize,
    width: usize,
    layout: Layout,
    fail_on: FailOn,
    widths: Vec<usize>,
    rows: Spill,
    details: Spill,
    any_detailed: bool,
    any_mutate: bool,
    /// The directory every document's file lies in (compact layout: shown
    /// once, in the header).
    under: Option<String>,
    skipped: Vec<Note>,
    errors: Vec<Note>,
    tally: Tally,
    unchecked: Unchecked,
    /// Documents that name no namespace, judged in `default`.
    defaulted: usize,
}

impl Writer {
    /// A writer for a report of `rules` in `form` over `files` files, wrapped
    /// to `width`, its table laid out as `layout` says, its summary line
    /// saying what `fail_on` makes the exit status; what waits for the end
    /// goes to spills made by `spill`.
    pub fn new(
        form: Form,
        rules: Vec<RuleInfo>,
        files: usize,
        width: usize,
        layout: Layout,
        fail_on: FailOn,
        spill: &dyn Fn(&str) -> Result<Spill>,
    ) -> Result<Writer> {
        let header: Vec<String> = match layout {
            Layout::Compact => ["#", "VERDICT", "KIND", "NAMESPACE/NAME", "SOURCE"].map(String::from).to_vec(),
            Layout::Wide => {
                let mut header = vec!["#".to_string(), "KIND".to_string(), "NAMESPACE/NAME".to_string()];
                header.extend(rules.iter().map(|r| r.name.clone()));
                header.push("SOURCE".to_string());
                header
            }
        };
        let widths = header.iter().map(|c| c.chars().count()).collect();
        let mut rows = spill("rows")?;
        rows.write(serde_json::to_string(&(header, Vec::<String>::new()))?.as_bytes())?;
        rows.write(b"\n")?;
        Ok(Writer {
            form,
            rules,
            files,
            width,
            layout,
            fail_on,
            widths,
            rows,
            details: spill("details")?,
            any_detailed: false,
            any_mutate: false,
            under: None,
            skipped: Vec::new(),
            errors: Vec::new(),
            tally: Tally::default(),
            unchecked: Unchecked::default(),
            defaulted: 0,
        })
    }

    /// The lines under a document's row in the compact table: the rules
    /// that did more than admit it, by outcome, wrapped to the width.
    fn acting(&self, d: &DocumentReport) -> Vec<String> {
        let mut lines = Vec::new();
        for (outcome, label) in ACTING {
            let names: Vec<&str> =
                self.rules.iter().zip(&d.results).filter(|(_, r)| r.outcome == outcome).map(|(rule, _)| rule.name.as_str()).collect();
            if names.is_empty() {
                continue;
            }
            let head = format!("    {label:<7} ");
            let pad = " ".repeat(head.len());
            for (i, line) in wrap(&names.join(", "), self.width.saturating_sub(head.len())).into_iter().enumerate() {
                lines.push(format!("{}{line}", if i == 0 { &head } else { &pad }));
            }
        }
        lines
    }

    /// Takes the next item of the scan.
    pub fn add(&mut self, item: &Item) -> Result<()> {
        self.tally.add(item);
        self.unchecked.add(&self.rules, item);
        match item {
            Item::Document(d) => {
                let i = self.tally.0.documents - 1;
                let source = d.source.to_string();
                let (row, lines) = match self.layout {
                    Layout::Compact => {
                        self.under = Some(match &self.under {
                            None => common_dir(&d.source.file, &d.source.file).to_string(),
                            Some(under) => common_dir(under, &d.source.file).to_string(),
                        });
                        let row = vec![(i + 1).to_string(), d.outcome().cell().to_string(), d.target.what(), d.target.object(), source];
                        (row, self.acting(d))
                    }
                    Layout::Wide => {
                        let mut row = vec![(i + 1).to_string(), d.target.what(), d.target.object()];
                        row.extend(d.results.iter().map(|r| r.outcome.cell().to_string()));
                        row.push(source);
                        (row, Vec::new())
                    }
                };
                for (c, cell) in row.iter().enumerate() {
                    let n = cell.chars().count();
                    match self.widths.get_mut(c) {
                        Some(w) => *w = (*w).max(n),
                        None => self.widths.push(n),
                    }
                }
                self.rows.write(serde_json::to_string(&(row, lines))?.as_bytes())?;
                self.rows.write(b"\n")?;
                self.any_mutate |= d.results.iter().any(|r| r.outcome == Outcome::Mutate);
                if d.results.iter().any(RuleResult::has_details) {
                    self.any_detailed = true;
                    let mut text = String::new();
                    document_details(&mut text, i, d, &self.rules, self.width);
                    self.details.write(text.as_bytes())?;
                }
            }
            Item::Skipped(n) => self.skipped.push(n.clone()),
            Item::Error(n) => self.errors.push(n.clone()),
            Item::Overridden(_) => {}
            Item::Defaulted(_) => self.defaulted += 1,
        }
        Ok(())
    }

    /// Writes the whole report to `out`.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<()> {
        let s = self.tally.0;
        let form = match self.form {
            Form::Module => "Kubewarden modules",
            Form::Component => "components",
            Form::Native => "natively linked rules",
        };
        write!(out, "aigov scan: {} document(s) in {} file(s), {} rule(s) ({form})\n\n", s.documents, self.files, self.rules.len())?;
        if s.documents > 0 {
            // The compact table names the directory every file lies in
            // once, in the header, and each file below it.
            let under = self.under.take().unwrap_or_default();
            let last = self.widths.len().saturating_sub(1);
            let widths = self.widths.clone();
            for (n, line) in self.rows.lines()?.enumerate() {
                let line = line?;
                if line.is_empty() {
                    continue;
                }
                let (mut row, lines): (Vec<String>, Vec<String>) = serde_json::from_str(&line)?;
                if let Some(source) = row.get_mut(last) {
                    *source = match (n, source.strip_prefix(&under)) {
                        (0, _) if !under.is_empty() => format!("SOURCE (in {under})"),
                        (_, Some(rest)) => rest.to_string(),
                        _ => source.clone(),
                    };
                }
                let mut text = String::new();
                for (c, cell) in row.iter().enumerate() {
                    if c > 0 {
                        text.push_str("  ");
                    }
                    text.push_str(cell);
                    if c + 1 != row.len() {
                        let w = widths.get(c).copied().unwrap_or(0);
                        text.push_str(&" ".repeat(w.saturating_sub(cell.chars().count())));
                    }
                }
                out.write_all(text.trim_end().as_bytes())?;
                out.write_all(b"\n")?;
                for l in lines {
                    out.write_all(l.as_bytes())?;
                    out.write_all(b"\n")?;
                }
            }
            match self.layout {
                Layout::Compact => {
                    out.write_all(
                        b"\nVERDICT: the strictest rule's answer. DENY: rejected. ERROR: a rule could not evaluate it.\n\
warn: admitted with warnings. mutate: admitted with changes. pass: admitted. -: no rule governs it.\n\
Under each row, the rules that did more than admit it; --wide shows every rule in a column.\n",
                    )?;
                }
                Layout::Wide => {
                    out.write_all(
                        b"\npass: admitted   DENY: rejected   warn: admitted with warnings   -: the rule does not govern this kind or operation\n",
                    )?;
                    if self.any_mutate {
                        out.write_all(b"mutate: admitted with changes a mutating rule makes (shown below as a diff)\n")?;
                    }
                }
            }
        }
        if self.any_detailed {
            out.write_all(b"\nWhat the rules said\n-------------------\n")?;
            self.details.copy_to(out)?;
        }
        let mut text = String::new();
        if !self.skipped.is_empty() || !self.errors.is_empty() {
            text.push_str("\nNot evaluated\n-------------\n");
            for n in &self.errors {
                bullet(&mut text, 0, &format!("ERROR {}: {}", n.source, n.reason), self.width);
            }
            for n in &self.skipped {
                bullet(&mut text, 0, &format!("skipped {}: {}", n.source, n.reason), self.width);
            }
        }
        // Said once, above the summary: what the rules skipped for want
        // of a cluster to ask.
        if let Some(line) = self.unchecked.line() {
            text.push_str(&format!("\nNot {}\n", line.strip_prefix("not ").unwrap_or(&line)));
        }
        if let Some(line) = defaulted_line(self.defaulted) {
            text.push_str(&format!("\n{line}\n"));
        }
        text.push_str(&summary_line(&s, self.fail_on));
        out.write_all(text.as_bytes())?;
        Ok(())
    }
}

/// What a report says of the documents that name no namespace: they were
/// judged in `default`, as `kubectl apply` without `-n` creates them.
pub fn defaulted_line(documents: usize) -> Option<String> {
    (documents > 0).then(|| {
        format!(
            "{documents} document(s) name no namespace and were judged in `default`, where `kubectl apply` without `-n` creates them: \
             `--namespace NS` judges them as installed in NS"
        )
    })
}

/// The last line of the table report.
fn summary_line(s: &Summary, fail_on: FailOn) -> String {
    let mut parts = vec![match s.violations {
        0 => format!("{} denied", s.denied),
        1 => format!("{} denied (1 violation)", s.denied),
        n => format!("{} denied ({n} violations)", s.denied),
    }];
    if s.warned > 0 {
        parts.push(format!("{} admitted with warnings", s.warned));
    }
    if s.mutated > 0 {
        parts.push(format!("{} admitted with changes", s.mutated));
    }
    parts.push(format!("{} passed", s.passed));
    if s.errors > 0 {
        parts.push(format!("{} error(s)", s.errors));
    }
    if s.skipped > 0 {
        parts.push(format!("{} skipped", s.skipped));
    }
    let mut out = format!("\nSummary: {} document(s): {}.", s.documents, parts.join(", "));
    let gate = match (fails(s, fail_on), fail_on) {
        (true, _) if nothing_checked(s) => " No Kubernetes object to check: exit status 3 (point the scan at the manifests).",
        (true, _) => " Exit status 1 (`--fail-on none` reports without failing).",
        (_, FailOn::None) if s.denied + s.errors + s.warned > 0 => " Exit status 0 (`--fail-on none`).",
        _ => "",
    };
    out.push_str(gate);
    out.push('\n');
    out
}

/// The human report: the verdict table laid out as `layout` says, the
/// messages grouped by document, skipped documents, and a summary line that
/// says what the exit status will be.
pub fn render_table(report: &Report, width: usize, layout: Layout, fail_on: FailOn) -> String {
    let mut out = Vec::new();
    let written = Writer::new(report.form, report.rules.clone(), report.files, width, layout, fail_on, &Spill::memory).and_then(|mut w| {
        replay(report, &mut |item| w.add(item))?;
        w.finish(&mut out)
    });
    match written {
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(e) => format!("(the report could not be rendered: {e:#})\n"),
    }
}
