//! The repository: reading commits and refs with gix, changing them with the git CLI. Only git: what
//! the commits mean (the session, its history) is read in `history.rs`.
//!
//! Writes go through `git` itself so that the user's hooks (ours included) run on the tool's own
//! commits and every config the user has (signing, hooksPath, worktrees) applies as usual.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::hint::{Hinted, hinted};
use crate::process;
use crate::trailers::Block;

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
        let mut repo = gix::discover_with_environment_overrides(dir)
            .map_err(|e| anyhow!("{} is not inside a git repository ({e})", dir.display()))?;
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

    /// Adds `pattern` to `.git/info/exclude` unless it is there already; whether it added it.
    pub fn exclude(&self, pattern: &str) -> Result<bool> {
        let path = self.git_path("info/exclude")?;
        let existing = std::fs::read_to_string(&path).unwrap_or_default();
        if existing.lines().any(|line| line.trim() == pattern) {
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
    pub fn unexclude(&self, pattern: &str) -> Result<()> {
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

    /// A commit's tree and parents (full ids), read in-process from `id` (a full id).
    pub fn commit_parts(&self, id: &str) -> Result<(String, Vec<String>)> {
        let commit = self.find_commit(id)?;
        let decoded = commit.decode().context("cannot decode a commit")?;
        Ok((
            decoded.tree().to_string(),
            decoded.parents().map(|p| p.to_string()).collect(),
        ))
    }

    /// The commits from HEAD back along first parents, newest first, each as its id and message. Each
    /// commit is decoded once; the walk is lazy, so a reader that stops early reads no further.
    pub fn first_parent_commits(
        &self,
    ) -> Result<impl Iterator<Item = Result<(String, String)>> + '_> {
        let mut next = Some(
            self.repo
                .head_id()
                .context("the branch has no commit")?
                .detach(),
        );
        Ok(std::iter::from_fn(move || {
            let id = next.take()?;
            let mut read = || -> Result<(String, String)> {
                let commit = (self.repo.find_commit(id))
                    .map_err(|err| self.missing_commit(err.into(), &id.to_string()))?;
                let decoded = commit.decode().context("cannot decode a commit")?;
                next = decoded.parents().next();
                Ok((
                    id.to_string(),
                    String::from_utf8_lossy(decoded.message).into_owned(),
                ))
            };
            Some(read())
        }))
    }

    /// The commit `branch`'s baseline ref names, if the ref exists.
    pub fn remembered_baseline(&self, branch: &str) -> Result<Option<String>> {
        let Some(mut reference) = self
            .repo
            .try_find_reference(&baseline_ref(branch))
            .context("cannot read the session's baseline ref")?
        else {
            return Ok(None);
        };
        Ok(reference.peel_to_id().ok().map(|id| id.to_string()))
    }

    /// Points `branch`'s baseline ref at `commit` unless it does already.
    pub fn remember_baseline(&self, branch: &str, commit: &str) -> Result<()> {
        let name = baseline_ref(branch);
        let current = self
            .repo
            .try_find_reference(&name)
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_id().ok())
            .map(|id| id.to_string());
        if current.as_deref() != Some(commit) {
            self.git(&["update-ref", &name, commit])?;
        }
        Ok(())
    }

    /// Commits what is staged with `message` (given on stdin: argv has a size limit); git's hooks run.
    /// The message is read back: a commit whose tool trailers did not survive (a `commit-msg` hook or
    /// config rewrote them) is an error naming the likely culprit, and the caller's recovery undoes it.
    /// `env` reaches git's hooks (`hook::message::commit` passes the commit's nonce in it).
    pub fn commit(
        &self,
        message: &str,
        allow_empty: bool,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<String> {
        let mut args = vec!["commit", "-q", "--no-edit", "--cleanup=verbatim", "-F", "-"];
        if allow_empty {
            args.push("--allow-empty");
        }
        // with the user's key the record is signed: forging it then takes the key, not just plumbing
        if self.signs() {
            args.push("-S");
        }
        self.git_with(&args, env, Some(message.as_bytes()))?;
        let id = self.head()?;
        let written = self.message(&id)?;
        if Block::from_message(&written) != Block::from_message(message) {
            return Err(hinted(
                format!(
                    "commit {} does not carry the trailers the tool wrote: {} rewrote its message",
                    &id[..id.len().min(12)],
                    self.message_rewriters()
                ),
                "let that hook keep the Cutile-Perf-* lines as they are (appending its own trailers is fine)",
            ));
        }
        Ok(id)
    }

    /// Whether the user has a signing key configured (`user.signingkey`, for `gpg.format` openpgp, ssh
    /// or x509), with which the tool signs its commits.
    pub fn signs(&self) -> bool {
        self.repo
            .config_snapshot()
            .string("user.signingkey")
            .is_some_and(|key| !key.is_empty())
    }

    /// The note `notes_ref` holds for `commit` (a full id), read in-process as git looks one up: the
    /// notes tree names each note by its commit's id, split into fan-out directories (`ab/cdef...`) once
    /// there are many, so a note costs the same whatever the number of notes. `None` without the ref or
    /// a note.
    pub fn note(&self, notes_ref: &str, commit: &str) -> Result<Option<Vec<u8>>> {
        gix::ObjectId::from_hex(commit.as_bytes()).context("bad commit id")?;
        let Some(mut reference) = self
            .repo
            .try_find_reference(notes_ref)
            .with_context(|| format!("cannot read {notes_ref}"))?
        else {
            return Ok(None);
        };
        let notes = reference
            .peel_to_commit()
            .with_context(|| format!("{notes_ref} is not a commit"))?;
        let mut tree = notes
            .tree()
            .with_context(|| format!("cannot read {notes_ref}'s tree"))?;
        let mut rest = commit;
        loop {
            if let Some(entry) = tree.find_entry(rest).filter(|e| e.mode().is_blob()) {
                let blob = self
                    .repo
                    .find_blob(entry.object_id())
                    .context("cannot read a note")?;
                return Ok(Some(blob.data.clone()));
            }
            let Some((dir, tail)) = rest
                .split_at_checked(2)
                .filter(|(_, tail)| !tail.is_empty())
            else {
                return Ok(None);
            };
            let Some(next) = tree
                .find_entry(dir)
                .filter(|e| e.mode().is_tree())
                .map(|e| e.object_id())
            else {
                return Ok(None);
            };
            tree = self
                .repo
                .find_tree(next)
                .context("cannot read the notes' tree")?;
            rest = tail;
        }
    }

    /// The raw message of a commit.
    pub fn message(&self, id: &str) -> Result<String> {
        let commit = self.find_commit(id)?;
        let raw = commit
            .message_raw()
            .context("cannot read a commit message")?;
        Ok(String::from_utf8_lossy(raw).into_owned())
    }

    /// The commit `id` (a full id) names, read in-process.
    fn find_commit(&self, id: &str) -> Result<gix::Commit<'_>> {
        let oid = gix::ObjectId::from_hex(id.as_bytes()).context("bad commit id")?;
        (self.repo.find_commit(oid)).map_err(|err| self.missing_commit(err.into(), id))
    }

    /// Whether this is a shallow clone: its history stops where `git clone --depth` cut it.
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(false)
    }

    /// A commit git cannot read: in a shallow clone, the history that was cut, said so with the way out.
    fn missing_commit(&self, err: anyhow::Error, id: &str) -> anyhow::Error {
        if !self.is_shallow() {
            return err.context("cannot read a commit");
        }
        shallow(&format!(
            "its history stops before commit {id}, which the session's record reaches"
        ))
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

    /// The hooks that may rewrite a commit message, as present in this repository, in words.
    fn message_rewriters(&self) -> String {
        let found: Vec<String> = ["prepare-commit-msg", "commit-msg"]
            .iter()
            .filter_map(|name| self.git_path(&format!("hooks/{name}")).ok())
            .filter(|path| path.is_file())
            .map(|path| path.display().to_string())
            .collect();
        match found.is_empty() {
            true => "git (a hook in core.hooksPath, or commit.cleanup/template config)".to_string(),
            false => format!("the hook {}", found.join(" or ")),
        }
    }
}

/// Where the tool remembers a session branch's baseline commit, so that the hook can read the session
/// without walking the history.
pub fn baseline_ref(branch: &str) -> String {
    format!("refs/cutile-perf/baseline/{branch}")
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
