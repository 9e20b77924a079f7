//! Merging two sides' notes refs: each note sits on its own commit, so diverged refs merge, every note
//! kept, but for a commit both sides noted differently.

use anyhow::Result;

use super::RefStatus;
use crate::system::git::{NotesLock, Repo};

/// Merges the notes commit `theirs` into our notes ref `name` (at `mine`): notes on different commits
/// are all kept. Where both sides noted a commit differently, `prefer` (`ours` or `theirs`) says whose
/// note stays; without it nothing is merged (`Refused`). Returns the commits that conflicted.
pub(super) fn merge_notes(
    lock: &NotesLock,
    repo: &Repo,
    name: &str,
    mine: &str,
    theirs: &str,
    prefer: Option<&str>,
) -> Result<(RefStatus, Vec<String>)> {
    let ours = notes_in(repo, mine)?;
    let conflicts: Vec<String> = notes_in(repo, theirs)?
        .into_iter()
        .filter(|(object, blob)| ours.get(object).is_some_and(|mine| mine != blob))
        .map(|(object, _)| object)
        .collect();
    let (strategy, status) = match (conflicts.is_empty(), prefer) {
        // nothing noted differently: any strategy takes every note
        (true, _) => ("ours", RefStatus::Merged),
        (false, Some(side)) => (side, RefStatus::Forced),
        (false, None) => return Ok((RefStatus::Refused, conflicts)),
    };
    // `git notes merge` takes a notes ref: the remote's notes, named for the merge only
    const MERGING: &str = "refs/notes/merging-cutile-perf";
    repo.git(&["update-ref", MERGING, theirs])?;
    let merged = lock.update(name, |notes| {
        repo.git(&[
            "notes",
            &format!("--ref={notes}"),
            "merge",
            "-q",
            "-s",
            strategy,
            MERGING,
        ])
        .map(drop)
    });
    repo.git(&["update-ref", "-d", MERGING])?;
    merged?;
    Ok((status, conflicts))
}

/// The commits whose note in notes commit `mine` the later notes commit `theirs` replaced or removed:
/// a notes history that descends from ours may still have rewritten a note of ours.
pub(super) fn rewritten_notes(repo: &Repo, mine: &str, theirs: &str) -> Result<Vec<String>> {
    let theirs = notes_in(repo, theirs)?;
    Ok(notes_in(repo, mine)?
        .into_iter()
        .filter(|(object, blob)| theirs.get(object) != Some(blob))
        .map(|(object, _)| object)
        .collect())
}

/// The notes a notes commit holds: each annotated object with its note's blob (fanout paths joined).
fn notes_in(repo: &Repo, notes: &str) -> Result<std::collections::BTreeMap<String, String>> {
    let listed = repo.git(&["ls-tree", "-r", notes])?;
    Ok(listed
        .lines()
        .filter_map(|line| {
            let (meta, path) = line.split_once('\t')?;
            let blob = meta.split(' ').nth(2)?;
            Some((path.replace('/', ""), blob.to_string()))
        })
        .collect())
}
