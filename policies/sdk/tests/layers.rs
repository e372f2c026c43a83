//! The SDK's layers, held to what `src/lib.rs` says of them: each module
//! imports only from its own layer and the layers below, and the modules
//! import each other in no circle. Read from the sources: every
//! `crate::<layer>::<module>` a module names outside its tests.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom up. A module of a layer may name its own layer and
/// those before it.
const LAYERS: [&str; 6] = ["base", "decode", "model", "cluster", "runtime", "testing"];

/// A module: its layer and its name in the layer (`model`, `workload`).
type Module = (String, String);

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file under a layer's folder, with the module it belongs to
/// (a folder under a layer is one module: `model/workload/*.rs`).
fn modules() -> Vec<(Module, PathBuf)> {
    let mut out = Vec::new();
    for layer in LAYERS {
        let dir = src().join(layer);
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                let rel = path.strip_prefix(&dir).unwrap();
                let first = rel.components().next().unwrap().as_os_str().to_str().unwrap().trim_end_matches(".rs").to_string();
                out.push(((layer.to_string(), first), path));
            }
        }
    }
    out.sort();
    out
}

/// The source outside `#[cfg(test)]` modules (tests may reach up: a test
/// of a model type may build a verdict), and outside comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" && lines.peek().is_some_and(|l| l.trim_start().starts_with("mod tests")) {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The modules a source names: `crate::<layer>::<module>`, or
/// `crate::<layer>::<Item>` (a layer's re-export, counted as the layer's
/// `mod.rs`), and any `crate::<name>` that is neither.
fn named(code: &str, known: &BTreeSet<Module>) -> (BTreeSet<Module>, BTreeSet<String>) {
    let mut modules = BTreeSet::new();
    let mut strays = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with('$') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        let segment = |s: &str| s.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or_default().to_string();
        let first = segment(rest);
        if first == "decode_struct" || first == "bindings" {
            continue; // the decoder's macro and the generated WIT bindings, at the root by necessity
        }
        if !LAYERS.contains(&first.as_str()) {
            strays.insert(first);
            continue;
        }
        let after = rest[first.len()..].strip_prefix("::").unwrap_or_default();
        let second = segment(after);
        let module = (first.clone(), second);
        modules.insert(if known.contains(&module) { module } else { (first, "mod".to_string()) });
    }
    (modules, strays)
}

#[test]
fn every_module_imports_only_its_layer_and_the_ones_below() {
    let files = modules();
    assert!(files.len() > 20, "the SDK's modules: {files:?}");
    let known: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let rank = |layer: &str| LAYERS.iter().position(|l| *l == layer).unwrap();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (module, path) in &files {
        let (names, strays) = named(&code(path), &known);
        let file = path.strip_prefix(src()).unwrap().display().to_string();
        for stray in strays {
            problems.push(format!("{file} names `crate::{stray}`: import from the layer that defines it (`crate::<layer>::<module>`), not the crate root's re-export"));
        }
        for target in names {
            if rank(&target.0) > rank(&module.0) {
                problems.push(format!(
                    "{file} ({} layer) imports `crate::{}::{}` from the {} layer above it",
                    module.0, target.0, target.1, target.0
                ));
            }
            if target != *module && target.1 != "mod" {
                graph.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // No circle between modules: a depth-first search for a back edge.
    fn visit(
        m: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut circle = path[i..].to_vec();
            circle.push(m.clone());
            return Some(circle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.clone());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.clone());
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(circle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            let shown: Vec<String> = circle.iter().map(|(l, m)| format!("{l}::{m}")).collect();
            panic!("the SDK's modules import each other in a circle: {}", shown.join(" -> "));
        }
    }
}

#[test]
fn the_checker_sees_an_import_from_above() {
    let known: BTreeSet<Module> = [("model".to_string(), "pod".to_string()), ("runtime".to_string(), "verdict".to_string())].into();
    let (names, strays) =
        named("use crate::runtime::verdict::Verdict;\nlet x = crate::Malformed::new(\"\");\nmacro $crate::model::pod", &known);
    assert_eq!(names, [("runtime".to_string(), "verdict".to_string())].into());
    assert_eq!(strays, ["Malformed".to_string()].into());
}
