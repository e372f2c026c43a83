//! Volumes: `hostPath` volumes against `allowedHostPaths` (with
//! PodSecurityPolicy's semantics, paths cleaned as Go's `path.Clean` does),
//! writable mounts of read-only host paths, volume types against
//! `allowedVolumeTypes`, and `flexVolume` drivers.

use std::collections::{BTreeMap, BTreeSet};

use aigov_sdk::prelude::*;

use super::settings::{AllowedHostPath, HostPathPrecedence, PathMatch};
use super::{Check, is_wildcard};

impl Check<'_, '_> {
    /// The volumes only skipped containers mount (`skipInitContainers`,
    /// `skipEphemeralContainers`, the shared `exemptImages`: whatever
    /// leaves a container out): left out of the volume checks. A volume
    /// no container mounts is checked.
    pub(crate) fn skipped_volumes(&self) -> BTreeSet<String> {
        if !self.t.containers().any(|c| self.skipped(&c)) {
            return BTreeSet::new();
        }
        let mut checked = BTreeSet::new();
        let mut skipped = BTreeSet::new();
        for c in self.t.containers() {
            let into = if self.skipped(&c) { &mut skipped } else { &mut checked };
            into.extend(c.container.volume_mounts.iter().map(|m| m.name.to_string()));
        }
        skipped.retain(|v| !checked.contains(v));
        skipped
    }

    /// The template's `hostPath` volumes and what the allowlist says of each.
    pub(crate) fn host_path_volumes(&self) -> HostPaths {
        let mut out = HostPaths::new();
        if !self.s.restrict_host_path {
            return out;
        }
        let skipped = self.skipped_volumes();
        for (i, vol) in self.t.spec.volumes.iter().enumerate() {
            let Some(hp) = &vol.host_path else { continue };
            if skipped.contains(&*vol.name) {
                continue;
            }
            let allowance = match forbidden(&self.s.forbidden_host_paths, &hp.path) {
                Some((entry, holds)) => Allowance::Forbidden { entry: entry.to_string(), holds },
                None => allowance(&self.s.allowed_host_paths, self.s.host_path_precedence, &hp.path),
            };
            out.insert(vol.name.to_string(), HostPathVolume { index: i, path: hp.path.to_string(), allowance });
        }
        out
    }

    pub(crate) fn read_only_mounts(&mut self, c: &ContainerRef<'_, '_>, host_paths: &HostPaths) {
        for (i, m) in c.container.volume_mounts.iter().enumerate() {
            let Some(vol) = host_paths.get(&*m.name) else { continue };
            let Allowance::ReadOnly(prefix) = &vol.allowance else { continue };
            if m.read_only == Some(true) {
                continue;
            }
            self.v.violation(format!(
                "`{}` mounts hostPath volume `{}` (`{}`) writable in {}, but host paths under `{prefix}` may only be mounted read-only: add `readOnly: true`",
                self.t.container_path(c).key("volumeMounts").index(i),
                m.name,
                vol.path,
                c.describe()
            ));
        }
    }

    /// Each volume in order: its host path, its type, its flexVolume driver.
    pub(crate) fn volumes(&mut self, host_paths: &HostPaths) {
        let restrict_types = self.s.restrict_volume_types;
        let flex_listed = !is_wildcard(&self.s.allowed_flex_volume_drivers);
        if !self.s.restrict_host_path && !restrict_types && !flex_listed {
            return;
        }
        let skipped = self.skipped_volumes();
        let t = self.t;
        for (i, vol) in t.spec.volumes.iter().enumerate() {
            let at = self.spec_path().key("volumes").index(i);
            let denied_host_path = host_paths
                .get(&*vol.name)
                .filter(|v| v.index == i && matches!(v.allowance, Allowance::Denied | Allowance::Forbidden { .. }));
            if let Some(hp) = denied_host_path {
                self.host_path_violation(&vol.name, hp);
            }
            if skipped.contains(&*vol.name) {
                continue;
            }
            if restrict_types {
                let allowed = &self.s.allowed_volume_types;
                let instead = if allowed.iter().any(|a| a == "persistentVolumeClaim") {
                    "use a PersistentVolumeClaim instead".to_string()
                } else if allowed.is_empty() {
                    "remove it".to_string()
                } else {
                    "use a volume of one of those types instead".to_string()
                };
                let only = if allowed.is_empty() {
                    "no volumes are allowed".to_string()
                } else {
                    format!("only {} volumes are allowed", quoted(allowed))
                };
                // Only part of a pod: a volume without a source is merged, by
                // name, into the runtime's volume of that name.
                if vol.sources.is_empty() && !self.written_only {
                    self.v.violation(format!("volume `{}` (`{at}`) has no source, and {only}: {instead}", vol.name));
                }
                for source in &vol.sources {
                    // A refused host path already has its message.
                    let said = &**source == "hostPath" && denied_host_path.is_some();
                    if said || allowed.iter().any(|a| a == &**source) {
                        continue;
                    }
                    self.v.violation(format!(
                        "volume `{}` is of type `{source}` (`{}`), and {only}: {instead}",
                        vol.name,
                        at.key(source.to_string())
                    ));
                }
            }
            if flex_listed && let Some(flex) = &vol.flex_volume {
                let allowed = &self.s.allowed_flex_volume_drivers;
                if !aigov_sdk::base::glob::any_match(allowed, &flex.driver) {
                    let why = if allowed.is_empty() {
                        "and flexVolume volumes are not allowed: use a CSI driver instead".to_string()
                    } else {
                        let drivers: Vec<&str> = allowed.iter().map(Glob::as_str).collect();
                        format!("which is not an allowed driver: use {}", one_of(&drivers))
                    };
                    self.v.violation(format!(
                        "volume `{}` uses the flexVolume driver `{}` (`{}`), {why}",
                        vol.name,
                        flex.driver,
                        at.keys(&["flexVolume", "driver"])
                    ));
                }
            }
        }
    }

    pub(crate) fn host_path_violation(&mut self, name: &str, vol: &HostPathVolume) {
        let field = self.spec_path().key("volumes").index(vol.index).keys(&["hostPath", "path"]);
        let cleaned = clean(&vol.path);
        let why = match &vol.allowance {
            Allowance::Forbidden { entry, holds: true } => {
                format!("which holds `{entry}`, a host path pods may not mount (`forbiddenHostPaths`)")
            }
            Allowance::Forbidden { entry, .. } if clean(entry) == cleaned => "which pods may not mount (`forbiddenHostPaths`)".to_string(),
            Allowance::Forbidden { entry, .. } => format!("under `{entry}`, which pods may not mount (`forbiddenHostPaths`)"),
            _ if self.s.allowed_host_paths.is_empty() => "and hostPath volumes are not allowed".to_string(),
            _ => {
                let prefixes: Vec<&str> = self.s.allowed_host_paths.iter().map(|p| p.path_prefix.as_str()).collect();
                format!("outside the allowed host paths {}", quoted(&prefixes))
            }
        };
        let message = if let Allowance::Forbidden { entry, holds: true } = &vol.allowance {
            format!(
                "volume `{name}` mounts the node's `{}` (`{field}`), {why}: mount only the directories the pod needs, none holding `{entry}`",
                vol.path
            )
        } else if cleaned == "/dev" || cleaned.starts_with("/dev/") {
            format!(
                "volume `{name}` mounts the node's device path `{}` (`{field}`), {why}: request the device as a resource \
                 (GPUs as `nvidia.com/gpu`) and let its device plugin mount it",
                vol.path
            )
        } else {
            format!(
                "volume `{name}` mounts the node's `{}` (`{field}`), {why}: use a PersistentVolumeClaim, an `emptyDir` or a `configMap` instead",
                vol.path
            )
        };
        self.v.violation(message);
    }
}

/// What the allowlist and `forbiddenHostPaths` say of one host path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Allowance {
    /// Under no allowed prefix.
    Denied,
    /// A forbidden path (`entry`, as written), under one, or, with
    /// `holds`, above one: a mount of `/` holds `/dev`.
    Forbidden { entry: String, holds: bool },
    /// Under an allowed prefix, mounted however.
    Allowed,
    /// Only under read-only prefixes (the first named).
    ReadOnly(String),
}

pub(crate) struct HostPathVolume {
    index: usize,
    path: String,
    allowance: Allowance,
}

pub(crate) type HostPaths = BTreeMap<String, HostPathVolume>;

/// PodSecurityPolicy's `allowedHostPaths` semantics: the path is allowed
/// when some prefix covers it; it must be read-only only if every prefix
/// that covers it says so (`anyWritable`), or if the longest one does
/// (`longestPrefix`).
fn allowance(allowed: &[AllowedHostPath], precedence: HostPathPrecedence, path: &str) -> Allowance {
    let covering = allowed.iter().filter(|a| covers(a, path));
    let decides: Option<&AllowedHostPath> = match precedence {
        HostPathPrecedence::AnyWritable => {
            let mut first = None;
            for a in covering {
                if !a.read_only {
                    return Allowance::Allowed;
                }
                first.get_or_insert(a);
            }
            first
        }
        HostPathPrecedence::LongestPrefix => {
            // The longest prefix, and of equal ones a writable one.
            covering.max_by_key(|a| (prefix_length(a), !a.read_only))
        }
    };
    match decides {
        None => Allowance::Denied,
        Some(a) if a.read_only => Allowance::ReadOnly(a.path_prefix.clone()),
        Some(_) => Allowance::Allowed,
    }
}

/// The first `forbiddenHostPaths` entry a host path overlaps, by whole
/// components, both cleaned: the path is the entry or under it (`false`),
/// or holds it (`true`: a mount of `/` holds `/dev`, the runtime binding
/// the directories under it too).
fn forbidden<'f>(forbidden: &'f [String], path: &str) -> Option<(&'f str, bool)> {
    forbidden.iter().find_map(|f| {
        if has_path_prefix(path, f) {
            Some((f.as_str(), false))
        } else if has_path_prefix(f, path) {
            Some((f.as_str(), true))
        } else {
            None
        }
    })
}

/// Whether an allowed prefix lets through some path a forbidden entry
/// refuses (the entry or a path under it, or one holding it): otherwise
/// the entry refuses nothing the allowlist does not refuse already.
pub(crate) fn overlaps(allowed: &AllowedHostPath, forbidden: &str) -> bool {
    covers(allowed, forbidden) || has_path_prefix(&allowed.path_prefix, forbidden) || has_path_prefix(forbidden, &allowed.path_prefix)
}

fn prefix_length(a: &AllowedHostPath) -> usize {
    match a.matching {
        PathMatch::Components => clean(&a.path_prefix).len(),
        PathMatch::String => a.path_prefix.len(),
    }
}

/// Whether an allowed prefix covers a path (cleaned first, so that
/// `/data/../etc` is not under `/data`).
fn covers(allowed: &AllowedHostPath, path: &str) -> bool {
    match allowed.matching {
        PathMatch::Components => has_path_prefix(path, &allowed.path_prefix),
        PathMatch::String => {
            let path = clean(path);
            path.starts_with('/') && path.starts_with(allowed.path_prefix.as_str())
        }
    }
}

/// Whether `path` is `prefix` or under it, both cleaned first (so
/// `/data/../etc` is not under `/data`, and `/database` is not under
/// `/data`).
pub(crate) fn has_path_prefix(path: &str, prefix: &str) -> bool {
    let (path, prefix) = (clean(path), clean(prefix));
    if !path.starts_with('/') || !prefix.starts_with('/') {
        return false;
    }
    prefix == "/" || path == prefix || path.strip_prefix(&prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// Go's `path.Clean`: one `/` between components, no `.`, `..` resolved
/// lexically (never above the root).
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths_like_go() {
        for (input, want) in [
            ("/", "/"),
            ("/data", "/data"),
            ("/data/", "/data"),
            ("//data//x/", "/data/x"),
            ("/data/./x", "/data/x"),
            ("/data/../etc", "/etc"),
            ("/../..", "/"),
            ("a/../../b", "../b"),
            ("", "."),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
    }

    #[test]
    fn forbidden_host_paths_by_whole_components() {
        let list = ["/dev".to_string(), "/var/run/docker.sock".to_string()];
        assert_eq!(forbidden(&list, "/dev/nvidia0"), Some(("/dev", false)));
        assert_eq!(forbidden(&list, "/dev/"), Some(("/dev", false)));
        assert_eq!(forbidden(&list, "/dev/../dev/sda"), Some(("/dev", false)));
        assert_eq!(forbidden(&list, "/devices"), None);
        assert_eq!(forbidden(&list, "/"), Some(("/dev", true)), "a mount of `/` holds `/dev`");
        assert_eq!(forbidden(&list, "/var/run"), Some(("/var/run/docker.sock", true)));
        assert_eq!(forbidden(&list, "/var/run/docker.sock"), Some(("/var/run/docker.sock", false)));
        assert_eq!(forbidden(&list, "/var/run/containerd"), None);
        assert_eq!(forbidden(&list, "/data/../dev/x"), Some(("/dev", false)));
        let root = AllowedHostPath { path_prefix: "/".into(), read_only: false, matching: PathMatch::Components };
        let mnt = AllowedHostPath { path_prefix: "/mnt".into(), read_only: false, matching: PathMatch::Components };
        let nvidia = AllowedHostPath { path_prefix: "/dev/nvidia".into(), read_only: false, matching: PathMatch::String };
        assert!(overlaps(&root, "/dev"));
        assert!(!overlaps(&mnt, "/dev"));
        assert!(overlaps(&mnt, "/mnt/secrets") && overlaps(&mnt, "/"));
        assert!(overlaps(&nvidia, "/dev/nvidia-caps") && overlaps(&nvidia, "/dev"));
        assert!(!overlaps(&nvidia, "/dev/dri"));
    }

    #[test]
    fn host_path_prefixes_by_whole_components() {
        assert!(has_path_prefix("/data", "/data"));
        assert!(has_path_prefix("/data/x", "/data/"));
        assert!(!has_path_prefix("/database", "/data"));
        assert!(!has_path_prefix("/data/../etc", "/data"));
        assert!(has_path_prefix("/anything", "/"));
        assert!(!has_path_prefix("data/x", "/data"));
        let allowed = [
            AllowedHostPath { path_prefix: "/mnt".into(), read_only: true, matching: PathMatch::Components },
            AllowedHostPath { path_prefix: "/mnt/scratch".into(), read_only: false, matching: PathMatch::Components },
        ];
        let any = HostPathPrecedence::AnyWritable;
        assert_eq!(allowance(&allowed, any, "/mnt/models"), Allowance::ReadOnly("/mnt".into()));
        assert_eq!(allowance(&allowed, any, "/mnt/scratch/x"), Allowance::Allowed, "a writable prefix wins");
        assert_eq!(allowance(&allowed, any, "/etc"), Allowance::Denied);
        // The longest prefix decides, read-only or not.
        let allowed = [
            AllowedHostPath { path_prefix: "/foo".into(), read_only: false, matching: PathMatch::Components },
            AllowedHostPath { path_prefix: "/foo/bar/".into(), read_only: true, matching: PathMatch::Components },
        ];
        let longest = HostPathPrecedence::LongestPrefix;
        assert_eq!(allowance(&allowed, longest, "/foo/bar/x"), Allowance::ReadOnly("/foo/bar/".into()));
        assert_eq!(allowance(&allowed, longest, "/foo/baz"), Allowance::Allowed);
        assert_eq!(allowance(&allowed, any, "/foo/bar/x"), Allowance::Allowed);
        // By characters: the device files of one family.
        let nvidia = [AllowedHostPath { path_prefix: "/dev/nvidia".into(), read_only: false, matching: PathMatch::String }];
        for path in ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia"] {
            assert_eq!(allowance(&nvidia, any, path), Allowance::Allowed, "{path}");
        }
        for path in ["/dev/nvidi", "/dev/nvidia0/../sda", "/dev/dri", "dev/nvidia0"] {
            assert_eq!(allowance(&nvidia, any, path), Allowance::Denied, "{path}");
        }
    }
}
