//! Per-request timings: the native parse floor, the native rule, and the module and component with a warm instance and a fresh one per request.

use std::process::ExitCode;

use anyhow::{Result, bail};

/// Arguments of `aigov bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    
}

/// Runs `aigov bench`.
pub fn run(_args: &Args) -> Result<ExitCode> {
    bail!("`aigov bench` is not built yet")
}
