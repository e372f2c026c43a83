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

/// A path a scan leaves alone, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Left {
    /// The path, as the walk reached it.
    pub path: PathBuf,
    /// Why it is not read (`a named pipe, not a regular file: not read`).
    pub reason: String,
}

/// What [`collect_files`] found: the files to read, and the paths left
/// alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Files to read, in order.
    pub files: Vec<PathBuf>,
    /// Paths not read, in the order the walk met them.
    pub left: Vec<Left>,
}

/// Every manifest file under `paths`, in a stable order: paths in the order
/// given, directories walked in name order. Files named explicitly are
/// taken whatever their extension, and so are named pipes (`aigov scan
/// <(helm template chart)`); in directories, `.yaml`, `.yml` and `.json`
/// regular files, skipping hidden entries and `exclude` (the cluster
/// fixtures). A directory is walked once, however many links lead to it (a
/// link to a directory above it would otherwise never end); a pipe, socket
/// or device with a manifest's name in a directory is not read (a pipe
/// would wait for a writer forever): both are listed in
/// [`Collected::left`]. A directory without any manifest is an error: a CI
/// job pointed at the wrong folder must not pass for having found nothing
/// to refuse.
pub fn collect_files(paths: &[PathBuf], exclude: Option<&Path>) -> Result<Collected> {
    let mut walk = Walk { exclude: exclude.and_then(|p| p.canonicalize().ok()), seen: Vec::new(), out: Collected::default() };
    for p in paths {
        if p.as_os_str() == "-" {
            walk.out.files.push(p.clone());
            continue;
        }
        let Ok(meta) = std::fs::metadata(p) else { bail!("{} does not exist", p.display()) };
        if meta.is_file() || is_pipe(&meta.file_type()) {
            walk.out.files.push(p.clone());
        } else if meta.is_dir() {
            let before = walk.out.files.len();
            let again = dir_id(p).is_ok_and(|id| walk.seen.iter().any(|(seen, _)| *seen == id));
            walk.dir(p)?;
            // Named again (or inside one named before): its manifests were
            // found then, if it has any.
            let found_before =
                again && p.canonicalize().is_ok_and(|d| walk.out.files.iter().any(|f| f.canonicalize().is_ok_and(|f| f.starts_with(&d))));
            if walk.out.files.len() == before && !found_before {
                let also = match exclude {
                    Some(x) => format!(", nor in the cluster fixtures ({}), which are not scanned", x.display()),
                    None => String::new(),
                };
                let left: Vec<String> = walk
                    .out
                    .left
                    .iter()
                    .filter(|l| l.path.starts_with(p) && l.path != *p)
                    .map(|l| format!("{}: {}", l.path.display(), l.reason))
                    .collect();
                let left = if left.is_empty() { String::new() } else { format!("; not read: {}", left.join("; ")) };
                return Err(NothingToCheck(format!(
                    "no manifests in {}: no .yaml, .yml or .json file in it or below it (hidden files and directories are skipped{also}{left}); \
                     give the directory that holds the manifests, or name the files",
                    p.display()
                ))
                .into());
            }
        } else {
            bail!("{} is {}: name manifest files, directories of them, or `-` for standard input", p.display(), what(&meta.file_type()));
        }
    }
    Ok(walk.out)
}

/// A directory walk: the directories seen (each walked once), and what it
/// found.
struct Walk {
    exclude: Option<PathBuf>,
    seen: Vec<(DirId, PathBuf)>,
    out: Collected,
}

/// What tells a directory from every other: its device and inode where
/// there are such (a bind mount of a parent is caught too), its canonical
/// path elsewhere.
#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = PathBuf;

#[cfg(unix)]
fn dir_id(dir: &Path) -> std::io::Result<DirId> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(dir)?;
    Ok((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn dir_id(dir: &Path) -> std::io::Result<DirId> {
    dir.canonicalize()
}

#[cfg(unix)]
fn is_pipe(t: &std::fs::FileType) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(t)
}

#[cfg(not(unix))]
fn is_pipe(_: &std::fs::FileType) -> bool {
    false
}

/// What a path that is neither a regular file nor a directory is, for
/// messages: `a named pipe`.
fn what(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a named pipe";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    let _ = t;
    "neither a regular file nor a directory"
}

impl Walk {
    fn dir(&mut self, dir: &Path) -> Result<()> {
        if self.exclude.as_deref().is_some_and(|x| dir.canonicalize().is_ok_and(|d| d == x)) {
            return Ok(());
        }
        let id = dir_id(dir).with_context(|| format!("reading {}", dir.display()))?;
        if let Some((_, first)) = self.seen.iter().find(|(seen, _)| *seen == id) {
            let reason = format!(
                "the same directory as {}, walked already: each directory is followed once (a link to a directory above it would never end)",
                first.display()
            );
            self.out.left.push(Left { path: dir.to_path_buf(), reason });
            return Ok(());
        }
        self.seen.push((id, dir.to_path_buf()));
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
            // Links followed; a dangling one is taken as a file, and its
            // reading fails with the reason.
            let meta = std::fs::metadata(&path).ok();
            if meta.as_ref().is_some_and(std::fs::Metadata::is_dir) {
                self.dir(&path)?;
                continue;
            }
            if !matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
                || self.exclude.as_deref().is_some_and(|x| path.canonicalize().is_ok_and(|p| p == x))
            {
                continue;
            }
            match meta {
                Some(m) if !m.is_file() => {
                    let reason = format!("{}, not a regular file: not read", what(&m.file_type()));
                    self.out.left.push(Left { path, reason });
                }
                _ => self.out.files.push(path),
            }
        }
        Ok(())
    }
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
