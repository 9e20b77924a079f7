//! What `step` reports: the `--json` contract and the lines a person reads.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::measure::rounds::Checks;
use crate::measure::timings::Timings;
use crate::record::history::History;
use crate::record::session::{fmt_change, fmt_ms, short};
use crate::rules::decision::{Attempt, Cause, Correctness, Decision, Status};
use crate::rules::stats::{self, ConfigChange};
use crate::system::runner::Placement;
use crate::system::ui::{Render, Ui};
use crate::verbs::agent::next_action::{NextAction, Situation, next_action};

/// From this share of `--budget` used, the human output says to raise it.
const BUDGET_WARN_PCT: f64 = 75.0;

/// What `step` did, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct StepReport {
    pub iteration: u32,
    pub optimization: String,
    pub opt: Option<String>,
    pub cause: Option<Cause>,
    pub status: Status,
    pub correctness: Correctness,
    pub latency_ms: Option<f64>,
    pub baseline_ms: f64,
    pub change_pct: Option<f64>,
    /// What `baseline_ms` is, and so what `change_pct` compares with: the current baseline re-measured
    /// beside the candidate in this step's paired rounds (not the table's stored latency), or stored.
    pub change_against: String,
    /// The same, short, as the text output says it.
    #[serde(skip)]
    pub change_against_short: String,
    /// The earlier iteration of the same `--opt` letter: this one is its variant.
    pub variant_of: Option<u32>,
    pub decision: Decision,
    pub reason: String,
    /// Every correctness case that failed, for a FAIL (its `reason` names the first few).
    pub failed: Vec<String>,
    pub no_gain: u32,
    pub configs: Vec<ConfigChange>,
    pub commit: String,
    pub attempt: Option<String>,
    /// The Slurm node and job that ran it; none locally.
    pub placement: Option<Placement>,
    /// Benchmark runs per side (candidate and baseline) in the paired rounds.
    pub rounds: Option<u32>,
    /// Seconds the ncu diagnosis took (near 0 where ncu is missing); none when none was asked for:
    /// `--cause` given, or nothing measured (a FAIL, a crash, no change).
    pub diagnosis_s: Option<f64>,
    pub table: PathBuf,
    /// What the change adds that often signals a shortcut (`census::shortcut_signs`): a note, not a rule.
    pub shortcut_signs: Vec<String>,
    /// What the tool's own checks cost (seconds) and what the no-re-roll comparison found.
    pub checks: Checks,
    /// The share of `--budget` (percent) the tests used (correctness and the rounds): near 100, a step a
    /// little slower (a kept autotuner tunes again in every worker) would be a crash, so raise `--budget`.
    pub budget_used_pct: f64,
    /// The GPUs the rounds measured on (`CUDA_VISIBLE_DEVICES` indexes), a (baseline, candidate) pair
    /// each; empty: the one the environment gave.
    pub gpus: Vec<String>,
    /// Where the step's time went, in seconds: the start-ups it waited for and each worker's, the
    /// correctness tests, each round's measuring, the census, the checks, the compile facts, the
    /// diagnosis and the rest; the parts it waited for one after another add up to `step_s`.
    pub timings: Timings,
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

/// What a recorded step leaves for its report.
pub struct Done {
    pub attempt: Attempt,
    pub diagnosis_s: Option<f64>,
    pub no_gain: u32,
    pub history: History,
    pub commit: String,
    pub table: PathBuf,
    pub checks: Checks,
    pub budget_used_pct: f64,
    pub gpus: Vec<String>,
    pub timings: Timings,
}

impl Done {
    /// The report of the step just recorded: the last iteration of `history`.
    pub fn report(&self) -> StepReport {
        let (_, iteration) = self.history.iterations.last().expect("just pushed");
        let (change_against, change_against_short) = self.change_against(iteration.rounds);
        let variant_of = iteration.playbook_letter().and_then(|letter| {
            self.history
                .iterations()
                .find(|it| it.number < iteration.number && it.playbook_letter() == Some(letter))
                .map(|it| it.number)
        });
        StepReport {
            change_against,
            change_against_short,
            variant_of,
            iteration: iteration.number,
            optimization: iteration.optimization.clone(),
            opt: iteration.letter.clone(),
            cause: iteration.cause,
            status: iteration.status,
            correctness: iteration.correctness,
            latency_ms: iteration.latency_ms,
            baseline_ms: iteration.baseline_ms,
            change_pct: iteration.change_pct,
            decision: iteration.decision,
            reason: iteration.reason.clone(),
            failed: match &self.attempt {
                Attempt::CorrectnessFailed { failed }
                | Attempt::UnseenInputsFailed { failed, .. } => failed.clone(),
                _ => Vec::new(),
            },
            no_gain: self.no_gain,
            configs: self
                .attempt
                .comparison()
                .map_or_else(Vec::new, |c| c.configs.clone()),
            commit: self.commit.clone(),
            attempt: iteration.attempt.clone(),
            placement: iteration.placement.clone(),
            rounds: iteration.rounds,
            diagnosis_s: self.diagnosis_s,
            table: self.table.clone(),
            shortcut_signs: Vec::new(),
            checks: self.checks.clone(),
            budget_used_pct: self.budget_used_pct,
            gpus: self.gpus.clone(),
            timings: self.timings.clone(),
            next_action: next_action(Situation::Session(&self.history)),
        }
    }

    /// What `baseline_ms` is: the current baseline re-measured in this step's `rounds`, or stored; in
    /// full and short.
    fn change_against(&self, rounds: Option<u32>) -> (String, String) {
        let compared = self
            .history
            .iterations()
            .rev()
            .skip(1)
            .find(|it| it.status == Status::Keep)
            .expect("validated: iteration 0 is kept");
        match rounds {
            Some(rounds) => {
                let rounds = crate::rules::units::counted(rounds, "paired round");
                (
                    format!(
                        "iteration {} (the current baseline) re-measured beside the candidate in this step's \
                         {rounds}; the table shows each iteration's own latency, and its iteration 0 is the \
                         latency stored at start ({} ms)",
                        compared.number,
                        fmt_ms(
                            self.history
                                .iterations()
                                .next()
                                .and_then(|it| it.latency_ms)
                        )
                    ),
                    format!(
                        "iteration {}, re-measured beside it ({rounds})",
                        compared.number
                    ),
                )
            }
            None => (
                format!(
                    "iteration {}'s stored latency (nothing was measured beside it in this step)",
                    compared.number
                ),
                format!("iteration {}'s stored latency", compared.number),
            ),
        }
    }
}

impl Render for StepReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let report = self;
        let words = (
            ui.bold("iteration").to_string(),
            ui.word(report.status).to_string(),
            ui.word(report.correctness).to_string(),
            ui.word(report.decision).to_string(),
        );
        let out = ui.out();
        writeln!(
            out,
            "{} {}: {}  {} ms (baseline {} ms, {})  correctness {}  -> {}",
            words.0,
            report.iteration,
            words.1,
            fmt_ms(report.latency_ms),
            fmt_ms(Some(report.baseline_ms)),
            fmt_change(report.change_pct),
            words.2,
            words.3,
        )?;
        writeln!(out, "  reason   {}", report.reason)?;
        writeln!(out, "  against  {}", report.change_against_short)?;
        if let (Some(earlier), Some(letter)) = (report.variant_of, &report.opt) {
            writeln!(out, "  variant  of iteration {earlier} ({letter} again)")?;
        }
        if let Some(worst) = stats::worst(&report.configs) {
            writeln!(
                out,
                "  slowest  {} {} {:+.2}%",
                worst.test, worst.pass, worst.change_pct
            )?;
        }
        let kept_as = report.attempt.as_deref().map_or(String::new(), |a| {
            format!(
                " (the attempt is kept as {}: `git show {}`)",
                short(a),
                short(a)
            )
        });
        writeln!(out, "  commit   {}{kept_as}", short(&report.commit))?;
        writeln!(out, "  table    {}", report.table.display())?;
        writeln!(out, "  time     {}", report.timings.line())?;
        if report.budget_used_pct >= BUDGET_WARN_PCT {
            writeln!(
                out,
                "  budget   the tests used {:.0}% of --budget: raise it for the next steps",
                report.budget_used_pct
            )?;
        }
        for sign in &report.shortcut_signs {
            writeln!(out, "  note     the change adds {sign}")?;
        }
        writeln!(out, "next: {}", report.next_action.line)?;
        Ok(())
    }
}
