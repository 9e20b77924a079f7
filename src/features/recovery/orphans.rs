//! What a killed command left behind: its tests still running, and its worktrees (a command's own, and
//! its workers' homes) that no kept worker holds.

use anyhow::Result;

use crate::record::journal::{Journal, group_file};
use crate::system::git::Repo;
use crate::system::process;
use crate::system::workers::lasting;

/// Ends a pytest left running by a killed command (unless the journal's writer still runs); returns a
/// line to tell the user, if it ended one.
pub fn end_orphaned_tests(repo: &Repo) -> Result<Option<String>> {
    if Journal::load(repo)?.is_some_and(|j| j.writer_alive()) {
        return Ok(None);
    }
    remove_orphaned_worktrees(repo)?;
    let groups = process::end_recorded_groups(&group_file(repo)?);
    let groups: Vec<String> = groups.iter().map(ToString::to_string).collect();
    Ok(match groups.len() {
        0 => None,
        1 => Some(format!(
            "ended the tests (process group {}) that a killed command left running",
            groups[0]
        )),
        _ => Some(format!(
            "ended the tests (process groups {}) that a killed command left running",
            groups.join(", ")
        )),
    })
}

/// Removes the worktrees of commands that no longer run: `cutile-perf/baseline-<pid>` (see
/// `code_tree::CodeTree::add`) and the workers' homes `cutile-perf/workers/<side>-<pid>-<n>` that no kept
/// worker's record names; returns how many.
pub fn remove_orphaned_worktrees(repo: &Repo) -> Result<usize> {
    let kept: Vec<std::path::PathBuf> = lasting::all(repo)?
        .into_iter()
        .map(|(_, worker)| worker.home)
        .collect();
    let entries = |dir: &str| -> Result<Vec<std::fs::DirEntry>> {
        let dir = repo.git_path(dir)?;
        Ok(std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .collect())
    };
    let baselines = entries("cutile-perf")?.into_iter().filter_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix("baseline-")?.parse().ok()?;
        Some((pid, entry.path(), entry.path()))
    });
    // a home is named `<side>-<pid>-<n>`
    let homes = entries(lasting::WORKERS_DIR)?
        .into_iter()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.rsplit('-').nth(1)?.parse().ok()?;
            Some((pid, entry.path(), entry.path().join("tree")))
        });
    let mut removed = 0;
    for (pid, dir, worktree) in baselines.chain(homes) {
        // an edit in it (an editor following a traceback there) stays: `step` names it
        if crate::record::journal::pid_alive(pid)
            || kept.contains(&dir)
            || !dir.is_dir()
            || !crate::features::code_tree::edits_in(repo, &worktree).is_empty()
        {
            continue;
        }
        let _ = repo.git(&["worktree", "remove", "--force", &worktree.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&dir);
        removed += 1;
    }
    if removed > 0 {
        repo.git(&["worktree", "prune"])?;
    }
    Ok(removed)
}
