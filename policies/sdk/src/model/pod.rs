//! The parts of Kubernetes objects and pod specs that rules read, decoded
//! sparsely: strings borrow from the request, absent and `null` fields are
//! empty, and everything no rule reads is skipped unread.
//!
//! The names follow Kubernetes' own (`PodSpec`, `Container`,
//! `SecurityContext`); each type holds only the fields some rule reads. A
//! field a rule needs and the model lacks is added here, once, for every
//! rule.

use std::collections::BTreeMap;

use crate::decode::dec::{Dec, Decode, R, RawStr, Str};
use crate::decode_struct;

/// Labels, annotations, node selectors: keys to values, in key order.
pub type StrMap<'a> = BTreeMap<Str<'a>, Str<'a>>;

/// Labels, by key.
pub type Labels<'a> = StrMap<'a>;

/// Annotations, by key, each value decoded when read ([`RawStr`]).
pub type Annotations<'a> = BTreeMap<Str<'a>, RawStr<'a>>;

/// An owner reference.
#[derive(Clone, Debug, Default)]
pub struct OwnerReference<'a> {
    /// `apiVersion` of the owner.
    pub api_version: Str<'a>,
    /// Kind of the owner.
    pub kind: Str<'a>,
    /// Name of the owner.
    pub name: Str<'a>,
    /// Whether the owner is the managing controller.
    pub controller: Option<bool>,
}

/// The parts of `metadata` rules read.
#[derive(Clone, Debug, Default)]
pub struct ObjectMeta<'a> {
    /// Name.
    pub name: Option<Str<'a>>,
    /// Name prefix, when the server generates the name.
    pub generate_name: Option<Str<'a>>,
    /// Namespace.
    pub namespace: Option<Str<'a>>,
    /// Labels.
    pub labels: Labels<'a>,
    /// Annotations (values decoded when read: [`ObjectMeta::annotation`]).
    pub annotations: Annotations<'a>,
    /// Owner references (a pod's controller, a Job's CronJob).
    pub owner_references: Vec<OwnerReference<'a>>,
    /// Whether `deletionTimestamp` is set: the object is being deleted, and
    /// an update of it only removes finalizers (refusing it would leave the
    /// object terminating forever).
    pub being_deleted: bool,
}

impl<'a> ObjectMeta<'a> {
    /// The label's value, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(|v| &**v)
    }

    /// The annotation's value, if set.
    pub fn annotation(&self, key: &str) -> Option<Str<'a>> {
        self.annotations.get(key).map(RawStr::get)
    }

    /// `name`, else `generateName`, else `(unnamed)`.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().or(self.generate_name.as_deref()).unwrap_or("(unnamed)")
    }
}

/// A resource quantity as written: a string, or a bare number in
/// hand-written YAML. Parsed on demand with [`RawQuantity::parse`].
#[derive(Clone, PartialEq, Eq)]
pub struct RawQuantity<'a>(pub Str<'a>);

/// By value where it parses (`1.50` and `1.5` read the same), else as written.
impl std::fmt::Debug for RawQuantity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.parse() {
            Ok(q) => write!(f, "{}", q.canonical()),
            Err(_) => write!(f, "{:?}", &*self.0),
        }
    }
}

impl RawQuantity<'_> {
    /// Parses the quantity.
    pub fn parse(&self) -> Result<crate::model::quantity::Quantity, crate::model::quantity::QuantityError> {
        crate::model::quantity::Quantity::parse(&self.0)
    }
}

impl<'a> Decode<'a> for RawQuantity<'a> {
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        d.string_or_number("a quantity such as \"2\", \"500m\" or \"4Gi\"").map(RawQuantity)
    }
}

/// Resource names to quantities.
pub type ResourceList<'a> = BTreeMap<Str<'a>, RawQuantity<'a>>;

/// A container's claim on one of the pod's resource claims (DRA).
#[derive(Clone, Debug, Default)]
pub struct ContainerClaim<'a> {
    /// The pod-level claim's name.
    pub name: Str<'a>,
    /// One request of that claim, if only one is meant.
    pub request: Option<Str<'a>>,
}

/// A container's `resources`.
#[derive(Clone, Debug, Default)]
pub struct Resources<'a> {
    /// `limits`.
    pub limits: ResourceList<'a>,
    /// `requests`.
    pub requests: ResourceList<'a>,
    /// `claims`: the pod's resource claims this container uses (DRA).
    pub claims: Vec<ContainerClaim<'a>>,
}

/// An environment variable.
#[derive(Clone, Debug, Default)]
pub struct EnvVar<'a> {
    /// Name.
    pub name: Str<'a>,
    /// A literal value.
    pub value: Option<Str<'a>>,
    /// Whether the value comes from `valueFrom` (a Secret, ConfigMap, field).
    pub from_source: bool,
}

/// A volume mount.
#[derive(Clone, Debug, Default)]
pub struct VolumeMount<'a> {
    /// The volume's name.
    pub name: Str<'a>,
    /// Where it is mounted.
    pub mount_path: Str<'a>,
    /// Whether it is mounted read-only.
    pub read_only: Option<bool>,
}

/// Linux capabilities.
#[derive(Clone, Debug, Default)]
pub struct Capabilities<'a> {
    /// Added.
    pub add: Vec<Str<'a>>,
    /// Dropped.
    pub drop: Vec<Str<'a>>,
}

/// A seccomp or AppArmor profile (`type`, and the profile for `Localhost`).
#[derive(Clone, Debug, Default)]
pub struct Profile<'a> {
    /// `RuntimeDefault`, `Localhost`, `Unconfined`.
    pub kind: Option<Str<'a>>,
    /// The profile, for `Localhost`.
    pub localhost_profile: Option<Str<'a>>,
}

/// `windowsOptions` of a security context.
#[derive(Clone, Debug, Default)]
pub struct WindowsOptions {
    /// `hostProcess`: the container runs as a process on the Windows host,
    /// with the node's network and full access to it.
    pub host_process: Option<bool>,
}

/// A container's or a pod's `securityContext` (the pod's has no
/// `privileged`, `allowPrivilegeEscalation` or `capabilities`).
#[derive(Clone, Debug, Default)]
pub struct SecurityContext<'a> {
    /// `privileged`.
    pub privileged: Option<bool>,
    /// `allowPrivilegeEscalation`.
    pub allow_privilege_escalation: Option<bool>,
    /// `runAsNonRoot`.
    pub run_as_non_root: Option<bool>,
    /// `runAsUser`.
    pub run_as_user: Option<i64>,
    /// `runAsGroup`.
    pub run_as_group: Option<i64>,
    /// `readOnlyRootFilesystem`.
    pub read_only_root_filesystem: Option<bool>,
    /// `capabilities`.
    pub capabilities: Option<Capabilities<'a>>,
    /// `seccompProfile`.
    pub seccomp_profile: Option<Profile<'a>>,
    /// `appArmorProfile`.
    pub app_armor_profile: Option<Profile<'a>>,
    /// `windowsOptions` (of Windows pods).
    pub windows_options: Option<WindowsOptions>,
    /// `seLinuxOptions`.
    pub se_linux_options: Option<SeLinuxOptions<'a>>,
    /// `procMount` (containers only): `Default` or `Unmasked`.
    pub proc_mount: Option<Str<'a>>,
    /// `sysctls` (pods only).
    pub sysctls: Vec<Sysctl<'a>>,
    /// `supplementalGroups` (pods only).
    pub supplemental_groups: Vec<i64>,
    /// `fsGroup` (pods only).
    pub fs_group: Option<i64>,
}

/// `seLinuxOptions` of a security context.
#[derive(Clone, Debug, Default)]
pub struct SeLinuxOptions<'a> {
    /// SELinux user.
    pub user: Option<Str<'a>>,
    /// SELinux role.
    pub role: Option<Str<'a>>,
    /// SELinux type.
    pub kind: Option<Str<'a>>,
    /// SELinux level.
    pub level: Option<Str<'a>>,
}

/// A namespaced kernel parameter a pod sets (`sysctls`).
#[derive(Clone, Debug, Default)]
pub struct Sysctl<'a> {
    /// Name (`net.ipv4.ip_local_port_range`).
    pub name: Str<'a>,
}

/// A container port (only what rules read).
#[derive(Clone, Debug, Default)]
pub struct ContainerPort {
    /// `hostPort`: the port on the node's own address the container is
    /// reached at, as written (see [`ContainerPort::on_node`]).
    pub host_port: Option<i64>,
    /// `containerPort`: the port the container listens on.
    pub container_port: Option<i64>,
}

/// A port a container takes on the node's own addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// The port.
    pub port: i64,
    /// Whether it is the `hostPort` as written (not `0`); otherwise it is
    /// the `containerPort`, which `hostNetwork` makes a host port.
    pub written: bool,
    /// Whether the pod is on the host network, which makes every port of
    /// its containers a host port (a written `hostPort` must then be the
    /// `containerPort`, and removing it changes nothing).
    pub host_network: bool,
}

impl ContainerPort {
    /// The port this takes on the node's own addresses, as the pod will
    /// have it: its `hostPort` when set and not `0`; otherwise, when
    /// `host_network` (the pod's `hostNetwork`, for a container or init
    /// container), its `containerPort`, which the API server writes into
    /// `hostPort` on every Pod (`SetDefaults_Pod`; on templates too before
    /// Kubernetes 1.28, never since, but their pods get it all the same).
    /// Ephemeral containers are not defaulted (nor may they have ports).
    pub fn on_node(&self, host_network: bool) -> Option<HostPort> {
        match (self.host_port.filter(|p| *p != 0), self.container_port) {
            (Some(port), _) => Some(HostPort { port, written: true, host_network }),
            (None, Some(port)) if host_network && port != 0 => Some(HostPort { port, written: false, host_network }),
            _ => None,
        }
    }
}

/// The network target of a probe or lifecycle hook (`httpGet`, `tcpSocket`).
#[derive(Clone, Debug, Default)]
pub struct NetworkAction<'a> {
    /// `host`: where the kubelet connects (the pod's IP when unset).
    pub host: Option<Str<'a>>,
}

/// A probe or lifecycle hook, by its network actions.
#[derive(Clone, Debug, Default)]
pub struct Handler<'a> {
    /// `httpGet`.
    pub http_get: Option<NetworkAction<'a>>,
    /// `tcpSocket`.
    pub tcp_socket: Option<NetworkAction<'a>>,
}

/// A container's `lifecycle` hooks.
#[derive(Clone, Debug, Default)]
pub struct Lifecycle<'a> {
    /// `postStart`.
    pub post_start: Option<Handler<'a>>,
    /// `preStop`.
    pub pre_stop: Option<Handler<'a>>,
}

/// The parts of a container rules read.
#[derive(Clone, Debug, Default)]
pub struct Container<'a> {
    /// Name.
    pub name: Str<'a>,
    /// Image reference.
    pub image: Option<Str<'a>>,
    /// Entrypoint (replaces the image's `ENTRYPOINT`).
    pub command: Vec<Str<'a>>,
    /// Arguments (replace the image's `CMD`).
    pub args: Vec<Str<'a>>,
    /// Environment variables.
    pub env: Vec<EnvVar<'a>>,
    /// Resources.
    pub resources: Resources<'a>,
    /// Volume mounts.
    pub volume_mounts: Vec<VolumeMount<'a>>,
    /// Security context.
    pub security_context: Option<SecurityContext<'a>>,
    /// `Always` on an init container makes it a sidecar.
    pub restart_policy: Option<Str<'a>>,
    /// Whether a TTY is allocated.
    pub tty: Option<bool>,
    /// Whether stdin is kept open.
    pub stdin: Option<bool>,
    /// `ports`.
    pub ports: Vec<ContainerPort>,
    /// `livenessProbe`.
    pub liveness_probe: Option<Handler<'a>>,
    /// `readinessProbe`.
    pub readiness_probe: Option<Handler<'a>>,
    /// `startupProbe`.
    pub startup_probe: Option<Handler<'a>>,
    /// `lifecycle`.
    pub lifecycle: Option<Lifecycle<'a>>,
}

/// A toleration.
#[derive(Clone, Debug, Default)]
pub struct Toleration<'a> {
    /// Taint key; absent with `Exists` tolerates every taint.
    pub key: Option<Str<'a>>,
    /// `Exists` or `Equal` (the default).
    pub operator: Option<Str<'a>>,
    /// Value, for `Equal`.
    pub value: Option<Str<'a>>,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`; absent for all.
    pub effect: Option<Str<'a>>,
}

/// A node selector requirement (`key`, `operator`, `values`).
#[derive(Clone, Debug, Default)]
pub struct SelectorRequirement<'a> {
    /// Label key.
    pub key: Str<'a>,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
    pub operator: Str<'a>,
    /// Values.
    pub values: Vec<Str<'a>>,
}

/// A node selector term: its requirements are ANDed.
#[derive(Clone, Debug, Default)]
pub struct NodeSelectorTerm<'a> {
    /// Requirements on node labels.
    pub match_expressions: Vec<SelectorRequirement<'a>>,
    /// Requirements on node fields.
    pub match_fields: Vec<SelectorRequirement<'a>>,
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of a node affinity: its
/// terms are ORed.
#[derive(Clone, Debug, Default)]
pub struct NodeSelector<'a> {
    /// Terms.
    pub node_selector_terms: Vec<NodeSelectorTerm<'a>>,
}

/// A weighted preferred term.
#[derive(Clone, Debug, Default)]
pub struct PreferredTerm<'a> {
    /// Weight, 1-100.
    pub weight: i64,
    /// The term.
    pub preference: NodeSelectorTerm<'a>,
}

/// A node affinity.
#[derive(Clone, Debug, Default)]
pub struct NodeAffinity<'a> {
    /// Hard requirement.
    pub required: Option<NodeSelector<'a>>,
    /// Preferences.
    pub preferred: Vec<PreferredTerm<'a>>,
}

/// A pod's `affinity` (node affinity only; pod affinity is skipped).
#[derive(Clone, Debug, Default)]
pub struct Affinity<'a> {
    /// Node affinity.
    pub node_affinity: Option<NodeAffinity<'a>>,
}

/// A `hostPath` volume source.
#[derive(Clone, Debug, Default)]
pub struct HostPath<'a> {
    /// Path on the node.
    pub path: Str<'a>,
    /// `Directory`, `CharDevice`, ...
    pub kind: Option<Str<'a>>,
}

/// An `emptyDir` volume source.
#[derive(Clone, Debug, Default)]
pub struct EmptyDir<'a> {
    /// `Memory` for a tmpfs.
    pub medium: Option<Str<'a>>,
    /// Size limit.
    pub size_limit: Option<RawQuantity<'a>>,
}

/// A `flexVolume` volume source.
#[derive(Clone, Debug, Default)]
pub struct FlexVolume<'a> {
    /// The driver (`example/lvm`).
    pub driver: Str<'a>,
}

/// An `image` volume source (beta, on by default since Kubernetes 1.35):
/// an OCI image or artifact the kubelet pulls, as it pulls a container's
/// image, and mounts read-only (model weights shipped as an image).
#[derive(Clone, Debug, Default)]
pub struct ImageVolume<'a> {
    /// The image reference, read as a container's `image` is. Optional in
    /// the API, as a container's image is, for controllers to fill in.
    pub reference: Option<Str<'a>>,
}

/// A volume (the sources rules look at; the others only by their key).
#[derive(Clone, Debug, Default)]
pub struct Volume<'a> {
    /// Name.
    pub name: Str<'a>,
    /// The keys of its sources (`hostPath`, `persistentVolumeClaim`...), in
    /// document order: every member but `name` that is not `null`. The API
    /// server allows exactly one.
    pub sources: Vec<Str<'a>>,
    /// `hostPath`.
    pub host_path: Option<HostPath<'a>>,
    /// `emptyDir`.
    pub empty_dir: Option<EmptyDir<'a>>,
    /// `flexVolume`.
    pub flex_volume: Option<FlexVolume<'a>>,
    /// `image`.
    pub image: Option<ImageVolume<'a>>,
}

/// A pod's resource claim (DRA): by name, or from a template.
#[derive(Clone, Debug, Default)]
pub struct PodResourceClaim<'a> {
    /// The name containers refer to.
    pub name: Str<'a>,
    /// An existing ResourceClaim.
    pub resource_claim_name: Option<Str<'a>>,
    /// A ResourceClaimTemplate a claim is made from for this pod.
    pub resource_claim_template_name: Option<Str<'a>>,
}

/// A pod's `os`: the operating system its containers need.
#[derive(Clone, Debug, Default)]
pub struct PodOs<'a> {
    /// `linux` or `windows`.
    pub name: Str<'a>,
}

/// The parts of a pod spec rules read.
#[derive(Clone, Debug, Default)]
pub struct PodSpec<'a> {
    /// `containers`.
    pub containers: Vec<Container<'a>>,
    /// `initContainers`.
    pub init_containers: Vec<Container<'a>>,
    /// `ephemeralContainers`.
    pub ephemeral_containers: Vec<Container<'a>>,
    /// `runtimeClassName`.
    pub runtime_class_name: Option<Str<'a>>,
    /// `tolerations`.
    pub tolerations: Vec<Toleration<'a>>,
    /// `nodeSelector`.
    pub node_selector: StrMap<'a>,
    /// `affinity`.
    pub affinity: Option<Affinity<'a>>,
    /// `nodeName` (set by the scheduler, or by hand to bypass it).
    pub node_name: Option<Str<'a>>,
    /// `serviceAccountName`.
    pub service_account_name: Option<Str<'a>>,
    /// `serviceAccount` (deprecated alias of `serviceAccountName`).
    pub service_account: Option<Str<'a>>,
    /// `hostNetwork`.
    pub host_network: Option<bool>,
    /// `hostPID`.
    pub host_pid: Option<bool>,
    /// `hostIPC`.
    pub host_ipc: Option<bool>,
    /// `shareProcessNamespace`: the containers share one PID namespace.
    pub share_process_namespace: Option<bool>,
    /// `hostUsers`: `false` runs the pod in its own user namespace, where
    /// root in a container is an unprivileged user on the node.
    pub host_users: Option<bool>,
    /// `os`.
    pub os: Option<PodOs<'a>>,
    /// `securityContext`.
    pub security_context: Option<SecurityContext<'a>>,
    /// `volumes`.
    pub volumes: Vec<Volume<'a>>,
    /// `resourceClaims` (DRA).
    pub resource_claims: Vec<PodResourceClaim<'a>>,
    /// `activeDeadlineSeconds`.
    pub active_deadline_seconds: Option<i64>,
    /// `schedulerName`.
    pub scheduler_name: Option<Str<'a>>,
    /// `priorityClassName`.
    pub priority_class_name: Option<Str<'a>>,
    /// `restartPolicy`.
    pub restart_policy: Option<Str<'a>>,
    /// Pod-level `resources` (Kubernetes 1.32+, `PodLevelResources`, beta
    /// and on by default since 1.34): CPU and memory for the pod as a
    /// whole, shared by containers without their own limits.
    pub resources: Option<Resources<'a>>,
}

impl PodSpec<'_> {
    /// The service account pods run as: `serviceAccountName`, else the
    /// deprecated `serviceAccount`, else `default`.
    pub fn service_account(&self) -> &str {
        self.service_account_name.as_deref().or(self.service_account.as_deref()).filter(|s| !s.is_empty()).unwrap_or("default")
    }

    /// Whether the pod declares itself a Windows pod (`os.name: windows`).
    /// The API server then refuses Linux-only fields (seccomp, capabilities,
    /// `allowPrivilegeEscalation`, `runAsUser`...), and the Pod Security
    /// Standards exempt it from the checks that require them.
    pub fn is_windows(&self) -> bool {
        self.os.as_ref().is_some_and(|os| &*os.name == "windows")
    }

    /// The required node affinity, if any.
    pub fn required_node_affinity(&self) -> Option<&NodeSelector<'_>> {
        self.affinity.as_ref()?.node_affinity.as_ref()?.required.as_ref()
    }

    /// The preferred node affinity terms.
    pub fn preferred_node_affinity(&self) -> &[PreferredTerm<'_>] {
        self.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).map_or(&[], |n| n.preferred.as_slice())
    }
}

// ---- Decoding: one function per type (see `crate::decode::dec`). ----

decode_struct!(OwnerReference { "apiVersion" => api_version, "kind" => kind, "name" => name, "controller" => controller });

impl<'a> Decode<'a> for ObjectMeta<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = ObjectMeta::default();
        d.object(|d, key| {
            match &*key {
                "name" => out.name = Decode::decode(d)?,
                "generateName" => out.generate_name = Decode::decode(d)?,
                "namespace" => out.namespace = Decode::decode(d)?,
                "labels" => out.labels = Decode::decode(d)?,
                "annotations" => out.annotations = Decode::decode(d)?,
                "ownerReferences" => out.owner_references = Decode::decode(d)?,
                "deletionTimestamp" => out.being_deleted = d.is_set()?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(ContainerClaim { "name" => name, "request" => request });

decode_struct!(Resources { "limits" => limits, "requests" => requests, "claims" => claims });

impl<'a> Decode<'a> for EnvVar<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = EnvVar::default();
        d.object(|d, key| {
            match &*key {
                "name" => out.name = Decode::decode(d)?,
                "value" => out.value = Decode::decode(d)?,
                "valueFrom" => out.from_source = d.is_set()?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(VolumeMount { "name" => name, "mountPath" => mount_path, "readOnly" => read_only });

decode_struct!(Capabilities { "add" => add, "drop" => drop });

decode_struct!(Profile { "type" => kind, "localhostProfile" => localhost_profile });

decode_struct!(SecurityContext { "privileged" => privileged, "allowPrivilegeEscalation" => allow_privilege_escalation, "runAsNonRoot" => run_as_non_root, "runAsUser" => run_as_user, "runAsGroup" => run_as_group, "readOnlyRootFilesystem" => read_only_root_filesystem, "capabilities" => capabilities, "seccompProfile" => seccomp_profile, "appArmorProfile" => app_armor_profile, "windowsOptions" => windows_options, "seLinuxOptions" => se_linux_options, "procMount" => proc_mount, "sysctls" => sysctls, "supplementalGroups" => supplemental_groups, "fsGroup" => fs_group });

decode_struct!(SeLinuxOptions { "user" => user, "role" => role, "type" => kind, "level" => level });

decode_struct!(Sysctl { "name" => name });

impl<'a> Decode<'a> for ContainerPort {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = ContainerPort::default();
        d.object(|d, key| {
            match &*key {
                "hostPort" => out.host_port = Decode::decode(d)?,
                "containerPort" => out.container_port = Decode::decode(d)?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(NetworkAction { "host" => host });

decode_struct!(Handler { "httpGet" => http_get, "tcpSocket" => tcp_socket });

decode_struct!(Lifecycle { "postStart" => post_start, "preStop" => pre_stop });

impl<'a> Decode<'a> for WindowsOptions {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = WindowsOptions::default();
        d.object(|d, key| {
            match &*key {
                "hostProcess" => out.host_process = Decode::decode(d)?,
                _ => d.skip()?,
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(PodOs { "name" => name });

decode_struct!(Container { "name" => name, "image" => image, "command" => command, "args" => args, "env" => env, "resources" => resources, "volumeMounts" => volume_mounts, "securityContext" => security_context, "restartPolicy" => restart_policy, "tty" => tty, "stdin" => stdin, "ports" => ports, "livenessProbe" => liveness_probe, "readinessProbe" => readiness_probe, "startupProbe" => startup_probe, "lifecycle" => lifecycle });

decode_struct!(Toleration { "key" => key, "operator" => operator, "value" => value, "effect" => effect });

decode_struct!(SelectorRequirement { "key" => key, "operator" => operator, "values" => values });

decode_struct!(NodeSelectorTerm { "matchExpressions" => match_expressions, "matchFields" => match_fields });

decode_struct!(NodeSelector { "nodeSelectorTerms" => node_selector_terms });

decode_struct!(PreferredTerm { "weight" => weight, "preference" => preference });

decode_struct!(NodeAffinity { "requiredDuringSchedulingIgnoredDuringExecution" => required, "preferredDuringSchedulingIgnoredDuringExecution" => preferred });

decode_struct!(Affinity { "nodeAffinity" => node_affinity });

decode_struct!(HostPath { "path" => path, "type" => kind });

decode_struct!(EmptyDir { "medium" => medium, "sizeLimit" => size_limit });

decode_struct!(FlexVolume { "driver" => driver });

decode_struct!(ImageVolume { "reference" => reference });

impl<'a> Decode<'a> for Volume<'a> {
    #[inline(never)]
    fn decode(d: &mut Dec<'a>) -> R<Self> {
        let mut out = Volume::default();
        d.object(|d, key| {
            match &*key {
                "name" => out.name = Decode::decode(d)?,
                "hostPath" => {
                    out.host_path = Decode::decode(d)?;
                    if out.host_path.is_some() {
                        out.sources.push(key);
                    }
                }
                "emptyDir" => {
                    out.empty_dir = Decode::decode(d)?;
                    if out.empty_dir.is_some() {
                        out.sources.push(key);
                    }
                }
                "flexVolume" => {
                    out.flex_volume = Decode::decode(d)?;
                    if out.flex_volume.is_some() {
                        out.sources.push(key);
                    }
                }
                "image" => {
                    out.image = Decode::decode(d)?;
                    if out.image.is_some() {
                        out.sources.push(key);
                    }
                }
                _ => {
                    if d.is_set()? {
                        out.sources.push(key);
                    }
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

decode_struct!(PodResourceClaim { "name" => name, "resourceClaimName" => resource_claim_name, "resourceClaimTemplateName" => resource_claim_template_name });

decode_struct!(PodSpec { "containers" => containers, "initContainers" => init_containers, "ephemeralContainers" => ephemeral_containers, "runtimeClassName" => runtime_class_name, "tolerations" => tolerations, "nodeSelector" => node_selector, "affinity" => affinity, "nodeName" => node_name, "serviceAccountName" => service_account_name, "serviceAccount" => service_account, "hostNetwork" => host_network, "hostPID" => host_pid, "hostIPC" => host_ipc, "shareProcessNamespace" => share_process_namespace, "hostUsers" => host_users, "os" => os, "securityContext" => security_context, "volumes" => volumes, "resourceClaims" => resource_claims, "activeDeadlineSeconds" => active_deadline_seconds, "schedulerName" => scheduler_name, "priorityClassName" => priority_class_name, "restartPolicy" => restart_policy, "resources" => resources });
