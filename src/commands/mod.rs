//! One module per verb. A verb that works on a repository takes it opened, with its options and a writer
//! for what it prints, and returns a typed report (gitoxide-core's shape): `main` opens the repository of
//! the current directory, and a test can run the verb on a repository it prepared, without the binary.

pub mod compare;
pub mod demo;
pub mod diagnose;
pub mod extras;
pub mod hook;
pub mod inspect;
pub mod mcp;
pub mod next;
pub mod plot;
pub mod refs;
pub mod repair;
pub mod skill;
pub mod start;
pub mod status;
pub mod step;
pub mod table;
pub mod verify;

use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::git::Repo;
use crate::guard::SANDBOX;
use crate::history::{Configs, History};
use crate::session::BRANCH_PREFIX;

/// Ctrl-C (or SIGTERM) arrived mid-step; the repository was left as it was.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: {0}")]
pub struct Interrupted(pub &'static str);

/// The session on the checked-out branch, or an error saying how to get one.
pub fn require_history(repo: &Repo, configs: Configs) -> Result<History> {
    if let Some(history) = repo.history(configs)? {
        return Ok(history);
    }
    match repo.branch()? {
        Some(branch) if branch.starts_with(BRANCH_PREFIX) => bail!(
            "branch {branch} has no cutile-perf baseline commit\nhint: start a session with `git cutile-perf start <kernel>`"
        ),
        branch => bail!(
            "not on a cutile-perf session branch (HEAD is {})\nhint: start one with `git cutile-perf start <kernel>`, \
             or check out an existing {BRANCH_PREFIX}* branch",
            branch.as_deref().unwrap_or("detached")
        ),
    }
}

pub fn sandbox(repo: &Repo) -> PathBuf {
    repo.root.join(SANDBOX)
}

/// Writes sandbox/perf_results.md from the history and returns its path.
pub fn write_table(repo: &Repo, history: &History) -> Result<PathBuf> {
    let dir = sandbox(repo);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("perf_results.md");
    std::fs::write(&path, crate::table::markdown(history.iterations()))?;
    Ok(path)
}
