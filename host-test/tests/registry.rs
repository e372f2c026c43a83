//! End to end against a real OCI registry: Debian's `docker-registry` (the
//! Distribution registry) on a loopback port with its own storage directory.
//!
//! - `aigov push` every rule and the bundle in both forms, and the digest it prints is the
//!   digest of the same artifact in the OCI layout `make artifacts` wrote,
//!   whatever the environment: `make artifacts` runs with the Makefile's
//!   `SOURCE_DATE_EPOCH`, the pushes here without it, or with another one;
//! - `aigov pull` each back by digest: the same bytes, and the module's
//!   embedded metadata is its `metadata.yml` (plus protocol version and usage);
//! - the registry's own HTTP API serves the manifest, config and layer with the
//!   Kubewarden and CNCF Wasm media types;
//! - `skopeo copy` of the on-disk layout into the registry yields the digests
//!   aigov pushed;
//! - `make push` publishes every rule and the bundle, with those digests.
//!
//! The registry is stopped when the test ends, passing or failing. Run by
//! `make e2e` (part of `make test`), which installs `docker-registry` and
//! `skopeo` and builds the artifacts first.

// A test crate: its helpers may unwrap and index as its tests do
// (clippy.toml allows that in `#[test]` functions only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aigov::dist::layout::Layout;
use aigov::dist::oci::{CREATED, Manifest, WasmConfig, media_types, sha256_digest};
use aigov::run::artifact::{ArtifactKind, component_path, module_metadata, module_path};
use aigov_metadata::{Metadata, annotations};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A registry server running until dropped.
struct Registry {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Registry {
    /// A registry of its own for the test `name`: the tests of this file
    /// run in parallel, in one process.
    fn start(name: &str) -> Registry {
        let binary = which("docker-registry").unwrap_or_else(|| {
            panic!("`docker-registry` is not installed: run `make e2e` (it installs Debian's docker-registry and skopeo)")
        });
        let dir = std::env::temp_dir().join(format!("aigov-registry-{}-{name}", std::process::id()));
        // A free port is found by binding to port 0 and letting go; another
        // process may take it meanwhile, so a registry that cannot bind is
        // started again on another.
        for _ in 0..5 {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("data")).unwrap();
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let config = format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.join("data").display()
            );
            std::fs::write(dir.join("config.yml"), config).unwrap();
            let log = std::fs::File::create(dir.join("registry.log")).unwrap();
            let child = Command::new(&binary)
                .arg("serve")
                .arg(dir.join("config.yml"))
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("starting docker-registry");
            let mut registry = Registry { child, dir: dir.clone(), port };
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(r) = registry.get("/v2/", "application/json")
                    && r.status == 200
                {
                    return registry;
                }
                if registry.child.try_wait().unwrap().is_some() && registry.log().contains("address already in use") {
                    break;
                }
                if Instant::now() > deadline {
                    panic!("the registry did not answer on port {port}; its log:\n{}", registry.log());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("the registry found no free port in five tries");
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("registry.log")).unwrap_or_default()
    }

    /// A plain HTTP/1.1 GET against the registry API, independent of the
    /// OCI client under test.
    fn get(&self, path: &str, accept: &str) -> std::io::Result<Response> {
        self.request("GET", path, &[("Accept", accept)], &[])
    }

    /// A plain HTTP/1.1 request against the registry API.
    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Response> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(stream, "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n", self.host(), body.len())?;
        for (name, value) in headers {
            write!(stream, "{name}: {value}\r\n")?;
        }
        stream.write_all(b"\r\n")?;
        stream.write_all(body)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or(std::io::ErrorKind::InvalidData)?;
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut lines = head.lines();
        let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
        let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
        Ok(Response { status, headers, body: raw[split + 4..].to_vec() })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn which(binary: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(binary)).find(|p| p.is_file())
}

/// The environments aigov is run in: none of them may change a digest.
#[derive(Clone, Copy, Debug)]
enum Env {
    /// No `SOURCE_DATE_EPOCH` (a user running `aigov push` by hand).
    Bare,
    /// A `SOURCE_DATE_EPOCH` other than the one `make artifacts` had.
    OtherEpoch,
}

/// Runs aigov in `env`, with no Docker credentials.
fn aigov(args: &[&str], env: Env) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aigov"));
    match env {
        Env::Bare => command.env_remove("SOURCE_DATE_EPOCH"),
        Env::OtherEpoch => command.env("SOURCE_DATE_EPOCH", "1234567890"),
    };
    let out = command
        .args(args)
        .env("DOCKER_CONFIG", std::env::temp_dir().join("aigov-no-docker-config"))
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "aigov {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn skopeo(args: &[&str]) -> Vec<u8> {
    let out = Command::new("skopeo")
        .arg("--insecure-policy")
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("running skopeo ({e}): run `make e2e`, which installs it"));
    assert!(out.status.success(), "skopeo {} failed:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// One artifact of one rule (or of the bundle), as `make artifacts` left it.
struct Local {
    /// The rule's name, and its repository's last segment (`aigov-bundle`).
    rule: String,
    /// Its directory under `policies/` (`bundle`).
    dir: &'static str,
    kind: ArtifactKind,
    path: PathBuf,
    ref_name: String,
    digest: String,
    tag: String,
}

fn locals(layout: &Layout) -> Vec<Local> {
    let artifacts = root().join("artifacts");
    let mut out = Vec::new();
    let bundle = (aigov::run::artifact::BUNDLE, "bundle", aigov::run::native::BUNDLE.metadata.version);
    let rules = aigov::run::native::names().map(|rule| (rule, rule, aigov::run::native::rule(rule).unwrap().metadata.version));
    for (rule, dir, version) in rules.chain([bundle]) {
        for kind in [ArtifactKind::Module, ArtifactKind::Component] {
            let tag = aigov::dist::oci::tag(kind, version);
            let ref_name = format!("{rule}-{tag}");
            let digest =
                layout.find(&ref_name).unwrap_or_else(|| panic!("artifacts/oci has no `{ref_name}`: run `make artifacts`")).digest.clone();
            let path = match kind {
                ArtifactKind::Module => module_path(&artifacts, rule),
                ArtifactKind::Component => component_path(&artifacts, rule),
            };
            out.push(Local { rule: rule.to_string(), dir, kind, path, ref_name, digest, tag });
        }
    }
    out
}

#[test]
fn push_pull_inspect_and_copy_through_a_real_registry() {
    let layout = Layout::open(&root().join("artifacts/oci")).expect("artifacts/oci: run `make artifacts` first");
    let locals = locals(&layout);
    let registry = Registry::start("push-pull");
    let host = registry.host();
    let work = registry.dir.join("pulled");

    for local in &locals {
        // Push without a tag: aigov tags it v<version>[-component]. Without
        // SOURCE_DATE_EPOCH, and again with another one: the layout's digest
        // both times.
        let printed = aigov(&["push", local.path.to_str().unwrap(), &format!("{host}/aigov/{}", local.rule), "--insecure"], Env::Bare);
        let expected = format!("{host}/aigov/{}:{}@{}", local.rule, local.tag, local.digest);
        assert_eq!(printed.trim(), expected, "push prints the immutable reference, with the layout's digest");
        let again = aigov(&["push", local.path.to_str().unwrap(), &format!("{host}/again/{}", local.rule), "--insecure"], Env::OtherEpoch);
        assert_eq!(
            again.trim(),
            format!("{host}/again/{}:{}@{}", local.rule, local.tag, local.digest),
            "the environment changes no digest"
        );

        // Pull by digest: the same bytes.
        let out = work.join(format!("{}.wasm", local.ref_name));
        aigov(&["pull", &expected, "-o", out.to_str().unwrap(), "--insecure"], Env::Bare);
        let original = std::fs::read(&local.path).unwrap();
        let pulled = std::fs::read(&out).unwrap();
        assert!(original == pulled, "{}: pulled bytes differ from {}", local.ref_name, local.path.display());

        // The registry API, read without aigov.
        let manifest_path = format!("/v2/aigov/{}/manifests/{}", local.rule, local.tag);
        let response = registry.get(&manifest_path, media_types::MANIFEST).unwrap();
        assert_eq!(response.status, 200, "{manifest_path}");
        assert_eq!(response.header("content-type"), Some(media_types::MANIFEST), "{manifest_path}");
        assert_eq!(response.header("docker-content-digest"), Some(local.digest.as_str()), "{manifest_path}");
        assert_eq!(sha256_digest(&response.body), local.digest);
        let manifest = Manifest::parse(&response.body).unwrap();
        assert_eq!(manifest.media_type.as_deref(), Some(media_types::MANIFEST));
        assert_eq!(manifest.layers.len(), 1);
        let layer = &manifest.layers[0];
        assert_eq!(layer.digest, sha256_digest(&original));
        let config = registry.get(&format!("/v2/aigov/{}/blobs/{}", local.rule, manifest.config.digest), "*/*").unwrap();
        assert_eq!(config.status, 200);
        let blob = registry.get(&format!("/v2/aigov/{}/blobs/{}", local.rule, layer.digest), "*/*").unwrap();
        assert!(blob.status == 200 && blob.body == original, "{}: the layer blob is the artifact", local.ref_name);
        match local.kind {
            ArtifactKind::Module => {
                assert_eq!(manifest.config.media_type, media_types::KUBEWARDEN_CONFIG);
                assert_eq!(layer.media_type, media_types::KUBEWARDEN_LAYER);
                assert_eq!(config.body, b"{}", "Kubewarden's config is `{{}}`");
                let source = manifest.annotations.get("org.opencontainers.image.source").map(String::as_str);
                assert!(source.is_some_and(|s| s.ends_with(&format!("policies/{}", local.dir))), "{source:?}");
                assert_eq!(manifest.annotations.get(annotations::TITLE), Some(&local.rule));
                assert!(
                    !manifest.annotations.contains_key(annotations::USAGE),
                    "{}: the multi-line usage stays in the module",
                    local.ref_name
                );

                // The pulled module's metadata is its metadata.yml (the
                // bundle's: the union of every rule's), plus what annotate
                // adds.
                let read = |rule: &str, file: &str| std::fs::read_to_string(root().join("policies").join(rule).join(file)).unwrap();
                let mut expected = if local.dir == "bundle" {
                    let parts: Vec<Metadata> =
                        aigov::run::native::names().map(|r| Metadata::from_yaml(&read(r, "metadata.yml")).unwrap()).collect();
                    Metadata::bundle(&parts, aigov::run::native::BUNDLE.metadata.version)
                } else {
                    Metadata::from_yaml(&read(local.dir, "metadata.yml")).unwrap()
                };
                expected.protocol_version = Some("v1".into());
                let readme = read(local.dir, "README.md");
                expected.annotations.insert(annotations::USAGE.into(), readme);
                assert_eq!(module_metadata(&pulled).unwrap(), Some(expected), "{}", local.ref_name);
            }
            ArtifactKind::Component => {
                assert_eq!(manifest.config.media_type, media_types::WASM_CONFIG);
                assert_eq!(layer.media_type, media_types::WASM_LAYER);
                let config: WasmConfig = serde_json::from_slice(&config.body).unwrap();
                assert_eq!((config.architecture.as_str(), config.os.as_str()), ("wasm", "wasip2"));
                assert_eq!(config.created, CREATED, "no time from the environment");
                assert!(!manifest.annotations.contains_key("org.opencontainers.image.created"));
                assert_eq!(config.layer_digests, vec![layer.digest.clone()]);
                for export in ["validate", "validate-settings", "metadata"] {
                    assert!(config.component.exports.iter().any(|e| e == export), "{:?}", config.component.exports);
                }
                assert!(
                    config.component.imports.iter().all(|i| i.starts_with("aigov:policy/")),
                    "a component imports only aigov interfaces: {:?}",
                    config.component.imports
                );
            }
        }
    }

    // The layout on disk, copied by an OCI tool that is not aigov, lands
    // with the digests aigov pushed.
    for local in &locals {
        let destination = format!("docker://{host}/skopeo/{}:{}", local.rule, local.tag);
        skopeo(&[
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            "--preserve-digests",
            &format!("oci:artifacts/oci:{}", local.ref_name),
            &destination,
        ]);
        let raw = skopeo(&["inspect", "--raw", "--tls-verify=false", &destination]);
        assert_eq!(sha256_digest(&raw), local.digest, "{}: skopeo copied a different manifest", local.ref_name);
        let api = registry.get(&format!("/v2/skopeo/{}/manifests/{}", local.rule, local.tag), media_types::MANIFEST).unwrap();
        assert_eq!(api.header("docker-content-digest"), Some(local.digest.as_str()));
    }

    // A digest the repository does not hold (another rule's) is refused.
    let wrong = format!("{host}/aigov/{}@{}", locals[0].rule, locals[2].digest);
    let out = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(["pull", &wrong, "-o", work.join("wrong.wasm").to_str().unwrap(), "--insecure"])
        .output()
        .unwrap();
    assert!(!out.status.success() && !work.join("wrong.wasm").exists(), "a pull of a digest the repository does not hold fails");
}

/// `make push`, the command the README gives, publishes exactly what the
/// layout holds: every rule and the bundle, both forms, with the layout's
/// digests.
#[test]
fn make_push_publishes_every_rule_and_the_bundle() {
    let layout = Layout::open(&root().join("artifacts/oci")).expect("artifacts/oci: run `make artifacts` first");
    let locals = locals(&layout);
    let registry = Registry::start("make-push");
    let host = registry.host();
    // `-o artifacts`: the artifacts are built (make e2e depends on them);
    // this is about what the push recipe sends.
    let out = Command::new("make")
        .args(["--no-print-directory", "-s", "-o", "artifacts", "push", &format!("REGISTRY={host}/mk"), "INSECURE=1"])
        .env("DOCKER_CONFIG", std::env::temp_dir().join("aigov-no-docker-config"))
        // As a person runs it, not as a part of the `make test` that runs
        // this test (whose job server and flags it would otherwise inherit).
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "make push: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    let mut printed: Vec<&str> = stdout.lines().collect();
    let mut expected: Vec<String> = locals.iter().map(|l| format!("{host}/mk/{}:{}@{}", l.rule, l.tag, l.digest)).collect();
    printed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(printed, expected, "make push prints one pinned reference per artifact in the layout");
    assert!(expected.iter().any(|e| e.contains("/mk/aigov-bundle:v")), "the bundle is among them");
    let bundle = locals.iter().find(|l| l.dir == "bundle" && l.kind == ArtifactKind::Module).unwrap();
    let api = registry.get(&format!("/v2/mk/aigov-bundle/manifests/{}", bundle.tag), media_types::MANIFEST).unwrap();
    assert_eq!(api.header("docker-content-digest"), Some(bundle.digest.as_str()), "the registry holds the bundle's module");
}

/// Runs aigov with extra environment variables and no Docker credentials;
/// the output, whatever the exit status.
fn aigov_with(args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(args)
        .envs(vars.iter().copied())
        .env("DOCKER_CONFIG", std::env::temp_dir().join("aigov-no-docker-config"))
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `aigov verify`'s exit status and report.
fn verify(args: &[&str]) -> (i32, String) {
    let out = aigov_with(&[&["verify"], args, &["--insecure"]].concat(), &[]);
    (out.status.code().unwrap_or(-1), text(&out))
}

const PASSWORD: (&str, &str) = ("COSIGN_PASSWORD", "correct horse battery staple");

/// Uploads a blob with the registry API (POST, then PUT with the digest).
fn upload_blob(registry: &Registry, repository: &str, data: &[u8]) -> String {
    let digest = sha256_digest(data);
    let started = registry.request("POST", &format!("/v2/{repository}/blobs/uploads/"), &[], &[]).unwrap();
    assert_eq!(started.status, 202, "starting an upload");
    let location = started.header("location").unwrap().to_string();
    let path = location.split_once("://").map_or(location.as_str(), |(_, rest)| &rest[rest.find('/').unwrap()..]);
    let separator = if path.contains('?') { '&' } else { '?' };
    let done = registry
        .request("PUT", &format!("{path}{separator}digest={digest}"), &[("Content-Type", "application/octet-stream")], data)
        .unwrap();
    assert_eq!(done.status, 201, "finishing an upload");
    digest
}

fn put_manifest(registry: &Registry, repository: &str, tag: &str, manifest: &[u8]) {
    put_manifest_as(registry, repository, tag, manifest, media_types::MANIFEST);
}

fn put_manifest_as(registry: &Registry, repository: &str, tag: &str, manifest: &[u8], media_type: &str) {
    let put = registry.request("PUT", &format!("/v2/{repository}/manifests/{tag}"), &[("Content-Type", media_type)], manifest).unwrap();
    assert_eq!(put.status, 201, "putting a manifest: {}", String::from_utf8_lossy(&put.body));
}

#[test]
fn sign_verify_and_refuse_a_tampered_artifact_or_a_wrong_key() {
    let registry = Registry::start("signatures");
    let host = registry.host();
    let keys = registry.dir.join("keys");
    let key = |name: &str, ext: &str| keys.join(format!("{name}.{ext}")).to_str().unwrap().to_string();

    // The platform team's key pair, with a password, and somebody else's,
    // without one.
    for (prefix, password) in [("platform", PASSWORD.1), ("other", "")] {
        let prefix = keys.join(prefix);
        let out = aigov_with(&["generate-key-pair", "--output-key-prefix", prefix.to_str().unwrap()], &[("COSIGN_PASSWORD", password)]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let pushed = aigov(&["push", "artifacts/owner-label/policy.wasm", &format!("{host}/signed/owner-label"), "--insecure"], Env::Bare);
    let (tagged, digest) = pushed.trim().split_once('@').unwrap();
    let pinned = format!("{host}/signed/owner-label@{digest}");
    let sig_tag = format!("{}.sig", digest.replace(':', "-"));

    // Nothing is signed yet.
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub")]);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("NOT verified (0 signature(s)"), "{report}");

    // A wrong password is refused before anything is written.
    let out = aigov_with(&["sign", tagged, "--key", &key("platform", "key"), "--insecure"], &[("COSIGN_PASSWORD", "wrong")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot decrypt"), "{}", text(&out));
    assert_eq!(registry.get(&format!("/v2/signed/owner-label/manifests/{sig_tag}"), media_types::MANIFEST).unwrap().status, 404);

    // Signed by tag: the digest is what is signed, and printed.
    let out = aigov_with(&["sign", tagged, "--key", &key("platform", "key"), "-a", "env=prod", "--insecure"], &[PASSWORD]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pinned);

    // Stored as cosign stores it, read over the plain registry API: one
    // simple-signing layer under REPOSITORY:sha256-<hex>.sig, its payload
    // naming the repository and the digest, its signature an ECDSA
    // signature of the payload that OpenSSL (not sigstore) accepts.
    let manifest = registry.get(&format!("/v2/signed/owner-label/manifests/{sig_tag}"), media_types::MANIFEST).unwrap();
    assert_eq!(manifest.status, 200);
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.body).unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], aigov::dist::sign::SIMPLE_SIGNING);
    let signature = layers[0]["annotations"][aigov::dist::sign::SIGNATURE_ANNOTATION].as_str().unwrap().to_string();
    let payload = registry.get(&format!("/v2/signed/owner-label/blobs/{}", layers[0]["digest"].as_str().unwrap()), "*/*").unwrap().body;
    let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(claims["critical"]["type"], "cosign container image signature");
    assert_eq!(claims["critical"]["identity"]["docker-reference"], format!("{host}/signed/owner-label"));
    assert_eq!(claims["critical"]["image"]["docker-manifest-digest"], digest);
    assert_eq!(claims["optional"]["env"], "prod");
    let scratch = registry.dir.join("openssl");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(scratch.join("payload"), &payload).unwrap();
    std::fs::write(scratch.join("sig.b64"), &signature).unwrap();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(&scratch).output().expect("running openssl");
        (out.status.success(), text(&out))
    };
    assert!(openssl(&["base64", "-d", "-A", "-in", "sig.b64", "-out", "sig.der"]).0);
    let (ok, said) = openssl(&["dgst", "-sha256", "-verify", &key("platform", "pub"), "-signature", "sig.der", "payload"]);
    assert!(ok && said.contains("Verified OK"), "{said}");
    let (ok, _) = openssl(&["dgst", "-sha256", "-verify", &key("other", "pub"), "-signature", "sig.der", "payload"]);
    assert!(!ok, "another key does not verify the signature");

    // Verified with the right key, with and without the annotation; not
    // with another annotation value or another key.
    for args in [vec![tagged, "--key", &key("platform", "pub")], vec![&pinned, "--key", &key("platform", "pub"), "-a", "env=prod"]] {
        let (status, report) = verify(&args);
        assert_eq!(status, 0, "{report}");
        assert!(report.starts_with(&format!("{pinned}: verified (1 signature(s)")), "{report}");
    }
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub"), "-a", "env=dev"]);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("no signature by") && report.contains("env=dev"), "{report}");
    let (status, report) = verify(&[tagged, "--key", &key("other", "pub")]);
    assert_eq!(status, 1, "a wrong key fails: {report}");
    assert!(report.contains(&format!("no signature by {}", key("other", "pub"))), "{report}");

    // Kubewarden's verification config, as kwctl and policy-server take it.
    let indent = |pem: &str, n: usize| pem.lines().map(|l| format!("{}{l}\n", " ".repeat(n))).collect::<String>();
    let platform_pub = std::fs::read_to_string(key("platform", "pub")).unwrap();
    let other_pub = std::fs::read_to_string(key("other", "pub")).unwrap();
    let configs = [
        (
            format!(
                "apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: platform-team\n    key: |\n{}    annotations:\n      env: prod\n",
                indent(&platform_pub, 6)
            ),
            0,
        ),
        (format!("apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: |\n{}", indent(&other_pub, 6)), 1),
        (
            format!(
                "apiVersion: v1\nanyOf:\n  minimumMatches: 1\n  signatures:\n    - kind: pubKey\n      key: |\n{}    - kind: pubKey\n      key: |\n{}",
                indent(&other_pub, 8),
                indent(&platform_pub, 8)
            ),
            0,
        ),
    ];
    for (i, (config, expected)) in configs.iter().enumerate() {
        let path = registry.dir.join(format!("verification-config-{i}.yml"));
        std::fs::write(&path, config).unwrap();
        let (status, report) = verify(&[tagged, "--verification-config", path.to_str().unwrap()]);
        assert_eq!(status, *expected, "config {i}:\n{config}\n{report}");
    }

    // Signing again with the same key replaces its signature; another
    // signer's is appended, and both keys then verify.
    let out = aigov_with(&["sign", &pinned, "--key", &key("platform", "key"), "-a", "env=prod", "--insecure"], &[PASSWORD]);
    assert!(out.status.success() && text(&out).contains("replaced"), "{}", text(&out));
    let out = aigov_with(&["sign", &pinned, "--key", &key("other", "key"), "--insecure"], &[("COSIGN_PASSWORD", "")]);
    assert!(out.status.success(), "{}", text(&out));
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub"), "--key", &key("other", "pub")]);
    assert_eq!(status, 0, "{report}");
    assert!(report.contains("(2 signature(s)"), "{report}");

    // A tampered artifact: another module pushed over the signed tag has no
    // signature.
    let tampered = aigov(&["push", "artifacts/workload-security/policy.wasm", tagged, "--insecure"], Env::Bare);
    let tampered_digest = tampered.trim().split_once('@').unwrap().1.to_string();
    assert_ne!(tampered_digest, digest);
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub")]);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains(&format!("@{tampered_digest}: NOT verified (0 signature(s)")), "{report}");

    // The genuine signatures copied beside the tampered digest: their
    // payload names the signed digest, so none counts.
    let original = registry.get(&format!("/v2/signed/owner-label/manifests/{sig_tag}"), media_types::MANIFEST).unwrap().body;
    let tampered_sig_tag = format!("{}.sig", tampered_digest.replace(':', "-"));
    put_manifest(&registry, "signed/owner-label", &tampered_sig_tag, &original);
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub")]);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("NOT verified (0 signature(s)"), "{report}");

    // A forged payload naming the tampered digest, under the genuine
    // signature: it claims the digest, and the key does not verify it.
    let forged = String::from_utf8(payload.clone()).unwrap().replace(digest, &tampered_digest);
    let forged_digest = upload_blob(&registry, "signed/owner-label", forged.as_bytes());
    let mut forged_manifest: serde_json::Value = serde_json::from_slice(&original).unwrap();
    forged_manifest["layers"] = serde_json::json!([{
        "mediaType": aigov::dist::sign::SIMPLE_SIGNING,
        "size": forged.len(),
        "digest": forged_digest,
        "annotations": { aigov::dist::sign::SIGNATURE_ANNOTATION: signature },
    }]);
    put_manifest(&registry, "signed/owner-label", &tampered_sig_tag, &serde_json::to_vec(&forged_manifest).unwrap());
    let (status, report) = verify(&[tagged, "--key", &key("platform", "pub")]);
    assert_eq!(status, 1, "{report}");
    assert!(report.contains("NOT verified (1 signature(s)"), "the forged layer is seen and rejected: {report}");

    // The genuine artifact, by digest, still verifies.
    let (status, report) = verify(&[&pinned, "--key", &key("platform", "pub")]);
    assert_eq!(status, 0, "{report}");

    // Signatures stored in Docker's manifest type (older cosign releases):
    // a new signature is appended in that type, and all of them verify.
    const DOCKER: &str = "application/vnd.docker.distribution.manifest.v2+json";
    let mut docker: serde_json::Value = serde_json::from_slice(&original).unwrap();
    docker["mediaType"] = DOCKER.into();
    docker["config"]["mediaType"] = "application/vnd.docker.container.image.v1+json".into();
    put_manifest_as(&registry, "signed/owner-label", &sig_tag, &serde_json::to_vec(&docker).unwrap(), DOCKER);
    let out = aigov_with(&["sign", &pinned, "--key", &key("platform", "key"), "-a", "env=staging", "--insecure"], &[PASSWORD]);
    assert!(out.status.success() && !text(&out).contains("replaced"), "{}", text(&out));
    let stored = registry.get(&format!("/v2/signed/owner-label/manifests/{sig_tag}"), DOCKER).unwrap();
    assert_eq!(stored.header("content-type"), Some(DOCKER), "the manifest keeps Docker's type");
    let stored: serde_json::Value = serde_json::from_slice(&stored.body).unwrap();
    assert_eq!(stored["mediaType"], DOCKER);
    assert_eq!(stored["layers"].as_array().unwrap().len(), 3, "{stored}");
    for annotation in ["env=prod", "env=staging"] {
        let (status, report) = verify(&[&pinned, "--key", &key("platform", "pub"), "-a", annotation]);
        assert_eq!(status, 0, "{annotation}: {report}");
    }
    let (status, report) = verify(&[&pinned, "--key", &key("other", "pub")]);
    assert_eq!(status, 0, "{report}");
}
