//! Generates the bundle from the rules under `policies/`: every folder
//! with a `metadata.yml` is a rule, compiled in as a module from its own
//! sources (`$OUT_DIR/rules.rs`), and the bundle's Kubewarden metadata is
//! the union of the rules' (`$OUT_DIR/metadata.yml`). A new rule joins the
//! bundle, and through it every host (`aigov`, the case corpus, the
//! manifests, the playground), by being a folder under `policies/`.
//!
//! Compiled as modules, the rules export nothing of their own (the build
//! sets `aigov_bundle`, which `export_policy!` reads), and refer to their
//! own items with `super::`/`self::`, never `crate::` (here the crate is
//! the bundle).

use std::fmt::Write as _;
use std::path::Path;

use aigov_metadata::Metadata;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let policies = Path::new(&manifest_dir).join("..");
    println!("cargo:rerun-if-changed={}", policies.display());
    println!("cargo::rustc-cfg=aigov_bundle");

    let mut rules: Vec<String> = std::fs::read_dir(&policies)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().join("metadata.yml").is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    rules.sort();

    let mut code = String::new();
    let mut parts = Vec::new();
    for rule in &rules {
        let file = policies.join(rule).join("metadata.yml");
        println!("cargo:rerun-if-changed={}", file.display());
        let source = policies.join(rule).join("src").join("lib.rs");
        let source = source.canonicalize().unwrap_or(source);
        for (file, line) in crate_paths(&policies.join(rule).join("src")) {
            let _ = writeln!(
                code,
                "compile_error!({:?});",
                format!(
                    "policies/{rule}/src/{file}:{line} names `crate::`: a rule is compiled into the bundle as a module, so refer to its own items with `super::` or `self::`"
                )
            );
        }
        let _ = writeln!(code, "#[path = {:?}]\npub mod {};", source.display().to_string(), rule.replace('-', "_"));
        match std::fs::read_to_string(&file).map_err(|e| e.to_string()).and_then(|t| Metadata::from_yaml(&t).map_err(|e| e.to_string())) {
            Ok(m) => parts.push(m),
            Err(e) => {
                let _ = writeln!(code, "compile_error!({:?});", format!("policies/{rule}/metadata.yml: {e}"));
            }
        }
    }
    let list: Vec<String> = rules.iter().map(|r| format!("{}::AigovRule", r.replace('-', "_"))).collect();
    let _ = writeln!(code, "aigov_sdk::export_bundle!({});", list.join(", "));
    let _ = std::fs::write(Path::new(&out).join("rules.rs"), code);

    let union = Metadata::bundle(&parts, &version);
    // JSON is YAML: the SDK's metadata macro reads it like any metadata.yml.
    let _ = std::fs::write(Path::new(&out).join("metadata.yml"), union.to_json());
}

/// Where the rule's sources under `src` name `crate::` outside comments:
/// (file relative to `src`, line number).
fn crate_paths(src: &Path) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let file = path.strip_prefix(src).unwrap_or(&path).display().to_string();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains("crate::") && !code.contains("$crate::") {
                    found.push((file.clone(), i + 1));
                }
            }
        }
    }
    found.sort();
    found
}
