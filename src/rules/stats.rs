//! Aggregating per-config latencies and comparing a run with its baseline.
//!
//! Configs are summarized by their geometric mean: it is the only mean whose ranking of two runs does not
//! depend on which run is taken as the reference (Fleming & Wallace, "How not to lie with statistics: the
//! correct way to summarize benchmark results", CACM 29(3), 1986). Each config is also compared on its
//! own, so a gain on large shapes cannot hide a regression on small ones.

use std::collections::HashMap;

use crate::rules::records::Measurement;
use crate::rules::units::counted;

/// exp(mean(ln x)); `None` for an empty slice or a non-positive value.
pub fn geometric_mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut count = 0usize;
    let mut log_sum = 0.0;
    for value in values {
        if !(value > 0.0 && value.is_finite()) {
            return None;
        }
        log_sum += value.ln();
        count += 1;
    }
    (count > 0).then(|| (log_sum / count as f64).exp())
}

/// Relative change in percent; negative is faster.
pub fn change_pct(baseline: f64, value: f64) -> f64 {
    (value - baseline) / baseline * 100.0
}

/// One config of a run set beside its baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfigChange {
    pub pass: String,
    pub test: String,
    pub baseline_ms: f64,
    pub value_ms: f64,
    pub change_pct: f64,
    /// The paired rounds that measured it (a config left open runs more of them); none for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
    /// Whether paired rounds judged its change on the records' means (its statistic moves in whole
    /// timer ticks, `verdict::Rules::Ticked`); none for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_record_means: Option<bool>,
}

/// A run compared with the baseline, config by config.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub configs: Vec<ConfigChange>,
    pub baseline_ms: f64,
    pub latency_ms: f64,
}

impl Comparison {
    pub fn change_pct(&self) -> f64 {
        change_pct(self.baseline_ms, self.latency_ms)
    }

    /// The config that slowed down the most, if any did.
    pub fn worst(&self) -> Option<&ConfigChange> {
        worst(&self.configs)
    }
}

/// Of `configs`, the one that slowed down the most, if any did.
pub fn worst(configs: &[ConfigChange]) -> Option<&ConfigChange> {
    configs
        .iter()
        .filter(|c| c.change_pct > 0.0)
        .max_by(|a, b| a.change_pct.total_cmp(&b.change_pct))
}

/// Compares `current` with `baseline` over the baseline's configs. A config of the baseline that the run
/// lacks is returned as an error (its pass and test): comparing fewer configs would flatter the run.
pub fn compare(
    baseline: &[Measurement],
    current: &[Measurement],
) -> Result<Comparison, (String, String)> {
    let by_key: HashMap<(&str, &str), f64> = current
        .iter()
        .map(|m| ((m.pass.as_str(), m.test.as_str()), m.value))
        .collect();
    let mut configs = Vec::with_capacity(baseline.len());
    for base in baseline {
        let Some(&value) = by_key.get(&(base.pass.as_str(), base.test.as_str())) else {
            return Err((base.pass.clone(), base.test.clone()));
        };
        configs.push(ConfigChange {
            pass: base.pass.clone(),
            test: base.test.clone(),
            baseline_ms: base.value,
            value_ms: value,
            change_pct: change_pct(base.value, value),
            rounds: None,
            on_record_means: None,
        });
    }
    let baseline_ms = geometric_mean(configs.iter().map(|c| c.baseline_ms)).unwrap_or(f64::NAN);
    let latency_ms = geometric_mean(configs.iter().map(|c| c.value_ms)).unwrap_or(f64::NAN);
    Ok(Comparison {
        configs,
        baseline_ms,
        latency_ms,
    })
}

/// A config this many times faster than its baseline is measured again before it is believed: no single
/// optimization of a tuned kernel does that, but a broken timer or a skipped launch does.
pub const SUSPICIOUS_SPEEDUP: f64 = 10.0;

impl Comparison {
    /// The configs more than [`SUSPICIOUS_SPEEDUP`] times faster than their baseline.
    pub fn suspicious(&self) -> Vec<&ConfigChange> {
        self.configs
            .iter()
            .filter(|c| c.value_ms * SUSPICIOUS_SPEEDUP < c.baseline_ms)
            .collect()
    }
}

/// What a second measurement says about a first one with suspicious gains: `Ok` with a remark for the
/// reason when every suspicious config is that fast again, `Err` with a crash reason when one is not.
pub fn confirm(first: &Comparison, second: &Comparison) -> Result<String, String> {
    let again: Vec<_> = second
        .suspicious()
        .iter()
        .map(|c| (&c.pass, &c.test))
        .collect();
    let first_suspicious = first.suspicious();
    for config in &first_suspicious {
        if !again.contains(&(&config.pass, &config.test)) {
            return Err(format!(
                "{} {} was {:.1}x faster than its baseline in one measurement but not in a second: \
                 the measurement cannot be trusted",
                config.test,
                config.pass,
                config.baseline_ms / config.value_ms
            ));
        }
    }
    Ok(format!(
        "{} more than {SUSPICIOUS_SPEEDUP}x faster than the baseline, confirmed by a second measurement",
        counted(first_suspicious.len() as u64, "config")
    ))
}

/// How far a config moved between runs of the same code: the range of its runs as a percentage of their
/// geometric mean (for two runs, |ln(a/b)| in percent to first order).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Spread {
    pub pass: String,
    pub test: String,
    pub spread_pct: f64,
}

/// Each config's geometric mean over `runs` (the first run's configs, in its order) and its spread; a
/// config missing from a later run is returned as an error (its pass and test).
pub fn combine_runs(
    runs: &[Vec<Measurement>],
) -> Result<(Vec<Measurement>, Vec<Spread>), (String, String)> {
    let Some(first) = runs.first() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let lookups: Vec<HashMap<(&str, &str), f64>> = runs
        .iter()
        .map(|run| {
            run.iter()
                .map(|m| ((m.pass.as_str(), m.test.as_str()), m.value))
                .collect()
        })
        .collect();
    let mut combined = Vec::with_capacity(first.len());
    let mut spreads = Vec::with_capacity(first.len());
    for config in first {
        let key = (config.pass.as_str(), config.test.as_str());
        let values = lookups
            .iter()
            .map(|l| l.get(&key).copied())
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| (config.pass.clone(), config.test.clone()))?;
        // equal runs keep their exact value (exp(ln x) need not give x back)
        let mean = if values.iter().all(|v| *v == values[0]) {
            values[0]
        } else {
            geometric_mean(values.iter().copied()).unwrap_or(f64::NAN)
        };
        let (low, high) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        combined.push(Measurement {
            pass: config.pass.clone(),
            test: config.test.clone(),
            value: mean,
            mean: None,
        });
        spreads.push(Spread {
            pass: config.pass.clone(),
            test: config.test.clone(),
            spread_pct: (high - low) / mean * 100.0,
        });
    }
    Ok((combined, spreads))
}

/// A least-squares fit of `y` on columns of regressors: the coefficients, the residual sum of squares
/// and the first coefficient's variance per unit of residual variance (`(X'X)^-1` at (0, 0)).
#[derive(Debug, Clone, PartialEq)]
pub struct LeastSquares {
    pub coefficients: Vec<f64>,
    pub residual: f64,
    pub first_variance: f64,
}

/// Fits `y` on `columns` (each as long as `y`) by the normal equations; `None` when the columns are
/// linearly dependent. Meant for a handful of columns: Gauss-Jordan with partial pivoting.
pub fn least_squares(columns: &[Vec<f64>], y: &[f64]) -> Option<LeastSquares> {
    let k = columns.len();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    // [X'X | X'y | e_0]: one elimination gives the coefficients and the first column of the inverse
    let mut rows: Vec<Vec<f64>> = (0..k)
        .map(|i| {
            let mut row: Vec<f64> = columns.iter().map(|c| dot(&columns[i], c)).collect();
            row.push(dot(&columns[i], y));
            row.push(if i == 0 { 1.0 } else { 0.0 });
            row
        })
        .collect();
    let scale = rows
        .iter()
        .map(|r| r[..k].iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .fold(0.0, f64::max);
    for i in 0..k {
        let pivot = (i..k).max_by(|&a, &b| rows[a][i].abs().total_cmp(&rows[b][i].abs()))?;
        if rows[pivot][i].abs() <= 1e-12 * scale {
            return None;
        }
        rows.swap(i, pivot);
        let lead = rows[i].clone();
        for (r, row) in rows.iter_mut().enumerate() {
            if r != i {
                let factor = row[i] / lead[i];
                row.iter_mut()
                    .zip(&lead)
                    .for_each(|(v, l)| *v -= factor * l);
            }
        }
    }
    let coefficients: Vec<f64> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| row[k] / row[i])
        .collect();
    let residual = y
        .iter()
        .enumerate()
        .map(|(n, v)| {
            (v - columns
                .iter()
                .zip(&coefficients)
                .map(|(c, b)| b * c[n])
                .sum::<f64>())
            .powi(2)
        })
        .sum();
    Some(LeastSquares {
        first_variance: rows[0][k + 1] / rows[0][0],
        coefficients,
        residual,
    })
}

/// The chance that an F-distributed statistic with `(q, dof)` degrees of freedom exceeds `f`: the
/// p-value of a nested model's `q` extra terms, `F = (RSS_small - RSS_large) / q / (RSS_large / dof)`.
pub fn f_exceedance(f: f64, q: f64, dof: f64) -> f64 {
    if f <= 0.0 {
        return 1.0;
    }
    regularized_beta(dof / (dof + q * f), dof / 2.0, q / 2.0)
}

/// I_x(a, b) by its continued fraction (modified Lentz), on the side where it converges fast.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let clamp = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        for step in [even, odd] {
            d = 1.0 / clamp(1.0 + step * d);
            c = clamp(1.0 + step / c);
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |s, (i, g)| s + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pass: &str, test: &str, value: f64) -> Measurement {
        Measurement {
            pass: pass.into(),
            test: test.into(),
            value,
            mean: None,
        }
    }

    #[test]
    fn geometric_mean_exact() {
        assert_eq!(geometric_mean([2.0, 8.0]), Some(4.0));
        assert!((geometric_mean([1.0, 10.0, 100.0]).unwrap() - 10.0).abs() < 1e-12);
        assert_eq!(geometric_mean([]), None);
        assert_eq!(geometric_mean([1.0, 0.0]), None);
        assert_eq!(geometric_mean([1.0, f64::NAN]), None);
    }

    #[test]
    fn compare_per_config_and_aggregate() {
        let base = [m("forward", "a", 1.0), m("forward", "b", 4.0)];
        let now = [
            m("forward", "b", 2.0),
            m("forward", "a", 1.0),
            m("backward", "a", 9.0),
        ];
        let cmp = compare(&base, &now).unwrap();
        assert_eq!(cmp.baseline_ms, 2.0);
        assert!((cmp.latency_ms - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(cmp.configs[1].change_pct, -50.0);
        assert_eq!(cmp.worst(), None);
        assert!((cmp.change_pct() - (2f64.sqrt() / 2.0 - 1.0) * 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_tenfold_gain_must_hold_in_a_second_run() {
        let base = [m("forward", "a", 1.0), m("forward", "b", 1.0)];
        let first = compare(&base, &[m("forward", "a", 0.05), m("forward", "b", 0.2)]).unwrap();
        assert_eq!(first.suspicious().len(), 1);
        assert_eq!(first.suspicious()[0].test, "a");
        let holds = compare(&base, &[m("forward", "a", 0.06), m("forward", "b", 0.2)]).unwrap();
        assert_eq!(
            confirm(&first, &holds),
            Ok("1 config more than 10x faster than the baseline, confirmed by a second measurement".into())
        );
        let vanished = compare(&base, &[m("forward", "a", 0.5), m("forward", "b", 0.2)]).unwrap();
        assert_eq!(
            confirm(&first, &vanished),
            Err("a forward was 20.0x faster than its baseline in one measurement but not in a second: the measurement cannot be trusted".into())
        );
        let tenfold = compare(&base, &[m("forward", "a", 0.1), m("forward", "b", 1.0)]).unwrap();
        assert!(tenfold.suspicious().is_empty());
    }

    #[test]
    fn worst_and_missing() {
        let base = [m("forward", "a", 1.0), m("forward", "b", 1.0)];
        let cmp = compare(&base, &[m("forward", "a", 1.03), m("forward", "b", 1.01)]).unwrap();
        assert_eq!(cmp.worst().unwrap().test, "a");
        assert_eq!(
            compare(&base, &[m("forward", "a", 1.0)]),
            Err(("forward".into(), "b".into()))
        );
    }

    #[test]
    fn runs_combine_into_geometric_means_with_their_spread() {
        let runs = vec![
            vec![m("forward", "a", 1.0), m("forward", "b", 2.0)],
            vec![m("forward", "b", 2.0), m("forward", "a", 4.0)],
        ];
        let (combined, spreads) = combine_runs(&runs).unwrap();
        assert_eq!(combined, [m("forward", "a", 2.0), m("forward", "b", 2.0)]);
        assert_eq!(spreads[0].spread_pct, 150.0);
        assert_eq!(spreads[1].spread_pct, 0.0);
        let missing = combine_runs(&[runs[0].clone(), vec![m("forward", "a", 1.0)]]);
        assert_eq!(
            missing.unwrap_err(),
            ("forward".to_string(), "b".to_string())
        );
    }

    #[test]
    fn a_line_through_points_fits_exactly_and_dependent_columns_are_refused() {
        let x = vec![1.0, 2.0, 3.0, 4.0];
        let y: Vec<f64> = x.iter().map(|v| 2.0 - 0.5 * v).collect();
        let fit = least_squares(&[vec![1.0; 4], x.clone()], &y).unwrap();
        assert!(
            (fit.coefficients[0] - 2.0).abs() < 1e-12 && (fit.coefficients[1] + 0.5).abs() < 1e-12
        );
        assert!(fit.residual < 1e-20);
        // the intercept's variance per unit of noise: sum(x^2) / (n sum(x^2) - sum(x)^2) = 30 / 20
        assert!(
            (fit.first_variance - 1.5).abs() < 1e-12,
            "{}",
            fit.first_variance
        );
        let doubled: Vec<f64> = x.iter().map(|v| 2.0 * v).collect();
        assert_eq!(least_squares(&[x, doubled], &y), None);
    }

    #[test]
    fn the_f_distributions_tail_matches_its_tables() {
        // 1% critical values: F(1, 5) 16.258, F(3, 11) 6.217, F(2, 20) 5.849; 5%: F(4, 10) 3.478
        for (f, q, dof, p) in [
            (16.258, 1.0, 5.0, 0.01),
            (6.217, 3.0, 11.0, 0.01),
            (5.849, 2.0, 20.0, 0.01),
            (3.478, 4.0, 10.0, 0.05),
        ] {
            let found = f_exceedance(f, q, dof);
            assert!((found - p).abs() < 2e-5, "F({q}, {dof}) > {f}: {found}");
        }
        assert_eq!(f_exceedance(0.0, 1.0, 5.0), 1.0);
        assert!(f_exceedance(1e6, 1.0, 5.0) < 1e-6);
    }
}
