//! `aigov settings check`: every refusal in every file at once, each at
//! the line of the setting or field refused (or of its policy, when that
//! line cannot be told), as an editor jumps to (`FILE:LINE: …`), in the
//! file's order: a policy's own fields refused ([`settings::Refused`]: a
//! `spec` field its kind does not have, a `spec.mode` Kubewarden does not
//! take), and its rule's refusals of its settings (a Kubewarden mode
//! written as the rule's `mode` pointed to `spec.mode`:
//! [`settings::explain_refusal`]).
//!
//! A rule's settings check stops at the first setting it refuses; to name
//! every one, the check is run again without each refused setting until
//! the rule accepts what is left (or names one it was already told of).

use std::io::Write;
use std::process::ExitCode;

use aigov_sdk::NativePolicy;
use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run::lines::find;
use crate::run::native::{self, Names};
use crate::run::settings::{self, Contents, Each, SettingsArg};

/// Checks every policy's (or settings file's) settings with its rule: one
/// line each on `out` for what is valid, every refusal on standard error,
/// exit status 2 when anything is refused or a file cannot be read.
pub fn check(files: &[SettingsArg], out: &mut dyn Write) -> Result<ExitCode> {
    let mut refused = 0;
    for arg in files {
        if let Err(e) = check_file(arg, out, &mut refused) {
            refused += 1;
            let _ = writeln!(std::io::stderr().lock(), "aigov: {e:#}");
        }
    }
    Ok(if refused == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// One policy to check: its rule, what it is (for messages), its settings,
/// the lines of the file it spans (1-based, end excluded) with the path of
/// keys from there to its settings, and where its Kubewarden mode is
/// written (`spec.mode`, or `policyMode` in a `policies.yml`).
struct Checked {
    rule: &'static NativePolicy,
    what: String,
    settings: Value,
    lines: Option<(usize, usize)>,
    to_settings: Vec<String>,
    mode_field: &'static str,
}

fn check_file(arg: &SettingsArg, out: &mut dyn Write, refused: &mut usize) -> Result<()> {
    let file = arg.file.display().to_string();
    let mut err = std::io::stderr().lock();
    if arg.file.is_dir() {
        // A deployment directory: its policies, each from its own file.
        let Contents::Policies(policies) = settings::read_file(&arg.file)? else { bail!("{file}: not a deployment") };
        let checked = policies.into_iter().map(|p| Checked {
            rule: p.rule,
            what: p.what,
            settings: p.settings,
            lines: None,
            to_settings: Vec::new(),
            mode_field: "spec.mode",
        });
        for c in checked.filter(|c| arg.rule.as_deref().is_none_or(|r| r == c.rule.metadata.name)) {
            let mut said = Vec::new();
            report(&file, "", &c, out, &mut said)?;
            *refused += said.len();
            for (_, line) in said {
                let _ = writeln!(err, "aigov: {line}");
            }
        }
        return Ok(());
    }
    // Read once: standard input or a pipe cannot be read twice.
    let text = std::fs::read_to_string(&arg.file).with_context(|| format!("reading {file}"))?;
    let lines: Vec<&str> = text.lines().collect();
    // Every refusal of the file, with its line, told in the file's order.
    let mut said: Vec<(Option<usize>, String)> = Vec::new();
    let checked: Vec<Checked> = match (settings::read_text(&arg.file, &text)?, &arg.rule) {
        (Each::Policies(each), wanted) => {
            let mut checked = Vec::new();
            let mut unread = 0;
            for located in each {
                for r in &located.refused {
                    said.push((r.line, format!("{}: {}", at_line(&file, r.line), r.message)));
                }
                let start = located.span.map(|(start, _)| start);
                match located.policy {
                    Err(ref e) => {
                        // Its own words name the file; the line goes first.
                        let message = format!("{e:#}");
                        let message = message.strip_prefix(&format!("{file}: ")).unwrap_or(&message);
                        said.push((start, format!("{}: {message}", at_line(&file, start))));
                        unread += 1;
                    }
                    Ok(ref p) if wanted.as_deref().is_none_or(|r| r == p.rule.metadata.name) => checked.push(Checked {
                        rule: p.rule,
                        what: p.what.clone(),
                        settings: p.settings.clone(),
                        lines: located.span,
                        to_settings: located.to_settings(),
                        mode_field: located.mode_field(),
                    }),
                    Ok(_) => {}
                }
            }
            if let Some(rule) = wanted
                && checked.is_empty()
                && unread == 0
            {
                bail!("{file} holds no policy of `{rule}`");
            }
            checked
        }
        (Each::Settings(v), Some(rule)) => vec![Checked {
            rule: native::lookup(rule, Names::RulesAndBundle)?,
            what: String::new(),
            settings: v,
            lines: Some((1, lines.len() + 1)),
            to_settings: Vec::new(),
            mode_field: "spec.mode",
        }],
        (Each::Settings(_), None) => bail!(
            "{file} holds no ClusterAdmissionPolicy or AdmissionPolicy: check a policy file, or name the rule these settings are for \
             (`aigov settings check RULE={file}`)"
        ),
    };
    for c in &checked {
        report(&file, &text, c, out, &mut said)?;
    }
    // In the file's order (a refusal whose line cannot be told first).
    said.sort_by_key(|(line, _)| *line);
    *refused += said.len();
    for (_, line) in said {
        let _ = writeln!(err, "aigov: {line}");
    }
    Ok(())
}

/// Checks one policy's settings and says so: valid on `out`, each refusal
/// into `said` with its line.
fn report(file: &str, text: &str, c: &Checked, out: &mut dyn Write, said: &mut Vec<(Option<usize>, String)>) -> Result<()> {
    let name = c.rule.metadata.name;
    let what = if c.what.is_empty() { String::new() } else { format!("{}: ", c.what) };
    let all = refusals(c.rule, &c.settings);
    if all.is_empty() {
        writeln!(out, "{file}: {what}the settings of `{name}` are valid")?;
        return Ok(());
    }
    let lines: Vec<&str> = text.lines().collect();
    for message in all {
        let line = c.lines.map(|span| {
            let mut path = c.to_settings.clone();
            path.extend(setting_path(&message));
            find(&lines, span, &path)
        });
        let message = settings::explain_refusal(&message, c.mode_field);
        said.push((line, format!("{}: {what}`{name}` refuses these settings: {message}", at_line(file, line))));
    }
    Ok(())
}

fn at_line(file: &str, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_string(),
    }
}

/// Every refusal of `settings` by `rule`: the rule's first, then, each
/// refused setting taken out, the next, until it accepts what is left or
/// refuses a setting already taken out (one it needs: said once).
pub fn refusals(rule: &NativePolicy, settings: &Value) -> Vec<String> {
    let bundle = native::is_bundle(rule);
    let mut value = settings.clone();
    let mut out = Vec::new();
    let mut removed: Vec<Vec<String>> = Vec::new();
    for _ in 0..64 {
        let answer = (rule.validate_settings)(value.to_string().as_bytes());
        if answer.valid {
            break;
        }
        let message = answer.message.unwrap_or_default();
        let path = setting_path(&message);
        // A rule's top-level setting; in the bundle, a rule's.
        let target: Vec<String> =
            path.iter().take(if bundle && path.first().is_some_and(|p| p == "rules") { 3 } else { 1 }).cloned().collect();
        if removed.contains(&target) {
            break;
        }
        out.push(message);
        if target.is_empty() || !remove(&mut value, &target) {
            break;
        }
        removed.push(target);
    }
    out
}

/// The keys a refusal names: `rules.<rule>: ` (the bundle's), then
/// `setting `a.b[2]``: `["rules", "<rule>", "a", "b"]`.
fn setting_path(message: &str) -> Vec<String> {
    let mut path = Vec::new();
    if let Some(rest) = message.strip_prefix("rules.")
        && let Some((rule, _)) = rest.split_once(": ")
    {
        path.push("rules".to_string());
        path.push(rule.to_string());
    }
    if let Some(start) = message.find("setting `") {
        let rest = &message[start + "setting `".len()..];
        if let Some((setting, _)) = rest.split_once('`') {
            path.extend(setting.split('.').map(|s| s.split('[').next().unwrap_or_default().to_string()).filter(|s| !s.is_empty()));
        }
    }
    path
}

/// Takes the value at `path` out of `value`; whether there was one.
fn remove(value: &mut Value, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut at = value;
    for key in parents {
        let Some(next) = at.get_mut(key) else { return false };
        at = next;
    }
    at.as_object_mut().is_some_and(|map| map.remove(last).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_found_and_located() {
        let rule = native::rule("exec-guard").unwrap();
        let all = refusals(rule, &serde_json::json!({"allowedUser": ["x"], "guardPortForward": "maybe", "mode": "enforce"}));
        assert_eq!(all.len(), 2, "{all:?}");
        assert!(all[0].contains("`allowedUser`") && all[1].contains("`guardPortForward`"), "{all:?}");
        let bundle = refusals(
            &native::BUNDLE,
            &serde_json::json!({"rules": {"exec-guard": {"guardPortForward": "maybe"}, "gpu-quota": {"nope": 1}}}),
        );
        assert_eq!(bundle.len(), 2, "{bundle:?}");
        assert_eq!(setting_path("rules.exec-guard: setting `guardPortForward`: x"), ["rules", "exec-guard", "guardPortForward"]);
        assert_eq!(setting_path("setting `migWeights.a`: x"), ["migWeights", "a"]);
    }
}
