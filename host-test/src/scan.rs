//! Offline audit of manifests against the bundle: every object in every file through every rule that governs it, as a verdict table.

use std::process::ExitCode;

use anyhow::{Result, bail};

/// Arguments of `aigov scan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files or directories of manifests (YAML or JSON, multi-document).
    pub paths: Vec<std::path::PathBuf>,
}

/// Runs `aigov scan`.
pub fn run(_args: &Args) -> Result<ExitCode> {
    bail!("`aigov scan` is not built yet")
}
