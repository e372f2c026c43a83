//! `aigov settings check`: every refusal in every file at once, each at
//! the line of the setting refused (or of its policy, when the setting's
//! line cannot be told), as an editor jumps to (`FILE:LINE: …`).
//!
//! A rule's settings check stops at the first setting it refuses; to name
//! every one, the check is run again without each refused setting until
//! the rule accepts what is left (or names one it was already told of).

use std::io::Write;
use std::process::ExitCode;

use aigov_sdk::NativePolicy;
use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run::native::{self, Names};
use crate::run::settings::{self, Contents, Each, Located, Place, SettingsArg};

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
/// and the lines of the file it spans (1-based, end excluded) with the
/// path of keys from there to its settings.
struct Checked {
    rule: &'static NativePolicy,
    what: String,
    settings: Value,
    lines: Option<(usize, usize)>,
    to_settings: Vec<String>,
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
        });
        for c in checked.filter(|c| arg.rule.as_deref().is_none_or(|r| r == c.rule.metadata.name)) {
            report(&file, "", &c, out, &mut err, refused)?;
        }
        return Ok(());
    }
    let text = std::fs::read_to_string(&arg.file).with_context(|| format!("reading {file}"))?;
    let lines: Vec<&str> = text.lines().collect();
    let checked: Vec<Checked> = match (settings::read_each(&arg.file)?, &arg.rule) {
        (Each::Policies(each), wanted) => {
            let documents = documents(&lines);
            let count = each.iter().filter(|l| matches!(l.at, Place::Document(_))).count();
            let mut checked = Vec::new();
            for Located { policy, at } in each {
                let (span, to_settings) = match &at {
                    Place::Document(i) => {
                        (documents.get(*i).copied().filter(|_| documents.len() == count), vec!["spec".to_string(), "settings".to_string()])
                    }
                    Place::Entry(name) => (entry(&lines, name), vec!["settings".to_string()]),
                };
                match policy {
                    Err(e) => {
                        // Its own words name the file; the line goes first.
                        let said = format!("{e:#}");
                        let said = said.strip_prefix(&format!("{file}: ")).unwrap_or(&said);
                        *refused += 1;
                        let _ = writeln!(err, "aigov: {}: {said}", at_line(&file, span.map(|(start, _)| start)));
                    }
                    Ok(p) if wanted.as_deref().is_none_or(|r| r == p.rule.metadata.name) => {
                        checked.push(Checked { rule: p.rule, what: p.what, settings: p.settings, lines: span, to_settings })
                    }
                    Ok(_) => {}
                }
            }
            if let Some(rule) = wanted
                && checked.is_empty()
                && *refused == 0
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
        }],
        (Each::Settings(_), None) => bail!(
            "{file} holds no ClusterAdmissionPolicy or AdmissionPolicy: check a policy file, or name the rule these settings are for \
             (`aigov settings check RULE={file}`)"
        ),
    };
    for c in &checked {
        report(&file, &text, c, out, &mut err, refused)?;
    }
    Ok(())
}

/// Checks one policy's settings and says so: valid on `out`, each refusal
/// on `err` at its line.
fn report(file: &str, text: &str, c: &Checked, out: &mut dyn Write, err: &mut dyn Write, refused: &mut usize) -> Result<()> {
    let name = c.rule.metadata.name;
    let what = if c.what.is_empty() { String::new() } else { format!("{}: ", c.what) };
    let all = refusals(c.rule, &c.settings);
    if all.is_empty() {
        writeln!(out, "{file}: {what}the settings of `{name}` are valid")?;
        return Ok(());
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut located: Vec<(Option<usize>, String)> = all
        .into_iter()
        .map(|message| {
            let line = c.lines.map(|span| {
                let mut path = c.to_settings.clone();
                path.extend(setting_path(&message));
                find(&lines, span, &path)
            });
            (line, message)
        })
        .collect();
    // In the file's order.
    located.sort_by_key(|(line, _)| *line);
    for (line, message) in located {
        *refused += 1;
        let _ = writeln!(err, "aigov: {}: {what}`{name}` refuses these settings: {message}", at_line(file, line));
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

/// The non-empty documents of a file: (first line, line after the last),
/// 1-based, split at `---` lines.
fn documents(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let content = |l: &str| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    };
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.starts_with("---") || line.starts_with("...") {
            if let Some(s) = start.take() {
                out.push((s, n));
            }
            // `--- {…}`: the document starts on this line.
            if line.get(3..).is_some_and(content) {
                start = Some(n);
            }
        } else if start.is_none() && content(line) {
            start = Some(n);
        }
    }
    if let Some(s) = start {
        out.push((s, lines.len() + 1));
    }
    out
}

/// The lines of `policies.yml`'s entry `name`: its line, to the next
/// top-level key.
fn entry(lines: &[&str], name: &str) -> Option<(usize, usize)> {
    let start = lines.iter().position(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(':')))?;
    let end = lines
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, l)| l.chars().next().is_some_and(|c| !c.is_whitespace() && c != '#'))
        .map_or(lines.len(), |(i, _)| i);
    Some((start + 1, end + 1))
}

/// The line of the deepest key of `path` found in order within `span`
/// (each after its parent's line); the span's first line when none is.
fn find(lines: &[&str], (start, end): (usize, usize), path: &[String]) -> usize {
    let mut best = start;
    let mut from = start;
    for key in path {
        let found = (from..end).find(|&n| lines.get(n - 1).is_some_and(|l| names_key(l, key)));
        match found {
            Some(n) => {
                best = n;
                from = n;
            }
            None => break,
        }
    }
    best
}

/// Whether a line writes `key:` (block style, as a list item, quoted, or
/// inside a flow mapping).
fn names_key(line: &str, key: &str) -> bool {
    let t = line.trim_start().trim_start_matches("- ").trim_start();
    let starts = |t: &str| {
        [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
            .iter()
            .any(|k| t.strip_prefix(k.as_str()).is_some_and(|r| r.trim_start().starts_with(':')))
    };
    if starts(t) {
        return true;
    }
    t.match_indices(['{', ',']).any(|(i, _)| t.get(i + 1..).is_some_and(|r| starts(r.trim_start())))
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
        let text = "a: 1\n---\n# c\nspec:\n  settings:\n    rules:\n      exec-guard: {guardPortForward: maybe}\n";
        let lines: Vec<&str> = text.lines().collect();
        let docs = documents(&lines);
        assert_eq!(docs, [(1, 2), (4, 8)]);
        let path: Vec<String> = ["spec", "settings", "rules", "exec-guard", "guardPortForward"].map(String::from).to_vec();
        assert_eq!(find(&lines, docs[1], &path), 7);
    }
}
