//! Every `cargo test` and `cargo bench` command a tracked file names (docs, comments, messages of the
//! tests) runs a target that exists, and a `cargo test --test tests MODULE::` filter names a module of
//! the test binary: a renamed target or module cannot leave a stale command behind.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;

/// This file, whose examples are not commands.
const SELF: &str = "tests/documented_commands.rs";

/// The names of the `[[section]]` targets in `Cargo.toml` (`test` or `bench`).
fn targets(manifest: &str, section: &str) -> BTreeSet<String> {
    let header = format!("[[{section}]]");
    let mut names = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == header;
        } else if let Some(value) = line.strip_prefix("name = ").filter(|_| inside) {
            names.insert(value.trim_matches('"').to_string());
        }
    }
    names
}

/// The modules `tests/tests.rs` declares.
fn modules(tests_rs: &str) -> BTreeSet<String> {
    tests_rs
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mod "))
        .map(|name| name.trim_end_matches(';').to_string())
        .collect()
}

/// The words of each `cargo test` or `cargo bench` command in `text`, up to the end of the command
/// (a line's end, a closing backtick, bracket or quote, `;`, `&&`, `|` or a comment).
fn commands(text: &str) -> Vec<Vec<&str>> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = ["cargo test", "cargo bench"]
            .iter()
            .filter_map(|verb| rest.find(verb))
            .min()
        {
            let tail = &rest[at..];
            let end = tail
                .find(['`', ')', ']', '"', '\'', ';', '|', '#', '&'])
                .unwrap_or(tail.len());
            found.push(tail[..end].split_whitespace().collect());
            rest = &tail[end..];
        }
    }
    found
}

/// What is wrong with one command's words, if anything.
fn problem(
    words: &[&str],
    tests: &BTreeSet<String>,
    benches: &BTreeSet<String>,
    modules: &BTreeSet<String>,
) -> Option<String> {
    let value = |flag: &str| {
        let at = words.iter().position(|w| *w == flag)?;
        words.get(at + 1).copied()
    };
    if let Some(name) = value("--test") {
        if !tests.contains(name) {
            return Some(format!("no test target `{name}`"));
        }
        let filter = words.iter().skip_while(|w| **w != name).nth(1);
        if let Some(module) = filter.and_then(|f| f.split_once("::")).map(|(m, _)| m)
            && !modules.contains(module)
        {
            return Some(format!("no module `{module}` in tests/tests.rs"));
        }
    }
    match value("--bench") {
        Some(name) if !benches.contains(name) => Some(format!("no bench target `{name}`")),
        _ => None,
    }
}

#[test]
fn every_documented_cargo_command_names_a_real_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let (tests, benches) = (targets(&manifest, "test"), targets(&manifest, "bench"));
    let modules = modules(&std::fs::read_to_string(root.join("tests/tests.rs")).unwrap());
    let mut checked = 0;
    let mut stale = Vec::new();
    for path in support::tracked_files()
        .into_iter()
        .filter(|path| path != SELF)
    {
        let Ok(text) = std::fs::read_to_string(root.join(&path)) else {
            continue;
        };
        for words in commands(&text) {
            checked += 1;
            if let Some(why) = problem(&words, &tests, &benches, &modules) {
                stale.push(format!("{path}: `{}`: {why}", words.join(" ")));
            }
        }
    }
    assert!(checked > 10, "only {checked} commands found");
    assert!(stale.is_empty(), "stale commands:\n{}", stale.join("\n"));
}

#[test]
fn a_stale_target_or_module_is_named() {
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let (tests, benches, modules) = (
        names(&["tests"]),
        names(&["hook"]),
        names(&["hook", "loop_"]),
    );
    let text = "run `cargo test --test extras` or `UPDATE_GENERATED=1 cargo test --test tests real::`\n\
                then (cargo bench --bench hook) and cargo test --test tests loop_::two";
    let problems: Vec<Option<String>> = commands(text)
        .iter()
        .map(|words| problem(words, &tests, &benches, &modules))
        .collect();
    assert_eq!(
        problems,
        [
            Some("no test target `extras`".to_string()),
            Some("no module `real` in tests/tests.rs".to_string()),
            None,
            None,
        ]
    );
}

/// The paths under `src/` that `text` names (`src/rules/verdict/`, `src/system/pytest.rs`), outside a
/// TileGym checkout's own (`src/tilegym/...`) and patterns (`src/<...>`).
fn source_paths(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("src/") {
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '_' || c == '.') {
            continue;
        }
        let rest = &text[start..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || "_/.-".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if path.len() > 4 && !path.starts_with("src/tilegym") {
            found.push(path);
        }
    }
    found
}

/// Whether a tracked file documents the tool for a reader, so that a path it names must exist: the
/// README, the manual and the references, the evidence's stories and the tools' scripts.
fn documents(path: &str) -> bool {
    let page = path.ends_with(".md");
    let script = [".py", ".sh"].iter().any(|ext| path.ends_with(ext));
    path == "README.md"
        || (page
            && ["docs/", "references/", "evidence/"]
                .iter()
                .any(|dir| path.starts_with(dir)))
        || (path.starts_with("tools/") && (page || script))
}

#[test]
fn the_manual_the_evidence_and_the_tools_are_read() {
    let read: Vec<bool> = [
        "README.md",
        "docs/hook.md",
        "references/x.md",
        "evidence/2026-12-02-h200-agent/README.md",
        "tools/fit_noise.py",
        "tools/gpu-common.sh",
        "evidence/2026-12-02-h200-agent/notes.txt",
        "tests/data/x.md",
        "src/verbs/agent/skill/SKILL.md",
    ]
    .iter()
    .map(|path| documents(path))
    .collect();
    assert_eq!(
        read,
        [true, true, true, true, true, true, false, false, false]
    );
}

#[test]
fn every_source_path_the_manual_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = support::tracked_files()
        .into_iter()
        .filter(|path| documents(path));
    let mut missing = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(root.join(&page)).unwrap();
        for path in source_paths(&text) {
            if !root.join(path).exists() {
                missing.push(format!("{page}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the manual, the evidence or the tools name that are not in the tree:\n{}",
        missing.join("\n")
    );
}

#[test]
fn source_paths_are_read_whole_and_a_checkouts_own_are_left_out() {
    let text = "see `src/rules/verdict/` and src/system/pytest.rs. Not src/tilegym/ops/x.py, \
                nor tests/src/x, nor src/<layer>/.";
    assert_eq!(
        source_paths(text),
        ["src/rules/verdict/", "src/system/pytest.rs"]
    );
}

/// The rows of the design page's table from each concept to the files that hold it: the concept, and
/// the paths the row names.
fn concept_rows(page: &str) -> Vec<(String, Vec<String>)> {
    let section = page
        .split_once("\n## Concepts and their files\n")
        .map_or("", |(_, rest)| {
            rest.split("\n## ").next().unwrap_or_default()
        });
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter(|row| !row.starts_with("concept") && !row.starts_with("---"))
        .filter_map(|row| {
            let (concept, files) = row.split_once(" | ")?;
            let files = files
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            Some((concept.split(':').next()?.to_string(), files))
        })
        .collect()
}

#[test]
fn the_design_page_names_the_files_of_each_concept() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/design.md")).unwrap();
    let rows = concept_rows(&page);
    let concepts: Vec<&str> = rows.iter().map(|(concept, _)| concept.as_str()).collect();
    for concept in [
        "session",
        "iteration",
        "paired round",
        "side",
        "worker",
        "census",
        "evidence note",
    ] {
        assert!(
            concepts.contains(&concept),
            "no row for {concept}: {concepts:?}"
        );
    }
    let mut problems = Vec::new();
    for (concept, files) in &rows {
        if files.is_empty() {
            problems.push(format!("{concept}: names no file"));
        }
        problems.extend(
            files
                .iter()
                .filter(|file| !root.join(file).exists())
                .map(|file| format!("{concept}: {file} is not in the tree")),
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_concept_row_is_read_with_its_files() {
    let page = "# D\n## Concepts and their files\n\n| concept | files |\n|---|---|\n\
                | side: one code | `src/a.rs`, `src/b/` |\n| census | none |\n\n## Next\n| x | `y` |\n";
    assert_eq!(
        concept_rows(page),
        [
            (
                "side".to_string(),
                vec!["src/a.rs".to_string(), "src/b/".to_string()]
            ),
            ("census".to_string(), vec![]),
        ]
    );
}
