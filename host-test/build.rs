//! Embeds the example settings of rules whose defaults are refused (no
//! safe default list): `host-test/settings/<rule>.yaml`, so the generated
//! manifests and `aigov scan` carry them. The rules themselves come from
//! the bundle, which compiles in every folder under `policies/`.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let policies = Path::new(&manifest).join("../policies");
    let mut code = String::new();
    let examples_dir = Path::new(&manifest).join("settings");
    println!("cargo:rerun-if-changed={}", examples_dir.display());
    let mut examples: Vec<(String, String)> = std::fs::read_dir(&examples_dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                .filter_map(|p| Some((p.file_stem()?.to_str()?.to_string(), p.canonicalize().ok()?.to_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    examples.sort();
    code.push_str(
        "/// Example settings (YAML) by rule, from `host-test/settings/<rule>.yaml`.\npub static EXAMPLE_SETTINGS: &[(&str, &str)] = &[\n",
    );
    for (rule, path) in &examples {
        if !policies.join(rule).join("metadata.yml").is_file() {
            println!("cargo:warning=host-test/settings/{rule}.yaml names no rule under policies/");
        }
        let _ = writeln!(code, "    ({rule:?}, include_str!({path:?})),");
    }
    code.push_str("];\n");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let _ = std::fs::write(Path::new(&out).join("rules.rs"), code);
}
