//! A waPC module pre-initialised with a team's settings: `aigov build
//! preinit`.
//!
//! policy-server runs every request in a fresh instance, so every request
//! pays for reading the settings again (about 120 k of fuel for the bundle
//! with every rule on, `aigov build sizes --split`). A warm instance reads
//! them once: the SDK keeps each rule's parsed settings with the exact text
//! they were read from, and reads again only when a request brings other
//! text. This takes a warm instance's memory as the module's initial image
//! (wasmtime's Wizer: instrument, run, snapshot), so every fresh instance
//! starts warm for the settings it was built with:
//!
//! - the module is instantiated as policy-server does (`_initialize`,
//!   `wapc_init`) and asked to validate one request no rule governs with
//!   the settings, exactly as policy-server will send them (the JSON of
//!   `spec.settings` with its keys in order, no spaces); every enabled rule
//!   reads its settings on any request, so its cache holds them all;
//! - its memory and globals are written back as data segments and initial
//!   values, `_initialize` is dropped (it has run), every other export and
//!   every custom section (the Kubewarden metadata) is kept.
//!
//! The image is shared by every instance, so whatever a guest seeded at
//! start-up is the same in all of them; the guests hold no hash maps (only
//! wapc-guest's table of its three operations), so no hash seed a request
//! could aim at is frozen into it.
//!
//! Nothing changes what a request is judged with: `spec.settings` stays
//! what Kubewarden shows and sends, a request whose settings text differs
//! from the baked one is read as in any module, and the answer is the same
//! (`tests/suite/preinit.rs` holds every case to that).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};

use anyhow::{Context, Result, anyhow, bail};
use wasmtime_wizer::{InstanceState, SnapshotVal, Wizer};

use crate::run::artifact::payload;
use crate::run::cluster::{FixtureCluster, Scoped};
use crate::run::wapc::{HostCluster, WapcInstance, WapcModule};

/// The request the module is warmed with: a ConfigMap deleted, which no
/// rule governs, so nothing but the settings is read and no lookup made.
pub const WARM_UP: &str = r#"{"uid":"aigov-preinit","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"requestKind":{"group":"","version":"v1","kind":"ConfigMap"},"requestResource":{"group":"","version":"v1","resource":"configmaps"},"name":"aigov-preinit","namespace":"default","operation":"DELETE","userInfo":{"username":"aigov-preinit"},"object":null,"oldObject":null,"dryRun":true,"options":{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions"}}"#;

/// The settings text policy-server sends for `settings` (`spec.settings`):
/// serde_json's, keys in order and no spaces, which is what the module's
/// cache is keyed by.
pub fn as_sent(settings: &serde_json::Value) -> String {
    settings.to_string()
}

/// `module` (a waPC module) pre-initialised with `settings` (as sent,
/// [`as_sent`]). Refuses settings the module refuses.
pub fn preinit(engine: &wasmtime::Engine, module: &[u8], settings: &str) -> Result<Vec<u8>> {
    let wizer = Wizer::new();
    let (cx, instrumented) = wizer.instrument(module).map_err(|e| anyhow!("{e:#}")).context("instrumenting the module")?;
    let loaded = WapcModule::new(engine, &instrumented).context("loading the instrumented module")?;
    // No lookup is allowed: the warm-up request needs none.
    let offline: HostCluster = Arc::new(Scoped::new(Arc::new(FixtureCluster::from_objects(Vec::new())?), Default::default()));
    let mut instance = loaded.instantiate(offline)?;
    let checked = instance.call("validate_settings", settings.as_bytes()).map_err(|e| anyhow!("{e}"))?;
    let checked: serde_json::Value = serde_json::from_slice(&checked).context("the module's `validate_settings` answer")?;
    if checked.get("valid") != Some(&serde_json::Value::Bool(true)) {
        let why = checked.get("message").and_then(serde_json::Value::as_str).unwrap_or("no reason given");
        bail!("the module refuses these settings: {why}");
    }
    let answer = instance.call("validate", payload(WARM_UP, settings).as_bytes()).map_err(|e| anyhow!("{e}"))?;
    let answer: serde_json::Value = serde_json::from_slice(&answer).context("the module's answer to the warm-up request")?;
    if answer.get("accepted") != Some(&serde_json::Value::Bool(true)) {
        bail!("the module did not admit the warm-up request: {answer}");
    }
    let mut state = State { instance: &mut instance, unreadable: None };
    let image = ready(wizer.snapshot(&cx, &mut state)).map_err(|e| anyhow!("{e:#}")).context("writing the module's memory back")?;
    match state.unreadable {
        Some(global) => bail!("the instance's global `{global}` could not be read back"),
        None => Ok(image),
    }
}

/// A live instance, as Wizer reads it.
struct State<'a> {
    instance: &'a mut WapcInstance,
    /// A global Wizer asked for that is not one (Wizer asks only for the
    /// globals it exported, so never), which fails the snapshot.
    unreadable: Option<String>,
}

impl InstanceState for State<'_> {
    fn global_get(&mut self, name: &str, _: wasmparser::ValType) -> impl Future<Output = SnapshotVal> + Send {
        let value = match self.instance.global(name) {
            Some(wasmtime::Val::I32(v)) => SnapshotVal::I32(v),
            Some(wasmtime::Val::I64(v)) => SnapshotVal::I64(v),
            Some(wasmtime::Val::F32(v)) => SnapshotVal::F32(v),
            Some(wasmtime::Val::F64(v)) => SnapshotVal::F64(v),
            Some(wasmtime::Val::V128(v)) => SnapshotVal::V128(v.as_u128()),
            _ => {
                self.unreadable = Some(name.to_string());
                SnapshotVal::I32(0)
            }
        };
        std::future::ready(value)
    }

    fn memory_contents(&mut self, _name: &str, contents: impl FnOnce(&[u8]) + Send) -> impl Future<Output = ()> + Send {
        contents(self.instance.memory());
        std::future::ready(())
    }
}

/// The value of a future that never waits (every one [`State`] hands Wizer
/// is ready at once).
fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    let mut cx = TaskContext::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
