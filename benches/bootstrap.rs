//! What the test harness's Python bootstrap costs once its environment exists (a warm cache): the check
//! that `python3` lacks pytest plus the check that the demo's environment has it, paid once per test
//! binary. Prints the median of 9 runs, each in a fresh process (the harness computes it once per process).

use std::process::Command;
use std::time::Instant;

fn main() {
    if std::env::args().any(|arg| arg == "--bootstrap-once") {
        let started = Instant::now();
        let path = &*git_cutile_perf::testkit::SEARCH_PATH;
        println!("{} {}", started.elapsed().as_secs_f64(), path.len());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let once = || -> f64 {
        let out = Command::new(&exe).arg("--bootstrap-once").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_whitespace().next().unwrap().parse().unwrap()
    };
    once(); // makes the environment if it is not there yet: the cold cache is not what is measured
    let mut runs: Vec<f64> = (0..9).map(|_| once()).collect();
    runs.sort_by(f64::total_cmp);
    println!(
        "test-harness Python bootstrap, warm cache: median {:.3} s (min {:.3}, max {:.3}) over {} processes",
        runs[4],
        runs[0],
        runs[8],
        runs.len()
    );
}
