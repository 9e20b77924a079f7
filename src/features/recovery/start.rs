//! Finishing or undoing an interrupted `start`: its baseline commit kept where it landed with its note,
//! else its half-made branch deleted and what it made beside it removed.

use anyhow::{Context, Result};

use super::noted;
use crate::record::history::{Configs, require_history, write_table};
use crate::record::journal::{Journal, Made};
use crate::record::session::{BRANCH_PREFIX, Session};
use crate::rules::hint::hinted;
use crate::rules::trailers::Block;
use crate::system::git::{Repo, SharedFilesLock, other_worktrees_branches};

/// Deletes the half-made branch and what `start` made beside it; says what.
pub(super) fn undo(repo: &Repo, journal: &Journal) -> Result<String> {
    if !repo.branch_exists(&journal.branch)? {
        return Ok("no branch was made yet".to_string());
    }
    let tip = repo
        .git(&["rev-parse", "--verify", &journal.branch])?
        .trim()
        .to_string();
    let own = tip == journal.base
        || (repo
            .git(&["rev-parse", "--verify", &format!("{tip}^")])?
            .trim()
            == journal.base
            && is_own_empty_commit(repo, &tip, &journal.base)?);
    if !own {
        return Err(hinted(
            format!(
                "branch {} has commits the interrupted `start` did not make",
                journal.branch
            ),
            "look at it; delete it yourself if it is not needed",
        ));
    }
    if repo.branch()?.as_deref() == Some(journal.branch.as_str()) {
        let original = journal.original.as_deref().unwrap_or(&journal.base);
        repo.git(&["checkout", "-q", original])?;
    }
    repo.git(&["branch", "-q", "-D", &journal.branch])?;
    Ok(format!(
        "the half-made branch {} is deleted{}",
        journal.branch,
        take_back_made(repo, &journal.made)?
    ))
}

/// Removes what `start` made beside its branch, newest first; says what, for the user. The hooks and
/// the exclude line are shared by every worktree of the repository: while another worktree is on a
/// session branch they guard its session too, and stay.
fn take_back_made(repo: &Repo, made: &[Made]) -> Result<String> {
    let shared = SharedFilesLock::take(repo)?;
    let sessions_beside =
        (other_worktrees_branches(repo)?.iter()).any(|branch| branch.starts_with(BRANCH_PREFIX));
    let mut removed = Vec::new();
    let mut kept = false;
    for thing in made.iter().rev() {
        match thing {
            Made::Hooks | Made::ExcludeLine if sessions_beside => kept = true,
            Made::Hooks => {
                crate::features::hook::uninstall(repo, &shared)?;
                removed.push("its hooks");
            }
            Made::ExcludeLine => {
                repo.unexclude(&format!("/{}/", crate::rules::guard::SANDBOX), &shared)?;
                removed.push("its line in .git/info/exclude");
            }
            Made::Sandbox => {
                let sandbox = crate::record::history::sandbox(repo);
                if sandbox.exists() {
                    std::fs::remove_dir_all(&sandbox)
                        .with_context(|| format!("cannot remove {}", sandbox.display()))?;
                }
                removed.push("sandbox/ with the baseline's logs");
            }
        }
    }
    let kept = match kept {
        true => {
            "; the hooks and the sandbox's exclude line stay: another worktree's session shares them"
        }
        false => "",
    };
    Ok(match removed.is_empty() {
        true => kept.to_string(),
        false => format!(", as are {}{kept}", removed.join(", ")),
    })
}

/// The baseline commit `start` made, judged by what a hook cannot have changed: the tool's subject and
/// no change to the tree (a hook that appended to the message broke its trailers, not its origin).
fn is_own_empty_commit(repo: &Repo, commit: &str, base: &str) -> Result<bool> {
    let tree = |rev: &str| repo.git(&["rev-parse", &format!("{rev}^{{tree}}")]);
    Ok(repo.message(commit)?.starts_with("cutile-perf:") && tree(commit)? == tree(base)?)
}

fn is_baseline(repo: &Repo, commit: &str) -> Result<bool> {
    Ok(Session::read(&Block::from_message(&repo.message(commit)?))?.is_some())
}

/// The baseline commit, if the interrupted start made it: remembered for the hook, table written.
pub(super) fn finish(repo: &Repo, journal: &Journal) -> Result<Option<String>> {
    if !repo.branch_exists(&journal.branch)?
        || repo.branch()?.as_deref() != Some(journal.branch.as_str())
    {
        return Ok(None);
    }
    let head = repo.head()?;
    if head == journal.base || !is_baseline(repo, &head)? || !noted(repo, journal, &head)? {
        return Ok(None);
    }
    repo.remember_baseline(&journal.branch, &head)?;
    let history = require_history(repo, Configs::CurrentBaseline)?;
    write_table(repo, &history)?;
    Ok(Some(head))
}
