//! `trusted-sources`: every container image comes from an allowed source,
//! read with Docker's normalisation (`nginx` is
//! `docker.io/library/nginx:latest`), optionally with a version tag or a
//! digest; and every model a workload names (an InferenceService's or a
//! TrainJob's `storageUri`, environment values and arguments that look like
//! model locations) comes from an allowed location, optionally pinned to a
//! commit or a digest.
//!
//! There is no safe default list: the rule refuses settings without
//! `allowedImages` (and, while model sources are checked, without
//! `allowedModelSources`), with a message saying what to add.

mod model;
mod pattern;
mod settings;

use std::fmt;

use aigov_sdk::image::ImageRef;
use aigov_sdk::text::quoted;
use aigov_sdk::{Cluster, ContainerRef, Malformed, Policy, PodTemplate, Request, Verdict, Workload};

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
        let mut check = Check { s: settings, v: &mut verdict, patterns: patterns(settings) };
        for template in workload.templates() {
            check.template(template);
        }
        check.train_job(workload);
        Ok(verdict)
    }
}

/// The image patterns (settings were validated, so every one parses).
fn patterns(s: &Settings) -> Vec<ImagePattern<'_>> {
    s.allowed_images.iter().filter_map(|p| ImagePattern::parse(p).ok()).collect()
}

struct Check<'c> {
    s: &'c Settings,
    v: &'c mut Verdict,
    patterns: Vec<ImagePattern<'c>>,
}

impl Check<'_> {
    fn template(&mut self, t: &PodTemplate<'_>) {
        for c in t.containers() {
            self.image(t, &c);
            if self.s.check_model_sources {
                self.container_models(t, &c);
            }
        }
        if self.s.check_model_sources
            && let Some((m, _)) = &t.model
            && let Some(uri) = m.storage_uri.as_deref().map(str::trim).filter(|u| !u.is_empty())
        {
            self.model(uri, &format_args!("`{}.{}.storageUri`", t.spec_path(), m.field));
        }
    }

    fn train_job(&mut self, w: &Workload<'_>) {
        if !self.s.check_model_sources {
            return;
        }
        let Some(uri) = w.train_job.as_ref().and_then(|j| j.model_storage_uri.as_deref()).map(str::trim).filter(|u| !u.is_empty()) else {
            return;
        };
        self.model(uri, &"`spec.initializer.model.storageUri`");
    }

    // ---------------------------------------------------------------- images

    fn image(&mut self, t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>) {
        // No image: KServe's serving runtime or a TrainJob's training
        // runtime supplies it (and the API server requires one elsewhere).
        let Some(written) = c.container.image.as_deref().filter(|i| !i.is_empty()) else { return };
        // The field and the container are named only in a message: an
        // accepted image costs its parse and the checks, nothing more.
        let field = fmt::from_fn(|f| write!(f, "{}.image", t.container_path(c)));
        let image = match ImageRef::parse(written) {
            Ok(i) => i,
            Err(why) => {
                self.v.violation(format!(
                    "`{field}` of {} is `{written}`, which is not a valid image reference ({why}), so its source cannot be checked: write `registry/repository:tag`",
                    c.describe()
                ));
                return;
            }
        };
        let untrusted = !self.patterns.iter().any(|p| p.matches(&image));
        let latest = self.s.forbid_latest_tag && image.digest.is_none() && image.effective_tag() == Some("latest");
        let unpinned = self.s.require_digest && image.digest.is_none();
        if !(untrusted || latest || unpinned) {
            return;
        }
        let who = c.describe();
        let full = image.to_string();
        let shown = if full == written { format!("`{written}`") } else { format!("`{written}` (that is, `{full}`)") };
        if untrusted {
            self.v.violation(format!(
                "{who} uses image {shown} (`{field}`), which is not from an allowed source: use an image matching {}",
                quoted(&self.s.allowed_images)
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

    // ---------------------------------------------------------------- models

    fn container_models(&mut self, t: &PodTemplate<'_>, c: &ContainerRef<'_, '_>) {
        // Written only into a message (`model` decides first).
        let at = fmt::from_fn(|f| write!(f, "{}", t.container_path(c)));
        let who = fmt::from_fn(|f| f.write_str(&c.describe()));
        for (i, var) in c.container.env.iter().enumerate() {
            let Some(value) = var.value.as_deref().map(str::trim) else { continue };
            if var.from_source || !model::has_prefix(value, &self.s.model_uri_prefixes) {
                continue;
            }
            let name = var.name.to_ascii_uppercase();
            if !self.s.model_env_names.iter().any(|p| aigov_sdk::Glob::new(p.as_str().to_ascii_uppercase()).matches(&name)) {
                continue;
            }
            self.model(value, &format_args!("`{at}.env[{i}].value` (`{}` of {who})", var.name));
        }
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
            Pin::Unpinned(advice) => self.v.violation(format!(
                "{what} points to `{location}`, which can change under the same name (it is not pinned): {advice}"
            )),
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
