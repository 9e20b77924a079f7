//! The modules form layers, and imports only go down: a module uses its own layer and those below it,
//! never one above, with no cycle inside a layer nor between the files of one module; and no verb
//! (`verbs::commands::X`) uses another verb.
//! A module's layer is the folder of `src/` it sits in, so the directory listing is the design map.
//! Read from the source (every `crate::`, `super::` and, in `main.rs`, `git_cutile_perf::` path outside
//! comments, tests included), so that a new upward import fails here, named with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first: each is a folder of `src/`. The files at `src/`'s root (`lib.rs` and
/// `main.rs`) sit above them all.
const LAYERS: &[&str] = &["rules", "system", "record", "features", "measure", "verbs"];
/// The files that may sit at `src/`'s root, outside every layer.
const ROOT_FILES: &[&str] = &["lib.rs", "main.rs"];

/// Lines of a source file above its tests (`#[cfg(test)]`), at most: a file that holds more holds
/// more than one part, and each part reads better on its own.
const MOST_LINES: usize = 500;
/// Lines of one function of a verb (under `src/verbs/commands/`), at most: a verb reads as the steps it
/// takes, each a function named for what it does.
const MOST_VERB_FUNCTION_LINES: usize = 70;

#[test]
fn no_file_is_long_before_its_tests_and_no_verb_function_is_long() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&root, &root, &mut sources);
    let problems = too_long(&sources);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_long_file_and_a_long_verb_function_are_named() {
    let body = |lines: usize| "    x();\n".repeat(lines);
    let sources = [
        Source {
            path: "rules/long.rs".to_string(),
            text: format!("{}#[cfg(test)]\nmod tests {{\n{}}}\n", body(501), body(900)),
        },
        Source {
            path: "rules/fine.rs".to_string(),
            text: format!("{}#[cfg(test)]\nmod tests {{\n{}}}\n", body(500), body(900)),
        },
        Source {
            path: "verbs/commands/step/mod.rs".to_string(),
            text: format!(
                "pub fn run() {{\n{}}}\n\nfn short() {{\n{}}}\n",
                body(69),
                body(68)
            ),
        },
        Source {
            path: "record/history.rs".to_string(),
            text: format!("pub fn long_but_no_verb() {{\n{}}}\n", body(200)),
        },
    ];
    assert_eq!(
        too_long(&sources),
        [
            "src/rules/long.rs: 501 lines before its tests (at most 500): split it into the parts it holds",
            "src/verbs/commands/step/mod.rs:1: fn run is 71 lines (a verb's functions at most 70): name its steps",
        ]
    );
}

/// The files over [`MOST_LINES`] before their tests, and the functions of verbs over
/// [`MOST_VERB_FUNCTION_LINES`], in words.
fn too_long(sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    for source in sources {
        let lines: Vec<&str> = source.text.lines().collect();
        let code = lines
            .iter()
            .position(|line| line.starts_with("#[cfg(test)]"))
            .unwrap_or(lines.len());
        if code > MOST_LINES {
            problems.push(format!(
                "src/{}: {code} lines before its tests (at most {MOST_LINES}): split it into the parts it holds",
                source.path
            ));
        }
        if !source.path.starts_with("verbs/commands/") {
            continue;
        }
        let mut open: Option<(usize, &str, String)> = None;
        for (number, line) in lines[..code].iter().enumerate() {
            if open.is_none() {
                let trimmed = line.trim_start();
                let indent = &line[..line.len() - trimmed.len()];
                let signature = trimmed
                    .trim_start_matches("pub ")
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ");
                // a function on one line opens nothing
                if let Some(rest) = signature.strip_prefix("fn ")
                    && !trimmed.ends_with('}')
                {
                    let name = rest
                        .split(['(', '<'])
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    open = Some((number, indent, name));
                }
                continue;
            }
            if let Some((start, indent, name)) = &open
                && line.len() == indent.len() + 1
                && line.starts_with(indent)
                && line.ends_with('}')
            {
                let length = number - start + 1;
                if length > MOST_VERB_FUNCTION_LINES {
                    problems.push(format!(
                        "src/{}:{}: fn {name} is {length} lines (a verb's functions at most \
                         {MOST_VERB_FUNCTION_LINES}): name its steps",
                        source.path,
                        start + 1
                    ));
                }
                open = None;
            }
        }
    }
    problems
}

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
fn an_upward_import_a_cycle_a_verb_using_a_verb_and_a_stray_file_are_named() {
    let source = |path: &str, text: &str| Source {
        path: path.to_string(),
        text: text.to_string(),
    };
    let sources = [
        source("lib.rs", "pub mod system;\n"),
        source("system/git.rs", "use crate::record::history::History;\n"),
        source(
            "rules/stats.rs",
            "// crate::record::history in a comment is no import\n",
        ),
        source(
            "rules/decision.rs",
            "use crate::rules::{records, verdict::Decided};\n",
        ),
        source("rules/verdict.rs", "use super::decision::Thresholds;\n"),
        source("rules/records.rs", ""),
        source("record/history.rs", "use crate::system::git::Repo;\n"),
        source("verbs/commands/mod.rs", "pub mod step;\n"),
        source("verbs/commands/verify.rs", ""),
        source(
            "verbs/commands/step/preflight.rs",
            "fn f() {\n    super::super::verify::foreign_findings();\n}\n",
        ),
        source(
            "verbs/commands/step/mod.rs",
            "use super::verify;\nmod rounds;\n",
        ),
        source(
            "verbs/commands/step/rounds.rs",
            "use super::attempt::Checks;\nuse super::Placed;\n",
        ),
        source(
            "verbs/commands/step/attempt.rs",
            "use super::{rounds::measure, Placed};\n",
        ),
        source(
            "features/hook/mod.rs",
            "mod install;\npub use install::State;\n",
        ),
        source("features/hook/install.rs", "use super::{HOOK, message};\n"),
        source(
            "features/hook/message.rs",
            "use super::super::hook::install::exists;\n",
        ),
        source("spare.rs", ""),
        source("extra/thing.rs", ""),
    ];
    assert_eq!(
        check(&sources),
        [
            "src/extra/ is no layer: move it into one of rules, system, record, features, measure, verbs",
            "src/spare.rs sits outside the layers: move it into one of rules, system, record, features, measure, verbs",
            "upward: system/git.rs:1: system::git (system) imports record::history (record)",
            "cycle in rules: rules::decision -> rules::verdict -> rules::decision",
            "cycle in features::hook: features::hook::install -> features::hook::message -> features::hook::install",
            "cycle in verbs::commands: verbs::commands::step::attempt -> verbs::commands::step::rounds -> verbs::commands::step::attempt",
            "verb imports verb: verbs/commands/step/preflight.rs:2: commands::step imports commands::verify",
            "verb imports verb: verbs/commands/step/mod.rs:1: commands::step imports commands::verify",
        ]
    );
}

#[test]
fn the_design_page_names_the_layers_in_order() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md"))
            .unwrap();
    assert_eq!(design_layers(&page), LAYERS);
}

#[test]
fn the_design_layers_are_read_from_the_numbered_list_naming_folders() {
    let page = "# Design\n1. not a layer\n## Layers\ntext `x/`\n\n1. `src/low/`: a, b;\n\
                2. `src/high/`: c.\n\nafter\n3. `src/later/`\n## Next\n";
    assert_eq!(design_layers(page), ["low", "high"]);
}

/// The layer folders the design page lists: the first numbered list after `## Layers`, each item
/// starting with its folder as `` `src/name/` ``.
fn design_layers(page: &str) -> Vec<String> {
    let section = page
        .split_once("\n## Layers\n")
        .map_or("", |(_, rest)| rest);
    let mut layers = Vec::new();
    for line in section.lines() {
        let item = line
            .split_once(". ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        match item {
            Some((_, item)) => {
                let folder = item.strip_prefix("`src/").and_then(|r| r.split_once("/`"));
                layers.extend(folder.map(|(name, _)| name.to_string()));
            }
            None if layers.is_empty() || line.starts_with("   ") => {}
            None if line.trim().is_empty() => {}
            None => break,
        }
    }
    layers
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
    let all = LAYERS.join(", ");
    let mut problems = Vec::new();
    let folders: BTreeSet<&str> = sources
        .iter()
        .filter_map(|s| s.path.split_once('/').map(|(folder, _)| folder))
        .collect();
    for folder in folders.iter().filter(|f| !LAYERS.contains(f)) {
        problems.push(format!(
            "src/{folder}/ is no layer: move it into one of {all}"
        ));
    }
    for source in sources {
        if !source.path.contains('/') && !ROOT_FILES.contains(&source.path.as_str()) {
            problems.push(format!(
                "src/{} sits outside the layers: move it into one of {all}",
                source.path
            ));
        }
    }
    let verbs: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| verb(&module_path(&s.path)))
        .collect();
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| module_path(&s.path)).collect();
    let mut upward = Vec::new();
    let mut verb_uses = Vec::new();
    let mut same_layer: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut same_unit: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let from = module_path(&source.path);
        let Some(from_unit) = unit(&from) else {
            continue;
        };
        for reference in references(&source.path, &from, &source.text) {
            let Some(to_unit) = unit(&reference.target) else {
                continue;
            };
            if to_unit == from_unit {
                if let Some(to) = sibling(&modules, &from, &reference.target) {
                    same_unit
                        .entry(to_unit_name(&from))
                        .or_default()
                        .insert(to_unit_name(&to));
                }
                let known = |path: &[String]| verb(path).filter(|v| verbs.contains(v));
                if let (Some(a), Some(b)) = (known(&from), known(&reference.target))
                    && a != b
                {
                    verb_uses.push(format!(
                        "verb imports verb: {}: commands::{a} imports commands::{b}",
                        reference.at
                    ));
                }
                continue;
            }
            let (low, high) = (layer(&to_unit), layer(&from_unit));
            if low > high {
                upward.push(format!(
                    "upward: {}: {} ({}) imports {} ({})",
                    reference.at,
                    to_unit_name(&from_unit),
                    layer_name(high),
                    to_unit_name(&to_unit),
                    layer_name(low)
                ));
            } else if low == high {
                same_layer
                    .entry(to_unit_name(&from_unit))
                    .or_default()
                    .insert(to_unit_name(&to_unit));
            }
        }
    }
    problems.extend(upward);
    problems.extend(cycles(&same_layer).into_iter().map(|cycle| {
        let layer_folder = cycle[0].split("::").next().unwrap_or_default().to_string();
        format!("cycle in {layer_folder}: {}", cycle.join(" -> "))
    }));
    problems.extend(cycles(&same_unit).into_iter().map(|cycle| {
        let inside = cycle[0].split("::").take(2).collect::<Vec<_>>().join("::");
        format!("cycle in {inside}: {}", cycle.join(" -> "))
    }));
    problems.extend(verb_uses);
    problems
}

/// The unit the layering is checked between: a layer's module (`rules::verdict`), or a file at the
/// root (`main`); none for the crate's root, its items (`VERSION`) or a layer's own `mod.rs`.
fn unit(path: &[String]) -> Option<Vec<String>> {
    match path {
        [layer, module, ..] if LAYERS.contains(&layer.as_str()) => {
            Some(vec![layer.clone(), module.clone()])
        }
        [layer] if LAYERS.contains(&layer.as_str()) => None,
        [root, ..] if ROOT_FILES.contains(&format!("{root}.rs").as_str()) => {
            Some(vec![root.clone()])
        }
        _ => None,
    }
}

fn to_unit_name(unit: &[String]) -> String {
    unit.join("::")
}

/// The module (file) that `target` names inside the module `from` is in, when it is neither `from`
/// nor one of its parents or children: a `mod.rs` declares its children and they use what it holds,
/// but two files side by side that use each other are a circle.
fn sibling(
    modules: &BTreeSet<Vec<String>>,
    from: &[String],
    target: &[String],
) -> Option<Vec<String>> {
    let to = (1..=target.len())
        .rev()
        .map(|length| target[..length].to_vec())
        .find(|prefix| modules.contains(prefix))?;
    let related = to.starts_with(from) || from.starts_with(&to);
    (!related).then_some(to)
}

/// The layer's index, lowest first; the root's files come after every layer.
fn layer(unit: &[String]) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == unit[0])
        .unwrap_or(LAYERS.len())
}

fn layer_name(index: usize) -> &'static str {
    LAYERS.get(index).copied().unwrap_or("root")
}

/// The verb a module path is in (`verbs::commands::step::..` is `step`), if any.
fn verb(path: &[String]) -> Option<String> {
    match path {
        [layer, commands, verb, ..] if layer == "verbs" && commands == "commands" => {
            Some(verb.clone())
        }
        _ => None,
    }
}

/// The module a file under `src/` defines: `verbs/commands/step/mod.rs` is `verbs::commands::step`;
/// `lib.rs` is the crate's root (empty), `main.rs` the binary, named `main`.
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

/// The module paths `text` names, resolved to absolute paths. `super::` counts
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

/// The absolute paths that `rest`, written after `base::`, names: one path, or
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
        if segment.is_empty() || segment == "self" {
            break;
        }
        path.push(segment.to_string());
        match rest[end..].strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
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
