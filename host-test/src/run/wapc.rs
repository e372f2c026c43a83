//! A waPC host on wasmtime: runs Kubewarden policy modules as policy-server
//! does (WASI preview 1 with nothing granted, the `wapc` imports, a fresh
//! instance per request from an `InstancePre`, epoch deadline).
//!
//! Written here rather than taken from the `wapc`/`wasmtime-provider` crates
//! because those pin their own wasmtime; this keeps one wasmtime in the tree
//! and lets the module share the engine, pooling allocator and
//! `InstancePre` with the component host.

use std::sync::Arc;

use aigov_sdk::cluster::{Asked, CALLBACK_FAILED, CAPABILITY_REFUSED, CLUSTER_WIDE, GRANT_REFUSED, NO_NAMESPACE, STATUS_DEBUG};
use aigov_sdk::{Cluster, LookupError};
use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use wasmtime::{Engine, InstancePre, Store, TypedFunc};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::run::engine::DEADLINE_TICKS;

/// Serves the `kubewarden`/`kubernetes` host calls of one instance.
pub type HostCluster = Arc<dyn Cluster + Send + Sync>;

/// Per-instance state.
pub struct WapcState {
    wasi: WasiP1Ctx,
    op: Vec<u8>,
    msg: Vec<u8>,
    response: Option<Vec<u8>>,
    error: Option<Vec<u8>>,
    host_response: Vec<u8>,
    host_error: Vec<u8>,
    cluster: HostCluster,
    limits: crate::run::engine::Limits,
    /// Lines the guest logged with `__console_log`.
    pub log: Vec<String>,
}

/// The fuel an instance starts with on an engine that counts it: more
/// than any guest burns before the epoch deadline stops it.
const FUEL_TANK: u64 = u64::MAX / 2;

/// A compiled waPC module, ready to instantiate.
#[derive(Clone)]
pub struct WapcModule {
    engine: Engine,
    pre: InstancePre<WapcState>,
    memory_limit: usize,
}

/// A live instance.
pub struct WapcInstance {
    store: Store<WapcState>,
    instance: wasmtime::Instance,
    guest_call: TypedFunc<(i32, i32), i32>,
    memory: wasmtime::Memory,
}

/// What a guest call can end in besides a response.
#[derive(Debug)]
pub enum CallError {
    /// The guest returned an error (`__guest_error`).
    Guest(String),
    /// The guest trapped, ran past its deadline, or broke the protocol.
    Trap(anyhow::Error),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Guest(m) => write!(f, "the policy returned an error: {m}"),
            CallError::Trap(e) => write!(f, "the policy trapped: {e:#}"),
        }
    }
}

impl std::error::Error for CallError {}

/// Kubewarden's `get_resource` request.
#[derive(Deserialize)]
struct GetResource {
    api_version: String,
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
}

/// Kubewarden's `list_resources_*` request.
#[derive(Deserialize)]
struct ListResources {
    api_version: String,
    kind: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    label_selector: Option<String>,
    #[serde(default)]
    field_selector: Option<String>,
}

/// Answers one host call. A failed lookup goes back to the guest in the
/// words Kubewarden's policy-evaluator uses ([`kubewarden_words`]), which
/// the SDK reads back by what it asked.
fn host_call(cluster: &dyn Cluster, binding: &str, namespace: &str, operation: &str, payload: &[u8]) -> Result<String, String> {
    if binding != "kubewarden" || namespace != "kubernetes" {
        return Err(format!("host capability `{binding}/{namespace}/{operation}` is not provided"));
    }
    let bad = |e: serde_json::Error| format!("malformed `{operation}` request: {e}");
    match operation {
        "get_resource" => {
            let r: GetResource = serde_json::from_slice(payload).map_err(bad)?;
            let asked = Asked { api_version: &r.api_version, kind: &r.kind, name: Some(&r.name), namespace: r.namespace.as_deref() };
            cluster.get_resource(&r.api_version, &r.kind, &r.name, r.namespace.as_deref()).map_err(|e| kubewarden_words(&e, &asked))
        }
        "list_resources_by_namespace" => {
            let r: ListResources = serde_json::from_slice(payload).map_err(bad)?;
            let asked = Asked { api_version: &r.api_version, kind: &r.kind, name: None, namespace: r.namespace.as_deref() };
            let Some(ns) = r.namespace.as_deref() else {
                return Err(format!("malformed `{operation}` request: `namespace` is required"));
            };
            cluster
                .list_resources_by_namespace(&r.api_version, &r.kind, ns, r.label_selector.as_deref(), r.field_selector.as_deref())
                .map_err(|e| kubewarden_words(&e, &asked))
        }
        "list_resources_all" => {
            let r: ListResources = serde_json::from_slice(payload).map_err(bad)?;
            let asked = Asked { api_version: &r.api_version, kind: &r.kind, name: None, namespace: None };
            cluster
                .list_resources_all(&r.api_version, &r.kind, r.label_selector.as_deref(), r.field_selector.as_deref())
                .map_err(|e| kubewarden_words(&e, &asked))
        }
        other => Err(format!("host call `kubernetes/{other}` is not provided")),
    }
}

/// A failed lookup as Kubewarden's policy-evaluator words it to a waPC
/// guest: a `get` that finds nothing, a kind the policy does not declare
/// and a lookup it cannot make, each in policy-evaluator's own words; the
/// API server's refusals as kube-client's `ApiError` (403 Forbidden, 404
/// NotFound, 400 BadRequest, with the `Status` and its cause); anything
/// else as the client's error. All but the undeclared kind come after
/// `Callback evaluation failure: `, as policy-evaluator sends them.
pub fn kubewarden_words(e: &LookupError, asked: &Asked<'_>) -> String {
    let api_error = |message: &str, reason: &str, code: u16| {
        format!(
            "{CALLBACK_FAILED}ApiError: {message}: {reason}{STATUS_DEBUG}status: Some(Failure), code: {code}, message: {message:?}, \
             metadata: None, reason: {reason:?}, details: None }})\n\nCaused by:\n    {message}: {reason}"
        )
    };
    match (e, asked.name) {
        (LookupError::NotFound(_), Some(name)) => {
            let (api_version, kind, namespace) = (asked.api_version, asked.kind, asked.namespace);
            format!("{CALLBACK_FAILED}Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'")
        }
        (LookupError::NotFound(m), None) => api_error(m, "NotFound", 404),
        (LookupError::Forbidden(m), _) if m.starts_with(GRANT_REFUSED) || m.starts_with(CAPABILITY_REFUSED) => m.clone(),
        (LookupError::Forbidden(m), _) => api_error(m, "Forbidden", 403),
        (LookupError::Invalid(m), _) if m.ends_with(NO_NAMESPACE) || m.ends_with(CLUSTER_WIDE) => format!("{CALLBACK_FAILED}{m}"),
        (LookupError::Invalid(m), _) => api_error(m, "BadRequest", 400),
        (LookupError::Unavailable(m), _) => format!("{CALLBACK_FAILED}{m}"),
    }
}

/// Guest memory access and the `wapc` host functions. Kept apart because
/// they speak `wasmtime::Result`, the rest of the crate `anyhow`.
mod host {
    use wasmtime::error::Context;
    use wasmtime::{Caller, Engine, Extern, Linker, format_err};

    use super::{WapcState, host_call};

    fn memory(caller: &mut Caller<'_, WapcState>) -> wasmtime::Result<wasmtime::Memory> {
        caller.get_export("memory").and_then(Extern::into_memory).ok_or_else(|| format_err!("the module exports no `memory`"))
    }

    fn read(caller: &mut Caller<'_, WapcState>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
        let mem = memory(caller)?;
        let mut buf = vec![0u8; usize::try_from(len)?];
        mem.read(&*caller, usize::try_from(ptr)?, &mut buf).context("guest pointer out of bounds")?;
        Ok(buf)
    }

    fn write(caller: &mut Caller<'_, WapcState>, ptr: i32, data: &[u8]) -> wasmtime::Result<()> {
        let mem = memory(caller)?;
        mem.write(caller, usize::try_from(ptr)?, data).context("guest pointer out of bounds")
    }

    fn read_str(caller: &mut Caller<'_, WapcState>, ptr: i32, len: i32) -> wasmtime::Result<String> {
        String::from_utf8(read(caller, ptr, len)?).context("guest string is not UTF-8")
    }

    fn len_i32(n: usize) -> wasmtime::Result<i32> {
        i32::try_from(n).context("payload larger than 2 GiB")
    }

    pub(super) fn link(engine: &Engine) -> wasmtime::Result<Linker<WapcState>> {
        let mut linker: Linker<WapcState> = Linker::new(engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut WapcState| &mut s.wasi)?;
        linker.func_wrap(
            "wapc",
            "__guest_request",
            |mut caller: Caller<'_, WapcState>, op_ptr: i32, ptr: i32| -> wasmtime::Result<()> {
                let op = std::mem::take(&mut caller.data_mut().op);
                let msg = std::mem::take(&mut caller.data_mut().msg);
                write(&mut caller, op_ptr, &op)?;
                write(&mut caller, ptr, &msg)
            },
        )?;
        linker.func_wrap("wapc", "__guest_response", |mut caller: Caller<'_, WapcState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let data = read(&mut caller, ptr, len)?;
            caller.data_mut().response = Some(data);
            Ok(())
        })?;
        linker.func_wrap("wapc", "__guest_error", |mut caller: Caller<'_, WapcState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let data = read(&mut caller, ptr, len)?;
            caller.data_mut().error = Some(data);
            Ok(())
        })?;
        linker.func_wrap(
            "wapc",
            "__host_call",
            |mut caller: Caller<'_, WapcState>,
             bd_ptr: i32,
             bd_len: i32,
             ns_ptr: i32,
             ns_len: i32,
             op_ptr: i32,
             op_len: i32,
             ptr: i32,
             len: i32|
             -> wasmtime::Result<i32> {
                let binding = read_str(&mut caller, bd_ptr, bd_len)?;
                let namespace = read_str(&mut caller, ns_ptr, ns_len)?;
                let operation = read_str(&mut caller, op_ptr, op_len)?;
                let payload = read(&mut caller, ptr, len)?;
                let cluster = caller.data().cluster.clone();
                let state = caller.data_mut();
                state.host_response.clear();
                state.host_error.clear();
                match host_call(&*cluster, &binding, &namespace, &operation, &payload) {
                    Ok(body) => {
                        state.host_response = body.into_bytes();
                        Ok(1)
                    }
                    Err(error) => {
                        state.host_error = error.into_bytes();
                        Ok(0)
                    }
                }
            },
        )?;
        linker.func_wrap("wapc", "__host_response_len", |caller: Caller<'_, WapcState>| -> wasmtime::Result<i32> {
            len_i32(caller.data().host_response.len())
        })?;
        linker.func_wrap("wapc", "__host_response", |mut caller: Caller<'_, WapcState>, ptr: i32| -> wasmtime::Result<()> {
            let data = std::mem::take(&mut caller.data_mut().host_response);
            write(&mut caller, ptr, &data)
        })?;
        linker.func_wrap("wapc", "__host_error_len", |caller: Caller<'_, WapcState>| -> wasmtime::Result<i32> {
            len_i32(caller.data().host_error.len())
        })?;
        linker.func_wrap("wapc", "__host_error", |mut caller: Caller<'_, WapcState>, ptr: i32| -> wasmtime::Result<()> {
            let data = std::mem::take(&mut caller.data_mut().host_error);
            write(&mut caller, ptr, &data)
        })?;
        linker.func_wrap("wapc", "__console_log", |mut caller: Caller<'_, WapcState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let line = String::from_utf8_lossy(&read(&mut caller, ptr, len)?).into_owned();
            caller.data_mut().log.push(line);
            Ok(())
        })?;
        Ok(linker)
    }
}

impl WapcModule {
    /// Compiles a waPC module and links it once.
    pub fn new(engine: &Engine, bytes: &[u8]) -> Result<WapcModule> {
        let module = crate::run::compiled::Cache::from_env().module(engine, bytes)?;
        for export in ["__guest_call", "wapc_init", "memory"] {
            if module.get_export(export).is_none() {
                bail!("not a waPC module: it does not export `{export}`");
            }
        }
        let pre = host::link(engine)?
            .instantiate_pre(&module)
            .map_err(anyhow::Error::from)
            .context("linking the waPC module (does it import something besides WASI preview 1 and waPC?)")?;
        Ok(WapcModule { engine: engine.clone(), pre, memory_limit: crate::run::engine::MEMORY_LIMIT })
    }

    /// The same module with another memory limit per instance.
    pub fn with_memory_limit(mut self, bytes: usize) -> WapcModule {
        self.memory_limit = bytes;
        self
    }

    /// A fresh instance, initialised (`_initialize`, then `wapc_init`), whose
    /// host calls are answered by `cluster`.
    pub fn instantiate(&self, cluster: HostCluster) -> Result<WapcInstance> {
        let state = WapcState {
            wasi: WasiCtxBuilder::new().build_p1(),
            op: Vec::new(),
            msg: Vec::new(),
            response: None,
            error: None,
            host_response: Vec::new(),
            host_error: Vec::new(),
            cluster,
            limits: crate::run::engine::limits(self.memory_limit),
            log: Vec::new(),
        };
        let mut store = Store::new(&self.engine, state);
        // A full tank on an engine that counts fuel
        // ([`crate::run::engine::counting_engine`]); any other engine
        // refuses fuel, and its instances count nothing.
        let _counting = store.set_fuel(FUEL_TANK).is_ok();
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(DEADLINE_TICKS);
        let instance = self.pre.instantiate(&mut store)?;
        for init in ["_initialize", "wapc_init"] {
            if let Ok(f) = instance.get_typed_func::<(), ()>(&mut store, init) {
                f.call(&mut store, ()).map_err(anyhow::Error::from).with_context(|| format!("the module trapped in `{init}`"))?;
            }
        }
        let guest_call = instance.get_typed_func::<(i32, i32), i32>(&mut store, "__guest_call")?;
        let memory = instance.get_memory(&mut store, "memory").context("the module exports no `memory`")?;
        Ok(WapcInstance { store, instance, guest_call, memory })
    }
}

impl WapcInstance {
    /// Calls a waPC operation.
    pub fn call(&mut self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, CallError> {
        let too_big = |_| CallError::Trap(anyhow!("payload larger than 2 GiB"));
        let op_len = i32::try_from(operation.len()).map_err(too_big)?;
        let msg_len = i32::try_from(payload.len()).map_err(too_big)?;
        {
            let state = self.store.data_mut();
            state.op = operation.as_bytes().to_vec();
            state.msg = payload.to_vec();
            state.response = None;
            state.error = None;
        }
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        let ok = self.guest_call.call(&mut self.store, (op_len, msg_len)).map_err(|e| CallError::Trap(e.into()))?;
        let state = self.store.data_mut();
        match (ok, state.response.take(), state.error.take()) {
            (1, Some(response), _) => Ok(response),
            (_, _, Some(error)) => Err(CallError::Guest(String::from_utf8_lossy(&error).into_owned())),
            (code, _, None) => Err(CallError::Trap(anyhow!("`__guest_call` returned {code} without a response or an error"))),
        }
    }

    /// The fuel the guest burnt since the instance was created
    /// (instantiation, `_initialize`, `wapc_init` and every call), on an
    /// engine that counts fuel; `None` on any other.
    pub fn fuel_used(&self) -> Option<u64> {
        self.store.get_fuel().ok().map(|left| FUEL_TANK - left)
    }

    /// Lines the guest logged.
    pub fn log(&self) -> &[String] {
        &self.store.data().log
    }

    /// The guest's linear memory as it is now.
    pub fn memory(&self) -> &[u8] {
        self.memory.data(&self.store)
    }

    /// The value of global `name`, when the module exports one.
    pub fn global(&mut self, name: &str) -> Option<wasmtime::Val> {
        let global = self.instance.get_global(&mut self.store, name)?;
        Some(global.get(&mut self.store))
    }

    /// How many times the guest grew its memory since it was instantiated.
    pub fn memory_growths(&self) -> u32 {
        self.store.data().limits.growths()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use aigov_sdk::LookupError;
    use aigov_sdk::cluster::Asked;

    use super::kubewarden_words;

    /// What the harness tells a module is what the SDK reads back: the
    /// same error, so a rule decides alike as a module and natively.
    #[test]
    fn lookup_errors_survive_kubewarden_words() {
        let get = Asked { api_version: "v1", kind: "Pod", name: Some("ghost-0"), namespace: Some("ml") };
        let list = Asked { api_version: "v1", kind: "Pod", name: None, namespace: Some("ml") };
        let all = Asked { api_version: "v1", kind: "Namespace", name: None, namespace: None };
        let errors = [
            LookupError::not_found("v1", "Pod", "ghost-0", Some("ml")),
            LookupError::Forbidden(
                "pods \"ghost-0\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot get resource \"pods\""
                    .into(),
            ),
            LookupError::Forbidden(
                "Policy has not been granted access to Kubernetes v1/Pod resources. The violation has been reported.".into(),
            ),
            LookupError::Invalid("unable to parse requirement: found '=', expected: identifier".into()),
            LookupError::Invalid("Resource v1/Pod is namespaced, but no namespace was provided".into()),
            LookupError::Invalid("resource v1/Namespace is cluster wide. Cannot search for it inside of a namespace".into()),
            LookupError::Unavailable(
                "Get \"https://10.96.0.1:443/api/v1/namespaces/ml\": dial tcp 10.96.0.1:443: i/o timeout\n(retrying)".into(),
            ),
        ];
        for asked in [get, list, all] {
            for e in &errors {
                let words = kubewarden_words(e, &asked);
                assert_eq!(LookupError::from_kubewarden(&words, &asked), *e, "{words}");
            }
        }
        assert_eq!(
            kubewarden_words(&errors[0], &get),
            "Callback evaluation failure: Cannot find v1/Pod named 'ghost-0' inside of namespace 'Some(\"ml\")'"
        );
        assert!(kubewarden_words(&errors[1], &get).starts_with("Callback evaluation failure: ApiError: pods \"ghost-0\" is forbidden: "));
        assert!(kubewarden_words(&errors[1], &get).contains(": Forbidden (Status { status: Some(Failure), code: 403, "));
        assert_eq!(
            kubewarden_words(&errors[2], &get),
            "Policy has not been granted access to Kubernetes v1/Pod resources. The violation has been reported."
        );
        let missing = LookupError::NotFound("pods \"x\" not found".into());
        assert_eq!(LookupError::from_kubewarden(&kubewarden_words(&missing, &list), &list), missing);
    }
}
