//! Unit tests of packaging: the generated policies, the bundle's, their
//! settings and defaults, the files aigov leaves alone once edited, and
//! ArtifactHub's.

use super::*;
use crate::dist::oci::{Blob, media_types};
use crate::run::artifact::ArtifactKind;
use serde_json::json;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aigov-package-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn files(version: &str) -> Vec<(String, String)> {
    vec![
        ("a/policy.yaml".to_string(), format!("policy {version}\n")),
        ("overlay/kustomization.yaml".to_string(), format!("overlay {version}\n")),
        ("policies.yml".to_string(), format!("server {version}\n")),
    ]
}

#[test]
fn edited_files_are_never_overwritten_without_force() {
    let dir = temp_dir("protect");
    let first = write_protected(&dir, &files("1"), false).unwrap();
    assert_eq!(first.written.len(), 3);
    assert!(first.kept.is_empty() && first.unchanged.is_empty());
    // The record is sha256sum's format.
    let record = std::fs::read_to_string(dir.join(RECORD)).unwrap();
    assert!(record.lines().all(|l| l.len() > 66 && &l[64..66] == "  "), "{record}");
    assert_eq!(read_record(&dir).unwrap().len(), 3);

    // Regenerating the same content changes nothing.
    let again = write_protected(&dir, &files("1"), false).unwrap();
    assert_eq!(again.unchanged.len(), 3);

    // Someone uncomments a rule in the overlay; a new version comes.
    std::fs::write(dir.join("overlay/kustomization.yaml"), "overlay 1, edited\n").unwrap();
    // And puts a file of their own where aigov would write.
    std::fs::remove_file(dir.join("policies.yml")).unwrap();
    let mut record = read_record(&dir).unwrap();
    record.remove("policies.yml");
    let text: String = record.iter().map(|(f, h)| format!("{h}  {f}\n")).collect();
    std::fs::write(dir.join(RECORD), text).unwrap();
    std::fs::write(dir.join("policies.yml"), "mine\n").unwrap();

    let second = write_protected(&dir, &files("2"), false).unwrap();
    assert_eq!(second.written, ["a/policy.yaml"], "the untouched file follows the new version");
    assert_eq!(
        second.kept,
        [
            Kept { path: "overlay/kustomization.yaml".into(), reason: KeptReason::Edited },
            Kept { path: "policies.yml".into(), reason: KeptReason::NotGenerated },
        ]
    );
    assert_eq!(std::fs::read_to_string(dir.join("a/policy.yaml")).unwrap(), "policy 2\n");
    assert_eq!(std::fs::read_to_string(dir.join("overlay/kustomization.yaml")).unwrap(), "overlay 1, edited\n");
    assert_eq!(std::fs::read_to_string(dir.join("policies.yml")).unwrap(), "mine\n");

    // Still edited the next time: the record kept the old checksum.
    let third = write_protected(&dir, &files("2"), false).unwrap();
    assert_eq!(third.kept.len(), 2);
    assert_eq!(third.unchanged, ["a/policy.yaml"]);

    // A file that already holds exactly the new content is adopted.
    std::fs::write(dir.join("policies.yml"), "server 2\n").unwrap();
    let adopted = write_protected(&dir, &files("2"), false).unwrap();
    assert_eq!(adopted.unchanged, ["a/policy.yaml", "policies.yml"]);

    // --force overwrites, and records.
    let forced = write_protected(&dir, &files("3"), true).unwrap();
    assert_eq!(forced.written.len(), 3);
    assert!(forced.kept.is_empty());
    assert_eq!(std::fs::read_to_string(dir.join("overlay/kustomization.yaml")).unwrap(), "overlay 3\n");
    assert_eq!(write_protected(&dir, &files("4"), false).unwrap().written.len(), 3);

    // A damaged record is an error, not a licence to overwrite.
    std::fs::write(dir.join(RECORD), "garbage\n").unwrap();
    assert!(write_protected(&dir, &files("5"), false).unwrap_err().to_string().contains("is not `<sha256>  <file>`"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn packaged(rule: &str) -> Packaged {
    let policy = native::rule(rule).unwrap();
    let yml = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies").join(rule).join("metadata.yml")).unwrap();
    let form = |kind, media_type| OciArtifact {
        kind,
        name: rule.into(),
        version: policy.metadata.version.into(),
        manifest: format!("{rule} {kind:?}").into_bytes(),
        config: Blob { media_type, data: b"{}".to_vec() },
        layer: Blob { media_type, data: Vec::new() },
    };
    Packaged {
        name: rule.into(),
        metadata: Metadata::from_yaml(&yml).unwrap(),
        module: form(ArtifactKind::Module, media_types::KUBEWARDEN_LAYER),
        component: form(ArtifactKind::Component, media_types::WASM_LAYER),
        settings: (policy.default_settings)(),
        mode: None,
    }
}

#[test]
fn resources_a_rule_reads_only_under_some_settings_are_listed_only_then() {
    let resources = |rule: &str, settings: &Value| -> Vec<String> {
        let r = packaged(rule);
        webhook_rules(&r.name, &r.metadata.rules, settings).0.into_iter().flat_map(|r| r.resources).collect()
    };
    let r = packaged("model-provenance");
    let defaults = resources("model-provenance", &r.settings);
    assert!(
        !defaults.iter().any(|x| ["pods", "leaderworkersets", "rayjobs", "rayservices", "jobsets"].contains(&x.as_str())),
        "{defaults:?}"
    );
    let mut with_pods = r.settings.clone();
    with_pods["kinds"] = json!(["Deployment", "Pod", "JobSet"]);
    let listed = resources("model-provenance", &with_pods);
    assert!(
        listed.iter().any(|x| x == "pods") && listed.iter().any(|x| x == "jobsets") && !listed.iter().any(|x| x == "rayjobs"),
        "{listed:?}"
    );
    let r = packaged("gpu-class-by-namespace");
    assert!(!resources("gpu-class-by-namespace", &r.settings).iter().any(|x| x.starts_with("resourceclaim")));
    let mut admin = r.settings.clone();
    admin["adminAccess"] = json!({"groups": ["platform-admins"]});
    let listed = resources("gpu-class-by-namespace", &admin);
    assert!(listed.iter().any(|x| x == "resourceclaims") && listed.iter().any(|x| x == "resourceclaimtemplates"), "{listed:?}");
    let r = packaged("workload-classification");
    assert!(!resources("workload-classification", &r.settings).iter().any(|x| x == "namespaces"));
    let mut labelled = r.settings.clone();
    labelled["namespaceLabels"] = json!({"team": []});
    assert!(resources("workload-classification", &labelled).iter().any(|x| x == "namespaces"));
}

#[test]
fn exec_guard_lists_portforward_and_proxy_only_when_its_setting_guards_them() {
    let r = packaged("exec-guard");
    for sub in ["pods/portforward", "pods/proxy"] {
        assert!(r.metadata.rules[0].resources.iter().any(|x| x == sub), "the metadata lists {sub}");
    }
    let (rules, dropped) = webhook_rules(&r.name, &r.metadata.rules, &r.settings);
    assert_eq!(rules[0].resources, ["pods/exec", "pods/attach"]);
    assert_eq!(
        dropped,
        [
            Dropped { resource: "pods/portforward".into(), when: "`guardPortForward: true`".into() },
            Dropped { resource: "pods/proxy".into(), when: "`guardPortForward: true`".into() },
        ]
    );
    let mut guarded = r.settings.clone();
    guarded["guardPortForward"] = Value::Bool(true);
    let (rules, dropped) = webhook_rules(&r.name, &r.metadata.rules, &guarded);
    assert_eq!(rules, r.metadata.rules);
    assert!(dropped.is_empty());

    let text = cluster_admission_policy(&r, "registry.example.com/aigov", &excluded_namespaces(&["kube-system".into()]).unwrap()).unwrap();
    assert!(
        text.contains("# `pods/portforward` is left out of the rules below: the rule acts on it only with `guardPortForward: true`."),
        "{text}"
    );
    assert!(
        text.contains("# `pods/proxy` is left out of the rules below: the rule acts on it only with `guardPortForward: true`."),
        "{text}"
    );
    let policy: Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(policy["spec"]["rules"][0]["resources"], json!(["pods/exec", "pods/attach"]));
    assert_eq!(policy["spec"]["settings"], json!({}), "the defaults are not written");
    assert!(text.contains("\n  #   guardPortForward: false\n"), "the default is listed: {text}");

    // A rule a setting would leave with no resource disappears, and
    // other rules are untouched.
    let only = vec![aigov_metadata::Rule { resources: vec!["pods/portforward".into()], ..r.metadata.rules[0].clone() }];
    assert!(webhook_rules("exec-guard", &only, &r.settings).0.is_empty());
    assert_eq!(webhook_rules("another-rule", &only, &r.settings).0, only);
}

#[test]
fn regenerating_keeps_the_rules_the_overlay_turns_on() {
    let dir = temp_dir("overlay");
    let path = dir.join(OVERLAY);
    assert!(enabled_in_overlay(&path).unwrap().is_empty(), "no overlay yet");
    let rules = [packaged("exec-guard"), packaged("gpu-runtime-class"), packaged("opencost-labels")];
    let text = overlay(&rules, &["opencost-labels".into(), "exec-guard".into()]);
    write(&path, &text).unwrap();
    assert_eq!(enabled_in_overlay(&path).unwrap(), ["exec-guard", "opencost-labels"]);
    // Lines a person writes count too; comments and unknown bases do not.
    write(&path, "resources:\n  - ../gpu-runtime-class/\n# - ../exec-guard\n- ../my-own-base\n").unwrap();
    assert_eq!(enabled_in_overlay(&path).unwrap(), ["gpu-runtime-class"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn context_aware_entries_are_granted_their_host_calls_and_no_others() {
    let rules: Vec<Packaged> = native::names().map(packaged).collect();
    let names: Vec<String> = rules.iter().map(|r| r.name.clone()).collect();
    let config: Value =
        serde_norway::from_str(&policy_server_config(&rules, &packaged_bundle(), &names, "r.example.com").unwrap()).unwrap();
    let mut granted = 0;
    for (name, entry) in config.as_object().unwrap() {
        let reads = entry.get("contextAwareResources").is_some_and(|c| !c.as_array().unwrap().is_empty());
        let calls: Vec<&str> =
            entry.get("hostCapabilities").map(|c| c.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()).unwrap_or_default();
        if !reads {
            assert!(calls.is_empty(), "{name} reads nothing, yet is granted {calls:?}");
            continue;
        }
        granted += 1;
        assert!(!calls.is_empty(), "{name} reads the cluster, but policy-server would refuse its every call: {entry:?}");
        assert!(calls.iter().all(|c| aigov_metadata::KUBERNETES_CAPABILITIES.contains(c) && *c != "kubernetes/can_i"), "{name}: {calls:?}");
        let declared = rules
            .iter()
            .find(|r| r.name == *name)
            .map_or_else(|| packaged_bundle().metadata.host_capabilities, |r| r.metadata.host_capabilities.clone());
        assert_eq!(calls, declared, "{name}: policies.yml grants what metadata.yml declares");
    }
    assert!(granted >= 16, "the fifteen context-aware rules and the bundle: {granted}");
    let bundle = &config["aigov-bundle"]["hostCapabilities"];
    assert_eq!(bundle.as_array().unwrap().len(), 2, "get_resource and list_resources_by_namespace: {bundle:?}");
}

#[test]
fn mutating_rules_say_so_in_the_policy_and_the_policy_server_config() {
    let rules = [packaged("gpu-runtime-class"), packaged("owner-label"), packaged("gpu-node-avoidance"), packaged("gpu-runtime-defaults")];
    let config: Value = serde_norway::from_str(&policy_server_config(&rules, &packaged_bundle(), &[], "r.example.com").unwrap()).unwrap();
    assert!(config.get("aigov-bundle").is_none(), "the bundle is listed with no rule turned on");
    for r in &rules {
        let mutating = r.name != "gpu-runtime-class";
        assert_eq!(r.metadata.mutating, mutating, "{}: metadata.yml", r.name);
        let policy: Value = serde_norway::from_str(&cluster_admission_policy(r, "r.example.com", &[]).unwrap()).unwrap();
        assert_eq!(policy["spec"]["mutating"], Value::Bool(mutating), "{}: ClusterAdmissionPolicy", r.name);
        assert_eq!(config[r.name.as_str()]["allowedToMutate"], Value::Bool(mutating), "{}: policies.yml", r.name);
    }
}

#[test]
fn artifacthub_describes_each_rule_and_the_bundle() {
    let rule = packaged("exec-guard");
    let bundle = packaged_bundle();
    for (r, kinds_include, mutating) in [(&rule, "Pod/exec", "false"), (&bundle, "RayCluster", "true")] {
        let text = artifacthub(r, "r.example.com/aigov/", "2026-11-25T00:00:00Z").unwrap();
        let package: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(package["name"], r.name.as_str());
        assert_eq!(package["version"], r.module.version.as_str());
        assert_eq!(package["createdAt"], "2026-11-25T00:00:00Z");
        assert_eq!(package["containersImages"][0]["image"], format!("r.example.com/aigov/{}:{}", r.name, r.module.tag()).as_str());
        // (`readme` is the annotated artifact's usage, which these
        // packaged forms lack: tests/suite/cli.rs checks it on the real ones.)
        for key in ["displayName", "description", "license", "homeURL"] {
            assert!(!package[key].as_str().unwrap_or_default().is_empty(), "{}: {key} is empty\n{text}", r.name);
        }
        let notes = &package["annotations"];
        assert_eq!(notes["kubewarden/mutation"], mutating, "{text}");
        assert!(notes["kubewarden/resources"].as_str().unwrap().split(", ").any(|k| k == kinds_include), "{text}");
        let listed: Vec<aigov_metadata::Rule> = serde_norway::from_str(notes["kubewarden/rules"].as_str().unwrap()).unwrap();
        assert_eq!(listed, r.metadata.rules, "{text}");
    }
}

fn packaged_bundle() -> Packaged {
    let parts: Vec<Metadata> = native::names().map(|r| packaged(r).metadata).collect();
    let version = native::BUNDLE.metadata.version;
    let form = |kind, media_type| OciArtifact {
        kind,
        name: "aigov-bundle".into(),
        version: version.into(),
        manifest: format!("bundle {kind:?}").into_bytes(),
        config: Blob { media_type, data: b"{}".to_vec() },
        layer: Blob { media_type, data: Vec::new() },
    };
    Packaged {
        name: "aigov-bundle".into(),
        metadata: Metadata::bundle(&parts, version),
        module: form(ArtifactKind::Module, media_types::KUBEWARDEN_LAYER),
        component: form(ArtifactKind::Component, media_types::WASM_LAYER),
        settings: (native::BUNDLE.default_settings)(),
        mode: None,
    }
}

/// Every (group, version, resource, operation) a list of webhook rules
/// matches, wildcards taken as written.
fn matched(rules: &[aigov_metadata::Rule]) -> std::collections::BTreeSet<(String, String, String, &'static str)> {
    let mut out = std::collections::BTreeSet::new();
    for r in rules {
        for g in &r.api_groups {
            for v in &r.api_versions {
                for res in &r.resources {
                    for op in &r.operations {
                        out.insert((g.clone(), v.clone(), res.clone(), op.as_str()));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn the_bundle_policy_runs_the_enabled_rules_and_receives_exactly_their_requests() {
    // With the settings `load` gives them (examples over defaults where
    // a rule has no safe default).
    let rules: Vec<Packaged> = native::names()
        .map(|n| Packaged { settings: native::deployable_settings(native::rule(n).unwrap()).unwrap(), ..packaged(n) })
        .collect();
    let bundle = packaged_bundle();
    let check = |enable: &[&str]| {
        let enable: Vec<String> = enable.iter().map(|s| s.to_string()).collect();
        let on: Vec<&Packaged> = rules.iter().filter(|r| enable.contains(&r.name)).collect();
        let text = bundle_cluster_admission_policy(&bundle, &rules, &enable, "r.example.com/aigov", &["kube-system".into()]).unwrap();
        let policy: Value = serde_norway::from_str(&text).unwrap();
        let spec = &policy["spec"];
        assert_eq!(policy["metadata"]["name"], "aigov-bundle");
        assert_eq!(spec["module"], bundle.module_url("r.example.com/aigov"));
        assert!(spec["module"].as_str().unwrap().starts_with("registry://r.example.com/aigov/aigov-bundle:v"), "{text}");

        // Its settings turn on exactly those rules, each with its own
        // policy's settings, and the bundle accepts them.
        let settings = spec["settings"]["rules"].as_object().unwrap();
        assert_eq!(settings.keys().collect::<Vec<_>>(), on.iter().map(|r| &r.name).collect::<Vec<_>>());
        for r in &on {
            assert_eq!(settings[&r.name], r.written_settings(), "{}", r.name);
            let example = native::example_settings(&r.name).is_some();
            assert_eq!(settings[&r.name] == json!({}), !example, "{}: only example lists are written", r.name);
        }
        let accepted = (native::BUNDLE.validate_settings)(&serde_json::to_vec(&spec["settings"]).unwrap());
        assert!(accepted.valid, "the bundle refuses its generated settings: {:?}", accepted.message);

        // Its webhook rules match exactly what the rules' own policies match.
        let own: Vec<aigov_metadata::Rule> = on.iter().flat_map(|r| webhook_rules(&r.name, &r.metadata.rules, &r.settings).0).collect();
        let webhook: Vec<aigov_metadata::Rule> = serde_json::from_value(spec["rules"].clone()).unwrap();
        assert_eq!(matched(&webhook), matched(&own), "{text}");
        assert!(webhook.len() <= own.len());
        assert_eq!(spec["mutating"], Value::Bool(on.iter().any(|r| r.metadata.mutating)), "{text}");
        let reads: Vec<&aigov_metadata::ContextAwareResource> = on.iter().flat_map(|r| &r.metadata.context_aware_resources).collect();
        assert_eq!(
            spec.get("contextAwareResources").map_or(0, |c| c.as_array().unwrap().len()),
            reads.iter().collect::<std::collections::BTreeSet<_>>().len(),
            "{text}"
        );
        assert!(spec.get("namespaceSelector").is_some(), "{text}");

        // policies.yml serves the same bundle with the same settings,
        // beside every rule of its own.
        let config: Value =
            serde_norway::from_str(&policy_server_config(&rules, &bundle, &enable, "r.example.com/aigov").unwrap()).unwrap();
        let served = &config["aigov-bundle"];
        assert_eq!(served["module"], spec["module"]);
        assert_eq!(served["settings"], spec["settings"]);
        assert_eq!(served["allowedToMutate"], spec["mutating"]);
        assert_eq!(served.get("contextAwareResources"), spec.get("contextAwareResources"));
        assert_eq!(config.as_object().unwrap().len(), rules.len() + 1);
        text
    };
    let text = check(&["owner-label", "exec-guard"]);
    assert!(
        text.contains("# `pods/portforward` is left out of the rules below: exec-guard acts on it only with `guardPortForward: true`."),
        "{text}"
    );
    assert!(text.contains("for the rules turned on: exec-guard, owner-label.\n"), "{text}");
    check(&["gpu-runtime-class"]);
    // The whole catalogue: every rule's deployable settings compose.
    let all: Vec<&str> = native::names().collect();
    check(&all);
    assert!(bundle_cluster_admission_policy(&bundle, &rules, &[], "r", &[]).is_err(), "no rule on, no policy");
}

/// The commented defaults after a policy's settings: every setting the
/// policy does not write, at its default, and uncommented as the
/// comment says, in place, they join the written ones: every setting,
/// each once.
#[test]
fn every_default_is_listed_after_the_settings_and_uncomments_in_place() {
    for name in native::names() {
        let rule = native::rule(name).unwrap();
        let r = Packaged { settings: native::deployable_settings(rule).unwrap(), ..packaged(name) };
        let text = cluster_admission_policy(&r, "r.example.com", &[]).unwrap();
        let listed: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("  #   ")).collect();
        let listed: Value = serde_norway::from_str(&listed.join("\n")).unwrap();
        let policy: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(policy["spec"]["settings"], r.written_settings(), "{name}");
        // Written and listed, every key once.
        let mut both = listed.as_object().unwrap().clone();
        for (key, value) in r.written_settings().as_object().unwrap() {
            assert!(both.insert(key.clone(), (rule.default_settings)()[key].clone()).is_none(), "{name}: `{key}` written and listed");
            assert_ne!(value, &(rule.default_settings)()[key], "{name}: `{key}` written at its default");
        }
        assert_eq!(Value::Object(both), (rule.default_settings)(), "{name}:\n{text}");
        // Uncommented in place, the policy holds every setting.
        let uncommented = text.replace("  settings: {}\n", "  settings:\n").replace("\n  #   ", "\n    ");
        let policy: Value = serde_norway::from_str(&uncommented).unwrap();
        let mut every = (rule.default_settings)();
        every.as_object_mut().unwrap().extend(r.written_settings().as_object().unwrap().clone());
        assert_eq!(policy["spec"]["settings"], every, "{name}:\n{uncommented}");
    }
}

#[test]
fn merged_webhook_rules_match_what_the_rules_did() {
    use aigov_metadata::{Operation, Rule};
    let rule = |res: &[&str], ops: &[Operation]| Rule {
        api_groups: vec!["".into()],
        api_versions: vec!["v1".into()],
        resources: res.iter().map(|s| s.to_string()).collect(),
        operations: ops.to_vec(),
    };
    let rules = vec![
        rule(&["pods"], &[Operation::Create, Operation::Update]),
        rule(&["pods/exec"], &[Operation::Connect]),
        rule(&["services", "pods"], &[Operation::Update, Operation::Create]),
        rule(&["*"], &[Operation::Create, Operation::Update]),
    ];
    let merged = merge_rules(rules.clone());
    assert_eq!(merged.len(), 3, "{merged:?}");
    assert_eq!(merged[0].resources, ["pods", "services"]);
    assert_eq!(merged[2].resources, ["*"], "a wildcard list stays alone");
    assert_eq!(matched(&merged), matched(&rules));
}

#[test]
fn namespace_exclusions() {
    assert_eq!(
        excluded_namespaces(&["kube-system".into(), "".into(), "kube-system".into(), " gpu-operator ".into()]).unwrap(),
        ["kube-system", "gpu-operator"]
    );
    for bad in ["Kube-System", "-x", "a b", "ns]"] {
        assert!(excluded_namespaces(&[bad.into()]).is_err(), "{bad}");
    }
    let r = packaged("gpu-runtime-class");
    let none = cluster_admission_policy(&r, "r.example.com", &[]).unwrap();
    let policy: Value = serde_norway::from_str(&none).unwrap();
    assert!(policy["spec"].get("namespaceSelector").is_none());
    assert!(none.contains("# namespaceSelector: none"));
}

#[test]
fn the_bundle_carries_the_settings_a_team_edited_in_a_rules_own_policy() {
    let dir = temp_dir("edited");
    let mut rules = vec![packaged("gpu-runtime-class"), packaged("exec-guard")];
    // gpu-runtime-class's policy as aigov wrote it, then edited; exec-guard's untouched.
    let written = |r: &Packaged| cluster_admission_policy(r, "r.example.com", &[]).unwrap();
    let edited = written(&rules[0]).replace("settings: {}", "settings:\n    exemptNamespaces: [research]\n    mode: audit");
    assert_ne!(edited, written(&rules[0]), "the edit took");
    write(&dir.join(edited::policy_path("gpu-runtime-class")), &edited).unwrap();
    write(&dir.join(edited::policy_path("exec-guard")), &written(&rules[1])).unwrap();
    assert_eq!(edited::carry(&dir, &mut rules).unwrap(), ["gpu-runtime-class"]);
    assert_eq!(rules[0].written_settings(), json!({"exemptNamespaces": ["research"], "mode": "audit"}));
    assert_eq!(rules[1].written_settings(), json!({}));
    let bundle = bundle_cluster_admission_policy(&packaged_bundle(), &rules, &["gpu-runtime-class".into()], "r.example.com", &[]).unwrap();
    let policy: Value = serde_norway::from_str(&bundle).unwrap();
    assert_eq!(policy["spec"]["settings"]["rules"]["gpu-runtime-class"], json!({"exemptNamespaces": ["research"], "mode": "audit"}));

    // Settings the rule refuses stop the regeneration, naming the file.
    write(&dir.join(edited::policy_path("gpu-runtime-class")), &edited.replace("mode: audit", "mode: monitor")).unwrap();
    let e = format!("{:#}", edited::carry(&dir, &mut rules).unwrap_err());
    assert!(e.contains("gpu-runtime-class/cluster-admission-policy.yaml: `gpu-runtime-class` refuses its spec.settings"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
