//! Reading the documents `aigov scan` evaluates: the manifest files under
//! the paths given (directories walked in name order), standard input,
//! YAML or JSON text of one or more documents, the items of a `List`, each
//! document numbered as the reports show it ([`Source`]).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run::admission::{InvalidDocument, parse_manifests};
use crate::tools::report::model::{NothingToCheck, Source};

/// A document read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// Where.
    pub source: Source,
    /// The document.
    pub value: Value,
}

/// Every manifest file under `paths`, in a stable order: paths in the order
/// given, directories walked in name order. Files named explicitly are
/// taken whatever their extension; in directories, `.yaml`, `.yml` and
/// `.json` files, skipping hidden entries and `exclude` (the cluster
/// fixtures). A directory without any is an error: a CI job pointed at the
/// wrong folder must not pass for having found nothing to refuse.
pub fn collect_files(paths: &[PathBuf], exclude: Option<&Path>) -> Result<Vec<PathBuf>> {
    let excluded = exclude.and_then(|p| p.canonicalize().ok());
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || p.is_file() {
            out.push(p.clone());
        } else if p.is_dir() {
            let before = out.len();
            walk(p, excluded.as_deref(), &mut out)?;
            if out.len() == before {
                let also = match exclude {
                    Some(x) => format!(", nor in the cluster fixtures ({}), which are not scanned", x.display()),
                    None => String::new(),
                };
                return Err(NothingToCheck(format!(
                    "no manifests in {}: no .yaml, .yml or .json file in it or below it (hidden files and directories are skipped{also}); \
                     give the directory that holds the manifests, or name the files",
                    p.display()
                ))
                .into());
            }
        } else {
            bail!("{} does not exist", p.display());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, exclude: Option<&Path>, out: &mut Vec<PathBuf>) -> Result<()> {
    if exclude.is_some_and(|x| dir.canonicalize().is_ok_and(|d| d == x)) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort();
    for path in entries {
        let hidden = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            walk(&path, exclude, out)?;
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
            && !exclude.is_some_and(|x| path.canonicalize().is_ok_and(|p| p == x))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The documents of one file's text; `List`s are expanded into their items.
/// A file that does not parse is refused whole, its error naming the
/// document ([`failed_document`]).
pub fn documents(file: &str, text: &str) -> Result<Vec<Input>> {
    let docs = parse_manifests(text)?;
    let multi = docs.len() > 1;
    let mut out = Vec::new();
    for (i, value) in docs.into_iter().enumerate() {
        let source = Source { file: file.to_string(), document: i + 1, item: None, multi };
        let is_list = value.get("kind").and_then(Value::as_str).is_some_and(|k| k == "List" || k.ends_with("List"))
            && value.get("items").is_some_and(Value::is_array);
        match value {
            Value::Object(mut map) if is_list => {
                let items = match map.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                for (j, item) in items.into_iter().enumerate() {
                    out.push(Input { source: Source { item: Some(j + 1), ..source.clone() }, value: item });
                }
            }
            value => out.push(Input { source, value }),
        }
    }
    Ok(out)
}

/// Which document of a file a parse error of [`documents`] is about,
/// counted from 1 as its message counts; 0 when it is about the whole
/// file.
pub fn failed_document(e: &anyhow::Error) -> usize {
    e.downcast_ref::<InvalidDocument>().map_or(0, |d| d.0)
}

/// How standard input (`-`) is named in every report.
pub const STDIN: &str = "<stdin>";

/// How a path is named in the reports: as given, standard input as
/// [`STDIN`].
pub fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" { STDIN.to_string() } else { path.display().to_string() }
}

/// The text of a file, or of standard input for `-`, and the name its
/// documents are shown by ([`shown`]).
pub fn read_file(path: &Path) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
        return Ok((STDIN.into(), text));
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok((shown(path), text))
}

/// Why a document is not a Kubernetes object, or `None` if it is one (or an
/// AdmissionRequest/AdmissionReview).
pub fn not_an_object(value: &Value) -> Option<String> {
    let Some(map) = value.as_object() else {
        return Some(format!("not a Kubernetes object (a YAML {})", json_type(value)));
    };
    let is_request = map.contains_key("operation") && map.get("kind").is_some_and(Value::is_object);
    if is_request {
        return None;
    }
    let has = |k: &str| map.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    match (has("apiVersion"), has("kind")) {
        (true, true) => None,
        (false, false) => Some("not a Kubernetes object (no `apiVersion` and `kind`)".into()),
        (false, true) => Some("not a Kubernetes object (no `apiVersion`)".into()),
        (true, false) => Some("not a Kubernetes object (no `kind`)".into()),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
    }
}
