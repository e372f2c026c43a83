//! `policy_metadata!(Rule)`: embeds the calling rule's `metadata.yml`.
//!
//! Invoked by `aigov_sdk::export_policy!`, never directly. At compile time it
//! finds the rule from where its type is written (`Rule`'s source file,
//! `policies/<rule>/src/lib.rs`: the same whether the rule is built as its
//! own crate or compiled into the bundle as a module), reads
//! `policies/<rule>/metadata.yml`, validates it exactly as `aigov build annotate`
//! will (so a metadata file Kubewarden would refuse fails the build, naming
//! the file and field), and expands to an
//! `aigov_sdk::runtime::metadata::PolicyMetadata` value. The rule's name and version
//! are its metadata's title and version annotations; built as its own
//! crate, they must equal the crate's. The file is pulled in with
//! `include_bytes!`, so editing it rebuilds the rule.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use aigov_metadata::{Metadata, annotations};
use proc_macro::TokenStream;

/// Expands to the metadata of the rule whose type is given, as an
/// `aigov_sdk::runtime::metadata::PolicyMetadata` constant expression.
/// `policy_metadata!(out_dir)` reads `$OUT_DIR/metadata.yml` instead, which
/// the bundle's build script writes.
#[proc_macro]
pub fn policy_metadata(input: TokenStream) -> TokenStream {
    let result = match input.clone().into_iter().next() {
        None => Err("policy_metadata! takes the rule's type, or `out_dir`".to_string()),
        Some(first) if first.to_string() == "out_dir" => from_out_dir(),
        Some(_) => match first_ident(input).and_then(|ident| ident.span().local_file()) {
            Some(source) => of_rule(&source),
            None => Err("policy_metadata!: the rule's source file is unknown to the compiler".to_string()),
        },
    };
    match result {
        Ok(code) => code.parse().unwrap_or_else(|_| compile_error("internal: bad expansion")),
        Err(message) => compile_error(&message),
    }
}

/// The first identifier of `input`, looking into groups: a `$policy:ty`
/// that `export_policy!` passes on arrives as an invisible group, spanned
/// where the SDK's macro is written; the identifier inside keeps the span
/// of the rule's source.
fn first_ident(input: TokenStream) -> Option<proc_macro::Ident> {
    input.into_iter().find_map(|token| match token {
        proc_macro::TokenTree::Ident(ident) => Some(ident),
        proc_macro::TokenTree::Group(group) => first_ident(group.stream()),
        _ => None,
    })
}

/// The metadata of the rule whose `src/lib.rs` (or any file under `src/`)
/// is `source`.
fn of_rule(source: &Path) -> Result<String, String> {
    // Relative to rustc's working directory (cargo passes a workspace
    // member's sources relative to the workspace); `include_bytes!` in the
    // expansion needs the path whole.
    let source = std::fs::canonicalize(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let rule_dir = source
        .ancestors()
        .find(|d| d.join("metadata.yml").is_file())
        .ok_or_else(|| format!("{}: no metadata.yml above it: a rule is a folder under policies/ with one", source.display()))?;
    let path = rule_dir.join("metadata.yml");
    let folder = rule_dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let shown = format!("policies/{folder}/metadata.yml");
    let metadata = read(&path, &shown)?;
    let name = metadata.annotations.get(annotations::TITLE).cloned().unwrap_or_default();
    let version = metadata.version().unwrap_or_default().to_string();
    if name != folder {
        return Err(format!(
            "{shown}: `annotations.\"{}\"` is `{name}`, but the rule's folder is `{folder}`: keep them equal",
            annotations::TITLE
        ));
    }
    // Built as its own crate, the crate is the rule: its name and version
    // must be the metadata's. (Compiled into the bundle, the crate is the
    // bundle's.)
    if std::env::var("CARGO_PKG_NAME").is_ok_and(|crate_name| crate_name == name) {
        let crate_version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
        if crate_version != version {
            return Err(format!(
                "{shown}: `annotations.\"{}\"` is `{version}` but the crate version is `{crate_version}`: keep them equal",
                annotations::VERSION
            ));
        }
    }
    Ok(render(&path, &name, &version, &metadata))
}

/// The bundle's metadata, which its build script writes to `$OUT_DIR`.
fn from_out_dir() -> Result<String, String> {
    let dir = std::env::var("OUT_DIR").map_err(|_| "OUT_DIR is not set: policy_metadata!(out_dir) needs a build script".to_string())?;
    let name = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let path = PathBuf::from(&dir).join("metadata.yml");
    let metadata = read(&path, &format!("the metadata {name}'s build script wrote"))?;
    Ok(render(&path, &name, &version, &metadata))
}

fn read(path: &Path, shown: &str) -> Result<Metadata, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read the rule's metadata: {e}"))?;
    Metadata::from_yaml(&text).map_err(|e| e.in_file(shown.to_string()).to_string())
}

/// Renders the `PolicyMetadata` expression. String literals are written with
/// `{:?}`, whose escapes are valid Rust.
fn render(path: &std::path::Path, name: &str, version: &str, m: &Metadata) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{ const _: &[u8] = include_bytes!({:?}); ::aigov_sdk::runtime::metadata::PolicyMetadata {{ name: {name:?}, version: {version:?}, rules: &[",
        path.display().to_string()
    );
    for r in &m.rules {
        let ops: Vec<&str> = r.operations.iter().map(|o| o.as_str()).collect();
        let _ = write!(
            out,
            "::aigov_sdk::runtime::metadata::Rule {{ api_groups: &{:?}, api_versions: &{:?}, resources: &{:?}, operations: &{:?} }},",
            r.api_groups, r.api_versions, r.resources, ops
        );
    }
    let _ = write!(out, "], mutating: {}, background_audit: {}, context_aware_resources: &[", m.mutating, m.background_audit);
    for c in &m.context_aware_resources {
        let _ = write!(out, "::aigov_sdk::runtime::metadata::ResourceKind {{ api_version: {:?}, kind: {:?} }},", c.api_version, c.kind);
    }
    out.push_str("], annotations: &[");
    for (k, v) in &m.annotations {
        let _ = write!(out, "({k:?}, {v:?}),");
    }
    out.push_str("] } }");
    out
}

fn compile_error(message: &str) -> TokenStream {
    format!("compile_error!({message:?})").parse().unwrap_or_default()
}
