//! The modules form layers, and imports only go down: a module uses its own layer and those below it,
//! never one above, with no cycle inside a layer; and no verb (`commands::X`) uses another verb. Read
//! from the source (every `crate::`, `super::` and, in `main.rs`, `git_cutile_perf::` path outside
//! comments, tests included), so that a new upward import fails here, named with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every top-level module by layer, lowest first. A new module gets a row here.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "values and rules",
        &[
            "compile",
            "decision",
            "guard",
            "hint",
            "kernel_class",
            "noise",
            "peaks",
            "pyliteral",
            "records",
            "references",
            "stats",
            "trailers",
            "units",
            "verdict",
        ],
    ),
    (
        "git, processes and the runner",
        &[
            "git",
            "gpu",
            "ncu",
            "process",
            "process_identity",
            "progress",
            "pytest",
            "runner",
            "ui",
            "workers",
        ],
    ),
    (
        "the record",
        &[
            "audit",
            "benchmark_run",
            "census",
            "changes",
            "evidence",
            "history",
            "journal",
            "plot",
            "replay",
            "session",
            "table",
        ],
    ),
    (
        "features",
        &[
            "demo_python",
            "diagnose",
            "hook",
            "ignored",
            "inspect",
            "locate",
            "paired",
            "recovery",
            "refusals",
            "report",
            "snapshot",
        ],
    ),
    (
        "verbs",
        &["agent", "cli", "commands", "errors", "generate", "settings"],
    ),
    ("main", &["edge", "main"]),
];

/// One source file: its path under `src/` and its text.
struct Source {
    path: String,
    text: String,
}

/// A use of another module: the module path it names, and where.
struct Reference {
    target: Vec<String>,
    at: String,
}

#[test]
fn imports_only_go_down_and_no_verb_imports_a_verb() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&root, &root, &mut sources);
    let problems = check(&sources);
    assert!(
        problems.is_empty(),
        "the module graph is not layered:\n{}",
        problems.join("\n")
    );
}

#[test]
fn an_upward_import_a_cycle_and_a_verb_using_a_verb_are_named() {
    let source = |path: &str, text: &str| Source {
        path: path.to_string(),
        text: text.to_string(),
    };
    let sources = [
        source("lib.rs", "pub mod git;\n"),
        source("git.rs", "use crate::history::History;\n"),
        source("stats.rs", "// crate::history in a comment is no import\n"),
        source("decision.rs", "use crate::{records, verdict::Decided};\n"),
        source("verdict.rs", "use crate::decision::Thresholds;\n"),
        source("records.rs", ""),
        source("history.rs", "use crate::git::Repo;\n"),
        source("commands/mod.rs", "pub mod step;\n"),
        source("commands/verify.rs", ""),
        source(
            "commands/step/preflight.rs",
            "fn f() {\n    super::super::verify::foreign_findings();\n}\n",
        ),
        source("commands/step/mod.rs", "use super::verify;\n"),
        source("spare.rs", ""),
    ];
    assert_eq!(
        check(&sources),
        [
            "module spare has no layer: add it to LAYERS in tests/layers.rs",
            "upward: git.rs:1: git (git, processes and the runner) imports history (the record)",
            "cycle in values and rules: decision -> verdict -> decision",
            "verb imports verb: commands/step/preflight.rs:2: commands::step imports commands::verify",
            "verb imports verb: commands/step/mod.rs:1: commands::step imports commands::verify",
        ]
    );
}

#[test]
fn the_readme_names_the_layers_of_the_table() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table: Vec<(String, Vec<String>)> = LAYERS
        .iter()
        .map(|(name, modules)| {
            let modules = modules.iter().map(|m| m.to_string()).collect();
            (name.to_string(), modules)
        })
        .collect();
    assert_eq!(readme_layers(&readme), table);
}

#[test]
fn the_readme_layers_are_read_from_the_numbered_list_of_the_design_notes() {
    let readme = "## Use\n1. not: `this`\n## Design notes\ntext `x`\n\n1. low: `a`, `b`,\n   `c`;\n\
                  2. high (`d`): `e`.\n\nafter `f`\n3. later: `g`\n## Next\n4. other: `h`\n";
    let layer = |name: &str, modules: &[&str]| {
        (
            name.to_string(),
            modules.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        readme_layers(readme),
        [layer("low", &["a", "b", "c"]), layer("high (`d`)", &["e"])]
    );
}

/// The layers the README's design notes list: the first numbered list after `## Design notes`, each item
/// `N. name: `module`, ...` (continued on indented lines), its modules the names in backquotes.
fn readme_layers(readme: &str) -> Vec<(String, Vec<String>)> {
    let notes = readme
        .split_once("\n## Design notes\n")
        .map_or("", |(_, rest)| rest);
    let mut layers: Vec<(String, String)> = Vec::new();
    for line in notes.lines() {
        let numbered = line
            .split_once(". ")
            .filter(|(number, _)| !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()));
        match (numbered, layers.last_mut()) {
            (Some((_, item)), _) => {
                let (name, modules) = item.rsplit_once(": ").unwrap_or((item, ""));
                layers.push((name.to_string(), modules.to_string()));
            }
            (None, Some(last)) if line.starts_with("   ") => last.1 += line,
            (None, Some(_)) if !line.trim().is_empty() => break,
            _ => {}
        }
    }
    layers
        .into_iter()
        .map(|(name, modules)| {
            let names = modules.split('`').skip(1).step_by(2).map(str::to_string);
            (name, names.collect())
        })
        .collect()
}

fn read_sources(root: &Path, dir: &Path, sources: &mut Vec<Source>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, sources);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            sources.push(Source {
                path: path.strip_prefix(root).unwrap().display().to_string(),
                text: std::fs::read_to_string(&path).unwrap(),
            });
        }
    }
}

/// Every breach of the layering among `sources`, in words.
fn check(sources: &[Source]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, (_, modules))| modules.iter().map(move |m| (*m, layer)))
        .collect();
    let modules: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| module_path(&s.path).first().cloned())
        .collect();
    let verbs: BTreeSet<String> = sources
        .iter()
        .map(|s| module_path(&s.path))
        .filter(|path| path.len() > 1 && path[0] == "commands")
        .map(|path| path[1].clone())
        .collect();
    let mut problems: Vec<String> = modules
        .iter()
        .filter(|m| !layer_of.contains_key(m.as_str()))
        .map(|m| format!("module {m} has no layer: add it to LAYERS in tests/layers.rs"))
        .collect();
    let mut upward = Vec::new();
    let mut verb_uses = Vec::new();
    let mut same_layer: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let from = module_path(&source.path);
        let Some(top) = from.first() else { continue };
        for reference in references(&source.path, &from, &source.text) {
            let target = &reference.target[0];
            if target == top {
                let verb = |path: &[String]| path.get(1).filter(|v| verbs.contains(*v)).cloned();
                if let (true, Some(a), Some(b)) =
                    (top == "commands", verb(&from), verb(&reference.target))
                    && a != b
                {
                    verb_uses.push(format!(
                        "verb imports verb: {}: commands::{a} imports commands::{b}",
                        reference.at
                    ));
                }
                continue;
            }
            let (Some(&low), Some(&high)) =
                (layer_of.get(target.as_str()), layer_of.get(top.as_str()))
            else {
                continue;
            };
            if low > high {
                upward.push(format!(
                    "upward: {}: {top} ({}) imports {target} ({})",
                    reference.at, LAYERS[high].0, LAYERS[low].0
                ));
            } else if low == high {
                same_layer
                    .entry(top.clone())
                    .or_default()
                    .insert(target.clone());
            }
        }
    }
    problems.extend(upward);
    problems.extend(cycles(&same_layer).into_iter().map(|cycle| {
        format!(
            "cycle in {}: {}",
            LAYERS[layer_of[cycle[0].as_str()]].0,
            cycle.join(" -> ")
        )
    }));
    problems.extend(verb_uses);
    problems
}

/// The module a file under `src/` defines: `commands/step/mod.rs` is `commands::step`; `lib.rs` is
/// the crate's root (empty), `main.rs` the binary, named `main`.
fn module_path(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        parts.pop();
    }
    parts
}

/// The module paths `text` names, resolved to absolute paths of at most two segments. `super::` counts
/// from the file's module, and after an inline module's opening line (`mod tests {`) from that module:
/// in this code base an inline module runs to the end of its file.
fn references(file: &str, module: &[String], text: &str) -> Vec<Reference> {
    // comments blanked line by line, so that a path's line is its line in the file
    let code: Vec<&str> = text
        .lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect();
    let code = code.join("\n");
    let mut inline = Vec::new();
    let mut offset = 0;
    for line in code.split('\n') {
        if let Some(name) = inline_module(line.trim_start()) {
            inline.push((offset, name.to_string()));
        }
        offset += line.len() + 1;
    }
    let mut found = Vec::new();
    let starts = ["crate::", "super::", "git_cutile_perf::"]
        .iter()
        .flat_map(|prefix| code.match_indices(prefix).map(|(start, _)| start));
    for start in starts {
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &code[start..];
        let mut base = module.to_vec();
        base.extend(
            inline
                .iter()
                .filter(|(opened, _)| *opened < start)
                .map(|(_, name)| name.clone()),
        );
        if let Some(after) = rest
            .strip_prefix("crate::")
            .or_else(|| rest.strip_prefix("git_cutile_perf::"))
        {
            base.clear();
            rest = after;
        }
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        let at = format!("{file}:{}", code[..start].matches('\n').count() + 1);
        for target in paths(&base, rest) {
            found.push(Reference {
                target,
                at: at.clone(),
            });
        }
    }
    found
}

/// The name of the inline module a line opens (`mod tests {`), if it opens one.
fn inline_module(code: &str) -> Option<&str> {
    let rest = code.strip_prefix("pub ").unwrap_or(code);
    let name = rest.strip_prefix("mod ")?.strip_suffix(" {")?;
    name.chars()
        .all(|c| c.is_alphanumeric() || c == '_')
        .then_some(name)
}

/// The absolute paths (two segments at most) that `rest`, written after `base::`, names: one path, or
/// one per item of a `{a, b::c}` group.
fn paths(base: &[String], rest: &str) -> Vec<Vec<String>> {
    let mut path = base.to_vec();
    let mut rest = rest;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            return group_items(group)
                .into_iter()
                .flat_map(|item| paths(&path, item))
                .filter(|p| !p.is_empty())
                .collect();
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let segment = &rest[..end];
        if segment.is_empty() || segment == "self" || path.len() == 2 {
            break;
        }
        path.push(segment.to_string());
        match rest[end..].strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    path.truncate(2);
    if path.is_empty() {
        Vec::new()
    } else {
        vec![path]
    }
}

/// The top-level items of a `{...}` group whose opening brace is already read, split at commas.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(group[start..i].trim());
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(group[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(group[start..].trim());
    items
}

/// The cycles among `edges` (module -> the modules of its own layer it imports), each once, as the
/// modules around it with the first repeated at the end.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        let mut stack = vec![start.clone()];
        walk(edges, &mut stack, &mut done, &mut found);
        done.insert(start.clone());
    }
    found
}

fn walk(
    edges: &BTreeMap<String, BTreeSet<String>>,
    stack: &mut Vec<String>,
    done: &mut BTreeSet<String>,
    found: &mut Vec<Vec<String>>,
) {
    let last = stack.last().unwrap().clone();
    for next in edges.get(&last).into_iter().flatten() {
        if done.contains(next) {
            continue;
        }
        if next == &stack[0] {
            let mut cycle = stack.clone();
            cycle.push(next.clone());
            found.push(cycle);
        } else if !stack.contains(next) {
            stack.push(next.clone());
            walk(edges, stack, done, found);
            stack.pop();
        }
    }
}
