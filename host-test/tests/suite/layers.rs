//! A crate's modules in layers: reads a crate's sources, finds every path
//! from one of its modules to another, and names each that goes up a layer
//! or closes a circle. Std only, so that any test can use it: a test here
//! calls `crate::layers::check(&src, TABLE)` with another crate's `src`
//! (`root().join("policies/sdk/src")`), and another crate's own tests take
//! the file with `#[path = "../../../host-test/tests/suite/layers.rs"] mod
//! layers;` (from `policies/sdk/tests/`). Assert that [`check`] finds
//! nothing, and print what it found.
//!
//! # The layer table
//!
//! A `&[&[&str]]`: the layers, lowest first, each the entries in it. An
//! entry names a module by its path from the crate root (`"run"`,
//! `"tools::report::model"`; `"crate"` is the root itself, `lib.rs`
//! outside its inline modules), or, ending in `::*`, each module right
//! under one (`"run::*"`: `run::engine`, `run::wapc`, … each an entry of
//! its own, with their submodules). A module belongs to the entry that is
//! its longest prefix, a named one before a `*` one of the same length:
//! with `"tools::*"` and `"tools::report"` in the table,
//! `tools::report::sarif` is in `tools::report` and `tools::bench` in
//! `tools::bench`. Every module a path is written in or leads to must
//! belong to an entry, and every entry must name a module: a new module is
//! placed when it is written.
//!
//! The entries are the nodes of the graph. A module may use its own entry,
//! the other entries of its layer, and those of lower layers; a use of a
//! higher layer goes up. Entries of one layer may use each other, but
//! never in a circle.
//!
//! # What counts as a use
//!
//! Every path to a module of the crate, or to an item in one, in `use`
//! declarations and in code alike (test modules included): `crate::a::b`,
//! `super::b`, `self::b`, a child module by its bare name (`b::f()` in
//! `a`), and a name a `use` brought into the module (`use crate::a;` then
//! `a::b::f()`). A path through a module to a name that module imports
//! (`pub use b::Item;` in `a`, then `crate::a::Item`) is followed to the
//! module the name comes from, except through a glob (`pub use b::*;`).
//! A `#[macro_export]` macro sits at the crate root but belongs to the
//! module that defines it (`crate::decode_struct!` is a use of the module
//! whose file holds `macro_rules! decode_struct`). [`check_code`] leaves out
//! the paths written in inline `mod tests` modules, for a crate whose tests
//! may reach up (a test of a model type building a verdict).
//! Comments (doc links included), string literals, `$crate` paths in macros
//! and `mod` declarations are not uses. A file is the module its path under
//! `src` names (`a/b.rs` or `a/b/mod.rs` is `a::b`; `#[path]` is not read);
//! `main.rs` and `bin/` are binaries, crates of their own that reach the
//! library by its name: above every layer, and not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Checks the crate whose sources are in `src` against the layer table
/// `layers` (see the module documentation): one line per problem, none
/// when every use goes down or sideways and no circle closes.
pub fn check(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    check_paths(src, layers, true)
}

/// [`check`], paths written in inline `mod tests` modules left out.
pub fn check_code(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    check_paths(src, layers, false)
}

fn check_paths(src: &Path, layers: &[&[&str]], tests: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut files = Vec::new();
    match rust_files(src) {
        Ok(found) => {
            for (path, module) in found {
                match std::fs::read_to_string(&path) {
                    Ok(text) => files.push(read(&path, module, &text)),
                    Err(e) => problems.push(format!("reading {}: {e}", path.display())),
                }
            }
        }
        Err(e) => problems.push(format!("reading {}: {e}", src.display())),
    }
    let krate = Crate::new(&files);
    let table = Table(layers);
    for entry in layers.iter().flat_map(|l| l.iter()) {
        let named = entry.strip_suffix("::*").unwrap_or(entry);
        let module: Vec<String> = if named == "crate" { Vec::new() } else { named.split("::").map(str::to_string).collect() };
        if !krate.modules.contains(&module) {
            problems.push(format!("the layer table names `{entry}`, but `{named}` is no module of {}", src.display()));
        }
    }
    // Entry → entry, with the first place that shows it.
    let mut edges: BTreeMap<(Node, Node), String> = BTreeMap::new();
    // Modules in no layer, with the first place that shows one.
    let mut unplaced: BTreeMap<String, String> = BTreeMap::new();
    for file in &files {
        for path in file.paths.iter().filter(|p| tests || !p.module.iter().any(|m| m == "tests")) {
            let Some(absolute) = krate.absolute(&path.module, &path.segments, 0) else { continue };
            let target = krate.module_of(&absolute, 0);
            let at = || format!("{}:{} `{}`", file.shown, path.line, path.segments.join("::"));
            match (table.place(&path.module), table.place(&target)) {
                (None, _) => {
                    unplaced.entry(show(&path.module)).or_insert_with(at);
                }
                (_, None) => {
                    unplaced.entry(show(&target)).or_insert_with(at);
                }
                (Some(from), Some(to)) if from.0 != to.0 => {
                    edges.entry((from, to)).or_insert_with(at);
                }
                _ => {}
            }
        }
    }
    for (module, at) in &unplaced {
        problems.push(format!("module `{module}` is in no layer of the table: {at}"));
    }
    for (((from, a), (to, b)), at) in &edges {
        if b > a {
            problems.push(format!("`{from}` (layer {a}) uses `{to}` (layer {b}), a higher layer: {at}"));
        }
    }
    for (from, to, circle) in circles(edges.keys().map(|((from, _), (to, _))| (from.as_str(), to.as_str()))) {
        let at = edges.iter().find(|(((f, _), (t, _)), _)| f == from && t == to).map_or("", |(_, at)| at.as_str());
        problems.push(format!("`{from}` uses `{to}`, which closes a circle ({}): {at}", circle.join(" → ")));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// An entry of the graph: its name and its layer.
type Node = (String, usize);

/// A module path as the table writes it.
fn show(module: &[String]) -> String {
    if module.is_empty() { "crate".into() } else { module.join("::") }
}

/// Every `.rs` file of the library under `src`, with its module path.
fn rust_files(src: &Path) -> std::io::Result<Vec<(PathBuf, Vec<String>)>> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let Ok(rel) = path.strip_prefix(src) else { continue };
            if rel == Path::new("main.rs") || rel.starts_with("bin") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut module: Vec<String> = rel.with_extension("").iter().map(|c| c.to_string_lossy().into_owned()).collect();
                if rel == Path::new("lib.rs") || module.last().is_some_and(|l| l == "mod") {
                    module.pop();
                }
                out.push((path, module));
            }
        }
    }
    out.sort();
    Ok(out)
}

// ------------------------------------------------------------------ tokens

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of Rust source that paths are made of, each with its line:
/// comments, literals and lifetimes are left out.
fn tokens(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let word = |i: usize| at(i).is_alphanumeric() || at(i) == '_';
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    // Past a quoted literal that opens at `i`, escapes and all.
    let skip_quoted = |mut i: usize, line: &mut usize| {
        let quote = at(i);
        i += 1;
        while i < chars.len() && at(i) != quote {
            if at(i) == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < chars.len() {
        let c = at(i);
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0usize;
            while i < chars.len() {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(at(i) == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_quoted(i, &mut line);
        } else if c == '\'' {
            // A character ('a', '\n', '\u{1F600}'), or a lifetime ('a, 'static).
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = skip_quoted(i, &mut line);
            } else {
                i += 1;
                while word(i) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while word(i) || (at(i) == '.' && at(i + 1).is_ascii_digit()) {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while word(i) {
                i += 1;
            }
            let name: String = chars.get(start..i).unwrap_or_default().iter().collect();
            let raw_string =
                matches!(name.as_str(), "r" | "br" | "cr") && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '"' | '#')));
            if raw_string {
                let mut hashes = 0usize;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                while i < chars.len() && !(at(i) == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                    line += usize::from(at(i) == '\n');
                    i += 1;
                }
                i += 1 + hashes;
            } else if matches!(name.as_str(), "b" | "c") && matches!(at(i), '"' | '\'') {
                i = skip_quoted(i, &mut line);
            } else if name == "r" && at(i) == '#' {
                // A raw identifier, r#type.
                let start = i + 1;
                i += 1;
                while word(i) {
                    i += 1;
                }
                out.push((Token::Ident(chars.get(start..i).unwrap_or_default().iter().collect()), line));
            } else {
                out.push((Token::Ident(name), line));
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            if c == '\n' {
                line += 1;
            } else if !c.is_whitespace() {
                out.push((Token::Punct(c), line));
            }
            i += 1;
        }
    }
    out
}

// ------------------------------------------------------------------- files

/// A path as written in a module.
#[derive(Clone, Debug)]
struct WrittenPath {
    /// The module it is written in, inline modules included.
    module: Vec<String>,
    segments: Vec<String>,
    line: usize,
}

/// What one file holds: the paths written in it, its inline modules, and
/// the names its `use` declarations bring into its modules.
#[derive(Debug, Default)]
struct File {
    shown: String,
    module: Vec<String>,
    paths: Vec<WrittenPath>,
    inline: Vec<Vec<String>>,
    /// (module, name, the path as written).
    names: Vec<(Vec<String>, String, Vec<String>)>,
    /// `#[macro_export]` macros defined here: (module, name).
    exported_macros: Vec<(Vec<String>, String)>,
}

/// Reads the file at `path`, module `module`.
fn read(path: &Path, module: Vec<String>, text: &str) -> File {
    let toks = tokens(text);
    let tok = |i: usize| toks.get(i).map(|(t, _)| t);
    let ident = |i: usize| match tok(i) {
        Some(Token::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let mut file = File { shown: path.display().to_string(), module: module.clone(), ..File::default() };
    // The module the tokens are in, and, for each inline module, the brace
    // depth inside it.
    let mut current = module;
    let mut opened: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0usize;
    // A `#[macro_export]` seen, for the `macro_rules!` it is on.
    let mut exported = false;
    while i < toks.len() {
        let line = toks.get(i).map_or(0, |(_, l)| *l);
        match tok(i) {
            Some(Token::Ident(w)) if w == "macro_export" => exported = true,
            Some(Token::Ident(w)) if w == "macro_rules" && tok(i + 1) == Some(&Token::Punct('!')) => {
                if let Some(name) = ident(i + 2).filter(|_| exported) {
                    file.exported_macros.push((current.clone(), name.to_string()));
                }
                exported = false;
            }
            Some(Token::Punct('{')) => depth += 1,
            Some(Token::Punct('}')) => {
                if opened.last() == Some(&depth) {
                    opened.pop();
                    current.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Some(Token::Ident(w)) if w == "mod" => {
                if let (Some(name), Some(Token::Punct('{'))) = (ident(i + 1), tok(i + 2)) {
                    current.push(name.to_string());
                    file.inline.push(current.clone());
                    depth += 1;
                    opened.push(depth);
                    i += 2;
                }
            }
            Some(Token::Ident(w)) if w == "use" => {
                let mut leaves = Vec::new();
                i += 1;
                use_tree(&toks, &mut i, &[], &mut leaves);
                for (segments, name) in leaves {
                    if let Some(name) = name {
                        file.names.push((current.clone(), name, segments.clone()));
                    }
                    file.paths.push(WrittenPath { module: current.clone(), segments, line });
                }
                continue;
            }
            // `$crate::…` in a macro names the crate where it is expanded.
            Some(Token::Punct('$')) if ident(i + 1) == Some("crate") => {
                i += 2;
                while tok(i) == Some(&Token::PathSep) && ident(i + 1).is_some() {
                    i += 2;
                }
                continue;
            }
            Some(Token::Ident(_)) if tok(i + 1) == Some(&Token::PathSep) && (i == 0 || tok(i - 1) != Some(&Token::PathSep)) => {
                let mut segments = Vec::new();
                while let Some(s) = ident(i) {
                    segments.push(s.to_string());
                    if tok(i + 1) == Some(&Token::PathSep) && ident(i + 2).is_some() {
                        i += 2;
                    } else {
                        break;
                    }
                }
                file.paths.push(WrittenPath { module: current.clone(), segments, line });
            }
            _ => {}
        }
        i += 1;
    }
    file
}

/// Reads a use tree from `toks[*i]` to the `;`, `,` or `}` that ends it,
/// adding each leaf to `out`: its path (after `prefix`) and the name it
/// brings in (none for a glob).
fn use_tree(toks: &[(Token, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let tok = |i: usize| toks.get(i).map(|(t, _)| t);
    let mut path = prefix.to_vec();
    if tok(*i) == Some(&Token::PathSep) {
        *i += 1;
    }
    loop {
        match tok(*i) {
            Some(Token::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
                if tok(*i) == Some(&Token::PathSep) {
                    *i += 1;
                    continue;
                }
                // `a::b::{self}` brings in `b`.
                if path.len() > 1 && path.last().is_some_and(|l| l == "self") {
                    path.pop();
                }
                let mut name = path.last().cloned();
                if let (Some(Token::Ident(kw)), Some(Token::Ident(alias))) = (tok(*i), tok(*i + 1))
                    && kw == "as"
                {
                    name = Some(alias.clone()).filter(|a| a != "_");
                    *i += 2;
                }
                out.push((path, name));
                break;
            }
            Some(Token::Punct('*')) => {
                *i += 1;
                out.push((path, None));
                break;
            }
            Some(Token::Punct('{')) => {
                *i += 1;
                while !matches!(tok(*i), None | Some(Token::Punct('}'))) {
                    let before = *i;
                    use_tree(toks, i, &path, out);
                    if tok(*i) == Some(&Token::Punct(',')) {
                        *i += 1;
                    }
                    if *i == before {
                        *i += 1;
                    }
                }
                *i += 1;
                break;
            }
            _ => break,
        }
    }
    if tok(*i) == Some(&Token::Punct(';')) {
        *i += 1;
    }
}

// ------------------------------------------------------------------- crate

/// How many names a path may be followed through (a guard against `use`
/// declarations that name each other).
const MAX_HOPS: usize = 16;

/// The crate's modules, and the names `use` brings into each.
struct Crate {
    modules: BTreeSet<Vec<String>>,
    names: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Crate {
    fn new(files: &[File]) -> Crate {
        let mut modules = BTreeSet::from([Vec::new()]);
        let mut names = BTreeMap::new();
        for f in files {
            modules.insert(f.module.clone());
            modules.extend(f.inline.iter().cloned());
            for (module, name, path) in &f.names {
                names.insert((module.clone(), name.clone()), path.clone());
            }
            // An exported macro is at the root, as if the root imported it.
            for (module, name) in &f.exported_macros {
                let path = std::iter::once("crate".to_string()).chain(module.iter().cloned()).chain([name.clone()]).collect();
                names.insert((Vec::new(), name.clone()), path);
            }
        }
        Crate { modules, names }
    }

    /// `segments`, written in `module`, from the crate root; `None` for a
    /// path outside the crate (another crate, a type's associated item).
    fn absolute(&self, module: &[String], segments: &[String], hops: usize) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = module.to_vec();
        let rest = match first.as_str() {
            "crate" => {
                base.clear();
                rest
            }
            "self" => rest,
            "super" => {
                base.pop()?;
                let mut rest = rest;
                while let Some((s, more)) = rest.split_first()
                    && s == "super"
                {
                    base.pop()?;
                    rest = more;
                }
                rest
            }
            _ => {
                let mut child = base.clone();
                child.push(first.clone());
                if self.modules.contains(&child) {
                    base = child;
                    rest
                } else {
                    let named = self.names.get(&(base.clone(), first.clone())).filter(|p| p.as_slice() != segments)?;
                    if hops >= MAX_HOPS {
                        return None;
                    }
                    base = self.absolute(module, named, hops + 1)?;
                    rest
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module an absolute path leads to: its longest prefix that is a
    /// module, or, when the next name was brought into that module by a
    /// `use`, where that name leads.
    fn module_of(&self, path: &[String], hops: usize) -> Vec<String> {
        for k in (0..=path.len()).rev() {
            let Some(prefix) = path.get(..k) else { continue };
            if !self.modules.contains(prefix) {
                continue;
            }
            let next = path.get(k).and_then(|name| self.names.get(&(prefix.to_vec(), name.clone())));
            if let Some(named) = next
                && hops < MAX_HOPS
                && let Some(mut target) = self.absolute(prefix, named, hops + 1)
            {
                target.extend(path.iter().skip(k + 1).cloned());
                return self.module_of(&target, hops + 1);
            }
            return prefix.to_vec();
        }
        Vec::new()
    }
}

// ------------------------------------------------------------------- table

struct Table<'t>(&'t [&'t [&'t str]]);

impl Table<'_> {
    /// The entry a module belongs to, as the table names it (a `*` entry
    /// by the module right under it), and its layer, from 0.
    fn place(&self, module: &[String]) -> Option<(String, usize)> {
        let mut best: Option<(usize, bool, String, usize)> = None;
        for (layer, entries) in self.0.iter().enumerate() {
            for entry in entries.iter() {
                let candidate = match entry.strip_suffix("::*") {
                    // `a::*` holds `a::x` and what is under it, as `a::x`.
                    Some(parent) => {
                        let parent: Vec<&str> = if parent == "crate" { Vec::new() } else { parent.split("::").collect() };
                        let under = module.len() > parent.len() && module.iter().zip(&parent).all(|(m, p)| m == p);
                        under.then(|| show(module.get(..=parent.len()).unwrap_or_default()))
                    }
                    None => {
                        let name = show(module);
                        (name == *entry || (*entry != "crate" && name.strip_prefix(*entry).is_some_and(|rest| rest.starts_with("::"))))
                            .then(|| entry.to_string())
                    }
                };
                let Some(name) = candidate else { continue };
                let named = !entry.ends_with("::*");
                if best.as_ref().is_none_or(|(len, was_named, _, _)| (name.len(), named) > (*len, *was_named)) {
                    best = Some((name.len(), named, name, layer));
                }
            }
        }
        best.map(|(_, _, name, layer)| (name, layer))
    }
}

/// The circles among `edges`, each as the edge that closes it and the
/// circle it closes, found depth first in name order.
fn circles<'e>(edges: impl Iterator<Item = (&'e str, &'e str)>) -> Vec<(&'e str, &'e str, Vec<&'e str>)> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().push(to);
    }
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut found = Vec::new();
    for &start in next.keys() {
        if done.contains(start) {
            continue;
        }
        // The path from `start`: each node with how many of its successors were seen.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some((node, seen)) = path.last_mut() {
            let node = *node;
            let succ = next.get(node).and_then(|s| s.get(*seen)).copied();
            *seen += 1;
            match succ {
                None => {
                    done.insert(node);
                    path.pop();
                }
                Some(to) if done.contains(to) => {}
                Some(to) => match path.iter().position(|(n, _)| *n == to) {
                    Some(pos) => {
                        let mut circle: Vec<&str> = path.iter().skip(pos).map(|(n, _)| *n).collect();
                        circle.push(to);
                        found.push((node, to, circle));
                    }
                    None => path.push((to, 0)),
                },
            }
        }
    }
    found
}
