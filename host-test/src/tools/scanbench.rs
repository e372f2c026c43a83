//! Manifests for measuring `aigov scan`: N Pod manifests of about 4.5 KiB,
//! each the object of `host-test/bench/pod-request.json` (a GPU training
//! Pod created by the job controller) with its own name, spread over a few
//! namespaces, one compact JSON file per manifest in folders of 1,000.
//! `aigov build gen-manifests` writes them; `aigov bench --scan N` scans them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// The request the manifests are taken from.
const POD_REQUEST: &str = include_str!("../../bench/pod-request.json");

/// The namespaces the manifests are spread over.
const NAMESPACES: [&str; 4] = ["ml-training", "ml-platform", "research", "inference"];

/// The size each manifest is padded to (with an annotation), in bytes.
pub const MANIFEST_BYTES: usize = 4608;

/// Manifests per folder.
const PER_FOLDER: usize = 1000;

/// The `i`-th manifest (compact JSON, with a final newline).
pub fn pod_manifest(template: &Value, i: usize) -> Result<String> {
    let mut object = template.clone();
    let namespace = NAMESPACES.get(i % NAMESPACES.len()).copied().unwrap_or("default");
    let metadata = object.get_mut("metadata").and_then(Value::as_object_mut).context("the bench Pod has no metadata")?;
    metadata.insert("name".into(), json!(format!("llm-finetune-worker-{i}")));
    metadata.insert("namespace".into(), json!(namespace));
    let text = serde_json::to_string(&object)?;
    // Pad to MANIFEST_BYTES with an annotation, as notes and
    // last-applied-configuration annotations make real manifests larger.
    let pad = MANIFEST_BYTES.saturating_sub(text.len() + 1 + r#","aigov.dev/notes":"""#.len());
    if let Some(a) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        a.insert("aigov.dev/notes".into(), json!("x".repeat(pad)));
    }
    Ok(format!("{}\n", serde_json::to_string(&object)?))
}

/// The Pod object every manifest is made from.
pub fn template() -> Result<Value> {
    let request: Value = serde_json::from_str(POD_REQUEST).context("host-test/bench/pod-request.json")?;
    request.get("object").cloned().context("the bench request has no object")
}

/// Runs `aigov build gen-manifests`: [`write_manifests`], and where on `out`.
pub fn gen_manifests(dir: &Path, count: usize, out: &mut dyn std::io::Write) -> Result<std::process::ExitCode> {
    let files = write_manifests(dir, count)?;
    writeln!(out, "{} manifest(s) under {}", files.len(), dir.display())?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes `count` manifests under `dir` (`pods-000/pod-000000.json`, ...);
/// returns the files in the order `aigov scan` reads them.
pub fn write_manifests(dir: &Path, count: usize) -> Result<Vec<PathBuf>> {
    let template = template()?;
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let folder = dir.join(format!("pods-{:03}", i / PER_FOLDER));
        if i % PER_FOLDER == 0 {
            std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        }
        let path = folder.join(format!("pod-{i:06}.json"));
        std::fs::write(&path, pod_manifest(&template, i)?).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_distinct_pods_of_the_stated_size() {
        let t = template().unwrap();
        let a = pod_manifest(&t, 0).unwrap();
        let b = pod_manifest(&t, 5).unwrap();
        assert_eq!(a.len(), MANIFEST_BYTES);
        assert!(b.len().abs_diff(MANIFEST_BYTES) <= 1);
        let b: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(b["kind"], "Pod");
        assert_eq!(b["metadata"]["name"], "llm-finetune-worker-5");
        assert_eq!(b["metadata"]["namespace"], "ml-platform");
    }
}

// ------------------------------------------------------------ aigov bench --scan

/// One form's scan of the manifests.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanRow {
    /// `native`, `module` or `component`.
    pub form: &'static str,
    /// How the documents were evaluated.
    pub how: String,
    /// Workers.
    pub jobs: usize,
    /// Loading the rules (compiling the artifacts the scan needs).
    pub startup: std::time::Duration,
    /// Reading, evaluating and writing the JSON report of every manifest.
    pub scan: std::time::Duration,
    /// Manifests.
    pub documents: usize,
    /// One manifest on one core, warm, median: the worker's whole work.
    pub one: std::time::Duration,
    /// ...and the guest calls in it alone.
    pub guest: std::time::Duration,
}

impl ScanRow {
    /// Manifests per second, startup excluded.
    pub fn rate(&self) -> f64 {
        self.documents as f64 / self.scan.as_secs_f64().max(1e-9)
    }

    /// Wall-clock time per manifest, startup excluded.
    pub fn per_document(&self) -> std::time::Duration {
        self.scan / u32::try_from(self.documents.max(1)).unwrap_or(u32::MAX)
    }
}

/// `aigov bench --scan N`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanBench {
    /// Manifests.
    pub documents: usize,
    /// Cores.
    pub cpus: usize,
    /// The native JSON skim of one manifest, one core (the floor).
    pub floor: std::time::Duration,
    /// One row per form and worker count.
    pub rows: Vec<ScanRow>,
}

/// Writes `count` manifests to a temporary directory, times the floor on
/// them, then `aigov scan --format json` of them in each form, with every
/// core and with one worker.
pub fn bench_scan(artifacts: &Path, count: usize) -> Result<ScanBench> {
    use crate::tools::report::model::{FailOn, Form};
    use crate::tools::report::table::Layout;
    use crate::tools::scan::evaluate::{Config, Scanner, Strategy};
    use crate::tools::scan::{self, Format};
    use std::time::Instant;
    let dir = std::env::temp_dir().join(format!("aigov-bench-scan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Cleanup(dir.clone());
    let files = write_manifests(&dir, count)?;
    let manifest = pod_manifest(&template()?, 0)?;
    // The floor: skimming each manifest's JSON, as `aigov bench` does per
    // request (the texts read first, so the disk is not timed).
    let texts: Vec<String> = files.iter().map(std::fs::read_to_string).collect::<std::io::Result<_>>()?;
    let mut best = std::time::Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for t in &texts {
            std::hint::black_box(serde_json::from_str::<serde::de::IgnoredAny>(std::hint::black_box(t))?);
        }
        best = best.min(start.elapsed());
    }
    drop(texts);
    let floor = best / u32::try_from(count.max(1)).unwrap_or(u32::MAX);
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut rows = Vec::new();
    for form in [Form::Native, Form::Module, Form::Component] {
        for jobs in [cpus, 1] {
            let config = Config {
                paths: vec![dir.clone()],
                artifacts: artifacts.to_path_buf(),
                form,
                strategy: Strategy::Bundle,
                jobs,
                ..Config::default()
            };
            let start = Instant::now();
            let scanner = Scanner::new(&config, std::sync::Arc::new(crate::run::cluster::FixtureCluster::empty()))?;
            let startup = start.elapsed();
            let start = Instant::now();
            let summary = scan::write_report(&scanner, Format::Json, FailOn::None, Layout::Compact, &mut std::io::sink())?.summary;
            let elapsed = start.elapsed();
            let (one, guest) =
                if jobs == cpus { scanner.time_document(&manifest, 300)? } else { (std::time::Duration::ZERO, std::time::Duration::ZERO) };
            if summary.documents != count {
                anyhow::bail!("the {} scan evaluated {} of {count} manifests", form.name(), summary.documents);
            }
            rows.push(ScanRow {
                form: form.name(),
                how: "bundle + mutating rules alone, warm instances".into(),
                jobs,
                startup,
                scan: elapsed,
                documents: count,
                one,
                guest,
            });
            if cpus == 1 {
                break;
            }
        }
    }
    Ok(ScanBench { documents: count, cpus, floor, rows })
}

fn micros(d: std::time::Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 100.0 { format!("{us:.0} µs") } else { format!("{us:.1} µs") }
}

/// The scan benchmark as text, or as a Markdown table.
pub fn render_scan(b: &ScanBench, markdown: bool) -> String {
    let mut out = String::new();
    let floor = b.floor.as_secs_f64().max(1e-12);
    let head = format!(
        "aigov scan --format json of {} Pod manifests of {:.1} KiB ({} CPUs). Floor: native JSON skim of one manifest, one core = {}; \
         × floor = wall time per manifest (all workers together, startup excluded) / floor. \
         1 manifest, 1 core: median of one worker's whole work on one manifest, warm; guest calls in it: the bundle's \
         call and the mutating rules' alone; ceiling: manifests/s the cores could reach if the guest calls were all.\n\n",
        b.documents,
        MANIFEST_BYTES as f64 / 1024.0,
        b.cpus,
        micros(b.floor)
    );
    out.push_str(&head);
    let rows: Vec<[String; 10]> = b
        .rows
        .iter()
        .map(|r| {
            [
                r.form.to_string(),
                r.jobs.to_string(),
                format!("{:.0}", r.rate()),
                micros(r.per_document()),
                format!("{:.0}×", r.per_document().as_secs_f64() / floor),
                format!("{:.2} s", r.startup.as_secs_f64()),
                format!("{:.2} s", r.scan.as_secs_f64()),
                if r.one.is_zero() { "".into() } else { micros(r.one) },
                if r.guest.is_zero() { "".into() } else { micros(r.guest) },
                if r.guest.is_zero() { "".into() } else { format!("{:.0}", b.cpus as f64 / r.guest.as_secs_f64().max(1e-12)) },
            ]
        })
        .collect();
    let header = [
        "form",
        "workers",
        "manifests/s",
        "per manifest",
        "× floor",
        "startup",
        "scan",
        "1 manifest, 1 core",
        "guest calls in it",
        "ceiling (cores / guest)",
    ];
    if markdown {
        out.push_str(&format!("| {} |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", header.join(" | ")));
        for r in &rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
    } else {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| -> String {
            let mut l = String::new();
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    l.push_str("  ");
                }
                let pad = w.saturating_sub(c.chars().count());
                if i == 0 {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                } else {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                }
            }
            l.trim_end().to_string() + "\n"
        };
        out.push_str(&line(header.to_vec()));
        for r in &rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
    }
    out
}
