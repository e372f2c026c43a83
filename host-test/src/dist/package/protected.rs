//! Writing files into a directory a team edits: a file is written only if
//! it is new or still exactly what aigov wrote there last time, by the
//! checksums recorded in [`RECORD`] (`.aigov-generated.sha256`); a file
//! edited since, or not written by aigov, is left alone and named.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::dist::oci::sha256_digest;

/// The record of what `aigov manifests` wrote in a directory: one
/// `sha256sum` line per file, so `sha256sum -c` run there lists the files
/// edited since.
pub const RECORD: &str = ".aigov-generated.sha256";

/// Why a file was left alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptReason {
    /// aigov wrote it, and it changed since.
    Edited,
    /// It was there, and aigov has no record of writing it.
    NotGenerated,
}

/// A file left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// Relative to the output directory.
    pub path: String,
    /// Why.
    pub reason: KeptReason,
}

/// What an edit to a file aigov wrote amounts to ([`write_protected_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edited {
    /// It changes what the file means: the file is left alone and named.
    Conflict,
    /// The file means what aigov writes now (the edit was carried into
    /// it): left as edited, and recorded as it is.
    Same,
    /// The new content replaces the edit (it gives, on purpose, what the
    /// edit gave another way).
    Superseded,
}

/// What [`write_protected`] did, file by file (paths relative to the
/// output directory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// New files, and files still as aigov wrote them whose content changed.
    pub written: Vec<String>,
    /// Files that already held exactly the new content.
    pub unchanged: Vec<String>,
    /// Files edited since aigov wrote them that mean what aigov writes now
    /// ([`Edited::Same`]), left as edited.
    pub same: Vec<String>,
    /// Files edited since aigov wrote them whose edit the new content
    /// replaced ([`Edited::Superseded`]); in `written` too.
    pub superseded: Vec<String>,
    /// Files left alone.
    pub kept: Vec<Kept>,
}

/// The record in `dir`: path → sha256 hex. A missing record is empty.
pub fn read_record(dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = dir.join(RECORD);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut record = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let Some((hex, file)) = line.split_once("  ") else {
            bail!("{}: line {} is not `<sha256>  <file>`", path.display(), i + 1);
        };
        record.insert(file.to_string(), hex.to_string());
    }
    Ok(record)
}

fn hex_digest(bytes: &[u8]) -> String {
    sha256_digest(bytes).trim_start_matches("sha256:").to_string()
}

/// Writes `files` (relative path, content) under `dir`, never overwriting a
/// file that differs from what aigov last wrote there (unless `force`),
/// and records what it wrote in [`RECORD`].
pub fn write_protected(dir: &Path, files: &[(String, String)], force: bool) -> Result<WriteReport> {
    write_protected_with(dir, files, force, &|_, _, _| Edited::Conflict)
}

/// [`write_protected`], with `judge` (relative path, current bytes, new
/// content) saying what an edit to a file aigov wrote amounts to.
pub fn write_protected_with(
    dir: &Path,
    files: &[(String, String)],
    force: bool,
    judge: &dyn Fn(&str, &[u8], &str) -> Edited,
) -> Result<WriteReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let previous = read_record(dir)?;
    let mut record = BTreeMap::new();
    let mut report = WriteReport::default();
    for (relative, content) in files {
        let path = dir.join(relative);
        let new_hex = hex_digest(content.as_bytes());
        let current = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let Some(bytes) = current else {
            write(&path, content)?;
            report.written.push(relative.clone());
            record.insert(relative.clone(), new_hex);
            continue;
        };
        if bytes == content.as_bytes() {
            report.unchanged.push(relative.clone());
            record.insert(relative.clone(), new_hex);
            continue;
        }
        let as_written = previous.get(relative) == Some(&hex_digest(&bytes));
        // Only a file aigov wrote once is judged: its edits can have been
        // carried into the new content.
        let verdict = if force || !previous.contains_key(relative) { Edited::Conflict } else { judge(relative, &bytes, content) };
        if verdict == Edited::Same {
            // Left as the team wrote it, and recorded so: once the new
            // content means something else, it follows (with the edits
            // carried).
            if as_written {
                report.unchanged.push(relative.clone())
            } else {
                report.same.push(relative.clone())
            }
            record.insert(relative.clone(), hex_digest(&bytes));
        } else if force || as_written || verdict == Edited::Superseded {
            write(&path, content)?;
            report.written.push(relative.clone());
            if !as_written && !force {
                report.superseded.push(relative.clone());
            }
            record.insert(relative.clone(), new_hex);
        } else {
            let reason = if previous.contains_key(relative) { KeptReason::Edited } else { KeptReason::NotGenerated };
            // Keep the old checksum, so the file still counts as edited
            // next time.
            if let Some(old) = previous.get(relative) {
                record.insert(relative.clone(), old.clone());
            }
            report.kept.push(Kept { path: relative.clone(), reason });
        }
    }
    let mut text = String::new();
    for (file, hex) in &record {
        let _ = writeln!(text, "{hex}  {file}");
    }
    write(&dir.join(RECORD), &text)?;
    Ok(report)
}

pub(super) fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
