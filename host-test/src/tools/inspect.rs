//! Looking at what aigov holds: an artifact's embedded metadata and WIT
//! world (`aigov inspect`), the rules linked into this build (`aigov
//! rules`), a rule's default settings (`aigov settings RULE`), and whether
//! the settings a team wrote in its policy files are ones the rules accept
//! (`aigov settings check FILE`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run::artifact::{self, ArtifactKind};
use crate::run::component::{Metadata, PolicyComponent};
use crate::run::engine;
use crate::run::native::{self, Names};
use crate::run::settings::{self, SettingsArg};

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

/// Arguments of `aigov settings`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Exit status: 0, 2 when a rule has no safe default (settings print) or a policy's settings are refused (settings check)."
)]
pub struct SettingsCommand {
    /// Check settings instead of printing defaults.
    #[command(subcommand)]
    pub check: Option<SettingsCheck>,
    /// The rule (or `aigov-bundle`) whose default settings to print.
    #[arg(value_name = "RULE", required = true)]
    pub rule: Option<String>,
}

/// `aigov settings check`.
#[derive(clap::Subcommand, Debug)]
pub enum SettingsCheck {
    /// Check the settings of policy files as Kubewarden does before it
    /// serves a policy: each ClusterAdmissionPolicy or AdmissionPolicy in
    /// FILE (what `aigov manifests` writes, as your team edited it), its
    /// rule found by its module reference or `app.kubernetes.io/name`
    /// label, its `spec.settings` checked by the rule (the bundle's by
    /// every rule in it), its `spec.mode` as Kubewarden takes it;
    /// `policies.yml` too. RULE=FILE checks a file of one rule's settings.
    /// Every refusal in every file is reported at once, each as
    /// `FILE:LINE:` at the setting refused (else at its policy); a YAML
    /// error is named with its likely cause. Exit status 2 when anything
    /// is refused.
    Check {
        /// Policy files, or RULE=FILE for a settings file.
        #[arg(value_name = "[RULE=]FILE", required = true)]
        files: Vec<SettingsArg>,
    },
}

/// `aigov settings`: a rule's default settings as JSON, or the check of
/// policy files' settings.
pub fn settings(args: &SettingsCommand, out: &mut dyn Write) -> Result<ExitCode> {
    match (&args.check, &args.rule) {
        (Some(SettingsCheck::Check { files }), _) => check(files, out),
        (None, Some(rule)) => defaults(rule, out),
        (None, None) => bail!("name a rule (`aigov settings RULE`), or check policy files (`aigov settings check FILE`)"),
    }
}

/// A rule's default settings; an error, for a rule with no safe default.
fn defaults(rule: &str, out: &mut dyn Write) -> Result<ExitCode> {
    let r = native::lookup(rule, Names::RulesAndBundle)?;
    if let Some(why) = settings::needs_settings(r) {
        return Err(settings::required(r, &why));
    }
    let mut defaults = (r.default_settings)();
    if native::is_bundle(r) {
        // Every rule on, at its defaults: those the bundle accepts. A rule
        // with no safe default is left out, and the note says how to add it.
        if let Some(rules) = defaults.get_mut("rules").and_then(Value::as_object_mut) {
            for rule in native::RULES.iter().filter(|r| settings::needs_settings(r).is_some()) {
                let name = rule.metadata.name;
                rules.remove(name);
                crate::tools::eval::note(&format!(
                    "`{name}` is left out: it has no safe default settings; add `rules.{name}` with its settings (see policies/{name}/README.md)"
                ));
            }
        }
    }
    writeln!(out, "{}", serde_json::to_string_pretty(&defaults)?)?;
    Ok(ExitCode::SUCCESS)
}

fn check(files: &[SettingsArg], out: &mut dyn Write) -> Result<ExitCode> {
    crate::tools::settings_check::check(files, out)
}
