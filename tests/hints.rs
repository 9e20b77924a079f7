//! Errors carry their hints as data (`hint::Hinted`): no message of `src/` (tests excluded) writes a
//! `hint:` line into its text, where it would have to be split back out. `src/hint.rs` is the one place
//! that shows a hint as a line.

use std::path::Path;

/// Where the terminal's `hint:` line is written from the data.
const RENDERER: &str = "hint.rs";

/// A file's text without its unit tests (they compare what the user sees).
fn production(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text)
}

/// The lines of `sources` (path under `src/`, text) whose string literal starts a `hint:` line: `\n`
/// right before `hint:`, or before a line continuation that goes on with it.
fn check(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources.iter().filter(|(path, _)| path != RENDERER) {
        let lines: Vec<&str> = production(text).lines().collect();
        for (number, line) in lines.iter().enumerate() {
            let continued = line.trim_end().ends_with("\\n\\")
                && lines
                    .get(number + 1)
                    .is_some_and(|next| next.trim_start().starts_with("hint:"));
            if line.contains("\\nhint:") || continued {
                problems.push(format!(
                    "src/{path}:{}: a hint written into a message: {}",
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    problems
}

fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy();
            out.push((
                relative.replace('\\', "/"),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
}

#[test]
fn no_message_writes_its_hint_into_its_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&root, &root, &mut sources);
    let problems = check(&sources);
    assert!(
        problems.is_empty(),
        "give the hint as data (hint::hinted(message, hint)):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_hint_line_in_a_message_is_named() {
    let source = |path: &str, text: &str| (path.to_string(), text.to_string());
    let sources = [
        source("hint.rs", "format!(\"{}\\nhint: {hint}\", self.message)\n"),
        source(
            "locate.rs",
            "let a = 1;\nbail!(\"no kernel\\nhint: name one\")\n",
        ),
        source(
            "journal.rs",
            "bail!(\"locked\\n\\\n     hint: wait\")\n#[cfg(test)]\nmod tests {\n    \"x\\nhint: y\"\n}\n",
        ),
        source("git.rs", "hinted(\"no git\", \"install git\")\n"),
    ];
    assert_eq!(
        check(&sources),
        [
            "src/locate.rs:2: a hint written into a message: bail!(\"no kernel\\nhint: name one\")",
            "src/journal.rs:1: a hint written into a message: bail!(\"locked\\n\\",
        ]
    );
}
