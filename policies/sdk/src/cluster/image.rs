//! Container image references, read the way Docker, containerd and the
//! kubelet read them (`github.com/distribution/reference`,
//! `ParseNormalizedNamed` then `TagNameOnly`):
//!
//! - the first `/`-separated component is a registry host only if it
//!   contains a `.` or a `:`, is `localhost`, or has an upper-case letter;
//!   otherwise the image is on Docker Hub (`docker.io`), and a one-component
//!   name is an official image under `library/`: `nginx` is
//!   `docker.io/library/nginx`, `pytorch/pytorch` is
//!   `docker.io/pytorch/pytorch`;
//! - the host is read as DNS and the container runtimes read it: in any
//!   case, so `Index.Docker.io` is `index.docker.io`; and Docker Hub's other
//!   names, `index.docker.io` (which `ParseNormalizedNamed` rewrites) and
//!   `registry-1.docker.io` (the host containerd sends `docker.io` to),
//!   are `docker.io` (see [`registry_host`]);
//! - `:tag` follows the repository, `@algorithm:hex` the digest; a reference
//!   with neither means `:latest`; with a digest, the digest is what is
//!   pulled and a tag beside it is ignored;
//! - repository paths are lower case, tags `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`,
//!   digests `sha256` (64 hex digits), `sha384` (96) or `sha512` (128).

use std::borrow::Cow;
use std::fmt;

/// Docker Hub, where a reference without a registry host points.
pub const DOCKER_HUB: &str = "docker.io";

/// The other names of Docker Hub's registry: `index.docker.io`, which
/// Docker's `ParseNormalizedNamed` rewrites to `docker.io`, and
/// `registry-1.docker.io`, the host containerd and Docker send `docker.io`
/// requests to. An image named through either is a Docker Hub image.
pub const DOCKER_HUB_HOSTS: [&str; 2] = ["index.docker.io", "registry-1.docker.io"];

/// A registry host (with its port) as it is compared: in lower case, as DNS
/// reads it, and Docker Hub's other names ([`DOCKER_HUB_HOSTS`]) as
/// `docker.io`. A host already in that form is returned as it is. Used for
/// images and for the registry hosts and image patterns settings name, so
/// that both sides read alike.
pub fn registry_host(host: &str) -> Cow<'_, str> {
    if DOCKER_HUB_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Cow::Borrowed(DOCKER_HUB);
    }
    if host.bytes().any(|b| b.is_ascii_uppercase()) { Cow::Owned(host.to_ascii_lowercase()) } else { Cow::Borrowed(host) }
}

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef<'a> {
    /// The registry host, with its port (`nvcr.io`, `localhost:5000`,
    /// `docker.io`), as [`registry_host`] reads it: in lower case, and
    /// `index.docker.io` and `registry-1.docker.io` as `docker.io`.
    pub domain: Cow<'a, str>,
    /// Whether the reference named no registry and `docker.io` was implied.
    pub implied_domain: bool,
    /// The repository path inside the registry (`nvidia/pytorch`,
    /// `library/nginx`), without any implied `library/`.
    path: &'a str,
    /// Whether `library/` was implied (a one-component Docker Hub name).
    official: bool,
    /// The tag, if one is written.
    pub tag: Option<&'a str>,
    /// The digest (`sha256:...`), if one is written.
    pub digest: Option<&'a str>,
}

impl<'a> ImageRef<'a> {
    /// Parses a reference as the kubelet would pull it. The error says what
    /// is wrong, for a message (`the repository name must be lower case`).
    pub fn parse(reference: &'a str) -> Result<ImageRef<'a>, String> {
        if reference.is_empty() {
            return Err("the reference is empty".into());
        }
        if reference.len() == 64 && reference.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err("a 64-digit hexadecimal string is an image ID, not a reference".into());
        }
        // The registry host: the first component, when it looks like one.
        let (domain, rest, implied_domain) = match reference.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" || first.bytes().any(|b| b.is_ascii_uppercase()) => {
                (first, rest, false)
            }
            _ => (DOCKER_HUB, reference, true),
        };
        let (name_tag, digest) = match rest.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (rest, None),
        };
        let (path, tag) = match name_tag.split_once(':') {
            Some((p, t)) => (p, Some(t)),
            None => (name_tag, None),
        };
        check_domain(domain)?;
        let domain = registry_host(domain);
        check_path(path)?;
        if let Some(t) = tag {
            check_tag(t)?;
        }
        if let Some(d) = digest {
            check_digest(d)?;
        }
        let official = domain == DOCKER_HUB && !path.contains('/');
        let name_len = domain.len() + 1 + path.len() + if official { "library/".len() } else { 0 };
        if name_len > 255 {
            return Err("the repository name is longer than 255 characters".into());
        }
        Ok(ImageRef { domain, implied_domain, path, official, tag, digest })
    }

    /// The repository path inside the registry, `library/` included for
    /// official Docker Hub images (`library/nginx`).
    pub fn path(&self) -> Cow<'a, str> {
        if self.official { Cow::Owned(format!("library/{}", self.path)) } else { Cow::Borrowed(self.path) }
    }

    /// The repository, fully qualified: `docker.io/library/nginx`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.domain, self.path())
    }

    /// The tag the kubelet pulls: the written one, `latest` when the
    /// reference has neither tag nor digest, `None` when it has a digest
    /// (`name:tag@digest` pulls the digest; the tag is ignored, as
    /// containerd drops it with `reference.ParseDockerRef`).
    pub fn effective_tag(&self) -> Option<&'a str> {
        match (self.tag, self.digest) {
            (Some(t), None) => Some(t),
            (None, None) => Some("latest"),
            (_, Some(_)) => None,
        }
    }

    /// Whether the image pulled can change under the same reference: no
    /// digest pins it.
    pub fn is_mutable(&self) -> bool {
        self.digest.is_none()
    }
}

/// The fully qualified reference: `nginx` is `docker.io/library/nginx:latest`,
/// `nvcr.io/nvidia/pytorch@sha256:…` stays as it is.
impl fmt::Display for ImageRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.domain)?;
        f.write_str("/")?;
        if self.official {
            f.write_str("library/")?;
        }
        f.write_str(self.path)?;
        // As written: a tag beside a digest is shown, though not pulled.
        if let Some(t) = self.tag.or(self.effective_tag()) {
            write!(f, ":{t}")?;
        }
        if let Some(d) = self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

fn check_domain(domain: &str) -> Result<(), String> {
    let bad = || Err(format!("`{domain}` is not a valid registry host"));
    // `[IPv6]` with an optional port, or host[:port].
    let (host, port) = if let Some(v6) = domain.strip_prefix('[') {
        let Some((addr, after)) = v6.split_once(']') else { return bad() };
        if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
            return bad();
        }
        match after {
            "" => (None, None),
            p => match p.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return bad(),
            },
        }
    } else {
        match domain.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(domain), None),
        }
    };
    if let Some(host) = host {
        let component_ok = |c: &str| {
            !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') && !c.starts_with('-') && !c.ends_with('-')
        };
        if !host.split('.').all(component_ok) {
            return bad();
        }
    }
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return bad();
    }
    Ok(())
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn path_component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.first().is_none_or(|&x| !alnum(x)) || b.last().is_none_or(|&x| !alnum(x)) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let Some(&x) = b.get(i) else { break };
        if alnum(x) {
            i += 1;
            continue;
        }
        // A separator run: `.`, `_`, `__` or one or more `-`.
        let start = i;
        while b.get(i).is_some_and(|&y| !alnum(y)) {
            i += 1;
        }
        let sep = c.get(start..i).unwrap_or_default();
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|y| y == b'-')) {
            return false;
        }
    }
    true
}

fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the repository name is empty".into());
    }
    if path.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!("the repository name `{path}` must be lower case"));
    }
    for c in path.split('/') {
        if !path_component_ok(c) {
            return Err(format!(
                "`{path}` is not a valid repository name (lower-case letters and digits, separated by `.`, `_`, `__`, `-` or `/`)"
            ));
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ok = tag.len() <= 128 && tag.as_bytes().first().is_some_and(|&b| word(b)) && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-');
    if ok { Ok(()) } else { Err(format!("`{tag}` is not a valid tag (up to 128 letters, digits, `_`, `.` and `-`)")) }
}

/// Whether `digest` is a digest the kubelet accepts: `sha256:` and 64
/// lower-case hexadecimal digits (or `sha384`, 96; `sha512`, 128).
pub fn is_digest(digest: &str) -> bool {
    check_digest(digest).is_ok()
}

fn check_digest(digest: &str) -> Result<(), String> {
    let bad = || Err(format!("`{digest}` is not a valid digest (`sha256:` and 64 lower-case hexadecimal digits)"));
    let Some((algorithm, hex)) = digest.split_once(':') else { return bad() };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return bad(),
    };
    if hex.len() == len && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) { Ok(()) } else { bad() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn norm(s: &str) -> String {
        ImageRef::parse(s).unwrap_or_else(|e| panic!("{s}: {e}")).to_string()
    }

    #[test]
    fn docker_normalisation() {
        assert_eq!(norm("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(norm("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(norm("pytorch/pytorch:2.3.0"), "docker.io/pytorch/pytorch:2.3.0");
        assert_eq!(norm("docker.io/nginx"), "docker.io/library/nginx:latest");
        assert_eq!(norm("index.docker.io/nginx"), "docker.io/library/nginx:latest");
        assert_eq!(norm("index.docker.io/rayproject/ray:2.47.1"), "docker.io/rayproject/ray:2.47.1");
        // Docker Hub's registry API host, where containerd sends `docker.io`.
        assert_eq!(norm("registry-1.docker.io/library/nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(norm("registry-1.docker.io/nginx"), "docker.io/library/nginx:latest");
        // Hosts in any case, as DNS reads them; repositories stay lower case.
        assert_eq!(norm("Index.docker.io/library/nginx"), "docker.io/library/nginx:latest");
        assert_eq!(norm("DOCKER.IO/pytorch/pytorch:2.3.0"), "docker.io/pytorch/pytorch:2.3.0");
        assert_eq!(norm("NVCR.io/nvidia/pytorch:24.05-py3"), "nvcr.io/nvidia/pytorch:24.05-py3");
        assert_eq!(ImageRef::parse("Index.docker.io/Library/nginx").unwrap_err(), "the repository name `Library/nginx` must be lower case");
        assert!(matches!(ImageRef::parse("nvcr.io/nvidia/x").unwrap().domain, Cow::Borrowed(_)), "nothing copied for a lower-case host");
        assert_eq!(registry_host("Registry-1.Docker.IO"), "docker.io");
        assert_eq!(registry_host("registry-2.docker.io"), "registry-2.docker.io");
        assert_eq!(registry_host("Localhost:5000"), "localhost:5000");
        assert_eq!(norm("nvcr.io/nvidia/pytorch:24.05-py3"), "nvcr.io/nvidia/pytorch:24.05-py3");
        assert_eq!(norm("nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"), "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5");
        assert_eq!(norm("localhost/foo"), "localhost/foo:latest");
        assert_eq!(norm("localhost:5000/foo/bar:v1"), "localhost:5000/foo/bar:v1");
        assert_eq!(norm("registry:5000/team/x"), "registry:5000/team/x:latest");
        // A first component without `.`, `:` and not `localhost` is a Docker Hub namespace.
        assert_eq!(norm("registry/team/x"), "docker.io/registry/team/x:latest");
        // An upper-case first component is a host (Docker's rule), read in lower case.
        assert_eq!(ImageRef::parse("Registry/x").unwrap().domain, "registry");
        assert_eq!(norm("[::1]:5000/x"), "[::1]:5000/x:latest");
    }

    #[test]
    fn digests() {
        let text = format!("nginx@{D}");
        let r = ImageRef::parse(&text).unwrap();
        assert_eq!(r.to_string(), format!("docker.io/library/nginx@{D}"), "no implied tag beside a digest");
        assert_eq!(r.effective_tag(), None);
        assert!(!r.is_mutable());
        let text = format!("nvcr.io/nvidia/pytorch:24.05-py3@{D}");
        let r = ImageRef::parse(&text).unwrap();
        assert_eq!((r.tag, r.digest), (Some("24.05-py3"), Some(D)));
        assert_eq!(r.effective_tag(), None, "the digest is pulled, the tag beside it ignored");
        assert_eq!(r.to_string(), text, "shown as written");
        assert_eq!(r.name(), "nvcr.io/nvidia/pytorch");
        assert!(ImageRef::parse("nginx@sha256:abc").is_err());
        assert!(ImageRef::parse("nginx@md5:0123456789abcdef0123456789abcdef").is_err());
        assert!(ImageRef::parse(&format!("nginx@{}", D.to_uppercase().replace("SHA", "sha"))).is_err());
        assert!(is_digest(D));
    }

    #[test]
    fn invalid_references() {
        for bad in [
            "",
            "Nginx",
            "docker.io/Library/nginx",
            "nginx:",
            "nginx:tag!",
            "nginx:-tag",
            "-nginx",
            "a//b",
            "nvcr.io/",
            "reg-.io/x",
            "reg.io:port/x",
            "nginx/",
            "a..b/c/d",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(ImageRef::parse("docker.io/Library/nginx").unwrap_err(), "the repository name `Library/nginx` must be lower case");
        assert!(ImageRef::parse(&format!("x:{}", "a".repeat(128))).is_ok());
        assert!(ImageRef::parse(&format!("x:{}", "a".repeat(129))).is_err());
        assert!(ImageRef::parse("a__b/c--d/e.f_g").is_ok());
        assert!(ImageRef::parse("a___b").is_err());
    }

    #[test]
    fn tags() {
        let r = ImageRef::parse("rayproject/ray").unwrap();
        assert_eq!((r.tag, r.effective_tag()), (None, Some("latest")));
        assert!(r.implied_domain);
        assert_eq!(r.path(), "rayproject/ray");
        let r = ImageRef::parse("nginx").unwrap();
        assert_eq!(r.path(), "library/nginx");
        assert!(r.is_mutable());
    }
}
