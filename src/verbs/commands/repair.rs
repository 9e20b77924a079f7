//! `repair`: finishes or undoes what a killed `start` or `step` left half-done, from its journal.

use anyhow::Result;
use serde::Serialize;

use crate::features::recovery::{self, Action, Repaired};
use crate::features::recovery::{GivenBack, TakenBack, take_back};
use crate::measure::paired;
use crate::record::history::{self, Configs};
use crate::record::journal::{Journal, Lock};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};
use crate::verbs::agent::next_action::{NextAction, Situation, next_action, of_session};

/// What `repair --json` prints.
#[derive(Debug, Serialize)]
pub struct RepairReport {
    /// What was interrupted, in words; `None` when nothing was.
    pub interrupted: Option<String>,
    pub action: Option<Action>,
    pub what: String,
    pub commit: Option<String>,
    /// Where the change of commits it took back went: `{"to": "work-tree"}` (an edit not yet stepped) or
    /// `{"to": "patch", "path", "apply"}`; `None` when it took nothing back.
    pub given_back: Option<GivenBack>,
    /// A pytest process group left running that this repair ended.
    pub ended_tests: Option<String>,
    /// The warm workers kept between steps that this repair ended (their pids).
    pub ended_workers: Vec<u32>,
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

pub fn run(repo: &Repo) -> Result<RepairReport> {
    let _lock = Lock::take(repo, "repair")?;
    let ended_tests = recovery::end_orphaned_tests(repo)?;
    let ended_workers = paired::end_kept_workers(repo)?;
    let (interrupted, mut repaired) = match Journal::load(repo)? {
        None => (None, None),
        Some(journal) => (
            Some(journal.describe()),
            Some(recovery::repair(repo, &journal)?),
        ),
    };
    // an undone `start` leaves no session; a finished or undone `step` leaves its session (every
    // iteration's configs: `next_action` finds the variants in them)
    let mut history = history::read(repo, Configs::All)?;
    let mut given_back = None;
    if let (None, Some(read)) = (&repaired, &history)
        && let Some(taken) = take_back(repo, read)?
    {
        given_back = Some(taken.given_back.clone());
        repaired = Some(taken_back(taken));
        history = history::read(repo, Configs::All)?;
    }
    let mut foreign = Vec::new();
    let next_action = match &mut history {
        Some(history) => next_action(of_session(repo, history, &mut foreign)?),
        None => next_action(Situation::NoSession),
    };
    let report = match repaired {
        None => RepairReport {
            interrupted,
            action: None,
            what:
                "nothing to repair: no command was left unfinished, and the tool made every commit"
                    .to_string(),
            commit: None,
            given_back,
            ended_tests,
            ended_workers: ended_workers.clone(),
            next_action,
        },
        Some(repaired) => RepairReport {
            interrupted,
            action: Some(repaired.action),
            what: repaired.what,
            commit: repaired.commit,
            given_back,
            ended_tests,
            ended_workers,
            next_action,
        },
    };
    Ok(report)
}

/// Commits the tool did not make, taken back, as a repair.
fn taken_back(taken: TakenBack) -> Repaired {
    let given_back = match &taken.given_back {
        GivenBack::WorkTree => {
            "their change is back in the work tree, not yet stepped: step it as one change of its own"
                .to_string()
        }
        GivenBack::Patch { path, apply } => format!(
            "their change is kept in {path} (the work tree held another edit, or it changes paths outside \
             the session's): `{apply}` puts it back in the work tree, to step as one change of its own"
        ),
    };
    Repaired {
        action: Action::TakenBack,
        what: format!(
            "took back commits the tool did not make ({}) in {}; {given_back}",
            taken.findings.join("; "),
            crate::record::session::short(&taken.commit)
        ),
        commit: Some(taken.commit),
    }
}

impl Render for RepairReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if let Some(line) = &self.ended_tests {
            writeln!(out, "{line}")?;
        }
        if !self.ended_workers.is_empty() {
            let pids: Vec<String> = self.ended_workers.iter().map(u32::to_string).collect();
            writeln!(
                out,
                "ended the warm workers kept between steps (pid {})",
                pids.join(", ")
            )?;
        }
        if let Some(interrupted) = &self.interrupted {
            writeln!(out, "{interrupted}")?;
        }
        writeln!(out, "{}", self.what)?;
        writeln!(out, "next: {}", self.next_action.line)?;
        Ok(())
    }
}
