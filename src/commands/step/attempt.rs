//! The attempt stage: correctness, then paired benchmark rounds of the candidate and the current
//! baseline's code, confirmed when a config looks too good to be true. Ctrl-C is an error: nothing is
//! recorded.

use std::time::Instant;

use anyhow::Result;

use crate::census;
use crate::decision::{Attempt, Correctness, Decided, Tier};
use crate::evidence::{Evidence, RunFile};
use crate::git::Repo;
use crate::history::{History, sandbox};
use crate::paired::{self, BaselineTree, Paired, Rounds};
use crate::process::Interrupted;
use crate::pytest::{CorrectnessRun, Pytest};
use crate::runner::Runner;
use crate::ui;
use crate::verdict::{self, NoiseFloor};

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
    };
    let mut runs = Vec::new();
    if let Some(failed) = correctness(repo, history, &candidate, &mut runs)? {
        return Ok(Tried {
            attempt: failed,
            runs,
            remark: None,
        });
    }
    let tree = BaselineTree::add(repo, history.current_baseline_commit())?;
    let rounds = Rounds {
        candidate: &candidate,
        baseline: &Pytest {
            root: &tree.path,
            sandbox: sandbox(repo).join("baseline"),
            ..candidate.clone()
        },
        session,
        floor: NoiseFloor::from_spreads(&session.spread),
        deadline,
    };
    let (measured, remark) = confirmed(&rounds, &mut runs)?;
    let attempt = match measured {
        Ok(decided) => {
            let rules = census::Rules::of(session);
            let decided = census::gate(decided, &runs, &rules);
            if decided.tier != Tier::Revert {
                unseen_inputs(&rounds, &mut runs)?;
            }
            census::with_unseen(decided, &runs)
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

/// The correctness run, held to the cases that passed at the baseline; `Some` is an attempt that ends
/// here (failed or crashed).
fn correctness(
    repo: &Repo,
    history: &History,
    runner: &Pytest,
    runs: &mut Vec<RunFile>,
) -> Result<Option<Attempt>> {
    // older sessions have no evidence note on their baseline: then no case list to hold them to
    let baseline_passed = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.passed_cases()?,
        None => Vec::new(),
    };
    let correctness = runner.correctness()?;
    runs.extend(RunFile::read(&runner.sandbox, "correctness"));
    Ok(match correctness.against_baseline(&baseline_passed) {
        CorrectnessRun::Interrupted => return Err(interrupted()),
        CorrectnessRun::Fail { failed } => {
            ui::progress_line(&format!("correctness FAIL: {}", failed.join(", ")));
            Some(Attempt::CorrectnessFailed { failed })
        }
        CorrectnessRun::Crash(why) | CorrectnessRun::NoneSelected(why) => Some(Attempt::Crashed {
            correctness: Correctness::Fail,
            why,
        }),
        CorrectnessRun::Pass { .. } => None,
    })
}

/// Correctness on both sides once more, with every seed the tests set shifted by an offset neither side
/// has seen: what `census::with_unseen` holds a kept step to.
fn unseen_inputs(rounds: &Rounds, runs: &mut Vec<RunFile>) -> Result<()> {
    use std::hash::{BuildHasher, Hasher};
    let offset = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32
        | 1;
    ui::progress_line(&format!(
        "the rounds keep it: correctness on inputs neither side has seen (seeds shifted by {offset})"
    ));
    for (side, runner) in [
        ("candidate", rounds.candidate),
        ("baseline", rounds.baseline),
    ] {
        if let CorrectnessRun::Interrupted = runner.unseen_correctness("unseen", offset)? {
            return Err(interrupted());
        }
        runs.extend(RunFile::read(&runner.sandbox, "unseen").map(|run| RunFile {
            name: census::unseen_run_name(offset, side),
            ..run
        }));
    }
    Ok(())
}

/// Rounds until decided; `Err(why)` inside is a crash of the attempt, outside an interruption.
fn decided(
    rounds: &Rounds,
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
    rounds: &Rounds,
    runs: &mut Vec<RunFile>,
) -> Result<(Result<Decided, String>, Option<String>)> {
    let first = decided(rounds, "round", runs)?;
    verdict::confirmed(first, || {
        ui::progress_line("a config is more than 10x faster than its baseline: measuring again");
        decided(rounds, "confirm-round", runs)
    })
}
