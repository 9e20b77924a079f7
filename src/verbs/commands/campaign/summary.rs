//! The campaign in one table: each kernel with its record entry and what its session shows (baseline,
//! iterations, the best kept speedup with its interval, the loop's state), and the geometric-mean
//! speedup over the kernels with a session; also as one HTML page that links each session's report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::record::campaign::{Campaign, Entry, State};
use crate::record::history::{self, Configs, History};
use crate::record::session::fmt_ms;
use crate::rules::decision::{LoopState, Status};
use crate::system::git::Repo;

/// One kernel of the campaign, as `campaign status` and `table` show it.
#[derive(Debug, Serialize)]
pub struct Row {
    pub kernel: String,
    pub suite: String,
    pub source: String,
    /// `queued`, `running`, `started` or `failed` (the record's), or the session's loop state once
    /// started: `running`, `stopped`, `escalated`, `foreign`.
    pub state: String,
    /// Why it failed, or why its loop stopped or escalated.
    pub reason: Option<String>,
    pub baseline_ms: Option<f64>,
    pub best_ms: Option<f64>,
    pub iterations: Option<usize>,
    /// Iteration 0's latency over the best kept one's, with the interval its kept steps' paired
    /// estimates compound to.
    pub speedup: Option<Speedup>,
    pub gpu: Option<String>,
    pub job: Option<String>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The holder of its lease: `pid@host`.
    pub held_by: Option<String>,
    pub attempts: u32,
    pub seconds: Option<f64>,
}

impl Row {
    /// Where it ran: its Slurm job and task, or its GPU (`-` when neither).
    fn place(&self) -> String {
        match (&self.job, &self.gpu) {
            (Some(job), _) => job.clone(),
            (None, Some(gpu)) => format!("GPU {gpu}"),
            (None, None) => "-".to_string(),
        }
    }

    /// Its state, with the reason after it when it has one.
    /// The state and the first line of its reason (the whole of it is in `--json`).
    fn state_and_reason(&self) -> String {
        match self
            .reason
            .as_deref()
            .and_then(|reason| reason.lines().next())
        {
            Some(reason) => format!("{}: {reason}", self.state),
            None => self.state.clone(),
        }
    }
}

/// A speedup (how many times faster) with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Speedup {
    pub factor: f64,
    pub low: f64,
    pub high: f64,
}

/// The rows of `campaign`, each session read from its worktree.
pub fn rows(campaign: &Campaign) -> Vec<Row> {
    campaign.kernels.iter().map(row).collect()
}

fn row(entry: &Entry) -> Row {
    let session = entry
        .worktree
        .as_deref()
        .filter(|_| entry.state == State::Started)
        .and_then(|dir| read_session(Path::new(dir)));
    let mut row = Row {
        kernel: entry.kernel.clone(),
        suite: entry.suite.clone(),
        source: entry.source.clone(),
        state: entry.state.as_str().to_string(),
        reason: entry.reason.clone(),
        baseline_ms: None,
        best_ms: None,
        iterations: None,
        speedup: None,
        gpu: entry.gpu.clone(),
        job: entry.job.clone(),
        worktree: entry.worktree.clone(),
        branch: entry.branch.clone(),
        held_by: entry
            .lease
            .as_ref()
            .filter(|lease| lease.held())
            .map(|lease| format!("{}@{}", lease.holder.pid, lease.host)),
        attempts: entry.attempts,
        seconds: entry.seconds,
    };
    if let Some((repo, history)) = session {
        let (state, halted) = history.loop_state();
        row.state = match state {
            LoopState::Running => "started".to_string(),
            other => other.as_str().to_string(),
        };
        row.reason = halted.map(|it| it.reason.clone()).or(row.reason);
        row.baseline_ms = history.iterations().next().and_then(|it| it.latency_ms);
        row.best_ms = history.best().latency_ms;
        row.iterations = Some(history.steps());
        row.speedup = speedup(&repo, &history);
    }
    row
}

/// The session checked out in `worktree`, if it has one.
fn read_session(worktree: &Path) -> Option<(Repo, History)> {
    let repo = Repo::discover(worktree).ok()?;
    let history = history::read(&repo, Configs::All).ok()??;
    Some((repo, history))
}

/// Iteration 0 over the best kept iteration, its interval compounded from each kept step's paired
/// estimate up to it (a step without one counts as its point estimate).
fn speedup(repo: &Repo, history: &History) -> Option<Speedup> {
    let initial = history.iterations().next()?.latency_ms?;
    let best = history.best();
    let estimates = crate::features::report::estimates(repo, history).unwrap_or_default();
    let mut interval = (1.0, 1.0);
    for it in history.iterations() {
        if it.number == 0 || it.number > best.number || it.status != Status::Keep {
            continue;
        }
        let factor = |pct: f64| 1.0 / (1.0 - pct / 100.0);
        let (low, high) = match estimates.get(&it.number) {
            Some(e) => (factor(e.aggregate.low_pct), factor(e.aggregate.high_pct)),
            None => {
                let point = it.baseline_ms / it.latency_ms?;
                (point, point)
            }
        };
        interval = (interval.0 * low.min(high), interval.1 * low.max(high));
    }
    Some(Speedup {
        factor: initial / best.latency_ms?,
        low: interval.0,
        high: interval.1,
    })
}

/// The geometric mean of the speedups, and of their interval's ends.
pub fn geometric_mean(speedups: &[Speedup]) -> Option<Speedup> {
    if speedups.is_empty() {
        return None;
    }
    let mean = |of: fn(&Speedup) -> f64| {
        (speedups.iter().map(|s| of(s).ln()).sum::<f64>() / speedups.len() as f64).exp()
    };
    Some(Speedup {
        factor: mean(|s| s.factor),
        low: mean(|s| s.low),
        high: mean(|s| s.high),
    })
}

impl Speedup {
    /// `1.25x (1.20x to 1.31x)`.
    pub fn shown(&self) -> String {
        format!(
            "{:.2}x ({:.2}x to {:.2}x)",
            self.factor, self.low, self.high
        )
    }
}

/// The table as text: one line per kernel.
pub fn text(rows: &[Row]) -> String {
    let label = |row: &Row| format!("{}/{}", row.suite, row.kernel);
    let width = rows.iter().map(|row| label(row).len()).max().unwrap_or(0);
    let mut out = format!(
        "{:<width$} {:<18} {:>12} {:>5} {:<28} {:<10} {}\n",
        "kernel", "source", "baseline ms", "iter", "best kept speedup", "where", "state"
    );
    for row in rows {
        let (place, state) = (row.place(), row.state_and_reason());
        let _ = writeln!(
            out,
            "{:<width$} {:<18} {:>12} {:>5} {:<28} {:<10} {}",
            label(row),
            row.source,
            row.baseline_ms.map_or("-".into(), |ms| fmt_ms(Some(ms))),
            row.iterations.map_or("-".into(), |n| n.to_string()),
            row.speedup.map_or("-".into(), |s| s.shown()),
            place,
            state
        );
    }
    out
}

/// The campaign as one self-contained HTML page; `reports` are the session reports it links, by kernel.
pub fn html(
    campaign: &Campaign,
    rows: &[Row],
    mean: Option<Speedup>,
    reports: &[Option<PathBuf>],
) -> String {
    let mut page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>campaign {0}</title>\n<style>body{{font-family:sans-serif}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}\
         .failed{{color:#a00}}</style></head><body>\n<h1>campaign {0}</h1>\n<p>{1} kernels from {2}, runner {3}; \
         geometric-mean speedup over the started sessions: {4}</p>\n<table>\n<tr><th>kernel</th><th>source</th>\
         <th>baseline ms</th><th>iterations</th><th>best kept speedup</th><th>where</th><th>state</th><th>session</th></tr>\n",
        escape(&campaign.name),
        rows.len(),
        escape(&campaign.base),
        escape(&campaign.runner),
        mean.map_or("none yet".into(), |m| m.shown()),
    );
    for (row, report) in rows.iter().zip(reports) {
        let (place, state) = (row.place(), row.state_and_reason());
        let link = report.as_ref().map_or(String::new(), |path| {
            format!(
                "<a href=\"file://{}\">report</a>",
                escape(&path.display().to_string())
            )
        });
        let _ = writeln!(
            page,
            "<tr class=\"{}\"><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&row.state),
            escape(&row.suite),
            escape(&row.kernel),
            escape(&row.source),
            row.baseline_ms.map_or("-".into(), |ms| fmt_ms(Some(ms))),
            row.iterations.map_or("-".into(), |n| n.to_string()),
            row.speedup.map_or("-".into(), |s| s.shown()),
            escape(&place),
            escape(&state),
            link
        );
    }
    page.push_str("</table>\n</body></html>\n");
    page
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_geometric_mean_takes_each_end_of_the_intervals() {
        let a = Speedup {
            factor: 2.0,
            low: 1.5,
            high: 2.5,
        };
        let b = Speedup {
            factor: 0.5,
            low: 0.4,
            high: 0.6,
        };
        let mean = geometric_mean(&[a, b]).unwrap();
        assert!((mean.factor - 1.0).abs() < 1e-12);
        assert!((mean.low - (1.5f64 * 0.4).sqrt()).abs() < 1e-12);
        assert!(geometric_mean(&[]).is_none());
    }
}
