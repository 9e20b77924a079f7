//! Python's bytecode in a test process: none written, and none planted in the tree it runs from read.

use std::path::Path;

use anyhow::{Context, Result};

use crate::system::process;

/// Python's bytecode for a test process: none written, none planted read. The process gets
/// `PYTHONDONTWRITEBYTECODE=1` and no `PYTHONPYCACHEPREFIX`, so no test process writes a `.pyc`
/// anywhere: the standard library and site-packages load from their installation's own `__pycache__`
/// (compiled when installed), and the checkout's and the baseline's sources compile in memory at each
/// import (a cache every process writes, private or shared, costs a compile of the standard library,
/// pytest and torch in every process, or lets a candidate's code leave a `.pyc` the baseline's next
/// process loads). What a process could still load is a `.pyc` put on purpose in a `__pycache__` of
/// the tree it runs from (a side's worktree under the git dir, or the work tree for `diagnose` and
/// `inspect`): before it starts, every file git does not track is removed from the `__pycache__`
/// directories Python can import from there. In the work tree these are only Python's caches of the
/// sources (rebuilt at the next import: nothing of the user's is lost), and removing them rather than
/// refusing keeps a session working beside the user's own pytest runs, which write them. A `.pyc`
/// written into a tree after a process there started (by another side's code) is not removed before
/// that process imports, but it is found: a step clears its sides' trees as it begins and lists them
/// after its rounds, and anything there makes the step a crash that names it. An installation's
/// `__pycache__` is as writable as the installation.
pub struct Bytecode(());

/// Whether the file at `path` (relative, `/`-separated) is in a `__pycache__` Python reads a source's
/// bytecode from: every directory above it a name Python can import (a virtual environment's `.venv`
/// is not, nor is anything under it).
pub fn is_source_bytecode(path: &str) -> bool {
    let Some((dirs, _)) = path.rsplit_once('/') else {
        return false;
    };
    let mut dirs = dirs.split('/');
    dirs.next_back() == Some("__pycache__") && dirs.all(is_identifier)
}

/// Whether `word` is a name Python can import.
pub fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

impl Bytecode {
    /// Removes every file git does not track (ignored or not) from the `__pycache__` directories under
    /// `tree` that Python can import from, so that a process started there loads no bytecode of its
    /// sources but what git tracks.
    pub fn for_tree(tree: &Path) -> Result<Bytecode> {
        for path in Bytecode::in_tree(tree)? {
            let at = tree.join(path);
            match std::fs::remove_file(&at) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", at.display()));
                }
                _ => {}
            }
        }
        Ok(Bytecode(()))
    }

    /// The files git does not track (ignored or not) in the `__pycache__` directories under `tree` that
    /// Python can import from, relative to it: what [`Bytecode::for_tree`] removes. No test process
    /// writes any, so in a tree cleared since, each was put there on purpose.
    pub fn in_tree(tree: &Path) -> Result<Vec<String>> {
        let listed = process::git_bytes(tree, &["ls-files", "-z", "--others"], &[], None)
            .with_context(|| format!("cannot list the untracked files of {}", tree.display()))?;
        Ok(String::from_utf8_lossy(&listed)
            .split('\0')
            .filter(|path| is_source_bytecode(path))
            .map(str::to_string)
            .collect())
    }

    /// For a process started in no tree: a spare worker, which imports only what is installed until it
    /// is given a tree, cleared as any side's.
    pub fn outside_any_tree() -> Bytecode {
        Bytecode(())
    }

    /// The environment of a test process that writes no bytecode (an empty `PYTHONPYCACHEPREFIX` is
    /// unset to Python, whatever the caller's).
    pub fn env(&self) -> [(&'static str, String); 2] {
        [
            ("PYTHONDONTWRITEBYTECODE", "1".to_string()),
            ("PYTHONPYCACHEPREFIX", String::new()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_git_tracks_is_left_in_a_trees_pycache() {
        let tree = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let at = tree.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        let git = |args: &[&str]| process::git(tree.path(), args, &[]).unwrap();
        git(&["init", "-q"]);
        write(".gitignore", "__pycache__/\n.venv/\n");
        for tracked in ["src/pkg/mod.py", "src/pkg/__pycache__/kept.cpython-311.pyc"] {
            write(tracked, "");
            git(&["add", "-f", tracked]);
        }
        let planted = [
            "src/pkg/__pycache__/mod.cpython-311.pyc",
            "tests/__pycache__/common.cpython-311.pyc",
        ];
        let installed = ".venv/lib/site/__pycache__/torch.cpython-311.pyc";
        for path in planted.iter().chain([&installed]) {
            write(path, "");
        }
        assert_eq!(Bytecode::in_tree(tree.path()).unwrap(), planted);
        Bytecode::for_tree(tree.path()).unwrap();
        assert!(Bytecode::in_tree(tree.path()).unwrap().is_empty());
        for path in planted {
            assert!(!tree.path().join(path).exists(), "{path}");
        }
        for path in ["src/pkg/__pycache__/kept.cpython-311.pyc", installed] {
            assert!(tree.path().join(path).exists(), "{path}");
        }
    }
}
