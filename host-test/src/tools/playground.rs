//! The playground: a static page (sources in `host-test/playground/`,
//! written to `artifacts/playground/` by `make playground`) where a person
//! pastes a manifest and sees every rule's verdict as they type. The page
//! runs the bundle component itself, transpiled by jco for the browser;
//! nothing leaves it.
//!
//! Two things here:
//! - [`data`]: what the page is built with, from this build of aigov (no
//!   hand-copied lists): every rule's name, description, webhook rules and
//!   settings, the sample workloads and sample cluster, and what the page
//!   needs to turn a plain object into the AdmissionRequest `aigov eval`
//!   would build (with those requests for every sample, so that the page's
//!   builder is checked against this one);
//! - [`serve`]: `aigov playground`, a small static file server on
//!   127.0.0.1 only (no directory traversal, the right `Content-Type` for
//!   `.wasm` and `.js`, a Content-Security-Policy that lets the page reach
//!   nothing but its own files).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use aigov_metadata::annotations;
use aigov_sdk::WorkloadKind;
use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::run::admission::{self, Submission};
use crate::run::native;

/// The page's data: see the module documentation. `samples` is the
/// directory of sample workloads (`host-test/samples`); its `cluster/`
/// subdirectory, if any, is the sample cluster.
pub fn data(samples: &Path) -> Result<Value> {
    let mut rules = Vec::new();
    for rule in native::RULES {
        let m = rule.metadata;
        let example = native::example_settings(m.name).is_some();
        rules.push(json!({
            "name": m.name,
            "version": m.version,
            "description": m.annotation(annotations::DESCRIPTION).unwrap_or_default(),
            "url": m.annotation(annotations::URL).or_else(|| m.annotation(annotations::SOURCE)),
            "mutating": m.mutating,
            "contextAwareResources": m.context_aware_resources.iter()
                .map(|r| json!({"apiVersion": r.api_version, "kind": r.kind})).collect::<Vec<_>>(),
            "webhookRules": m.rules.iter().map(|r| json!({
                "apiGroups": r.api_groups, "apiVersions": r.api_versions,
                "resources": r.resources, "operations": r.operations,
            })).collect::<Vec<_>>(),
            "settings": native::deployable_settings(rule)?,
            "settingsFrom": if example { format!("host-test/settings/{}.yaml", m.name) } else { "defaults".to_string() },
        }));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples)
        .with_context(|| format!("reading {}", samples.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")))
        .collect();
    files.sort();
    let mut list = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let docs = admission::parse_documents(&text).with_context(|| format!("parsing {}", file.display()))?;
        let requests = docs
            .into_iter()
            .map(|d| admission::to_admission_request(d, &Submission::default()))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("{}: the AdmissionRequest of a document", file.display()))?;
        list.push(json!({
            "file": file.file_name().map(|n| n.to_string_lossy().into_owned()),
            "summary": summary(&text),
            "text": text,
            "requests": requests,
        }));
    }
    let cluster_dir = samples.join("cluster");
    let mut cluster = String::new();
    if cluster_dir.is_dir() {
        let mut names: Vec<PathBuf> =
            std::fs::read_dir(&cluster_dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        names.sort();
        for f in names {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            cluster.push_str(&format!("# ---- {name}\n---\n{}\n", text.trim_end()));
        }
    }
    Ok(json!({
        "aigov": env!("CARGO_PKG_VERSION"),
        "rules": rules,
        "samples": list,
        "sampleCluster": cluster,
        "submission": {
            "uid": admission::REQUEST_UID,
            "user": admission::DEFAULT_USER,
            "groups": admission::DEFAULT_GROUPS,
            "namespace": "default",
            "clusterScopedKinds": admission::CLUSTER_SCOPED,
            "connectKinds": admission::CONNECT_KINDS.iter().map(|(k, s)| (k.to_string(), json!(s))).collect::<serde_json::Map<_, _>>(),
            "workloadKinds": WorkloadKind::ALL.iter()
                .map(|k| json!({"group": k.group(), "kind": k.kind(), "resource": k.resource()})).collect::<Vec<_>>(),
        },
    }))
}

/// The first paragraph of a sample's leading comment, as one line, without
/// a last sentence that only introduces a list (`Expected:`).
fn summary(text: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(comment) = line.trim_start().strip_prefix('#') else { break };
        let comment = comment.trim();
        if comment.is_empty() {
            break;
        }
        out.push(comment);
    }
    let mut summary = out.join(" ");
    if summary.ends_with(':')
        && let Some(end) = summary.rfind(". ")
    {
        summary.truncate(end + 1);
    }
    summary
}

/// Arguments of `aigov playground`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The page, as `make playground` wrote it.
    #[arg(long, default_value = "artifacts/playground")]
    pub dir: PathBuf,
    /// The port on 127.0.0.1; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Open the page in the default browser (xdg-open, or open on macOS).
    #[arg(long)]
    pub open: bool,
}

/// `aigov playground`: serves `args.dir` on 127.0.0.1 until interrupted.
pub fn serve(args: &ServeArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let index = args.dir.join("index.html");
    if !index.is_file() {
        let whole = std::path::absolute(&index).unwrap_or_else(|_| index.clone());
        anyhow::bail!(
            "{} is missing (--dir): build the page with `make playground` in the aigov repository, or point --dir at the directory it wrote",
            whole.display()
        );
    }
    let root = args.dir.canonicalize().with_context(|| format!("reading {}", args.dir.display()))?;
    let listener = TcpListener::bind(("127.0.0.1", args.port)).with_context(|| format!("listening on 127.0.0.1:{}", args.port))?;
    let port = listener.local_addr()?.port();
    let url = format!("http://127.0.0.1:{port}/");
    writeln!(out, "serving {} at {url} (only this machine can reach it; Ctrl-C stops)", args.dir.display())?;
    out.flush()?;
    if args.open {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        if let Err(e) = std::process::Command::new(opener).arg(&url).spawn() {
            let _ = writeln!(std::io::stderr().lock(), "aigov: could not run {opener} ({e}): open {url} yourself");
        }
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            // A client that goes away mid-answer is nothing to report.
            let _ = handle(stream, &root, port);
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// What a request gets instead of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 400: not a request line or target this server understands.
    BadRequest,
    /// 403: a path that leaves the directory (`..`, a symbolic link out).
    Forbidden,
    /// 404: no such file.
    NotFound,
    /// 405: not GET or HEAD.
    MethodNotAllowed,
    /// 421: a `Host` other than this server's (DNS rebinding).
    MisdirectedRequest,
}

impl Refusal {
    fn status(self) -> (u16, &'static str) {
        match self {
            Refusal::BadRequest => (400, "Bad Request"),
            Refusal::Forbidden => (403, "Forbidden"),
            Refusal::NotFound => (404, "Not Found"),
            Refusal::MethodNotAllowed => (405, "Method Not Allowed"),
            Refusal::MisdirectedRequest => (421, "Misdirected Request"),
        }
    }
}

/// The page may load its own files and nothing else: no request leaves it.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The `Content-Type` of a file, by extension.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("wasm") => "application/wasm",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("ico") => "image/x-icon",
        Some("yaml" | "yml") => "text/yaml; charset=utf-8",
        Some("txt" | "md") | None => "text/plain; charset=utf-8",
        Some(_) => "application/octet-stream",
    }
}

/// The file under `root` (canonical) that `target` (the request target)
/// names: percent-decoded, query dropped, `/` and directories meaning their
/// `index.html`. A `..` segment, a dot file, a backslash or NUL, and a path
/// whose real location is outside `root` are refused.
pub fn resolve(root: &Path, target: &str) -> Result<PathBuf, Refusal> {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if !path.starts_with('/') {
        return Err(Refusal::BadRequest);
    }
    let decoded = percent_decode(path).ok_or(Refusal::BadRequest)?;
    if decoded.contains(['\\', '\0']) {
        return Err(Refusal::BadRequest);
    }
    let mut file = root.to_path_buf();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(Refusal::Forbidden),
            s if s.starts_with('.') => return Err(Refusal::NotFound),
            s => {
                // One normal component each: nothing absolute, no prefix.
                let mut parts = Path::new(s).components();
                match (parts.next(), parts.next()) {
                    (Some(Component::Normal(_)), None) => file.push(s),
                    _ => return Err(Refusal::Forbidden),
                }
            }
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    let real = file.canonicalize().map_err(|_| Refusal::NotFound)?;
    if !real.starts_with(root) {
        return Err(Refusal::Forbidden);
    }
    if !real.is_file() {
        return Err(Refusal::NotFound);
    }
    Ok(real)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Answers one connection: one request, then the connection closes.
fn handle(stream: TcpStream, root: &Path, port: u16) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(16 * 1024));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut host = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("host")
        {
            host = Some(value.trim().to_string());
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let answer = if !matches!(method, "GET" | "HEAD") {
        Err(Refusal::MethodNotAllowed)
    } else if !host.as_deref().is_some_and(|h| h == format!("127.0.0.1:{port}") || h == format!("localhost:{port}")) {
        Err(Refusal::MisdirectedRequest)
    } else {
        resolve(root, target).and_then(|f| std::fs::read(&f).map(|body| (f, body)).map_err(|_| Refusal::NotFound))
    };
    let mut out = stream;
    let (status, reason, kind, body) = match answer {
        Ok((file, body)) => (200, "OK", content_type(&file), body),
        Err(r) => {
            let (status, reason) = r.status();
            (status, reason, "text/plain; charset=utf-8", format!("{status} {reason}\n").into_bytes())
        }
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nCross-Origin-Resource-Policy: same-origin\r\n\
         Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\nConnection: close\r\n",
        body.len()
    );
    if status == 405 {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if method != "HEAD" {
        out.write_all(&body)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("aigov-playground-unit-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bundle")).unwrap();
        std::fs::write(dir.join("index.html"), "<!doctype html>").unwrap();
        std::fs::write(dir.join("bundle/a.core.wasm"), b"\0asm").unwrap();
        std::fs::write(dir.join(".hidden"), "x").unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn files_under_the_root_are_served_and_nothing_else() {
        let root = site();
        assert_eq!(resolve(&root, "/").unwrap(), root.join("index.html"));
        assert_eq!(resolve(&root, "/index.html?x=1#y").unwrap(), root.join("index.html"));
        assert_eq!(resolve(&root, "/bundle/a.core.wasm").unwrap(), root.join("bundle/a.core.wasm"));
        assert_eq!(resolve(&root, "/bundle/%61.core.wasm").unwrap(), root.join("bundle/a.core.wasm"));
        for escape in ["/../etc/passwd", "/bundle/../../x", "/%2e%2e/x", "/bundle/%2E%2E/%2e%2e/x", "/..", "/a/.."] {
            assert_eq!(resolve(&root, escape), Err(Refusal::Forbidden), "{escape}");
        }
        assert_eq!(resolve(&root, "/.hidden"), Err(Refusal::NotFound));
        assert_eq!(resolve(&root, "/missing.js"), Err(Refusal::NotFound));
        assert_eq!(resolve(&root, "/a%5c..%5cb"), Err(Refusal::BadRequest));
        assert_eq!(resolve(&root, "/a%00"), Err(Refusal::BadRequest));
        assert_eq!(resolve(&root, "/%zz"), Err(Refusal::BadRequest));
        assert_eq!(resolve(&root, "index.html"), Err(Refusal::BadRequest));
        assert_eq!(resolve(&root, "http://evil/"), Err(Refusal::BadRequest));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type(Path::new("a/policy.core.wasm")), "application/wasm");
        assert_eq!(content_type(Path::new("playground.js")), "text/javascript; charset=utf-8");
        assert_eq!(content_type(Path::new("index.html")), "text/html; charset=utf-8");
        assert_eq!(content_type(Path::new("data.json")), "application/json");
        assert_eq!(content_type(Path::new("x.bin")), "application/octet-stream");
    }

    #[test]
    fn sample_summaries_are_their_first_comment_paragraph() {
        assert_eq!(summary("# A GPU pod\n# that works.\n#\n# more\napiVersion: v1\n"), "A GPU pod that works.");
        assert_eq!(summary("apiVersion: v1\n"), "");
        assert_eq!(summary("# A pod with mistakes. Expected:\n#\n# - DENY\n"), "A pod with mistakes.");
    }
}
