//! KubeRay's RayCluster, RayJob and RayService: a head and worker groups,
//! each group bounded by `maxReplicas` × `numOfHosts`; with in-tree
//! autoscaling, the `autoscaler` container KubeRay adds to the head pod;
//! a RayJob's submitter pod, KubeRay's default one when the RayJob gives
//! no `submitterPodTemplate` (`ray-project/kuberay` v1.7.0,
//! `controllers/ray/common/pod.go`, `common/job.go`).

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{Container, ObjectMeta, PodSpec, RawQuantity, ResourceList};

use super::template::{PodTemplate, Role, Scale, Shape};
use super::{Obj, PodTemplateSpec, RayCluster, WorkerGroup, Workload};

/// Decodes an object of one of this family's kinds, one function per kind
/// (as `core::decode`).
#[inline(never)] // Its locals kept out of `decode_workload`'s frame (see there).
pub(super) fn decode<'a>(kind: WorkloadKind, d: &mut Dec<'a>) -> R<Workload<'a>> {
    match kind {
        WorkloadKind::RayCluster => ray_cluster(d),
        WorkloadKind::RayJob => ray_job(d),
        WorkloadKind::RayService => ray_service(d),
        _ => Err(d.invalid_type("a workload of this family")),
    }
}

#[inline(never)]
fn ray_cluster<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<RayClusterSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::RayCluster, o.metadata);
    w.suspend = o.spec.suspend;
    w.ray = Some(o.spec.into_view(Path::root().key("spec")));
    Ok(w)
}

#[inline(never)]
fn ray_job<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let spec_path = Path::root().key("spec");
    let o = Obj::<RayJobSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::RayJob, o.metadata);
    w.suspend = o.spec.suspend;
    w.ray = o.spec.ray_cluster_spec.map(|s| s.into_view(spec_path.key("rayClusterSpec")));
    // `K8sJobMode` (the default) runs `ray job submit` in a Job's pod: the
    // RayJob's own `submitterPodTemplate`, else KubeRay's default one. The
    // other modes submit over HTTP, or from a container KubeRay adds to the
    // head (`SidecarMode`: its own, which the RayJob cannot shape).
    let path = spec_path.key("submitterPodTemplate");
    let submitter = match (o.spec.submission_mode.as_deref(), o.spec.submitter_pod_template) {
        (None | Some("K8sJobMode"), Some(t)) => t.into_template(path, Role::RaySubmitter, Scale::one("one submitter pod")),
        (None | Some("K8sJobMode"), None) => Some(default_submitter(path, w.ray.as_ref())),
        _ => None,
    };
    w.others.extend(submitter);
    Ok(w)
}

#[inline(never)]
fn ray_service<'a>(d: &mut Dec<'a>) -> R<Workload<'a>> {
    let o = Obj::<RayServiceSpec<'a>>::decode(d)?;
    let mut w = Workload::empty(WorkloadKind::RayService, o.metadata);
    w.ray = o.spec.ray_cluster_config.map(|s| s.into_view(Path::root().key("spec").key("rayClusterConfig")));
    Ok(w)
}

#[derive(Default)]
struct RayClusterSpec<'a> {
    suspend: Option<bool>,
    enable_in_tree_autoscaling: Option<bool>,
    autoscaler_options: Option<Box<AutoscalerOptions<'a>>>,
    head_group_spec: Option<HasTemplate<'a>>,
    worker_group_specs: Vec<WorkerGroupSpec<'a>>,
}

/// `autoscalerOptions`: the fields KubeRay copies onto the autoscaler
/// container (`mergeAutoscalerOverrides`), read into one.
#[derive(Default)]
struct AutoscalerOptions<'a> {
    container: Container<'a>,
}

impl<'a> Decode<'a> for AutoscalerOptions<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = AutoscalerOptions::default();
        d.object(|d, key| {
            match &*key {
                "image" | "securityContext" | "resources" | "env" | "volumeMounts" | "command" | "args" => {
                    if !out.container.decode_field(&key, d)? {
                        d.skip()?;
                    }
                }
                _ => d.skip()?,
            }
            Ok(())
        })
        .map(|()| out)
    }
}

/// A quantity KubeRay writes, as the request would spell it.
fn quantity(q: &'static str) -> RawQuantity<'static> {
    RawQuantity(Str::from(q))
}

/// `cpu` and `memory` at these quantities.
fn cpu_memory(cpu: &'static str, memory: &'static str) -> ResourceList<'static> {
    [(Str::from("cpu"), quantity(cpu)), (Str::from("memory"), quantity(memory))].into_iter().collect()
}

/// The autoscaler container KubeRay appends to the head pod with in-tree
/// autoscaling (`BuildAutoscalerContainer`, then
/// `mergeAutoscalerOverrides`): the head's Ray image, 500m of CPU and
/// 512Mi of memory, no security context; `autoscalerOptions` replaces its
/// image, security context, resources, command and arguments, and adds to
/// its environment and mounts. (KubeRay's own variables, which name the
/// cluster, and the `ray-logs` log volume are left out: no rule reads
/// them.)
fn autoscaler<'a>(options: Option<Box<AutoscalerOptions<'a>>>, head: Option<&PodTemplate<'a>>) -> Container<'a> {
    let mut c = options.map(|o| o.container).unwrap_or_default();
    c.name = Str::from("autoscaler");
    if c.image.as_deref().is_none_or(str::is_empty) {
        c.image = head.and_then(|h| h.spec.containers.first()).and_then(|r| r.image.clone());
    }
    if c.resources.limits.is_empty() && c.resources.requests.is_empty() {
        c.resources.limits = cpu_memory("500m", "512Mi");
        c.resources.requests = cpu_memory("500m", "512Mi");
    }
    c
}

/// KubeRay's default submitter pod (`GetDefaultSubmitterContainer`): one
/// `ray-job-submitter` container of the head's Ray image, 1 CPU and 1Gi at
/// most, no security context, restarts `Never`. At the path of the
/// `submitterPodTemplate` that would replace it.
fn default_submitter<'a>(path: Path, ray: Option<&super::RayCluster<'a>>) -> PodTemplate<'a> {
    let head = ray.and_then(|r| r.head.as_ref());
    let mut c = Container { name: Str::from("ray-job-submitter"), ..Container::default() };
    c.image = head.and_then(|h| h.spec.containers.first()).and_then(|r| r.image.clone());
    c.resources.limits = cpu_memory("1", "1Gi");
    c.resources.requests = cpu_memory("500m", "200Mi");
    let spec = PodSpec { containers: vec![c], restart_policy: Some(Str::from("Never")), ..PodSpec::default() };
    PodTemplate::new(path, Shape::Default, Role::RaySubmitter, Some(ObjectMeta::default()), spec, Scale::one("one submitter pod"))
}

#[derive(Default)]
struct HasTemplate<'a> {
    template: PodTemplateSpec<'a>,
}

#[derive(Default)]
struct WorkerGroupSpec<'a> {
    group_name: Option<Str<'a>>,
    replicas: Option<i64>,
    min_replicas: Option<i64>,
    max_replicas: Option<i64>,
    num_of_hosts: Option<i64>,
    suspend: Option<bool>,
    template: PodTemplateSpec<'a>,
}

/// KubeRay's default `maxReplicas` (the largest int32), which the API server
/// fills in when the field is absent: no limit.
pub const KUBERAY_UNBOUNDED: i64 = 2_147_483_647;

impl<'a> RayClusterSpec<'a> {
    fn into_view(self, path: Path) -> RayCluster<'a> {
        let mut head = self
            .head_group_spec
            .and_then(|h| h.template.into_template(path.keys(&["headGroupSpec", "template"]), Role::RayHead, Scale::one("one head pod")));
        if self.enable_in_tree_autoscaling == Some(true) {
            let c = autoscaler(self.autoscaler_options, head.as_ref());
            if let Some(h) = head.as_mut() {
                h.added = Some(Box::new((path.key("autoscalerOptions"), c)));
            }
        }
        let worker_groups = self
            .worker_group_specs
            .into_iter()
            .enumerate()
            .map(|(i, g)| {
                let gpath = path.key("workerGroupSpecs").index(i);
                let tpath = gpath.key("template");
                let max = match g.max_replicas {
                    None | Some(KUBERAY_UNBOUNDED) => Scale::unbounded(gpath.key("maxReplicas"), "is not bounded (KubeRay's default)"),
                    Some(n) => Scale::field(gpath.key("maxReplicas"), Some(n), 0, ""),
                };
                let scale = match g.num_of_hosts {
                    None | Some(1) => max,
                    Some(h) => max.times(Scale::field(gpath.key("numOfHosts"), Some(h), 1, "")),
                };
                let template = g
                    .template
                    .into_template(tpath.clone(), Role::RayWorker, scale.clone())
                    .unwrap_or_else(|| {
                        PodTemplate::new(tpath, Shape::Template, Role::RayWorker, Some(ObjectMeta::default()), PodSpec::default(), scale)
                    })
                    .named(g.group_name.clone());
                WorkerGroup {
                    name: g.group_name,
                    replicas: g.replicas,
                    min_replicas: g.min_replicas,
                    max_replicas: g.max_replicas,
                    num_of_hosts: g.num_of_hosts,
                    suspend: g.suspend,
                    template,
                    path: gpath,
                }
            })
            .collect();
        RayCluster { path, autoscaling: self.enable_in_tree_autoscaling, head, worker_groups }
    }
}

#[derive(Default)]
struct RayJobSpec<'a> {
    suspend: Option<bool>,
    ray_cluster_spec: Option<RayClusterSpec<'a>>,
    submitter_pod_template: Option<PodTemplateSpec<'a>>,
    submission_mode: Option<Str<'a>>,
}

#[derive(Default)]
struct RayServiceSpec<'a> {
    ray_cluster_config: Option<RayClusterSpec<'a>>,
}

decode_struct!(RayClusterSpec {
    "suspend" => suspend,
    "enableInTreeAutoscaling" => enable_in_tree_autoscaling,
    "autoscalerOptions" => autoscaler_options,
    "headGroupSpec" => head_group_spec,
    "workerGroupSpecs" => worker_group_specs,
});
decode_struct!(HasTemplate { "template" => template });
decode_struct!(WorkerGroupSpec {
    "groupName" => group_name,
    "replicas" => replicas,
    "minReplicas" => min_replicas,
    "maxReplicas" => max_replicas,
    "numOfHosts" => num_of_hosts,
    "suspend" => suspend,
    "template" => template,
});
decode_struct!(RayJobSpec {
    "suspend" => suspend,
    "rayClusterSpec" => ray_cluster_spec,
    "submitterPodTemplate" => submitter_pod_template,
    "submissionMode" => submission_mode,
});
decode_struct!(RayServiceSpec { "rayClusterConfig" => ray_cluster_config });
