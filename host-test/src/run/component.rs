//! A component host for the `aigov:policy/admission-policy` world, with the
//! `cluster` import served by the same lookups the waPC host serves.

use anyhow::{Context, Result, bail};
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Engine, Store};

use crate::run::engine::DEADLINE_TICKS;
use crate::run::wapc::HostCluster;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "admission-policy",
});

pub use self::aigov::policy::cluster::LookupError as WitLookupError;

/// Per-instance state.
pub struct ComponentState {
    cluster: HostCluster,
    limits: crate::run::engine::Limits,
}

impl self::aigov::policy::cluster::Host for ComponentState {
    fn get_resource(
        &mut self,
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
    ) -> Result<String, WitLookupError> {
        self.cluster.get_resource(&api_version, &kind, &name, namespace.as_deref()).map_err(to_wit)
    }

    fn list_resources_by_namespace(
        &mut self,
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Result<String, WitLookupError> {
        self.cluster
            .list_resources_by_namespace(&api_version, &kind, &namespace, label_selector.as_deref(), field_selector.as_deref())
            .map_err(to_wit)
    }

    fn list_resources_all(
        &mut self,
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Result<String, WitLookupError> {
        self.cluster.list_resources_all(&api_version, &kind, label_selector.as_deref(), field_selector.as_deref()).map_err(to_wit)
    }
}

fn to_wit(e: aigov_sdk::LookupError) -> WitLookupError {
    use aigov_sdk::LookupError as L;
    match e {
        L::NotFound(m) => WitLookupError::NotFound(m),
        L::Forbidden(m) => WitLookupError::Forbidden(m),
        L::Invalid(m) => WitLookupError::Invalid(m),
        L::Unavailable(m) => WitLookupError::Unavailable(m),
    }
}

/// A compiled policy component, ready to instantiate.
#[derive(Clone)]
pub struct PolicyComponent {
    engine: Engine,
    pre: AdmissionPolicyPre<ComponentState>,
    memory_limit: usize,
}

/// A live component instance.
pub struct ComponentInstance {
    store: Store<ComponentState>,
    bindings: AdmissionPolicy,
}

impl PolicyComponent {
    /// Compiles a component and links it once.
    pub fn new(engine: &Engine, bytes: &[u8]) -> Result<PolicyComponent> {
        let component = crate::run::compiled::Cache::from_env().component(engine, bytes)?;
        let mut linker: Linker<ComponentState> = Linker::new(engine);
        AdmissionPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(anyhow::Error::from)
            .context("linking the component (it may import interfaces other than aigov:policy/cluster)")?;
        let pre = AdmissionPolicyPre::new(pre)
            .map_err(anyhow::Error::from)
            .context("the component does not export the aigov:policy/admission-policy world")?;
        Ok(PolicyComponent { engine: engine.clone(), pre, memory_limit: crate::run::engine::MEMORY_LIMIT })
    }

    /// The same component with another memory limit per instance.
    pub fn with_memory_limit(mut self, bytes: usize) -> PolicyComponent {
        self.memory_limit = bytes;
        self
    }

    /// A fresh instance whose lookups `cluster` answers.
    pub fn instantiate(&self, cluster: HostCluster) -> Result<ComponentInstance> {
        let mut store = Store::new(&self.engine, ComponentState { cluster, limits: crate::run::engine::limits(self.memory_limit) });
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(DEADLINE_TICKS);
        let bindings = self.pre.instantiate(&mut store)?;
        Ok(ComponentInstance { store, bindings })
    }
}

impl ComponentInstance {
    /// `validate`.
    pub fn validate(&mut self, request: &str, settings: &str) -> Result<Verdict> {
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        Ok(self.bindings.call_validate(&mut self.store, request, settings)?)
    }

    /// `validate-settings`.
    pub fn validate_settings(&mut self, settings: &str) -> Result<SettingsVerdict> {
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        Ok(self.bindings.call_validate_settings(&mut self.store, settings)?)
    }

    /// `metadata`.
    pub fn metadata(&mut self) -> Result<Metadata> {
        self.store.set_epoch_deadline(DEADLINE_TICKS);
        Ok(self.bindings.call_metadata(&mut self.store)?)
    }

    /// How many times the guest grew its memory since it was instantiated.
    pub fn memory_growths(&self) -> u32 {
        self.store.data().limits.growths()
    }
}

/// Converts the component's verdict to Kubewarden's response shape.
pub fn to_response(v: Verdict) -> Result<aigov_sdk::ValidationResponse> {
    let mutated_object = match v.mutated_object {
        Some(json) => Some(serde_json::from_str(&json).context("the component's mutated object is not JSON")?),
        None => None,
    };
    let mut audit_annotations = std::collections::BTreeMap::new();
    for (k, val) in v.audit_annotations {
        if audit_annotations.insert(k.clone(), val).is_some() {
            bail!("the component returned audit annotation `{k}` twice");
        }
    }
    Ok(aigov_sdk::ValidationResponse {
        accepted: v.accepted,
        message: v.message,
        code: v.code,
        mutated_object,
        warnings: v.warnings,
        audit_annotations,
    })
}
