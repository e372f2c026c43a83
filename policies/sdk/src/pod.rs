//! The parts of Kubernetes objects and pod specs that rules read, decoded
//! sparsely: strings borrow from the request, absent and `null` fields are
//! empty, and everything no rule reads is skipped unread.
//!
//! The names follow Kubernetes' own (`PodSpec`, `Container`,
//! `SecurityContext`); each type holds only the fields some rule reads. A
//! field a rule needs and the model lacks is added here, once, for every
//! rule.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::request::{Str, nullable};

/// Labels, annotations, node selectors: keys to values, in key order.
pub type StrMap<'a> = BTreeMap<Str<'a>, Str<'a>>;

/// Labels, by key.
pub type Labels<'a> = StrMap<'a>;

/// Whether a field holds a value (`null` counts as absent), without reading it.
pub(crate) fn is_set<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<serde::de::IgnoredAny>::deserialize(d)?.is_some())
}

/// An owner reference.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct OwnerReference<'a> {
    /// `apiVersion` of the owner.
    #[serde(borrow, default)]
    pub api_version: Str<'a>,
    /// Kind of the owner.
    #[serde(borrow, default)]
    pub kind: Str<'a>,
    /// Name of the owner.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// Whether the owner is the managing controller.
    #[serde(default)]
    pub controller: Option<bool>,
}

/// The parts of `metadata` rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct ObjectMeta<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    /// Name prefix, when the server generates the name.
    #[serde(borrow, default)]
    pub generate_name: Option<Str<'a>>,
    /// Namespace.
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    /// Labels.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub labels: Labels<'a>,
    /// Annotations.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub annotations: StrMap<'a>,
    /// Owner references (a pod's controller, a Job's CronJob).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub owner_references: Vec<OwnerReference<'a>>,
    /// Whether `deletionTimestamp` is set: the object is being deleted, and
    /// an update of it only removes finalizers (refusing it would leave the
    /// object terminating forever).
    #[serde(default, rename = "deletionTimestamp", deserialize_with = "is_set")]
    pub being_deleted: bool,
}

impl ObjectMeta<'_> {
    /// The label's value, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(|v| &**v)
    }

    /// The annotation's value, if set.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(|v| &**v)
    }

    /// `name`, else `generateName`, else `(unnamed)`.
    pub fn display_name(&self) -> &str {
        self.name
            .as_deref()
            .or(self.generate_name.as_deref())
            .unwrap_or("(unnamed)")
    }
}

/// A resource quantity as written: a string, or a bare number in
/// hand-written YAML. Parsed on demand with [`RawQuantity::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawQuantity<'a>(pub Str<'a>);

impl RawQuantity<'_> {
    /// Parses the quantity.
    pub fn parse(&self) -> Result<crate::Quantity, crate::quantity::QuantityError> {
        crate::Quantity::parse(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawQuantity<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Visitor};
        use std::borrow::Cow;
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawQuantity<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a quantity such as \"2\", \"500m\" or \"4Gi\"")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawQuantity(Str(Cow::Owned(v.to_string()))))
            }
        }
        d.deserialize_any(V)
    }
}

/// Resource names to quantities.
pub type ResourceList<'a> = BTreeMap<Str<'a>, RawQuantity<'a>>;

/// A container's claim on one of the pod's resource claims (DRA).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct ContainerClaim<'a> {
    /// The pod-level claim's name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// One request of that claim, if only one is meant.
    #[serde(borrow, default)]
    pub request: Option<Str<'a>>,
}

/// A container's `resources`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct Resources<'a> {
    /// `limits`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub limits: ResourceList<'a>,
    /// `requests`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub requests: ResourceList<'a>,
    /// `claims`: the pod's resource claims this container uses (DRA).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub claims: Vec<ContainerClaim<'a>>,
}

/// An environment variable.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct EnvVar<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// A literal value.
    #[serde(borrow, default)]
    pub value: Option<Str<'a>>,
    /// Whether the value comes from `valueFrom` (a Secret, ConfigMap, field).
    #[serde(default, rename = "valueFrom", deserialize_with = "is_set")]
    pub from_source: bool,
}

/// A volume mount.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct VolumeMount<'a> {
    /// The volume's name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// Where it is mounted.
    #[serde(borrow, default)]
    pub mount_path: Str<'a>,
    /// Whether it is mounted read-only.
    #[serde(default)]
    pub read_only: Option<bool>,
}

/// Linux capabilities.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct Capabilities<'a> {
    /// Added.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub add: Vec<Str<'a>>,
    /// Dropped.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub drop: Vec<Str<'a>>,
}

/// A seccomp or AppArmor profile (`type`, and the profile for `Localhost`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct Profile<'a> {
    /// `RuntimeDefault`, `Localhost`, `Unconfined`.
    #[serde(borrow, default, rename = "type")]
    pub kind: Option<Str<'a>>,
    /// The profile, for `Localhost`.
    #[serde(borrow, default)]
    pub localhost_profile: Option<Str<'a>>,
}

/// A container's or a pod's `securityContext` (the pod's has no
/// `privileged`, `allowPrivilegeEscalation` or `capabilities`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct SecurityContext<'a> {
    /// `privileged`.
    #[serde(default)]
    pub privileged: Option<bool>,
    /// `allowPrivilegeEscalation`.
    #[serde(default)]
    pub allow_privilege_escalation: Option<bool>,
    /// `runAsNonRoot`.
    #[serde(default)]
    pub run_as_non_root: Option<bool>,
    /// `runAsUser`.
    #[serde(default)]
    pub run_as_user: Option<i64>,
    /// `runAsGroup`.
    #[serde(default)]
    pub run_as_group: Option<i64>,
    /// `readOnlyRootFilesystem`.
    #[serde(default)]
    pub read_only_root_filesystem: Option<bool>,
    /// `capabilities`.
    #[serde(borrow, default)]
    pub capabilities: Option<Capabilities<'a>>,
    /// `seccompProfile`.
    #[serde(borrow, default)]
    pub seccomp_profile: Option<Profile<'a>>,
    /// `appArmorProfile`.
    #[serde(borrow, default)]
    pub app_armor_profile: Option<Profile<'a>>,
}

/// The parts of a container rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct Container<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// Image reference.
    #[serde(borrow, default)]
    pub image: Option<Str<'a>>,
    /// Entrypoint (replaces the image's `ENTRYPOINT`).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub command: Vec<Str<'a>>,
    /// Arguments (replace the image's `CMD`).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub args: Vec<Str<'a>>,
    /// Environment variables.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub env: Vec<EnvVar<'a>>,
    /// Resources.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub resources: Resources<'a>,
    /// Volume mounts.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub volume_mounts: Vec<VolumeMount<'a>>,
    /// Security context.
    #[serde(borrow, default)]
    pub security_context: Option<SecurityContext<'a>>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(borrow, default)]
    pub restart_policy: Option<Str<'a>>,
    /// Whether a TTY is allocated.
    #[serde(default)]
    pub tty: Option<bool>,
    /// Whether stdin is kept open.
    #[serde(default)]
    pub stdin: Option<bool>,
}

/// A toleration.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct Toleration<'a> {
    /// Taint key; absent with `Exists` tolerates every taint.
    #[serde(borrow, default)]
    pub key: Option<Str<'a>>,
    /// `Exists` or `Equal` (the default).
    #[serde(borrow, default)]
    pub operator: Option<Str<'a>>,
    /// Value, for `Equal`.
    #[serde(borrow, default)]
    pub value: Option<Str<'a>>,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`; absent for all.
    #[serde(borrow, default)]
    pub effect: Option<Str<'a>>,
}

/// A node selector requirement (`key`, `operator`, `values`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct SelectorRequirement<'a> {
    /// Label key.
    #[serde(borrow, default)]
    pub key: Str<'a>,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
    #[serde(borrow, default)]
    pub operator: Str<'a>,
    /// Values.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub values: Vec<Str<'a>>,
}

/// A node selector term: its requirements are ANDed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct NodeSelectorTerm<'a> {
    /// Requirements on node labels.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub match_expressions: Vec<SelectorRequirement<'a>>,
    /// Requirements on node fields.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub match_fields: Vec<SelectorRequirement<'a>>,
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of a node affinity: its
/// terms are ORed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct NodeSelector<'a> {
    /// Terms.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub node_selector_terms: Vec<NodeSelectorTerm<'a>>,
}

/// A weighted preferred term.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct PreferredTerm<'a> {
    /// Weight, 1-100.
    #[serde(default)]
    pub weight: i64,
    /// The term.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub preference: NodeSelectorTerm<'a>,
}

/// A node affinity.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct NodeAffinity<'a> {
    /// Hard requirement.
    #[serde(borrow, default, rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    pub required: Option<NodeSelector<'a>>,
    /// Preferences.
    #[serde(borrow, default, rename = "preferredDuringSchedulingIgnoredDuringExecution", deserialize_with = "nullable")]
    pub preferred: Vec<PreferredTerm<'a>>,
}

/// A pod's `affinity` (node affinity only; pod affinity is skipped).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct Affinity<'a> {
    /// Node affinity.
    #[serde(borrow, default)]
    pub node_affinity: Option<NodeAffinity<'a>>,
}

/// A `hostPath` volume source.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(expecting = "an object")]
pub struct HostPath<'a> {
    /// Path on the node.
    #[serde(borrow, default)]
    pub path: Str<'a>,
    /// `Directory`, `CharDevice`, ...
    #[serde(borrow, default, rename = "type")]
    pub kind: Option<Str<'a>>,
}

/// An `emptyDir` volume source.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct EmptyDir<'a> {
    /// `Memory` for a tmpfs.
    #[serde(borrow, default)]
    pub medium: Option<Str<'a>>,
    /// Size limit.
    #[serde(borrow, default)]
    pub size_limit: Option<RawQuantity<'a>>,
}

/// A volume (the sources rules look at; others are only named).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct Volume<'a> {
    /// Name.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// `hostPath`.
    #[serde(borrow, default)]
    pub host_path: Option<HostPath<'a>>,
    /// `emptyDir`.
    #[serde(borrow, default)]
    pub empty_dir: Option<EmptyDir<'a>>,
}

/// A pod's resource claim (DRA): by name, or from a template.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct PodResourceClaim<'a> {
    /// The name containers refer to.
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// An existing ResourceClaim.
    #[serde(borrow, default)]
    pub resource_claim_name: Option<Str<'a>>,
    /// A ResourceClaimTemplate a claim is made from for this pod.
    #[serde(borrow, default)]
    pub resource_claim_template_name: Option<Str<'a>>,
}

/// The parts of a pod spec rules read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "an object")]
pub struct PodSpec<'a> {
    /// `containers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub containers: Vec<Container<'a>>,
    /// `initContainers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub init_containers: Vec<Container<'a>>,
    /// `ephemeralContainers`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub ephemeral_containers: Vec<Container<'a>>,
    /// `runtimeClassName`.
    #[serde(borrow, default)]
    pub runtime_class_name: Option<Str<'a>>,
    /// `tolerations`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub tolerations: Vec<Toleration<'a>>,
    /// `nodeSelector`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub node_selector: StrMap<'a>,
    /// `affinity`.
    #[serde(borrow, default)]
    pub affinity: Option<Affinity<'a>>,
    /// `nodeName` (set by the scheduler, or by hand to bypass it).
    #[serde(borrow, default)]
    pub node_name: Option<Str<'a>>,
    /// `serviceAccountName`.
    #[serde(borrow, default)]
    pub service_account_name: Option<Str<'a>>,
    /// `serviceAccount` (deprecated alias of `serviceAccountName`).
    #[serde(borrow, default)]
    pub service_account: Option<Str<'a>>,
    /// `hostNetwork`.
    #[serde(default)]
    pub host_network: Option<bool>,
    /// `hostPID`.
    #[serde(default, rename = "hostPID")]
    pub host_pid: Option<bool>,
    /// `hostIPC`.
    #[serde(default, rename = "hostIPC")]
    pub host_ipc: Option<bool>,
    /// `securityContext`.
    #[serde(borrow, default)]
    pub security_context: Option<SecurityContext<'a>>,
    /// `volumes`.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub volumes: Vec<Volume<'a>>,
    /// `resourceClaims` (DRA).
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub resource_claims: Vec<PodResourceClaim<'a>>,
    /// `activeDeadlineSeconds`.
    #[serde(default)]
    pub active_deadline_seconds: Option<i64>,
    /// `schedulerName`.
    #[serde(borrow, default)]
    pub scheduler_name: Option<Str<'a>>,
    /// `priorityClassName`.
    #[serde(borrow, default)]
    pub priority_class_name: Option<Str<'a>>,
    /// `restartPolicy`.
    #[serde(borrow, default)]
    pub restart_policy: Option<Str<'a>>,
}

impl PodSpec<'_> {
    /// The service account pods run as: `serviceAccountName`, else the
    /// deprecated `serviceAccount`, else `default`.
    pub fn service_account(&self) -> &str {
        self.service_account_name
            .as_deref()
            .or(self.service_account.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
    }

    /// The required node affinity, if any.
    pub fn required_node_affinity(&self) -> Option<&NodeSelector<'_>> {
        self.affinity.as_ref()?.node_affinity.as_ref()?.required.as_ref()
    }

    /// The preferred node affinity terms.
    pub fn preferred_node_affinity(&self) -> &[PreferredTerm<'_>] {
        self.affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .map_or(&[], |n| n.preferred.as_slice())
    }
}
