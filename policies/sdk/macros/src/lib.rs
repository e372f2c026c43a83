//! `policy_metadata!()`: embeds the calling rule crate's `metadata.yml`.
//!
//! Invoked by `aigov_sdk::export_policy!`, never directly. At compile time it
//! reads `$CARGO_MANIFEST_DIR/metadata.yml`, validates it exactly as
//! `aigov annotate` will (so a metadata file Kubewarden would refuse fails the
//! rule's build, naming the file and field), checks that its version equals
//! the crate version, and expands to an `aigov_sdk::metadata::PolicyMetadata`
//! value. The file is pulled in with `include_bytes!`, so editing it rebuilds
//! the rule.

use std::fmt::Write as _;
use std::path::PathBuf;

use aigov_metadata::{Metadata, annotations};
use proc_macro::TokenStream;

/// Expands to the rule's metadata as an `aigov_sdk::metadata::PolicyMetadata`
/// constant expression. `policy_metadata!(out_dir)` reads
/// `$OUT_DIR/metadata.yml` instead, which the bundle's build script writes.
#[proc_macro]
pub fn policy_metadata(input: TokenStream) -> TokenStream {
    let arg = input.to_string();
    let from_out_dir = match arg.trim() {
        "" => false,
        "out_dir" => true,
        _ => return compile_error("policy_metadata!() takes no argument, or `out_dir`"),
    };
    match expand(from_out_dir) {
        Ok(code) => code.parse().unwrap_or_else(|_| compile_error("internal: bad expansion")),
        Err(message) => compile_error(&message),
    }
}

fn expand(from_out_dir: bool) -> Result<String, String> {
    let dir_var = if from_out_dir { "OUT_DIR" } else { "CARGO_MANIFEST_DIR" };
    let dir = std::env::var(dir_var)
        .map_err(|_| format!("{dir_var} is not set: build the crate with cargo (and a build script for `out_dir`)"))?;
    let name = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let path = PathBuf::from(&dir).join("metadata.yml");
    let shown = if from_out_dir { format!("the metadata {name}'s build script wrote") } else { format!("policies/{name}/metadata.yml") };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{shown}: cannot read the rule's metadata: {e}"))?;
    let metadata = Metadata::from_yaml(&text).map_err(|e| e.in_file(shown.clone()).to_string())?;
    if metadata.version() != Some(version.as_str()) {
        return Err(format!(
            "{shown}: `annotations.\"{}\"` is `{}` but the crate version is `{version}`: keep them equal",
            annotations::VERSION,
            metadata.version().unwrap_or_default()
        ));
    }
    Ok(render(&path, &name, &version, &metadata))
}

/// Renders the `PolicyMetadata` expression. String literals are written with
/// `{:?}`, whose escapes are valid Rust.
fn render(path: &std::path::Path, name: &str, version: &str, m: &Metadata) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{ const _: &[u8] = include_bytes!({:?}); ::aigov_sdk::metadata::PolicyMetadata {{ name: {name:?}, version: {version:?}, rules: &[",
        path.display().to_string()
    );
    for r in &m.rules {
        let ops: Vec<&str> = r.operations.iter().map(|o| o.as_str()).collect();
        let _ = write!(
            out,
            "::aigov_sdk::metadata::Rule {{ api_groups: &{:?}, api_versions: &{:?}, resources: &{:?}, operations: &{:?} }},",
            r.api_groups, r.api_versions, r.resources, ops
        );
    }
    let _ = write!(
        out,
        "], mutating: {}, background_audit: {}, context_aware_resources: &[",
        m.mutating, m.background_audit
    );
    for c in &m.context_aware_resources {
        let _ = write!(
            out,
            "::aigov_sdk::metadata::ResourceKind {{ api_version: {:?}, kind: {:?} }},",
            c.api_version, c.kind
        );
    }
    out.push_str("], annotations: &[");
    for (k, v) in &m.annotations {
        let _ = write!(out, "({k:?}, {v:?}),");
    }
    out.push_str("] } }");
    out
}

fn compile_error(message: &str) -> TokenStream {
    format!("compile_error!({message:?})")
        .parse()
        .unwrap_or_default()
}
