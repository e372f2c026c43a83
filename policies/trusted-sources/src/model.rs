//! Model locations: finding them, checking them against the allowed
//! sources, and telling whether they are pinned.

use std::borrow::Cow;

use aigov_sdk::base::glob;
use aigov_sdk::cluster::image::{ImageRef, registry_host};
use aigov_sdk::prelude::*;

/// Whether `text` starts with one of `prefixes`, in any case.
pub fn has_prefix(text: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| text.get(..p.len()).is_some_and(|head| head.eq_ignore_ascii_case(p)))
}

/// The model locations in one argument: every whitespace-separated word
/// (quotes stripped) that starts with a prefix, or whose value after the
/// first `=` does (`--model=s3://...`, `MODEL=hf://...` in a shell line).
pub fn in_argument<'t>(arg: &'t str, prefixes: &'t [String]) -> impl Iterator<Item = &'t str> {
    let unquote = |w: &'t str| w.trim_matches(|c| c == '"' || c == '\'');
    arg.split_whitespace().map(unquote).filter_map(move |word| {
        if has_prefix(word, prefixes) {
            return Some(word);
        }
        let (_, value) = word.split_once('=')?;
        Some(unquote(value)).filter(|v| has_prefix(v, prefixes))
    })
}

/// `scheme://authority/rest`, split.
struct Parts<'t> {
    scheme: &'t str,
    authority: &'t str,
    rest: &'t str,
}

fn parts(location: &str) -> Option<Parts<'_>> {
    let (scheme, after) = location.split_once("://")?;
    let (authority, rest) = after.split_once('/').unwrap_or((after, ""));
    Some(Parts { scheme, authority, rest })
}

/// The location as it is compared: the scheme in lower case; for
/// `http(s)` the host too (they are case-insensitive; paths are not); for
/// `oci` the registry host as images read it (in lower case, and
/// `index.docker.io` and `registry-1.docker.io` as `docker.io`). Already in
/// that form (the common case), the location is returned as is.
pub fn normalise(location: &str) -> Cow<'_, str> {
    let Some(p) = parts(location) else { return Cow::Borrowed(location) };
    let upper = |s: &str| s.bytes().any(|b| b.is_ascii_uppercase());
    let authority = if p.scheme.eq_ignore_ascii_case("http") || p.scheme.eq_ignore_ascii_case("https") {
        if upper(p.authority) { Cow::Owned(p.authority.to_ascii_lowercase()) } else { Cow::Borrowed(p.authority) }
    } else if p.scheme.eq_ignore_ascii_case("oci") {
        registry_host(p.authority)
    } else {
        Cow::Borrowed(p.authority)
    };
    if !upper(p.scheme) && *authority == *p.authority {
        return Cow::Borrowed(location);
    }
    let scheme = p.scheme.to_ascii_lowercase();
    Cow::Owned(if location.get(p.scheme.len() + 3 + p.authority.len()..).is_some_and(|r| r.starts_with('/')) {
        format!("{scheme}://{authority}/{}", p.rest)
    } else {
        format!("{scheme}://{authority}")
    })
}

/// Why a location cannot be compared with the allowed sources at all.
pub fn unreadable(location: &str) -> Option<String> {
    let p = parts(location)?;
    if p.authority.contains('@') {
        return Some(format!(
            "`{location}` carries user information before its host (`…@`), which hides where it really points: write the location without it and pass credentials in a Secret"
        ));
    }
    let dot = |s: &str| {
        let s = s.to_ascii_lowercase().replace("%2e", ".");
        s == "." || s == ".."
    };
    if p.rest.split(['/', '?', '#']).any(dot) {
        return Some(format!(
            "`{location}` has `.` or `..` path segments, which can lead out of an allowed location: write the path without them"
        ));
    }
    None
}

/// Whether an allowed-sources pattern matches the location.
pub fn allowed(patterns: &[Glob], location: &str) -> bool {
    let location = normalise(location);
    patterns.iter().any(|p| glob::matches(&normalise(p.as_str()), &location))
}

/// Whether a location pins what it names, by its scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pin {
    /// A commit or a digest.
    Pinned,
    /// Could be pinned: what to write instead.
    Unpinned(String),
    /// The scheme has no way to name a revision.
    Unpinnable,
}

fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The pin of a location:
/// - `hf://<org>/<repo>:<revision>`: pinned when the revision is a 40-digit
///   commit hash (a branch or tag such as `main` moves);
/// - `https://huggingface.co/[datasets/|spaces/]<org>/<repo>/{resolve,blob,tree,raw}/<revision>/...`:
///   the same;
/// - `oci://<image reference>`: pinned by a digest;
/// - anything else (`s3://`, `gs://`, `pvc://`, other `https://`): cannot
///   be pinned.
pub fn pin(location: &str) -> Pin {
    let Some(p) = parts(location) else { return Pin::Unpinnable };
    match p.scheme.to_ascii_lowercase().as_str() {
        "hf" => {
            let repo = format!("{}/{}", p.authority, p.rest);
            let (name, rev) = repo.rsplit_once(':').filter(|(_, r)| !r.contains('/')).unwrap_or((&repo, ""));
            if is_commit(rev) { Pin::Pinned } else { Pin::Unpinned(format!("name a commit: `hf://{name}:<40-digit commit hash>`")) }
        }
        "https" | "http" if matches!(p.authority.to_ascii_lowercase().as_str(), "huggingface.co" | "hf.co") => {
            let segs: Vec<&str> = p.rest.split('/').collect();
            let skip = usize::from(matches!(segs.first(), Some(&"datasets" | &"spaces")));
            let kind = segs.get(skip + 2).copied();
            let rev = segs.get(skip + 3).copied().unwrap_or_default();
            if matches!(kind, Some("resolve" | "blob" | "tree" | "raw")) && is_commit(rev) {
                Pin::Pinned
            } else {
                let repo = segs.get(..skip + 2).map(|s| s.join("/")).unwrap_or_default();
                Pin::Unpinned(format!("use a URL with a commit: `https://{}/{repo}/resolve/<40-digit commit hash>/<file>`", p.authority))
            }
        }
        "oci" => {
            let reference = location.get(p.scheme.len() + 3..).unwrap_or_default();
            match ImageRef::parse(reference) {
                Ok(r) if r.digest.is_some() => Pin::Pinned,
                Ok(r) => Pin::Unpinned(format!("add its digest: `oci://{}@sha256:<digest>`", r.name())),
                Err(_) => Pin::Unpinned(format!(
                    "write a valid image reference with a digest: `oci://<registry>/<repository>@sha256:<digest>` (not `{reference}`)"
                )),
            }
        }
        _ => Pin::Unpinnable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    fn prefixes() -> Vec<String> {
        super::super::Settings::default().model_uri_prefixes
    }

    #[test]
    fn locations_in_arguments() {
        let p = prefixes();
        let found = |arg| in_argument(arg, &p).collect::<Vec<_>>();
        assert_eq!(found("s3://ml-models/llama"), ["s3://ml-models/llama"]);
        assert_eq!(found("--model=hf://meta-llama/Llama-3-8B"), ["hf://meta-llama/Llama-3-8B"]);
        assert_eq!(
            found("python serve.py --model 'gs://b/m' --out S3://x/y --x=\"hf://o/m\""),
            ["gs://b/m", "S3://x/y", "hf://o/m"],
            "shell lines, quotes, any case"
        );
        assert!(found("--data=/mnt/data").is_empty());
        assert!(found("https://example.com/x").is_empty());
        assert_eq!(found("https://huggingface.co/org/m"), ["https://huggingface.co/org/m"]);
    }

    #[test]
    fn matching_is_case_insensitive_only_where_uris_are() {
        let pats = [Glob::new("s3://ml-models/*"), Glob::new("https://huggingface.co/my-org/*")];
        assert!(allowed(&pats, "S3://ml-models/llama/v1"));
        assert!(!allowed(&pats, "s3://ML-models/llama"));
        assert!(allowed(&pats, "https://HuggingFace.co/my-org/m"));
        assert!(!allowed(&pats, "s3://ml-models-evil/x"));
        assert!(unreadable("https://huggingface.co/my-org/../evil/m").is_some());
        assert!(unreadable("s3://ml-models/%2E%2e/x").is_some());
        assert!(unreadable("https://huggingface.co@evil.com/my-org/m").is_some());
        assert!(unreadable("s3://ml-models/a..b/x").is_none());
        assert_eq!(normalise("HF://Org/M"), "hf://Org/M");
        assert_eq!(normalise("https://HuggingFace.co/Org/M"), "https://huggingface.co/Org/M");
        assert_eq!(normalise("s3://Bucket/M"), "s3://Bucket/M");
        assert_eq!(normalise("HTTPS://huggingface.co"), "https://huggingface.co");
        // An `oci://` location's host is a registry host, read as images read it.
        assert_eq!(normalise("oci://Registry.Example.com/Models/m:v1"), "oci://registry.example.com/Models/m:v1");
        assert_eq!(normalise("oci://registry-1.docker.io/org/m:v1"), "oci://docker.io/org/m:v1");
        assert!(allowed(&[Glob::new("oci://docker.io/org/*")], "OCI://Index.Docker.io/org/m:v1"));
        assert!(matches!(normalise("https://huggingface.co/Org/M"), Cow::Borrowed(_)), "already normal: not copied");
    }

    #[test]
    fn pins_by_scheme() {
        assert_eq!(pin(&format!("hf://meta-llama/Llama-3-8B:{C}")), Pin::Pinned);
        assert!(
            matches!(pin("hf://meta-llama/Llama-3-8B:main"), Pin::Unpinned(a) if a == "name a commit: `hf://meta-llama/Llama-3-8B:<40-digit commit hash>`")
        );
        assert!(matches!(pin("hf://meta-llama/Llama-3-8B"), Pin::Unpinned(_)));
        assert_eq!(pin(&format!("https://huggingface.co/org/m/resolve/{C}/model.safetensors")), Pin::Pinned);
        assert_eq!(pin(&format!("https://huggingface.co/datasets/org/d/tree/{C}")), Pin::Pinned);
        assert!(
            matches!(pin("https://huggingface.co/org/m/resolve/main/x"), Pin::Unpinned(a) if a.contains("https://huggingface.co/org/m/resolve/<40-digit"))
        );
        assert!(matches!(pin("https://huggingface.co/org/m"), Pin::Unpinned(_)));
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(pin(&format!("oci://registry.example.com/models/llama@{digest}")), Pin::Pinned);
        assert!(
            matches!(pin("oci://registry.example.com/models/llama:v1"), Pin::Unpinned(a) if a.contains("oci://registry.example.com/models/llama@sha256"))
        );
        assert_eq!(pin("s3://ml-models/llama"), Pin::Unpinnable);
        assert_eq!(pin("pvc://models/llama"), Pin::Unpinnable);
        assert_eq!(pin("https://example.com/model.tar.gz"), Pin::Unpinnable);
    }
}
