//! The repository speaks of the product only: no tracked file (code, comments, docs, tests, evidence)
//! names how the tool was developed or a path of the machine it was developed on.

use crate::support;

use std::path::Path;

/// Phrases no tracked file may hold (matched case-insensitively), each with why. A `#` stands for a
/// digit.
const FORBIDDEN: &[(&str, &str)] = &[
    (
        "stop #",
        "a stage of development, not a fact of the product",
    ),
    ("stops #", "stages of development"),
    ("device call", "a call to a development machine"),
    ("device machine", "a development machine"),
    ("device time ran out", "a development budget"),
    ("device budget", "a development budget"),
    ("helper session", "a session of development"),
    ("integrator", "a role in development"),
    ("issue #", "an issue number of development"),
    ("local mirrors", "a development machine's mirrors"),
    ("fetch tool", "a development tool"),
    ("/work/", "a path of a development machine"),
    (".gpu/", "a development machine's setup"),
    ("../shared/", "a folder beside the development checkout"),
];

/// This file, which holds the list.
const SELF: &str = "tests/words.rs";

/// Every tracked file's path and text (files that are not UTF-8, such as images, are skipped).
fn tracked_texts(root: &Path) -> Vec<(String, String)> {
    support::tracked_files()
        .into_iter()
        .filter(|path| path != SELF)
        .filter_map(|path| {
            let text = String::from_utf8(std::fs::read(root.join(&path)).ok()?).ok()?;
            Some((path, text))
        })
        .collect()
}

/// Where `phrase` (a `#` matching any digit) occurs in `text`, lowercased already: each byte offset.
fn occurrences(text: &str, phrase: &str) -> Vec<usize> {
    let (text, phrase) = (text.as_bytes(), phrase.as_bytes());
    (0..text.len().saturating_sub(phrase.len() - 1))
        .filter(|&at| {
            phrase.iter().zip(&text[at..]).all(|(p, t)| match p {
                b'#' => t.is_ascii_digit(),
                _ => p == t,
            })
        })
        .collect()
}

/// Every forbidden phrase in `text`, as `path:line: phrase (why)`.
fn findings(path: &str, text: &str) -> Vec<String> {
    let lower = &text.to_ascii_lowercase();
    FORBIDDEN
        .iter()
        .flat_map(|(phrase, why)| {
            occurrences(lower, phrase).into_iter().map(move |at| {
                let line = lower[..at].matches('\n').count() + 1;
                format!("{path}:{line}: \"{phrase}\" ({why})")
            })
        })
        .collect()
}

#[test]
fn no_tracked_file_speaks_of_how_the_tool_was_developed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let texts = tracked_texts(root);
    assert!(
        texts.iter().any(|(path, _)| path == "README.md"),
        "the listing holds the README"
    );
    let found: Vec<String> = texts
        .iter()
        .flat_map(|(path, text)| findings(path, text))
        .collect();
    assert!(
        found.is_empty(),
        "words of development in tracked files:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_phrases_are_found_where_they_occur() {
    let text = "A comment.\nFrom Stop 42's session, one device call, in /work/main.\n";
    let found = findings("x.rs", text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("x.rs:2: \"stop #\""), "{found:?}");
    assert!(findings("y.rs", "a SIGSTOP's latency; stop the loop; 2 stops").is_empty());
}
