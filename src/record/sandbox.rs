//! The work tree's sandbox directory, where the tool writes its files.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::rules::guard::SANDBOX;
use crate::system::git::Repo;

/// The sandbox directory of the work tree, where the tool writes its files.
pub fn sandbox(repo: &Repo) -> PathBuf {
    repo.root.join(SANDBOX)
}

/// The sandbox directory, made if missing and kept out of git in the clone the command runs in (`/sandbox/`
/// in its `.git/info/exclude`, which no clone or fetch carries): every command that writes there comes
/// through here first, so that the tool's own outputs are never taken for the user's changes, in the
/// repository a session began in or in one it was fetched into.
pub fn made_sandbox(repo: &Repo) -> Result<PathBuf> {
    repo.exclude(&format!("/{SANDBOX}/"))?;
    let dir = sandbox(repo);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
