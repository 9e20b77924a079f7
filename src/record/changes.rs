//! What each iteration changed, config by config, against the baseline it was measured against: from
//! the paired estimate in its evidence when there is one (with intervals), else from the trailers (the
//! iteration's configs against the last kept iteration's). The plot and the report both draw from it.

use std::collections::BTreeMap;

use crate::record::session::Iteration;
use crate::rules::decision::Estimate;
use crate::rules::decision::Status;
use crate::rules::stats::{self, change_pct};

/// An interval of a change in percent (positive is slower).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Interval {
    pub low_pct: f64,
    pub high_pct: f64,
}

/// One config's change in one iteration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfigOutcome {
    pub pass: String,
    pub test: String,
    pub baseline_ms: f64,
    pub value_ms: f64,
    /// Positive is slower.
    pub change_pct: f64,
    /// From the paired rounds; none for a single run.
    pub interval: Option<Interval>,
}

/// One iteration's changes: every config's, and the overall one's interval when rounds gave it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Changes {
    pub configs: Vec<ConfigOutcome>,
    /// The geometric mean's change (positive is slower) and its interval, from paired rounds.
    pub overall: Option<(f64, Interval)>,
}

impl Changes {
    /// The config that slowed down the most, if any did.
    pub fn worst(&self) -> Option<&ConfigOutcome> {
        self.configs
            .iter()
            .filter(|c| c.change_pct > 0.0)
            .max_by(|a, b| a.change_pct.total_cmp(&b.change_pct))
    }

    /// The configs, regressions first: the largest slowdown on top, ties in the recorded order.
    pub fn worst_first(&self) -> Vec<&ConfigOutcome> {
        let mut sorted: Vec<&ConfigOutcome> = self.configs.iter().collect();
        sorted.sort_by(|a, b| b.change_pct.total_cmp(&a.change_pct));
        sorted
    }

    fn of_estimate(estimate: &Estimate) -> Changes {
        let aggregate = &estimate.aggregate;
        Changes {
            configs: estimate
                .configs
                .iter()
                .map(|c| ConfigOutcome {
                    pass: c.pass.clone(),
                    test: c.test.clone(),
                    baseline_ms: c.baseline_ms,
                    value_ms: c.candidate_ms,
                    change_pct: c.change_pct,
                    interval: Some(Interval {
                        low_pct: c.low_pct,
                        high_pct: c.high_pct,
                    }),
                })
                .collect(),
            // the aggregate counts an improvement (positive is faster); here positive is slower
            overall: Some((
                -aggregate.improvement_pct,
                Interval {
                    low_pct: -aggregate.high_pct,
                    high_pct: -aggregate.low_pct,
                },
            )),
        }
    }

    fn of_trailers(baseline: &Iteration, it: &Iteration) -> Changes {
        let configs = match stats::compare(&baseline.configs, &it.configs) {
            Ok(comparison) => comparison.configs,
            // a config missing from the attempt: compare what both have
            Err(_) => baseline
                .configs
                .iter()
                .filter_map(|b| {
                    let now = it
                        .configs
                        .iter()
                        .find(|m| m.pass == b.pass && m.test == b.test)?;
                    Some(stats::ConfigChange {
                        pass: b.pass.clone(),
                        test: b.test.clone(),
                        baseline_ms: b.value,
                        value_ms: now.value,
                        change_pct: change_pct(b.value, now.value),
                        rounds: None,
                        on_record_means: None,
                    })
                })
                .collect(),
        };
        Changes {
            configs: configs
                .into_iter()
                .map(|c| ConfigOutcome {
                    pass: c.pass,
                    test: c.test,
                    baseline_ms: c.baseline_ms,
                    value_ms: c.value_ms,
                    change_pct: c.change_pct,
                    interval: None,
                })
                .collect(),
            overall: None,
        }
    }
}

/// Each iteration's changes, in the order of `iterations` (oldest first; the baseline's are empty).
/// `estimates` holds the paired estimates the evidence gave, by iteration number.
pub fn of_session(iterations: &[Iteration], estimates: &BTreeMap<u32, Estimate>) -> Vec<Changes> {
    let mut baseline: Option<&Iteration> = None;
    iterations
        .iter()
        .map(|it| {
            let changes = match (estimates.get(&it.number), baseline) {
                (Some(estimate), _) => Changes::of_estimate(estimate),
                (None, Some(baseline)) => Changes::of_trailers(baseline, it),
                (None, None) => Changes::default(),
            };
            if it.status == Status::Keep {
                baseline = Some(it);
            }
            changes
        })
        .collect()
}

/// `value` moved from `change_pct` to `bound_pct` of the same baseline: where an interval's end lies
/// on the scale the value is drawn on.
pub fn rescale(value: f64, change_pct: f64, bound_pct: f64) -> f64 {
    value * (1.0 + bound_pct / 100.0) / (1.0 + change_pct / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::Decision;
    use crate::rules::decision::{Aggregate, ConfigEstimate};
    use crate::rules::verdict::tests::run;

    fn with_configs(mut it: Iteration, values: &[f64]) -> Iteration {
        it.configs = run(values);
        it
    }

    #[test]
    fn trailers_compare_with_the_last_kept_iteration() {
        let session = [
            with_configs(
                iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                &[1.0, 2.0],
            ),
            with_configs(
                iteration(1, Status::Keep, Some(-10.0), Decision::Continue),
                &[0.8, 2.0],
            ),
            with_configs(
                iteration(2, Status::Revert, Some(-5.0), Decision::TryNext),
                &[0.88, 1.0],
            ),
        ];
        let changes = of_session(&session, &BTreeMap::new());
        assert!(changes[0].configs.is_empty());
        let pcts = |c: &Changes| -> Vec<String> {
            c.configs
                .iter()
                .map(|c| format!("{:+.1}", c.change_pct))
                .collect()
        };
        assert_eq!(pcts(&changes[1]), ["-20.0", "+0.0"]);
        // against iteration 1, the last kept one, not iteration 0
        assert_eq!(pcts(&changes[2]), ["+10.0", "-50.0"]);
        assert_eq!(changes[2].worst().map(|c| c.test.as_str()), Some("t0"));
        let order: Vec<&str> = changes[2]
            .worst_first()
            .iter()
            .map(|c| c.test.as_str())
            .collect();
        assert_eq!(order, ["t0", "t1"]);
        assert_eq!(changes[2].overall, None);
    }

    #[test]
    fn an_estimate_gives_intervals_with_slower_positive() {
        let session = [
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            iteration(1, Status::Revert, Some(3.0), Decision::TryNext),
        ];
        let estimate = Estimate {
            rounds: 2,
            configs: vec![ConfigEstimate {
                pass: "forward".into(),
                test: "t0".into(),
                rounds: 2,
                on_record_means: false,
                baseline_ms: 1.0,
                candidate_ms: 1.03,
                change_pct: 3.0,
                low_pct: 2.5,
                high_pct: 3.5,
            }],
            aggregate: Aggregate {
                baseline_ms: 1.0,
                candidate_ms: 1.03,
                improvement_pct: -3.0,
                low_pct: -3.6,
                high_pct: -2.4,
            },
        };
        let changes = of_session(&session, &BTreeMap::from([(1, estimate)]));
        let interval = |low_pct, high_pct| Interval { low_pct, high_pct };
        assert_eq!(changes[1].configs[0].interval, Some(interval(2.5, 3.5)));
        assert_eq!(changes[1].overall, Some((3.0, interval(2.4, 3.6))));
    }

    #[test]
    fn rescales_an_interval_end() {
        assert!((rescale(1.1, 10.0, 20.0) - 1.2).abs() < 1e-12);
    }
}
