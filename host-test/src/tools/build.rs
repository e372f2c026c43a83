//! The building steps `make artifacts` and `make playground` run: a rule's
//! waPC module annotated with its metadata (`aigov build annotate`), its core
//! module made a component (`aigov build componentize`), the bundle's metadata
//! (`aigov build bundle-metadata`), and the playground's data (`aigov build
//! playground-data`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::run::{artifact, engine, native};

/// `aigov build annotate`: writes `module` with `metadata` (and `usage`, the
/// README) embedded as Kubewarden reads it, to `output`.
pub fn annotate(module: &Path, metadata: &Path, usage: Option<&Path>, output: &Path) -> Result<ExitCode> {
    let engine = engine::new_engine()?;
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    let annotated = artifact::annotate(&engine, &bytes, metadata, usage)?;
    write_file(output, &annotated)?;
    Ok(ExitCode::SUCCESS)
}

/// `aigov build componentize`: writes the component of the core `module` to
/// `output`.
pub fn componentize(module: &Path, output: &Path) -> Result<ExitCode> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    write_file(output, &artifact::componentize(&bytes)?)?;
    Ok(ExitCode::SUCCESS)
}

/// `aigov build preinit`: writes `module` pre-initialised with the settings
/// in `settings` (a settings object, or one policy document whose
/// `spec.settings` to take) to `output` ([`crate::run::preinit`]).
pub fn preinit(module: &Path, settings: &Path, output: &Path, out: &mut dyn std::io::Write) -> Result<ExitCode> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    let value = match crate::run::settings::read_file(settings)? {
        crate::run::settings::Contents::Settings(v) => v,
        crate::run::settings::Contents::Policies(mut one) if one.len() == 1 => one.remove(0).settings,
        crate::run::settings::Contents::Policies(many) => anyhow::bail!(
            "{} holds {} policies ({}): a module is pre-initialised for one policy's settings; give a file with one",
            settings.display(),
            many.len(),
            many.iter().map(|p| p.what.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    let text = crate::run::preinit::as_sent(&value);
    let engine = engine::new_engine()?;
    let image = crate::run::preinit::preinit(&engine, &bytes, &text)
        .with_context(|| format!("pre-initialising {} with {}", module.display(), settings.display()))?;
    write_file(output, &image)?;
    writeln!(
        out,
        "wrote {} ({} KiB, was {} KiB): a fresh instance starts with these settings read; requests with other settings are read as before",
        output.display(),
        image.len().div_ceil(1024),
        bytes.len().div_ceil(1024)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `aigov build bundle-metadata`: writes the union of every rule's `metadata.yml`
/// under `policies` to `output`.
pub fn bundle_metadata(policies: &Path, output: &Path) -> Result<ExitCode> {
    let mut parts = Vec::new();
    for rule in native::names() {
        let file = policies.join(rule).join("metadata.yml");
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        parts.push(aigov_metadata::Metadata::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}", e.in_file(file.display().to_string())))?);
    }
    let bundle = aigov_metadata::Metadata::bundle(&parts, native::BUNDLE.metadata.version);
    write_file(output, serde_norway::to_string(&bundle)?.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `aigov build playground-data`: writes the playground's data (with the sample
/// workloads of `samples`) to `output`.
pub fn playground_data(samples: &Path, output: &Path) -> Result<ExitCode> {
    let data = crate::tools::playground::data(samples)?;
    write_file(output, serde_json::to_string(&data)?.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `path`, making its directory first.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
