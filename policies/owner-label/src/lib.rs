//! `owner-label` (mutating): a workload and its pod templates get an
//! `owner` label naming the user who created it, made a valid label value,
//! with the user name exactly as Kubernetes authenticated it in an
//! annotation, and any fixed labels the platform team configures.
//!
//! The owner is the user who submitted the object at the top: a Deployment
//! is labelled with its author, and so are its pod template and therefore
//! its ReplicaSets and pods, which the rule leaves alone because their
//! requester is a controller. An UPDATE never changes the owner: on UPDATE
//! the owner is the one the old object names. An owner the object declares
//! itself is kept (unless `overwrite`), and its templates get the same.

mod settings;

use aigov_sdk::base::names::to_label_value;
use aigov_sdk::decode::json::{self, Edit, quote};
use aigov_sdk::decode::path::Path;
use aigov_sdk::prelude::*;
use aigov_sdk::runtime::mutate::{self, changes, may_edit_template, pod_metadata_path};

pub use settings::Settings;

/// The rule.
pub struct OwnerLabel;

/// Who owns the object: the label value, and the user name it stands for
/// (absent when an UPDATE's old object has the label without the
/// annotation).
struct Owner {
    value: String,
    user: Option<String>,
}

impl Policy for OwnerLabel {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, _cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        let Some(w) = req.workload() else {
            return Ok(v);
        };
        // Made by a controller (a ReplicaSet, a Job of a CronJob, a pod):
        // its requester is the controller, and its labels come from the
        // templates the rule labelled when the owner was submitted.
        if req.controller().is_some() {
            return Ok(v);
        }
        // The owner the object declares at the top wins, unless `overwrite`:
        // its templates then get the same.
        let declared = w
            .metadata
            .label(&s.owner_label)
            .filter(|o| !o.is_empty() && !s.overwrite)
            .map(|value| Owner { value: value.to_string(), user: w.metadata.annotation(&s.owner_annotation).map(|a| a.to_string()) });
        let owner = match (declared, req.operation()) {
            (_, Operation::Delete | Operation::Connect) => return Ok(v),
            (Some(d), _) => Some(d),
            (None, Operation::Create) => requester(req, s, &mut v),
            (None, Operation::Update) => previous_owner(req, s),
        };
        for (path, meta, editable) in locations(req, w) {
            if !editable {
                continue;
            }
            if let Some(o) = &owner {
                owner_edits(&path, meta, o, s, &mut v);
            }
            for (key, value) in &s.labels {
                match meta.and_then(|m| m.label(key)) {
                    None => v.edit(mutate::label(&path, key, value, false)),
                    Some(have) if have != value && s.overwrite => v.edit(mutate::label(&path, key, value, true)),
                    Some(_) => {}
                }
            }
        }
        Ok(v)
    }
}

/// The owner of a new object: the requesting user.
fn requester(req: &Request<'_>, s: &Settings, v: &mut Verdict) -> Option<Owner> {
    let user = req.user().username.trim();
    if user.is_empty() {
        return None;
    }
    let value = to_label_value(user);
    if value.is_empty() {
        v.warn(format!("the user name `{user}` has no letter or digit a label value can hold, so `{}` is not set", s.owner_label));
        return None;
    }
    Some(Owner { value, user: Some(user.to_string()) })
}

/// The owner an UPDATE keeps: the one the old object names, if any. An
/// object that had no owner (created before the rule) gets none: the rule
/// does not guess who created it.
fn previous_owner(req: &Request<'_>, s: &Settings) -> Option<Owner> {
    let old = req.old_object_text()?;
    let meta = Path::root().key("metadata");
    let string = |path: Path| json::find_string(old, &path);
    let value = string(meta.keys(&["labels", &s.owner_label])).filter(|v| !v.is_empty())?;
    let user = string(meta.keys(&["annotations", &s.owner_annotation]));
    Some(Owner { value, user })
}

/// Where the labels go, in document order: the object's metadata, a job
/// template's (the Jobs a CronJob or JobSet creates), and each pod
/// template's (the pods), each with its current metadata and whether the
/// request may edit it there. On UPDATE, only what the update itself
/// changes: the object's labels or annotations, a template.
fn locations<'w, 'a>(req: &Request<'_>, w: &'w Workload<'a>) -> Vec<(Path, Option<&'w ObjectMeta<'a>>, bool)> {
    let top = Path::root().key("metadata");
    let top_changes = changes(req, &top.key("labels")) || changes(req, &top.key("annotations"));
    let mut out = vec![(top, Some(&w.metadata), top_changes)];
    for jt in &w.job_templates {
        out.push((jt.path.key("metadata"), Some(&jt.metadata), changes(req, &jt.path)));
    }
    for t in w.templates() {
        let Some(path) = pod_metadata_path(w, t) else { continue };
        if out.iter().any(|(p, _, _)| *p == path) {
            continue;
        }
        out.push((path, t.metadata.as_ref(), may_edit_template(req, t)));
    }
    out
}

/// The owner label and annotation at one place.
fn owner_edits(path: &Path, meta: Option<&ObjectMeta<'_>>, o: &Owner, s: &Settings, v: &mut Verdict) {
    let annotation = path.keys(&["annotations", &s.owner_annotation]);
    match meta.and_then(|m| m.label(&s.owner_label)) {
        Some(have) if have == o.value => {
            // The label is in place; so must its annotation be.
            if let Some(user) = &o.user {
                match meta.and_then(|m| m.annotation(&s.owner_annotation)) {
                    None => v.edit(mutate::annotation(path, &s.owner_annotation, user)),
                    Some(a) if a != user.as_str() && s.overwrite => v.edit(Edit::Set { path: annotation, value: quote(user) }),
                    Some(_) => {}
                }
            }
        }
        Some(_) if !s.overwrite => {}
        _ => {
            v.edit(mutate::label(path, &s.owner_label, &o.value, true));
            // The annotation says who the label stands for: it follows the
            // label the rule writes, whatever was there.
            if let Some(user) = &o.user
                && meta.and_then(|m| m.annotation(&s.owner_annotation)).as_deref() != Some(user.as_str())
            {
                v.edit(Edit::Set { path: annotation, value: quote(user) });
            }
        }
    }
}

aigov_sdk::export_policy!(OwnerLabel);
