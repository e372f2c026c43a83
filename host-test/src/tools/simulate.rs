//! `aigov simulate`: what breaks if I enforce? Reads what `kubectl get
//! <kinds> -A -o json` writes (a `List`, or a directory of them), submits
//! every object as the CREATE that made it (as Kubewarden's audit scanner
//! does; [`Running`]: what the scheduler and the API server set after
//! admission left out, a controller's objects judged through their
//! controller), answers the rules' cluster lookups from the same dump, and
//! reports per rule and per namespace how many workloads would be denied
//! if the rule were enforced, the most common reasons, and where each rule
//! can be enforced today without breaking anything.
//!
//! The rules are those the team's deployment turns on (or `--rules`, or
//! every rule), with their settings but enforced: a finding that `mode:
//! audit` or `auditNamespaces` only reports today is a would-be denial,
//! and the report says how many of them are audited today. Objects in the
//! namespaces the policies never see (`--exclude-namespaces`, or the
//! deployment's `namespaceSelector`) are left out, as the webhook leaves
//! them.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use aigov_sdk::base::glob::{Glob, any_match};
use aigov_sdk::base::text::count;

use crate::run::admission::Identity;
use crate::run::cluster::FixtureCluster;
use crate::tools::report::model::{Outcome, Report, Summary};
use crate::tools::scan::evaluate::{Config, EvaluatorArgs, Running, scan_with};

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Tables for a terminal.
    #[default]
    Table,
    /// Markdown, for a pull request or a wiki page.
    Markdown,
    /// Machine-readable.
    Json,
}

/// Arguments of `aigov simulate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Take the dump with, for example:

    kubectl get pods,replicasets,deployments,statefulsets,daemonsets,jobs,cronjobs,rayclusters,rayjobs,namespaces,resourcequotas -A -o json > dump.json
    aigov simulate --cluster dump.json --settings deploy/aigov/bundle/cluster-admission-policy.yaml --format markdown > rollout.md

The rules are those your deployment turns on (--settings with its policy file or directory), or \
--rules, or every rule; each is judged as if enforced (`mode: audit` and `auditNamespaces` set \
aside: what they audit today counts as would-be denials, and the report says how many). Objects \
are judged as the CREATE that made them: what the scheduler and the API server set afterwards \
(`status`, `spec.nodeName`, ...) left out, a pod whose controller the dump holds judged through \
it. Namespaces, quotas and running pods in the dump answer the rules' cluster lookups. Exit \
status 0 whatever the verdicts (this is a report); 2 if the simulation could not run.")]
pub struct Args {
    /// The dump: a file (a `List` or several documents) or a directory of them.
    #[arg(long)]
    pub cluster: PathBuf,
    /// Which rules evaluate, and with which settings.
    #[command(flatten)]
    pub evaluator: EvaluatorArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// How many of the most common reasons to show per rule.
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Namespaces the policies never receive requests from (comma-separated;
    /// default: the deployment's `namespaceSelector`, else those `aigov
    /// manifests` excludes, kube-system and kubewarden).
    #[arg(long, value_delimiter = ',', value_name = "NS,...")]
    pub exclude_namespaces: Option<Vec<String>>,
    /// Write to FILE the exceptions that would excuse every would-be denial
    /// until --until: a YAML `exceptions:` list, each entry scoped to one
    /// rule, its namespace and, where the objects carry a stable
    /// `app.kubernetes.io/name`, their labels. Give the file to each rule
    /// (`--settings RULE=FILE`), or add its entries to each rule's settings.
    #[arg(long, value_name = "FILE", requires = "until")]
    pub write_exceptions: Option<PathBuf>,
    /// When the exceptions --write-exceptions writes end: a date
    /// (`2027-03-01`, its first instant in UTC) or an RFC 3339 date-time.
    #[arg(long, value_name = "DATE", requires = "write_exceptions")]
    pub until: Option<String>,
    /// The reason the exceptions --write-exceptions writes give.
    #[arg(long, value_name = "TEXT", default_value = "ran before the rule was enforced (aigov simulate); fix by the date")]
    pub reason: String,
}

/// Counts for one rule, in one namespace or in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Objects the rule governs.
    pub governed: usize,
    /// Would be denied if the rule were enforced.
    pub denied: usize,
    /// Of those, how many today's settings only audit (`mode: audit`,
    /// `auditNamespaces`, or the policy's monitor mode).
    pub audited: usize,
    /// Admitted with warnings.
    pub warned: usize,
    /// The rule could not evaluate them.
    pub errors: usize,
    /// Admitted with changes (mutating rules).
    pub mutated: usize,
}

impl Counts {
    fn add(&mut self, outcome: Outcome, audited: bool) {
        match outcome {
            Outcome::NotGoverned => return,
            Outcome::Deny => {
                self.denied += 1;
                self.audited += usize::from(audited);
            }
            Outcome::Warn => self.warned += 1,
            Outcome::Error => self.errors += 1,
            Outcome::Pass => {}
            Outcome::Mutate => self.mutated += 1,
        }
        self.governed += 1;
    }

    /// Enforcing breaks nothing: nothing denied and nothing in error.
    pub fn clean(&self) -> bool {
        self.denied == 0 && self.errors == 0
    }
}

/// One rule's impact.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleImpact {
    /// The rule.
    pub rule: String,
    /// Over every namespace.
    pub total: Counts,
    /// Per namespace (`(cluster)` for cluster-scoped objects).
    pub namespaces: BTreeMap<String, Counts>,
    /// Reasons, most common first: the violation with names and numbers
    /// left out, how often, and one example in full.
    pub reasons: Vec<(String, usize, String)>,
}

/// The simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Simulation {
    /// Objects evaluated.
    pub objects: usize,
    /// Every namespace with an object.
    pub namespaces: Vec<String>,
    /// Per rule, in the report's order.
    pub rules: Vec<RuleImpact>,
    /// The scan's totals over documents (denied by any rule, and so on).
    pub summary: Summary,
    /// Objects judged through their controller, which the dump holds.
    pub through_controllers: usize,
    /// Objects left out: in a namespace the policies never see.
    pub excluded: usize,
}

/// What a rule's settings audit today: `mode: audit` everywhere, or the
/// namespaces `auditNamespaces` lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Audited {
    /// `mode: audit`.
    pub everywhere: bool,
    /// `auditNamespaces`.
    pub namespaces: Vec<Glob>,
}

impl Audited {
    /// From a rule's settings (JSON).
    pub fn of(settings: &Value) -> Audited {
        Audited {
            everywhere: settings.get("mode").and_then(Value::as_str) == Some("audit"),
            namespaces: settings
                .get("auditNamespaces")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|g| Glob::new(g.to_string()))
                .collect(),
        }
    }

    fn covers(&self, namespace: Option<&str>) -> bool {
        self.everywhere || namespace.is_some_and(|ns| any_match(&self.namespaces, ns))
    }
}

/// Settings as the rule would run enforced: without `mode: audit` and
/// `auditNamespaces`.
pub fn enforced(settings: &Value) -> Value {
    let mut out = settings.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("mode");
        map.remove("auditNamespaces");
    }
    out
}

/// A violation's shape, to count alike reasons together: backquoted values
/// that are not field paths become `…`, and so do numbers.
pub fn reason_shape(violation: &str) -> String {
    let mut out = String::new();
    for (i, part) in violation.split('`').enumerate() {
        if i % 2 == 1 {
            out.push('`');
            if crate::tools::report::position::field_path(&format!("`{part}`")).is_some() {
                out.push_str(&part.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect::<String>());
            } else {
                out.push('…');
            }
            out.push('`');
        } else {
            let mut last_digit = false;
            for c in part.chars() {
                if c.is_ascii_digit() {
                    if !last_digit {
                        out.push('#');
                    }
                    last_digit = true;
                } else {
                    out.push(c);
                    last_digit = false;
                }
            }
        }
    }
    out
}

const CLUSTER_SCOPED: &str = "(cluster)";

/// Sums a scan's report into a simulation (`audited`: what each rule's
/// settings audit today, by rule name).
pub fn simulate(report: &Report, audited: &BTreeMap<String, Audited>) -> Simulation {
    let mut namespaces: Vec<String> =
        report.documents.iter().map(|d| d.target.namespace.clone().unwrap_or_else(|| CLUSTER_SCOPED.into())).collect();
    namespaces.sort();
    namespaces.dedup();
    let rules = report
        .rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let mut impact = RuleImpact { rule: rule.name.clone(), ..RuleImpact::default() };
            let mut reasons: BTreeMap<String, (usize, String)> = BTreeMap::new();
            for doc in &report.documents {
                let Some(result) = doc.results.get(i) else { continue };
                let ns = doc.target.namespace.clone().unwrap_or_else(|| CLUSTER_SCOPED.into());
                let today = audited.get(&rule.name).is_some_and(|a| a.covers(doc.target.namespace.as_deref()));
                impact.total.add(result.outcome, today);
                if result.outcome != Outcome::NotGoverned {
                    impact.namespaces.entry(ns).or_default().add(result.outcome, today);
                }
                let lines: Vec<String> = match result.outcome {
                    Outcome::Deny => result.violations().into_iter().map(str::to_string).collect(),
                    Outcome::Warn => result.response.iter().flat_map(|r| r.warnings.clone()).collect(),
                    Outcome::Error => result.error.iter().cloned().collect(),
                    _ => Vec::new(),
                };
                for line in lines {
                    let e = reasons.entry(reason_shape(&line)).or_insert_with(|| (0, line.clone()));
                    e.0 += 1;
                }
            }
            let mut reasons: Vec<(String, usize, String)> = reasons.into_iter().map(|(k, (n, ex))| (k, n, ex)).collect();
            reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            impact.reasons = reasons;
            impact
        })
        .collect();
    let skipped = |prefix: &str| report.skipped.iter().filter(|n| n.reason.starts_with(prefix)).count();
    Simulation {
        objects: report.documents.len(),
        namespaces,
        rules,
        summary: report.summary(),
        through_controllers: skipped("judged through its controller"),
        excluded: skipped("in namespace"),
    }
}

impl RuleImpact {
    /// Namespaces with objects the rule governs, and none denied.
    pub fn ready(&self) -> Vec<&str> {
        self.namespaces.iter().filter(|(_, c)| c.clean()).map(|(n, _)| n.as_str()).collect()
    }

    /// Namespaces where enforcing would deny something.
    pub fn blocked(&self) -> Vec<&str> {
        self.namespaces.iter().filter(|(_, c)| !c.clean()).map(|(n, _)| n.as_str()).collect()
    }
}

/// The simulation as JSON.
pub fn to_json(s: &Simulation, top: usize) -> Value {
    let counts = |c: &Counts| json!({"governed": c.governed, "denied": c.denied, "audited": c.audited, "warned": c.warned, "mutated": c.mutated, "errors": c.errors});
    json!({
        "objects": s.objects,
        "throughControllers": s.through_controllers,
        "excluded": s.excluded,
        "namespaces": s.namespaces,
        "summary": {
            "documents": s.summary.documents, "denied": s.summary.denied, "warned": s.summary.warned,
            "passed": s.summary.passed, "mutated": s.summary.mutated, "errors": s.summary.errors, "skipped": s.summary.skipped,
        },
        "rules": s.rules.iter().map(|r| (r.rule.clone(), json!({
            "total": counts(&r.total),
            "namespaces": r.namespaces.iter().map(|(n, c)| (n.clone(), counts(c))).collect::<serde_json::Map<_, _>>(),
            "enforceableIn": r.ready(),
            "wouldBreakIn": r.blocked(),
            "reasons": r.reasons.iter().take(top).map(|(shape, n, ex)| json!({"reason": shape, "count": n, "example": ex})).collect::<Vec<_>>(),
        }))).collect::<serde_json::Map<_, _>>(),
    })
}

fn cell(c: Option<&Counts>) -> String {
    match c {
        None => "-".into(),
        Some(c) if c.governed == 0 => "-".into(),
        Some(c) if c.errors > 0 => format!("{} denied, {} errors", c.denied, c.errors),
        Some(c) if c.audited > 0 => format!("{} ({} audited)/{}", c.denied, c.audited, c.warned),
        Some(c) => format!("{}/{}", c.denied, c.warned),
    }
}

/// The simulation as tables (`markdown` selects Markdown tables).
pub fn render(s: &Simulation, top: usize, markdown: bool) -> String {
    let mut out = String::new();
    let table = |rows: Vec<Vec<String>>| -> String {
        if markdown {
            let mut t = String::new();
            for (i, row) in rows.iter().enumerate() {
                t.push_str(&format!("| {} |\n", row.join(" | ")));
                if i == 0 {
                    t.push_str(&format!("|{}\n", row.iter().map(|_| "---|").collect::<String>()));
                }
            }
            t
        } else {
            let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
                .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|x| x.chars().count()).max().unwrap_or(0))
                .collect();
            rows.iter()
                .map(|r| {
                    let line: Vec<String> = r.iter().zip(&widths).map(|(x, w)| format!("{x:<w$}")).collect();
                    format!("  {}\n", line.join("  ").trim_end())
                })
                .collect()
        }
    };
    let h = |title: &str| if markdown { format!("\n## {title}\n\n") } else { format!("\n{title}\n") };
    out.push_str(&format!(
        "{}aigov simulate: {} in {}; if every rule were enforced, {} would be denied, {} admitted with warnings, {} changed by mutating rules, {} pass{}\n",
        if markdown { "# " } else { "" },
        count(s.objects as u64, "object"),
        count(s.namespaces.len() as u64, "namespace"),
        s.summary.denied,
        s.summary.warned,
        s.summary.mutated,
        s.summary.passed,
        if s.summary.errors > 0 { format!(", {} could not be evaluated", s.summary.errors) } else { String::new() }
    ));
    let audited: usize = s.rules.iter().map(|r| r.total.audited).sum();
    let mut also = Vec::new();
    if audited > 0 {
        also.push(format!("{audited} of the would-be denials are only audited today (`mode: audit`, `auditNamespaces`, or monitor mode)"));
    }
    if s.through_controllers > 0 {
        let were = if s.through_controllers == 1 { "was" } else { "were" };
        also.push(format!(
            "{} {were} judged through their controller, which the dump holds",
            count(s.through_controllers as u64, "object")
        ));
    }
    if s.excluded > 0 {
        also.push(format!("{} left out: in namespaces the policies never see", count(s.excluded as u64, "object")));
    }
    if !also.is_empty() {
        out.push_str(&format!("{}{}\n", if markdown { "\n" } else { "" }, also.join("; ")));
    }
    out.push_str(&h("Per rule"));
    let mut rows = vec![vec![
        "rule".into(),
        "governed".into(),
        "would deny".into(),
        "audited today".into(),
        "warned".into(),
        "enforceable today in".into(),
    ]];
    for r in &s.rules {
        let ready = r.ready();
        rows.push(vec![
            r.rule.clone(),
            r.total.governed.to_string(),
            r.total.denied.to_string(),
            r.total.audited.to_string(),
            r.total.warned.to_string(),
            if r.total.governed == 0 {
                "(governs nothing here)".into()
            } else {
                format!("{} of {} namespaces", ready.len(), r.namespaces.len())
            },
        ]);
    }
    out.push_str(&table(rows));
    out.push_str(&h("Most common reasons"));
    for r in s.rules.iter().filter(|r| !r.reasons.is_empty()) {
        out.push_str(&if markdown { format!("\n**{}**\n\n", r.rule) } else { format!("  {}\n", r.rule) });
        for (_, n, example) in r.reasons.iter().take(top) {
            out.push_str(&if markdown { format!("- {n} x {example}\n") } else { format!("    {n:>6} x {example}\n") });
        }
    }
    out.push_str(&h("Per namespace (would deny/warned)"));
    let mut header = vec!["namespace".to_string()];
    header.extend(s.rules.iter().map(|r| r.rule.clone()));
    let mut rows = vec![header];
    for ns in &s.namespaces {
        let mut row = vec![ns.clone()];
        row.extend(s.rules.iter().map(|r| cell(r.namespaces.get(ns))));
        rows.push(row);
    }
    out.push_str(&table(rows));
    out.push_str(&h("Phased rollout"));
    let mut step = 0;
    for r in s.rules.iter().filter(|r| r.total.governed > 0) {
        step += 1;
        let ready = r.ready();
        let blocked = r.blocked();
        let line = if blocked.is_empty() {
            format!("{step}. `{}`: enforce everywhere now; nothing running would be denied", r.rule)
        } else if ready.is_empty() && r.total.audited == r.total.denied {
            format!(
                "{step}. `{}`: keep auditing; {} it audits today would be denied if enforced, in {}: fix them before enforcing",
                r.rule,
                count((r.total.denied + r.total.errors) as u64, "object"),
                blocked.join(", ")
            )
        } else if ready.is_empty() {
            format!(
                "{step}. `{}`: audit first, `mode: audit` in its settings (or the policy's `spec.mode: monitor`); {} would be denied in {}",
                r.rule,
                count((r.total.denied + r.total.errors) as u64, "object"),
                blocked.join(", ")
            )
        } else {
            format!(
                "{step}. `{}`: enforce now in {}, with `auditNamespaces: [{}]` in its settings until their workloads are fixed",
                r.rule,
                ready.join(", "),
                blocked.iter().map(|ns| aigov_sdk::base::text::yaml_value(ns)).collect::<Vec<_>>().join(", ")
            )
        };
        out.push_str(&if markdown { format!("{line}\n") } else { format!("  {line}\n") });
    }
    out
}

/// A progress bar on stderr when it is a terminal; nothing otherwise.
fn progress_bar() -> impl FnMut(usize, usize) {
    let on = std::io::stderr().is_terminal();
    move |done: usize, total: usize| {
        if !on || total == 0 {
            return;
        }
        let width = 40;
        let filled = done * width / total;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r  [{}{}] {done}/{total} objects", "#".repeat(filled), " ".repeat(width - filled));
        if done >= total {
            let _ = write!(err, "\r{}\r", " ".repeat(width + 32));
        }
        let _ = err.flush();
    }
}

/// Loads a dump as the cluster the lookups see.
pub fn load_cluster(path: &std::path::Path) -> Result<FixtureCluster> {
    if path.is_dir() {
        return FixtureCluster::from_dir(path);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    FixtureCluster::from_objects(crate::run::admission::parse_documents(&text).with_context(|| format!("parsing {}", path.display()))?)
}

/// Every object of a dump (a file or a directory), as [`load_cluster`]
/// reads it, `List`s expanded.
fn dump_objects(path: &std::path::Path) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for file in crate::tools::scan::read::collect_files(&[path.to_path_buf()], None)?.files {
        let (name, text) = crate::tools::scan::read::read_file(&file)?;
        out.extend(crate::tools::scan::read::documents(&name, &text)?.into_iter().map(|i| i.value));
    }
    Ok(out)
}

/// Runs `aigov simulate`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<std::process::ExitCode> {
    if let Some(until) = &args.until
        && aigov_sdk::runtime::exceptions::until_seconds(until).is_none()
    {
        anyhow::bail!("--until `{until}` is not a date (`2027-03-01`) or an RFC 3339 date-time (`2027-03-01T00:00:00Z`)");
    }
    let (config, selection) = args.evaluator.config()?;
    // Monitor mode is not said apart: simulate judges every rule enforced,
    // and counts what monitor mode lets through among the audited.
    if let Some(note) = selection.chosen() {
        let _ = writeln!(std::io::stderr().lock(), "aigov simulate: {note}");
    }
    // Each rule enforced, with what its settings audit today kept aside.
    let mut audited = BTreeMap::new();
    let mut settings = config.settings.clone();
    for (rule, json) in &selection.rules {
        let value: Value = serde_json::from_str(json)?;
        audited.insert(rule.metadata.name.to_string(), Audited::of(&value));
        if let Some(given) = settings.get_mut(rule.metadata.name) {
            given.json = enforced(&value).to_string();
        }
    }
    let excluded = match (&args.exclude_namespaces, &selection.excluded) {
        (Some(flag), _) => flag.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
        (None, Some(deployed)) => deployed.clone(),
        (None, None) => crate::dist::package::DEFAULT_EXCLUDED_NAMESPACES.iter().map(|n| n.to_string()).collect(),
    };
    let objects = dump_objects(&args.cluster).with_context(|| format!("loading the dump {}", args.cluster.display()))?;
    let labels = args.write_exceptions.is_some().then(|| stable_labels(&objects));
    let config = Config {
        paths: vec![args.cluster.clone()],
        cluster: None,
        identity: Identity::default(),
        settings,
        excluded_namespaces: excluded,
        running: Some(Arc::new(Running::of(&objects))),
        ..config
    };
    let cluster = Arc::new(FixtureCluster::from_objects(objects).with_context(|| format!("loading the dump {}", args.cluster.display()))?);
    let report = scan_with(&config, cluster, &mut progress_bar())?;
    for e in &report.errors {
        let _ = writeln!(std::io::stderr().lock(), "aigov simulate: {}: {}", e.source, e.reason);
    }
    let s = simulate(&report, &audited);
    if let (Some(path), Some(until), Some(labels)) = (&args.write_exceptions, &args.until, &labels) {
        let (list, unscoped) = exceptions(&report, labels, until, &args.reason);
        let rules: std::collections::BTreeSet<&str> = list.iter().filter_map(|e| e["rules"].get(0).and_then(Value::as_str)).collect();
        let text = format!(
            "# Written by `aigov simulate --write-exceptions`: what would be denied today, excused until {until}.\n# Give this file to each rule it names (`--settings RULE=FILE`), or add the entries to each rule's settings.\n{}",
            serde_norway::to_string(&json!({"exceptions": list}))?
        );
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "aigov simulate: wrote {} exception(s) for {} rule(s) ({}) to {}",
            list.len(),
            rules.len(),
            rules.into_iter().collect::<Vec<_>>().join(", "),
            path.display()
        );
        if unscoped > 0 {
            let _ = writeln!(
                err,
                "aigov simulate: {unscoped} cluster-scoped object(s) would be denied and carry no stable `{STABLE_LABEL}`: no exception is written for them (one without a namespace or a label would excuse the rule everywhere)"
            );
        }
    }
    match args.format {
        Format::Table => write!(out, "{}", render(&s, args.top, false))?,
        Format::Markdown => write!(out, "{}", render(&s, args.top, true))?,
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&to_json(&s, args.top))?)?,
    }
    Ok(std::process::ExitCode::from(if report.errors.is_empty() { 0 } else { 2 }))
}

/// The label an exception [`simulate`] writes selects objects by, where
/// they and the objects their controllers make all carry it.
pub const STABLE_LABEL: &str = "app.kubernetes.io/name";

/// Each object's [`STABLE_LABEL`] value, by kind, namespace and name,
/// where the objects its controller makes from it carry the same: a Pod's
/// own; a Deployment's, StatefulSet's, DaemonSet's, ReplicaSet's or Job's
/// when its pod template carries the same value (their ReplicaSets and pods
/// take the template's labels); a CronJob's when its Job template and that
/// Job's pod template do. Other kinds are scoped by namespace only.
pub fn stable_labels(objects: &[Value]) -> BTreeMap<(String, Option<String>, String), String> {
    let key = STABLE_LABEL.replace('/', "~1");
    let label = |o: &Value, at: &str| o.pointer(&format!("{at}/metadata/labels/{key}")).and_then(Value::as_str).map(str::to_string);
    objects
        .iter()
        .filter_map(|o| {
            let own = label(o, "")?;
            let same = |at: &str| label(o, at).as_deref() == Some(own.as_str());
            let kept = match o["kind"].as_str()? {
                "Pod" => true,
                "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => same("/spec/template"),
                "CronJob" => same("/spec/jobTemplate") && same("/spec/jobTemplate/spec/template"),
                _ => false,
            };
            let meta = &o["metadata"];
            let id = (o["kind"].as_str()?.to_string(), meta["namespace"].as_str().map(str::to_string), meta["name"].as_str()?.to_string());
            kept.then_some((id, own))
        })
        .collect()
}

/// The exceptions that excuse what `report` would deny, until `until`:
/// per rule and namespace, one exception, with an object selector on
/// [`STABLE_LABEL`] when every object denied there carries one
/// ([`stable_labels`]); and how many cluster-scoped objects without the
/// label get none.
pub fn exceptions(
    report: &Report,
    labels: &BTreeMap<(String, Option<String>, String), String>,
    until: &str,
    reason: &str,
) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut unscoped = 0;
    for (i, rule) in report.rules.iter().enumerate() {
        // Namespace → (every object labelled, the label values, how many).
        let mut groups: BTreeMap<Option<String>, (bool, std::collections::BTreeSet<String>, usize)> = BTreeMap::new();
        for doc in &report.documents {
            if doc.results.get(i).is_none_or(|r| r.outcome != Outcome::Deny) {
                continue;
            }
            let t = &doc.target;
            let label = t.name.as_ref().and_then(|name| labels.get(&(t.kind.clone(), t.namespace.clone(), name.clone())));
            let group = groups.entry(t.namespace.clone()).or_insert((true, Default::default(), 0));
            group.2 += 1;
            match label {
                Some(l) => {
                    group.1.insert(l.clone());
                }
                None => group.0 = false,
            }
        }
        for (namespace, (labelled, values, n)) in groups {
            let mut e = serde_json::Map::new();
            e.insert("rules".into(), json!([rule.name]));
            match (&namespace, labelled) {
                (Some(ns), _) => {
                    e.insert("namespaces".into(), json!([ns]));
                }
                (None, false) => {
                    unscoped += n;
                    continue;
                }
                (None, true) => {}
            }
            if labelled {
                let values: Vec<&String> = values.iter().collect();
                e.insert("objectSelector".into(), json!({"matchExpressions": [{"key": STABLE_LABEL, "operator": "In", "values": values}]}));
            }
            e.insert("until".into(), json!(until));
            e.insert("reason".into(), json!(reason));
            out.push(Value::Object(e));
        }
    }
    (out, unscoped)
}

#[cfg(test)]
mod tests {
    use super::reason_shape;

    #[test]
    fn alike_reasons_have_one_shape() {
        let a = reason_shape("`spec.runtimeClassName` is not set (container `trainer` requests 1 `nvidia.com/gpu`)");
        let b = reason_shape("`spec.runtimeClassName` is not set (container `main` requests 4 `nvidia.com/gpu`)");
        assert_eq!(a, b);
        assert_eq!(a, "`spec.runtimeClassName` is not set (container `…` requests # `…`)");
        assert_eq!(reason_shape("`spec.containers[12].image`"), "`spec.containers[##].image`");
    }
}
