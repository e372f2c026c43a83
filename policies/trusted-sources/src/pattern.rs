//! Image patterns: `registry-host/repository[:tag][@digest]`, with `*` and
//! `?` wildcards, matched against images after Docker's normalisation.
//!
//! The registry host is matched on its own, both sides read as
//! `registry_host` reads them (in lower case; `index.docker.io` and
//! `registry-1.docker.io` are `docker.io`), so a `*`
//! in it never reaches into the repository: `*.example.com/*` does not
//! match `evil.io/x.example.com/y`. In the repository, `*` crosses `/`
//! (`nvcr.io/nvidia/*` matches `nvcr.io/nvidia/k8s/dcgm-exporter`). A
//! pattern without a tag allows every tag and digest; with one, the image's
//! tag must match it (an image without tag or digest is `latest`); with a
//! digest, the image's digest must be that one.
//!
//! An image with a digest is judged by the digest, since that is what the
//! container runtime pulls: in `name:tag@digest` the tag is ignored
//! (containerd drops it with `reference.ParseDockerRef`). Such an image
//! matches no pattern with a tag and no digest, exactly as `name@digest`
//! does, and a pattern `name:tag@digest` matches by its digest alone.

use aigov_sdk::base::glob;
use aigov_sdk::cluster::image::{DOCKER_HUB, ImageRef, is_digest, registry_host};

/// A parsed image pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePattern<'p> {
    domain: String,
    path: &'p str,
    tag: Option<&'p str>,
    digest: Option<&'p str>,
}

impl<'p> ImagePattern<'p> {
    /// Parses a pattern; the error says what is wrong and what to write.
    pub fn parse(p: &'p str) -> Result<ImagePattern<'p>, String> {
        let names_host = |first: &str| first.contains(['.', ':']) || first == "localhost";
        let (domain, rest) = match p.split_once('/') {
            Some((first, rest)) if names_host(first) => (first, rest),
            Some(_) => {
                return Err(format!("`{p}` names no registry host, so Docker reads it as a Docker Hub image: write `{DOCKER_HUB}/{p}`"));
            }
            None if p.is_empty() => return Err("must not be empty".into()),
            None => {
                return Err(format!(
                    "`{p}` names no registry host, so Docker reads it as an official Docker Hub image: write `{DOCKER_HUB}/library/{p}`"
                ));
            }
        };
        let domain = registry_host(domain).into_owned();
        let (name_tag, digest) = match rest.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (rest, None),
        };
        let (path, tag) = match name_tag.split_once(':') {
            Some((n, t)) => (n, Some(t)),
            None => (name_tag, None),
        };
        if path.is_empty() {
            return Err(format!("`{p}` names no repository: end it with `/*` to allow every repository of `{domain}`"));
        }
        if path.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(format!("`{p}`: repository names are lower case, so `{path}` can never match"));
        }
        if tag == Some("") {
            return Err(format!("`{p}` has an empty tag: remove the `:` or write a tag pattern such as `:v*`"));
        }
        if let Some(d) = digest
            && !is_digest(d)
        {
            return Err(format!("`{p}`: `{d}` is not a digest (`sha256:` and 64 lower-case hexadecimal digits)"));
        }
        Ok(ImagePattern { domain, path, tag, digest })
    }

    /// Whether the image matches.
    pub fn matches(&self, image: &ImageRef<'_>) -> bool {
        glob::matches(&self.domain, &image.domain)
            && glob::matches(self.path, &image.path())
            && match (self.digest, self.tag) {
                (Some(d), _) => image.digest == Some(d),
                // `None` for an image with a digest: its tag is not pulled.
                (None, Some(t)) => image.effective_tag().is_some_and(|it| glob::matches(t, it)),
                (None, None) => true,
            }
    }

    /// Whether the pattern names a tag, and would match the image by the tag
    /// written beside its digest, were that tag what is pulled: the image a
    /// message must explain.
    pub fn matches_ignored_tag(&self, image: &ImageRef<'_>) -> bool {
        let (Some(t), None, Some(written), Some(_)) = (self.tag, self.digest, image.tag, image.digest) else {
            return false;
        };
        glob::matches(t, written) && ImagePattern { tag: None, ..self.clone() }.matches(image)
    }

    /// The repository the pattern names, without tag or digest
    /// (`docker.io/rayproject/ray`).
    pub fn repository(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// Whether the pattern names a tag and no digest, so it matches only
    /// images without a digest.
    pub fn tag_only(&self) -> bool {
        self.tag.is_some() && self.digest.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, image: &str) -> bool {
        ImagePattern::parse(pattern).unwrap().matches(&ImageRef::parse(image).unwrap())
    }

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn repositories_hosts_tags_and_digests() {
        assert!(m("nvcr.io/nvidia/*", "nvcr.io/nvidia/pytorch:24.05-py3"));
        assert!(m("nvcr.io/nvidia/*", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"));
        assert!(!m("nvcr.io/nvidia/*", "nvcr.io/nvidian/pytorch:1"));
        assert!(!m("nvcr.io/nvidia/*", "nvcr.io.evil.com/nvidia/pytorch:1"));
        assert!(m("NVCR.IO/nvidia/*", "Nvcr.io/nvidia/pytorch"), "hosts compare in any case");
        assert!(m("docker.io/library/nginx", "nginx"));
        assert!(m("index.docker.io/library/*", "nginx:1.27"));
        // Docker Hub however written, on either side.
        assert!(m("docker.io/*", "registry-1.docker.io/library/nginx"));
        assert!(m("docker.io/*", "Index.docker.io/library/nginx"));
        assert!(m("Registry-1.Docker.io/library/nginx", "nginx"));
        assert!(m("NVCR.io/nvidia/*", "nvcr.io/nvidia/pytorch:24.05-py3"));
        assert!(m("nvcr.io/nvidia/*", "Nvcr.IO/nvidia/pytorch:24.05-py3"));
        assert!(m("docker.io/rayproject/ray:2.*", "rayproject/ray:2.47.1-py312-gpu"));
        assert!(!m("docker.io/rayproject/ray:2.*", "rayproject/ray"), "no tag is latest");
        assert!(!m("docker.io/rayproject/ray:2.*", &format!("rayproject/ray@{D}")), "a digest alone has no tag");
        assert!(m("*.example.com/ml/*", "registry.example.com/ml/llm:1"));
        assert!(!m("*.example.com/*", "evil.io/x.example.com/y"), "the host is matched on its own");
        assert!(m(&format!("nvcr.io/nvidia/pytorch@{D}"), &format!("nvcr.io/nvidia/pytorch:24.05@{D}")));
        assert!(!m(&format!("nvcr.io/nvidia/pytorch@{D}"), "nvcr.io/nvidia/pytorch:24.05"));
        assert!(m("localhost:5000/*", "localhost:5000/x/y:1"));
    }

    #[test]
    fn an_image_with_a_digest_is_judged_by_the_digest() {
        let image = format!("rayproject/ray:2.9.0@{D}");
        // The runtime pulls the digest and ignores the tag: `2.9.0` says nothing.
        assert!(!m("docker.io/rayproject/ray:2.*", &image));
        assert!(!m("docker.io/rayproject/ray:2.*", &format!("rayproject/ray:latest@{D}")));
        // The registry and repository are still what they are.
        assert!(m("docker.io/rayproject/*", &image));
        assert!(!m("docker.io/other/*", &image));
        // A pattern's tag beside its digest is ignored too: the digest decides.
        assert!(m(&format!("docker.io/rayproject/ray:2.9.0@{D}"), &format!("rayproject/ray@{D}")));
        assert!(m(&format!("docker.io/rayproject/ray:2.9.0@{D}"), &format!("rayproject/ray:3.0@{D}")));
        assert!(!m(&format!("docker.io/rayproject/ray:2.9.0@{D}"), "rayproject/ray:2.9.0"));
        // Which refusals need the explanation.
        let why = |p: &str, i: &str| ImagePattern::parse(p).unwrap().matches_ignored_tag(&ImageRef::parse(i).unwrap());
        assert!(why("docker.io/rayproject/ray:2.*", &image));
        assert!(!why("docker.io/rayproject/ray:3.*", &image), "the tag would not match either");
        assert!(!why("docker.io/other/ray:2.*", &image), "another repository");
        assert!(!why("docker.io/rayproject/ray:2.*", &format!("rayproject/ray@{D}")), "no tag written");
        assert!(!why("docker.io/rayproject/ray:2.*", "rayproject/ray:2.9.0"), "no digest: it matches");
        assert!(!why("docker.io/rayproject/*", &image), "a pattern without a tag matches");
        assert!(ImagePattern::parse("docker.io/rayproject/ray:2.*").unwrap().tag_only());
        assert!(!ImagePattern::parse(&format!("docker.io/rayproject/ray:2.9.0@{D}")).unwrap().tag_only());
        assert!(!ImagePattern::parse("docker.io/rayproject/*").unwrap().tag_only());
    }

    #[test]
    fn patterns_that_cannot_match_say_what_to_write() {
        assert_eq!(
            ImagePattern::parse("nginx").unwrap_err(),
            "`nginx` names no registry host, so Docker reads it as an official Docker Hub image: write `docker.io/library/nginx`"
        );
        assert!(ImagePattern::parse("pytorch/*").unwrap_err().contains("write `docker.io/pytorch/*`"));
        assert!(ImagePattern::parse("*/ml/*").unwrap_err().contains("names no registry host"));
        assert!(ImagePattern::parse("nvcr.io/").unwrap_err().contains("names no repository"));
        assert!(ImagePattern::parse("nvcr.io/NVIDIA/*").unwrap_err().contains("can never match"));
        assert!(ImagePattern::parse("nvcr.io/x:").unwrap_err().contains("empty tag"));
        assert!(ImagePattern::parse("nvcr.io/x@sha256:12").unwrap_err().contains("is not a digest"));
        assert!(ImagePattern::parse("").is_err());
    }
}
