//! The benchmark's report as text and as Markdown: one table per request
//! (every rule in each form, per request and as a ratio to the floor), the
//! bundle's table, artifact sizes, and notes on what looks wrong.

use std::fmt::Write as _;
use std::time::Duration;

use super::{BUNDLE_NAME, Measurement, Report, Row};

/// `2.31 µs`, `48.2 µs`, `512 µs`, `1.25 ms`.
pub fn format_duration(d: Duration) -> String {
    let us = d.as_nanos() as f64 / 1000.0;
    if us < 10.0 {
        format!("{us:.2} µs")
    } else if us < 100.0 {
        format!("{us:.1} µs")
    } else if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn format_ratio(r: f64) -> String {
    if r < 10.0 { format!("{r:.1}×") } else { format!("{r:.0}×") }
}

fn format_size(bytes: u64) -> String {
    if bytes >= 1 << 20 { format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64) } else { format!("{} KiB", (bytes + 512) >> 10) }
}

fn request_label(report: &Report, name: &str) -> String {
    report
        .requests
        .iter()
        .find(|r| r.name == name)
        .map_or_else(|| name.to_string(), |r| format!("{name} ({:.1} KiB)", r.bytes as f64 / 1024.0))
}

fn header(report: &Report) -> String {
    let mut crowd = match report.namespace_pods {
        0 => String::new(),
        n => format!(" Namespace `ml-training` holds {n} more running CPU-only pods (`--namespace-pods`), which `gpu-quota` lists."),
    };
    if report.spelt_out_settings {
        crowd.push_str(" Every rule's settings spelt out, every key, defaults included (`--spelt-out-settings`).");
    }
    format!(
        "Machine: {} CPUs, {}. Engine: wasmtime with the pooling allocator, InstancePre, epoch interruption on. {}; per-request median and 90th percentile; × floor = median / native JSON skim of the same request.{crowd}",
        report.machine.cpus,
        report.machine.cpu_model,
        upper_first(&report.plan.describe())
    )
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn footer(report: &Report, out: &mut String, bullet: &str) {
    for v in &report.verdicts {
        let _ = writeln!(out, "{bullet}{v}");
    }
    if report.memory_growths.is_empty() {
        let _ = writeln!(out, "{bullet}every fresh instance answered within its initial memory (no `memory.grow`)");
    }
    for g in &report.memory_growths {
        let _ = writeln!(
            out,
            "{bullet}NOTE {g} past its initial size: a pooled host pays an `mprotect` for it during the call and another when the slot is reused (the Makefile's WASM_MEMORY sets the guests' initial memory)"
        );
    }
    for n in &report.notes {
        let _ = writeln!(out, "{bullet}NOTE {n}");
    }
}

/// Aligned plain-text tables.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "aigov bench\n{}\n", header(report));
    let mut lines = vec![["request", "rule", "measurement", "median", "p90", "× floor", "n"].map(String::from).to_vec()];
    for r in &report.rows {
        lines.push(vec![
            request_label(report, &r.request),
            r.rule.clone().unwrap_or_else(|| "-".into()),
            r.measurement.label().to_string(),
            format_duration(r.stats.median),
            format_duration(r.stats.p90),
            format_ratio(r.ratio),
            r.stats.samples.to_string(),
        ]);
    }
    out.push_str(&aligned(&lines, &[false, false, false, true, true, true, true]));
    out.push('\n');
    let mut sizes = vec![["rule", "module (policy.wasm)", "component", "initial memory", "stack"].map(String::from).to_vec()];
    for s in &report.sizes {
        sizes.push(vec![
            s.rule.clone(),
            format_size(s.module),
            format_size(s.component),
            s.initial_memory.map_or_else(|| "?".into(), format_size),
            s.stack.map_or_else(|| "?".into(), format_size),
        ]);
    }
    out.push_str(&aligned(&sizes, &[false, true, true, true, true]));
    out.push_str(&bundle_table(report));
    out.push('\n');
    let mut inst = vec![["instantiation alone", "module median", "p90", "component median", "p90"].map(String::from).to_vec()];
    for i in &report.instantiation {
        inst.push(vec![
            i.rule.clone(),
            format_duration(i.module.median),
            format_duration(i.module.p90),
            format_duration(i.component.median),
            format_duration(i.component.p90),
        ]);
    }
    out.push_str(&aligned(&inst, &[false, true, true, true, true]));
    out.push('\n');
    footer(report, &mut out, "");
    out
}

fn aligned(rows: &[Vec<String>], right: &[bool]) -> String {
    let widths: Vec<usize> =
        (0..right.len()).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let pad = " ".repeat(widths.get(c).copied().unwrap_or(0).saturating_sub(s.chars().count()));
                if right.get(c).copied().unwrap_or(false) { format!("{pad}{s}") } else { format!("{s}{pad}") }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// One call of the bundle with every rule on, against the single rules the
/// same request goes to: the cheapest of them, and all of them in a row (what
/// a Pod pays with one Kubewarden policy per rule, webhook round trips left
/// out).
pub fn bundle_table(report: &Report) -> String {
    let mut out = String::from(
        "\n| request | measurement | bundle, every rule on | cheapest single rule | bundle ÷ cheapest | sum of the single rules | bundle ÷ sum |\n|---|---|--:|--:|--:|--:|--:|\n",
    );
    let mut any = false;
    for req in &report.requests {
        for m in Measurement::RULE {
            let here = |r: &&Row| r.request == req.name && r.measurement == m;
            let Some(bundle) = report.rows.iter().filter(here).find(|r| r.rule.as_deref() == Some(BUNDLE_NAME)) else { continue };
            let singles: Vec<Duration> = report
                .rows
                .iter()
                .filter(here)
                .filter(|r| r.rule.as_deref().is_some_and(|n| n != BUNDLE_NAME))
                .map(|r| r.stats.median)
                .collect();
            let (Some(cheapest), sum) = (singles.iter().min().copied(), singles.iter().sum::<Duration>()) else { continue };
            any = true;
            let ratio = |d: Duration| bundle.stats.median.as_secs_f64() / d.as_secs_f64().max(1e-12);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} ({} rules) | {} |",
                request_label(report, &req.name),
                m.label(),
                format_duration(bundle.stats.median),
                format_duration(cheapest),
                format_ratio(ratio(cheapest)),
                format_duration(sum),
                singles.len(),
                format_ratio(ratio(sum)),
            );
        }
    }
    if any { out } else { String::new() }
}

/// Markdown tables, for BENCHMARKS.md.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", header(report));
    out.push_str("| request | rule | measurement | median | p90 | × floor |\n|---|---|---|--:|--:|--:|\n");
    for r in &report.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            request_label(report, &r.request),
            r.rule.as_deref().map_or_else(|| "–".to_string(), |x| format!("`{x}`")),
            r.measurement.label(),
            format_duration(r.stats.median),
            format_duration(r.stats.p90),
            format_ratio(r.ratio),
        );
    }
    out.push_str("\n| rule | module (`policy.wasm`) | component (`policy.component.wasm`) | module's initial memory | shadow stack |\n|---|--:|--:|--:|--:|\n");
    for s in &report.sizes {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            s.rule,
            format_size(s.module),
            format_size(s.component),
            s.initial_memory.map_or_else(|| "?".into(), format_size),
            s.stack.map_or_else(|| "?".into(), format_size)
        );
    }
    out.push_str(&bundle_table(report));
    out.push_str("\n| instantiation alone (no call) | module median | p90 | component median | p90 |\n|---|--:|--:|--:|--:|\n");
    for i in &report.instantiation {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            i.rule,
            format_duration(i.module.median),
            format_duration(i.module.p90),
            format_duration(i.component.median),
            format_duration(i.component.p90)
        );
    }
    out.push('\n');
    footer(report, &mut out, "- ");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(format_duration(Duration::from_nanos(2_310)), "2.31 µs");
        assert_eq!(format_duration(Duration::from_nanos(48_250)), "48.2 µs");
        assert_eq!(format_duration(Duration::from_nanos(512_000)), "512 µs");
        assert_eq!(format_duration(Duration::from_micros(1_250)), "1.25 ms");
        assert_eq!(format_ratio(2.345), "2.3×");
        assert_eq!(format_ratio(23.45), "23×");
        assert_eq!(format_size(700_000), "684 KiB");
        assert_eq!(format_size(3 << 20), "3.00 MiB");
    }
}
