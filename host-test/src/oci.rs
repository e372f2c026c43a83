//! OCI distribution: push and pull modules (Kubewarden layout) and
//! components (CNCF Wasm layout).

use std::process::ExitCode;

use anyhow::{Result, bail};

/// `aigov push` and `aigov pull`.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Push a module or component to an OCI registry.
    Push {
        /// The artifact.
        artifact: std::path::PathBuf,
        /// Where to (`registry/repository:tag`).
        reference: String,
    },
    /// Pull an artifact from an OCI registry.
    Pull {
        /// What to pull.
        reference: String,
        /// Where to write it.
        #[arg(short, long)]
        output: std::path::PathBuf,
    },
}

/// Runs `aigov push` or `aigov pull`.
pub fn run(_command: &Command) -> Result<ExitCode> {
    bail!("push and pull are not built yet")
}
