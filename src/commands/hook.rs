//! `hook`: install, remove or inspect the pre-commit hook, and the check it runs.

use anyhow::Result;

use crate::cli::{HookAction, HookArgs, JsonArg};
use crate::git::Repo;
use crate::hook::{self, Change, SAVED, State};
use crate::ui;

pub fn run(repo: &Repo, args: &HookArgs) -> Result<()> {
    match &args.action {
        HookAction::PreCommit => {
            hook::pre_commit(repo)?;
            println!("{}", hook::CHECKED);
            Ok(())
        }
        HookAction::CommitMsg { message } => {
            hook::message::check(repo, message)?;
            println!("{}", hook::message::CHECKED);
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
                return ui::print_json(&state);
            }
            let dir = state.hooks_dir.display();
            match &state.installed_as {
                Some(name) => println!(
                    "installed as {dir}/{name}{}",
                    if state.current {
                        ""
                    } else {
                        " (an older version: run `git cutile-perf hook install`)"
                    }
                ),
                None => println!("not installed in {dir}"),
            }
            match state.commit_msg_current {
                Some(true) => println!("commit-msg hook installed as {dir}/commit-msg"),
                Some(false) => println!(
                    "commit-msg hook installed as {dir}/commit-msg (an older version: run `git cutile-perf hook install`)"
                ),
                None => println!("commit-msg hook not installed in {dir}"),
            }
            if let Some(saved) = &state.chained {
                println!("chained: {} runs first", saved.display());
            }
            if let Some(saved) = &state.stale {
                println!(
                    "stale: {} was saved by an earlier install and is no longer run (`hook install` or `hook uninstall` tidies it)",
                    saved.display()
                );
            }
            Ok(())
        }
    }
}

/// One line on stderr, so that `start --json` keeps a clean stdout.
pub fn report(change: Change) {
    let text = match change {
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
    };
    ui::progress_line(&text);
}
