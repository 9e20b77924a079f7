//! What reading the record costs as a session grows: `cargo bench --bench history` prints, for synthetic
//! sessions of 100 / 1,000 / 10,000 iterations x 10 / 180 configs (TileGym's matmul grid has 180), fresh
//! and repacked, the wall time and peak memory of `table`, `status` and one pre-commit hook run, next to
//! C git reading the same trailers (`git log --format=%(trailers)`). Each figure is the median of RUNS
//! runs; memory is the child's own peak resident set (wait4's rusage).
//!
//! The sessions are written with git fast-import from messages made by the tool's own writers (through
//! the library), so they are exactly what `start` and `step` commit. `CUTILE_PERF_BENCH_SIZES=100x10`
//! (comma-separated) picks other sizes.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use git_cutile_perf::decision::{Correctness, Decision, Status};
use git_cutile_perf::records::Measurement;
use git_cutile_perf::session::Iteration;
use git_cutile_perf::trailers::{Block, render_message};
use support::{BIN, Fixture, KERNEL, TEST, baseline_message};

const RUNS: usize = 5;
const BRANCH: &str = "cutile-perf-vector_add-20260101";

fn main() {
    let sizes = std::env::var("CUTILE_PERF_BENCH_SIZES")
        .unwrap_or_else(|_| "100x10,100x180,1000x10,1000x180,10000x10,10000x180".into());
    println!(
        "median of {RUNS} runs; time in ms, peak memory in MiB; binary {}\n",
        BIN.display()
    );
    println!(
        "{:>17} {:>9} | {:>16} {:>16} {:>16} | {:>16}",
        "iterations x cfg", "pack", "table", "status", "hook", "git log trailers"
    );
    for size in sizes.split(',') {
        let (iterations, configs) = size.split_once('x').expect("NxM");
        let (iterations, configs): (usize, usize) =
            (iterations.parse().unwrap(), configs.parse().unwrap());
        let f = session(iterations, configs);
        for packed in [false, true] {
            if packed {
                f.git(&["repack", "-adq"]);
                f.git(&["prune-packed"]);
            }
            let tool = |args: &[&str]| measure(&f, BIN.as_os_str(), args);
            let table = tool(&["table"]);
            let status = tool(&["status"]);
            let hook = tool(&["hook", "pre-commit"]);
            let git = measure(&f, "git".as_ref(), &["log", "--format=%(trailers)", BRANCH]);
            println!(
                "{:>17} {:>9} | {} {} {} | {}",
                format!("{iterations} x {configs}"),
                if packed { "repacked" } else { "fresh" },
                table,
                status,
                hook,
                git
            );
        }
    }
}

/// A repository on a session branch with `iterations` iterations of `configs` configs each.
fn session(iterations: usize, configs: usize) -> Fixture {
    let f = Fixture::new();
    let parent = f.head();
    let mut import = f
        .program("git", &f.root)
        .args(["fast-import", "--quiet", "--done"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = std::io::BufWriter::new(import.stdin.take().unwrap());
    let mut commit = |mark: usize, from: &str, message: &str| {
        writeln!(input, "commit refs/heads/{BRANCH}\nmark :{mark}").unwrap();
        writeln!(
            input,
            "committer Bench <bench@example.com> 1767225600 +0000"
        )
        .unwrap();
        writeln!(input, "data {}\n{message}\nfrom {from}", message.len()).unwrap();
    };
    commit(1, &parent, &baseline_message(KERNEL, TEST, &[KERNEL]));
    for number in 1..=iterations {
        let mut block = Block::default();
        iteration(number as u32, configs).write(&mut block);
        let message = render_message(&format!("cutile-perf: vector_add #{number}"), None, &block);
        commit(number + 1, &format!(":{number}"), &message);
    }
    writeln!(input, "done").unwrap();
    drop(input);
    assert!(import.wait().unwrap().success());
    f.git(&["checkout", "-q", BRANCH]);
    // the first read records the baseline ref that later hook runs read (as `start` does)
    f.ok(&["status"]);
    f
}

fn iteration(number: u32, configs: usize) -> Iteration {
    let status = if number.is_multiple_of(3) {
        Status::Revert
    } else {
        Status::Keep
    };
    Iteration {
        number,
        optimization: format!("optimization {number}"),
        letter: None,
        cause: None,
        latency_ms: Some(1.0),
        correctness: Correctness::Pass,
        status,
        baseline_ms: 1.0,
        change_pct: Some(0.0),
        decision: Decision::Continue,
        reason: "synthetic".into(),
        configs: (0..configs)
            .map(|c| Measurement {
                pass: "forward".into(),
                test: format!(
                    "tests/ops/test_matmul.py::test_perf[cutile-{c}-4096-4096-4096-bf16]"
                ),
                value: 0.1 + (number as f64 + c as f64) * 1e-6,
            })
            .collect(),
        attempt: None,
        rounds: None,
        placement: None,
    }
}

/// "time ms / memory MiB" of a program run in the fixture, medians of RUNS runs.
fn measure(f: &Fixture, program: &std::ffi::OsStr, args: &[&str]) -> String {
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..RUNS {
        let (time, peak_kib) = run(f, program, args, &f.root);
        times.push(time);
        peaks.push(peak_kib);
    }
    times.sort();
    peaks.sort();
    format!(
        "{:>8.1} / {:>5.1}",
        times[RUNS / 2].as_secs_f64() * 1e3,
        peaks[RUNS / 2] as f64 / 1024.0
    )
}

/// Runs one child to its end; its wall time and its own peak resident set (KiB).
fn run(f: &Fixture, program: &std::ffi::OsStr, args: &[&str], dir: &Path) -> (Duration, i64) {
    let started = Instant::now();
    // reaped by wait4 below, which also gives its resource usage
    #[allow(clippy::zombie_processes)]
    let child = f
        .program(program, dir)
        .args(args)
        .env("GIT_INDEX_FILE", ".git/index")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for the child we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let elapsed = started.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{program:?} {args:?}"
    );
    (elapsed, usage.ru_maxrss)
}
