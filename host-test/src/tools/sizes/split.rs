//! Where the bundle's work goes, and what a fresh instance writes:
//! `aigov build sizes --split`.
//!
//! policy-server runs every request in a fresh instance, so what the guest
//! does only on its first call (reading the settings, starting its
//! allocator, filling caches a warm instance keeps) is paid on every
//! request, and so is every page of linear memory the instance writes (a
//! copy-on-write fault each, under policy-server's on-demand allocator).
//! Counted here, deterministically, on the bundle's module:
//!
//! - the work, in wasmtime fuel, of the bundle with no rule on (the request
//!   read once, the answer written) and, for each rule, what turning it on
//!   alone adds, on a warm instance (its second call) and on the first call
//!   only;
//! - the 4 KiB pages of linear memory a fresh instance's first call leaves
//!   changed, against the module's initial image, by region: the shadow
//!   stack, the data segment, the heap above it. A page written with what
//!   it held already is not seen, so these are a lower bound on the pages
//!   written, and pages only read are not counted.

use std::fmt::Write as _;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};

use crate::run::artifact::{self, payload};
use crate::run::settings::Resolved;
use crate::run::wapc::{HostCluster, WapcModule};
use crate::run::{engine, native};
use crate::tools::bench;

/// A host page: the unit the kernel faults in.
const PAGE: usize = 4096;

/// What one configuration of the bundle does on one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Calls {
    /// Fuel of instantiation, `_initialize` and `wapc_init`.
    start: u64,
    /// Fuel of the first `validate`.
    first: u64,
    /// Fuel of the second `validate`, on the same instance.
    warm: u64,
    /// Pages changed after the first call.
    pages: Pages,
}

/// 4 KiB pages of linear memory, by region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pages {
    stack: usize,
    data: usize,
    heap: usize,
}

impl Pages {
    fn total(&self) -> usize {
        self.stack + self.data + self.heap
    }
}

impl Calls {
    /// What the first call does that the second does not.
    fn first_only(&self) -> i64 {
        self.first as i64 - self.warm as i64
    }
}

/// The module's linear memory as instantiation lays it out before any code
/// runs (zeros, the active data segments over them), and where its shadow
/// stack ends and its heap begins.
struct Image {
    bytes: Vec<u8>,
    stack_top: usize,
    data_end: usize,
}

impl Image {
    fn of(module: &[u8]) -> Result<Image> {
        let (memory, stack) = bench::module_layout(module);
        let size = usize::try_from(memory.context("the module declares no memory")?)?;
        let stack_top = usize::try_from(stack.context("the module has no stack pointer")?)?;
        let mut bytes = vec![0u8; size];
        let mut data_end = stack_top;
        for payload in wasmparser::Parser::new(0).parse_all(module) {
            let wasmparser::Payload::DataSection(reader) = payload? else { continue };
            for data in reader {
                let data = data?;
                let wasmparser::DataKind::Active { memory_index: 0, offset_expr } = data.kind else { continue };
                let Ok(wasmparser::Operator::I32Const { value }) = offset_expr.get_operators_reader().read() else {
                    return Err(anyhow!("a data segment at an offset that is not a constant"));
                };
                let start = usize::try_from(value)?;
                let end = start + data.data.len();
                bytes.get_mut(start..end).context("a data segment beyond the initial memory")?.copy_from_slice(data.data);
                data_end = data_end.max(end);
            }
        }
        Ok(Image { bytes, stack_top, data_end })
    }

    /// Pages of `now` that differ from the image, by region.
    fn changed(&self, now: &[u8]) -> Pages {
        let mut out = Pages::default();
        for (i, page) in now.chunks(PAGE).enumerate() {
            let at = i * PAGE;
            let was = self.bytes.get(at..(at + page.len()).min(self.bytes.len())).unwrap_or_default();
            let same = (page.len() == was.len() && page == was) || (was.is_empty() && page.iter().all(|b| *b == 0));
            if same {
                continue;
            }
            let region = if at < self.stack_top {
                &mut out.stack
            } else if at < self.data_end {
                &mut out.data
            } else {
                &mut out.heap
            };
            *region += 1;
        }
        out
    }
}

/// The bundle with `settings`, on `request`, in a fresh instance called twice.
fn calls(module: &WapcModule, image: &Image, host: &HostCluster, request: &str, settings: &str) -> Result<Calls> {
    let fuel = |i: &crate::run::wapc::WapcInstance| i.fuel_used().context("the counting engine counted no fuel");
    let mut instance = module.instantiate(host.clone())?;
    let p = payload(request, settings);
    let start = fuel(&instance)?;
    instance.call("validate", p.as_bytes()).map_err(|e| anyhow!("{e}"))?;
    let after_first = fuel(&instance)?;
    let pages = image.changed(instance.memory());
    instance.call("validate", p.as_bytes()).map_err(|e| anyhow!("{e}"))?;
    let after_warm = fuel(&instance)?;
    Ok(Calls { start, first: after_first - start, warm: after_warm - after_first, pages })
}

/// `1,234,567`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("−{out}") } else { out }
}

/// The report, as Markdown.
pub fn report(dir: &std::path::Path) -> Result<String> {
    let engine = engine::counting_engine()?;
    let cluster = Arc::new(bench::bench_cluster(0)?);
    let requests = bench::requests();
    let path = artifact::module_path(dir, artifact::BUNDLE);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {} (run `make artifacts` first)", path.display()))?;
    let module = WapcModule::new(&engine, &bytes).with_context(|| format!("loading {}", path.display()))?;
    let image = Image::of(&bytes)?;
    let host = bench::host_for(&native::BUNDLE, &cluster);
    let all: serde_json::Value = serde_json::from_str(&bench::settings_for(&native::BUNDLE, false, &Resolved::default())?)?;
    let rules = all.get("rules").and_then(serde_json::Value::as_object).context("the bench's bundle settings have no rules")?;
    // Configurations: no rule on, each rule alone, every rule on.
    let mut configs: Vec<(String, String)> = vec![("none".into(), r#"{"rules":{}}"#.into())];
    configs.extend(rules.iter().map(|(name, s)| (name.clone(), serde_json::json!({ "rules": { name: s } }).to_string())));
    configs.push(("all".into(), all.to_string()));
    // measured[config][request]
    let mut measured: Vec<Vec<Calls>> = Vec::new();
    for (_, settings) in &configs {
        measured.push(requests.iter().map(|(_, _, r)| calls(&module, &image, &host, r, settings)).collect::<Result<_>>()?);
    }
    // Every rule on, in a module pre-initialised with the same settings
    // (`aigov build preinit`): what a fresh instance still repeats.
    let all_text = crate::run::preinit::as_sent(&all);
    let baked = crate::run::preinit::preinit(&engine, &bytes, &all_text).context("pre-initialising the bundle")?;
    let baked_module = WapcModule::new(&engine, &baked)?;
    let baked_image = Image::of(&baked)?;
    let preinit: Vec<Calls> =
        requests.iter().map(|(_, _, r)| calls(&baked_module, &baked_image, &host, r, &all_text)).collect::<Result<_>>()?;
    let names: Vec<&str> = requests.iter().map(|(n, _, _)| *n).collect();
    let none = measured.first().context("no configuration")?.clone();
    let every = measured.last().context("no configuration")?.clone();
    let header = |out: &mut String, first: &str| {
        let _ = writeln!(out, "| {first} | {} |", names.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(names.len()));
    };
    let row = |out: &mut String, label: &str, cells: &mut dyn Iterator<Item = i64>| {
        let cells: Vec<String> = cells.map(thousands).collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    };
    let mut out = String::new();
    let _ = writeln!(out, "Work on a warm instance (fuel of the second call):\n");
    header(&mut out, "bundle");
    row(&mut out, "no rule on: the request read, the answer written", &mut none.iter().map(|c| c.warm as i64));
    for ((name, _), m) in configs.iter().zip(&measured).skip(1).take(rules.len()) {
        row(&mut out, &format!("+ `{name}`"), &mut m.iter().zip(&none).map(|(c, n)| c.warm as i64 - n.warm as i64));
    }
    row(&mut out, "**every rule on**", &mut every.iter().map(|c| c.warm as i64));
    let _ = writeln!(
        out,
        "\nDone again in every fresh instance (fuel of instantiation and start-up, and of the first call beyond the second):\n"
    );
    header(&mut out, "bundle");
    row(&mut out, "instantiation, `_initialize`, `wapc_init`", &mut none.iter().map(|c| c.start as i64));
    row(&mut out, "no rule on: first call only", &mut none.iter().map(Calls::first_only));
    for ((name, _), m) in configs.iter().zip(&measured).skip(1).take(rules.len()) {
        row(&mut out, &format!("+ `{name}`"), &mut m.iter().zip(&none).map(|(c, n)| c.first_only() - n.first_only()));
    }
    row(&mut out, "**every rule on**", &mut every.iter().map(|c| c.start as i64 + c.first_only()));
    row(
        &mut out,
        "**every rule on**, pre-initialised with these settings (`aigov build preinit`)",
        &mut preinit.iter().map(|c| c.start as i64 + c.first_only()),
    );
    let _ = writeln!(
        out,
        "\nPages (4 KiB) a fresh instance's first call leaves changed, by region (stack below {} KiB, data to {} KiB, heap above):\n",
        image.stack_top / 1024,
        image.data_end.div_ceil(1024)
    );
    let _ = writeln!(out, "| bundle | {} |", names.iter().map(|n| format!("{n}: stack, data, heap")).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(names.len()));
    for ((name, _), m) in configs.iter().zip(&measured) {
        let label = match name.as_str() {
            "none" => "no rule on".to_string(),
            "all" => "**every rule on**".to_string(),
            rule => format!("`{rule}` alone"),
        };
        let cells: Vec<String> =
            m.iter().map(|c| format!("{} ({}, {}, {})", c.pages.total(), c.pages.stack, c.pages.data, c.pages.heap)).collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    let cells: Vec<String> =
        preinit.iter().map(|c| format!("{} ({}, {}, {})", c.pages.total(), c.pages.stack, c.pages.data, c.pages.heap)).collect();
    let _ = writeln!(out, "| **every rule on**, pre-initialised | {} |", cells.join(" | "));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(-1_234_567), "−1,234,567");
    }

    #[test]
    fn pages_are_counted_where_they_changed() {
        let image = Image { bytes: vec![0; 4 * PAGE], stack_top: PAGE, data_end: 2 * PAGE + 10 };
        let mut now = image.bytes.clone();
        let pages = |stack, data, heap| Pages { stack, data, heap };
        assert_eq!(image.changed(&now), pages(0, 0, 0));
        now[PAGE - 1] = 1; // the stack's top byte
        now[2 * PAGE + 5] = 1; // data, on the page the data ends in
        now[3 * PAGE] = 1; // heap
        now.extend([0u8; PAGE]); // grown, untouched
        assert_eq!(image.changed(&now), pages(1, 1, 1));
        now[4 * PAGE + 1] = 7; // grown and written
        assert_eq!(image.changed(&now), pages(1, 1, 2));
    }
}
