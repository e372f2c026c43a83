//! `aigov`: evaluate, test, build and ship aigov rules.
//!
//! Every subcommand writes its output through [`Stdout`]: when the reader
//! of standard output goes away (`aigov scan … | head`), the program stops
//! quietly with exit status 141, as a Unix tool killed by `SIGPIPE` does,
//! instead of panicking on a failed `println!`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use aigov::run::admission::{Submission, is_verbatim};
use aigov::run::admission::{parse_documents, read_settings};
use aigov::run::artifact::{self, ArtifactKind, Evaluator};
use aigov::run::cluster::FixtureCluster;
use aigov::run::{engine, native};
use aigov::tools::cases::{self, Case, Forms};
use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

/// The exit status when standard output's reader went away: 128 + SIGPIPE,
/// what a shell reports for `cat`, `git log` or `grep` in the same place.
/// Not 0, so that `set -o pipefail` never takes a truncated `aigov scan`
/// for a clean one.
const BROKEN_PIPE_STATUS: u8 = 141;

/// Kubernetes admission rules for AI/ML and GPU workloads, as WebAssembly.
#[derive(Parser)]
#[command(
    name = "aigov",
    version,
    about = "Kubernetes admission rules for AI/ML and GPU workloads, as Kubewarden modules and WebAssembly components",
    after_help = "When the reader of standard output goes away (`aigov scan dir | head`), aigov stops quietly with exit status 141, as a command killed by SIGPIPE does."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request against one rule and print Kubewarden's
    /// ValidationResponse as JSON (exit status 0 whatever the verdict).
    ///
    /// A plain object is submitted as --operation (default CREATE) by --user
    /// with --group, in --namespace, named --name. An AdmissionRequest or
    /// AdmissionReview is used verbatim, but for --user and --group, which
    /// replace its userInfo (stderr says so); --operation, --namespace and
    /// --name are refused with one: edit the request instead.
    Eval {
        /// A .wasm module or component, or a rule name (its module in
        /// --artifacts, unless --component or --native).
        artifact: String,
        /// An AdmissionReview, an AdmissionRequest, or a plain object (YAML
        /// or JSON; a plain object is submitted as CREATE by a default user).
        request: PathBuf,
        /// Settings file (YAML or JSON); default: the rule's defaults. They
        /// are checked first with the rule's `validate_settings`, as a
        /// policy server (and `kwctl run`) checks them before any request:
        /// settings it refuses are an error, exit status 2.
        #[arg(long)]
        settings: Option<PathBuf>,
        /// Directory (or file) of YAML/JSON objects served to cluster lookups.
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// With a rule name: use its component.
        #[arg(long, conflicts_with = "native")]
        component: bool,
        /// With a rule name: use the natively linked rule.
        #[arg(long)]
        native: bool,
        /// Where `make artifacts` put the artifacts.
        #[arg(long, default_value = "artifacts")]
        artifacts: PathBuf,
        #[command(flatten)]
        submission: Submission,
    },
    /// Run every case of every rule (or of the named rules) natively, as a
    /// module and as a component; fail if any answer is wrong or the three
    /// disagree.
    Test {
        /// Rules to test (default: all).
        rules: Vec<String>,
        /// Where `make artifacts` put the artifacts.
        #[arg(long, default_value = "artifacts")]
        artifacts: PathBuf,
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Only the native rules and the native bundle: no artifacts needed
        /// (quick while writing a rule; the six-way check is the real test).
        #[arg(long)]
        native: bool,
    },
    /// Run every case of every rule on the rule's component and on the
    /// bundle's, and write down each call as the component host made it:
    /// arguments, answer, and every cluster lookup with the fixture
    /// cluster's answer (`<out>/<rule>.json`, `<out>/bundle.json`). Another host replays
    /// them and must answer the same: `make jco-check` does, under Node.js.
    ExportCases {
        /// Where `make artifacts` put the artifacts.
        #[arg(long, default_value = "artifacts")]
        artifacts: PathBuf,
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// The directory to write the records to.
        #[arg(long)]
        out: PathBuf,
    },
    /// Embed a rule's metadata.yml in its waPC module as the
    /// io.kubewarden.metadata custom section (as `kwctl annotate`).
    Annotate {
        /// The module built for wasm32-wasip1.
        module: PathBuf,
        /// The rule's metadata.yml.
        #[arg(long)]
        metadata: PathBuf,
        /// Markdown for the usage annotation (the rule's README.md).
        #[arg(long)]
        usage: Option<PathBuf>,
        /// Where to write the annotated module.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Turn a module built for wasm32-unknown-unknown into a component of the
    /// aigov:policy/admission-policy world.
    Componentize {
        /// The core module.
        module: PathBuf,
        /// Where to write the component.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Write the bundle's Kubewarden metadata: the union of every rule's
    /// metadata.yml (what the bundle's build script embeds in it).
    BundleMetadata {
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Where to write the metadata (YAML).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Write the fuzzing seed corpus (every case's request) and the settings
    /// each rule is fuzzed with, for `make fuzz`.
    FuzzCorpus {
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Where to write `corpus/` and `settings.json`.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print an artifact's embedded metadata and, for components, its WIT world.
    Inspect {
        /// A .wasm module or component.
        artifact: PathBuf,
    },
    /// Print a rule's default settings as JSON.
    Settings {
        /// The rule.
        rule: String,
    },
    /// List the rules linked into this build.
    Rules,
    /// Audit manifests offline against every rule and print a verdict table.
    Scan(aigov::tools::scan::Args),
    /// What the rules would do to what already runs: per rule and namespace,
    /// how many workloads would be denied or warned, the commonest reasons,
    /// and where each rule can be enforced today.
    Simulate(aigov::tools::simulate::Args),
    /// Time requests natively, as modules and as components.
    Bench(aigov::tools::bench::Args),
    /// Compare the bytes of code in every artifact with the sizes recorded
    /// in host-test/code-sizes.json: exit status 1 when one grew by more
    /// than 2 % (under the compiler that made the record). `--write`
    /// records them (`make sizes`).
    Sizes(aigov::tools::sizes::Args),
    /// Serve the playground (`make playground` builds it) on 127.0.0.1: a
    /// page where a manifest is checked against the rules as you type, by
    /// the bundle component running in the browser. Nothing leaves the page.
    Playground(aigov::tools::playground::ServeArgs),
    /// Write the playground's data (what `make playground` runs): every
    /// rule's name, description and settings, the sample workloads and
    /// cluster, and how a plain object becomes an AdmissionRequest, as JSON.
    PlaygroundData {
        /// The sample workloads (their `cluster/` is the sample cluster).
        #[arg(long, default_value = "host-test/samples")]
        samples: PathBuf,
        /// Where to write the JSON.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the `--invoke` argument with which `wasmtime run` evaluates a
    /// request with a component that imports nothing:
    /// `wasmtime run --invoke "$(aigov invoke pod.yaml)" artifacts/owner-label/policy.component.wasm`
    Invoke {
        /// An AdmissionReview, an AdmissionRequest, or a plain object (YAML
        /// or JSON), as for `eval`.
        request: PathBuf,
        /// Settings file (YAML or JSON); default: `{}`, the rule's defaults.
        #[arg(long)]
        settings: Option<PathBuf>,
        #[command(flatten)]
        submission: Submission,
    },
    /// Write N Pod manifests of about 4.5 KiB (for measuring `aigov scan`).
    #[command(hide = true)]
    GenManifests {
        /// How many.
        #[arg(long)]
        count: usize,
        /// The directory to write them to.
        #[arg(long)]
        out: PathBuf,
    },
    /// Push, pull and package the bundle for registries and clusters.
    #[command(flatten)]
    Oci(aigov::dist::registry::Command),
    /// Sign pushed artifacts and verify their signatures, as cosign does.
    #[cfg(feature = "signing")]
    #[command(flatten)]
    Signatures(aigov::dist::sign::Command),
    /// Write the OCI image layout of every rule (artifacts/oci) and
    /// artifacts/SHA256SUMS; `make artifacts` runs it. Writes no deployment
    /// manifest (see `aigov manifests`).
    Package(aigov::dist::package::Args),
    /// Write deployment manifests (a ClusterAdmissionPolicy and a Kustomize
    /// base per rule, an overlay, policies.yml, ArtifactHub files) pinned
    /// by digest into a directory you name, leaving alone any file edited
    /// since aigov wrote it.
    Manifests(aigov::dist::package::ManifestsArgs),
}

/// Whether standard output's reader went away.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Standard output for every subcommand: a write that fails because the
/// reader went away (`BrokenPipe`) is remembered, and `main` then exits
/// quietly with [`BROKEN_PIPE_STATUS`], whatever the error became on its way up.
struct Stdout(std::io::StdoutLock<'static>);

impl Stdout {
    fn lock() -> Stdout {
        Stdout(std::io::stdout().lock())
    }

    fn check<T>(result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            STDOUT_GONE.store(true, Ordering::SeqCst);
        }
        result
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Stdout::check(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Stdout::check(self.0.flush())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Stdout::lock();
    let result = run(cli, &mut out);
    let flushed = out.flush();
    if STDOUT_GONE.load(Ordering::SeqCst) {
        return ExitCode::from(BROKEN_PIPE_STATUS);
    }
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            // Never a panic, even with standard error closed too.
            let _ = writeln!(std::io::stderr().lock(), "aigov: {e:#}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = flushed {
        let _ = writeln!(std::io::stderr().lock(), "aigov: writing to standard output: {e}");
        return ExitCode::from(2);
    }
    code
}

/// A note on standard error; never a panic.
fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "aigov: {text}");
}

/// The one document of `eval`'s request file, as the AdmissionRequest it
/// amounts to with `submission`'s flags: a plain object is submitted with
/// them all; a verbatim AdmissionRequest or AdmissionReview takes
/// `--user`/`--group` into its `userInfo` (said on stderr) and refuses the
/// flags that would change what the request is.
fn eval_request(path: &Path, submission: &Submission) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut docs = parse_documents(&text).with_context(|| format!("parsing {}", path.display()))?;
    if docs.len() != 1 {
        bail!("{} holds {} documents; a request is one (use `aigov scan` for many)", path.display(), docs.len());
    }
    let doc = docs.remove(0);
    if !is_verbatim(&doc) {
        return aigov::run::admission::to_admission_request(doc, submission);
    }
    let what = if doc.get("kind").and_then(serde_json::Value::as_str) == Some("AdmissionReview") {
        "an AdmissionReview"
    } else {
        "an AdmissionRequest"
    };
    let refused = submission.plain_object_only();
    if !refused.is_empty() {
        bail!(
            "{} is {what}, used verbatim: {} cannot apply to it (they describe how a plain object is submitted); \
             edit the request's `operation`, `namespace` or `name`, or pass the plain object instead. \
             --user and --group do apply: they replace its userInfo",
            path.display(),
            refused.join(", ")
        );
    }
    let (request, changed) = aigov::run::admission::admission_request(doc, &submission.identity())?;
    if !changed.is_empty() {
        note(&format!("{} is {what}, used verbatim but for {}", path.display(), changed.join(", ")));
    }
    Ok(request)
}

fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode> {
    match cli.command {
        Command::Eval { artifact, request, settings, cluster, component, native, artifacts, submission } => {
            let engine = engine::new_engine()?;
            let evaluator = resolve(&engine, &artifact, &artifacts, component, native)?;
            let request = eval_request(&request, &submission)?;
            let settings = match settings {
                Some(path) => {
                    let text = read_settings(&path)?;
                    let answer = evaluator.validate_settings(&text)?;
                    if !answer.valid {
                        anyhow::bail!(
                            "{}: `{}` refuses these settings: {}",
                            path.display(),
                            evaluator.name,
                            answer.message.unwrap_or_default()
                        );
                    }
                    text
                }
                None => "{}".to_string(),
            };
            let cluster = match cluster {
                Some(dir) => FixtureCluster::from_dir(&dir)?,
                None => FixtureCluster::empty(),
            };
            let response = evaluator.validate(&request.to_string(), &settings, &Arc::new(cluster))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&response)?)?;
            // The patched object is `mutated_object`, whole, as Kubewarden
            // receives it; what it changes, as a diff, goes to stderr.
            let changes = aigov::tools::report::model::RuleResult::evaluated_on(Ok(response), request.get("object")).changes();
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
        Command::Test { rules, artifacts, policies, native } => test(&rules, (!native).then_some(artifacts.as_path()), &policies, out),
        Command::Annotate { module, metadata, usage, output } => {
            let engine = engine::new_engine()?;
            let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
            let annotated = artifact::annotate(&engine, &bytes, &metadata, usage.as_deref())?;
            write(&output, &annotated)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Componentize { module, output } => {
            let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
            write(&output, &artifact::componentize(&bytes)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ExportCases { artifacts, policies, out: dir } => {
            let rules: Vec<&str> = native::names().collect();
            let s = aigov::tools::export_cases::export(&artifacts, &policies, &rules, &dir)?;
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
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect { artifact } => inspect(&artifact, out),
        Command::FuzzCorpus { policies, out: dir } => {
            let n = aigov::tools::fuzzing::write_corpus(&policies, &dir)?;
            writeln!(out, "wrote {n} seeds to {}/corpus and the rules' settings to {}/settings.json", dir.display(), dir.display())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::BundleMetadata { policies, output } => {
            let mut parts = Vec::new();
            for rule in native::names() {
                let file = policies.join(rule).join("metadata.yml");
                let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
                parts.push(
                    aigov_metadata::Metadata::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}", e.in_file(file.display().to_string())))?,
                );
            }
            let bundle = aigov_metadata::Metadata::bundle(&parts, native::BUNDLE.metadata.version);
            write(&output, serde_norway::to_string(&bundle)?.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Settings { rule } => {
            let r = native::rule(&rule).with_context(|| format!("no rule named `{rule}`"))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&(r.default_settings)())?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Scan(args) => aigov::tools::scan::run(&args, out),
        Command::Simulate(args) => aigov::tools::simulate::run(&args, out),
        Command::Bench(args) => aigov::tools::bench::run(&args, out),
        Command::Sizes(args) => aigov::tools::sizes::run(&args, out),
        Command::Playground(args) => aigov::tools::playground::serve(&args, out),
        Command::PlaygroundData { samples, output } => {
            let data = aigov::tools::playground::data(&samples)?;
            write(&output, serde_json::to_string(&data)?.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Invoke { request, settings, submission } => {
            let request = eval_request(&request, &submission)?;
            let settings = match settings {
                Some(path) => read_settings(&path)?,
                None => "{}".to_string(),
            };
            writeln!(out, "{}", aigov::tools::invoke::call("validate", &[&request.to_string(), &settings])?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::GenManifests { count, out: dir } => {
            let files = aigov::tools::scanbench::write_manifests(&dir, count)?;
            writeln!(out, "{} manifest(s) under {}", files.len(), dir.display())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Oci(command) => aigov::dist::registry::run(&command, out),
        #[cfg(feature = "signing")]
        Command::Signatures(command) => aigov::dist::sign::run(&command, out),
        Command::Package(args) => aigov::dist::package::run(&args, out),
        Command::Manifests(args) => aigov::dist::package::run_manifests(&args, out),
        Command::Rules => {
            for r in native::RULES {
                let description = r.metadata.annotation(aigov_metadata::annotations::DESCRIPTION).unwrap_or_default();
                writeln!(out, "{:<22} {:<8} {description}", r.metadata.name, r.metadata.version)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
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

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Runs the cases six ways, or natively only when `artifacts` is `None`.
fn test(rules: &[String], artifacts: Option<&Path>, policies: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    let engine = engine::new_engine()?;
    let rules: Vec<String> = if rules.is_empty() { native::names().map(str::to_string).collect() } else { rules.to_vec() };
    let (mut passed, mut failed) = (0usize, 0usize);
    let bundle = match artifacts {
        Some(dir) => cases::load_bundle(&engine, dir)?,
        None => Arc::new(vec![Evaluator::native(&native::BUNDLE)]),
    };
    let agree = if artifacts.is_some() { "native, module, component and the bundle agree" } else { "native rule and native bundle agree" };
    for rule in &rules {
        let forms = match artifacts {
            Some(dir) => Forms::load(&engine, dir, rule, bundle.clone())?,
            None => {
                let policy = native::rule(rule).with_context(|| format!("no rule named {rule:?}"))?;
                Forms { evaluators: vec![Evaluator::native(policy)], bundle: bundle.clone(), rule: rule.clone() }
            }
        };
        for (name, path) in cases::case_files(policies, rule)? {
            let id = format!("{rule}/{name}");
            let outcome = Case::load(&path).map_err(|e| vec![format!("{e:#}")]).and_then(|c| cases::run(&forms, &c));
            match outcome {
                Ok(()) => {
                    passed += 1;
                    writeln!(out, "ok     {id} ({agree})")?;
                }
                Err(problems) => {
                    failed += 1;
                    writeln!(out, "FAILED {id}")?;
                    for p in problems {
                        writeln!(out, "         {p}")?;
                    }
                }
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn inspect(path: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    match ArtifactKind::of(&bytes)? {
        ArtifactKind::Module => match artifact::module_metadata(&bytes)? {
            Some(m) => writeln!(out, "{}", serde_json::to_string_pretty(&m)?)?,
            None => bail!("{} carries no io.kubewarden.metadata section: annotate it first", path.display()),
        },
        ArtifactKind::Component => {
            let engine = engine::new_engine()?;
            let component = aigov::run::component::PolicyComponent::new(&engine, &bytes)?;
            let m = component.instantiate(Arc::new(aigov_sdk::NoCluster))?.metadata()?;
            writeln!(out, "{}\n", serde_json::to_string_pretty(&metadata_json(&m))?)?;
            write!(out, "{}", artifact::component_wit(&bytes)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn metadata_json(m: &aigov::run::component::Metadata) -> serde_json::Value {
    serde_json::json!({
        "name": m.name,
        "version": m.version,
        "rules": m.rules.iter().map(|r| serde_json::json!({
            "apiGroups": r.api_groups, "apiVersions": r.api_versions,
            "resources": r.resources, "operations": r.operations,
        })).collect::<Vec<_>>(),
        "mutating": m.mutating,
        "backgroundAudit": m.background_audit,
        "contextAwareResources": m.context_aware_resources.iter().map(|c| serde_json::json!({
            "apiVersion": c.api_version, "kind": c.kind,
        })).collect::<Vec<_>>(),
        "annotations": m.annotations.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    })
}
