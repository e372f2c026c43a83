//! An OCI image layout on disk (`artifacts/oci/`): `oci-layout`,
//! `index.json` and `blobs/sha256/…`, holding every rule in both forms, each
//! manifest named (`org.opencontainers.image.ref.name`) by rule, version and
//! form. Any OCI tool copies it to a registry without aigov:
//!
//! ```text
//! skopeo copy oci:artifacts/oci:gpu-runtime-class-v0.1.0 docker://registry.example.com/aigov/gpu-runtime-class:v0.1.0
//! oras cp --from-oci-layout artifacts/oci:gpu-runtime-class-v0.1.0 registry.example.com/aigov/gpu-runtime-class:v0.1.0
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::dist::oci::{Blob, Descriptor, OciArtifact, media_types, oci_annotations, sha256_digest};

/// The layout's `index.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// The manifests, in the order they were added.
    pub manifests: Vec<Descriptor>,
    /// Always the OCI image index media type.
    pub media_type: String,
    /// Always 2.
    pub schema_version: u32,
}

/// Writes `artifacts` as an image layout at `dir`, replacing whatever was
/// there. Blobs shared between artifacts are stored once. Returns the
/// descriptors written to `index.json`.
pub fn write(dir: &Path, artifacts: &[OciArtifact]) -> Result<Vec<Descriptor>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let blobs = dir.join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs).with_context(|| format!("creating {}", blobs.display()))?;
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let mut manifests = Vec::new();
    let mut names = BTreeMap::new();
    for artifact in artifacts {
        let manifest = Blob { media_type: media_types::MANIFEST, data: artifact.manifest.clone() };
        for blob in [&artifact.layer, &artifact.config, &manifest] {
            write_blob(&blobs, blob)?;
        }
        let name = artifact.ref_name();
        if let Some(previous) = names.insert(name.clone(), artifact.digest()) {
            bail!("two artifacts are both named `{name}` in the layout ({previous} and {})", artifact.digest());
        }
        let mut descriptor = manifest.descriptor();
        descriptor.annotations = Some(BTreeMap::from([(oci_annotations::REF_NAME.to_string(), name)]));
        manifests.push(descriptor);
    }
    let index = Index { manifests: manifests.clone(), media_type: media_types::INDEX.into(), schema_version: 2 };
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index)?)?;
    Ok(manifests)
}

fn write_blob(dir: &Path, blob: &Blob) -> Result<()> {
    let digest = blob.digest();
    let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
    let path = dir.join(hex);
    std::fs::write(&path, &blob.data).with_context(|| format!("writing {}", path.display()))
}

/// A layout read back: its index and blob directory.
pub struct Layout {
    dir: PathBuf,
    /// The index.
    pub index: Index,
}

impl Layout {
    /// Opens and checks a layout: the version file, the index, and that every
    /// manifest it names is present with the right digest.
    pub fn open(dir: &Path) -> Result<Layout> {
        let version: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join("oci-layout")).with_context(|| format!("{} is not an OCI image layout", dir.display()))?,
        )?;
        if version.get("imageLayoutVersion").and_then(|v| v.as_str()) != Some("1.0.0") {
            bail!("{}: unsupported imageLayoutVersion", dir.display());
        }
        let index: Index = serde_json::from_slice(&std::fs::read(dir.join("index.json"))?).context("reading index.json")?;
        let layout = Layout { dir: dir.to_path_buf(), index };
        for m in &layout.index.manifests {
            layout.blob(&m.digest)?;
        }
        Ok(layout)
    }

    /// A blob's content, checked against its digest.
    pub fn blob(&self, digest: &str) -> Result<Vec<u8>> {
        let hex = digest.strip_prefix("sha256:").with_context(|| format!("unsupported digest `{digest}`"))?;
        let path = self.dir.join("blobs").join("sha256").join(hex);
        let data = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        if sha256_digest(&data) != digest {
            bail!("{} does not hash to its name", path.display());
        }
        Ok(data)
    }

    /// The manifest named `name`, as its descriptor.
    pub fn find(&self, name: &str) -> Option<&Descriptor> {
        self.index
            .manifests
            .iter()
            .find(|m| m.annotations.as_ref().and_then(|a| a.get(oci_annotations::REF_NAME)).is_some_and(|n| n == name))
    }

    /// Every manifest's name and digest.
    pub fn names(&self) -> Vec<(String, String)> {
        self.index
            .manifests
            .iter()
            .filter_map(|m| {
                let name = m.annotations.as_ref()?.get(oci_annotations::REF_NAME)?;
                Some((name.clone(), m.digest.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::artifact::ArtifactKind;

    fn artifact(name: &str, kind: ArtifactKind, wasm: &[u8]) -> OciArtifact {
        let config = Blob { media_type: media_types::KUBEWARDEN_CONFIG, data: b"{}".to_vec() };
        let layer = Blob { media_type: media_types::KUBEWARDEN_LAYER, data: wasm.to_vec() };
        let manifest = format!(r#"{{"name":"{name}","layer":"{}"}}"#, layer.digest()).into_bytes();
        OciArtifact { kind, name: name.into(), version: "0.1.0".into(), manifest, config, layer }
    }

    #[test]
    fn writes_a_layout_any_tool_can_read() {
        let dir = std::env::temp_dir().join(format!("aigov-layout-test-{}", std::process::id()));
        let a = artifact("rule-a", ArtifactKind::Module, b"a");
        let b = artifact("rule-b", ArtifactKind::Component, b"b");
        let written = write(&dir, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(written.len(), 2);
        let layout = Layout::open(&dir).unwrap();
        assert_eq!(layout.names(), vec![("rule-a-v0.1.0".to_string(), a.digest()), ("rule-b-v0.1.0-component".to_string(), b.digest())]);
        let found = layout.find("rule-a-v0.1.0").unwrap();
        assert_eq!(layout.blob(&found.digest).unwrap(), a.manifest);
        assert_eq!(layout.blob(&a.layer.digest()).unwrap(), b"a");
        // The shared `{}` config is stored once; three blobs per artifact minus one.
        assert_eq!(std::fs::read_dir(dir.join("blobs/sha256")).unwrap().count(), 5);
        // A corrupted blob is noticed.
        let hex = a.layer.digest().replace("sha256:", "");
        std::fs::write(dir.join("blobs/sha256").join(hex), b"tampered").unwrap();
        assert!(layout.blob(&a.layer.digest()).unwrap_err().to_string().contains("does not hash"));
        // Two artifacts with one name are refused.
        let e = write(&dir, &[a.clone(), a.clone()]).unwrap_err().to_string();
        assert!(e.contains("both named `rule-a-v0.1.0`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
