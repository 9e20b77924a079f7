//! A config's rounds tallied and fitted: its paired log ratios, the order of the sides in each round and
//! the set of cases the round ran, fitted to a change with the order's effect taken out where the rounds
//! allow it. Kept apart from the judging because the fit is the statistics of one config, which the
//! verdict reads only through its change, residual and degrees of freedom.

use super::{NoiseFloor, PRIOR_DOF, Rules};

/// One config's paired log ratios, baseline log latencies, orders (1 candidate first, -1 baseline
/// first) and shapes (which set of open configs the round ran), one per round that counted it; the
/// ratios of the records' means where `on_record_means`, the baseline's latencies always the session's
/// statistic.
pub(super) struct Tally {
    pub(super) pass: String,
    pub(super) test: String,
    pub(super) on_record_means: bool,
    pub(super) ratios: Vec<f64>,
    pub(super) bases: Vec<f64>,
    pub(super) orders: Vec<f64>,
    pub(super) shapes: Vec<usize>,
}

/// A config's change fitted over its rounds: the log ratio, the mean baseline log latency, the residual
/// sum of squares with its degrees of freedom, and the share of one round's variance in the change's.
pub(super) struct Fit {
    pub(super) change: f64,
    pub(super) base: f64,
    pub(super) residual: f64,
    pub(super) dof: f64,
    pub(super) share: f64,
}

/// Rounds from which a config's change is fitted with the order of its sides taken out (two rounds'
/// residual freedom): fewer would leave nothing to measure the noise by.
const ROUNDS_FOR_ORDER: usize = 4;

/// The F test's level at which the order's effect is fitted per shape of round: the extra terms fit
/// noise this well by chance once in ten thousand configs, so they seldom narrow an interval on noise.
const GROUPED_P: f64 = 1e-4;

impl Tally {
    /// The mean log ratio over the rounds; under the pooled rules, from [`ROUNDS_FOR_ORDER`] rounds in
    /// both orders on, less the order's effect (a least-squares line in the order): on an H200 the side
    /// measured second was often 2-7% slower on rope's microsecond configs, or in a later session 1-3%
    /// faster, which the alternation takes out of the mean but not out of the scatter
    /// (`tests/data/rope-paired-h200/`, `tests/data/rope-paired-h200-ready/`).
    pub(super) fn fit(&self, rules: Rules) -> Fit {
        let n = self.ratios.len() as f64;
        let mean = self.ratios.iter().sum::<f64>() / n;
        let base = self.bases.iter().sum::<f64>() / n;
        let plain = Fit {
            change: mean,
            base,
            residual: self.ratios.iter().map(|d| (d - mean).powi(2)).sum(),
            dof: n - 1.0,
            share: 1.0 / n,
        };
        let order_mean = self.orders.iter().sum::<f64>() / n;
        let spread: f64 = self.orders.iter().map(|s| (s - order_mean).powi(2)).sum();
        if rules == Rules::First || self.ratios.len() < ROUNDS_FOR_ORDER || spread == 0.0 {
            return plain;
        }
        let order = self
            .orders
            .iter()
            .zip(&self.ratios)
            .map(|(s, d)| (s - order_mean) * (d - mean))
            .sum::<f64>()
            / spread;
        let change = mean - order * order_mean;
        let one_order = Fit {
            change,
            base,
            residual: self
                .orders
                .iter()
                .zip(&self.ratios)
                .map(|(s, d)| (d - change - order * s).powi(2))
                .sum(),
            dof: n - 2.0,
            share: 1.0 / n + order_mean.powi(2) / spread,
        };
        match rules {
            Rules::Grouped | Rules::Ordered | Rules::Ticked => {
                self.grouped_fit(&one_order).unwrap_or(one_order)
            }
            Rules::First | Rules::Pooled | Rules::Balanced => one_order,
        }
    }

    /// The change with the order's effect fitted per shape of round (each shape measured in both orders
    /// its own term, the other rounds one between them), where that beats one effect for every round by
    /// an F test at [`GROUPED_P`]. The order's effect changes with the cases a run holds: on an H200 the
    /// null edit 2 of `evidence/2026-12-04-h200-rope/2026-12-03-order-moves/` read rope's `8-1-32-8-128-1.0` about 6% slower on the side measured first
    /// in each of its seven one-case rounds, within 1.5% either way in the nine rounds of 3-8 cases
    /// before them (`tests/data/rope-paired-h200-mean-2/`); one term for all sixteen left a residual of
    /// 2.8%, per-shape terms 0.8%.
    fn grouped_fit(&self, one_order: &Fit) -> Option<Fit> {
        let n = self.ratios.len();
        let both_orders = |shape: usize| {
            let mut signs = (self.orders.iter().zip(&self.shapes))
                .filter(|(_, s)| **s == shape)
                .map(|(o, _)| *o > 0.0);
            signs
                .next()
                .is_some_and(|first| signs.any(|other| other != first))
        };
        // each round's order term: its shape's own where that shape ran in both orders, else a shared one
        let round_terms: Vec<Option<usize>> = (self.shapes.iter())
            .map(|s| both_orders(*s).then_some(*s))
            .collect();
        let mut terms: Vec<Option<usize>> = Vec::new();
        for term in &round_terms {
            if !terms.contains(term) {
                terms.push(*term);
            }
        }
        if terms.len() < 2 {
            return None;
        }
        let mut columns = vec![vec![1.0; n]];
        columns.extend(terms.iter().map(|term| {
            (self.orders.iter().zip(&round_terms))
                .map(|(o, t)| if t == term { *o } else { 0.0 })
                .collect()
        }));
        let dof = (n - columns.len()) as f64;
        if dof < 2.0 {
            return None;
        }
        let fit = crate::rules::stats::least_squares(&columns, &self.ratios)?;
        let extra = (columns.len() - 2) as f64;
        let f = (one_order.residual - fit.residual) / extra / (fit.residual / dof);
        (crate::rules::stats::f_exceedance(f, extra, dof) < GROUPED_P).then(|| Fit {
            change: fit.coefficients[0],
            base: one_order.base,
            residual: fit.residual,
            dof,
            share: fit.first_variance,
        })
    }

    /// Measured in more than one round, every one in the same order of the sides (a config closed after
    /// round 1 and reopened after an even number of rounds): its mean carries the order's whole effect,
    /// which its rounds' scatter cannot show, so it needs a round in the other order.
    pub(super) fn one_sided(&self) -> bool {
        self.orders.len() >= 2 && self.in_one_order()
    }

    /// Every round that counted it had the sides in the same order (round 1 alone, for one).
    pub(super) fn in_one_order(&self) -> bool {
        self.orders.iter().all(|&s| s == self.orders[0])
    }

    /// Its fit under `floor`'s rules, and the variance of one round's log ratio that the noise model and
    /// the session's floor expect.
    pub(super) fn fitted(&self, floor: &NoiseFloor) -> (Fit, f64) {
        let fit = self.fit(floor.rules);
        let prior = 2.0
            * floor
                .process_sd(&self.pass, &self.test, fit.base.exp())
                .powi(2);
        (fit, prior)
    }
}

/// How much noisier than their priors the other configs measured more than once were, pooled over them
/// (at least 1): for each config, a factor on its prior variance. A config closed after one round rests
/// on its prior alone; where the others' rounds show this GPU noisier than the model and the floor say (on
/// an H200, processes of rope's microsecond configs landed 2-7% apart, `tests/data/rope-paired-h200/`), its
/// interval widens with theirs and it is measured again. A config's own scatter is left out of its factor
/// (it counts once, in its own variance), and the model counts as [`PRIOR_DOF`] degrees of freedom here
/// too, so a few rounds' scatter moves it only as far as they weigh.
pub(super) fn excess_noise(fitted: &[(Fit, f64)]) -> Vec<f64> {
    let own: Vec<(f64, f64)> = fitted
        .iter()
        .map(|(fit, prior)| (fit.residual / prior, fit.dof))
        .collect();
    let (relative, dof) = own
        .iter()
        .fold((0.0, 0.0), |(r, d), (own_r, own_d)| (r + own_r, d + own_d));
    own.iter()
        .map(|(own_r, own_d)| ((PRIOR_DOF + relative - own_r) / (PRIOR_DOF + dof - own_d)).max(1.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::verdict::candidate_first;

    /// A tally of one config over rounds that alternate the order from round 1 (baseline first), each
    /// round's ratio `change` plus `order` when the candidate runs second.
    fn alternating(rounds: usize, change: f64, order: f64) -> Tally {
        let orders: Vec<f64> = (0..rounds)
            .map(|i| if candidate_first(i) { 1.0 } else { -1.0 })
            .collect();
        Tally {
            pass: "forward".into(),
            test: "t0".into(),
            on_record_means: false,
            ratios: orders.iter().map(|s| change - order * s).collect(),
            bases: vec![0.0; rounds],
            shapes: vec![0; rounds],
            orders,
        }
    }

    #[test]
    fn an_order_effect_that_changes_with_the_cases_a_round_ran_is_fitted_per_set_of_cases() {
        // nine rounds of every case (shape 0), then seven of this config alone (shape 1), a little noise
        let noise = [
            0.002, -0.001, 0.003, -0.002, 0.0, 0.001, -0.003, 0.002, -0.001, 0.001, -0.002, 0.003,
            -0.001, 0.0, 0.002, -0.002,
        ];
        let change = -0.01;
        let tally = |order_in_shape: [f64; 2]| {
            let mut tally = alternating(noise.len(), 0.0, 0.0);
            tally.shapes = (0..noise.len()).map(|i| usize::from(i >= 9)).collect();
            tally.ratios = (tally.orders.iter().zip(&tally.shapes).zip(noise))
                .map(|((o, s), e)| change - order_in_shape[*s] * o + e)
                .collect();
            tally
        };
        // none in the nine, 6% in the seven: one term for both leaves the seven's effect in the scatter
        let moving = tally([0.0, 0.06]);
        let (one, grouped) = (moving.fit(Rules::Balanced), moving.fit(Rules::Grouped));
        assert!(one.residual > 0.01, "{}", one.residual);
        assert!(grouped.residual < 1e-4, "{}", grouped.residual);
        assert!(
            (grouped.change - change).abs() < 0.002,
            "{}",
            grouped.change
        );
        assert_eq!(grouped.dof, 13.0);
        // the same 3% in both: the extra term fits noise only, and one term stays
        let steady = tally([0.03, 0.03]);
        let (one, grouped) = (steady.fit(Rules::Balanced), steady.fit(Rules::Grouped));
        assert_eq!((grouped.change, grouped.dof), (one.change, one.dof));
    }

    #[test]
    fn the_order_of_the_sides_is_taken_out_of_a_configs_change_from_four_rounds_on() {
        let (change, order) = (-0.03, 0.04);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let fit = alternating(4, change, order).fit(Rules::Pooled);
        assert!(close(fit.change, change) && close(fit.residual, 0.0));
        assert_eq!((fit.dof, fit.share), (2.0, 0.25));
        // an odd count: the plain mean would carry a fifth of the order's effect
        let fit = alternating(5, change, order).fit(Rules::Pooled);
        assert!(close(fit.change, change) && close(fit.residual, 0.0));
        assert!(close(fit.share, 0.2 + 0.04 / 4.8) && fit.dof == 3.0);
        // three rounds leave too little to fit it by, and the first rules never did
        let fit = alternating(3, change, order).fit(Rules::Pooled);
        assert!(close(fit.change, change + order / 3.0) && fit.dof == 2.0);
        let fit = alternating(4, change, order).fit(Rules::First);
        assert!(close(fit.change, change) && close(fit.residual, 4.0 * order * order));
        assert_eq!((fit.dof, fit.share), (3.0, 0.25));
    }
}
