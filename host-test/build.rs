//! Generates the registry of natively linked rules from the directories under
//! `policies/`, so `aigov` and the case runner find every rule. A rule that is
//! not a dependency of this crate fails the build with a message naming it.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let policies = Path::new(&manifest).join("../policies");
    println!("cargo:rerun-if-changed={}", policies.display());
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
    let manifest_text = std::fs::read_to_string(Path::new(&manifest).join("Cargo.toml")).unwrap_or_default();
    let mut code = String::from("/// Every rule under `policies/`, linked natively, in name order.\npub static RULES: &[aigov_sdk::NativePolicy] = &[\n");
    for rule in &rules {
        if !manifest_text.contains(&format!("\n{rule} = ")) {
            println!(
                "cargo:warning=policies/{rule} is not a dependency of host-test: add `{rule} = {{ path = \"../policies/{rule}\" }}` to host-test/Cargo.toml"
            );
        }
        let _ = writeln!(code, "    {}::AIGOV_POLICY,", rule.replace('-', "_"));
    }
    code.push_str("];\n");
    // Example settings for rules whose defaults are refused (no safe
    // default list): `host-test/settings/<rule>.yaml`, embedded so the
    // generated manifests and `aigov scan` carry them.
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
    code.push_str("/// Example settings (YAML) by rule, from `host-test/settings/<rule>.yaml`.\npub static EXAMPLE_SETTINGS: &[(&str, &str)] = &[\n");
    for (rule, path) in &examples {
        if !rules.contains(rule) {
            println!("cargo:warning=host-test/settings/{rule}.yaml names no rule under policies/");
        }
        let _ = writeln!(code, "    ({rule:?}, include_str!({path:?})),");
    }
    code.push_str("];\n");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let _ = std::fs::write(Path::new(&out).join("rules.rs"), code);
}
