//! The audit of a session's record, as pure checks: each iteration's trailers against what its evidence
//! note gives, recomputed with the same rules `step` uses. `verify` gathers the commits, trees and notes
//! (`src/commands/verify.rs`); everything here is decided from values.

use std::fmt;

use serde::Serialize;

use crate::decision::{self, Attempt, Correctness, Status};
use crate::evidence::{Evidence, RunFile};
use crate::pytest::CorrectnessRun;
use crate::records::{self, CaseOutcome, Measurement, Statistic};
use crate::session::{Iteration, Session, fmt_change, fmt_ms};
use crate::stats::{self, Comparison, geometric_mean};
use crate::verdict::{self, Decided, Round};

/// What kind of departure from the record's rules a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The history cannot be read as a session (numbering skips or repeats, unreadable trailers).
    BrokenHistory,
    /// A commit after the baseline declares a session again.
    ExtraSession,
    /// Commits without trailers, named by no iteration, that change the tree.
    UnrecordedChange,
    /// A commit changed a path outside the session's allowed set.
    OutsideAllowed,
    /// A reverted or crashed iteration does not return the tree exactly to its attempt's parent.
    AttemptNotUndone,
    /// An iteration commit has no evidence note.
    MissingEvidence,
    /// A note that is not readable evidence.
    UnreadableEvidence,
    /// A trailer differs from what the evidence gives.
    EvidenceMismatch,
    /// An evidence note sits on a commit other than the one it measured (or names none).
    UnboundEvidence,
    /// The session's baseline ref is missing or names another commit than the history's baseline.
    BaselineRef,
    /// `refs/replace/` or grafts make git show other objects than the record holds.
    ReplacedObjects,
    /// A commit of a signed session without a good signature, or any commit with a bad one.
    Signature,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::BrokenHistory => "broken-history",
            Kind::ExtraSession => "extra-session",
            Kind::UnrecordedChange => "unrecorded-change",
            Kind::OutsideAllowed => "outside-allowed",
            Kind::AttemptNotUndone => "attempt-not-undone",
            Kind::MissingEvidence => "missing-evidence",
            Kind::UnreadableEvidence => "unreadable-evidence",
            Kind::EvidenceMismatch => "evidence-mismatch",
            Kind::UnboundEvidence => "unbound-evidence",
            Kind::BaselineRef => "baseline-ref",
            Kind::ReplacedObjects => "replaced-objects",
            Kind::Signature => "signature",
        }
    }
}

/// One departure, on one commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub commit: String,
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.kind.as_str(),
            crate::session::short(&self.commit),
            self.detail
        )
    }
}

/// The correctness outcome a correctness run's JUnit file gives, held to the baseline's passing cases.
pub fn correctness_of(run: &RunFile, baseline_passed: &[String]) -> Result<CorrectnessRun, String> {
    let cases = run.cases().map_err(|e| format!("{e:#}"))?;
    let failed: Vec<String> = cases
        .iter()
        .filter(|c| matches!(c.outcome, CaseOutcome::Failed(_) | CaseOutcome::Error(_)))
        .map(|c| c.id.clone())
        .collect();
    if !failed.is_empty() {
        return Ok(CorrectnessRun::Fail { failed });
    }
    Ok(CorrectnessRun::passed(cases).against_baseline(baseline_passed))
}

/// The measurements a benchmark run's JUnit file gives under the session's statistic.
fn measured(run: &RunFile, statistic: Statistic) -> Result<Vec<Measurement>, String> {
    let cases = run.cases().map_err(|e| format!("{e:#}"))?;
    records::measurements(&cases, statistic).map_err(|e| format!("{e:#}"))
}

/// The paired rounds named `<prefix>-<n>-baseline` and `<prefix>-<n>-candidate` in the evidence.
fn rounds(evidence: &Evidence, prefix: &str, statistic: Statistic) -> Result<Vec<Round>, String> {
    let mut rounds = Vec::new();
    for n in 1.. {
        let side = |side: &str| evidence.run(&format!("{prefix}-{n}-{side}"));
        let (Some(baseline), Some(candidate)) = (side("baseline"), side("candidate")) else {
            break;
        };
        rounds.push(Round {
            baseline: measured(baseline, statistic)?,
            candidate: measured(candidate, statistic)?,
        });
    }
    if rounds.is_empty() {
        return Err(format!("no {prefix} benchmark runs"));
    }
    Ok(rounds)
}

/// The verdict of the rounds, as `paired::measure` reaches it (deciding on what there is when the rounds
/// did not settle it: the budget ran out).
fn decided(evidence: &Evidence, prefix: &str, session: &Session) -> Result<Decided, String> {
    let rounds = rounds(evidence, prefix, session.statistic)?;
    let floor = verdict::NoiseFloor::from_spreads(&session.spread);
    verdict::decide_anyway(
        &rounds,
        &session.thresholds,
        &floor,
        "no further round fitted the budget",
    )
    .map_err(|e| e.to_string())
}

/// The attempt the evidence of a later iteration describes, as `step` would have built it from the same
/// runs.
pub fn attempt_of(evidence: &Evidence, session: &Session, baseline_passed: &[String]) -> Attempt {
    let crashed = |correctness, why: String| Attempt::Crashed { correctness, why };
    let Some(run) = evidence.run("correctness") else {
        return crashed(Correctness::Fail, "no correctness JUnit file".into());
    };
    match correctness_of(run, baseline_passed) {
        Err(why) => return crashed(Correctness::Fail, why),
        Ok(CorrectnessRun::Fail { failed }) => return Attempt::CorrectnessFailed { failed },
        Ok(_) => {}
    }
    let result = decided(evidence, "round", session).and_then(|first| {
        if first.estimate.comparison().suspicious().is_empty() {
            return Ok(first);
        }
        let second = decided(evidence, "confirm-round", session)?;
        stats::confirm(&first.estimate.comparison(), &second.estimate.comparison()).map(|_| second)
    });
    match result {
        Ok(decided) => Attempt::paired(decided),
        Err(why) => crashed(Correctness::Pass, why),
    }
}

/// How iteration `it`'s trailers differ from its evidence: `(what, recorded, evidence)` for each
/// field that differs. `prior` holds the iterations before it, oldest first.
pub fn check_iteration(
    session: &Session,
    prior: &[Iteration],
    it: &Iteration,
    evidence: &Evidence,
    baseline_passed: &[String],
) -> Vec<(&'static str, String, String)> {
    let mut differences = Vec::new();
    let mut expect = |what, recorded: String, found: String| {
        if recorded != found {
            differences.push((what, recorded, found));
        }
    };
    expect(
        "iteration",
        it.number.to_string(),
        evidence.iteration.to_string(),
    );
    expect(
        "thresholds",
        format!("{:?}", session.thresholds),
        format!("{:?}", evidence.thresholds),
    );
    if prior.is_empty() {
        // the baseline: its configs and latency combine its benchmark runs, and some correctness case passed
        let runs: Result<Vec<_>, String> = evidence
            .runs
            .iter()
            .filter(|run| run.name.starts_with("benchmark-"))
            .map(|run| measured(run, session.statistic))
            .collect();
        let configs = runs.and_then(|runs| match runs.is_empty() {
            true => Err("no benchmark JUnit file".to_string()),
            false => stats::combine_runs(&runs)
                .map(|(configs, _)| configs)
                .map_err(|(pass, test)| format!("{test} {pass} missing from a run")),
        });
        match configs {
            Ok(configs) => {
                expect(
                    "latency",
                    fmt_ms(it.latency_ms),
                    fmt_ms(geometric_mean(configs.iter().map(|c| c.value))),
                );
                expect(
                    "configs",
                    format!("{:?}", it.configs),
                    format!("{configs:?}"),
                );
            }
            Err(why) => expect("benchmark", "measured".into(), why),
        }
        let passed = evidence.passed_cases().unwrap_or_default();
        expect(
            "correctness",
            "PASS".into(),
            if passed.is_empty() {
                "nothing passed"
            } else {
                "PASS"
            }
            .into(),
        );
        return differences;
    };
    let attempt = attempt_of(evidence, session, baseline_passed);
    let no_gain_before = prior
        .iter()
        .skip(1)
        .rev()
        .take_while(|p| !session.thresholds.gained(p.status, p.change_pct))
        .count() as u32;
    let verdict = decision::decide(
        &attempt,
        it.number,
        no_gain_before,
        it.cause,
        &session.thresholds,
    );
    // a recorded crash needs no numbers: pytest's exit code, which the note does not hold, may have made it
    if it.status == Status::Crash {
        return differences;
    }
    expect("status", it.status.to_string(), verdict.status.to_string());
    expect(
        "correctness",
        it.correctness.to_string(),
        attempt.correctness().to_string(),
    );
    expect(
        "decision",
        it.decision.to_string(),
        verdict.decision.to_string(),
    );
    let comparison = attempt.comparison();
    expect(
        "latency",
        fmt_ms(it.latency_ms),
        fmt_ms(comparison.map(|c| c.latency_ms)),
    );
    expect(
        "change",
        fmt_change(it.change_pct),
        fmt_change(comparison.map(Comparison::change_pct)),
    );
    if let Attempt::Measured { configs, .. } = &attempt {
        expect(
            "configs",
            format!("{:?}", it.configs),
            format!("{configs:?}"),
        );
    }
    differences
}
