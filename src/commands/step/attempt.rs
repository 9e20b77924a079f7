//! The attempt stage: correctness, then paired benchmark rounds of the candidate and the current
//! baseline's code, confirmed when a config looks too good to be true. This stage decides when to stop
//! measuring; the attempt it hands on is the replay of the runs it made (`replay::attempt`), the same
//! one `verify` makes of the evidence. Ctrl-C is an error: nothing is recorded.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::census;
use crate::decision::{self, Attempt, Decided, Tier};
use crate::diagnose::toolchain;
use crate::evidence::{Crash, Ended, Evidence, RunFile, Stage, Undecided};
use crate::git::Repo;
use crate::history::{History, sandbox};
use crate::paired::{self, CodeTree, Held, Holders, Pair, Paired, Rounds, Wanted, dumps_of};
use crate::process::Interrupted;
use crate::pytest::{CorrectnessRun, Pytest, Recorded};
use crate::replay::{self, Replayed};
use crate::runner::Runner;
use crate::session::Session;
use crate::ui::Progress;
use crate::verdict::{self, NoiseFloor};
use crate::workers::lasting::{Code, WorkerEnv};
use crate::workers::{Side, Worker};

/// What the attempt stage produced: the attempt, the JUnit files of its runs and how the measurement
/// ended where they cannot say (for the evidence note), a remark for the reason when a suspicious gain
/// was confirmed, what the tool's own checks cost, the folder of the kernels the candidate's runs
/// compiled, and each GPU's two sides' code and workers.
pub struct Tried<'a> {
    pub attempt: Attempt,
    pub runs: Vec<RunFile>,
    pub ended: Ended,
    pub remark: Option<String>,
    pub checks: Checks,
    pub candidate_dumps: PathBuf,
    /// The GPUs the rounds measured on, a (baseline, candidate) pair each; empty: the environment's one.
    pub gpus: Vec<String>,
    /// Each GPU's sides' code and workers: the one holding the new baseline's code may live on.
    pub held: Vec<HeldSides<'a>>,
}

/// One GPU's two sides' code and workers after the attempt.
pub struct HeldSides<'a> {
    pub candidate: Held<'a>,
    pub baseline: Held<'a>,
}

/// On every GPU, the side whose code is the baseline after the step (the candidate's when it is
/// `kept`); the others end now.
pub fn holders(held: Vec<HeldSides>, kept: bool) -> Holders {
    Holders(
        held.into_iter()
            .map(|sides| match kept {
                true => sides.candidate,
                false => sides.baseline,
            })
            .collect(),
    )
}

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

/// Runs correctness, then (if it passed) paired rounds; after the first round, a candidate that compiled
/// and launched what the baseline does is no change (nothing more is measured); a config more than ten
/// times faster than its baseline is measured again (a second set of rounds) before it is believed; a
/// step the rounds would keep, on inputs neither side has seen. `tree` is the candidate's code as a tree
/// object. Each side runs from a worktree of its own code; a GPU's baseline worker is the one an earlier
/// command kept there, where it can serve.
pub fn attempt<'r>(
    repo: &'r Repo,
    history: &History,
    place: &dyn Runner,
    tree: &str,
    progress: &Progress,
    deadline: Instant,
    gpus: &[String],
) -> Result<Tried<'r>> {
    let session = &history.session;
    let shares = shares(repo, history, gpus, progress)?;
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
        // the first GPU's workers dump what they compile (`hold` names the folder by their tree)
        dumps: Some(candidate_dumps.clone()),
        gpu: shares[0].0.clone(),
        progress,
    };
    let templates: Vec<Pytest> = shares
        .iter()
        .enumerate()
        .map(|(index, (gpu, _))| match index {
            0 => template.clone(),
            _ => on_gpu(&template, gpu),
        })
        .collect();
    // the snapshot's tree as a commit of its own, for a worktree of it
    let candidate_commit = repo.git(&[
        "commit-tree",
        tree,
        "-m",
        "git cutile-perf: the code a step measures",
    ])?;
    let codes = [
        ("baseline", baseline_commit, baseline_tree),
        ("candidate", candidate_commit.trim(), tree),
    ];
    // every side's code and worker first: their start-ups overlap correctness and each other
    let mut held = Vec::with_capacity(shares.len());
    for ((gpu, _), template) in shares.iter().zip(&templates) {
        let env = WorkerEnv::now(
            &repo.root,
            &session.python,
            &session.test,
            session.filter.as_deref(),
            gpu.clone().or_else(WorkerEnv::visible_gpu),
        );
        let [baseline, candidate] = codes.map(|(side, commit, tree)| {
            paired::hold(
                repo,
                Wanted {
                    side,
                    code: Code {
                        commit: commit.to_string(),
                        tree: tree.to_string(),
                    },
                    env: env.clone(),
                    template,
                },
            )
        });
        held.push(HeldSides {
            baseline: baseline?,
            candidate: candidate?,
        });
    }
    // what is still kept now is for GPUs this step does not measure on (a session started without
    // --gpus, say): it would hold GPU memory, idle, until its timeout
    let unheld = paired::end_kept_workers(repo)?;
    if !unheld.is_empty() {
        let pids: Vec<String> = unheld.iter().map(u32::to_string).collect();
        progress.line(&format!(
            "ended the kept worker (pid {}): kept for other GPUs than this step's",
            pids.join(", ")
        ));
    }
    // whatever a kept worker's tree took in between commands goes: what its `__pycache__`s hold after
    // the rounds was written during them
    for (_, tree) in trees(&held) {
        tree.clear_bytecode()?;
    }
    // each side's tree, where its runs start (the trees stay with `held`)
    let roots: Vec<[PathBuf; 2]> = held
        .iter()
        .map(|sides| {
            [
                sides.candidate.tree.path.clone(),
                sides.baseline.tree.path.clone(),
            ]
        })
        .collect();
    let runners: Vec<[Pytest; 2]> = roots
        .iter()
        .zip(&templates)
        .map(|([candidate_root, baseline_root], template)| {
            // a template with dumps (the first GPU's) holds the candidate's folder already
            let candidate = Pytest {
                root: candidate_root,
                ..template.clone()
            };
            let baseline = Pytest {
                root: baseline_root,
                sandbox: template.sandbox.join("baseline"),
                dumps: template
                    .dumps
                    .as_ref()
                    .map(|_| dumps_of(repo, baseline_tree)),
                ..template.clone()
            };
            [candidate, baseline]
        })
        .collect();
    let checks = std::cell::RefCell::new(Checks::default());
    let [first_candidate, first_baseline] = &runners[0];
    let no_reroll = |runs: &mut Vec<RunFile>| {
        let started = Instant::now();
        let alike = first_round_alike(runs, [first_candidate, first_baseline]);
        let mut checks = checks.borrow_mut();
        checks.no_reroll_s = started.elapsed().as_secs_f64();
        checks.not_alike = alike.err();
        checks.not_alike.is_none()
    };
    let pairs = shares
        .iter()
        .zip(&runners)
        .zip(held.iter_mut())
        .map(|(((gpu, cases), [candidate, baseline]), sides)| Pair {
            gpu: gpu.clone(),
            candidate: Side::new(candidate, sides.candidate.worker.take()),
            baseline: Side::new(baseline, sides.baseline.worker.take()),
            cases: cases.clone(),
        })
        .collect();
    let used: Vec<String> = shares.iter().filter_map(|(gpu, _)| gpu.clone()).collect();
    let mut rounds = Rounds {
        pairs,
        session,
        floor: NoiseFloor::from_spreads(&session.spread),
        deadline,
        measured: false,
        no_reroll: Some(&no_reroll),
    };
    // older sessions have no evidence note on their baseline: then no case list to hold them to
    let baseline_passed = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.passed_cases()?,
        None => Vec::new(),
    };
    let mut measured = measure(&mut rounds, &baseline_passed, session, &checks)?;
    // another process wrote into a side's worktree while it was measured (the candidate's code into
    // the baseline's, say): what ran is not the code the record names
    let written = bytecode_written(&held);
    if measured.ended.crash.is_none()
        && let Some(why) = code_changed(&held).or_else(|| written.clone())
    {
        measured.crashed(Stage::Rounds, &why);
    }
    // the workers the rounds ended with go back to their code: the one holding the new baseline's may
    // live on, but none that may have loaded bytecode written beside it, whatever the step's end (a
    // changed tree is found when a later command would adopt its worker; bytecode is not)
    for (pair, sides) in rounds.pairs.into_iter().zip(held.iter_mut()) {
        let fit = |worker: Option<Worker>| worker.filter(|_| written.is_none());
        sides.candidate.worker = fit(pair.candidate.into_worker());
        sides.baseline.worker = fit(pair.baseline.into_worker());
    }
    let Measured { runs, ended } = measured;
    let Replayed { attempt, remark } = replay::attempt(&runs, &ended, session, &baseline_passed);
    let mut checks = checks.into_inner();
    checks.census_s = census::seconds(&runs, |c| c.seconds);
    checks.timed_outputs_s = census::seconds(&runs, |c| c.outputs.as_ref()?.seconds);
    Ok(Tried {
        attempt,
        runs,
        ended,
        remark,
        checks,
        candidate_dumps,
        gpus: used,
        held,
    })
}

/// Each side's tree, named by its side.
fn trees<'h>(held: &'h [HeldSides]) -> impl Iterator<Item = (&'static str, &'h CodeTree<'h>)> {
    held.iter().flat_map(|sides| {
        [
            ("baseline", &sides.baseline.tree),
            ("candidate", &sides.candidate.tree),
        ]
    })
}

/// Why a side's worktree is not its code any more, if one is not.
fn code_changed(held: &[HeldSides]) -> Option<String> {
    trees(held).find_map(|(side, tree)| {
        (tree.changed()).map(|why| {
            format!("a side's code changed on disk while the step measured it (the {side}: {why})")
        })
    })
}

/// The bytecode written beside a side's sources during the step, if any. No test process writes
/// bytecode and the trees were cleared of it as the step began, so a `.pyc` there was put on purpose
/// (the candidate's code, at import, can leave one dated as the baseline's source, for a baseline worker
/// started ahead of its round to load). Looked for once, after the rounds: one removed before a later
/// process started goes unseen, but the candidate's code runs again in each of its processes, after its
/// tree was cleared.
fn bytecode_written(held: &[HeldSides]) -> Option<String> {
    let written: Vec<String> = trees(held)
        .filter_map(|(side, tree)| {
            tree.bytecode()
                .map(|what| format!("the {side}'s tree {what}"))
        })
        .collect();
    (!written.is_empty()).then(|| {
        format!(
            "bytecode was written beside the sources during the step: {}",
            written.join("; ")
        )
    })
}

/// Correctness, the rounds, and what they call for: nothing more for a candidate alike to its
/// baseline, a second set of rounds for a config too good to be true, the unseen-input check for a
/// step the rounds would keep.
fn measure(
    rounds: &mut Rounds,
    baseline_passed: &[String],
    session: &Session,
    checks: &std::cell::RefCell<Checks>,
) -> Result<Measured> {
    let mut measured = Measured::default();
    if !correctness(
        baseline_passed,
        &mut rounds.first().candidate,
        &mut measured,
    )? {
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
struct Measured {
    runs: Vec<RunFile>,
    ended: Ended,
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

    fn crashed(&mut self, stage: Stage, why: &str) {
        self.ended.crash = Some(Crash {
            stage,
            why: why.to_string(),
        });
    }
}

/// A GPU of the step (none: the environment's) and the perf cases it measures (none: every case).
type Share = (Option<String>, Option<Vec<String>>);

/// `side` on another GPU than the first: its own sandbox, and no dumps (the first GPU's feed the checks).
fn on_gpu<'a>(side: &Pytest<'a>, gpu: &Option<String>) -> Pytest<'a> {
    Pytest {
        sandbox: side
            .sandbox
            .join(format!("gpu{}", gpu.as_deref().unwrap_or_default())),
        dumps: None,
        gpu: gpu.clone(),
        ..side.clone()
    }
}

/// Each GPU of the step and the perf cases it measures (none: every case): the environment's GPU alone
/// without `gpus`, one GPU with every case, or the baseline's perf cases [`paired::split`] among
/// several (on the first alone when the baseline's evidence lists none).
fn shares(
    repo: &Repo,
    history: &History,
    gpus: &[String],
    progress: &Progress,
) -> Result<Vec<Share>> {
    let [first, ..] = gpus else {
        return Ok(vec![(None, None)]);
    };
    if gpus.len() == 1 {
        return Ok(vec![(Some(first.clone()), None)]);
    }
    let cases = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.perf_cases()?,
        None => Vec::new(),
    };
    if cases.is_empty() {
        progress.line(&format!(
            "the baseline's evidence lists no perf cases to share among GPUs {}: measuring on GPU {first} \
             alone",
            gpus.join(", ")
        ));
        return Ok(vec![(Some(first.clone()), None)]);
    }
    Ok(gpus
        .iter()
        .cloned()
        .zip(paired::split(&cases, gpus.len()))
        .map(|(gpu, share)| (Some(gpu), Some(share)))
        .collect())
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
                hints: Vec::new(),
                signatures: Vec::new(),
            }],
            bytes: 0,
            arrays: Vec::new(),
            timed: None,
            outputs: None,
            harness: None,
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
            gpu: None,
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
