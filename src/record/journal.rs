//! What survives the tool being killed: a journal of the iteration in progress and a lock, both in the
//! git directory (`cutile-perf/`, found with `git rev-parse --git-path`, so worktrees and
//! `--separate-git-dir` repositories work).
//!
//! `start` and `step` write the journal before each phase that changes the repository and remove it when
//! done; a journal found later means a command was killed mid-way, and `recovery` finishes or undoes it.
//! The lock holds the identity (pid, start time, boot) of the command that owns the repository's session
//! work; a lock whose process is gone, or whose number now names another process, is stale and taken over.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::rules::hint::{Hinted, hinted};
use crate::system::git::Repo;
use crate::system::process_identity::ProcessIdentity;

/// The verb that wrote a journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Start,
    Step,
}

/// The phase a command was in, written before the phase begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    CreatingBranch,
    RunningTests,
    CommittingBaseline,
    CommittingAttempt,
    CommittingUndo,
    CommittingIteration,
    WritingTable,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::CreatingBranch => "creating the branch",
            Phase::RunningTests => "running the tests",
            Phase::CommittingBaseline => "committing the baseline",
            Phase::CommittingAttempt => "committing the attempt",
            Phase::CommittingUndo => "undoing the attempt",
            Phase::CommittingIteration => "committing the iteration",
            Phase::WritingTable => "writing the table",
        }
    }
}

/// What `start` made outside its branch, that undoing it removes: only what was not there before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Made {
    /// The hooks (none of ours was installed).
    Hooks,
    /// The `/sandbox/` line of `.git/info/exclude`.
    ExcludeLine,
    /// The `sandbox/` directory.
    Sandbox,
}

/// An iteration in progress, as written to `journal.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub verb: Verb,
    pub pid: u32,
    pub phase: Phase,
    /// The session branch the command works on.
    pub branch: String,
    /// The commit HEAD was at before the command changed anything.
    pub base: String,
    /// `start`: the branch (or commit) it was started from, to go back to.
    pub original: Option<String>,
    /// `step`: the tested change as a tree object (allowed paths over `base`), so the edit can be found
    /// whatever happened to the work tree.
    pub edit_tree: Option<String>,
    /// `step`: the index as the user had it when the step began, as a tree object (none with unmerged
    /// paths), put back by an undo before anything was committed: what the user staged stays staged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The work tree, tracked and untracked, saved as a tree object before an undo moved anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_tree: Option<String>,
    /// The evidence note of the commit being made, as a blob written before the commit: a kill between
    /// the commit and its note leaves the note here for `repair` to attach (none before a commit phase,
    /// and in journals written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `start`: what it made beside the branch, in the order it made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made: Vec<Made>,
    /// The writing process as the kernel knows it, so a reused `pid` does not pass for it (none in
    /// journals written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<ProcessIdentity>,
}

fn dir(repo: &Repo) -> Result<PathBuf> {
    let dir = repo.git_path("cutile-perf")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// Where a running pytest's process group is recorded (see `process::record_groups_in`).
pub fn group_file(repo: &Repo) -> Result<PathBuf> {
    Ok(dir(repo)?.join("child-group"))
}

impl Journal {
    fn path(repo: &Repo) -> Result<PathBuf> {
        Ok(dir(repo)?.join("journal.json"))
    }

    /// The journal a command left, if any.
    pub fn load(repo: &Repo) -> Result<Option<Journal>> {
        read(&Journal::path(repo)?)
    }

    /// Writes the journal atomically (a rename), so a kill leaves the old one or the new one.
    pub fn save(&self, repo: &Repo) -> Result<()> {
        write(&Journal::path(repo)?, self)
    }

    /// Moves to `phase`, writing the journal first.
    pub fn enter(&mut self, repo: &Repo, phase: Phase) -> Result<()> {
        self.phase = phase;
        self.save(repo)
    }

    pub fn remove(repo: &Repo) -> Result<()> {
        remove(&Journal::path(repo)?)
    }

    /// Whether the command that wrote the journal still runs.
    pub fn writer_alive(&self) -> bool {
        self.pid != std::process::id()
            && match &self.writer {
                Some(writer) => writer.alive(),
                None => pid_alive(self.pid),
            }
    }

    /// One line for the user: what was interrupted, and where.
    pub fn describe(&self) -> String {
        let verb = match self.verb {
            Verb::Start => "start",
            Verb::Step => "step",
        };
        format!(
            "an interrupted `{verb}` on {} stopped while {}",
            self.branch,
            self.phase.as_str()
        )
    }
}

/// A `repair` taking back commits the tool did not make, as `take-back.json` holds it: written before the
/// take-back changes anything and removed once its commit landed, so that the next `repair` finds a
/// take-back cut short and either finishes it (its commit landed) or puts the work tree back and takes
/// back afresh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TakeBack {
    /// HEAD before the take-back: the last commit the tool did not make.
    pub head: String,
    /// The record's last commit, whose tree the take-back commit holds.
    pub recorded: String,
    /// What it takes back, one finding a line, as its commit lists them.
    pub findings: Vec<String>,
    /// The whole work tree before anything moved, as a tree object.
    pub work_tree: String,
    /// The patch file (relative to the work-tree root) that keeps their change, where it does not go back
    /// to the work tree; none where it stays there as an edit.
    pub patch: Option<String>,
}

impl TakeBack {
    pub fn path(repo: &Repo) -> Result<PathBuf> {
        Ok(dir(repo)?.join("take-back.json"))
    }

    pub fn load(repo: &Repo) -> Result<Option<TakeBack>> {
        read(&TakeBack::path(repo)?)
    }

    pub fn save(&self, repo: &Repo) -> Result<()> {
        write(&TakeBack::path(repo)?, self)
    }

    pub fn remove(repo: &Repo) -> Result<()> {
        remove(&TakeBack::path(repo)?)
    }
}

/// The JSON file at `path`, if there is one.
fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let value = serde_json::from_str(&text).with_context(|| {
        Hinted::new(
            format!("the journal {} is damaged", path.display()),
            "look at it, then delete it",
        )
    })?;
    Ok(Some(value))
}

/// Writes `value` to `path` atomically (a rename), so a kill leaves the old file or the new one.
fn write(path: &Path, value: &impl Serialize) -> Result<()> {
    let temporary = path.with_extension("json.new");
    let text = serde_json::to_string_pretty(value).expect("a journal serializes");
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Whether a process with `pid` exists (EPERM means it does, owned by someone else).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The repository's session lock, held for the life of the value.
pub struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Takes the lock for `verb`, or fails naming the command that holds it. A lock left by a process
    /// that no longer exists is taken over.
    pub fn take(repo: &Repo, verb: &str) -> Result<Lock> {
        let path = dir(repo)?.join("lock");
        for _ in 0..3 {
            match create_new(&path) {
                Ok(()) => return Ok(Lock { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()));
                }
            }
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            match ProcessIdentity::parse(&holder) {
                Some(owner) if owner.alive() => {
                    return Err(hinted(
                        format!(
                            "another git cutile-perf command (pid {}{}) is working on this repository",
                            owner.pid,
                            holder
                                .split_once(" (")
                                .map_or(String::new(), |(_, v)| format!(
                                    ", {}",
                                    v.trim_end().trim_end_matches(')')
                                ))
                        ),
                        format!("wait for it to finish; `{verb}` cannot run beside it"),
                    ));
                }
                // stale: its owner was killed, or its number now names another process
                Some(_) => {
                    let _ = std::fs::remove_file(&path);
                }
                // half-written (no identity yet): given a moment
                None if holder.trim().is_empty() => {
                    std::thread::sleep(std::time::Duration::from_millis(50))
                }
                None => {
                    return Err(hinted(
                        format!(
                            "the lock {} holds {:?}, which no git cutile-perf command of this version wrote",
                            path.display(),
                            holder.trim(),
                        ),
                        delete_the_lock(&path, verb),
                    ));
                }
            }
        }
        Err(hinted(
            format!("cannot take the lock {}: it stays empty", path.display()),
            delete_the_lock(&path, verb),
        ))
    }
}

/// The live command, other than this process, that holds the lock, in words (`pid 123, `step``). A
/// command takes the lock before it writes its journal: a reader of the journal alone would find
/// nothing running in between.
pub fn lock_holder(repo: &Repo) -> Result<Option<String>> {
    let Ok(holder) = std::fs::read_to_string(repo.git_path("cutile-perf")?.join("lock")) else {
        return Ok(None);
    };
    let owner = ProcessIdentity::parse(&holder)
        .filter(|owner| owner.pid != std::process::id() && owner.alive());
    Ok(owner.map(|owner| match holder.split_once(" (") {
        Some((_, verb)) => format!(
            "pid {}, {}",
            owner.pid,
            verb.trim_end().trim_end_matches(')')
        ),
        None => format!("pid {}", owner.pid),
    }))
}

/// What to do about a lock no live command holds.
fn delete_the_lock(path: &Path, verb: &str) -> String {
    format!(
        "if no git cutile-perf command runs, delete it (`rm '{}'`) and run `{verb}` again",
        path.display()
    )
}

fn create_new(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let verb = std::env::args_os()
        .nth(1)
        .map(|verb| verb.to_string_lossy().into_owned())
        .unwrap_or_default();
    match ProcessIdentity::current() {
        Some(me) => write!(file, "{me} (`{verb}`)"),
        None => write!(file, "{} (`{verb}`)", std::process::id()),
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0x7fff_fff0));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn the_journal_reads_as_written() {
        let journal = Journal {
            verb: Verb::Step,
            pid: 7,
            phase: Phase::CommittingUndo,
            branch: "cutile-perf-x".into(),
            base: "abc".into(),
            original: None,
            edit_tree: Some("def".into()),
            index: None,
            work_tree: None,
            note: Some("0123".into()),
            made: vec![Made::Hooks],
            writer: ProcessIdentity::current(),
        };
        let text = serde_json::to_string(&journal).unwrap();
        assert!(text.contains("\"phase\":\"committing-undo\""), "{text}");
        assert_eq!(serde_json::from_str::<Journal>(&text).unwrap(), journal);
    }
}
