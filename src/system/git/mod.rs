//! The repository: reading commits and refs with gix, changing them with the git CLI. Only git: what
//! the commits mean (the session, its history) is read in `history.rs`.
//!
//! Writes go through `git` itself so that the user's hooks (ours included) run on the tool's own
//! commits and every config the user has (signing, hooksPath, worktrees) applies as usual.

mod commits;
mod notes;
mod shared;
mod status;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::rules::hint::{Hinted, hinted};
use crate::system::process;

pub use commits::baseline_ref;
pub use notes::NotesLock;
pub use shared::{SharedFilesLock, common_dir, other_worktrees_branches};

/// The refusal of a shallow clone (`why` says where it fell short): the record is read from the whole
/// history.
pub fn shallow(why: &str) -> anyhow::Error {
    hinted(
        format!("this clone is shallow: {why}"),
        "fetch the whole history (`git fetch --unshallow`; in CI, a full clone, e.g. fetch-depth: 0), then \
         run this again",
    )
}

/// The oldest git the tool supports and its tests run on: Debian 12's (2.39.5). An older git is refused
/// up front rather than trusted with the record untested.
pub const MINIMUM_GIT: (u32, u32) = (2, 39);

/// `git version 2.39.5` (or `git version 2.47.3.windows.1`) as (major, minor).
pub fn parse_git_version(line: &str) -> Option<(u32, u32)> {
    let version = line.trim().strip_prefix("git version ")?;
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// Refuses a git older than [`MINIMUM_GIT`], once per process. The verbs check it as they open the
/// repository; the hook does not (it runs on every commit, in a repository `start` already checked).
pub fn check_git_version() -> Result<()> {
    static CHECKED: std::sync::OnceLock<std::result::Result<(), Hinted>> =
        std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let line = process::git(Path::new("."), &["--version"], &[]).map_err(|e| Hinted::of(&e))?;
            let (major, minor) = MINIMUM_GIT;
            match parse_git_version(&line) {
                Some(found) if found >= MINIMUM_GIT => Ok(()),
                _ => Err(Hinted::new(
                    format!(
                        "{} is too old: git cutile-perf needs git {major}.{minor} or newer",
                        line.trim()
                    ),
                    "nothing was changed; install a newer git (Debian 12 and Ubuntu 24.04 ship one) and put \
                     it first on PATH",
                )),
            }
        })
        .clone()
        .map_err(anyhow::Error::from)
}

/// The name the tool's own files in the git dir begin with (`cutile-perf/`, `cutile-perf-commit-nonce`).
pub const TOOL_FILES: &str = "cutile-perf";

pub struct Repo {
    repo: gix::Repository,
    /// Absolute path of the work-tree root.
    pub root: PathBuf,
    /// [`Repo::git_path`]'s answers: where git keeps a file cannot move while a command runs, and a step
    /// asks for its own directory dozens of times (a `git` process each).
    git_paths: std::sync::Mutex<std::collections::HashMap<String, PathBuf>>,
}

/// The binary the hook runs on the tool's own commits when this process is not it: a test that runs
/// the verbs in-process names the tool's binary here, once.
pub static TOOL_BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

impl Repo {
    /// Finds the repository containing `dir`, honouring GIT_DIR and friends.
    pub fn discover(dir: &Path) -> Result<Repo> {
        let mut repo = gix::discover_with_environment_overrides(dir).map_err(|e| {
            hinted(
                format!("{} is not inside a git repository ({e})", dir.display()),
                "run git cutile-perf inside a clone of NVIDIA's TileGym repository",
            )
        })?;
        if repo
            .config_snapshot()
            .string("extensions.refStorage")
            .is_some_and(|format| format.eq_ignore_ascii_case(b"reftable"))
        {
            return Err(hinted(
                "this repository stores its refs in reftable, which git cutile-perf cannot read (and its hook, \
                 installed, would block every commit)",
                "nothing was changed; convert the repository with `git refs migrate --ref-format=files`, or \
                 work in a clone made with the files format",
            ));
        }
        // The record is the objects as written: `refs/replace/` is read past here as in every git
        // the tool runs (`verify` reports replacements).
        repo.objects.ignore_replacements = true;
        // With GIT_DIR set and no GIT_WORK_TREE (how git runs hooks in a `--separate-git-dir`
        // repository), git takes the current directory as the work tree unless the repository is bare.
        let bare = repo.config_snapshot().boolean("core.bare").unwrap_or(false);
        let workdir = match repo.workdir() {
            Some(workdir) => workdir.to_path_buf(),
            None if std::env::var_os("GIT_DIR").is_some() && !bare => dir.to_path_buf(),
            None => anyhow::bail!("this repository has no work tree (is it bare?)"),
        };
        let root = std::path::absolute(workdir)
            .and_then(|p| p.canonicalize())
            .context("cannot resolve the work-tree path")?;
        Ok(Repo {
            repo,
            root,
            git_paths: Default::default(),
        })
    }

    /// Runs git at the work-tree root and returns its stdout; a failure carries git's stderr.
    pub fn git(&self, args: &[&str]) -> Result<String> {
        String::from_utf8(self.git_bytes(args)?)
            .with_context(|| format!("git {} printed non-UTF-8 output", args.join(" ")))
    }

    /// [`Repo::git`] for output that may not be UTF-8 (paths).
    pub fn git_bytes(&self, args: &[&str]) -> Result<Vec<u8>> {
        self.git_with(args, &[], None)
    }

    /// [`Repo::git_bytes`] with more environment (`GIT_INDEX_FILE`) and `input` on git's stdin.
    pub fn git_with(
        &self,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>> {
        // Our pre-commit hook runs this very binary on the tool's own commits, on PATH or not.
        let exe = match TOOL_BINARY.get() {
            Some(tool) => tool.clone(),
            None => std::env::current_exe().unwrap_or_else(|_| "git-cutile-perf".into()),
        };
        let mut all = vec![("GIT_CUTILE_PERF", exe.as_os_str())];
        all.extend_from_slice(env);
        process::git_bytes(&self.root, args, &all, input)
    }

    /// [`Repo::git`] with `input` on git's stdin (messages, notes).
    pub fn git_input(&self, args: &[&str], input: &str) -> Result<String> {
        let out = self.git_with(args, &[], Some(input.as_bytes()))?;
        String::from_utf8(out)
            .with_context(|| format!("git {} printed non-UTF-8 output", args.join(" ")))
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

    /// Where git keeps a file of the repository (`info/exclude`, `hooks`, [`TOOL_FILES`]`/journal.json`), as
    /// an absolute path.
    pub fn git_path(&self, name: &str) -> Result<PathBuf> {
        let known = self.known_git_paths().get(name).cloned();
        if let Some(path) = known {
            return Ok(path);
        }
        // git files a name it has no rule for (ours all begin with TOOL_FILES) in the work tree's own
        // git dir, whatever follows: one answer places them all
        let path = match name.strip_prefix(TOOL_FILES) {
            Some(rest) if rest.starts_with(['/', '-']) => {
                let tool_files = self.git_path(TOOL_FILES)?;
                let own_git_dir = tool_files.parent().context("a git path has a parent")?;
                own_git_dir.join(name)
            }
            _ => {
                let path = self.git(&["rev-parse", "--git-path", name])?;
                self.root.join(path.trim_end_matches('\n'))
            }
        };
        self.known_git_paths()
            .insert(name.to_string(), path.clone());
        Ok(path)
    }

    /// [`Repo::git_path`]'s answers so far (a thread that panicked holding them left them whole).
    fn known_git_paths(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, PathBuf>> {
        self.git_paths
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_versions_are_read_from_their_line() {
        assert_eq!(parse_git_version("git version 2.39.5\n"), Some((2, 39)));
        assert_eq!(
            parse_git_version("git version 2.47.3.windows.1"),
            Some((2, 47))
        );
        assert_eq!(parse_git_version("git version 3.0"), Some((3, 0)));
        assert_eq!(parse_git_version("git version 2"), None);
        assert_eq!(parse_git_version("hub version 2.39"), None);
        assert!(parse_git_version("git version 2.38.1").unwrap() < MINIMUM_GIT);
    }
}
