//! Artifacts: loading a module or component (or a natively linked rule) as
//! something that evaluates requests, and producing them: the Kubewarden
//! metadata custom section (`annotate`) and the component (`componentize`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aigov_metadata::{CUSTOM_SECTION, Metadata, annotations};
use aigov_sdk::{NativePolicy, SettingsResponse, ValidationResponse};
use anyhow::{Context, Result, bail};
use wasm_encoder::{CustomSection, Section};
use wasmparser::{Parser, Payload};
use wasmtime::Engine;

use crate::run::cluster::{Allowed, Capabilities, FixtureCluster, Scoped};
use crate::run::component::{PolicyComponent, to_response};
use crate::run::wapc::{CallError, WapcModule};

/// The two artifact kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactKind {
    /// A Kubewarden waPC core module.
    Module,
    /// A component of the `aigov:policy/admission-policy` world.
    Component,
}

impl ArtifactKind {
    /// Which kind a wasm binary is.
    pub fn of(bytes: &[u8]) -> Result<ArtifactKind> {
        if Parser::is_component(bytes) {
            Ok(ArtifactKind::Component)
        } else if Parser::is_core_wasm(bytes) {
            Ok(ArtifactKind::Module)
        } else {
            bail!("not a WebAssembly binary")
        }
    }

    /// `module` or `component`.
    pub fn name(self) -> &'static str {
        match self {
            ArtifactKind::Module => "module",
            ArtifactKind::Component => "component",
        }
    }
}

/// The bundle's name: its artifacts are `artifacts/bundle/`.
pub const BUNDLE: &str = "aigov-bundle";

/// The directory of a rule's (or the bundle's) artifacts.
fn dir(artifacts: &Path, rule: &str) -> PathBuf {
    artifacts.join(if rule == BUNDLE { "bundle" } else { rule })
}

/// Where `make artifacts` puts a rule's module.
pub fn module_path(artifacts: &Path, rule: &str) -> PathBuf {
    dir(artifacts, rule).join("policy.wasm")
}

/// Where `make artifacts` puts a rule's component.
pub fn component_path(artifacts: &Path, rule: &str) -> PathBuf {
    dir(artifacts, rule).join("policy.component.wasm")
}

/// `path`, an artifact under `artifacts` (the `--artifacts` directory), if
/// it is there; else an error that names the directory looked in, whole
/// (a command run outside the repository looks in its own working
/// directory), says how to build the artifacts or point at them, and adds
/// `otherwise` (what else the command can do, such as `--native`).
pub fn require(artifacts: &Path, path: PathBuf, otherwise: Option<&str>) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path);
    }
    let whole = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()).display().to_string();
    let looked = if artifacts.is_dir() {
        format!("{} is missing (looked in the --artifacts directory {})", path.display(), whole(artifacts))
    } else {
        format!("no artifacts in {} (the --artifacts directory; it does not exist)", whole(artifacts))
    };
    let otherwise = otherwise.map(|o| format!(", or {o}")).unwrap_or_default();
    bail!(
        "{looked}: build them with `make artifacts` in the aigov repository, or point --artifacts at the directory `make artifacts` \
         wrote (the repository's `artifacts/`){otherwise}"
    )
}

// ---------------------------------------------------------------- sections

/// The content of the first custom section called `name`, in a core module.
pub fn custom_section(module: &[u8], name: &str) -> Result<Option<Vec<u8>>> {
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(reader) = payload?
            && reader.name() == name
        {
            return Ok(Some(reader.data().to_vec()));
        }
    }
    Ok(None)
}

/// The module with every custom section called `name` removed and one new
/// section with `data` appended. All other sections are kept byte for byte.
pub fn with_custom_section(module: &[u8], name: &str, data: &[u8]) -> Result<Vec<u8>> {
    if !Parser::is_core_wasm(module) {
        bail!("custom sections are written into core modules only");
    }
    let header = module.get(..8).context("truncated module")?;
    let mut out = header.to_vec();
    let mut section_start = 8usize;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        let Some((_, contents)) = payload.as_section() else { continue };
        let whole = module.get(section_start..contents.end).context("section out of range")?;
        let replaced = matches!(&payload, Payload::CustomSection(r) if r.name() == name);
        if !replaced {
            out.extend_from_slice(whole);
        }
        section_start = contents.end;
    }
    CustomSection { name: name.into(), data: data.into() }.append_to(&mut out);
    wasmparser::validate(&out).context("the annotated module does not validate")?;
    Ok(out)
}

/// The Kubewarden metadata embedded in a module, if any.
pub fn module_metadata(module: &[u8]) -> Result<Option<Metadata>> {
    match custom_section(module, CUSTOM_SECTION)? {
        Some(data) => Ok(Some(Metadata::from_json(&data).context("reading io.kubewarden.metadata")?)),
        None => Ok(None),
    }
}

/// Annotates a waPC module as `kwctl annotate` does: validates
/// `metadata.yml`, asks the module for its protocol version, fills the usage
/// annotation from the README, and embeds the compact JSON as the
/// `io.kubewarden.metadata` custom section.
pub fn annotate(engine: &Engine, module: &[u8], metadata_file: &Path, readme: Option<&Path>) -> Result<Vec<u8>> {
    let shown = metadata_file.display().to_string();
    let text = std::fs::read_to_string(metadata_file).with_context(|| format!("reading {shown}"))?;
    let mut metadata = Metadata::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}", e.in_file(shown.clone())))?;
    let mut instance = WapcModule::new(engine, module)?.instantiate(Arc::new(aigov_sdk::NoCluster))?;
    let answer = instance.call("protocol_version", b"").map_err(|e| anyhow::anyhow!("asking the module for its protocol version: {e}"))?;
    let version: String = serde_json::from_slice(&answer).context("the module's protocol_version is not a JSON string")?;
    if version != "v1" {
        bail!("the module speaks protocol `{version}`; Kubewarden needs `v1`");
    }
    metadata.protocol_version = Some(version);
    if let Some(readme) = readme {
        let usage = std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
        if usage.trim().is_empty() {
            bail!("{} is empty: the rule's README is its usage text on ArtifactHub and in `kwctl inspect`", readme.display());
        }
        metadata.annotations.insert(annotations::USAGE.into(), usage);
    }
    with_custom_section(module, CUSTOM_SECTION, metadata.to_json().as_bytes())
}

/// Turns a `wasm32-unknown-unknown` module carrying wit-bindgen's component
/// type section into a component, and checks that it imports nothing but the
/// project's own interfaces (no WASI).
pub fn componentize(module: &[u8]) -> Result<Vec<u8>> {
    let component = wit_component::ComponentEncoder::default()
        .module(module)
        .context("reading the component type information (was the module built for wasm32-unknown-unknown with the SDK?)")?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    for import in component_imports(&component)? {
        if !import.starts_with("aigov:policy/") {
            bail!("the component imports `{import}`; a rule may import only aigov:policy interfaces");
        }
    }
    Ok(component)
}

/// The instances and functions a component imports: its capabilities.
/// (Type imports, which carry the world's record definitions, grant
/// nothing and are left out.)
pub fn component_imports(component: &[u8]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import?;
                    if !matches!(import.ty, wasmparser::ComponentTypeRef::Type(_)) {
                        names.push(import.name.name.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

/// The WIT world a component implements, as WIT text.
pub fn component_wit(component: &[u8]) -> Result<String> {
    let decoded = wit_component::decode(component).context("decoding the component's WIT")?;
    let mut printer = wit_component::WitPrinter::default();
    printer.print(decoded.resolve(), decoded.package(), &[])?;
    Ok(printer.output.to_string())
}

// --------------------------------------------------------------- evaluation

enum Inner {
    Native(&'static NativePolicy),
    Module(WapcModule),
    Component(PolicyComponent),
}

/// A rule in one of its three forms, ready to evaluate requests. Every
/// request gets a fresh instance, as in policy-server.
pub struct Evaluator {
    /// The rule's name.
    pub name: String,
    /// Kinds the rule may look up, from the artifact's own metadata.
    pub allowed: Allowed,
    /// A Kubewarden module's host calls, from its metadata: granted as a
    /// standalone policy-server grants them (`None`: not enforced, for the
    /// native rule and the component, whose imports are its grants).
    pub capabilities: Option<Capabilities>,
    inner: Inner,
}

impl Evaluator {
    /// The natively linked rule.
    pub fn native(rule: &'static NativePolicy) -> Evaluator {
        Evaluator {
            name: rule.metadata.name.to_string(),
            allowed: rule.metadata.context_aware_resources.iter().map(|r| (r.api_version.to_string(), r.kind.to_string())).collect(),
            capabilities: None,
            inner: Inner::Native(rule),
        }
    }

    /// The rule linked into aigov this evaluator runs, when it is native.
    pub fn native_rule(&self) -> Option<&'static NativePolicy> {
        match self.inner {
            Inner::Native(rule) => Some(rule),
            Inner::Module(_) | Inner::Component(_) => None,
        }
    }

    /// Loads a module or component from bytes. A module's name and allowed
    /// lookups come from its `io.kubewarden.metadata` section (none if it is
    /// not annotated); a component's from its `metadata` export.
    pub fn load(engine: &Engine, bytes: &[u8], fallback_name: &str) -> Result<Evaluator> {
        match ArtifactKind::of(bytes)? {
            ArtifactKind::Module => {
                let module = WapcModule::new(engine, bytes)?;
                let metadata = module_metadata(bytes)?;
                let name = metadata
                    .as_ref()
                    .and_then(|m| m.annotations.get(annotations::TITLE).cloned())
                    .unwrap_or_else(|| fallback_name.to_string());
                let capabilities = Some(metadata.as_ref().map(|m| m.host_capabilities.clone()).unwrap_or_default().into());
                let allowed = metadata
                    .map(|m| m.context_aware_resources.into_iter().map(|r| (r.api_version, r.kind)).collect())
                    .unwrap_or_else(|| Vec::new().into());
                Ok(Evaluator { name, allowed, capabilities, inner: Inner::Module(module) })
            }
            ArtifactKind::Component => {
                let component = PolicyComponent::new(engine, bytes)?;
                let meta = component.instantiate(Arc::new(aigov_sdk::NoCluster))?.metadata()?;
                Ok(Evaluator {
                    name: meta.name,
                    allowed: meta.context_aware_resources.into_iter().map(|r| (r.api_version, r.kind)).collect(),
                    capabilities: None,
                    inner: Inner::Component(component),
                })
            }
        }
    }

    /// Loads a module or component file.
    pub fn from_file(engine: &Engine, path: &Path) -> Result<Evaluator> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("policy");
        Evaluator::load(engine, &bytes, stem).with_context(|| format!("loading {}", path.display()))
    }

    /// `native`, `module` or `component`; for the bundle `bundle (native)`
    /// and so on.
    pub fn form(&self) -> &'static str {
        match (&self.inner, self.is_bundle()) {
            (Inner::Native(_), false) => "native",
            (Inner::Module(_), false) => "module",
            (Inner::Component(_), false) => "component",
            (Inner::Native(_), true) => "bundle (native)",
            (Inner::Module(_), true) => "bundle (module)",
            (Inner::Component(_), true) => "bundle (component)",
        }
    }

    /// Whether this is the bundle of every rule.
    pub fn is_bundle(&self) -> bool {
        self.name == BUNDLE
    }

    /// The component, when this is one.
    pub fn component(&self) -> Option<&PolicyComponent> {
        match &self.inner {
            Inner::Component(c) => Some(c),
            Inner::Native(_) | Inner::Module(_) => None,
        }
    }

    /// `cluster` as this rule may see it: only the kinds it declares.
    pub fn scoped(&self, cluster: &Arc<FixtureCluster>) -> Scoped {
        let scoped = Scoped::new(cluster.clone(), self.allowed.clone());
        match &self.capabilities {
            Some(c) => scoped.with_capabilities(c.clone()),
            None => scoped,
        }
    }

    /// Natively, the request as a component receives it: the text itself,
    /// where [`Evaluator::validate`] gives the native form and the module
    /// Kubewarden's payload with the request spliced in. For a request that
    /// is one JSON value the two are the same input; for any other text
    /// they are not (empty text makes an invalid payload, and
    /// `{..},"operation":..` a different, valid one). `None` for an artifact.
    pub fn validate_request_form(&self, request: &str, settings: &str, cluster: &Arc<FixtureCluster>) -> Option<ValidationResponse> {
        let Inner::Native(rule) = &self.inner else { return None };
        Some((rule.validate_request)(request, settings, &self.scoped(cluster)))
    }

    /// Validates an AdmissionRequest (JSON) with settings (JSON).
    pub fn validate(&self, request: &str, settings: &str, cluster: &Arc<FixtureCluster>) -> Result<ValidationResponse> {
        let scoped = self.scoped(cluster);
        match &self.inner {
            Inner::Native(rule) => Ok((rule.validate)(payload(request, settings).as_bytes(), &scoped)),
            Inner::Module(module) => {
                let mut instance = module.instantiate(Arc::new(scoped))?;
                let out = instance.call("validate", payload(request, settings).as_bytes()).map_err(call_error)?;
                serde_json::from_slice(&out).context("the module's ValidationResponse is not valid JSON")
            }
            Inner::Component(component) => {
                let mut instance = component.instantiate(Arc::new(scoped))?;
                to_response(instance.validate(request, settings)?)
            }
        }
    }

    /// A warm instance of this artifact whose lookups `cluster` answers.
    pub fn warm(&self, cluster: &Arc<FixtureCluster>) -> Warm<'_> {
        Warm { evaluator: self, cluster: Arc::new(self.scoped(cluster)), live: None }
    }

    /// Validates a request as policy-server answers it: a trap, a deadline
    /// overrun or an exhausted memory limit in the guest is a rejection with
    /// code 500, and the host carries on.
    pub fn validate_or_500(&self, request: &str, settings: &str, cluster: &Arc<FixtureCluster>) -> ValidationResponse {
        match self.validate(request, settings, cluster) {
            Ok(r) => r,
            Err(e) => {
                let text = format!("{e:#}");
                let why = if text.contains("interrupt") {
                    "it ran past its deadline".to_string()
                } else {
                    text.lines().next().unwrap_or("it trapped").to_string()
                };
                ValidationResponse::reject(format!("the policy `{}` failed: {why}", self.name), Some(500))
            }
        }
    }

    /// The same artifact with another memory limit per instance (no effect
    /// on the native form).
    pub fn with_memory_limit(self, bytes: usize) -> Evaluator {
        let inner = match self.inner {
            Inner::Module(m) => Inner::Module(m.with_memory_limit(bytes)),
            Inner::Component(c) => Inner::Component(c.with_memory_limit(bytes)),
            native => native,
        };
        Evaluator { inner, ..self }
    }

    /// Validates a settings object (JSON).
    pub fn validate_settings(&self, settings: &str) -> Result<SettingsResponse> {
        match &self.inner {
            Inner::Native(rule) => Ok((rule.validate_settings)(settings.as_bytes())),
            Inner::Module(module) => {
                let mut instance = module.instantiate(Arc::new(aigov_sdk::NoCluster))?;
                let out = instance.call("validate_settings", settings.as_bytes()).map_err(call_error)?;
                serde_json::from_slice(&out).context("the module's settings response is not valid JSON")
            }
            Inner::Component(component) => {
                let v = component.instantiate(Arc::new(aigov_sdk::NoCluster))?.validate_settings(settings)?;
                Ok(SettingsResponse { valid: v.valid, message: v.message })
            }
        }
    }
}

/// A live instance of an [`Evaluator`], kept across requests (as `kwctl
/// bench` and a long-running scan use it): instantiated once, its settings
/// parsed once by the guest (the SDK caches them per instance), dropped and
/// made again after a call that failed, so a trap never leaks into the next
/// request.
pub struct Warm<'e> {
    evaluator: &'e Evaluator,
    cluster: Arc<Scoped>,
    live: Option<Live>,
}

enum Live {
    Native,
    Module(crate::run::wapc::WapcInstance),
    Component(crate::run::component::ComponentInstance),
}

impl Warm<'_> {
    fn live(&mut self) -> Result<&mut Live> {
        let live = match self.live.take() {
            Some(l) => l,
            None => match &self.evaluator.inner {
                Inner::Native(_) => Live::Native,
                Inner::Module(m) => Live::Module(m.instantiate(self.cluster.clone())?),
                Inner::Component(c) => Live::Component(c.instantiate(self.cluster.clone())?),
            },
        };
        Ok(self.live.insert(live))
    }

    /// Validates an AdmissionRequest (JSON) with settings (JSON) on the
    /// live instance (a new one if the last call failed).
    pub fn validate(&mut self, request: &str, settings: &str) -> Result<ValidationResponse> {
        let evaluator = self.evaluator;
        let result = match (self.live()?, &evaluator.inner) {
            (Live::Native, Inner::Native(rule)) => Ok((rule.validate)(payload(request, settings).as_bytes(), &*self.cluster)),
            (Live::Module(instance), _) => instance
                .call("validate", payload(request, settings).as_bytes())
                .map_err(call_error)
                .and_then(|out| serde_json::from_slice(&out).context("the module's ValidationResponse is not valid JSON")),
            (Live::Component(instance), _) => instance.validate(request, settings).and_then(to_response),
            _ => Err(anyhow::anyhow!("the instance does not match its artifact")),
        };
        if result.is_err() {
            self.live = None;
        }
        result
    }
}

fn call_error(e: CallError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Kubewarden's `validate` payload.
pub fn payload(request: &str, settings: &str) -> String {
    format!("{{\"request\":{request},\"settings\":{settings}}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{CodeSection, ExportKind, ExportSection, Function, FunctionSection, Module, TypeSection};

    /// A small valid module with a function, an export and two custom
    /// sections, one of them an old `io.kubewarden.metadata`.
    fn module() -> Vec<u8> {
        let mut m = Module::new();
        let mut types = TypeSection::new();
        types.ty().function([], []);
        m.section(&types);
        let mut funcs = FunctionSection::new();
        funcs.function(0);
        m.section(&funcs);
        m.section(&CustomSection { name: "producers".into(), data: b"abc"[..].into() });
        let mut exports = ExportSection::new();
        exports.export("f", ExportKind::Func, 0);
        m.section(&exports);
        let mut code = CodeSection::new();
        let mut f = Function::new([]);
        f.instructions().end();
        code.function(&f);
        m.section(&code);
        m.section(&CustomSection { name: CUSTOM_SECTION.into(), data: b"{\"old\":1}"[..].into() });
        m.section(&CustomSection { name: "name".into(), data: b"\x00"[..].into() });
        m.finish()
    }

    #[test]
    fn replaces_the_section_and_keeps_the_others() {
        let before = module();
        let after = with_custom_section(&before, CUSTOM_SECTION, b"{\"new\":2}").unwrap();
        assert_eq!(custom_section(&after, CUSTOM_SECTION).unwrap().unwrap(), b"{\"new\":2}");
        assert_eq!(custom_section(&after, "producers").unwrap().unwrap(), b"abc");
        assert_eq!(custom_section(&after, "name").unwrap().unwrap(), b"\x00");
        let count =
            Parser::new(0).parse_all(&after).filter(|p| matches!(p, Ok(Payload::CustomSection(r)) if r.name() == CUSTOM_SECTION)).count();
        assert_eq!(count, 1, "the old section is removed, not duplicated");
        // Everything but the replaced section is byte-identical and in order.
        let old = b"{\"old\":1}";
        let cut = before.windows(old.len()).position(|w| w == old).unwrap();
        let section_len = 1 + 1 + 1 + CUSTOM_SECTION.len() + old.len();
        let start = cut + old.len() - section_len;
        let mut expected = before[..start].to_vec();
        expected.extend_from_slice(&before[cut + old.len()..]);
        assert!(after.starts_with(&expected), "other sections are kept byte for byte");
    }

    #[test]
    fn is_idempotent() {
        let once = with_custom_section(&module(), CUSTOM_SECTION, b"x").unwrap();
        let twice = with_custom_section(&once, CUSTOM_SECTION, b"x").unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn refuses_non_modules() {
        assert!(with_custom_section(b"not wasm", CUSTOM_SECTION, b"x").is_err());
        assert!(ArtifactKind::of(b"\0asm\x0d\0\x01\0").is_ok_and(|k| k == ArtifactKind::Component));
        assert!(ArtifactKind::of(&module()).is_ok_and(|k| k == ArtifactKind::Module));
    }
}
