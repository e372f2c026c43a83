//! The plainest host of a component is the `wasmtime` CLI itself:
//! `wasmtime run --invoke 'validate("<request>", "<settings>")' policy.component.wasm`
//! prints the verdict, for every component that imports nothing. The
//! argument is a call in WAVE, the WebAssembly Value Encoding, whose string
//! quoting a person should not have to do by hand: [`call`] does it, with
//! wasmtime's own WAVE writer, and `aigov invoke` prints it for a manifest.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use wasmtime::component::Val;

use crate::run::admission::{Submission, read_request};
use crate::run::settings::{self, Scope, SettingsArgs};
use crate::tools::eval::note;

/// Arguments of `aigov invoke`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// An AdmissionReview, an AdmissionRequest, or a plain object (YAML
    /// or JSON), as for `eval`.
    pub request: PathBuf,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub submission: Submission,
}

/// Runs `aigov invoke`: prints the `--invoke` argument of `validate` for
/// the request and settings.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    let (request, changed) = read_request(&args.request, &args.submission)?;
    if let Some(changed) = changed {
        note(&changed);
    }
    // The component decides what its defaults are: `{}` stands for them.
    let settings = settings::resolve(&args.settings.settings, Scope::Any)?.whole.map_or_else(|| "{}".to_string(), |g| g.json);
    writeln!(out, "{}", call("validate", &[&request.to_string(), &settings])?)?;
    Ok(ExitCode::SUCCESS)
}

/// `function("arg", ...)`, each argument a WAVE string.
pub fn call(function: &str, args: &[&str]) -> Result<String> {
    let args = args
        .iter()
        .map(|a| Val::String((*a).into()).to_wave().map_err(|e| anyhow::anyhow!("quoting an argument: {e}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(format!("{function}({})", args.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_as_wave_strings() {
        assert_eq!(call("metadata", &[]).unwrap(), "metadata()");
        let request = "{\"name\":\"a\\\\b\",\"note\":\"line\nbreak\"}";
        let expression = call("validate", &[request, "{}"]).unwrap();
        assert_eq!(expression, r#"validate("{\"name\":\"a\\\\b\",\"note\":\"line\nbreak\"}", "{}")"#);
        // And WAVE reads it back as the same string.
        let inner = expression.strip_prefix("validate(").unwrap().rsplit_once(", ").unwrap().0;
        let back = Val::from_wave(&wasmtime::component::Type::String, inner).unwrap();
        assert_eq!(back, Val::String(request.into()));
    }
}
