//! How often the loop's verdicts are right under H200-like noise: the single-run rule of `decision.rs`
//! against the paired rule of `verdict.rs`, on synthetic runs (run `cargo bench --bench verdicts`).
//!
//! Each config's per-run median is `latency * effect * exp(process_sd(latency) * N(0,1))`, rounded to the
//! GPU timer's tick (the noise model of `noise.rs`). The grid is rope's on an H200: 12 configs, 1.5 us to
//! 4.4 ms. The single-run rule compares one candidate run with one baseline run measured earlier; the
//! paired rule measures both sides in rounds until `verdict::decide` decides (at most `MAX_ROUNDS`). A
//! fixed seed makes the table reproducible. A 3% regression hits one config, a different one each trial.

use git_cutile_perf::decision::{self, Decision, Outcome, Status, Thresholds};
use git_cutile_perf::noise::{TIMER_TICK_MS, process_sd};
use git_cutile_perf::records::Measurement;
use git_cutile_perf::stats;
use git_cutile_perf::verdict::{self, Round, Tier, Verdict};

/// Medians (ms) of rope's 12 perf configs on an H200 (tests/ops/test_rope.py).
const GRID_MS: [f64; 12] = [
    0.001984, 0.009152, 4.392, 0.001728, 0.005888, 2.717, 0.001568, 0.004704, 1.561, 0.001536,
    0.004607, 1.511,
];
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

/// One benchmark run of the grid, each config scaled by its effect.
fn run(rng: &mut Rng, effects: &[f64]) -> Vec<Measurement> {
    GRID_MS
        .iter()
        .zip(effects)
        .enumerate()
        .map(|(i, (&latency, &effect))| {
            let value = latency * effect * (process_sd(latency) * rng.normal()).exp();
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

fn single_run(rng: &mut Rng, effects: &[f64], limits: &Thresholds) -> Kept {
    let baseline = run(rng, &[1.0; 12]);
    let candidate = run(rng, effects);
    let cmp = stats::compare(&baseline, &candidate).expect("same configs");
    let v = decision::decide(Outcome::Measured(&cmp), 1, 0, None, limits);
    match (v.status, v.decision) {
        (Status::Revert, _) => Kept::Reverted,
        (_, Decision::Continue) => Kept::Continue,
        (_, Decision::LowerPriority) => Kept::LowerPriority,
        _ => Kept::Stop,
    }
}

/// The paired rule; also returns the rounds it took and whether it had to decide on the means.
fn paired(rng: &mut Rng, effects: &[f64], limits: &Thresholds) -> (Kept, usize, bool) {
    let mut rounds = Vec::new();
    loop {
        rounds.push(Round {
            baseline: run(rng, &[1.0; 12]),
            candidate: run(rng, effects),
        });
        if let Verdict::Decided(d) = verdict::decide(&rounds, limits).expect("same configs") {
            let kept = match d.tier {
                Tier::Revert => Kept::Reverted,
                Tier::Continue => Kept::Continue,
                Tier::LowerPriority => Kept::LowerPriority,
                Tier::Stop => Kept::Stop,
            };
            return (kept, rounds.len(), d.undecided.is_some());
        }
    }
}

struct Scenario {
    name: &'static str,
    target: &'static str,
    /// The effect of the change on config `i` in trial `t`.
    effect: fn(usize, usize) -> f64,
    /// The verdict that is right.
    right: Kept,
}

fn main() {
    let limits = Thresholds::default();
    let scenarios = [
        Scenario {
            name: "null change reverted",
            target: "< 1%",
            effect: |_, _| 1.0,
            right: Kept::Reverted,
        },
        Scenario {
            name: "3% one-config regression reverted",
            target: "> 99%",
            effect: |i, t| if i == t % GRID_MS.len() { 1.03 } else { 1.0 },
            right: Kept::Reverted,
        },
        Scenario {
            name: "6% gain kept as continue",
            target: "> 99%",
            effect: |_, _| 0.94,
            right: Kept::Continue,
        },
        Scenario {
            name: "3% gain kept as lower-priority",
            target: "> 95%",
            effect: |_, _| 0.97,
            right: Kept::LowerPriority,
        },
    ];
    println!(
        "rope-like grid (12 configs, 1.5 us to 4.4 ms), H200 noise model, {TRIALS} trials each, seed {SEED:#x}"
    );
    println!(
        "| {:<34} | {:>6} | {:>10} | {:>10} | {:>17} | {:>16} |",
        "scenario", "target", "single-run", "paired", "paired runs/step", "decided on means"
    );
    println!(
        "|{:-<36}|{:->8}|{:->12}|{:->12}|{:->19}|{:->18}|",
        "", "", "", "", "", ""
    );
    for s in &scenarios {
        let mut rng = Rng(SEED);
        let (mut single_hits, mut paired_hits, mut runs, mut forced) = (0, 0, 0, 0);
        for t in 0..TRIALS {
            let effects: Vec<f64> = (0..GRID_MS.len()).map(|i| (s.effect)(i, t)).collect();
            single_hits += usize::from(single_run(&mut rng, &effects, &limits) == s.right);
            let (kept, rounds, on_means) = paired(&mut rng, &effects, &limits);
            paired_hits += usize::from(kept == s.right);
            runs += 2 * rounds;
            forced += usize::from(on_means);
        }
        let pct = |n: usize| 100.0 * n as f64 / TRIALS as f64;
        println!(
            "| {:<34} | {:>6} | {:>9.2}% | {:>9.2}% | {:>17.2} | {:>15.1}% |",
            s.name,
            s.target,
            pct(single_hits),
            pct(paired_hits),
            runs as f64 / TRIALS as f64,
            pct(forced)
        );
    }
    println!(
        "single-run: 1 benchmark run per step against a stored baseline; paired: 2 runs per round (baseline and candidate), at most {} rounds",
        verdict::MAX_ROUNDS
    );
}
