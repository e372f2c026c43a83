//! Pods a cluster lookup listed, read for what they hold.
//!
//! A rule that counts what a namespace's pods hold (`gpu-quota`) reads
//! every unfinished pod of the namespace on every Pod it admits: hundreds
//! of pods of a few KiB each. [`ListedPod`] is its own, slim model: the
//! pod's metadata, its phase, and its containers' names, resources and
//! restart policies. The decoder skips everything else (environment,
//! volumes, probes, tolerations, affinity, the status beyond its phase),
//! checking only that it is JSON. It is not a [`crate::PodTemplate`] with
//! parts left empty: a rule that needs more of a listed pod decodes it
//! with [`crate::model::listed::list_items`] and [`crate::model::workload::Workload::parse`].

use crate::decode::dec::{Dec, Decode, R, Str};
use crate::decode_struct;
use crate::model::pod::{ObjectMeta, Resources};

/// A Pod a cluster lookup listed, decoded in the same pass as the list
/// (see [`crate::model::listed::list_pods`]).
#[derive(Debug, Default)]
pub struct ListedPod<'a> {
    /// `metadata`.
    pub metadata: ObjectMeta<'a>,
    /// `status.phase` (`Running`, `Succeeded`, ...), when the list carries it.
    pub phase: Option<Str<'a>>,
    /// `spec.containers`.
    pub containers: Vec<ListedContainer<'a>>,
    /// `spec.initContainers`.
    pub init_containers: Vec<ListedContainer<'a>>,
}

/// What a listed pod's container holds: its name, its resources and its
/// restart policy (`Always` on an init container makes it a sidecar).
#[derive(Clone, Debug, Default)]
pub struct ListedContainer<'a> {
    /// `name`.
    pub name: Str<'a>,
    /// `resources`.
    pub resources: Resources<'a>,
    /// `restartPolicy`.
    pub restart_policy: Option<Str<'a>>,
}

#[derive(Default)]
struct ListedSpec<'a> {
    containers: Vec<ListedContainer<'a>>,
    init_containers: Vec<ListedContainer<'a>>,
}

#[derive(Default)]
struct PodStatus<'a> {
    phase: Option<Str<'a>>,
}

decode_struct!(ListedContainer { "name" => name, "resources" => resources, "restartPolicy" => restart_policy });

decode_struct!(ListedSpec { "containers" => containers, "initContainers" => init_containers });

decode_struct!(PodStatus { "phase" => phase });

impl<'a> Decode<'a> for ListedPod<'a> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut pod = ListedPod::default();
        d.object(|d, key| {
            match &*key {
                // Skimming (a pod that may hold GPUs, in `list_gpu_pods`):
                // only what says which pod it is and whether it is going.
                "metadata" if d.is_skimming() => pod.metadata = slim_meta(d)?,
                "metadata" => pod.metadata = Decode::decode(d)?,
                "spec" => {
                    let spec = Option::<ListedSpec>::decode(d)?.unwrap_or_default();
                    (pod.containers, pod.init_containers) = (spec.containers, spec.init_containers);
                }
                "status" => pod.phase = Option::<PodStatus>::decode(d)?.and_then(|s| s.phase),
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(pod)
    }
}

/// A listed pod's name, generated name, namespace and deletion, the rest of
/// its metadata skipped: what [`ObjectMeta`]'s decoder reads of them.
fn slim_meta<'a>(d: &mut Dec<'a>) -> R<ObjectMeta<'a>> {
    let mut out = ObjectMeta::default();
    d.object(|d, key| {
        match &*key {
            "name" => out.name = Decode::decode(d)?,
            "generateName" => out.generate_name = Decode::decode(d)?,
            "namespace" => out.namespace = Decode::decode(d)?,
            "deletionTimestamp" => out.being_deleted = d.is_set()?,
            _ => d.skip()?,
        }
        Ok(())
    })?;
    Ok(out)
}

// ------------------------------------------------ lists a lookup returned

/// The items of a `List` a lookup returned, each as JSON text (decode a
/// Pod with [`crate::model::workload::Workload::parse`], any object's metadata with
/// [`object_meta`]).
pub fn list_items(list: &str) -> Result<Vec<&str>, crate::base::error::Malformed> {
    list_of(list, "the cluster's list", |d| d.raw())
}

/// The Pods of a `List` a lookup returned, each decoded in the same pass
/// as the list, with the slim model of [`crate::model::listed`] (metadata, phase,
/// containers' resources; the rest skipped): one reading of a namespace's
/// pods, where [`list_items`] and then [`crate::model::workload::Workload::parse`] of each
/// item read every pod twice, in full. A rule that counts what every
/// listed pod holds wants this; one that reads more of a few pods wants
/// `list_items`.
pub fn list_pods(list: &str) -> Result<Vec<crate::model::listed::ListedPod<'_>>, crate::base::error::Malformed> {
    list_of(list, "the cluster's list of Pods", crate::decode::dec::Decode::decode)
}

/// [`list_pods`], reading only what says how many GPUs each pod holds:
/// the same pods, names, deletions, phases and containers' resources, but
/// what is skipped (environment, volumes, probes, the metadata beyond the
/// name, namespace and deletion) only skimmed
/// ([`crate::decode::dec::Dec::skimming`]), since the list is the API
/// server's. A rule that counts what a namespace's pods hold on every Pod
/// it admits wants this.
pub fn list_pods_skimming(list: &str) -> Result<Vec<crate::model::listed::ListedPod<'_>>, crate::base::error::Malformed> {
    let mut items = Vec::new();
    let mut d = crate::decode::dec::Dec::skimming(list);
    let decoded = d
        .object(|d, key| {
            if &*key != "items" {
                return d.skip();
            }
            d.list(|d| {
                items.push(crate::decode::dec::Decode::decode(d)?);
                Ok(())
            })
        })
        .and_then(|()| d.end());
    decoded.map_err(|e| crate::decode::explain::explain(list, &e, "the cluster's list of Pods"))?;
    Ok(items)
}

/// Each element of a `List`'s `items`, read by `item` as the list goes by;
/// `what` names the list in an error.
fn list_of<'a, T>(
    list: &'a str,
    what: &str,
    mut item: impl FnMut(&mut crate::decode::dec::Dec<'a>) -> crate::decode::dec::R<T>,
) -> Result<Vec<T>, crate::base::error::Malformed> {
    let mut items = Vec::new();
    let mut d = crate::decode::dec::Dec::new(list);
    let decoded = d
        .object(|d, key| {
            if &*key == "items" {
                d.list(|d| {
                    items.push(item(d)?);
                    Ok(())
                })
            } else {
                d.skip()
            }
        })
        .and_then(|()| d.end());
    decoded.map_err(|e| crate::decode::explain::explain(list, &e, what))?;
    Ok(items)
}

/// The metadata of an object a lookup returned (a Namespace's labels, a
/// ResourceQuota's name).
pub fn object_meta<'a>(json: &'a str, what: &str) -> Result<crate::model::pod::ObjectMeta<'a>, crate::base::error::Malformed> {
    let mut meta = crate::model::pod::ObjectMeta::default();
    let mut d = crate::decode::dec::Dec::new(json);
    let decoded = d
        .object(|d, key| {
            if &*key == "metadata" {
                meta = crate::decode::dec::Decode::decode(d)?;
                Ok(())
            } else {
                d.skip()
            }
        })
        .and_then(|()| d.end());
    decoded.map_err(|e| crate::decode::explain::explain(json, &e, what))?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use crate::cluster::gpu::GpuResources;
    use crate::model::kind::WorkloadKind;
    use crate::model::listed::{list_pods, list_pods_skimming};
    use crate::model::workload::Workload;

    /// A pod with everything a listed pod carries: what the slim model
    /// reads, and what it skips.
    const POD: &str = r#"{"metadata":{"name":"trainer-0","namespace":"ml","deletionTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"kubelet"}]},
        "spec":{"volumes":[{"name":"data","emptyDir":{}}],"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],
          "initContainers":[{"name":"sidecar","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}},
                            {"name":"setup","env":[{"name":"A","value":"b"}],"resources":{"limits":{"nvidia.com/gpu":"4"}}}],
          "containers":[{"name":"main","image":"trainer:1","command":["python"],"resources":{"requests":{"cpu":"1","nvidia.com/gpu":"2"},"limits":{"nvidia.com/gpu":"2"}}},
                        {"name":"mig","resources":{"limits":{"nvidia.com/mig-1g.10gb":"3"}}}],
          "ephemeralContainers":[{"name":"debug","resources":{"limits":{"nvidia.com/gpu":"8"}}}]},
        "status":{"phase":"Running","containerStatuses":[{"name":"main","ready":true}]}}"#;

    #[test]
    fn counts_as_the_full_model_counts() {
        let list = format!(r#"{{"kind":"PodList","items":[{POD}]}}"#);
        let pods = list_pods(&list).unwrap();
        let full = Workload::parse(WorkloadKind::Pod, POD).unwrap();
        let gpus = GpuResources::default();
        let t = full.templates().next().unwrap();
        assert_eq!(pods[0].gpus_per_pod(&gpus).unwrap(), t.gpus_per_pod(&gpus).unwrap());
        // 2 + the sidecar's 1 against the init peak 4 + 1; MIG apart; the
        // ephemeral container's 8 not at all.
        let counts: Vec<(String, u64)> = pods[0].gpus_per_pod(&gpus).unwrap().into_iter().collect();
        assert_eq!(counts, [("nvidia.com/gpu".to_string(), 5), ("nvidia.com/mig-1g.10gb".to_string(), 3)]);
        assert_eq!(pods[0].metadata.name.as_deref(), Some("trainer-0"));
        assert!(pods[0].metadata.being_deleted);
        assert_eq!(pods[0].phase.as_deref(), Some("Running"));
        assert_eq!(pods[0].containers.len(), 2);
        assert_eq!(pods[0].init_containers[1].name, "setup");
    }

    #[test]
    fn an_unparsable_quantity_is_named_as_the_full_model_names_it() {
        let pod = r#"{"spec":{"initContainers":[{"name":"a"}],"containers":[{"name":"a"},{"name":"b","resources":{"limits":{"nvidia.com/gpu":"two"}}}]}}"#;
        let gpus = GpuResources::default();
        let slim = list_pods(&format!(r#"{{"items":[{pod}]}}"#)).unwrap()[0].gpus_per_pod(&gpus).unwrap_err();
        let full = Workload::parse(WorkloadKind::Pod, pod).unwrap().templates().next().unwrap().gpus_per_pod(&gpus).unwrap_err();
        assert_eq!(slim, full);
        assert!(slim.0.starts_with("`spec.containers[1].resources.limits[nvidia.com/gpu]`: "), "{}", slim.0);
    }

    #[test]
    fn what_it_skips_need_only_be_json() {
        // The full model refuses a toleration that is not an object; the
        // slim one does not read tolerations.
        let pod = r#"{"metadata":{"name":"p"},"spec":{"tolerations":[7],"containers":[{"name":"c","env":"x"}]}}"#;
        assert!(Workload::parse(WorkloadKind::Pod, pod).is_err());
        let list = format!(r#"{{"items":[{pod}]}}"#);
        let pods = list_pods(&list).unwrap();
        assert_eq!(pods[0].containers[0].name, "c");
        // What it reads must be what it expects, and the rest JSON.
        for bad in [
            r#"{"spec":{"containers":7}}"#,
            r#"{"spec":{"containers":[{"resources":{"limits":[]}}]}}"#,
            r#"{"status":{"phase":1}}"#,
            r#"{"spec":{"tolerations":[7,]}}"#,
        ] {
            assert!(list_pods(&format!(r#"{{"items":[{bad}]}}"#)).is_err(), "{bad}");
        }
    }

    /// A CPU pod with a big environment.
    fn cpu_pod(name: &str) -> String {
        let env: Vec<String> = (0..50).map(|i| format!(r#"{{"name":"V{i}","value":"{}"}}"#, "x\\\"y".repeat(10))).collect();
        format!(
            r#"{{"metadata":{{"name":"{name}","labels":{{"a":"b"}},"ownerReferences":[{{"kind":"Job","name":"j","controller":true}}]}},"spec":{{"containers":[{{"name":"c","env":[{}],"resources":{{"limits":{{"cpu":"2","memory":"1Gi"}}}}}}]}},"status":{{"phase":"Running"}}}}"#,
            env.join(",")
        )
    }

    #[test]
    fn skimming_reads_what_list_pods_reads() {
        let gpus = GpuResources::default();
        let list =
            format!(r#"{{"kind":"PodList","metadata":{{"resourceVersion":"7"}},"items":[{},{POD},{}]}}"#, cpu_pod("a"), cpu_pod("b"));
        let all = list_pods(&list).unwrap();
        let skimmed = list_pods_skimming(&list).unwrap();
        assert_eq!(all.len(), skimmed.len());
        for (a, s) in all.iter().zip(&skimmed) {
            assert_eq!(a.metadata.name, s.metadata.name);
            assert_eq!(a.metadata.namespace, s.metadata.namespace);
            assert_eq!(a.metadata.being_deleted, s.metadata.being_deleted);
            assert_eq!(a.phase, s.phase);
            assert_eq!(a.gpus_per_pod(&gpus).unwrap(), s.gpus_per_pod(&gpus).unwrap());
        }
        // Only the name, namespace and deletion of the metadata are read.
        assert!(skimmed[0].metadata.labels.is_empty() && skimmed[0].metadata.owner_references.is_empty());
        // What is skipped is only skimmed: a toleration that is not JSON.
        let odd = r#"{"items":[{"spec":{"tolerations":[7,],"containers":[{"name":"c"}]}}]}"#;
        assert!(list_pods(odd).is_err());
        assert_eq!(list_pods_skimming(odd).unwrap()[0].containers[0].name, "c");
    }

    #[test]
    fn a_list_that_does_not_end_is_refused_as_list_pods_refuses_it() {
        for bad in [
            format!(r#"{{"items":[{}"#, cpu_pod("a")),
            r#"{"items":[{"metadata":{"name":"a"}}"#.to_string(),
            r#"{"items":[{"spec":{"containers":[{"name":"x"#.to_string(),
            format!(r#"{{"items":[{POD}"#),
            r#"{"items":7}"#.to_string(),
            r#"{"items":[{"spec":{"containers":[{"resources":{"limits":[]}}]}}]}"#.to_string(),
        ] {
            assert_eq!(list_pods_skimming(&bad).unwrap_err(), list_pods(&bad).unwrap_err(), "{bad}");
        }
        // Brackets that do not pair are refused, where the text stops making sense.
        assert!(list_pods_skimming(r#"{"items":[{"spec":{"volumes":[{"name":"x"}}]}"#).is_err());
    }
}
