//! How much a per-config benchmark statistic moves between runs of unchanged code on one GPU: the prior
//! the paired verdicts (`verdict/`) start from, and the noise the verdict simulation (`benches/verdicts.rs`)
//! draws.
//!
//! Fitted by `tools/fit_noise.py` (a test checks the constants against it) on H200 runs of unchanged
//! code that the repository holds (`tests/data/`, `tests/data/h200-sessions/*/junit/`): three processes each of
//! TileGym's rms_norm, silu_and_mul and rope perf tests, three runs each of the rms_norm and matmul
//! examples' baselines, and seven null steps of rope (62 configs, 1.5 us to 7.7 ms, 172 degrees of freedom). The standard deviation of
//! ln(median) between processes is modelled as `sqrt(PROCESS_FLOOR^2 + (PROCESS_JITTER_MS / latency)^2)`:
//! a relative floor (clocks, placement) plus an absolute jitter of about 20 ns that dominates microsecond
//! kernels (their medians also move in whole ticks of the 32 ns GPU timer). The model gives 1.3% at 1.5 us,
//! 0.43% at 4.6 us and 0.05% from 0.1 ms up; observed: up to 1.5% at 2 us, 0.03% median above 0.1 ms.
//!
//! The in-run rel_std of the records is fitted too but not used by the verdicts: the median's in-run
//! standard error (about 1.25 * rel_std / sqrt(nrep)) is 0.26% for rope's 2 us config while whole
//! processes differ by 1-1.5%, so only repeated processes measure the noise that matters.

/// Relative spread between processes that remains for long kernels.
pub const PROCESS_FLOOR: f64 = 5.22e-4;
/// Absolute spread between processes (ms), which dominates short kernels.
pub const PROCESS_JITTER_MS: f64 = 1.98e-5;
/// How much later (or sooner) the side measured second in a paired round may read (ms), about
/// whatever the config: on an H200 rope's 1.7-6 us configs read 2-7% slower on the second side
/// (`evidence/2026-12-04-h200-rope/2026-12-02-mean/`), 1-3% faster on the 1.5-2 us ones with both workers ready
/// first (`evidence/2026-12-04-h200-rope/2026-12-02-mean-ready/`), and one 2 us config 6% slower on the first side
/// (`evidence/2026-12-04-h200-rope/2026-12-03-order-moves/`). Taken as the standard deviation of a config's order
/// effect, which alternating the sides cancels and one order alone cannot show.
pub const ORDER_JITTER_MS: f64 = 1.0e-4;
/// Resolution of the GPU timer behind the records (ms): medians of microsecond kernels are multiples of it.
pub const TIMER_TICK_MS: f64 = 3.2e-5;
/// The share of a latency from which one timer tick counts ([`in_whole_ticks`]): 3.2 us and under.
pub const TICK_SHARE: f64 = 0.01;

/// Whether a median (or min) of this latency moves in timer ticks of [`TICK_SHARE`] of it or more: a
/// change smaller than one tick moves it by a whole tick or not at all.
pub fn in_whole_ticks(latency_ms: f64) -> bool {
    TIMER_TICK_MS / latency_ms >= TICK_SHARE
}
/// In-run rel_std (percent) is about `IN_RUN_COEF * latency_ms.powf(-IN_RUN_EXPONENT)`.
pub const IN_RUN_COEF: f64 = 0.21;
pub const IN_RUN_EXPONENT: f64 = 0.52;

/// Standard deviation of ln(statistic) between two processes running the same code, for a config of
/// this latency.
pub fn process_sd(latency_ms: f64) -> f64 {
    PROCESS_FLOOR.hypot(PROCESS_JITTER_MS / latency_ms)
}

/// Typical in-run relative standard deviation (percent) of a config of this latency.
pub fn in_run_rel_std_pct(latency_ms: f64) -> f64 {
    IN_RUN_COEF * latency_ms.powf(-IN_RUN_EXPONENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn constants_are_the_fit_of_the_repository_data() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/fit_noise.py");
        let out = std::process::Command::new("python3")
            .arg(script)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fitted: HashMap<&str, f64> = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.split_once(" = "))
            .map(|(name, value)| (name, value.parse().unwrap()))
            .collect();
        assert_eq!(fitted["PROCESS_FLOOR"], PROCESS_FLOOR);
        assert_eq!(fitted["PROCESS_JITTER_MS"], PROCESS_JITTER_MS);
        assert_eq!(fitted["IN_RUN_COEF"], IN_RUN_COEF);
        assert_eq!(fitted["IN_RUN_EXPONENT"], IN_RUN_EXPONENT);
    }

    #[test]
    fn spread_falls_with_latency_to_the_floor() {
        assert!((process_sd(0.0015) - 0.013_21).abs() < 1e-4);
        assert!((process_sd(0.0046) - 0.004_34).abs() < 1e-4);
        assert!((process_sd(1.0) - PROCESS_FLOOR).abs() < 1e-6);
        assert!((in_run_rel_std_pct(0.002) - 5.3).abs() < 0.2);
        assert!((in_run_rel_std_pct(4.4) - 0.097).abs() < 0.01);
    }
}
