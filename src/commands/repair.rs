//! `repair`: finishes or undoes what a killed `start` or `step` left half-done, from its journal.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::agent::next_action::{NextAction, Situation, next_action};
use crate::cli::JsonArg;
use crate::git::Repo;
use crate::history::{self, Configs};
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
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

pub fn run(repo: &Repo, args: &JsonArg, out: &mut impl Write) -> Result<()> {
    let _lock = Lock::take(repo, "repair")?;
    let ended_tests = recovery::end_orphaned_tests(repo)?;
    let (interrupted, repaired) = match Journal::load(repo)? {
        None => (None, None),
        Some(journal) => (
            Some(journal.describe()),
            Some(recovery::repair(repo, &journal)?),
        ),
    };
    // an undone `start` leaves no session; a finished or undone `step` leaves its session
    let next_action = match history::read(repo, Configs::CurrentBaseline)? {
        Some(history) => next_action(Situation::Session(&history)),
        None => next_action(Situation::NoSession),
    };
    let report = match repaired {
        None => RepairReport {
            interrupted,
            action: None,
            what: "nothing to repair: no command was left unfinished".to_string(),
            commit: None,
            ended_tests,
            next_action,
        },
        Some(repaired) => RepairReport {
            interrupted,
            action: Some(repaired.action),
            what: repaired.what,
            commit: repaired.commit,
            ended_tests,
            next_action,
        },
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
    writeln!(out, "next: {}", report.next_action.sentence)?;
    Ok(())
}
