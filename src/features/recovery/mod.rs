//! Finishing or undoing what a journal says was in progress. One path serves a failed commit, an
//! interrupt (the verb undoes before exiting 130) and a killed tool (`repair`, or `start` cleaning up
//! its own half-made branch): the user's edit ends up in the work tree, or in a commit the record names.
//!
//! The path itself is here; finishing or undoing an interrupted `step` in `step.rs` and `start` in
//! `start.rs`, what a killed command left running or lying in `orphans.rs`, and taking back commits the
//! tool did not make in `foreign.rs`.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::record::evidence::Evidence;
use crate::record::journal::{Journal, Verb};
use crate::record::session::short;
use crate::rules::hint::{self, Hinted, hinted};
use crate::system::git::Repo;
use crate::system::process::{self, GitInterrupted, Interrupted};
use crate::system::ui::Progress;

mod foreign;
mod orphans;
mod start;
mod step;

pub use foreign::{GivenBack, TakenBack, take_back};
pub use orphans::{end_orphaned_tests, remove_orphaned_worktrees};

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The last commit had landed: the record is complete (the table was rewritten).
    Finished,
    /// Taken back to where the command began.
    Undone,
    /// Commits the tool did not make, their change taken back by a commit of the tool's.
    TakenBack,
}

#[derive(Debug, Serialize)]
pub struct Repaired {
    pub action: Action,
    /// What happened, in words.
    pub what: String,
    /// The commit the record now ends with, when finished.
    pub commit: Option<String>,
}

/// For `step` and `status`: a line saying an iteration was left unfinished, if one was, with what to
/// do about it.
pub fn unfinished(repo: &Repo) -> Result<Option<Hinted>> {
    let Some(journal) = Journal::load(repo)? else {
        // a command that holds the lock and has written no journal yet is running all the same
        return Ok(
            crate::record::journal::lock_holder(repo)?.map(|holder| Hinted {
                message: format!(
                    "a `git cutile-perf` command ({holder}) is running on this repository"
                ),
                hint: None,
            }),
        );
    };
    Ok(Some(if journal.writer_alive() {
        Hinted {
            message: format!(
                "a `git cutile-perf` command (pid {}) is running on {}",
                journal.pid, journal.branch
            ),
            hint: None,
        }
    } else {
        Hinted::new(
            journal.describe(),
            "run `git cutile-perf repair` to finish or undo it (your edit is kept)",
        )
    }))
}

/// Refuses to begin while a journal is left (`step`), after ending orphaned tests.
pub fn refuse_unfinished(repo: &Repo, progress: &Progress) -> Result<()> {
    if let Some(line) = end_orphaned_tests(repo)? {
        progress.line(&line);
    }
    match unfinished(repo)? {
        Some(unfinished) => Err(unfinished.into()),
        None => Ok(()),
    }
}

/// Ends a command's pipeline: on success the journal goes; on failure the repository is put back as the
/// command found it, and the error says where the user's edit is.
pub fn settle<T>(repo: &Repo, journal: &Journal, result: Result<T>) -> Result<T> {
    let err = match result {
        Ok(value) => {
            Journal::remove(repo)?;
            return Ok(value);
        }
        Err(err) => err,
    };
    match process::restoring(|| undo(repo, journal)) {
        Ok(words) => {
            Journal::remove(repo)?;
            if err.is::<Interrupted>() {
                Err(err)
            } else if err.is::<GitInterrupted>() || process::interrupted() {
                Err(Interrupted(match journal.verb {
                    Verb::Start => "nothing was created; you are back where you started",
                    Verb::Step => "nothing was recorded; your changes are in the work tree",
                })
                .into())
            } else {
                // `start`'s words say what it took back ("the half-made branch ... is deleted")
                let kept = match journal.verb {
                    Verb::Start => "nothing was kept",
                    Verb::Step => "nothing was recorded",
                };
                Err(Hinted {
                    message: format!("{err:#}\n{kept}: {words}"),
                    hint: hint::of(&err).map(str::to_string),
                }
                .into())
            }
        }
        Err(undo_err) => Err(hinted(
            format!(
                "{err:#}\nthe tool could not put the repository back: {undo_err:#}{}",
                saved_edit(journal)
            ),
            "run `git cutile-perf repair`",
        )),
    }
}

/// Where the tested change can be found whatever the work tree holds.
fn saved_edit(journal: &Journal) -> String {
    journal
        .edit_tree
        .as_deref()
        .map_or(String::new(), crate::features::snapshot::saved_as)
}

/// Finishes the command if its last commit landed, else undoes it (`repair`).
pub fn repair(repo: &Repo, journal: &Journal) -> Result<Repaired> {
    remove_stale_index_lock(repo, journal)?;
    let finished = match journal.verb {
        Verb::Step => step::finish(repo, journal)?,
        Verb::Start => start::finish(repo, journal)?,
    };
    let repaired = match finished {
        Some(commit) => Repaired {
            action: Action::Finished,
            what: format!(
                "the interrupted `{}` had committed {}; the table is rewritten",
                verb(journal),
                short(&commit)
            ),
            commit: Some(commit),
        },
        None => Repaired {
            action: Action::Undone,
            what: undo(repo, journal)?,
            commit: None,
        },
    };
    Journal::remove(repo)?;
    Ok(repaired)
}

fn verb(journal: &Journal) -> &'static str {
    match journal.verb {
        Verb::Start => "start",
        Verb::Step => "step",
    }
}

/// A killed git leaves `index.lock` behind; the journal's writer is gone, so the lock is its.
fn remove_stale_index_lock(repo: &Repo, journal: &Journal) -> Result<()> {
    if journal.writer_alive() {
        return Err(hinted(
            format!("{} is still running (pid {})", verb(journal), journal.pid),
            "wait for it, or stop it first",
        ));
    }
    let lock = repo.git_path("index.lock")?;
    if lock.exists() {
        std::fs::remove_file(&lock).with_context(|| format!("cannot remove {}", lock.display()))?;
    }
    Ok(())
}

/// Puts the repository back as before the command, and says how.
pub fn undo(repo: &Repo, journal: &Journal) -> Result<String> {
    match journal.verb {
        Verb::Step => step::undo(repo, journal),
        Verb::Start => start::undo(repo, journal),
    }
}

/// Whether the command's last commit carries its evidence note, attaching the one its journal kept
/// where a kill came between the two; `false` where neither has it: the commit is then undone, since
/// an iteration without its note would stand in the record for ever unchecked.
fn noted(repo: &Repo, journal: &Journal, commit: &str) -> Result<bool> {
    if crate::record::evidence::note(repo, commit)?.is_some() {
        return Ok(true);
    }
    match &journal.note {
        Some(blob) => Evidence::attach_stashed(repo, blob, commit).map(|()| true),
        None => Ok(false),
    }
}
