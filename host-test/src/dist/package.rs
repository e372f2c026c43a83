//! `aigov package`: everything a platform team needs to adopt the bundle one
//! rule at a time, generated from the artifacts `make artifacts` built and
//! the metadata embedded in them:
//!
//! ```text
//! artifacts/
//!   SHA256SUMS                          every module and component
//!   oci/                                OCI image layout: every rule, both forms
//!   policies.yml                        standalone policy-server configuration
//!   overlay/kustomization.yaml          the rules a team turns on, one line each
//!   <rule>/cluster-admission-policy.yaml
//!   <rule>/kustomization.yaml           the rule as a Kustomize base
//!   <rule>/artifacthub-pkg.yml          ArtifactHub package metadata
//! ```
//!
//! Module references are pinned by digest. The digest is the manifest's,
//! computed here exactly as `aigov push` computes it, so the manifests are
//! right before anything is pushed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aigov_metadata::{Metadata, annotations};
use aigov_sdk::WorkloadKind;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::run::artifact::{self, module_metadata};
use crate::dist::oci::OciArtifact;
use crate::dist::layout;
use crate::run::{engine, native};

/// Where the published bundle lives unless `--registry` says otherwise.
pub const DEFAULT_REGISTRY: &str = "ghcr.io/aigov-dev/policies";

/// Arguments of `aigov package`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where `make artifacts` put the modules and components; the packaging
    /// is written there too.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    /// The registry and repository prefix the rules are (or will be) pushed
    /// to; each rule is `<registry>/<rule>:v<version>`.
    #[arg(long, default_value = DEFAULT_REGISTRY)]
    pub registry: String,
    /// Rules the Kustomize overlay turns on (comma-separated); the others are
    /// listed commented out.
    #[arg(long, value_delimiter = ',')]
    pub enable: Vec<String>,
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
    /// The rule's default settings.
    pub settings: Value,
}

impl Packaged {
    /// `registry://<registry>/<rule>:v<version>@sha256:…`.
    pub fn module_url(&self, registry: &str) -> String {
        format!("registry://{}", self.pinned(registry, &self.module))
    }

    /// `<registry>/<rule>:<tag>@sha256:…`.
    pub fn pinned(&self, registry: &str, form: &OciArtifact) -> String {
        format!("{}/{}:{}@{}", registry.trim_end_matches('/'), self.name, form.tag(), form.digest())
    }
}

/// Runs `aigov package`.
pub fn run(args: &Args) -> Result<ExitCode> {
    for rule in &args.enable {
        if native::rule(rule).is_none() {
            bail!("--enable: no rule named `{rule}`; rules: {}", native::names().collect::<Vec<_>>().join(", "));
        }
    }
    let engine = engine::new_engine()?;
    let created = artifacthub_created_at()?;
    let mut rules = Vec::new();
    for policy in native::RULES {
        rules.push(load(&engine, &args.artifacts, policy)?);
    }
    write_all(&args.artifacts, &rules, &args.registry, &args.enable, &created)?;
    for r in &rules {
        for form in [&r.module, &r.component] {
            println!("{:<20} {:<9} {}", r.name, form.kind.name(), r.pinned(&args.registry, form));
        }
    }
    println!(
        "wrote {0}/oci (OCI image layout), {0}/<rule>/cluster-admission-policy.yaml, kustomization.yaml, artifacthub-pkg.yml, {0}/overlay, {0}/policies.yml, {0}/SHA256SUMS",
        args.artifacts.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Reads one rule's module and component from `artifacts`.
pub fn load(engine: &wasmtime::Engine, artifacts: &Path, policy: &aigov_sdk::NativePolicy) -> Result<Packaged> {
    let name = policy.metadata.name;
    let read = |path: PathBuf| {
        std::fs::read(&path).with_context(|| format!("reading {}: run `make artifacts` first", path.display()))
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
    Ok(Packaged {
        name: name.to_string(),
        metadata,
        module,
        component,
        settings: (policy.default_settings)(),
    })
}

/// ArtifactHub's `createdAt`: `SOURCE_DATE_EPOCH` (seconds; the Makefile
/// sets the last commit's time) when set, else now. It appears in
/// `artifacthub-pkg.yml` only, never in an OCI artifact.
pub fn artifacthub_created_at() -> Result<String> {
    let time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => {
            let seconds = v
                .trim()
                .parse::<i64>()
                .with_context(|| format!("SOURCE_DATE_EPOCH=`{v}` is not a number of seconds"))?;
            chrono::DateTime::from_timestamp(seconds, 0).with_context(|| format!("SOURCE_DATE_EPOCH={seconds} is out of range"))?
        }
        _ => chrono::Utc::now(),
    };
    Ok(time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// Writes the layout, the manifests, the ArtifactHub files and the checksums.
pub fn write_all(artifacts: &Path, rules: &[Packaged], registry: &str, enable: &[String], created: &str) -> Result<()> {
    let forms: Vec<OciArtifact> = rules.iter().flat_map(|r| [r.module.clone(), r.component.clone()]).collect();
    layout::write(&artifacts.join("oci"), &forms)?;
    for r in rules {
        let dir = artifacts.join(&r.name);
        write(&dir.join("cluster-admission-policy.yaml"), &cluster_admission_policy(r, registry)?)?;
        write(&dir.join("kustomization.yaml"), &base_kustomization(r))?;
        write(&dir.join("artifacthub-pkg.yml"), &artifacthub(r, registry, created)?)?;
    }
    write(&artifacts.join("overlay").join("kustomization.yaml"), &overlay(rules, enable))?;
    write(&artifacts.join("policies.yml"), &policy_server_config(rules, registry)?)?;
    write(&artifacts.join("SHA256SUMS"), &checksums(artifacts, rules))?;
    Ok(())
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
    labels: std::collections::BTreeMap<&'a str, &'a str>,
    annotations: std::collections::BTreeMap<&'a str, &'a str>,
}

/// The rule's `ClusterAdmissionPolicy`, with its default settings and a
/// commented `mode: monitor` line.
pub fn cluster_admission_policy(r: &Packaged, registry: &str) -> Result<String> {
    let m = &r.metadata;
    let keep = [annotations::TITLE, annotations::DESCRIPTION, annotations::SEVERITY, annotations::CATEGORY, annotations::VERSION];
    let resource = Resource {
        api_version: "policies.kubewarden.io/v1",
        kind: "ClusterAdmissionPolicy",
        metadata: ResourceMeta {
            name: format!("aigov-{}", r.name),
            labels: [("app.kubernetes.io/part-of", "aigov"), ("app.kubernetes.io/name", r.name.as_str())].into(),
            annotations: keep.iter().map(|k| (*k, annotation(m, k))).collect(),
        },
        spec: PolicySpec {
            policy_server: "default",
            module: r.module_url(registry),
            rules: &m.rules,
            mutating: m.mutating,
            background_audit: m.background_audit,
            context_aware_resources: &m.context_aware_resources,
            settings: &r.settings,
        },
    };
    let body = yaml(&resource)?;
    let mut out = String::new();
    let _ = writeln!(out, "# aigov {} {}: {}", r.name, r.module.version, annotation(m, annotations::DESCRIPTION));
    let _ = writeln!(out, "# Generated by `aigov package` from policies/{}/metadata.yml. Settings are the", r.name);
    let _ = writeln!(out, "# rule's defaults; each is documented in {}", annotation(m, annotations::SOURCE));
    if !m.context_aware_resources.is_empty() {
        let kinds: Vec<String> = m.context_aware_resources.iter().map(|c| format!("{} {}", c.api_version, c.kind)).collect();
        let _ = writeln!(out, "# Context-aware: the policy server lets the rule read {} objects.", kinds.join(", "));
    }
    for line in body.lines() {
        out.push_str(line);
        out.push('\n');
        if line == "spec:" {
            out.push_str("  # mode: monitor   # uncomment to log what the rule would reject without rejecting it\n");
        }
    }
    Ok(out)
}

fn base_kustomization(r: &Packaged) -> String {
    format!(
        "# aigov {name} as a Kustomize base: `kubectl apply -k` this directory, or list it in an overlay.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         resources:\n\
         - cluster-admission-policy.yaml\n",
        name = r.name
    )
}

/// The overlay a team applies: one line per rule, enabled rules uncommented.
pub fn overlay(rules: &[Packaged], enable: &[String]) -> String {
    let mut out = String::from(
        "# The aigov rules this cluster enforces. Opting in is one line per rule:\n\
         # uncomment a rule (or regenerate with `make artifacts ENABLE=rule-a,rule-b`),\n\
         # then `kubectl apply -k artifacts/overlay`.\n\
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
    settings: &'a Value,
}

/// `policies.yml` for a standalone `policy-server --policies policies.yml`.
pub fn policy_server_config(rules: &[Packaged], registry: &str) -> Result<String> {
    let map: std::collections::BTreeMap<&str, ServerPolicy<'_>> = rules
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                ServerPolicy {
                    module: r.module_url(registry),
                    policy_mode: "protect",
                    allowed_to_mutate: r.metadata.mutating,
                    context_aware_resources: &r.metadata.context_aware_resources,
                    settings: &r.settings,
                },
            )
        })
        .collect();
    let mut out = String::from(
        "# Every aigov rule for a standalone Kubewarden policy-server:\n\
         #   policy-server --policies policies.yml\n\
         # Each rule is served at /validate/<name>. `policyMode: monitor` logs instead of\n\
         # rejecting. Rules with `contextAwareResources` read those kinds from the cluster\n\
         # (kubernetes/get_resource), so the policy-server needs a kubeconfig or in-cluster\n\
         # credentials allowed to get them.\n",
    );
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
             Deploy it with the `ClusterAdmissionPolicy` aigov generates (`make artifacts`,\n\
             then `kubectl apply -f artifacts/{name}/cluster-admission-policy.yaml`), or\n\
             scaffold one with `kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}`.\n",
            name = r.name
        ),
        readme: annotation(m, annotations::USAGE),
        maintainers: vec![Named { name: annotation(m, annotations::AUTHOR).to_string(), image: None }],
        provider: Provider { name: "aigov" },
        annotations: notes,
    };
    let mut out = String::from(
        "# ArtifactHub package metadata, generated by `aigov package` from the rule's\n\
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
        for (path, form) in [
            (artifact::module_path(artifacts, &r.name), &r.module),
            (artifact::component_path(artifacts, &r.name), &r.component),
        ] {
            let digest = form.layer.digest();
            let relative = path.strip_prefix(artifacts).unwrap_or(&path);
            let _ = writeln!(out, "{}  {}", digest.trim_start_matches("sha256:"), relative.display());
        }
    }
    out
}
