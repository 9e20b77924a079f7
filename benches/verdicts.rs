//! How often the loop's verdicts are right under H200-like noise: the single-run rule the tool had before
//! paired rounds against the paired rule of `verdict.rs`, on synthetic runs (run `cargo bench --bench verdicts`).
//!
//! The grid is rope's on an H200 (12 configs, 1.5 us to 4.4 ms), read from the repository's ten runs of
//! unchanged rope code (`tests/data/`). Each config's per-run median is
//! `latency * effect * exp(sd * N(0,1))`, rounded to the GPU timer's tick, with `sd` either the noise
//! model of `noise.rs` for the config's latency ("model", the one fitted on all H200 data) or the spread
//! of that config's own ten runs ("measured"). The single-run rule compares one candidate run with one
//! baseline run measured earlier; the paired rule measures both sides in rounds until `verdict::decide`
//! decides (at most `MAX_ROUNDS`). A fixed seed makes the table reproducible. A 3% regression hits one
//! config, a different one each trial.
//!
//! A second table prices each paired step in GPU seconds, from the H200 costs of rope and rms_norm
//! (`../shared/data/h200-step-costs/`, [`COSTS`]): one pytest process per run, as before warm workers;
//! one warm worker per side started by each step, every round running every case; and the warm workers
//! with rounds on the configs still open and a baseline worker that lives on from an earlier step (its
//! start-up and first, compiling repetition paid once per session, not per step); each against the
//! reference of correctness plus one cold run. A repetition is priced per case it runs.

use std::collections::HashMap;

use git_cutile_perf::decision::{Thresholds, Tier};
use git_cutile_perf::noise::{TIMER_TICK_MS, process_sd};
use git_cutile_perf::records::{self, Measurement, Statistic};
use git_cutile_perf::stats;
use git_cutile_perf::verdict::{self, Round, Verdict};

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

/// Configs with their latency (ms) and spread (sd of ln median between runs).
struct Grid {
    latency_ms: Vec<f64>,
    sd: Vec<f64>,
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
    }
    grid
}

/// The same configs with the noise model's spread for their latency.
fn model_grid() -> Grid {
    let latency_ms = measured_grid().latency_ms;
    let sd = latency_ms.iter().map(|&l| process_sd(l)).collect();
    Grid { latency_ms, sd }
}

/// One benchmark run of the grid, each config scaled by its effect.
fn run(rng: &mut Rng, grid: &Grid, effects: &[f64]) -> Vec<Measurement> {
    grid.latency_ms
        .iter()
        .zip(&grid.sd)
        .zip(effects)
        .enumerate()
        .map(|(i, ((&latency, &sd), &effect))| {
            let value = latency * effect * (sd * rng.normal()).exp();
            Measurement {
                pass: "forward".into(),
                test: format!("config-{i}"),
                value: (value / TIMER_TICK_MS).round().max(1.0) * TIMER_TICK_MS,
            }
        })
        .collect()
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
    on_means: bool,
}

/// The paired rule.
fn paired(rng: &mut Rng, grid: &Grid, effects: &[f64], limits: &Thresholds) -> PairedTrial {
    let mut rounds = Vec::new();
    let mut cases = vec![effects.len()];
    loop {
        rounds.push(Round {
            baseline: run(rng, grid, &vec![1.0; effects.len()]),
            candidate: run(rng, grid, effects),
        });
        // every config is measured (the verdict counts the open ones only); the next round's price is
        // the open ones'
        match verdict::decide(&rounds, limits, &verdict::NoiseFloor::default())
            .expect("same configs")
        {
            Verdict::Decided(d) => {
                return PairedTrial {
                    kept: Kept::of(d.tier),
                    cases,
                    on_means: d.undecided.is_some(),
                };
            }
            Verdict::NeedMoreRounds { open, .. } => cases.push(open.len()),
        }
    }
}

/// One grid's costs on the H200, in seconds (../shared/data/h200-step-costs/run-cost-times.txt).
struct Costs {
    name: &'static str,
    /// A benchmark run in a process of its own: start-up, collection, compile, the cases.
    cold_run: f64,
    /// The first run inside a process that has imported torch, cuda.tile and tilegym: collection,
    /// compile, the cases.
    first_repetition: f64,
    /// Each later run in the same process: the cases.
    repetition: f64,
}

const COSTS: [Costs; 2] = [
    Costs {
        name: "rope",
        cold_run: 49.8,
        first_repetition: 43.3,
        repetition: 26.5,
    },
    Costs {
        name: "rms_norm",
        cold_run: 37.4,
        first_repetition: 27.9,
        repetition: 12.5,
    },
];
/// The correctness selection in a process of its own (rms_norm's, measured in a kept step).
const CORRECTNESS_S: f64 = 27.0;
/// What any pytest process pays before its first case: `import torch, cuda.tile, tilegym` and the first
/// CUDA call.
const STARTUP_S: f64 = 9.3 + 5.6;

impl Costs {
    /// A step of `rounds` paired rounds, one process per run; a kept step runs correctness on unseen
    /// inputs on both sides.
    fn per_process(&self, rounds: usize, kept: bool) -> f64 {
        let unseen = if kept { 2.0 * CORRECTNESS_S } else { 0.0 };
        CORRECTNESS_S + 2.0 * rounds as f64 * self.cold_run + unseen
    }

    /// The same step with a warm worker per side started by the step: their start-ups overlap,
    /// correctness and the unseen check run in them without a start-up of their own, only the first
    /// repetition compiles, and every round runs every case.
    fn warm(&self, rounds: usize, kept: bool) -> f64 {
        STARTUP_S
            + self.warm_correctness(kept)
            + 2.0 * self.first_repetition
            + 2.0 * (rounds - 1) as f64 * self.repetition
    }

    /// The warm step with rounds on the configs still open (`cases` per round, of `configs`) and the
    /// baseline's worker living on from an earlier step: only the candidate's start-up and first
    /// repetition are paid; the baseline's first run is a plain repetition.
    fn warm_open(&self, cases: &[usize], configs: usize, kept: bool) -> f64 {
        let share = |n: usize| n as f64 / configs as f64;
        let later: f64 = cases[1..].iter().map(|&n| share(n)).sum();
        STARTUP_S
            + self.warm_correctness(kept)
            + self.first_repetition
            + self.repetition
            + 2.0 * later * self.repetition
    }

    /// Correctness in the candidate's worker, and the unseen-input check on both sides for a kept step.
    fn warm_correctness(&self, kept: bool) -> f64 {
        let correctness = CORRECTNESS_S - STARTUP_S;
        correctness + if kept { 2.0 * correctness } else { 0.0 }
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
    let grids = [("model", model_grid()), ("measured", measured_grid())];
    println!(
        "rope's grid (12 configs, 1.5 us to 4.4 ms), H200 noise, {TRIALS} trials each, seed {SEED:#x}"
    );
    println!(
        "| {:<8} | {:<34} | {:>6} | {:>10} | {:>7} | {:>16} | {:>8} |",
        "noise", "scenario", "target", "single-run", "paired", "paired runs/step", "on means"
    );
    println!(
        "|{:-<10}|{:-<36}|{:->8}|{:->12}|{:->9}|{:->18}|{:->10}|",
        "", "", "", "", "", "", ""
    );
    // per noise and scenario: [per-process, warm, warm on open configs] seconds summed over trials, per
    // cost grid
    let mut priced: Vec<(&str, &str, Vec<[f64; 3]>)> = Vec::new();
    for (noise, grid) in &grids {
        let n = grid.latency_ms.len();
        for s in &scenarios {
            let mut rng = Rng(SEED);
            let (mut single_hits, mut paired_hits, mut runs, mut forced) = (0, 0, 0, 0);
            let mut seconds = vec![[0.0; 3]; COSTS.len()];
            for t in 0..TRIALS {
                let effects: Vec<f64> = (0..n).map(|i| (s.effect)(i, n, t)).collect();
                single_hits +=
                    usize::from(single_run(&mut rng, grid, &effects, &limits) == s.right);
                let trial = paired(&mut rng, grid, &effects, &limits);
                let rounds = trial.cases.len();
                paired_hits += usize::from(trial.kept == s.right);
                runs += 2 * rounds;
                forced += usize::from(trial.on_means);
                let kept = trial.kept != Kept::Reverted;
                for (sum, costs) in seconds.iter_mut().zip(&COSTS) {
                    sum[0] += costs.per_process(rounds, kept);
                    sum[1] += costs.warm(rounds, kept);
                    sum[2] += costs.warm_open(&trial.cases, n, kept);
                }
            }
            let pct = |n: usize| 100.0 * n as f64 / TRIALS as f64;
            println!(
                "| {:<8} | {:<34} | {:>6} | {:>9.2}% | {:>6.2}% | {:>16.2} | {:>7.1}% |",
                noise,
                s.name,
                s.target,
                pct(single_hits),
                pct(paired_hits),
                runs as f64 / TRIALS as f64,
                pct(forced)
            );
            priced.push((noise, s.name, seconds));
        }
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
        for rule in ["per run", "warm", "open, lives on"] {
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
        "single-run: 1 benchmark run per step against a stored baseline; paired: 2 runs per round (baseline and \
         candidate), at most {} rounds; on means: the rounds ran out before the intervals decided",
        verdict::MAX_ROUNDS
    );
}
