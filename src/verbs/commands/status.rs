//! `status`: the session at a glance, rebuilt from its commits.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::features::recovery;
use crate::record::history::{self, Configs, History};
use crate::record::journal::Journal;
use crate::record::session::{Iteration, Session, Skip, fmt_ms, short};
use crate::rules::decision::LoopState;
use crate::system::git::Repo;
use crate::system::runner::Placement;
use crate::system::runner::{Local, Runner};
use crate::system::ui::{Render, Ui};
use crate::system::workers::lasting;
use crate::verbs::agent::next_action::{NextAction, Situation, next_action, of_session};

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
pub struct StatusReport {
    pub branch: Option<String>,
    /// None outside a session: then `next_action` says how to start one.
    #[serde(flatten)]
    pub progress: Option<Progress>,
    /// An iteration a killed command left unfinished (`repair` finishes or undoes it).
    pub unfinished: Option<String>,
    /// Commits on the session branch that the tool did not make, one finding a line (`repair` takes them
    /// back); `state` is then `foreign`.
    pub foreign: Vec<String>,
    /// The warm workers kept for the next step (the tool's, not another process on the GPU).
    pub workers: Vec<KeptWorker>,
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

/// A warm worker left running between steps: the baseline's, or a spare for the next step.
#[derive(Debug, Serialize)]
pub struct KeptWorker {
    pub pid: u32,
    /// `baseline`, or `spare`.
    pub side: String,
    /// The commit whose code it holds; none for a spare, which holds none yet.
    pub commit: Option<String>,
    /// Seconds since its last command (it ends itself when idle too long).
    pub idle_s: u64,
    /// Whether it still runs (a dead one is replaced by the next step).
    pub alive: bool,
    /// Its `CUDA_VISIBLE_DEVICES`, if set.
    pub gpu: Option<String>,
    /// The GPU memory its processes hold, where nvidia-smi reports it.
    pub gpu_mib: Option<u64>,
}

/// The kept workers, with the GPU memory of their process groups where nvidia-smi lists them.
fn kept_workers(repo: &Repo) -> Result<Vec<KeptWorker>> {
    let kept = lasting::all(repo)?;
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    // kept workers run on this machine: its GPU
    let gpu = Local.gpu(&repo.root);
    Ok(kept
        .into_iter()
        .map(|(_, worker)| {
            let group = worker.process.pid as libc::pid_t;
            let gpu_mib = gpu.as_ref().and_then(|state| {
                state
                    .processes
                    .iter()
                    .filter(|p| unsafe { libc::getpgid(p.pid as libc::pid_t) } == group)
                    .map(|p| p.used_mib)
                    .sum()
            });
            KeptWorker {
                pid: worker.process.pid,
                alive: worker.process.alive(),
                idle_s: worker.idle_s(),
                side: worker.side,
                commit: Some(worker.code.commit).filter(|commit| !commit.is_empty()),
                gpu: worker.env.gpu,
                gpu_mib,
            }
        })
        .collect())
}

/// Where a session stands.
#[derive(Debug, Serialize)]
pub struct Progress {
    pub session: Session,
    pub baseline: Point,
    pub best: Point,
    pub initial_ms: Option<f64>,
    /// The best latency's change since iteration 0, in percent (negative is faster).
    pub change_pct_since_0: Option<f64>,
    pub iterations: usize,
    pub no_gain: u32,
    pub state: LoopState,
    pub reason: Option<String>,
    /// The iteration that stopped or escalated the loop.
    #[serde(skip)]
    pub halted_at: Option<u32>,
    pub tried: Vec<String>,
    /// Letters recorded as not applying (`next --skip`), with why.
    pub skipped: Vec<Skip>,
    /// Where the latest iteration ran, for a Slurm session.
    pub last_placement: Option<Placement>,
}

impl Progress {
    fn new(history: &History) -> Progress {
        let (state, halted) = history.loop_state();
        let initial_ms = history.iterations().next().and_then(|it| it.latency_ms);
        let best: Point = history.best().into();
        let change_pct_since_0 = match (initial_ms, best.latency_ms) {
            (Some(first), Some(best)) => Some((best - first) / first * 100.0),
            _ => None,
        };
        Progress {
            session: history.session.clone(),
            baseline: history.current_baseline().into(),
            best,
            initial_ms,
            change_pct_since_0,
            iterations: history.steps(),
            no_gain: history.no_gain_count(),
            state,
            reason: halted.map(|it| it.reason.clone()),
            halted_at: halted.map(|it| it.number),
            tried: history.tried_letters(),
            skipped: history.skipped.clone(),
            last_placement: history
                .iterations()
                .last()
                .and_then(|it| it.placement.clone()),
        }
    }
}

pub fn run(ui: &mut Ui, repo: &Repo) -> Result<StatusReport> {
    if let Some(line) = recovery::end_orphaned_tests(repo)? {
        ui.progress(&line);
    }
    let unfinished = recovery::unfinished(repo)?;
    if let Some(line) = &unfinished {
        ui.progress(&format!("warning: {}", line.shown()));
    }
    let unfinished = unfinished.map(|line| line.message);
    // outside a session there is nothing to report but how to start one: not an error; every
    // iteration's configs, which the variants of `next_action` compare
    let mut history = history::read(repo, Configs::All)?;
    let mut foreign = Vec::new();
    let next_action = match (&unfinished, &mut history) {
        (Some(what), _) => {
            let running = match Journal::load(repo)? {
                Some(journal) => journal.writer_alive(),
                None => crate::record::journal::lock_holder(repo)?.is_some(),
            };
            next_action(Situation::Unfinished { running, what })
        }
        (None, Some(history)) => next_action(of_session(repo, history, &mut foreign)?),
        (None, None) => next_action(Situation::NoSession),
    };
    let mut progress = history.as_ref().map(Progress::new);
    if let Some(progress) = progress.as_mut().filter(|_| !foreign.is_empty()) {
        progress.state = LoopState::Foreign;
    }
    Ok(StatusReport {
        branch: repo.branch()?,
        progress,
        unfinished,
        foreign,
        workers: kept_workers(repo)?,
        next_action,
    })
}

impl Render for StatusReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let Some(report) = &self.progress else {
            return self.render_no_session(ui);
        };
        let session_word = ui.bold("session").to_string();
        let state_word = ui.word(report.state).to_string();
        let out = ui.out();
        writeln!(
            out,
            "{session_word} {}",
            self.branch.as_deref().unwrap_or_default()
        )?;
        write_session(out, &report.session, report.last_placement.as_ref())?;
        write_progress(out, report, &state_word)?;
        for finding in &self.foreign {
            writeln!(out, "  foreign     {finding}")?;
        }
        for worker in &self.workers {
            write_worker(out, worker)?;
        }
        writeln!(out, "next: {}", self.next_action.line)?;
        Ok(())
    }
}

impl StatusReport {
    /// Outside a session: the branch, and how to start one.
    fn render_no_session(&self, ui: &mut Ui) -> Result<()> {
        let no_session = ui.bold("no session").to_string();
        let branch = self.branch.as_deref().unwrap_or("a detached HEAD");
        writeln!(ui.out(), "{no_session} on {branch}")?;
        writeln!(ui.out(), "next: {}", self.next_action.line)?;
        Ok(())
    }
}

/// What the session measures and how: its kernel, test, allowed paths, statistic, class, GPU and
/// runner, and where its latest iteration ran (`last_run`, for a Slurm session).
fn write_session(
    out: &mut dyn Write,
    session: &Session,
    last_run: Option<&Placement>,
) -> Result<()> {
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
    if let Some(on) = last_run {
        writeln!(out, "  last run    {}", on.describe())?;
    }
    Ok(())
}

/// Where the loop stands: the baseline, the best so far and its change since iteration 0, the
/// iterations and the steps without gain against their limits, the letters skipped, and the loop's
/// state (`state_word`, styled) with what halted it.
fn write_progress(out: &mut dyn Write, report: &Progress, state_word: &str) -> Result<()> {
    let session = &report.session;
    let total = match report.change_pct_since_0 {
        Some(change) => format!(" ({change:+.2}% since iteration 0)"),
        None => String::new(),
    };
    writeln!(
        out,
        "  baseline    iteration {} {} ms",
        report.baseline.iteration,
        fmt_ms(report.baseline.latency_ms)
    )?;
    writeln!(
        out,
        "  best        iteration {} {} ms{total}",
        report.best.iteration,
        fmt_ms(report.best.latency_ms)
    )?;
    writeln!(
        out,
        "  iterations  {} of {}",
        report.iterations, session.thresholds.max_iterations
    )?;
    writeln!(
        out,
        "  no gain     {} in a row (stops at {})",
        report.no_gain, session.thresholds.max_no_gain
    )?;
    for skip in &report.skipped {
        writeln!(out, "  skipped     {}: {}", skip.letter, skip.why)?;
    }
    match (report.halted_at, &report.reason) {
        (Some(number), Some(reason)) => writeln!(
            out,
            "  loop        {state_word} at iteration {number}: {reason}"
        )?,
        _ => writeln!(out, "  loop        {state_word}")?,
    }
    Ok(())
}

/// A kept worker: its process, side and code, whether it idles or is gone, and its GPU memory.
fn write_worker(out: &mut dyn Write, worker: &KeptWorker) -> Result<()> {
    let memory = worker
        .gpu_mib
        .map_or(String::new(), |mib| format!(", {mib} MiB of GPU memory"));
    let state = match worker.alive {
        true => format!("idle {} s", worker.idle_s),
        false => "gone (the next step starts a fresh one)".into(),
    };
    let holds = match &worker.commit {
        Some(commit) => format!("commit {}", short(commit)),
        None => "for the next step".into(),
    };
    writeln!(
        out,
        "  worker      pid {} ({}, {holds}): {state}{memory}",
        worker.pid, worker.side,
    )?;
    Ok(())
}
