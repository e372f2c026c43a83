//! The Kustomize files: each rule's base, and the overlay that turns rules
//! on one line each (and that regenerating reads back).

use std::fmt::Write as _;
use std::path::Path;

use aigov_metadata::annotations;
use anyhow::{Context, Result};

use super::{Packaged, annotation};
use crate::run::native;

/// Where the overlay goes, relative to the output directory.
pub const OVERLAY: &str = "overlay/kustomization.yaml";

/// The rules an overlay turns on: its uncommented `- ../<rule>` lines
/// naming a rule linked into aigov. None when there is no overlay.
pub fn enabled_in_overlay(path: &Path) -> Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- ../") else { continue };
        let name = rest.split(|c: char| c.is_whitespace() || c == '#').next().unwrap_or_default().trim_end_matches('/');
        if native::rule(name).is_some() && !out.iter().any(|x| x == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

pub(super) fn base_kustomization(name: &str) -> String {
    format!(
        "# aigov {name} as a Kustomize base: `kubectl apply -k` this directory, or list it in an overlay.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         resources:\n\
         - cluster-admission-policy.yaml\n"
    )
}

/// The overlay a team applies: one line per rule, enabled rules uncommented.
pub fn overlay(rules: &[Packaged], enable: &[String]) -> String {
    let mut out = String::from(
        "# The aigov rules this cluster enforces. Opting in is one line per rule:\n\
         # uncomment it here, then `kubectl apply -k` this directory. (Regenerating with\n\
         # `make manifests DEST=... ENABLE=rule-a,rule-b` leaves this file alone once edited.)\n\
         # ../bundle runs the rules turned on here in one policy instead: apply one or the other.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n",
    );
    // An empty list must still be a list for kustomize.
    out.push_str(if enable.is_empty() { "resources: []   # no rule enabled yet\n" } else { "resources:\n" });
    for r in rules {
        let description = annotation(&r.metadata, annotations::DESCRIPTION);
        let on = enable.contains(&r.name);
        let _ = writeln!(out, "{}- ../{:<22} # {description}", if on { "" } else { "# " }, r.name);
    }
    out.push_str(
        "\n# To watch before enforcing, switch every enabled rule to monitor mode:\n\
         # patches:\n\
         # - target: {group: policies.kubewarden.io, kind: ClusterAdmissionPolicy}\n\
         #   patch: |\n\
         #     - op: add\n\
         #       path: /spec/mode\n\
         #       value: monitor\n",
    );
    out
}
