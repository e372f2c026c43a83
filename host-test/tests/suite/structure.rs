//! The shape of the repository, checked the way Kyverno's policy library
//! checks its folders:
//!
//! - every directory under `policies/` but `sdk` is a rule: a workspace member
//!   linked into aigov, with `metadata.yml` (whose version is the crate's),
//!   a README that documents every setting, and test cases;
//! - `aigov build annotate` refuses a metadata file Kubewarden would refuse, naming
//!   the file and the field (one bad file per refusal, in
//!   `tests/fixtures/bad-metadata/`);
//! - the `ClusterAdmissionPolicy` generated for every rule keeps
//!   `kube-system` and the policy server's namespace out with a
//!   `namespaceSelector`, and lists only the resources the rule acts on with
//!   its default settings;
//! - the host's modules import only down their layers ([`HOST_LAYERS`]),
//!   never in a circle, as `layers.rs` reads the sources.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use aigov_metadata::Metadata;

fn root() -> PathBuf {
    crate::common::root().canonicalize().unwrap()
}

/// Workspace members by name, with their manifest directory and version,
/// from `cargo metadata`.
fn workspace() -> BTreeMap<String, (PathBuf, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out =
        Command::new(cargo).args(["metadata", "--no-deps", "--format-version", "1", "--offline"]).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut members = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let dir = Path::new(p["manifest_path"].as_str().unwrap()).parent().unwrap().to_path_buf();
        members.insert(name, (dir, p["version"].as_str().unwrap().to_string()));
    }
    members
}

#[test]
fn every_rule_directory_is_a_complete_rule() {
    let members = workspace();
    let policies = root().join("policies");
    let mut rules = Vec::new();
    for entry in std::fs::read_dir(&policies).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if !entry.file_type().unwrap().is_dir() || name == "sdk" || name == "bundle" {
            continue;
        }
        let dir = entry.path();
        let mut problems = Vec::new();
        match members.get(&name) {
            Some((member_dir, _)) if member_dir == &dir => {}
            Some((member_dir, _)) => problems.push(format!("the workspace member `{name}` lives in {}", member_dir.display())),
            None => problems.push("is not a workspace member (its Cargo.toml must name the package after the directory)".into()),
        }
        if aigov::run::native::rule(&name).is_none() {
            problems.push("is not compiled into the bundle, so aigov cannot run it natively (a rule needs a metadata.yml)".into());
        }
        let metadata = std::fs::read_to_string(dir.join("metadata.yml"))
            .map_err(|e| e.to_string())
            .and_then(|t| Metadata::from_yaml(&t).map_err(|e| e.to_string()));
        match (&metadata, members.get(&name)) {
            (Err(e), _) => problems.push(format!("metadata.yml: {e}")),
            (Ok(m), Some((_, crate_version))) if m.version() != Some(crate_version.as_str()) => {
                problems.push(format!("metadata.yml has version {:?} but the crate is {crate_version}", m.version()))
            }
            (Ok(m), _) if m.annotations.get(aigov_metadata::annotations::TITLE) != Some(&name) => {
                problems.push("metadata.yml's title is not the rule's name".into())
            }
            _ => {}
        }
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
        if readme.trim().is_empty() {
            problems.push("README.md is missing or empty".into());
        }
        // Every setting, with its default, is documented.
        if let Some(rule) = aigov::run::native::rule(&name) {
            let defaults = (rule.default_settings)();
            for key in defaults.as_object().unwrap().keys() {
                if !readme.contains(&format!("`{key}`")) {
                    problems.push(format!("README.md does not document the setting `{key}`"));
                }
            }
        }
        let cases = std::fs::read_dir(dir.join("tests").join("cases"))
            .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "yaml")).count())
            .unwrap_or(0);
        if cases < 20 {
            problems.push(format!("has {cases} case files in tests/cases; a rule needs at least 20"));
        }
        // The artifacts need the exports; the bundle links the crate without them.
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        if !manifest.contains("default = [\"export\"]") || !manifest.contains("export = []") {
            problems.push(
                "Cargo.toml must declare `[features] default = [\"export\"]` and `export = []` (the SDK's export macro is gated on it)"
                    .into(),
            );
        }
        assert!(problems.is_empty(), "policies/{name}:\n  {}", problems.join("\n  "));
        rules.push(name);
    }
    rules.sort();
    let linked: Vec<&str> = aigov::run::native::names().collect();
    assert_eq!(rules, linked, "the rules under policies/ and the rules linked into aigov");

    // The bundle compiles every rule in as a module, from its folder: no
    // list of rules to keep in step anywhere.
    let bundle = std::fs::read_to_string(policies.join("bundle/Cargo.toml")).unwrap();
    for rule in &rules {
        assert!(
            !bundle.contains(&format!("\n{rule} = ")),
            "policies/bundle/Cargo.toml lists `{rule}`: the bundle finds rules by their folders"
        );
    }
    assert!(members.contains_key("aigov-bundle"), "policies/bundle is the workspace member `aigov-bundle`");
    let bundled: Vec<&str> = aigov::run::native::BUNDLE.metadata.name.split(',').collect();
    assert_eq!(bundled, ["aigov-bundle"]);
    assert!(!std::fs::read_to_string(policies.join("bundle/README.md")).unwrap_or_default().trim().is_empty());
}

#[test]
fn metadata_kubewarden_would_refuse_fails_the_annotation() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-metadata");
    let module = std::env::temp_dir().join(format!("aigov-structure-{}.wasm", std::process::id()));
    std::fs::write(&module, wasm_encoder::Module::new().finish()).unwrap();
    let expected = [
        ("missing-rules.yml", "missing field `rules`"),
        ("missing-mutating.yml", "missing field `mutating`"),
        ("empty-resources.yml", "`rules[0].resources`: must list at least one resource"),
        ("unknown-operation.yml", "`rules[0].operations[1]`: unknown variant `PATCH`"),
    ];
    for (file, message) in expected {
        let path = fixtures.join(file);
        let out = Command::new(env!("CARGO_BIN_EXE_aigov"))
            .args(["build", "annotate", module.to_str().unwrap(), "--metadata", path.to_str().unwrap(), "-o"])
            .arg(std::env::temp_dir().join("aigov-structure-never-written.wasm"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file} was accepted");
        assert!(stderr.contains(path.to_str().unwrap()), "{file}: the message names the file: {stderr}");
        assert!(stderr.contains(message), "{file}: expected `{message}` in: {stderr}");
    }
    let _ = std::fs::remove_file(&module);
}

/// Every rule's generated policy, from its metadata.yml and default
/// settings (example settings for a rule that refuses its defaults), which
/// the rule accepts, spelt out and as the policy writes them (the artifacts
/// themselves are not needed: the module digest is stood in for).
#[test]
fn generated_policies_exclude_system_namespaces_and_unguarded_subresources() {
    use aigov::dist::oci::{Blob, OciArtifact, media_types};
    use aigov::dist::package::{self, DEFAULT_EXCLUDED_NAMESPACES, Packaged};
    use aigov::run::artifact::ArtifactKind;
    use serde_json::json;

    let excluded: Vec<String> = DEFAULT_EXCLUDED_NAMESPACES.iter().map(|n| n.to_string()).collect();
    assert_eq!(excluded, ["kube-system", "kubewarden"]);
    for rule in aigov::run::native::RULES {
        let name = rule.metadata.name;
        let yml = std::fs::read_to_string(root().join("policies").join(name).join("metadata.yml")).unwrap();
        let form = |kind| OciArtifact {
            kind,
            name: name.into(),
            version: rule.metadata.version.into(),
            manifest: name.as_bytes().to_vec(),
            config: Blob { media_type: media_types::KUBEWARDEN_CONFIG, data: b"{}".to_vec() },
            layer: Blob { media_type: media_types::KUBEWARDEN_LAYER, data: Vec::new() },
        };
        let packaged = Packaged {
            name: name.into(),
            metadata: Metadata::from_yaml(&yml).unwrap(),
            module: form(ArtifactKind::Module),
            component: form(ArtifactKind::Component),
            settings: aigov::run::native::deployable_settings(rule).unwrap(),
            mode: None,
        };
        // The policy server loads the policy only with settings the rule
        // accepts: a rule that refuses its defaults ships example settings.
        let answer = (rule.validate_settings)(packaged.settings.to_string().as_bytes());
        assert!(
            answer.valid,
            "{name}: the generated policy's settings are refused: {:?} (add host-test/settings/{name}.yaml)",
            answer.message
        );
        let text = package::cluster_admission_policy(&packaged, "registry.example.com/aigov", &excluded).unwrap();
        let policy: serde_json::Value = serde_norway::from_str(&text).unwrap();
        // What the policy writes (its settings without the defaults) is
        // what the policy server sends: the rule accepts that too.
        let answer = (rule.validate_settings)(policy["spec"]["settings"].to_string().as_bytes());
        assert!(answer.valid, "{name}: the settings the policy writes are refused: {:?}", answer.message);
        assert_eq!(policy["spec"]["mutating"], json!(packaged.metadata.mutating), "{name}: `mutating` as metadata.yml says");
        assert_eq!(
            policy["spec"]["namespaceSelector"],
            json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kubewarden"]}]}),
            "{name}:\n{text}"
        );
        // One line to change, and it says so.
        let line = text.lines().find(|l| l.contains("values: [kube-system, kubewarden]")).unwrap_or_else(|| panic!("{name}:\n{text}"));
        assert!(line.trim_start().starts_with("- {key: kubernetes.io/metadata.name, operator: NotIn"), "{line}");
        assert!(text.contains("Change the list on the last line"), "{name}");

        // The webhook sends only what the rule reads with these settings.
        let resources: Vec<&str> = policy["spec"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["resources"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()))
            .collect();
        for gate in package::SETTING_GATED_RESOURCES {
            let resource = gate.resource;
            if gate.rule == name && !(gate.on)(&packaged.settings) {
                assert!(!resources.contains(&resource), "{name} lists {resource} although {} is not set: {resources:?}", gate.when);
                assert!(text.contains(&format!("`{resource}` is left out")), "{name} says why {resource} is missing");
            }
        }
        if name == "model-provenance" {
            assert!(!resources.contains(&"pods") && resources.contains(&"deployments"), "{resources:?}");
        }
        if name == "workload-classification" {
            assert!(!resources.contains(&"namespaces") && resources.contains(&"pods"), "{resources:?}");
        }
        if name == "exec-guard" {
            assert_eq!(resources, ["pods/exec", "pods/attach"]);
        }
    }
}

/// The case-file examples in the README are valid case files that pass
/// against the rule they are written for.
#[test]
fn the_readme_case_examples_pass() {
    use aigov::run::artifact::Evaluator;
    use aigov::tools::cases::{self, Case, Forms};

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let examples: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .filter(|block| block.starts_with("description:"))
        .collect();
    assert_eq!(examples.len(), 2, "the README shows a request case and a settings case");
    let rule = aigov::run::native::rule("gpu-runtime-class").unwrap();
    let forms = Forms {
        evaluators: vec![Evaluator::native(rule)],
        bundle: std::sync::Arc::new(vec![Evaluator::native(&aigov::run::native::BUNDLE)]),
        rule: "gpu-runtime-class".into(),
    };
    for (i, example) in examples.iter().enumerate() {
        let path = std::env::temp_dir().join(format!("aigov-readme-case-{}-{i}.yaml", std::process::id()));
        std::fs::write(&path, example).unwrap();
        let case = Case::load(&path).unwrap_or_else(|e| panic!("README case example {}: {e:#}\n{example}", i + 1));
        let _ = std::fs::remove_file(&path);
        // A rejection by the rule carries no code, and a settings case has
        // no request: the README's examples hold to both.
        assert!(case.expect.code.is_none(), "example {}: a policy denial has no code", i + 1);
        assert!(case.expect.settings_error.is_none() || case.request.is_none(), "example {}: settingsError beside a request", i + 1);
        if let Err(problems) = cases::run(&forms, &case) {
            panic!("README case example {} fails:\n  {}\n{example}", i + 1, problems.join("\n  "));
        }
    }
}

/// The host's layers, lowest first (the table's format is in `layers.rs`):
/// running artifacts, distributing them, then the tools, where the report
/// model sits below both the scan that fills it and the writers that read
/// it. `main.rs`, the command line, is above them all. Within a layer, the
/// modules may use each other, never in a circle.
const HOST_LAYERS: &[&[&str]] = &[
    // Running artifacts: the engine, the hosts, the rules linked natively.
    &["run::*"],
    // Distributing them: OCI, the image layout, registries, signatures.
    &["dist::*"],
    // What a scan's report is made of, and what its writers share.
    &["tools::report::model", "tools::report::spill", "tools::report::position"],
    // Reading a scan's documents.
    &["tools::scan::read"],
    // Evaluating them, and writing reports (each writer reads the model).
    &["tools::scan::evaluate", "tools::report"],
    // The tools people run: the scan command, eval, cases, bench, ...
    &["tools::*"],
];

#[test]
fn the_hosts_modules_import_down_the_layers_and_never_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = crate::layers::check(&src, HOST_LAYERS);
    assert!(problems.is_empty(), "host-test/src breaks its layers:\n  {}", problems.join("\n  "));
}

/// The layer check itself, on a crate written for it: it sees what goes up
/// (in a test module too unless asked not to, through a name the root
/// re-exports, and to an exported macro's module), the
/// edge that closes a circle, and modules or entries the table lacks; not
/// paths in comments, strings, characters or `$crate`.
#[test]
fn the_layer_check_names_what_goes_up_and_what_closes_a_circle() {
    let dir = std::env::temp_dir().join(format!("aigov-layers-{}", std::process::id()));
    let src = dir.join("src");
    let files = [
        (
            "lib.rs",
            "//! crate::high::g in a comment is no use\npub mod high;\npub mod low;\npub mod mid;\npub mod top;\npub use mid::sub::Deep;\n",
        ),
        (
            "low.rs",
            "pub fn f() -> &'static str { \"crate::high::g\" }\npub const C: char = '{';\npub const R: &str = r#\"crate::high::g\"#;\n\
             #[macro_export]\nmacro_rules! m { () => { $crate::high::g() } }\npub mod inner {\n    pub fn h() {}\n}\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { let _ = crate::top::T; }\n}\n",
        ),
        ("mid/mod.rs", "pub mod sub;\npub struct Thing;\npub fn k() { crate::high::g(); }\n"),
        ("mid/sub.rs", "pub struct Deep;\npub fn s() { super::super::low::f(); }\npub fn u() { crate::t!(); }\n"),
        (
            "high.rs",
            "use crate::{low::{self, inner::h}, Deep as D};\npub fn g() { low::f(); h(); }\npub fn x() -> D { D }\npub fn y() { let _ = super::mid::Thing; }\n",
        ),
        ("top.rs", "pub struct T;\n#[macro_export]\nmacro_rules! t { () => {} }\n"),
        ("main.rs", "fn main() { crate::nowhere::at_all(); }\n"),
    ];
    for (file, text) in files {
        let path = src.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let at = |file: &str, line: usize, path: &str| format!("{}:{line} `{path}`", src.join(file).display());
    assert_eq!(
        crate::layers::check(&src, &[&["low"], &["mid", "high"], &["mid::*"], &["top", "crate"]]),
        [
            format!("`high` (layer 1) uses `mid::sub` (layer 2), a higher layer: {}", at("high.rs", 1, "crate::Deep")),
            format!("`low` (layer 0) uses `top` (layer 3), a higher layer: {}", at("low.rs", 12, "crate::top::T")),
            format!("`mid::sub` (layer 2) uses `top` (layer 3), a higher layer: {}", at("mid/sub.rs", 3, "crate::t")),
            format!("`mid` uses `high`, which closes a circle (high → mid → high): {}", at("mid/mod.rs", 3, "crate::high::g")),
        ]
    );
    assert_eq!(
        crate::layers::check_code(&src, &[&["low"], &["mid", "high"], &["mid::*"], &["top", "crate"]]),
        [
            format!("`high` (layer 1) uses `mid::sub` (layer 2), a higher layer: {}", at("high.rs", 1, "crate::Deep")),
            format!("`mid::sub` (layer 2) uses `top` (layer 3), a higher layer: {}", at("mid/sub.rs", 3, "crate::t")),
            format!("`mid` uses `high`, which closes a circle (high → mid → high): {}", at("mid/mod.rs", 3, "crate::high::g")),
        ],
        "the test module's use of `top` is left out"
    );
    assert_eq!(
        crate::layers::check(&src, &[&["low", "top", "nope"], &["mid::*", "mid", "crate"]]),
        [
            format!("module `high` is in no layer of the table: {}", at("high.rs", 1, "crate::low")),
            format!("the layer table names `nope`, but `nope` is no module of {}", src.display()),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every rule's README says how to carry upstream policies over, under
/// `## Coming from Kyverno, Gatekeeper or Kubewarden`; every case path it
/// names (`tests/cases/...`, a `*` allowed in the file name) exists; and a
/// ```` ```yaml ```` block followed by a `Case:` or `Cases:` paragraph is
/// what those cases run: the rule reads the block and each named case's
/// `settings` the same, every setting, defaults included (the rule's
/// `effective_settings`, as `aigov` links it natively), so a block may
/// spell out a default the case leaves out, or leave out one the case
/// spells, but neither may give a key a value the other does not (under
/// `workload-security`'s `level`, a key's default is the level's). In that
/// paragraph a bare file name is one under `tests/cases/`. A block of
/// several YAML documents (`---`) shows several settings: each case must
/// then run one of them. A block the rule refuses is a problem, naming the
/// README, the block's line and the block. A block with no `Cases`
/// paragraph after it is not checked. That paragraph ends at a blank line
/// or at the next list item.
#[test]
fn every_readme_carries_upstream_policies_over_with_the_settings_its_cases_run() {
    use serde::Deserialize;

    const SECTION: &str = "## Coming from Kyverno, Gatekeeper or Kubewarden";
    fn wildcard(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                name.starts_with(head)
                    && (0..=name.len() - head.len())
                        .any(|i| name.is_char_boundary(head.len() + i) && wildcard(tail, &name[head.len() + i..]))
            }
        }
    }
    fn spans(prose: &str) -> Vec<String> {
        prose.split('`').skip(1).step_by(2).map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
    }

    let policies = root().join("policies");
    let mut problems = Vec::new();
    let mut rules: Vec<_> = std::fs::read_dir(&policies)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|name| name != "sdk" && name != "bundle")
        .collect();
    rules.sort();
    for rule in rules {
        let dir = policies.join(&rule);
        let cases_dir = dir.join("tests").join("cases");
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
        let Some(start) = readme.lines().position(|l| l.trim_end() == SECTION) else {
            problems.push(format!("{rule}: README.md has no `{SECTION}` section"));
            continue;
        };
        // The section's prose and its YAML blocks, in order; other fenced
        // blocks are skipped.
        enum Part {
            Prose(String),
            /// The block, and the line its fence opens on.
            Yaml(String, usize),
        }
        let mut parts = vec![Part::Prose(String::new())];
        // An open fence: whether it is YAML, its text, its indentation
        // (taken off each of its lines, as Markdown does in a list item, so
        // that an indented `---` still separates documents), and the line
        // it opens on.
        let mut fence: Option<(bool, String, usize, usize)> = None;
        for (number, line) in readme.lines().enumerate().skip(start + 1) {
            match &mut fence {
                None if line.starts_with("## ") => break,
                None if line.trim_start().starts_with("```") => {
                    fence = Some((line.trim() == "```yaml", String::new(), line.len() - line.trim_start_matches(' ').len(), number + 1));
                }
                None => {
                    if let Some(Part::Prose(text)) = parts.last_mut() {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
                Some((yaml, text, _, opens)) if line.trim() == "```" => {
                    if *yaml {
                        parts.push(Part::Yaml(std::mem::take(text), *opens));
                        parts.push(Part::Prose(String::new()));
                    }
                    fence = None;
                }
                Some((_, text, indent, _)) => {
                    let margin = line.len() - line.trim_start_matches(' ').len();
                    text.push_str(&line[margin.min(*indent)..]);
                    text.push('\n');
                }
            }
        }
        // Case files a path names, checking it names at least one.
        fn named(rule: &str, cases_dir: &Path, path: &str, problems: &mut Vec<String>) -> Vec<PathBuf> {
            let pattern = path.strip_prefix("tests/cases/").unwrap_or(path);
            let mut files: Vec<PathBuf> = std::fs::read_dir(cases_dir)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| !pattern.contains('/') && wildcard(pattern, &e.file_name().to_string_lossy()))
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            if files.is_empty() {
                problems.push(format!("{rule}: the README names `{path}`, which matches no case file"));
            }
            files
        }
        for (i, part) in parts.iter().enumerate() {
            match part {
                Part::Prose(text) => {
                    // A path to a case (`tests/cases/` itself names the folder).
                    for span in spans(text).iter().filter(|s| s.starts_with("tests/cases/") && !s.ends_with('/')) {
                        named(&rule, &cases_dir, span, &mut problems);
                    }
                }
                Part::Yaml(block, line) => {
                    let Some(Part::Prose(after)) = parts.get(i + 1) else { continue };
                    // The paragraph right after the block, ending at a blank line
                    // or at the next list item.
                    let paragraph = after
                        .trim_start_matches('\n')
                        .lines()
                        .map(str::trim)
                        .enumerate()
                        .take_while(|(n, l)| {
                            !l.is_empty() && (*n == 0 || !(l.starts_with("- ") || l.starts_with("* ") || l.starts_with('#')))
                        })
                        .map(|(_, l)| l)
                        .collect::<Vec<_>>()
                        .join("\n");
                    if !(paragraph.starts_with("Case:") || paragraph.starts_with("Cases:")) {
                        continue;
                    }
                    let Some(native) = aigov::run::native::rule(&rule) else {
                        problems.push(format!("{rule}: aigov links no rule of that name"));
                        continue;
                    };
                    let effective = |settings: &serde_json::Value| (native.effective_settings)(&settings.to_string());
                    // Each document of the block, with every setting as the
                    // rule reads it.
                    let (mut documents, mut refused) = (Vec::new(), false);
                    for de in serde_norway::Deserializer::from_str(block) {
                        match serde_json::Value::deserialize(de) {
                            Ok(serde_json::Value::Null) => {}
                            Ok(document @ serde_json::Value::Object(_)) => match effective(&document) {
                                Ok(read) => documents.push(read),
                                Err(e) => {
                                    refused = true;
                                    problems.push(format!(
                                        "{rule}: README.md line {line}, a settings block the rule refuses ({e}):\n{}",
                                        serde_norway::to_string(&document).unwrap_or_default()
                                    ));
                                }
                            },
                            Ok(other) => {
                                refused = true;
                                problems.push(format!("{rule}: README.md line {line}, a settings block is not a map: {other}"));
                            }
                            Err(e) => {
                                refused = true;
                                problems.push(format!("{rule}: README.md line {line}, a settings block is not valid YAML: {e}\n{block}"));
                            }
                        }
                    }
                    if refused {
                        continue;
                    }
                    if documents.is_empty() {
                        problems
                            .push(format!("{rule}: README.md line {line}, a settings block before a `Cases` line sets nothing:\n{block}"));
                        continue;
                    }
                    let cases = spans(&paragraph).into_iter().filter(|s| s.ends_with(".yaml")).collect::<Vec<_>>();
                    if cases.is_empty() {
                        problems.push(format!("{rule}: `{}` names no case file", paragraph.lines().next().unwrap_or_default()));
                    }
                    for path in cases {
                        for file in named(&rule, &cases_dir, &path, &mut problems) {
                            let name = file.file_name().unwrap().to_string_lossy().into_owned();
                            let case: serde_json::Value = std::fs::read_to_string(&file)
                                .map_err(|e| e.to_string())
                                .and_then(|t| serde_norway::from_str(&t).map_err(|e| e.to_string()))
                                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                            let settings = match &case["settings"] {
                                serde_json::Value::Null => serde_json::json!({}),
                                given => given.clone(),
                            };
                            let runs = match effective(&settings) {
                                Ok(runs) => runs,
                                Err(e) => {
                                    problems.push(format!(
                                        "{rule}: README.md line {line} names {name} after a settings block, but the rule refuses its settings: {e}"
                                    ));
                                    continue;
                                }
                            };
                            if documents.contains(&runs) {
                                continue;
                            }
                            // What the closest document sets otherwise than the case.
                            let differ = |read: &serde_json::Value| -> Vec<String> {
                                let (read, runs) = (read.as_object().unwrap(), runs.as_object().unwrap());
                                let show = |v: Option<&serde_json::Value>| v.map_or("absent".into(), ToString::to_string);
                                let mut keys: Vec<&String> = read.keys().chain(runs.keys()).collect();
                                keys.sort();
                                keys.dedup();
                                keys.into_iter()
                                    .filter(|key| read.get(*key) != runs.get(*key))
                                    .map(|key| {
                                        format!("`{key}` is {} in the block, {} in the case", show(read.get(key)), show(runs.get(key)))
                                    })
                                    .collect()
                            };
                            let closest = documents.iter().map(differ).min_by_key(Vec::len).unwrap_or_default();
                            let which =
                                if documents.len() > 1 { "the closest document of the settings block" } else { "the settings block" };
                            problems.push(format!(
                                "{rule}: {name} does not run {which} before it (README.md line {line}), as the rule reads them: {}",
                                closest.join(", ")
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "the upstream sections of the rules' READMEs:\n  {}", problems.join("\n  "));
}

/// Every rule's README says, under `## What the controllers build`, what
/// the controllers build from each kind the rule governs and how the rule
/// judges it (issue 42): a table whose first column names, among its
/// rows, every kind of the rule's metadata `rules` (a workload resource by
/// its kind, `Volcano Job` for `jobs.batch.volcano.sh`; any other
/// resource, and a subresource, as the resource is written there:
/// `namespaces`, `pods/exec`). The section comes before the upstream
/// section, and links `docs/controllers.md`, where the controllers are.
#[test]
fn every_readme_says_what_the_controllers_build_from_each_kind_it_governs() {
    use aigov_sdk::WorkloadKind;

    const SECTION: &str = "## What the controllers build";
    /// How the section names a resource of `group`.
    fn named(group: &str, resource: &str) -> String {
        match WorkloadKind::ALL.into_iter().find(|k| k.resource() == resource && k.group() == group) {
            Some(WorkloadKind::VolcanoJob) => "Volcano Job".into(),
            Some(k) => k.kind().into(),
            None => resource.into(),
        }
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for rule in aigov::run::native::RULES {
        let name = rule.metadata.name;
        let dir = root().join("policies").join(name);
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let metadata = Metadata::from_yaml(&std::fs::read_to_string(dir.join("metadata.yml")).unwrap()).unwrap();
        let lines: Vec<&str> = readme.lines().collect();
        let Some(start) = lines.iter().position(|l| l.trim_end() == SECTION) else {
            problems.push(format!("{name}: README.md has no `{SECTION}` section"));
            continue;
        };
        let upstream = lines.iter().position(|l| l.starts_with("## Coming from"));
        if upstream.is_some_and(|u| u < start) {
            problems.push(format!("{name}: `{SECTION}` comes after the upstream section"));
        }
        let section: Vec<&str> = lines[start + 1..].iter().take_while(|l| !l.starts_with("## ")).copied().collect();
        if !section.iter().any(|l| l.contains("../../docs/controllers.md")) {
            problems.push(format!("{name}: `{SECTION}` does not link ../../docs/controllers.md"));
        }
        // The first column of the section's table rows, past its header
        // and separator: kinds, separated by commas.
        let rows: Vec<&str> = section.iter().filter(|l| l.starts_with('|')).skip(2).copied().collect();
        let kinds: Vec<String> = rows
            .iter()
            .filter_map(|row| row.split('|').nth(1))
            .flat_map(|cell| cell.split(','))
            .map(|k| k.trim().trim_matches('`').trim().to_string())
            .collect();
        let mut wanted: Vec<String> = metadata
            .rules
            .iter()
            .flat_map(|r| r.resources.iter().flat_map(|res| r.api_groups.iter().map(move |g| named(g, res))))
            .collect();
        wanted.sort();
        wanted.dedup();
        for kind in wanted {
            checked += 1;
            if !kinds.contains(&kind) {
                problems.push(format!("{name}: `{SECTION}` has no row for `{kind}`, which its metadata.yml governs"));
            }
        }
    }
    assert!(problems.is_empty(), "the rules' READMEs:\n  {}", problems.join("\n  "));
    assert!(checked > 200, "only {checked} kinds checked");
}
