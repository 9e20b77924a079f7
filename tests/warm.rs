//! Warm workers: a step's correctness and first round run in one pytest process per side, started
//! together; every later round in a fresh pair (a round is an independent sample only in processes of its
//! own); a side falls back to a process per run, said once, where the suite cannot be kept warm. Counted with the fixture's knobs: each pytest start appends a line to
//! `CUTILE_PERF_FIXTURE_STARTS`, each timed case one to `CUTILE_PERF_FIXTURE_CASES`.

use crate::support;

use support::{Fixture, alive, text};

/// What a step with more than one round per side left: its report, its stderr, and the pytest starts
/// and timed cases it counted.
struct Counted {
    report: serde_json::Value,
    stderr: String,
    starts: Vec<String>,
    /// The latency of each timed case, in the order they ran.
    cases: Vec<f64>,
}

/// A step whose candidate is more than 10x faster (so it is measured again: two rounds per side at
/// least), with `env` set for the tool and its tests.
fn counted_step(f: &Fixture, env: &[(&str, &str)]) -> Counted {
    counted_step_at(f, (0.005, 0.05), env)
}

/// A step whose candidate's small and large configs take `latency_ms`, with `env` set.
fn counted_step_at(f: &Fixture, (small, large): (f64, f64), env: &[(&str, &str)]) -> Counted {
    f.set_latency(small, large);
    let starts = f.root.join("../starts.txt");
    let cases = f.root.join("../cases.txt");
    let mut command = f.command(&["step", "--json", "tile size 256"]);
    command
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASES", &cases);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let read = |path| std::fs::read_to_string(path).unwrap_or_default();
    Counted {
        report: serde_json::from_slice(&out.stdout).unwrap(),
        stderr: text(&out.stderr),
        starts: read(&starts).lines().map(str::to_string).collect(),
        cases: read(&cases)
            .lines()
            .map(|line| line.split_whitespace().nth(1).unwrap().parse().unwrap())
            .collect(),
    }
}

/// The benchmark's pytest starts among `starts` (a cold correctness run is not one).
fn benchmark_starts(starts: &[String]) -> Vec<&String> {
    starts
        .iter()
        .filter(|line| line.contains("test_perf and cutile"))
        .collect()
}

#[test]
fn each_round_after_the_first_in_a_fresh_pair_of_workers() {
    let f = Fixture::new();
    f.start();
    let step = counted_step(&f, &[]);
    assert!(
        step.stderr
            .contains("more than 10x faster than its baseline: measuring again"),
        "{}",
        step.stderr
    );
    let (workers, others): (Vec<&String>, Vec<&String>) = benchmark_starts(&step.starts)
        .into_iter()
        .partition(|s| s.contains("--cutile-perf-worker="));
    let rounds = step
        .stderr
        .matches(" candidate: in the warm candidate worker")
        .count();
    assert!(rounds >= 2, "{}", step.stderr);
    assert_eq!(workers.len(), 2 * rounds, "{:#?}", step.starts);
    // the no-re-roll check reads the dumps of the workers' own runs: nothing else starts
    assert_eq!(others.len(), 0, "{:#?}", step.starts);
    // two sides, two configs, at least two rounds per side: every case measured in the two workers
    assert!(
        step.cases.len() >= 8 && step.cases.len().is_multiple_of(4),
        "{:?}",
        step.cases
    );
    for side in ["candidate", "baseline"] {
        let repetitions = format!("in the warm {side} worker, 2 cases, 0 failed");
        assert!(
            step.stderr.matches(&repetitions).count() >= 2,
            "{}",
            step.stderr
        );
    }
    // correctness and the unseen-input check run in the workers too: no start-up of their own
    assert!(
        step.stderr
            .contains("correctness: in the warm candidate worker, 6 cases, 0 failed"),
        "{}",
        step.stderr
    );
    for side in ["candidate", "baseline"] {
        let unseen = format!("unseen inputs: in the warm {side} worker, 6 cases, 0 failed");
        assert!(step.stderr.contains(&unseen), "{}", step.stderr);
    }
    assert_eq!(
        step.starts.len(),
        2 * rounds,
        "no other pytest: {:#?}",
        step.starts
    );
    assert!(
        !step.stderr.contains("cannot be kept warm"),
        "{}",
        step.stderr
    );
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    for line in &step.starts {
        let pid: i32 = line.split_whitespace().next().unwrap().parse().unwrap();
        assert!(!alive(pid), "worker {pid} outlived the step");
    }
}

#[test]
fn a_suite_that_cannot_be_kept_warm_falls_back_said_once_per_side() {
    let f = Fixture::new();
    f.start();
    let step = counted_step(&f, &[("CUTILE_PERF_FIXTURE_EXIT_ON_REPEAT", "worker")]);
    for side in ["candidate", "baseline"] {
        let said = format!("the {side} side cannot be kept warm (the worker exited with code 3");
        assert_eq!(step.stderr.matches(&said).count(), 1, "{}", step.stderr);
    }
    // each side's worker, then a process per run, in every round, however many
    let starts = benchmark_starts(&step.starts);
    let warm = starts
        .iter()
        .filter(|s| s.contains("--cutile-perf-worker="))
        .count();
    assert_eq!(warm, 2, "{starts:#?}");
    assert!(starts.len() >= 6, "{starts:#?}");
    assert_eq!(step.report["status"], "keep", "{}", step.report);
}

#[test]
fn the_session_filter_narrows_what_the_workers_run() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add", "--filter", "large or 1000"]);
    f.set_latency(0.2, 0.5);
    let out = f
        .command(&["step", "--json", "only the large config counts"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    // one case a command: the worker tears each down before the next command's
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "keep", "{r}");
    for (what, cases) in [
        ("correctness: in the warm candidate worker", 1),
        ("round 1 candidate: in the warm candidate worker", 1),
        ("round 1 baseline: in the warm baseline worker", 1),
    ] {
        assert!(
            stderr.contains(&format!("{what}, {cases} cases")),
            "{stderr}"
        );
    }
}

/// A step whose small config is 3% slower (beyond noise in one round: a second confirms it) and whose
/// large one is unchanged (clear at once): round 2 runs the small case only.
fn slower_small_config(env: &[(&str, &str)]) -> (Fixture, Counted) {
    let f = Fixture::new();
    f.start();
    let step = counted_step_at(&f, (0.103, 1.0), env);
    let r = &step.report;
    assert_eq!(r["status"], "revert", "{r}");
    assert_eq!(r["rounds"], 2, "{r}");
    let rounds: Vec<(&str, &serde_json::Value)> = r["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["test"].as_str().unwrap(), &c["rounds"]))
        .collect();
    assert_eq!(
        rounds,
        [
            (
                "tests.ops.test_vector_add::test_perf[cutile-small]",
                &2.into()
            ),
            (
                "tests.ops.test_vector_add::test_perf[cutile-large]",
                &1.into()
            )
        ],
        "{r}"
    );
    // each timed case, in order: round 1 (baseline first) both configs, round 2 the small one only
    assert_eq!(step.cases, [0.1, 1.0, 0.103, 1.0, 0.103, 0.1]);
    // verify recounts each config's rounds from the evidence and finds the same verdict
    f.ok(&["verify"]);
    (f, step)
}

#[test]
fn a_later_round_runs_only_the_configs_still_open() {
    let (_, step) = slower_small_config(&[]);
    for (what, ran) in [
        ("round 1 baseline: in the warm baseline worker", 2),
        ("round 1 candidate: in the warm candidate worker", 2),
        ("round 2 candidate: in the warm candidate worker", 1),
        ("round 2 baseline: in the warm baseline worker", 1),
    ] {
        assert!(
            step.stderr.contains(&format!("{what}, {ran} cases")),
            "{}",
            step.stderr
        );
    }
}

#[test]
fn a_process_of_its_own_runs_only_the_open_cases_too() {
    // the workers exit on their first perf case: every run in a process per side, round 2's with the
    // open case only
    let (_, step) = slower_small_config(&[("CUTILE_PERF_FIXTURE_EXIT_ON_REPEAT", "worker")]);
    let cold: Vec<&String> = benchmark_starts(&step.starts)
        .into_iter()
        .filter(|s| !s.contains("--cutile-perf-worker="))
        .collect();
    assert_eq!(cold.len(), 4, "{:#?}", step.starts);
    let narrowed: Vec<&&String> = cold
        .iter()
        .filter(|s| s.contains("--cutile-perf-cases="))
        .collect();
    assert_eq!(narrowed.len(), 2, "{cold:#?}");
}

/// The worker pids among the pytest starts.
fn worker_pids(starts: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("--cutile-perf-worker="))
        .map(|line| line.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn workers_end_themselves_when_the_tool_is_killed() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    let starts = f.root.join("../starts.txt");
    // slow cases: the tool is still in the rounds when it is killed
    let mut tool = f
        .command(&["step", "tile size 256"])
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASE_S", "30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while worker_pids(&starts).len() < 2 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let workers = worker_pids(&starts);
    assert_eq!(workers.len(), 2, "the workers did not start");
    // SIGKILL: no cleanup of the tool's own runs; the workers see their parent gone
    tool.kill().unwrap();
    tool.wait().unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while workers.iter().any(|&pid| alive(pid)) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for pid in workers {
        assert!(!alive(pid), "worker {pid} outlived the killed tool");
    }
}
