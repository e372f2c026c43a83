//! No late failures: a rule's verdict on an object is its verdict on
//! everything the controllers build from it.
//!
//! A rule judges the object it is sent, but the cluster runs what a
//! controller builds from it. A parent admitted whose pods are refused is a
//! late failure (the workload never starts, and nobody is told at
//! `kubectl apply`); pods that carry what the parent's fields hid escape
//! the rule. So every case of every rule that creates an object, and every
//! UPDATE that makes its controllers create objects again
//! ([`aigov_controllers::update_builds`]: a changed template they roll, a
//! scale-up, a resumed job), is also run on what [`aigov_controllers`] says
//! its controllers build from the (new) object (a
//! Deployment's ReplicaSet and pod, a RayCluster's head with KubeRay's
//! autoscaler, a LeaderWorkerSet's worker StatefulSet owned by its leader
//! Pod), each submitted as its controller submits it: the controller's
//! identity, its owner reference, the API server's defaults. The rule's
//! verdict on the parent must equal the conjunction of its verdicts on
//! every child whose kind it governs; where a difference is right, the
//! case says why (`children`).

use std::sync::Arc;

use aigov_controllers::{Built, Lookup, Unmodelled, descendants, update_builds};
use aigov_sdk::{NativePolicy, ValidationResponse};
use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;

use crate::run::admission::{Submission, plural, to_admission_request};
use crate::run::artifact::Evaluator;
use crate::run::cluster::FixtureCluster;

/// A rule's verdict on one object, as the property compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Admitted as it is.
    Admitted,
    /// Admitted with a change (a mutating rule's).
    Changed,
    /// Refused (or, in audit mode, reported as what enforce would refuse).
    Refused,
    /// What the controllers build cannot be modelled (only in a case's
    /// [`Expect`], with why).
    Unmodelled,
}

impl Verdict {
    /// The verdict of a response: refused when not accepted or when audit
    /// mode reported a violation.
    pub fn of(r: &ValidationResponse) -> Verdict {
        let audited = r.audit_annotations.keys().any(|k| k == "violations" || k.ends_with(".violations"));
        match (r.accepted && !audited, r.mutated_object.is_some()) {
            (false, _) => Verdict::Refused,
            (true, true) => Verdict::Changed,
            (true, false) => Verdict::Admitted,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Verdict::Admitted => "admits",
            Verdict::Changed => "changes",
            Verdict::Refused => "refuses",
            Verdict::Unmodelled => "cannot tell",
        }
    }
}

/// What a case says when the rule's verdict on what the controllers build
/// is not its verdict on the case's object: that verdict, and why that is
/// right.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// The verdict on everything built (`refused` if the rule refuses any
    /// of it, else `changed` if it changes any, else `admitted`), or
    /// `unmodelled`.
    pub verdict: Verdict,
    /// Why the difference is right.
    pub because: String,
}

/// One object built from the case's, and the rule's answer to it.
#[derive(Clone, Debug)]
pub struct Judged {
    /// What was built, by whom.
    pub built: Built,
    /// The rule's answer.
    pub response: ValidationResponse,
}

/// What the property found for one request.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Nothing is built by this request: it creates no object, or it
    /// updates one in a way that makes its controllers create nothing (its
    /// own labels, a scale-down, status).
    NothingBuilt,
    /// What the controllers build cannot be modelled, and why.
    Unmodelled(Unmodelled),
    /// The rule's answers to everything built whose kind it governs (none:
    /// nothing it governs is built).
    Judged(Vec<Judged>),
}

impl Lookup for FixtureCluster {
    fn get(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.object(api_version, kind, namespace, name).cloned()
    }
}

/// Runs `rule` on what the controllers build from `request`'s object (from
/// the object `answer` mutated it into, when it did), with the same
/// settings and cluster: on a CREATE, and on an UPDATE that makes them
/// build again (judged from its new object, each child a CREATE by its
/// controller, as they will be).
pub fn judge(
    rule: &'static NativePolicy,
    request: &str,
    answer: &ValidationResponse,
    settings: &str,
    cluster: &Arc<FixtureCluster>,
) -> Result<Outcome> {
    let request: Value = serde_json::from_str(request)?;
    let object = match answer.mutated_object.as_ref() {
        Some(m) => serde_json::from_str(m.get())?,
        None => request.get("object").cloned().unwrap_or(Value::Null),
    };
    if !object.is_object() || request.get("subResource").is_some() {
        return Ok(Outcome::NothingBuilt);
    }
    let object = match request.get("operation").and_then(Value::as_str) {
        Some("CREATE") => object,
        Some("UPDATE") => match request.get("oldObject").filter(|o| o.is_object()).and_then(|old| update_builds(old, &object)) {
            Some(rebuild) => rebuild.from,
            None => return Ok(Outcome::NothingBuilt),
        },
        _ => return Ok(Outcome::NothingBuilt),
    };
    let namespace = request
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or_else(|| object.pointer("/metadata/namespace").and_then(Value::as_str))
        .unwrap_or("default")
        .to_string();
    let built = match descendants(&object, &namespace, cluster.as_ref()) {
        Ok(b) => b,
        Err(u) => return Ok(Outcome::Unmodelled(u)),
    };
    let evaluator = Evaluator::native(rule);
    let mut judged = Vec::new();
    for b in built {
        if !governs(rule, &b.object) {
            continue;
        }
        let how = Submission {
            operation: Some("CREATE".into()),
            user: Some(b.by.identity.username.clone()),
            groups: Some(b.by.identity.groups.clone()),
            namespace: Some(namespace.clone()),
            ..Submission::default()
        };
        let child = to_admission_request(b.object.clone(), &how)?.to_string();
        let response = evaluator.validate(&child, settings, cluster)?;
        judged.push(Judged { built: b, response });
    }
    Ok(Outcome::Judged(judged))
}

/// Whether `rule`'s webhook rules route the creation of `object` to it.
fn governs(rule: &NativePolicy, object: &Value) -> bool {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    rule.metadata.governs(group, version, &plural(group, kind), None, "CREATE")
}

/// The verdict on everything judged: refused if any is, else changed if
/// any is, else admitted; `None` when nothing was judged.
pub fn conjunction(judged: &[Judged]) -> Option<Verdict> {
    let verdicts: Vec<Verdict> = judged.iter().map(|j| Verdict::of(&j.response)).collect();
    if verdicts.is_empty() {
        None
    } else if verdicts.contains(&Verdict::Refused) {
        Some(Verdict::Refused)
    } else if verdicts.contains(&Verdict::Changed) {
        Some(Verdict::Changed)
    } else {
        Some(Verdict::Admitted)
    }
}

/// The property for one request: the problems with `outcome` given the
/// verdict on the parent and what the case `expects` (absent: the same
/// verdict as the parent's).
pub fn check(parent: &ValidationResponse, outcome: &Outcome, expects: Option<&Expect>) -> Vec<String> {
    let parent = match Verdict::of(parent) {
        // The children are built from the changed object.
        Verdict::Changed => Verdict::Admitted,
        v => v,
    };
    let judged = match (outcome, expects) {
        (Outcome::NothingBuilt, None) => return Vec::new(),
        (Outcome::NothingBuilt, Some(_)) => {
            return vec![
                "`children`: the case creates no object, and makes no controller create one (an update of a template they roll, a scale-up, a resumed job would), so nothing is built from it to compare; remove `children`"
                    .into(),
            ];
        }
        (Outcome::Unmodelled(_), Some(e)) if e.verdict == Verdict::Unmodelled => return Vec::new(),
        (Outcome::Unmodelled(u), _) => {
            return vec![format!(
                "what the controllers build from the object cannot be modelled ({u}): give the case's `cluster` what its controller reads, or say `children: {{verdict: unmodelled, because: ...}}`"
            )];
        }
        (Outcome::Judged(j), _) => j,
    };
    let Some(children) = conjunction(judged) else {
        return match expects {
            None => Vec::new(),
            Some(_) => vec!["`children`: nothing built from the object is of a kind the rule governs; remove `children`".into()],
        };
    };
    let expected = expects.map_or(parent, |e| e.verdict);
    if children == expected {
        if let Some(e) = expects
            && e.verdict == parent
        {
            return vec![format!("`children` says `{:?}`, which is the verdict on the object itself: remove `children`", e.verdict)];
        }
        return Vec::new();
    }
    let head = match (expects, parent, children) {
        (Some(e), _, _) => format!("`children` expects `{:?}`, but the rule {} what the controllers build:", e.verdict, children.word()),
        (None, Verdict::Admitted, _) => {
            format!("late failure: the rule admits the object but {} what its controllers build:", children.word())
        }
        (None, Verdict::Refused, Verdict::Admitted) => {
            "the rule refuses the object but admits everything its controllers build (if that is right, say why in the case's `children`):"
                .to_string()
        }
        (None, _, _) => format!("the rule {} the object and {} what its controllers build:", parent.word(), children.word()),
    };
    let mut p = vec![head];
    for j in judged {
        let v = Verdict::of(&j.response);
        let why = match v {
            Verdict::Refused => j.response.message.as_deref().unwrap_or("(audited)").lines().next().unwrap_or_default().to_string(),
            Verdict::Changed => "changed".into(),
            _ => "admitted".into(),
        };
        p.push(format!("  {} (submitted by {}): {} — {why}", j.built.lineage, j.built.by.name, v.word()));
    }
    vec![p.join("\n")]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(accepted: bool, mutated: bool) -> ValidationResponse {
        let mut r = if accepted { ValidationResponse::accept() } else { ValidationResponse::reject("no", None) };
        if mutated {
            r.mutated_object = serde_json::value::RawValue::from_string("{}".into()).ok();
        }
        r
    }

    fn judged(verdicts: &[(bool, bool)]) -> Outcome {
        let built = Built {
            object: serde_json::json!({"kind": "Pod"}),
            by: aigov_controllers::identities().remove(0).1,
            lineage: "Deployment `d` → ReplicaSet `d-1` → Pod `d-1-x`".into(),
        };
        Outcome::Judged(verdicts.iter().map(|(a, m)| Judged { built: built.clone(), response: response(*a, *m) }).collect())
    }

    #[test]
    fn a_late_failure_is_caught() {
        let p = check(&response(true, false), &judged(&[(true, false), (false, false)]), None);
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("late failure: the rule admits the object but refuses what its controllers build"), "{p:?}");
        let p = check(&response(true, false), &judged(&[(true, true)]), None);
        assert!(p[0].contains("but changes what its controllers build"), "a child changed again escapes what the parent showed: {p:?}");
    }

    #[test]
    fn a_stricter_parent_needs_a_reason() {
        let p = check(&response(false, false), &judged(&[(true, false)]), None);
        assert!(p[0].contains("say why in the case's `children`"), "{p:?}");
        let because = Expect { verdict: Verdict::Admitted, because: "labels on the object itself".into() };
        assert!(check(&response(false, false), &judged(&[(true, false)]), Some(&because)).is_empty());
        let stale = Expect { verdict: Verdict::Refused, because: "x".into() };
        assert!(
            !check(&response(false, false), &judged(&[(false, false)]), Some(&stale)).is_empty(),
            "an expectation equal to the parent's is stale"
        );
    }

    /// An UPDATE is judged on what it makes the controllers build: a new
    /// template or more replicas build, the parent's own labels or fewer
    /// replicas build nothing.
    #[test]
    fn an_update_is_judged_when_it_makes_controllers_build() {
        let rule = crate::run::native::RULES.iter().find(|r| r.metadata.name == "gpu-runtime-class").expect("linked");
        let deployment = |image: &str, replicas: i64, labels: Value| {
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml", "labels": labels},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})
        };
        let old = deployment("i:1", 2, serde_json::json!({}));
        let cluster = Arc::new(FixtureCluster::empty());
        let outcome = |new: Value| {
            let how = Submission { operation: Some("UPDATE".into()), old_object: Some(old.clone()), ..Submission::default() };
            let request = to_admission_request(new, &how).expect("a request").to_string();
            judge(rule, &request, &ValidationResponse::accept(), "{}", &cluster).expect("judged")
        };
        for new in [deployment("i:2", 2, serde_json::json!({})), deployment("i:1", 3, serde_json::json!({}))] {
            let o = outcome(new);
            assert!(matches!(&o, Outcome::Judged(j) if j.iter().any(|j| j.built.kind() == "Pod")), "{o:?}");
            assert!(check(&ValidationResponse::accept(), &o, None)[0].starts_with("late failure"), "grandfathering it is a late failure");
        }
        for new in [deployment("i:1", 2, serde_json::json!({"tier": "gold"})), deployment("i:1", 1, serde_json::json!({}))] {
            let o = outcome(new);
            assert!(matches!(o, Outcome::NothingBuilt), "{o:?}");
            let stale = Expect { verdict: Verdict::Admitted, because: "x".into() };
            assert!(check(&ValidationResponse::accept(), &o, Some(&stale))[0].contains("makes no controller create one"));
        }
    }

    #[test]
    fn agreement_and_nothing_to_compare_pass() {
        assert!(check(&response(true, true), &judged(&[(true, false)]), None).is_empty(), "children of the changed object");
        assert!(check(&response(false, false), &judged(&[(false, false), (true, false)]), None).is_empty());
        assert!(check(&response(true, false), &judged(&[]), None).is_empty());
        assert!(check(&response(true, false), &Outcome::NothingBuilt, None).is_empty());
        let u = Outcome::Unmodelled(Unmodelled("no runtime".into()));
        assert!(!check(&response(true, false), &u, None).is_empty(), "an unmodelled case must say so");
    }
}
