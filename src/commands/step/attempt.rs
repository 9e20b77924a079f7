//! The attempt stage: correctness, then paired benchmark rounds of the candidate and the current
//! baseline's code, confirmed when a config looks too good to be true. Ctrl-C is an error: nothing is
//! recorded.

use std::time::Instant;

use anyhow::{Context, Result};

use crate::census;
use crate::decision::{self, Attempt, Correctness, Decided, Tier};
use crate::diagnose::toolchain;
use crate::evidence::{Evidence, RunFile};
use crate::git::Repo;
use crate::history::{History, sandbox};
use crate::paired::{self, BaselineTree, Paired, Rounds};
use crate::process::Interrupted;
use crate::pytest::{BenchmarkRun, CorrectnessRun, Pytest};
use crate::runner::Runner;
use crate::ui::Progress;
use crate::verdict::{self, NoiseFloor};
use crate::workers::Side;

/// What the attempt stage produced: the attempt, the JUnit files of its runs (for the evidence note),
/// and a remark for the reason when a suspicious gain was confirmed.
pub struct Tried {
    pub attempt: Attempt,
    pub runs: Vec<RunFile>,
    pub remark: Option<String>,
}

fn interrupted() -> anyhow::Error {
    Interrupted("nothing was recorded; your changes are as you left them").into()
}

/// Runs correctness, then (if it passed) paired rounds; a config more than ten times faster than its
/// baseline is measured again (a second set of rounds) before it is believed.
pub fn attempt(
    repo: &Repo,
    history: &History,
    place: &dyn Runner,
    progress: &Progress,
    deadline: Instant,
) -> Result<Tried> {
    let session = &history.session;
    let candidate = Pytest {
        python: &session.python,
        root: &repo.root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox: sandbox(repo),
        deadline,
        place,
        progress,
    };
    // the baseline's code and both workers first: their start-up overlaps correctness and each other
    let tree = BaselineTree::add(repo, history.current_baseline_commit())?;
    let baseline = Pytest {
        root: &tree.path,
        sandbox: sandbox(repo).join("baseline"),
        ..candidate.clone()
    };
    let mut rounds = Rounds {
        candidate: side(repo, &candidate, "candidate")?,
        baseline: side(repo, &baseline, "baseline")?,
        session,
        floor: NoiseFloor::from_spreads(&session.spread),
        deadline,
    };
    let mut runs = Vec::new();
    if let Some(failed) = correctness(repo, history, &mut rounds.candidate, &mut runs)? {
        return Ok(Tried {
            attempt: failed,
            runs,
            remark: None,
        });
    }
    let (measured, remark) = confirmed(&mut rounds, &mut runs)?;
    let attempt = match measured {
        Ok(decided) => {
            let rules = census::Rules::of(session);
            let decided = census::gate(decided, &runs, &rules);
            // only a step the rounds would keep can profit from a luckier sample of the same code, so
            // only it pays for the compile runs
            if decided.tier == Tier::Revert {
                census::with_unseen(decided, &runs)
            } else if compiled_alike(&rounds, &mut runs)? {
                progress.line(decision::NO_CHANGE);
                Attempt::Unchanged
            } else {
                unseen_inputs(&mut rounds, &mut runs)?;
                census::with_unseen(decided, &runs)
            }
        }
        Err(why) => Attempt::Crashed {
            correctness: Correctness::Pass,
            why,
        },
    };
    Ok(Tried {
        attempt,
        runs,
        remark,
    })
}

/// A side of the rounds with its warm worker started, its channel in the git dir; on a Slurm node, a
/// process per run where the runner keeps none (on a Slurm node they would need a job step of their own).
fn side<'a>(repo: &Repo, runner: &'a Pytest<'a>, name: &'static str) -> Result<Side<'a>> {
    if !runner.place.keeps_workers() {
        return Ok(Side::cold(runner));
    }
    let channel = repo.git_path(&format!(
        "cutile-perf/workers/{name}-{}",
        std::process::id()
    ))?;
    Ok(Side::warm(runner, name, &channel))
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
    let correctness = candidate.correctness()?;
    runs.extend(RunFile::read(&candidate.runner.sandbox, "correctness"));
    Ok(match correctness.against_baseline(&baseline_passed) {
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

/// No re-roll: a compile run of each side, cuda-tile dumping what it compiles, for `census::unchanged`
/// to compare. A candidate whose compile run fails is left to the rounds, which record how it fails.
fn compiled_alike(rounds: &Rounds, runs: &mut Vec<RunFile>) -> Result<bool> {
    for (side, runner) in [
        ("candidate", rounds.candidate.runner),
        ("baseline", rounds.baseline.runner),
    ] {
        let dumps = runner.sandbox.join("compiled");
        // dumps of an earlier step must not count as this one's
        let _ = std::fs::remove_dir_all(&dumps);
        std::fs::create_dir_all(&dumps)
            .with_context(|| format!("cannot create {}", dumps.display()))?;
        let ran = runner.compile(rounds.session.statistic, &toolchain::dump_env(&dumps))?;
        if let BenchmarkRun::Interrupted = ran {
            return Err(interrupted());
        }
        runs.extend(
            RunFile::read(&runner.sandbox, "compile").map(|run| RunFile {
                name: census::compile_run_name(side),
                compiled: Some(toolchain::compiled_kernels(&dumps, runner.root)),
                ..run
            }),
        );
        if let BenchmarkRun::Crash(_) = ran {
            return Ok(false);
        }
    }
    Ok(census::unchanged(runs))
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
        if let CorrectnessRun::Interrupted = side.unseen_correctness("unseen", offset)? {
            return Err(interrupted());
        }
        runs.extend(
            RunFile::read(&side.runner.sandbox, "unseen").map(|run| RunFile {
                name: census::unseen_run_name(offset, name),
                ..run
            }),
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

/// The rounds' verdict; a config more than ten times faster is measured again, and the second set
/// decides if it confirms the first (with a remark for the reason): `verdict::confirmed`.
fn confirmed(
    rounds: &mut Rounds,
    runs: &mut Vec<RunFile>,
) -> Result<(Result<Decided, String>, Option<String>)> {
    let progress = rounds.candidate.runner.progress;
    let first = decided(rounds, "round", runs)?;
    verdict::confirmed(first, || {
        progress.line("a config is more than 10x faster than its baseline: measuring again");
        decided(rounds, "confirm-round", runs)
    })
}
