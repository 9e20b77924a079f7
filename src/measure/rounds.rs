//! The rounds of a step's attempt: correctness, the paired rounds, and what they call for (nothing more
//! for a candidate alike to its baseline, a second set for a config too good to be true, the
//! unseen-input check for a step the rounds would keep). Ctrl-C is an error: nothing is recorded.

use std::cell::RefCell;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::features::diagnose::toolchain;
use crate::measure::paired::{self, Paired, Rounds};
use crate::record::census;
use crate::record::evidence::{Crash, Ended, Evidence, RunFile, Stage, Undecided};
use crate::record::history::History;
use crate::record::session::Session;
use crate::rules::decision::{self, Decided, Tier};
use crate::rules::verdict;
use crate::system::git::Repo;
use crate::system::process::Interrupted;
use crate::system::pytest::{CorrectnessRun, Pytest, Recorded};
use crate::system::workers::Side;

/// What the tool's own checks of a step cost, in seconds, beside what they found: the share of the step
/// they take can be stated from the report alone.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Checks {
    /// The census's untimed repetitions of each perf case, over every benchmark run of the step.
    pub census_s: f64,
    /// Checking what the timed calls returned against the census call's output (keeping, copying and
    /// comparing outputs, and the untimed call that tells whether the function is deterministic), over
    /// every benchmark run of the step.
    pub timed_outputs_s: f64,
    /// The correctness runs on inputs neither side has seen (only for a step the rounds would keep).
    pub unseen_inputs_s: f64,
    /// Reading and comparing the two sides' dumps after the first round.
    pub no_reroll_s: f64,
    /// Why the two sides were not found alike (the first thing that differs); none when they were, or
    /// when no round was measured.
    pub not_alike: Option<String>,
    /// The compile facts gathered after the verdict.
    pub compile_facts_s: f64,
}

fn interrupted() -> anyhow::Error {
    Interrupted("nothing was recorded; your changes are as you left them").into()
}

/// The cases that passed at the baseline, which the candidate's correctness is held to; older sessions
/// have no evidence note on their baseline: then no case list to hold them to.
pub fn baseline_passed(repo: &Repo, history: &History) -> Result<Vec<String>> {
    Ok(match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.passed_cases()?,
        None => Vec::new(),
    })
}

/// The no-re-roll check the rounds make after the first round, of the first GPU's `sides` (the
/// candidate's, then the baseline's): [`first_round_alike`], with its cost and finding kept in `checks`.
pub fn no_reroll<'c>(
    sides: [&'c Pytest<'c>; 2],
    checks: &'c RefCell<Checks>,
) -> impl Fn(&mut Vec<RunFile>) -> bool + 'c {
    move |runs| {
        let started = Instant::now();
        let alike = first_round_alike(runs, sides);
        let mut checks = checks.borrow_mut();
        checks.no_reroll_s = started.elapsed().as_secs_f64();
        checks.not_alike = alike.err();
        checks.not_alike.is_none()
    }
}

/// Correctness, the rounds, and what they call for: nothing more for a candidate alike to its
/// baseline, a second set of rounds for a config too good to be true, the unseen-input check for a
/// step the rounds would keep.
pub fn measure(
    rounds: &mut Rounds,
    baseline_passed: &[String],
    session: &Session,
    checks: &RefCell<Checks>,
) -> Result<Measured> {
    let mut measured = Measured::default();
    paired::stand_by_from_correctness(rounds);
    let waiting = Instant::now();
    paired::let_go_once_the_candidate_is_ready(rounds)?;
    rounds.timings.startup_waited_s += waiting.elapsed().as_secs_f64();
    let started = Instant::now();
    let passed = correctness(
        baseline_passed,
        &mut rounds.first().candidate,
        &mut measured,
    )?;
    // the candidate's worker may still have been starting: that wait is its start-up's, not the tests'
    let waited = rounds.first().candidate.waited().as_secs_f64();
    rounds.timings.startup_waited_s += waited;
    rounds.timings.correctness_s = (started.elapsed().as_secs_f64() - waited).max(0.0);
    if !passed {
        return Ok(measured);
    }
    let first = measured.decided(rounds, "round")?;
    rounds.no_reroll = None;
    if census::unchanged(&measured.runs) {
        rounds
            .first()
            .candidate
            .runner
            .progress
            .line(decision::NO_CHANGE);
        return Ok(measured);
    }
    if let Ok(decided) = confirmed(first, rounds, &mut measured)? {
        // only a step the rounds would keep needs the inputs nobody has seen
        if census::gate(decided, &measured.runs, &census::Rules::of(session)).tier != Tier::Revert {
            let started = Instant::now();
            unseen_inputs(rounds, &mut measured.runs)?;
            checks.borrow_mut().unseen_inputs_s = started.elapsed().as_secs_f64();
        }
    }
    Ok(measured)
}

/// What the step measured so far: its runs, and how the measurement ended where they cannot say.
#[derive(Default)]
pub struct Measured {
    pub runs: Vec<RunFile>,
    pub ended: Ended,
}

impl Measured {
    /// Rounds until decided (their runs named `<prefix>-<n>-<side>`); `Err(why)` inside is a crash of
    /// the attempt, outside an interruption.
    fn decided(&mut self, rounds: &mut Rounds, prefix: &str) -> Result<Result<Decided, String>> {
        let decided = match paired::measure(rounds, prefix, &mut self.runs)? {
            Paired::Interrupted => return Err(interrupted()),
            Paired::Crashed(why) => Err(why),
            Paired::Decided(decided) => Ok(decided),
        };
        // what the runs' files cannot say: a process's ending, the budget left
        match &decided {
            Err(why) => self.crashed(Stage::Rounds, why),
            Ok(Decided {
                undecided: Some(why),
                ..
            }) => self.ended.undecided.push(Undecided {
                rounds: prefix.to_string(),
                why: why.clone(),
            }),
            Ok(_) => {}
        }
        Ok(decided)
    }

    /// Records that the attempt crashed at `stage`, and why.
    pub fn crashed(&mut self, stage: Stage, why: &str) {
        self.ended.crash = Some(Crash {
            stage,
            why: why.to_string(),
        });
    }
}
/// The correctness run, held to the cases that passed at the baseline: whether it passed (the rounds
/// follow) or the attempt ends here (failed or crashed).
fn correctness(
    baseline_passed: &[String],
    candidate: &mut Side,
    measured: &mut Measured,
) -> Result<bool> {
    let Recorded { outcome, records } = candidate.correctness()?;
    measured
        .runs
        .extend(records.map(|records| RunFile::new("correctness", records)));
    Ok(match outcome.against_baseline(baseline_passed) {
        CorrectnessRun::Interrupted => return Err(interrupted()),
        CorrectnessRun::Fail { failed } => {
            candidate
                .runner
                .progress
                .line(&format!("correctness FAIL: {}", failed.join(", ")));
            false
        }
        CorrectnessRun::Crash(why) | CorrectnessRun::NoneSelected(why) => {
            measured.crashed(Stage::Correctness, &why);
            false
        }
        CorrectnessRun::Pass { .. } => true,
    })
}

/// No re-roll: the kernels each side's runs compiled so far (its dumps folder), attached to its first
/// round's run for the evidence, and whether the two sides are alike (`census::alike`). The folders hold
/// whatever the side's code compiled, in this step or, for a baseline whose worker compiled before, in
/// an earlier one.
fn first_round_alike(runs: &mut [RunFile], sides: [&Pytest; 2]) -> Result<(), String> {
    for (name, side) in ["candidate", "baseline"].into_iter().zip(sides) {
        let first = format!("round-1-{name}");
        let Some(run) = runs.iter_mut().find(|run| run.name == first) else {
            return Err(format!("no first round of the {name}"));
        };
        run.compiled = side
            .dumps
            .as_deref()
            .map(|dumps| toolchain::compiled_kernels(dumps, side.root));
    }
    census::alike(runs)
}

/// Correctness once more, with every seed the tests set shifted by an offset neither side has seen: what
/// `census::judged` holds a kept step to. The candidate's run first; the baseline's only where the
/// candidate's did not pass every case, to tell the test's failures from the change's.
fn unseen_inputs(rounds: &mut Rounds, runs: &mut Vec<RunFile>) -> Result<()> {
    use std::hash::{BuildHasher, Hasher};
    let offset = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32
        | 1;
    rounds.first().candidate.runner.progress.line(&format!(
        "the rounds keep it: correctness on inputs neither side has seen (seeds shifted by {offset})"
    ));
    let first = rounds.first();
    let unseen = |side: &mut Side, name: &str| -> Result<Option<RunFile>> {
        let unseen = side.unseen_correctness("unseen", offset)?;
        if let CorrectnessRun::Interrupted = unseen.outcome {
            return Err(interrupted());
        }
        Ok(unseen
            .records
            .map(|records| RunFile::new(&census::unseen_run_name(offset, name), records)))
    };
    let candidate = unseen(&mut first.candidate, "candidate")?;
    let passed = (candidate.as_ref())
        .is_some_and(|run| census::unseen_failures(std::slice::from_ref(run)).is_none());
    runs.extend(candidate);
    if !passed {
        runs.extend(unseen(&mut first.baseline, "baseline")?);
    }
    Ok(())
}

/// The rounds' verdict (`first`); a config more than ten times faster is measured again, and the second
/// set decides if it confirms the first: `verdict::confirmed`, which the replay applies to the runs.
fn confirmed(
    first: Result<Decided, String>,
    rounds: &mut Rounds,
    measured: &mut Measured,
) -> Result<Result<Decided, String>> {
    let progress = rounds.first().candidate.runner.progress;
    let (decided, _remark) = verdict::confirmed(first, || {
        progress.line("a config is more than 10x faster than its baseline: measuring again");
        measured.decided(rounds, "confirm-round")
    })?;
    Ok(decided)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::runner::Local;

    #[test]
    fn a_baseline_whose_worker_compiled_in_an_earlier_step_is_read_from_its_stored_dumps() {
        let dir = tempfile::tempdir().unwrap();
        let dumps = |tree: &str| dir.path().join("dumps").join(tree);
        let signature = "scale_Kt1_A1f16_1l0_I128";
        let text = format!("entry @{signature}(%arg0: tile<ptr<f16>>) {{\n  return\n}}\n");
        // the baseline's code compiled in an earlier step (its worker lives on and compiles nothing
        // now); the candidate's in this one, under another file name
        for (tree, file) in [
            ("base", "scale.k.ln5.a1b2c3.tileir"),
            ("cand", "scale.k.ln6.d4e5f6.tileir"),
        ] {
            std::fs::create_dir_all(dumps(tree)).unwrap();
            std::fs::write(dumps(tree).join(file), &text).unwrap();
        }
        let progress = crate::system::ui::Progress::to(std::io::sink());
        let side = |tree: &str| Pytest {
            python: "python3",
            root: dir.path(),
            test: "t.py",
            filter: None,
            sandbox: dir.path().join("sandbox"),
            deadline: Instant::now(),
            place: &Local,
            dumps: Some(dumps(tree)),
            gpu: None,
            progress: &progress,
        };
        let (candidate, baseline) = (side("cand"), side("base"));
        let mut runs = vec![
            census::first_round("candidate", "scale", signature),
            census::first_round("baseline", "scale", signature),
        ];
        assert_eq!(
            first_round_alike(&mut runs, [&candidate, &baseline]),
            Ok(())
        );
        // the hashes each side compared are kept in the evidence
        assert!(
            runs.iter()
                .all(|run| run.compiled.as_ref().unwrap().len() == 1)
        );

        // no dump of the baseline's code at all: not alike, and why
        let missing = side("gone");
        assert_eq!(
            first_round_alike(&mut runs, [&candidate, &missing]),
            Err("the baseline's run round-1-baseline: no kernel was dumped".into())
        );
    }
}
