//! Where a report writer keeps what it can write only at the end (a column
//! width, a count in a header, a group that is complete only when the last
//! document is in): in memory, or, for `aigov scan`, whose memory must not
//! grow with the number of documents, in a temporary file.
//!
//! A file spill holds no descriptor between writes: it buffers up to
//! [`BUFFER`] bytes and appends them by opening the file, so a writer may
//! keep a spill per rule or per namespace without running into the
//! process's limit on open files.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Bytes a file spill buffers before appending them to its file.
const BUFFER: usize = 16 << 10;

/// Bytes kept for the end of a report (see the module documentation).
pub enum Spill {
    /// In memory (a finished report rendered to a string).
    Memory(Vec<u8>),
    /// In a temporary file, removed when the spill is dropped.
    File {
        /// The file.
        path: PathBuf,
        /// Written, not appended to the file yet.
        pending: Vec<u8>,
    },
}

impl Spill {
    /// A spill in a new temporary file, `name` in its name.
    pub fn file(name: &str) -> Result<Spill> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("aigov-scan-{}-{n}-{name}", std::process::id()));
        // Created now, so the name is ours (and a clash is an error, not
        // another process's file appended to).
        std::fs::OpenOptions::new().create_new(true).write(true).open(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Spill::File { path, pending: Vec::new() })
    }

    /// A spill in memory.
    pub fn memory(_name: &str) -> Result<Spill> {
        Ok(Spill::Memory(Vec::new()))
    }

    /// Keeps `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Spill::Memory(v) => v.extend_from_slice(bytes),
            Spill::File { pending, .. } => {
                pending.extend_from_slice(bytes);
                if pending.len() >= BUFFER {
                    self.flush()?;
                }
            }
        }
        Ok(())
    }

    /// Appends what is buffered to the file.
    fn flush(&mut self) -> Result<()> {
        if let Spill::File { path, pending } = self
            && !pending.is_empty()
        {
            let mut f =
                std::fs::OpenOptions::new().append(true).open(&*path).with_context(|| format!("appending to {}", path.display()))?;
            f.write_all(pending).with_context(|| format!("writing {}", path.display()))?;
            pending.clear();
        }
        Ok(())
    }

    /// What was written, line by line.
    pub fn lines(&mut self) -> Result<Box<dyn Iterator<Item = std::io::Result<String>> + '_>> {
        use std::io::BufRead as _;
        self.flush()?;
        match self {
            Spill::Memory(v) => Ok(Box::new(v.split(|b| *b == b'\n').map(|l| Ok(String::from_utf8_lossy(l).into_owned())))),
            Spill::File { path, .. } => {
                let f = std::fs::File::open(&*path).with_context(|| format!("reading {}", path.display()))?;
                Ok(Box::new(std::io::BufReader::new(f).lines()))
            }
        }
    }

    /// Copies what was written to `out`.
    pub fn copy_to(&mut self, out: &mut dyn Write) -> Result<()> {
        self.flush()?;
        match self {
            Spill::Memory(v) => out.write_all(v)?,
            Spill::File { path, .. } => {
                let mut f = std::fs::File::open(&*path).with_context(|| format!("reading {}", path.display()))?;
                std::io::copy(&mut f, out)?;
            }
        }
        Ok(())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if let Spill::File { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `text` with every line after a line break prefixed by `pad`, and the
/// first line too: a pretty-printed JSON value placed `pad` deep in a
/// pretty-printed document.
pub fn indent(text: &str, pad: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str(pad);
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_spill_gives_back_what_was_written_past_its_buffer_and_is_removed() {
        let mut s = Spill::file("test").unwrap();
        let line = "x".repeat(1000);
        for _ in 0..40 {
            s.write(line.as_bytes()).unwrap();
            s.write(b"\n").unwrap();
        }
        let Spill::File { path, .. } = &s else { panic!("a file spill") };
        let path = path.clone();
        // More than the buffer was written, so part of it is in the file.
        assert!(std::fs::metadata(&path).unwrap().len() >= BUFFER as u64);
        let lines: Vec<String> = s.lines().unwrap().map(Result::unwrap).collect();
        assert_eq!(lines.len(), 40);
        assert!(lines.iter().all(|l| *l == line));
        let mut copy = Vec::new();
        s.copy_to(&mut copy).unwrap();
        assert_eq!(copy.len(), 40 * 1001);
        drop(s);
        assert!(!path.exists());
    }

    #[test]
    fn indent_prefixes_every_line() {
        assert_eq!(indent("{\n  \"a\": 1\n}", "    "), "    {\n      \"a\": 1\n    }");
    }
}
