//! The attempt stage: correctness, then paired benchmark rounds of the candidate and the current
//! baseline's code, confirmed when a config looks too good to be true. Ctrl-C is an error: nothing is
//! recorded.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::census;
use crate::decision::{self, Attempt, Correctness, Decided, Tier};
use crate::diagnose::toolchain;
use crate::evidence::{Evidence, RunFile};
use crate::git::Repo;
use crate::history::{History, sandbox};
use crate::paired::{self, Held, Paired, Rounds, Wanted, dumps_of};
use crate::process::Interrupted;
use crate::pytest::{CorrectnessRun, Pytest, Recorded};
use crate::runner::Runner;
use crate::ui::Progress;
use crate::verdict::{self, NoiseFloor};
use crate::workers::Side;
use crate::workers::lasting::{Code, WorkerEnv};

/// What the attempt stage produced: the attempt, the JUnit files of its runs (for the evidence note),
/// a remark for the reason when a suspicious gain was confirmed, what the tool's own checks cost, and the
/// folder of the kernels the candidate's runs compiled.
pub struct Tried<'a> {
    pub attempt: Attempt,
    pub runs: Vec<RunFile>,
    pub remark: Option<String>,
    pub checks: Checks,
    pub candidate_dumps: PathBuf,
    /// Each side's code and worker: the one holding the new baseline's code may live on.
    pub held: HeldSides<'a>,
}

/// The two sides' code and workers after the attempt.
pub struct HeldSides<'a> {
    pub candidate: Held<'a>,
    pub baseline: Held<'a>,
}

impl<'a> HeldSides<'a> {
    /// The side whose code is the baseline after the step (the candidate's when it is `kept`); the
    /// other ends now.
    pub fn holder(self, kept: bool) -> Held<'a> {
        match kept {
            true => self.candidate,
            false => self.baseline,
        }
    }
}

/// What the tool's own checks of a step cost, in seconds, beside what they found: the share of the step
/// they take can be stated from the report alone.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Checks {
    /// The census's untimed repetitions of each perf case, over every benchmark run of the step.
    pub census_s: f64,
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

/// Runs correctness, then (if it passed) paired rounds; after the first round, a candidate that compiled
/// and launched what the baseline does is no change (nothing more is measured); a config more than ten
/// times faster than its baseline is measured again (a second set of rounds) before it is believed.
/// `tree` is the candidate's code as a tree object. Each side runs from a worktree of its own code; the
/// baseline's worker is the one an earlier step kept, where it can serve.
pub fn attempt<'r>(
    repo: &'r Repo,
    history: &History,
    place: &dyn Runner,
    tree: &str,
    progress: &Progress,
    deadline: Instant,
) -> Result<Tried<'r>> {
    let session = &history.session;
    let baseline_commit = history.current_baseline_commit();
    let baseline_tree = repo.git(&["rev-parse", &format!("{baseline_commit}^{{tree}}")])?;
    let baseline_tree = baseline_tree.trim();
    let candidate_dumps = dumps_of(repo, tree);
    let template = Pytest {
        python: &session.python,
        root: &repo.root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox: sandbox(repo),
        deadline,
        place,
        dumps: None,
        progress,
    };
    let env = WorkerEnv::now(
        &session.python,
        &session.test,
        session.filter.as_deref(),
        WorkerEnv::visible_gpu(),
    );
    // both sides' code and workers first: their start-up overlaps correctness and each other
    let wanted = |side, code| Wanted {
        side,
        code,
        env: env.clone(),
        template: &template,
        warm: place.keeps_workers(),
    };
    let mut baseline_held = paired::hold(
        repo,
        wanted(
            "baseline",
            Code {
                commit: baseline_commit.to_string(),
                tree: baseline_tree.to_string(),
            },
        ),
    )?;
    // the snapshot's tree as a commit of its own, for a worktree of it
    let candidate_commit = repo.git(&[
        "commit-tree",
        tree,
        "-m",
        "git cutile-perf: the code a step measures",
    ])?;
    let mut candidate_held = paired::hold(
        repo,
        wanted(
            "candidate",
            Code {
                commit: candidate_commit.trim().to_string(),
                tree: tree.to_string(),
            },
        ),
    )?;
    let (candidate_root, baseline_root) = (
        candidate_held.tree.path.clone(),
        baseline_held.tree.path.clone(),
    );
    let candidate = Pytest {
        root: &candidate_root,
        dumps: Some(candidate_dumps.clone()),
        ..template.clone()
    };
    let baseline = Pytest {
        root: &baseline_root,
        sandbox: sandbox(repo).join("baseline"),
        dumps: Some(dumps_of(repo, baseline_tree)),
        ..template.clone()
    };
    let checks = std::cell::RefCell::new(Checks::default());
    let no_reroll = |runs: &mut Vec<RunFile>| {
        let started = Instant::now();
        let alike = first_round_alike(runs, [&candidate, &baseline]);
        let mut checks = checks.borrow_mut();
        checks.no_reroll_s = started.elapsed().as_secs_f64();
        checks.not_alike = alike.err();
        checks.not_alike.is_none()
    };
    let mut rounds = Rounds {
        candidate: Side::new(&candidate, candidate_held.worker.take()),
        baseline: Side::new(&baseline, baseline_held.worker.take()),
        session,
        floor: NoiseFloor::from_spreads(&session.spread),
        deadline,
        no_reroll: Some(&no_reroll),
    };
    let mut runs = Vec::new();
    let (attempt, remark) = attempted(repo, history, &mut rounds, &mut runs, &checks)?;
    candidate_held.worker = rounds.candidate.into_worker();
    baseline_held.worker = rounds.baseline.into_worker();
    let mut checks = checks.into_inner();
    checks.census_s = census::seconds(&runs);
    Ok(Tried {
        attempt,
        runs,
        remark,
        checks,
        candidate_dumps,
        held: HeldSides {
            candidate: candidate_held,
            baseline: baseline_held,
        },
    })
}

/// The attempt on the sides of `rounds`, with a remark for the reason when a suspicious gain was
/// confirmed.
fn attempted(
    repo: &Repo,
    history: &History,
    rounds: &mut Rounds,
    runs: &mut Vec<RunFile>,
    checks: &std::cell::RefCell<Checks>,
) -> Result<(Attempt, Option<String>)> {
    if let Some(failed) = correctness(repo, history, &mut rounds.candidate, runs)? {
        return Ok((failed, None));
    }
    let first = decided(rounds, "round", runs)?;
    rounds.no_reroll = None;
    if census::unchanged(runs) {
        rounds.candidate.runner.progress.line(decision::NO_CHANGE);
        return Ok((Attempt::Unchanged, None));
    }
    let (measured, remark) = confirmed(first, rounds, runs)?;
    let attempt = match measured {
        Ok(decided) => {
            let rules = census::Rules::of(&history.session);
            let decided = census::gate(decided, runs, &rules);
            // only a step the rounds would keep needs the inputs nobody has seen
            if decided.tier != Tier::Revert {
                let started = Instant::now();
                unseen_inputs(rounds, runs)?;
                checks.borrow_mut().unseen_inputs_s = started.elapsed().as_secs_f64();
            }
            census::with_unseen(decided, runs)
        }
        Err(why) => Attempt::Crashed {
            correctness: Correctness::Pass,
            why,
        },
    };
    Ok((attempt, remark))
}

/// The correctness run, held to the cases that passed at the baseline; `Some` is an attempt that ends
/// here (failed or crashed).
fn correctness(
    repo: &Repo,
    history: &History,
    candidate: &mut Side,
    runs: &mut Vec<RunFile>,
) -> Result<Option<Attempt>> {
    // older sessions have no evidence note on their baseline: then no case list to hold them to
    let baseline_passed = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.passed_cases()?,
        None => Vec::new(),
    };
    let Recorded { outcome, records } = candidate.correctness()?;
    runs.extend(records.map(|records| RunFile::new("correctness", records)));
    Ok(match outcome.against_baseline(&baseline_passed) {
        CorrectnessRun::Interrupted => return Err(interrupted()),
        CorrectnessRun::Fail { failed } => {
            candidate
                .runner
                .progress
                .line(&format!("correctness FAIL: {}", failed.join(", ")));
            Some(Attempt::CorrectnessFailed { failed })
        }
        CorrectnessRun::Crash(why) | CorrectnessRun::NoneSelected(why) => Some(Attempt::Crashed {
            correctness: Correctness::Fail,
            why,
        }),
        CorrectnessRun::Pass { .. } => None,
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

/// Correctness on both sides once more, with every seed the tests set shifted by an offset neither side
/// has seen: what `census::with_unseen` holds a kept step to.
fn unseen_inputs(rounds: &mut Rounds, runs: &mut Vec<RunFile>) -> Result<()> {
    use std::hash::{BuildHasher, Hasher};
    let offset = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32
        | 1;
    rounds.candidate.runner.progress.line(&format!(
        "the rounds keep it: correctness on inputs neither side has seen (seeds shifted by {offset})"
    ));
    for (name, side) in [
        ("candidate", &mut rounds.candidate),
        ("baseline", &mut rounds.baseline),
    ] {
        let unseen = side.unseen_correctness("unseen", offset)?;
        if let CorrectnessRun::Interrupted = unseen.outcome {
            return Err(interrupted());
        }
        runs.extend(
            unseen
                .records
                .map(|records| RunFile::new(&census::unseen_run_name(offset, name), records)),
        );
    }
    Ok(())
}

/// Rounds until decided; `Err(why)` inside is a crash of the attempt, outside an interruption.
fn decided(
    rounds: &mut Rounds,
    prefix: &str,
    runs: &mut Vec<RunFile>,
) -> Result<Result<Decided, String>> {
    Ok(match paired::measure(rounds, prefix, runs)? {
        Paired::Interrupted => return Err(interrupted()),
        Paired::Crashed(why) => Err(why),
        Paired::Decided(decided) => Ok(decided),
    })
}

/// The rounds' verdict (`first`); a config more than ten times faster is measured again, and the second
/// set decides if it confirms the first (with a remark for the reason): `verdict::confirmed`.
fn confirmed(
    first: Result<Decided, String>,
    rounds: &mut Rounds,
    runs: &mut Vec<RunFile>,
) -> Result<(Result<Decided, String>, Option<String>)> {
    let progress = rounds.candidate.runner.progress;
    verdict::confirmed(first, || {
        progress.line("a config is more than 10x faster than its baseline: measuring again");
        decided(rounds, "confirm-round", runs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Local;

    /// A first round's run whose one perf case launched `kernel` and ran `device` on the GPU.
    fn first_round(side: &str, kernel: &str, device: &str) -> RunFile {
        let census = census::Census {
            taken: true,
            why: None,
            launches: vec![census::Launch {
                kernel: kernel.into(),
                file: Some("k.py".into()),
                grids: vec![vec![1]],
                count: 1,
            }],
            bytes: 0,
            arrays: Vec::new(),
            device: Some(vec![census::DeviceTime {
                name: device.into(),
                us: 1.0,
            }]),
            seconds: None,
        };
        census::run_with_census(&format!("round-1-{side}"), &census)
    }

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
        let progress = crate::ui::Progress::to(std::io::sink());
        let side = |tree: &str| Pytest {
            python: "python3",
            root: dir.path(),
            test: "t.py",
            filter: None,
            sandbox: dir.path().join("sandbox"),
            deadline: Instant::now(),
            place: &Local,
            dumps: Some(dumps(tree)),
            progress: &progress,
        };
        let (candidate, baseline) = (side("cand"), side("base"));
        let mut runs = vec![
            first_round("candidate", "scale", signature),
            first_round("baseline", "scale", signature),
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
