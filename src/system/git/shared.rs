//! What every worktree of a repository shares with the others: the common git dir's hooks and
//! `info/exclude`, and the locks that order the commands changing them from several worktrees at once.

use std::fs::File;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Repo;

/// The common git dir (one for all worktrees), absolute.
pub fn common_dir(repo: &Repo) -> Result<PathBuf> {
    let common = repo.git(&["rev-parse", "--git-common-dir"])?;
    Ok(repo.root.join(common.trim_end_matches('\n')))
}

/// `name` in the common git dir, opened and locked; waits for another process holding it. The system
/// frees the lock when the file is closed, however the process ends.
pub(super) fn take_lock(repo: &Repo, name: &str, what: &str) -> Result<File> {
    let path = common_dir(repo)?.join(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the {what} lock {}", path.display()))?;
    file.lock()
        .with_context(|| format!("cannot take the {what} lock {}", path.display()))?;
    Ok(file)
}

/// The repository-wide lock on the files `start` adds to what every worktree shares (the hooks, the
/// sandbox's line in `info/exclude`) and takes back when it is undone: two sessions starting at once in
/// linked worktrees would each write the same hook file, and one undone would take away the other's
/// guard. Held for the life of the value; what needs it takes it as a witness.
pub struct SharedFilesLock {
    _file: File,
}

impl SharedFilesLock {
    /// Waits for and takes the lock.
    pub fn take(repo: &Repo) -> Result<SharedFilesLock> {
        let _file = take_lock(repo, "cutile-perf-shared-files.lock", "shared files")?;
        Ok(SharedFilesLock { _file })
    }
}

/// The branches other worktrees of the repository have checked out (`repo`'s own left out).
pub fn other_worktrees_branches(repo: &Repo) -> Result<Vec<String>> {
    let list = repo.git(&["worktree", "list", "--porcelain"])?;
    let own = repo
        .root
        .canonicalize()
        .unwrap_or_else(|_| repo.root.clone());
    let mut branches = Vec::new();
    let mut other = false;
    for line in list.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            let path = PathBuf::from(path);
            other = path.canonicalize().unwrap_or(path) != own;
        } else if let Some(branch) = line.strip_prefix("branch refs/heads/")
            && other
        {
            branches.push(branch.to_string());
        }
    }
    Ok(branches)
}
