//! A rule's metadata, embedded at compile time from its `metadata.yml` by
//! `export_policy!` (validated then, so a rule with broken metadata does not
//! build).

/// One webhook rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// API groups (`""` is core, `*` all).
    pub api_groups: &'static [&'static str],
    /// API versions.
    pub api_versions: &'static [&'static str],
    /// Resources (`pods`, `pods/exec`, `*`).
    pub resources: &'static [&'static str],
    /// Operations (`CREATE`, ..., `*`).
    pub operations: &'static [&'static str],
}

/// A kind the rule looks up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceKind {
    /// `v1` or `group/version`.
    pub api_version: &'static str,
    /// Kind.
    pub kind: &'static str,
}

/// A rule's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyMetadata {
    /// Rule name (the crate name).
    pub name: &'static str,
    /// Rule version (the crate version).
    pub version: &'static str,
    /// The requests it receives.
    pub rules: &'static [Rule],
    /// Whether it may mutate.
    pub mutating: bool,
    /// Whether it may audit existing objects.
    pub background_audit: bool,
    /// Kinds it looks up.
    pub context_aware_resources: &'static [ResourceKind],
    /// `io.kubewarden.policy.*` annotations, in key order.
    pub annotations: &'static [(&'static str, &'static str)],
}

impl PolicyMetadata {
    /// An annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&'static str> {
        self.annotations.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// Whether a webhook with these rules receives a request for `group`,
    /// `version`, `resource` (with optional `subresource`) and `operation`,
    /// by Kubernetes' matching rules for wildcards.
    pub fn governs(&self, group: &str, version: &str, resource: &str, subresource: Option<&str>, operation: &str) -> bool {
        self.rules.iter().any(|r| {
            let listed = |list: &[&str], v: &str| list.iter().any(|x| *x == "*" || *x == v);
            listed(r.api_groups, group)
                && listed(r.api_versions, version)
                && listed(r.operations, operation)
                && r.resources.iter().any(|pattern| resource_matches(pattern, resource, subresource))
        })
    }

    /// Whether any webhook rule lists `resource` (no subresource) of API
    /// group `group`, whatever the version and operation.
    pub fn lists(&self, group: &str, resource: &str) -> bool {
        self.rules.iter().any(|r| {
            r.api_groups.iter().any(|g| *g == "*" || *g == group) && r.resources.iter().any(|p| resource_matches(p, resource, None))
        })
    }

    /// Whether the rule may look up `kind` in `api_version`.
    pub fn may_look_up(&self, api_version: &str, kind: &str) -> bool {
        self.context_aware_resources.iter().any(|r| r.api_version == api_version && r.kind == kind)
    }
}

fn resource_matches(pattern: &str, resource: &str, subresource: Option<&str>) -> bool {
    let (pres, psub) = match pattern.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (pattern, None),
    };
    let res_ok = pres == "*" || pres == resource;
    let sub_ok = match (psub, subresource) {
        (None, None) => true,
        (Some("*"), Some(_)) => true,
        (Some(p), Some(s)) => p == s,
        _ => false,
    };
    res_ok && sub_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: PolicyMetadata = PolicyMetadata {
        name: "x",
        version: "0.1.0",
        rules: &[
            Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods"], operations: &["CREATE", "UPDATE"] },
            Rule { api_groups: &[""], api_versions: &["v1"], resources: &["pods/exec", "pods/attach"], operations: &["CONNECT"] },
            Rule { api_groups: &["ray.io"], api_versions: &["*"], resources: &["*"], operations: &["*"] },
        ],
        mutating: false,
        background_audit: true,
        context_aware_resources: &[ResourceKind { api_version: "v1", kind: "Pod" }],
        annotations: &[("a", "1")],
    };

    #[test]
    fn webhook_matching() {
        assert!(M.governs("", "v1", "pods", None, "CREATE"));
        assert!(!M.governs("", "v1", "pods", None, "DELETE"));
        assert!(!M.governs("", "v1", "pods", Some("status"), "UPDATE"), "subresources need their own entry");
        assert!(M.governs("", "v1", "pods", Some("exec"), "CONNECT"));
        assert!(!M.governs("", "v1", "pods", Some("portforward"), "CONNECT"));
        assert!(M.governs("ray.io", "v1alpha1", "rayclusters", None, "DELETE"));
        assert!(!M.governs("ray.io", "v1", "rayclusters", Some("status"), "UPDATE"), "`*` excludes subresources");
        assert!(!M.governs("apps", "v1", "deployments", None, "CREATE"));
    }

    #[test]
    fn lookups_and_annotations() {
        assert!(M.may_look_up("v1", "Pod"));
        assert!(!M.may_look_up("v1", "Secret"));
        assert_eq!(M.annotation("a"), Some("1"));
        assert_eq!(M.annotation("b"), None);
    }
}
