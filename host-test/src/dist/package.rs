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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aigov_metadata::{Metadata, annotations};
use aigov_sdk::WorkloadKind;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::dist::layout;
use crate::dist::oci::{OciArtifact, sha256_digest};
use crate::run::artifact::{self, module_metadata};
use crate::run::{engine, native};

/// Where the published bundle lives unless `--registry` says otherwise.
pub const DEFAULT_REGISTRY: &str = "ghcr.io/aigov-dev/policies";

/// Namespaces no generated policy receives requests from, unless
/// `--exclude-namespaces` says otherwise: the control plane's (`kube-system`:
/// the kubelet's mirror pods, DaemonSets, DNS, CNI) and the Kubewarden
/// policy server's own.
pub const DEFAULT_EXCLUDED_NAMESPACES: [&str; 2] = ["kube-system", "kubewarden"];

/// The record of what `aigov manifests` wrote in a directory: one
/// `sha256sum` line per file, so `sha256sum -c` run there lists the files
/// edited since.
pub const RECORD: &str = ".aigov-generated.sha256";

/// A resource a rule acts on only under some settings. A generated policy
/// lists it in its webhook rules only when the policy's settings (the
/// rule's defaults) turn it on, so the API server does not call the webhook
/// for requests the rule would admit unread. The policy says what was left
/// out and how to add it back.
pub struct Gate {
    /// The rule.
    pub rule: &'static str,
    /// The resource (`pods/portforward`).
    pub resource: &'static str,
    /// The settings that turn it on, as the policy's comment words them.
    pub when: &'static str,
    /// Whether settings turn it on.
    pub on: fn(&Value) -> bool,
}

/// Whether settings list `value` under `key`.
fn lists(settings: &Value, key: &str, value: &str) -> bool {
    settings.get(key).and_then(Value::as_array).is_some_and(|l| l.iter().any(|v| v == value))
}

/// Whether gpu-class-by-namespace's settings judge DRA claim objects.
fn claims_governed(s: &Value) -> bool {
    let set = |k: &str| match s.get(k) {
        None | Some(Value::Null) => false,
        Some(Value::Array(l)) => !l.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    };
    set("deviceClasses") || set("deviceClassProducts") || set("adminAccess")
}

/// Every resource a rule acts on only under some settings.
pub const SETTING_GATED_RESOURCES: &[Gate] = &[
    Gate { rule: "exec-guard", resource: "pods/portforward", when: "`guardPortForward: true`", on: |s| s["guardPortForward"] == true },
    Gate { rule: "model-provenance", resource: "pods", when: "`Pod` in `kinds`", on: |s| lists(s, "kinds", "Pod") },
    Gate {
        rule: "model-provenance",
        resource: "leaderworkersets",
        when: "`LeaderWorkerSet` in `kinds`",
        on: |s| lists(s, "kinds", "LeaderWorkerSet"),
    },
    Gate { rule: "model-provenance", resource: "rayjobs", when: "`RayJob` in `kinds`", on: |s| lists(s, "kinds", "RayJob") },
    Gate { rule: "model-provenance", resource: "rayservices", when: "`RayService` in `kinds`", on: |s| lists(s, "kinds", "RayService") },
    Gate { rule: "model-provenance", resource: "jobsets", when: "`JobSet` in `kinds`", on: |s| lists(s, "kinds", "JobSet") },
    Gate {
        rule: "gpu-class-by-namespace",
        resource: "resourceclaims",
        when: "`deviceClasses`, `deviceClassProducts` or `adminAccess` set",
        on: claims_governed,
    },
    Gate {
        rule: "gpu-class-by-namespace",
        resource: "resourceclaimtemplates",
        when: "`deviceClasses`, `deviceClassProducts` or `adminAccess` set",
        on: claims_governed,
    },
    Gate {
        rule: "workload-classification",
        resource: "namespaces",
        when: "labels listed in `namespaceLabels`",
        on: |s| s.get("namespaceLabels").and_then(Value::as_object).is_some_and(|m| !m.is_empty()),
    },
];

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

ArtifactHub's `createdAt` is SOURCE_DATE_EPOCH when set (the Makefile sets the last commit's \
time), else now. Nothing else depends on the environment.")]
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
    let rules = native::RULES.iter().map(|policy| load(&engine, artifacts, policy)).collect::<Result<_>>()?;
    Ok((rules, load(&engine, artifacts, &native::BUNDLE)?))
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

/// Runs `aigov manifests`.
pub fn run_manifests(args: &ManifestsArgs, out: &mut dyn Write) -> Result<ExitCode> {
    for rule in &args.enable {
        native::lookup(rule, native::Names::Rules).map_err(|e| anyhow::anyhow!("--enable: {e}"))?;
    }
    let excluded = excluded_namespaces(&args.exclude_namespaces)?;
    let enable = if args.enable.is_empty() {
        // Regenerating must not switch off what the team turned on.
        let overlay = args.output.join(OVERLAY);
        let kept = enabled_in_overlay(&overlay)?;
        if !kept.is_empty() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "aigov: no --enable: keeping the rules {} turns on: {}",
                overlay.display(),
                kept.join(", ")
            );
        }
        kept
    } else {
        args.enable.clone()
    };
    let (mut rules, bundle) = load_all(&args.artifacts)?;
    let carried = edited::carry(&args.output, &mut rules)?;
    if !carried.is_empty() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "aigov: keeping the settings edited in {}: {}",
            args.output.join(edited::policy_path("<rule>")).display(),
            carried.join(", ")
        );
    }
    let files = manifests(&rules, &bundle, &args.registry, &enable, &excluded, &artifacthub_created_at()?)?;
    let report = write_protected(&args.output, &files, args.force)?;
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
        report.unchanged.len(),
        report.kept.len()
    )?;
    if report.kept.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut err = std::io::stderr().lock();
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
    Ok(Packaged { name: name.to_string(), metadata, module, component, settings: native::deployable_settings(policy)? })
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

/// ArtifactHub's `createdAt`: `SOURCE_DATE_EPOCH` (seconds; the Makefile
/// sets the last commit's time) when set, else now. It appears in
/// `artifacthub-pkg.yml` only, never in an OCI artifact.
pub fn artifacthub_created_at() -> Result<String> {
    let time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => {
            let seconds = v.trim().parse::<i64>().with_context(|| format!("SOURCE_DATE_EPOCH=`{v}` is not a number of seconds"))?;
            chrono::DateTime::from_timestamp(seconds, 0).with_context(|| format!("SOURCE_DATE_EPOCH={seconds} is out of range"))?
        }
        _ => chrono::Utc::now(),
    };
    Ok(time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

// ------------------------------------------------------ protected writing

/// Why a file was left alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptReason {
    /// aigov wrote it, and it changed since.
    Edited,
    /// It was there, and aigov has no record of writing it.
    NotGenerated,
}

/// A file left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// Relative to the output directory.
    pub path: String,
    /// Why.
    pub reason: KeptReason,
}

/// What [`write_protected`] did, file by file (paths relative to the
/// output directory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// New files, and files still as aigov wrote them whose content changed.
    pub written: Vec<String>,
    /// Files that already held exactly the new content.
    pub unchanged: Vec<String>,
    /// Files left alone.
    pub kept: Vec<Kept>,
}

/// The record in `dir`: path → sha256 hex. A missing record is empty.
pub fn read_record(dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = dir.join(RECORD);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut record = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let Some((hex, file)) = line.split_once("  ") else {
            bail!("{}: line {} is not `<sha256>  <file>`", path.display(), i + 1);
        };
        record.insert(file.to_string(), hex.to_string());
    }
    Ok(record)
}

fn hex_digest(bytes: &[u8]) -> String {
    sha256_digest(bytes).trim_start_matches("sha256:").to_string()
}

/// Writes `files` (relative path, content) under `dir`, never overwriting a
/// file that differs from what aigov last wrote there (unless `force`),
/// and records what it wrote in [`RECORD`].
pub fn write_protected(dir: &Path, files: &[(String, String)], force: bool) -> Result<WriteReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let previous = read_record(dir)?;
    let mut record = BTreeMap::new();
    let mut report = WriteReport::default();
    for (relative, content) in files {
        let path = dir.join(relative);
        let new_hex = hex_digest(content.as_bytes());
        let current = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        match current {
            Some(bytes) if bytes == content.as_bytes() => {
                report.unchanged.push(relative.clone());
                record.insert(relative.clone(), new_hex);
            }
            Some(bytes) if !force && previous.get(relative) != Some(&hex_digest(&bytes)) => {
                let reason = if previous.contains_key(relative) { KeptReason::Edited } else { KeptReason::NotGenerated };
                // Keep the old checksum, so the file still counts as edited
                // next time.
                if let Some(old) = previous.get(relative) {
                    record.insert(relative.clone(), old.clone());
                }
                report.kept.push(Kept { path: relative.clone(), reason });
            }
            _ => {
                write(&path, content)?;
                report.written.push(relative.clone());
                record.insert(relative.clone(), new_hex);
            }
        }
    }
    let mut text = String::new();
    for (file, hex) in &record {
        let _ = writeln!(text, "{hex}  {file}");
    }
    write(&dir.join(RECORD), &text)?;
    Ok(report)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn yaml<T: Serialize>(value: &T) -> Result<String> {
    serde_norway::to_string(value).context("rendering YAML")
}

fn annotation<'a>(m: &'a Metadata, key: &str) -> &'a str {
    m.annotations.get(key).map_or("", String::as_str)
}

// ------------------------------------------------------------- manifests

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec<'a> {
    policy_server: &'a str,
    module: String,
    rules: &'a [aigov_metadata::Rule],
    mutating: bool,
    background_audit: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    context_aware_resources: &'a [aigov_metadata::ContextAwareResource],
    settings: &'a Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resource<'a, S> {
    api_version: &'a str,
    kind: &'a str,
    metadata: ResourceMeta<'a>,
    spec: S,
}

#[derive(Serialize)]
struct ResourceMeta<'a> {
    name: String,
    labels: BTreeMap<&'a str, &'a str>,
    annotations: BTreeMap<&'a str, &'a str>,
}

/// A resource left out of a policy's webhook rules, and the setting that
/// would bring it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// `pods/portforward`.
    pub resource: String,
    /// What turns it on: `` `guardPortForward: true` ``.
    pub when: String,
}

/// The webhook rules of a rule's policy: its metadata's rules, without the
/// [`SETTING_GATED_RESOURCES`] its `settings` leave off (a rule left with
/// no resource is dropped), and what was left out.
pub fn webhook_rules(name: &str, rules: &[aigov_metadata::Rule], settings: &Value) -> (Vec<aigov_metadata::Rule>, Vec<Dropped>) {
    let off: Vec<(&str, &str)> =
        SETTING_GATED_RESOURCES.iter().filter(|g| g.rule == name && !(g.on)(settings)).map(|g| (g.resource, g.when)).collect();
    let mut dropped: Vec<Dropped> = Vec::new();
    let mut out = Vec::new();
    for rule in rules {
        let mut kept = rule.clone();
        kept.resources.retain(|resource| match off.iter().find(|(r, _)| r == resource) {
            Some((r, when)) => {
                let d = Dropped { resource: r.to_string(), when: when.to_string() };
                if !dropped.contains(&d) {
                    dropped.push(d);
                }
                false
            }
            None => true,
        });
        if !kept.resources.is_empty() {
            out.push(kept);
        }
    }
    (out, dropped)
}

/// The `namespaceSelector` block (indented for `spec`), or a comment when
/// no namespace is excluded.
fn namespace_selector(excluded: &[String]) -> String {
    if excluded.is_empty() {
        return "  # namespaceSelector: none, so requests from every namespace, kube-system included, reach the policy\n".into();
    }
    format!(
        "  # Requests from these namespaces never reach the policy: kube-system (the kubelet's mirror\n\
         \x20 # pods, DaemonSets, DNS, CNI) and the policy server's own. Change the list on the last line.\n\
         \x20 namespaceSelector:\n\
         \x20   matchExpressions:\n\
         \x20   - {{key: kubernetes.io/metadata.name, operator: NotIn, values: [{}]}}\n",
        excluded.join(", ")
    )
}

/// The rule's `ClusterAdmissionPolicy`: its webhook rules (see
/// [`webhook_rules`]), the settings that differ from its defaults, every
/// setting's default in a comment after them ([`defaults_comment`]), a
/// `namespaceSelector` excluding `excluded`, and a commented `mode: monitor`
/// line.
pub fn cluster_admission_policy(r: &Packaged, registry: &str, excluded: &[String]) -> Result<String> {
    let m = &r.metadata;
    let (rules, dropped) = webhook_rules(&r.name, &m.rules, &r.settings);
    let written = r.written_settings();
    let resource = policy_resource(
        format!("aigov-{}", r.name),
        &r.name,
        m,
        PolicySpec {
            policy_server: "default",
            module: r.module_url(registry),
            rules: &rules,
            mutating: m.mutating,
            background_audit: m.background_audit,
            context_aware_resources: &m.context_aware_resources,
            settings: &written,
        },
    );
    let mut out = String::new();
    let _ = writeln!(out, "# aigov {} {}: {}", r.name, r.module.version, annotation(m, annotations::DESCRIPTION));
    let _ = writeln!(out, "# Generated by `aigov manifests` from policies/{}/metadata.yml.", r.name);
    if native::example_settings(&r.name).is_some() {
        let _ = writeln!(out, "# Its settings are the EXAMPLE lists of host-test/settings/{}.yaml (the rule has no", r.name);
        let _ = writeln!(out, "# safe default list): replace them with your own before applying. Every other");
        let _ = writeln!(out, "# setting is at its default, listed at the end; each is documented in");
    } else {
        let _ = writeln!(out, "# Every setting is at its default, listed at the end; each is documented in");
    }
    let _ = writeln!(out, "# {}", annotation(m, annotations::SOURCE));
    if !m.context_aware_resources.is_empty() {
        let kinds: Vec<String> = m.context_aware_resources.iter().map(|c| format!("{} {}", c.api_version, c.kind)).collect();
        let _ = writeln!(out, "# Context-aware: the policy server lets the rule read {} objects.", kinds.join(", "));
    }
    for d in &dropped {
        let _ = writeln!(
            out,
            "# `{}` is left out of the rules below: the rule acts on it only with {}.\n\
             # Set that in the settings and add `{}` back to the rules' resources.",
            d.resource, d.when, d.resource
        );
    }
    let mut out = render_policy(out, &resource, excluded)?;
    out.push_str(&defaults_comment(r, &written)?);
    Ok(out)
}

/// Every setting of rule `r` its policy does not write (`written`), at its
/// default, as comments that follow `spec.settings` (the policy's last
/// key): a line uncommented (`# ` deleted) sits under `settings:` as
/// written. Empty for the bundle.
pub fn defaults_comment(r: &Packaged, written: &Value) -> Result<String> {
    let Some(rule) = native::rule(&r.name) else { return Ok(String::new()) };
    let mut defaults = (rule.default_settings)();
    if let (Some(listed), Some(written)) = (defaults.as_object_mut(), written.as_object()) {
        listed.retain(|key, _| !written.contains_key(key));
    }
    let mut out = String::from(
        "  # `settings` holds only what differs from the rule's defaults: the module pinned above\n\
         \x20 # holds them, and Kubewarden sends every key written there with every request, to be\n\
         \x20 # read again. Every other setting and its default follow. To change one, uncomment its\n\
         \x20 # line (delete `# `), with its parent's, and drop the `{}` after `settings:` if it is there.\n",
    );
    for line in yaml(&defaults)?.lines() {
        let _ = writeln!(out, "  #   {line}");
    }
    Ok(out)
}

/// A `ClusterAdmissionPolicy` named `name`, labelled as part of aigov and
/// carrying `m`'s title, description, severity, category and version.
fn policy_resource<'a>(name: String, app: &'a str, m: &'a Metadata, spec: PolicySpec<'a>) -> Resource<'a, PolicySpec<'a>> {
    let keep = [annotations::TITLE, annotations::DESCRIPTION, annotations::SEVERITY, annotations::CATEGORY, annotations::VERSION];
    Resource {
        api_version: "policies.kubewarden.io/v1",
        kind: "ClusterAdmissionPolicy",
        metadata: ResourceMeta {
            name,
            labels: [("app.kubernetes.io/part-of", "aigov"), ("app.kubernetes.io/name", app)].into(),
            annotations: keep.iter().map(|k| (*k, annotation(m, k))).collect(),
        },
        spec,
    }
}

/// A `ClusterAdmissionPolicy` after its `header` comments, with a commented
/// `mode: monitor` line and the `namespaceSelector` at the top of `spec`.
fn render_policy<S: Serialize>(mut out: String, resource: &Resource<'_, S>, excluded: &[String]) -> Result<String> {
    for line in yaml(resource)?.lines() {
        out.push_str(line);
        out.push('\n');
        if line == "spec:" {
            out.push_str("  # mode: monitor   # uncomment to log what the policy would reject without rejecting it\n");
            out.push_str(&namespace_selector(excluded));
            out.push_str(
                "  # objectSelector: set it to the settings' `objectSelector`, if you give the rule one, and the\n\
                 \x20 # API server does not even call the policy for the objects the rule would skip.\n",
            );
        }
    }
    Ok(out)
}

/// Where the bundle's manifests go, relative to the output directory.
pub const BUNDLE_DIR: &str = "bundle";

/// The bundle's `ClusterAdmissionPolicy`: the `enable`d rules in one policy,
/// each with the settings its own policy carries, under `settings.rules`.
/// Its webhook rules are the union of those rules' own (each after
/// [`webhook_rules`]), merged where that changes nothing a request matches
/// ([`merge_rules`]); it is mutating, audits in the background and reads
/// cluster objects when one of them does.
pub fn bundle_cluster_admission_policy(
    bundle: &Packaged,
    rules: &[Packaged],
    enable: &[String],
    registry: &str,
    excluded: &[String],
) -> Result<String> {
    let BundleSelection { on, union, settings, dropped } = BundleSelection::of(rules, enable)?;
    let webhook = merge_rules(union.rules);
    let m = &bundle.metadata;
    let resource = policy_resource(
        bundle.name.clone(),
        &bundle.name,
        m,
        PolicySpec {
            policy_server: "default",
            module: bundle.module_url(registry),
            rules: &webhook,
            mutating: union.mutating,
            background_audit: union.background_audit,
            context_aware_resources: &union.context_aware_resources,
            settings: &settings,
        },
    );
    let names: Vec<&str> = on.iter().map(|r| r.name.as_str()).collect();
    let mut out = String::new();
    let _ = writeln!(out, "# {} {}: {}", bundle.name, bundle.module.version, annotation(m, annotations::DESCRIPTION));
    let mut line = String::from("# Generated by `aigov manifests` for the rules turned on:");
    for (i, name) in names.iter().enumerate() {
        let word = format!(" {name}{}", if i + 1 == names.len() { "." } else { "," });
        if line.len() + word.len() > 92 {
            let _ = writeln!(out, "{line}");
            line = String::from("#");
        }
        line.push_str(&word);
    }
    let _ = writeln!(out, "{line}");
    let _ = writeln!(out, "# One webhook call and one parse per request for all of them. Apply this directory OR");
    let _ = writeln!(out, "# ../overlay (the same rules as separate policies), not both: a rule deployed both ways");
    let _ = writeln!(out, "# runs twice. Each rule's settings (under settings.rules) are those of its own policy,");
    let _ = writeln!(out, "# ../<rule>/cluster-admission-policy.yaml, as edited there when this was regenerated:");
    let _ = writeln!(out, "# only what differs from its defaults. To turn rules on or off, regenerate with --enable:");
    let _ = writeln!(out, "# the webhook rules below are the union of the enabled rules' and must follow the list.");
    for r in on.iter().filter(|r| native::example_settings(&r.name).is_some()) {
        let _ = writeln!(
            out,
            "# settings.rules.{0} holds the EXAMPLE lists of host-test/settings/{0}.yaml (the rule has no\n\
             # safe default list): replace them with your own before applying.",
            r.name
        );
    }
    if !union.context_aware_resources.is_empty() {
        let kinds: Vec<String> = union.context_aware_resources.iter().map(|c| format!("{} {}", c.api_version, c.kind)).collect();
        let _ = writeln!(out, "# Context-aware: the policy server lets the bundle read {} objects.", kinds.join(", "));
    }
    for (rule, d) in &dropped {
        let _ = writeln!(
            out,
            "# `{}` is left out of the rules below: {rule} acts on it only with {}.\n\
             # Set that in settings.rules.{rule} and add `{}` back to the rules' resources.",
            d.resource, d.when, d.resource
        );
    }
    render_policy(out, &resource, excluded)
}

/// The rules a bundle deployment turns on, and what follows from them.
struct BundleSelection<'a> {
    on: Vec<&'a Packaged>,
    /// The enabled rules' metadata merged: webhook rules (after each rule's
    /// settings gate its own), mutation, context-aware resources.
    union: Metadata,
    /// `{"rules": {"<rule>": <its written settings>}}`.
    settings: Value,
    /// Webhook rules left out because a rule's settings do not act on them.
    dropped: Vec<(&'a str, Dropped)>,
}

impl<'a> BundleSelection<'a> {
    fn of(rules: &'a [Packaged], enable: &[String]) -> Result<BundleSelection<'a>> {
        let on: Vec<&Packaged> = rules.iter().filter(|r| enable.contains(&r.name)).collect();
        if on.is_empty() {
            bail!("the bundle's policy needs at least one rule turned on");
        }
        let mut dropped = Vec::new();
        let mut routed = Vec::new();
        for r in &on {
            let (kept, left) = webhook_rules(&r.name, &r.metadata.rules, &r.settings);
            dropped.extend(left.into_iter().map(|d| (r.name.as_str(), d)));
            routed.push(Metadata { rules: kept, ..r.metadata.clone() });
        }
        let union = Metadata::union(&routed, BTreeMap::new());
        let settings = serde_json::json!({
            "rules": on.iter().map(|r| (r.name.clone(), r.written_settings())).collect::<serde_json::Map<_, _>>()
        });
        Ok(BundleSelection { on, union, settings, dropped })
    }
}

/// Webhook rules with the same groups, versions and operations, as one rule
/// listing all their resources: a request matches the merged rule exactly
/// when it matches one of them. Rules whose resources hold a wildcard are
/// left as they are (Kubernetes wants `*` alone in its list).
pub fn merge_rules(rules: Vec<aigov_metadata::Rule>) -> Vec<aigov_metadata::Rule> {
    fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
        a.len() == b.len() && a.iter().all(|x| b.contains(x))
    }
    let wild = |r: &aigov_metadata::Rule| r.resources.iter().any(|x| x.contains('*'));
    let mut out: Vec<aigov_metadata::Rule> = Vec::new();
    for rule in rules {
        let into = out.iter_mut().find(|o| {
            !wild(o)
                && !wild(&rule)
                && same(&o.api_groups, &rule.api_groups)
                && same(&o.api_versions, &rule.api_versions)
                && same(&o.operations, &rule.operations)
        });
        match into {
            Some(o) => {
                for resource in rule.resources {
                    if !o.resources.contains(&resource) {
                        o.resources.push(resource);
                    }
                }
            }
            None => out.push(rule),
        }
    }
    out
}

fn base_kustomization(name: &str) -> String {
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

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerPolicy<'a> {
    module: String,
    policy_mode: &'a str,
    allowed_to_mutate: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    context_aware_resources: &'a [aigov_metadata::ContextAwareResource],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    host_capabilities: &'a [String],
    settings: Value,
}

/// `policies.yml` for a standalone `policy-server --policies policies.yml`:
/// every rule, and the bundle running the rules `enable` turns on (when it
/// turns on any).
pub fn policy_server_config(rules: &[Packaged], bundle: &Packaged, enable: &[String], registry: &str) -> Result<String> {
    fn entry<'m>(r: &Packaged, m: &'m Metadata, registry: &str, settings: Value) -> ServerPolicy<'m> {
        ServerPolicy {
            module: r.module_url(registry),
            policy_mode: "protect",
            allowed_to_mutate: m.mutating,
            context_aware_resources: &m.context_aware_resources,
            host_capabilities: &m.host_capabilities,
            settings,
        }
    }
    let selection = if enable.is_empty() { None } else { Some(BundleSelection::of(rules, enable)?) };
    let mut map: BTreeMap<&str, ServerPolicy<'_>> =
        rules.iter().map(|r| (r.name.as_str(), entry(r, &r.metadata, registry, r.written_settings()))).collect();
    if let Some(s) = &selection {
        map.insert(bundle.name.as_str(), entry(bundle, &s.union, registry, s.settings.clone()));
    }
    let mut out = String::from(
        "# Every aigov rule for a standalone Kubewarden policy-server:\n\
         #   policy-server --policies policies.yml\n\
         # Each rule is served at /validate/<name>. `policyMode: monitor` logs instead of\n\
         # rejecting. Rules with `contextAwareResources` read those kinds from the cluster,\n\
         # so the policy-server needs a kubeconfig or in-cluster credentials allowed to get\n\
         # and list them; their `hostCapabilities` grant the host calls they make for it\n\
         # (kubernetes/get_resource, kubernetes/list_resources_by_namespace), since a\n\
         # standalone policy-server lets a policy make no host call its entry does not list.\n\
         # Settings hold only what differs from each rule's defaults, which\n\
         # <rule>/cluster-admission-policy.yaml lists.\n",
    );
    match &selection {
        Some(s) => {
            let names: Vec<&str> = s.on.iter().map(|r| r.name.as_str()).collect();
            let _ = writeln!(
                out,
                "# {} (/validate/{0}) runs the rules turned on ({}) in one call:\n\
                 # send a request to it OR to those rules' own endpoints, not both.",
                bundle.name,
                names.join(", ")
            );
        }
        None => {
            let _ = writeln!(out, "# No rule is turned on, so {} is not listed (regenerate with --enable).", bundle.name);
        }
    }
    out.push_str(&yaml(&map)?);
    Ok(out)
}

/// The Kinds a rule's webhook rules route to it, for ArtifactHub.
fn kinds(m: &Metadata) -> String {
    let mut out: Vec<String> = Vec::new();
    for rule in &m.rules {
        for resource in &rule.resources {
            let (plural, sub) = resource.split_once('/').map_or((resource.as_str(), None), |(p, s)| (p, Some(s)));
            let kind = WorkloadKind::ALL
                .into_iter()
                .find(|k| k.resource() == plural && rule.api_groups.iter().any(|g| g == k.group() || g == "*"))
                .map_or_else(|| plural.to_string(), |k| k.kind().to_string());
            let name = match sub {
                Some(sub) => format!("{kind}/{sub}"),
                None => kind,
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.join(", ")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactHubPackage<'a> {
    version: &'a str,
    name: &'a str,
    display_name: &'a str,
    created_at: &'a str,
    description: &'a str,
    license: &'a str,
    #[serde(rename = "homeURL")]
    home_url: &'a str,
    containers_images: Vec<Named>,
    keywords: Vec<String>,
    links: Vec<Link>,
    install: String,
    readme: &'a str,
    maintainers: Vec<Named>,
    provider: Provider<'a>,
    annotations: std::collections::BTreeMap<&'a str, String>,
}

#[derive(Serialize)]
struct Named {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

#[derive(Serialize)]
struct Link {
    name: String,
    url: String,
}

#[derive(Serialize)]
struct Provider<'a> {
    name: &'a str,
}

/// The rule's `artifacthub-pkg.yml`.
pub fn artifacthub(r: &Packaged, registry: &str, created: &str) -> Result<String> {
    let m = &r.metadata;
    let image = format!("{}/{}:{}", registry.trim_end_matches('/'), r.name, r.module.tag());
    let mut keywords = vec!["aigov".to_string(), "kubewarden".to_string(), "gpu".to_string(), "ai".to_string()];
    for word in annotation(m, annotations::CATEGORY).split_whitespace() {
        let word = word.to_ascii_lowercase();
        if !keywords.contains(&word) {
            keywords.push(word);
        }
    }
    let mut notes = std::collections::BTreeMap::new();
    notes.insert("kubewarden/mutation", if m.mutating { "true" } else { "false" }.to_string());
    notes.insert("kubewarden/resources", kinds(m));
    notes.insert("kubewarden/rules", yaml(&m.rules)?);
    if !m.context_aware_resources.is_empty() {
        notes.insert("kubewarden/contextAwareResources", yaml(&m.context_aware_resources)?);
    }
    let package = ArtifactHubPackage {
        version: &r.module.version,
        name: &r.name,
        display_name: annotation(m, annotations::TITLE),
        created_at: created,
        description: annotation(m, annotations::DESCRIPTION),
        license: annotation(m, annotations::LICENSE),
        home_url: annotation(m, annotations::URL),
        containers_images: vec![Named { name: "policy".into(), image: Some(image.clone()) }],
        keywords,
        links: vec![Link { name: "source".into(), url: annotation(m, annotations::SOURCE).to_string() }],
        install: format!(
            "The policy is a Kubewarden policy in an OCI registry:\n\
             ```console\n\
             kwctl pull {image}\n\
             aigov pull {image} -o policy.wasm\n\
             ```\n\
             Deploy it with the `ClusterAdmissionPolicy` aigov generates (`make manifests DEST=deploy`,\n\
             then `kubectl apply -f deploy/{name}/cluster-admission-policy.yaml`), or\n\
             scaffold one with `kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}`.\n",
            name = r.name
        ),
        readme: annotation(m, annotations::USAGE),
        maintainers: vec![Named { name: annotation(m, annotations::AUTHOR).to_string(), image: None }],
        provider: Provider { name: "aigov" },
        annotations: notes,
    };
    let mut out = String::from(
        "# ArtifactHub package metadata, generated by `aigov manifests` from the rule's\n\
         # metadata.yml and README.md. See https://artifacthub.io/docs/topics/repositories/kubewarden-policies/\n",
    );
    out.push_str(&yaml(&package)?);
    Ok(out)
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

mod edited;

#[cfg(test)]
mod tests;
