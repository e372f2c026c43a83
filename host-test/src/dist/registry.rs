//! Pushing aigov artifacts to OCI registries and pulling them back, with
//! oci-client (the client Kubewarden's policy-fetcher uses).
//!
//! - Credentials come from the Docker config file (`$DOCKER_CONFIG/config.json`
//!   or `~/.docker/config.json`, credential helpers included), as for
//!   `docker`, `kwctl` and `skopeo`; without an entry the registry is used
//!   anonymously.
//! - Registries are spoken to over HTTPS; plain HTTP only with `insecure`.
//! - The manifest is pushed byte for byte as [`OciArtifact`] built it, from
//!   the wasm file alone, so the digest printed is the digest of the layout
//!   on disk too, whatever the environment.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::dist::oci::{Manifest, OciArtifact, media_types, sha256_digest};
use crate::run::artifact::ArtifactKind;
use crate::run::engine;

/// `aigov push` and `aigov pull`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Push a module (Kubewarden layout) or a component (CNCF Wasm layout) to
    /// an OCI registry and print its immutable reference (REF@sha256:…).
    Push {
        /// The artifact: an annotated module (`policy.wasm`) or a component.
        artifact: PathBuf,
        /// Where to: `registry/repository[:tag]` (a `registry://` prefix is
        /// accepted, as in Kubewarden manifests). Without a tag, the
        /// artifact's own: `v<version>` for a module, `v<version>-component`
        /// for a component.
        reference: String,
        /// Allow plain HTTP (for a registry on loopback or in a lab).
        #[arg(long)]
        insecure: bool,
    },
    /// Pull a module or component from an OCI registry; digests are checked.
    Pull {
        /// What to pull: `registry/repository:tag` or `…@sha256:…`.
        reference: String,
        /// Where to write the wasm file.
        #[arg(short, long)]
        output: PathBuf,
        /// Allow plain HTTP.
        #[arg(long)]
        insecure: bool,
    },
}

/// Runs `aigov push` or `aigov pull`; the pinned reference of a push goes
/// to `out`.
pub fn run(command: &Command, out: &mut dyn Write) -> Result<ExitCode> {
    match command {
        Command::Push { artifact, reference, insecure } => {
            let wasm = std::fs::read(artifact).with_context(|| format!("reading {}", artifact.display()))?;
            let engine = engine::new_engine()?;
            let oci = OciArtifact::from_wasm(&engine, &wasm).with_context(|| format!("packaging {}", artifact.display()))?;
            let pinned = push(&oci, reference, *insecure)?;
            writeln!(out, "{pinned}")?;
        }
        Command::Pull { reference, output, insecure } => {
            let pulled = pull(reference, *insecure)?;
            if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(output, &pulled.wasm).with_context(|| format!("writing {}", output.display()))?;
            let _ = writeln!(
                std::io::stderr().lock(),
                "pulled {} ({}, {} bytes) to {}",
                pulled.pinned,
                pulled.kind.name(),
                pulled.wasm.len(),
                output.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `registry/repository[:tag][@digest]`, with an optional
/// `registry://` prefix.
pub fn parse_reference(reference: &str) -> Result<Reference> {
    let bare = reference.strip_prefix("registry://").unwrap_or(reference);
    bare.parse::<Reference>()
        .map_err(|e| anyhow::anyhow!("`{reference}` is not an OCI reference like `registry.example.com/team/rule:v1.0.0`: {e}"))
}

/// The reference without a digest, for printing `REF@sha256:…`.
fn without_digest(reference: &Reference) -> String {
    let mut s = format!("{}/{}", reference.registry(), reference.repository());
    if let Some(tag) = reference.tag() {
        s.push(':');
        s.push_str(tag);
    }
    s
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")
}

pub(crate) fn client(insecure: bool) -> Client {
    Client::new(ClientConfig { protocol: if insecure { ClientProtocol::Http } else { ClientProtocol::Https }, ..ClientConfig::default() })
}

/// The Docker config file: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`.
fn docker_config_file() -> Option<PathBuf> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")))?;
    Some(dir.join("config.json"))
}

/// Credentials for `registry` from the Docker config file (credential
/// helpers included); anonymous when there is no config file or no entry
/// for the registry.
pub fn auth(registry: &str) -> Result<RegistryAuth> {
    match docker_config_file().filter(|p| p.is_file()) {
        None => Ok(RegistryAuth::Anonymous),
        Some(path) => {
            let file = std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
            auth_from(std::io::BufReader::new(file), registry).with_context(|| format!("reading {}", path.display()))
        }
    }
}

/// Credentials for `registry` from a Docker config document.
pub fn auth_from(config: impl std::io::Read, registry: &str) -> Result<RegistryAuth> {
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    match docker_credential::get_credential_from_reader(config, registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => Ok(RegistryAuth::Basic(user, password)),
        Ok(DockerCredential::IdentityToken(token)) => Ok(RegistryAuth::Bearer(token)),
        Err(E::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
        Err(e) => bail!("the credentials for `{registry}`: {e}"),
    }
}

pub(crate) fn explain(e: oci_client::errors::OciDistributionError, what: &str, registry: &str, insecure: bool) -> anyhow::Error {
    let text = e.to_string();
    let hint = if !insecure && (text.contains("http") || text.contains("connect") || text.contains("TLS") || text.contains("tls")) {
        " (for a plain-HTTP registry, pass `--insecure`)"
    } else {
        ""
    };
    anyhow::anyhow!("{what} on `{registry}` failed: {text}{hint}")
}

/// Whether a reference names a tag (`host:5000/repo:tag`, not just
/// `host:5000/repo`).
fn has_tag(reference: &str) -> bool {
    let name = reference.rsplit('/').next().unwrap_or(reference);
    name.split('@').next().is_some_and(|n| n.contains(':'))
}

/// Pushes an artifact (both blobs, then the manifest, byte for byte) and
/// returns its pinned reference `REF@sha256:…`. A reference without a tag
/// gets the artifact's tag.
pub fn push(artifact: &OciArtifact, reference: &str, insecure: bool) -> Result<String> {
    let bare = reference.strip_prefix("registry://").unwrap_or(reference);
    let tagged = if has_tag(bare) || bare.contains('@') { bare.to_string() } else { format!("{bare}:{}", artifact.tag()) };
    let target = parse_reference(&tagged)?;
    if target.digest().is_some() {
        bail!("push to a tag, not a digest: `{reference}` (the digest is computed from the artifact)");
    }
    let auth = auth(target.resolve_registry())?;
    let client = client(insecure);
    let registry = target.registry().to_string();
    runtime()?.block_on(async {
        client.store_auth_if_needed(target.resolve_registry(), &auth).await;
        for blob in [&artifact.layer, &artifact.config] {
            let digest = blob.digest();
            let present = client.blob_exists(&target, &digest).await.map_err(|e| explain(e, "checking for a blob", &registry, insecure))?;
            if !present {
                client
                    .push_blob(&target, blob.data.clone(), &digest)
                    .await
                    .map_err(|e| explain(e, "uploading a blob", &registry, insecure))?;
            }
        }
        let content_type = media_types::MANIFEST.parse().context("manifest media type")?;
        client
            .push_manifest_raw(&target, artifact.manifest.clone(), content_type)
            .await
            .map_err(|e| explain(e, "uploading the manifest", &registry, insecure))?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(format!("{}@{}", without_digest(&target), artifact.digest()))
}

/// A pulled artifact.
pub struct Pulled {
    /// Module or component, from the manifest's media types.
    pub kind: ArtifactKind,
    /// `REF@sha256:…` of the manifest pulled.
    pub pinned: String,
    /// The raw manifest.
    pub manifest: Vec<u8>,
    /// The config blob.
    pub config: Vec<u8>,
    /// The wasm binary (the layer).
    pub wasm: Vec<u8>,
}

/// Pulls an aigov artifact, checking the manifest digest (when the
/// reference pins one), the layer digest and the media types.
pub fn pull(reference: &str, insecure: bool) -> Result<Pulled> {
    let target = parse_reference(reference)?;
    let auth = auth(target.resolve_registry())?;
    let client = client(insecure);
    let registry = target.registry().to_string();
    runtime()?.block_on(async {
        let (manifest, digest) = client
            .pull_manifest_raw(&target, &auth, &[media_types::MANIFEST])
            .await
            .map_err(|e| explain(e, &format!("fetching the manifest of `{reference}`"), &registry, insecure))?;
        let manifest = manifest.to_vec();
        let actual = sha256_digest(&manifest);
        if actual != digest {
            bail!("the registry says the manifest is {digest} but its content hashes to {actual}");
        }
        if let Some(pinned) = target.digest()
            && pinned != actual
        {
            bail!("`{reference}` pins {pinned} but the registry served {actual}");
        }
        let parsed = Manifest::parse(&manifest)?;
        let kind = parsed.kind()?;
        let mut blobs = Vec::new();
        for descriptor in [&parsed.config, parsed.layer()?] {
            let mut data = Vec::new();
            client
                .pull_blob(&target, descriptor.digest.as_str(), &mut data)
                .await
                .map_err(|e| explain(e, &format!("fetching blob {}", descriptor.digest), &registry, insecure))?;
            if sha256_digest(&data) != descriptor.digest || data.len() as u64 != descriptor.size {
                bail!("blob {} does not match its descriptor", descriptor.digest);
            }
            blobs.push(data);
        }
        let [config, wasm] = <[Vec<u8>; 2]>::try_from(blobs).map_err(|_| anyhow::anyhow!("expected two blobs"))?;
        if ArtifactKind::of(&wasm)? != kind {
            bail!("the manifest describes a {} but the layer holds a {}", kind.name(), ArtifactKind::of(&wasm)?.name());
        }
        Ok(Pulled { kind, pinned: format!("{}@{actual}", without_digest(&target)), manifest, config, wasm })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_accept_the_kubewarden_prefix() {
        let r = parse_reference("registry://127.0.0.1:5000/aigov/gpu-runtime-class:v0.1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "aigov/gpu-runtime-class");
        assert_eq!(without_digest(&r), "127.0.0.1:5000/aigov/gpu-runtime-class:v0.1.0");
        assert!(has_tag("127.0.0.1:5000/aigov/x:v1"));
        assert!(!has_tag("127.0.0.1:5000/aigov/x"));
        assert!(!has_tag("x"));
        let e = parse_reference("Not A Reference").unwrap_err().to_string();
        assert!(e.contains("is not an OCI reference"), "{e}");
    }

    #[test]
    fn credentials_come_from_the_docker_config() {
        // `user:secret`, base64-encoded, as `docker login` writes it.
        let config = r#"{"auths": {"registry.example.com": {"auth": "dXNlcjpzZWNyZXQ="}}}"#;
        let basic = auth_from(config.as_bytes(), "registry.example.com").unwrap();
        assert_eq!(basic, RegistryAuth::Basic("user".into(), "secret".into()));
        assert_eq!(auth_from(config.as_bytes(), "other.example.com").unwrap(), RegistryAuth::Anonymous);
        let broken = r#"{"auths": {"registry.example.com": {"auth": "not base64!"}}}"#;
        assert!(auth_from(broken.as_bytes(), "registry.example.com").is_err());
    }

    #[test]
    fn pushing_to_a_digest_is_refused() {
        let module = OciArtifact {
            kind: ArtifactKind::Module,
            name: "x".into(),
            version: "0.1.0".into(),
            manifest: b"{}".to_vec(),
            config: crate::dist::oci::Blob { media_type: media_types::KUBEWARDEN_CONFIG, data: b"{}".to_vec() },
            layer: crate::dist::oci::Blob { media_type: media_types::KUBEWARDEN_LAYER, data: Vec::new() },
        };
        let digest = format!("127.0.0.1:1/x@{}", sha256_digest(b""));
        let e = push(&module, &digest, true).unwrap_err().to_string();
        assert!(e.contains("push to a tag"), "{e}");
    }
}
