//! The scan's unit tests: reading, evaluating (with a fake evaluator, and
//! the bundle's answer split per rule), and the table and JSON reports.

use aigov_sdk::ValidationResponse;
use aigov_sdk::runtime::metadata::{PolicyMetadata, Rule};
use serde_json::{Value, json};

use super::evaluate::{evaluate_inputs, split_bundle_answer};
use super::read::{Input, collect_files, documents, failed_document, not_an_object};
use crate::run::admission::{Identity, Submission, admission_request, is_verbatim, to_admission_request};
use crate::run::native;
use crate::tools::report::json::to_json;
use crate::tools::report::model::{
    DocumentReport, FailOn, Form, Note, Outcome, Report, RuleInfo, RuleResult, Source, Summary, Target, change_line, dotted, exit_status,
    fails, violations,
};
use crate::tools::report::table::{Layout, render_table, wrap};

const POD_RULE: PolicyMetadata = PolicyMetadata {
    name: "pods-only",
    version: "0.1.0",
    rules: &[Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods"], operations: &["CREATE", "UPDATE"] }],
    mutating: false,
    background_audit: true,
    context_aware_resources: &[],
    annotations: &[("io.kubewarden.policy.description", "Pods are checked")],
};
const EXEC_RULE: PolicyMetadata = PolicyMetadata {
    name: "exec-only",
    version: "0.1.0",
    rules: &[Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods/exec", "pods/attach"], operations: &["CONNECT"] }],
    mutating: false,
    background_audit: false,
    context_aware_resources: &[],
    annotations: &[],
};
const RAY_RULE: PolicyMetadata = PolicyMetadata {
    name: "ray",
    version: "0.1.0",
    rules: &[Rule { api_groups: &["ray.io"], api_versions: &["*"], resources: &["rayclusters", "rayjobs"], operations: &["*"] }],
    mutating: false,
    background_audit: true,
    context_aware_resources: &[],
    annotations: &[],
};

fn request(v: Value) -> Value {
    to_admission_request(v, &Submission::default()).unwrap()
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}})
}

fn exec_review() -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "kind": {"group": "", "version": "v1", "kind": "PodExecOptions"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "exec",
        "name": "trainer-0", "namespace": "ml", "operation": "CONNECT",
        "userInfo": {"username": "jane"}, "object": {"apiVersion": "v1", "kind": "PodExecOptions", "command": ["bash"]}}})
}

#[test]
fn targets_follow_webhook_matching() {
    let t = Target::of(&request(pod("p")));
    assert_eq!((t.group.as_str(), t.version.as_str(), t.resource.as_str(), t.operation.as_str()), ("", "v1", "pods", "CREATE"));
    assert!(t.governed_by(&POD_RULE));
    assert!(!t.governed_by(&EXEC_RULE));
    assert!(!t.governed_by(&RAY_RULE));
    assert_eq!((t.what(), t.object()), ("Pod".to_string(), "ml/p".to_string()));

    let e = Target::of(&request(exec_review()));
    assert_eq!(e.sub_resource.as_deref(), Some("exec"));
    assert!(e.governed_by(&EXEC_RULE));
    assert!(!e.governed_by(&POD_RULE), "a pods rule does not receive pods/exec");
    assert_eq!((e.what(), e.object()), ("CONNECT pods/exec".to_string(), "ml/trainer-0".to_string()));
    assert_eq!(e.user.as_deref(), Some("jane"));

    let r = Target::of(&request(json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"generateName": "tune-"}})));
    assert!(r.governed_by(&RAY_RULE));
    assert_eq!((r.group.as_str(), r.resource.as_str()), ("ray.io", "rayjobs"));
    assert_eq!(r.object(), "default/tune-*");

    let del = to_admission_request(pod("gone"), &Submission { operation: Some("DELETE".into()), ..Submission::default() }).unwrap();
    let d = Target::of(&del);
    assert!(!d.governed_by(&POD_RULE));
    assert_eq!((d.what(), d.object()), ("Pod (DELETE)".to_string(), "ml/gone".to_string()));

    let ns = Target::of(&request(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})));
    assert_eq!(ns.object(), "ml");
}

#[test]
fn documents_lists_and_non_objects() {
    let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {name: b}}\n---\njust a string\n---\n{name: no-kind}\n";
    let docs = documents("f.yaml", text).unwrap();
    assert_eq!(docs.len(), 4);
    assert_eq!(docs[1].source.to_string(), "f.yaml #1 item 2");
    assert_eq!(docs[2].source.to_string(), "f.yaml #2");
    assert!(not_an_object(&docs[0].value).is_none());
    assert!(not_an_object(&docs[2].value).unwrap().contains("string"));
    assert!(not_an_object(&docs[3].value).unwrap().contains("no `apiVersion` and `kind`"));
    assert!(not_an_object(&exec_review()).is_none());
    assert!(not_an_object(&exec_review()["request"]).is_none(), "a bare AdmissionRequest");
    assert_eq!(documents("one.yaml", "apiVersion: v1\nkind: Pod\n").unwrap()[0].source.to_string(), "one.yaml");
}

fn deny(message: &str) -> ValidationResponse {
    ValidationResponse::reject(message, None)
}

/// Two documents and a note, evaluated by a fake evaluator.
fn report() -> Report {
    let inputs = vec![
        Input { source: Source { file: "a.yaml".into(), document: 1, item: None, multi: false }, value: pod("good") },
        Input { source: Source { file: "b.yaml".into(), document: 1, item: None, multi: true }, value: pod("bad") },
        Input { source: Source { file: "b.yaml".into(), document: 2, item: None, multi: true }, value: json!("text") },
        Input { source: Source { file: "c.yaml".into(), document: 1, item: None, multi: false }, value: exec_review() },
    ];
    let rules = [&POD_RULE, &EXEC_RULE];
    let mut calls = Vec::new();
    let evaluated = evaluate_inputs(inputs, &Identity::default(), &rules, &mut |i, req| {
        calls.push(i);
        let name = Target::of(&serde_json::from_str(req).unwrap()).name.unwrap_or_default();
        Ok(match (i, name.as_str()) {
            // Two violations, one per line; the first holds a `; `.
            (0, "bad") => deny(TWO_VIOLATIONS),
            (1, _) => deny("`jane` may not exec into GPU pod `ml/trainer-0`"),
            _ => {
                let mut r = ValidationResponse::accept();
                if name == "good" {
                    r.warnings.push("consider a newer image".into());
                }
                r
            }
        })
    });
    assert_eq!(calls, [0, 0, 1], "only governing rules are called");
    assert!(evaluated.overridden.is_empty());
    Report {
        form: Form::Native,
        rules: rules.iter().map(|m| RuleInfo::of(m)).collect(),
        files: 3,
        documents: evaluated.documents,
        skipped: evaluated.skipped,
        errors: vec![Note {
            source: Source { file: "broken.yaml".into(), document: 1, ..Source::default() },
            reason: "document 1 is not valid YAML".into(),
        }],
        overridden: Vec::new(),
    }
}

/// A rejection with two violations, each holding `; `.
const TWO_VIOLATIONS: &str = "`spec.runtimeClassName` is not set; pods that request GPUs must use runtime class `nvidia`\n`metadata.labels` lacks `opencost.io/team`; add it to the pod template";

#[test]
fn outcomes_and_exit_status() {
    let r = report();
    let cells: Vec<Vec<&str>> = r.documents.iter().map(|d| d.results.iter().map(|x| x.outcome.cell()).collect()).collect();
    assert_eq!(cells, [vec!["warn", "-"], vec!["DENY", "-"], vec!["-", "DENY"]]);
    assert_eq!(r.skipped.len(), 1);
    let s = r.summary();
    assert_eq!((s.documents, s.denied, s.warned, s.passed, s.errors, s.skipped), (3, 2, 1, 0, 1, 1));
    assert_eq!(s.violations, 3, "two in one rejection, one in the other");
    assert_eq!(r.documents[1].results[0].violations().len(), 2);
    assert!(r.documents[0].results[0].violations().is_empty(), "an admission has no violations");
    assert_eq!(exit_status(&r, FailOn::Deny), 1);
    assert_eq!(exit_status(&r, FailOn::None), 0);

    let mut only_warnings = r.clone();
    only_warnings.documents.truncate(1);
    only_warnings.errors.clear();
    assert_eq!(exit_status(&only_warnings, FailOn::Deny), 0);
    assert_eq!(exit_status(&only_warnings, FailOn::Warn), 1);

    let error = RuleResult::evaluated(Err(anyhow::anyhow!("the policy trapped")));
    assert_eq!(error.outcome, Outcome::Error);
    assert!(Outcome::Error > Outcome::Deny && Outcome::Deny > Outcome::Warn && Outcome::Warn > Outcome::Pass);
}

#[test]
fn table_rendering() {
    let text = render_table(&report(), 80, Layout::Compact, FailOn::Deny);
    let lines: Vec<&str> = text.lines().collect();
    // A row per document with its verdict, and under it the rules that did
    // more than admit it.
    let header = lines.iter().position(|l| l.starts_with("#  VERDICT")).unwrap();
    assert_eq!(
        lines[header..header + 7],
        [
            "#  VERDICT  KIND               NAMESPACE/NAME  SOURCE",
            "1  warn     Pod                ml/good         a.yaml",
            "    warn    pods-only",
            "2  DENY     Pod                ml/bad          b.yaml #1",
            "    DENY    pods-only",
            "3  DENY     CONNECT pods/exec  ml/trainer-0    c.yaml",
            "    DENY    exec-only",
        ]
    );
    assert!(text.contains("--wide shows every rule in a column"), "{text}");
    // Messages: one bullet per violation (per line, never per `; `),
    // under the rule that said it, with the count.
    let details = text.split("What the rules said").nth(1).unwrap();
    assert!(details.contains(
        "[2] Pod ml/bad  (b.yaml #1)\n  DENY pods-only (Pods are checked): 2 violations\n    - `spec.runtimeClassName` is not set; pods that request GPUs must use\n      runtime class `nvidia`\n    - `metadata.labels` lacks `opencost.io/team`; add it to the pod template\n"
    ), "{details}");
    assert_eq!(details.matches("\n    - ").count(), 4, "2 + 1 violations and 1 warning: {details}");
    assert!(details.contains("[1] Pod ml/good  (a.yaml)\n  warn pods-only (Pods are checked)\n    - warning: consider a newer image\n"));
    assert!(details.contains("  DENY exec-only: 1 violation\n    - `jane` may not exec"));
    assert!(text.contains("skipped b.yaml #2: not a Kubernetes object (a YAML string)"));
    assert!(text.contains("ERROR broken.yaml: document 1 is not valid YAML"));
    assert!(text.ends_with("Summary: 3 document(s): 2 denied (3 violations), 1 admitted with warnings, 0 passed, 1 error(s), 1 skipped. Exit status 1 (`--fail-on none` reports without failing).\n"));
    for line in details.lines().filter(|l| !l.starts_with("Summary:")) {
        assert!(line.chars().count() <= 80, "wrapped: {line}");
    }
    assert_eq!(text, render_table(&report(), 80, Layout::Compact, FailOn::Deny), "deterministic");
    assert!(render_table(&report(), 80, Layout::Compact, FailOn::None).ends_with("Exit status 0 (`--fail-on none`).\n"));

    // `--wide`: a column per rule.
    let text = render_table(&report(), 80, Layout::Wide, FailOn::Deny);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("#  KIND")).unwrap();
    assert_eq!(
        lines[header..header + 4],
        [
            "#  KIND               NAMESPACE/NAME  pods-only  exec-only  SOURCE",
            "1  Pod                ml/good         warn       -          a.yaml",
            "2  Pod                ml/bad          DENY       -          b.yaml #1",
            "3  CONNECT pods/exec  ml/trainer-0    -          DENY       c.yaml",
        ]
    );
    assert!(text.contains("-: the rule does not govern this kind or operation"));
}

/// Twenty rules with long names, all acting on a document in a deep
/// directory: the compact table stays within the width, naming the
/// directory once; `--wide` is as wide as the rules' names.
#[test]
fn the_compact_table_fits_a_terminal_whatever_the_rules() {
    let rules: Vec<RuleInfo> = (0..20)
        .map(|i| RuleInfo {
            name: format!("a-rather-long-rule-name-{i:02}"),
            version: "0.1.0".into(),
            description: "a description that is long enough to need wrapping when it heads the messages of the rule".into(),
            docs: None,
            severity: None,
            category: None,
        })
        .collect();
    let results: Vec<RuleResult> = (0..20)
        .map(|i| match i % 4 {
            0 => RuleResult::evaluated(Ok(deny("`spec.x` is wrong"))),
            1 => RuleResult::evaluated(Err(anyhow::anyhow!("the rule trapped"))),
            2 => RuleResult::evaluated(Ok(ValidationResponse::accept())),
            _ => RuleResult::not_governed(),
        })
        .collect();
    let documents = ["one.yaml", "two.yaml"]
        .iter()
        .map(|f| DocumentReport {
            source: Source { file: format!("clusters/production/team-a/{f}"), document: 1, item: None, multi: false },
            target: Target::of(&request(pod("a-pod-with-a-name-of-some-length"))),
            results: results.clone(),
        })
        .collect();
    let report = Report { form: Form::Native, rules, files: 2, documents, skipped: Vec::new(), errors: Vec::new(), overridden: Vec::new() };
    let text = render_table(&report, 100, Layout::Compact, FailOn::Deny);
    for line in text.lines().filter(|l| !l.starts_with("Summary:")) {
        assert!(line.chars().count() <= 100, "wider than 100 columns: {line}");
    }
    assert!(text.contains("#  VERDICT  KIND  NAMESPACE/NAME                       SOURCE (in clusters/production/team-a/)\n"), "{text}");
    assert!(text.contains("\n1  ERROR    Pod   ml/a-pod-with-a-name-of-some-length  one.yaml\n"), "{text}");
    assert!(text.contains("\n    ERROR   a-rather-long-rule-name-01, a-rather-long-rule-name-05,"), "{text}");
    assert!(text.contains("\n    DENY    a-rather-long-rule-name-00, a-rather-long-rule-name-04,"), "{text}");
    assert!(!text.contains("a-rather-long-rule-name-02,"), "rules that admit are not listed: {text}");
    let wide = render_table(&report, 100, Layout::Wide, FailOn::Deny);
    assert!(wide.lines().any(|l| l.chars().count() > 500), "{wide}");
}

#[test]
fn mutations_show_as_a_diff() {
    let inputs = vec![Input { source: Source { file: "p.yaml".into(), document: 1, item: None, multi: false }, value: pod("p") }];
    let evaluated = evaluate_inputs(inputs, &Identity::default(), &[&POD_RULE], &mut |_, req| {
        let mut object = serde_json::from_str::<Value>(req).unwrap()["object"].clone();
        object["metadata"]["labels"] = json!({"owner": "jane"});
        object["spec"]["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists"}]);
        let mut r = ValidationResponse::accept();
        r.mutated_object = serde_json::value::RawValue::from_string(object.to_string()).ok();
        Ok(r)
    });
    let report = Report {
        form: Form::Native,
        rules: vec![RuleInfo::of(&POD_RULE)],
        files: 1,
        documents: evaluated.documents,
        skipped: Vec::new(),
        errors: Vec::new(),
        overridden: Vec::new(),
    };
    let r = &report.documents[0].results[0];
    assert_eq!(r.outcome, Outcome::Mutate);
    assert_eq!(
        r.changes(),
        ["+ metadata.labels: {\"owner\":\"jane\"}", "+ spec: {\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}"]
    );
    let text = render_table(&report, 100, Layout::Compact, FailOn::Deny);
    assert!(text.contains("1  Pod   ml/p            mutate     p.yaml") || text.contains(" mutate "), "{text}");
    assert!(text.contains("  mutate pods-only (Pods are checked): 2 changes\n    + metadata.labels: {\"owner\":\"jane\"}\n"), "{text}");
    assert!(text.contains("mutate: admitted with changes"), "{text}");
    assert!(text.contains("0 denied, 1 admitted with changes, 0 passed."), "{text}");
    assert_eq!(exit_status(&report, FailOn::Warn), 0, "a change is not a warning");
    let v = to_json(&report);
    assert_eq!(v["documents"][0]["results"]["pods-only"]["verdict"], "mutate");
    assert_eq!(
        v["documents"][0]["results"]["pods-only"]["patch"][0],
        json!({"op": "add", "path": "/metadata/labels", "value": {"owner": "jane"}})
    );
    assert_eq!(v["summary"]["mutated"], 1);
}

#[test]
fn pointers_read_as_paths() {
    assert_eq!(dotted("/spec/template/metadata/labels/owner"), "spec.template.metadata.labels.owner");
    assert_eq!(dotted("/spec/containers/0/resources/limits/nvidia.com~1gpu"), "spec.containers[0].resources.limits.nvidia.com/gpu");
    assert_eq!(dotted(""), "(the whole object)");
    assert_eq!(change_line(&json!({"op": "remove", "path": "/a/b"})), "- a.b");
    assert_eq!(change_line(&json!({"op": "replace", "path": "/a", "value": 1})), "~ a: 1");
}

#[test]
fn wrapping_keeps_code_spans_whole() {
    let lines = wrap(
        "`spec.workerGroupSpecs[1].template.spec.tolerations` has no toleration for the GPU node taint: add `{key: nvidia.com/gpu, operator: Exists}`",
        60,
    );
    assert_eq!(
        lines,
        [
            "`spec.workerGroupSpecs[1].template.spec.tolerations` has no",
            "toleration for the GPU node taint: add",
            "`{key: nvidia.com/gpu, operator: Exists}`",
        ]
    );
    assert_eq!(wrap("", 40), [""]);
    let long = "x".repeat(50);
    assert_eq!(wrap(&format!("a {long} b"), 30), ["a", long.as_str(), "b"]);
    assert_eq!(wrap("an `unbalanced tick runs to the end of the text without closing it at all`", 30).len(), 3);
}

#[test]
fn violations_are_lines_and_may_hold_semicolons() {
    assert_eq!(violations("a; b;  ; c"), ["a; b;  ; c"], "`; ` never splits a violation");
    assert_eq!(violations("first; with detail\nsecond\n\n  third; more  \n"), ["first; with detail", "second", "third; more"]);
    assert_eq!(violations("one"), ["one"]);
    assert!(violations("").is_empty());
    assert!(violations("\n \n").is_empty());
}

#[test]
fn audit_annotations_show_one_violation_per_line() {
    let mut r = ValidationResponse::accept();
    r.warnings.push("x (audit mode, not enforced): a; b".into());
    r.audit_annotations.insert("violations".into(), "a; b\nc".into());
    let report = Report {
        form: Form::Native,
        rules: vec![RuleInfo::of(&POD_RULE)],
        files: 1,
        documents: vec![DocumentReport {
            source: Source { file: "a.yaml".into(), document: 1, item: None, multi: false },
            target: Target::of(&request(pod("p"))),
            results: vec![RuleResult::evaluated(Ok(r))],
        }],
        skipped: Vec::new(),
        errors: Vec::new(),
        overridden: Vec::new(),
    };
    let text = render_table(&report, 100, Layout::Compact, FailOn::Deny);
    // A line the warnings already say is not said twice.
    assert!(text.contains("    - audit annotation `violations`: c\n"), "{text}");
    assert!(!text.contains("audit annotation `violations`: a; b"), "{text}");
    assert_eq!(report.summary().violations, 0, "an admission in audit mode has no violations");
}

#[test]
fn identity_flags_reach_plain_objects_and_verbatim_requests() {
    let admin = Identity { user: Some("admin".into()), groups: vec!["system:masters".into()] };
    // A plain object is submitted as the identity.
    let (r, changed) = admission_request(pod("p"), &admin).unwrap();
    assert_eq!(r["userInfo"], json!({"username": "admin", "groups": ["system:masters"]}));
    assert!(changed.is_empty(), "nothing verbatim was changed");
    // A verbatim review keeps everything but the replaced fields.
    let mut review = exec_review();
    review["request"]["userInfo"]["uid"] = json!("42");
    let (r, changed) = admission_request(review.clone(), &admin).unwrap();
    assert_eq!(r["userInfo"], json!({"username": "admin", "groups": ["system:masters"], "uid": "42"}));
    assert_eq!(r["name"], "trainer-0");
    assert_eq!(changed.len(), 2);
    assert!(changed[0].contains("`jane` → `admin` (--user)"), "{changed:?}");
    assert!(changed[1].contains("(unset) → [\"system:masters\"] (--group)"), "{changed:?}");
    // Only --group: the user stays.
    let groups = Identity { user: None, groups: vec!["ml".into()] };
    let (r, changed) = admission_request(review["request"].clone(), &groups).unwrap();
    assert_eq!(r["userInfo"]["username"], "jane");
    assert_eq!(r["userInfo"]["groups"], json!(["ml"]));
    assert_eq!(changed.len(), 1);
    // No flag: verbatim is verbatim.
    let (r, changed) = admission_request(review.clone(), &Identity::default()).unwrap();
    assert_eq!(r, review["request"]);
    assert!(changed.is_empty());
    // A request without userInfo gets one; a broken one is refused.
    let mut bare = review["request"].clone();
    bare.as_object_mut().unwrap().remove("userInfo");
    assert_eq!(admission_request(bare, &admin).unwrap().0["userInfo"]["username"], "admin");
    let mut broken = review["request"].clone();
    broken["userInfo"] = json!("jane");
    assert!(admission_request(broken, &admin).unwrap_err().to_string().contains("not an object"));
    assert!(is_verbatim(&review) && is_verbatim(&review["request"]) && !is_verbatim(&pod("p")));
}

#[test]
fn scan_reports_which_verbatim_documents_took_the_identity() {
    let inputs = vec![
        Input { source: Source { file: "pod.yaml".into(), document: 1, item: None, multi: false }, value: pod("p") },
        Input { source: Source { file: "exec.yaml".into(), document: 1, item: None, multi: false }, value: exec_review() },
    ];
    let identity = Identity { user: Some("admin".into()), groups: Vec::new() };
    let mut users = Vec::new();
    let evaluated = evaluate_inputs(inputs, &identity, &[&POD_RULE, &EXEC_RULE], &mut |_, req| {
        users.push(Target::of(&serde_json::from_str(req).unwrap()).user.unwrap_or_default());
        Ok(ValidationResponse::accept())
    });
    assert_eq!(users, ["admin", "admin"], "both the plain object and the review are submitted as --user");
    assert_eq!(evaluated.overridden.iter().map(ToString::to_string).collect::<Vec<_>>(), ["exec.yaml"]);
}

#[test]
fn json_report_shape() {
    let v = to_json(&report());
    assert_eq!(v["form"], "native");
    assert_eq!(v["rules"][0]["name"], "pods-only");
    assert_eq!(v["rules"][0]["description"], "Pods are checked");
    let docs = v["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0]["verdict"], "warn");
    assert_eq!(docs[0]["results"]["pods-only"]["warnings"][0], "consider a newer image");
    assert_eq!(docs[0]["results"]["exec-only"], json!({"verdict": "not-governed"}));
    assert_eq!(docs[1]["source"], json!({"file": "b.yaml", "document": 1}));
    assert_eq!(docs[1]["apiVersion"], "v1");
    assert_eq!(docs[1]["namespace"], "ml");
    assert_eq!(docs[1]["results"]["pods-only"]["verdict"], "deny");
    assert_eq!(
        docs[1]["results"]["pods-only"]["violations"],
        json!([
            "`spec.runtimeClassName` is not set; pods that request GPUs must use runtime class `nvidia`",
            "`metadata.labels` lacks `opencost.io/team`; add it to the pod template"
        ])
    );
    assert_eq!(docs[2]["results"]["exec-only"]["violations"].as_array().unwrap().len(), 1);
    assert_eq!(docs[2]["operation"], "CONNECT");
    assert_eq!(docs[2]["subResource"], "exec");
    assert_eq!(docs[2]["kind"], "PodExecOptions");
    assert_eq!(v["skipped"][0]["source"]["document"], 2);
    assert_eq!(v["errors"][0]["source"], json!({"file": "broken.yaml", "document": 1}));
    assert_eq!(
        v["summary"],
        json!({"files": 3, "documents": 3, "denied": 2, "warned": 1, "mutated": 0, "passed": 0, "errors": 1, "skipped": 1, "violations": 3})
    );
}

#[test]
fn the_bundles_answer_splits_into_each_rules_own() {
    // The bench Pod, which most validating rules deny or warn about,
    // through the native bundle with every validating rule on.
    let request = include_str!("../../../bench/pod-request.json");
    let cluster = aigov_sdk::NoCluster;
    let (mut rules, mut members) = (serde_json::Map::new(), Vec::new());
    for (i, r) in native::RULES.iter().enumerate().filter(|(_, r)| !r.metadata.mutating) {
        let settings = native::deployable_settings(r).unwrap();
        rules.insert(r.metadata.name.into(), settings);
        members.push((i, r.metadata.name));
    }
    let settings = json!({"rules": rules}).to_string();
    let merged = (native::BUNDLE.validate_request)(request, &settings, &cluster);
    assert!(!merged.accepted);
    let parts = split_bundle_answer(merged, &members).unwrap();
    assert_eq!(parts.len(), members.len());
    let mut denied = 0;
    for (i, part) in parts {
        let rule = &native::RULES[i];
        let own = (rule.validate_request)(request, &rules[rule.metadata.name].to_string(), &cluster);
        assert_eq!(part, own, "{}", rule.metadata.name);
        denied += usize::from(!own.accepted);
    }
    assert!(denied >= 3, "several rules deny the bench Pod");
    // What cannot be split is not.
    let mut coded = ValidationResponse::reject("gpu-quota: x", Some(400));
    assert!(split_bundle_answer(coded.clone(), &members).is_none());
    coded.code = None;
    coded.message = Some("nobody: x".into());
    assert!(split_bundle_answer(coded, &members).is_none());
}

#[test]
fn collects_files_in_order_without_the_cluster_dir() {
    let root = std::env::temp_dir().join(format!("aigov-scan-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for f in ["b/z.yaml", "b/a.json", "a.yml", "cluster/pod.yaml", ".hidden/x.yaml", "notes.md"] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "{}").unwrap();
    }
    let files = collect_files(std::slice::from_ref(&root), Some(&root.join("cluster"))).unwrap().files;
    let rel: Vec<String> = files.iter().map(|f| f.strip_prefix(&root).unwrap().display().to_string()).collect();
    assert_eq!(rel, ["a.yml", "b/a.json", "b/z.yaml"]);
    let explicit = collect_files(&[root.join("notes.md"), root.join("cluster/pod.yaml")], Some(&root.join("cluster"))).unwrap().files;
    assert_eq!(explicit.len(), 2, "files named explicitly are always scanned");
    assert!(collect_files(&[root.join("missing")], None).is_err());
    // A directory without manifests (a CI job pointed at the wrong one) is
    // an error that says what was searched.
    std::fs::create_dir_all(root.join("empty/.hidden")).unwrap();
    std::fs::write(root.join("empty/.hidden/x.yaml"), "{}").unwrap();
    std::fs::write(root.join("empty/README.md"), "").unwrap();
    let e = collect_files(&[root.clone(), root.join("empty")], None).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("no manifests in {}: no .yaml, .yml or .json file in it or below it", root.join("empty").display())),
        "{e}"
    );
    assert!(e.contains("hidden files and directories are skipped"), "{e}");
    let e = collect_files(&[root.join("cluster")], Some(&root.join("cluster"))).unwrap_err().to_string();
    assert!(e.contains("nor in the cluster fixtures"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A directory with a link back to itself, a link to its parent below it,
/// a named pipe and a socket named as manifests: each directory is walked
/// once, the pipe and the socket are not read, and all four are said.
#[cfg(unix)]
#[test]
fn the_walk_follows_each_directory_once_and_reads_no_pipe() {
    use std::os::unix::fs::symlink;
    let root = std::env::temp_dir().join(format!("aigov-scan-odd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("a.yaml"), "{}").unwrap();
    std::fs::write(root.join("sub/b.yaml"), "{}").unwrap();
    symlink(".", root.join("loop")).unwrap();
    symlink("..", root.join("sub/up")).unwrap();
    for fifo in ["pipe.yaml", "notes.fifo"] {
        let made = std::process::Command::new("mkfifo").arg(root.join(fifo)).status().unwrap();
        assert!(made.success());
    }
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock.json")).unwrap();

    let found = collect_files(std::slice::from_ref(&root), None).unwrap();
    let rel = |p: &std::path::Path| p.strip_prefix(&root).unwrap().display().to_string();
    assert_eq!(found.files.iter().map(|f| rel(f)).collect::<Vec<_>>(), ["a.yaml", "sub/b.yaml"]);
    let left: Vec<(String, &str)> = found.left.iter().map(|l| (rel(&l.path), l.reason.as_str())).collect();
    let again = format!("the same directory as {}, walked already: each directory is followed once", root.display());
    assert_eq!(left.len(), 4, "{left:?}");
    assert!(left[0].0 == "loop" && left[0].1.starts_with(&again), "{left:?}");
    assert_eq!(left[1], ("pipe.yaml".to_string(), "a named pipe, not a regular file: not read"));
    assert_eq!(left[2], ("sock.json".to_string(), "a socket, not a regular file: not read"));
    assert!(left[3].0 == "sub/up" && left[3].1.starts_with(&again), "{left:?}");

    // Named, a pipe is read (`aigov scan <(helm template chart)`); a
    // socket is refused; a directory named twice is walked once.
    let named = collect_files(&[root.join("pipe.yaml")], None).unwrap();
    assert_eq!(named.files, [root.join("pipe.yaml")]);
    let e = collect_files(&[root.join("sock.json")], None).unwrap_err().to_string();
    assert!(e.ends_with("sock.json is a socket: name manifest files, directories of them, or `-` for standard input"), "{e}");
    let twice = collect_files(&[root.clone(), root.join("sub")], None).unwrap();
    assert_eq!(twice.files.len(), 2);
    assert_eq!(twice.left.last().map(|l| rel(&l.path)).as_deref(), Some("sub"));
    // A folder holding only a pipe has no manifests, and says what it left.
    std::fs::create_dir_all(root.join("only")).unwrap();
    std::process::Command::new("mkfifo").arg(root.join("only/x.yaml")).status().unwrap();
    let e = collect_files(&[root.join("only")], None).unwrap_err().to_string();
    assert!(e.contains("; not read: ") && e.contains("x.yaml: a named pipe, not a regular file: not read"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn nothing_to_check_fails_the_scan() {
    let none = Summary { skipped: 2, ..Summary::default() };
    assert!(fails(&none, FailOn::Deny) && fails(&none, FailOn::Warn) && !fails(&none, FailOn::None));
    let empty = Report {
        form: Form::Native,
        rules: Vec::new(),
        files: 1,
        documents: Vec::new(),
        skipped: Vec::new(),
        errors: Vec::new(),
        overridden: Vec::new(),
    };
    // Its own exit status: neither denied (1) nor could not run (2).
    assert_eq!(exit_status(&empty, FailOn::Deny), 3);
    assert_eq!(exit_status(&empty, FailOn::None), 0);
    let text = render_table(&empty, 80, Layout::Compact, FailOn::Deny);
    assert!(text.ends_with("No Kubernetes object to check: exit status 3 (point the scan at the manifests).\n"), "{text}");
}

#[test]
fn files_that_do_not_parse_name_the_document_as_the_message_does() {
    // The parser counts the empty document between the two markers.
    let e = documents("f.yaml", "a: 1\n---\n---\nb: [\n").unwrap_err();
    assert_eq!(failed_document(&e), 3);
    assert!(format!("{e:#}").starts_with("document 3 is not valid YAML or JSON: "), "{e:#}");
    // Refused whole, before any document is parsed.
    let deep = documents("f.yaml", &format!("a: 1\n---\nb: {}", "[".repeat(200))).unwrap_err();
    assert_eq!(failed_document(&deep), 0);
    assert!(format!("{deep:#}").starts_with("brackets (`[`, `{`) nest more than 128 levels deep at line 3, column 132;"), "{deep:#}");
    let mut r = report();
    r.errors[0].source.document = 0;
    assert_eq!(to_json(&r)["errors"][0]["source"], json!({"file": "broken.yaml"}), "no document: the whole file");
}

#[test]
fn a_byte_order_mark_starts_no_document() {
    for text in [
        "\u{feff}apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n",
        "\u{feff}{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}}",
    ] {
        let docs = documents("bom.yaml", text).unwrap();
        assert_eq!(docs.len(), 1, "{text:?}");
        assert_eq!(docs[0].value["metadata"]["name"], "a");
        assert_eq!(docs[0].source.to_string(), "bom.yaml");
    }
}

/// A rule's warnings that say what it could not check without a cluster
/// are taken out of its response: they neither warn nor count, and the
/// report names them once per rule.
#[test]
fn what_rules_skip_without_a_cluster_is_said_once_and_warns_nothing() {
    use crate::tools::report::model::{Item, Unchecked};
    let mut resp = ValidationResponse::accept();
    resp.warnings = vec![
        format!("{}the labels of namespace `ml` could not be read, so its pool was not checked", aigov_sdk::cluster::NOT_CHECKED),
        "a real warning".to_string(),
    ];
    let r = RuleResult::evaluated(Ok(resp.clone()));
    assert_eq!(r.outcome, Outcome::Warn);
    assert_eq!(r.response.as_ref().unwrap().warnings, ["a real warning"]);
    assert_eq!(r.unchecked, ["the labels of namespace `ml` could not be read, so its pool was not checked"]);
    resp.warnings.truncate(1);
    let quiet = RuleResult::evaluated(Ok(resp));
    assert_eq!(quiet.outcome, Outcome::Pass, "a rule that only skipped a lookup admits");

    let mut report = report();
    let mut unchecked = Unchecked::default();
    assert_eq!(unchecked.line(), None);
    for d in report.documents.iter_mut().take(2) {
        d.results[0] = quiet.clone();
        unchecked.add(&report.rules, &Item::Document(d.clone()));
    }
    let line = unchecked.line().unwrap();
    assert!(line.starts_with("not fully checked without `--cluster`"), "{line}");
    assert!(
        line.contains(": pods-only on 2 document(s): the labels of namespace `ml` could not be read, so its pool was not checked;"),
        "{line}"
    );
    let text = render_table(&report, 80, Layout::Compact, FailOn::Deny);
    assert_eq!(text.matches("\nNot fully checked without `--cluster`").count(), 1, "{text}");
    assert!(text.contains("\n1  pass "), "{text}");
}
