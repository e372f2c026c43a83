//! An aigov artifact as an OCI artifact: manifest, config and layer, built
//! the same way whether they go to a registry (`aigov push`) or to the image
//! layout on disk (`artifacts/oci/`), so both carry the same digests.
//!
//! - A **module** is packaged as Kubewarden packages policies (`kwctl push`):
//!   config `application/vnd.wasm.config.v1+json` holding `{}`, one layer
//!   `application/vnd.wasm.content.layer.v1+wasm`, and manifest annotations
//!   taken from the module's embedded metadata (the single-line ones) plus
//!   `org.opencontainers.image.source`.
//! - A **component** is packaged in the CNCF Wasm OCI artifact layout: config
//!   `application/vnd.wasm.config.v0+json` describing its WIT world, one
//!   layer `application/wasm`, and the `org.opencontainers.image.*`
//!   annotations.
//!
//! Manifests are canonical JSON (compact, keys sorted), as oci-client writes
//! them for kwctl, and everything in them and in the configs is derived from
//! the wasm file alone: nothing from the environment, the clock or the
//! machine. So one artifact has one digest whichever way it travels (`aigov
//! push`, `make push`, the layout in `artifacts/oci/`, `skopeo copy` of it).

use std::collections::BTreeMap;

use aigov_metadata::annotations;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::run::artifact::{ArtifactKind, module_metadata};
use crate::run::component::PolicyComponent;

/// Media types of the two artifact forms.
pub mod media_types {
    /// Every aigov manifest.
    pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    /// An OCI image index (the layout's `index.json`).
    pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    /// Kubewarden policy config (content `{}`).
    pub const KUBEWARDEN_CONFIG: &str = "application/vnd.wasm.config.v1+json";
    /// Kubewarden policy layer: the annotated waPC module.
    pub const KUBEWARDEN_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
    /// CNCF Wasm OCI artifact config.
    pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
    /// CNCF Wasm OCI artifact layer: the component.
    pub const WASM_LAYER: &str = "application/wasm";
}

/// OCI annotation keys used on manifests.
pub mod oci_annotations {
    /// Where the source lives.
    pub const SOURCE: &str = "org.opencontainers.image.source";
    /// Human title.
    pub const TITLE: &str = "org.opencontainers.image.title";
    /// Description.
    pub const DESCRIPTION: &str = "org.opencontainers.image.description";
    /// Version of the packaged software.
    pub const VERSION: &str = "org.opencontainers.image.version";
    /// Home page.
    pub const URL: &str = "org.opencontainers.image.url";
    /// SPDX license expression.
    pub const LICENSES: &str = "org.opencontainers.image.licenses";
    /// Authors.
    pub const AUTHORS: &str = "org.opencontainers.image.authors";
    /// Name of a manifest in an image layout's `index.json`.
    pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
}

/// `sha256:<hex>` of some bytes.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// One blob with its media type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    /// Media type.
    pub media_type: &'static str,
    /// Content.
    pub data: Vec<u8>,
}

impl Blob {
    /// `sha256:<hex>` of the content.
    pub fn digest(&self) -> String {
        sha256_digest(&self.data)
    }

    /// The blob's descriptor.
    pub fn descriptor(&self) -> Descriptor {
        Descriptor { annotations: None, digest: self.digest(), media_type: self.media_type.to_string(), size: self.data.len() as u64 }
    }
}

/// An OCI content descriptor. Fields are declared in key order, so the
/// compact serialization is canonical JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Annotations (the layout's `ref.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Media type of the content.
    pub media_type: String,
    /// Size in bytes.
    pub size: u64,
}

/// An OCI image manifest, fields in key order (canonical JSON when compact).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Manifest annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Always the OCI image manifest media type.
    #[serde(default)]
    pub media_type: Option<String>,
    /// Always 2.
    pub schema_version: u32,
}

impl Manifest {
    /// Parses a manifest and checks that it is an OCI image manifest with one
    /// layer.
    pub fn parse(bytes: &[u8]) -> Result<Manifest> {
        let m: Manifest = serde_json::from_slice(bytes).context("the manifest is not an OCI image manifest")?;
        if m.schema_version != 2 {
            bail!("manifest schemaVersion is {}, expected 2", m.schema_version);
        }
        if let Some(t) = &m.media_type
            && t != media_types::MANIFEST
        {
            bail!("manifest mediaType is `{t}`, expected `{}`", media_types::MANIFEST);
        }
        Ok(m)
    }

    /// Which aigov artifact form the manifest describes, from its media types.
    pub fn kind(&self) -> Result<ArtifactKind> {
        let [layer] = self.layers.as_slice() else {
            bail!("the manifest has {} layers; an aigov artifact has exactly one", self.layers.len());
        };
        match (self.config.media_type.as_str(), layer.media_type.as_str()) {
            (media_types::KUBEWARDEN_CONFIG, media_types::KUBEWARDEN_LAYER) => Ok(ArtifactKind::Module),
            (media_types::WASM_CONFIG, media_types::WASM_LAYER) => Ok(ArtifactKind::Component),
            (config, layer) => bail!(
                "config `{config}` with layer `{layer}` is neither a Kubewarden policy (`{}` + `{}`) nor a Wasm component (`{}` + `{}`)",
                media_types::KUBEWARDEN_CONFIG,
                media_types::KUBEWARDEN_LAYER,
                media_types::WASM_CONFIG,
                media_types::WASM_LAYER
            ),
        }
    }

    /// The one layer's descriptor.
    pub fn layer(&self) -> Result<&Descriptor> {
        self.layers.first().context("the manifest has no layer")
    }
}

/// The CNCF Wasm OCI artifact config of a component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// Always `wasm`.
    pub architecture: String,
    /// Who built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The component's world.
    pub component: WasmComponent,
    /// RFC 3339 creation time: always [`CREATED`] (see there).
    pub created: String,
    /// Digests of the manifest's layers, in order.
    pub layer_digests: Vec<String>,
    /// `wasip2` for components, as the specification asks, although aigov
    /// components import no WASI at all.
    pub os: String,
}

/// What a component imports and exports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmComponent {
    /// Exported interfaces and functions.
    pub exports: Vec<String>,
    /// Imported interfaces and functions.
    pub imports: Vec<String>,
    /// The world it targets (`aigov:policy/admission-policy@0.1.0`).
    pub target: Option<String>,
}

/// An aigov artifact as OCI content: the exact manifest bytes, the config
/// and the one layer.
#[derive(Clone, Debug)]
pub struct OciArtifact {
    /// Module or component.
    pub kind: ArtifactKind,
    /// Rule name.
    pub name: String,
    /// Rule version.
    pub version: String,
    /// The manifest, as pushed and as stored in the layout.
    pub manifest: Vec<u8>,
    /// The config blob.
    pub config: Blob,
    /// The layer: the wasm binary itself.
    pub layer: Blob,
}

impl OciArtifact {
    /// Packages a module or a component.
    pub fn from_wasm(engine: &Engine, wasm: &[u8]) -> Result<OciArtifact> {
        match ArtifactKind::of(wasm)? {
            ArtifactKind::Module => OciArtifact::module(wasm),
            ArtifactKind::Component => OciArtifact::component(engine, wasm),
        }
    }

    /// Packages an annotated waPC module the way Kubewarden does.
    pub fn module(wasm: &[u8]) -> Result<OciArtifact> {
        let metadata = module_metadata(wasm)?.context(
            "the module carries no io.kubewarden.metadata section: annotate it first (`aigov build annotate`, or `make artifacts`)",
        )?;
        let get =
            |key: &str| metadata.annotations.get(key).cloned().with_context(|| format!("the module's metadata has no `{key}` annotation"));
        let name = get(annotations::TITLE)?;
        let version = get(annotations::VERSION)?;
        let source = get(annotations::SOURCE)?;
        // Kubewarden copies the single-line annotations (not the Markdown
        // usage) to the manifest.
        let mut manifest_annotations: BTreeMap<String, String> =
            metadata.annotations.iter().filter(|(_, v)| !v.contains('\n')).map(|(k, v)| (k.clone(), v.clone())).collect();
        manifest_annotations.insert(oci_annotations::SOURCE.into(), source);
        let config = Blob { media_type: media_types::KUBEWARDEN_CONFIG, data: b"{}".to_vec() };
        let layer = Blob { media_type: media_types::KUBEWARDEN_LAYER, data: wasm.to_vec() };
        let manifest = manifest_bytes(&config, &layer, manifest_annotations)?;
        Ok(OciArtifact { kind: ArtifactKind::Module, name, version, manifest, config, layer })
    }

    /// Packages a component in the CNCF Wasm OCI artifact layout.
    pub fn component(engine: &Engine, wasm: &[u8]) -> Result<OciArtifact> {
        let meta = PolicyComponent::new(engine, wasm)?
            .instantiate(std::sync::Arc::new(aigov_sdk::NoCluster))?
            .metadata()
            .context("asking the component for its metadata")?;
        let annotation = |key: &str| meta.annotations.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let layer = Blob { media_type: media_types::WASM_LAYER, data: wasm.to_vec() };
        let config = WasmConfig {
            architecture: "wasm".into(),
            author: annotation(annotations::AUTHOR),
            component: world_of(wasm)?,
            created: CREATED.to_string(),
            layer_digests: vec![layer.digest()],
            os: "wasip2".into(),
        };
        let config = Blob { media_type: media_types::WASM_CONFIG, data: serde_json::to_vec(&config)? };
        let mut manifest_annotations = BTreeMap::new();
        for (oci, kubewarden) in [
            (oci_annotations::TITLE, annotations::TITLE),
            (oci_annotations::DESCRIPTION, annotations::DESCRIPTION),
            (oci_annotations::SOURCE, annotations::SOURCE),
            (oci_annotations::URL, annotations::URL),
            (oci_annotations::LICENSES, annotations::LICENSE),
            (oci_annotations::AUTHORS, annotations::AUTHOR),
        ] {
            if let Some(v) = annotation(kubewarden) {
                manifest_annotations.insert(oci.to_string(), v);
            }
        }
        manifest_annotations.insert(oci_annotations::VERSION.into(), meta.version.clone());
        let manifest = manifest_bytes(&config, &layer, manifest_annotations)?;
        Ok(OciArtifact { kind: ArtifactKind::Component, name: meta.name, version: meta.version, manifest, config, layer })
    }

    /// The manifest's digest: the artifact's immutable identity.
    pub fn digest(&self) -> String {
        sha256_digest(&self.manifest)
    }

    /// The tag the artifact is published under in its rule's repository:
    /// `v0.1.0` for the Kubewarden module, `v0.1.0-component` for the
    /// component.
    pub fn tag(&self) -> String {
        tag(self.kind, &self.version)
    }

    /// Its name in an image layout: `gpu-runtime-class-v0.1.0`, or
    /// `gpu-runtime-class-v0.1.0-component`.
    pub fn ref_name(&self) -> String {
        format!("{}-{}", self.name, self.tag())
    }
}

/// The tag of a rule version in one form.
pub fn tag(kind: ArtifactKind, version: &str) -> String {
    match kind {
        ArtifactKind::Module => format!("v{version}"),
        ArtifactKind::Component => format!("v{version}-component"),
    }
}

fn manifest_bytes(config: &Blob, layer: &Blob, annotations: BTreeMap<String, String>) -> Result<Vec<u8>> {
    let manifest = Manifest {
        annotations,
        config: config.descriptor(),
        layers: vec![layer.descriptor()],
        media_type: Some(media_types::MANIFEST.into()),
        schema_version: 2,
    };
    Ok(serde_json::to_vec(&manifest)?)
}

/// The interfaces and functions a component imports and exports, and its
/// world, for the CNCF config.
fn world_of(component: &[u8]) -> Result<WasmComponent> {
    let decoded = wit_component::decode(component).context("decoding the component's WIT world")?;
    let wit_component::DecodedWasm::Component(resolve, world_id) = decoded else {
        bail!("expected a component, found a WIT package");
    };
    let world = resolve.worlds.get(world_id).context("the component's world is missing")?;
    let names = |items: &wit_parser::IndexMap<wit_parser::WorldKey, wit_parser::WorldItem>| {
        items
            .iter()
            .filter(|(_, item)| !matches!(item, wit_parser::WorldItem::Type { .. }))
            .filter_map(|(key, _)| match key {
                wit_parser::WorldKey::Interface(id) => resolve.id_of(*id),
                wit_parser::WorldKey::Name(name) => Some(name.clone()),
            })
            .collect::<Vec<_>>()
    };
    // The decoded world is named after the component, not the world it was
    // built for; the project's world is what a host needs to know.
    Ok(WasmComponent {
        exports: names(&world.exports),
        imports: names(&world.imports),
        target: Some(format!("{}/admission-policy", wit_package())),
    })
}

/// The project's WIT package, `aigov:policy@<version>`, as `wit/` declares it.
pub fn wit_package() -> &'static str {
    const WIT: &str = include_str!("../../../wit/policy.wit");
    WIT.lines().find_map(|l| l.trim().strip_prefix("package ")).map_or("aigov:policy", |p| p.trim_end_matches(';').trim())
}

/// The `created` time of every component config: the Unix epoch.
///
/// The CNCF Wasm OCI artifact config shows a `created` field, and
/// oci-wasm's `WasmConfig` (wkg, wasmCloud) refuses a config without one, so
/// it is kept; but a component carries no time of its own, and any time
/// taken from the environment (the clock, `SOURCE_DATE_EPOCH`, the last
/// commit) would give one artifact several digests. The epoch is what
/// reproducible image builders (ko, rules_oci, Nix's dockerTools) write for
/// "no meaningful time". The manifest carries no
/// `org.opencontainers.image.created` annotation for the same reason.
pub const CREATED: &str = "1970-01-01T00:00:00Z";

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(media_type: &'static str, data: &[u8]) -> Blob {
        Blob { media_type, data: data.to_vec() }
    }

    #[test]
    fn manifests_are_canonical_json() {
        let config = blob(media_types::KUBEWARDEN_CONFIG, b"{}");
        let layer = blob(media_types::KUBEWARDEN_LAYER, b"\0asm");
        let mut a = BTreeMap::new();
        a.insert("z".to_string(), "last".to_string());
        a.insert("a".to_string(), "first".to_string());
        let bytes = manifest_bytes(&config, &layer, a).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        // Keys sorted at every level, no whitespace.
        assert!(text.starts_with(r#"{"annotations":{"a":"first","z":"last"},"config":{"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","mediaType":"application/vnd.wasm.config.v1+json","size":2},"layers":[{"digest":"#), "{text}");
        assert!(text.ends_with(r#""mediaType":"application/vnd.wasm.content.layer.v1+wasm","size":4}],"mediaType":"application/vnd.oci.image.manifest.v1+json","schemaVersion":2}"#), "{text}");
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let mut canonical = Vec::new();
        let mut ser = serde_json::Serializer::new(&mut canonical);
        value.serialize(&mut ser).unwrap(); // serde_json's Value map is sorted
        assert_eq!(canonical, bytes);
        let m = Manifest::parse(&bytes).unwrap();
        assert_eq!(m.kind().unwrap(), ArtifactKind::Module);
        assert_eq!(m.layer().unwrap().size, 4);
    }

    #[test]
    fn foreign_manifests_are_named_for_what_they_are() {
        let config = blob("application/vnd.oci.image.config.v1+json", b"{}");
        let layer = blob("application/vnd.oci.image.layer.v1.tar+gzip", b"x");
        let m = Manifest::parse(&manifest_bytes(&config, &layer, BTreeMap::new()).unwrap()).unwrap();
        let e = m.kind().unwrap_err().to_string();
        assert!(e.contains("neither a Kubewarden policy") && e.contains("tar+gzip"), "{e}");
        assert!(Manifest::parse(br#"{"schemaVersion":1,"config":{"digest":"d","mediaType":"m","size":1},"layers":[]}"#).is_err());
    }

    #[test]
    fn unannotated_modules_are_refused() {
        let module = wasm_encoder::Module::new().finish();
        let e = OciArtifact::module(&module).unwrap_err().to_string();
        assert!(e.contains("annotate it first"), "{e}");
    }

    #[test]
    fn byte_identical_to_oci_client_manifests() {
        // kwctl pushes with oci-client, which builds the manifest from the
        // blobs and serializes it as canonical JSON.
        let config = blob(media_types::KUBEWARDEN_CONFIG, b"{}");
        let layer = blob(media_types::KUBEWARDEN_LAYER, b"\0asm\x01\0\0\0");
        let mut a = BTreeMap::new();
        a.insert(annotations::TITLE.to_string(), "gpu-runtime-class".to_string());
        a.insert(oci_annotations::SOURCE.to_string(), "https://example.com/src".to_string());
        let ours = manifest_bytes(&config, &layer, a.clone()).unwrap();
        let mut theirs = oci_client::manifest::OciImageManifest::build(
            &[oci_client::client::ImageLayer::new(layer.data.clone(), layer.media_type.to_string(), None)],
            &oci_client::client::Config::new(config.data.clone(), config.media_type.to_string(), None),
            Some(a),
        );
        theirs.media_type = Some(media_types::MANIFEST.to_string());
        let mut bytes = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut bytes, olpc_cjson::CanonicalFormatter::new());
        theirs.serialize(&mut ser).unwrap();
        assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(bytes).unwrap());
    }

    #[test]
    fn the_wit_package_is_read_from_wit() {
        assert!(wit_package().starts_with("aigov:policy@"), "{}", wit_package());
    }

    #[test]
    fn tags() {
        assert_eq!(tag(ArtifactKind::Module, "1.2.3"), "v1.2.3");
        assert_eq!(tag(ArtifactKind::Component, "1.2.3"), "v1.2.3-component");
    }

    #[test]
    fn the_created_time_is_fixed_and_parses() {
        // What oci-wasm's `WasmConfig` (a chrono `DateTime<Utc>`) accepts.
        let t = chrono::DateTime::parse_from_rfc3339(CREATED).unwrap();
        assert_eq!(t.timestamp(), 0);
    }
}
