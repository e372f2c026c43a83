//! Settings of `trusted-sources`.

use aigov_sdk::base::glob::non_empty_patterns;
use aigov_sdk::prelude::*;

use serde::{Deserialize, Serialize};

use super::pattern::ImagePattern;

/// The rule's own settings (the shared `mode`, exemptions and
/// `allowExistingViolations` come on top). There is no safe default list
/// of images or model sources: settings without them (or, for images,
/// without another image check) are refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Image patterns (`nvcr.io/nvidia/*`, `registry.example.com/ml/*:v*`)
    /// every container image must match, after Docker's normalisation.
    /// Required, unless another image check is on (a deny list,
    /// `forbidLatestTag`, `requireDigest`): then `[]` allows every source.
    pub allowed_images: Vec<String>,
    /// Registry hosts (wildcards, any case) no image may come from, after
    /// Docker's normalisation (`docker.io` for Docker Hub).
    pub denied_registries: Vec<Glob>,
    /// Image patterns, as in `allowedImages`, no image may match.
    pub denied_images: Vec<String>,
    /// Tags (wildcards) no image may be pulled by; an image without tag or
    /// digest is `latest`, one with a digest is pulled by the digest.
    pub denied_tags: Vec<Glob>,
    /// Refuse images tagged `latest`, or with no tag and no digest.
    pub forbid_latest_tag: bool,
    /// Every image carries a digest (`@sha256:...`).
    pub require_digest: bool,
    /// Check where models come from.
    pub check_model_sources: bool,
    /// Locations models may come from (`s3://ml-models/*`,
    /// `hf://my-org/*`). Required while `checkModelSources` is on.
    pub allowed_model_sources: Vec<Glob>,
    /// What makes an environment value or argument a model location.
    pub model_uri_prefixes: Vec<String>,
    /// Environment variables whose values are read for model locations
    /// (wildcards, any case).
    pub model_env_names: Vec<Glob>,
    /// Read `command` and `args` for model locations.
    pub model_args: bool,
    /// Model locations must be pinned to a revision or digest.
    pub require_pinned_models: bool,
    /// Locations that count as pinned although their URI cannot say so
    /// (write-once buckets).
    pub immutable_model_sources: Vec<Glob>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allowed_images: Vec::new(),
            denied_registries: Vec::new(),
            denied_images: Vec::new(),
            denied_tags: Vec::new(),
            forbid_latest_tag: false,
            require_digest: false,
            check_model_sources: true,
            allowed_model_sources: Vec::new(),
            model_uri_prefixes: ["s3://", "gs://", "hf://", "pvc://", "oci://", "https://huggingface.co/"]
                .into_iter()
                .map(String::from)
                .collect(),
            model_env_names: vec![Glob::new("*")],
            model_args: true,
            require_pinned_models: false,
            immutable_model_sources: Vec::new(),
        }
    }
}

/// A model location pattern's scheme (`s3`), if it has one.
pub fn scheme(s: &str) -> Option<&str> {
    let (scheme, _) = s.split_once("://")?;
    let ok = scheme.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    ok.then_some(scheme)
}

fn location_patterns(key: &str, list: &[Glob]) -> Result<(), SettingsError> {
    non_empty_patterns(&key, list)?;
    for (i, g) in list.iter().enumerate() {
        let p = g.as_str();
        match scheme(p) {
            None => {
                return Err(SettingsError::new(
                    format!("{key}[{i}]"),
                    format!(
                        "`{p}` names no scheme, so no location can match it: write it as a URI, such as `s3://{}`",
                        p.trim_start_matches('/')
                    ),
                ));
            }
            Some(s) if s.bytes().any(|b| b.is_ascii_uppercase()) => {
                return Err(SettingsError::new(
                    format!("{key}[{i}]"),
                    format!("`{p}`: schemes are compared in lower case, so write `{}://`", s.to_ascii_lowercase()),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl RuleSettings for Settings {
    /// No registry is safe to trust by default.
    const REQUIRES_SETTINGS: bool = true;

    const NO_EXEMPT_IMAGES_BECAUSE: &'static str = "the image is what this rule judges, and exempting it by name would let anyone use that name; list the images to allow in `allowedImages`";

    fn validate(&self) -> Result<(), SettingsError> {
        let other_image_checks = !self.denied_registries.is_empty()
            || !self.denied_images.is_empty()
            || !self.denied_tags.is_empty()
            || self.forbid_latest_tag
            || self.require_digest;
        if self.allowed_images.is_empty() && !other_image_checks {
            return Err(SettingsError::new(
                "allowedImages",
                "must list the images workloads may use; there is no safe default. Add your registries, for example \
                 `allowedImages: [\"nvcr.io/nvidia/*\", \"registry.example.com/ml-platform/*\"]` (or check images another way: \
                 refuse some with `deniedRegistries`, `deniedImages` or `deniedTags`, or set `forbidLatestTag` or `requireDigest`)",
            ));
        }
        non_empty_patterns(&"deniedRegistries", &self.denied_registries)?;
        for (i, host) in self.denied_registries.iter().enumerate() {
            if let Some((first, _)) = host.as_str().split_once('/') {
                return Err(SettingsError::new(
                    format!("deniedRegistries[{i}]"),
                    format!(
                        "`{host}` names a repository, and `deniedRegistries` holds registry hosts: write `{first}`, or refuse the repository with \
                         `deniedImages: [\"{host}/*\"]`",
                        host = host.as_str().trim_end_matches(['/', '*'])
                    ),
                ));
            }
        }
        for (i, p) in self.denied_images.iter().enumerate() {
            if let Err(why) = ImagePattern::parse(p) {
                return Err(SettingsError::new(format!("deniedImages[{i}]"), why));
            }
        }
        non_empty_patterns(&"deniedTags", &self.denied_tags)?;
        for (i, p) in self.allowed_images.iter().enumerate() {
            match ImagePattern::parse(p) {
                Err(why) => return Err(SettingsError::new(format!("allowedImages[{i}]"), why)),
                // An image with a digest is judged by it, not by a tag beside it.
                Ok(pattern) if self.require_digest && pattern.tag_only() => {
                    let name = pattern.repository();
                    return Err(SettingsError::new(
                        format!("allowedImages[{i}]"),
                        format!(
                            "`{p}` names a tag, but with `requireDigest` every image carries a digest, and the container runtime pulls the digest and \
                             ignores a tag beside it, so no image can match: allow the repository (`{name}`) or a digest (`{name}@sha256:<digest>`)"
                        ),
                    ));
                }
                Ok(_) => {}
            }
        }
        if self.check_model_sources {
            if self.allowed_model_sources.is_empty() {
                return Err(SettingsError::new(
                    "allowedModelSources",
                    "must list the locations models may come from; there is no safe default. Add them, for example \
                     `allowedModelSources: [\"s3://ml-models/*\", \"hf://my-org/*\"]`, or set `checkModelSources: false`",
                ));
            }
        } else {
            if !self.allowed_model_sources.is_empty() {
                return Err(SettingsError::new(
                    "allowedModelSources",
                    "has no effect while `checkModelSources` is `false`: remove it, or set `checkModelSources: true`",
                ));
            }
            if self.require_pinned_models {
                return Err(SettingsError::new(
                    "requirePinnedModels",
                    "needs `checkModelSources: true`: models are only found when their sources are checked",
                ));
            }
        }
        location_patterns("allowedModelSources", &self.allowed_model_sources)?;
        for (i, p) in self.model_uri_prefixes.iter().enumerate() {
            if scheme(p).is_none() || !p.contains("://") {
                return Err(SettingsError::new(
                    format!("modelUriPrefixes[{i}]"),
                    format!("`{p}` is not the start of a URI, such as `s3://` or `https://huggingface.co/`"),
                ));
            }
        }
        non_empty_patterns(&"modelEnvNames", &self.model_env_names)?;
        if !self.require_pinned_models && !self.immutable_model_sources.is_empty() {
            return Err(SettingsError::new(
                "immutableModelSources",
                "has no effect while `requirePinnedModels` is `false`: remove it, or set `requirePinnedModels: true`",
            ));
        }
        location_patterns("immutableModelSources", &self.immutable_model_sources)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::runtime::settings::Settings as Full;
    use aigov_sdk::testing::settings::refused;

    const OK: &str = r#""allowedImages":["nvcr.io/nvidia/*"],"allowedModelSources":["s3://ml-models/*"]"#;

    #[test]
    fn there_is_no_default_list() {
        assert!(
            refused::<Settings>("{}")
                .starts_with("setting `allowedImages`: must list the images workloads may use; there is no safe default")
        );
        assert!(refused::<Settings>(r#"{"allowedImages":["nvcr.io/nvidia/*"]}"#).starts_with("setting `allowedModelSources`: must list"));
        let s = Full::<Settings>::parse_valid(&format!("{{{OK}}}")).unwrap().rule;
        assert!(s.check_model_sources && s.model_args && !s.require_digest && !s.forbid_latest_tag);
        assert_eq!(s.model_uri_prefixes.len(), 6);
        Full::<Settings>::parse_valid(r#"{"allowedImages":["nvcr.io/nvidia/*"],"checkModelSources":false}"#).unwrap();
    }

    #[test]
    fn deny_lists_and_other_image_checks_make_allowed_images_optional() {
        for other in [
            r#""deniedRegistries":["docker.io"]"#,
            r#""deniedImages":["docker.io/library/*"]"#,
            r#""deniedTags":["latest"]"#,
            r#""forbidLatestTag":true"#,
            r#""requireDigest":true"#,
        ] {
            Full::<Settings>::parse_valid(&format!(r#"{{{other},"checkModelSources":false}}"#)).unwrap_or_else(|e| panic!("{other}: {e}"));
        }
        assert!(refused::<Settings>(r#"{"checkModelSources":false}"#).contains("or check images another way"));
        assert_eq!(
            refused::<Settings>(r#"{"deniedRegistries":["docker.io/library/*"],"checkModelSources":false}"#),
            "setting `deniedRegistries[0]`: `docker.io/library` names a repository, and `deniedRegistries` holds registry hosts: write `docker.io`, \
             or refuse the repository with `deniedImages: [\"docker.io/library/*\"]`"
        );
        assert!(refused::<Settings>(r#"{"deniedRegistries":[""],"checkModelSources":false}"#).starts_with("setting `deniedRegistries[0]`"));
        assert!(refused::<Settings>(r#"{"deniedTags":[""],"checkModelSources":false}"#).starts_with("setting `deniedTags[0]`"));
        assert!(
            refused::<Settings>(r#"{"deniedImages":["nginx"],"checkModelSources":false}"#)
                .starts_with("setting `deniedImages[0]`: `nginx` names no registry host")
        );
    }

    #[test]
    fn patterns_that_can_never_match_are_refused() {
        assert!(refused::<Settings>(r#"{"allowedImages":["nginx"]}"#).contains("write `docker.io/library/nginx`"));
        assert!(
            refused::<Settings>(&format!(r#"{{{OK},"allowedModelSources":["ml-models/*"]}}"#))
                .starts_with("setting `allowedModelSources[0]`: `ml-models/*` names no scheme")
        );
        assert!(refused::<Settings>(&format!(r#"{{{OK},"allowedModelSources":["S3://x/*"]}}"#)).contains("write `s3://`"));
        assert!(refused::<Settings>(&format!(r#"{{{OK},"modelUriPrefixes":["s3:"]}}"#)).starts_with("setting `modelUriPrefixes[0]`"));
        assert!(refused::<Settings>(&format!(r#"{{{OK},"modelEnvNames":[""]}}"#)).starts_with("setting `modelEnvNames[0]`"));
    }

    #[test]
    fn contradictions_are_refused() {
        assert!(
            refused::<Settings>(r#"{"allowedImages":["nvcr.io/nvidia/*"],"checkModelSources":false,"allowedModelSources":["s3://x/*"]}"#)
                .starts_with("setting `allowedModelSources`: has no effect")
        );
        assert!(
            refused::<Settings>(r#"{"allowedImages":["nvcr.io/nvidia/*"],"checkModelSources":false,"requirePinnedModels":true}"#)
                .starts_with("setting `requirePinnedModels`: needs `checkModelSources: true`")
        );
        assert!(
            refused::<Settings>(&format!(r#"{{{OK},"immutableModelSources":["s3://x/*"]}}"#))
                .starts_with("setting `immutableModelSources`: has no effect")
        );
        assert_eq!(
            refused::<Settings>(
                r#"{"allowedImages":["nvcr.io/nvidia/*","docker.io/rayproject/ray:2.*"],"requireDigest":true,"checkModelSources":false}"#
            ),
            "setting `allowedImages[1]`: `docker.io/rayproject/ray:2.*` names a tag, but with `requireDigest` every image carries a digest, \
             and the container runtime pulls the digest and ignores a tag beside it, so no image can match: allow the repository \
             (`docker.io/rayproject/ray`) or a digest (`docker.io/rayproject/ray@sha256:<digest>`)"
        );
        let d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        Full::<Settings>::parse_valid(&format!(
            r#"{{"allowedImages":["docker.io/rayproject/ray:2.9.0@{d}"],"requireDigest":true,"checkModelSources":false}}"#
        ))
        .expect("a tag beside a digest is allowed (and ignored)");
        assert!(refused::<Settings>(&format!(r#"{{{OK},"allowedImage":[]}}"#)).starts_with("setting `allowedImage`: unknown setting"));
    }
}
