//! The plainest host of a component is the `wasmtime` CLI itself:
//! `wasmtime run --invoke 'validate("<request>", "<settings>")' policy.component.wasm`
//! prints the verdict, for every component that imports nothing. The
//! argument is a call in WAVE, the WebAssembly Value Encoding, whose string
//! quoting a person should not have to do by hand: [`call`] does it, with
//! wasmtime's own WAVE writer, and `aigov invoke` prints it for a manifest.

use anyhow::Result;
use wasmtime::component::Val;

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
