//! No input makes a guest trap. Every rule, in every form (native, waPC
//! module, component), gets garbage, wrong types, deep nesting, huge arrays
//! and unknown kinds, and must answer with a verdict: malformed input is
//! rejected with code 400 and a message, the rest is evaluated.
//!
//! Needs `make artifacts` first (like the case tests).

use crate::common::artifacts;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use aigov::run::artifact::{Evaluator, component_path, module_path, payload};
use aigov::run::cluster::FixtureCluster;
use aigov::run::wapc::WapcModule;
use aigov_sdk::{SettingsResponse, ValidationResponse};
use serde_json::json;

struct Rule {
    name: &'static str,
    forms: Vec<Evaluator>,
    module: WapcModule,
    /// Valid settings: the defaults (`{}`), or for a rule whose defaults are
    /// refused (trusted-sources has no default allowlist) the demo's, from
    /// `host-test/settings/<rule>.yaml`.
    settings: String,
    /// Whether the defaults are refused.
    needs_settings: bool,
}

/// Every rule in its three forms, compiled once for the whole file.
fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let engine = aigov::run::engine::new_engine().unwrap();
        aigov::run::native::RULES
            .iter()
            .map(|native| {
                let name = native.metadata.name;
                let module_file = module_path(&artifacts(), name);
                let component_file = component_path(&artifacts(), name);
                assert!(module_file.is_file(), "{} is missing: run `make artifacts` first", module_file.display());
                let module_bytes = std::fs::read(&module_file).unwrap();
                let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("settings").join(format!("{name}.yaml"));
                let needs_settings = !(native.validate_settings)(b"{}").valid;
                let settings = if needs_settings {
                    assert!(demo.is_file(), "{name} refuses its defaults, so {} must hold valid settings", demo.display());
                    aigov::run::settings::read_settings(&demo).unwrap()
                } else {
                    "{}".to_string()
                };
                Rule {
                    name,
                    settings,
                    needs_settings,
                    forms: vec![
                        Evaluator::native(native),
                        Evaluator::load(&engine, &module_bytes, name).unwrap(),
                        Evaluator::from_file(&engine, &component_file).unwrap(),
                    ],
                    module: WapcModule::new(&engine, &module_bytes).unwrap(),
                }
            })
            .collect()
    })
}

fn cluster() -> Arc<FixtureCluster> {
    Arc::new(FixtureCluster::empty())
}

/// Evaluates on every form; none may fail (a trap is an `Err`). Returns the
/// answers in form order.
fn all_forms(rule: &Rule, request: &str, settings: &str) -> Vec<ValidationResponse> {
    rule.forms
        .iter()
        .map(|f| {
            f.validate(request, settings, &cluster())
                .unwrap_or_else(|e| panic!("{} ({}) failed on {:.200}: {e:#}", rule.name, f.form(), request))
        })
        .collect()
}

fn assert_rejected_400(rule: &Rule, answers: &[ValidationResponse], what: &str) {
    for (form, a) in rule.forms.iter().zip(answers) {
        assert!(!a.accepted, "{} ({}) admitted {what}", rule.name, form.form());
        assert_eq!(a.code, Some(400), "{} ({}) on {what}: {a:?}", rule.name, form.form());
        assert!(a.message.as_deref().is_some_and(|m| !m.is_empty()), "{} ({}) on {what}: no message", rule.name, form.form());
    }
}

fn assert_agree(rule: &Rule, answers: &[ValidationResponse], what: &str) {
    for (form, a) in rule.forms.iter().zip(answers).skip(1) {
        assert_eq!(a, &answers[0], "{} {} disagrees with native on {what}", rule.name, form.form());
    }
}

fn request(kind: serde_json::Value, object: serde_json::Value) -> String {
    json!({"uid": "u", "kind": kind, "operation": "CREATE", "namespace": "ml",
           "userInfo": {"username": "u", "groups": []}, "object": object})
    .to_string()
}

fn pod_gvk() -> serde_json::Value {
    json!({"group": "", "version": "v1", "kind": "Pod"})
}

#[test]
fn garbage_requests_are_rejected_with_400() {
    let garbage = [
        "",
        "not json",
        "{",
        "[]",
        "null",
        "42",
        "\"a string\"",
        "{\"kind\": 5}",
        "{\"operation\":\"CREATE\"}",
        "{\"kind\":{\"kind\":\"Pod\"},\"operation\":\"PATCH\"}",
    ];
    for rule in rules() {
        for g in garbage {
            let answers = all_forms(rule, g, &rule.settings);
            assert_rejected_400(rule, &answers, &format!("{g:?}"));
        }
    }
}

#[test]
fn wrong_types_in_the_header_get_the_same_answer_everywhere() {
    let cases = [
        json!({"kind": "Pod", "operation": "CREATE"}),
        json!({"kind": {"kind": "Pod"}, "operation": 1}),
        json!({"kind": {"kind": "Pod"}, "operation": "CREATE", "userInfo": {"groups": "admins"}}),
        json!({"kind": {"kind": "Pod"}, "operation": "CREATE", "namespace": ["ml"]}),
        json!({"kind": {"kind": "Pod"}, "operation": "CONNECT", "subResource": 7}),
    ];
    for rule in rules() {
        for c in &cases {
            let answers = all_forms(rule, &c.to_string(), &rule.settings);
            assert_rejected_400(rule, &answers, &c.to_string());
            assert_agree(rule, &answers, &c.to_string());
        }
    }
}

#[test]
fn wrong_types_in_objects_never_trap() {
    let objects = [
        json!("a string"),
        json!([1, 2, 3]),
        json!(42),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": "m", "spec": {}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": ["a"]}, "spec": {}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": {"x": 1}}}}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [null, 5]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"tolerations": "all", "runtimeClassName": 3}}),
    ];
    for rule in rules() {
        for o in &objects {
            let req = request(pod_gvk(), o.clone());
            let answers = all_forms(rule, &req, &rule.settings);
            assert_agree(rule, &answers, &o.to_string());
            for a in &answers {
                assert!(a.accepted || a.code == Some(400) || a.message.is_some(), "{}: {a:?}", rule.name);
            }
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let req = format!(
        r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE","object":{{"apiVersion":"v1","kind":"Pod","spec":{{"containers":{deep}}}}}}}"#
    );
    let deep_settings = format!(r#"{{"x":{deep}}}"#);
    for rule in rules() {
        // Rules that do not govern Pods admit without reading the object;
        // rules that read it refuse it. Nothing overflows a stack.
        let answers = all_forms(rule, &req, &rule.settings);
        assert_agree(rule, &answers, "100k-deep nesting");
        if !answers[0].accepted || rule.name == "gpu-runtime-class" {
            assert_rejected_400(rule, &answers, "100k-deep nesting");
        }
        for f in &rule.forms {
            let s = f.validate_settings(&deep_settings).unwrap();
            assert!(!s.valid, "{} accepted deeply nested settings", rule.name);
        }
    }
}

#[test]
fn nesting_at_the_parser_limit_fits_the_guest_stack() {
    // serde_json refuses nesting deeper than 128; anything shallower is
    // parsed (or skipped) recursively, in whichever field it hides. The
    // guests' shadow stack (`WASM_STACK` in the Makefile) must hold that in
    // every position, whatever the rule does with it.
    let deep = |depth: usize| format!("{}{}{}", "[".repeat(depth), "{\"k\":1}", "]".repeat(depth));
    let d = deep(126);
    let pod = |spec_extra: &str, container_extra: &str, meta_extra: &str| {
        format!(
            r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"ml","operation":"CREATE","userInfo":{{"username":"u"}},"extra":{d},"object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","namespace":"ml","labels":{{"opencost.io/team":"t","opencost.io/workload-category":"training"}}{meta_extra}}},"spec":{{"runtimeClassName":"nvidia","tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],"containers":[{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}{container_extra}}}]{spec_extra}}}}}}}"#
        )
    };
    let placements = [
        ("an unknown field of the spec", pod(&format!(r#","affinity":{d}"#), "", "")),
        ("an unknown field of a container", pod("", &format!(r#","env":{d}"#), "")),
        ("the metadata", pod("", "", &format!(r#","managedFields":{d}"#))),
    ];
    let ray = format!(
        r#"{{"uid":"u","kind":{{"group":"ray.io","version":"v1","kind":"RayCluster"}},"resource":{{"group":"ray.io","version":"v1","resource":"rayclusters"}},"namespace":"ml","operation":"CREATE","userInfo":{{"username":"u"}},"object":{{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{{"name":"r","namespace":"ml"}},"spec":{{"headGroupSpec":{{"rayStartParams":{d},"template":{{"spec":{{"containers":[{{"name":"h"}}]}}}}}},"workerGroupSpecs":[{{"groupName":"w","maxReplicas":2,"minReplicas":0,"replicas":1,"template":{{"spec":{{"containers":[{{"name":"w","args":{d}}}]}}}}}}]}}}}}}"#
    );
    for rule in rules() {
        for (place, req) in placements.iter().map(|(p, r)| (*p, r.clone())).chain([("a Ray worker", ray.clone())]) {
            let answers = all_forms(rule, &req, &rule.settings);
            assert_agree(rule, &answers, &format!("126-deep nesting in {place}"));
        }
        let settings = format!(r#"{{"mode":"audit","exemptNamespaces":{d}}}"#);
        for f in &rule.forms {
            let s = f.validate_settings(&settings).unwrap();
            assert!(!s.valid, "{} accepted nested exemptNamespaces", rule.name);
        }
    }
}

#[test]
fn huge_arrays_are_evaluated() {
    // 10,000 GPU containers, 10,000 tolerations, 10,000 labels: about 1.5 MB,
    // near the API server's request limit.
    let containers: Vec<_> =
        (0..10_000).map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"nvidia.com/gpu": "1"}}})).collect();
    let tolerations: Vec<_> = (0..10_000).map(|i| json!({"key": format!("k{i}"), "operator": "Exists"})).collect();
    let labels: serde_json::Map<_, _> = (0..10_000).map(|i| (format!("l{i}"), json!("v"))).collect();
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "huge", "namespace": "ml", "labels": labels},
        "spec": {"containers": containers, "tolerations": tolerations}});
    let req = request(pod_gvk(), object);
    assert!(req.len() > 1_000_000);
    for rule in rules() {
        let answers = all_forms(rule, &req, &rule.settings);
        assert_agree(rule, &answers, "a pod with 10,000 containers");
    }
}

#[test]
fn unknown_kinds_and_empty_objects_are_admitted() {
    for rule in rules() {
        for (kind, object) in [
            (json!({"group": "", "version": "v1", "kind": "ConfigMap"}), json!({"data": {"spec": "x"}})),
            (json!({"group": "example.com", "version": "v9", "kind": "Widget"}), json!({"spec": {"template": 5}})),
            (pod_gvk(), json!(null)),
        ] {
            let answers = all_forms(rule, &request(kind.clone(), object.clone()), &rule.settings);
            assert_agree(rule, &answers, &kind.to_string());
            assert!(answers[0].accepted, "{} rejected {kind} {object}: {:?}", rule.name, answers[0]);
        }
    }
}

#[test]
fn garbage_settings_are_refused_everywhere() {
    for rule in rules() {
        for s in ["", "[", "5", "[]", "\"x\"", r#"{"mode": 1}"#, r#"{"noSuchSetting": true}"#] {
            let answers: Vec<SettingsResponse> = rule.forms.iter().map(|f| f.validate_settings(s).unwrap()).collect();
            for a in &answers {
                assert!(!a.valid && a.message.is_some(), "{} accepted settings {s:?}", rule.name);
            }
            let req = request(pod_gvk(), json!({"apiVersion": "v1", "kind": "Pod", "spec": {}}));
            if serde_json::from_str::<serde_json::Value>(s).is_ok() {
                let answers = all_forms(rule, &req, s);
                assert_rejected_400(rule, &answers, &format!("settings {s:?}"));
                assert!(answers[0].message.as_deref().unwrap().starts_with("invalid settings: "));
            }
        }
    }
}

#[test]
fn raw_wapc_payloads_never_trap() {
    let bytes: [&[u8]; 5] = [b"", b"\xff\xfe\xfd", b"{\"request\":", b"{\"settings\":{}}", &[0u8; 4096]];
    for rule in rules() {
        for b in bytes {
            let mut instance = rule.module.instantiate(Arc::new(aigov_sdk::NoCluster)).unwrap();
            let out = instance.call("validate", b).unwrap_or_else(|e| panic!("{} trapped on {b:?}: {e}", rule.name));
            let r: ValidationResponse = serde_json::from_slice(&out).unwrap();
            assert!(!r.accepted && r.code == Some(400), "{}: {r:?}", rule.name);
            let out = instance.call("validate_settings", b).unwrap();
            let s: SettingsResponse = serde_json::from_slice(&out).unwrap();
            assert!(!s.valid);
        }
        // An operation the module does not have is a guest error, not a trap.
        let mut instance = rule.module.instantiate(Arc::new(aigov_sdk::NoCluster)).unwrap();
        assert!(instance.call("no_such_operation", b"{}").is_err());
        // The instance survives and still answers.
        let out = instance.call("protocol_version", b"").unwrap();
        assert_eq!(out, b"\"v1\"");
        // Kubewarden's payload shape with an explicit null settings is fine
        // (null is the defaults: a rule that refuses its defaults says so).
        let ok = instance.call("validate", payload(&request(pod_gvk(), json!(null)), "null").as_bytes()).unwrap();
        let r: ValidationResponse = serde_json::from_slice(&ok).unwrap();
        if rule.needs_settings {
            assert!(!r.accepted && r.code == Some(400), "{}: {r:?}", rule.name);
            assert!(r.message.as_deref().is_some_and(|m| m.starts_with("invalid settings: setting `")), "{}: {r:?}", rule.name);
        } else {
            assert!(r.accepted, "{}: {r:?}", rule.name);
        }
        let ok = instance.call("validate", payload(&request(pod_gvk(), json!(null)), &rule.settings).as_bytes()).unwrap();
        let r: ValidationResponse = serde_json::from_slice(&ok).unwrap();
        assert!(r.accepted, "{}: {r:?}", rule.name);
    }
}

/// The waPC payload's UTF-8 check (sixteen bytes at a time in the guests,
/// with simd128): a byte sequence that is not UTF-8 is refused wherever it
/// stands, past ASCII runs of any length, and natively and as a module
/// alike; multi-byte characters are read, with the same answer everywhere.
#[test]
fn payloads_are_checked_as_utf8_wherever_the_bad_bytes_stand() {
    const MARK: &str = "\u{1F680}";
    let bad: [&[u8]; 5] = [b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe4\xb8", b"\x80"];
    for rule in rules() {
        let native = aigov::run::native::RULES.iter().find(|n| n.metadata.name == rule.name).unwrap();
        for pad in [0, 1, 15, 16, 17, 40] {
            let object = json!({"metadata": {"name": "x", "labels": {"team": format!("{}é-中{MARK}", "a".repeat(pad))}}});
            let text = request(pod_gvk(), object);
            let answers = all_forms(rule, &text, &rule.settings);
            assert_agree(rule, &answers, &format!("multi-byte labels after {pad} bytes"));
            let good = payload(&text, &rule.settings);
            let (before, after) = good.split_once(MARK).unwrap();
            let mut instance = rule.module.instantiate(Arc::new(aigov_sdk::NoCluster)).unwrap();
            for b in bad {
                let bytes = [before.as_bytes(), b, after.as_bytes()].concat();
                let out = instance.call("validate", &bytes).unwrap();
                let from_module: ValidationResponse = serde_json::from_slice(&out).unwrap();
                let from_native = (native.validate)(&bytes, &aigov_sdk::NoCluster);
                for (form, r) in [("module", &from_module), ("native", &from_native)] {
                    assert!(!r.accepted && r.code == Some(400), "{} ({form}) on {b:x?} after {pad} bytes: {r:?}", rule.name);
                    assert_eq!(r.message.as_deref(), Some("the validation request is not UTF-8 JSON"), "{} ({form})", rule.name);
                }
            }
        }
    }
}
