//! How long `step` takes to stop on Ctrl-C while its benchmark hangs: from the interrupt until the tool has
//! exited, the tests' process tree ended and the work tree put back as it was. Tests check that it stops
//! and what it leaves; this prints how soon. The median and the slowest of 5 interrupts (`STOP_RUNS`).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use support::Fixture;
use support::hang::Hang;

fn main() {
    let runs: usize = std::env::var("STOP_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let mut seconds: Vec<f64> = (0..runs)
        .map(|_| {
            let hang = Hang::new();
            let sent = std::cell::Cell::new(Instant::now());
            let out = hang.when_hanging(&f, &["step", "hangs"], |tool| {
                sent.set(Instant::now());
                // SAFETY: a plain kill(2) of the tool, still running
                unsafe { libc::kill(tool.id() as i32, libc::SIGINT) };
            });
            let took = sent.get().elapsed().as_secs_f64();
            assert_eq!(out.status.code(), Some(130), "{}", support::both(&out));
            hang.assert_child_gone();
            took
        })
        .collect();
    seconds.sort_by(f64::total_cmp);
    println!(
        "step stopped by Ctrl-C mid-benchmark: median {:.3} s, slowest {:.3} s ({runs} interrupts)",
        seconds[runs / 2],
        seconds[runs - 1]
    );
}
