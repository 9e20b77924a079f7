//! The fixture's noise knob: `CUTILE_PERF_FIXTURE_NOISE` makes two runs of the same code differ, per config,
//! by about the given relative spread; unset, every run reads the kernel file's constants.

use crate::support;

use git_cutile_perf::rules::records::{self, Statistic};
use support::{Fixture, TEST};

/// The configs' medians of one perf run of the fixture, with `noise` in the environment if given.
fn perf_run(f: &Fixture, noise: Option<&str>) -> Vec<f64> {
    let junit = f.root.join("sandbox-noise.xml");
    let mut cmd = f.program("python3", &f.root);
    cmd.args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        TEST,
        "-k",
        "test_perf",
    ])
    .arg(format!("--junitxml={}", junit.display()))
    .env("PYTHONDONTWRITEBYTECODE", "1");
    if let Some(noise) = noise {
        cmd.env("CUTILE_PERF_FIXTURE_NOISE", noise);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", support::both(&out));
    let cases = records::RecordFormat::Junit
        .parse(&std::fs::read_to_string(&junit).unwrap())
        .unwrap();
    let values = records::measurements(&cases, Statistic::Median).unwrap();
    values.iter().map(|m| m.value).collect()
}

#[test]
fn noise_varies_per_run_and_config_and_is_off_by_default() {
    let f = Fixture::new();
    // the kernel file's latencies: small 0.1 ms, large 1.0 ms
    assert_eq!(perf_run(&f, None), [0.1, 1.0]);
    assert_eq!(perf_run(&f, Some("0")), [0.1, 1.0]);
    let runs: Vec<Vec<f64>> = (0..2).map(|_| perf_run(&f, Some("0.01"))).collect();
    assert_ne!(runs[0], runs[1]);
    for run in &runs {
        let ratios = [run[0] / 0.1, run[1] / 1.0];
        assert_ne!(ratios[0], ratios[1], "one draw per config");
        // 1% noise: beyond 6 standard deviations is a broken knob, not bad luck
        assert!(ratios.iter().all(|r| (r.ln()).abs() < 0.06), "{ratios:?}");
    }
}
