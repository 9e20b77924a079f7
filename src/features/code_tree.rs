//! Each side's code: a detached worktree of its commit under the git dir, never the user's work tree,
//! and the refusal to remove one that holds an edit.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::system::git::Repo;
use crate::system::pytest::Bytecode;
use crate::system::workers::lasting;

/// Where a worker's tree is in its `home`.
fn path_in(home: &Path) -> PathBuf {
    home.join("tree")
}

/// A detached worktree of a commit, removed when dropped (with the folder it was made in, if any),
/// unless it is kept with the worker that runs from it, or it holds an edit: tracebacks, logs and JUnit
/// files point into it, so an editor may follow them there, and an edit is never removed ([`edited_trees`]
/// names it until it is taken to the work tree or undone).
pub struct CodeTree<'a> {
    repo: &'a Repo,
    pub path: PathBuf,
    /// The folder the tree was made in (a worker's home), removed with it.
    home: Option<PathBuf>,
    pub kept: bool,
    /// Whether its checkout finished: a half-made tree holds no edit of anyone's.
    made: bool,
}

impl<'a> CodeTree<'a> {
    /// A tree of `commit` for this process alone (`cutile-perf/baseline-<pid>`).
    pub fn add(repo: &'a Repo, commit: &str) -> Result<CodeTree<'a>> {
        let path = repo.git_path(&format!("cutile-perf/baseline-{}", std::process::id()))?;
        CodeTree::checkout(repo, path, None, commit)
    }

    /// A tree of `commit` in `home/tree`, the whole `home` removed with it.
    pub fn in_home(repo: &'a Repo, home: &Path, commit: &str) -> Result<CodeTree<'a>> {
        CodeTree::checkout(repo, path_in(home), Some(home.to_path_buf()), commit)
    }

    /// Why the tree is not its commit's code any more (a path written into it, or git unable to say),
    /// if it is not.
    pub fn changed(&self) -> Option<String> {
        match self.repo.worktree_changes(&self.path) {
            Ok(paths) if paths.is_empty() => None,
            Ok(paths) => Some(format!(
                "its code beside the work tree was changed: {}",
                first_few(&paths)
            )),
            Err(e) => Some(format!("cannot tell whether its code was changed: {e:#}")),
        }
    }

    /// Removes what git does not track from its `__pycache__`s ([`Bytecode::for_tree`]).
    pub fn clear_bytecode(&self) -> Result<()> {
        Bytecode::for_tree(&self.path).map(|_| ())
    }

    /// [`CodeTree::clear_bytecode`] of the tree in `home` (a kept worker's), which it leaves whoever's
    /// it is.
    pub fn clear_bytecode_in(home: &Path) -> Result<()> {
        Bytecode::for_tree(&path_in(home)).map(|_| ())
    }

    /// The bytecode in its `__pycache__`s that git does not track, with the tree's path (or why it
    /// cannot be told), if any: since it was last cleared, no test process wrote any.
    pub fn bytecode(&self) -> Option<String> {
        match Bytecode::in_tree(&self.path) {
            Ok(paths) if paths.is_empty() => None,
            Ok(paths) => Some(format!("{}: {}", self.path.display(), first_few(&paths))),
            Err(e) => Some(format!(
                "{}: cannot list its bytecode: {e:#}",
                self.path.display()
            )),
        }
    }

    /// The tree a kept worker runs from, owned (removed when dropped) from now on.
    pub fn adopt(repo: &'a Repo, home: &Path) -> CodeTree<'a> {
        CodeTree {
            repo,
            path: path_in(home),
            home: Some(home.to_path_buf()),
            kept: false,
            made: true,
        }
    }

    fn checkout(
        repo: &'a Repo,
        path: PathBuf,
        home: Option<PathBuf>,
        commit: &str,
    ) -> Result<CodeTree<'a>> {
        if path.exists() {
            // left by a killed run of this same pid number: it is ours to replace, but for an edit in it
            refuse_edited_trees(repo)?;
            let _ = repo.git(&["worktree", "remove", "--force", &path.to_string_lossy()]);
            let _ = std::fs::remove_dir_all(&path);
        }
        // owned from here: a failed checkout leaves nothing behind either
        let mut tree = CodeTree {
            repo,
            path,
            home,
            kept: false,
            made: false,
        };
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            &tree.path.to_string_lossy(),
            commit,
        ])
        .context("could not check out a side's code beside the work tree")?;
        crate::features::ignored::copy_into(repo, &tree.path)?;
        tree.made = true;
        Ok(tree)
    }
}

impl Drop for CodeTree<'_> {
    fn drop(&mut self) {
        if self.kept || (self.made && !edits_in(self.repo, &self.path).is_empty()) {
            return;
        }
        // after Ctrl-C too: git is not cut short while it puts things back
        crate::system::process::restoring(|| {
            let _ = self.repo.git(&[
                "worktree",
                "remove",
                "--force",
                &self.path.to_string_lossy(),
            ]);
            // a worker's tree is one git knows, removed with its admin files above; only the
            // process's own tree may have been left by a killed run of the same pid number
            if self.home.is_none() {
                let _ = self.repo.git(&["worktree", "prune"]);
            }
        });
        if let Some(home) = &self.home {
            let _ = std::fs::remove_dir_all(home);
        }
    }
}

/// The paths an edit left in the worktree at `path` (git's status there): none when it is its commit's
/// code, or not a worktree git can read.
pub fn edits_in(repo: &Repo, path: &Path) -> Vec<String> {
    repo.worktree_changes(path).unwrap_or_default()
}

/// Every side's worktree under the git dir (a worker's, `cutile-perf/workers/<home>/tree`, or a
/// command's own, `cutile-perf/baseline-<pid>`) that holds an edit, with the edited paths.
pub fn edited_trees(repo: &Repo) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let entries = |dir: PathBuf| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
    };
    let homes = entries(repo.git_path(lasting::WORKERS_DIR)?).map(|home| path_in(&home));
    let own = entries(repo.git_path("cutile-perf")?).filter(|path| {
        (path.file_name().unwrap_or_default().to_string_lossy()).starts_with("baseline-")
    });
    Ok(homes
        .chain(own)
        .filter(|tree| tree.is_dir())
        .map(|tree| {
            let edits = edits_in(repo, &tree);
            (tree, edits)
        })
        .filter(|(_, edits)| !edits.is_empty())
        .collect())
}

/// Refuses while a side's worktree holds an edit, before anything could remove it: names the files and
/// how to take them to the work tree.
pub fn refuse_edited_trees(repo: &Repo) -> Result<()> {
    let edited = edited_trees(repo)?;
    let Some((first, _)) = edited.first() else {
        return Ok(());
    };
    let listed: Vec<String> = (edited.iter())
        .map(|(tree, edits)| format!("{}: {}", tree.display(), edits.join(", ")))
        .collect();
    let tree = shell_quoted(first);
    let undo = format!("`git -C {tree} reset -q --hard && git -C {tree} clean -fdq`");
    // bytecode a side's code wrote (a crash's `.pyc`) is Python's cache, rebuilt from the sources: no
    // edit to take anywhere
    let only_bytecode = edited.iter().all(|(_, edits)| {
        (edits.iter()).all(|path| crate::system::pytest::is_source_bytecode(path))
    });
    let hint = match only_bytecode {
        true => format!(
            "these are Python bytecode files a side's code wrote, not sources: remove them ({undo}) and run \
             the command again"
        ),
        false => format!(
            "take the edit to your work tree (from its top: `git -C {tree} diff HEAD | git apply`, and copy \
             any new source file; a `.pyc` under `__pycache__` is Python's cache, never copied), then undo \
             it there ({undo}) and run the command again"
        ),
    };
    Err(crate::rules::hint::hinted(
        format!(
            "a side's code beside the work tree was edited there (where tracebacks and logs point), and \
             the tool never removes an edit:\n  {}",
            listed.join("\n  ")
        ),
        hint,
    ))
}

/// `path` quoted for a POSIX shell.
fn shell_quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The first three of `paths`, and how many more.
fn first_few(paths: &[String]) -> String {
    let shown = paths[..paths.len().min(3)].join(", ");
    match paths.len().saturating_sub(3) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}
