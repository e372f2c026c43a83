//! cosign signatures for pushed artifacts, made and checked with the
//! `sigstore` crate (the one Kubewarden's policy-fetcher verifies with).
//!
//! - **Keys** are cosign's: `generate-key-pair` writes `cosign.key` (an
//!   "ENCRYPTED SIGSTORE PRIVATE KEY", scrypt and secretbox) and
//!   `cosign.pub`; the password comes from `COSIGN_PASSWORD`, as for cosign.
//!   Keys made by cosign itself are read too, and so are unencrypted PKCS#8
//!   keys.
//! - **The signature** is cosign's simple-signing payload for the artifact's
//!   manifest digest, signed with the key, stored as one layer of the image
//!   manifest tagged `sha256-<hex>.sig` in the artifact's repository. Signing
//!   again appends, as cosign does, keeping every other signer's layer; a
//!   layer this key already made for the same payload is replaced, so
//!   re-running `make push` does not pile up signatures.
//! - **Verification** fetches the signatures with sigstore's cosign client
//!   (which drops any layer whose payload names another digest), then asks,
//!   per key, for one layer that key signed and that carries the annotations
//!   required: Kubewarden's `pubKey` semantics. Requirements are given as
//!   keys on the command line or as Kubewarden's own verification config
//!   (`allOf` / `anyOf`, `kind: pubKey`).
//! - **Keyless signing** (Fulcio certificates, Rekor transparency-log
//!   entries) needs the public Sigstore services over the network and is out
//!   of scope: a keyless requirement in a verification config is refused by
//!   name, not skipped.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use oci_client::Reference;
use oci_client::errors::OciDistributionError;
use serde::Deserialize;
use sigstore::cosign::constraint::{AnnotationMarker, PrivateKeySigner};
use sigstore::cosign::verification_constraint::{AnnotationVerifier, PublicKeyVerifier, VerificationConstraint};
use sigstore::cosign::{ClientBuilder, Constraint, CosignCapabilities, SignatureLayer};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, Signature, SigningScheme};

use crate::dist::oci::sha256_digest;
use crate::dist::registry;

/// cosign's media type for a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The environment variable cosign reads a key's password from.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker's image manifest, which older cosign releases and some registries
/// wrote signature manifests in: appended to in its own type.
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// The config blob of a signature manifest (as sigstore-rs writes it).
const EMPTY_CONFIG: &[u8] = b"{}";

/// `aigov generate-key-pair`, `aigov sign` and `aigov verify`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Write a cosign key pair: PREFIX.key (encrypted with $COSIGN_PASSWORD,
    /// which may be empty) and PREFIX.pub. Existing files are not replaced.
    GenerateKeyPair {
        /// Where to write them: PREFIX.key and PREFIX.pub.
        #[arg(long, default_value = "cosign")]
        output_key_prefix: PathBuf,
    },
    /// Sign a pushed artifact with a cosign key, storing the signature in the
    /// registry as cosign does (REPOSITORY:sha256-<hex>.sig). The password of
    /// an encrypted key comes from $COSIGN_PASSWORD.
    Sign {
        /// The artifact: `registry/repository:tag` or `…@sha256:…`. A tag is
        /// resolved to its digest once; the digest is what is signed.
        reference: String,
        /// The private key (cosign's format, or unencrypted PKCS#8 PEM).
        #[arg(long)]
        key: PathBuf,
        /// An annotation to sign with the digest, KEY=VALUE (repeatable), as
        /// `cosign sign -a`.
        #[arg(short = 'a', long = "annotation", value_name = "KEY=VALUE")]
        annotations: Vec<String>,
        /// Allow plain HTTP.
        #[arg(long)]
        insecure: bool,
    },
    /// Check an artifact's cosign signatures: exit status 0 when every
    /// requirement holds, 1 when one does not.
    Verify {
        /// The artifact: `registry/repository:tag` or `…@sha256:…`.
        reference: String,
        /// A public key that must have signed it (repeatable: all of them).
        /// Give --key or --verification-config.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
        /// An annotation the signature must carry, KEY=VALUE (repeatable;
        /// with --key).
        #[arg(short = 'a', long = "annotation", value_name = "KEY=VALUE", requires = "keys")]
        annotations: Vec<String>,
        /// Kubewarden's verification config (`allOf` / `anyOf` of
        /// `kind: pubKey` entries), as given to kwctl and policy-server.
        #[arg(long, conflicts_with = "keys")]
        verification_config: Option<PathBuf>,
        /// Allow plain HTTP.
        #[arg(long)]
        insecure: bool,
    },
}

/// Runs one of the commands.
pub fn run(command: &Command, out: &mut dyn Write) -> Result<ExitCode> {
    match command {
        Command::GenerateKeyPair { output_key_prefix } => {
            let password = password()?;
            let (key, public) = generate_key_pair(output_key_prefix, password.as_bytes())?;
            writeln!(out, "Private key written to {}", key.display())?;
            writeln!(out, "Public key written to {}", public.display())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sign { reference, key, annotations, insecure } => {
            let key = SigningKey::read(key)?;
            let signed = sign(reference, &key, &parse_annotations(annotations)?, *insecure)?;
            writeln!(out, "{}", signed.pinned)?;
            let _ = writeln!(
                std::io::stderr().lock(),
                "signed {} with {}; the signature is {}{}",
                signed.pinned,
                key.name,
                signed.signature_tag,
                if signed.replaced { " (this key's earlier signature of the same payload replaced)" } else { "" }
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify { reference, keys, annotations, verification_config, insecure } => {
            let policy = match verification_config {
                Some(path) => Policy::from_config_file(path)?,
                None if keys.is_empty() => bail!(
                    "verify needs what to check the signatures against: `--key cosign.pub` (repeatable; every key must have signed), \
                     or `--verification-config FILE`, Kubewarden's verification config as kwctl and policy-server take it"
                ),
                None => Policy::all_of_keys(keys, &parse_annotations(annotations)?)?,
            };
            let outcome = verify(reference, &policy, *insecure)?;
            out.write_all(outcome.render().as_bytes())?;
            Ok(if outcome.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

/// The password from `COSIGN_PASSWORD`; an empty value means none.
fn password() -> Result<String> {
    std::env::var(PASSWORD_VARIABLE)
        .map_err(|_| anyhow::anyhow!("set {PASSWORD_VARIABLE} to the private key's password (an empty value for none), as for cosign"))
}

/// `KEY=VALUE` pairs.
pub fn parse_annotations(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("annotation `{pair}` is not KEY=VALUE"),
        })
        .collect()
}

fn sigstore_error(what: &str) -> impl FnOnce(sigstore::errors::SigstoreError) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("{what}: {e}")
}

/// Writes PREFIX.key and PREFIX.pub: an ECDSA P-256 pair, cosign's default.
pub fn generate_key_pair(prefix: &Path, password: &[u8]) -> Result<(PathBuf, PathBuf)> {
    let key_path = with_suffix(prefix, "key");
    let pub_path = with_suffix(prefix, "pub");
    for path in [&key_path, &pub_path] {
        if path.exists() {
            bail!("{} exists; move it away or pick another --output-key-prefix", path.display());
        }
    }
    let pair = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .map_err(sigstore_error("generating the key pair"))?;
    let private = pair.private_key_to_encrypted_pem(password).map_err(sigstore_error("encrypting the private key"))?;
    let public = pair.public_key_to_pem().map_err(sigstore_error("encoding the public key"))?;
    if let Some(dir) = key_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_private(&key_path, private.as_bytes())?;
    std::fs::write(&pub_path, public).with_context(|| format!("writing {}", pub_path.display()))?;
    Ok((key_path, pub_path))
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// A private key file readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes).with_context(|| format!("writing {}", path.display()))
}

/// The schemes cosign keys come in, in the order a key is tried.
const SCHEMES: [SigningScheme; 5] = [
    SigningScheme::ECDSA_P256_SHA256_ASN1,
    SigningScheme::ECDSA_P384_SHA384_ASN1,
    SigningScheme::ECDSA_P521_SHA512_ASN1,
    SigningScheme::ED25519,
    SigningScheme::RSA_PKCS1_SHA256(0),
];

/// A private key, ready to sign.
pub struct SigningKey {
    /// The file it came from, for messages.
    pub name: String,
    pair: SigStoreKeyPair,
    scheme: SigningScheme,
}

impl SigningKey {
    /// Reads a key file; an encrypted one with `COSIGN_PASSWORD`.
    pub fn read(path: &Path) -> Result<SigningKey> {
        let pem = std::fs::read(path).with_context(|| format!("reading the key {}", path.display()))?;
        let password = if pem.windows(9).any(|w| w == b"ENCRYPTED") { Some(password()?) } else { None };
        SigningKey::from_pem(&path.display().to_string(), &pem, password.as_deref())
    }

    /// A key from its PEM text.
    pub fn from_pem(name: &str, pem: &[u8], password: Option<&str>) -> Result<SigningKey> {
        let pair = match password {
            Some(password) => SigStoreKeyPair::from_encrypted_pem(pem, password.as_bytes())
                .map_err(|e| anyhow::anyhow!("{name}: cannot decrypt the key ({e}); is {PASSWORD_VARIABLE} its password?"))?,
            None => SigStoreKeyPair::from_pem(pem).map_err(|e| anyhow::anyhow!("{name}: not a private key: {e}"))?,
        };
        let scheme = SCHEMES
            .into_iter()
            .find(|scheme| pair.to_sigstore_signer(scheme).is_ok())
            .ok_or_else(|| anyhow::anyhow!("{name}: a key of a kind cosign does not sign with"))?;
        Ok(SigningKey { name: name.to_string(), pair, scheme })
    }

    /// The public half, PEM.
    pub fn public_pem(&self) -> Result<String> {
        self.pair.public_key_to_pem().map_err(sigstore_error("encoding the public key"))
    }

    fn verification_key(&self) -> Result<CosignVerificationKey> {
        self.pair.to_verification_key(&self.scheme).map_err(sigstore_error("the public key"))
    }

    /// Signs `layer`'s payload: sets its raw data and signature.
    fn sign(&self, layer: &mut SignatureLayer) -> Result<()> {
        let signer = self.pair.to_sigstore_signer(&self.scheme).map_err(sigstore_error("the signing key"))?;
        let signed = PrivateKeySigner::new_with_signer(signer).add_constraint(layer).map_err(sigstore_error("signing"))?;
        if !signed || layer.signature.is_none() {
            bail!("signing with {} produced no signature", self.name);
        }
        Ok(())
    }
}

/// What `sign` did.
#[derive(Debug)]
pub struct Signed {
    /// `registry/repository@sha256:…`: what was signed.
    pub pinned: String,
    /// `registry/repository:sha256-<hex>.sig`: where the signature is.
    pub signature_tag: String,
    /// Whether this key's earlier signature of the same payload was replaced.
    pub replaced: bool,
}

fn is_not_found(e: &OciDistributionError) -> bool {
    use oci_client::errors::OciErrorCode;
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) | OciDistributionError::ServerError { code: 404, .. } => true,
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().any(|e| matches!(e.code, OciErrorCode::ManifestUnknown | OciErrorCode::NotFound))
        }
        _ => false,
    }
}

/// What a reference names, resolved once: sign and verify act on the digest.
struct Subject {
    target: Reference,
    auth: oci_client::secrets::RegistryAuth,
    /// `registry/repository`, as cosign's payload names it.
    repository: String,
    /// The manifest digest the registry serves for the reference.
    digest: String,
}

impl Subject {
    async fn resolve(client: &oci_client::Client, reference: &str, insecure: bool) -> Result<Subject> {
        let target = registry::parse_reference(reference)?;
        let auth = registry::auth(target.resolve_registry())?;
        client.store_auth_if_needed(target.resolve_registry(), &auth).await;
        let digest = client
            .fetch_manifest_digest(&target, &auth)
            .await
            .map_err(|e| registry::explain(e, &format!("finding `{reference}`"), target.registry(), insecure))?;
        if let Some(pinned) = target.digest()
            && pinned != digest
        {
            bail!("`{reference}` pins {pinned} but the registry serves {digest}");
        }
        let repository = format!("{}/{}", target.registry(), target.repository());
        Ok(Subject { target, auth, repository, digest })
    }
}

/// The tag cosign stores the signatures of `digest` under.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// Signs the artifact `reference` names, appending the signature to the
/// `.sig` manifest beside it.
pub fn sign(reference: &str, key: &SigningKey, annotations: &BTreeMap<String, String>, insecure: bool) -> Result<Signed> {
    let client = registry::client(insecure);
    registry::runtime()?.block_on(async {
        let Subject { target, auth, repository, digest } = Subject::resolve(&client, reference, insecure).await?;
        let explain = |e, what: &str| registry::explain(e, what, target.registry(), insecure);
        let pinned = format!("{repository}@{digest}");

        // The payload: cosign's simple signing, naming the repository (not
        // the tag) and the digest, as cosign writes it.
        let subject: sigstore::registry::OciReference = pinned.parse().map_err(sigstore_error("the reference"))?;
        let mut layer = SignatureLayer::new_unsigned(&subject, &digest).map_err(sigstore_error("the payload"))?;
        layer.simple_signing.critical.identity.docker_reference = repository.clone();
        if !annotations.is_empty() {
            let marker = AnnotationMarker::new(annotations.clone().into_iter().collect::<HashMap<_, _>>());
            marker.add_constraint(&mut layer).map_err(sigstore_error("annotating the payload"))?;
        }
        key.sign(&mut layer)?;
        let payload = layer.raw_data.clone();
        let signature = layer.signature.clone().unwrap_or_default();

        let sig_ref = Reference::with_tag(target.registry().to_string(), target.repository().to_string(), signature_tag(&digest));
        let existing = match client.pull_manifest_raw(&sig_ref, &auth, &[OCI_MANIFEST, DOCKER_MANIFEST]).await {
            Ok((bytes, _)) => Some(serde_json::from_slice::<serde_json::Value>(&bytes).context("the existing signature manifest")?),
            Err(e) if is_not_found(&e) => None,
            Err(e) => return Err(explain(e, "fetching the existing signatures")),
        };

        let payload_digest = sha256_digest(&payload);
        let descriptor = serde_json::json!({
            "mediaType": SIMPLE_SIGNING,
            "size": payload.len(),
            "digest": payload_digest,
            "annotations": { SIGNATURE_ANNOTATION: signature },
        });
        let verification_key = key.verification_key()?;
        let mut replaced = false;
        let manifest = match existing {
            Some(mut manifest) => {
                let layers = manifest
                    .get_mut("layers")
                    .and_then(serde_json::Value::as_array_mut)
                    .context("the existing signature manifest has no `layers`")?;
                // This key's earlier signature of the very same payload.
                let before = layers.len();
                layers.retain(|l| !same_signer_same_payload(l, &payload_digest, &payload, &verification_key));
                replaced = layers.len() != before;
                layers.push(descriptor);
                manifest
            }
            None => serde_json::json!({
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": { "mediaType": OCI_CONFIG, "size": EMPTY_CONFIG.len(), "digest": sha256_digest(EMPTY_CONFIG) },
                "layers": [descriptor],
            }),
        };

        for (data, digest) in [(payload.clone(), payload_digest.clone()), (EMPTY_CONFIG.to_vec(), sha256_digest(EMPTY_CONFIG))] {
            let present = client.blob_exists(&sig_ref, &digest).await.map_err(|e| explain(e, "checking for a signature blob"))?;
            if !present {
                client.push_blob(&sig_ref, data, &digest).await.map_err(|e| explain(e, "uploading the signature"))?;
            }
        }
        // An existing manifest keeps its type (both carry `mediaType`).
        let media_type = match manifest.get("mediaType").and_then(serde_json::Value::as_str) {
            Some(DOCKER_MANIFEST) => DOCKER_MANIFEST,
            _ => OCI_MANIFEST,
        };
        let body = serde_json::to_vec(&manifest)?;
        client
            .push_manifest_raw(&sig_ref, body, media_type.parse().context("manifest media type")?)
            .await
            .map_err(|e| explain(e, "uploading the signature manifest"))?;
        Ok(Signed { pinned, signature_tag: format!("{repository}:{}", signature_tag(&digest)), replaced })
    })
}

/// Whether a layer descriptor is `key`'s signature of exactly `payload`.
fn same_signer_same_payload(layer: &serde_json::Value, payload_digest: &str, payload: &[u8], key: &CosignVerificationKey) -> bool {
    layer.get("digest").and_then(serde_json::Value::as_str) == Some(payload_digest)
        && layer
            .pointer(&format!("/annotations/{}", SIGNATURE_ANNOTATION.replace('/', "~1")))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|signature| key.verify_signature(Signature::Base64Encoded(signature.as_bytes()), payload).is_ok())
}

/// One `pubKey` requirement: a signature by this key carrying these
/// annotations.
#[derive(Debug)]
pub struct KeyRequirement {
    /// Who it names: the config's `owner`, else the key file.
    pub name: String,
    key_pem: String,
    annotations: BTreeMap<String, String>,
}

impl KeyRequirement {
    fn new(name: String, key_pem: String, annotations: BTreeMap<String, String>) -> Result<KeyRequirement> {
        CosignVerificationKey::try_from_pem(key_pem.as_bytes())
            .map_err(|e| anyhow::anyhow!("{name}: not a public key cosign verifies with: {e}"))?;
        Ok(KeyRequirement { name, key_pem, annotations })
    }

    /// The key's name, and the annotations required with it.
    fn label(&self) -> String {
        if self.annotations.is_empty() {
            return self.name.clone();
        }
        let pairs: Vec<String> = self.annotations.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{} with {}", self.name, pairs.join(", "))
    }

    /// Whether one layer is signed by the key and carries the annotations.
    fn satisfied_by(&self, layer: &SignatureLayer) -> bool {
        let by_key = PublicKeyVerifier::try_from(self.key_pem.as_bytes()).and_then(|v| v.verify(layer)).unwrap_or(false);
        let annotated = AnnotationVerifier { annotations: self.annotations.clone() }.verify(layer).unwrap_or(false);
        by_key && annotated
    }
}

/// What must hold, as Kubewarden's verification config says it: every
/// `all_of` requirement, and at least `minimum_matches` of `any_of`.
#[derive(Debug)]
pub struct Policy {
    all_of: Vec<KeyRequirement>,
    any_of: Option<(usize, Vec<KeyRequirement>)>,
}

/// Kubewarden's verification config, `apiVersion: v1`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VerificationConfig {
    api_version: String,
    #[serde(default)]
    all_of: Option<Vec<ConfigSignature>>,
    #[serde(default)]
    any_of: Option<ConfigAnyOf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigAnyOf {
    #[serde(default)]
    minimum_matches: Option<usize>,
    signatures: Vec<ConfigSignature>,
}

/// One entry; only `kind: pubKey` is verifiable offline. The keyless kinds'
/// fields are accepted here so that the refusal names the kind.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigSignature {
    kind: String,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl Policy {
    /// Every key must have signed, each signature carrying `annotations`.
    pub fn all_of_keys(keys: &[PathBuf], annotations: &BTreeMap<String, String>) -> Result<Policy> {
        if keys.is_empty() {
            bail!("name at least one public key (--key) or a verification config");
        }
        let all_of = keys
            .iter()
            .map(|path| {
                let pem = std::fs::read_to_string(path).with_context(|| format!("reading the key {}", path.display()))?;
                KeyRequirement::new(path.display().to_string(), pem, annotations.clone())
            })
            .collect::<Result<_>>()?;
        Ok(Policy { all_of, any_of: None })
    }

    /// Kubewarden's verification config file.
    pub fn from_config_file(path: &Path) -> Result<Policy> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Policy::from_config(&text).with_context(|| format!("{} is not a verification config aigov can check", path.display()))
    }

    /// Kubewarden's verification config, YAML or JSON.
    pub fn from_config(text: &str) -> Result<Policy> {
        let config: VerificationConfig = serde_norway::from_str(text)?;
        if config.api_version != "v1" {
            bail!("apiVersion `{}`: only `v1` is known", config.api_version);
        }
        let requirements = |entries: Vec<ConfigSignature>, list: &str| -> Result<Vec<KeyRequirement>> {
            entries
                .into_iter()
                .enumerate()
                .map(|(i, entry)| {
                    if entry.kind != "pubKey" {
                        bail!(
                            "{list}[{i}] is `kind: {}`: keyless verification needs Fulcio and Rekor over the network and is out of scope here (kwctl verify checks it); aigov checks `kind: pubKey`",
                            entry.kind
                        );
                    }
                    let key = entry.key.with_context(|| format!("{list}[{i}] (`kind: pubKey`) has no `key`"))?;
                    let name = entry.owner.unwrap_or_else(|| format!("{list}[{i}]"));
                    KeyRequirement::new(name, key, entry.annotations.unwrap_or_default())
                })
                .collect()
        };
        let all_of = requirements(config.all_of.unwrap_or_default(), "allOf")?;
        let any_of = match config.any_of {
            Some(any) => {
                let minimum = any.minimum_matches.unwrap_or(1);
                let signatures = requirements(any.signatures, "anyOf.signatures")?;
                if minimum == 0 || minimum > signatures.len() {
                    bail!("anyOf.minimumMatches is {minimum} with {} signature(s) listed", signatures.len());
                }
                Some((minimum, signatures))
            }
            None => None,
        };
        if all_of.is_empty() && any_of.is_none() {
            bail!("neither `allOf` nor `anyOf` names a signature");
        }
        Ok(Policy { all_of, any_of })
    }
}

/// What `verify` found.
#[derive(Debug)]
pub struct Outcome {
    /// `registry/repository@sha256:…`: what was checked.
    pub pinned: String,
    /// How many signatures name this digest.
    pub signatures: usize,
    /// Each `allOf` requirement and whether it held.
    pub all_of: Vec<(String, bool)>,
    /// The `anyOf` minimum and each requirement with whether it held.
    pub any_of: Option<(usize, Vec<(String, bool)>)>,
}

impl Outcome {
    /// Every `allOf` requirement held, and enough of `anyOf`.
    pub fn passed(&self) -> bool {
        self.all_of.iter().all(|(_, ok)| *ok)
            && self.any_of.as_ref().is_none_or(|(minimum, held)| held.iter().filter(|(_, ok)| *ok).count() >= *minimum)
    }

    /// The report `aigov verify` prints.
    pub fn render(&self) -> String {
        let mut text = format!(
            "{}: {} ({} signature(s) for this digest)\n",
            self.pinned,
            if self.passed() { "verified" } else { "NOT verified" },
            self.signatures
        );
        let line = |text: &mut String, (name, ok): &(String, bool)| {
            text.push_str(&format!("  {} {name}\n", if *ok { "signed by" } else { "no signature by" }));
        };
        for requirement in &self.all_of {
            line(&mut text, requirement);
        }
        if let Some((minimum, held)) = &self.any_of {
            text.push_str(&format!("  any {minimum} of:\n"));
            for requirement in held {
                text.push_str("  ");
                line(&mut text, requirement);
            }
        }
        text
    }
}

/// Checks the signatures of the artifact `reference` names against `policy`.
pub fn verify(reference: &str, policy: &Policy, insecure: bool) -> Result<Outcome> {
    let runtime = registry::runtime()?;
    // The digest first, so that the signatures checked are that digest's
    // even if the tag moves meanwhile.
    let Subject { auth, repository, digest, .. } = runtime.block_on(Subject::resolve(&registry::client(insecure), reference, insecure))?;
    let pinned = format!("{repository}@{digest}");
    let protocol = if insecure { sigstore::registry::ClientProtocol::Http } else { sigstore::registry::ClientProtocol::Https };
    let mut client = ClientBuilder::default()
        .with_oci_client_config(sigstore::registry::ClientConfig { protocol, ..Default::default() })
        .build()
        .map_err(sigstore_error("the cosign client"))?;
    let subject: sigstore::registry::OciReference = pinned.parse().map_err(sigstore_error("the reference"))?;
    let sigstore_auth = sigstore::registry::Auth::from(&auth);
    let layers =
        runtime.block_on(client.trusted_signature_layers(&sigstore_auth, &subject)).map_err(sigstore_error("fetching the signatures"))?;
    let check = |requirements: &[KeyRequirement]| -> Vec<(String, bool)> {
        requirements.iter().map(|r| (r.label(), layers.iter().any(|l| r.satisfied_by(l)))).collect()
    };
    Ok(Outcome {
        pinned,
        signatures: layers.len(),
        all_of: check(&policy.all_of),
        any_of: policy.any_of.as_ref().map(|(minimum, requirements)| (*minimum, check(requirements))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_are_key_value_pairs() {
        let parsed = parse_annotations(&["team=ml".into(), "note=a=b".into()]).unwrap();
        assert_eq!(parsed.get("team").map(String::as_str), Some("ml"));
        assert_eq!(parsed.get("note").map(String::as_str), Some("a=b"));
        for bad in ["team", "=ml"] {
            let e = parse_annotations(&[bad.into()]).unwrap_err().to_string();
            assert!(e.contains("is not KEY=VALUE"), "{e}");
        }
    }

    #[test]
    fn a_generated_key_reads_back_with_its_password_only() {
        let dir = std::env::temp_dir().join(format!("aigov-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (key, public) = generate_key_pair(&dir.join("team"), b"s3cret").unwrap();
        let pem = std::fs::read(&key).unwrap();
        assert!(String::from_utf8_lossy(&pem).contains("ENCRYPTED SIGSTORE PRIVATE KEY"));
        let signing = SigningKey::from_pem("team.key", &pem, Some("s3cret")).unwrap();
        assert_eq!(signing.public_pem().unwrap(), std::fs::read_to_string(&public).unwrap());
        let e = SigningKey::from_pem("team.key", &pem, Some("wrong")).err().unwrap().to_string();
        assert!(e.contains("cannot decrypt") && e.contains(PASSWORD_VARIABLE), "{e}");
        let again = generate_key_pair(&dir.join("team"), b"").unwrap_err().to_string();
        assert!(again.contains("exists"), "{again}");
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn public_pem() -> String {
        let pair = SigningScheme::ECDSA_P256_SHA256_ASN1.create_signer().unwrap().to_sigstore_keypair().unwrap();
        pair.public_key_to_pem().unwrap()
    }

    #[test]
    fn kubewarden_verification_configs_are_read_and_keyless_ones_refused() {
        let public = public_pem();
        let config = format!(
            "apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: platform\n    key: |\n{}    annotations:\n      env: prod\nanyOf:\n  minimumMatches: 1\n  signatures:\n    - kind: pubKey\n      key: |\n{}",
            public.lines().map(|l| format!("      {l}\n")).collect::<String>(),
            public.lines().map(|l| format!("        {l}\n")).collect::<String>()
        );
        let policy = Policy::from_config(&config).unwrap();
        assert_eq!(policy.all_of.len(), 1);
        assert_eq!(policy.all_of[0].name, "platform");
        assert_eq!(policy.all_of[0].annotations.get("env").map(String::as_str), Some("prod"));
        let (minimum, any) = policy.any_of.as_ref().unwrap();
        assert_eq!((*minimum, any.len(), any[0].name.as_str()), (1, 1, "anyOf.signatures[0]"));

        let keyless = "apiVersion: v1\nallOf:\n  - kind: githubAction\n    owner: aigov-dev\n";
        let e = format!("{:#}", Policy::from_config(keyless).unwrap_err());
        assert!(e.contains("kind: githubAction") && e.contains("out of scope"), "{e}");
        let empty = format!("{:#}", Policy::from_config("apiVersion: v1\n").unwrap_err());
        assert!(empty.contains("neither"), "{empty}");
        let version = format!("{:#}", Policy::from_config("apiVersion: v2\nallOf: []\n").unwrap_err());
        assert!(version.contains("v2"), "{version}");
        let not_a_key = format!("{:#}", Policy::from_config("apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: nope\n").unwrap_err());
        assert!(not_a_key.contains("not a public key"), "{not_a_key}");
    }

    #[test]
    fn the_outcome_needs_every_all_of_and_enough_any_of() {
        let outcome = |all_of: Vec<bool>, any_of: Option<(usize, Vec<bool>)>| Outcome {
            pinned: "r/x@sha256:0".into(),
            signatures: 1,
            all_of: all_of.into_iter().map(|ok| ("k".to_string(), ok)).collect(),
            any_of: any_of.map(|(m, v)| (m, v.into_iter().map(|ok| ("k".to_string(), ok)).collect())),
        };
        assert!(outcome(vec![true, true], None).passed());
        assert!(!outcome(vec![true, false], None).passed());
        assert!(outcome(vec![], Some((1, vec![false, true]))).passed());
        assert!(!outcome(vec![], Some((2, vec![false, true]))).passed());
        assert!(!outcome(vec![false], Some((1, vec![true]))).passed());
        let text = outcome(vec![false], None).render();
        assert!(text.contains("NOT verified") && text.contains("no signature by k"), "{text}");
    }

    #[test]
    fn the_signature_tag_is_cosigns() {
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
    }
}
