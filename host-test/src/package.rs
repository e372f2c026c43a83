//! Packaging: the OCI image layout, deployment manifests, ArtifactHub metadata and checksums under artifacts/.

use std::process::ExitCode;

use anyhow::{Result, bail};

/// Arguments of `aigov package`.
#[derive(clap::Args, Debug)]
pub struct Args {
    
}

/// Runs `aigov package`.
pub fn run(_args: &Args) -> Result<ExitCode> {
    bail!("`aigov package` is not built yet")
}
