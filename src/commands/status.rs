//! `status`: the session at a glance, rebuilt from its commits.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::agent::next_action::{NextAction, Situation, next_action};
use crate::cli::JsonArg;
use crate::decision::LoopState;
use crate::git::Repo;
use crate::history::{self, Configs, History};
use crate::journal::Journal;
use crate::recovery;
use crate::runner::Placement;
use crate::session::{Iteration, Session, fmt_ms};
use crate::ui;

/// An iteration named by number, with its latency.
#[derive(Debug, Serialize)]
pub struct Point {
    pub iteration: u32,
    pub latency_ms: Option<f64>,
}

impl From<&Iteration> for Point {
    fn from(it: &Iteration) -> Point {
        Point {
            iteration: it.number,
            latency_ms: it.latency_ms,
        }
    }
}

/// What `status --json` prints.
#[derive(Debug, Serialize)]
pub struct StatusReport<'a> {
    pub branch: Option<String>,
    /// None outside a session: then `next_action` says how to start one.
    #[serde(flatten)]
    pub progress: Option<Progress<'a>>,
    /// An iteration a killed command left unfinished (`repair` finishes or undoes it).
    pub unfinished: Option<String>,
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

/// Where a session stands.
#[derive(Debug, Serialize)]
pub struct Progress<'a> {
    pub session: &'a Session,
    pub baseline: Point,
    pub best: Point,
    pub initial_ms: Option<f64>,
    pub iterations: usize,
    pub no_gain: u32,
    pub state: LoopState,
    pub reason: Option<&'a str>,
    pub tried: Vec<String>,
    /// Where the latest iteration ran, for a Slurm session.
    pub last_placement: Option<&'a Placement>,
}

impl<'a> Progress<'a> {
    fn new(history: &'a History) -> Progress<'a> {
        let (state, halted) = history.loop_state();
        Progress {
            session: &history.session,
            baseline: history.current_baseline().into(),
            best: history.best().into(),
            initial_ms: history.iterations().next().and_then(|it| it.latency_ms),
            iterations: history.iterations.len() - 1,
            no_gain: history.no_gain_count(),
            state,
            reason: halted.map(|it| it.reason.as_str()),
            tried: history.tried_letters(),
            last_placement: history
                .iterations()
                .last()
                .and_then(|it| it.placement.as_ref()),
        }
    }
}

pub fn run(repo: &Repo, args: &JsonArg, out: &mut impl Write) -> Result<()> {
    if let Some(line) = recovery::end_orphaned_tests(repo)? {
        ui::progress_line(&line);
    }
    let unfinished = recovery::unfinished(repo)?;
    if let Some(line) = &unfinished {
        ui::progress_line(&format!("warning: {line}"));
    }
    // outside a session there is nothing to report but how to start one: not an error
    let history = history::read(repo, Configs::CurrentBaseline)?;
    let next_action = match (&unfinished, &history) {
        (Some(what), _) => {
            let running = Journal::load(repo)?.is_some_and(|journal| journal.writer_alive());
            next_action(Situation::Unfinished { running, what })
        }
        (None, Some(history)) => next_action(Situation::Session(history)),
        (None, None) => next_action(Situation::NoSession),
    };
    let report = StatusReport {
        branch: repo.branch()?,
        progress: history.as_ref().map(Progress::new),
        unfinished,
        next_action,
    };
    if args.json {
        return ui::write_json(out, &report);
    }
    match (&report.progress, &history) {
        (Some(progress), Some(history)) => render(&report, progress, history, out),
        _ => {
            writeln!(
                out,
                "{} on {}",
                ui::bold("no session"),
                report.branch.as_deref().unwrap_or("a detached HEAD")
            )?;
            writeln!(out, "next: {}", report.next_action.sentence)?;
            Ok(())
        }
    }
}

fn render(
    report: &StatusReport,
    progress: &Progress,
    history: &History,
    out: &mut impl Write,
) -> Result<()> {
    let session = progress.session;
    let total = match (progress.initial_ms, progress.best.latency_ms) {
        (Some(first), Some(best)) => format!(
            " ({:+.2}% since iteration 0)",
            (best - first) / first * 100.0
        ),
        _ => String::new(),
    };
    writeln!(
        out,
        "{} {}",
        ui::bold("session"),
        report.branch.as_deref().unwrap_or_default()
    )?;
    writeln!(out, "  kernel      {}", session.kernel)?;
    writeln!(out, "  test        {}", session.test)?;
    writeln!(out, "  allowed     {}", session.allowed.join(", "))?;
    writeln!(out, "  statistic   {}", session.statistic)?;
    if let Some(class) = session.class {
        writeln!(out, "  class       {class}")?;
    }
    writeln!(
        out,
        "  gpu         {}",
        session.gpu.as_deref().unwrap_or("none recorded")
    )?;
    writeln!(out, "  runner      {}", session.runner.describe())?;
    if let Some(on) = progress.last_placement {
        writeln!(out, "  last run    {}", on.describe())?;
    }
    writeln!(
        out,
        "  baseline    iteration {} {} ms",
        progress.baseline.iteration,
        fmt_ms(progress.baseline.latency_ms)
    )?;
    writeln!(
        out,
        "  best        iteration {} {} ms{total}",
        progress.best.iteration,
        fmt_ms(progress.best.latency_ms)
    )?;
    writeln!(
        out,
        "  iterations  {} of {}",
        progress.iterations, session.thresholds.max_iterations
    )?;
    writeln!(
        out,
        "  no gain     {} in a row (stops at {})",
        progress.no_gain, session.thresholds.max_no_gain
    )?;
    match history.loop_state() {
        (state, Some(it)) => writeln!(
            out,
            "  loop        {} at iteration {}: {}",
            ui::word(state),
            it.number,
            it.reason
        )?,
        (state, None) => writeln!(out, "  loop        {}", ui::word(state))?,
    }
    writeln!(out, "next: {}", report.next_action.sentence)?;
    Ok(())
}
