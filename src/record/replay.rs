//! The one replay: the attempt a step's runs give under the session's rules. `step` measures live (it
//! decides when to stop measuring: a failed correctness run, the rounds, no re-roll, the confirmation,
//! the unseen inputs) and records what this gives over the runs it made; `verify` and `report` give it
//! the evidence's runs. What the runs' files cannot say (a crash's reason from a process's ending, the
//! budget that left rounds undecided) the evidence keeps beside them (`evidence::Ended`).

use std::convert::Infallible;

use crate::record::census;
use crate::record::evidence::{Crash, Ended, Evidence, RunFile, Stage};
use crate::record::session::Session;
use crate::rules::decision::{Attempt, Correctness, Decided};
use crate::rules::records::{self, CaseOutcome, Measurement, Statistic};
use crate::rules::verdict::{self, Round};
use crate::system::pytest::CorrectnessRun;

/// Why rounds of a note written before the step kept its reason were decided on their means.
const NO_FURTHER_ROUND: &str = "no further round fitted the budget";

/// An attempt as its runs give it, and the remark a confirmed suspicious gain adds to its reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    pub attempt: Attempt,
    pub remark: Option<String>,
}

/// The attempt `runs` give (in the order they ran, named as `step` names them), with how the
/// measurement `ended`, under `session`'s rules, the correctness run held to the cases that passed at
/// the baseline (`baseline_passed`).
pub fn attempt(
    runs: &[RunFile],
    ended: &Ended,
    session: &Session,
    baseline_passed: &[String],
) -> Replayed {
    let crashed = |correctness, why: String| Replayed {
        attempt: Attempt::Crashed { correctness, why },
        remark: None,
    };
    if let Some(Crash { stage, why }) = &ended.crash {
        let correctness = match stage {
            Stage::Correctness => Correctness::Fail,
            Stage::Rounds => Correctness::Pass,
        };
        return crashed(correctness, why.clone());
    }
    let Some(run) = runs.iter().find(|run| run.name == "correctness") else {
        return crashed(Correctness::Fail, "no correctness JUnit file".into());
    };
    match correctness_of(run, baseline_passed) {
        Err(why) => return crashed(Correctness::Fail, why),
        Ok(CorrectnessRun::Fail { failed }) => {
            return Replayed {
                attempt: Attempt::CorrectnessFailed { failed },
                remark: None,
            };
        }
        Ok(_) => {}
    }
    if census::unchanged(runs) {
        return Replayed {
            attempt: Attempt::Unchanged,
            remark: None,
        };
    }
    let decided = |prefix| decided(runs, prefix, ended, session);
    let Ok((result, remark)) = verdict::confirmed(decided("round"), || {
        Ok::<_, Infallible>(decided("confirm-round"))
    });
    match result {
        Ok(decided) => Replayed {
            attempt: census::judged(decided, runs, &census::Rules::of(session)),
            remark,
        },
        Err(why) => crashed(Correctness::Pass, why),
    }
}

/// The attempt an evidence note describes, as `step` recorded it from the same runs.
pub fn of_evidence(evidence: &Evidence, session: &Session, baseline_passed: &[String]) -> Replayed {
    attempt(&evidence.runs, &evidence.ended, session, baseline_passed)
}

/// The correctness outcome a correctness run's file gives, held to the baseline's passing cases.
fn correctness_of(run: &RunFile, baseline_passed: &[String]) -> Result<CorrectnessRun, String> {
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

/// The measurements a benchmark run's file gives under the session's statistic.
pub fn measured(run: &RunFile, statistic: Statistic) -> Result<Vec<Measurement>, String> {
    let cases = run.cases().map_err(|e| format!("{e:#}"))?;
    records::measurements(&cases, statistic).map_err(|e| format!("{e:#}"))
}

/// The paired rounds named `<prefix>-<n>-baseline` and `<prefix>-<n>-candidate`, each round pooling the
/// runs of every GPU (`RunFile::of_round`) in the order they were noted, as `paired::measure` pooled them.
fn rounds(runs: &[RunFile], prefix: &str, statistic: Statistic) -> Result<Vec<Round>, String> {
    let mut rounds = Vec::new();
    for n in 1.. {
        let side = |side: &str| -> Result<Option<Vec<Measurement>>, String> {
            let mut pooled: Option<Vec<Measurement>> = None;
            for run in runs.iter().filter(|run| run.of_round(prefix, n, side)) {
                pooled
                    .get_or_insert_with(Vec::new)
                    .extend(measured(run, statistic)?);
            }
            Ok(pooled)
        };
        let (Some(baseline), Some(candidate)) = (side("baseline")?, side("candidate")?) else {
            break;
        };
        rounds.push(Round {
            baseline,
            candidate,
        });
    }
    if rounds.is_empty() {
        return Err(format!("no {prefix} benchmark runs"));
    }
    Ok(rounds)
}

/// The verdict of the rounds, as `paired::measure` reaches it: decided on the means, saying why, when
/// the rounds did not settle it.
fn decided(
    runs: &[RunFile],
    prefix: &str,
    ended: &Ended,
    session: &Session,
) -> Result<Decided, String> {
    let rounds = rounds(runs, prefix, session.statistic)?;
    let floor = verdict::NoiseFloor::from_spreads(&session.spread).under(ended.rules);
    let why = ended.undecided(prefix).unwrap_or(NO_FURTHER_ROUND);
    verdict::decide_anyway(&rounds, &session.thresholds, &floor, why).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::session;
    use crate::rules::records::{RecordFile, RecordFormat};
    use crate::rules::verdict::Rules;

    fn correctness(cases: &str) -> RunFile {
        RunFile::new(
            "correctness",
            RecordFile {
                format: RecordFormat::Junit,
                text: format!("<testsuite>{cases}</testsuite>"),
            },
        )
    }

    fn crash(stage: Stage) -> Ended {
        Ended {
            crash: Some(Crash {
                stage,
                why: "pytest was killed by signal 9".into(),
            }),
            ..Ended::default()
        }
    }

    #[test]
    fn a_crash_the_step_kept_is_the_attempt_whatever_the_runs_show() {
        let passed = [correctness(r#"<testcase classname="t" name="a"/>"#)];
        let replayed = |runs: &[RunFile], ended| attempt(runs, &ended, &session(), &[]).attempt;
        let crashed = |correctness| Attempt::Crashed {
            correctness,
            why: "pytest was killed by signal 9".into(),
        };
        assert_eq!(
            replayed(&passed, crash(Stage::Correctness)),
            crashed(Correctness::Fail)
        );
        assert_eq!(
            replayed(&[], crash(Stage::Rounds)),
            crashed(Correctness::Pass)
        );
        // a note without it says what its runs can
        assert_eq!(
            replayed(&[], Ended::default()),
            Attempt::Crashed {
                correctness: Correctness::Fail,
                why: "no correctness JUnit file".into()
            }
        );
        assert_eq!(
            replayed(&passed, Ended::default()),
            Attempt::Crashed {
                correctness: Correctness::Pass,
                why: "no round benchmark runs".into()
            }
        );
    }

    /// A benchmark run `name` of configs `t::<id>` with these medians (ms).
    fn benchmark(name: &str, configs: &[(&str, f64)]) -> RunFile {
        let cases: String = configs
            .iter()
            .map(|(id, ms)| {
                format!(
                    r#"<testcase classname="t" name="{id}"><properties><property name="benchmark" value="{{'cutile': {{'forward': {{'median': {ms}}}}}}}"/></properties></testcase>"#
                )
            })
            .collect();
        RunFile::new(
            name,
            RecordFile {
                format: RecordFormat::Junit,
                text: format!("<testsuite>{cases}</testsuite>"),
            },
        )
    }

    #[test]
    fn a_note_is_replayed_by_the_rules_that_decided_it() {
        // round 1: a 3% faster, clear of the limit; b (1.5 us) within noise of it; round 2 ran b only,
        // as the first rules asked, and the budget ended the step there
        let runs = [
            correctness(r#"<testcase classname="t" name="a"/><testcase classname="t" name="b"/>"#),
            benchmark("round-1-baseline", &[("a", 1.0), ("b", 0.0015)]),
            benchmark("round-1-candidate", &[("a", 0.97), ("b", 0.0015)]),
            benchmark("round-2-candidate", &[("b", 0.0015)]),
            benchmark("round-2-baseline", &[("b", 0.0015)]),
        ];
        let under = |rules| {
            let ended = Ended {
                rules,
                ..Ended::default()
            };
            attempt(&runs, &ended, &session(), &[]).attempt
        };
        let Attempt::Measured {
            paired: decided, ..
        } = under(Rules::First)
        else {
            panic!("not decided under the first rules")
        };
        assert!(
            decided.reason.contains("decided on the means"),
            "{}",
            decided.reason
        );
        // the rules of today would have measured a again in round 2
        assert_eq!(
            under(Rules::Pooled),
            Attempt::Crashed {
                correctness: Correctness::Pass,
                why: "t::a forward is missing from round 2's baseline run".into()
            }
        );
    }

    #[test]
    fn a_failed_case_or_one_that_passed_at_the_baseline_and_skips_now_is_a_fail() {
        let run = correctness(
            r#"<testcase classname="t" name="a"><failure message="no"/></testcase><testcase classname="t" name="b"><skipped/></testcase>"#,
        );
        let replayed = |baseline_passed: &[String]| {
            attempt(
                std::slice::from_ref(&run),
                &Ended::default(),
                &session(),
                baseline_passed,
            )
            .attempt
        };
        assert_eq!(
            replayed(&[]),
            Attempt::CorrectnessFailed {
                failed: vec!["t::a".into()]
            }
        );
        let skipped = correctness(r#"<testcase classname="t" name="b"><skipped/></testcase>"#);
        assert_eq!(
            attempt(&[skipped], &Ended::default(), &session(), &["t::b".into()]).attempt,
            Attempt::CorrectnessFailed {
                failed: vec!["t::b (skipped now, passed at the baseline)".into()]
            }
        );
    }
}
