//! The attempt stage: correctness, then paired benchmark rounds of the candidate and the current
//! baseline's code, confirmed when a config looks too good to be true. This stage decides when to stop
//! measuring; the attempt it hands on is the replay of the runs it made (`replay::attempt`), the same
//! one `verify` makes of the evidence. Ctrl-C is an error: nothing is recorded.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::rounds::{Checks, Measured, baseline_passed, measure, no_reroll};
use super::sides::{self, Codes, HeldSides};
use crate::features::code_tree::CodeTree;
use crate::measure::paired::{AlikeCheck, Holders, Pair, Refill, Rounds, Settings, dumps_of};
use crate::measure::timings::Timings;
use crate::record::census;
use crate::record::evidence::{Ended, RunFile, Stage};
use crate::record::history::{History, sandbox};
use crate::record::replay::{self, Replayed};
use crate::rules::decision::Attempt;
use crate::rules::verdict::NoiseFloor;
use crate::system::git::Repo;
use crate::system::pytest::Pytest;
use crate::system::runner::Runner;
use crate::system::ui::Progress;
use crate::system::workers::spare::Pool;

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
    /// Where the attempt's time went (the step adds the rest).
    pub timings: Timings,
}

/// On every GPU, the side whose code is the baseline after the step (the candidate's when it is
/// `kept`); the others end now.
pub fn holders(held: Vec<HeldSides>, kept: bool) -> Holders {
    Holders(
        held.into_iter()
            .map(|sides| {
                let mut holder = match kept {
                    true => sides.candidate,
                    false => sides.baseline,
                };
                holder.spares = sides.later_spares;
                holder
            })
            .collect(),
    )
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
    let shares = sides::shares(repo, history, gpus, progress)?;
    let codes = Codes::of(repo, history, tree)?;
    let candidate_dumps = dumps_of(repo, tree);
    let first = Pytest {
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
    let templates = sides::templates(first, &shares);
    let mut held = sides::hold(repo, &templates, &codes)?;
    sides::end_other_workers(repo, progress)?;
    let roots = sides::roots(&held);
    let runners = sides::runners(repo, &roots, &templates, &codes.baseline);
    let checks = RefCell::new(Checks::default());
    let [first_candidate, first_baseline] = &runners[0];
    let alike_check = no_reroll([first_candidate, first_baseline], &checks);
    let pools = sides::pools(&held);
    let mut rounds = Rounds {
        pairs: sides::pairs(&shares, &runners, &mut held, &pools),
        refill: Refill {
            repo,
            pools: &pools,
        },
        session,
        floor: NoiseFloor::from_spreads(&session.spread),
        deadline,
        measured: false,
        // a null step for comparing the settings measures its rounds as any other step does
        no_reroll: (!Settings::from_env().reroll_alike).then_some(&alike_check as AlikeCheck),
        timings: Timings::default(),
    };
    let baseline_passed = baseline_passed(repo, history)?;
    let mut measured = measure(&mut rounds, &baseline_passed, session, &checks)?;
    // the workers started for rounds that did not come end before the trees are looked at: one still
    // importing the candidate's code could write there after the look. All are signalled first, so
    // that they end side by side (each a GPU context to tear down)
    for pair in &rounds.pairs {
        pair.candidate.begin_ending_standing_by();
        pair.baseline.begin_ending_standing_by();
    }
    let started_unused = (rounds.pairs.iter_mut())
        .map(|pair| pair.candidate.end_standing_by() + pair.baseline.end_standing_by())
        .sum();
    let written = bytecode_written(&held, &rounds.pairs);
    let compiled = compiled_not_committed(repo, &held, &rounds.pairs);
    crash_if_code_changed(
        &mut measured,
        &held,
        compiled.as_deref().or(written.as_deref()),
    );
    let mut timings = std::mem::take(&mut rounds.timings);
    timings.startups = (rounds.pairs.iter())
        .flat_map(|pair| [&pair.candidate, &pair.baseline])
        .flat_map(|side| side.start_ups().iter().cloned())
        .collect();
    timings.started_unused = started_unused;
    // a worker that ran what its commit does not hold serves no later step
    give_workers_back(
        rounds.pairs,
        &mut held,
        written.is_none() && compiled.is_none(),
    );
    // the spares no round took ran no side's code: they go with the GPU's sides, for the next step
    for (sides, pool) in held.iter_mut().zip(&pools) {
        sides.later_spares = pool.as_ref().map(Pool::take_all).unwrap_or_default();
    }
    if written.is_some() {
        // every worker of the step has ended: the bytecode, Python's cache and not an edit, goes, so
        // that the trees go with the step as any others do
        for (_, tree) in trees(&held) {
            let _ = tree.clear_bytecode();
        }
    }
    let Measured { runs, ended } = measured;
    let Replayed { attempt, remark } = replay::attempt(&runs, &ended, session, &baseline_passed);
    let checks = with_census_costs(checks.take(), &runs);
    timings.census_s = checks.census_s;
    timings.checks_s = checks.no_reroll_s + checks.unseen_inputs_s;
    Ok(Tried {
        attempt,
        timings,
        checks,
        runs,
        ended,
        remark,
        candidate_dumps,
        gpus: shares.into_iter().filter_map(|(gpu, _)| gpu).collect(),
        held,
    })
}

/// Marks the rounds crashed when another process wrote into a side's worktree while it was measured
/// (the candidate's code into the baseline's, say): what ran is not the code the record names. Changed
/// code is named first; a source a worker compiled that was changed and put back, or bytecode written
/// beside the sources (`then`), after it.
fn crash_if_code_changed(measured: &mut Measured, held: &[HeldSides], then: Option<&str>) {
    if measured.ended.crash.is_none()
        && let Some(why) = code_changed(held).or_else(|| then.map(str::to_string))
    {
        measured.crashed(Stage::Rounds, &why);
    }
}

/// A source of a side's tree that one of its workers compiled other than its commit holds it, if any:
/// changed while the worker imported it and put back before the tree was looked at (a source the commit
/// does not hold, an ignored file copied beside it, is held by the ignored-files guard instead).
fn compiled_not_committed(repo: &Repo, held: &[HeldSides], pairs: &[Pair]) -> Option<String> {
    for (pair, sides) in pairs.iter().zip(held) {
        let each = [
            ("candidate", &pair.candidate, &sides.candidate.code),
            ("baseline", &pair.baseline, &sides.baseline.code),
        ];
        for (side, runner, code) in each {
            let compiled: Vec<(&String, &String)> = (runner.start_ups().iter())
                .flat_map(|start_up| &start_up.sources)
                .collect();
            if compiled.is_empty() {
                continue;
            }
            let committed = match repo.git(&["ls-tree", "-r", "--full-tree", &code.tree]) {
                Ok(listed) => listed,
                Err(e) => return Some(format!("cannot list the {side}'s commit: {e:#}")),
            };
            let committed: std::collections::HashMap<&str, &str> = (committed.lines())
                .filter_map(|line| {
                    let (meta, path) = line.split_once('\t')?;
                    Some((path, meta.split_whitespace().nth(2)?))
                })
                .collect();
            for (path, blob) in compiled {
                if committed
                    .get(path.as_str())
                    .is_some_and(|want| want != blob)
                {
                    return Some(format!(
                        "the {side}'s worker compiled {path} other than the {side}'s commit holds it: \
                         changed while the step ran, and put back before the end"
                    ));
                }
            }
        }
    }
    None
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
        tree.changed().map(|why| {
            format!("a side's code changed on disk while the step measured it (the {side}: {why})")
        })
    })
}

/// The bytecode written beside a side's sources during the step, if any. No test process writes
/// bytecode and the trees were cleared of it as the step began, so a `.pyc` there was put on purpose
/// (the candidate's code, at import, can leave one dated as the baseline's source, for a baseline worker
/// started ahead of its round to load). Looked for after the rounds, and by each side as a later worker
/// was about to start in its tree, which removes what is there before it imports.
fn bytecode_written(held: &[HeldSides], pairs: &[Pair]) -> Option<String> {
    let found_as_workers_started = pairs.iter().flat_map(|pair| {
        [("candidate", &pair.candidate), ("baseline", &pair.baseline)]
            .into_iter()
            .filter_map(|(side, runner)| runner.planted().map(|what| (side, what.to_string())))
    });
    let mut written: Vec<String> = Vec::new();
    for (side, what) in trees(held)
        .filter_map(|(side, tree)| tree.bytecode().map(|what| (side, what)))
        .chain(found_as_workers_started)
    {
        let named = format!("the {side}'s tree {what}");
        if !written.contains(&named) {
            written.push(named);
        }
    }
    (!written.is_empty()).then(|| {
        format!(
            "bytecode was written beside the sources during the step: {}",
            written.join("; ")
        )
    })
}

/// The workers the rounds ended with go back to their code: the one holding the new baseline's may
/// live on, unless `fit` is false (one may have loaded bytecode written beside it, or a source changed
/// and put back, whatever the step's end; a changed tree is found when a later command would adopt its
/// worker, these are not).
fn give_workers_back(pairs: Vec<Pair>, held: &mut [HeldSides], fit: bool) {
    for (pair, sides) in pairs.into_iter().zip(held.iter_mut()) {
        sides.candidate.worker = pair.candidate.into_worker().filter(|_| fit);
        sides.baseline.worker = pair.baseline.into_worker().filter(|_| fit);
    }
}

/// `checks` with what the census's repetitions and the checks of the timed calls' outputs cost over
/// every benchmark run in `runs`.
fn with_census_costs(mut checks: Checks, runs: &[RunFile]) -> Checks {
    checks.census_s = census::seconds(runs, |c| c.seconds);
    checks.timed_outputs_s = census::seconds(runs, |c| c.outputs.as_ref()?.seconds);
    checks
}
