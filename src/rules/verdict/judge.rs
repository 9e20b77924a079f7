//! The verdict after a number of rounds: the configs' and the aggregate's intervals against the
//! thresholds, which configs stay open, and the reasons a decision gives. Kept apart from the rounds'
//! bookkeeping in `mod.rs` because it reads only the tallies and the noise floor, and is the one place
//! the tiers are decided.

use std::fmt::Write as _;

use super::tally::{Fit, Tally, excess_noise};
use super::{
    MAX_ROUNDS, NoiseFloor, ONE_ROUND_DOUBT, PRIOR_DOF, ROUNDS_TO_REVERT, Rules, Verdict, Z,
    Z_REGRESSED,
};
use crate::rules::decision::{
    Aggregate, ConfigEstimate, Decided, Estimate, Thresholds, Tier, fmt_pct,
};
use crate::rules::noise;
use crate::rules::stats::geometric_mean;

/// The verdict after `rounds` rounds, and which configs stay open (`None` when decided).
pub(super) fn judge(
    tallies: &[Tally],
    rounds: usize,
    limits: &Thresholds,
    floor: &NoiseFloor,
) -> (Verdict, Option<Vec<bool>>) {
    let (estimate, changes) = estimate(tallies, rounds, floor);
    let bounds = Bounds::new(limits);
    // the config whose lower bound lies furthest above the limit names the revert
    let lowest_bound = |i: usize| changes[i].0 - Z_REGRESSED * changes[i].1;
    let regressed: Vec<usize> = (0..changes.len())
        .filter(|&i| lowest_bound(i) > bounds.regression)
        .collect();
    // rounds in one order only say no more about the change than a single round does
    let one_sided = |i: usize| floor.rules >= Rules::Balanced && tallies[i].one_sided();
    if let Some(&i) = regressed
        .iter()
        .filter(|&&i| {
            (tallies[i].ratios.len() >= ROUNDS_TO_REVERT && !one_sided(i))
                || changes[i].0 - Z_REGRESSED * ONE_ROUND_DOUBT * changes[i].1 > bounds.regression
        })
        .max_by(|&&a, &&b| lowest_bound(a).total_cmp(&lowest_bound(b)))
    {
        let reason = regressed_reason(&estimate.configs[i], limits, "beyond noise");
        return (decided(Tier::Revert, reason, None, estimate), None);
    }
    let mut ambiguous = String::new();
    // a config stays open until its 99% interval clears the limit: one closed on a lucky 95% interval
    // would never be measured again, and a real regression in it would go unseen
    let mut open: Vec<bool> = changes
        .iter()
        .map(|&(mean, se)| mean + Z_REGRESSED * se > bounds.regression)
        .collect();
    for (i, &(mean, se)) in changes.iter().enumerate() {
        if one_sided(i) {
            open[i] = true;
        }
        let why = if one_sided(i) {
            "measured again in the same order of the sides only, whose effect its scatter cannot show"
                .to_string()
        } else if regressed.contains(&i) {
            "beyond noise in one round, which a second round in fresh processes confirms or not"
                .to_string()
        } else if mean + Z * se > bounds.regression {
            format!(
                "within noise of the {}% regression limit",
                fmt_pct(limits.regression_pct)
            )
        } else {
            continue;
        };
        let _ = write!(
            ambiguous,
            "{}{}, {why}",
            if ambiguous.is_empty() { "" } else { "; " },
            estimate.configs[i].summary(),
        );
    }
    let agg = &estimate.aggregate;
    let agg_tier = interval_tier(agg.low_pct, agg.high_pct, limits);
    if agg_tier.is_none() && (floor.rules.pools() || ambiguous.is_empty()) {
        // the aggregate needs every config: one measured only in round 1 would otherwise weigh in it
        // unmeasured while the open ones narrow it (an H200 null edit of rope was kept as a 3% gain so)
        open = vec![true; changes.len()];
    }
    let tier = if ambiguous.is_empty() { agg_tier } else { None };
    match tier {
        Some(tier) => {
            let reason = gain_reason(tier, agg, limits);
            (decided(tier, reason, None, estimate), None)
        }
        None if rounds >= MAX_ROUNDS => (
            decide_anyway_from(
                estimate,
                limits,
                format!("{MAX_ROUNDS} rounds, the most the rule takes"),
            ),
            None,
        ),
        None => {
            if ambiguous.is_empty() {
                ambiguous = format!(
                    "the improvement is {:.2}% ({:.2}% to {:.2}%) against the {}% and {}% tiers",
                    agg.improvement_pct,
                    agg.low_pct,
                    agg.high_pct,
                    fmt_pct(limits.gain_pct),
                    fmt_pct(limits.continue_pct)
                );
            }
            let open_cases = open_cases(tallies, &open);
            (
                Verdict::NeedMoreRounds {
                    ambiguous,
                    estimate,
                    open: open_cases,
                },
                Some(open),
            )
        }
    }
}

/// The test cases (each once, in the rounds' order) of the open configs: what the next round runs.
fn open_cases(tallies: &[Tally], open: &[bool]) -> Vec<String> {
    let mut cases: Vec<String> = Vec::new();
    for (tally, _) in tallies.iter().zip(open).filter(|(_, open)| **open) {
        if !cases.contains(&tally.test) {
            cases.push(tally.test.clone());
        }
    }
    cases
}

pub(super) fn decide_anyway_from(estimate: Estimate, limits: &Thresholds, why: String) -> Verdict {
    let worst = estimate
        .configs
        .iter()
        .filter(|c| c.change_pct > limits.regression_pct)
        .max_by(|a, b| a.change_pct.total_cmp(&b.change_pct));
    let (tier, reason) = match worst {
        Some(c) => (Tier::Revert, regressed_reason(c, limits, "within noise")),
        None => {
            let agg = &estimate.aggregate;
            let tier = point_tier(agg.improvement_pct, limits);
            (tier, gain_reason(tier, agg, limits))
        }
    };
    let reason = format!(
        "{reason}; undecided after {} round{} ({why}): decided on the means",
        estimate.rounds,
        if estimate.rounds == 1 { "" } else { "s" }
    );
    decided(tier, reason, Some(why), estimate)
}

fn decided(tier: Tier, reason: String, undecided: Option<String>, estimate: Estimate) -> Verdict {
    Verdict::Decided(Decided {
        tier,
        reason,
        undecided,
        estimate,
    })
}

/// The thresholds on the log scale of the paired ratios.
struct Bounds {
    regression: f64,
}

impl Bounds {
    fn new(limits: &Thresholds) -> Bounds {
        Bounds {
            regression: (1.0 + limits.regression_pct / 100.0).ln(),
        }
    }
}

/// The tier whose range holds the whole improvement interval, if one does.
fn interval_tier(low: f64, high: f64, limits: &Thresholds) -> Option<Tier> {
    let (a, b) = (point_tier(low, limits), point_tier(high, limits));
    // at exactly a threshold the point rule already takes the higher tier
    (a == b).then_some(a)
}

/// The tier the means alone give an improvement (in percent), without an interval: what deciding on the
/// means applies, and the single-run rule the tool had before paired rounds (`benches/verdicts.rs`).
pub fn point_tier(improvement_pct: f64, limits: &Thresholds) -> Tier {
    if improvement_pct >= limits.continue_pct {
        Tier::Continue
    } else if improvement_pct >= limits.gain_pct {
        Tier::LowerPriority
    } else {
        Tier::Stop
    }
}

fn regressed_reason(c: &ConfigEstimate, limits: &Thresholds, noise: &str) -> String {
    format!(
        "{}, slower than the {}% limit {noise}",
        c.summary(),
        fmt_pct(limits.regression_pct)
    )
}

fn gain_reason(tier: Tier, agg: &Aggregate, limits: &Thresholds) -> String {
    let range = match tier {
        Tier::Continue => format!(">= {}%", fmt_pct(limits.continue_pct)),
        Tier::LowerPriority => format!(
            "{}-{}%",
            fmt_pct(limits.gain_pct),
            fmt_pct(limits.continue_pct)
        ),
        Tier::Stop | Tier::Revert => format!("< {}%", fmt_pct(limits.gain_pct)),
    };
    format!(
        "{:.2}% faster overall ({:.2}% to {:.2}%; {range})",
        agg.improvement_pct, agg.low_pct, agg.high_pct
    )
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// The estimates after `rounds` rounds, and each config's (mean, standard error) of its log ratio over
/// the rounds that counted it.
fn estimate(tallies: &[Tally], rounds: usize, floor: &NoiseFloor) -> (Estimate, Vec<(f64, f64)>) {
    let mut configs = Vec::with_capacity(tallies.len());
    let mut changes = Vec::with_capacity(tallies.len());
    let (mut agg_log, mut agg_var, mut agg_base) = (0.0, 0.0, 0.0);
    let fitted: Vec<(Fit, f64)> = tallies.iter().map(|t| t.fitted(floor)).collect();
    let excess = match floor.rules.pools() {
        true => excess_noise(&fitted),
        false => vec![1.0; tallies.len()],
    };
    for ((tally, (fit, prior)), excess) in tallies.iter().zip(fitted).zip(excess) {
        let Fit {
            change: mean,
            base,
            residual,
            dof,
            share,
        } = fit;
        let prior = excess * prior;
        let mut se = ((PRIOR_DOF * prior + residual) / (PRIOR_DOF + dof) * share).sqrt();
        if floor.rules >= Rules::Ordered && tally.in_one_order() {
            se = se.hypot(noise::ORDER_JITTER_MS / base.exp());
        }
        configs.push(ConfigEstimate {
            pass: tally.pass.clone(),
            test: tally.test.clone(),
            rounds: tally.ratios.len(),
            on_record_means: tally.on_record_means,
            baseline_ms: base.exp(),
            candidate_ms: (base + mean).exp(),
            change_pct: pct(mean),
            low_pct: pct(mean - Z * se),
            high_pct: pct(mean + Z * se),
        });
        changes.push((mean, se));
        agg_log += mean;
        agg_var += se * se;
        agg_base += base;
    }
    let m = configs.len() as f64;
    let (agg_log, agg_se) = (agg_log / m, agg_var.sqrt() / m);
    let baseline_ms = (agg_base / m).exp();
    let aggregate = Aggregate {
        baseline_ms,
        candidate_ms: geometric_mean(configs.iter().map(|c| c.candidate_ms)).unwrap_or(f64::NAN),
        improvement_pct: -pct(agg_log),
        // faster is positive, so the interval's ends swap
        low_pct: -pct(agg_log + Z * agg_se),
        high_pct: -pct(agg_log - Z * agg_se),
    };
    let estimate = Estimate {
        rounds,
        configs,
        aggregate,
    };
    (estimate, changes)
}
