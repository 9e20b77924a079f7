//! Verdicts from paired rounds: the candidate and the baseline measured in the same step, interleaved,
//! until the data clear the thresholds of `decision::Thresholds` beyond noise.
//!
//! # Method
//! A round is one benchmark run of each side. Rounds alternate the order (baseline first in even rounds,
//! candidate first in odd ones: A B B A ...; see [`candidate_first`]) so a slow drift of the GPU cancels
//! out of the pairs, as asv's `continuous` compares against a baseline built and measured in the same
//! session rather than a stored number. Per config and round the paired log ratio is
//! `d = ln(candidate / baseline)`; a config's change is estimated by the mean of its `d` over the rounds.
//!
//! The rounds are independent only because each is measured by processes of its own: what moves a config
//! between processes of the same code (an autotuner's pick among near ties, where the arrays landed) is
//! fixed for a process's life, so repeating a run inside one process samples it once however often it
//! repeats. `paired` therefore measures every round after the first in fresh processes.
//!
//! The spread of `d` comes from two sources combined like a normal-theory posterior with a prior: the
//! noise model of `noise.rs` (fitted on H200 runs, per config latency) counts as [`PRIOR_DOF`] degrees of
//! freedom of variance `2 * process_sd^2`, and the rounds' own scatter adds `n - 1` more. So a config is
//! never trusted more than the model allows after one round, and a GPU noisier than the model shows itself
//! as soon as there are two rounds. The interval is `mean ± Z * sd / sqrt(n)` (closed form, no resampling:
//! the same rounds always give the same verdict).
//!
//! Like criterion, which reports a change only when it passes both a significance test and a noise
//! threshold, a config counts as regressed only when its whole interval (here the stricter 99% one,
//! [`Z_REGRESSED`]: a false revert throws a good change away) lies above `regression_pct`; it is clear
//! when its whole 95% interval lies at or below it. The aggregate is the geometric mean over configs
//! (`stats.rs` says why) with the configs' variances added; its interval picks the tier: continue
//! (all >= `continue_pct`), lower-priority (all in `gain_pct..continue_pct`), stop (all < `gain_pct`).
//! Anything straddling a threshold is ambiguous and asks for another round, as git-perf's audits refuse to
//! judge below a minimum count of measurements. A later round runs only the configs still open against the
//! regression limit, unless the aggregate straddles a tier: then every config, since the aggregate cannot
//! narrow through configs left at one round. And the configs measured more than once lend their excess
//! scatter to every config's prior (`excess_noise`): where processes land further apart than the model
//! says, a config closed on the model alone opens again. From `ROUNDS_FOR_ORDER` rounds on, a config's
//! change is fitted with the order of the sides as a second term (a crossover design's period effect):
//! on an H200 the side measured second was often 2-7% slower on microsecond configs (in a later session,
//! 1-3% faster), which alternating takes out of the mean of an even count of rounds but not out of their
//! scatter. Where the rounds ran different sets of cases in both orders, and an order term per set fits
//! beyond chance, each set gets its own: the effect changes with what a run holds. A config under 3.2 us
//! is judged on the ratio of its records' means, whose median moves in whole timer ticks of 1-2% of it
//! ([`Rules::Ticked`]). Notes say which revision of these rules decided them ([`Rules`]), and are
//! replayed by it.
//!
//! A config regressed beyond noise reverts from the second
//! round on ([`ROUNDS_TO_REVERT`]): one round cannot tell a real change from a noise model wrong for this
//! GPU, unless it would be beyond noise were the model [`ONE_ROUND_DOUBT`] times too optimistic.
//! When the budget (or [`MAX_ROUNDS`]) allows no further round, [`decide_anyway`] applies the single-run
//! rule's comparisons to the means of the rounds and says that it did.
//!
//! The constants were chosen with `cargo bench --bench verdicts` on rope's grid: with 99% intervals on both
//! sides and at most 8 rounds, two in three null changes ran out of rounds and a 3% regression of one config
//! was caught 98.1% of the time; a 90% interval to clear a config saves a round but leaves the catch rate
//! at 99.1%, too close to the 99% target.
//!
//! References: asv `continuous` (airspeed velocity docs); criterion.rs, "Analysis" (noise threshold and
//! significance level); git-perf `audit` (minimum measurements); Fleming & Wallace, CACM 29(3), 1986
//! (geometric mean).

mod judge;
mod tally;

use std::collections::HashMap;
use std::time::Duration;

use crate::rules::decision::{Decided, Estimate, Thresholds};
use crate::rules::noise;
use crate::rules::records::Measurement;

pub use judge::point_tier;
use judge::{decide_anyway_from, judge};
use tally::Tally;

/// Half-width of the intervals in standard errors (two-sided 95%): a config is clear of the regression
/// limit, and a tier holds, when the whole interval is on one side.
pub const Z: f64 = 1.96;
/// Standard errors by which a config must exceed the regression limit to revert before the last round
/// (two-sided 99%).
pub const Z_REGRESSED: f64 = 2.576;
/// Weight of the noise model in each config's variance, in degrees of freedom.
pub const PRIOR_DOF: f64 = 4.0;
/// Rounds before a regression beyond noise reverts. One round's interval rests on the noise model and
/// the floor `start` measured from two runs, which a GPU noisier than the model, or two lucky baseline
/// runs, make too narrow; the second round's own scatter shows it (a real regression repeats).
pub const ROUNDS_TO_REVERT: usize = 2;
/// How much too narrow one round's interval may be and still revert: a regression that would clear the
/// limit beyond noise were the model this many times too optimistic is not waited on. On an H200, rope's
/// 6 us config differed by 2.7% between two processes of the same code, 5.4 times the model's
/// standard deviation for a pair; a doubled store in rms_norm reads tens of percent.
pub const ONE_ROUND_DOUBT: f64 = 10.0;
/// The most rounds one verdict takes; past it the rule decides on what it has.
pub const MAX_ROUNDS: usize = 16;

/// One run of each side, in the order [`candidate_first`] gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    pub baseline: Vec<Measurement>,
    pub candidate: Vec<Measurement>,
}

/// Whether round `index` (0-based) runs the candidate before the baseline: A B, B A, A B, ...
pub fn candidate_first(index: usize) -> bool {
    index % 2 == 1
}

/// How long a round took: `took` in all, `before_measuring` of it until both sides of every pair were
/// ready (fresh workers' start-ups), and the most cases one side of a pair ran in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundTime {
    pub took: Duration,
    pub before_measuring: Duration,
    pub cases: usize,
}

/// What a round of `cases` cases per side is estimated to take: the wait for its workers, plus `cases`
/// at the most any round took per case (round 1's includes compiling the candidate). Late rounds run
/// only the few configs still open: priced as the longest round (every config), one that fits would be
/// given up. `None` before any round: there is nothing to estimate from, and the first round is the
/// step's own run. The wait is the least a round waited so far where the next round's workers are
/// already ready (`unready` none), else at least `unready`, a worker's whole start-up: on an H100 a
/// round whose stood-by workers were not ready waited 10.7 s where the longest wait before was 4.8 s.
pub fn round_estimate(
    rounds: &[RoundTime],
    cases: usize,
    unready: Option<Duration>,
) -> Option<Duration> {
    let waits = rounds.iter().map(|r| r.before_measuring);
    let waits = match unready {
        None => waits.min()?,
        Some(start_up) => waits.max()?.max(start_up),
    };
    let per_case = rounds
        .iter()
        .map(|r| r.took.saturating_sub(r.before_measuring).as_secs_f64() / r.cases.max(1) as f64)
        .fold(0.0, f64::max);
    Some(waits + Duration::from_secs_f64(per_case * cases as f64))
}

/// Whether a round of `cases` cases per side fits in what is `left` of the budget ([`round_estimate`]).
pub fn another_round_fits(
    rounds: &[RoundTime],
    cases: usize,
    unready: Option<Duration>,
    left: Duration,
) -> bool {
    match round_estimate(rounds, cases, unready) {
        None => true,
        Some(estimate) => !left.is_zero() && estimate <= left,
    }
}

/// What `decide` concludes from the rounds so far.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    Decided(Decided),
    /// An interval straddles a threshold; `ambiguous` says which, `open` names the test cases of the
    /// configs still open, which the next round runs (all of them when only the aggregate is open).
    NeedMoreRounds {
        ambiguous: String,
        estimate: Estimate,
        open: Vec<String>,
    },
}

/// The rounds cannot be compared: empty, or a config of a baseline run missing from some run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoundsError {
    #[error("no paired round was measured")]
    NoRounds,
    #[error("the baseline's run holds no config")]
    NoConfigs,
    #[error("{test} {pass} is missing from round {round}'s {side} run")]
    Missing {
        pass: String,
        test: String,
        round: usize,
        side: &'static str,
    },
    #[error(
        "{test} {pass} has no mean in round {round}'s {side} run, which judges it: its statistic moves \
         in whole timer ticks"
    )]
    NoMean {
        pass: String,
        test: String,
        round: usize,
        side: &'static str,
    },
}

/// The revisions of these rules, as the evidence notes them (`evidence::Ended::rules`): `verify` replays
/// a note by the rules that decided it.
/// Later revisions compare greater: each keeps what the ones before it added.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Rules {
    /// A later round runs the configs open against the regression limit only (every config once none
    /// is and the aggregate straddles a tier); each config's prior is the model's or the floor's.
    First,
    /// Every config while the aggregate straddles a tier, the other configs' excess scatter widens each
    /// prior (`excess_noise`), and from `ROUNDS_FOR_ORDER` rounds the order of the sides is fitted out
    /// of a config's change (`Tally::fit`).
    Pooled,
    /// As pooled, and a config measured in more than one round, all in the same order of the sides,
    /// stays open until a round in the other order (`Tally::one_sided`).
    Balanced,
    /// As balanced, and the order's effect fitted per set of cases the rounds ran where that fits a
    /// config's rounds better beyond chance (`Tally::grouped_fit`).
    Grouped,
    /// As grouped, and a config measured in one order of the sides only has the order's possible
    /// effect ([`noise::ORDER_JITTER_MS`]) in its interval: round 1 alone cannot close a microsecond
    /// config, nor revert it.
    Ordered,
    /// As ordered, and a config whose baseline read under 3.2 us in round 1 ([`noise::in_whole_ticks`])
    /// is judged on the ratio of its records' means: its median moves in whole 32 ns timer ticks, so a
    /// 3% regression of a 1.56 us config reads as one tick, 1.9%, under the 2% limit.
    #[default]
    Ticked,
}

impl Rules {
    /// Its name in the notes.
    pub fn name(self) -> &'static str {
        match self {
            Rules::First => "first",
            Rules::Pooled => "pooled",
            Rules::Balanced => "balanced",
            Rules::Grouped => "grouped",
            Rules::Ordered => "ordered",
            Rules::Ticked => "ticked",
        }
    }

    /// Whether the configs' scatter is pooled and the order fitted out (every revision but the first).
    fn pools(self) -> bool {
        self != Rules::First
    }
}

/// The noise the session measured at `start` (each config's spread between the baseline's runs), which
/// raises a config's prior above the model where this GPU and grid are noisier than the model says, and
/// the revision of the rules that weighs it.
#[derive(Debug, Clone, Default)]
pub struct NoiseFloor {
    /// Per (pass, test): the standard deviation of one run's log latency.
    sd: HashMap<(String, String), f64>,
    rules: Rules,
}

impl NoiseFloor {
    /// From the spread of two runs: E|X - Y| = 2 sd / sqrt(pi) for two independent normal runs.
    pub fn from_spreads(spreads: &[crate::rules::stats::Spread]) -> NoiseFloor {
        let two_over_root_pi = 2.0 / std::f64::consts::PI.sqrt();
        NoiseFloor {
            sd: spreads
                .iter()
                .map(|s| {
                    let key = (s.pass.clone(), s.test.clone());
                    (key, s.spread_pct / 100.0 / two_over_root_pi)
                })
                .collect(),
            rules: Rules::default(),
        }
    }

    /// The same floor, weighed by an earlier revision of the rules (a note's).
    pub fn under(self, rules: Rules) -> NoiseFloor {
        NoiseFloor { rules, ..self }
    }

    /// One run's standard deviation of log latency for a config: the model's, or the measured floor if
    /// larger.
    fn process_sd(&self, pass: &str, test: &str, latency_ms: f64) -> f64 {
        let floor = self
            .sd
            .get(&(pass.to_string(), test.to_string()))
            .copied()
            .unwrap_or(0.0);
        noise::process_sd(latency_ms).max(floor)
    }
}

/// Decides from the rounds so far, or asks for another round. After [`MAX_ROUNDS`] it decides anyway.
///
/// Round 1 counts every config of its baseline run; each later round counts only the configs the rounds
/// before it left open ([`Verdict::NeedMoreRounds`]'s `open`), so a config's estimate rests on its own
/// number of rounds. What else a round measured (another pass of an open case, a process that ran every
/// case) is not counted: the same rounds always give the same verdict, in `step` and in `verify`.
pub fn decide(
    rounds: &[Round],
    limits: &Thresholds,
    floor: &NoiseFloor,
) -> Result<Verdict, RoundsError> {
    let first = rounds.first().ok_or(RoundsError::NoRounds)?;
    if first.baseline.is_empty() {
        return Err(RoundsError::NoConfigs);
    }
    let mut tallies: Vec<Tally> = first
        .baseline
        .iter()
        .map(|config| Tally {
            pass: config.pass.clone(),
            test: config.test.clone(),
            on_record_means: floor.rules >= Rules::Ticked
                && noise::in_whole_ticks(config.value)
                && config.mean.is_some(),
            ratios: Vec::new(),
            bases: Vec::new(),
            orders: Vec::new(),
            shapes: Vec::new(),
        })
        .collect();
    let mut open = vec![true; tallies.len()];
    // the distinct sets of open configs so far: a round's shape is its set's place here
    let mut shapes: Vec<Vec<bool>> = Vec::new();
    let mut verdict = None;
    for (index, round) in rounds.iter().enumerate() {
        let shape = shapes.iter().position(|s| *s == open).unwrap_or_else(|| {
            shapes.push(open.clone());
            shapes.len() - 1
        });
        let (baseline, candidate) = (lookup(&round.baseline), lookup(&round.candidate));
        for tally in tallies
            .iter_mut()
            .zip(&open)
            .filter(|(_, open)| **open)
            .map(|(t, _)| t)
        {
            let key = (tally.pass.as_str(), tally.test.as_str());
            let missing = |side| RoundsError::Missing {
                pass: tally.pass.clone(),
                test: tally.test.clone(),
                round: index + 1,
                side,
            };
            let b = *baseline.get(&key).ok_or_else(|| missing("baseline"))?;
            let c = *candidate.get(&key).ok_or_else(|| missing("candidate"))?;
            let judged = |m: &Measurement, side| match tally.on_record_means {
                false => Ok(m.value),
                true => m.mean.ok_or_else(|| RoundsError::NoMean {
                    pass: tally.pass.clone(),
                    test: tally.test.clone(),
                    round: index + 1,
                    side,
                }),
            };
            tally
                .ratios
                .push(judged(c, "candidate")?.ln() - judged(b, "baseline")?.ln());
            tally.bases.push(b.value.ln());
            tally
                .orders
                .push(if candidate_first(index) { 1.0 } else { -1.0 });
            tally.shapes.push(shape);
        }
        let (judged, still_open) = judge(&tallies, index + 1, limits, floor);
        // a decided prefix leaves nothing open; rounds after it (none in a step) count every config
        open = still_open.unwrap_or_else(|| vec![true; tallies.len()]);
        verdict = Some(judged);
    }
    Ok(verdict.expect("at least one round"))
}

/// The verdict of a step's paired rounds: the first set's; but when a config of it is more than ten times
/// faster than its baseline, the second set's if it confirms the first (`stats::confirm`), with the
/// remark that says so. `second` measures the second set (`step`) or reads it back (`verify`).
pub fn confirmed<E>(
    first: Result<Decided, String>,
    second: impl FnOnce() -> Result<Result<Decided, String>, E>,
) -> Result<(Result<Decided, String>, Option<String>), E> {
    let first = match first {
        Ok(first) if !first.estimate.comparison().suspicious().is_empty() => first,
        decided => return Ok((decided, None)),
    };
    let second = match second()? {
        Ok(second) => second,
        Err(why) => return Ok((Err(why), None)),
    };
    Ok(
        match crate::rules::stats::confirm(
            &first.estimate.comparison(),
            &second.estimate.comparison(),
        ) {
            Ok(remark) => (Ok(second), Some(remark)),
            Err(why) => (Err(why), None),
        },
    )
}

/// Decides on the means of the rounds with the single-run rule's comparisons, for when another round does
/// not fit; `why` (e.g. "the budget has 40 s left, a round takes 150 s") goes into the reason. A verdict
/// `decide` reaches on its own is returned as it is.
pub fn decide_anyway(
    rounds: &[Round],
    limits: &Thresholds,
    floor: &NoiseFloor,
    why: &str,
) -> Result<Decided, RoundsError> {
    match decide(rounds, limits, floor)? {
        Verdict::Decided(d) => Ok(d),
        Verdict::NeedMoreRounds { estimate, .. } => {
            match decide_anyway_from(estimate, limits, why.to_string()) {
                Verdict::Decided(d) => Ok(d),
                Verdict::NeedMoreRounds { .. } => unreachable!("decide_anyway_from always decides"),
            }
        }
    }
}

fn lookup(run: &[Measurement]) -> HashMap<(&str, &str), &Measurement> {
    run.iter()
        .map(|m| ((m.pass.as_str(), m.test.as_str()), m))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rules::decision::{Decision, Status, Tier};

    /// One run of configs `t0`, `t1`, ... (forward) with these latencies.
    pub(crate) fn run(values: &[f64]) -> Vec<Measurement> {
        values
            .iter()
            .enumerate()
            .map(|(i, &value)| Measurement {
                pass: "forward".into(),
                test: format!("t{i}"),
                value,
                mean: None,
            })
            .collect()
    }

    fn round(baseline: &[f64], candidate: &[f64]) -> Round {
        Round {
            baseline: run(baseline),
            candidate: run(candidate),
        }
    }

    fn limits() -> Thresholds {
        Thresholds::default()
    }

    fn decided(rounds: &[Round]) -> Decided {
        match decide(rounds, &limits(), &NoiseFloor::default()).unwrap() {
            Verdict::Decided(d) => d,
            other => panic!("not decided: {other:?}"),
        }
    }

    /// A 1.7 us config regressed by 3%: its medians read 53 timer ticks at the baseline and 54 in the
    /// candidate (+1.89%), every round; its means 1.700 and 1.751 us (+3.00%).
    fn one_tick_rounds(count: usize) -> Vec<Round> {
        let run = |median_ticks: f64, mean_us: f64| {
            vec![Measurement {
                pass: "forward".into(),
                test: "t0".into(),
                value: median_ticks * noise::TIMER_TICK_MS,
                mean: Some(mean_us * 1e-3),
            }]
        };
        (0..count)
            .map(|_| Round {
                baseline: run(53.0, 1.700),
                candidate: run(54.0, 1.751),
            })
            .collect()
    }

    #[test]
    fn a_regression_of_less_than_a_timer_tick_on_the_median_is_judged_on_the_means() {
        let rounds = one_tick_rounds(MAX_ROUNDS);
        let under = |rules| NoiseFloor::default().under(rules);
        // on its medians: one tick, under the 2% limit however often it repeats
        let ordered = decide_anyway(&rounds, &limits(), &under(Rules::Ordered), "-").unwrap();
        assert_eq!(ordered.tier, Tier::Stop, "{}", ordered.reason);
        let config = &ordered.estimate.configs[0];
        assert!(!config.on_record_means);
        assert!((config.change_pct - 1.887).abs() < 0.001, "{config:?}");
        // on its means: 3%, reverted beyond noise, its latencies still the medians
        let Verdict::Decided(ticked) = decide(&rounds, &limits(), &under(Rules::Ticked)).unwrap()
        else {
            panic!("open after {MAX_ROUNDS} rounds")
        };
        assert_eq!((ticked.tier, ticked.undecided), (Tier::Revert, None));
        let config = &ticked.estimate.configs[0];
        assert!(config.on_record_means);
        assert!((config.change_pct - 3.0).abs() < 0.001, "{config:?}");
        assert!((config.baseline_ms - 53.0 * noise::TIMER_TICK_MS).abs() < 1e-12);
        assert!(
            ticked.reason.contains(": +3.00% (+")
                && ticked.reason.contains(", on the records' means)"),
            "{}",
            ticked.reason
        );
    }

    #[test]
    fn a_config_over_3_2_us_or_a_record_without_a_mean_is_judged_on_its_statistic() {
        let at = |value: f64, mean: Option<f64>| {
            let run = |scale: f64| {
                vec![Measurement {
                    pass: "forward".into(),
                    test: "t0".into(),
                    value: value * scale,
                    mean: mean.map(|m| m * scale * scale),
                }]
            };
            let rounds = [Round {
                baseline: run(1.0),
                candidate: run(1.01),
            }];
            let (Verdict::Decided(Decided { estimate, .. })
            | Verdict::NeedMoreRounds { estimate, .. }) =
                decide(&rounds, &limits(), &NoiseFloor::default()).unwrap();
            let config = estimate.configs[0].clone();
            (
                config.on_record_means,
                (config.change_pct * 100.0).round() / 100.0,
            )
        };
        assert_eq!(at(0.00319, Some(0.00319)), (true, 2.01));
        assert_eq!(at(0.00321, Some(0.00321)), (false, 1.0));
        assert_eq!(at(0.0016, None), (false, 1.0));
    }

    #[test]
    fn a_round_without_the_mean_that_judges_a_config_is_an_error() {
        let mut rounds = one_tick_rounds(2);
        rounds[1].candidate[0].mean = None;
        let err = decide(&rounds, &limits(), &NoiseFloor::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t0 forward has no mean in round 2's candidate run, which judges it: its statistic moves in \
             whole timer ticks"
        );
    }

    #[test]
    fn a_verdict_more_than_ten_times_faster_stands_only_when_a_second_set_confirms_it() {
        let anyway = |baseline: f64, candidate: f64| {
            let rounds = [round(&[baseline], &[candidate])];
            decide_anyway(&rounds, &limits(), &NoiseFloor::default(), "test").unwrap()
        };
        let plain = anyway(1.0, 0.9);
        let not_asked = || -> Result<Result<Decided, String>, ()> { panic!("no second set") };
        assert_eq!(
            confirmed(Ok(plain.clone()), not_asked),
            Ok((Ok(plain), None))
        );
        let (fast, again, slower) = (anyway(10.0, 0.5), anyway(10.0, 0.6), anyway(10.0, 9.0));
        let (kept, remark) =
            confirmed(Ok(fast.clone()), || Ok::<_, ()>(Ok(again.clone()))).unwrap();
        assert_eq!(kept, Ok(again));
        assert_eq!(
            remark.as_deref(),
            Some(
                "1 config more than 10x faster than the baseline, confirmed by a second measurement"
            )
        );
        let (refuted, remark) = confirmed(Ok(fast.clone()), || Ok::<_, ()>(Ok(slower))).unwrap();
        assert!(refuted.unwrap_err().contains("but not in a second"));
        assert_eq!(remark, None);
        let crashed = || Ok::<_, ()>(Err("crashed".to_string()));
        assert_eq!(
            confirmed(Ok(fast), crashed),
            Ok((Err("crashed".to_string()), None))
        );
        assert_eq!(
            confirmed(Err("no rounds".into()), not_asked),
            Ok((Err("no rounds".into()), None))
        );
    }

    #[test]
    fn a_round_is_priced_by_its_cases_after_the_start_ups() {
        let secs = Duration::from_secs;
        let time = |took, before_measuring, cases| RoundTime {
            took: secs(took),
            before_measuring: secs(before_measuring),
            cases,
        };
        let none = Some(Duration::ZERO);
        assert!(another_round_fits(&[], 8, none, secs(0)));
        // no time left: no round, however quick they were
        assert!(!another_round_fits(&[time(0, 0, 8)], 1, none, secs(0)));
        // 8 cases in 56 s with no start-up (7 s a case); 7 cases in 54 s after 10 s of start-ups
        let rounds = [time(56, 0, 8), time(54, 10, 7)];
        assert_eq!(round_estimate(&rounds, 1, none), Some(secs(17)));
        assert_eq!(round_estimate(&rounds, 8, none), Some(secs(66)));
        assert!(another_round_fits(&rounds, 1, none, secs(17)));
        assert!(!another_round_fits(&rounds, 1, none, secs(16)));
        // priced as the longest round, the one-case round would not have fit
        assert!(!another_round_fits(&rounds, 8, none, secs(65)));
        // workers not ready yet: at least a whole start-up; ready: the least any round waited
        assert_eq!(round_estimate(&rounds, 1, Some(secs(30))), Some(secs(37)));
        assert_eq!(round_estimate(&rounds, 1, None), Some(secs(7)));
    }

    /// A real step on liger geglu (H100), workers standing by four rounds ahead: rounds 7 to 10 waited
    /// at most 4.8 s, and round 11, whose workers had not finished starting, 10.7 s, past the budget.
    #[test]
    fn a_round_whose_workers_are_not_ready_is_priced_with_a_whole_start_up() {
        let secs = Duration::from_secs;
        let time = |took, before_measuring| RoundTime {
            took: secs(took),
            before_measuring: secs(before_measuring),
            cases: 2,
        };
        let rounds = [time(6, 0), time(10, 5), time(6, 0)];
        assert_eq!(round_estimate(&rounds, 2, Some(secs(13))), Some(secs(19)));
        assert!(!another_round_fits(&rounds, 2, Some(secs(13)), secs(12)));
        assert!(another_round_fits(&rounds, 2, None, secs(12)));
    }

    /// A null step on ops softmax (H100): round 1 measured 5 cases in 7 s with its workers ready; round
    /// 2's new pair then took 13 s to start, which round 1 never waited for. Priced on round 1 alone, the
    /// round fit the 16 s left and the step ran past its budget.
    #[test]
    fn after_round_one_the_next_round_is_priced_with_a_fresh_worker_s_start_up() {
        let secs = Duration::from_secs;
        let round_one = [RoundTime {
            took: secs(7),
            before_measuring: secs(0),
            cases: 5,
        }];
        assert_eq!(
            round_estimate(&round_one, 5, Some(secs(13))),
            Some(secs(20))
        );
        assert!(!another_round_fits(&round_one, 5, Some(secs(13)), secs(16)));
        assert!(another_round_fits(&round_one, 5, None, secs(16)));
    }

    #[test]
    fn rounds_alternate_the_order() {
        let order: Vec<bool> = (0..4).map(candidate_first).collect();
        assert_eq!(order, [false, true, false, true]);
    }

    #[test]
    fn one_round_of_long_kernels_decides_the_tiers() {
        let d = decided(&[round(&[1.0, 4.0], &[0.94, 3.76])]);
        assert_eq!(d.tier, Tier::Continue);
        assert_eq!(d.undecided, None);
        assert_eq!(d.estimate.rounds, 1);
        // one round: the interval is the model's, Z * sqrt(2) * process_sd (0.1447%) around the estimate
        let half = Z * 2f64.sqrt() * noise::process_sd(2.0);
        assert!((half - 0.001_447).abs() < 1e-6);
        let agg = &d.estimate.aggregate;
        assert!((agg.improvement_pct - 6.0).abs() < 1e-9);
        assert!((agg.baseline_ms - 2.0).abs() < 1e-12);
        assert!((agg.candidate_ms - 1.88).abs() < 1e-12);
        assert_eq!(d.reason, "6.00% faster overall (5.90% to 6.10%; >= 5%)");
        let d = decided(&[round(&[1.0, 4.0], &[0.97, 3.88])]);
        assert_eq!(d.tier, Tier::LowerPriority);
        assert_eq!(d.reason, "3.00% faster overall (2.90% to 3.10%; 2-5%)");
        let d = decided(&[round(&[1.0, 4.0], &[1.001, 3.996])]);
        assert_eq!(d.tier, Tier::Stop);
        assert_eq!(d.reason, "0.00% faster overall (-0.10% to 0.10%; < 2%)");
        assert_eq!(d.tier.status_decision(), (Status::Keep, Decision::Stop));
    }

    #[test]
    fn a_regression_beyond_noise_reverts_on_the_second_round() {
        let first = round(&[1.0, 4.0, 2.0], &[1.03, 4.12, 2.06]);
        let Verdict::NeedMoreRounds { ambiguous, .. } = decide(
            std::slice::from_ref(&first),
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap() else {
            panic!("reverted on one round")
        };
        assert_eq!(
            ambiguous,
            "t0 forward: +3.00% (+2.85% to +3.15%), beyond noise in one round, which a second round \
             in fresh processes confirms or not; t1 forward: +3.00% (+2.85% to +3.15%), beyond noise in \
             one round, which a second round in fresh processes confirms or not; t2 forward: +3.00% \
             (+2.85% to +3.15%), beyond noise in one round, which a second round in fresh processes \
             confirms or not"
        );
        let d = decided(&[first.clone(), first]);
        assert_eq!(d.tier, Tier::Revert);
        assert_eq!(
            d.reason,
            // two equal rounds: no scatter, the prior's weight over 2 rounds narrows the interval
            "t1 forward: +3.00% (+2.91% to +3.09%), slower than the 2% limit beyond noise"
        );
        assert_eq!(
            d.tier.status_decision(),
            (Status::Revert, Decision::TryNext)
        );
        let cmp = d.estimate.comparison();
        assert!((cmp.change_pct() - 3.0).abs() < 1e-9);
    }

    #[test]
    fn a_regression_beyond_noise_were_the_model_ten_times_too_narrow_reverts_in_one_round() {
        // t1 (1 ms) 5% slower: its one-round interval (+/- 0.15%) ten times as wide still clears 2%;
        // t0 (6 us) 2.7% slower, as two processes of the same code read rope's config on an H200, does not
        let first = round(&[0.006, 1.0], &[0.006162, 1.05]);
        let d = decided(std::slice::from_ref(&first));
        assert_eq!(d.tier, Tier::Revert);
        assert_eq!(
            d.reason,
            "t1 forward: +5.00% (+4.85% to +5.15%), slower than the 2% limit beyond noise"
        );
        let alone = round(&[0.006], &[0.006162]);
        let Verdict::NeedMoreRounds { ambiguous, .. } =
            decide(&[alone], &limits(), &NoiseFloor::default()).unwrap()
        else {
            panic!("a 6 us config 2.7% slower reverted on one round")
        };
        assert!(ambiguous.starts_with("t0 forward: +2.70% ("), "{ambiguous}");
    }

    #[test]
    fn within_noise_of_a_limit_asks_for_another_round() {
        // a 2 us config 3% slower: one round's interval straddles the 2% limit, by the noise model alone
        // (+/- 2.6%) and with what the order of the sides may add to one order's reading (5%)
        let first = round(&[0.002, 1.0], &[0.00206, 1.0]);
        let Verdict::NeedMoreRounds { ambiguous, .. } = decide(
            std::slice::from_ref(&first),
            &limits(),
            &NoiseFloor::default().under(Rules::Grouped),
        )
        .unwrap() else {
            panic!("decided on one round")
        };
        assert!(
            ambiguous.starts_with("t0 forward: +3.00% (+0.2"),
            "{ambiguous}"
        );
        let Verdict::NeedMoreRounds {
            ambiguous,
            estimate,
            ..
        } = decide(
            std::slice::from_ref(&first),
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap()
        else {
            panic!("decided on one round")
        };
        assert_eq!(estimate.rounds, 1);
        assert!(
            ambiguous.starts_with("t0 forward: +3.00% (-6.97% to +14.04%)"),
            "{ambiguous}"
        );
        assert!(
            ambiguous.ends_with("), within noise of the 2% regression limit"),
            "{ambiguous}"
        );
        let d = decide_anyway(
            &[first],
            &limits(),
            &NoiseFloor::default(),
            "a round takes 150 s, 40 s are left",
        )
        .unwrap();
        assert_eq!(d.tier, Tier::Revert);
        assert_eq!(
            d.undecided.as_deref(),
            Some("a round takes 150 s, 40 s are left")
        );
        assert!(
            d.reason.ends_with(
                "slower than the 2% limit within noise; undecided after 1 round (a round takes 150 s, 40 s are left): decided on the means"
            ),
            "{}",
            d.reason
        );
        // an aggregate on a tier's edge is ambiguous too
        let Verdict::NeedMoreRounds { ambiguous, .. } =
            decide(&[round(&[1.0], &[0.95])], &limits(), &NoiseFloor::default()).unwrap()
        else {
            panic!("decided at the edge")
        };
        assert_eq!(
            ambiguous,
            "the improvement is 5.00% (4.86% to 5.14%) against the 2% and 5% tiers"
        );
    }

    #[test]
    fn a_later_round_counts_only_the_configs_left_open() {
        // t0 (2 us, +3%) is within noise of the limit, t1 (1 ms, unchanged) is clear, t2 (1 ms, +3%)
        // is beyond noise in one round: t0 and t2 are open
        let first = round(&[0.002, 1.0, 1.0], &[0.00206, 1.0, 1.03]);
        let Verdict::NeedMoreRounds { open, estimate, .. } = decide(
            std::slice::from_ref(&first),
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap() else {
            panic!("decided on one round")
        };
        assert_eq!(open, ["t0", "t2"]);
        assert_eq!(
            estimate
                .configs
                .iter()
                .map(|c| c.rounds)
                .collect::<Vec<_>>(),
            [1, 1, 1]
        );
        // round 2 ran t0 and t2 only; a t1 it measured anyway (a process runs every case) is not counted
        let mut second = round(&[0.002, 1.0, 1.0], &[0.00206, 9.0, 1.03]);
        let d = decided(&[first.clone(), second.clone()]);
        assert_eq!(d.tier, Tier::Revert);
        assert!(d.reason.starts_with("t2 forward: +3.00%"), "{}", d.reason);
        let counted: Vec<usize> = d.estimate.configs.iter().map(|c| c.rounds).collect();
        assert_eq!(counted, [2, 1, 2]);
        assert_eq!(d.estimate.rounds, 2);
        assert!((d.estimate.configs[1].change_pct).abs() < 1e-9);
        second.candidate.retain(|m| m.test != "t1");
        second.baseline.retain(|m| m.test != "t1");
        assert_eq!(decided(&[first.clone(), second.clone()]), d);
        // an open config missing from the next round cannot be compared
        second.candidate.retain(|m| m.test != "t2");
        assert_eq!(
            decide(&[first, second], &limits(), &NoiseFloor::default())
                .unwrap_err()
                .to_string(),
            "t2 forward is missing from round 2's candidate run"
        );
        // with every config clear, an aggregate on a tier's edge keeps them all open
        let Verdict::NeedMoreRounds { open, .. } = decide(
            &[round(&[1.0, 2.0], &[0.95, 1.9])],
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap() else {
            panic!("decided at the edge")
        };
        assert_eq!(open, ["t0", "t1"]);
    }

    #[test]
    fn a_config_measured_again_in_the_same_order_only_waits_for_the_other_order() {
        // t0 (1 ms) unchanged in rounds 1 and 3, both with the baseline first (closed in round 1, reopened
        // while the aggregate straddled a tier): its rounds agree, and would agree however much the side
        // measured second is slowed
        let tally = |orders: Vec<f64>| Tally {
            pass: "forward".into(),
            test: "t0".into(),
            on_record_means: false,
            ratios: vec![0.0; orders.len()],
            bases: vec![0.0; orders.len()],
            shapes: vec![0; orders.len()],
            orders,
        };
        let judged = |orders: Vec<f64>, rules| {
            let floor = NoiseFloor::default().under(rules);
            judge(&[tally(orders)], 3, &limits(), &floor).0
        };
        assert!(matches!(
            judged(vec![-1.0, -1.0], Rules::Pooled),
            Verdict::Decided(_)
        ));
        let Verdict::NeedMoreRounds {
            open, ambiguous, ..
        } = judged(vec![-1.0, -1.0], Rules::Balanced)
        else {
            panic!("decided on one order")
        };
        assert_eq!(open, ["t0"]);
        assert!(
            ambiguous.contains("in the same order of the sides only"),
            "{ambiguous}"
        );
        // one round, or both orders: decided as before
        for orders in [vec![-1.0], vec![-1.0, 1.0], vec![-1.0, -1.0, 1.0]] {
            assert!(matches!(
                judged(orders, Rules::Balanced),
                Verdict::Decided(_)
            ));
        }
        // 3% slower in both: beyond noise of the limit, but the order may be all of it; 50% slower is not
        let slower = |ratio: f64, rules| {
            let tally = Tally {
                ratios: vec![ratio; 2],
                ..tally(vec![-1.0, -1.0])
            };
            judge(&[tally], 3, &limits(), &NoiseFloor::default().under(rules)).0
        };
        let reverted =
            |verdict: Verdict| matches!(verdict, Verdict::Decided(d) if d.tier == Tier::Revert);
        assert!(reverted(slower(0.03, Rules::Pooled)));
        assert!(!reverted(slower(0.03, Rules::Balanced)));
        assert!(reverted(slower(0.5, Rules::Balanced)));
    }

    #[test]
    fn a_config_closed_in_round_one_is_measured_again_while_the_aggregate_straddles_a_tier() {
        // t0 3% faster, clear of the limit; t1 (1.5 us) within noise of it; the aggregate on the 2% edge
        let Verdict::NeedMoreRounds { open, estimate, .. } = decide(
            &[round(&[1.0, 0.0015], &[0.97, 0.0015])],
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap() else {
            panic!("decided in round one")
        };
        assert!(estimate.configs[0].high_pct < 0.0);
        assert!(estimate.aggregate.low_pct < 2.0 && estimate.aggregate.high_pct > 2.0);
        assert_eq!(open, ["t0", "t1"]);
    }

    #[test]
    fn scatter_between_rounds_widens_the_interval() {
        let rounds = [
            round(&[1.0], &[0.96]),
            round(&[1.0], &[0.99]),
            round(&[1.0], &[0.96]),
        ];
        let Verdict::NeedMoreRounds { estimate, .. } =
            decide(&rounds, &limits(), &NoiseFloor::default()).unwrap()
        else {
            panic!("decided despite the scatter")
        };
        let d: Vec<f64> = [0.96f64, 0.99, 0.96].iter().map(|x| x.ln()).collect();
        let mean = d.iter().sum::<f64>() / 3.0;
        let scatter: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
        let prior = 2.0 * noise::process_sd(1.0).powi(2);
        let se = ((PRIOR_DOF * prior + scatter) / (PRIOR_DOF + 2.0) / 3.0).sqrt();
        let agg = &estimate.aggregate;
        assert!((agg.improvement_pct - (1.0 - mean.exp()) * 100.0).abs() < 1e-9);
        assert!((agg.low_pct - (1.0 - (mean + Z * se).exp()) * 100.0).abs() < 1e-9);
        assert!((agg.high_pct - (1.0 - (mean - Z * se).exp()) * 100.0).abs() < 1e-9);
        assert!(agg.low_pct < 2.0 && agg.high_pct > 2.0);
        // the same mean without the scatter: a narrower interval
        let steady = mean.exp();
        let steady = [0, 1, 2].map(|_| round(&[1.0], &[steady]));
        let estimate = match decide(&steady, &limits(), &NoiseFloor::default()).unwrap() {
            Verdict::Decided(d) => d.estimate,
            Verdict::NeedMoreRounds { estimate, .. } => estimate,
        };
        let narrower = &estimate.aggregate;
        assert!((narrower.improvement_pct - agg.improvement_pct).abs() < 1e-9);
        assert!(
            narrower.high_pct - narrower.low_pct < agg.high_pct - agg.low_pct,
            "{narrower:?} {agg:?}"
        );
    }

    #[test]
    fn the_last_round_decides_on_the_means() {
        let rounds: Vec<Round> = (0..MAX_ROUNDS).map(|_| round(&[1.0], &[0.95])).collect();
        assert!(matches!(
            decide(&rounds[..MAX_ROUNDS - 1], &limits(), &NoiseFloor::default()).unwrap(),
            Verdict::NeedMoreRounds { .. }
        ));
        let d = decided(&rounds);
        assert_eq!(d.tier, Tier::Continue);
        assert_eq!(
            d.undecided.as_deref(),
            Some("16 rounds, the most the rule takes")
        );
    }

    #[test]
    fn rounds_must_hold_every_config() {
        assert_eq!(
            decide(&[], &limits(), &NoiseFloor::default()),
            Err(RoundsError::NoRounds)
        );
        assert_eq!(
            decide(&[round(&[], &[])], &limits(), &NoiseFloor::default()),
            Err(RoundsError::NoConfigs)
        );
        let err = decide(
            &[round(&[1.0, 2.0], &[1.0, 2.0]), round(&[1.0, 2.0], &[1.0])],
            &limits(),
            &NoiseFloor::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t1 forward is missing from round 2's candidate run"
        );
    }

    /// A config that moved 3% between the baseline's two runs at `start` cannot be called regressed by
    /// a 3% reading in one round, though the model alone (0.05% at 1 ms) would call it so.
    #[test]
    fn a_measured_noise_floor_raises_the_prior() {
        let rounds = [round(&[1.0], &[1.03])];
        let model_only = decide(&rounds, &limits(), &NoiseFloor::default()).unwrap();
        assert!(
            matches!(&model_only, Verdict::NeedMoreRounds { ambiguous, .. } if ambiguous.contains("beyond noise in one round")),
            "{model_only:?}"
        );
        let floor = NoiseFloor::from_spreads(&[crate::rules::stats::Spread {
            pass: "forward".into(),
            test: "t0".into(),
            spread_pct: 3.0,
        }]);
        let with_floor = decide(&rounds, &limits(), &floor).unwrap();
        assert!(
            matches!(&with_floor, Verdict::NeedMoreRounds { ambiguous, .. } if ambiguous.contains("within noise of the 2% regression limit")),
            "{with_floor:?}"
        );
    }
}

/// The paired rounds of rope's null edits in the H200 sessions under `tests/data/rope-paired-h200*/`,
/// replayed.
#[cfg(test)]
mod h200_rounds {
    use super::tally::{Fit, excess_noise};
    use super::*;
    use crate::rules::decision::Tier;
    use crate::rules::records::{self, RecordFormat, Statistic};

    /// A session's folder under `tests/data/`.
    macro_rules! data {
        ($name:literal) => {
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/", $name)
        };
    }

    /// The first paired session of rope's null edits (`evidence/2026-12-04-h200-rope/2026-12-02-mean/`).
    const DATA: &str = data!("rope-paired-h200");
    /// The session with both workers ready before either measured (`evidence/2026-12-04-h200-rope/2026-12-02-mean-ready/`).
    const READY: &str = data!("rope-paired-h200-ready");
    /// The session with a later round's pair started while the round before it measured
    /// (`evidence/2026-12-04-h200-rope/2026-12-03-standby/`).
    const STANDBY: &str = data!("rope-paired-h200-standby");
    /// The session with the roles swapped: null edit 1 the baseline, the upstream code the candidate
    /// (`evidence/2026-12-04-h200-rope/2026-12-03-swap/`).
    const SWAP: &str = data!("rope-paired-h200-swap");
    /// The session with a round's new workers making their GPU contexts one at a time
    /// (`evidence/2026-12-04-h200-rope/2026-12-03-in-turn/`): null edit 1 from the upstream code (`a`), then null
    /// edits 2 and 3 from a session whose baseline is null edit 1 (`b`).
    const IN_TURN: &str = data!("rope-paired-h200-in-turn");
    /// Null edit 2 under the balanced rules, from a session whose baseline is null edit 1
    /// (`evidence/2026-12-04-h200-rope/2026-12-03-order-moves/`).
    const MEAN_2: &str = data!("rope-paired-h200-mean-2");
    /// Null edit 3 under the ordered rules, from a session whose baseline is null edits 1 and 2
    /// (`evidence/2026-12-04-h200-rope/2026-12-04-ordered/`).
    const ORDERED: &str = data!("rope-paired-h200-ordered");
    /// The three null edits on the session's default statistic, the median, under the ticked rules
    /// (`evidence/2026-12-04-h200-rope/2026-12-04-ticked/`): whole records, each file gzip-compressed.
    const TICKED: &str = data!("rope-paired-h200-ticked");

    /// A run's record file: `<name>.xml`, or `<name>.xml.gz` where the set keeps whole records.
    fn record_text(dir: &str, name: &str) -> Option<String> {
        if let Ok(text) = std::fs::read_to_string(format!("{dir}/{name}.xml")) {
            return Some(text);
        }
        let compressed = std::fs::File::open(format!("{dir}/{name}.xml.gz")).ok()?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(compressed), &mut text)
            .unwrap();
        Some(text)
    }

    /// A run's records under the statistic its session took: `--stat mean` for every session but [`TICKED`]'s.
    fn run_in(dir: &str, name: &str) -> Option<Vec<Measurement>> {
        let text = record_text(dir, name)?;
        let cases = RecordFormat::Junit.parse(&text).unwrap();
        let statistic = match dir {
            TICKED => Statistic::Median,
            _ => Statistic::Mean,
        };
        Some(records::measurements(&cases, statistic).unwrap())
    }

    /// A session's floor: the spread of its two baseline runs, under the rules that decided it: the
    /// ticked rules [`TICKED`]'s, the ordered ones [`ORDERED`]'s, the balanced ones the others'.
    fn floor_in(dir: &str) -> NoiseFloor {
        let runs = [
            run_in(dir, "00-benchmark-1").unwrap(),
            run_in(dir, "00-benchmark-2").unwrap(),
        ];
        let rules = match dir {
            TICKED => Rules::Ticked,
            ORDERED => Rules::Ordered,
            _ => Rules::Balanced,
        };
        NoiseFloor::from_spreads(&crate::rules::stats::combine_runs(&runs).unwrap().1).under(rules)
    }

    fn rounds_in(dir: &str, iteration: u32) -> Vec<Round> {
        (1..)
            .map_while(|n| {
                Some(Round {
                    baseline: run_in(dir, &format!("{iteration:02}-round-{n}-baseline"))?,
                    candidate: run_in(dir, &format!("{iteration:02}-round-{n}-candidate"))?,
                })
            })
            .collect()
    }

    /// [`READY`]'s two null steps, replayed round by round by today's rules: after each round the
    /// configs still open are exactly those its next round measured, and after the last one (the budget
    /// spent) both are still open, so the tool decided them on the means.
    #[test]
    fn a_later_sessions_rounds_replay_as_the_tool_ran_them() {
        // each step's rounds, and its change on the means as the step reported it (`change_pct`, %)
        for (iteration, count, change) in [(1, 11, 0.27), (2, 9, -1.32)] {
            let means = decided_on_the_means(READY, iteration, count);
            let improvement = means.estimate.aggregate.improvement_pct;
            assert!((improvement + change).abs() < 0.005, "{improvement}");
        }
    }

    /// [`STANDBY`]'s: the first null step still open after 11 rounds (decided on the means, 0.96% slower),
    /// the second decided by the intervals after 6 rounds: reverted, its `8-128-32-8-128-1.0` 4.64%
    /// slower (2.95% to 6.35%).
    #[test]
    fn a_stand_by_sessions_rounds_replay_as_the_tool_ran_them() {
        let means = decided_on_the_means(STANDBY, 1, 11);
        assert!((means.estimate.aggregate.improvement_pct + 0.964).abs() < 0.005);
        let Verdict::Decided(reverted) = replay(STANDBY, 2, 6) else {
            panic!("the second null step still open after its 6 rounds")
        };
        assert_eq!(reverted.tier, Tier::Revert);
        assert_eq!(reverted.undecided, None);
        let slow = reverted
            .estimate
            .configs
            .iter()
            .find(|c| {
                c.test
                    .ends_with("[cutile-torch.float16-8-128-32-8-128-1.0]")
            })
            .unwrap();
        assert!((slow.change_pct - 4.64).abs() < 0.01, "{slow:?}");
        assert!(slow.low_pct > 2.0, "{slow:?}");
    }

    /// [`SWAP`]'s swapped null: 16 rounds, the most the rule takes, on fewer configs round by round (8 cases,
    /// then 7, 4, 3 and 2), the last still undecided: the rule decides on the means, 0.27% slower, a stop.
    /// Its `8-128-32-8-128-1.0` read the candidate slower in 13 of the 16 rounds (+1.24%, +0.52% to +1.96%).
    #[test]
    fn the_swapped_sessions_rounds_replay_as_the_tool_ran_them() {
        let Verdict::Decided(means) = replay(SWAP, 1, MAX_ROUNDS) else {
            panic!("still open after the most rounds the rule takes")
        };
        assert_eq!(means.tier, Tier::Stop);
        assert_eq!(
            means.undecided.as_deref(),
            Some("16 rounds, the most the rule takes")
        );
        assert!((means.estimate.aggregate.improvement_pct + 0.265).abs() < 0.005);
    }

    /// [`IN_TURN`]'s three nulls, each decided by the intervals (none on the means, none reverted) after 9, 11
    /// and 9 rounds: 0.20% faster, 1.17% faster (0.62% to 1.73%: null edit 2 is faster on two partial
    /// rotary configs, as in [`READY`]) and 0.01% faster, each a stop under the 2% tier.
    #[test]
    fn the_in_turn_sessions_nulls_are_decided_by_the_intervals() {
        for (session, iteration, count, improvement) in [
            ("a", 1, 9, 0.2007),
            ("b", 1, 11, 1.1707),
            ("b", 2, 9, 0.0101),
        ] {
            let Verdict::Decided(decided) =
                replay(&format!("{IN_TURN}/{session}"), iteration, count)
            else {
                panic!("{session} {iteration} still open after its {count} rounds")
            };
            assert_eq!(decided.tier, Tier::Stop);
            assert_eq!(decided.undecided, None);
            let found = decided.estimate.aggregate.improvement_pct;
            assert!(
                (found - improvement).abs() < 0.005,
                "{session} {iteration}: {found}"
            );
        }
    }

    /// [`MEAN_2`]'s null edit 2: 16 rounds by the balanced rules, the last 7 on `8-1-32-8-128-1.0` alone,
    /// whose side measured first read about 6% slower in each of them, so its scatter kept it open and
    /// the rule decided on the means (1.09% faster). Fitting the order per set of cases the rounds ran
    /// decides it by the intervals after 13: 1.12% faster (0.57% to 1.66%), a stop.
    #[test]
    fn an_order_effect_that_moves_with_the_cases_run_is_decided_by_the_intervals() {
        let means = replay(MEAN_2, 1, MAX_ROUNDS);
        let Verdict::Decided(means) = means else {
            panic!("still open after the most rounds the rule takes")
        };
        assert_eq!(
            means.undecided.as_deref(),
            Some("16 rounds, the most the rule takes")
        );
        assert!((means.estimate.aggregate.improvement_pct - 1.09).abs() < 0.005);
        let grouped = floor_in(MEAN_2).under(Rules::Grouped);
        let rounds = rounds_in(MEAN_2, 1);
        let decide_after =
            |count: usize| decide(&rounds[..count], &Thresholds::default(), &grouped);
        assert!(matches!(
            decide_after(12).unwrap(),
            Verdict::NeedMoreRounds { .. }
        ));
        let Verdict::Decided(decided) = decide_after(13).unwrap() else {
            panic!("open after 13 rounds")
        };
        assert_eq!((decided.tier, decided.undecided), (Tier::Stop, None));
        let aggregate = &decided.estimate.aggregate;
        assert!(
            (aggregate.improvement_pct - 1.12).abs() < 0.005,
            "{aggregate:?}"
        );
        assert!(
            aggregate.low_pct > 0.5 && aggregate.high_pct < 1.7,
            "{aggregate:?}"
        );
    }

    /// [`ORDERED`]'s null edit 3 on the H200: round 1 closes none of rope's microsecond configs, whose one
    /// order of the sides could have moved them by 5-7%, so round 2 runs all 8; each later round runs
    /// what the rounds before left open, and after 9 the edit is kept: 0.25% faster (-0.31% to 0.81%).
    #[test]
    fn one_order_closes_no_microsecond_config_and_a_null_edit_is_kept_by_the_intervals() {
        let rounds = rounds_in(ORDERED, 1);
        assert_eq!(rounds[1].baseline.len(), rounds[0].baseline.len());
        let Verdict::Decided(kept) = replay(ORDERED, 1, 9) else {
            panic!("still open after its 9 rounds")
        };
        assert_eq!((kept.tier, kept.undecided), (Tier::Stop, None));
        let aggregate = &kept.estimate.aggregate;
        assert!(
            (aggregate.improvement_pct - 0.25).abs() < 0.005
                && (aggregate.low_pct + 0.31).abs() < 0.005
                && (aggregate.high_pct - 0.81).abs() < 0.005,
            "{aggregate:?}"
        );
        // the grouped rules would have closed a config after round 1
        let grouped = floor_in(ORDERED).under(Rules::Grouped);
        let Verdict::NeedMoreRounds { open, .. } =
            decide(&rounds[..1], &Thresholds::default(), &grouped).unwrap()
        else {
            panic!("decided after round 1")
        };
        assert!(open.len() < rounds[0].baseline.len(), "{open:?}");
    }

    /// [`TICKED`]'s three null edits on medians: rope's four configs under 3.2 us judged on the records'
    /// means, each edit kept by the intervals after 13, 11 and 14 rounds, none reverted: 0.15% faster
    /// (-0.39% to +0.69%), 1.26% faster (0.67% to 1.85%: null edit 2's partial-rotary configs 3-5%
    /// faster, as in [`READY`] and [`IN_TURN`]) and 0.19% slower (-0.65% to +0.28%).
    #[test]
    fn null_edits_on_medians_are_kept_by_the_intervals_with_microsecond_configs_on_their_means() {
        for (iteration, count, improvement) in [(1, 13, 0.151), (2, 11, 1.263), (3, 14, -0.185)] {
            let Verdict::Decided(kept) = replay(TICKED, iteration, count) else {
                panic!("{iteration} still open after its {count} rounds")
            };
            assert_eq!((kept.tier, kept.undecided), (Tier::Stop, None));
            let found = kept.estimate.aggregate.improvement_pct;
            assert!((found - improvement).abs() < 0.001, "{iteration}: {found}");
            let on_means = kept.estimate.configs.iter().filter(|c| c.on_record_means);
            assert!(
                on_means.clone().all(|c| c.baseline_ms < 0.0032) && on_means.count() == 4,
                "{iteration}"
            );
        }
    }

    /// A step's `count` rounds replayed one by one: after each but the last, the rules leave open
    /// exactly the configs the next round measured. The verdict after the last.
    fn replay(dir: &str, iteration: u32, count: usize) -> Verdict {
        let floor = floor_in(dir);
        let rounds = rounds_in(dir, iteration);
        assert_eq!(rounds.len(), count);
        for measured in 1..count {
            let verdict = decide(&rounds[..measured], &Thresholds::default(), &floor).unwrap();
            let Verdict::NeedMoreRounds { mut open, .. } = verdict else {
                panic!("iteration {iteration} decided after {measured} rounds: {verdict:?}")
            };
            let mut ran: Vec<String> = rounds[measured]
                .baseline
                .iter()
                .map(|m| m.test.clone())
                .collect();
            open.sort();
            ran.sort();
            assert_eq!(open, ran, "iteration {iteration}, after round {measured}");
        }
        decide(&rounds, &Thresholds::default(), &floor).unwrap()
    }

    /// A step whose last round left it open, as the tool then decided it: on the means.
    fn decided_on_the_means(dir: &str, iteration: u32, count: usize) -> Decided {
        let verdict = replay(dir, iteration, count);
        assert!(
            matches!(verdict, Verdict::NeedMoreRounds { .. }),
            "{verdict:?}"
        );
        let rounds = rounds_in(dir, iteration);
        let means = decide_anyway(
            &rounds,
            &Thresholds::default(),
            &floor_in(dir),
            "the budget",
        )
        .unwrap();
        assert!(means.undecided.is_some(), "{means:?}");
        means
    }

    /// The second null edit (two terms of a sum swapped): round 1 put rope's 1.5-2 us configs 4-6.5%
    /// faster in the candidate, clear of the regression limit, and the rule then measured only the two
    /// configs still open; seven rounds later it kept the edit as a 3.24% gain (2.11% to 4.34%) from the
    /// others' single round. The aggregate straddling the 2% tier keeps every config in the rounds.
    #[test]
    fn a_null_edits_aggregate_straddling_a_tier_keeps_every_config_measured() {
        let rounds = rounds_in(DATA, 2);
        assert_eq!(rounds.len(), 9);
        match decide(&rounds[..1], &Thresholds::default(), &floor_in(DATA)).unwrap() {
            Verdict::NeedMoreRounds { open, estimate, .. } => {
                let agg = &estimate.aggregate;
                assert!(agg.low_pct < 2.0 && agg.high_pct > 2.0, "{agg:?}");
                assert_eq!(open.len(), 8, "{open:?}");
            }
            decided => panic!("decided after one round: {decided:?}"),
        }
    }

    /// The first null edit: round 2's scatter (processes 2-6% apart on microsecond configs, where the
    /// model and the floor allow 0.4-1.3%) reopens the configs round 1 closed on their priors.
    #[test]
    fn the_scatter_of_the_configs_measured_twice_widens_those_measured_once() {
        let rounds = rounds_in(DATA, 1);
        let floor = floor_in(DATA);
        let first = decide(&rounds[..1], &Thresholds::default(), &floor).unwrap();
        let Verdict::NeedMoreRounds { open, .. } = first else {
            panic!("decided after one round: {first:?}")
        };
        assert_eq!(open.len(), 6);
        let tallies = tallies_of(&rounds[..2]);
        // the two configs round 1 closed, from the six round 2 measured
        let fitted: Vec<(Fit, f64)> = tallies.iter().map(|t| t.fitted(&floor)).collect();
        let once: Vec<f64> = excess_noise(&fitted)
            .into_iter()
            .zip(&tallies)
            .filter(|(_, tally)| tally.ratios.len() == 1)
            .map(|(factor, _)| factor)
            .collect();
        assert_eq!(once.len(), 2);
        assert!(once.iter().all(|&factor| factor > 4.0), "{once:?}");
    }

    /// The first null edit's 15 rounds of `8-128-32-8-128-0.5` (4.6 us): the side measured second was
    /// about 2% slower in each, which the order's fit takes out of the scatter.
    #[test]
    fn the_h200s_order_effect_leaves_a_fraction_of_the_scatter() {
        let tallies = tallies_of(&rounds_in(DATA, 1));
        let tally = tallies
            .iter()
            .find(|t| {
                t.test
                    .ends_with("[cutile-torch.float16-8-128-32-8-128-0.5]")
            })
            .unwrap();
        assert_eq!(tally.ratios.len(), 15);
        let sd = |fit: Fit| (fit.residual / fit.dof).sqrt();
        let (plain, fitted) = (sd(tally.fit(Rules::First)), sd(tally.fit(Rules::Pooled)));
        assert!(plain > 0.02 && fitted < 0.01, "{plain} {fitted}");
    }

    /// Each config's tally over `rounds`: the rounds that measured it.
    fn tallies_of(rounds: &[Round]) -> Vec<Tally> {
        rounds[0]
            .baseline
            .iter()
            .map(|config| {
                let value = |run: &[Measurement]| {
                    run.iter()
                        .find(|m| m.pass == config.pass && m.test == config.test)
                        .map(|m| m.value)
                };
                let pairs: Vec<(f64, f64, f64)> = rounds
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        let order = if candidate_first(i) { 1.0 } else { -1.0 };
                        Some((value(&r.baseline)?, value(&r.candidate)?, order))
                    })
                    .collect();
                Tally {
                    pass: config.pass.clone(),
                    test: config.test.clone(),
                    on_record_means: false,
                    ratios: pairs.iter().map(|(b, c, _)| c.ln() - b.ln()).collect(),
                    bases: pairs.iter().map(|(b, _, _)| b.ln()).collect(),
                    shapes: vec![0; pairs.len()],
                    orders: pairs.iter().map(|(_, _, order)| *order).collect(),
                }
            })
            .collect()
    }
}
