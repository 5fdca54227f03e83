//! The one-way flow of DESIGN.md's "Architecture", checked on the source: cli →
//! config → (net → probe | load | disk | watch) → results → diagnose → store /
//! report / output. Nothing below `commands/` names `cli`, `commands` or `store`
//! (the store is for `commands/`; what results, reports and outputs need of it —
//! the record, its histograms, redaction — lives in the leaves `record`, `stats` and
//! `redact`); measurement and results never name `diagnose`; `config` never names
//! what runs after it; and the top-level modules import each other without a cycle.
//! Test code (`tests.rs`, `*_tests.rs`, `mod tests { … }`) is not held to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules below `commands/` and what they may never name.
const FORBIDDEN: &[(&[&str], &[&str])] = &[
    (
        &[
            "net", "probe", "load", "disk", "lab", "watch", "stats", "cache", "diagnose", "report",
            "output", "record", "redact", "units", "uring", "error", "observe", "pipeline",
            "serve", "k8s", "page", "cleanup",
        ],
        &["cli", "commands", "store"],
    ),
    // Measurement and its results never depend on the findings made of them.
    (
        &[
            "net", "probe", "load", "disk", "lab", "watch", "stats", "cache", "record", "redact",
            "observe", "cleanup",
        ],
        &["diagnose", "pipeline"],
    ),
    // What a run tells its watchers is a leaf: measurement and presentation both
    // name it.
    (
        &["observe"],
        &[
            "net", "probe", "load", "disk", "lab", "watch", "cache", "report", "output", "config",
            "diagnose", "pipeline", "schema", "stats",
        ],
    ),
    // The checked configuration is built before anything runs or is shown.
    (&["config"], &["commands", "store", "report", "diagnose"]),
    // The leaves: a record of a run, redaction of what it holds, and what a run made
    // on disk.
    (
        &["record", "redact", "cleanup"],
        &[
            "net", "probe", "load", "disk", "lab", "watch", "cache", "report", "output", "config",
        ],
    ),
];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file that is not test code, comments left out.
fn code(path: &Path, text: &str) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            // An inline test module runs to the end of the file (the house style);
            // a `mod tests;` line is a file of its own, skipped by name.
            if lines.peek().is_some_and(|n| n.trim_end().ends_with('{')) {
                break;
            }
            lines.next();
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line.split(" // ").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

/// The top-level modules a piece of code at `depth` (0: the module's own root file,
/// `src/x.rs` or `src/x/mod.rs`) names: `crate::m`, `use crate::{m, …}`, and
/// `super::` paths that climb to the crate root.
fn named(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + 7..];
        if let Some(group) = after.strip_prefix('{') {
            // Only the group's first level names top-level modules.
            let mut level = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        out.insert(ident(item.trim()));
                        item.clear();
                    }
                    _ if level == 0 => item.push(c),
                    _ => {}
                }
            }
            out.insert(ident(item.trim()));
        } else {
            out.insert(ident(after));
        }
        rest = after;
    }
    let climb = "super::".repeat(depth + 1);
    let mut rest = code;
    while let Some(at) = rest.find(&climb) {
        let after = &rest[at + climb.len()..];
        if !after.starts_with("super::") {
            out.insert(ident(after));
        }
        rest = after;
    }
    out.remove("");
    out
}

/// Each top-level module of `src/` with the top-level modules its code names.
fn graph(src: &Path) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        let top = parts[0].clone();
        if matches!(top.as_str(), "lib" | "main") {
            continue;
        }
        // Depth below the module's root file: src/x/mod.rs and src/x.rs are 0,
        // src/x/y.rs is 1, src/x/y/mod.rs is 1, src/x/y/z.rs is 2.
        let depth = parts.len() - 1 - usize::from(parts.last().unwrap() == "mod");
        let text = std::fs::read_to_string(&f).unwrap();
        let entry = graph.entry(top.clone()).or_default();
        for m in named(&code(&f, &text), depth) {
            if m != top {
                entry.entry(m).or_default().push(rel.display().to_string());
            }
        }
    }
    graph
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// No module below `commands/` names `cli`, `commands` or `store`; measurement and
/// results never name `diagnose`; `config` names nothing that runs after it; the
/// leaves stay leaves.
#[test]
fn no_module_imports_upward() {
    let graph = graph(&src());
    let mut wrong = Vec::new();
    for (modules, never) in FORBIDDEN {
        for m in *modules {
            let Some(deps) = graph.get(*m) else { continue };
            for n in *never {
                if let Some(files) = deps.get(*n) {
                    wrong.push(format!("{m} names {n} (in {})", files.join(", ")));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

/// The top-level modules import each other without a cycle (a cycle is two layers
/// that can no longer be told apart).
#[test]
fn top_level_modules_form_no_cycle() {
    let graph = graph(&src());
    // Depth-first search, reporting the first cycle met.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if !done.insert(m.to_string()) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flat_map(|d| d.keys()) {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(cycle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} → {} ({})", w[0], w[1], graph[&w[0]][&w[1]].join(", ")))
                .collect();
            panic!("a module cycle:\n{}", edges.join("\n"));
        }
    }
}

/// The scanner sees every way Rust names a module: a path, a `use` group, `super::`
/// up to the root; it skips comments and test code, and a deeper `super::`.
#[test]
fn the_scanner_finds_each_way_of_naming_a_module() {
    let found = |text: &str, depth: usize| {
        named(&code(Path::new("x.rs"), text), depth)
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(found("use crate::cli::LoadArgs;", 0), ["cli"]);
    assert_eq!(
        found(
            "use crate::{net::Target, store::{self, RunRecord}, units};",
            1
        ),
        ["net", "store", "units"]
    );
    assert_eq!(found("let x = crate::store::new_id();", 2), ["store"]);
    assert_eq!(found("use super::super::cli::LoadArgs;", 1), ["cli"]);
    assert_eq!(
        found("use super::super::plan::Endpoint;", 2),
        Vec::<String>::new()
    );
    assert_eq!(found("use super::cli;", 0), ["cli"]);
    assert_eq!(
        found("// use crate::cli;\n/// crate::store\n", 0),
        Vec::<String>::new()
    );
    assert_eq!(
        found(
            "use crate::net;\n#[cfg(test)]\nmod tests {\n    use crate::cli;\n}\n",
            0
        ),
        ["net"]
    );
    assert!(code(Path::new("head_tests.rs"), "use crate::cli;").is_empty());
}
