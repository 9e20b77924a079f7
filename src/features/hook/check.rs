//! The check the hook runs: on a session branch, every staged path must be one the session allows.

use anyhow::{Context, Result};

use crate::system::git::Repo;
use crate::{record::history, rules::guard};

/// The check itself: off a session branch nothing; on one, only the tool commits, and every staged
/// path must be allowed.
pub fn pre_commit(repo: &Repo) -> Result<()> {
    let Some(branch) = history::session_branch(repo)? else {
        return Ok(());
    };
    // A session branch without a baseline (the moment between `start`'s checkout and its baseline
    // commit, or a hand-made branch) allows no path at all.
    let session_allowed = history::session(repo)?.map(|s| s.allowed);
    let allowed = session_allowed.as_deref().unwrap_or_default();
    let staged = staged(repo)?;
    let outside: Vec<&Staged> = staged
        .iter()
        .filter(|s| !guard::disallowed(std::slice::from_ref(&s.path), allowed).is_empty())
        .collect();
    let by_the_tool = super::message::by_the_tool(repo)?;
    if by_the_tool && outside.is_empty() {
        return Ok(());
    }
    let mut message = match by_the_tool {
        true => String::new(),
        false => format!(
            "this commit on session branch {branch} is not one git cutile-perf makes: on a session branch \
             only the tool commits, so that every change is measured and recorded\n"
        ),
    };
    if outside.is_empty() {
        return Err(crate::rules::hint::hinted(message.trim_end(), HAND_COMMIT));
    }
    message.push_str(&format!(
        "this commit on session branch {branch} stages paths outside the session's allowed set:\n"
    ));
    for entry in outside {
        // `:/` names the path from the top, so the command works from any subdirectory
        let spec = shell_quote(&format!(":/{}", entry.path));
        let unstage = if entry.added {
            format!("git rm -q --cached -- {spec}")
        } else {
            format!("git restore --staged -- {spec}")
        };
        message.push_str(&format!(
            "  {}\n      unstage: {unstage}\n",
            shell_quote(&entry.path)
        ));
    }
    match &session_allowed {
        Some(allowed) => message.push_str(&format!(
            "allowed: {} (and never anything under {}/)",
            allowed
                .iter()
                .map(|p| shell_quote(p))
                .collect::<Vec<_>>()
                .join(", "),
            guard::SANDBOX
        )),
        None => message
            .push_str("allowed: nothing, since this branch has no cutile-perf baseline commit"),
    }
    // `commit -a` and `commit <paths>` hand the hook a temporary index (`….lock`) that they fill again
    // from the work tree: unstaging does not help there
    if std::env::var("GIT_INDEX_FILE").is_ok_and(|index| index.ends_with(".lock")) {
        message.push_str(
            "\nnote: this commit stages from the work tree (`commit -a` or `commit <paths>`), so unstaging \
             does not help: undo those changes in the work tree",
        );
    }
    Err(crate::rules::hint::hinted(
        message,
        "nothing was committed: undo the changes to those paths (the session may not change them), then \
         record the rest with `git cutile-perf step`",
    ))
}

/// What a hand commit on a session branch is told: the tool's verb records the change instead.
const HAND_COMMIT: &str = "nothing was committed and your change is still in the work tree: record it with \
     `git cutile-perf step --json --opt <LETTER> --cause <CAUSE> \"<what you changed>\"` (`git cutile-perf status --json` says \
     what the loop expects); never commit on a session branch yourself";

/// One staged change; a rename or copy is two (`--no-renames`), so both sides are checked.
struct Staged {
    path: String,
    added: bool,
}

/// What the index (GIT_INDEX_FILE, as git gives it to the hook) changes relative to HEAD, or to the
/// empty tree when HEAD is unborn (`git diff --cached` does that without a revision).
fn staged(repo: &Repo) -> Result<Vec<Staged>> {
    // --ignore-submodules=none: a config that ignores submodules must not hide a pointer change.
    let args = [
        "diff",
        "--cached",
        "--name-status",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--ignore-submodules=none",
        "--",
    ];
    parse_name_status(&repo.git_bytes(&args)?)
}

/// `STATUS\0PATH\0...`. A path that is not UTF-8 is kept lossily converted with a U+FFFD marker
/// prepended, so it can never equal an allowed path (those are UTF-8) and is always rejected.
fn parse_name_status(out: &[u8]) -> Result<Vec<Staged>> {
    let mut fields = out.split(|&b| b == 0);
    let mut staged = Vec::new();
    while let Some(status) = fields.next().filter(|s| !s.is_empty()) {
        let path = fields
            .next()
            .context("git diff --name-status: a status without a path")?;
        let path = match std::str::from_utf8(path) {
            Ok(path) => path.to_string(),
            Err(_) => format!("\u{FFFD}(not UTF-8) {}", String::from_utf8_lossy(path)),
        };
        staged.push(Staged {
            path,
            added: status == b"A",
        });
    }
    Ok(staged)
}

/// A path as a shell word the user can paste: bare when safe, single-quoted, or `$'...'` when it
/// holds control characters (a newline, an escape sequence) that must not reach the terminal raw.
fn shell_quote(path: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !path.is_empty() && path.chars().all(safe) {
        return path.to_string();
    }
    if !path.chars().any(char::is_control) {
        return format!("'{}'", path.replace('\'', r"'\''"));
    }
    let mut quoted = String::from("$'");
    for c in path.chars() {
        match c {
            '\n' => quoted.push_str(r"\n"),
            '\t' => quoted.push_str(r"\t"),
            '\\' => quoted.push_str(r"\\"),
            '\'' => quoted.push_str(r"\'"),
            c if c.is_ascii_control() => quoted.push_str(&format!(r"\x{:02x}", c as u32)),
            c if c.is_control() => quoted.push_str(&format!(r"\u{:04x}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_keeps_every_path() {
        let out = b"M\0src/k.py\0A\0a b\nc\0D\0old.py\0T\0link\0A\0bad\xff\0";
        let staged = parse_name_status(out).unwrap();
        let paths: Vec<&str> = staged.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "src/k.py",
                "a b\nc",
                "old.py",
                "link",
                "\u{FFFD}(not UTF-8) bad\u{FFFD}"
            ]
        );
        let added: Vec<bool> = staged.iter().map(|s| s.added).collect();
        assert_eq!(added, [false, true, false, false, true]);
    }

    #[test]
    fn paths_are_quoted_for_pasting() {
        assert_eq!(shell_quote("tests/test_x.py"), "tests/test_x.py");
        assert_eq!(shell_quote("a b's.py"), r"'a b'\''s.py'");
        assert_eq!(
            shell_quote("a\nb\u{1b}[31m\u{85}"),
            r"$'a\nb\x1b[31m\u0085'"
        );
        assert_eq!(shell_quote("é.py"), "'é.py'");
    }
}
