//! The webhook rules of a generated policy: the resources a rule acts on
//! only under some settings ([`SETTING_GATED_RESOURCES`]), left out of its
//! policy unless its settings turn them on, and rules merged where that
//! changes nothing a request matches.

use serde_json::Value;

/// A resource a rule acts on only under some settings. A generated policy
/// lists it in its webhook rules only when the policy's settings (the
/// rule's defaults) turn it on, so the API server does not call the webhook
/// for requests the rule would admit unread. The policy says what was left
/// out and how to add it back.
pub struct Gate {
    /// The rule.
    pub rule: &'static str,
    /// The resource (`pods/portforward`).
    pub resource: &'static str,
    /// The settings that turn it on, as the policy's comment words them.
    pub when: &'static str,
    /// Whether settings turn it on.
    pub on: fn(&Value) -> bool,
}

/// Whether settings list `value` under `key`.
fn lists(settings: &Value, key: &str, value: &str) -> bool {
    settings.get(key).and_then(Value::as_array).is_some_and(|l| l.iter().any(|v| v == value))
}

/// Whether gpu-class-by-namespace's settings judge DRA claim objects.
fn claims_governed(s: &Value) -> bool {
    let set = |k: &str| match s.get(k) {
        None | Some(Value::Null) => false,
        Some(Value::Array(l)) => !l.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    };
    set("deviceClasses") || set("deviceClassProducts") || set("adminAccess")
}

/// Every resource a rule acts on only under some settings.
pub const SETTING_GATED_RESOURCES: &[Gate] = &[
    Gate { rule: "exec-guard", resource: "pods/portforward", when: "`guardPortForward: true`", on: |s| s["guardPortForward"] == true },
    Gate { rule: "exec-guard", resource: "pods/proxy", when: "`guardPortForward: true`", on: |s| s["guardPortForward"] == true },
    Gate { rule: "model-provenance", resource: "pods", when: "`Pod` in `kinds`", on: |s| lists(s, "kinds", "Pod") },
    Gate {
        rule: "model-provenance",
        resource: "leaderworkersets",
        when: "`LeaderWorkerSet` in `kinds`",
        on: |s| lists(s, "kinds", "LeaderWorkerSet"),
    },
    Gate { rule: "model-provenance", resource: "rayjobs", when: "`RayJob` in `kinds`", on: |s| lists(s, "kinds", "RayJob") },
    Gate { rule: "model-provenance", resource: "rayservices", when: "`RayService` in `kinds`", on: |s| lists(s, "kinds", "RayService") },
    Gate { rule: "model-provenance", resource: "jobsets", when: "`JobSet` in `kinds`", on: |s| lists(s, "kinds", "JobSet") },
    Gate {
        rule: "gpu-class-by-namespace",
        resource: "resourceclaims",
        when: "`deviceClasses`, `deviceClassProducts` or `adminAccess` set",
        on: claims_governed,
    },
    Gate {
        rule: "gpu-class-by-namespace",
        resource: "resourceclaimtemplates",
        when: "`deviceClasses`, `deviceClassProducts` or `adminAccess` set",
        on: claims_governed,
    },
    Gate {
        rule: "workload-classification",
        resource: "namespaces",
        when: "labels listed in `namespaceLabels`",
        on: |s| s.get("namespaceLabels").and_then(Value::as_object).is_some_and(|m| !m.is_empty()),
    },
];

/// A resource left out of a policy's webhook rules, and the setting that
/// would bring it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// `pods/portforward`.
    pub resource: String,
    /// What turns it on: `` `guardPortForward: true` ``.
    pub when: String,
}

/// The webhook rules of a rule's policy: its metadata's rules, without the
/// [`SETTING_GATED_RESOURCES`] its `settings` leave off (a rule left with
/// no resource is dropped), and what was left out.
pub fn webhook_rules(name: &str, rules: &[aigov_metadata::Rule], settings: &Value) -> (Vec<aigov_metadata::Rule>, Vec<Dropped>) {
    let off: Vec<(&str, &str)> =
        SETTING_GATED_RESOURCES.iter().filter(|g| g.rule == name && !(g.on)(settings)).map(|g| (g.resource, g.when)).collect();
    let mut dropped: Vec<Dropped> = Vec::new();
    let mut out = Vec::new();
    for rule in rules {
        let mut kept = rule.clone();
        kept.resources.retain(|resource| match off.iter().find(|(r, _)| r == resource) {
            Some((r, when)) => {
                let d = Dropped { resource: r.to_string(), when: when.to_string() };
                if !dropped.contains(&d) {
                    dropped.push(d);
                }
                false
            }
            None => true,
        });
        if !kept.resources.is_empty() {
            out.push(kept);
        }
    }
    (out, dropped)
}

/// Webhook rules with the same groups, versions and operations, as one rule
/// listing all their resources: a request matches the merged rule exactly
/// when it matches one of them. Rules whose resources hold a wildcard are
/// left as they are (Kubernetes wants `*` alone in its list).
pub fn merge_rules(rules: Vec<aigov_metadata::Rule>) -> Vec<aigov_metadata::Rule> {
    fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
        a.len() == b.len() && a.iter().all(|x| b.contains(x))
    }
    let wild = |r: &aigov_metadata::Rule| r.resources.iter().any(|x| x.contains('*'));
    let mut out: Vec<aigov_metadata::Rule> = Vec::new();
    for rule in rules {
        let into = out.iter_mut().find(|o| {
            !wild(o)
                && !wild(&rule)
                && same(&o.api_groups, &rule.api_groups)
                && same(&o.api_versions, &rule.api_versions)
                && same(&o.operations, &rule.operations)
        });
        match into {
            Some(o) => {
                for resource in rule.resources {
                    if !o.resources.contains(&resource) {
                        o.resources.push(resource);
                    }
                }
            }
            None => out.push(rule),
        }
    }
    out
}
