//! Unit tests of the fixture cluster: lookups by name and by list, label and
//! field selectors, scoping to the declared kinds and host calls, failures,
//! recording.

use super::*;

fn cluster() -> FixtureCluster {
    FixtureCluster::from_objects([
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml", "labels": {"team": "x", "tier": "gpu"}}}),
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "ml", "labels": {"team": "y"}}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "other"}}
        ]}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}),
    ])
    .unwrap()
}

fn names(list: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(list).unwrap();
    v["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn lookups_see_objects_in_the_order_they_were_added_and_the_first_of_a_name() {
    let pod =
        |name: &str, ns: &str, n: u32| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": n}});
    let c = FixtureCluster::from_objects([
        pod("z", "ml", 1),
        json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml"}}),
        pod("a", "ml", 2),
        pod("m", "other", 3),
        pod("a", "ml", 4),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"}}),
    ])
    .unwrap();
    assert_eq!(names(&c.list("v1", "Pod", Some("ml"), None, None).unwrap()), ["z", "a", "a"]);
    assert_eq!(names(&c.list("v1", "Pod", None, None, None).unwrap()), ["z", "a", "m", "a", "nowhere"]);
    assert_eq!(names(&c.list("apps/v1", "Pod", None, None, None).unwrap()), ["a"]);
    assert!(names(&c.list("v1", "Pod", Some("empty"), None, None).unwrap()).is_empty());
    assert!(names(&c.list("v2", "Pod", None, None, None).unwrap()).is_empty());
    let found: Value = serde_json::from_str(&c.get("v1", "Pod", "a", Some("ml")).unwrap()).unwrap();
    assert_eq!(found["metadata"]["uid"], 2, "the first object of that name");
    // A namespaced kind's object without a namespace is not in any.
    assert!(c.get("v1", "Pod", "nowhere", Some("ml")).is_err());
}

/// A listing is the `<Kind>List` a `json!` value of the same objects
/// prints, byte for byte (keys sorted, as before the list was written
/// without copying its items).
#[test]
fn lists_are_written_as_a_json_value_prints_them() {
    let c = cluster();
    for (api_version, kind, namespace) in
        [("v1", "Pod", Some("ml")), ("v1", "Pod", None), ("v1", "Namespace", None), ("v1", "Pod", Some("empty"))]
    {
        let items: Vec<Value> = serde_json::from_str::<Value>(&c.list(api_version, kind, namespace, None, None).unwrap()).unwrap()["items"]
            .as_array()
            .unwrap()
            .clone();
        let expected = json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": {}, "items": items}).to_string();
        assert_eq!(c.list(api_version, kind, namespace, None, None).unwrap(), expected);
    }
    assert!(c.list("v1", "Pod", Some("ml"), None, None).unwrap().starts_with(r#"{"apiVersion":"v1","items":[{"#));
}

/// An object's text is written once and served as written: a `get`
/// and a listing answer with the same text, again and again, and it is
/// the text of the object as added (a Namespace with its name label).
#[test]
fn lookups_answer_with_each_object_written_once() {
    let c = cluster();
    let first = c.get("v1", "Namespace", "ml", None).unwrap();
    assert_eq!(c.get("v1", "Namespace", "ml", None).unwrap(), first);
    let object: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(object["metadata"]["labels"][NAMESPACE_NAME_LABEL], "ml");
    assert_eq!(first, object.to_string());
    let list = c.list("v1", "Namespace", None, None, None).unwrap();
    assert!(list.contains(&first), "{list}");
    assert_eq!(c.list("v1", "Namespace", None, None, None).unwrap(), list);
}

#[test]
fn get_by_namespace_and_name() {
    let c = cluster();
    assert_eq!(c.len(), 4, "List items are flattened");
    let pod: Value = serde_json::from_str(&c.get("v1", "Pod", "a", Some("other")).unwrap()).unwrap();
    assert_eq!(pod["metadata"]["namespace"], "other");
    assert!(matches!(c.get("v1", "Pod", "zzz", Some("ml")), Err(LookupError::NotFound(m)) if m == "Pod `ml/zzz` (v1) not found"));
    assert!(c.get("v1", "Namespace", "ml", None).is_ok());
}

#[test]
fn list_with_selectors() {
    let c = cluster();
    assert_eq!(names(&c.list("v1", "Pod", Some("ml"), None, None).unwrap()), ["a", "b"]);
    assert_eq!(names(&c.list("v1", "Pod", None, Some("team in (x, z)"), None).unwrap()), ["a"]);
    assert_eq!(names(&c.list("v1", "Pod", None, Some("team!=x"), None).unwrap()), ["b", "a"]);
    assert_eq!(names(&c.list("v1", "Pod", None, Some("!team"), None).unwrap()), ["a"]);
    assert_eq!(names(&c.list("v1", "Pod", None, Some("team,tier=gpu"), None).unwrap()), ["a"]);
    assert_eq!(names(&c.list("v1", "Pod", None, None, Some("metadata.namespace=other")).unwrap()), ["a"]);
    assert!(matches!(c.list("v1", "Pod", None, Some("team in x"), None), Err(LookupError::Invalid(_))));
    assert!(matches!(c.list("v1", "Pod", None, None, Some("nonsense")), Err(LookupError::Invalid(_))));
}

#[test]
fn label_selectors_parse_like_the_api_server() {
    use selector::{LabelReq, parse_labels};
    assert_eq!(parse_labels("").unwrap(), []);
    assert_eq!(parse_labels("  ").unwrap(), []);
    assert_eq!(
        parse_labels("a=b,c==d,e!=f,g in(x, y),h notin (z),i,!j,k>3,l<-1,m=").unwrap(),
        [
            LabelReq::In("a".into(), vec!["b".into()]),
            LabelReq::In("c".into(), vec!["d".into()]),
            LabelReq::NotIn("e".into(), vec!["f".into()]),
            LabelReq::In("g".into(), vec!["x".into(), "y".into()]),
            LabelReq::NotIn("h".into(), vec!["z".into()]),
            LabelReq::Exists("i".into()),
            LabelReq::Absent("j".into()),
            LabelReq::Gt("k".into(), 3),
            LabelReq::Lt("l".into(), -1),
            LabelReq::In("m".into(), vec![String::new()]),
        ]
    );
    assert_eq!(parse_labels("example.com/team = ml").unwrap(), [LabelReq::In("example.com/team".into(), vec!["ml".into()])]);
    for bad in
        ["a=b,", ",a", "a in ()", "a in x", "a b", "a=b c", "=x", "a=-b", "a b=c", "!a=b", "a>x", "Example.com/a=b", "a in (b", "a,,b", "!"]
    {
        assert!(parse_labels(bad).is_err(), "`{bad}` must be refused");
    }
}

#[test]
fn field_selectors_are_the_kinds_own() {
    let c = FixtureCluster::from_objects([
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "run", "namespace": "ml"}, "status": {"phase": "Running"}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "ml"}, "status": {"phase": "Succeeded"}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "failed", "namespace": "ml"}, "spec": {"hostNetwork": true}, "status": {"phase": "Failed"}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a,b=c", "namespace": "ml"}, "status": {"phase": "Pending"}}),
    ])
    .unwrap();
    let list = |f: &str| c.list("v1", "Pod", Some("ml"), None, Some(f));
    assert_eq!(names(&list("status.phase!=Succeeded,status.phase!=Failed").unwrap()), ["run", "a,b=c"]);
    assert_eq!(names(&list("status.phase==Failed").unwrap()), ["failed"]);
    assert_eq!(names(&list("spec.hostNetwork=false").unwrap()), ["run", "done", "a,b=c"], "an absent bool reads as false");
    assert_eq!(names(&list(r"metadata.name=a\,b\=c").unwrap()), ["a,b=c"]);
    assert_eq!(names(&list("").unwrap()).len(), 4);
    assert!(matches!(list("status.reason=x"), Err(LookupError::Invalid(m)) if m.starts_with("field label not supported: `status.reason`")));
    assert!(matches!(list("status.phase in (Running)"), Err(LookupError::Invalid(_))));
    assert!(matches!(list(r"metadata.name=a\x"), Err(LookupError::Invalid(_))));
    let list = c.list("v1", "Pod", Some("ml"), None, None).unwrap();
    let v: Value = serde_json::from_str(&list).unwrap();
    assert_eq!((v["apiVersion"].as_str(), v["kind"].as_str()), (Some("v1"), Some("PodList")));
}

#[test]
fn namespaces_as_the_api_server_keeps_them() {
    let c = FixtureCluster::from_objects([
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"tier": "gold"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}}),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "ml"}, "spec": {"hard": {"requests.nvidia.com/gpu": "8"}}}),
    ])
    .unwrap();
    let ns: Value = serde_json::from_str(&c.get("v1", "Namespace", "dev", None).unwrap()).unwrap();
    assert_eq!(ns["metadata"]["labels"][NAMESPACE_NAME_LABEL], "dev", "every Namespace carries its name as a label");
    assert!(c.get("v1", "Namespace", "ml", Some("ml")).is_ok(), "a cluster-scoped get ignores the namespace");
    assert_eq!(names(&c.list("v1", "Namespace", None, Some("kubernetes.io/metadata.name in (ml,x)"), None).unwrap()), ["ml"]);
    assert_eq!(names(&c.list("v1", "Namespace", None, Some("tier"), Some("metadata.name!=dev")).unwrap()), ["ml"]);
    assert!(matches!(c.list("v1", "Namespace", Some("ml"), None, None), Err(LookupError::Invalid(_))));
    assert!(c.get("v1", "ResourceQuota", "gpus", Some("ml")).is_ok());
    assert!(matches!(c.get("v1", "ResourceQuota", "gpus", None), Err(LookupError::Invalid(_))));
    assert_eq!(names(&c.list("v1", "ResourceQuota", Some("ml"), None, None).unwrap()), ["gpus"]);
    assert!(matches!(c.list("v1", "Namespace", None, Some("tier in (gold"), None), Err(LookupError::Invalid(_))));
}

#[test]
fn scoping_grants_only_the_declared_host_calls() {
    let s = Scoped::new(Arc::new(cluster()), vec![("v1".to_string(), "Pod".to_string())].into())
        .with_capabilities(vec!["kubernetes/get_resource".to_string()].into());
    assert!(s.get_resource("v1", "Pod", "a", Some("ml")).is_ok());
    assert_eq!(
        s.list_resources_by_namespace("v1", "Pod", "ml", None, None).unwrap_err(),
        LookupError::Forbidden("Policy has not been granted access to the 'kubernetes/list_resources_by_namespace' host capability. The violation has been reported.".into())
    );
    assert!(
        s.list_resources_all("v1", "Secret", None, None).unwrap_err().message().contains("'kubernetes/list_resources_all' host capability"),
        "the call is refused before its kind"
    );
}

#[test]
fn scoping_forbids_undeclared_kinds() {
    let c = Arc::new(cluster());
    let s = Scoped::new(c, vec![("v1".to_string(), "Pod".to_string())].into());
    assert!(s.get_resource("v1", "Pod", "a", Some("ml")).is_ok());
    let e = s.get_resource("v1", "Namespace", "ml", None).unwrap_err();
    assert_eq!(
        e,
        LookupError::Forbidden(
            "Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported.".into()
        )
    );
}

#[test]
fn failures_are_served_through_the_same_calls() {
    let c = FixtureCluster::from_objects([
        json!({"apiVersion": "aigov.dev/v1alpha1", "kind": "LookupFailure", "match": {"apiVersion": "v1", "kind": "Pod", "namespace": "ml"},
               "error": "forbidden", "message": "pods is forbidden\nstack"}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml"}}),
    ])
    .unwrap();
    assert_eq!(c.get("v1", "Pod", "a", Some("ml")).unwrap_err(), LookupError::Forbidden("pods is forbidden\nstack".into()));
    assert!(c.list("v1", "Pod", Some("ml"), None, None).is_err());
    assert!(c.get("v1", "Pod", "a", Some("other")).is_err_and(|e| matches!(e, LookupError::NotFound(_))));
    assert_eq!(c.len(), 1, "failures are not objects");
    assert!(
        FixtureCluster::from_objects([json!({"apiVersion": "x", "kind": "LookupFailure", "match": {"kind": "Pod"}, "error": "boom"})])
            .is_err()
    );
}

#[test]
fn recording_keeps_each_lookup_and_its_answer_in_order() {
    let scoped = Scoped::new(Arc::new(cluster()), vec![("v1".to_string(), "Pod".to_string())].into());
    let r = Recording::new(scoped);
    let pod = r.get_resource("v1", "Pod", "a", Some("ml")).unwrap();
    assert!(r.list_resources_by_namespace("v1", "Pod", "ml", Some("team=x"), None).is_ok());
    assert!(r.list_resources_all("v1", "Namespace", None, Some("metadata.name=ml")).is_err());
    let got = r.lookups();
    assert_eq!(got.len(), 3);
    assert_eq!(
        got[0],
        Lookup {
            function: "get-resource",
            args: vec![Some("v1".into()), Some("Pod".into()), Some("a".into()), Some("ml".into())],
            answer: LookupAnswer::Ok(pod),
        }
    );
    assert_eq!(got[1].args, [Some("v1".into()), Some("Pod".into()), Some("ml".into()), Some("team=x".into()), None]);
    assert_eq!(got[2].function, "list-resources-all");
    assert!(
        matches!(&got[2].answer, LookupAnswer::Err { tag: "forbidden", val } if val.contains("access to Kubernetes v1/Namespace resources"))
    );
    let json = serde_json::to_value(&got[2]).unwrap();
    assert_eq!(json["args"], json!(["v1", "Namespace", null, "metadata.name=ml"]));
    assert_eq!(json["answer"]["err"]["tag"], "forbidden", "{json}");
}

#[test]
fn objects_need_kind() {
    assert!(FixtureCluster::from_objects([json!({"metadata": {}})]).is_err());
}

/// A fixture folder with a link back to itself and a named pipe loads
/// once, without waiting on the pipe (it used to walk the loop until the
/// path was too long).
#[cfg(unix)]
#[test]
fn fixtures_load_through_a_link_loop_and_skip_a_pipe() {
    let dir = std::env::temp_dir().join(format!("aigov-cluster-loop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("ns")).unwrap();
    std::fs::write(dir.join("ns/pod.yaml"), "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ml}}").unwrap();
    std::os::unix::fs::symlink("..", dir.join("ns/up")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(dir.join("pipe.yaml")).status().unwrap().success());
    let c = FixtureCluster::from_dir(&dir).unwrap();
    assert_eq!(c.len(), 1, "the pod once");
    assert!(c.get("v1", "Pod", "p", Some("ml")).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
