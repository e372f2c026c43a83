//! Kubewarden policy metadata for aigov rules.
//!
//! Each rule's `metadata.yml` is the single source of its Kubewarden metadata.
//! This crate reads it ([`Metadata::from_yaml`]), refuses what Kubewarden would
//! refuse ([`Metadata::validate`]) with a message that names the file and the
//! field, and renders the compact JSON that goes into the wasm custom section
//! `io.kubewarden.metadata` ([`Metadata::to_json`]).
//!
//! It is used at compile time by the SDK's export macro (so a broken
//! `metadata.yml` fails the rule's build) and at packaging time by `aigov`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The wasm custom section Kubewarden reads policy metadata from.
pub const CUSTOM_SECTION: &str = "io.kubewarden.metadata";

/// Annotation keys of the `io.kubewarden.policy.*` family.
pub mod annotations {
    /// Human title of the policy.
    pub const TITLE: &str = "io.kubewarden.policy.title";
    /// One-line description.
    pub const DESCRIPTION: &str = "io.kubewarden.policy.description";
    /// Semver version, equal to the rule crate's version.
    pub const VERSION: &str = "io.kubewarden.policy.version";
    /// Who wrote it.
    pub const AUTHOR: &str = "io.kubewarden.policy.author";
    /// Home page.
    pub const URL: &str = "io.kubewarden.policy.url";
    /// Source repository.
    pub const SOURCE: &str = "io.kubewarden.policy.source";
    /// SPDX license expression.
    pub const LICENSE: &str = "io.kubewarden.policy.license";
    /// Long usage text (Markdown), filled from the rule's README at packaging time.
    pub const USAGE: &str = "io.kubewarden.policy.usage";
    /// `low`, `medium`, `high` or `critical`.
    pub const SEVERITY: &str = "io.kubewarden.policy.severity";
    /// Free-form category.
    pub const CATEGORY: &str = "io.kubewarden.policy.category";

    /// The annotations every aigov `metadata.yml` must carry.
    pub const REQUIRED: [&str; 9] = [TITLE, DESCRIPTION, VERSION, AUTHOR, URL, SOURCE, LICENSE, SEVERITY, CATEGORY];
}

/// An admission operation a rule can receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operation {
    /// Object creation.
    #[serde(rename = "CREATE")]
    Create,
    /// Object update.
    #[serde(rename = "UPDATE")]
    Update,
    /// Object deletion.
    #[serde(rename = "DELETE")]
    Delete,
    /// `exec`, `attach`, `portforward` and other connect subresources.
    #[serde(rename = "CONNECT")]
    Connect,
    /// Every operation.
    #[serde(rename = "*")]
    All,
}

impl Operation {
    /// The wire spelling (`CREATE`, `*`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
            Operation::All => "*",
        }
    }
}

/// One webhook rule: which requests the policy receives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// API groups (`""` is the core group, `*` all groups).
    pub api_groups: Vec<String>,
    /// API versions (`*` all versions).
    pub api_versions: Vec<String>,
    /// Resources, with optional subresource (`pods`, `pods/exec`, `*`).
    pub resources: Vec<String>,
    /// Operations.
    pub operations: Vec<Operation>,
}

/// What `metadata.yml` may write in `rules` for every workload kind aigov
/// models: `- every-workload-kind` stands for `CREATE` and `UPDATE` of each
/// resource of [`WORKLOAD_RESOURCES`]. The embedded metadata (and anything
/// Kubewarden reads) holds the rules it stands for.
pub const EVERY_WORKLOAD_KIND: &str = "every-workload-kind";

/// The workload kinds aigov models, as webhook resources: API group,
/// version (`*` for custom resources, whose served versions move) and
/// plural resources. The SDK's tests hold `WorkloadKind::ALL` to it.
pub const WORKLOAD_RESOURCES: &[(&str, &str, &[&str])] = &[
    ("", "v1", &["pods", "replicationcontrollers"]),
    ("apps", "v1", &["deployments", "statefulsets", "daemonsets", "replicasets"]),
    ("batch", "v1", &["jobs", "cronjobs"]),
    ("ray.io", "*", &["rayclusters", "rayjobs", "rayservices"]),
    ("kubeflow.org", "*", &["pytorchjobs", "mpijobs", "tfjobs", "jaxjobs", "xgboostjobs", "paddlejobs", "notebooks"]),
    ("serving.kserve.io", "*", &["inferenceservices"]),
    ("trainer.kubeflow.org", "*", &["trainjobs"]),
    ("batch.volcano.sh", "*", &["jobs"]),
    ("jobset.x-k8s.io", "*", &["jobsets"]),
    ("leaderworkerset.x-k8s.io", "*", &["leaderworkersets"]),
];

/// The rules [`EVERY_WORKLOAD_KIND`] stands for.
pub fn every_workload_kind() -> Vec<Rule> {
    WORKLOAD_RESOURCES
        .iter()
        .map(|(group, version, resources)| Rule {
            api_groups: vec![group.to_string()],
            api_versions: vec![version.to_string()],
            resources: resources.iter().map(|r| r.to_string()).collect(),
            operations: vec![Operation::Create, Operation::Update],
        })
        .collect()
}

/// One entry of `rules` as `metadata.yml` writes it: a rule, or a
/// shorthand for several.
struct RuleEntry(Vec<Rule>);

impl<'de> Deserialize<'de> for RuleEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = RuleEntry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a webhook rule (apiGroups, apiVersions, resources, operations) or `{EVERY_WORKLOAD_KIND}`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RuleEntry, E> {
                if v == EVERY_WORKLOAD_KIND {
                    Ok(RuleEntry(every_workload_kind()))
                } else {
                    Err(E::custom(format!("unknown shorthand `{v}`: write a rule, or `{EVERY_WORKLOAD_KIND}`")))
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RuleEntry, A::Error> {
                Rule::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(|r| RuleEntry(vec![r]))
            }
        }
        d.deserialize_any(Entry)
    }
}

fn rules_or_shorthands<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Rule>, D::Error> {
    let entries = Vec::<RuleEntry>::deserialize(d)?;
    Ok(entries.into_iter().flat_map(|e| e.0).collect())
}

/// A kind a context-aware policy reads from the cluster.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextAwareResource {
    /// `v1`, or `group/version`.
    pub api_version: String,
    /// Singular PascalCase kind.
    pub kind: String,
}

/// How policy-server runs the module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutionMode {
    /// A waPC module (every aigov rule).
    #[default]
    #[serde(rename = "kubewarden-wapc")]
    KubewardenWapc,
    /// An OPA policy.
    #[serde(rename = "opa")]
    Opa,
    /// A Gatekeeper policy.
    #[serde(rename = "gatekeeper")]
    Gatekeeper,
    /// A WASI command.
    #[serde(rename = "wasi")]
    Wasi,
}

/// What the policy evaluates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicyType {
    /// Kubernetes admission requests.
    #[default]
    #[serde(rename = "kubernetes")]
    Kubernetes,
    /// Arbitrary JSON documents.
    #[serde(rename = "raw")]
    Raw,
}

/// Whether dotted version `a` is newer than `b` (`1.10.0` > `1.9.2`).
fn newer(a: &str, b: &str) -> bool {
    let parts = |v: &str| v.split('.').map(|p| p.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>();
    parts(a) > parts(b)
}

fn default_true() -> bool {
    true
}

/// The Kubernetes host capabilities a rule may declare, in Kubewarden's
/// names (policy-evaluator's capability tree).
pub const KUBERNETES_CAPABILITIES: [&str; 4] =
    ["kubernetes/get_resource", "kubernetes/list_resources_by_namespace", "kubernetes/list_resources_all", "kubernetes/can_i"];

/// Kubewarden policy metadata, as written in `metadata.yml` and embedded in
/// the `io.kubewarden.metadata` custom section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// `v1`; not written in `metadata.yml`: `aigov build annotate` asks the module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The requests the policy receives. Required. `metadata.yml` may write
    /// [`EVERY_WORKLOAD_KIND`] for the workload kinds' rules.
    #[serde(deserialize_with = "rules_or_shorthands")]
    pub rules: Vec<Rule>,
    /// Labels (rarely used).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `io.kubewarden.policy.*` annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Whether the policy may mutate. Required.
    pub mutating: bool,
    /// Whether the policy can audit existing objects in the background.
    #[serde(default = "default_true")]
    pub background_audit: bool,
    /// Kinds the policy looks up in the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_aware_resources: Vec<ContextAwareResource>,
    /// The host calls the policy makes (`kubernetes/get_resource`, ...):
    /// a standalone policy-server grants a policy only the capabilities its
    /// `policies.yml` entry lists, and refuses every other call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_capabilities: Vec<String>,
    /// How policy-server runs the module.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    /// What the policy evaluates.
    #[serde(default)]
    pub policy_type: PolicyType,
    /// The oldest Kubewarden able to run the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
}

/// Why a metadata document was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataError {
    /// The file the metadata came from (`policies/x/metadata.yml`), if any.
    pub file: Option<String>,
    /// The offending field (`rules[0].operations[1]`), if known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl MetadataError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        MetadataError { file: None, field: Some(field.into()), message: message.into() }
    }

    /// Attaches the file name, for messages.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "`{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for MetadataError {}

impl Metadata {
    /// Parses and validates a `metadata.yml` document.
    pub fn from_yaml(text: &str) -> Result<Metadata, MetadataError> {
        let de = serde_norway::Deserializer::from_str(text);
        let metadata: Metadata = serde_path_to_error::deserialize(de).map_err(|err| {
            let path = err.path().to_string();
            let message = err.into_inner().to_string();
            // The YAML error may already start with the path: say it once.
            let message = message.strip_prefix(&format!("{path}: ")).map_or(message.clone(), str::to_string);
            MetadataError { file: None, field: (path != ".").then_some(path), message }
        })?;
        metadata.validate()?;
        Ok(metadata)
    }

    /// Parses the JSON form (the custom section's content).
    pub fn from_json(text: &[u8]) -> Result<Metadata, MetadataError> {
        serde_json::from_slice(text).map_err(|err| MetadataError {
            file: None,
            field: None,
            message: format!("not valid Kubewarden metadata JSON: {err}"),
        })
    }

    /// Compact, deterministic JSON, as embedded in `io.kubewarden.metadata`.
    pub fn to_json(&self) -> String {
        // Serializing plain structs, strings and BTreeMaps cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The metadata of a bundle of rules: the union of their webhook rules
    /// (duplicates dropped, first occurrence kept) and lookups; mutating if
    /// any rule is, background audit if any rule allows it; the bundle's own
    /// annotations.
    pub fn union<'m>(parts: impl IntoIterator<Item = &'m Metadata>, annotations: BTreeMap<String, String>) -> Metadata {
        let mut out = Metadata {
            protocol_version: None,
            rules: Vec::new(),
            labels: BTreeMap::new(),
            annotations,
            mutating: false,
            background_audit: false,
            context_aware_resources: Vec::new(),
            host_capabilities: Vec::new(),
            execution_mode: ExecutionMode::KubewardenWapc,
            policy_type: PolicyType::default(),
            minimum_kubewarden_version: None,
        };
        for m in parts {
            for r in &m.rules {
                if !out.rules.contains(r) {
                    out.rules.push(r.clone());
                }
            }
            for c in &m.context_aware_resources {
                if !out.context_aware_resources.contains(c) {
                    out.context_aware_resources.push(c.clone());
                }
            }
            for c in &m.host_capabilities {
                if !out.host_capabilities.contains(c) {
                    out.host_capabilities.push(c.clone());
                }
            }
            out.host_capabilities.sort();
            out.mutating |= m.mutating;
            out.background_audit |= m.background_audit;
            out.minimum_kubewarden_version = match (out.minimum_kubewarden_version.take(), &m.minimum_kubewarden_version) {
                (None, v) => v.clone(),
                (Some(a), Some(b)) if newer(b, &a) => Some(b.clone()),
                (a, _) => a,
            };
        }
        out
    }

    /// The bundle's metadata: the union of its rules' ([`Metadata::union`])
    /// with the bundle's own annotations, at `version`.
    pub fn bundle<'m>(parts: impl IntoIterator<Item = &'m Metadata>, version: &str) -> Metadata {
        let mut notes = BTreeMap::new();
        for (k, v) in [
            (annotations::TITLE, "aigov-bundle"),
            (
                annotations::DESCRIPTION,
                "Every aigov rule in one policy: the rules enabled in its settings, evaluated on a single parse of the request",
            ),
            (annotations::VERSION, version),
            (annotations::AUTHOR, "aigov developers"),
            (annotations::URL, "https://github.com/aigov-dev/aigov"),
            (annotations::SOURCE, "https://github.com/aigov-dev/aigov/tree/main/policies/bundle"),
            (annotations::LICENSE, "Apache-2.0"),
            (annotations::SEVERITY, "high"),
            (annotations::CATEGORY, "AI/ML governance"),
        ] {
            notes.insert(k.to_string(), v.to_string());
        }
        Metadata::union(parts, notes)
    }

    /// The `io.kubewarden.policy.version` annotation, if present.
    pub fn version(&self) -> Option<&str> {
        self.annotations.get(annotations::VERSION).map(String::as_str)
    }

    /// Refuses what Kubewarden's policy-server would refuse, and what aigov's
    /// packaging needs: every rule with groups, versions, resources and
    /// operations; `*` alone in its list; valid resource wildcards; complete
    /// context-aware kinds; the required annotations; a semver version.
    pub fn validate(&self) -> Result<(), MetadataError> {
        if self.rules.is_empty() {
            return Err(MetadataError::new("rules", "at least one rule is required: without rules the policy receives no requests"));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            validate_rule(rule).map_err(|(field, message)| MetadataError::new(format!("rules[{i}].{field}"), message))?;
        }
        for (i, res) in self.context_aware_resources.iter().enumerate() {
            if res.api_version.trim().is_empty() {
                return Err(MetadataError::new(format!("contextAwareResources[{i}].apiVersion"), "must not be empty"));
            }
            if res.kind.trim().is_empty() {
                return Err(MetadataError::new(format!("contextAwareResources[{i}].kind"), "must not be empty"));
            }
        }
        for (i, c) in self.host_capabilities.iter().enumerate() {
            if !KUBERNETES_CAPABILITIES.contains(&c.as_str()) {
                return Err(MetadataError::new(
                    format!("hostCapabilities[{i}]"),
                    format!(
                        "`{c}` is not a host call aigov rules make: use {}",
                        KUBERNETES_CAPABILITIES.map(|k| format!("`{k}`")).join(", ")
                    ),
                ));
            }
        }
        match (self.context_aware_resources.is_empty(), self.host_capabilities.is_empty()) {
            (false, true) => {
                return Err(MetadataError::new(
                    "hostCapabilities",
                    "must list the `kubernetes/...` calls the policy makes to read its `contextAwareResources`: policy-server grants a policy only the capabilities listed",
                ));
            }
            (true, false) => {
                return Err(MetadataError::new(
                    "hostCapabilities",
                    "must be empty when `contextAwareResources` is: the policy reads nothing",
                ));
            }
            _ => {}
        }
        if self.execution_mode != ExecutionMode::KubewardenWapc {
            return Err(MetadataError::new("executionMode", "aigov rules are waPC modules: use `kubewarden-wapc`"));
        }
        if let Some(v) = &self.protocol_version
            && v != "v1"
        {
            return Err(MetadataError::new("protocolVersion", format!("unsupported protocol version `{v}`, expected `v1`")));
        }
        if let Some(v) = &self.minimum_kubewarden_version
            && !is_semver(v)
        {
            return Err(MetadataError::new("minimumKubewardenVersion", format!("`{v}` is not a semantic version like `1.10.0`")));
        }
        for key in annotations::REQUIRED {
            match self.annotations.get(key) {
                Some(v) if !v.trim().is_empty() => {}
                _ => {
                    return Err(MetadataError::new(format!("annotations.\"{key}\""), "is required and must not be empty"));
                }
            }
        }
        if self.annotations.contains_key(annotations::USAGE) {
            return Err(MetadataError::new(
                format!("annotations.\"{}\"", annotations::USAGE),
                "is generated from the rule's README.md at packaging time: remove it",
            ));
        }
        if let Some(v) = self.version()
            && !is_semver(v)
        {
            return Err(MetadataError::new(
                format!("annotations.\"{}\"", annotations::VERSION),
                format!("`{v}` is not a semantic version like `0.1.0`"),
            ));
        }
        if let Some(s) = self.annotations.get(annotations::SEVERITY)
            && !matches!(s.as_str(), "low" | "medium" | "high" | "critical")
        {
            return Err(MetadataError::new(
                format!("annotations.\"{}\"", annotations::SEVERITY),
                format!("`{s}` is not one of `low`, `medium`, `high`, `critical`"),
            ));
        }
        Ok(())
    }
}

/// Checks one rule; returns the field (relative to the rule) and the message.
fn validate_rule(rule: &Rule) -> Result<(), (String, String)> {
    for (field, list) in [("apiGroups", &rule.api_groups), ("apiVersions", &rule.api_versions)] {
        if list.is_empty() {
            return Err((field.into(), "must list at least one entry".into()));
        }
        if list.len() > 1 && list.iter().any(|v| v == "*") {
            return Err((field.into(), "`*` must be the only entry when present".into()));
        }
    }
    if rule.operations.is_empty() {
        return Err(("operations".into(), "must list at least one operation".into()));
    }
    if rule.operations.len() > 1 && rule.operations.contains(&Operation::All) {
        return Err(("operations".into(), "`*` must be the only entry when present".into()));
    }
    validate_resources(&rule.resources).map_err(|m| ("resources".to_string(), m))
}

/// Kubernetes' own resource wildcard rules (see admissionregistration
/// validation): no empty names, `*/*` alone, `*` not mixed with plain
/// resources, `x/*` not mixed with `x/y`, `*/y` not mixed with `x/y`.
fn validate_resources(resources: &[String]) -> Result<(), String> {
    if resources.is_empty() {
        return Err("must list at least one resource".into());
    }
    let mut any_sub_of: Vec<&str> = Vec::new(); // x/*
    let mut any_res_with: Vec<&str> = Vec::new(); // */y
    let mut has_star = false;
    let mut has_plain = false;
    for r in resources {
        if r.is_empty() {
            return Err("empty resource name".into());
        }
        match r.split_once('/') {
            None => {
                if r == "*" {
                    has_star = true;
                } else {
                    has_plain = true;
                }
            }
            Some((res, sub)) => {
                if res.is_empty() || sub.is_empty() {
                    return Err(format!("`{r}` is not `resource/subresource`"));
                }
                if r == "*/*" && resources.len() > 1 {
                    return Err("`*/*` must be the only resource when present".into());
                }
                if any_sub_of.contains(&res) {
                    return Err(format!("`{res}/*` is present, so `{r}` must not be"));
                }
                if any_res_with.contains(&sub) {
                    return Err(format!("`*/{sub}` is present, so `{r}` must not be"));
                }
                if sub == "*" {
                    any_sub_of.push(res);
                }
                if res == "*" {
                    any_res_with.push(sub);
                }
            }
        }
    }
    if has_star && has_plain {
        return Err("`*` must not be mixed with other resources without subresource".into());
    }
    Ok(())
}

/// `MAJOR.MINOR.PATCH` with optional `-pre` and `+build`.
fn is_semver(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
    operations: ["CREATE", "UPDATE"]
mutating: false
contextAwareResources:
  - apiVersion: v1
    kind: Pod
hostCapabilities: [kubernetes/get_resource]
annotations:
  io.kubewarden.policy.title: t
  io.kubewarden.policy.description: d
  io.kubewarden.policy.version: 0.1.0
  io.kubewarden.policy.author: a
  io.kubewarden.policy.url: https://example.com
  io.kubewarden.policy.source: https://example.com
  io.kubewarden.policy.license: Apache-2.0
  io.kubewarden.policy.severity: medium
  io.kubewarden.policy.category: c
"#;

    fn refusal(doc: &str) -> MetadataError {
        Metadata::from_yaml(doc).expect_err("document must be refused")
    }

    #[test]
    fn good_document_round_trips_through_json() {
        let m = Metadata::from_yaml(GOOD).unwrap();
        assert!(m.background_audit, "backgroundAudit defaults to true");
        assert_eq!(m.execution_mode, ExecutionMode::KubewardenWapc);
        let json = m.to_json();
        assert!(json.starts_with(r#"{"rules":[{"apiGroups":[""]"#), "{json}");
        assert!(json.contains(r#""executionMode":"kubewarden-wapc""#), "{json}");
        assert_eq!(Metadata::from_json(json.as_bytes()).unwrap(), m);
    }

    #[test]
    fn missing_rules_names_the_field() {
        let e = refusal("mutating: false\n");
        assert!(e.to_string().contains("missing field `rules`"), "{e}");
    }

    #[test]
    fn missing_mutating_names_the_field() {
        let doc = GOOD.replace("mutating: false\n", "");
        let e = refusal(&doc);
        assert!(e.to_string().contains("missing field `mutating`"), "{e}");
    }

    #[test]
    fn empty_resources_are_refused() {
        let e = refusal(&GOOD.replace(r#"resources: ["pods"]"#, "resources: []"));
        assert_eq!(e.field.as_deref(), Some("rules[0].resources"), "{e}");
    }

    #[test]
    fn unknown_operation_names_the_index() {
        let e = refusal(&GOOD.replace(r#""UPDATE""#, r#""UPDAET""#));
        assert_eq!(e.field.as_deref(), Some("rules[0].operations[1]"), "{e}");
        assert!(e.message.contains("unknown variant `UPDAET`"), "{e}");
    }

    #[test]
    fn unknown_key_is_refused() {
        let e = refusal(&format!("{GOOD}mutatting: true\n"));
        assert!(e.message.contains("unknown field `mutatting`"), "{e}");
    }

    #[test]
    fn star_must_stand_alone() {
        let e = refusal(&GOOD.replace(r#"["CREATE", "UPDATE"]"#, r#"["*", "CREATE"]"#));
        assert_eq!(e.field.as_deref(), Some("rules[0].operations"), "{e}");
        let e = refusal(&GOOD.replace(r#"resources: ["pods"]"#, r#"resources: ["*", "pods"]"#));
        assert_eq!(e.field.as_deref(), Some("rules[0].resources"), "{e}");
    }

    #[test]
    fn subresource_wildcards_follow_kubernetes() {
        assert!(validate_resources(&["pods".into(), "pods/*".into()]).is_ok());
        assert!(validate_resources(&["*".into(), "pods/exec".into()]).is_ok());
        assert!(validate_resources(&["pods/*".into(), "pods/exec".into()]).is_err());
        assert!(validate_resources(&["*/exec".into(), "pods/exec".into()]).is_err());
        assert!(validate_resources(&["*/*".into(), "pods".into()]).is_err());
        assert!(validate_resources(&["pods/".into()]).is_err());
    }

    #[test]
    fn required_annotations_are_enforced() {
        let e = refusal(&GOOD.replace("  io.kubewarden.policy.license: Apache-2.0\n", ""));
        assert_eq!(e.field.as_deref(), Some("annotations.\"io.kubewarden.policy.license\""), "{e}");
    }

    #[test]
    fn usage_comes_from_the_readme() {
        let e = refusal(&format!("{GOOD}  io.kubewarden.policy.usage: x\n"));
        assert!(e.message.contains("README.md"), "{e}");
    }

    #[test]
    fn every_workload_kind_stands_for_the_workload_rules() {
        let short = GOOD.replacen("rules:\n", "rules:\n  - every-workload-kind\n", 1);
        let m = Metadata::from_yaml(&short).unwrap();
        assert_eq!(m.rules.len(), WORKLOAD_RESOURCES.len() + 1, "the shorthand, then the pods rule");
        assert_eq!(m.rules[..WORKLOAD_RESOURCES.len()], every_workload_kind());
        assert!(!m.to_json().contains(EVERY_WORKLOAD_KIND), "Kubewarden reads the rules it stands for");
        let typo = GOOD.replacen("rules:\n", "rules:\n  - every-workload\n", 1);
        let e = Metadata::from_yaml(&typo).unwrap_err();
        assert!(e.to_string().contains("unknown shorthand `every-workload`"), "{e}");
        let bad = GOOD.replacen("resources: [\"pods\"]", "resource: [\"pods\"]", 1);
        let e = Metadata::from_yaml(&bad).unwrap_err();
        assert!(e.to_string().contains("resource"), "a malformed rule is still named: {e}");
    }

    #[test]
    fn host_capabilities_go_with_context_aware_resources() {
        let without = GOOD.replace("hostCapabilities: [kubernetes/get_resource]\n", "");
        assert_eq!(Metadata::from_yaml(&without).unwrap_err().field.as_deref(), Some("hostCapabilities"));
        let unknown = GOOD.replace("kubernetes/get_resource", "kubernetes/delete_resource");
        let e = Metadata::from_yaml(&unknown).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("hostCapabilities[0]"), "{e}");
        let reads_nothing = GOOD.replace("contextAwareResources:\n  - apiVersion: v1\n    kind: Pod\n", "");
        assert_eq!(Metadata::from_yaml(&reads_nothing).unwrap_err().field.as_deref(), Some("hostCapabilities"));
        let m = Metadata::from_yaml(GOOD).unwrap();
        assert_eq!(Metadata::from_json(m.to_json().as_bytes()).unwrap().host_capabilities, ["kubernetes/get_resource"]);
        let mut other = m.clone();
        other.host_capabilities = vec!["kubernetes/list_resources_by_namespace".into()];
        let union = Metadata::union([&other, &m], BTreeMap::new());
        assert_eq!(union.host_capabilities, ["kubernetes/get_resource", "kubernetes/list_resources_by_namespace"], "sorted, once each");
    }

    #[test]
    fn version_and_severity_are_checked() {
        let e = refusal(&GOOD.replace("version: 0.1.0", "version: one"));
        assert!(e.message.contains("not a semantic version"), "{e}");
        let e = refusal(&GOOD.replace("severity: medium", "severity: scary"));
        assert!(e.message.contains("`scary`"), "{e}");
    }

    #[test]
    fn context_aware_kind_must_be_complete() {
        let e = refusal(&GOOD.replace("kind: Pod", "kind: \"\""));
        assert_eq!(e.field.as_deref(), Some("contextAwareResources[0].kind"), "{e}");
    }

    #[test]
    fn error_display_names_file_and_field() {
        let e = refusal(&GOOD.replace(r#"resources: ["pods"]"#, "resources: []")).in_file("policies/x/metadata.yml");
        assert!(e.to_string().starts_with("policies/x/metadata.yml: `rules[0].resources`: "), "{e}");
    }
}
