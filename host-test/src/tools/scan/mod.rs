//! Offline audit of manifests against the bundle: every object in every file
//! through every rule that governs it, as a verdict table.
//!
//! A document is what `kubectl apply` or the API server would hand the
//! webhook: a plain object becomes a `CREATE` by a default user (see
//! [`crate::run::admission`]); an AdmissionRequest or AdmissionReview is used as
//! is (that is how `CONNECT pods/exec` reaches a rule), but for its
//! `userInfo` when `--user` or `--group` is given ([`Identity`], shared with
//! `aigov eval`). Each rule sees the
//! request only if its metadata would make Kubernetes send it
//! ([`PolicyMetadata::governs`](aigov_sdk::runtime::metadata::PolicyMetadata::governs)),
//! exactly as the webhook configuration a platform team deploys would.
//!
//! A mutating rule that would change a document shows what it would change,
//! as a short diff (the JSON Patch from the document to the rule's patched
//! object, one line per operation); `mutate` in the table.
//!
//! Which rules: those the team's deployment turns on (`--settings` with a
//! policy file or the directory `aigov manifests` wrote), or `--rules`, or
//! every rule ([`crate::run::settings::select`]); the reports carry those
//! rules only.
//!
//! Directories are walked once each, whatever links lead back to them, and
//! a pipe, socket or device among the manifests is not read: both are
//! said on stderr and listed among the skipped (see [`read::collect_files`]).
//!
//! Exit status, for CI pipelines: 0 when nothing was denied, 1 when a rule
//! denied a document, failed to evaluate it, or a file could not be read
//! (`--fail-on warn` also fails on warnings, `--fail-on none` never
//! fails), 2 when the scan itself could not run (missing artifacts, bad
//! settings, a path that does not exist), 3 when there was nothing to
//! check (no Kubernetes object in what it read). Files that could not be
//! read are named on stderr too, whatever the format, so a CI log says why
//! a report written to a file failed the job.
//!
//! In three parts: [`read`] reads the documents, [`evaluate`] evaluates
//! them, and the report model and writers in [`crate::tools::report`] write
//! what the rules said; this module is the command, which puts them
//! together.

pub mod evaluate;
pub mod read;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::run::admission::Identity;
use crate::run::cluster::FixtureCluster;
use crate::tools::report::model::{FailOn, Item, Note, Source, Summary, Tally, Unchecked, exit_code, nothing_checked};
use crate::tools::report::spill::Spill;
use crate::tools::report::table::{Layout, WRAP_WIDTH, defaulted_line};
use crate::tools::report::{json, junit, policyreport, sarif, table};
use evaluate::{Config, EvaluatorArgs, Scanner};

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// A verdict table, then every message grouped by document.
    #[default]
    Table,
    /// A machine-readable report.
    Json,
    /// `wgpolicyk8s.io/v1alpha2` PolicyReports (one per namespace) and a
    /// ClusterPolicyReport, as Kubewarden's audit scanner and Kyverno write.
    Policyreport,
    /// `openreports.io/v1alpha1` Reports (one per namespace) and a
    /// ClusterReport, as Kubewarden's audit scanner and Kyverno now write by
    /// default.
    Openreports,
    /// JUnit XML: a test suite per rule, a test case per document.
    Junit,
    /// SARIF 2.1.0, each violation at the line and column of its field.
    Sarif,
}

/// Arguments of `aigov scan`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every document in every file (directories are searched for .yaml, .yml and .json, each directory once \
however many links lead to it, and a pipe, socket or device among them is not read: both are named on \
stderr; `-` reads stdin, and so does a named pipe given as a path, such as `<(helm template chart)`) \
goes through every rule whose webhook rules match it. Which rules: those your deployment turns on \
(`--settings` with the bundle's policy file, or the directory `aigov manifests` wrote), or \
`--rules a,b`, or every rule (trusted-sources, which has no safe default, then needs its settings); \
the reports carry those rules only. Plain objects are submitted as CREATE by a default user, in \
their namespace (else --namespace, else `default`, which the report says); AdmissionRequest and \
AdmissionReview documents are used as they are, except that --user and --group replace their \
`userInfo` (reported on stderr).

A rejection's message holds one violation per line; the table shows each as a bullet and counts \
them, and the JSON report lists them under `violations` (and totals them in `summary`).

Exit status: 0 if nothing was denied; 1 if a rule denied a document, could not evaluate it, or a \
file could not be parsed (see --fail-on); 2 if the scan could not run (bad settings, a path that \
does not exist, missing artifacts); 3 if there was nothing to check (no Kubernetes object found). \
In CI:

    aigov scan k8s/ --settings deploy/aigov/bundle/cluster-admission-policy.yaml   # fails the job when your cluster would reject a manifest
    helm template chart | aigov scan - --namespace team-nlp --rules gpu-runtime-class   # a rendered chart, from stdin")]
pub struct Args {
    /// Files or directories of manifests (YAML or JSON, multi-document); `-` for stdin.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Which rules evaluate, and with which settings.
    #[command(flatten)]
    pub evaluator: EvaluatorArgs,
    /// Directory (or file) of YAML/JSON objects served to cluster lookups
    /// (e.g. the pods `kubectl exec` targets). Not scanned itself. Without
    /// it, what rules would look up is not checked, and the scan says what.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// What makes the exit status 1.
    #[arg(long, value_enum, default_value_t = FailOn::Deny)]
    pub fail_on: FailOn,
    /// The table with a column per rule (as wide as twenty rule names),
    /// instead of the rules that act on each document under its row.
    #[arg(long)]
    pub wide: bool,
    /// Submit as this user (plain objects; replaces `userInfo.username` of
    /// AdmissionRequests and AdmissionReviews).
    #[arg(long)]
    pub user: Option<String>,
    /// Submit with these groups (repeatable; replaces `userInfo.groups` of
    /// AdmissionRequests and AdmissionReviews).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// The namespace of plain objects that name none, as `kubectl apply -n`
    /// installs them (default: `default`, which the report then says).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Workers evaluating documents (default: one per core). The output
    /// is the same whatever the number.
    #[arg(long, short = 'j', default_value_t = 0, hide_default_value = true)]
    pub jobs: usize,
}

/// Runs `aigov scan`, writing the report to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let (config, selection) = args.evaluator.config()?;
    let config = Config {
        paths: args.paths.clone(),
        cluster: args.cluster.clone(),
        identity: Identity { user: args.user.clone(), groups: args.groups.clone() },
        namespace: args.namespace.clone(),
        jobs: args.jobs,
        ..config
    };
    for note in selection.notes() {
        let _ = writeln!(std::io::stderr().lock(), "aigov scan: {note}");
    }
    let cluster = Arc::new(match &config.cluster {
        Some(dir) => FixtureCluster::from_dir(dir).with_context(|| format!("loading the cluster fixtures in {}", dir.display()))?,
        // No cluster to ask: lookups are not checked (and said so), not
        // answered as if nothing existed.
        None => FixtureCluster::offline(),
    });
    let scanner = Scanner::new(&config, cluster)?;
    let layout = if args.wide { Layout::Wide } else { Layout::Compact };
    let mut out = std::io::BufWriter::with_capacity(64 << 10, out);
    let written = write_report(&scanner, args.format, args.fail_on, layout, &mut out)?;
    out.flush()?;
    let mut err = std::io::stderr().lock();
    // What the walk left alone, whatever the format: a pipe or a link loop
    // in a manifest folder is worth a look (the table and JSON list them
    // among the skipped, too).
    for left in scanner.left() {
        let _ = writeln!(err, "aigov scan: skipped {}: {}", left.path.display(), left.reason);
    }
    if !written.overridden.is_empty() {
        let _ = writeln!(
            err,
            "aigov scan: {} applied to {} AdmissionRequest/AdmissionReview document(s) used verbatim: {}",
            config.identity.flags(),
            written.overridden.len(),
            written.overridden.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    // The table lists them itself; the other formats go to a file or a
    // tool, and the job's log must still say why it failed.
    if args.format != Format::Table {
        for note in &written.unreadable {
            let _ = writeln!(err, "aigov scan: {} could not be read: {}", note.source.file, note.reason);
        }
    }
    // Said once: what the rules skipped for want of a cluster to ask (the
    // table says it above its summary; the other formats go to a file or a
    // tool, each rule's `notChecked` in JSON).
    if let Some(line) = written.unchecked.line().filter(|_| args.format != Format::Table) {
        let _ = writeln!(err, "aigov scan: {line}");
    }
    if let Some(line) = defaulted_line(written.defaulted).filter(|_| args.format != Format::Table) {
        let _ = writeln!(err, "aigov scan: {line}");
    }
    if nothing_checked(&written.summary) {
        let _ = writeln!(
            err,
            "aigov scan: no Kubernetes object to check in {} ({} file(s) read, {} document(s) skipped as not Kubernetes objects): \
             point the scan at the manifests{}",
            args.paths.iter().map(|p| read::shown(p)).collect::<Vec<_>>().join(", "),
            scanner.files(),
            written.summary.skipped.saturating_sub(scanner.left().len()),
            if args.fail_on == FailOn::None { " (exit status 0: `--fail-on none`)" } else { " (exit status 3)" }
        );
    }
    Ok(ExitCode::from(exit_code(&written.summary, args.fail_on)))
}

/// What a scan wrote a report of, beside the report.
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// The counts.
    pub summary: Summary,
    /// The verbatim requests whose `userInfo` `--user`/`--group` replaced.
    pub overridden: Vec<Source>,
    /// The files that could not be read or parsed.
    pub unreadable: Vec<Note>,
    /// What rules could not check without a cluster to ask.
    pub unchecked: Unchecked,
    /// Documents that name no namespace, judged in `default`.
    pub defaulted: usize,
}

/// Runs a scan and writes its report in `format` (a table laid out as
/// `layout` says) to `out` as it goes: memory does not grow with the number
/// of documents (what must wait for the end waits in temporary files).
pub fn write_report(scanner: &Scanner, format: Format, fail_on: FailOn, layout: Layout, out: &mut dyn Write) -> Result<Written> {
    let mut written = Written::default();
    let summary = match format {
        // Written as the documents are decided: memory does not grow with
        // their number.
        Format::Table => {
            let mut w = table::Writer::new(scanner.form(), scanner.rules(), scanner.files(), WRAP_WIDTH, layout, fail_on, &Spill::file)?;
            let s = stream(scanner, &mut written, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Json => {
            let mut w = json::Writer::new(out, scanner.form(), scanner.rules(), scanner.files());
            let s = stream(scanner, &mut written, &mut |item| w.add(item))?;
            w.finish()?;
            s
        }
        // Grouped by rule (JUnit) or namespace (PolicyReport), or with a
        // header that depends on every result (SARIF's invocation): written
        // as they arrive to spills, each group or the results whole at the end.
        Format::Junit => {
            let mut w = junit::Writer::new(scanner.rules(), &Spill::file)?;
            let s = stream(scanner, &mut written, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Sarif => {
            let mut w = sarif::Writer::new(scanner.rules(), &Spill::file)?;
            let s = stream(scanner, &mut written, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
        Format::Policyreport | Format::Openreports => {
            let flavour =
                if format == Format::Openreports { policyreport::Flavour::OpenReports } else { policyreport::Flavour::PolicyReport };
            let mut w = policyreport::Writer::new(scanner.rules(), chrono::Utc::now(), &Spill::file).flavour(flavour);
            let s = stream(scanner, &mut written, &mut |item| w.add(item))?;
            w.finish(out)?;
            s
        }
    };
    written.summary = summary;
    Ok(written)
}

/// Runs `scanner`, handing each item to `add`, noting in `written` the
/// verbatim requests `--user`/`--group` replaced, the files that could not
/// be read and what rules could not check without a cluster; returns the
/// counts.
fn stream(scanner: &Scanner, written: &mut Written, add: &mut dyn FnMut(&Item) -> Result<()>) -> Result<Summary> {
    let mut tally = Tally::default();
    let rules = scanner.rules();
    scanner.run(&mut |_, _| {}, &mut |item| {
        tally.add(&item);
        written.unchecked.add(&rules, &item);
        match &item {
            Item::Overridden(s) => written.overridden.push(s.clone()),
            Item::Error(n) => written.unreadable.push(n.clone()),
            Item::Defaulted(_) => written.defaulted += 1,
            Item::Document(_) | Item::Skipped(_) => {}
        }
        add(&item)
    })?;
    Ok(tally.0)
}
