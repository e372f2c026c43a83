//! The guests' work per request, counted in wasmtime fuel.
//!
//! A timing moves with the machine and its load; fuel does not: wasmtime
//! charges about one unit per WebAssembly operator the guest executes, so
//! the same module answering the same request burns the same fuel on any
//! machine, every time. Each rule's module and the bundle's (every rule on)
//! answer each benchmark request ([`bench::requests`]) in a fresh instance,
//! as policy-server runs them: instantiation, `wapc_init` and `validate`,
//! with the settings and the cluster the benchmark uses.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow};

use crate::run::artifact::{self, payload};
use crate::run::settings::Resolved;
use crate::run::wapc::WapcModule;
use crate::run::{engine, native};
use crate::tools::bench;
use crate::tools::sizes::Sizes;

/// Fuel per artifact and request: `<rule>` → `<request>` → fuel.
pub fn measure(dir: &std::path::Path) -> Result<Sizes> {
    let engine = engine::counting_engine()?;
    let cluster = Arc::new(bench::bench_cluster(0)?);
    let requests = bench::requests();
    let mut out = Sizes::new();
    for rule in native::RULES.iter().chain([&native::BUNDLE]) {
        let name = if std::ptr::eq(rule, &native::BUNDLE) { artifact::BUNDLE } else { rule.metadata.name };
        let path = artifact::module_path(dir, name);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {} (run `make artifacts` first)", path.display()))?;
        let module = WapcModule::new(&engine, &bytes).with_context(|| format!("loading {}", path.display()))?;
        let settings = bench::settings_for(rule, false, &Resolved::default())?;
        let host = bench::host_for(rule, &cluster);
        let mut fuel = std::collections::BTreeMap::new();
        for (request_name, _, request) in &requests {
            let mut instance = module.instantiate(host.clone())?;
            instance
                .call("validate", payload(request, &settings).as_bytes())
                .map_err(|e| anyhow!("{name} on the `{request_name}` request: {e}"))?;
            let used = instance.fuel_used().context("the counting engine counted no fuel")?;
            fuel.insert((*request_name).to_string(), used);
        }
        out.insert(name.to_string(), fuel);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waPC module whose every call burns `n` loop iterations and
    /// answers `{"accepted":true}`.
    fn looping(n: i32) -> Vec<u8> {
        use wasm_encoder::{
            BlockType, CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function, FunctionSection,
            ImportSection, MemorySection, MemoryType, Module, TypeSection, ValType,
        };
        const ANSWER: &[u8] = br#"{"accepted":true}"#;
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32, ValType::I32], []); // 0: __guest_response
        types.ty().function([], []); // 1: wapc_init
        types.ty().function([ValType::I32, ValType::I32], [ValType::I32]); // 2: __guest_call
        let mut imports = ImportSection::new();
        imports.import("wapc", "__guest_response", EntityType::Function(0));
        let mut functions = FunctionSection::new();
        functions.function(1);
        functions.function(2);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
        let mut exports = ExportSection::new();
        exports.export("memory", ExportKind::Memory, 0);
        exports.export("wapc_init", ExportKind::Func, 1);
        exports.export("__guest_call", ExportKind::Func, 2);
        let mut code = CodeSection::new();
        let mut init = Function::new([]);
        init.instructions().end();
        code.function(&init);
        let mut call = Function::new([(1, ValType::I32)]);
        call.instructions()
            .i32_const(n)
            .local_set(2)
            .block(BlockType::Empty)
            .loop_(BlockType::Empty)
            .local_get(2)
            .i32_eqz()
            .br_if(1)
            .local_get(2)
            .i32_const(1)
            .i32_sub()
            .local_set(2)
            .br(0)
            .end()
            .end()
            .i32_const(0)
            .i32_const(ANSWER.len() as i32)
            .call(0)
            .i32_const(1)
            .end();
        code.function(&call);
        let mut data = DataSection::new();
        data.active(0, &ConstExpr::i32_const(0), ANSWER.iter().copied());
        let mut m = Module::new();
        m.section(&types).section(&imports).section(&functions).section(&memories).section(&exports).section(&code).section(&data);
        m.finish()
    }

    fn burnt(engine: &wasmtime::Engine, n: i32) -> Option<u64> {
        let module = WapcModule::new(engine, &looping(n)).unwrap();
        let mut instance = module.instantiate(bench::host_for(&native::BUNDLE, &Arc::default())).unwrap();
        assert_eq!(instance.call("validate", b"{}").unwrap(), br#"{"accepted":true}"#);
        instance.fuel_used()
    }

    #[test]
    fn fuel_counts_the_work_the_same_every_time_and_only_when_asked() {
        let counting = engine::counting_engine().unwrap();
        let (small, again, large) = (burnt(&counting, 10), burnt(&counting, 10), burnt(&counting, 1010));
        assert_eq!(small, again);
        let (small, large) = (small.unwrap(), large.unwrap());
        // A thousand more iterations of a loop of several operators.
        assert!(large >= small + 4000, "{small} then {large}");
        assert_eq!(burnt(&engine::new_engine().unwrap(), 10), None);
    }
}
