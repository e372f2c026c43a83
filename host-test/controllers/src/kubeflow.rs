//! Kubeflow's training operator (`kubeflow/trainer` at v1.9.4,
//! `pkg/controller.v1/`: PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob,
//! and the v1 MPIJob) and the MPI operator (`kubeflow/mpi-operator`,
//! `pkg/controller/mpi_job_controller.go`: the v2beta1 MPIJob).

use serde_json::{Value, json};

use crate::Built;
use crate::core::{built, job_defaults, label_template};
use crate::identity::{MPI_OPERATOR, TRAINING_OPERATOR};
use crate::json::{Object, at, list_at, list_mut, map_at, s, set, set_default, str_at};
use crate::pod::{Naming, from_template};

/// The training operator's kinds, each with its replica specs' field and
/// its controller's name (the `training.kubeflow.org/operator-name` label).
const KINDS: [(&str, &str, &str); 6] = [
    ("PyTorchJob", "pytorchReplicaSpecs", "pytorchjob-controller"),
    ("TFJob", "tfReplicaSpecs", "tfjob-controller"),
    ("XGBoostJob", "xgbReplicaSpecs", "xgboostjob-controller"),
    ("PaddleJob", "paddleReplicaSpecs", "paddlejob-controller"),
    ("JAXJob", "jaxReplicaSpecs", "jaxjob-controller"),
    ("MPIJob", "mpiReplicaSpecs", "mpijob-controller"),
];

/// Whether `kind` is one the training operator runs.
pub(crate) fn is_training_job(kind: &str) -> bool {
    KINDS.iter().any(|(k, _, _)| *k == kind)
}

/// A training-operator job → one pod per replica type (the first index;
/// `common/pod.go`, `createNewPod`): named `<job>-<type>-0`, the operator's
/// labels over the template's, the replica spec's restart policy, the
/// environment the framework needs, and for a PyTorchJob with a `Master`
/// the `init-pytorch` init container it puts in every worker
/// (`pytorch/initcontainer.go`: `alpine:3.10`, no security context).
pub(crate) fn training_job(job: &Object<'_>) -> Vec<Built> {
    let kind = job.kind();
    if kind == "MPIJob" && job.api_version() != "kubeflow.org/v1" {
        return mpi_job(job);
    }
    let Some((_, field, operator)) = KINDS.iter().find(|(k, _, _)| *k == kind) else { return Vec::new() };
    let specs = map_at(job.value, &["spec", field]);
    let has_master = specs.keys().any(|t| t.eq_ignore_ascii_case("master"));
    let name = job.name();
    let mut out = Vec::new();
    for (rtype, spec) in &specs {
        let Some(template) = at(spec, &["template"]) else { continue };
        let lower = rtype.to_ascii_lowercase();
        let mut template = template.clone();
        let mut labels = vec![
            ("training.kubeflow.org/operator-name", operator.to_string()),
            ("training.kubeflow.org/job-name", name.replace('/', "-")),
            ("training.kubeflow.org/replica-type", lower.clone()),
            ("training.kubeflow.org/replica-index", "0".to_string()),
        ];
        if is_master_role(kind, &lower, has_master) {
            labels.push(("training.kubeflow.org/job-role", "master".to_string()));
        }
        label_template(&mut template, &labels);
        let restart = match str_at(spec, &["restartPolicy"]) {
            Some("ExitCode") => "Never".to_string(),
            Some(p) => p.to_string(),
            None => "OnFailure".to_string(),
        };
        set(&mut template, &["spec", "restartPolicy"], s(restart));
        if kind == "PyTorchJob" {
            pytorch(&mut template, &name, &lower, has_master, &specs);
        }
        let pod = from_template(&template, job.namespace, Naming::Name(format!("{name}-{lower}-0")), job.controller_ref());
        out.push(built(pod, &TRAINING_OPERATOR, job));
    }
    out
}

fn is_master_role(kind: &str, rtype: &str, has_master: bool) -> bool {
    match kind {
        "PyTorchJob" | "TFJob" if has_master => rtype == "master" || rtype == "chief",
        "PyTorchJob" | "TFJob" => rtype == "worker",
        "XGBoostJob" | "PaddleJob" => rtype == "master",
        _ => true,
    }
}

/// What the PyTorchJob controller adds (`pytorch/envvar.go`,
/// `pytorch_defaults.go`, `pytorch/initcontainer.go`): the `pytorchjob-port`
/// on the `pytorch` container when it has none, the rendezvous environment
/// in every container, and the `init-pytorch` init container in workers
/// when there is a master.
fn pytorch(template: &mut Value, job: &str, rtype: &str, has_master: bool, specs: &serde_json::Map<String, Value>) {
    for c in list_mut(template, &["spec", "containers"]).iter_mut() {
        if str_at(c, &["name"]) == Some("pytorch")
            && !list_at(c, &["ports"]).iter().any(|p| str_at(p, &["name"]) == Some("pytorchjob-port"))
        {
            list_mut(c, &["ports"]).push(json!({"name": "pytorchjob-port", "containerPort": 23456}));
        }
        let mut env = vec![json!({"name": "PYTHONUNBUFFERED", "value": "1"})];
        if has_master {
            let world: i64 = specs.values().map(|s| at(s, &["replicas"]).and_then(Value::as_i64).unwrap_or(1)).sum();
            env.extend([
                json!({"name": "MASTER_PORT", "value": "23456"}),
                json!({"name": "PET_MASTER_PORT", "value": "23456"}),
                json!({"name": "MASTER_ADDR", "value": format!("{job}-master-0")}),
                json!({"name": "PET_MASTER_ADDR", "value": format!("{job}-master-0")}),
                json!({"name": "WORLD_SIZE", "value": world.to_string()}),
                json!({"name": "RANK", "value": if rtype == "master" { "0" } else { "1" }}),
                json!({"name": "PET_NODE_RANK", "value": if rtype == "master" { "0" } else { "1" }}),
                json!({"name": "PET_NNODES", "value": world.to_string()}),
            ]);
        }
        list_mut(c, &["env"]).extend(env);
    }
    if has_master && rtype == "worker" {
        list_mut(template, &["spec", "initContainers"]).push(json!({
            "name": "init-pytorch",
            "image": "alpine:3.10",
            "imagePullPolicy": "IfNotPresent",
            "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
            "command": ["sh", "-c", format!("err=1;for i in $(seq 100); do if nslookup {job}-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err")],
        }));
    }
}

/// A v2beta1 MPIJob → its launcher, a Job `<mpijob>-launcher`
/// (`newLauncherJob`, `newLauncherPodTemplate`), and its first worker pod
/// `<mpijob>-worker-0` (`newWorker`), both by the MPI operator: the
/// operator's labels, the hostfile and SSH volumes, `sshd` as the worker's
/// command when it has none, and for a launcher that runs no rank no GPU
/// visible to it.
pub(crate) fn mpi_job(job: &Object<'_>) -> Vec<Built> {
    let name = job.name();
    let specs = map_at(job.value, &["spec", "mpiReplicaSpecs"]);
    let as_worker = at(job.value, &["spec", "runLauncherAsWorker"]).and_then(Value::as_bool) == Some(true);
    let ssh_path = str_at(job.value, &["spec", "sshAuthMountPath"]).unwrap_or("/root/.ssh").to_string();
    let labels = |role: &str| {
        vec![
            ("training.kubeflow.org/operator-name", "mpi-operator".to_string()),
            ("training.kubeflow.org/job-name", name.clone()),
            ("training.kubeflow.org/job-role", role.to_string()),
        ]
    };
    let ssh = |template: &mut Value| {
        let mode = if ssh_path == "/root/.ssh" { 0o600 } else { 0o644 };
        list_mut(template, &["spec", "volumes"]).push(json!({
            "name": "ssh-auth",
            "secret": {"secretName": format!("{name}-ssh"), "defaultMode": mode, "items": [
                {"key": "ssh-privatekey", "path": "id_rsa"}, {"key": "ssh-publickey", "path": "id_rsa.pub"}, {"key": "ssh-publickey", "path": "authorized_keys"}
            ]}
        }));
        for c in list_mut(template, &["spec", "containers"]).iter_mut() {
            list_mut(c, &["volumeMounts"]).push(json!({"name": "ssh-auth", "mountPath": ssh_path}));
        }
    };
    let mut out = Vec::new();
    for (rtype, spec) in &specs {
        let Some(template) = at(spec, &["template"]) else { continue };
        let mut template = template.clone();
        match rtype.as_str() {
            "Launcher" => {
                let mut l = labels("launcher");
                if as_worker {
                    l.push(("training.kubeflow.org/replica-index", "0".to_string()));
                }
                label_template(&mut template, &l);
                set(&mut template, &["spec", "hostname"], s(format!("{name}-launcher")));
                set(&mut template, &["spec", "subdomain"], s(name.clone()));
                set_default(&mut template, &["spec", "restartPolicy"], s(restart(spec, "OnFailure")));
                if let Some(first) = list_mut(&mut template, &["spec", "containers"]).first_mut() {
                    let mut env = vec![
                        json!({"name": "K_MPI_JOB_ROLE", "value": "launcher"}),
                        json!({"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"}),
                    ];
                    if !as_worker {
                        env.push(json!({"name": "NVIDIA_VISIBLE_DEVICES", "value": ""}));
                        env.push(json!({"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""}));
                    }
                    list_mut(first, &["env"]).extend(env);
                    list_mut(first, &["volumeMounts"]).push(json!({"name": "mpi-job-config", "mountPath": "/etc/mpi"}));
                }
                list_mut(&mut template, &["spec", "volumes"])
                    .push(json!({"name": "mpi-job-config", "configMap": {"name": format!("{name}-config")}}));
                ssh(&mut template);
                let mut launcher = json!({
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": format!("{name}-launcher"), "namespace": job.namespace, "labels": {"app": name}, "ownerReferences": [job.controller_ref()]},
                    "spec": {"template": template, "podReplacementPolicy": "Failed"},
                });
                for (key, from) in [
                    ("ttlSecondsAfterFinished", "ttlSecondsAfterFinished"),
                    ("activeDeadlineSeconds", "activeDeadlineSeconds"),
                    ("backoffLimit", "backoffLimit"),
                ] {
                    if let Some(v) = at(job.value, &["spec", "runPolicy", from]) {
                        set(&mut launcher, &["spec", key], v.clone());
                    }
                }
                job_defaults(&mut launcher);
                out.push(built(launcher, &MPI_OPERATOR, job));
            }
            _ => {
                let index = if as_worker { "1" } else { "0" };
                let mut l = labels("worker");
                l.push(("training.kubeflow.org/replica-index", index.to_string()));
                label_template(&mut template, &l);
                let pod_name = format!("{name}-worker-0");
                set(&mut template, &["spec", "hostname"], s(pod_name.clone()));
                set(&mut template, &["spec", "subdomain"], s(name.clone()));
                set_default(&mut template, &["spec", "restartPolicy"], s(restart(spec, "Never")));
                if let Some(first) = list_mut(&mut template, &["spec", "containers"]).first_mut() {
                    if at(first, &["command"]).is_none() && at(first, &["args"]).is_none() {
                        set(first, &["command"], json!(["/usr/sbin/sshd", "-De"]));
                    }
                    list_mut(first, &["env"]).push(json!({"name": "K_MPI_JOB_ROLE", "value": "worker"}));
                }
                ssh(&mut template);
                let pod = from_template(&template, job.namespace, Naming::Name(pod_name), job.controller_ref());
                out.push(built(pod, &MPI_OPERATOR, job));
            }
        }
    }
    out
}

fn restart(spec: &Value, default: &str) -> String {
    match str_at(spec, &["restartPolicy"]) {
        Some("ExitCode") => "Never".to_string(),
        Some(p) => p.to_string(),
        None => default.to_string(),
    }
}
