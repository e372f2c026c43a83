//! Per-request timings: the native parse floor, the native rule, and the
//! module and component with a warm instance and a fresh one per request.
//!
//! Two requests, embedded from `host-test/bench/` (compacted at start-up,
//! keys in their original order): a 4.5 KB Pod AdmissionRequest, as the job
//! controller creates a GPU training pod, and a 9 KB RayCluster
//! AdmissionRequest, as `kubectl apply` creates one. Both are admitted by
//! every rule, so each rule walks the whole object.
//!
//! A third request is a `kubectl exec` into that Pod (`CONNECT
//! pods/exec`), for `exec-guard`, whose pod lookup the host answers from a
//! cluster holding the Pod. The bundle, every rule on, is timed on each
//! request next to the single rules.
//!
//! For each request, and each rule whose metadata governs it:
//! - **floor**: `serde_json` skimming the request with `IgnoredAny`, the
//!   least any JSON policy can do;
//! - **native**: the rule linked natively (`NativePolicy::validate` on the
//!   Kubewarden payload);
//! - **module warm / fresh**: the waPC module, one instance reused
//!   (`kwctl bench`), or instantiated from the `InstancePre` for every
//!   request, `wapc_init` included (policy-server);
//! - **component warm / fresh**: the same with the component.
//!
//! The engine is [`crate::run::engine::new_engine`]: pooling allocator, epoch
//! interruption on. Figures are per-request medians and 90th percentiles,
//! and each median is also given as a multiple of the floor of the same
//! request, which a slower or busier machine changes far less than the
//! absolute numbers.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aigov_sdk::{NativePolicy, ValidationResponse};
use anyhow::{Context, Result, anyhow, bail};
use serde::de::IgnoredAny;

use crate::run::artifact::{self, payload};
use crate::run::cluster::{FixtureCluster, Scoped};
use crate::run::component::{PolicyComponent, to_response};
use crate::run::native::Names;
use crate::run::settings::{self, Resolved, Scope, SettingsArgs};
use crate::run::wapc::{HostCluster, WapcModule};
use crate::run::{engine, native};
use crate::tools::report::model::Target;
use render::{format_duration, render_markdown, render_text};

pub mod render;

/// The Pod AdmissionRequest (pretty-printed; compacted before use).
pub const POD_REQUEST: &str = include_str!("../../bench/pod-request.json");

/// The same Pod, changed until every rule admits it (labels, service
/// account, GPU node selector, allowed images and model location, seccomp,
/// capabilities): the common case in a cluster, where no message is
/// written. The bundle's cost on it, next to the cheapest rule's, is what
/// one call for the whole catalogue costs an admitted Pod.
pub const POD_ADMITTED_REQUEST: &str = include_str!("../../bench/pod-admitted-request.json");

/// The RayCluster AdmissionRequest (pretty-printed; compacted before use).
pub const RAYCLUSTER_REQUEST: &str = include_str!("../../bench/raycluster-request.json");

/// A `kubectl exec` into the Pod of [`POD_REQUEST`] (named
/// `llm-finetune-worker-0`), which the benchmark's cluster holds: the
/// request `exec-guard` receives, with its pod lookup.
pub const EXEC_REQUEST: &str = include_str!("../../bench/exec-request.json");

/// The name of the bundle in the report.
pub const BUNDLE_NAME: &str = "bundle (every rule)";

/// Arguments of `aigov bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The default run takes about 1.5 minutes on 2 cores (--quick: 10 s). Numbers are per request; `× floor` divides each median \
by the native JSON skim of the same request. Record results with `make bench` and copy the \
--markdown output into BENCHMARKS.md.")]
pub struct Args {
    /// Where `make artifacts` put the artifacts.
    #[arg(long, default_value = "artifacts")]
    pub artifacts: PathBuf,
    /// Timed requests per measurement, exactly, in one round (default: up
    /// to 10000, or about one second per measurement, whichever comes
    /// first, in 5 interleaved rounds).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: Option<u32>,
    /// A quick, rougher run (up to 1000 requests or 0.15 s per measurement).
    #[arg(long, conflicts_with = "iterations")]
    pub quick: bool,
    /// Only these rules (repeatable; `aigov-bundle`: the bundle, every rule on; default: every rule that governs the request, then the bundle).
    #[arg(long = "rule", value_name = "RULE")]
    pub rules: Vec<String>,
    /// Print Markdown tables, for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Instead: the throughput of `aigov scan --format json` over N Pod
    /// manifests of 4.5 KiB (written to a temporary directory), in each
    /// form, with every core and with one worker, against the native JSON
    /// skim of one manifest.
    #[arg(long, value_name = "N", conflicts_with_all = ["iterations", "quick", "rules"])]
    pub scan: Option<usize>,
    /// The bench Pod's namespace also holds N running CPU-only pods (copies
    /// of the bench Pod without its GPUs), which `gpu-quota` reads on every
    /// Pod it admits: how a context-aware rule's cost grows with the
    /// cluster. Every verdict stays what it is with none.
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "scan")]
    pub namespace_pods: usize,
    /// Every rule's settings spelt out, every key with its value (the
    /// defaults, with a rule's example settings over them), as a policy
    /// that writes out every default carries them, instead of what `aigov
    /// manifests` writes (only what differs from the defaults: `{}`, or
    /// the example settings of a rule that refuses its defaults). A fresh
    /// instance reads them on every request. Every verdict stays the same.
    #[arg(long, conflicts_with = "scan")]
    pub spelt_out_settings: bool,
    /// Settings instead of those `aigov manifests` writes: RULE=FILE for a
    /// rule (alone and in the bundle), FILE for the one `--rule`.
    #[command(flatten)]
    pub settings: SettingsArgs,
}

/// Runs `aigov bench`, writing the report to `out`.
pub fn run(args: &Args, out: &mut dyn std::io::Write) -> Result<ExitCode> {
    if let Some(n) = args.scan {
        let b = crate::tools::scanbench::bench_scan(&args.artifacts, n)?;
        out.write_all(crate::tools::scanbench::render_scan(&b, args.markdown).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let plan = match (args.iterations, args.quick) {
        (Some(n), _) => Plan::exact(n as usize),
        (None, true) => Plan::quick(),
        (None, false) => Plan::default(),
    };
    let scope = match args.rules.as_slice() {
        [one] => Scope::One(one),
        _ => Scope::Every,
    };
    let config = Config {
        artifacts: args.artifacts.clone(),
        plan,
        rules: args.rules.clone(),
        namespace_pods: args.namespace_pods,
        spelt_out_settings: args.spelt_out_settings,
        settings: settings::resolve(&args.settings.settings, scope)?,
    };
    let report = bench(&config)?;
    let text = if args.markdown { render_markdown(&report) } else { render_text(&report) };
    out.write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

// ------------------------------------------------------------------- plan

/// How many requests each measurement times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Untimed requests first (caches, branch predictors, the pool's slots).
    pub warmup: usize,
    /// Timed requests at most.
    pub iterations: usize,
    /// Stop earlier once this much time is spent, if set...
    pub budget: Option<Duration>,
    /// ...but not before this many timed requests.
    pub min_iterations: usize,
    /// The timed requests of every measurement are split into this many
    /// rounds, and each round runs every measurement in turn, so that a
    /// burst of noise on a busy machine is spread over every row instead of
    /// skewing one.
    pub rounds: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { warmup: 200, iterations: 10_000, budget: Some(Duration::from_millis(1000)), min_iterations: 500, rounds: 5 }
    }
}

impl Plan {
    /// Exactly `n` timed requests.
    pub fn exact(n: usize) -> Plan {
        Plan { warmup: (n / 10).clamp(1, 200), iterations: n, budget: None, min_iterations: n, rounds: 1 }
    }

    /// The `--quick` plan.
    pub fn quick() -> Plan {
        Plan { warmup: 50, iterations: 1000, budget: Some(Duration::from_millis(150)), min_iterations: 100, rounds: 2 }
    }

    fn describe(&self) -> String {
        match self.budget {
            Some(b) => format!(
                "up to {} timed requests or {} ms per measurement (at least {}), in {} interleaved rounds, after {} untimed",
                self.iterations,
                b.as_millis(),
                self.min_iterations,
                self.rounds,
                self.warmup
            ),
            None => format!(
                "{} timed requests per measurement, in {} interleaved round(s), after {} untimed",
                self.iterations, self.rounds, self.warmup
            ),
        }
    }
}

/// A per-request time distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Median.
    pub median: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// Timed requests.
    pub samples: usize,
}

/// One measurement in progress: what to call, and the times so far.
struct Timer<'a> {
    run: Box<dyn FnMut() -> Result<()> + 'a>,
    times: Vec<Duration>,
}

impl<'a> Timer<'a> {
    fn new(run: impl FnMut() -> Result<()> + 'a) -> Timer<'a> {
        Timer { run: Box::new(run), times: Vec::new() }
    }
}

/// Runs every timer: its warm-up first, then `plan.rounds` rounds in which
/// each timer takes its share of the timed requests in turn.
fn run_timers(plan: &Plan, timers: &mut [Timer<'_>]) -> Result<()> {
    for t in timers.iter_mut() {
        for _ in 0..plan.warmup {
            (t.run)()?;
        }
        t.times.reserve(plan.iterations);
    }
    let rounds = plan.rounds.clamp(1, plan.iterations.max(1));
    let min = plan.min_iterations.div_ceil(rounds);
    let budget = plan.budget.map(|b| b / rounds as u32);
    for round in 0..rounds {
        let share = plan.iterations * (round + 1) / rounds - plan.iterations * round / rounds;
        for t in timers.iter_mut() {
            let start = Instant::now();
            for n in 1..=share {
                let before = Instant::now();
                (t.run)()?;
                t.times.push(before.elapsed());
                if budget.is_some_and(|b| n >= min && start.elapsed() > b) {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Median and 90th percentile.
fn stats(mut times: Vec<Duration>) -> Stats {
    times.sort_unstable();
    let at = |q: f64| {
        let i = ((times.len() as f64 - 1.0) * q).round() as usize;
        times.get(i).copied().unwrap_or_default()
    };
    Stats { median: at(0.5), p90: at(0.9), samples: times.len() }
}

/// Times `f` per call (one timer on its own).
#[cfg(test)]
fn measure(plan: &Plan, f: impl FnMut() -> Result<()>) -> Result<Stats> {
    let mut timers = [Timer::new(f)];
    run_timers(plan, &mut timers)?;
    let [t] = timers;
    Ok(stats(t.times))
}

// ------------------------------------------------------------------ model

/// What one row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measurement {
    /// `serde_json` skim of the request with `IgnoredAny`.
    Floor,
    /// The natively linked rule.
    Native,
    /// The waPC module, one instance reused.
    ModuleWarm,
    /// The waPC module, a fresh instance per request.
    ModuleFresh,
    /// The component, one instance reused.
    ComponentWarm,
    /// The component, a fresh instance per request.
    ComponentFresh,
}

impl Measurement {
    /// Every rule measurement, in row order.
    pub const RULE: [Measurement; 5] =
        [Measurement::Native, Measurement::ModuleWarm, Measurement::ModuleFresh, Measurement::ComponentWarm, Measurement::ComponentFresh];

    /// The row label.
    pub fn label(self) -> &'static str {
        match self {
            Measurement::Floor => "native JSON skim (floor)",
            Measurement::Native => "native rule",
            Measurement::ModuleWarm => "module, warm instance",
            Measurement::ModuleFresh => "module, fresh instance",
            Measurement::ComponentWarm => "component, warm instance",
            Measurement::ComponentFresh => "component, fresh instance",
        }
    }
}

/// One row of the results.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The request's name (`pod`, `raycluster`).
    pub request: String,
    /// The rule; `None` for the floor.
    pub rule: Option<String>,
    /// What was timed.
    pub measurement: Measurement,
    /// The times.
    pub stats: Stats,
    /// Median over the floor's median for the same request.
    pub ratio: f64,
}

/// A benchmarked request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// Name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Size of the compact JSON, in bytes.
    pub bytes: usize,
}

/// A rule's artifact sizes, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    /// Rule.
    pub rule: String,
    /// `policy.wasm`.
    pub module: u64,
    /// `policy.component.wasm`.
    pub component: u64,
    /// The module's initial linear memory, in bytes.
    pub initial_memory: Option<u64>,
    /// Where the module's shadow stack pointer starts (with wasm-ld's
    /// stack-first layout, the size of the shadow stack), in bytes.
    pub stack: Option<u64>,
}

/// The initial linear memory of a core module and the initial value of its
/// first mutable `i32` global (wasm-ld's `__stack_pointer`).
pub fn module_layout(module: &[u8]) -> (Option<u64>, Option<u64>) {
    let (mut memory, mut stack) = (None, None);
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        match payload {
            Ok(wasmparser::Payload::MemorySection(reader)) => {
                memory = reader.into_iter().flatten().next().map(|m| m.initial.saturating_mul(65536));
            }
            Ok(wasmparser::Payload::GlobalSection(reader)) => {
                stack =
                    reader.into_iter().flatten().filter(|g| g.ty.mutable && g.ty.content_type == wasmparser::ValType::I32).find_map(|g| {
                        match g.init_expr.get_operators_reader().read() {
                            Ok(wasmparser::Operator::I32Const { value }) => u64::try_from(value).ok(),
                            _ => None,
                        }
                    });
            }
            _ => {}
        }
    }
    (memory, stack)
}

/// What a fresh instance costs before the rule runs, per rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instantiation {
    /// Rule.
    pub rule: String,
    /// Module: `Store`, WASI context, instantiation from the `InstancePre`,
    /// `_initialize` and `wapc_init`, and dropping it all (the pool resets
    /// the slot).
    pub module: Stats,
    /// Component: `Store`, instantiation from the `InstancePre`, drop.
    pub component: Stats,
}

/// The machine the figures come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Logical CPUs available.
    pub cpus: usize,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
}

impl Machine {
    /// This machine.
    pub fn detect() -> Machine {
        let cpus = std::thread::available_parallelism().map(usize::from).unwrap_or(1);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        Machine { cpus, cpu_model }
    }
}

/// The whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Where.
    pub machine: Machine,
    /// How many iterations.
    pub plan: Plan,
    /// Running CPU-only pods in the bench Pod's namespace besides it.
    pub namespace_pods: usize,
    /// Every rule's settings spelt out (`--spelt-out-settings`).
    pub spelt_out_settings: bool,
    /// The requests.
    pub requests: Vec<RequestInfo>,
    /// Every measurement, per request: the floor, then each rule's five.
    pub rows: Vec<Row>,
    /// Artifact sizes of the rules benchmarked.
    pub sizes: Vec<Size>,
    /// Instantiation alone, per rule.
    pub instantiation: Vec<Instantiation>,
    /// What each rule answered to each request (`request/rule: accepted`).
    pub verdicts: Vec<String>,
    /// Fresh instances that grew their memory to answer a request
    /// (`request/rule: the module grew its memory 1 time`): each growth
    /// costs the pooling allocator an `mprotect` during the call and
    /// another when the slot is reused, and a guest whose heap fits in its
    /// initial memory (the Makefile's `WASM_MEMORY`) needs none.
    pub memory_growths: Vec<String>,
    /// Anything that looks off.
    pub notes: Vec<String>,
}

/// What to benchmark.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Where the artifacts are.
    pub artifacts: PathBuf,
    /// Iterations.
    pub plan: Plan,
    /// Only these rules (empty: every rule that governs the request).
    pub rules: Vec<String>,
    /// Running CPU-only pods the bench Pod's namespace holds besides it
    /// (`--namespace-pods`).
    pub namespace_pods: usize,
    /// Every rule's settings spelt out (`--spelt-out-settings`).
    pub spelt_out_settings: bool,
    /// Settings given (`--settings`): by rule, and for the one rule timed.
    pub settings: Resolved,
}

// ---------------------------------------------------------------- running

/// Removes insignificant whitespace from JSON text, keeping everything else
/// (key order included) as it is.
pub fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !c.is_whitespace() {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// A rule loaded in both artifact forms.
struct Forms {
    /// The rule, or the bundle.
    name: String,
    rule: &'static NativePolicy,
    /// The settings JSON: `{}` (the defaults), or for a rule that refuses
    /// its defaults, its example settings (host-test/settings/<rule>.yaml);
    /// for the bundle, every rule on with those.
    settings: String,
    module: WapcModule,
    component: PolicyComponent,
    host: HostCluster,
    sizes: Size,
}

/// The cluster the benchmark's lookups see: the Pod of [`POD_REQUEST`],
/// named as [`EXEC_REQUEST`] targets it (also what a namespace listing of
/// `ml-training` returns), and the requests' two Namespaces, so that the
/// context-aware rules are timed with their lookups answered, not failing;
/// with `namespace_pods` more pods in `ml-training` (see
/// [`crowd`]).
pub fn bench_cluster(namespace_pods: usize) -> Result<FixtureCluster> {
    let request: serde_json::Value = serde_json::from_str(POD_REQUEST).context("the bench Pod is not JSON")?;
    let pod = request.get("object").cloned().context("the bench Pod request has no object")?;
    let namespace =
        |name: &str| serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": "ml"}}});
    let mut objects = vec![named(pod.clone(), "llm-finetune-worker-0"), namespace("ml-training"), namespace("ml-platform")];
    objects.extend(crowd(&pod, namespace_pods));
    FixtureCluster::from_objects(objects)
}

/// `pod`, named `name` in `ml-training`.
fn named(mut pod: serde_json::Value, name: &str) -> serde_json::Value {
    if let Some(meta) = pod.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        meta.insert("name".into(), serde_json::json!(name));
        meta.insert("namespace".into(), serde_json::json!("ml-training"));
    }
    pod
}

/// `n` running pods like `pod` without its GPUs (`ml-notebook-1`, ...):
/// what `gpu-quota` reads and counts nothing from, so that every verdict
/// stays the same, as in a namespace of CPU pods beside the GPU ones.
fn crowd(pod: &serde_json::Value, n: usize) -> Vec<serde_json::Value> {
    let gpus = aigov_sdk::GpuResources::default();
    let mut cpu_only = pod.clone();
    for list in ["containers", "initContainers"] {
        let containers = cpu_only.pointer_mut(&format!("/spec/{list}")).and_then(serde_json::Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            for field in ["limits", "requests"] {
                if let Some(r) = c.pointer_mut(&format!("/resources/{field}")).and_then(serde_json::Value::as_object_mut) {
                    r.retain(|name, _| !gpus.is_gpu(name));
                }
            }
        }
    }
    if let Some(o) = cpu_only.as_object_mut() {
        o.insert("status".into(), serde_json::json!({"phase": "Running"}));
    }
    (1..=n).map(|i| named(cpu_only.clone(), &format!("ml-notebook-{i}"))).collect()
}

/// The settings rule `rule` is timed with: those given, else those `aigov
/// manifests` writes (`{}`, or the example settings where it refuses its
/// defaults); with `spelt_out`, every key.
fn rule_settings(rule: &NativePolicy, spelt_out: bool, given: &Resolved) -> Result<serde_json::Value> {
    let named = given.rules.get(rule.metadata.name);
    let whole = given.whole.as_ref().filter(|_| !native::is_bundle(rule));
    match named.or(whole) {
        Some(g) => serde_json::from_str(&g.json).with_context(|| g.origin.clone()),
        None if spelt_out => native::deployable_settings(rule),
        None => native::written_settings(rule),
    }
}

/// Settings of the bundle: those given for it, else every rule on, each
/// with [`rule_settings`].
fn bundle_settings(spelt_out: bool, given: &Resolved) -> Result<String> {
    if given.whole.is_some() {
        return settings::for_bundle(given, &[]);
    }
    let mut rules = serde_json::Map::new();
    for rule in native::RULES {
        rules.insert(rule.metadata.name.to_string(), rule_settings(rule, spelt_out, given)?);
    }
    Ok(serde_json::json!({ "rules": rules }).to_string())
}

/// The settings `rule` (or the bundle, [`native::BUNDLE`]) is measured
/// with: [`rule_settings`], or for the bundle every rule on with those;
/// `given`, the `--settings` of the command, over them.
pub fn settings_for(rule: &'static NativePolicy, spelt_out: bool, given: &Resolved) -> Result<String> {
    if std::ptr::eq(rule, &native::BUNDLE) {
        bundle_settings(spelt_out, given)
    } else {
        Ok(rule_settings(rule, spelt_out, given)?.to_string())
    }
}

/// `cluster` as `rule` sees it: only the kinds its metadata lists.
pub fn host_for(rule: &NativePolicy, cluster: &Arc<FixtureCluster>) -> HostCluster {
    let allowed = rule.metadata.context_aware_resources.iter().map(|r| (r.api_version.to_string(), r.kind.to_string())).collect();
    Arc::new(Scoped::new(cluster.clone(), allowed))
}

fn load(
    engine: &wasmtime::Engine,
    artifacts: &Path,
    rule: &'static NativePolicy,
    cluster: &Arc<FixtureCluster>,
    spelt_out: bool,
    given: &Resolved,
) -> Result<Forms> {
    let bundle = std::ptr::eq(rule, &native::BUNDLE);
    let name = if bundle { artifact::BUNDLE } else { rule.metadata.name };
    let read = |path: PathBuf| -> Result<Vec<u8>> {
        let path = artifact::require(artifacts, path, None)?;
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    };
    let module_bytes = read(artifact::module_path(artifacts, name))?;
    let component_bytes = read(artifact::component_path(artifacts, name))?;
    let host = host_for(rule, cluster);
    let settings = settings_for(rule, spelt_out, given)?;
    let answer = (rule.validate_settings)(settings.as_bytes());
    if !answer.valid {
        bail!("`{}` refuses the settings given: {}", rule.metadata.name, answer.message.unwrap_or_default());
    }
    Ok(Forms {
        name: if bundle { BUNDLE_NAME.to_string() } else { name.to_string() },
        rule,
        settings,
        module: WapcModule::new(engine, &module_bytes).with_context(|| format!("loading the module of {name}"))?,
        component: PolicyComponent::new(engine, &component_bytes).with_context(|| format!("loading the component of {name}"))?,
        host,
        sizes: {
            let (initial_memory, stack) = module_layout(&module_bytes);
            Size {
                rule: name.to_string(),
                module: module_bytes.len() as u64,
                component: component_bytes.len() as u64,
                initial_memory,
                stack,
            }
        },
    })
}

fn module_response(out: Vec<u8>) -> Result<ValidationResponse> {
    serde_json::from_slice(&out).context("the module's response is not a ValidationResponse")
}

/// Answers of the three forms to one request, once, untimed, each artifact
/// in a fresh instance: they must agree, or the timings compare different
/// work. Also how many times each fresh instance grew its memory (module,
/// component).
fn verdict(f: &Forms, request: &str, payload: &str) -> Result<(ValidationResponse, Option<String>, [u32; 2])> {
    let native = (f.rule.validate)(payload.as_bytes(), &*f.host);
    let mut instance = f.module.instantiate(f.host.clone())?;
    let module = module_response(instance.call("validate", payload.as_bytes()).map_err(|e| anyhow!("{e}"))?)?;
    let mut fresh = f.component.instantiate(f.host.clone())?;
    let component = to_response(fresh.validate(request, &f.settings)?)?;
    let disagree = (module != native || component != native)
        .then(|| format!("{}: the three forms disagree (native {native:?}, module {module:?}, component {component:?})", f.name));
    Ok((native, disagree, [instance.memory_growths(), fresh.memory_growths()]))
}

/// The floor: `serde_json` skimming the request without building anything.
fn floor(request: &str) -> Timer<'_> {
    Timer::new(move || {
        black_box(serde_json::from_str::<IgnoredAny>(black_box(request))?);
        Ok(())
    })
}

/// A timer for one rule measurement. Warm instances are created here, once.
fn timer<'a>(f: &'a Forms, m: Measurement, request: &'a str, payload: &'a str) -> Result<Timer<'a>> {
    let host = &f.host;
    Ok(match m {
        Measurement::Floor => floor(request),
        Measurement::Native => Timer::new(move || {
            black_box((f.rule.validate)(black_box(payload.as_bytes()), &**host));
            Ok(())
        }),
        Measurement::ModuleWarm => {
            let mut instance = f.module.instantiate(host.clone())?;
            Timer::new(move || {
                black_box(instance.call("validate", black_box(payload.as_bytes())).map_err(|e| anyhow!("{e}"))?);
                Ok(())
            })
        }
        Measurement::ModuleFresh => Timer::new(move || {
            let mut instance = f.module.instantiate(host.clone())?;
            black_box(instance.call("validate", black_box(payload.as_bytes())).map_err(|e| anyhow!("{e}"))?);
            Ok(())
        }),
        Measurement::ComponentWarm => {
            let mut instance = f.component.instantiate(host.clone())?;
            Timer::new(move || {
                black_box(instance.validate(black_box(request), &f.settings)?);
                Ok(())
            })
        }
        Measurement::ComponentFresh => Timer::new(move || {
            let mut instance = f.component.instantiate(host.clone())?;
            black_box(instance.validate(black_box(request), &f.settings)?);
            Ok(())
        }),
    })
}

/// The requests benchmarked: name, description, compact JSON.
pub fn requests() -> Vec<(&'static str, &'static str, String)> {
    vec![
        ("pod", "GPU training Pod, CREATE by the job controller", minify(POD_REQUEST)),
        ("pod-admitted", "the same Pod, compliant with every rule", minify(POD_ADMITTED_REQUEST)),
        ("raycluster", "mixed CPU/GPU RayCluster, CREATE by kubectl apply", minify(RAYCLUSTER_REQUEST)),
        ("exec", "kubectl exec into the GPU Pod, CONNECT pods/exec, the pod looked up", minify(EXEC_REQUEST)),
    ]
}

/// Runs every measurement.
pub fn bench(config: &Config) -> Result<Report> {
    for r in &config.rules {
        native::lookup(r, Names::RulesAndBundle).map_err(|e| anyhow!("--rule: {e}"))?;
    }
    let engine = engine::new_engine()?;
    let requests = requests();
    // Which rules each request goes to, as a webhook would route it.
    // The bundle, every rule on, runs after the single rules.
    let candidates: Vec<&'static NativePolicy> = native::RULES.iter().chain([&native::BUNDLE]).collect();
    let mut plan_rules: Vec<Vec<&'static NativePolicy>> = Vec::new();
    for (_, _, text) in &requests {
        let value: serde_json::Value = serde_json::from_str(text).context("a bench request is not JSON")?;
        let target = Target::of(&value);
        plan_rules.push(
            candidates
                .iter()
                .copied()
                .filter(|r| {
                    let name = if std::ptr::eq(*r, &native::BUNDLE) { artifact::BUNDLE } else { r.metadata.name };
                    config.rules.is_empty() || config.rules.iter().any(|n| n == name)
                })
                .filter(|r| target.governed_by(r.metadata))
                .collect(),
        );
    }
    let cluster = Arc::new(bench_cluster(config.namespace_pods)?);
    let mut loaded: Vec<Forms> = Vec::new();
    for rule in candidates.iter().filter(|c| plan_rules.iter().flatten().any(|r| std::ptr::eq(*r, **c))) {
        loaded.push(load(&engine, &config.artifacts, rule, &cluster, config.spelt_out_settings, &config.settings)?);
    }

    /// What a timer measures.
    enum Slot {
        Row { request: usize, rule: Option<String>, measurement: Measurement },
        Instantiate { rule: String, component: bool },
    }
    let payloads: Vec<Vec<String>> = requests
        .iter()
        .zip(&plan_rules)
        .map(|((_, _, r), rules)| {
            rules
                .iter()
                .map(|rule| {
                    payload(
                        r,
                        &loaded.iter().find(|f| std::ptr::eq(f.rule, *rule)).map_or_else(|| "{}".to_string(), |f| f.settings.clone()),
                    )
                })
                .collect()
        })
        .collect();
    let mut slots = Vec::new();
    let mut timers = Vec::new();
    let mut verdicts = Vec::new();
    let mut memory_growths = Vec::new();
    let mut notes = Vec::new();
    for (i, (((name, _, request), rules), payloads)) in requests.iter().zip(&plan_rules).zip(&payloads).enumerate() {
        slots.push(Slot::Row { request: i, rule: None, measurement: Measurement::Floor });
        timers.push(floor(request));
        if rules.is_empty() {
            notes.push(format!("{name}: no rule selected governs this request"));
        }
        for (rule, payload) in rules.iter().zip(payloads) {
            let Some(f) = loaded.iter().find(|f| std::ptr::eq(f.rule, *rule)) else { continue };
            let (answer, disagree, growths) = verdict(f, request, payload)?;
            let rule_name = f.name.clone();
            for (form, n) in ["module", "component"].into_iter().zip(growths).filter(|(_, n)| *n > 0) {
                memory_growths.push(format!("{name}/{rule_name}: the {form} grew its memory {n} time{}", if n == 1 { "" } else { "s" }));
            }
            verdicts.push(match (answer.accepted, &answer.message) {
                (true, _) => format!("{name}/{rule_name}: accepted"),
                (false, m) => format!("{name}/{rule_name}: rejected ({})", m.as_deref().unwrap_or_default()),
            });
            if let Some(d) = disagree {
                notes.push(format!("{name}/{d}"));
            }
            if !answer.accepted && answer.code == Some(400) {
                notes.push(format!("{name}/{rule_name}: the request was rejected as malformed, so the timings measure the error path"));
            }
            for m in Measurement::RULE {
                slots.push(Slot::Row { request: i, rule: Some(rule_name.clone()), measurement: m });
                timers.push(timer(f, m, request, payload)?);
            }
        }
    }
    for f in &loaded {
        let name = f.name.clone();
        slots.push(Slot::Instantiate { rule: name.clone(), component: false });
        timers.push(Timer::new(|| {
            black_box(f.module.instantiate(f.host.clone())?);
            Ok(())
        }));
        slots.push(Slot::Instantiate { rule: name, component: true });
        timers.push(Timer::new(|| {
            black_box(f.component.instantiate(f.host.clone())?);
            Ok(())
        }));
    }

    run_timers(&config.plan, &mut timers)?;

    let mut rows: Vec<Row> = Vec::new();
    let mut instantiation: Vec<Instantiation> = Vec::new();
    for (slot, t) in slots.into_iter().zip(timers) {
        let st = stats(t.times);
        match slot {
            Slot::Row { request, rule, measurement } => {
                let name = requests.get(request).map(|(n, _, _)| n.to_string()).unwrap_or_default();
                let floor_ns = rows
                    .iter()
                    .find(|r| r.request == name && r.measurement == Measurement::Floor)
                    .map_or(st.median, |r| r.stats.median)
                    .as_nanos()
                    .max(1) as f64;
                let ratio = st.median.as_nanos() as f64 / floor_ns;
                rows.push(Row { request: name, rule, measurement, stats: st, ratio });
            }
            Slot::Instantiate { rule, component } => match instantiation.iter_mut().find(|i| i.rule == rule) {
                Some(i) if component => i.component = st,
                Some(i) => i.module = st,
                None => instantiation.push(Instantiation { rule, module: st, component: st }),
            },
        }
    }
    notes.extend(sanity_notes(&rows, &instantiation));
    Ok(Report {
        machine: Machine::detect(),
        plan: config.plan,
        namespace_pods: config.namespace_pods,
        spelt_out_settings: config.spelt_out_settings,
        requests: requests
            .iter()
            .map(|(n, d, text)| RequestInfo { name: n.to_string(), description: d.to_string(), bytes: text.len() })
            .collect(),
        rows,
        sizes: loaded.iter().map(|f| Size { rule: f.name.clone(), ..f.sizes.clone() }).collect(),
        instantiation,
        verdicts,
        memory_growths,
        notes,
    })
}

/// Instantiation from an `InstancePre` with the pooling allocator costs a
/// few µs (DESIGN.md: about 3 µs); more than this points at the setup.
pub const INSTANTIATION_EXPECTED: Duration = Duration::from_micros(10);

/// Flags figures that point at a configuration problem rather than at the
/// rule: a fresh instance cheaper than a warm one (the warm instance does
/// something per call it should not), or instantiation well above what the
/// pooling allocator and an `InstancePre` give.
fn sanity_notes(rows: &[Row], instantiation: &[Instantiation]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows.iter().filter(|r| r.measurement == Measurement::ModuleWarm || r.measurement == Measurement::ComponentWarm) {
        let fresh_kind = if r.measurement == Measurement::ModuleWarm { Measurement::ModuleFresh } else { Measurement::ComponentFresh };
        let fresh = rows.iter().find(|x| x.request == r.request && x.rule == r.rule && x.measurement == fresh_kind).map(|x| x.stats.median);
        if fresh.is_some_and(|f| f < r.stats.median) {
            notes.push(format!(
                "{}/{}: {} is faster than {}: suspicious",
                r.request,
                r.rule.as_deref().unwrap_or_default(),
                fresh_kind.label(),
                r.measurement.label()
            ));
        }
    }
    let slow: Vec<String> = instantiation
        .iter()
        .flat_map(|i| [("module", &i.rule, &i.module), ("component", &i.rule, &i.component)])
        .filter(|(_, _, stats)| stats.median > INSTANTIATION_EXPECTED)
        .map(|(what, rule, stats)| format!("{rule} {what} {}", format_duration(stats.median)))
        .collect();
    if !slow.is_empty() {
        notes.push(format!(
            "instantiation alone is slower than the few µs the pooling allocator and an InstancePre give ({}): \
             look at what the pool zeroes when an instance is dropped (up to `linear_memory_keep_resident` of the guest's memory, \
             its shadow stack included: see the stack column of the sizes table) and at what runs at instantiation",
            slow.join(", ")
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crowd_is_running_cpu_pods_gpu_quota_lists() {
        use aigov_sdk::Cluster;
        let pods_of = |n: usize| Scoped::new(Arc::new(bench_cluster(n).unwrap()), Arc::from([("v1".to_string(), "Pod".to_string())]));
        let list = pods_of(3)
            .list_resources_by_namespace("v1", "Pod", "ml-training", None, Some("status.phase!=Succeeded,status.phase!=Failed"))
            .unwrap();
        let pods = aigov_sdk::model::listed::list_pods(&list).unwrap();
        let names: Vec<_> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap_or_default().to_string()).collect();
        assert_eq!(names, ["llm-finetune-worker-0", "ml-notebook-1", "ml-notebook-2", "ml-notebook-3"]);
        let gpus = aigov_sdk::GpuResources::default();
        assert!(!pods[0].gpus_per_pod(&gpus).unwrap().is_empty(), "the bench Pod's copy holds its GPUs");
        for p in &pods[1..] {
            assert_eq!(p.phase.as_deref(), Some("Running"));
            assert!(p.gpus_per_pod(&gpus).unwrap().is_empty(), "{:?} holds no GPU", p.metadata.name);
        }
        let alone = pods_of(0).list_resources_by_namespace("v1", "Pod", "ml-training", None, None).unwrap();
        assert_eq!(aigov_sdk::model::listed::list_pods(&alone).unwrap().len(), 1, "without `--namespace-pods`, the bench Pod's copy alone");
    }

    #[test]
    fn minify_keeps_strings_and_order() {
        let text = "{\n  \"b\": \"x y\\\" z\",\n  \"a\": [1, 2]\n}\n";
        assert_eq!(minify(text), r#"{"b":"x y\" z","a":[1,2]}"#);
        for (_, _, r) in requests() {
            let a: serde_json::Value = serde_json::from_str(&r).unwrap();
            assert!(a.is_object());
            assert!(!r.contains('\n'));
        }
    }

    #[test]
    fn fixtures_are_the_documented_sizes() {
        let size = |name: &str| requests().iter().find(|(n, _, _)| *n == name).map(|(_, _, r)| r.len()).unwrap();
        assert!((4300..=4800).contains(&size("pod")), "pod request is {} bytes", size("pod"));
        assert!((4700..=5200).contains(&size("pod-admitted")), "admitted pod request is {} bytes", size("pod-admitted"));
        assert!((8500..=9500).contains(&size("raycluster")), "raycluster request is {} bytes", size("raycluster"));
    }

    #[test]
    fn statistics() {
        let mut n = 0u64;
        let s = measure(&Plan::exact(9), || {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(s.samples, 9);
        assert_eq!(n, 10, "one warm-up call, nine timed");
        assert!(s.median <= s.p90);
    }

    #[test]
    fn reads_the_shadow_stack() {
        use wasm_encoder::{ConstExpr, GlobalSection, GlobalType, MemorySection, MemoryType, Module, ValType};
        let mut m = Module::new();
        let mut mem = MemorySection::new();
        mem.memory(MemoryType { minimum: 17, maximum: None, memory64: false, shared: false, page_size_log2: None });
        m.section(&mem);
        let mut globals = GlobalSection::new();
        globals.global(GlobalType { val_type: ValType::I32, mutable: false, shared: false }, &ConstExpr::i32_const(7));
        globals.global(GlobalType { val_type: ValType::I32, mutable: true, shared: false }, &ConstExpr::i32_const(1 << 20));
        m.section(&globals);
        assert_eq!(module_layout(&m.finish()), (Some(17 * 65536), Some(1 << 20)));
        assert_eq!(module_layout(b"not wasm"), (None, None));
    }

    fn row(m: Measurement, us: u64) -> Row {
        let d = Duration::from_micros(us);
        Row { request: "pod".into(), rule: Some("r".into()), measurement: m, stats: Stats { median: d, p90: d, samples: 1 }, ratio: 1.0 }
    }

    #[test]
    fn suspicious_figures_are_flagged() {
        assert!(sanity_notes(&[row(Measurement::ModuleWarm, 5), row(Measurement::ModuleFresh, 20)], &[]).is_empty());
        let fast_fresh = sanity_notes(&[row(Measurement::ComponentWarm, 20), row(Measurement::ComponentFresh, 5)], &[]);
        assert!(fast_fresh[0].contains("faster"), "{fast_fresh:?}");
        let stats = |us| Stats { median: Duration::from_micros(us), p90: Duration::from_micros(us), samples: 1 };
        let slow = Instantiation { rule: "r".into(), module: stats(21), component: stats(3) };
        let notes = sanity_notes(&[], &[slow]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("(r module 21.0 µs)"), "{notes:?}");
    }
}
