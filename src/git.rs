//! The repository: reading history with gix, changing it with the git CLI.
//!
//! Writes go through `git` itself so that the user's hooks (ours included) run on the tool's own
//! commits and every config the user has (signing, hooksPath, worktrees) applies as usual.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::process;
use crate::session::{BRANCH_PREFIX, History, Iteration, Session};
use crate::trailers::Block;

pub struct Repo {
    repo: gix::Repository,
    /// Absolute path of the work-tree root.
    pub root: PathBuf,
}

impl Repo {
    /// Finds the repository containing `dir`, honouring GIT_DIR and friends.
    pub fn discover(dir: &Path) -> Result<Repo> {
        let repo = gix::discover_with_environment_overrides(dir)
            .map_err(|e| anyhow!("{} is not inside a git repository ({e})", dir.display()))?;
        let workdir = repo
            .workdir()
            .context("this repository has no work tree (is it bare?)")?;
        let root = std::path::absolute(workdir)
            .and_then(|p| p.canonicalize())
            .context("cannot resolve the work-tree path")?;
        Ok(Repo { repo, root })
    }

    /// Runs git at the work-tree root and returns its stdout; a failure carries git's stderr.
    pub fn git(&self, args: &[&str]) -> Result<String> {
        let output = self.git_output(args)?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            bail!("git {} failed: {}", args.join(" "), stderr.trim());
        }
        String::from_utf8(output.stdout)
            .with_context(|| format!("git {} printed non-UTF-8 output", args.join(" ")))
    }

    /// Runs git and returns its whole output, success or not.
    pub fn git_output(&self, args: &[&str]) -> Result<std::process::Output> {
        let root = self.root.to_string_lossy();
        let mut full = vec!["-C", &root];
        full.extend_from_slice(args);
        let mut command = process::command("git", &full);
        // Our pre-commit hook runs this very binary on the tool's own commits, on PATH or not.
        if let Ok(exe) = std::env::current_exe() {
            command = command.env("GIT_CUTILE_PERF", exe);
        }
        command
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .context("cannot run git: is it installed and on PATH?")
    }

    /// The checked-out branch's short name, if HEAD is on a branch.
    pub fn branch(&self) -> Result<Option<String>> {
        let head = self.repo.head_name().context("cannot read HEAD")?;
        Ok(head.map(|name| name.shorten().to_string()))
    }

    /// Whether HEAD is a branch without a commit yet.
    pub fn is_unborn(&self) -> Result<bool> {
        Ok(self.repo.head().context("cannot read HEAD")?.is_unborn())
    }

    pub fn branch_exists(&self, name: &str) -> Result<bool> {
        Ok(self
            .repo
            .try_find_reference(&format!("refs/heads/{name}"))
            .context("cannot read branches")?
            .is_some())
    }

    pub fn head(&self) -> Result<String> {
        Ok(self
            .repo
            .head_id()
            .context("the repository has no commit yet")?
            .to_string())
    }

    /// Where git keeps a file of the repository (`info/exclude`, `hooks`), as an absolute path.
    pub fn git_path(&self, name: &str) -> Result<PathBuf> {
        let path = self.git(&["rev-parse", "--git-path", name])?;
        Ok(self.root.join(path.trim_end_matches('\n')))
    }

    /// Adds `pattern` to `.git/info/exclude` unless it is there already.
    pub fn exclude(&self, pattern: &str) -> Result<()> {
        let path = self.git_path("info/exclude")?;
        let existing = std::fs::read_to_string(&path).unwrap_or_default();
        if existing.lines().any(|line| line.trim() == pattern) {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let separator = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        std::fs::write(&path, format!("{existing}{separator}{pattern}\n"))
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Paths with tracked changes (staged or not) relative to HEAD.
    pub fn tracked_changes(&self) -> Result<Vec<String>> {
        Ok(status_paths(&self.git(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=no",
            IGNORE_ONLY_SUBMODULE_WORK_TREES,
        ])?))
    }

    /// Every changed path, tracked or untracked, both sides of a rename, as git stores them.
    pub fn all_changes(&self) -> Result<Vec<String>> {
        Ok(status_paths(&self.git(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            IGNORE_ONLY_SUBMODULE_WORK_TREES,
        ])?))
    }

    /// Paths that differ between two commits.
    pub fn changed_between(&self, from: &str, to: &str) -> Result<Vec<String>> {
        let out = self.git(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            IGNORE_ONLY_SUBMODULE_WORK_TREES,
            from,
            to,
            "--",
        ])?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The session recorded on the current branch: the first-parent history from HEAD back to the
    /// baseline commit. `None` when HEAD is not on a session branch.
    pub fn history(&self) -> Result<Option<History>> {
        match self.branch()? {
            Some(branch) if branch.starts_with(BRANCH_PREFIX) => {}
            _ => return Ok(None),
        }
        let head = self
            .repo
            .head_id()
            .context("the session branch has no commit")?;
        let walk = self
            .repo
            .rev_walk([head.detach()])
            .first_parent_only()
            .all()
            .context("cannot walk history")?;
        let mut iterations = Vec::new();
        for info in walk {
            let info = info.context("cannot walk history")?;
            let commit = info.object().context("cannot read a commit")?;
            let raw = commit
                .message_raw()
                .context("cannot read a commit message")?;
            let block = Block::from_message(&String::from_utf8_lossy(raw));
            if block.is_empty() {
                continue;
            }
            let id = info.id.to_string();
            let context = || format!("commit {id} has unreadable cutile-perf trailers");
            let iteration = Iteration::read(&block).with_context(context)?;
            let session = Session::read(&block).with_context(context)?;
            if let Some(iteration) = iteration {
                iterations.push((id.clone(), iteration));
            }
            if let Some(session) = session {
                iterations.reverse();
                let history = History {
                    session,
                    baseline_commit: id,
                    iterations,
                };
                history.validate()?;
                return Ok(Some(history));
            }
        }
        Ok(None)
    }

    /// Commits what is staged with `message`; git's hooks run.
    pub fn commit(&self, message: &str, allow_empty: bool) -> Result<String> {
        let mut args = vec![
            "commit",
            "-q",
            "--no-edit",
            "--cleanup=verbatim",
            "-m",
            message,
        ];
        if allow_empty {
            args.push("--allow-empty");
        }
        self.git(&args)?;
        self.head()
    }
}

/// A submodule pointer change is a change of a path, whatever `diff.ignoreSubmodules` or
/// `submodule.<name>.ignore` say; only edits inside a submodule's own work tree, which the superproject
/// cannot commit, are left out.
const IGNORE_ONLY_SUBMODULE_WORK_TREES: &str = "--ignore-submodules=dirty";

/// Paths out of `git status --porcelain=v1 -z`: `XY path`, and for a rename a second, original path.
fn status_paths(output: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut entries = output.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (code, path) = entry.split_at(3.min(entry.len()));
        paths.push(path.to_string());
        if code.starts_with('R') || code.starts_with('C') {
            paths.extend(entries.next().map(str::to_string));
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_paths_include_both_sides_of_renames() {
        let out = " M src/a.py\0R  new.py\0old.py\0?? a b\nc.py\0";
        assert_eq!(
            status_paths(out),
            ["src/a.py", "new.py", "old.py", "a b\nc.py"]
        );
    }
}
