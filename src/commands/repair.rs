//! `repair`: finishes or undoes what a killed `start` or `step` left half-done, from its journal.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::JsonArg;
use crate::git::Repo;
use crate::journal::{Journal, Lock};
use crate::recovery::{self, Action};
use crate::ui;

/// What `repair --json` prints.
#[derive(Debug, Serialize)]
pub struct RepairReport {
    /// What was interrupted, in words; `None` when nothing was.
    pub interrupted: Option<String>,
    pub action: Option<Action>,
    pub what: String,
    pub commit: Option<String>,
    /// A pytest process group left running that this repair ended.
    pub ended_tests: Option<String>,
}

pub fn run(repo: &Repo, args: &JsonArg, out: &mut impl Write) -> Result<()> {
    let _lock = Lock::take(repo, "repair")?;
    let ended_tests = recovery::end_orphaned_tests(repo)?;
    let report = match Journal::load(repo)? {
        None => RepairReport {
            interrupted: None,
            action: None,
            what: "nothing to repair: no command was left unfinished".to_string(),
            commit: None,
            ended_tests,
        },
        Some(journal) => {
            let repaired = recovery::repair(repo, &journal)?;
            RepairReport {
                interrupted: Some(journal.describe()),
                action: Some(repaired.action),
                what: repaired.what,
                commit: repaired.commit,
                ended_tests,
            }
        }
    };
    if args.json {
        return ui::write_json(out, &report);
    }
    if let Some(line) = &report.ended_tests {
        writeln!(out, "{line}")?;
    }
    if let Some(interrupted) = &report.interrupted {
        writeln!(out, "{interrupted}")?;
    }
    writeln!(out, "{}", report.what)?;
    Ok(())
}
