//! Installing our script into the hooks directory, chaining what was there, and taking it out again.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::files::{exists, set_aside, write_script};
use super::managers::{self, MANAGERS};
use super::{HOOK, MARKER, SAVED, SCRIPT};
use crate::system::git::Repo;

/// What `hook status` reports.
#[derive(Debug, Serialize)]
pub struct State {
    pub hooks_dir: PathBuf,
    /// Where our script is, if installed: `pre-commit`, or a hook manager's name for a displaced hook.
    pub installed_as: Option<String>,
    /// Whether the installed script is this version's.
    pub current: bool,
    /// The saved original hook that our script runs first, if any.
    pub chained: Option<PathBuf>,
    /// A saved original left behind after another tool replaced our script (`pre-commit install -f`).
    pub stale: Option<PathBuf>,
    /// The commit-msg hook beside it: `None` when absent, else whether it is this version's.
    pub commit_msg_current: Option<bool>,
}

impl State {
    pub fn read(repo: &Repo) -> Result<State> {
        let hooks_dir = repo.git_path("hooks")?;
        let mut installed_as = None;
        let mut current = false;
        for name in std::iter::once(HOOK).chain(MANAGERS.iter().filter_map(|m| m.displaced_as)) {
            if let Some(text) = read_if_file(&hooks_dir.join(name))?
                && text.contains(MARKER)
            {
                current = text == SCRIPT;
                installed_as = Some(name.to_string());
                break;
            }
        }
        let saved = hooks_dir.join(SAVED);
        let (chained, stale) = match (exists(&saved)?, installed_as.is_some()) {
            (false, _) => (None, None),
            (true, true) => (Some(saved), None),
            (true, false) => (None, Some(saved)),
        };
        Ok(State {
            commit_msg_current: super::message::installed(&hooks_dir),
            hooks_dir,
            installed_as,
            current,
            chained,
            stale,
        })
    }
}

/// What `install` and `uninstall` did, for the user.
pub enum Change {
    Installed {
        chained: bool,
    },
    Updated,
    AlreadyInstalled,
    Removed,
    Restored(PathBuf),
    /// A stale saved original was removed: the hook in place does the same job.
    DroppedStale(PathBuf),
    NotInstalled,
}

/// The change in one line, for the user (on stderr, so that `start --json` keeps a clean stdout).
pub fn describe(change: Change) -> String {
    match change {
        Change::Installed { chained: false } => "pre-commit hook installed".to_string(),
        Change::Installed { chained: true } => {
            format!(
                "pre-commit hook installed; the existing hook is kept as {SAVED} and runs first"
            )
        }
        Change::Updated => "pre-commit hook updated to this version".to_string(),
        Change::AlreadyInstalled => "pre-commit hook already installed".to_string(),
        Change::Removed => "pre-commit hook removed".to_string(),
        Change::Restored(path) => format!("pre-commit hook removed; {} restored", path.display()),
        Change::DroppedStale(path) => format!(
            "pre-commit hook not installed; removed {}, a stale copy of the hook in place",
            path.display()
        ),
        Change::NotInstalled => "pre-commit hook not installed; nothing to do".to_string(),
    }
}

/// The hooks directory when other repositories may run it too: `core.hooksPath` pointing outside this
/// repository (its work tree and git directory), as a machine-wide hooks directory does. Our hook there
/// would act on every repository using it, and `uninstall` in any of them would take this one's away.
pub fn shared_dir(repo: &Repo) -> Result<Option<PathBuf>> {
    // links resolved (a hooks directory not made yet, through its parent), so that a path through a
    // link is not taken for one outside
    let resolve = |path: &Path| {
        path.canonicalize()
            .or_else(|err| match (path.parent(), path.file_name()) {
                (Some(parent), Some(name)) => parent.canonicalize().map(|p| p.join(name)),
                _ => Err(err),
            })
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let hooks = resolve(&repo.git_path("hooks")?);
    let inside = hooks.starts_with(resolve(&crate::system::git::common_dir(repo)?))
        || hooks.starts_with(resolve(&repo.root));
    Ok((!inside).then_some(hooks))
}

/// The refusal to install into, or remove from, a hooks directory other repositories use.
pub fn refuse_shared(dir: &Path) -> anyhow::Error {
    crate::rules::hint::hinted(
        format!(
            "core.hooksPath points at {}, outside this repository: other repositories run the hooks there, \
             so the session's guard would act on them, and removing it from any of them would unguard this \
             one",
            dir.display()
        ),
        format!(
            "give this repository hooks of its own, with copies of the shared ones (the guard runs them \
             first): `h=\"$(git rev-parse --path-format=absolute --git-common-dir)/hooks\" && mkdir -p \"$h\" \
             && cp -a '{}'/. \"$h\"/ && git config core.hooksPath \"$h\"`",
            dir.display()
        ),
    )
}

/// Installs our hook; idempotent. An existing foreign hook is kept as [`SAVED`] and runs first.
pub fn install(repo: &Repo) -> Result<Change> {
    if let Some(dir) = shared_dir(repo)? {
        return Err(refuse_shared(&dir));
    }
    let state = State::read(repo)?;
    let dir = &state.hooks_dir;
    if let Some(name) = &state.installed_as {
        if state.current {
            return Ok(Change::AlreadyInstalled);
        }
        write_script(&dir.join(name), SCRIPT)?;
        return Ok(Change::Updated);
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let hook = dir.join(HOOK);
    let chained = exists(&hook)?;
    if chained {
        let saved = dir.join(SAVED);
        if state.stale.is_some() && superseded(&saved, &hook)? {
            fs::remove_file(&saved)
                .with_context(|| format!("cannot remove {}", saved.display()))?;
        }
        set_aside(&hook, &saved)?;
    }
    write_script(&hook, SCRIPT)?;
    Ok(Change::Installed { chained })
}

/// Removes our hook and puts back what was there before, byte for byte; never from a hooks directory
/// other repositories use (their sessions' guard is the same file).
pub fn uninstall(repo: &Repo) -> Result<Change> {
    let state = State::read(repo)?;
    let ours = state.installed_as.is_some() || state.commit_msg_current.is_some();
    if ours && let Some(dir) = shared_dir(repo)? {
        return Err(refuse_shared(&dir));
    }
    let dir = &state.hooks_dir;
    let Some(name) = &state.installed_as else {
        return match &state.stale {
            Some(saved) if superseded(saved, &dir.join(HOOK))? => {
                fs::remove_file(saved)
                    .with_context(|| format!("cannot remove {}", saved.display()))?;
                Ok(Change::DroppedStale(saved.clone()))
            }
            _ => Ok(Change::NotInstalled),
        };
    };
    let ours = dir.join(name);
    let Some(saved) = &state.chained else {
        fs::remove_file(&ours).with_context(|| format!("cannot remove {}", ours.display()))?;
        return Ok(Change::Removed);
    };
    // The framework moved us to pre-commit.legacy after we had saved its own (older) script. Its script
    // now in place is the one its latest `pre-commit install` wrote: keep that one, drop the older copy.
    // (The framework's script must never become its own legacy hook.)
    let hook = dir.join(HOOK);
    let manager = managers::displacing_as(name);
    if manager.is_some_and(|m| m.runs_displaced) && is_manager_script(saved, manager)? {
        fs::remove_file(&ours).with_context(|| format!("cannot remove {}", ours.display()))?;
        if is_manager_script(&hook, manager)? {
            fs::remove_file(saved).with_context(|| format!("cannot remove {}", saved.display()))?;
            return Ok(Change::Removed);
        }
        fs::rename(saved, &hook)
            .with_context(|| format!("cannot restore {} as {}", saved.display(), hook.display()))?;
        return Ok(Change::Restored(hook));
    }
    let target = ours;
    fs::rename(saved, &target)
        .with_context(|| format!("cannot restore {} as {}", saved.display(), target.display()))?;
    Ok(Change::Restored(target))
}

/// The text of a hook file; `None` if there is none or it is not text (then it is not ours).
fn read_if_file(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8(bytes).ok()),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::IsADirectory) => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether a saved original is redundant beside the hook in place: the same bytes, or both scripts of
/// one manager (the pre-commit framework's differ only in the interpreter path they record).
fn superseded(saved: &Path, hook: &Path) -> Result<bool> {
    let same = matches!((fs::read(saved), fs::read(hook)), (Ok(a), Ok(b)) if a == b);
    if same {
        return Ok(true);
    }
    let text = read_if_file(saved)?.unwrap_or_default();
    let manager = managers::recognise(&text);
    Ok(manager.is_some() && is_manager_script(hook, manager)?)
}

/// Whether the file at `path` is a script of `manager`.
fn is_manager_script(path: &Path, manager: Option<&managers::Manager>) -> Result<bool> {
    let Some(manager) = manager else {
        return Ok(false);
    };
    let text = read_if_file(path)?.unwrap_or_default();
    Ok(managers::recognise(&text).is_some_and(|m| m.name == manager.name))
}
