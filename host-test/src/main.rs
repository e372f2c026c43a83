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
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The exit status when standard output's reader went away: 128 + SIGPIPE,
/// what a shell reports for `cat`, `git log` or `grep` in the same place.
/// Not 0, so that `set -o pipefail` never takes a truncated `aigov scan`
/// for a clean one.
const BROKEN_PIPE_STATUS: u8 = 141;

/// Kubernetes admission rules for AI/ML and GPU workloads, as WebAssembly.
#[derive(Parser)]
#[command(name = "aigov", version, about = "Kubernetes admission rules for AI/ML and GPU workloads, as WebAssembly")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The main help's listing: the commands people run, in groups, each with
/// its line, then the build steps under `build`. Every subcommand is in
/// it once (a test holds it to that); its line is the subcommand's short
/// help too, and the subcommand's own documentation is its long help.
const GROUPS: &[(&str, &[(&str, &str)])] = &[
    (
        "Check workloads",
        &[
            ("eval", "Evaluate a manifest against one rule: the verdict and why"),
            ("scan", "Check files of manifests against every rule"),
            ("simulate", "What the rules would do to what already runs"),
            ("settings", "Print a rule's defaults, or check a policy's settings"),
            ("rules", "List the rules"),
            ("playground", "Serve the browser playground on 127.0.0.1"),
        ],
    ),
    (
        "Write and measure rules",
        &[
            ("test", "Run the rules' test cases, natively and as artifacts"),
            ("bench", "Time requests natively, as modules and as components"),
            ("inspect", "Print an artifact's metadata and WIT world"),
            ("invoke", "Print the `wasmtime run --invoke` argument for a manifest"),
        ],
    ),
    (
        "Deploy",
        &[
            ("manifests", "Write deployment manifests, pinned by digest"),
            ("push", "Push a module or component to an OCI registry"),
            ("pull", "Pull a module or component from an OCI registry"),
            ("generate-key-pair", "Write a cosign key pair"),
            ("sign", "Sign a pushed artifact with a cosign key"),
            ("verify", "Check an artifact's cosign signatures"),
        ],
    ),
    ("Build steps (`make` runs them)", &[("build", "Annotate, componentize, package, write data files")]),
];

/// The main help's last line, for the options it does not list.
const FOOTER: &str = "`aigov COMMAND --help`: a command's flags and exit status; `-V`: the version";

/// The steps under `aigov build`, which used to be subcommands of their
/// own: still accepted there (`aigov annotate …` is `aigov build annotate
/// …`), out of the help, so that scripts written for them keep working.
const BUILD_STEPS: [&str; 10] = [
    "annotate",
    "componentize",
    "bundle-metadata",
    "package",
    "fuzz-corpus",
    "export-cases",
    "sizes",
    "playground-data",
    "gen-manifests",
    "preinit",
];

#[derive(Subcommand)]
enum Command {
    /// Evaluate each document of a manifest against one rule, the bundle of
    /// every rule (`aigov-bundle`), or a .wasm module or component, and say
    /// what it decided: admitted or denied, each violation on a line of
    /// its own (the field and the fix in the rule's words), warnings, and
    /// what a mutating rule would change. `--format json` prints
    /// Kubewarden's ValidationResponse instead.
    ///
    /// A plain object is submitted as --operation (default CREATE) by --user
    /// with --group, in --namespace, named --name. An AdmissionRequest or
    /// AdmissionReview is used verbatim, but for --user and --group, which
    /// replace its userInfo (stderr says so); --operation, --namespace and
    /// --name are refused with one: edit the request instead.
    Eval(aigov::tools::eval::Args),
    /// Audit manifests offline against every rule and print a verdict table.
    Scan(aigov::tools::scan::Args),
    /// What the rules would do to what already runs: per rule and namespace,
    /// how many workloads would be denied or warned, the commonest reasons,
    /// and where each rule can be enforced today.
    Simulate(aigov::tools::simulate::Args),
    /// Print a rule's default settings as JSON (`aigov settings RULE`), or
    /// check the settings of policy files (`aigov settings check FILE…`).
    Settings(aigov::tools::inspect::SettingsCommand),
    /// List the rules linked into this build.
    Rules,
    /// Serve the playground (`make playground` builds it) on 127.0.0.1: a
    /// page where a manifest is checked against the rules as you type, by
    /// the bundle component running in the browser. Nothing leaves the page.
    Playground(aigov::tools::playground::ServeArgs),
    /// Run every case of every rule (or of the named rules) natively, as a
    /// module and as a component, and through the bundle in each form; fail
    /// if any answer is wrong or the forms disagree.
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
    /// Time requests natively, as modules and as components.
    Bench(aigov::tools::bench::Args),
    /// Print an artifact's embedded metadata and, for components, its WIT world.
    Inspect {
        /// A .wasm module or component.
        artifact: PathBuf,
    },
    /// Print the `--invoke` argument with which `wasmtime run` evaluates a
    /// request with a component that imports nothing:
    /// `wasmtime run --invoke "$(aigov invoke pod.yaml)" artifacts/owner-label/policy.component.wasm`
    Invoke(aigov::tools::invoke::Args),
    /// Write deployment manifests (a ClusterAdmissionPolicy and a Kustomize
    /// base per rule, an overlay, policies.yml, ArtifactHub files) pinned
    /// by digest into a directory you name, leaving alone any file edited
    /// since aigov wrote it.
    Manifests(aigov::dist::package::ManifestsArgs),
    /// Push and pull artifacts.
    #[command(flatten)]
    Oci(aigov::dist::registry::Command),
    /// Sign pushed artifacts and verify their signatures, as cosign does.
    #[cfg(feature = "signing")]
    #[command(flatten)]
    Signatures(aigov::dist::sign::Command),
    /// The steps `make artifacts`, `make playground`, `make sizes` and the
    /// tests run: annotating and componentizing the guests, the bundle's
    /// metadata, the OCI layout, the fuzzing corpus, the recorded case
    /// calls, the code sizes, the playground's data.
    #[command(subcommand)]
    Build(Build),
}

/// The build steps, under `aigov build`.
#[derive(Subcommand)]
enum Build {
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
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Turn a module built for wasm32-unknown-unknown into a component of the
    /// aigov:policy/admission-policy world.
    Componentize {
        /// The core module.
        module: PathBuf,
        /// Where to write the component.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Pre-initialise a waPC module with a policy's settings: every fresh
    /// instance (policy-server makes one per request) then starts with them
    /// read. Requests that bring other settings are read as before.
    Preinit {
        /// The annotated module (`artifacts/<rule>/policy.wasm`).
        module: PathBuf,
        /// The settings: a settings object, or a file with one policy
        /// document (`spec.settings` is taken).
        #[arg(long)]
        settings: PathBuf,
        /// Where to write the pre-initialised module.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Write the bundle's Kubewarden metadata: the union of every rule's
    /// metadata.yml (what the bundle's build script embeds in it).
    BundleMetadata {
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Where to write the metadata (YAML).
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Write the OCI image layout of every rule (artifacts/oci) and
    /// artifacts/SHA256SUMS; `make artifacts` runs it. Writes no deployment
    /// manifest (see `aigov manifests`).
    Package(aigov::dist::package::Args),
    /// Write the fuzzing seed corpus (every case's request) and the settings
    /// each rule is fuzzed with, for `make fuzz`.
    FuzzCorpus {
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Where to write `corpus/` and `settings.json`.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Run every case of every rule on the rule's component and on the
    /// bundle's, and write down each call as the component host made it:
    /// arguments, answer, and every cluster lookup with the fixture
    /// cluster's answer (`<output>/<rule>.json`, `<output>/bundle.json`). Another host replays
    /// them and must answer the same: `make jco-check` does, under Node.js.
    ExportCases {
        /// Where `make artifacts` put the artifacts.
        #[arg(long, default_value = "artifacts")]
        artifacts: PathBuf,
        /// The policies directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// The directory to write the records to.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Compare the bytes of code in every artifact with the sizes recorded
    /// in host-test/code-sizes.json: exit status 1 when one grew by more
    /// than 2 % (under the compiler that made the record). `--write`
    /// records them (`make sizes`).
    Sizes(aigov::tools::sizes::Args),
    /// Write the playground's data (what `make playground` runs): every
    /// rule's name, description and settings, the sample workloads and
    /// cluster, and how a plain object becomes an AdmissionRequest, as JSON.
    PlaygroundData {
        /// The sample workloads (their `cluster/` is the sample cluster).
        #[arg(long, default_value = "host-test/samples")]
        samples: PathBuf,
        /// Where to write the JSON.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
    /// Write N Pod manifests of about 4.5 KiB (for measuring `aigov scan`).
    GenManifests {
        /// How many.
        #[arg(long)]
        count: usize,
        /// The directory to write them to.
        #[arg(short, long, alias = "out")]
        output: PathBuf,
    },
}

/// The command line, its main help grouped by [`GROUPS`].
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for (_, commands) in GROUPS {
        for (name, line) in *commands {
            cmd = cmd.mut_subcommand(*name, |sc| {
                // The documentation stays the long help; the group's line
                // is the short one.
                match sc.get_long_about().or(sc.get_about()).cloned() {
                    Some(long) => sc.about(*line).long_about(long),
                    None => sc.about(*line),
                }
            });
        }
    }
    let header = cmd.get_styles().get_header();
    let mut listing = String::new();
    let width = GROUPS.iter().flat_map(|(_, c)| c.iter()).map(|(name, _)| name.len()).max().unwrap_or_default();
    for (group, commands) in GROUPS {
        listing.push_str(&format!("{header}{group}:{header:#}\n"));
        for (name, line) in *commands {
            listing.push_str(&format!("  {name:<width$}  {line}\n"));
        }
    }
    cmd.help_template(format!("{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}\n{FOOTER}\n"))
}

/// The arguments, with a build step named at the top level (`aigov
/// annotate …`, as before `aigov build`) put under `build`.
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()).is_some_and(|a| BUILD_STEPS.contains(&a)) {
        args.insert(1, "build".into());
    }
    args
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
    let cli = match Cli::from_arg_matches(&command().get_matches_from(arguments())) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
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
            if e.downcast_ref::<aigov::tools::report::model::NothingToCheck>().is_some() {
                return ExitCode::from(aigov::tools::report::model::NOTHING_TO_CHECK);
            }
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
        Command::Scan(args) => tools::scan::run(&args, out),
        Command::Simulate(args) => tools::simulate::run(&args, out),
        Command::Settings(args) => tools::inspect::settings(&args, out),
        Command::Rules => tools::inspect::rules(out),
        Command::Playground(args) => tools::playground::serve(&args, out),
        Command::Test { rules, artifacts, policies, native } => {
            tools::cases::test(&rules, (!native).then_some(artifacts.as_path()), &policies, out)
        }
        Command::Bench(args) => tools::bench::run(&args, out),
        Command::Inspect { artifact } => tools::inspect::artifact(&artifact, out),
        Command::Invoke(args) => tools::invoke::run(&args, out),
        Command::Manifests(args) => dist::package::run_manifests(&args, out),
        Command::Oci(command) => dist::registry::run(&command, out),
        #[cfg(feature = "signing")]
        Command::Signatures(command) => dist::sign::run(&command, out),
        Command::Build(step) => build(step, out),
    }
}

/// Runs a build step.
fn build(step: Build, out: &mut dyn Write) -> Result<ExitCode> {
    use aigov::{dist, tools};
    match step {
        Build::Annotate { module, metadata, usage, output } => tools::build::annotate(&module, &metadata, usage.as_deref(), &output),
        Build::Componentize { module, output } => tools::build::componentize(&module, &output),
        Build::Preinit { module, settings, output } => tools::build::preinit(&module, &settings, &output, out),
        Build::BundleMetadata { policies, output } => tools::build::bundle_metadata(&policies, &output),
        Build::Package(args) => dist::package::run(&args, out),
        Build::FuzzCorpus { policies, output } => tools::fuzzing::run_corpus(&policies, &output, out),
        Build::ExportCases { artifacts, policies, output } => tools::export_cases::run(&artifacts, &policies, &output, out),
        Build::Sizes(args) => tools::sizes::run(&args, out),
        Build::PlaygroundData { samples, output } => tools::build::playground_data(&samples, &output),
        Build::GenManifests { count, output } => tools::scanbench::gen_manifests(&output, count, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand is listed once in the main help, and every line
    /// of the listing names one; the build steps are under `build` only.
    #[test]
    fn the_groups_list_every_command_once() {
        let cmd = command();
        let listed: Vec<&str> = GROUPS.iter().flat_map(|(_, c)| c.iter().map(|(name, _)| *name)).collect();
        let mut names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).filter(|n| *n != "help").collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        names.sort_unstable();
        assert_eq!(sorted, names, "GROUPS and the subcommands differ");
        sorted.dedup();
        assert_eq!(sorted.len(), listed.len(), "a command is listed twice");
        let build = cmd.find_subcommand("build").unwrap();
        let mut steps: Vec<&str> = build.get_subcommands().map(|s| s.get_name()).filter(|n| *n != "help").collect();
        steps.sort_unstable();
        let mut expected = BUILD_STEPS.to_vec();
        expected.sort_unstable();
        assert_eq!(steps, expected, "BUILD_STEPS and `aigov build`'s steps differ");
        for step in BUILD_STEPS {
            assert!(cmd.find_subcommand(step).is_none(), "{step} is a build step, under `build` only");
        }
        cmd.debug_assert();
    }
}
