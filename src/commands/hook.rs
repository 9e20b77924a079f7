//! `hook`: install, remove or inspect the pre-commit hook, and the check it runs.

use std::io::Write;

use anyhow::Result;

use crate::cli::{HookAction, HookArgs, JsonArg};
use crate::git::Repo;
use crate::hook::{self, State, report};
use crate::ui;

pub fn run(repo: &Repo, args: &HookArgs, out: &mut impl Write) -> Result<()> {
    match &args.action {
        HookAction::PreCommit => {
            hook::pre_commit(repo)?;
            writeln!(out, "{}", hook::CHECKED)?;
            Ok(())
        }
        HookAction::CommitMsg { message } => {
            hook::message::check(repo, message)?;
            writeln!(out, "{}", hook::message::CHECKED)?;
            Ok(())
        }
        HookAction::Install => {
            report(hook::install(repo)?);
            Ok(())
        }
        HookAction::Uninstall => {
            report(hook::uninstall(repo)?);
            Ok(())
        }
        HookAction::Status(JsonArg { json }) => {
            let state = State::read(repo)?;
            if *json {
                return ui::write_json(out, &state);
            }
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
}
