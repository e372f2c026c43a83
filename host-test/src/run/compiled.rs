//! Compiled artifacts kept on disk, so that a module or component is
//! compiled by Cranelift once and not by every `aigov` command that loads
//! it: compiling the whole catalogue (every rule in both forms and the
//! bundle) costs tens of seconds of CPU, deserializing it a fraction of one.
//! (Kubewarden's policy-server compiles each policy once at start-up, and
//! kwctl keeps its own cache; this is the harness's and the CLI's.)
//!
//! An entry is named by the SHA-256 of the artifact's bytes and by wasmtime's
//! compatibility hash of the engine (its version and every setting that
//! changes the code), so a rebuilt artifact, another wasmtime or another
//! engine configuration never meets a stale entry. Each file holds the
//! SHA-256 of the serialized code before the code itself: an entry cut short
//! or damaged is recompiled and rewritten, never handed to wasmtime.
//!
//! Where: `$AIGOV_CACHE_DIR` if set (`off` or empty turns the cache off),
//! else `$XDG_CACHE_HOME/aigov/compiled`, else `~/.cache/aigov/compiled`.
//! The directory is trusted as the user's own files are (anyone who can
//! write it can already run code as that user). Writing is best effort: a
//! read-only or full disk only costs the compile. Past [`MAX_BYTES`], the
//! entries used least recently are removed.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

/// Total size the cache is kept under (about ten builds of the catalogue).
pub const MAX_BYTES: u64 = 1 << 30;

const SUFFIX: &str = ".cwasm";

/// Where compiled code is read from and written to; `None` compiles every time.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The cache the environment names (see the module's documentation).
    pub fn from_env() -> Cache {
        Cache::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Cache {
        let set = |name| var(name).filter(|v| !v.is_empty());
        let dir = match var("AIGOV_CACHE_DIR") {
            Some(v) if v.is_empty() || v == "off" => None,
            Some(v) => Some(PathBuf::from(v)),
            None => set("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| set("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|d| d.join("aigov").join("compiled")),
        };
        Cache { dir }
    }

    /// A cache in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: Some(dir.into()) }
    }

    /// No cache: every load compiles.
    pub fn off() -> Cache {
        Cache { dir: None }
    }

    /// Whether loading `bytes` would find its compiled code here, as far as
    /// an entry's name tells (a damaged entry is still compiled again): a
    /// command about to compile many artifacts can say so first.
    pub fn holds(&self, engine: &Engine, bytes: &[u8]) -> bool {
        self.dir.as_ref().is_some_and(|dir| dir.join(entry_name(engine, bytes)).is_file())
    }

    /// The core module of `bytes`, compiled or from the cache.
    #[allow(unsafe_code)]
    pub fn module(&self, engine: &Engine, bytes: &[u8]) -> Result<Module> {
        self.load(
            engine,
            bytes,
            || Module::new(engine, bytes).map_err(anyhow::Error::from).context("compiling the waPC module"),
            |m| m.serialize().map_err(anyhow::Error::from),
            // SAFETY: `code` was written by `Module::serialize` of an engine
            // with the same compatibility hash (the entry's name) and its
            // checksum has just been verified; wasmtime checks the header
            // and the engine's settings again.
            |code| unsafe { Module::deserialize(engine, code) }.map_err(anyhow::Error::from),
        )
    }

    /// The component of `bytes`, compiled or from the cache.
    #[allow(unsafe_code)]
    pub fn component(&self, engine: &Engine, bytes: &[u8]) -> Result<Component> {
        self.load(
            engine,
            bytes,
            || Component::new(engine, bytes).map_err(anyhow::Error::from).context("compiling the component"),
            |c| c.serialize().map_err(anyhow::Error::from),
            // SAFETY: as for `module`: written by `Component::serialize`,
            // checksum verified, engine compatibility checked by wasmtime.
            |code| unsafe { Component::deserialize(engine, code) }.map_err(anyhow::Error::from),
        )
    }

    fn load<T>(
        &self,
        engine: &Engine,
        bytes: &[u8],
        compile: impl FnOnce() -> Result<T>,
        serialize: impl FnOnce(&T) -> Result<Vec<u8>>,
        deserialize: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let Some(dir) = &self.dir else { return compile() };
        let path = dir.join(entry_name(engine, bytes));
        if let Some(Ok(compiled)) = read_entry(&path).map(|code| deserialize(&code)) {
            touch(&path);
            return Ok(compiled);
        }
        let compiled = compile()?;
        if let Ok(code) = serialize(&compiled)
            && write_entry(dir, &path, &code).is_ok()
        {
            prune(dir, MAX_BYTES);
        }
        Ok(compiled)
    }
}

/// `<sha256 of the artifact>-<engine compatibility hash>.cwasm`.
fn entry_name(engine: &Engine, bytes: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{}-{:016x}{SUFFIX}", hex(&Sha256::digest(bytes)), hasher.finish())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The code in an entry, if its checksum holds.
fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::read(path).ok()?;
    let (sum, code) = file.split_at_checked(32)?;
    (Sha256::digest(code).as_slice() == sum).then(|| code.to_vec())
}

/// Writes an entry whole or not at all (a temporary file renamed over it), so
/// that processes sharing the cache never read half an entry.
fn write_entry(dir: &Path, path: &Path, code: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), unique()));
    let mut file = Vec::with_capacity(32 + code.len());
    file.extend_from_slice(&Sha256::digest(code));
    file.extend_from_slice(code);
    let written = std::fs::write(&tmp, &file).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Marks an entry as used now (its modification time orders eviction).
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Removes the least recently used entries until the cache holds at most
/// `max` bytes.
fn prune(dir: &Path, max: u64) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = read
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(SUFFIX))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{CodeSection, ExportKind, ExportSection, Function, FunctionSection, TypeSection};

    /// A module exporting `answer`, a function returning `value`.
    fn module(value: i32) -> Vec<u8> {
        let mut m = wasm_encoder::Module::new();
        let mut types = TypeSection::new();
        types.ty().function([], [wasm_encoder::ValType::I32]);
        m.section(&types);
        let mut funcs = FunctionSection::new();
        funcs.function(0);
        m.section(&funcs);
        let mut exports = ExportSection::new();
        exports.export("answer", ExportKind::Func, 0);
        m.section(&exports);
        let mut code = CodeSection::new();
        let mut f = Function::new([]);
        f.instructions().i32_const(value).end();
        code.function(&f);
        m.section(&code);
        m.finish()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("aigov-compiled-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir).map_or_else(|_| Vec::new(), |r| r.flatten().map(|e| e.path()).collect());
        found.sort();
        found
    }

    fn answer(engine: &Engine, module: &Module) -> i32 {
        let mut store = wasmtime::Store::new(engine, ());
        store.set_epoch_deadline(1);
        let instance = wasmtime::Instance::new(&mut store, module, &[]).unwrap();
        instance.get_typed_func::<(), i32>(&mut store, "answer").unwrap().call(&mut store, ()).unwrap()
    }

    #[test]
    fn the_second_load_reads_the_entry_the_first_wrote() {
        let engine = Engine::default();
        let dir = scratch("hit");
        let cache = Cache::at(&dir);
        let first = cache.module(&engine, &module(42)).unwrap();
        let written = entries(&dir);
        assert_eq!(written.len(), 1, "{written:?}");
        // Put another module's code in the entry (with a valid checksum): a
        // load that answers 7 can only have come from the file.
        let other = Module::new(&engine, module(7)).unwrap();
        write_entry(&dir, &written[0], &other.serialize().unwrap()).unwrap();
        let second = cache.module(&engine, &module(42)).unwrap();
        assert_eq!((answer(&engine, &first), answer(&engine, &second)), (42, 7));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_entry_is_compiled_again_and_rewritten() {
        let engine = Engine::default();
        let dir = scratch("damaged");
        let cache = Cache::at(&dir);
        cache.module(&engine, &module(42)).unwrap();
        let path = entries(&dir).remove(0);
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        for damaged in [whole[..whole.len() / 2].to_vec(), flipped, Vec::new()] {
            std::fs::write(&path, &damaged).unwrap();
            assert!(read_entry(&path).is_none(), "a damaged entry passed its checksum");
            let module = cache.module(&engine, &module(42)).unwrap();
            assert_eq!(answer(&engine, &module), 42);
            assert_eq!(std::fs::read(&path).unwrap(), whole, "the entry was not rewritten whole");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn entries_differ_by_artifact_and_by_engine_settings() {
        let dir = scratch("keys");
        let cache = Cache::at(&dir);
        let plain = Engine::default();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let epochs = Engine::new(&config).unwrap();
        cache.module(&plain, &module(42)).unwrap();
        cache.module(&plain, &module(43)).unwrap();
        cache.module(&epochs, &module(42)).unwrap();
        assert_eq!(entries(&dir).len(), 3);
        assert_eq!(answer(&epochs, &cache.module(&epochs, &module(42)).unwrap()), 42);
        assert_eq!(answer(&plain, &cache.module(&plain, &module(43)).unwrap()), 43);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_component_round_trips_through_the_cache() {
        let engine = Engine::default();
        let dir = scratch("component");
        let cache = Cache::at(&dir);
        let bytes = wasm_encoder::Component::new().finish();
        cache.component(&engine, &bytes).unwrap();
        let written = entries(&dir);
        assert_eq!(written.len(), 1);
        assert!(read_entry(&written[0]).is_some());
        cache.component(&engine, &bytes).unwrap();
        assert_eq!(entries(&dir), written);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_module_that_does_not_compile_is_an_error_and_leaves_no_entry() {
        let dir = scratch("invalid");
        let err = Cache::at(&dir).module(&Engine::default(), b"\0asm\x01\0\0\0\x01").unwrap_err();
        assert!(format!("{err:#}").starts_with("compiling the waPC module"), "{err:#}");
        assert!(entries(&dir).is_empty());
    }

    #[test]
    fn pruning_removes_the_least_recently_used_first() {
        let dir = scratch("prune");
        std::fs::create_dir_all(&dir).unwrap();
        let now = std::time::SystemTime::now();
        for (name, age) in [("old", 300), ("middle", 200), ("new", 100)] {
            let path = dir.join(format!("{name}{SUFFIX}"));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            file.set_modified(now - std::time::Duration::from_secs(age)).unwrap();
        }
        std::fs::write(dir.join("unrelated.txt"), [0u8; 1000]).unwrap();
        prune(&dir, 250);
        let left: Vec<String> = entries(&dir).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(left, [format!("middle{SUFFIX}"), format!("new{SUFFIX}"), "unrelated.txt".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_environment_names_the_directory() {
        let cache = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            Cache::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())).dir
        };
        let home = [("HOME", "/home/ds"), ("XDG_CACHE_HOME", "/xdg")];
        assert_eq!(cache(&home[..1]), Some(PathBuf::from("/home/ds/.cache/aigov/compiled")));
        assert_eq!(cache(&home), Some(PathBuf::from("/xdg/aigov/compiled")));
        assert_eq!(cache(&[("AIGOV_CACHE_DIR", "/ci/cache"), home[0], home[1]]), Some(PathBuf::from("/ci/cache")));
        assert_eq!(cache(&[("AIGOV_CACHE_DIR", "off"), home[0]]), None);
        assert_eq!(cache(&[("AIGOV_CACHE_DIR", ""), home[0]]), None);
        assert_eq!(cache(&[("XDG_CACHE_HOME", ""), home[0]]), Some(PathBuf::from("/home/ds/.cache/aigov/compiled")));
        assert_eq!(cache(&[]), None);
    }
}
