//! The audit of a session's record, as pure checks: each iteration's trailers against what its evidence
//! note gives, recomputed by the replay `step` records from (`replay::attempt`). `verify` gathers the
//! commits, trees and notes (`src/verbs/commands/verify.rs`); everything here is decided from values, but for [`foreign_findings`]
//! (`step` refuses on them too), which asks git what the foreign commits change.

use std::fmt;

use anyhow::Result;
use serde::Serialize;

use crate::record::evidence::Evidence;
use crate::record::history::History;
use crate::record::replay::{self, Replayed};
use crate::record::session::{Iteration, Session, fmt_change, fmt_ms};
use crate::rules::decision::{self, Attempt, Cause, Status, Verdict};
use crate::rules::records::{Measurement, round_config_ms};
use crate::rules::stats::{self, Comparison, geometric_mean};
use crate::rules::units::counted;
use crate::system::git::Repo;

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
    /// A note's readable summary says what its payload does not (it was edited after the tool wrote it).
    SummaryMismatch,
    /// An evidence note sits on a commit other than the one it measured (or names none).
    UnboundEvidence,
    /// The session's baseline ref is missing or names another commit than the history's baseline.
    BaselineRef,
    /// `refs/replace/` or grafts make git show other objects than the record holds.
    ReplacedObjects,
    /// A commit of a signed session without a good signature, or any commit with a bad one.
    Signature,
    /// The session perf file differs from the one the baseline recorded, or is gone.
    PerfFileChanged,
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
            Kind::SummaryMismatch => "summary-mismatch",
            Kind::UnboundEvidence => "unbound-evidence",
            Kind::BaselineRef => "baseline-ref",
            Kind::ReplacedObjects => "replaced-objects",
            Kind::Signature => "signature",
            Kind::PerfFileChanged => "perf-file-changed",
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
            crate::record::session::short(&self.commit),
            self.detail
        )
    }
}

/// The attempt iteration `it`'s evidence replays to, and the verdict it gives after the iterations
/// before it (`prior`, oldest first) under the cause the iteration recorded: what `step` recorded.
pub fn replayed_verdict(
    session: &Session,
    prior: &[Iteration],
    number: u32,
    cause: Option<Cause>,
    evidence: &Evidence,
    baseline_passed: &[String],
) -> (Replayed, Verdict) {
    let replayed = replay::of_evidence(evidence, session, baseline_passed);
    let no_gain_before = prior
        .iter()
        .skip(1)
        .rev()
        .take_while(|p| !session.thresholds.gained(p.status, p.change_pct))
        .count() as u32;
    let verdict = decision::decide(
        &replayed.attempt,
        number,
        no_gain_before,
        cause,
        &session.thresholds,
    );
    (replayed, verdict)
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
        session.thresholds.to_string(),
        evidence.thresholds.to_string(),
    );
    // every config's rounds on one GPU (a note without GPUs: one GPU)
    const ONE_GPU: &str = "each config on one GPU";
    expect(
        "GPUs",
        ONE_GPU.into(),
        evidence
            .gpu_of_cases()
            .map_or_else(|why| why, |_| ONE_GPU.into()),
    );
    if prior.is_empty() {
        // the baseline: its configs and latency combine its benchmark runs, and some correctness case passed
        let runs: Result<Vec<_>, String> = evidence
            .runs
            .iter()
            .filter(|run| run.name.starts_with("benchmark-"))
            .map(|run| replay::measured(run, session.statistic))
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
                let (recorded, found) = configs_in_words(&it.configs, &configs);
                expect("configs", recorded, found);
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
    let (Replayed { attempt, .. }, verdict) = replayed_verdict(
        session,
        prior,
        it.number,
        it.cause,
        evidence,
        baseline_passed,
    );
    // a crash in a note older than `ended` needs no numbers: pytest's exit code, which that note does not
    // hold, may have made it; a newer note holds the crash, and its replay is checked as any other
    if it.status == Status::Crash && evidence.ended.crash.is_none() {
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
        let (recorded, found) = configs_in_words(&it.configs, configs);
        expect("configs", recorded, found);
    }
    differences
}

/// Two lists of configs in words, alike where the lists are: their counts where those differ, else the
/// first config that differs, as each list has it.
fn configs_in_words(recorded: &[Measurement], found: &[Measurement]) -> (String, String) {
    if recorded.len() != found.len() {
        return (
            counted(recorded.len() as u64, "config"),
            counted(found.len() as u64, "config"),
        );
    }
    // each config as its fields print, its value as the trailers round it (a record written before they
    // did holds it whole): two values differ in words exactly when they differ there
    let words = |m: &Measurement| {
        format!(
            "{} {} {:?} ms{}",
            m.test,
            m.pass,
            round_config_ms(m.value),
            m.mean
                .map_or(String::new(), |mean| format!(" (mean {mean:?} ms)"))
        )
    };
    recorded
        .iter()
        .zip(found)
        .map(|(a, b)| (words(a), words(b)))
        .find(|(a, b)| a != b)
        .unwrap_or_default()
}

/// Commits the tool did not make: a second session block, and runs of commits that record no iteration
/// (plain ones, or a skip) and change the tree (a plain commit reverted right after it changes nothing
/// and passes). What `step` refuses on.
pub fn foreign_findings(repo: &Repo, history: &History) -> Result<Vec<Finding>> {
    let mut findings: Vec<Finding> = history
        .foreign
        .sessions
        .iter()
        .map(|commit| Finding {
            kind: Kind::ExtraSession,
            commit: commit.clone(),
            detail: format!(
                "declares a session again after the baseline {}; only the baseline's counts",
                crate::record::session::short(&history.baseline_commit)
            ),
        })
        .collect();
    for run in &history.foreign.unrecorded {
        let changed = repo.changed_between(&format!("{}^", run.oldest), &run.newest)?;
        if !changed.is_empty() {
            findings.push(Finding {
                kind: Kind::UnrecordedChange,
                commit: run.newest.clone(),
                detail: format!(
                    "a commit that records no iteration (from {}) changes {} outside any iteration",
                    crate::record::session::short(&run.oldest),
                    changed.join(", ")
                ),
            });
        }
    }
    Ok(findings)
}

/// An evidence note that was not written for the commit it sits on, as a finding.
pub fn binding_finding(repo: &Repo, commit: &str, evidence: &Evidence) -> Result<Option<Finding>> {
    let detail = match &evidence.binding {
        None => {
            "its evidence note names no commit it was written for (written by hand, or by a tool \
                 older than bound notes)"
                .to_string()
        }
        Some(binding) => {
            let differences =
                binding.differences(&crate::record::evidence::Binding::of(repo, commit)?);
            if differences.is_empty() {
                return Ok(None);
            }
            format!(
                "its evidence note is not about it: {}",
                differences.join("; ")
            )
        }
    };
    Ok(Some(Finding {
        kind: Kind::UnboundEvidence,
        commit: commit.to_string(),
        detail,
    }))
}

/// What the session's identity rests on: no replaced objects or grafts (git would show other code than
/// the record holds), the baseline ref `start` wrote naming the history's baseline, and the baseline's
/// evidence note written for that commit. A missing ref is a finding, never read past: anyone can
/// delete it and declare the session again below it.
pub fn identity_findings(repo: &Repo, history: &History) -> Result<Vec<Finding>> {
    let mut findings = replaced_objects(repo)?;
    let baseline = &history.baseline_commit;
    let finding = |detail: String| Finding {
        kind: Kind::BaselineRef,
        commit: baseline.clone(),
        detail,
    };
    if let Some(branch) = crate::record::history::session_branch(repo)? {
        let name = crate::system::git::baseline_ref(&branch);
        match crate::record::history::remembered_baseline(repo, &branch)? {
            Some(named) if &named == baseline => {}
            Some(named) => findings.push(finding(format!(
                "{name} names {}, but the history's session block is on {}",
                crate::record::session::short(&named),
                crate::record::session::short(baseline)
            ))),
            None => findings.push(finding(format!(
                "{name}, which `start` wrote, is missing: the session is read from the newest session block, \
                 which any commit can declare (fetch the ref: `git fetch origin 'refs/cutile-perf/*:refs/cutile-perf/*'`)"
            ))),
        }
    }
    if let Ok(Some(evidence)) = Evidence::of(repo, baseline) {
        findings.extend(binding_finding(repo, baseline, &evidence)?);
    }
    Ok(findings)
}

/// Replace refs and grafts, each a finding: the tool reads git without them, but a checkout, `git log`
/// and the tests see what they substitute.
fn replaced_objects(repo: &Repo) -> Result<Vec<Finding>> {
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/replace/"])?;
    let mut findings: Vec<Finding> = refs
        .lines()
        .map(|name| Finding {
            kind: Kind::ReplacedObjects,
            commit: name.trim_start_matches("refs/replace/").to_string(),
            detail: format!(
                "{name} makes git show another object in its place (`git replace -d {}` removes it)",
                name.trim_start_matches("refs/replace/")
            ),
        })
        .collect();
    let grafts = repo.git_path("info/grafts")?;
    if grafts.exists() {
        findings.push(Finding {
            kind: Kind::ReplacedObjects,
            commit: repo.head()?,
            detail: format!(
                "{} gives commits other parents than they have",
                grafts.display()
            ),
        });
    }
    Ok(findings)
}

/// Iterations without an evidence note in a session that notes every iteration (it says so, or its
/// baseline has one): commits the tool did not make (a trailer commit on another branch, brought in by
/// a merge or fast-forward, passes no hook of the session branch), or notes not fetched. Sessions recorded
/// before notes existed have none at all, and pass.
pub fn unnoted_iterations(repo: &Repo, history: &History) -> Result<Vec<Finding>> {
    let noted = crate::record::evidence::noted_commits(repo)?;
    if !history.session.noted && !noted.contains_key(&history.baseline_commit) {
        return Ok(Vec::new());
    }
    Ok(history
        .iterations
        .iter()
        .filter(|(commit, _)| !noted.contains_key(commit))
        .map(|(commit, it)| Finding {
            kind: Kind::MissingEvidence,
            commit: commit.clone(),
            detail: format!(
                "iteration {} has no evidence note though the session notes every iteration: its notes are \
                 not fetched, or the tool did not record it (a trailer commit made on another branch and \
                 merged or fast-forwarded in passes no hook of the session branch)",
                it.number
            ),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::evidence::{Crash, Ended, Stage};
    use crate::record::session::tests::{iteration, session};
    use crate::rules::decision::Decision;

    #[test]
    fn a_crash_is_checked_against_a_note_that_holds_it_and_taken_as_recorded_from_an_older_one() {
        let session = session();
        let prior = [iteration(0, Status::Keep, Some(0.0), Decision::Continue)];
        // recorded as a crash after correctness passed
        let mut crashed = iteration(1, Status::Crash, None, Decision::TryNext);
        crashed.configs.clear();
        let older = Evidence::new(&session, 1, None, Vec::new());
        assert_eq!(check_iteration(&session, &prior, &crashed, &older, &[]), []);
        // the note says the correctness run was what crashed
        let newer = older.with_ended(Ended {
            crash: Some(Crash {
                stage: Stage::Correctness,
                why: "pytest was killed by signal 9".into(),
            }),
            ..Ended::default()
        });
        assert_eq!(
            check_iteration(&session, &prior, &crashed, &newer, &[]),
            [("correctness", "PASS".to_string(), "FAIL".to_string())]
        );
    }

    #[test]
    fn thresholds_that_differ_read_as_words() {
        let session = session();
        let prior = [iteration(0, Status::Keep, Some(0.0), Decision::Continue)];
        let mut crashed = iteration(1, Status::Crash, None, Decision::TryNext);
        crashed.configs.clear();
        let mut evidence = Evidence::new(&session, 1, None, Vec::new());
        evidence.thresholds.regression_pct = 50.0;
        let differences = check_iteration(&session, &prior, &crashed, &evidence, &[]);
        let (what, recorded, found) = &differences[0];
        assert_eq!(*what, "thresholds");
        assert_eq!(
            recorded,
            "continue 5%, gain 2%, regression 2%, at most 25 iterations, 2 without a gain"
        );
        assert!(found.contains("regression 50%,"), "{found}");
    }

    #[test]
    fn configs_that_differ_read_as_the_first_that_does() {
        let config = |test: &str, value: f64| Measurement {
            pass: "forward".into(),
            test: test.into(),
            value,
            mean: None,
        };
        let recorded = [config("t::a", 1.0), config("t::b", 2.0)];
        assert_eq!(
            configs_in_words(&recorded, &recorded),
            (String::new(), String::new())
        );
        let found = [config("t::a", 1.0), config("t::b", 2.5)];
        assert_eq!(
            configs_in_words(&recorded, &found),
            (
                "t::b forward 2.0 ms".to_string(),
                "t::b forward 2.5 ms".to_string()
            )
        );
        assert_eq!(
            configs_in_words(&recorded, &found[..1]),
            ("2 configs".to_string(), "1 config".to_string())
        );
    }

    #[test]
    fn a_rounded_trailer_and_a_whole_one_match_the_evidence_alike() {
        let config = |value: f64| Measurement {
            pass: "forward".into(),
            test: "t::a".into(),
            value,
            mean: None,
        };
        let exact = [config(0.08799999999999998)];
        let rounded = [config(0.088)];
        assert_eq!(
            configs_in_words(&rounded, &exact),
            (String::new(), String::new())
        );
        assert_eq!(
            configs_in_words(&exact, &exact),
            (String::new(), String::new())
        );
        // a value that differs in the digits the trailers keep still differs
        let (recorded, found) = configs_in_words(&rounded, &[config(0.0881)]);
        assert_ne!(recorded, found);
    }
}
