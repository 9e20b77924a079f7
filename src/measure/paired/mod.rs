//! Paired measurement: every `step` benchmarks the current baseline's code beside the candidate, in
//! alternating rounds (A B, B A, ...) on the same GPU, until [`verdict`] can decide or the budget cannot
//! fit another round; each round after the first in fresh workers, started ahead of it: as the step
//! begins on a machine with CPUs to spare ([`stand_by_from_correctness`]), else while the round before
//! measured. Each side's code runs from a
//! detached worktree of its own under the git dir, so the user's work tree is never touched and an edit
//! made during the step cannot reach the measurement; a worktree is removed with its worker, at the
//! step's end or, for the worker that holds the new baseline's code, when that worker ends
//! ([`Held::keep_as_baseline`]).
//!
//! The rounds are here; each side's worktree in `features/code_tree.rs`, the side's code and warm worker held for the
//! rounds (and kept past them) in `held.rs`, the workers started ahead of their rounds in `ahead.rs`
//! (as `settings.rs` reads the step's environment), and the pruning of what steps leave in the sandbox
//! in `housekeeping.rs`.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::measure::timings::{RoundTimes, Timings};
use crate::record::benchmark_run;
use crate::record::evidence::RunFile;
use crate::record::session::Session;
use crate::rules::decision::Decided;
use crate::rules::verdict::{self, NoiseFloor, Round, Verdict};
use crate::system::pytest::BenchmarkRun;
use crate::system::workers::Side;

mod ahead;
mod held;
mod housekeeping;
mod refill;
mod settings;

use ahead::unready_start_up;
pub use ahead::{let_go_once_the_candidate_is_ready, stand_by_from_correctness};
pub use held::{Held, Holders, Wanted, clear_kept_bytecode, end_kept_workers, hold};
pub use housekeeping::{dumps_of, prune_dumps, prune_worker_logs};
pub use refill::Refill;
pub use settings::Settings;

/// How the paired rounds ended.
pub enum Paired {
    Decided(Decided),
    Crashed(String),
    Interrupted,
}

/// One GPU's baseline and candidate sides, and the perf cases they measure there.
pub struct Pair<'a> {
    /// The GPU, as `CUDA_VISIBLE_DEVICES` names it; none: whatever the environment gives (one GPU).
    pub gpu: Option<String>,
    pub candidate: Side<'a>,
    pub baseline: Side<'a>,
    /// The perf cases (JUnit ids) measured on this GPU, [`split`] among the pairs; none: every case.
    pub cases: Option<Vec<String>>,
}

impl Pair<'_> {
    /// What this pair runs in a round: its own cases, of those still `open` after the first round; `None`
    /// every case; an empty list nothing (the pair sits the round out).
    fn cases_in(&self, open: Option<&[String]>) -> Option<Vec<String>> {
        match (open, &self.cases) {
            (None, mine) => mine.clone(),
            (Some(open), None) => Some(open.to_vec()),
            (Some(open), Some(mine)) => Some(
                open.iter()
                    .filter(|case| mine.contains(case))
                    .cloned()
                    .collect(),
            ),
        }
    }

    /// Whether this pair measures in a round with `open` cases ([`Pair::cases_in`]).
    fn measures_in(&self, open: Option<&[String]>) -> bool {
        self.cases_in(open).is_none_or(|cases| !cases.is_empty())
    }
}

/// The perf cases of each of `pairs` GPUs: the cases in sorted order dealt out in turn, so that the GPUs
/// share them evenly and a config is measured on the same GPU in every round and every step (while the
/// cases and the number of GPUs stay the same).
pub fn split(cases: &[String], pairs: usize) -> Vec<Vec<String>> {
    let mut sorted = cases.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut shares = vec![Vec::new(); pairs.max(1)];
    let count = shares.len();
    for (index, case) in sorted.into_iter().enumerate() {
        shares[index % count].push(case);
    }
    shares
}

/// The name of a benchmark run of the rounds: `<prefix>-<round>-<side>` on the first GPU (as with one
/// GPU), `<prefix>-<round>-gpu<gpu>-<side>` on another (`evidence::RunFile::of_round` reads both).
pub fn run_name(prefix: &str, round: usize, other_gpu: Option<&str>, side: &str) -> String {
    match other_gpu {
        None => format!("{prefix}-{round}-{side}"),
        Some(gpu) => format!("{prefix}-{round}-gpu{gpu}-{side}"),
    }
}

/// The sides of one step's paired rounds, a pair per GPU (the first pair also runs the checks), and
/// what decides between them.
pub struct Rounds<'a> {
    pub pairs: Vec<Pair<'a>>,
    pub session: &'a Session,
    pub floor: NoiseFloor,
    pub deadline: Instant,
    /// Whether the sides' processes have measured a round: the next round is then measured by fresh ones.
    pub measured: bool,
    /// No re-roll: after the first round, whether the candidate compiled and launched what the baseline
    /// does (it may add what it read to the runs); then nothing more is measured.
    pub no_reroll: Option<AlikeCheck<'a>>,
    /// Where the step's time went so far: the rounds add theirs.
    pub timings: Timings,
    /// The spares topped up as each round begins, for later rounds' workers.
    pub refill: Refill<'a>,
}

impl<'a> Rounds<'a> {
    /// The first GPU's pair: correctness and the unseen-input checks run there.
    pub fn first(&mut self) -> &mut Pair<'a> {
        &mut self.pairs[0]
    }

    /// How the step's start-ups overlap its work, for where its workers run.
    fn settings(&self) -> Settings {
        Settings::for_workers(self.pairs[0].candidate.runner.place.workers())
    }
}

/// The no-re-roll check the rounds make after the first round.
pub type AlikeCheck<'a> = &'a dyn Fn(&mut Vec<RunFile>) -> bool;

/// What one pair's part of a round gave: its runs' files, its measurements or why it stopped, and when
/// both its sides were ready to measure (since the round began) and how many cases each side ran.
struct PairRound {
    files: Vec<RunFile>,
    ended: PairEnded,
    ready_after: Duration,
    cases: usize,
    /// How long each side's run took, the candidate's then the baseline's.
    measuring: [Duration; 2],
}

enum PairEnded {
    Measured(Round),
    Crashed(String),
    Interrupted,
}

/// The shared facts of one round every pair runs by.
struct RoundPlan<'a> {
    prefix: &'a str,
    number: usize,
    began: Instant,
    candidate_first: bool,
    /// How many rounds ahead each side starts workers as it begins to measure ([`Side::stand_by`]).
    rounds_ahead: usize,
    /// How the round's start-ups overlap the work.
    settings: Settings,
    session: &'a Session,
    /// The workers of every pair: ours, idle or measuring on another GPU, not someone else's.
    ours: &'a [u32],
}

/// Runs rounds of the baseline and the candidate until the verdict is decided; when the next round would
/// not fit before the deadline, decides on what there is and says so. Each GPU's pair runs its part of a
/// round (its own cases, A B or B A) beside the others; the round's verdict pools them all. Each run's
/// JUnit file is added to `evidence` ([`run_name`]), pair by pair in the pool's order.
pub fn measure(sides: &mut Rounds, prefix: &str, evidence: &mut Vec<RunFile>) -> Result<Paired> {
    let limits = &sides.session.thresholds;
    let floor = &sides.floor;
    let mut rounds: Vec<Round> = Vec::new();
    let mut times: Vec<verdict::RoundTime> = Vec::new();
    // round 1 runs every case; a later one only those of the configs still open
    let mut open: Option<Vec<String>> = None;
    let settings = sides.settings();
    loop {
        let started = Instant::now();
        if sides.measured {
            // a round is an independent sample only in processes of its own (`verdict` says why): every
            // old worker ends here, and the new ones import and collect side by side, standing by until
            // the round lets them make their GPU contexts (`pair_round`)
            for pair in sides.pairs.iter_mut() {
                if pair.measures_in(open.as_deref()) {
                    pair.candidate.redraw();
                    pair.baseline.redraw();
                }
            }
        }
        let number = rounds.len() + 1;
        if settings.refill_spares {
            let progress = sides.pairs[0].candidate.runner.progress;
            sides.refill.top_up(settings.spares, number, progress);
        }
        let ours: Vec<u32> = sides
            .pairs
            .iter()
            .flat_map(|pair| [&pair.candidate, &pair.baseline])
            .flat_map(|side| side.worker_pids())
            .chain(sides.refill.pids())
            .collect();
        let plan = RoundPlan {
            prefix,
            number,
            began: started,
            candidate_first: verdict::candidate_first(rounds.len()),
            // from the first round on: a step that needs a second round waits for no start-up there; one
            // decided in its first ends the pair standing by, which imported and collected beside its
            // own side's measurement and never made a GPU context
            rounds_ahead: settings
                .rounds_ahead(number, rounds_fitting(sides, &times, open.as_deref())),
            settings,
            session: sides.session,
            ours: &ours,
        };
        let several = sides.pairs.len() > 1;
        let parts: Vec<Result<PairRound>> = std::thread::scope(|scope| {
            let running: Vec<_> = sides
                .pairs
                .iter_mut()
                .enumerate()
                .map(|(index, pair)| {
                    let cases = pair.cases_in(open.as_deref());
                    let plan = &plan;
                    // the first GPU's runs keep the names they have with one GPU
                    let other_gpu = (index > 0).then(|| pair.gpu.clone()).flatten();
                    scope.spawn(move || {
                        pair_round(pair, plan, other_gpu.as_deref(), several, cases.as_deref())
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|part| part.join().expect("a GPU's part of the round panicked"))
                .collect()
        });
        let mut round = Round::default();
        let mut stopped = None;
        let mut time = verdict::RoundTime {
            took: Duration::ZERO,
            before_measuring: Duration::ZERO,
            cases: 0,
        };
        let mut spent = RoundTimes {
            round: format!("{prefix}-{}", plan.number),
            ..RoundTimes::default()
        };
        for part in parts {
            let PairRound {
                files,
                ended,
                ready_after,
                cases,
                measuring: [candidate_took, baseline_took],
            } = part?;
            evidence.extend(files);
            // the GPUs measure side by side: the round took what its slowest took
            spent.waited_s = spent.waited_s.max(ready_after.as_secs_f64());
            spent.candidate_s = spent.candidate_s.max(candidate_took.as_secs_f64());
            spent.baseline_s = spent.baseline_s.max(baseline_took.as_secs_f64());
            time.before_measuring = time.before_measuring.max(ready_after);
            time.cases = time.cases.max(cases);
            match ended {
                PairEnded::Measured(measured) => {
                    round.baseline.extend(measured.baseline);
                    round.candidate.extend(measured.candidate);
                }
                other => {
                    stopped.get_or_insert(other);
                }
            }
        }
        sides.timings.add_round(spent);
        match stopped {
            Some(PairEnded::Crashed(why)) => return Ok(Paired::Crashed(why)),
            Some(PairEnded::Interrupted) => return Ok(Paired::Interrupted),
            _ => {}
        }
        rounds.push(round);
        sides.measured = true;
        times.push(verdict::RoundTime {
            took: started.elapsed(),
            ..time
        });
        if rounds.len() == 1 && sides.no_reroll.is_some_and(|alike| alike(evidence)) {
            // the same work measured again could only draw another sample: decided on what there is
            return Ok(
                match verdict::decide_anyway(&rounds, limits, floor, "compiled alike") {
                    Ok(decided) => Paired::Decided(decided),
                    Err(e) => Paired::Crashed(e.to_string()),
                },
            );
        }
        let ambiguous = match verdict::decide(&rounds, limits, floor) {
            Ok(Verdict::Decided(decided)) => return Ok(Paired::Decided(decided)),
            Ok(Verdict::NeedMoreRounds {
                ambiguous,
                open: cases,
                ..
            }) => {
                open = Some(cases);
                ambiguous
            }
            Err(e) => return Ok(Paired::Crashed(e.to_string())),
        };
        let left = sides.deadline.saturating_duration_since(Instant::now());
        let next_cases = most_cases(&sides.pairs, open.as_deref());
        let unready = unready_start_up(&sides.pairs);
        if !verdict::another_round_fits(&times, next_cases, unready, left) {
            let estimate = verdict::round_estimate(&times, next_cases, unready).unwrap_or_default();
            let why = format!(
                "the next round, of {next_cases} case{} a side, would take about {:.0} s and {:.0} s \
                 of the budget are left",
                if next_cases == 1 { "" } else { "s" },
                estimate.as_secs_f64(),
                left.as_secs_f64()
            );
            return Ok(match verdict::decide_anyway(&rounds, limits, floor, &why) {
                Ok(decided) => Paired::Decided(decided),
                Err(e) => Paired::Crashed(e.to_string()),
            });
        }
        sides.pairs[0].candidate.runner.progress.line(&format!(
            "round {}: not decided yet ({ambiguous}); measuring another round",
            rounds.len()
        ));
    }
}

/// The most cases a pair runs in the next round, of those `open` ([`Pair::cases_in`]).
fn most_cases(pairs: &[Pair], open: Option<&[String]>) -> usize {
    (pairs.iter())
        .filter_map(|pair| pair.cases_in(open).map(|cases| cases.len()))
        .max()
        .unwrap_or_default()
}

/// How many rounds after the one about to begin fit in the budget left, by the rounds so far (none
/// before the first has measured).
fn rounds_fitting(
    sides: &Rounds,
    times: &[verdict::RoundTime],
    open: Option<&[String]>,
) -> Option<usize> {
    let cases = most_cases(&sides.pairs, open);
    let round =
        verdict::round_estimate(times, cases, unready_start_up(&sides.pairs))?.as_secs_f64();
    let left = (sides.deadline.saturating_duration_since(Instant::now())).as_secs_f64();
    Some(match round > 0.0 {
        true => ((left / round).floor() as usize).saturating_sub(1),
        false => verdict::MAX_ROUNDS,
    })
}

/// One pair's part of a round on its GPU: `cases` (none: every case; empty: nothing to run), one side
/// after the other in the round's order, so that only one side measures on that GPU at a time. The GPU
/// watch reads nvidia-smi's first GPU only, so only the runs on GPU 0 (or the environment's) keep one.
fn pair_round(
    pair: &mut Pair,
    plan: &RoundPlan,
    other_gpu: Option<&str>,
    several: bool,
    cases: Option<&[String]>,
) -> Result<PairRound> {
    let mut part = PairRound {
        files: Vec::new(),
        ended: PairEnded::Measured(Round::default()),
        ready_after: Duration::ZERO,
        cases: 0,
        measuring: [Duration::ZERO; 2],
    };
    if cases.is_some_and(<[String]>::is_empty) {
        return Ok(part);
    }
    let on_gpu = match (several, &pair.gpu) {
        (true, Some(gpu)) => format!(" on GPU {gpu}"),
        _ => String::new(),
    };
    // both sides' start-ups (their GPU contexts among them) end before either measures: each then
    // measures beside the other's idle context, whatever the order, the other's worker held still, and
    // no new context is made beside the old workers' teardown, which ended them all. On an H200, with
    // the candidate's context always made first and beside that teardown, the candidate's processes of
    // identical code read 1-5% slower on a microsecond config in many rounds, the baseline's never; the
    // order alternates with the side measuring first. `CUTILE_PERF_READY_TOGETHER=1` lets both go
    // together, so that the round waits for the slower start-up rather than for both
    let (first, second) = match plan.candidate_first {
        true => (&mut pair.candidate, &mut pair.baseline),
        false => (&mut pair.baseline, &mut pair.candidate),
    };
    if plan.settings.ready_together {
        first.let_go();
        second.let_go();
    }
    first.ready()?;
    second.ready()?;
    part.ready_after = plan.began.elapsed();
    let mut measured = Round::default();
    for run_candidate in [plan.candidate_first, !plan.candidate_first] {
        let (runner, other, side, into) = if run_candidate {
            (
                &mut pair.candidate,
                &pair.baseline,
                "candidate",
                &mut measured.candidate,
            )
        } else {
            (
                &mut pair.baseline,
                &pair.candidate,
                "baseline",
                &mut measured.baseline,
            )
        };
        // the side's next worker starts up beside this side's own measurement, from its first case: each
        // side measures beside the same part of a start-up. On an H200, with both started as the round
        // began, the side measuring first had the start-up's busiest seconds beside its first configs and
        // the other side a start-up already under way, and rope's first-measured 2 us configs read 3-4%
        // apart by order.
        if plan.rounds_ahead > 0 {
            runner.stand_by(plan.rounds_ahead, plan.settings.stand_by_at_once);
        }
        let ours: Vec<u32> = (plan.ours.iter().copied())
            .chain(runner.worker_pids())
            .chain(other.worker_pids())
            .collect();
        let _held = other.hold_while(runner)?;
        let measuring = Instant::now();
        let (outcome, file) = benchmark_run::benchmark(
            runner,
            plan.session.statistic,
            &run_name(plan.prefix, plan.number, other_gpu, side),
            &format!("round {} {side}{on_gpu}", plan.number),
            // nvidia-smi's view is of its first GPU: watched where that is the one measuring
            plan.session.gpu.is_some() && pair.gpu.as_deref().is_none_or(|gpu| gpu == "0"),
            &ours,
            cases,
        )?;
        part.measuring[usize::from(!run_candidate)] = measuring.elapsed();
        part.files.extend(file.map(|file| RunFile {
            cuda_device: pair.gpu.clone(),
            ..file
        }));
        match outcome {
            BenchmarkRun::Measured(configs) => {
                let tests: std::collections::HashSet<&str> =
                    configs.iter().map(|m| m.test.as_str()).collect();
                part.cases = part.cases.max(tests.len());
                *into = configs;
            }
            BenchmarkRun::Crash(why) => {
                part.ended = PairEnded::Crashed(match side {
                    "baseline" => format!("the baseline's run (round {}): {why}", plan.number),
                    _ => why,
                });
                return Ok(part);
            }
            BenchmarkRun::Interrupted => {
                part.ended = PairEnded::Interrupted;
                return Ok(part);
            }
        }
    }
    part.ended = PairEnded::Measured(measured);
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn the_cases_are_dealt_out_in_sorted_order_so_each_stays_on_one_gpu() {
        let cases = ids(&["t::p[c]", "t::p[a]", "t::p[d]", "t::p[b]", "t::p[e]"]);
        assert_eq!(
            split(&cases, 2),
            [
                ids(&["t::p[a]", "t::p[c]", "t::p[e]"]),
                ids(&["t::p[b]", "t::p[d]"])
            ]
        );
        // the order they come in does not matter, nor does a case listed twice
        let mut again = cases.clone();
        again.reverse();
        again.push("t::p[a]".into());
        assert_eq!(split(&again, 2), split(&cases, 2));
        assert_eq!(
            split(&cases, 1),
            [ids(&[
                "t::p[a]", "t::p[b]", "t::p[c]", "t::p[d]", "t::p[e]"
            ])]
        );
        // more GPUs than cases: the others measure nothing
        assert_eq!(split(&cases[..1], 3), [ids(&["t::p[c]"]), vec![], vec![]]);
        assert_eq!(split(&cases, 0).len(), 1);
    }

    #[test]
    fn runs_on_the_first_gpu_keep_their_names_and_the_others_name_theirs() {
        assert_eq!(run_name("round", 2, None, "candidate"), "round-2-candidate");
        assert_eq!(
            run_name("confirm-round", 1, Some("3"), "baseline"),
            "confirm-round-1-gpu3-baseline"
        );
    }
}
