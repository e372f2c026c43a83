//! The guests' code sizes against a recorded baseline.
//!
//! LLVM's inlining moves with small source changes: one field's type can
//! make every rule tens of kilobytes larger (BENCHMARKS.md, "Sizes, and an
//! inlining surprise"), and only a reader of the sizes table would see it. `aigov build sizes` compares the bytes of code in every artifact
//! (the code sections of a module, or of every core module in a component)
//! with the ones recorded in `host-test/code-sizes.json`, and `make test`
//! fails when one grew by more than the tolerance. Code, not the file:
//! metadata, the usage text and message strings change for reasons of their
//! own, and are not what inlining moves.
//!
//! The same record holds the guests' work: the wasmtime fuel each module
//! burns answering each benchmark request in a fresh instance ([`fuel`]),
//! which machine noise does not move, so a change that makes a rule slower
//! fails `make test` the day it lands, as a larger one does, instead of
//! waiting for someone to rerun the benchmark. With `--split` it says
//! instead where the bundle's work goes, rule by rule, and which of it a
//! fresh instance repeats ([`split`]).
//!
//! The record names the compiler that built it; another compiler inlines
//! differently, so under another one the sizes are shown but not held to it.

pub mod fuel;
pub mod split;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use wasmparser::{Parser, Payload};

/// `aigov build sizes`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    /// The recorded sizes.
    #[arg(long, default_value = "host-test/code-sizes.json")]
    pub record: PathBuf,
    /// Write the artifacts' sizes to --record (with the compiler that built
    /// them), instead of comparing.
    #[arg(long)]
    pub write: bool,
    /// The compiler that built the artifacts (default: `$RUSTC -V`, or
    /// `rustc -V`: the one `make` used).
    #[arg(long)]
    pub compiler: Option<String>,
    /// Instead: where the bundle's work goes, rule by rule, on a warm
    /// instance and only in a fresh one, and the pages a fresh instance
    /// writes (Markdown, for BENCHMARKS.md)
    #[arg(long, conflicts_with = "write")]
    pub split: bool,
}

/// Growth of code allowed before the check fails, in percent.
pub const TOLERANCE_PERCENT: f64 = 2.0;

/// Growth of work (fuel) allowed before the check fails, in percent.
pub const FUEL_TOLERANCE_PERCENT: f64 = 3.0;

/// What a row of the record measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Bytes of code in an artifact.
    Code,
    /// Fuel a fresh module instance burns on a request.
    Fuel,
}

impl Measure {
    /// The unit, as the report words it.
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Code => "bytes of code",
            Measure::Fuel => "fuel",
        }
    }

    /// Growth allowed, in percent.
    pub fn tolerance(self) -> f64 {
        match self {
            Measure::Code => TOLERANCE_PERCENT,
            Measure::Fuel => FUEL_TOLERANCE_PERCENT,
        }
    }

    /// Where to look when it grew.
    fn hint(self) -> &'static str {
        match self {
            Measure::Code => {
                "look for new inlining (BENCHMARKS.md, \"Sizes, and an inlining surprise\": compare the two builds' largest functions)"
            }
            Measure::Fuel => {
                "profile the rule on that request (BENCHMARKS.md, \"Guest work in fuel\"; `make bench` shows the time it costs)"
            }
        }
    }
}

/// Bytes of code per artifact: `<rule>` → `module`/`component` → bytes.
pub type Sizes = BTreeMap<String, BTreeMap<String, u64>>;

/// `host-test/code-sizes.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    /// `rustc -V` of the compiler that built the recorded artifacts.
    pub compiler: String,
    /// Bytes of code in each artifact.
    pub code: Sizes,
    /// Fuel each rule's module (and the bundle's) burns per benchmark
    /// request, in a fresh instance: `<rule>` → `<request>` → fuel.
    #[serde(default)]
    pub fuel: Sizes,
}

/// The bytes of code in a module or a component: the sizes of its code
/// sections, nested modules included.
pub fn code_bytes(wasm: &[u8]) -> Result<u64> {
    let mut total = 0u64;
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::CodeSectionStart { size, .. } = payload? {
            total += u64::from(size);
        }
    }
    Ok(total)
}

/// The two forms, by the name the record gives them, and their files.
const FORMS: [(&str, &str); 2] = [("module", "policy.wasm"), ("component", "policy.component.wasm")];

/// The bytes of code in every artifact under `dir` (each directory holding a
/// `policy.wasm`: the rules and the bundle).
pub fn measure(dir: &Path) -> Result<Sizes> {
    let mut sizes = Sizes::new();
    if !dir.is_dir() {
        // Says which directory it looked in, and what to do.
        crate::run::artifact::require(dir, dir.join("bundle").join("policy.wasm"), None)?;
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if !path.join("policy.wasm").is_file() {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let mut forms = BTreeMap::new();
        for (form, file) in FORMS {
            let file = path.join(file);
            let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            forms.insert(form.to_string(), code_bytes(&bytes).with_context(|| format!("parsing {}", file.display()))?);
        }
        sizes.insert(name, forms);
    }
    if sizes.is_empty() {
        let whole = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        bail!(
            "no artifacts in {} (the --artifacts directory): build them with `make artifacts` in the aigov repository, or point --artifacts at the directory it wrote",
            whole.display()
        );
    }
    Ok(sizes)
}

/// One artifact compared with its record.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What it measures.
    pub measure: Measure,
    /// `gpu-runtime-class module`, or `gpu-runtime-class on pod`.
    pub artifact: String,
    /// Recorded bytes of code, if recorded.
    pub recorded: Option<u64>,
    /// Bytes of code now, if built.
    pub now: Option<u64>,
}

impl Row {
    /// The change from the record, in percent.
    pub fn change(&self) -> Option<f64> {
        match (self.recorded, self.now) {
            (Some(r), Some(n)) if r > 0 => Some((n as f64 - r as f64) * 100.0 / r as f64),
            _ => None,
        }
    }

    /// Why this row fails the check, if it does.
    pub fn problem(&self, record: &Path) -> Option<String> {
        let record = record.display();
        let (unit, tolerance) = (self.measure.unit(), self.measure.tolerance());
        match (self.recorded, self.now, self.change()) {
            (None, Some(n), _) => Some(format!(
                "{}: {} {unit}, and none recorded for it in {record}: record it with `make sizes`",
                self.artifact,
                thousands(n)
            )),
            (Some(_), None, _) => {
                Some(format!("{}: recorded in {record}, but not measured: record again with `make sizes`", self.artifact))
            }
            (Some(r), Some(n), Some(c)) if c > tolerance => Some(format!(
                "{}: {} {unit}, {c:.1} % more than the {} recorded in {record} (at most {tolerance} % allowed). \
                 If the growth is meant, record it with `make sizes` and say why in the commit; if not, {}",
                self.artifact,
                thousands(n),
                thousands(r),
                self.measure.hint()
            )),
            _ => None,
        }
    }
}

/// Every artifact (or artifact and request) recorded or measured, in name
/// order.
pub fn compare(recorded: &Sizes, now: &Sizes, measure: Measure) -> Vec<Row> {
    let mut names: Vec<(&String, &String)> =
        recorded.iter().chain(now).flat_map(|(rule, forms)| forms.keys().map(move |form| (rule, form))).collect();
    names.sort();
    names.dedup();
    let joiner = if measure == Measure::Fuel { " on " } else { " " };
    names
        .into_iter()
        .map(|(rule, form)| Row {
            measure,
            artifact: format!("{rule}{joiner}{form}"),
            recorded: recorded.get(rule).and_then(|f| f.get(form)).copied(),
            now: now.get(rule).and_then(|f| f.get(form)).copied(),
        })
        .collect()
}

/// `622,616`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The compiler's `-V` line.
fn compiler_version() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = std::process::Command::new(&rustc)
        .arg("-V")
        .output()
        .with_context(|| format!("running `{rustc} -V` (name the compiler with --compiler)"))?;
    if !out.status.success() {
        bail!("`{rustc} -V` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The report, and whether the check passed: every artifact's code, then
/// the fuel of those whose work changed.
pub fn report(record: &Record, record_path: &Path, now: &Record) -> (String, bool) {
    let code = compare(&record.code, &now.code, Measure::Code);
    let fuel = compare(&record.fuel, &now.fuel, Measure::Fuel);
    let mut out = String::new();
    let show = |b: Option<u64>| b.map_or_else(|| "-".to_string(), thousands);
    let change = |r: &Row| r.change().map_or_else(String::new, |c| format!("{c:+.1} %"));
    let width = code.iter().chain(&fuel).map(|r| r.artifact.len()).max().unwrap_or(0);
    let _ = writeln!(out, "{:width$}  {:>9}  {:>9}  change", "bytes of code", "recorded", "now");
    for r in &code {
        let _ = writeln!(out, "{:width$}  {:>9}  {:>9}  {}", r.artifact, show(r.recorded), show(r.now), change(r));
    }
    let moved: Vec<&Row> = fuel.iter().filter(|r| r.recorded != r.now).collect();
    let _ = writeln!(
        out,
        "fuel per request (fresh module instance): {} of {} unchanged{}",
        fuel.len() - moved.len(),
        fuel.len(),
        if moved.is_empty() { "" } else { "; changed:" }
    );
    for r in &moved {
        let _ = writeln!(out, "{:width$}  {:>9}  {:>9}  {}", r.artifact, show(r.recorded), show(r.now), change(r));
    }
    if now.compiler != record.compiler {
        let _ = writeln!(
            out,
            "not compared: these were built by `{}`, and the record by `{}`, which inlines differently. \
             Record the sizes under this compiler with `make sizes`.",
            now.compiler, record.compiler
        );
        return (out, true);
    }
    let rows: Vec<&Row> = code.iter().chain(&fuel).collect();
    let problems: Vec<String> = rows.iter().filter_map(|r| r.problem(record_path)).collect();
    let shrunk: Vec<&str> =
        rows.iter().filter(|r| r.change().is_some_and(|c| c < -r.measure.tolerance())).map(|r| r.artifact.as_str()).collect();
    if !shrunk.is_empty() {
        let _ = writeln!(
            out,
            "smaller than recorded by more than the tolerance: {}. Record the new figures with `make sizes`, so that growing back is caught.",
            shrunk.join(", ")
        );
    }
    for p in &problems {
        let _ = writeln!(out, "error: {p}");
    }
    if problems.is_empty() {
        let _ = writeln!(
            out,
            "every artifact's code is within {TOLERANCE_PERCENT} % of its record, and its work within {FUEL_TOLERANCE_PERCENT} % (or smaller)"
        );
    }
    (out, problems.is_empty())
}

/// `aigov build sizes`: compare, or with `--write` record.
pub fn run(args: &Args, out: &mut dyn std::io::Write) -> Result<std::process::ExitCode> {
    if args.split {
        write!(out, "{}", split::report(&args.artifacts)?)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let compiler = match &args.compiler {
        Some(c) => c.clone(),
        None => compiler_version()?,
    };
    let now = Record { compiler, code: measure(&args.artifacts)?, fuel: fuel::measure(&args.artifacts)? };
    if args.write {
        std::fs::write(&args.record, serde_json::to_string_pretty(&now)? + "\n")
            .with_context(|| format!("writing {}", args.record.display()))?;
        writeln!(out, "recorded the code sizes and work of {} artifacts in {}", now.code.len(), args.record.display())?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let text = std::fs::read_to_string(&args.record)
        .with_context(|| format!("reading {} (record the sizes with `make sizes`)", args.record.display()))?;
    let record: Record = serde_json::from_str(&text).with_context(|| format!("reading {}", args.record.display()))?;
    let (text, ok) = report(&record, &args.record, &now);
    write!(out, "{text}")?;
    Ok(if ok { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(rows: &[(&str, u64, u64)]) -> Sizes {
        rows.iter().map(|(rule, m, c)| (rule.to_string(), [("module".to_string(), *m), ("component".to_string(), *c)].into())).collect()
    }

    fn record(rows: &[(&str, u64, u64)]) -> Record {
        Record { compiler: "rustc 1.95.0".into(), code: sizes(rows), fuel: Sizes::new() }
    }

    const AT: &str = "host-test/code-sizes.json";

    #[test]
    fn growth_within_the_tolerance_passes_and_beyond_it_fails() {
        let rec = record(&[("owner-label", 100_000, 90_000), ("gpu-quota", 200_000, 180_000)]);
        let (text, ok) = report(&rec, Path::new(AT), &record(&[("owner-label", 101_900, 90_000), ("gpu-quota", 200_000, 180_000)]));
        assert!(ok, "{text}");
        let rows: Vec<String> = text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        assert!(rows.contains(&"owner-label module 100,000 101,900 +1.9 %".to_string()), "{text}");
        assert!(rows.contains(&"gpu-quota component 180,000 180,000 +0.0 %".to_string()), "{text}");

        let (text, ok) = report(&rec, Path::new(AT), &record(&[("owner-label", 100_000, 90_000), ("gpu-quota", 200_000, 184_000)]));
        assert!(!ok);
        assert!(
            text.contains(
                "error: gpu-quota component: 184,000 bytes of code, 2.2 % more than the 180,000 recorded in host-test/code-sizes.json"
            ),
            "{text}"
        );
        assert_eq!(text.matches("error:").count(), 1, "{text}");
    }

    #[test]
    fn shrinking_passes_and_asks_for_a_new_record() {
        let rec = record(&[("owner-label", 100_000, 90_000)]);
        let (text, ok) = report(&rec, Path::new(AT), &record(&[("owner-label", 90_000, 90_000)]));
        assert!(ok, "{text}");
        assert!(text.contains("smaller than recorded by more than the tolerance: owner-label module."), "{text}");
    }

    #[test]
    fn an_unrecorded_or_vanished_artifact_fails() {
        let rec = record(&[("owner-label", 100_000, 90_000), ("old-rule", 1, 1)]);
        let (text, ok) = report(&rec, Path::new(AT), &record(&[("owner-label", 100_000, 90_000), ("new-rule", 5, 5)]));
        assert!(!ok);
        assert!(text.contains("error: new-rule module: 5 bytes of code, and none recorded for it"), "{text}");
        assert!(text.contains("error: old-rule component: recorded in host-test/code-sizes.json, but not measured"), "{text}");
        assert_eq!(text.matches("error:").count(), 4, "{text}");
    }

    #[test]
    fn another_compiler_is_shown_not_held_to_the_record() {
        let rec = record(&[("owner-label", 100_000, 90_000)]);
        let (text, ok) =
            report(&rec, Path::new(AT), &Record { compiler: "rustc 1.96.0".into(), ..record(&[("owner-label", 150_000, 90_000)]) });
        assert!(ok);
        assert!(text.contains("not compared: these were built by `rustc 1.96.0`, and the record by `rustc 1.95.0`"), "{text}");
        assert!(!text.contains("error:"), "{text}");
    }

    #[test]
    fn work_is_held_to_its_record_with_its_own_tolerance() {
        let fuel = |rows: &[(&str, u64, u64)]| -> Sizes {
            rows.iter()
                .map(|(rule, pod, exec)| (rule.to_string(), [("pod".to_string(), *pod), ("exec".to_string(), *exec)].into()))
                .collect()
        };
        let rec = Record { fuel: fuel(&[("owner-label", 100_000, 5_000), ("aigov-bundle", 900_000, 40_000)]), ..record(&[]) };
        let within = Record { fuel: fuel(&[("owner-label", 102_900, 5_000), ("aigov-bundle", 900_000, 40_000)]), ..record(&[]) };
        let (text, ok) = report(&rec, Path::new(AT), &within);
        assert!(ok, "{text}");
        assert!(text.contains("fuel per request (fresh module instance): 3 of 4 unchanged; changed:"), "{text}");
        let rows: Vec<String> = text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        assert!(rows.contains(&"owner-label on pod 100,000 102,900 +2.9 %".to_string()), "{text}");

        let beyond = Record { fuel: fuel(&[("owner-label", 100_000, 5_000), ("aigov-bundle", 900_000, 41_600)]), ..record(&[]) };
        let (text, ok) = report(&rec, Path::new(AT), &beyond);
        assert!(!ok);
        assert!(
            text.contains("error: aigov-bundle on exec: 41,600 fuel, 4.0 % more than the 40,000 recorded in host-test/code-sizes.json (at most 3 % allowed)"),
            "{text}"
        );
        assert_eq!(text.matches("error:").count(), 1, "{text}");
    }

    #[test]
    fn code_bytes_counts_code_sections_of_nested_modules() {
        let module = one_function();
        let one = code_bytes(module.as_slice()).unwrap();
        assert!(one > 0);
        // A component embedding the module twice holds twice its code.
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&module));
        component.section(&wasm_encoder::ModuleSection(&module));
        assert_eq!(code_bytes(&component.finish()).unwrap(), 2 * one);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(622_616), "622,616");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    /// A module with one function.
    fn one_function() -> wasm_encoder::Module {
        let mut m = wasm_encoder::Module::new();
        let mut types = wasm_encoder::TypeSection::new();
        types.ty().function([], [wasm_encoder::ValType::I32]);
        m.section(&types);
        let mut funcs = wasm_encoder::FunctionSection::new();
        funcs.function(0);
        m.section(&funcs);
        let mut code = wasm_encoder::CodeSection::new();
        let mut f = wasm_encoder::Function::new([]);
        f.instructions().i32_const(42).end();
        code.function(&f);
        m.section(&code);
        m
    }
}
