//! Which paths changed: in the work tree and the index (`git status`), between two commits and in each
//! of a list of commits, and the repository's own exclude file. Apart from the commits because these
//! all read paths through `git` and its porcelain output, and ignore submodules' work trees alike.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Repo, SharedFilesLock};

impl Repo {
    /// Adds `pattern` to `.git/info/exclude` unless it is there already; whether it added it. A line
    /// is added under the shared files' lock (every worktree writes the same file); most commands find
    /// it there and take no lock.
    pub fn exclude(&self, pattern: &str) -> Result<bool> {
        let path = self.git_path("info/exclude")?;
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        let there = |existing: &str| existing.lines().any(|line| line.trim() == pattern);
        if there(&read()) {
            return Ok(false);
        }
        let _shared = SharedFilesLock::take(self)?;
        let existing = read();
        if there(&existing) {
            return Ok(false);
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
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(true)
    }

    /// Takes back the line [`Repo::exclude`] added for `pattern`.
    pub fn unexclude(&self, pattern: &str, _shared: &SharedFilesLock) -> Result<()> {
        let path = self.git_path("info/exclude")?;
        let Ok(existing) = std::fs::read_to_string(&path) else {
            return Ok(());
        };
        let kept: String = existing
            .split_inclusive('\n')
            .filter(|line| line.trim() != pattern)
            .collect();
        std::fs::write(&path, kept).with_context(|| format!("cannot write {}", path.display()))
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

    /// Stages `paths` as the work tree has them: changed, new or deleted. A deletion the user already
    /// staged (`git rm`) is kept, where `git add` would refuse the path as matching no file.
    pub fn stage(&self, paths: &[String]) -> Result<()> {
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(path.as_bytes());
            input.push(0);
        }
        let args = ["update-index", "--add", "--remove", "-z", "--stdin"];
        self.git_with(&args, &[], Some(&input))?;
        Ok(())
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

    /// The paths each of `commits` (full ids) changes against its first parent (a root commit: every
    /// path it holds), in the order given, from one git process for all of them: `verify` asks this of
    /// every commit in a session.
    pub fn changed_by_commits(&self, commits: &[String]) -> Result<Vec<Vec<String>>> {
        let mut input = String::new();
        for commit in commits {
            let (_, parents) = self.commit_parts(commit)?;
            // a commit followed by one id is compared with that id alone, as `commit^ commit` would be
            let first_parent = parents.first().map_or(String::new(), |p| format!(" {p}"));
            input += &format!("{commit}{first_parent}\n");
        }
        let out = self.git_input(
            &[
                "diff-tree",
                "--stdin",
                "--always",
                "--root",
                "-r",
                "--raw",
                "-z",
                "--no-renames",
                IGNORE_ONLY_SUBMODULE_WORK_TREES,
            ],
            &input,
        )?;
        // per commit `<commit>\0`, then per path `:<modes ids status>\0<path>\0`: a path always follows
        // a `:` field, so one that spells a commit's id is still a path
        let mut changed: Vec<Vec<String>> = Vec::with_capacity(commits.len());
        let mut tokens = out.split('\0').filter(|t| !t.is_empty());
        while let Some(token) = tokens.next() {
            if !token.starts_with(':') {
                match commits.get(changed.len()) {
                    Some(next) if next == token => changed.push(Vec::new()),
                    _ => bail!("git diff-tree printed {token} where a commit was expected"),
                }
                continue;
            }
            match (changed.last_mut(), tokens.next()) {
                (Some(paths), Some(path)) => paths.push(path.to_string()),
                _ => {
                    bail!("git diff-tree printed a change outside any commit, or without its path")
                }
            }
        }
        if changed.len() != commits.len() {
            bail!(
                "git diff-tree reported {} of {} commits",
                changed.len(),
                commits.len()
            );
        }
        Ok(changed)
    }

    /// The paths where the worktree at `tree` (one of this repository's) differs from its commit,
    /// untracked files included, ignored ones not.
    pub fn worktree_changes(&self, tree: &Path) -> Result<Vec<String>> {
        let tree = tree.to_string_lossy();
        let status = self.git(&[
            "-C",
            &tree,
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--no-renames",
        ])?;
        Ok(status
            .lines()
            .map(|line| line.get(3..).unwrap_or(line).to_string())
            .collect())
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
