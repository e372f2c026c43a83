//! KubeRay's RayCluster, RayJob and RayService: a head and worker groups,
//! each group bounded by `maxReplicas` × `numOfHosts`.

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode::path::Path;
use crate::decode_struct;
use crate::model::kind::WorkloadKind;
use crate::model::pod::{ObjectMeta, PodSpec};

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
    if let Some(t) = o.spec.submitter_pod_template {
        w.others.extend(t.into_template(spec_path.key("submitterPodTemplate"), Role::RaySubmitter, Scale::one("one submitter pod")));
    }
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
    head_group_spec: Option<HasTemplate<'a>>,
    worker_group_specs: Vec<WorkerGroupSpec<'a>>,
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
        let head = self
            .head_group_spec
            .and_then(|h| h.template.into_template(path.keys(&["headGroupSpec", "template"]), Role::RayHead, Scale::one("one head pod")));
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
}

#[derive(Default)]
struct RayServiceSpec<'a> {
    ray_cluster_config: Option<RayClusterSpec<'a>>,
}

decode_struct!(RayClusterSpec {
    "suspend" => suspend,
    "enableInTreeAutoscaling" => enable_in_tree_autoscaling,
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
decode_struct!(RayJobSpec { "suspend" => suspend, "rayClusterSpec" => ray_cluster_spec, "submitterPodTemplate" => submitter_pod_template });
decode_struct!(RayServiceSpec { "rayClusterConfig" => ray_cluster_config });
