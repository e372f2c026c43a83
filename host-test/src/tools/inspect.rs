//! Looking at what aigov holds: an artifact's embedded metadata and WIT
//! world (`aigov inspect`), the rules linked into this build (`aigov
//! rules`), and a rule's default settings (`aigov settings`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use crate::run::artifact::{self, ArtifactKind};
use crate::run::component::{Metadata, PolicyComponent};
use crate::run::{engine, native};

/// `aigov inspect`: a module's Kubewarden metadata, or a component's
/// metadata and WIT world.
pub fn artifact(path: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    match ArtifactKind::of(&bytes)? {
        ArtifactKind::Module => match artifact::module_metadata(&bytes)? {
            Some(m) => writeln!(out, "{}", serde_json::to_string_pretty(&m)?)?,
            None => bail!("{} carries no io.kubewarden.metadata section: annotate it first", path.display()),
        },
        ArtifactKind::Component => {
            let engine = engine::new_engine()?;
            let component = PolicyComponent::new(&engine, &bytes)?;
            let m = component.instantiate(Arc::new(aigov_sdk::NoCluster))?.metadata()?;
            writeln!(out, "{}\n", serde_json::to_string_pretty(&metadata_json(&m))?)?;
            write!(out, "{}", artifact::component_wit(&bytes)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn metadata_json(m: &Metadata) -> serde_json::Value {
    serde_json::json!({
        "name": m.name,
        "version": m.version,
        "rules": m.rules.iter().map(|r| serde_json::json!({
            "apiGroups": r.api_groups, "apiVersions": r.api_versions,
            "resources": r.resources, "operations": r.operations,
        })).collect::<Vec<_>>(),
        "mutating": m.mutating,
        "backgroundAudit": m.background_audit,
        "contextAwareResources": m.context_aware_resources.iter().map(|c| serde_json::json!({
            "apiVersion": c.api_version, "kind": c.kind,
        })).collect::<Vec<_>>(),
        "annotations": m.annotations.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    })
}

/// `aigov rules`: every rule linked into aigov, with its version and
/// description.
pub fn rules(out: &mut dyn Write) -> Result<ExitCode> {
    for r in native::RULES {
        let description = r.metadata.annotation(aigov_metadata::annotations::DESCRIPTION).unwrap_or_default();
        writeln!(out, "{:<22} {:<8} {description}", r.metadata.name, r.metadata.version)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `aigov settings`: a rule's default settings, as JSON.
pub fn settings(rule: &str, out: &mut dyn Write) -> Result<ExitCode> {
    let r = native::rule(rule).with_context(|| format!("no rule named `{rule}`"))?;
    writeln!(out, "{}", serde_json::to_string_pretty(&(r.default_settings)())?)?;
    Ok(ExitCode::SUCCESS)
}
