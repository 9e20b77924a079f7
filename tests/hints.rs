//! Errors carry their hints as data (`hint::Hinted`): no message of `src/` (tests excluded) writes a
//! `hint:` line into its text, where it would have to be split back out. `src/rules/hint.rs` is the one place
//! that shows a hint as a line.

use crate::support::{production, source_files};

/// Where the terminal's `hint:` line is written from the data.
const RENDERER: &str = "rules/hint.rs";

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
        source(
            "rules/hint.rs",
            "format!(\"{}\\nhint: {hint}\", self.message)\n",
        ),
        source(
            "features/locate.rs",
            "let a = 1;\nbail!(\"no kernel\\nhint: name one\")\n",
        ),
        source(
            "record/journal.rs",
            "bail!(\"locked\\n\\\n     hint: wait\")\n#[cfg(test)]\nmod tests {\n    \"x\\nhint: y\"\n}\n",
        ),
        source("system/git.rs", "hinted(\"no git\", \"install git\")\n"),
    ];
    assert_eq!(
        check(&sources),
        [
            "src/features/locate.rs:2: a hint written into a message: bail!(\"no kernel\\nhint: name one\")",
            "src/record/journal.rs:1: a hint written into a message: bail!(\"locked\\n\\",
        ]
    );
}

/// The text of every hint the code can give: the second argument of each `hinted(...)` and
/// `Hinted::new(...)` in `src/` (tests excluded), its string literals joined (a `{name}` of `format!`
/// stays as written), or the `const` it names. With the file each is in.
fn every_hint(sources: &[(String, String)]) -> Vec<(String, String)> {
    let mut hints = Vec::new();
    for (path, text) in sources {
        let text = production(text);
        for call in ["hinted(", "Hinted::new("] {
            for (at, _) in text.match_indices(call) {
                if text[..at].ends_with("fn ") || text[..at].ends_with("::") && call == "hinted(" {
                    continue;
                }
                let args = arguments(&text[at + call.len()..]);
                let Some(hint) = args.get(1) else { continue };
                hints.push((path.clone(), resolve(hint.trim(), text)));
            }
        }
    }
    hints
}

/// The top-level arguments of a call whose `(` is just before `rest`, as source text.
fn arguments(rest: &str) -> Vec<String> {
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    let mut args = vec![String::new()];
    for c in rest.chars() {
        if in_string {
            args.last_mut().unwrap().push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return args,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().unwrap().push(c);
    }
    args
}

/// A hint argument's words: its string literals, joined; a `const` named instead, that const's.
fn resolve(arg: &str, file: &str) -> String {
    let named = |name: &str| {
        let declared = &file[file.find(&format!("const {name}: &str = "))?..];
        Some(declared[..declared.find(";\n")?].to_string())
    };
    let source = match arg.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
        true => named(arg).unwrap_or_default(),
        false => arg.to_string(),
    };
    let literals: Vec<String> = source
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|literal| literal.replace("\\\n", " "))
        .collect();
    literals
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a session branch forbids doing by hand: `git commit`, `git reset`, `git rebase`, `git revert`
/// (which commits), `git stash`, `git cherry-pick` without `--no-commit`, or committing again.
fn tells_to_rewrite_by_hand(hint: &str) -> bool {
    let hint = hint.to_lowercase();
    [
        "git commit",
        "git reset",
        "git rebase",
        "git revert",
        "git stash",
        "git cherry-pick",
        "--amend",
    ]
    .iter()
    .any(|command| hint.contains(command))
        || [
            "commit again",
            "commit it",
            "commit them",
            "commit that",
            "commit or stash",
            "commit the",
            "reset the",
        ]
        .iter()
        .any(|words| hint.contains(words))
}

/// Hints given only before a session exists (by `start`, on the branch it starts from): they may tell
/// to commit there, and each says it is not the session branch.
const OFF_SESSION: &str = "never on a cutile-perf session branch";

#[test]
fn no_hint_tells_to_commit_reset_or_rebase_on_a_session_branch() {
    let hints = every_hint(&source_files());
    assert!(hints.len() >= 90, "{} hints found", hints.len());
    let broken: Vec<String> = hints
        .iter()
        .filter(|(_, hint)| tells_to_rewrite_by_hand(hint) && !hint.contains(OFF_SESSION))
        .map(|(path, hint)| format!("src/{path}: {hint}"))
        .collect();
    assert!(
        broken.is_empty(),
        "hints that send the user to git on a session branch, where only the tool commits (name the tool's \
         verb instead):\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_hint_is_found_and_read_whole() {
    let source = |path: &str, text: &str| (path.to_string(), text.to_string());
    let sources = [
        source(
            "a.rs",
            "fn f() {\n    Err(hinted(\n        format!(\"no {x}\"),\n        \"run `git cutile-perf step`, then \\\n         look (twice)\",\n    ))\n}\n",
        ),
        source(
            "b.rs",
            "const HINT: &str = \"git commit -a\";\nfn g() { Hinted::new(\"m\", HINT) }\n#[cfg(test)]\nmod tests {\n    hinted(\"x\", \"git reset\")\n}\n",
        ),
    ];
    let hints = every_hint(&sources);
    assert_eq!(
        hints,
        [
            (
                "a.rs".to_string(),
                "run `git cutile-perf step`, then look (twice)".to_string()
            ),
            ("b.rs".to_string(), "git commit -a".to_string()),
        ]
    );
    assert!(!tells_to_rewrite_by_hand(&hints[0].1));
    assert!(tells_to_rewrite_by_hand(&hints[1].1));
}
