//! Generates the bundle from the rules under `policies/`: the list of rules
//! (`$OUT_DIR/rules.rs`) and the bundle's Kubewarden metadata, the union of
//! the rules' (`$OUT_DIR/metadata.yml`), so a new rule joins the bundle by
//! being a dependency of this crate and nothing else.

use std::fmt::Write as _;
use std::path::Path;

use aigov_metadata::Metadata;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let policies = Path::new(&manifest_dir).join("..");
    println!("cargo:rerun-if-changed={}", policies.display());
    let manifest = std::fs::read_to_string(Path::new(&manifest_dir).join("Cargo.toml")).unwrap_or_default();

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
        if !manifest.contains(&format!("\n{rule} = ")) {
            let _ = writeln!(
                code,
                "compile_error!(\"policies/{rule} is not in the bundle: add `{rule} = {{ path = \\\"../{rule}\\\", default-features = false }}` to policies/bundle/Cargo.toml\");"
            );
            continue;
        }
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
