//! The `aigov` command line as a user meets it:
//!
//! - when the reader of standard output goes away (`aigov … | head`), every
//!   subcommand stops quietly with exit status 141, never a panic;
//! - `aigov eval` applies `--user` and `--group` to a verbatim
//!   AdmissionRequest or AdmissionReview (and says so on stderr), and
//!   refuses `--operation`, `--namespace` and `--name` with one
//!   (`one_program.rs` holds the rest of `eval`, and of the command line
//!   as one program);
//! - a rule in audit mode shows each violation once in `eval` and `scan`,
//!   though its answer holds it as a warning and an audit annotation;
//! - `aigov test` runs a rule's cases six ways and exits 0, and names a
//!   case whose expectation the rule does not meet and exits 1 (`make
//!   test` runs every case through the same code as the `cases` test);
//! - `aigov manifests` leaves a file edited since it wrote it alone, names
//!   it and exits with status 1, and overwrites it with `--force`; without
//!   `--enable`, it keeps the rules the overlay turns on; it says on stderr
//!   when it is about to compile the components, and only then;
//! - `aigov scan` finishes on a folder holding a link loop and a named
//!   pipe, walking each directory once and reading no pipe, and says what
//!   it left on stderr and in the JSON report's `skipped`;
//! - `aigov playground` serves a directory on 127.0.0.1 with the right
//!   `Content-Type` (`application/wasm`, `text/javascript`) and nothing
//!   outside it (`..`, encoded or not, is refused), and `aigov build
//!   playground-data` writes every rule and sample the page needs.
//!
//! Most run the natively linked rules; the `test` and `manifests` tests need
//! `make artifacts` first (like the case tests).

use crate::common::root;
use std::process::{Command, Output, Stdio};

fn aigov(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aigov")).args(args).current_dir(root()).stdin(Stdio::null()).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs aigov with standard output a pipe whose reader is closed before
/// aigov starts (closed after the spawn, it raced aigov's first write on a
/// busy machine).
fn with_reader_gone(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_every_subcommand_quietly() {
    let samples = root().join("host-test/samples");
    let samples = samples.to_str().unwrap();
    let cluster = root().join("host-test/samples/cluster");
    let cluster = cluster.to_str().unwrap();
    let exec = root().join("host-test/samples/07-exec-into-gpu-pod.yaml");
    let trusted = format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display());
    let runs: [Vec<&str>; 7] = [
        vec!["rules"],
        vec!["settings", "exec-guard"],
        vec!["eval", "exec-guard", exec.to_str().unwrap(), "--native", "--cluster", cluster],
        vec!["eval", "exec-guard", exec.to_str().unwrap(), "--native", "--cluster", cluster, "--format", "json"],
        vec!["scan", samples, "--native", "--cluster", cluster, "--settings", &trusted],
        vec!["scan", samples, "--native", "--cluster", cluster, "--format", "json", "--fail-on", "none", "--settings", &trusted],
        vec!["scan", "--native", "-", "--settings", &trusted],
    ];
    for args in &runs {
        let out = with_reader_gone(args);
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "aigov {}: {stderr}", args.join(" "));
        assert!(stderr.is_empty(), "aigov {}: quiet, but said: {stderr}", args.join(" "));
        assert_eq!(out.status.code(), Some(141), "aigov {}: exit status 141, as SIGPIPE gives", args.join(" "));
    }
    // clap's own help ignores the closed pipe too.
    let help = with_reader_gone(&["--help"]);
    assert!(!text(&help.stderr).contains("panicked"), "{}", text(&help.stderr));
}

#[test]
fn eval_applies_user_and_group_to_verbatim_requests() {
    let exec = root().join("host-test/samples/07-exec-into-gpu-pod.yaml");
    let exec = exec.to_str().unwrap();
    let cluster = root().join("host-test/samples/cluster");
    let cluster = cluster.to_str().unwrap();
    let eval = |extra: &[&str]| {
        let mut args = vec!["eval", "exec-guard", exec, "--native", "--cluster", cluster, "--format", "json"];
        args.extend_from_slice(extra);
        aigov(&args)
    };
    // Kubewarden's answer, and an exit status that agrees: 0 admitted, 1 denied.
    let accepted = |out: &Output| -> bool {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
        let accepted = v["accepted"].as_bool().unwrap();
        assert_eq!(out.status.code(), Some(if accepted { 0 } else { 1 }), "{}", text(&out.stderr));
        accepted
    };

    // The review as it is: jane.doe may not exec into a GPU pod.
    let plain = eval(&[]);
    assert!(!accepted(&plain));
    assert!(plain.stderr.is_empty(), "{}", text(&plain.stderr));

    // --group puts her in an allowed group; stderr says what was replaced.
    let admin = eval(&["--group", "system:masters"]);
    assert!(accepted(&admin), "--group reaches the verbatim review's userInfo");
    let said = text(&admin.stderr);
    assert!(said.contains("is an AdmissionReview, used verbatim but for userInfo.groups"), "{said}");
    assert!(said.contains("[\"system:masters\"] (--group)"), "{said}");

    // --user the same way (exempting the user by settings shows it).
    let settings = std::env::temp_dir().join(format!("aigov-cli-settings-{}.yaml", std::process::id()));
    std::fs::write(&settings, "allowedUsers: [oncall@example.com]\n").unwrap();
    let oncall = eval(&["--user", "oncall@example.com", "--settings", settings.to_str().unwrap()]);
    assert!(accepted(&oncall));
    assert!(text(&oncall.stderr).contains("userInfo.username `jane.doe@example.com` → `oncall@example.com` (--user)"));
    let _ = std::fs::remove_file(&settings);

    // Settings the rule refuses are an error before any request, as in a
    // policy server and `kwctl run`: here a list where an object belongs,
    // which serde alone would read as the defaults.
    std::fs::write(&settings, "allowedUsers: []\nallowedUsers2: 1\n").unwrap();
    let unknown = eval(&["--settings", settings.to_str().unwrap()]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown.stderr));
    assert!(
        text(&unknown.stderr).contains("`exec-guard` refuses these settings: setting `allowedUsers2`: unknown setting"),
        "{}",
        text(&unknown.stderr)
    );
    assert!(unknown.stdout.is_empty());
    std::fs::write(&settings, "cpuTraining: []\n").unwrap();
    let pod = root().join("host-test/samples/01-gpu-training-pod.yaml");
    let out = aigov(&["eval", "gpu-access", pod.to_str().unwrap(), "--native", "--settings", settings.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("`gpu-access` refuses these settings: setting `cpuTraining`: invalid type: list, expected an object"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_file(&settings);

    // Flags that would change what the request is are refused, by name.
    for (flag, value) in [("--operation", "DELETE"), ("--namespace", "other"), ("--name", "other-pod")] {
        let out = eval(&[flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let said = text(&out.stderr);
        assert!(said.contains(&format!("{flag} cannot apply")) && said.contains("AdmissionReview, used verbatim"), "{flag}: {said}");
        assert!(out.stdout.is_empty());
    }

    // A bare AdmissionRequest is named as such.
    let bare = root().join("host-test/samples/08-exec-into-cpu-notebook.yaml");
    let out = aigov(&["eval", "exec-guard", bare.to_str().unwrap(), "--native", "--cluster", cluster, "--user", "x", "--format", "json"]);
    assert!(text(&out.stderr).contains("is an AdmissionRequest, used verbatim but for userInfo.username"), "{}", text(&out.stderr));
}

/// A rule in audit mode answers with each violation twice, as a warning
/// (the submitter's) and in an audit annotation (the API server's audit
/// log): the command line shows it once, alone or in the bundle.
#[test]
fn audit_mode_shows_each_violation_once() {
    let scratch = std::env::temp_dir().join(format!("aigov-cli-audit-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let pod = scratch.join("pod.yaml");
    std::fs::write(&pod, "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ml}, spec: {containers: [{name: c, image: i}]}}")
        .unwrap();
    std::fs::write(scratch.join("audit.yaml"), "mode: audit\n").unwrap();
    std::fs::write(scratch.join("bundle.yaml"), "rules: {opencost-labels: {mode: audit}}\n").unwrap();
    let (pod, audit, bundle) = (pod.to_str().unwrap(), scratch.join("audit.yaml"), scratch.join("bundle.yaml"));
    let violation = "are missing from `metadata.labels`";
    for args in [
        vec!["eval", "opencost-labels", pod, "--native", "--settings", audit.to_str().unwrap()],
        vec!["eval", "aigov-bundle", pod, "--native", "--settings", bundle.to_str().unwrap()],
        vec!["scan", pod, "--native", "--rules", "opencost-labels", "--settings", &format!("opencost-labels={}", audit.display())],
    ] {
        let out = aigov(&args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "audit admits: {stdout}{}", text(&out.stderr));
        // The table wraps long lines: its prefix, which it never wraps, counts.
        assert_eq!(stdout.matches("(audit mode, not enforced)").count(), 1, "aigov {}: once\n{stdout}", args.join(" "));
        assert!(!stdout.contains("audit annotation"), "aigov {}: not again as the annotation\n{stdout}", args.join(" "));
        if args[0] == "eval" {
            assert_eq!(stdout.matches(violation).count(), 1, "aigov {}: once\n{stdout}", args.join(" "));
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// The first `aigov manifests` compiles every component to read its
/// metadata, half a minute on two cores: it says so before the wait, and a
/// later run, reading the compiled code from the cache, does not.
#[test]
fn manifests_say_when_they_compile() {
    let scratch = std::env::temp_dir().join(format!("aigov-cli-compiling-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_aigov"))
            .args(["manifests", "--output", scratch.join("deploy").to_str().unwrap(), "--enable", "gpu-runtime-class", "--force"])
            .env("AIGOV_CACHE_DIR", scratch.join("cache"))
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{} (run `make artifacts` first)", text(&first.stderr));
    let all = aigov::run::native::RULES.len() + 1;
    let said = format!("aigov: compiling {all} of {all} components to read their metadata (about 30 s for all of them");
    assert!(text(&first.stderr).contains(&said), "{}", text(&first.stderr));
    let again = run();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!text(&again.stderr).contains("compiling"), "cached: {}", text(&again.stderr));
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn manifests_never_overwrite_an_edited_file() {
    let dest = std::env::temp_dir().join(format!("aigov-cli-manifests-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dest);
    let manifests = |registry: &str, extra: &[&str]| {
        let mut args = vec!["manifests", "--output", dest.to_str().unwrap(), "--registry", registry];
        args.extend_from_slice(extra);
        aigov(&args)
    };
    let first = manifests("registry.example.com/aigov", &["--enable", "gpu-runtime-class"]);
    assert!(first.status.success(), "{} (run `make artifacts` first)", text(&first.stderr));
    let overlay = dest.join("overlay/kustomization.yaml");
    let generated = std::fs::read_to_string(&overlay).unwrap();
    assert!(generated.contains("\n- ../gpu-runtime-class "), "{generated}");
    // The same rules as one bundle policy.
    let bundle_path = dest.join("bundle/cluster-admission-policy.yaml");
    let bundle = std::fs::read_to_string(&bundle_path).unwrap();
    assert!(bundle.contains("module: registry://registry.example.com/aigov/aigov-bundle:v"), "{bundle}");
    assert!(bundle.contains("\n    rules:\n      gpu-runtime-class: {}\n"), "{bundle}");
    // A standalone policy-server is offered it too, and ArtifactHub a
    // package for it with the bundle's README.
    let served = std::fs::read_to_string(dest.join("policies.yml")).unwrap();
    assert!(served.contains("\naigov-bundle:\n  module: registry://registry.example.com/aigov/aigov-bundle:v"), "{served}");
    assert!(served.contains("\n    rules:\n      gpu-runtime-class: {}\n"), "{served}");
    let hub = std::fs::read_to_string(dest.join("bundle/artifacthub-pkg.yml")).unwrap();
    assert!(hub.contains("\nname: aigov-bundle\n") && hub.contains("readme: |\n  # aigov-bundle"), "{hub}");

    // The team turns exec-guard on by hand, then regenerates for another
    // registry: the policies follow, the overlay stays theirs.
    let edited = generated.replace("# - ../exec-guard", "- ../exec-guard") + "# reviewed by the platform team\n";
    assert_ne!(edited, generated);
    std::fs::write(&overlay, &edited).unwrap();
    let again = manifests("other.example.com/aigov", &[]);
    assert_eq!(again.status.code(), Some(1), "left-alone files make the exit status 1");
    let said = text(&again.stderr);
    assert!(said.contains(&format!("{} (edited since aigov wrote it)", overlay.display())), "{said}");
    assert!(said.contains("--force"), "says how to force: {said}");
    assert_eq!(std::fs::read_to_string(&overlay).unwrap(), edited);
    let policy = std::fs::read_to_string(dest.join("gpu-runtime-class/cluster-admission-policy.yaml")).unwrap();
    assert!(policy.contains("module: registry://other.example.com/aigov/gpu-runtime-class:v"), "{policy}");

    // --force takes the new version; without --enable, it keeps the rules
    // the overlay turns on, the hand-enabled one included.
    let forced = manifests("other.example.com/aigov", &["--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(text(&forced.stderr).contains("keeping the rules"), "{}", text(&forced.stderr));
    let now = std::fs::read_to_string(&overlay).unwrap();
    assert!(now.contains("\n- ../exec-guard ") && now.contains("\n- ../gpu-runtime-class "), "{now}");
    assert!(now.contains("# - ../opencost-labels") && !now.contains("reviewed by"), "{now}");

    // --enable says exactly which.
    let only = manifests("other.example.com/aigov", &["--enable", "opencost-labels"]);
    assert!(only.status.success(), "{}", text(&only.stderr));
    let now = std::fs::read_to_string(&overlay).unwrap();
    assert!(now.contains("\n- ../opencost-labels ") && now.contains("# - ../exec-guard"), "{now}");
    let bundle = std::fs::read_to_string(&bundle_path).unwrap();
    assert!(
        bundle.contains("\n      opencost-labels: {}\n") && !bundle.contains("gpu-runtime-class:"),
        "the bundle follows --enable: {bundle}"
    );
    std::fs::remove_dir_all(&dest).unwrap();
}

#[test]
fn test_passes_met_expectations_and_names_unmet_ones() {
    let out = aigov(&["test", "gpu-runtime-class"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let summary = stdout.lines().last().unwrap();
    let passed: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(passed > 20 && summary.ends_with(" passed, 0 failed"), "{summary}");
    assert!(stdout.contains("ok     gpu-runtime-class/audit-mode ("), "{stdout}");

    // The same rule, one case expecting the opposite of what it gets.
    let policies = std::env::temp_dir().join(format!("aigov-cli-policies-{}", std::process::id()));
    let cases = policies.join("gpu-runtime-class/tests/cases");
    std::fs::create_dir_all(&cases).unwrap();
    let good = std::fs::read_to_string(root().join("policies/gpu-runtime-class/tests/cases/amd-pod-default-settings.yaml")).unwrap();
    assert!(good.contains("accepted: true"));
    std::fs::write(cases.join("amd-pod-default-settings.yaml"), &good).unwrap();
    std::fs::write(cases.join("amd-pod-wrongly-expected.yaml"), good.replace("accepted: true", "accepted: false\n  message: refused"))
        .unwrap();
    let out = aigov(&["test", "gpu-runtime-class", "--policies", policies.to_str().unwrap()]);
    std::fs::remove_dir_all(&policies).unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ok     gpu-runtime-class/amd-pod-default-settings ("), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("FAILED") && l.contains("gpu-runtime-class/amd-pod-wrongly-expected")), "{stdout}");
    assert!(stdout.lines().last().unwrap().ends_with("1 passed, 1 failed"), "{stdout}");
}

/// One raw HTTP request (no client normalises `..` away): status and Content-Type.
fn http(port: u16, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = text(&answer);
    let head = answer.split("\r\n\r\n").next().unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let kind = head.lines().find_map(|l| l.strip_prefix("Content-Type: ")).unwrap_or_default().to_string();
    (status, kind)
}

#[test]
fn playground_serves_the_page_and_nothing_outside_it() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("aigov-cli-playground-{}", std::process::id()));
    let site = dir.join("site");
    std::fs::create_dir_all(site.join("bundle")).unwrap();
    std::fs::write(site.join("index.html"), "<!doctype html><title>t</title>").unwrap();
    std::fs::write(site.join("playground.js"), "export {};").unwrap();
    std::fs::write(site.join("bundle/aigov-bundle.core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.join("secret.txt"), "not for the browser").unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(["playground", "--port", "0", "--dir"])
        .arg(&site)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.split("http://127.0.0.1:").nth(1).and_then(|r| r.split('/').next()).unwrap().parse().unwrap();
    let get = |target: &str| http(port, &format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"));

    assert_eq!(get("/"), (200, "text/html; charset=utf-8".into()));
    assert_eq!(get("/playground.js"), (200, "text/javascript; charset=utf-8".into()));
    assert_eq!(get("/bundle/aigov-bundle.core.wasm"), (200, "application/wasm".into()));
    for escape in
        ["/../secret.txt", "/bundle/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/bundle/..%2f..%2fsecret.txt"]
    {
        assert_eq!(get(escape).0, 403, "{escape}");
    }
    assert_eq!(get("/secret.txt").0, 404);
    assert_eq!(http(port, &format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")).0, 405);
    assert_eq!(http(port, "GET / HTTP/1.1\r\nHost: attacker.example\r\n\r\n").0, 421, "a foreign Host (DNS rebinding) is refused");
    child.kill().unwrap();
    child.wait().unwrap();

    // Without a built page, it says what to run.
    let out = aigov(&["playground", "--port", "0", "--dir", dir.join("nothing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("make playground"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn playground_data_holds_every_rule_and_sample() {
    let file = std::env::temp_dir().join(format!("aigov-cli-playground-data-{}.json", std::process::id()));
    let out = aigov(&["build", "playground-data", "-o", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let rules: Vec<&str> = data["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(rules, aigov::run::native::names().collect::<Vec<_>>());
    for rule in data["rules"].as_array().unwrap() {
        let name = rule["name"].as_str().unwrap();
        let native = aigov::run::native::rule(name).unwrap();
        assert!((native.validate_settings)(rule["settings"].to_string().as_bytes()).valid, "{name}: the page's settings are refused");
        assert!(!rule["description"].as_str().unwrap().is_empty(), "{name}");
    }
    let samples = std::fs::read_dir(root().join("host-test/samples"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "yaml"))
        .count();
    assert_eq!(data["samples"].as_array().unwrap().len(), samples);
    for s in data["samples"].as_array().unwrap() {
        assert!(!s["requests"].as_array().unwrap().is_empty(), "{}", s["file"]);
        assert!(!s["summary"].as_str().unwrap().is_empty(), "{}: no leading comment", s["file"]);
    }
    assert!(data["sampleCluster"].as_str().unwrap().contains("kind: Namespace"));
    let _ = std::fs::remove_file(&file);
}

/// A folder with a link to itself, a link to its parent below it and a
/// named pipe named as a manifest: the scan ends (it used to walk the loop
/// until the path was too long, reporting a manifest 41 times, and to wait
/// on the pipe for a writer), evaluates the one manifest once, and says
/// what it left.
#[cfg(unix)]
#[test]
fn scan_finishes_on_a_link_loop_and_a_named_pipe() {
    let dir = std::env::temp_dir().join(format!("aigov-scan-loop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::copy(root().join("host-test/samples/01-gpu-training-pod.yaml"), dir.join("pod.yaml")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
    assert!(Command::new("mkfifo").arg(dir.join("pipe.yaml")).status().unwrap().success());

    let trusted = format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_aigov"))
        .args(["scan", dir.to_str().unwrap(), "--native", "--format", "json", "--settings", &trusted])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("aigov scan did not finish on a link loop and a named pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["documents"], 1, "the manifest once: {report}");
    let skipped: Vec<String> =
        report["skipped"].as_array().unwrap().iter().map(|n| n["source"]["file"].as_str().unwrap().to_string()).collect();
    let shown = |p: &str| dir.join(p).display().to_string();
    assert_eq!(skipped, [shown("loop"), shown("pipe.yaml"), shown("sub/up")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("aigov scan: skipped {}: a named pipe, not a regular file: not read", shown("pipe.yaml"))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("aigov scan: skipped {}: the same directory as {}, walked already", shown("loop"), dir.display())),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
