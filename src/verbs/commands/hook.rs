//! `hook`: install, remove or inspect the pre-commit hook, and the check it runs.

use anyhow::Result;
use serde::Serialize;

use crate::features::hook::{self, State, describe};
use crate::system::git::{Repo, SharedFilesLock};
use crate::system::ui::{Render, Ui};

/// What `hook` is asked to do.
#[derive(Debug)]
pub enum HookOptions {
    Install,
    Uninstall,
    Status,
    /// The pre-commit check on the staged paths.
    PreCommit,
    /// The commit-msg check on the message in this file.
    CommitMsg(std::path::PathBuf),
}

/// What `hook` did: a check passed (its line on stdout), a change to the hooks (its line on stderr),
/// or the hooks' state (`hook status --json`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum HookReport {
    Checked(&'static str),
    Changed(String),
    Status(State),
}

pub fn run(repo: &Repo, options: &HookOptions) -> Result<HookReport> {
    Ok(match options {
        HookOptions::PreCommit => {
            hook::pre_commit(repo)?;
            HookReport::Checked(hook::CHECKED)
        }
        HookOptions::CommitMsg(message) => {
            hook::message::check(repo, message)?;
            HookReport::Checked(hook::message::CHECKED)
        }
        HookOptions::Install => {
            let shared = SharedFilesLock::take(repo)?;
            HookReport::Changed(describe(hook::install(repo, &shared)?))
        }
        HookOptions::Uninstall => {
            let shared = SharedFilesLock::take(repo)?;
            HookReport::Changed(describe(hook::uninstall(repo, &shared)?))
        }
        HookOptions::Status => HookReport::Status(State::read(repo)?),
    })
}

impl Render for HookReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let state = match self {
            HookReport::Checked(line) => {
                writeln!(ui.out(), "{line}")?;
                return Ok(());
            }
            HookReport::Changed(line) => {
                ui.progress(line);
                return Ok(());
            }
            HookReport::Status(state) => state,
        };
        let out = ui.out();
        let dir = state.hooks_dir.display();
        let older = " (an older version: run `git cutile-perf hook install`)";
        match &state.installed_as {
            Some(name) => {
                let age = if state.current { "" } else { older };
                writeln!(out, "installed as {dir}/{name}{age}")?
            }
            None => writeln!(out, "not installed in {dir}")?,
        }
        match state.commit_msg_current {
            Some(current) => {
                let age = if current { "" } else { older };
                writeln!(out, "commit-msg hook installed as {dir}/commit-msg{age}")?
            }
            None => writeln!(out, "commit-msg hook not installed in {dir}")?,
        }
        if let Some(saved) = &state.chained {
            writeln!(out, "chained: {} runs first", saved.display())?;
        }
        if let Some(saved) = &state.stale {
            writeln!(
                out,
                "stale: {} was saved by an earlier install and is no longer run (`hook install` or \
                 `hook uninstall` tidies it)",
                saved.display()
            )?;
        }
        Ok(())
    }
}
