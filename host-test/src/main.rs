//! `aigov`: evaluate, test, build and ship aigov rules.
//!
//! Every subcommand writes its output through [`Stdout`]: when the reader
//! of standard output goes away (`aigov scan … | head`), the program stops
//! quietly with exit status 141, as a Unix tool killed by `SIGPIPE` does,
//! instead of panicking on a failed `println!`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
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
    Eval(aigov::tools::eval::Args),
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
    Invoke(aigov::tools::invoke::Args),
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

/// Runs a subcommand, writing its output to `out`: each lives in its own
/// module of the library.
fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode> {
    use aigov::{dist, tools};
    match cli.command {
        Command::Eval(args) => tools::eval::run(&args, out),
        Command::Test { rules, artifacts, policies, native } => {
            tools::cases::test(&rules, (!native).then_some(artifacts.as_path()), &policies, out)
        }
        Command::Annotate { module, metadata, usage, output } => tools::build::annotate(&module, &metadata, usage.as_deref(), &output),
        Command::Componentize { module, output } => tools::build::componentize(&module, &output),
        Command::ExportCases { artifacts, policies, out: dir } => tools::export_cases::run(&artifacts, &policies, &dir, out),
        Command::Inspect { artifact } => tools::inspect::artifact(&artifact, out),
        Command::FuzzCorpus { policies, out: dir } => tools::fuzzing::run_corpus(&policies, &dir, out),
        Command::BundleMetadata { policies, output } => tools::build::bundle_metadata(&policies, &output),
        Command::Settings { rule } => tools::inspect::settings(&rule, out),
        Command::Scan(args) => tools::scan::run(&args, out),
        Command::Simulate(args) => tools::simulate::run(&args, out),
        Command::Bench(args) => tools::bench::run(&args, out),
        Command::Sizes(args) => tools::sizes::run(&args, out),
        Command::Playground(args) => tools::playground::serve(&args, out),
        Command::PlaygroundData { samples, output } => tools::build::playground_data(&samples, &output),
        Command::Invoke(args) => tools::invoke::run(&args, out),
        Command::GenManifests { count, out: dir } => tools::scanbench::gen_manifests(&dir, count, out),
        Command::Oci(command) => dist::registry::run(&command, out),
        #[cfg(feature = "signing")]
        Command::Signatures(command) => dist::sign::run(&command, out),
        Command::Package(args) => dist::package::run(&args, out),
        Command::Manifests(args) => dist::package::run_manifests(&args, out),
        Command::Rules => tools::inspect::rules(out),
    }
}
