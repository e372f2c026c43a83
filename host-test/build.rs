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
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let _ = std::fs::write(Path::new(&out).join("rules.rs"), code);
}
