//! Errors carry their hints as data (`hint::Hinted`): no message of `src/` (tests excluded) writes a
//! `hint:` line into its text, where it would have to be split back out. `src/hint.rs` is the one place
//! that shows a hint as a line.

use crate::support::{production, source_files};

/// Where the terminal's `hint:` line is written from the data.
const RENDERER: &str = "hint.rs";

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

#[test]
fn no_message_writes_its_hint_into_its_text() {
    let problems = check(&source_files());
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
