//! `aigov eval`: one request, one rule, and Kubewarden's ValidationResponse
//! as JSON. The rule is a `.wasm` module or component, or a rule's name
//! (its module in the artifacts, its component, or the rule linked
//! natively); the request is read as [`read_request`] reads it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, bail};

use crate::run::admission::{Submission, read_request, read_settings};
use crate::run::artifact::{self, Evaluator};
use crate::run::cluster::FixtureCluster;
use crate::run::{engine, native};
use crate::tools::report::model::RuleResult;

/// Arguments of `aigov eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A .wasm module or component, or a rule name (its module in
    /// --artifacts, unless --component or --native).
    pub artifact: String,
    /// An AdmissionReview, an AdmissionRequest, or a plain object (YAML
    /// or JSON; a plain object is submitted as CREATE by a default user).
    pub request: PathBuf,
    /// Settings file (YAML or JSON); default: the rule's defaults. They
    /// are checked first with the rule's `validate_settings`, as a
    /// policy server (and `kwctl run`) checks them before any request:
    /// settings it refuses are an error, exit status 2.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// Directory (or file) of YAML/JSON objects served to cluster lookups.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// With a rule name: use its component.
    #[arg(long, conflicts_with = "native")]
    pub component: bool,
    /// With a rule name: use the natively linked rule.
    #[arg(long)]
    pub native: bool,
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    #[command(flatten)]
    pub submission: Submission,
}

/// Runs `aigov eval`: the response on `out`, notes (a verbatim request's
/// replaced `userInfo`, a mutation's diff) on standard error.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let engine = engine::new_engine()?;
    let evaluator = resolve(&engine, &args.artifact, &args.artifacts, args.component, args.native)?;
    let (request, changed) = read_request(&args.request, &args.submission)?;
    if let Some(changed) = changed {
        note(&changed);
    }
    let settings = match &args.settings {
        Some(path) => {
            let text = read_settings(path)?;
            let answer = evaluator.validate_settings(&text)?;
            if !answer.valid {
                bail!("{}: `{}` refuses these settings: {}", path.display(), evaluator.name, answer.message.unwrap_or_default());
            }
            text
        }
        None => "{}".to_string(),
    };
    let cluster = match &args.cluster {
        Some(dir) => FixtureCluster::from_dir(dir)?,
        None => FixtureCluster::empty(),
    };
    let response = evaluator.validate(&request.to_string(), &settings, &Arc::new(cluster))?;
    writeln!(out, "{}", serde_json::to_string_pretty(&response)?)?;
    // The patched object is `mutated_object`, whole, as Kubewarden
    // receives it; what it changes, as a diff, goes to stderr.
    let changes = RuleResult::evaluated_on(Ok(response), request.get("object")).changes();
    if !changes.is_empty() {
        out.flush()?;
        note(&format!(
            "the rule patched the object ({} in `mutated_object`):",
            aigov_sdk::base::text::count(changes.len() as u64, "change")
        ));
        for c in &changes {
            let _ = writeln!(std::io::stderr().lock(), "  {c}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A note on standard error; never a panic.
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "aigov: {text}");
}

/// A path to an artifact, or a rule name.
fn resolve(engine: &wasmtime::Engine, artifact: &str, artifacts: &Path, component: bool, native_form: bool) -> Result<Evaluator> {
    let path = Path::new(artifact);
    if path.is_file() {
        return Evaluator::from_file(engine, path);
    }
    let Some(rule) = native::rule(artifact) else {
        bail!("`{artifact}` is neither a file nor a rule; rules: {}", native::names().collect::<Vec<_>>().join(", "));
    };
    if native_form {
        return Ok(Evaluator::native(rule));
    }
    let path = if component { artifact::component_path(artifacts, artifact) } else { artifact::module_path(artifacts, artifact) };
    if !path.is_file() {
        bail!("{} is missing: run `make artifacts` first", path.display());
    }
    Evaluator::from_file(engine, &path)
}
