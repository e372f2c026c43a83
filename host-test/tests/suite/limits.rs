//! The host under hostile guests and loads: a request too large for an
//! instance's memory limit gets a clean 500, not a crash of the host; a
//! guest that loops is stopped by the epoch deadline (policy-server's 2 s);
//! many threads evaluating fresh instances of every artifact at once get
//! every answer right. Needs `make artifacts`.

use crate::common::artifacts;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aigov::run::artifact::{Evaluator, component_path, module_path};
use aigov::run::cluster::FixtureCluster;
use aigov::run::wapc::WapcModule;
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, MemorySection, MemoryType, Module, TypeSection, ValType,
};

fn pod_request(extra_bytes: usize) -> String {
    let pad = "x".repeat(extra_bytes);
    format!(
        r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"ml","operation":"CREATE","userInfo":{{"username":"u"}},"object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","annotations":{{"pad":"{pad}"}}}},"spec":{{"runtimeClassName":"nvidia","tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],"containers":[{{"name":"c","image":"i","resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}}}]}}}}}}"#
    )
}

#[test]
fn a_request_past_the_memory_limit_is_a_500_and_the_host_carries_on() {
    let engine = aigov::run::engine::new_engine().unwrap();
    let cluster = Arc::new(FixtureCluster::empty());
    let big = pod_request(3 << 20);
    for path in [module_path(&artifacts(), "gpu-runtime-class"), component_path(&artifacts(), "gpu-runtime-class")] {
        let roomy = Evaluator::from_file(&engine, &path).unwrap();
        let r = roomy.validate_or_500(&big, "{}", &cluster);
        assert!(r.accepted, "{}: a 3 MiB request fits the default limit: {r:?}", path.display());
        let tight = Evaluator::from_file(&engine, &path).unwrap().with_memory_limit(2 << 20);
        let r = tight.validate_or_500(&big, "{}", &cluster);
        assert!(!r.accepted && r.code == Some(500), "{}: {r:?}", path.display());
        assert!(r.message.as_deref().unwrap().starts_with("the policy `gpu-runtime-class` failed"), "{r:?}");
        // The engine and the next instance are unharmed.
        let r = tight.validate_or_500(&pod_request(0), "{}", &cluster);
        assert!(r.accepted, "{r:?}");
    }
}

#[test]
fn a_fresh_instance_grows_its_memory_only_for_a_request_its_initial_heap_cannot_hold() {
    // The guests are linked with a heap in their initial memory (the
    // Makefile's WASM_MEMORY), and both allocators use it before growing:
    // wasi-libc's in the module, dlmalloc 0.2.14's in the component. `aigov
    // bench` checks every rule and the bundle on its requests; this checks
    // that the count it reads moves when a guest does grow.
    let engine = aigov::run::engine::new_engine().unwrap();
    let cluster: aigov::run::wapc::HostCluster = Arc::new(aigov_sdk::NoCluster);
    let module = WapcModule::new(&engine, &std::fs::read(module_path(&artifacts(), "gpu-runtime-class")).unwrap()).unwrap();
    let component =
        aigov::run::component::PolicyComponent::new(&engine, &std::fs::read(component_path(&artifacts(), "gpu-runtime-class")).unwrap())
            .unwrap();
    for (pad, grows) in [(0, false), (2 << 20, true)] {
        let request = pod_request(pad);
        let mut m = module.instantiate(cluster.clone()).unwrap();
        let out = m.call("validate", aigov::run::artifact::payload(&request, "{}").as_bytes()).unwrap();
        let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["accepted"], true, "{out}");
        let mut c = component.instantiate(cluster.clone()).unwrap();
        assert!(c.validate(&request, "{}").unwrap().accepted);
        for (form, growths) in [("module", m.memory_growths()), ("component", c.memory_growths())] {
            assert_eq!(growths > 0, grows, "{form}, a request of {} bytes: {growths} growths", request.len());
        }
    }
}

/// A waPC module whose `__guest_call` never returns.
fn looping_guest() -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], []);
    types.ty().function([ValType::I32, ValType::I32], [ValType::I32]);
    m.section(&types);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    funcs.function(1);
    m.section(&funcs);
    let mut mem = MemorySection::new();
    mem.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
    m.section(&mem);
    let mut exports = ExportSection::new();
    exports.export("wapc_init", ExportKind::Func, 0);
    exports.export("__guest_call", ExportKind::Func, 1);
    exports.export("memory", ExportKind::Memory, 0);
    m.section(&exports);
    let mut code = CodeSection::new();
    let mut init = Function::new([]);
    init.instruction(&Instruction::End);
    code.function(&init);
    let mut spin = Function::new([]);
    spin.instruction(&Instruction::Loop(wasm_encoder::BlockType::Empty));
    spin.instruction(&Instruction::Br(0));
    spin.instruction(&Instruction::End);
    spin.instruction(&Instruction::I32Const(1));
    spin.instruction(&Instruction::End);
    code.function(&spin);
    m.section(&code);
    m.finish()
}

#[test]
fn a_guest_that_loops_is_stopped_by_the_deadline() {
    let engine = aigov::run::engine::new_engine().unwrap();
    let module = WapcModule::new(&engine, &looping_guest()).unwrap();
    let mut instance = module.instantiate(Arc::new(aigov_sdk::NoCluster)).unwrap();
    let started = Instant::now();
    let err = instance.call("validate", b"{}").unwrap_err();
    let took = started.elapsed();
    assert!(format!("{err}").contains("interrupt"), "{err}");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(20), "stopped after {took:?}");
}

#[test]
fn many_threads_on_fresh_instances_of_every_artifact() {
    let engine = aigov::run::engine::new_engine().unwrap();
    let artifacts = artifacts();
    let mut evaluators = Vec::new();
    let mut names: Vec<String> = aigov::run::native::names().map(str::to_string).collect();
    names.push(aigov::run::artifact::BUNDLE.to_string());
    for name in &names {
        for path in [module_path(&artifacts, name), component_path(&artifacts, name)] {
            evaluators
                .push(Evaluator::from_file(&engine, &path).unwrap_or_else(|e| panic!("{}: {e:#} (run `make artifacts`)", path.display())));
        }
    }
    let evaluators = Arc::new(evaluators);
    let request = Arc::new(pod_request(0));
    let cluster = Arc::new(FixtureCluster::empty());
    const THREADS: usize = 4;
    const ROUNDS: usize = 25;
    let started = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (evaluators, request, cluster) = (evaluators.clone(), request.clone(), cluster.clone());
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                for _ in 0..ROUNDS {
                    for e in evaluators.iter() {
                        let settings = if e.is_bundle() { r#"{"rules":{"gpu-runtime-class":{}}}"# } else { "{}" };
                        answers.push((
                            e.name.clone(),
                            e.form(),
                            e.validate(&request, settings, &cluster).map_err(|err| format!("{err:#}")),
                        ));
                    }
                }
                answers
            })
        })
        .collect();
    let mut total = 0usize;
    let mut first: std::collections::BTreeMap<(String, &str), aigov_sdk::ValidationResponse> = Default::default();
    for h in handles {
        for (name, form, answer) in h.join().expect("a thread panicked") {
            let answer = answer.unwrap_or_else(|e| panic!("{name} ({form}): {e}"));
            let seen = first.entry((name.clone(), form)).or_insert_with(|| answer.clone());
            assert_eq!(*seen, answer, "{name} ({form}) answered differently under load");
            total += 1;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(total, THREADS * ROUNDS * evaluators.len());
    println!(
        "load: {total} requests on fresh instances of {} artifacts from {THREADS} threads in {secs:.2} s: {:.0} requests/s",
        evaluators.len(),
        total as f64 / secs
    );
}
