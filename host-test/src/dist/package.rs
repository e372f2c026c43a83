//! Packaging the bundle, in two steps that never touch the same files:
//!
//! - **`aigov build package`** (run by `make artifacts`): build outputs nobody
//!   edits, next to the modules and components, rewritten on every build:
//!
//!   ```text
//!   artifacts/
//!     oci/          OCI image layout: every rule and the bundle, both forms
//!     SHA256SUMS    every module and component
//!   ```
//!
//! - **`aigov manifests --output DIR`** (`make manifests DEST=DIR`): the
//!   deployment manifests a team reviews, edits and commits, in a directory
//!   it names, and only when asked:
//!
//!   ```text
//!   DIR/
//!     <rule>/cluster-admission-policy.yaml
//!     <rule>/kustomization.yaml           the rule as a Kustomize base
//!     <rule>/artifacthub-pkg.yml          ArtifactHub package metadata
//!     overlay/kustomization.yaml          the rules a team turns on, one line each
//!     bundle/cluster-admission-policy.yaml  the same rules in one policy (aigov-bundle);
//!     bundle/kustomization.yaml             written when a rule is turned on
//!     policies.yml                        standalone policy-server configuration
//!     .aigov-generated.sha256             what aigov wrote here last (sha256sum -c)
//!   ```
//!
//!   A file is written only if it is new, or still exactly what aigov wrote
//!   there last time (by the checksums in `.aigov-generated.sha256`). A file
//!   someone edited, or that aigov did not write, is left alone and named,
//!   and the command exits with status 1; `--force` overwrites.
//!
//! Module references are pinned by digest. The digest is the manifest's,
//! computed here exactly as `aigov push` computes it, so the manifests are
//! right before anything is pushed.
//!
//! This module holds the two commands and [`Packaged`], a rule read from
//! the artifacts; its submodules render the files `aigov manifests` writes
//! (`policy`, `webhook`, `kustomize`, `policy_server`, `artifacthub`) and
//! write them without overwriting an edit (`protected`).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aigov_metadata::Metadata;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::dist::layout;
use crate::dist::oci::OciArtifact;
use crate::run::artifact::{self, module_metadata};
use crate::run::settings::{self, Scope, SettingsArg};
use crate::run::{compiled, engine, native};

mod artifacthub;
mod edited;
mod kustomize;
mod policy;
mod policy_server;
mod protected;
mod webhook;

pub use artifacthub::{artifacthub, artifacthub_created_at};
use kustomize::base_kustomization;
pub use kustomize::{OVERLAY, enabled_in_overlay, overlay};
pub use policy::{BUNDLE_DIR, bundle_cluster_admission_policy, cluster_admission_policy, defaults_comment};
pub use policy_server::policy_server_config;
use protected::write;
pub use protected::{Edited, Kept, KeptReason, RECORD, WriteReport, read_record, write_protected, write_protected_with};
pub use webhook::{Dropped, Gate, SETTING_GATED_RESOURCES, merge_rules, webhook_rules};

/// Where the published bundle lives unless `--registry` says otherwise.
pub const DEFAULT_REGISTRY: &str = "ghcr.io/aigov-dev/policies";

/// Namespaces no generated policy receives requests from, unless
/// `--exclude-namespaces` says otherwise: the control plane's (`kube-system`:
/// the kubelet's mirror pods, DaemonSets, DNS, CNI) and the Kubewarden
/// policy server's own.
pub const DEFAULT_EXCLUDED_NAMESPACES: [&str; 2] = ["kube-system", "kubewarden"];

/// Arguments of `aigov build package`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where `make artifacts` put the modules and components; the OCI layout
    /// (`oci/`) and `SHA256SUMS` are written there too.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
}

/// Arguments of `aigov manifests`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
A file in DIR is written only if it is new or still exactly what aigov wrote there last time \
(DIR/.aigov-generated.sha256 records it; `sha256sum -c .aigov-generated.sha256` in DIR lists \
what was edited since). A file that was edited, or that aigov did not write, is left alone and \
named, and the exit status is 1: merge by hand (generate into an empty directory and diff), or \
pass --force to overwrite.

A rule's settings are, in this order: those --settings gives; else those of its policy in DIR, \
<rule>/cluster-admission-policy.yaml, as your team edited them (and its `spec.mode`, if \
uncommented); else its defaults. Edits there are carried into every file written (the bundle's \
policy, policies.yml), so a policy edited only in `spec.settings` and `spec.mode` (or in its \
comments) is no conflict: it is left as edited, and regenerating exits 0. Settings given with \
--settings replace those edited in the rule's policy, which is rewritten.

--settings RULE=FILE: FILE is what `aigov settings check RULE=FILE` checks: the rule's settings \
(YAML or JSON), or a policy file holding the rule's policy (its `spec.settings`; the bundle's \
policy: its `settings.rules.RULE`). They are checked by the rule first: refused, nothing is \
written and the exit status is 2. A rule given settings is turned on in the overlay and the \
bundle, with those the overlay already turns on; --enable, when given, says exactly which rules \
are on (a rule given settings but left out of it keeps them in its own policy, off).

ArtifactHub's `createdAt` is kept from the file in DIR when nothing else in it changes; else it \
is SOURCE_DATE_EPOCH when set (the Makefile sets the last commit's time), else now. Nothing \
else depends on the environment.

Exit status: 0; 1 when a file was left alone; 2 on an error (refused settings included).")]
pub struct ManifestsArgs {
    /// Where `make artifacts` put the modules and components.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    /// The directory to write the manifests to (a GitOps repository's
    /// folder, say). Created if missing.
    #[arg(short, long, value_name = "DIR", alias = "out")]
    pub output: PathBuf,
    /// The registry and repository prefix the rules are (or will be) pushed
    /// to; each rule is `<registry>/<rule>:v<version>`.
    #[arg(long, default_value = DEFAULT_REGISTRY)]
    pub registry: String,
    /// Rules the Kustomize overlay turns on (comma-separated); the others are
    /// listed commented out. Without it, the rules DIR/overlay already turns
    /// on stay on (none in a new directory).
    #[arg(long, value_delimiter = ',')]
    pub enable: Vec<String>,
    /// Namespaces the policies never receive requests from (comma-separated;
    /// an empty value excludes none).
    #[arg(long, value_delimiter = ',', default_value = "kube-system,kubewarden")]
    pub exclude_namespaces: Vec<String>,
    /// A rule's settings, RULE=FILE (repeatable): a file of its settings
    /// (YAML or JSON) or a policy file holding its policy, written into
    /// its policy's `spec.settings`, the bundle's `settings.rules.RULE` and
    /// policies.yml, and turning the rule on unless --enable is given
    /// (see below).
    #[arg(long = "settings", value_name = "RULE=FILE")]
    pub settings: Vec<SettingsArg>,
    /// Overwrite files that were edited since aigov wrote them, or that aigov
    /// did not write.
    #[arg(long)]
    pub force: bool,
}

/// One rule, packaged.
pub struct Packaged {
    /// Rule name.
    pub name: String,
    /// Its embedded Kubewarden metadata (usage and protocol version included).
    pub metadata: Metadata,
    /// The module as an OCI artifact.
    pub module: OciArtifact,
    /// The component as an OCI artifact.
    pub component: OciArtifact,
    /// The settings it is deployed with: the rule's defaults, with its
    /// example settings over them for a rule that refuses its defaults
    /// ([`native::deployable_settings`]). Its manifests write only what
    /// differs from the defaults ([`Packaged::written_settings`]).
    pub settings: Value,
    /// Kubewarden's `spec.mode` its policy sets (`protect` or `monitor`),
    /// as a team set it in the policy aigov wrote; `None`: not set (the
    /// line is written commented out).
    pub mode: Option<String>,
}

impl Packaged {
    /// What its manifests write of [`Packaged::settings`]: the keys that
    /// differ from the rule's defaults ([`native::without_defaults`]);
    /// the bundle's settings whole.
    pub fn written_settings(&self) -> Value {
        match native::rule(&self.name) {
            Some(rule) => native::without_defaults(rule, &self.settings),
            None => self.settings.clone(),
        }
    }

    /// `registry://<registry>/<rule>:v<version>@sha256:…`.
    pub fn module_url(&self, registry: &str) -> String {
        format!("registry://{}", self.pinned(registry, &self.module))
    }

    /// `<registry>/<rule>:<tag>@sha256:…`.
    pub fn pinned(&self, registry: &str, form: &OciArtifact) -> String {
        format!("{}/{}:{}@{}", registry.trim_end_matches('/'), self.name, form.tag(), form.digest())
    }
}

/// Every rule linked into aigov, and the bundle, read from `artifacts`.
fn load_all(artifacts: &Path) -> Result<(Vec<Packaged>, Packaged)> {
    let engine = engine::new_engine()?;
    announce_compiling(&engine, artifacts);
    let rules = native::RULES.iter().map(|policy| load(&engine, artifacts, policy)).collect::<Result<_>>()?;
    Ok((rules, load(&engine, artifacts, &native::BUNDLE)?))
}

/// Says on stderr, before the wait, that reading the components' metadata
/// (for their OCI configs and digests) compiles them: about 20 s of CPU for
/// the whole catalogue, 30 to 50 s on a busy two-core machine, the first
/// time only, since the compiled code is cached. A command silent that
/// long looks hung.
fn announce_compiling(engine: &wasmtime::Engine, artifacts: &Path) {
    let cache = compiled::Cache::from_env();
    let all: Vec<&str> = native::RULES.iter().chain([&native::BUNDLE]).map(|p| p.metadata.name).collect();
    let uncached = all
        .iter()
        .filter(|name| std::fs::read(artifact::component_path(artifacts, name)).is_ok_and(|wasm| !cache.holds(engine, &wasm)))
        .count();
    if uncached > 0 {
        let _ = writeln!(
            std::io::stderr().lock(),
            "aigov: compiling {uncached} of {} components to read their metadata (about 30 s for all of them; later runs reuse the compiled code)…",
            all.len()
        );
    }
}

/// Runs `aigov build package`: the OCI layout and the checksums.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let (mut rules, bundle) = load_all(&args.artifacts)?;
    rules.push(bundle);
    write_build_outputs(&args.artifacts, &rules)?;
    for r in &rules {
        for form in [&r.module, &r.component] {
            writeln!(out, "{:<20} {:<9} {}", r.name, form.kind.name(), form.digest())?;
        }
    }
    writeln!(out, "wrote {0}/oci (OCI image layout) and {0}/SHA256SUMS", args.artifacts.display())?;
    // Deployment manifests are no longer written here: say so once to
    // whoever still has the ones an older aigov left (they are not touched).
    let legacy = args.artifacts.join("overlay").join("kustomization.yaml");
    if legacy.is_file() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "aigov: note: {} and {}/<rule>/cluster-admission-policy.yaml are left from an older aigov and are no longer updated; \
             generate deployment manifests with `make manifests DEST=<dir>` (or `aigov manifests --output <dir>`)",
            legacy.display(),
            args.artifacts.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads and checks `--settings RULE=FILE` of `aigov manifests`: each
/// rule's settings (over nothing: what the file says), by rule.
fn given_settings(args: &[SettingsArg]) -> Result<std::collections::BTreeMap<String, Value>> {
    let mut out = std::collections::BTreeMap::new();
    for arg in args {
        let Some(rule) = arg.rule.as_deref() else {
            bail!("--settings {arg}: name the rule these settings are for: --settings RULE={arg}");
        };
        let policy = native::lookup(rule, native::Names::RulesAndBundle)?;
        let name = policy.metadata.name;
        if native::is_bundle(policy) {
            bail!(
                "--settings {arg}: the bundle's settings are its rules': give each rule's, --settings RULE=FILE (a bundle's policy file \
                 gives each the settings it holds for it)"
            );
        }
        let resolved = settings::resolve(std::slice::from_ref(arg), Scope::One(name)).with_context(|| format!("--settings {arg}"))?;
        let given = resolved.whole.with_context(|| format!("--settings {arg}: no settings of `{name}` there"))?;
        let value: Value = serde_json::from_str(&given.json)?;
        let answer = (policy.validate_settings)(given.json.as_bytes());
        if !answer.valid {
            bail!(
                "--settings {arg}: `{name}` refuses these settings: {}; nothing was written (`aigov settings check {arg}` checks them)",
                settings::explain_refusal(&answer.message.unwrap_or_default(), "spec.mode")
            );
        }
        if out.insert(name.to_string(), value).is_some() {
            bail!("--settings: the settings of `{name}` are given twice; give them once");
        }
    }
    Ok(out)
}

/// ArtifactHub's `createdAt` as the file at `path` has it, when there is one.
fn existing_created_at(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find(|l| l.starts_with("createdAt:")).map(str::to_string)
}

/// Runs `aigov manifests`.
pub fn run_manifests(args: &ManifestsArgs, out: &mut dyn Write) -> Result<ExitCode> {
    for rule in &args.enable {
        native::lookup(rule, native::Names::Rules).map_err(|e| anyhow::anyhow!("--enable: {e}"))?;
    }
    let excluded = excluded_namespaces(&args.exclude_namespaces)?;
    let given = given_settings(&args.settings)?;
    let mut err = std::io::stderr().lock();
    let enable = if args.enable.is_empty() {
        // Regenerating must not switch off what the team turned on.
        let overlay = args.output.join(OVERLAY);
        let mut kept = enabled_in_overlay(&overlay)?;
        if !kept.is_empty() {
            let _ = writeln!(err, "aigov: no --enable: keeping the rules {} turns on: {}", overlay.display(), kept.join(", "));
        }
        let added: Vec<String> = given.keys().filter(|r| !kept.contains(r)).cloned().collect();
        if !added.is_empty() {
            let _ = writeln!(err, "aigov: turning on the rule(s) given --settings: {}", added.join(", "));
        }
        kept.extend(added);
        kept
    } else {
        for rule in given.keys().filter(|r| !args.enable.contains(r)) {
            let _ = writeln!(
                err,
                "aigov: `{rule}` is given --settings but left out of --enable: its settings are written in {}, and it stays off",
                args.output.join(edited::policy_path(rule)).display()
            );
        }
        args.enable.clone()
    };
    let (mut rules, mut bundle) = load_all(&args.artifacts)?;
    let carried = edited::carry(&args.output, &mut rules)?;
    edited::carry_bundle_mode(&args.output, &mut bundle)?;
    let carried: Vec<&String> = carried.iter().filter(|r| !given.contains_key(*r)).collect();
    if !carried.is_empty() {
        let _ = writeln!(
            err,
            "aigov: keeping the settings (and mode) each rule's policy sets, {}: {}",
            args.output.join(edited::policy_path("<rule>")).display(),
            carried.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    for r in &mut rules {
        if let (Some(settings), Some(rule)) = (given.get(&r.name), native::rule(&r.name)) {
            r.settings = edited::over_defaults(rule, settings);
        }
    }
    let mut files = manifests(&rules, &bundle, &args.registry, &enable, &excluded, &artifacthub_created_at()?)?;
    // ArtifactHub's `createdAt` changes only with the rest of the file.
    for (relative, content) in files.iter_mut().filter(|(p, _)| p.ends_with("/artifacthub-pkg.yml")) {
        let path = args.output.join(&*relative);
        if let (Some(old), Some(new)) = (existing_created_at(&path), content.lines().find(|l| l.starts_with("createdAt:"))) {
            let kept = content.replacen(new, &old, 1);
            if std::fs::read_to_string(&path).is_ok_and(|t| t == kept) {
                *content = kept;
            }
        }
    }
    let given_rules: std::collections::BTreeSet<String> = given.keys().cloned().collect();
    let report = write_protected_with(&args.output, &files, args.force, &|relative, current, new| {
        edited::judge(relative, current, new, &given_rules)
    })?;
    for r in rules.iter().chain([&bundle]) {
        writeln!(out, "{:<20} {}", r.name, r.pinned(&args.registry, &r.module))?;
    }
    if enable.is_empty() {
        writeln!(out, "bundle/'s policy not written: no rule is turned on (--enable rule-a,rule-b, or ENABLE=... with make)")?;
    }
    writeln!(
        out,
        "{}: {} file(s) written, {} unchanged, {} left alone",
        args.output.display(),
        report.written.len(),
        report.unchanged.len() + report.same.len(),
        report.kept.len()
    )?;
    if !report.same.is_empty() {
        let _ = writeln!(err, "aigov: kept as edited (only their settings, mode or comments were edited, and those are carried):");
        for path in &report.same {
            let _ = writeln!(err, "  {}", args.output.join(path).display());
        }
    }
    if !report.superseded.is_empty() {
        let _ = writeln!(err, "aigov: rewritten with the settings --settings gives, replacing those edited there:");
        for path in &report.superseded {
            let _ = writeln!(err, "  {}", args.output.join(path).display());
        }
    }
    if report.kept.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let _ = writeln!(err, "aigov: left alone (the new version was not written):");
    for k in &report.kept {
        let why = match k.reason {
            KeptReason::Edited => "edited since aigov wrote it",
            KeptReason::NotGenerated => "not written by aigov",
        };
        let _ = writeln!(err, "  {} ({why})", args.output.join(&k.path).display());
    }
    let _ = writeln!(
        err,
        "aigov: to compare, generate into an empty directory and diff; to overwrite, rerun with --force (make manifests ... FORCE=1)"
    );
    Ok(ExitCode::FAILURE)
}

/// Reads one rule's module and component from `artifacts`.
pub fn load(engine: &wasmtime::Engine, artifacts: &Path, policy: &aigov_sdk::NativePolicy) -> Result<Packaged> {
    let name = policy.metadata.name;
    let read = |path: PathBuf| {
        let path = artifact::require(artifacts, path, None)?;
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    };
    let module_wasm = read(artifact::module_path(artifacts, name))?;
    let component_wasm = read(artifact::component_path(artifacts, name))?;
    let metadata = module_metadata(&module_wasm)?
        .with_context(|| format!("{}: the module is not annotated", artifact::module_path(artifacts, name).display()))?;
    let module = OciArtifact::module(&module_wasm)?;
    let component = OciArtifact::component(engine, &component_wasm)?;
    for form in [&module, &component] {
        if form.name != name || form.version != policy.metadata.version {
            bail!(
                "{}'s {} says it is {} {}, but the rule built into aigov is {name} {}: rebuild with `make artifacts`",
                artifacts.join(name).display(),
                form.kind.name(),
                form.name,
                form.version,
                policy.metadata.version
            );
        }
    }
    Ok(Packaged { name: name.to_string(), metadata, module, component, settings: native::deployable_settings(policy)?, mode: None })
}

/// Writes the OCI layout and the checksums next to the artifacts (`rules`
/// holds the bundle too).
pub fn write_build_outputs(artifacts: &Path, rules: &[Packaged]) -> Result<()> {
    let forms: Vec<OciArtifact> = rules.iter().flat_map(|r| [r.module.clone(), r.component.clone()]).collect();
    layout::write(&artifacts.join("oci"), &forms)?;
    write(&artifacts.join("SHA256SUMS"), &checksums(artifacts, rules))
}

/// The deployment manifests, as (path relative to the output directory,
/// content), in a stable order. The bundle's are written only when `enable`
/// turns a rule on: a policy with no webhook rule receives nothing.
pub fn manifests(
    rules: &[Packaged],
    bundle: &Packaged,
    registry: &str,
    enable: &[String],
    excluded: &[String],
    created_at: &str,
) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for r in rules {
        files.push((edited::policy_path(&r.name), cluster_admission_policy(r, registry, excluded)?));
        files.push((format!("{}/kustomization.yaml", r.name), base_kustomization(&r.name)));
        files.push((format!("{}/artifacthub-pkg.yml", r.name), artifacthub(r, registry, created_at)?));
    }
    files.push((OVERLAY.into(), overlay(rules, enable)));
    if !enable.is_empty() {
        files.push((
            format!("{BUNDLE_DIR}/cluster-admission-policy.yaml"),
            bundle_cluster_admission_policy(bundle, rules, enable, registry, excluded)?,
        ));
        files.push((format!("{BUNDLE_DIR}/kustomization.yaml"), base_kustomization(&bundle.name)));
    }
    files.push((format!("{BUNDLE_DIR}/artifacthub-pkg.yml"), artifacthub(bundle, registry, created_at)?));
    files.push(("policies.yml".into(), policy_server_config(rules, bundle, enable, registry)?));
    Ok(files)
}

/// Checks `--exclude-namespaces`: DNS labels, as namespace names are
/// (which also keeps them plain YAML scalars); empty values are dropped.
pub fn excluded_namespaces(names: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let label = n.len() <= 63
            && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !n.starts_with('-')
            && !n.ends_with('-');
        if !label {
            bail!("--exclude-namespaces: `{n}` is not a namespace name (lowercase letters, digits and `-`)");
        }
        if !out.iter().any(|x| x == n) {
            out.push(n.to_string());
        }
    }
    Ok(out)
}

fn yaml<T: Serialize>(value: &T) -> Result<String> {
    serde_norway::to_string(value).context("rendering YAML")
}

fn annotation<'a>(m: &'a Metadata, key: &str) -> &'a str {
    m.annotations.get(key).map_or("", String::as_str)
}

/// `sha256sum`-format checksums of every module and component (the layers
/// packaged from them).
pub fn checksums(artifacts: &Path, rules: &[Packaged]) -> String {
    let mut out = String::new();
    for r in rules {
        for (path, form) in
            [(artifact::module_path(artifacts, &r.name), &r.module), (artifact::component_path(artifacts, &r.name), &r.component)]
        {
            let digest = form.layer.digest();
            let relative = path.strip_prefix(artifacts).unwrap_or(&path);
            let _ = writeln!(out, "{}  {}", digest.trim_start_matches("sha256:"), relative.display());
        }
    }
    out
}

#[cfg(test)]
mod tests;
