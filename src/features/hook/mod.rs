//! The pre-commit hook that makes the session rule a guarantee for ordinary commits, and its management.
//!
//! The hook is `hooks/pre-commit` of this repository, installed byte for byte into the directory git runs
//! hooks from (`git rev-parse --git-path hooks`: core.hooksPath and linked worktrees included). A hook
//! that is already there is never overwritten: it is renamed to [`SAVED`] (a rename keeps its bytes, its
//! mode, even a symlink) and our script runs it first. `uninstall` renames it back.
//!
//! Other hook managers displace a hook they find the same way: the pre-commit framework (which TileGym
//! uses) moves it to `pre-commit.legacy`, lefthook to `pre-commit.old`. Our script is recognised by its
//! marker line wherever it ended up, so installing again does not wrap the manager's script a second
//! time, and `uninstall` puts the saved hook back where ours now is.
//!
//! The hook cannot see `--no-verify`, cherry-pick, merge or rebase; `step` applies the same rule itself.
//!
//! Which hook managers are known, and how each displaces a hook, is data in [`managers`]; a new manager
//! is one entry there. Installing and removing our script is [`install`]; the check it runs is `check`.

mod check;
mod files;
mod install;
pub mod managers;
pub mod message;

pub use check::pre_commit;
pub use install::{Change, State, describe, refuse_shared, shared_dir};

use crate::system::git::{Repo, SharedFilesLock};

/// Installs the pre-commit hook and, beside it, the commit-msg hook ([`message`]), under the lock every
/// worktree's commands take to change the hooks they share.
pub fn install(repo: &Repo, _shared: &SharedFilesLock) -> anyhow::Result<Change> {
    let change = install::install(repo)?;
    message::install(repo)?;
    Ok(change)
}

/// Removes both hooks, restoring what each replaced.
pub fn uninstall(repo: &Repo, _shared: &SharedFilesLock) -> anyhow::Result<Change> {
    let change = install::uninstall(repo)?;
    message::uninstall(repo)?;
    Ok(change)
}

/// Our hook script, as committed in `hooks/pre-commit`.
const SCRIPT: &str = include_str!("../../../hooks/pre-commit");
/// The line that identifies our script in any version of it.
const MARKER: &str = "# cutile-perf-hook-marker: 7c1e9d04-b1a2-4f33-9a5e-cutile-perf\n";
const HOOK: &str = "pre-commit";
/// What the check prints when it passed; the script accepts nothing else as a pass.
pub const CHECKED: &str = "cutile-perf: staged paths checked";
/// Where the hook that was installed before ours is kept; the script runs it from there.
pub const SAVED: &str = "pre-commit.cutile-perf-orig";

#[cfg(test)]
mod tests {
    use super::managers::MANAGERS;
    use super::*;
    use crate::record::session::BRANCH_PREFIX;

    #[test]
    fn the_script_carries_the_marker_and_not_the_frameworks_hash() {
        assert!(SCRIPT.contains(MARKER));
        // the framework treats any file holding its hash as its own script and overwrites it
        assert!(!SCRIPT.contains("138fd403232d2ddd5efb44317e38bf03"));
        assert!(managers::recognise(SCRIPT).is_none());
    }

    /// The shell script cannot read Rust constants: each literal it shares with them is pinned here.
    #[test]
    fn the_scripts_literals_are_the_rust_constants() {
        assert_eq!(SCRIPT.matches(&format!("/{SAVED} ;;")).count(), 2);
        assert!(SCRIPT.contains(&format!("refs/heads/{BRANCH_PREFIX}\"*")));
        assert!(SCRIPT.contains(&format!("\n{BRANCH_PREFIX}*)\n")));
        assert!(SCRIPT.contains(&format!(
            "if [ \"$checked\" = \"{CHECKED}\" ]; then exit 0; fi"
        )));
        for manager in MANAGERS {
            if let Some(variable) = manager.running_displaced_env {
                assert!(
                    SCRIPT.contains(&format!("${{{variable}:-}}")),
                    "{}",
                    manager.name
                );
            }
            if manager.runs_displaced {
                let line = manager
                    .script_line
                    .expect("a manager that runs our script is recognised");
                assert!(SCRIPT.contains(&format!("'^{line}'")), "{}", manager.name);
            }
        }
    }
}
