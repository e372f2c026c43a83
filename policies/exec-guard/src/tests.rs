use std::cell::RefCell;

use aigov_sdk::ValidationResponse;

use super::*;

/// A cluster holding a few pods, recording every lookup.
#[derive(Default)]
struct Pods {
    pods: Vec<(&'static str, &'static str, String)>,
    fail: Option<LookupError>,
    lookups: RefCell<Vec<String>>,
}

impl Pods {
    fn with(mut self, namespace: &'static str, name: &'static str, json: &str) -> Pods {
        self.pods.push((namespace, name, json.to_string()));
        self
    }

    fn failing(e: LookupError) -> Pods {
        Pods { fail: Some(e), ..Pods::default() }
    }

    fn lookups(&self) -> Vec<String> {
        self.lookups.borrow().clone()
    }
}

impl Cluster for Pods {
    fn get_resource(&self, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Result<String, LookupError> {
        self.lookups.borrow_mut().push(format!("{api_version} {kind} {}/{name}", namespace.unwrap_or("-")));
        if let Some(e) = &self.fail {
            return Err(e.clone());
        }
        self.pods
            .iter()
            .find(|(ns, n, _)| Some(*ns) == namespace && *n == name)
            .map(|(_, _, json)| json.clone())
            .ok_or_else(|| LookupError::NotFound(format!("Pod `{}/{name}` not found", namespace.unwrap_or("-"))))
    }
    fn list_resources_by_namespace(&self, _: &str, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Forbidden("exec-guard lists nothing".into()))
    }
    fn list_resources_all(&self, _: &str, _: &str, _: Option<&str>, _: Option<&str>) -> Result<String, LookupError> {
        Err(LookupError::Forbidden("exec-guard lists nothing".into()))
    }
}

const GPU_POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"trainer-0","namespace":"ml"},
    "spec":{"containers":[{"name":"pytorch","resources":{"limits":{"nvidia.com/gpu":"4","cpu":"8"}}},
                          {"name":"sidecar","resources":{"limits":{"nvidia.com/mig-1g.5gb":1}}}]}}"#;
const CPU_POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"notebook-0","namespace":"ml"},
    "spec":{"containers":[{"name":"notebook","resources":{"limits":{"cpu":"4","nvidia.com/gpu":"0"}}}]}}"#;
const INIT_GPU_POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"serve-0","namespace":"ml"},
    "spec":{"initContainers":[{"name":"warm","resources":{"limits":{"amd.com/gpu":"2"}}}],
            "containers":[{"name":"proxy"}]}}"#;

fn cluster() -> Pods {
    Pods::default()
        .with("ml", "trainer-0", GPU_POD)
        .with("ml", "notebook-0", CPU_POD)
        .with("ml", "serve-0", INIT_GPU_POD)
        .with("ml", "broken-0", r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":"x"}}"#)
        .with("ml", "bad-quantity-0", r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"lots"}}}]}}"#)
}

fn connect(sub: &str, pod: &str, user: &str, groups: &[&str], object: &str) -> String {
    let groups: Vec<String> = groups.iter().map(|g| format!("{g:?}")).collect();
    format!(
        r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"PodExecOptions"}},
            "resource":{{"group":"","version":"v1","resource":"pods"}},"subResource":"{sub}",
            "name":"{pod}","namespace":"ml","operation":"CONNECT",
            "userInfo":{{"username":"{user}","groups":[{}]}},"object":{object}}}"#,
        groups.join(",")
    )
}

fn exec(pod: &str, user: &str, groups: &[&str]) -> String {
    connect(
        "exec",
        pod,
        user,
        groups,
        r#"{"kind":"PodExecOptions","apiVersion":"v1","stdin":true,"stdout":true,"tty":true,"container":"pytorch","command":["bash"]}"#,
    )
}

fn run(request: &str, settings: &str, cluster: &Pods) -> ValidationResponse {
    (AIGOV_POLICY.validate_request)(request, settings, cluster)
}

const JANE: &str = "jane@example.com";
const USERS: [&str; 1] = ["system:authenticated"];

#[test]
fn normal_user_cannot_exec_into_a_gpu_pod() {
    let c = cluster();
    let r = run(&exec("trainer-0", JANE, &USERS), "{}", &c);
    assert!(!r.accepted);
    assert_eq!(r.code, None);
    assert_eq!(
        r.message.as_deref().unwrap(),
        "exec into pod `ml/trainer-0` is denied: it holds 5 GPUs (`nvidia.com/gpu`, `nvidia.com/mig-1g.5gb`), and interactive sessions keep GPU pods running as personal machines while their GPUs sit idle and other jobs wait for them; run the work as a Job that exits when it is done, copy files through a pod without GPUs that mounts the same volume, or, to debug this pod, ask a member of `system:masters`"
    );
    assert_eq!(
        r.audit_annotations[AUDIT_KEY],
        r#"{"verdict":"deny","reason":"gpu-pod","gpus":5,"gpuResources":["nvidia.com/gpu","nvidia.com/mig-1g.5gb"],"subresource":"exec","namespace":"ml","pod":"trainer-0","container":"pytorch","user":"jane@example.com","command":["bash"],"stdin":true,"tty":true}"#
    );
    assert_eq!(c.lookups(), ["v1 Pod ml/trainer-0"]);
}

#[test]
fn allowed_groups_and_users_skip_the_lookup_and_are_recorded() {
    let c = cluster();
    let r = run(&exec("trainer-0", "admin", &["system:authenticated", "system:masters"]), "{}", &c);
    assert!(r.accepted && r.message.is_none() && r.warnings.is_empty());
    assert!(
        r.audit_annotations[AUDIT_KEY]
            .starts_with(r#"{"verdict":"allow","reason":"allowed-group","match":"system:masters","subresource":"exec""#)
    );
    assert!(c.lookups().is_empty(), "an allowed user needs no lookup");

    let s = r#"{"allowedUsers":["*@platform.example.com"]}"#;
    let r = run(&exec("trainer-0", "sam@platform.example.com", &USERS), s, &c);
    assert!(r.accepted);
    assert!(r.audit_annotations[AUDIT_KEY].contains(r#""reason":"allowed-user","match":"*@platform.example.com""#));
    assert!(c.lookups().is_empty());
}

#[test]
fn cpu_pods_are_open_after_a_lookup() {
    let c = cluster();
    let r = run(&exec("notebook-0", JANE, &USERS), "{}", &c);
    assert!(r.accepted && r.message.is_none());
    assert!(
        r.audit_annotations[AUDIT_KEY]
            .starts_with(r#"{"verdict":"allow","reason":"no-gpu","subresource":"exec","namespace":"ml","pod":"notebook-0""#)
    );
    assert_eq!(c.lookups(), ["v1 Pod ml/notebook-0"]);
}

#[test]
fn without_the_non_gpu_exception_nobody_else_gets_in_and_nothing_is_looked_up() {
    let c = cluster();
    let r = run(&exec("notebook-0", JANE, &USERS), r#"{"allowNonGpuPods":false}"#, &c);
    assert!(!r.accepted);
    assert_eq!(
        r.message.as_deref().unwrap(),
        "exec into pod `ml/notebook-0` is denied: on this cluster only a member of `system:masters` may open interactive sessions in pods, which otherwise end up used as personal machines; run the work as a Job that exits when it is done, or ask a member of `system:masters`"
    );
    assert!(r.audit_annotations[AUDIT_KEY].contains(r#""verdict":"deny","reason":"not-allowed""#));
    assert!(c.lookups().is_empty());

    let r = run(&exec("notebook-0", JANE, &USERS), r#"{"allowNonGpuPods":false,"allowedGroups":[]}"#, &c);
    let m = r.message.unwrap();
    assert!(m.contains("on this cluster nobody may open interactive sessions in pods"), "{m}");
    assert!(m.ends_with("or ask your cluster administrators"), "{m}");
}

#[test]
fn gpus_in_init_containers_count() {
    let r = run(&exec("serve-0", JANE, &USERS), "{}", &cluster());
    assert!(!r.accepted);
    assert!(r.message.unwrap().contains("it holds 2 GPUs (`amd.com/gpu`)"));
}

#[test]
fn lookup_failures_and_unreadable_pods_deny_and_say_why() {
    let r = run(&exec("ghost-0", JANE, &USERS), "{}", &cluster());
    assert!(!r.accepted);
    let m = r.message.unwrap();
    assert_eq!(
        m,
        "exec into pod `ml/ghost-0` is denied: the pod could not be checked for GPUs: Pod `ml/ghost-0` not found; only pods known to hold no GPU are open to everyone, so check the pod's name and namespace and try again, or ask a member of `system:masters`"
    );
    assert!(r.audit_annotations[AUDIT_KEY].contains(r#""reason":"pod-not-checked","error":"Pod `ml/ghost-0` not found""#));

    for e in [LookupError::Forbidden("not declared".into()), LookupError::Unavailable("the API server timed out".into())] {
        let c = Pods::failing(e.clone());
        let r = run(&exec("trainer-0", JANE, &USERS), "{}", &c);
        assert!(!r.accepted);
        let m = r.message.unwrap();
        assert!(m.contains(&format!("could not be checked for GPUs: {};", e.message())), "{m}");
        assert!(m.ends_with("so try again in a moment, or ask a member of `system:masters`"), "{m}");
    }

    let r = run(&exec("broken-0", JANE, &USERS), "{}", &cluster());
    let m = r.message.unwrap();
    assert!(m.contains("could not be checked for GPUs: the Pod is malformed: `spec.containers`: invalid type"), "{m}");
    assert_eq!(r.code, None, "the request is fine; the pod in the cluster is not");

    let r = run(&exec("bad-quantity-0", JANE, &USERS), "{}", &cluster());
    let m = r.message.unwrap();
    assert!(
        m.contains(
            "could not be checked for GPUs: the Pod's `spec.containers[0].resources.limits[nvidia.com/gpu]`: `lots` is not a valid quantity"
        ),
        "{m}"
    );
}

#[test]
fn attach_is_guarded_and_portforward_only_when_configured() {
    let attach = connect(
        "attach",
        "trainer-0",
        JANE,
        &USERS,
        r#"{"kind":"PodAttachOptions","apiVersion":"v1","container":"pytorch","stdin":true,"tty":true}"#,
    );
    let r = run(&attach, "{}", &cluster());
    assert!(r.message.unwrap().starts_with("attach to pod `ml/trainer-0` is denied: it holds 5 GPUs"));
    assert!(r.audit_annotations[AUDIT_KEY].contains(
        r#""subresource":"attach","namespace":"ml","pod":"trainer-0","container":"pytorch","user":"jane@example.com","command":[]"#
    ));

    let pf = connect("portforward", "trainer-0", JANE, &USERS, r#"{"kind":"PodPortForwardOptions","apiVersion":"v1","ports":[8888,6006]}"#);
    let c = cluster();
    let r = run(&pf, "{}", &c);
    assert_eq!(r, ValidationResponse::accept(), "not governed by default: no record either");
    assert!(c.lookups().is_empty());

    let r = run(&pf, r#"{"guardPortForward":true}"#, &c);
    assert!(!r.accepted);
    let m = r.message.unwrap();
    assert!(m.starts_with("port-forward to pod `ml/trainer-0` is denied"), "{m}");
    assert!(m.contains("serve notebooks and dashboards from a pod without GPUs"), "{m}");
    assert!(
        r.audit_annotations[AUDIT_KEY]
            .contains(r#""container":null,"user":"jane@example.com","ports":[8888,6006],"stdin":false,"tty":false}"#)
    );
}

#[test]
fn proxy_is_guarded_with_portforward_and_looks_up_the_pod_its_name_names() {
    let c = cluster();
    let object = r#"{"kind":"PodProxyOptions","apiVersion":"v1","path":"lab/tree"}"#;
    let proxy = connect("proxy", "trainer-0:8888", JANE, &USERS, object);
    assert_eq!(run(&proxy, "{}", &c), ValidationResponse::accept(), "not governed by default: no record either");
    assert!(c.lookups().is_empty());

    let r = run(&proxy, r#"{"guardPortForward":true}"#, &c);
    assert!(!r.accepted);
    let m = r.message.unwrap();
    assert!(m.starts_with("proxy to pod `ml/trainer-0` is denied: it holds 5 GPUs"), "{m}");
    assert!(m.contains("serve notebooks and dashboards from a pod without GPUs"), "{m}");
    assert_eq!(c.lookups(), ["v1 Pod ml/trainer-0"], "the pod, not `trainer-0:8888`");
    assert!(
        r.audit_annotations[AUDIT_KEY].ends_with(
            r#""subresource":"proxy","namespace":"ml","pod":"trainer-0","container":null,"user":"jane@example.com","port":"8888","path":"lab/tree","stdin":false,"tty":false}"#
        ),
        "{}",
        r.audit_annotations[AUDIT_KEY]
    );

    // `https:pod:port`, a named port, and no port at all.
    let r = run(&connect("proxy", "https:notebook-0:http", JANE, &USERS, "{}"), r#"{"guardPortForward":true}"#, &c);
    assert!(r.accepted, "a CPU pod stays open: {r:?}");
    let record = &r.audit_annotations[AUDIT_KEY];
    assert!(record.contains(r#""reason":"no-gpu","subresource":"proxy","namespace":"ml","pod":"notebook-0""#), "{record}");
    assert!(record.contains(r#""port":"http","path":"""#), "{record}");
    let r = run(&connect("proxy", "serve-0", JANE, &USERS, "{}"), r#"{"guardPortForward":true}"#, &c);
    assert!(r.message.unwrap().starts_with("proxy to pod `ml/serve-0` is denied: it holds 2 GPUs"));
    assert!(r.audit_annotations[AUDIT_KEY].contains(r#""port":null,"path":"""#));

    // A name the API server would refuse is refused here too.
    let r = run(&connect("proxy", "ftp:trainer-0:21", JANE, &USERS, "{}"), r#"{"guardPortForward":true}"#, &c);
    assert_eq!(r.code, Some(400));
    assert_eq!(
        r.message.as_deref(),
        Some(
            "the `CONNECT` request on `pods/proxy` names `ftp:trainer-0:21`, which is not `pod`, `pod:port` or `scheme:pod:port` (scheme `http` or `https`)"
        )
    );
}

#[test]
fn proxy_names_split_as_the_api_server_splits_them() {
    /// The pod and the port, or `None` for a name the API server refuses.
    type Split<'a> = Option<(&'a str, Option<&'a str>)>;
    let cases: [(&str, Split<'_>); 9] = [
        ("nb-0", Some(("nb-0", None))),
        ("nb-0:8888", Some(("nb-0", Some("8888")))),
        ("nb-0:", Some(("nb-0", None))),
        ("http:nb-0:8888", Some(("nb-0", Some("8888")))),
        ("https:nb-0:jupyter", Some(("nb-0", Some("jupyter")))),
        (":nb-0:8888", Some(("nb-0", Some("8888")))),
        (":8888", None),
        ("ftp:nb-0:21", None),
        ("http:nb-0:80:x", None),
    ];
    for (name, want) in cases {
        assert_eq!(split_proxy_name(name), want, "{name}");
    }
}

#[test]
fn only_connect_on_pod_sessions_is_governed() {
    let c = cluster();
    let pod_create = r#"{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
        "name":"trainer-0","namespace":"ml","operation":"CREATE","userInfo":{"username":"jane"},"object":{"spec":{}}}"#;
    assert_eq!(run(pod_create, "{}", &c), ValidationResponse::accept());
    let proxy = connect("proxy", "trainer-0", JANE, &USERS, "null");
    assert_eq!(run(&proxy, "{}", &c), ValidationResponse::accept());
    let node_proxy = r#"{"uid":"u","kind":{"group":"","version":"v1","kind":"NodeProxyOptions"},"resource":{"group":"","version":"v1","resource":"nodes"},
        "subResource":"exec","name":"gpu-node-1","operation":"CONNECT","userInfo":{"username":"jane"}}"#;
    assert_eq!(run(node_proxy, "{}", &c), ValidationResponse::accept());
    assert!(c.lookups().is_empty());
}

#[test]
fn requests_without_resource_fail_closed() {
    let req = r#"{"kind":{"group":"","version":"v1","kind":"PodExecOptions"},"subResource":"exec","name":"trainer-0",
        "namespace":"ml","operation":"CONNECT","userInfo":{"username":"jane"}}"#;
    let r = run(req, "{}", &cluster());
    assert!(!r.accepted);
    assert!(r.audit_annotations[AUDIT_KEY].ends_with(r#""container":null,"user":"jane","command":[],"stdin":false,"tty":false}"#));
}

#[test]
fn malformed_sessions_are_refused_with_400() {
    let no_name = r#"{"kind":{"group":"","version":"v1","kind":"PodExecOptions"},"resource":{"group":"","version":"v1","resource":"pods"},
        "subResource":"exec","namespace":"ml","operation":"CONNECT"}"#;
    let r = run(no_name, "{}", &cluster());
    assert_eq!(r, ValidationResponse::reject("the `CONNECT` request on `pods/exec` does not name the pod", Some(400)));

    let no_ns = r#"{"kind":{"group":"","version":"v1","kind":"PodExecOptions"},"resource":{"group":"","version":"v1","resource":"pods"},
        "subResource":"attach","name":"p","namespace":"","operation":"CONNECT"}"#;
    let r = run(no_ns, "{}", &cluster());
    assert_eq!(r, ValidationResponse::reject("the `CONNECT` request on `pods/attach` has no namespace", Some(400)));

    let bad_command = connect("exec", "trainer-0", JANE, &USERS, r#"{"command":"bash"}"#);
    let r = run(&bad_command, "{}", &cluster());
    assert_eq!(r.code, Some(400));
    assert_eq!(r.message.as_deref(), Some("the PodExecOptions is malformed: `command`: invalid type: string \"bash\", expected a list"));
}

#[test]
fn audit_mode_admits_and_keeps_the_record() {
    let r = run(&exec("trainer-0", JANE, &USERS), r#"{"mode":"audit"}"#, &cluster());
    assert!(r.accepted && r.message.is_none());
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].starts_with("exec-guard (audit mode, not enforced): exec into pod `ml/trainer-0` is denied: it holds 5 GPUs"));
    assert!(r.audit_annotations["violations"].starts_with("exec into pod `ml/trainer-0` is denied"));
    assert!(r.audit_annotations[AUDIT_KEY].starts_with(r#"{"verdict":"deny","reason":"gpu-pod""#));
}

#[test]
fn shared_exemptions_skip_everything() {
    let c = cluster();
    let r = run(&exec("trainer-0", JANE, &USERS), r#"{"exemptNamespaces":["m?"]}"#, &c);
    assert_eq!(r, ValidationResponse::accept());
    let r = run(&exec("trainer-0", JANE, &USERS), r#"{"exemptUsers":["jane@*"]}"#, &c);
    assert_eq!(r, ValidationResponse::accept());
    assert!(c.lookups().is_empty());
}

#[test]
fn who_to_ask() {
    let mut s = Settings::default();
    assert_eq!(who(&s).unwrap(), "a member of `system:masters`");
    s.allowed_groups.push(aigov_sdk::Glob::new("sre"));
    s.allowed_users.push(aigov_sdk::Glob::new("root@example.com"));
    assert_eq!(who(&s).unwrap(), "`root@example.com` or a member of one of `system:masters`, `sre`");
    s.allowed_groups.clear();
    assert_eq!(who(&s).unwrap(), "`root@example.com`");
    s.allowed_users.clear();
    assert_eq!(who(&s), None);
}

#[test]
fn one_gpu_is_singular() {
    let t = Target { session: Session::Exec, namespace: "ml", pod: "p", port: None, user: "u", options: &ConnectOptions::default() };
    let m = denial(&t, &Finding::Gpu { gpus: 1, resources: vec!["nvidia.com/gpu".into()] }, &Settings::default()).unwrap();
    assert!(m.contains("it holds 1 GPU (`nvidia.com/gpu`)"), "{m}");
    assert_eq!(denial(&t, &Finding::NoGpu, &Settings::default()), None);
}

#[test]
fn audit_values_are_escaped_json() {
    let mut s = String::new();
    json_string(&mut s, "a\"b\\c\nd\te\u{1}f é");
    assert_eq!(s, r#""a\"b\\c\nd\te\u0001f é""#);

    let options = ConnectOptions { command: vec!["sh".into(), "-c".into(), "echo \"hi\"".into()], ..ConnectOptions::default() };
    let t = Target { session: Session::Exec, namespace: "ml", pod: "p", port: None, user: "u", options: &options };
    assert_eq!(
        audit_record(&t, &Finding::Unchecked { why: "Pod `ml/p` \"gone\"".into(), not_found: true }),
        r#"{"verdict":"deny","reason":"pod-not-checked","error":"Pod `ml/p` \"gone\"","subresource":"exec","namespace":"ml","pod":"p","container":null,"user":"u","command":["sh","-c","echo \"hi\""],"stdin":false,"tty":false}"#
    );
}
