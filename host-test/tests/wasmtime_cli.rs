//! The plainest host: the `wasmtime` CLI itself. For every component that
//! imports nothing, every call the harness makes over the case corpus (the
//! records `aigov build export-cases` writes: `metadata`, `validate-settings`,
//! `validate`) is made again with `wasmtime run --invoke`, the argument
//! quoted by `aigov::tools::invoke` as `aigov invoke` quotes it, and the
//! verdict the CLI prints (WAVE) must equal the harness's answer.
//!
//! Run by `make wasmtime-check` (in `make test`), which installs the CLI
//! into target/tools and writes the records: `AIGOV_WASMTIME` names the CLI,
//! `AIGOV_CASE_RECORDS` the records.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value, json};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Type, Val};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn env_path(name: &str, hint: &str) -> PathBuf {
    std::env::var_os(name).map(PathBuf::from).unwrap_or_else(|| panic!("{name} is not set: {hint}"))
}

/// `api-groups` → `apiGroups`, as the records name fields.
fn camel(kebab: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in kebab.chars() {
        match (c, upper) {
            ('-', _) => upper = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// A value the CLI printed, as the records write the same answer.
fn to_json(v: &Val) -> Value {
    match v {
        Val::Bool(b) => json!(b),
        Val::U16(n) => json!(n),
        Val::String(s) => json!(s),
        Val::Option(o) => o.as_deref().map_or(Value::Null, to_json),
        Val::List(items) | Val::Tuple(items) => Value::Array(items.iter().map(to_json).collect()),
        Val::Record(fields) => Value::Object(fields.iter().map(|(k, v)| (camel(k), to_json(v))).collect::<Map<_, _>>()),
        other => panic!("the WIT world has no {other:?}"),
    }
}

/// The result type of an export.
fn result_type(engine: &wasmtime::Engine, component: &Component, function: &str) -> Type {
    let ty = component.component_type();
    let export = ty.get_export(engine, function).unwrap_or_else(|| panic!("no export `{function}`"));
    match export.ty {
        ComponentItem::ComponentFunc(f) => f.results().next().expect("one result"),
        other => panic!("`{function}` is a {other:?}"),
    }
}

fn wasmtime(cli: &Path, args: &[&str]) -> String {
    let out = Command::new(cli).args(args).output().expect("running wasmtime");
    assert!(
        out.status.success(),
        "wasmtime {}: {}",
        args.iter().map(|a| if a.len() > 200 { "<call>" } else { a }).collect::<Vec<_>>().join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_wasmtime_cli_answers_every_call_as_the_harness_does() {
    let cli = env_path("AIGOV_WASMTIME", "run `make wasmtime-check`, which installs the wasmtime CLI");
    let records = env_path("AIGOV_CASE_RECORDS", "run `make wasmtime-check`, which writes the case records");
    let version = wasmtime(&cli, &["--version"]);
    assert!(version.starts_with("wasmtime 48."), "the CLI of the wasmtime the harness links: {version}");
    let engine = wasmtime::Engine::default();
    let work = std::env::temp_dir().join(format!("aigov-wasmtime-cli-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();

    let (mut components, mut calls, mut skipped) = (0, 0, Vec::new());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&records).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let name = record["component"].as_str().unwrap();
        let artifact = root().join(record["artifact"].as_str().unwrap());
        let component = Component::from_file(&engine, &artifact).unwrap();
        if component.component_type().imports(&engine).len() > 0 {
            // A context-aware rule imports `cluster`, which the CLI cannot
            // provide (Node.js and the browser serve it from the records).
            skipped.push(name.to_string());
            continue;
        }
        // Compiled once; each call then only instantiates.
        let compiled = work.join(format!("{name}.cwasm"));
        wasmtime(&cli, &["compile", artifact.to_str().unwrap(), "-o", compiled.to_str().unwrap()]);
        let mut all = vec![&record["metadata"]];
        for case in record["cases"].as_array().unwrap() {
            all.extend(case["calls"].as_array().unwrap());
        }
        for call in all {
            let function = call["function"].as_str().unwrap();
            let args: Vec<&str> = call["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            let expression = aigov::tools::invoke::call(function, &args).unwrap();
            let printed = wasmtime(&cli, &["run", "--allow-precompiled", "--invoke", &expression, compiled.to_str().unwrap()]);
            let value = Val::from_wave(&result_type(&engine, &component, function), printed.trim())
                .unwrap_or_else(|e| panic!("{name}: `{}` is not a {function} result: {e}", printed.trim()));
            assert_eq!(to_json(&value), call["answer"], "{name}: {function}({}) under the wasmtime CLI", args.join(", "));
            calls += 1;
        }
        components += 1;
    }
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "wasmtime CLI: {components} components, {calls} calls, all equal to the harness's; importing `cluster`, not run: {}",
        skipped.join(", ")
    );
    // Five rules import nothing since workload-classification and
    // gpu-node-avoidance came to read DRA claims through the cluster too:
    // model-provenance, opencost-labels, owner-label, trusted-sources and
    // workload-security.
    assert!(
        components >= 5 && calls >= 300,
        "{components} components and {calls} calls: the records are missing (run `make case-records`)"
    );
    assert!(!skipped.iter().any(|s| s == "owner-label"), "owner-label imports nothing");
}
