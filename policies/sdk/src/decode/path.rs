//! Paths into a JSON document (`spec.containers[0].resources`): how
//! messages name a field, and where edits go.

use std::borrow::Cow;
use std::fmt::Write as _;

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    /// An object member: a field name the code spells (borrowed, so paths
    /// are cheap to extend on the hot path) or one from the input or the
    /// settings (owned).
    Key(Cow<'static, str>),
    /// An array element.
    Index(usize),
}

impl From<&str> for Seg {
    fn from(key: &str) -> Seg {
        Seg::Key(Cow::Owned(key.to_string()))
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::Index(i)
    }
}

/// A path into a JSON document.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(pub Vec<Seg>);

impl Path {
    /// The document itself.
    pub fn root() -> Path {
        Path(Vec::new())
    }

    /// This path extended by one key: a literal (`"spec"`, copied by
    /// reference) or a `String` (moved in). A key borrowed from elsewhere is
    /// given as `key.to_string()`.
    pub fn key(&self, key: impl Into<Cow<'static, str>>) -> Path {
        self.with(Seg::Key(key.into()))
    }

    /// This path extended by one index.
    pub fn index(&self, i: usize) -> Path {
        self.with(Seg::Index(i))
    }

    /// This path extended by `seg`, allocated once at its final length.
    fn with(&self, seg: Seg) -> Path {
        let mut p = Path(Vec::with_capacity(self.0.len() + 1));
        p.0.extend_from_slice(&self.0);
        p.0.push(seg);
        p
    }

    /// This path extended by several keys.
    pub fn keys(&self, keys: &[&str]) -> Path {
        let mut p = self.clone();
        p.0.extend(keys.iter().map(|k| Seg::Key(Cow::Owned((*k).to_string()))));
        p
    }

    /// Whether this is the document itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// As an RFC 6901 JSON Pointer (`/spec/containers/0`).
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        for s in &self.0 {
            out.push('/');
            match s {
                Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
                Seg::Index(i) => {
                    let _ = write!(out, "{i}");
                }
            }
        }
        out
    }
}

/// `spec.containers[0].name`, the form messages use.
impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}
