//! Writing a notes ref without losing a note: every write builds the new notes commit on the ref's
//! current one and moves the ref by compare-and-swap (`git update-ref <ref> <new> <old>`), again from
//! the top where another writer moved it first, under one lock for the whole repository.
//!
//! `git notes add` rewrites the ref with no check of its old value: two writers at once (two sessions
//! in linked worktrees of one repository, a fetch beside a step) each build on the same old commit and
//! the later one drops the earlier one's note. Notes refs and the lock live in the common git dir, so
//! every worktree of a repository shares both.

use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};

use super::Repo;

/// The lock file, in the common git dir (one for all worktrees).
const LOCK_FILE: &str = "cutile-perf-notes.lock";
/// How many times a write is built again after another writer moved the ref first: each retry
/// follows a write that succeeded, so running out means the ref keeps being rewritten.
const ATTEMPTS: usize = 100;

/// The repository-wide lock on notes refs, held for the life of the value (the system frees it when
/// the process ends, however it ends). Fetch and push hold it while they move notes refs.
pub struct NotesLock<'a> {
    repo: &'a Repo,
    _file: File,
}

impl NotesLock<'_> {
    /// Waits for and takes the lock.
    pub fn take(repo: &Repo) -> Result<NotesLock<'_>> {
        let file = super::shared::take_lock(repo, LOCK_FILE, "notes")?;
        Ok(NotesLock { repo, _file: file })
    }

    /// Changes notes ref `name`: `write` gets a scratch notes ref that starts as `name` is now, and
    /// changes it with `git notes --ref <scratch> ...`; `name` then moves to the result only if it
    /// still is what the scratch started from, else `write` runs again on its new value.
    pub fn update(&self, name: &str, mut write: impl FnMut(&str) -> Result<()>) -> Result<()> {
        let repo = self.repo;
        for _ in 0..ATTEMPTS {
            let old = target(repo, name)?;
            let scratch = scratch_ref();
            match &old {
                Some(old) => repo.git(&["update-ref", &scratch, old])?,
                None => repo.git(&["update-ref", "-d", &scratch])?,
            };
            let written = write(&scratch).and_then(|_| target(repo, &scratch));
            repo.git(&["update-ref", "-d", &scratch])?;
            let Some(new) = written? else {
                return Ok(());
            };
            if self.swap(name, &new, old.as_deref())? {
                return Ok(());
            }
        }
        bail!("{name} kept changing while git cutile-perf wrote a note on it ({ATTEMPTS} tries)")
    }

    /// Moves `name` from `old` (`None`: absent) to `new`; `false` when another writer moved it first.
    pub fn swap(&self, name: &str, new: &str, old: Option<&str>) -> Result<bool> {
        if old == Some(new) {
            return Ok(true);
        }
        let moved = self.repo.git(&[
            "update-ref",
            "-m",
            "notes: written by git cutile-perf",
            name,
            new,
            old.unwrap_or(""),
        ]);
        match moved {
            Ok(_) => Ok(true),
            Err(_) if target(self.repo, name)?.as_deref() != old => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// The commit `name` points at, if it exists.
fn target(repo: &Repo, name: &str) -> Result<Option<String>> {
    match repo.git(&["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")]) {
        Ok(id) => Ok(Some(id.trim().to_string())),
        Err(_) if repo.git(&["rev-parse", "-q", "--verify", name]).is_err() => Ok(None),
        Err(err) => Err(err).with_context(|| format!("{name} is not a commit")),
    }
}

/// A notes ref of this write alone: refs are shared by every worktree and thread, and a name outside
/// `refs/notes/cutile-perf*` is never pushed, should a killed write leave it behind.
fn scratch_ref() -> String {
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    format!(
        "refs/notes/writing-cutile-perf/{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            crate::system::process::git(dir.path(), args, &[]).unwrap();
        };
        git(&["init", "-q"]);
        git(&["config", "user.name", "t"]);
        git(&["config", "user.email", "t@t"]);
        for n in 0..3 {
            git(&["commit", "-q", "--allow-empty", "-m", &format!("c{n}")]);
        }
        let repo = Repo::discover(dir.path()).unwrap();
        (dir, repo)
    }

    fn add(repo: &Repo, notes: &str, commit: &str, text: &str) -> Result<()> {
        repo.git(&["notes", "--ref", notes, "add", "-f", "-m", text, commit])
            .map(drop)
    }

    #[test]
    fn a_writer_that_moved_the_ref_between_read_and_write_is_built_on_not_overwritten() {
        let (_dir, repo) = repo();
        const NOTES: &str = "refs/notes/cutile-perf";
        add(&repo, NOTES, "HEAD~2", "first").unwrap();
        let lock = NotesLock::take(&repo).unwrap();
        let mut tries = 0;
        lock.update(NOTES, |scratch| {
            tries += 1;
            if tries == 1 {
                // another writer, after this one read the ref and before it moves it
                add(&repo, NOTES, "HEAD~1", "theirs")?;
            }
            add(&repo, scratch, "HEAD", "ours")
        })
        .unwrap();
        assert_eq!(tries, 2);
        let show = |commit| {
            repo.git(&["notes", "--ref", NOTES, "show", commit])
                .unwrap()
        };
        assert_eq!(show("HEAD~2"), "first\n");
        assert_eq!(show("HEAD~1"), "theirs\n");
        assert_eq!(show("HEAD"), "ours\n");
        // the scratch refs are gone
        let left = repo.git(&["for-each-ref", "refs/notes/"]).unwrap();
        assert_eq!(left.lines().count(), 1, "{left}");
    }

    #[test]
    fn a_first_note_creates_the_ref_and_a_failed_write_changes_nothing() {
        let (_dir, repo) = repo();
        const NOTES: &str = "refs/notes/cutile-perf-diagnose";
        let lock = NotesLock::take(&repo).unwrap();
        lock.update(NOTES, |scratch| add(&repo, scratch, "HEAD", "one"))
            .unwrap();
        assert!(target(&repo, NOTES).unwrap().is_some());
        let before = target(&repo, NOTES).unwrap();
        let failed = lock.update(NOTES, |scratch| {
            add(&repo, scratch, "HEAD~1", "two")?;
            bail!("refused")
        });
        assert!(failed.is_err());
        assert_eq!(target(&repo, NOTES).unwrap(), before);
        assert!(!lock.swap(NOTES, &repo.head().unwrap(), None).unwrap());
    }
}
