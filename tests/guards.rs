//! What keeps the suite honest about itself: every test file is compiled into the one test binary, the
//! README's commands that CI runs are read from their own sections, and the tracked tree stays small.

use std::path::Path;
use std::process::Command;

use crate::support;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `mod` lines of `tests/tests.rs` (with `#[path]`, the file named there).
fn declared(tests_rs: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut path = None;
    for line in tests_rs.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path = rest.strip_suffix("\"]").map(str::to_string);
        } else if let Some(name) = line.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
            names.push(path.take().unwrap_or(format!("{name}.rs")));
        }
    }
    names
}

/// Cargo compiles only `tests/tests.rs` (`autotests = false`): a file beside it without a `mod` line
/// there would never run, and nothing else would say so.
#[test]
fn every_test_file_is_declared_in_the_test_binary() {
    let tests = repo_root().join("tests");
    let declared = declared(&std::fs::read_to_string(tests.join("tests.rs")).unwrap());
    let mut undeclared: Vec<String> = std::fs::read_dir(&tests)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "tests.rs")
        .filter(|name| !declared.contains(name))
        .collect();
    undeclared.sort();
    assert!(
        undeclared.is_empty(),
        "not compiled into the test binary: {undeclared:?} (add a `mod` line to tests/tests.rs)"
    );
    assert!(declared.contains(&"loop.rs".to_string()), "{declared:?}");
}

/// `tools/bare-machine.sh --print test|try README`'s output, or `None` where it fails.
fn readme_command(section: &str, readme: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("README.md");
    std::fs::write(&path, readme).unwrap();
    let out = Command::new(repo_root().join("tools/bare-machine.sh"))
        .args(["--print", section])
        .arg(&path)
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn ci_reads_each_readme_command_from_its_own_section() {
    let readme = "# tool\n\n## Try it (no GPU needed)\n\n    cargo install --path .\n\n(more)\n\n\
                  ## Testing notes\n\n    not this\n\n## Test\n\n    cargo test\n\n    cargo other\n";
    assert_eq!(
        readme_command("try", readme).as_deref(),
        Some("cargo install --path .\n")
    );
    assert_eq!(
        readme_command("test", readme).as_deref(),
        Some("cargo test\n")
    );
    // a fenced block, a prompt and a comment before the command
    let fenced = "## Test\n\n```sh\n# the whole suite\n$ cargo test --locked\n```\n";
    assert_eq!(
        readme_command("test", fenced).as_deref(),
        Some("cargo test --locked\n")
    );
    // a section without a command is an error, not the next section's line
    let empty = "## Test\n\nSee below.\n\n## Try it\n\n    cargo install --path .\n";
    assert_eq!(readme_command("test", empty), None);
    let empty_block = "## Test\n\n```\n```\n\n    cargo test\n";
    assert_eq!(readme_command("test", empty_block), None);
    // this README's own
    let ours = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(readme_command("test", &ours).is_some_and(|c| c.starts_with("cargo ")));
}

/// The tracked files take under 6 MB: records and evidence are kept as the tests and pages read them
/// (reduced to what is read, or gzip-compressed), not as their runs wrote them.
#[test]
fn the_tracked_tree_stays_under_six_megabytes() {
    const LIMIT: u64 = 6_000_000;
    let mut sizes: Vec<(u64, String)> = support::tracked_files()
        .into_iter()
        .map(|path| {
            let size = std::fs::metadata(repo_root().join(&path)).map_or(0, |m| m.len());
            (size, path)
        })
        .collect();
    let total: u64 = sizes.iter().map(|(size, _)| size).sum();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let largest: Vec<String> = sizes
        .iter()
        .take(10)
        .map(|(size, path)| format!("{size:>9} {path}"))
        .collect();
    assert!(
        total < LIMIT,
        "the tracked files take {total} bytes, {LIMIT} at the most; the largest:\n{}",
        largest.join("\n")
    );
}
