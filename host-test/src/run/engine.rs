//! The one wasmtime engine both artifact kinds run on, configured the way
//! Kubewarden's policy-server runs policies: the pooling allocator with
//! `InstancePre`s (a fresh instance per request is cheap), epoch interruption
//! with a 2-second deadline, and a small wasm stack.

use std::time::Duration;

use anyhow::Result;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ProfilingStrategy};

/// How often the epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Epochs a single call may run before it is interrupted (2 s, as in
/// policy-server).
pub const DEADLINE_TICKS: u64 = 200;

/// Largest linear memory one instance may grow to.
pub const MAX_MEMORY: usize = 512 << 20;

/// Address space reserved for each linear memory: the whole 4 GiB a 32-bit
/// index can reach (wasmtime's default on 64-bit hosts, and so what
/// policy-server runs with). With that, and the guard region after it, every
/// load and store is in bounds by construction and Cranelift emits no bounds
/// check; with the reservation at [`MAX_MEMORY`], as before, each access
/// carried an explicit (Spectre-hardened) check: 28 % more instructions per
/// guest call (BENCHMARKS.md). It is address space, not memory: 256 slots
/// reserve about 1 TiB of the 128 TiB a 64-bit process has.
pub const MEMORY_RESERVATION: u64 = 4 << 30;

/// The memory one policy instance may use: what aigov recommends (the API
/// server accepts request bodies of up to 3 MiB; a rule holds the request,
/// its decoded model and the answer, a few times the request's size).
/// Kubewarden's policy-server sets no limit. Past it, allocation in the guest
/// fails and the request is refused with a 500, the instance dropped; the
/// host carries on.
pub const MEMORY_LIMIT: usize = 128 << 20;

/// The store limits of one instance: at most `memory` bytes of linear
/// memory.
pub fn limits(memory: usize) -> Limits {
    Limits { store: wasmtime::StoreLimitsBuilder::new().memory_size(memory).instances(16).trap_on_grow_failure(false).build(), growths: 0 }
}

/// An instance's resource limiter: wasmtime's [`wasmtime::StoreLimits`],
/// counting the times the guest grew its memory past the size it was
/// created with. A growth is a cost the guest can avoid (its heap fits in
/// the initial memory the Makefile's `WASM_MEMORY` sets): the pooling
/// allocator makes the new pages accessible with an `mprotect` during the
/// call, and takes them away with another when the slot is reused.
pub struct Limits {
    store: wasmtime::StoreLimits,
    growths: u32,
}

impl Limits {
    /// How many times the instance's memory grew after its creation.
    pub fn growths(&self) -> u32 {
        self.growths
    }
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.store.memory_growing(current, desired, maximum)?;
        // A memory's creation is reported as a growth from 0.
        if allowed && current > 0 && desired > current {
            self.growths += 1;
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.store.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.store.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.store.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.store.instances()
    }

    fn tables(&self) -> usize {
        self.store.tables()
    }

    fn memories(&self) -> usize {
        self.store.memories()
    }
}

/// Linear memories in the pool: instances alive at once, over every store
/// of the engine.
pub const POOL_MEMORIES: u32 = 256;

/// Lowers [`POOL_MEMORIES`], for running the harness under valgrind, whose
/// address space cannot hold 256 reservations of [`MEMORY_RESERVATION`]
/// (BENCHMARKS.md counts instructions that way): `AIGOV_POOL_MEMORIES=12`.
pub const POOL_MEMORIES_VAR: &str = "AIGOV_POOL_MEMORIES";

fn pool_memories(value: Option<&std::ffi::OsStr>) -> Result<u32> {
    let Some(value) = value else { return Ok(POOL_MEMORIES) };
    value.to_str().and_then(|v| v.trim().parse().ok()).filter(|n| (1..=POOL_MEMORIES).contains(n)).ok_or_else(|| {
        anyhow::anyhow!("{POOL_MEMORIES_VAR} is {value:?}: give a number of memories from 1 to {POOL_MEMORIES}, or unset it")
    })
}

/// Set to `1`, names the guests' compiled functions for profilers:
/// wasmtime writes `/tmp/perf-<pid>.map` (`perf report` reads it; with
/// valgrind, the addresses callgrind reports are looked up in it), so a
/// profile of guest code shows `decode_workload`, not bare addresses.
pub const PERFMAP_VAR: &str = "AIGOV_PERFMAP";

fn profiler(value: Option<&std::ffi::OsStr>) -> Result<ProfilingStrategy> {
    match value.map(|v| v.to_str().map(str::trim)) {
        None | Some(Some("" | "0")) => Ok(ProfilingStrategy::None),
        Some(Some("1")) => Ok(ProfilingStrategy::PerfMap),
        Some(_) => Err(anyhow::anyhow!(
            "{PERFMAP_VAR} is {value:?}: set it to 1 to write a perf map of the guests' code, or unset it",
            value = value.unwrap_or_default()
        )),
    }
}

/// Builds the engine and starts its epoch ticker (a thread that ends when the
/// engine is dropped).
pub fn new_engine() -> Result<Engine> {
    build(false)
}

/// The engine, counting the guests' work in fuel: wasmtime charges about
/// one unit per WebAssembly operator a guest executes, the same on every
/// machine and every run (given the same wasm and wasmtime), which makes
/// it a measure of work that machine noise does not move. Slower than
/// [`new_engine`]: for `aigov sizes`' record of guest work, not for
/// serving.
pub fn counting_engine() -> Result<Engine> {
    build(true)
}

fn build(fuel: bool) -> Result<Engine> {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_memories(pool_memories(std::env::var_os(POOL_MEMORIES_VAR).as_deref())?)
        .total_tables(POOL_MEMORIES)
        .total_core_instances(2 * POOL_MEMORIES)
        .total_component_instances(POOL_MEMORIES)
        .max_memory_size(MAX_MEMORY)
        .linear_memory_keep_resident(4 << 20)
        .table_keep_resident(64 << 10)
        // Reset only the pages an instance dirtied when its slot is reused
        // (Linux 6.7's PAGEMAP_SCAN; elsewhere the memset of everything kept
        // resident, as before): it makes instantiation cheaper
        // (BENCHMARKS.md, "Fresh and warm instances").
        .pagemap_scan(wasmtime::Enabled::Auto);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(fuel)
        .max_wasm_stack(1 << 20)
        .memory_reservation(MEMORY_RESERVATION)
        .profiler(profiler(std::env::var_os(PERFMAP_VAR).as_deref())?)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let engine = Engine::new(&config)?;
    let weak = engine.weak();
    std::thread::Builder::new().name("aigov-epoch".into()).spawn(move || {
        while let Some(engine) = weak.upgrade() {
            engine.increment_epoch();
            drop(engine);
            std::thread::sleep(EPOCH_TICK);
        }
    })?;
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn the_pool_can_be_made_smaller_for_valgrind_but_not_larger() {
        assert_eq!(pool_memories(None).unwrap(), POOL_MEMORIES);
        assert_eq!(pool_memories(Some(OsStr::new("12"))).unwrap(), 12);
        assert_eq!(pool_memories(Some(OsStr::new(" 256 "))).unwrap(), 256);
        for bad in ["0", "257", "-1", "many", ""] {
            let e = pool_memories(Some(OsStr::new(bad))).unwrap_err().to_string();
            assert!(e.starts_with("AIGOV_POOL_MEMORIES is") && e.contains("from 1 to 256"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_perf_map_is_written_only_when_asked_for() {
        assert!(matches!(profiler(None).unwrap(), ProfilingStrategy::None));
        assert!(matches!(profiler(Some(OsStr::new("0"))).unwrap(), ProfilingStrategy::None));
        assert!(matches!(profiler(Some(OsStr::new(" 1"))).unwrap(), ProfilingStrategy::PerfMap));
        let e = profiler(Some(OsStr::new("yes"))).unwrap_err().to_string();
        assert!(e.starts_with("AIGOV_PERFMAP is \"yes\"") && e.contains("set it to 1"), "{e}");
    }
}
