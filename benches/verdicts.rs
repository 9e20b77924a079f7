//! How often the loop's verdicts are right under H200-like noise: the single-run rule the tool had before
//! paired rounds against the paired rule of `verdict/`, on synthetic runs (run `cargo bench --bench verdicts`).
//!
//! The grid is rope's on an H200 (12 configs, 1.5 us to 4.4 ms), read from the repository's ten runs of
//! unchanged rope code (`tests/data/`). Each config's per-run median is
//! `latency * effect * exp(sd * N(0,1))`, rounded to the GPU timer's tick (its record's mean, which the
//! paired rule reads under 3.2 us, the same value unrounded), with `sd` either the noise
//! model of `noise.rs` for the config's latency ("model", the one fitted on all H200 data) or the spread
//! of that config's own ten runs ("measured"). Most of that spread is fixed for a process's life
//! ([`FIXED_PER_PROCESS`]): a run in a process that has measured before draws only the rest. "order" adds
//! to the measured spread what two later H200 sessions showed: the side measured second in a round slower,
//! or faster, by up to about 0.1 us ([`ORDER_JITTER_MS`], the verdict's own allowance for it). "mean" is
//! "order" as `--stat mean` records it: the same spread, the values not rounded to the timer's tick.
//!
//! The single-run rule compares one candidate run with one baseline run measured earlier; the paired
//! rules measure both sides in rounds until `verdict::decide` decides (at most `MAX_ROUNDS`): "one pair"
//! repeats every round in the same two processes (the warm workers before rounds in fresh processes),
//! "paired" measures each round after the first in a fresh pair, as `paired` does, by today's rules
//! ("paired first": by their first revision, `verdict::Rules::First`). A fixed seed makes
//! the table reproducible. A 3% regression hits one config, a different one each trial.
//!
//! A second table prices each paired step in GPU seconds, from the H200 costs of rope and rms_norm
//! (`evidence/2026-12-02-h200-step-costs/`, [`COSTS`]): one pytest process per run, as before warm workers;
//! one pair of warm workers per step with later rounds on the configs still open ("one pair", with its
//! own rounds); and the warm workers of today ("fresh pairs"): the baseline's lives on from an earlier
//! step, so round 1 pays only the candidate's start-up and first, compiling repetition, and each later
//! round a fresh pair's start-ups (side by side; only what the round before did not hide)
//! and first repetitions; each against the reference of
//! correctness plus one cold run. A repetition is priced per case it runs. Its last lines price the
//! cheapest step any paired rule can take ("floor") and the least any rule meeting the targets can pay on
//! average ("least", Wald's bound, [`LeastRounds`]).

use std::collections::HashMap;

use git_cutile_perf::rules::decision::{Thresholds, Tier};
use git_cutile_perf::rules::noise::{ORDER_JITTER_MS, TIMER_TICK_MS, process_sd};
use git_cutile_perf::rules::records::{self, Measurement, Statistic};
use git_cutile_perf::rules::stats;
use git_cutile_perf::rules::verdict::{self, Round, Rules, Verdict};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
const TRIALS: usize = 4000;
const SEED: u64 = 0x5eed_2026_1130;

/// splitmix64: small, fast and good enough for a simulation; no dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Box-Muller.
    fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

/// Configs with their latency (ms) and spread (sd of ln median between runs), and how much slower the
/// side measured second in a round may be (the scale of a penalty in ln latency; none in the model), and
/// whether a run's records are medians in whole ticks of the GPU timer (`--stat mean`'s are not).
struct Grid {
    latency_ms: Vec<f64>,
    sd: Vec<f64>,
    order: Vec<f64>,
    ticks: bool,
}

/// Rope's runs of unchanged code on an H200, in sets of back-to-back runs: three processes, and the
/// benchmarks of seven null steps.
fn rope_runs() -> Vec<Vec<Vec<Measurement>>> {
    let junit = (1..=3)
        .map(|i| {
            let path = format!("{DATA}/tilegym-junit/noise-h200/test_rope_{i}.xml");
            let cases = records::RecordFormat::Junit
                .parse(&std::fs::read_to_string(path).unwrap())
                .unwrap();
            records::measurements(&cases, Statistic::Median).unwrap()
        })
        .collect();
    let steps = (1..=7)
        .map(|i| {
            let path = format!("{DATA}/rope-null-steps-h200/null-{i}.json");
            let step: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            step["configs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| Measurement {
                    pass: c["pass"].as_str().unwrap().into(),
                    test: c["test"].as_str().unwrap().into(),
                    value: c["value_ms"].as_f64().unwrap(),
                    mean: None,
                })
                .collect()
        })
        .collect();
    vec![junit, steps]
}

/// Rope's configs: the mean latency of the runs, and the spread of ln(median) pooled over the sets.
fn measured_grid() -> Grid {
    let sets = rope_runs();
    let mut grid = Grid {
        latency_ms: Vec::new(),
        sd: Vec::new(),
        order: Vec::new(),
        ticks: true,
    };
    for config in &sets[0][0] {
        let key = (config.pass.as_str(), config.test.as_str());
        let (mut squares, mut dof, mut values) = (0.0, 0.0, Vec::new());
        for set in &sets {
            let logs: Vec<f64> = set
                .iter()
                .map(|run| {
                    let by_key: HashMap<_, _> = run
                        .iter()
                        .map(|m| ((m.pass.as_str(), m.test.as_str()), m.value))
                        .collect();
                    by_key[&key].ln()
                })
                .collect();
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            squares += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
            dof += logs.len() as f64 - 1.0;
            values.extend(logs);
        }
        grid.latency_ms
            .push((values.iter().sum::<f64>() / values.len() as f64).exp());
        grid.sd.push((squares / dof).sqrt());
        grid.order.push(0.0);
    }
    grid
}

/// The same configs with the noise model's spread for their latency.
fn model_grid() -> Grid {
    let latency_ms = measured_grid().latency_ms;
    let sd = latency_ms.iter().map(|&l| process_sd(l)).collect();
    let order = vec![0.0; latency_ms.len()];
    Grid {
        latency_ms,
        sd,
        order,
        ticks: true,
    }
}

/// The measured grid with an order effect: each step draws, per config, the second side's penalty
/// `ORDER_JITTER_MS / latency * N(0,1)` (in ln latency; below 0 it measures faster), which holds for every round
/// of the step.
fn ordered_grid() -> Grid {
    let mut grid = measured_grid();
    grid.order = grid
        .latency_ms
        .iter()
        .map(|&l| ORDER_JITTER_MS / l)
        .collect();
    grid
}

/// The ordered grid as `--stat mean` records it: the same spread, the values not in whole timer ticks.
fn mean_grid() -> Grid {
    Grid {
        ticks: false,
        ..ordered_grid()
    }
}

/// The share of a config's variance between runs that is fixed for a process's life (an autotuner's
/// pick among near ties, where the arrays landed): on the H200, six rounds of rope in one pair of
/// processes stayed within 0.9% of each other while processes of the same code differed by up to 3%
/// (`evidence/2026-12-02-h200-one-pair-rounds/`).
const FIXED_PER_PROCESS: f64 = 0.9;

/// One process's draw of what it fixes for its life: a standard normal per config.
fn process(rng: &mut Rng, grid: &Grid) -> Vec<f64> {
    grid.sd.iter().map(|_| rng.normal()).collect()
}

/// One benchmark run of the grid in a process that drew `fixed`, each config scaled by its effect.
fn run_in(rng: &mut Rng, grid: &Grid, effects: &[f64], fixed: &[f64]) -> Vec<Measurement> {
    let (between, within) = (FIXED_PER_PROCESS.sqrt(), (1.0 - FIXED_PER_PROCESS).sqrt());
    grid.latency_ms
        .iter()
        .zip(&grid.sd)
        .zip(effects)
        .zip(fixed)
        .enumerate()
        .map(|(i, (((&latency, &sd), &effect), &fixed))| {
            let noise = sd * (between * fixed + within * rng.normal());
            let value = latency * effect * noise.exp();
            Measurement {
                pass: "forward".into(),
                test: format!("config-{i}"),
                value: match grid.ticks {
                    true => (value / TIMER_TICK_MS).round().max(1.0) * TIMER_TICK_MS,
                    false => value,
                },
                // the record's mean over its repetitions, which no tick rounds
                mean: Some(value),
            }
        })
        .collect()
}

/// One benchmark run of the grid in a process of its own.
fn run(rng: &mut Rng, grid: &Grid, effects: &[f64]) -> Vec<Measurement> {
    let fixed = process(rng, grid);
    run_in(rng, grid, effects, &fixed)
}

/// What a verdict did with the change.
#[derive(Clone, Copy, PartialEq)]
enum Kept {
    Reverted,
    Continue,
    LowerPriority,
    Stop,
}

impl Kept {
    fn of(tier: Tier) -> Kept {
        match tier {
            Tier::Revert => Kept::Reverted,
            Tier::Continue => Kept::Continue,
            Tier::LowerPriority => Kept::LowerPriority,
            Tier::Stop => Kept::Stop,
        }
    }
}

/// The single-run rule the tool had before paired rounds, kept here as what the paired rule is measured
/// against: one run of each side; a config slower than the regression limit reverts, otherwise the
/// improvement of the means picks the tier (`verdict::point_tier`, which deciding on the means uses).
fn single_run(rng: &mut Rng, grid: &Grid, effects: &[f64], limits: &Thresholds) -> Kept {
    let baseline = run(rng, grid, &vec![1.0; effects.len()]);
    let candidate = run(rng, grid, effects);
    let comparison = stats::compare(&baseline, &candidate).expect("same configs");
    let regressed = comparison
        .worst()
        .is_some_and(|worst| worst.change_pct > limits.regression_pct);
    Kept::of(match regressed {
        true => Tier::Revert,
        false => verdict::point_tier(-comparison.change_pct(), limits),
    })
}

/// What the paired rule did in one trial.
struct PairedTrial {
    kept: Kept,
    /// The cases each round ran: every config in the first, the open ones after it.
    cases: Vec<usize>,
    /// It had to decide on the means.
    ran_out: bool,
    /// Where only one config changed: its index, the rounds that counted it and the change they gave it
    /// (%).
    changed: Option<(usize, usize, f64)>,
}

/// A 3% regression of one config that the paired rule kept.
struct Miss {
    latency_ms: f64,
    /// Decided on the means after the rounds ran out.
    ran_out: bool,
    /// The rounds that counted the config.
    rounds: usize,
    /// Its median stays on one timer tick whatever the process (a spread under a tenth of a tick): there
    /// a change moves it by whole ticks or not at all, so 3% reads as one tick or two.
    on_one_tick: bool,
    /// The change the rounds gave it (%).
    change_pct: f64,
}

/// The paired rule by `rules`, every round in the same pair of processes (`one_pair`) or each in a fresh
/// pair, the side measured second in each round slowed by the grid's order effect.
fn paired(
    rng: &mut Rng,
    grid: &Grid,
    effects: &[f64],
    limits: &Thresholds,
    one_pair: bool,
    rules: Rules,
) -> PairedTrial {
    let mut rounds = Vec::new();
    let mut cases = vec![effects.len()];
    let mut pair = [process(rng, grid), process(rng, grid)];
    // no draw without an order effect: the other grids' trials stay as they were
    let penalty: Vec<f64> = grid
        .order
        .iter()
        .map(|&o| {
            if o == 0.0 {
                1.0
            } else {
                (o * rng.normal()).exp()
            }
        })
        .collect();
    let floor = verdict::NoiseFloor::default().under(rules);
    loop {
        if !rounds.is_empty() && !one_pair {
            pair = [process(rng, grid), process(rng, grid)];
        }
        let second = |effects: &[f64]| -> Vec<f64> {
            effects.iter().zip(&penalty).map(|(e, p)| e * p).collect()
        };
        let baseline = vec![1.0; effects.len()];
        let (baseline, candidate) = match verdict::candidate_first(rounds.len()) {
            true => (second(&baseline), effects.to_vec()),
            false => (baseline, second(effects)),
        };
        rounds.push(Round {
            baseline: run_in(rng, grid, &baseline, &pair[0]),
            candidate: run_in(rng, grid, &candidate, &pair[1]),
        });
        // every config is measured (the verdict counts the open ones only); the next round's price is
        // the open ones'
        match verdict::decide(&rounds, limits, &floor).expect("same configs") {
            Verdict::Decided(d) => {
                let mut changed = effects.iter().enumerate().filter(|(_, e)| **e != 1.0);
                let changed = match (changed.next(), changed.next()) {
                    (Some((i, _)), None) => {
                        let config = &d.estimate.configs[i];
                        Some((i, config.rounds, config.change_pct))
                    }
                    _ => None,
                };
                return PairedTrial {
                    kept: Kept::of(d.tier),
                    cases,
                    ran_out: d.undecided.is_some(),
                    changed,
                };
            }
            Verdict::NeedMoreRounds { open, .. } => cases.push(open.len()),
        }
    }
}

/// One grid's costs on the H200, in seconds (`evidence/2026-12-02-h200-step-costs/run-cost-times.txt`).
struct Costs {
    name: &'static str,
    /// A benchmark run in a process of its own: start-up, collection, compile, the cases.
    cold_run: f64,
    /// The first run inside a process that has imported torch, cuda.tile and tilegym: collection,
    /// compile, the cases.
    first_repetition: f64,
    /// Each later run in the same process: the cases.
    repetition: f64,
    /// Collecting the perf selection after the imports (its `--collect-only` less `IMPORTS_S`): a worker
    /// does it before it is ready.
    collection: f64,
}

const COSTS: [Costs; 2] = [
    Costs {
        name: "rope",
        cold_run: 49.8,
        first_repetition: 43.3,
        repetition: 26.5,
        collection: 22.8 - IMPORTS_S,
    },
    Costs {
        name: "rms_norm",
        cold_run: 37.4,
        first_repetition: 27.9,
        repetition: 12.5,
        collection: 12.0 - IMPORTS_S,
    },
];
/// The rounds after the first, each counted by the share of the `configs` cases it ran.
fn later_share(cases: &[usize], configs: usize) -> f64 {
    cases[1..].iter().map(|&n| n as f64 / configs as f64).sum()
}

/// The correctness selection in a process of its own (rms_norm's, measured in a kept step).
const CORRECTNESS_S: f64 = 27.0;
/// What any pytest process pays before its first case: `import torch, cuda.tile, tilegym`
/// ([`IMPORTS_S`]) and the first CUDA call ([`CONTEXT_S`]).
const STARTUP_S: f64 = IMPORTS_S + CONTEXT_S;
const IMPORTS_S: f64 = 9.3;
const CONTEXT_S: f64 = 5.6;

impl Costs {
    /// A step of `rounds` paired rounds, one process per run; a kept step runs the candidate's correctness
    /// on unseen inputs (the baseline's only where the candidate's failed a case, not priced here).
    fn per_process(&self, rounds: usize, kept: bool) -> f64 {
        let unseen = if kept { CORRECTNESS_S } else { 0.0 };
        CORRECTNESS_S + 2.0 * rounds as f64 * self.cold_run + unseen
    }

    /// One pair of warm workers started by the step (their start-ups overlap, correctness and the unseen
    /// check run in them without a start-up of their own, only the first repetition compiles), every
    /// round in that pair, each after the first on the configs still open (`cases` per round, of
    /// `configs`).
    fn one_pair(&self, cases: &[usize], configs: usize, kept: bool) -> f64 {
        STARTUP_S
            + self.warm_correctness(kept)
            + 2.0 * self.first_repetition
            + 2.0 * later_share(cases, configs) * self.repetition
    }

    /// Today's warm workers: the baseline's lives on from an earlier step, so round 1 pays only the
    /// candidate's start-up and first repetition; each later round, on the open configs, a fresh pair's
    /// start-ups with their collection (side by side: a worker collects before it is ready) and first
    /// repetitions (one after the other: they compile and tune). A side's worker for round 2 on imported
    /// and collected while that side measured the round before (held while the other side did), so only
    /// what that did not hide and its GPU context are paid.
    fn fresh_pairs(&self, cases: &[usize], configs: usize, kept: bool) -> f64 {
        let compile = self.first_repetition - self.repetition - self.collection;
        let start_ups: f64 = (1..cases.len())
            .map(|round| {
                let own_side = cases[round - 1] as f64 / configs as f64 * self.repetition;
                CONTEXT_S + (IMPORTS_S + self.collection - own_side).max(0.0)
            })
            .sum();
        let later_rounds = (cases.len() - 1) as f64;
        STARTUP_S
            + self.warm_correctness(kept)
            + self.first_repetition
            + self.repetition
            + start_ups
            + later_rounds * 2.0 * compile
            + 2.0 * later_share(cases, configs) * self.repetition
    }

    /// Correctness in the candidate's worker, and the unseen-input check there for a kept step.
    fn warm_correctness(&self, kept: bool) -> f64 {
        let correctness = CORRECTNESS_S - STARTUP_S;
        correctness + if kept { correctness } else { 0.0 }
    }

    /// The iteration the workflow describes without paired rounds: correctness and one cold run.
    fn reference(&self) -> f64 {
        CORRECTNESS_S + self.cold_run
    }
}

struct Scenario {
    name: &'static str,
    target: &'static str,
    /// The effect of the change on config `i` of `n` in trial `t`.
    effect: fn(usize, usize, usize) -> f64,
    /// The verdict that is right.
    right: Kept,
}

fn main() {
    let limits = Thresholds::default();
    let scenarios = [
        Scenario {
            name: "null change reverted",
            target: "< 1%",
            effect: |_, _, _| 1.0,
            right: Kept::Reverted,
        },
        Scenario {
            name: "3% one-config regression reverted",
            target: "> 99%",
            effect: |i, n, t| if i == t % n { 1.03 } else { 1.0 },
            right: Kept::Reverted,
        },
        Scenario {
            name: "6% gain kept as continue",
            target: "> 99%",
            effect: |_, _, _| 0.94,
            right: Kept::Continue,
        },
        Scenario {
            name: "3% gain kept as lower-priority",
            target: "> 95%",
            effect: |_, _, _| 0.97,
            right: Kept::LowerPriority,
        },
    ];
    // `cargo bench --bench verdicts -- order` runs that noise's rows only (cargo adds `--bench`)
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let grids: Vec<(&str, Grid)> = [
        ("model", model_grid as fn() -> Grid),
        ("measured", measured_grid),
        ("order", ordered_grid),
        ("mean", mean_grid),
    ]
    .into_iter()
    .filter(|(name, _)| only.is_empty() || only.iter().any(|o| o == name))
    .map(|(name, grid)| (name, grid()))
    .collect();
    println!(
        "rope's grid (12 configs, 1.5 us to 4.4 ms), H200 noise, {TRIALS} trials each, seed {SEED:#x}"
    );
    println!(
        "| {:<8} | {:<34} | {:>6} | {:>10} | {:>8} | {:>12} | {:>7} | {:>16} | {:>8} |",
        "noise",
        "scenario",
        "target",
        "single-run",
        "one pair",
        "paired first",
        "paired",
        "paired runs/step",
        "ran out"
    );
    println!(
        "|{:-<10}|{:-<36}|{:->8}|{:->12}|{:->10}|{:->14}|{:->9}|{:->18}|{:->10}|",
        "", "", "", "", "", "", "", "", ""
    );
    // per noise and scenario: [per-process, one pair, fresh pairs] seconds summed over trials, per cost
    // grid
    let mut priced: Vec<(&str, &str, Vec<[f64; 3]>)> = Vec::new();
    // per noise: what the paired rule's missed one-config regressions have in common
    let mut missed: Vec<String> = Vec::new();
    for (noise, grid) in &grids {
        let n = grid.latency_ms.len();
        for s in &scenarios {
            let mut rng = Rng(SEED);
            let (mut single_hits, mut one_pair_hits, mut first_hits, mut paired_hits) =
                (0, 0, 0, 0);
            let (mut runs, mut forced) = (0, 0);
            // each missed regression's config
            let mut misses: Vec<Miss> = Vec::new();
            let mut seconds = vec![[0.0; 3]; COSTS.len()];
            for t in 0..TRIALS {
                let effects: Vec<f64> = (0..n).map(|i| (s.effect)(i, n, t)).collect();
                let counts = |kept: Kept| usize::from(kept == s.right);
                single_hits += counts(single_run(&mut rng, grid, &effects, &limits));
                let one_pair = paired(&mut rng, grid, &effects, &limits, true, Rules::default());
                one_pair_hits += counts(one_pair.kept);
                let trial = paired(&mut rng, grid, &effects, &limits, false, Rules::default());
                let rounds = trial.cases.len();
                paired_hits += counts(trial.kept);
                let first = paired(&mut rng, grid, &effects, &limits, false, Rules::First);
                first_hits += counts(first.kept);
                runs += 2 * rounds;
                forced += usize::from(trial.ran_out);
                if let (Kept::Reverted, Some((i, rounds, change_pct))) = (s.right, trial.changed)
                    && trial.kept != Kept::Reverted
                {
                    misses.push(Miss {
                        latency_ms: grid.latency_ms[i],
                        ran_out: trial.ran_out,
                        rounds,
                        on_one_tick: grid.ticks
                            && grid.sd[i] * grid.latency_ms[i] < TIMER_TICK_MS / 10.0,
                        change_pct,
                    });
                }
                let kept = trial.kept != Kept::Reverted;
                for (sum, costs) in seconds.iter_mut().zip(&COSTS) {
                    sum[0] += costs.per_process(rounds, kept);
                    let one_pair_kept = one_pair.kept != Kept::Reverted;
                    sum[1] += costs.one_pair(&one_pair.cases, n, one_pair_kept);
                    sum[2] += costs.fresh_pairs(&trial.cases, n, kept);
                }
            }
            let pct = |n: usize| 100.0 * n as f64 / TRIALS as f64;
            println!(
                "| {:<8} | {:<34} | {:>6} | {:>9.2}% | {:>7.2}% | {:>11.2}% | {:>6.2}% | {:>16.2} | {:>7.1}% |",
                noise,
                s.name,
                s.target,
                pct(single_hits),
                pct(one_pair_hits),
                pct(first_hits),
                pct(paired_hits),
                runs as f64 / TRIALS as f64,
                pct(forced)
            );
            priced.push((noise, s.name, seconds));
            if !misses.is_empty() {
                let share = |f: &dyn Fn(&Miss) -> bool| {
                    100.0 * misses.iter().filter(|m| f(m)).count() as f64 / misses.len() as f64
                };
                let read: Vec<f64> = misses
                    .iter()
                    .filter(|m| m.on_one_tick)
                    .map(|m| m.change_pct)
                    .collect();
                let read_as = match (
                    read.iter().copied().reduce(f64::min),
                    read.iter().copied().reduce(f64::max),
                ) {
                    (Some(low), Some(high)) => {
                        format!(" (its 3% read as {low:+.2}% to {high:+.2}%)")
                    }
                    _ => String::new(),
                };
                missed.push(format!(
                    "{noise}, {}: {} of {TRIALS} kept by the paired rule: {:.0}% on the 1.5-2 us configs, \
                     {:.0}% decided on the means, {:.0}% with the config closed after round 1, {:.0}% on a \
                     config whose median stays on one timer tick in every process{read_as}",
                    s.name,
                    misses.len(),
                    share(&|m| m.latency_ms < 0.0025),
                    share(&|m| m.ran_out),
                    share(&|m| !m.ran_out && m.rounds == 1),
                    share(&|m| m.on_one_tick),
                ));
            }
        }
    }
    for line in &missed {
        println!("misses, {line}");
    }
    println!();
    println!(
        "mean GPU seconds per paired step (x: over correctness + one cold run: {})",
        COSTS
            .iter()
            .map(|c| format!("{} {:.1} s", c.name, c.reference()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    print!("| {:<8} | {:<34} |", "noise", "scenario");
    for costs in &COSTS {
        for rule in ["per run", "one pair", "fresh pairs"] {
            print!(" {:>24} |", format!("{} {rule}", costs.name));
        }
    }
    println!();
    print!("|{:-<10}|{:-<36}|", "", "");
    for _ in 0..3 * COSTS.len() {
        print!("{:->26}|", "");
    }
    println!();
    for (noise, scenario, seconds) in &priced {
        print!("| {noise:<8} | {scenario:<34} |");
        for (sums, costs) in seconds.iter().zip(&COSTS) {
            for sum in sums {
                let mean = sum / TRIALS as f64;
                let x = mean / costs.reference();
                print!(" {:>24} |", format!("{mean:.0} s ({x:.2}x)"));
            }
        }
        println!();
    }
    println!(
        "single-run: 1 benchmark run per step against a stored baseline; one pair: every round in the same two \
         processes; paired: 2 runs per round (baseline and candidate), each round after the first in a fresh \
         pair, at most {} rounds, a config under 3.2 us judged on its records' means, which no tick rounds \
         (paired first: by the rules' first revision, verdict::Rules::First, on the medians alone); ran out: \
         the rounds ran out before the intervals decided, and the means of the rounds decided; {:.0}% of a \
         config's variance between runs fixed per process; order: the measured noise, and the side measured \
         second in a round slower or faster by up to about 0.1 us; mean: order, the values not in whole \
         timer ticks (--stat mean)",
        verdict::MAX_ROUNDS,
        100.0 * FIXED_PER_PROCESS
    );
    // the cheapest any paired rule can be: one round, whatever the noise
    for costs in &COSTS {
        let one_round = |kept| costs.fresh_pairs(&[1], 1, kept);
        println!(
            "floor, {}: a step decided in its first round, the baseline's worker kept from the step before: \
             {:.1} s ({:.2}x) not kept, {:.1} s ({:.2}x) kept (the unseen-input check in the candidate's worker)",
            costs.name,
            one_round(false),
            one_round(false) / costs.reference(),
            one_round(true),
            one_round(true) / costs.reference()
        );
    }
    // the cheapest any rule can be that meets the targets under this noise (Wald's bound; an order
    // effect is not noise a round's scatter shows)
    for (noise, grid) in grids
        .iter()
        .filter(|(_, g)| g.order.iter().all(|&o| o == 0.0))
    {
        for costs in &COSTS {
            let bound = LeastRounds::of(grid);
            println!(
                "least, {noise}, {}: Wald's bound at the targets (1% wrong each way): the noisiest config \
                 needs {:.1} rounds, all configs {:.1}; any paired rule pays at least {:.0} s ({:.2}x) to keep \
                 a null change and {:.0} s ({:.2}x) to revert a one-config regression (start-ups and compiles \
                 after round 1 free); a rule that knew the baseline exactly {:.2}x and {:.2}x",
                costs.name,
                bound.paired.iter().cloned().fold(0.0, f64::max),
                bound.paired.iter().sum::<f64>(),
                bound.null_kept(costs, true),
                bound.null_kept(costs, true) / costs.reference(),
                bound.regression_reverted(costs, true),
                bound.regression_reverted(costs, true) / costs.reference(),
                bound.null_kept(costs, false) / costs.reference(),
                bound.regression_reverted(costs, false) / costs.reference(),
            );
        }
    }
}

/// The fewest rounds each config needs, on average, for any sequential rule to keep a null change and
/// revert a 3% regression of that config, each with at most 1% wrong (the targets): Wald's
/// bound, `E[N] >= ((1-a) ln((1-a)/b) + a ln(a/(1-b))) / KL`, with `KL = ln(1.03)^2 / (2 v)` per round
/// for a config of spread `sd` when the round's change has variance `v`: `2 sd^2` when both sides are
/// fresh processes (paired), `sd^2` when the baseline is known exactly. A config's rounds tell nothing
/// about another's (their noise is drawn apart), so each needs its own.
struct LeastRounds {
    paired: Vec<f64>,
    known_baseline: Vec<f64>,
}

impl LeastRounds {
    fn of(grid: &Grid) -> LeastRounds {
        let (alpha, beta): (f64, f64) = (0.01, 0.01);
        let wald =
            (1.0 - alpha) * ((1.0 - alpha) / beta).ln() + alpha * (alpha / (1.0 - beta)).ln();
        let shift = 1.03_f64.ln().powi(2);
        let rounds = |variance: f64| (wald * 2.0 * variance / shift).max(1.0);
        LeastRounds {
            paired: grid.sd.iter().map(|sd| rounds(2.0 * sd * sd)).collect(),
            known_baseline: grid.sd.iter().map(|sd| rounds(sd * sd)).collect(),
        }
    }

    fn rounds(&self, paired: bool) -> &[f64] {
        if paired {
            &self.paired
        } else {
            &self.known_baseline
        }
    }

    /// A step's cost beyond its first round: each config's rounds after the first, a case each, on one
    /// side (the baseline known) or both, priced as the bench prices a later round's share.
    fn later(costs: &Costs, extra_rounds: f64, configs: usize, paired: bool) -> f64 {
        let sides = if paired { 2.0 } else { 1.0 };
        sides * extra_rounds / configs as f64 * costs.repetition
    }

    /// The first round as cheap as it comes (the floor, less the baseline's repetition where it is known),
    /// then every config's own least rounds, start-ups and compiles free.
    fn null_kept(&self, costs: &Costs, paired: bool) -> f64 {
        let rounds = self.rounds(paired);
        let extra: f64 = rounds.iter().map(|n| n - 1.0).sum();
        Self::first_round(costs, true, paired) + Self::later(costs, extra, rounds.len(), paired)
    }

    /// The same for a 3% regression on one config, any config alike: only that config must be decided.
    fn regression_reverted(&self, costs: &Costs, paired: bool) -> f64 {
        let rounds = self.rounds(paired);
        let extra = rounds.iter().map(|n| n - 1.0).sum::<f64>() / rounds.len() as f64;
        Self::first_round(costs, false, paired) + Self::later(costs, extra, rounds.len(), paired)
    }

    fn first_round(costs: &Costs, kept: bool, paired: bool) -> f64 {
        let floor = costs.fresh_pairs(&[1], 1, kept);
        if paired {
            floor
        } else {
            floor - costs.repetition
        }
    }
}
