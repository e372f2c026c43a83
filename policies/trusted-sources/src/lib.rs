//! `trusted-sources`: every container image, and every `image` volume's
//! reference, comes from an allowed source, read with Docker's
//! normalisation (`nginx` is `docker.io/library/nginx:latest`),
//! optionally with a version tag or a digest (an image with a digest is
//! judged by the digest, which is what is pulled), and not from a registry,
//! image or tag the deny lists refuse; and every model a workload names (an
//! InferenceService's `storageUri`, `storageUris`, `storage` and
//! `STORAGE_URI`, a TrainJob's model initializer, environment values and
//! arguments that look like model locations) comes from an allowed
//! location, optionally pinned to a commit or a digest.
//!
//! There is no safe default list: the rule refuses settings without
//! `allowedImages` (unless images are checked another way: a deny list,
//! `forbidLatestTag`, `requireDigest`) and, while model sources are
//! checked, without `allowedModelSources`, with a message saying what to
//! add.

mod model;
mod pattern;
mod settings;

use std::fmt;

use aigov_sdk::cluster::image::{ImageRef, registry_host};
use aigov_sdk::model::pod::EnvVar;
use aigov_sdk::prelude::*;

use aigov_sdk::model::workload::ModelStorage;

pub use pattern::ImagePattern;
pub use settings::Settings;

use model::Pin;

/// The rule.
pub struct TrustedSources;

impl Policy for TrustedSources {
    type Settings = Settings;

    fn validate(req: &Request<'_>, settings: &Settings, _cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut verdict = Verdict::accept();
        let Some(workload) = req.workload() else {
            return Ok(verdict);
        };
        let mut check =
            Check { s: settings, v: &mut verdict, patterns: patterns(&settings.allowed_images), denied: patterns(&settings.denied_images) };
        for template in workload.templates() {
            check.template(template, req);
        }
        check.train_job(workload);
        Ok(verdict)
    }
}

/// Image patterns, each with its text (settings were validated, so every
/// one parses).
fn patterns(list: &[String]) -> Vec<(&str, ImagePattern<'_>)> {
    list.iter().filter_map(|p| Some((p.as_str(), ImagePattern::parse(p).ok()?))).collect()
}

/// KServe's name for a model location in a container's environment: the
/// storage URI of a custom predictor, transformer or explainer, and what a
/// TrainJob's model initializer downloads.
const STORAGE_URI: &str = "STORAGE_URI";

/// A non-empty value, trimmed.
fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

struct Check<'c> {
    s: &'c Settings,
    v: &'c mut Verdict,
    patterns: Vec<(&'c str, ImagePattern<'c>)>,
    denied: Vec<(&'c str, ImagePattern<'c>)>,
}

impl Check<'_> {
    fn template(&mut self, t: &PodTemplate<'_>, req: &Request<'_>) {
        // A container the platform added (`Request::injected`: the training
        // operator's `init-pytorch`, KServe's storage initializer) comes from
        // its configuration, which the platform team chooses its images for.
        for c in t.containers().filter(|c| !req.injected(c)) {
            // No image: KServe's serving runtime or a TrainJob's training
            // runtime supplies it (and the API server requires one elsewhere).
            if let Some(written) = c.container.image.as_deref().filter(|i| !i.is_empty()) {
                // The field and the container are named only in a message:
                // an accepted image costs its parse and the checks, nothing more.
                let field = fmt::from_fn(|f| write!(f, "{}.image", t.container_path(&c)));
                self.image(written, &field, &fmt::from_fn(|f| f.write_str(&c.describe())));
            }
            if self.s.check_model_sources {
                self.container_models(t, &c);
            }
        }
        // Image volumes: the kubelet pulls an image for each, as it pulls a
        // container's (model weights shipped as an OCI image).
        for (i, vol) in t.spec.volumes.iter().enumerate() {
            let Some(written) = vol.image.as_ref().and_then(|v| v.reference.as_deref()).filter(|r| !r.is_empty()) else { continue };
            let field = fmt::from_fn(|f| write!(f, "{}.volumes[{i}].image.reference", t.spec_path()));
            self.image(written, &field, &fmt::from_fn(|f| write!(f, "volume `{}`", vol.name)));
        }
        if !self.s.check_model_sources {
            return;
        }
        // Where KServe's controller reads an InferenceService component's
        // model from: the model's `storageUri`, the predictor model's
        // `storage` (an explainer's is not read), and the component's
        // `storageUris` (a custom container's `STORAGE_URI` is read with its
        // environment).
        if let Some((m, _)) = &t.model {
            if let Some(uri) = given(m.storage_uri.as_deref()) {
                self.model(uri, &format_args!("`{}.{}.storageUri`", t.spec_path(), m.field));
            }
            if let Some(storage) = m.storage.as_ref().filter(|_| t.role == Role::Predictor) {
                self.storage(storage, &format_args!("`{}.{}.storage`", t.spec_path(), m.field));
            }
        }
        for (i, item) in t.storage_uris.iter().enumerate() {
            if let Some(uri) = given(item.uri.as_deref()) {
                self.model(uri, &format_args!("`{}.storageUris[{i}].uri`", t.spec_path()));
            }
        }
    }

    fn train_job(&mut self, w: &Workload<'_>) {
        let Some(job) = w.train_job.as_ref().filter(|_| self.s.check_model_sources) else {
            return;
        };
        if let Some(uri) = given(job.model_storage_uri.as_deref()) {
            self.model(uri, &"`spec.initializer.model.storageUri`");
        }
        // Set after `storageUri` in the initializer's container: a
        // `STORAGE_URI` here is what it downloads.
        self.env(&job.model_env, true, &"spec.initializer.model", &"the model initializer");
    }

    // ---------------------------------------------------------------- images

    /// Checks an image a pod pulls: `written` as the object has it, at
    /// `field`, for `who` (a container, or an image volume).
    fn image(&mut self, written: &str, field: &dyn fmt::Display, who: &dyn fmt::Display) {
        let image = match ImageRef::parse(written) {
            Ok(i) => i,
            Err(why) => {
                self.v.violation(format!(
                    "`{field}` of {who} is `{written}`, which is not a valid image reference ({why}), so its source cannot be checked: write `registry/repository:tag`"
                ));
                return;
            }
        };
        // No allowed images (another check is on): every source is allowed.
        let untrusted = !self.patterns.is_empty() && !self.patterns.iter().any(|(_, p)| p.matches(&image));
        // `None` with a digest: the digest is pulled, whatever the tag.
        let tag = image.effective_tag();
        let latest = self.s.forbid_latest_tag && tag == Some("latest");
        let unpinned = self.s.require_digest && image.digest.is_none();
        let registry = self.denied_registry(&image);
        // A refused image is refused by the tag written beside its digest
        // too: that tag says what the digest is meant to be.
        let denied = self.denied.iter().find(|(_, p)| p.matches(&image) || p.matches_ignored_tag(&image)).map(|(text, _)| *text);
        let denied_tag = tag.filter(|t| !latest || *t != "latest").filter(|t| self.s.denied_tags.iter().any(|g| g.matches(t)));
        if !(untrusted || latest || unpinned || registry.is_some() || denied.is_some() || denied_tag.is_some()) {
            return;
        }
        let full = image.to_string();
        let shown = if full == written { format!("`{written}`") } else { format!("`{written}` (that is, `{full}`)") };
        if untrusted {
            // `name:tag@digest` pulls the digest: a tag pattern the written
            // tag matches does not allow it, and the message says why.
            let by_tag: Vec<&str> = self.patterns.iter().filter(|(_, p)| p.matches_ignored_tag(&image)).map(|(text, _)| *text).collect();
            let why = match (image.tag, image.digest) {
                (Some(tag), Some(digest)) if !by_tag.is_empty() => format!(
                    "; its tag `{tag}` matches {}, but the container runtime pulls the digest and ignores a tag beside it, so only the digest counts: \
                     drop the digest to be judged by the tag, or have `{}@{digest}` added to `allowedImages`",
                    quoted(&by_tag),
                    image.name()
                ),
                _ => String::new(),
            };
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), which is not from an allowed source: use an image matching {}{why}",
                quoted(&self.s.allowed_images)
            ));
        }
        if let Some(host) = registry {
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), from registry `{host}`, which is refused (`deniedRegistries`): use an image from another registry"
            ));
        }
        if let Some(pattern) = denied {
            self.v
                .violation(format!("{who} uses image {shown} (`{field}`), which matches the refused image `{pattern}`: use another image"));
        }
        if let Some(t) = denied_tag {
            let why = if image.tag.is_some() { format!("is tagged `{t}`") } else { "has no tag, so it means `latest`".into() };
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), which {why}, a refused tag (`deniedTags`): name another version tag, or a digest"
            ));
        }
        if latest {
            let why = if image.tag.is_some() { "is tagged `latest`" } else { "has no tag, so it means `latest`" };
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), which {why}: a tag that moves, so every restart may run different code; name a version tag or a digest"
            ));
        }
        if unpinned {
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), which is not pinned by a digest: write `{}@sha256:<digest>`",
                match image.tag {
                    Some(tag) => format!("{}:{tag}", image.name()),
                    None => image.name(),
                }
            ));
        }
    }

    /// The image's registry host, if `deniedRegistries` refuses it (both
    /// read as `registry_host` reads them: in lower case, and
    /// `index.docker.io` and `registry-1.docker.io` as `docker.io`).
    fn denied_registry<'i>(&self, image: &'i ImageRef<'_>) -> Option<&'i str> {
        let host = &*image.domain;
        self.s.denied_registries.iter().any(|g| aigov_sdk::base::glob::matches(&registry_host(g.as_str()), host)).then_some(host)
    }

    // ---------------------------------------------------------------- models

    fn container_models(&mut self, t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>) {
        // Written only into a message (`model` decides first).
        let at = fmt::from_fn(|f| write!(f, "{}", t.container_path(c)));
        let who = fmt::from_fn(|f| f.write_str(&c.describe()));
        // KServe reads a custom container's `STORAGE_URI` as the component's
        // `storageUri`, and its storage initializer downloads it.
        let isvc = matches!(t.role, Role::Predictor | Role::Transformer | Role::Explainer);
        self.env(&c.container.env, isvc, &at, &who);
        if !self.s.model_args {
            return;
        }
        let s = self.s;
        for (list, items) in [("command", &c.container.command), ("args", &c.container.args)] {
            for (i, arg) in items.iter().enumerate() {
                for location in model::in_argument(arg, &s.model_uri_prefixes) {
                    self.model(location, &format_args!("`{at}.{list}[{i}]` of {who}"));
                }
            }
        }
    }

    /// Checks the model locations in an environment: values that start with
    /// a prefix, of variables `modelEnvNames` selects, and with
    /// `storage_uri`, `STORAGE_URI` whatever its value (a storage URI by
    /// definition). `at` is the container's path, `who` names it.
    fn env(&mut self, env: &[EnvVar<'_>], storage_uri: bool, at: &dyn fmt::Display, who: &dyn fmt::Display) {
        for (i, var) in env.iter().enumerate() {
            let Some(value) = var.value.as_deref().map(str::trim) else { continue };
            if var.from_source || value.is_empty() {
                continue;
            }
            let by_definition = storage_uri && *var.name == *STORAGE_URI;
            if !by_definition {
                if !model::has_prefix(value, &self.s.model_uri_prefixes) {
                    continue;
                }
                let name = var.name.to_ascii_uppercase();
                if !self.s.model_env_names.iter().any(|p| aigov_sdk::Glob::new(p.as_str().to_ascii_uppercase()).matches(&name)) {
                    continue;
                }
            }
            self.model(value, &format_args!("`{at}.env[{i}].value` (`{}` of {who})", var.name));
        }
    }

    /// Checks KServe's `storage` of a model: the location its controller
    /// builds from `parameters.type`, `parameters.bucket` and `path`
    /// (`<type>://<bucket>/<path>`; `<type>://<path>` for a type other than
    /// `s3`). Without `parameters.type`, both come from the `storage-config`
    /// Secret, which the request does not hold. Without `path` nothing is
    /// downloaded through it.
    fn storage(&mut self, storage: &ModelStorage<'_>, what: &dyn fmt::Display) {
        let Some(path) = given(storage.path.as_deref()) else { return };
        let path = path.strip_prefix('/').unwrap_or(path);
        let location = match (given(storage.kind.as_deref()), given(storage.bucket.as_deref())) {
            (Some("s3"), Some(bucket)) => format!("s3://{bucket}/{path}"),
            (Some("s3"), None) => {
                self.v.violation(format!(
                    "{what} names a model location that cannot be checked: `storage.parameters` names the type `s3` but no `bucket`: \
                     add `bucket: <bucket>` to it, or write the location in `storageUri`"
                ));
                return;
            }
            (Some(kind), _) => format!("{kind}://{path}"),
            (None, _) => {
                self.v.violation(format!(
                    "{what} names a model location that cannot be checked: its storage type and bucket come from KServe's `storage-config` Secret, \
                     which the request does not hold: name them in `storage.parameters` (`type: s3`, `bucket: <bucket>`), or write the location in `storageUri`"
                ));
                return;
            }
        };
        self.model(&location, what);
    }

    /// Checks one model location; `what` names where it is, for messages.
    fn model(&mut self, location: &str, what: &dyn fmt::Display) {
        if let Some(why) = model::unreadable(location) {
            self.v.violation(format!("{what} names a model location that cannot be checked: {why}"));
            return;
        }
        if !model::allowed(&self.s.allowed_model_sources, location) {
            let allowed: Vec<&str> = self.s.allowed_model_sources.iter().map(|g| g.as_str()).collect();
            self.v.violation(format!(
                "{what} points to `{location}`, which is not an allowed model source: load models from a location matching {}",
                quoted(&allowed)
            ));
        }
        if !self.s.require_pinned_models {
            return;
        }
        match model::pin(location) {
            Pin::Pinned => {}
            Pin::Unpinned(advice) => self
                .v
                .violation(format!("{what} points to `{location}`, which can change under the same name (it is not pinned): {advice}")),
            Pin::Unpinnable if model::allowed(&self.s.immutable_model_sources, location) => {}
            Pin::Unpinnable => {
                self.v.violation(format!(
                    "{what} points to `{location}`, whose contents can change under the same name, and a `{}` location cannot name a revision: \
                     load the model from a location listed in `immutableModelSources`, or from `hf://` with a commit or `oci://` with a digest",
                    location.split_once("://").map_or(location, |(s, _)| s).to_ascii_lowercase() + "://"
                ));
            }
        }
    }
}

aigov_sdk::export_policy!(TrustedSources);

#[cfg(test)]
mod tests {
    use super::*;
    use aigov_sdk::{Glob, NoCluster};

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const C: &str = "0123456789abcdef0123456789abcdef01234567";

    fn settings(images: &[&str], models: &[&str]) -> Settings {
        Settings {
            allowed_images: images.iter().map(|s| s.to_string()).collect(),
            allowed_model_sources: models.iter().map(|s| Glob::new(s.to_string())).collect(),
            ..Settings::default()
        }
    }

    fn violations(group: &str, kind: &str, object: &str, s: &Settings) -> Vec<String> {
        let request =
            format!(r#"{{"uid":"u","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}},"operation":"CREATE","object":{object}}}"#);
        let req = Request::parse(&request).unwrap();
        TrustedSources::validate(&req, s, &NoCluster).unwrap().violations().to_vec()
    }

    fn isvc(spec: &str, s: &Settings) -> Vec<String> {
        violations("serving.kserve.io", "InferenceService", &format!(r#"{{"metadata":{{"name":"m"}},"spec":{spec}}}"#), s)
    }

    const ALLOWED: &str = "load models from a location matching `s3://ml-models/*`, `hf://my-org/*`";

    #[test]
    fn every_storage_uris_item_is_a_model_location() {
        let s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*", "hf://my-org/*"]);
        let v = isvc(
            r#"{"predictor":{"model":{"modelFormat":{"name":"huggingface"}},
                "storageUris":[{"uri":"s3://ml-models/llama","mountPath":"/mnt/models/base"},{"uri":"https://example.com/adapter.tar.gz","mountPath":"/mnt/models/adapter"},{"uri":"  "}]},
              "transformer":{"containers":[{"name":"kserve-container","image":"nvcr.io/nvidia/tokenizer:1"}],"storageUris":[{"uri":"hf://evil/tokenizer"}]},
              "explainer":{"containers":[{"name":"kserve-container","image":"nvcr.io/nvidia/explainer:1"}],"storageUris":[{"uri":"gs://public/explainer"}]}}"#,
            &s,
        );
        assert_eq!(
            v,
            [
                format!(
                    "`spec.predictor.storageUris[1].uri` points to `https://example.com/adapter.tar.gz`, which is not an allowed model source: {ALLOWED}"
                ),
                format!(
                    "`spec.transformer.storageUris[0].uri` points to `hf://evil/tokenizer`, which is not an allowed model source: {ALLOWED}"
                ),
                format!(
                    "`spec.explainer.storageUris[0].uri` points to `gs://public/explainer`, which is not an allowed model source: {ALLOWED}"
                ),
            ]
        );
    }

    #[test]
    fn storage_uris_are_pinned_like_storage_uri() {
        let mut s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*", "hf://my-org/*"]);
        s.require_pinned_models = true;
        s.immutable_model_sources = vec![Glob::new("s3://ml-models/releases/*")];
        let v = isvc(
            &format!(
                r#"{{"predictor":{{"model":{{"modelFormat":{{"name":"huggingface"}}}},"storageUris":[
                    {{"uri":"hf://my-org/base:{C}"}},{{"uri":"hf://my-org/adapter:main"}},{{"uri":"s3://ml-models/releases/x"}},{{"uri":"s3://ml-models/dev/x"}}]}}}}"#
            ),
            &s,
        );
        assert_eq!(
            v,
            [
                "`spec.predictor.storageUris[1].uri` points to `hf://my-org/adapter:main`, which can change under the same name (it is not pinned): \
                 name a commit: `hf://my-org/adapter:<40-digit commit hash>`",
                "`spec.predictor.storageUris[3].uri` points to `s3://ml-models/dev/x`, whose contents can change under the same name, and a `s3://` location \
                 cannot name a revision: load the model from a location listed in `immutableModelSources`, or from `hf://` with a commit or `oci://` with a digest",
            ]
        );
    }

    #[test]
    fn a_custom_containers_storage_uri_is_a_model_location_whatever_its_scheme() {
        // KServe reads `STORAGE_URI` of a custom predictor's `kserve-container`
        // (or a transformer's or explainer's container) as its `storageUri`.
        let mut s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*", "hf://my-org/*"]);
        s.model_env_names = vec![Glob::new("*MODEL*")];
        let spec = r#"{"predictor":{"containers":[{"name":"kserve-container","image":"nvcr.io/nvidia/server:1",
            "env":[{"name":"STORAGE_URI","value":"https://example.com/model.tar.gz"},{"name":"OTHER","value":"https://example.com/x"}]}]},
          "transformer":{"containers":[{"name":"kserve-container","image":"nvcr.io/nvidia/t:1","env":[{"name":"STORAGE_URI","value":"s3://ml-models/tok"}]}]}}"#;
        assert_eq!(
            isvc(spec, &s),
            [format!(
                "`spec.predictor.containers[0].env[0].value` (`STORAGE_URI` of container `kserve-container`) points to `https://example.com/model.tar.gz`, \
                 which is not an allowed model source: {ALLOWED}"
            )]
        );
        // Elsewhere `STORAGE_URI` is an environment variable like any other.
        let pod = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nvcr.io/nvidia/x:1",
            "env":[{"name":"STORAGE_URI","value":"https://example.com/model.tar.gz"}]}]}}"#;
        assert!(violations("", "Pod", pod, &s).is_empty());
    }

    #[test]
    fn kserve_storage_spec_is_checked_where_the_request_says_where_it_points() {
        let s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*", "hf://my-org/*"]);
        let with =
            |storage: &str| isvc(&format!(r#"{{"predictor":{{"model":{{"modelFormat":{{"name":"sklearn"}},"storage":{storage}}}}}}}"#), &s);
        assert!(with(r#"{"key":"minio","path":"/iris/v1","parameters":{"type":"s3","bucket":"ml-models"}}"#).is_empty());
        assert_eq!(
            with(r#"{"path":"iris","parameters":{"type":"s3","bucket":"public-models"}}"#),
            [format!(
                "`spec.predictor.model.storage` points to `s3://public-models/iris`, which is not an allowed model source: {ALLOWED}"
            )]
        );
        assert_eq!(
            with(r#"{"path":"namenode/models/iris","parameters":{"type":"hdfs"}}"#),
            [format!(
                "`spec.predictor.model.storage` points to `hdfs://namenode/models/iris`, which is not an allowed model source: {ALLOWED}"
            )]
        );
        assert_eq!(
            with(r#"{"key":"localMinIO","path":"sklearn","parameters":{"bucket":"example-models"}}"#),
            [
                "`spec.predictor.model.storage` names a model location that cannot be checked: its storage type and bucket come from KServe's \
              `storage-config` Secret, which the request does not hold: name them in `storage.parameters` (`type: s3`, `bucket: <bucket>`), \
              or write the location in `storageUri`"
            ]
        );
        assert_eq!(
            with(r#"{"path":"sklearn","parameters":{"type":"s3"}}"#),
            [
                "`spec.predictor.model.storage` names a model location that cannot be checked: `storage.parameters` names the type `s3` but no \
              `bucket`: add `bucket: <bucket>` to it, or write the location in `storageUri`"
            ]
        );
        // Without `path` nothing is downloaded through `storage`: only credentials.
        assert!(with(r#"{"key":"localMinIO"}"#).is_empty());
        assert!(with(r#"{"path":"../x","parameters":{"type":"s3","bucket":"ml-models"}}"#)[0].contains("has `.` or `..` path segments"));
        // KServe's controller reads the predictor's `storage` only.
        let art = r#"{"predictor":{"model":{"storageUri":"s3://ml-models/m"}},"explainer":{"art":{"image":"nvcr.io/nvidia/art:1","storage":{"path":"x"}}}}"#;
        assert!(isvc(art, &s).is_empty());
    }

    #[test]
    fn the_art_explainer_is_a_model_container() {
        let s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*", "hf://my-org/*"]);
        let v = isvc(
            r#"{"predictor":{"model":{"storageUri":"s3://ml-models/m"}},"explainer":{"art":{"type":"SquareAttack","storageUri":"gs://public/art","image":"kserve/art-explainer:v0.15.0"}}}"#,
            &s,
        );
        assert_eq!(
            v,
            [
                "container `kserve-container` uses image `kserve/art-explainer:v0.15.0` (that is, `docker.io/kserve/art-explainer:v0.15.0`) \
                 (`spec.explainer.art.image`), which is not from an allowed source: use an image matching `nvcr.io/nvidia/*`"
                    .to_string(),
                format!("`spec.explainer.art.storageUri` points to `gs://public/art`, which is not an allowed model source: {ALLOWED}"),
            ]
        );
    }

    #[test]
    fn a_trainjob_model_initializers_storage_uri_env_replaces_its_storage_uri() {
        let s = settings(&["nvcr.io/nvidia/*"], &["hf://my-org/*"]);
        let job = r#"{"metadata":{"name":"j"},"spec":{"initializer":{"model":{"storageUri":"hf://my-org/base",
            "env":[{"name":"STORAGE_URI","value":"hf://meta-llama/Llama-3.2-1B"},{"name":"EXTRA_MODEL","value":"s3://public/x"},{"name":"ACCESS_TOKEN","valueFrom":{"secretKeyRef":{"name":"t","key":"k"}}}]}},
            "trainer":{"image":"nvcr.io/nvidia/pytorch:25.01-py3"}}}"#;
        assert_eq!(
            violations("trainer.kubeflow.org", "TrainJob", job, &s),
            [
                "`spec.initializer.model.env[0].value` (`STORAGE_URI` of the model initializer) points to `hf://meta-llama/Llama-3.2-1B`, \
                 which is not an allowed model source: load models from a location matching `hf://my-org/*`",
                "`spec.initializer.model.env[1].value` (`EXTRA_MODEL` of the model initializer) points to `s3://public/x`, \
                 which is not an allowed model source: load models from a location matching `hf://my-org/*`",
            ]
        );
        let mut off = settings(&["nvcr.io/nvidia/*"], &[]);
        off.check_model_sources = false;
        assert!(violations("trainer.kubeflow.org", "TrainJob", job, &off).is_empty());
    }

    #[test]
    fn a_tag_beside_a_digest_is_not_what_is_pulled() {
        let s = settings(&["nvcr.io/nvidia/*", "docker.io/rayproject/ray:2.*"], &["s3://ml-models/*"]);
        let pod = |image: &str| format!(r#"{{"metadata":{{"name":"p"}},"spec":{{"containers":[{{"name":"ray","image":"{image}"}}]}}}}"#);
        assert!(violations("", "Pod", &pod("rayproject/ray:2.9.0"), &s).is_empty());
        assert_eq!(
            violations("", "Pod", &pod(&format!("rayproject/ray:2.9.0@{D}")), &s),
            [format!(
                "container `ray` uses image `rayproject/ray:2.9.0@{D}` (that is, `docker.io/rayproject/ray:2.9.0@{D}`) (`spec.containers[0].image`), \
                 which is not from an allowed source: use an image matching `nvcr.io/nvidia/*`, `docker.io/rayproject/ray:2.*`; its tag `2.9.0` matches \
                 `docker.io/rayproject/ray:2.*`, but the container runtime pulls the digest and ignores a tag beside it, so only the digest counts: \
                 drop the digest to be judged by the tag, or have `docker.io/rayproject/ray@{D}` added to `allowedImages`"
            )]
        );
        // A tag the pattern would not have allowed anyway: no explanation.
        assert!(!violations("", "Pod", &pod(&format!("rayproject/ray:3.0.0@{D}")), &s)[0].contains("its tag"));
        // The registry and repository still count: an allowed registry admits it.
        assert!(violations("", "Pod", &pod(&format!("nvcr.io/nvidia/pytorch:24.05-py3@{D}")), &s).is_empty());
        // An allowed digest admits the image whatever tag is written beside it.
        let pinned = settings(&[&format!("docker.io/rayproject/ray@{D}")], &["s3://ml-models/*"]);
        assert!(violations("", "Pod", &pod(&format!("rayproject/ray:2.9.0@{D}")), &pinned).is_empty());
        assert!(violations("", "Pod", &pod(&format!("rayproject/ray:anything@{D}")), &pinned).is_empty());
    }

    #[test]
    fn deny_lists() {
        let mut s = settings(&[], &[]);
        s.check_model_sources = false;
        s.denied_registries = vec![Glob::new("docker.io"), Glob::new("*.Evil.example")];
        s.denied_images = vec!["quay.io/ml/tokenizer:v1.*".into(), "ghcr.io/acme/*".into()];
        s.denied_tags = vec![Glob::new("latest"), Glob::new("*-dev")];
        let pod = |image: &str| format!(r#"{{"metadata":{{"name":"p"}},"spec":{{"containers":[{{"name":"c","image":"{image}"}}]}}}}"#);
        let v = |image: &str| violations("", "Pod", &pod(image), &s);
        assert!(v("nvcr.io/nvidia/pytorch:24.05-py3").is_empty(), "no allowed list: every other source passes");
        assert!(v("quay.io/ml/tokenizer:v2.0").is_empty());
        assert_eq!(
            v("python:3.12"),
            [
                "container `c` uses image `python:3.12` (that is, `docker.io/library/python:3.12`) (`spec.containers[0].image`), from registry `docker.io`, \
              which is refused (`deniedRegistries`): use an image from another registry"
            ]
        );
        assert_eq!(v("REGISTRY.evil.example/x:1").len(), 1, "hosts compare in any case");
        assert_eq!(
            v("quay.io/ml/tokenizer:v1.4"),
            [
                "container `c` uses image `quay.io/ml/tokenizer:v1.4` (`spec.containers[0].image`), which matches the refused image `quay.io/ml/tokenizer:v1.*`: use another image"
            ]
        );
        assert_eq!(v(&format!("quay.io/ml/tokenizer:v1.4@{D}")).len(), 1, "the tag beside a digest says what it is meant to be");
        assert_eq!(v(&format!("ghcr.io/acme/tool@{D}")).len(), 1);
        assert_eq!(
            v("quay.io/ml/trainer"),
            [
                "container `c` uses image `quay.io/ml/trainer` (that is, `quay.io/ml/trainer:latest`) (`spec.containers[0].image`), which has no tag, \
                 so it means `latest`, a refused tag (`deniedTags`): name another version tag, or a digest"
            ]
        );
        assert!(v("quay.io/ml/trainer:2.0-dev")[0].contains("which is tagged `2.0-dev`, a refused tag"));
        assert!(v(&format!("quay.io/ml/trainer:latest@{D}")).is_empty(), "a digest is pulled, not the tag");
        // With `forbidLatestTag` too, `latest` is said once.
        s.forbid_latest_tag = true;
        assert_eq!(violations("", "Pod", &pod("quay.io/ml/trainer:latest"), &s).len(), 1);
    }

    #[test]
    fn latest_beside_a_digest_is_not_latest() {
        let mut s = settings(&["nvcr.io/nvidia/*"], &["s3://ml-models/*"]);
        s.forbid_latest_tag = true;
        let pod = |image: &str| format!(r#"{{"metadata":{{"name":"p"}},"spec":{{"containers":[{{"name":"c","image":"{image}"}}]}}}}"#);
        assert!(violations("", "Pod", &pod(&format!("nvcr.io/nvidia/x:latest@{D}")), &s).is_empty());
        assert_eq!(violations("", "Pod", &pod("nvcr.io/nvidia/x:latest"), &s).len(), 1);
    }
}
