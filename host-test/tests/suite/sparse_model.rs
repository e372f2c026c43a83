//! The SDK reads requests through a sparse, borrowed model built for speed.
//! This test holds it against the complete typed model (k8s-openapi) on every
//! object of every case file and sample: every pod template the SDK reports
//! is re-read at its path as a typed `PodSpec`, and containers, resources,
//! runtime class, tolerations, labels, the GPU count, images, commands,
//! environment, volume mounts, security contexts, host namespaces, the OS
//! and hostPath and image volumes (`ImageVolumeSource`) must agree. A walk
//! over the raw JSON also finds every `containers` list, so a template the
//! SDK missed fails the test.

use crate::common::root;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aigov_sdk::{GpuResources, Quantity, Request, Role};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use serde_json::Value;

/// Every object in case files (request objects and cluster fixtures) and in
/// the samples directory.
fn corpus() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    for dir in [root().join("policies"), root().join("host-test/samples"), root().join("host-test/bench")] {
        collect(&dir, &mut files);
    }
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let Ok(docs) = aigov::run::admission::parse_documents(&text) else { continue };
        let shown = f.strip_prefix(root()).unwrap_or(&f).display().to_string();
        for doc in docs {
            let mut found = Vec::new();
            gather(&doc, &mut found);
            out.extend(found.into_iter().map(|o| (shown.clone(), o)));
        }
    }
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            let s = p.to_string_lossy();
            let data = matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"));
            if data && (s.contains("/tests/cases/") || s.contains("/samples/") || s.contains("/bench/")) {
                out.push(p);
            }
        }
    }
}

/// Kubernetes objects inside a document: the document itself, a case's
/// `request.object`, `request.admissionRequest.object`, `cluster` items, an
/// AdmissionReview's request object.
fn gather(v: &Value, out: &mut Vec<Value>) {
    if v.get("apiVersion").is_some()
        && v.get("kind").and_then(Value::as_str).is_some()
        && v.get("kind") != Some(&Value::from("AdmissionReview"))
    {
        out.push(v.clone());
        return;
    }
    for key in ["request", "object", "admissionRequest"] {
        if let Some(inner) = v.get(key) {
            gather(inner, out);
        }
    }
    if let Some(items) = v.get("cluster").and_then(Value::as_array) {
        items.iter().for_each(|i| gather(i, out));
    }
}

/// The API server stores quantities as strings; hand-written YAML may use
/// bare numbers. Normalise like the server does before the typed parse.
fn stringify_quantities(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if (k == "limits" || k == "requests" || k == "resourcesPerNode")
                    && child.is_object()
                    && let Some(res) = child.as_object_mut()
                {
                    for q in res.values_mut() {
                        if let Value::Number(n) = q {
                            *q = Value::String(n.to_string());
                        }
                    }
                }
                stringify_quantities(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(stringify_quantities),
        _ => {}
    }
}

/// `spec.workerGroupSpecs[1].template.spec` -> `/spec/workerGroupSpecs/1/template/spec`.
fn pointer(path: &str) -> String {
    let mut p = String::new();
    for part in path.split('.') {
        let (field, rest) = part.split_once('[').unwrap_or((part, ""));
        p.push('/');
        p.push_str(&field.replace('~', "~0").replace('/', "~1"));
        for idx in rest.split('[') {
            let idx = idx.trim_end_matches(']');
            if !idx.is_empty() {
                p.push('/');
                p.push_str(idx);
            }
        }
    }
    p
}

/// JSON pointers of every object holding a `containers` list: the pod specs.
fn pod_specs(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if map.get("containers").is_some_and(Value::is_array) {
                out.push(at.to_string());
            }
            for (k, child) in map {
                pod_specs(child, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pod_specs(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn resources(c: &Container) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let list = |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
        m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()).unwrap_or_default()
    };
    let r = c.resources.as_ref();
    (list(r.and_then(|r| r.limits.as_ref())), list(r.and_then(|r| r.requests.as_ref())))
}

/// The scheduler's GPU count, computed independently from the typed model.
fn typed_gpus(spec: &PodSpec, gpus: &GpuResources) -> u64 {
    let count = |c: &Container| -> u64 {
        let (limits, requests) = resources(c);
        let mut per: BTreeMap<String, u64> = BTreeMap::new();
        for (name, q) in limits.iter().chain(requests.iter()) {
            if gpus.is_gpu(name) {
                let n = Quantity::parse(q).unwrap().ceil_units();
                let e = per.entry(name.clone()).or_default();
                *e = (*e).max(n);
            }
        }
        per.values().sum()
    };
    let regular: u64 = spec.containers.iter().map(count).sum();
    let (mut sidecars, mut peak) = (0u64, 0u64);
    for c in spec.init_containers.iter().flatten() {
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars += count(c);
        } else {
            peak = peak.max(count(c) + sidecars);
        }
    }
    (regular + sidecars).max(peak)
}

/// The security-relevant fields of a container or pod security context,
/// as a comparable summary: from the typed model's JSON (so the typed
/// parse vouches for it) or from the sparse model.
type SecuritySummary =
    (Option<bool>, Option<bool>, Option<bool>, Option<i64>, Vec<String>, Vec<String>, Option<String>, Option<String>, Option<bool>);

fn typed_security(sc: Option<&Value>) -> SecuritySummary {
    let Some(sc) = sc else { return SecuritySummary::default() };
    let b = |k: &str| sc.get(k).and_then(Value::as_bool);
    let list = |k: &str| {
        sc.pointer(&format!("/capabilities/{k}"))
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let s = |p: &str| sc.pointer(p).and_then(Value::as_str).map(str::to_string);
    (
        b("privileged"),
        b("allowPrivilegeEscalation"),
        b("runAsNonRoot"),
        sc.get("runAsUser").and_then(Value::as_i64),
        list("add"),
        list("drop"),
        s("/seccompProfile/type"),
        s("/appArmorProfile/type"),
        sc.pointer("/windowsOptions/hostProcess").and_then(Value::as_bool),
    )
}

fn sparse_security(sc: Option<&aigov_sdk::model::pod::SecurityContext<'_>>) -> SecuritySummary {
    let Some(sc) = sc else { return SecuritySummary::default() };
    let names = |l: &[aigov_sdk::Str<'_>]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (add, drop) = sc.capabilities.as_ref().map(|c| (names(&c.add), names(&c.drop))).unwrap_or_default();
    (
        sc.privileged,
        sc.allow_privilege_escalation,
        sc.run_as_non_root,
        sc.run_as_user,
        add,
        drop,
        sc.seccomp_profile.as_ref().and_then(|p| p.kind.as_deref()).map(str::to_string),
        sc.app_armor_profile.as_ref().and_then(|p| p.kind.as_deref()).map(str::to_string),
        sc.windows_options.as_ref().and_then(|w| w.host_process),
    )
}

/// Image, command, args, env (name, literal value, `valueFrom` set), volume
/// mounts (name, readOnly) and security context of a container.
fn typed_container(c: &Value) -> String {
    let strs = |k: &str| -> Vec<String> {
        c.get(k).and_then(Value::as_array).map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    let env: Vec<(String, Option<String>, bool)> = c
        .get("env")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["name"].as_str().unwrap().to_string(),
                        e.get("value").and_then(Value::as_str).map(str::to_string),
                        e.get("valueFrom").is_some(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mounts: Vec<(String, Option<bool>)> = c
        .get("volumeMounts")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|m| (m["name"].as_str().unwrap().to_string(), m.get("readOnly").and_then(Value::as_bool))).collect())
        .unwrap_or_default();
    let image = c.get("image").and_then(Value::as_str).map(str::to_string);
    format!("{image:?} {:?} {:?} {env:?} {mounts:?} {:?}", strs("command"), strs("args"), typed_security(c.get("securityContext")))
}

fn sparse_container(c: &aigov_sdk::Container<'_>) -> String {
    let strs = |l: &[aigov_sdk::Str<'_>]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let env: Vec<(String, Option<String>, bool)> =
        c.env.iter().map(|e| (e.name.to_string(), e.value.as_deref().map(str::to_string), e.from_source)).collect();
    let mounts: Vec<(String, Option<bool>)> = c.volume_mounts.iter().map(|m| (m.name.to_string(), m.read_only)).collect();
    let image = c.image.as_deref().map(str::to_string);
    format!("{image:?} {:?} {:?} {env:?} {mounts:?} {:?}", strs(&c.command), strs(&c.args), sparse_security(c.security_context.as_ref()))
}

/// Pod-level fields: host namespaces, user namespace, OS, security
/// context, hostPath and image volumes.
fn typed_pod(spec: &Value) -> String {
    let b = |k: &str| spec.get(k).and_then(Value::as_bool);
    let volumes: Vec<(String, Option<String>, Option<Option<String>>)> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| {
                    (
                        v["name"].as_str().unwrap().to_string(),
                        v.pointer("/hostPath/path").and_then(Value::as_str).map(str::to_string),
                        v.get("image").map(|i| i.get("reference").and_then(Value::as_str).map(str::to_string)),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let os = spec.pointer("/os/name").and_then(Value::as_str).map(str::to_string);
    format!(
        "{:?} {:?} {:?} {:?} {os:?} {:?} {volumes:?}",
        b("hostNetwork"),
        b("hostPID"),
        b("hostIPC"),
        b("hostUsers"),
        typed_security(spec.get("securityContext"))
    )
}

fn sparse_pod(spec: &aigov_sdk::PodSpec<'_>) -> String {
    let volumes: Vec<(String, Option<String>, Option<Option<String>>)> = spec
        .volumes
        .iter()
        .map(|v| {
            (
                v.name.to_string(),
                v.host_path.as_ref().map(|h| h.path.to_string()),
                v.image.as_ref().map(|i| i.reference.as_deref().map(str::to_string)),
            )
        })
        .collect();
    let os = spec.os.as_ref().map(|o| o.name.to_string());
    format!(
        "{:?} {:?} {:?} {:?} {os:?} {:?} {volumes:?}",
        spec.host_network,
        spec.host_pid,
        spec.host_ipc,
        spec.host_users,
        sparse_security(spec.security_context.as_ref())
    )
}

/// A pod spec as the typed model reads it: a TrainJob's override or
/// runtime patch may have no spec, or name no container, which
/// k8s-openapi requires.
fn partial_spec(t: &aigov_sdk::PodTemplate<'_>, raw: Option<&Value>) -> Value {
    let mut raw = raw.cloned().unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    if t.is_partial()
        && let Some(o) = raw.as_object_mut()
    {
        o.entry("containers").or_insert_with(|| Value::Array(Vec::new()));
    }
    raw
}

#[test]
fn the_sparse_model_agrees_with_k8s_openapi_on_every_object() {
    let gpus = GpuResources::default();
    let corpus = corpus();
    let mut templates_checked = 0usize;
    let mut workloads = 0usize;
    let mut cron_jobs_checked = 0usize;
    for (file, object) in &corpus {
        let Some(api_version) = object.get("apiVersion").and_then(Value::as_str) else { continue };
        let kind = object["kind"].as_str().unwrap();
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if aigov_sdk::WorkloadKind::of(group, kind).is_none() {
            continue;
        }
        let request = serde_json::json!({"uid": "u", "kind": {"group": group, "version": "v1", "kind": kind},
            "operation": "CREATE", "object": object})
        .to_string();
        let mut normalised = object.clone();
        stringify_quantities(&mut normalised);
        let parsed = Request::parse(&request);
        let workload = match parsed.as_ref().map(Request::workload) {
            Ok(Some(w)) => w,
            Ok(None) => panic!("{file}: {kind} was not read as a workload"),
            Err(e) => {
                // The sparse model refused it: the typed model must refuse some
                // template too, or the object is malformed outside pod specs.
                let mut at = Vec::new();
                pod_specs(&normalised, "", &mut at);
                let typed_ok = at.iter().all(|p| serde_json::from_value::<PodSpec>(normalised.pointer(p).unwrap().clone()).is_ok());
                let bad_quantity = e.0.contains("is not a valid quantity");
                assert!(
                    !typed_ok || bad_quantity || !e.0.contains(".spec"),
                    "{file}: SDK refused ({e}) but the typed model reads every pod spec"
                );
                continue;
            }
        };
        workloads += 1;
        if workload.kind == aigov_sdk::WorkloadKind::CronJob {
            cron_jobs_agree(file, &normalised, workload);
            cron_jobs_checked += 1;
        }
        let mut reported: Vec<String> = Vec::new();
        // KServe's components are pod specs with a model container beside
        // them, which no core type describes: compared by their own tests.
        if workload.kind == aigov_sdk::WorkloadKind::InferenceService {
            continue;
        }
        for t in workload.templates() {
            // A TrainJob's trainer is no pod spec; its overrides and runtime
            // patches are (the pod fields the Trainer merges), possibly
            // without containers. KubeRay's default submitter is no part
            // of the object.
            if t.role == Role::Trainer || t.is_default() {
                continue;
            }
            let ptr = t.spec_path().pointer();
            reported.push(ptr.clone());
            let found = normalised.pointer(&ptr);
            assert!(found.is_some() || t.is_partial(), "{file}: the SDK reports {} but the object has nothing there", t.spec_path());
            let raw = partial_spec(t, found);
            let typed: PodSpec =
                serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{file}: typed PodSpec at {}: {e}", t.spec_path()));
            let sparse = &t.spec;
            let names = |cs: &[aigov_sdk::Container<'_>]| cs.iter().map(|c| c.name.to_string()).collect::<Vec<_>>();
            assert_eq!(
                names(&sparse.containers),
                typed.containers.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "{file} {}",
                t.spec_path()
            );
            assert_eq!(
                names(&sparse.init_containers),
                typed.init_containers.iter().flatten().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "{file}"
            );
            assert_eq!(sparse.ephemeral_containers.len(), typed.ephemeral_containers.as_ref().map_or(0, Vec::len), "{file}");
            for (s, ty) in sparse
                .containers
                .iter()
                .chain(&sparse.init_containers)
                .zip(typed.containers.iter().chain(typed.init_containers.iter().flatten()))
            {
                let (limits, requests) = resources(ty);
                let sl: BTreeMap<String, String> = s.resources.limits.iter().map(|(k, v)| (k.to_string(), v.0.to_string())).collect();
                let sr: BTreeMap<String, String> = s.resources.requests.iter().map(|(k, v)| (k.to_string(), v.0.to_string())).collect();
                assert_eq!(sl, limits, "{file} {} limits", t.spec_path());
                assert_eq!(sr, requests, "{file} {} requests", t.spec_path());
                assert_eq!(s.restart_policy.as_deref(), ty.restart_policy.as_deref(), "{file}");
            }
            assert_eq!(sparse.runtime_class_name.as_deref(), typed.runtime_class_name.as_deref(), "{file}");
            // Security-relevant fields, through the typed model's JSON.
            let typed_json = serde_json::to_value(&typed).unwrap();
            assert_eq!(sparse_pod(sparse), typed_pod(&typed_json), "{file} {} pod fields", t.spec_path());
            for list in ["containers", "initContainers", "ephemeralContainers"] {
                let typed_list: Vec<String> =
                    typed_json.get(list).and_then(Value::as_array).map(|a| a.iter().map(typed_container).collect()).unwrap_or_default();
                let sparse_list: Vec<String> = match list {
                    "containers" => &sparse.containers,
                    "initContainers" => &sparse.init_containers,
                    _ => &sparse.ephemeral_containers,
                }
                .iter()
                .map(sparse_container)
                .collect();
                assert_eq!(sparse_list, typed_list, "{file} {} {list}", t.spec_path());
            }
            let pod_limits = |limits: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
                limits.map(|l| l.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect::<BTreeMap<_, _>>())
            };
            assert_eq!(
                sparse.resources.as_ref().map(|r| r
                    .limits
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.0.to_string()))
                    .collect::<BTreeMap<_, _>>()),
                typed.resources.as_ref().map(|r| pod_limits(r.limits.as_ref()).unwrap_or_default()),
                "{file} {} pod-level limits",
                t.spec_path()
            );
            let tols = |t: &PodSpec| {
                t.tolerations
                    .iter()
                    .flatten()
                    .map(|t| (t.key.clone(), t.operator.clone(), t.value.clone(), t.effect.clone()))
                    .collect::<Vec<_>>()
            };
            let sparse_tols: Vec<_> = sparse
                .tolerations
                .iter()
                .map(|t| {
                    let s = |v: &Option<aigov_sdk::Str<'_>>| v.as_ref().map(|x| x.to_string());
                    (s(&t.key), s(&t.operator), s(&t.value), s(&t.effect))
                })
                .collect();
            assert_eq!(sparse_tols, tols(&typed), "{file} {} tolerations", t.spec_path());
            if let Ok(n) = t.gpu_units_per_pod(&gpus) {
                assert_eq!(n, typed_gpus(&typed, &gpus), "{file} {} GPUs", t.spec_path());
            }
            if let Some(labels) = t.labels() {
                let tpl_ptr = t.path().pointer();
                let typed_tpl: PodTemplateSpec = serde_json::from_value(normalised.pointer(&tpl_ptr).unwrap().clone()).unwrap();
                let typed_labels = typed_tpl.metadata.and_then(|m| m.labels).unwrap_or_default();
                let sparse_labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                assert_eq!(sparse_labels, typed_labels, "{file} {} labels", t.path());
            }
            templates_checked += 1;
        }
        // Completeness: every `containers` list in the object belongs to a
        // template the SDK reported.
        let mut present = Vec::new();
        pod_specs(&normalised, "", &mut present);
        let partial = workload.templates().any(|t| t.is_partial());
        if !partial {
            reported.sort();
            present.sort();
            assert_eq!(reported, present, "{file}: {kind} pod specs found by the SDK vs present in the object");
        }
    }
    assert!(workloads >= 20, "the corpus holds only {workloads} workload objects");
    assert!(cron_jobs_checked >= 10, "only {cron_jobs_checked} CronJobs were compared");
    assert!(templates_checked >= 20, "only {templates_checked} templates were compared");
}

/// A CronJob's Jobs at once are read from the fields the typed model
/// has: `concurrencyPolicy`, `schedule`, and the job template's
/// `activeDeadlineSeconds` and `suspend`.
fn cron_jobs_agree(file: &str, object: &Value, w: &aigov_sdk::Workload<'_>) {
    use aigov_sdk::model::workload::{Concurrency, CronJobs, JobsBound, ScaleWhy};
    use k8s_openapi::api::batch::v1::CronJob;
    fn find(why: &ScaleWhy) -> Option<&CronJobs> {
        match why {
            ScaleWhy::CronJobs(c) => Some(c),
            ScaleWhy::Times(a, b) | ScaleWhy::Below(a, b) => find(a).or_else(|| find(b)),
            _ => None,
        }
    }
    let typed: CronJob = serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{file}: typed CronJob: {e}"));
    let spec = typed.spec;
    let job = spec.job_template.spec.unwrap_or_default();
    let Some(t) = w.templates().next() else { return };
    let c = find(&t.scale.why).unwrap_or_else(|| panic!("{file}: the CronJob's scale says nothing of its Jobs: {}", t.scale.why));
    let policy = match spec.concurrency_policy.as_deref() {
        None => Concurrency::Unset,
        Some("Allow") => Concurrency::Allow,
        Some("Forbid") => Concurrency::Forbid,
        Some("Replace") => Concurrency::Replace,
        Some(_) => Concurrency::Other,
    };
    assert_eq!(c.policy, policy, "{file}: concurrencyPolicy");
    let gap = aigov_sdk::base::cron::min_gap_seconds(&spec.schedule);
    let forbid = matches!(policy, Concurrency::Forbid | Concurrency::Replace);
    let expected = match (forbid, job.active_deadline_seconds, job.suspend, gap) {
        (true, ..) => JobsBound::OneAtATime,
        (false, None, ..) => JobsBound::NoDeadline,
        (false, Some(_), Some(true), _) => JobsBound::Suspended,
        (false, Some(_), _, None) => JobsBound::Unreadable,
        (false, Some(deadline), _, Some(gap)) => {
            JobsBound::Deadline { deadline, gap, jobs: u64::try_from(deadline).unwrap_or(0).div_ceil(gap) }
        }
    };
    assert_eq!(c.bound, expected, "{file}: the CronJob's Jobs at once");
}

#[test]
fn pointers() {
    assert_eq!(pointer("spec.workerGroupSpecs[1].template.spec"), "/spec/workerGroupSpecs/1/template/spec");
    assert_eq!(pointer("spec"), "/spec");
    assert_eq!(pointer("spec.pytorchReplicaSpecs.Worker.template.spec"), "/spec/pytorchReplicaSpecs/Worker/template/spec");
}

/// The fields the Pod Security Standards' remaining controls read (host
/// and container ports, probe and lifecycle hosts, SELinux options, `procMount`, sysctls,
/// group IDs, `shareProcessNamespace`, volume types and flexVolume
/// drivers), as a comparable text: from the typed model's JSON of a pod
/// spec, or from the sparse model.
fn typed_pss_fields(spec: &Value) -> String {
    let arr = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let se_linux = |sc: Option<&Value>| {
        sc.and_then(|sc| sc.get("seLinuxOptions")).map(|o| [s(o, "/user"), s(o, "/role"), s(o, "/type"), s(o, "/level")])
    };
    let mut out = Vec::new();
    let sc = spec.get("securityContext");
    out.push(format!(
        "pod {:?} {:?} {:?} {:?} {:?}",
        spec.get("shareProcessNamespace").and_then(Value::as_bool),
        se_linux(sc),
        arr(sc.and_then(|sc| sc.get("sysctls"))).iter().map(|x| s(x, "/name")).collect::<Vec<_>>(),
        arr(sc.and_then(|sc| sc.get("supplementalGroups"))).iter().map(Value::as_i64).collect::<Vec<_>>(),
        sc.and_then(|sc| sc.get("fsGroup")).and_then(Value::as_i64),
    ));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in arr(spec.get(list)) {
            let hosts: Vec<Option<String>> = [
                "/livenessProbe/httpGet/host",
                "/livenessProbe/tcpSocket/host",
                "/readinessProbe/httpGet/host",
                "/readinessProbe/tcpSocket/host",
                "/startupProbe/httpGet/host",
                "/startupProbe/tcpSocket/host",
                "/lifecycle/postStart/httpGet/host",
                "/lifecycle/postStart/tcpSocket/host",
                "/lifecycle/preStop/httpGet/host",
                "/lifecycle/preStop/tcpSocket/host",
            ]
            .iter()
            .map(|p| s(&c, p))
            .collect();
            let ports: Vec<(Option<i64>, Option<i64>)> = arr(c.get("ports"))
                .iter()
                .map(|p| (p.get("hostPort").and_then(Value::as_i64), p.get("containerPort").and_then(Value::as_i64)))
                .collect();
            out.push(format!(
                "{list} {ports:?} {hosts:?} {:?} {:?} {:?}",
                se_linux(c.get("securityContext")),
                s(&c, "/securityContext/procMount"),
                c.pointer("/securityContext/runAsGroup").and_then(Value::as_i64)
            ));
        }
    }
    for v in arr(spec.get("volumes")) {
        let sources: Vec<&String> = v.as_object().map(|o| o.keys().filter(|k| *k != "name").collect()).unwrap_or_default();
        out.push(format!("volume {sources:?} {:?}", s(&v, "/flexVolume/driver")));
    }
    out.join("\n")
}

fn sparse_pss_fields(spec: &aigov_sdk::PodSpec<'_>) -> String {
    use aigov_sdk::model::pod::{Handler, SeLinuxOptions};
    let s = |v: &Option<aigov_sdk::Str<'_>>| v.as_ref().map(|x| x.to_string());
    let se_linux = |o: Option<&SeLinuxOptions<'_>>| o.map(|o| [s(&o.user), s(&o.role), s(&o.kind), s(&o.level)]);
    let mut out = Vec::new();
    let sc = spec.security_context.as_ref();
    out.push(format!(
        "pod {:?} {:?} {:?} {:?} {:?}",
        spec.share_process_namespace,
        se_linux(sc.and_then(|sc| sc.se_linux_options.as_ref())),
        sc.map(|sc| sc.sysctls.iter().map(|x| Some(x.name.to_string())).collect::<Vec<_>>()).unwrap_or_default(),
        sc.map(|sc| sc.supplemental_groups.iter().map(|g| Some(*g)).collect::<Vec<_>>()).unwrap_or_default(),
        sc.and_then(|sc| sc.fs_group),
    ));
    for (list, containers) in
        [("containers", &spec.containers), ("initContainers", &spec.init_containers), ("ephemeralContainers", &spec.ephemeral_containers)]
    {
        for c in containers {
            let host = |h: Option<&Handler<'_>>| {
                [
                    h.and_then(|h| h.http_get.as_ref()).and_then(|a| s(&a.host)),
                    h.and_then(|h| h.tcp_socket.as_ref()).and_then(|a| s(&a.host)),
                ]
            };
            let lifecycle = c.lifecycle.as_ref();
            let hosts: Vec<Option<String>> = [
                host(c.liveness_probe.as_ref()),
                host(c.readiness_probe.as_ref()),
                host(c.startup_probe.as_ref()),
                host(lifecycle.and_then(|l| l.post_start.as_ref())),
                host(lifecycle.and_then(|l| l.pre_stop.as_ref())),
            ]
            .into_iter()
            .flatten()
            .collect();
            let ports: Vec<(Option<i64>, Option<i64>)> = c.ports.iter().map(|p| (p.host_port, p.container_port)).collect();
            let sc = c.security_context.as_ref();
            out.push(format!(
                "{list} {ports:?} {hosts:?} {:?} {:?} {:?}",
                se_linux(sc.and_then(|sc| sc.se_linux_options.as_ref())),
                sc.and_then(|sc| s(&sc.proc_mount)),
                sc.and_then(|sc| sc.run_as_group)
            ));
        }
    }
    for v in &spec.volumes {
        let sources: Vec<String> = v.sources.iter().map(|k| k.to_string()).collect();
        out.push(format!("volume {:?} {:?}", sources.iter().collect::<Vec<_>>(), v.flex_volume.as_ref().map(|f| f.driver.to_string())));
    }
    out.join("\n")
}

#[test]
fn the_sparse_model_reads_the_pod_security_fields_as_k8s_openapi_does() {
    let mut compared = 0usize;
    for (file, object) in &corpus() {
        let Some(api_version) = object.get("apiVersion").and_then(Value::as_str) else { continue };
        let kind = object["kind"].as_str().unwrap();
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if aigov_sdk::WorkloadKind::of(group, kind).is_none() {
            continue;
        }
        let request = serde_json::json!({"uid": "u", "kind": {"group": group, "version": "v1", "kind": kind},
            "operation": "CREATE", "object": object})
        .to_string();
        let mut normalised = object.clone();
        stringify_quantities(&mut normalised);
        let Ok(parsed) = Request::parse(&request) else { continue };
        let Some(workload) = parsed.workload() else { continue };
        if workload.kind == aigov_sdk::WorkloadKind::InferenceService {
            continue;
        }
        for t in workload.templates().filter(|t| t.role != Role::Trainer && !t.is_default()) {
            let raw = partial_spec(t, normalised.pointer(&t.spec_path().pointer()));
            let typed: PodSpec = serde_json::from_value(raw).unwrap();
            let typed_json = serde_json::to_value(&typed).unwrap();
            assert_eq!(sparse_pss_fields(&t.spec), typed_pss_fields(&typed_json), "{file} {}", t.spec_path());
            compared += 1;
        }
    }
    assert!(compared >= 20, "only {compared} templates were compared");
}
