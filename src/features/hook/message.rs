//! The commit-msg hook: on a session branch only the tool writes `Cutile-Perf-*` trailers.
//!
//! The pre-commit hook cannot see the message, so this second hook reads it. The tool proves a commit is
//! its own with a one-time nonce: just before committing it writes a random value into the git
//! directory and hands the same value to git in [`NONCE_ENV`]; the check accepts trailers only when the
//! two agree, and the file is deleted when the commit ends. Setting a variable is not enough, and the
//! value changes with every commit. A user who means to bypass hooks can (`--no-verify`, or writing
//! both): hooks guard against accidents, and `verify` and the history reader do not rely on them.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::files::{exists, set_aside, write_script};
use crate::rules::trailers::Block;
use crate::system::git::Repo;

/// Our script, as committed in `hooks/commit-msg`.
const SCRIPT: &str = include_str!("../../../hooks/commit-msg");
const MARKER: &str = "# cutile-perf-commit-msg-marker: 3f0b6a52-cutile-perf\n";
const HOOK: &str = "commit-msg";
/// Where a commit-msg hook installed before ours is kept; the script runs it first.
pub const SAVED: &str = "commit-msg.cutile-perf-orig";
/// What the check prints when it passed; the script accepts nothing else as a pass.
pub const CHECKED: &str = "cutile-perf: message checked";
/// The variable that carries the tool's nonce to the check.
pub const NONCE_ENV: &str = "GIT_CUTILE_PERF_NONCE";
/// The nonce's file, a git path.
const NONCE_FILE: &str = "cutile-perf-commit-nonce";

/// Installs our commit-msg hook, keeping one that was there as [`SAVED`]; idempotent.
pub fn install(repo: &Repo) -> Result<()> {
    let dir = repo.git_path("hooks")?;
    let hook = dir.join(HOOK);
    let existing = fs::read_to_string(&hook).ok();
    if existing.as_deref() == Some(SCRIPT) {
        return Ok(());
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ours = existing
        .as_deref()
        .is_some_and(|text| text.contains(MARKER));
    if !ours && exists(&hook)? {
        set_aside(&hook, &dir.join(SAVED))?;
    }
    write_script(&hook, SCRIPT)
}

/// Whether our commit-msg hook is in `hooks_dir`: `None`, or `Some(current)` (this version's script).
pub fn installed(hooks_dir: &Path) -> Option<bool> {
    let text = fs::read_to_string(hooks_dir.join(HOOK)).ok()?;
    text.contains(MARKER).then_some(text == SCRIPT)
}

/// Removes our commit-msg hook and puts back the one it kept, byte for byte.
pub fn uninstall(repo: &Repo) -> Result<()> {
    let dir = repo.git_path("hooks")?;
    let hook = dir.join(HOOK);
    if !fs::read_to_string(&hook).is_ok_and(|text| text.contains(MARKER)) {
        return Ok(());
    }
    fs::remove_file(&hook).with_context(|| format!("cannot remove {}", hook.display()))?;
    let saved = dir.join(SAVED);
    if exists(&saved)? {
        fs::rename(&saved, &hook).with_context(|| format!("cannot restore {}", hook.display()))?;
    }
    Ok(())
}

/// The check: on a session branch, a message with `Cutile-Perf-*` trailers needs the tool's nonce.
pub fn check(repo: &Repo, message: &Path) -> Result<()> {
    if crate::record::history::session_branch(repo)?.is_none() {
        return Ok(());
    }
    let text = fs::read_to_string(message)
        .with_context(|| format!("cannot read the commit message {}", message.display()))?;
    if Block::from_message(&text).is_empty() {
        return Ok(());
    }
    if !by_the_tool(repo)? {
        return Err(crate::rules::hint::hinted(
            "this commit message carries Cutile-Perf-* trailers, which only git cutile-perf writes on a \
             session branch",
            "describe your change without them, or record it with `git cutile-perf step`",
        ));
    }
    Ok(())
}

/// Whether the commit under way is the tool's own: git hands its hooks the nonce the tool wrote for it.
pub fn by_the_tool(repo: &Repo) -> Result<bool> {
    let expected = fs::read_to_string(repo.git_path(NONCE_FILE)?).unwrap_or_default();
    let given = std::env::var(NONCE_ENV).unwrap_or_default();
    Ok(!expected.is_empty() && given == expected)
}

/// [`Repo::commit`] with this commit's nonce, which the commit-msg hook needs to accept our trailers:
/// the way the tool commits.
pub fn commit(repo: &Repo, message: &str, allow_empty: bool) -> Result<String> {
    with_nonce(repo, |nonce| {
        let env = [(NONCE_ENV, std::ffi::OsStr::new(nonce))];
        repo.commit(message, allow_empty, &env)
    })
}

/// Runs `commit` (a git commit by the tool) with a fresh nonce in place, and removes it afterwards,
/// whether the commit succeeded or not.
fn with_nonce<T>(repo: &Repo, commit: impl FnOnce(&str) -> Result<T>) -> Result<T> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|err| anyhow::anyhow!("cannot draw the commit's nonce: {err}"))?;
    let nonce: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let path = repo.git_path(NONCE_FILE)?;
    fs::write(&path, &nonce).with_context(|| format!("cannot write {}", path.display()))?;
    let result = commit(&nonce);
    let _ = fs::remove_file(&path);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_literals_are_the_rust_constants() {
        assert!(SCRIPT.contains(MARKER));
        assert!(SCRIPT.contains(&format!("/{SAVED} ;;")));
        assert!(SCRIPT.contains(&format!(
            "if [ \"$checked\" = \"{CHECKED}\" ]; then exit 0; fi"
        )));
        assert!(SCRIPT.contains(&format!(
            "\"ref: refs/heads/{}\"*",
            crate::record::session::BRANCH_PREFIX
        )));
    }
}
