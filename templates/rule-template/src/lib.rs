//! `rule-template`: pod templates that request GPUs use one of the allowed
//! priority classes, so the scheduler preempts the right pods when GPU
//! nodes are full.
//!
//! The template of an aigov rule: copy this folder to `policies/<name>/`
//! and rename it (CONTRIBUTING.md, "Writing a rule"). It shows the whole
//! pattern in a few lines: settings with defaults and checks
//! (`settings.rs`), a pure `validate` over every pod template of every
//! workload kind, messages that name the field, and cases
//! (`tests/cases/`) that run natively, as a module and as a component.

mod settings;

use aigov_sdk::prelude::*;

pub use settings::Settings;

/// The rule.
pub struct RuleTemplate;

impl Policy for RuleTemplate {
    type Settings = Settings;

    fn validate(req: &Request<'_>, s: &Settings, _cluster: &dyn Cluster) -> Result<Verdict, Malformed> {
        let mut v = Verdict::accept();
        // Other kinds, DELETE and CONNECT carry no workload: nothing to judge.
        let Some(w) = req.workload() else { return Ok(v) };
        for t in w.templates() {
            // A TrainJob's trainer takes its pod spec from its runtime.
            if t.is_partial() || !t.requests_gpu(&s.gpu_resource_names)? {
                continue;
            }
            let class = t.spec.priority_class_name.as_deref().filter(|c| !c.is_empty());
            if class.is_some_and(|c| s.priority_classes.iter().any(|a| a == c)) {
                continue;
            }
            let field = t.spec_path().key("priorityClassName");
            let allowed = one_of(&s.priority_classes);
            v.violation(match class {
                Some(c) => format!("`{field}` is `{c}`, but pods that request GPUs use {allowed}: set one of them"),
                None => format!("`{field}` is not set, but pods that request GPUs use {allowed}: set one of them"),
            });
        }
        Ok(v)
    }
}

aigov_sdk::export_policy!(RuleTemplate);
