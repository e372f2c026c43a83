//! `aigov build export-cases`: the case corpus as the component host answers it,
//! written down for another host to replay and compare (`make jco-check`
//! replays it under Node.js, through `jco transpile`).
//!
//! For every component (each rule's and the bundle's) it writes
//! `<out>/<directory>.json`, named after the component's directory under
//! the artifacts (`bundle` for the bundle): the component's `metadata`, and per case the
//! calls the harness makes of the component, each with its arguments exactly
//! as passed, the answer, and every cluster lookup the component made during
//! the call, with the answer the fixture cluster gave. Lookups are recorded
//! at the host-call boundary (the cluster the component host is given), so a
//! replaying host serves the same answers through the same import.
//!
//! Per case, as `aigov test` runs it:
//! - the rule's component: `validate-settings` with the case's settings,
//!   `validate` with its request, and, when the rule mutates the object,
//!   `validate` once more on its own output (the idempotency check);
//! - the bundle: `validate-settings` and `validate` with only that rule
//!   enabled, under the bundle's settings.
//!
//! Values are written as jco represents the WIT values in JavaScript:
//! records as objects with lowerCamelCase fields, an absent option as
//! `null`, tuples as arrays, `lookup-error` as `{"tag", "val"}`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aigov_sdk::{Cluster, NoCluster};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::run::artifact::{BUNDLE, Evaluator, component_path};
use crate::run::cluster::{FixtureCluster, Lookup, Recording};
use crate::run::component::{ComponentInstance, Metadata, PolicyComponent, SettingsVerdict, Verdict};
use crate::tools::cases::{self, Case};

/// One call of a component's export, as the harness made it.
#[derive(Debug, Serialize)]
pub struct Call {
    /// `metadata`, `validate-settings` or `validate`.
    pub function: &'static str,
    /// The arguments, in WIT order, exactly as passed.
    pub args: Vec<String>,
    /// Every cluster lookup the component made during the call, in order.
    pub lookups: Vec<Lookup>,
    /// What the component returned.
    pub answer: Value,
}

/// One case, as one component was called for it.
#[derive(Debug, Serialize)]
pub struct CaseRecord {
    /// The rule whose case this is.
    pub rule: String,
    /// The case file's name, without extension.
    pub case: String,
    /// The calls, in the order the harness makes them.
    pub calls: Vec<Call>,
}

/// What one component answered for the whole corpus.
#[derive(Debug, Serialize)]
pub struct ComponentRecord {
    /// The rule's name, or `bundle`.
    pub component: String,
    /// The component file the answers came from.
    pub artifact: PathBuf,
    /// The `metadata` call.
    pub metadata: Call,
    /// Every case of every rule the component runs.
    pub cases: Vec<CaseRecord>,
}

/// How much was written.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Component files written.
    pub components: usize,
    /// Cases of the corpus (each is run on its rule's component and on the bundle).
    pub cases: usize,
    /// Case records, over every component.
    pub runs: usize,
    /// Calls, `metadata` included, over every component.
    pub calls: usize,
    /// Lookups, over every call.
    pub lookups: usize,
}

/// An export of the `admission-policy` world, with its arguments.
enum Function<'a> {
    Metadata,
    ValidateSettings { settings: &'a str },
    Validate { request: &'a str, settings: &'a str },
}

impl Function<'_> {
    fn name(&self) -> &'static str {
        match self {
            Function::Metadata => "metadata",
            Function::ValidateSettings { .. } => "validate-settings",
            Function::Validate { .. } => "validate",
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Function::Metadata => vec![],
            Function::ValidateSettings { settings } => vec![settings.to_string()],
            Function::Validate { request, settings } => vec![request.to_string(), settings.to_string()],
        }
    }

    fn invoke(&self, instance: &mut ComponentInstance) -> Result<Value> {
        Ok(match self {
            Function::Metadata => metadata_value(&instance.metadata()?),
            Function::ValidateSettings { settings } => settings_value(&instance.validate_settings(settings)?),
            Function::Validate { request, settings } => verdict_value(&instance.validate(request, settings)?),
        })
    }
}

/// Calls `function` on a fresh instance whose lookups `cluster` answers,
/// recording them.
fn record<C: Cluster + Send + Sync + 'static>(component: &PolicyComponent, cluster: C, function: &Function) -> Result<Call> {
    let recording = Arc::new(Recording::new(cluster));
    let mut instance = component.instantiate(recording.clone())?;
    let answer = function.invoke(&mut instance).with_context(|| format!("`{}` failed", function.name()))?;
    Ok(Call { function: function.name(), args: function.args(), lookups: recording.lookups(), answer })
}

/// A component and what the harness gives it: as `aigov test` does, its
/// settings are checked without a cluster and its requests see the fixture
/// cluster scoped to the kinds it declares.
struct Host<'a> {
    evaluator: &'a Evaluator,
    component: &'a PolicyComponent,
}

impl<'a> Host<'a> {
    fn new(evaluator: &'a Evaluator) -> Result<Host<'a>> {
        let component = evaluator.component().with_context(|| format!("`{}` is not a component", evaluator.name))?;
        Ok(Host { evaluator, component })
    }

    fn metadata(&self) -> Result<Call> {
        record(self.component, NoCluster, &Function::Metadata)
    }

    fn validate_settings(&self, settings: &str) -> Result<Call> {
        record(self.component, NoCluster, &Function::ValidateSettings { settings })
    }

    fn validate(&self, request: &str, settings: &str, cluster: &Arc<FixtureCluster>) -> Result<Call> {
        record(self.component, self.evaluator.scoped(cluster), &Function::Validate { request, settings })
    }
}

/// A case file, read once: its settings and request as JSON text, and its cluster.
struct Loaded {
    settings: String,
    request: Option<String>,
    cluster: Arc<FixtureCluster>,
}

impl Loaded {
    fn read(path: &Path) -> Result<Loaded> {
        let case = Case::load(path)?;
        let cluster = FixtureCluster::from_objects(case.cluster.clone()).context("bad `cluster`")?;
        let request = case.admission_request().context("bad `request`")?;
        Ok(Loaded { settings: case.settings.to_string(), request, cluster: Arc::new(cluster) })
    }
}

/// The calls the harness makes of a rule's own component for one case.
fn rule_calls(host: &Host, case: &Loaded) -> Result<Vec<Call>> {
    let mut calls = vec![host.validate_settings(&case.settings)?];
    if let Some(request) = &case.request {
        let first = host.validate(request, &case.settings, &case.cluster)?;
        let again = mutated_object(&first.answer).and_then(|m| cases::resubmitted(request, m));
        calls.push(first);
        if let Some(again) = again {
            calls.push(host.validate(&again, &case.settings, &case.cluster)?);
        }
    }
    Ok(calls)
}

/// The calls the harness makes of the bundle for one case of `rule`.
fn bundle_calls(host: &Host, rule: &str, case: &Loaded) -> Result<Vec<Call>> {
    let settings = cases::bundle_settings(rule, &case.settings);
    let mut calls = vec![host.validate_settings(&settings)?];
    if let Some(request) = &case.request {
        calls.push(host.validate(request, &settings, &case.cluster)?);
    }
    Ok(calls)
}

fn mutated_object(verdict: &Value) -> Option<&str> {
    verdict.get("mutatedObject").and_then(Value::as_str)
}

fn load_component(engine: &wasmtime::Engine, artifacts: &Path, name: &str) -> Result<(Evaluator, PathBuf)> {
    let path = crate::run::artifact::require(artifacts, component_path(artifacts, name), None)?;
    let evaluator = Evaluator::from_file(engine, &path)?;
    if evaluator.name != name {
        bail!("{} says it is `{}`, not `{name}`", path.display(), evaluator.name);
    }
    Ok((evaluator, path))
}

/// Runs `aigov build export-cases`: every rule's records in `dir`, and what was
/// written on `out`.
pub fn run(artifacts: &Path, policies: &Path, dir: &Path, out: &mut dyn std::io::Write) -> Result<std::process::ExitCode> {
    let rules: Vec<&str> = crate::run::native::names().collect();
    let s = export(artifacts, policies, &rules, dir)?;
    writeln!(
        out,
        "wrote {} components, {} cases ({} case runs, {} calls, {} lookups) to {}",
        s.components,
        s.cases,
        s.runs,
        s.calls,
        s.lookups,
        dir.display()
    )?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Runs every case of `rules` on their components and the bundle's, and
/// writes `<out>/<component>.json` for each.
pub fn export(artifacts: &Path, policies: &Path, rules: &[&str], out: &Path) -> Result<Summary> {
    let engine = crate::run::engine::new_engine()?;
    let (bundle, bundle_path) = load_component(&engine, artifacts, BUNDLE)?;
    let bundle_host = Host::new(&bundle)?;
    let mut bundle_record =
        ComponentRecord { component: BUNDLE.to_string(), artifact: bundle_path, metadata: bundle_host.metadata()?, cases: Vec::new() };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut summary = Summary::default();
    for rule in rules {
        let (evaluator, path) = load_component(&engine, artifacts, rule)?;
        let host = Host::new(&evaluator)?;
        let mut record = ComponentRecord { component: rule.to_string(), artifact: path, metadata: host.metadata()?, cases: Vec::new() };
        for (name, file) in cases::case_files(policies, rule)? {
            let context = || format!("{rule}/{name} ({})", file.display());
            let case = Loaded::read(&file).with_context(context)?;
            let calls = rule_calls(&host, &case).with_context(context)?;
            record.cases.push(CaseRecord { rule: rule.to_string(), case: name.clone(), calls });
            let calls = bundle_calls(&bundle_host, rule, &case).with_context(|| format!("the bundle, for {}", context()))?;
            bundle_record.cases.push(CaseRecord { rule: rule.to_string(), case: name, calls });
        }
        summary.add(&write_record(out, &record)?);
    }
    summary.add(&write_record(out, &bundle_record)?);
    summary.cases = bundle_record.cases.len();
    Ok(summary)
}

impl Summary {
    fn add(&mut self, other: &Summary) {
        self.components += other.components;
        self.runs += other.runs;
        self.calls += other.calls;
        self.lookups += other.lookups;
    }

    fn of(record: &ComponentRecord) -> Summary {
        let calls = record.cases.iter().flat_map(|c| &c.calls);
        Summary {
            components: 1,
            cases: 0,
            runs: record.cases.len(),
            calls: 1 + calls.clone().count(),
            lookups: calls.map(|c| c.lookups.len()).sum(),
        }
    }
}

/// Writes `<out>/<directory>.json`, named after the component's directory
/// under the artifacts (`bundle` for the bundle).
fn write_record(out: &Path, record: &ComponentRecord) -> Result<Summary> {
    let directory = record
        .artifact
        .parent()
        .and_then(Path::file_name)
        .with_context(|| format!("{} is not in a directory of its own", record.artifact.display()))?;
    let path = out.join(directory).with_extension("json");
    let text = serde_json::to_string(record)?;
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(Summary::of(record))
}

/// A `verdict`, as jco gives it to JavaScript.
pub fn verdict_value(v: &Verdict) -> Value {
    json!({
        "accepted": v.accepted,
        "message": v.message,
        "code": v.code,
        "mutatedObject": v.mutated_object,
        "warnings": v.warnings,
        "auditAnnotations": v.audit_annotations,
    })
}

/// A `settings-verdict`, as jco gives it to JavaScript.
pub fn settings_value(v: &SettingsVerdict) -> Value {
    json!({"valid": v.valid, "message": v.message})
}

/// The `metadata` record, as jco gives it to JavaScript (annotations in the
/// component's order, as a list of pairs).
pub fn metadata_value(m: &Metadata) -> Value {
    json!({
        "name": m.name,
        "version": m.version,
        "rules": m.rules.iter().map(|r| json!({
            "apiGroups": r.api_groups,
            "apiVersions": r.api_versions,
            "resources": r.resources,
            "operations": r.operations,
        })).collect::<Vec<_>>(),
        "mutating": m.mutating,
        "backgroundAudit": m.background_audit,
        "contextAwareResources": m.context_aware_resources.iter().map(|c| json!({
            "apiVersion": c.api_version,
            "kind": c.kind,
        })).collect::<Vec<_>>(),
        "annotations": m.annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_jcos_shape() {
        let v = Verdict {
            accepted: false,
            message: Some("no".into()),
            code: None,
            mutated_object: None,
            warnings: vec!["w".into()],
            audit_annotations: vec![("k".into(), "v".into())],
        };
        assert_eq!(
            verdict_value(&v),
            json!({"accepted": false, "message": "no", "code": null, "mutatedObject": null, "warnings": ["w"], "auditAnnotations": [["k", "v"]]})
        );
        assert_eq!(settings_value(&SettingsVerdict { valid: true, message: None }), json!({"valid": true, "message": null}));
    }

    #[test]
    fn a_mutation_is_read_from_the_verdict() {
        assert_eq!(mutated_object(&json!({"mutatedObject": "{}"})), Some("{}"));
        assert_eq!(mutated_object(&json!({"mutatedObject": null})), None);
    }
}
