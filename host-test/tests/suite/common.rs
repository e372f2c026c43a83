//! What the tests share: where the repository and the artifacts are.

use std::path::PathBuf;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where `make artifacts` put the artifacts, or `AIGOV_ARTIFACTS`.
pub fn artifacts() -> PathBuf {
    std::env::var_os("AIGOV_ARTIFACTS").map_or_else(|| root().join("artifacts"), PathBuf::from)
}

/// `--settings` for trusted-sources, which has no safe default: its
/// example settings, as `make demo` passes them.
pub fn trusted_sources_settings() -> String {
    format!("trusted-sources={}", root().join("host-test/settings/trusted-sources.yaml").display())
}
