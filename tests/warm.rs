//! Warm workers: a step's correctness and first round run in one pytest process per side, started
//! together; every later round in a fresh pair (a round is an independent sample only in processes of its
//! own), each started while the round before measures; a side falls back to a process per run, said once, where the suite cannot be kept warm. Counted with the fixture's knobs: each pytest start appends a line to
//! `CUTILE_PERF_FIXTURE_STARTS`, each timed case one to `CUTILE_PERF_FIXTURE_CASES`.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

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
    // this step's alone
    let _ = std::fs::remove_file(&starts);
    let _ = std::fs::remove_file(&cases);
    let mut command = f.command(&["step", "--opt", "none", "--json", "tile size 256"]);
    command
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASES", &cases);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} {}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
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

/// `(pid, ended)` of each timed case the fixture logged (`CUTILE_PERF_FIXTURE_CASES` at `../cases.txt`).
fn timed_cases(f: &Fixture) -> Vec<(i32, f64)> {
    std::fs::read_to_string(f.root.join("../cases.txt"))
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields[0].parse().unwrap(), fields[3].parse().unwrap())
        })
        .collect()
}

/// `(pid, began, ended)` of each `event` the fixture's stand-in torch logged.
fn cuda_events(log: &std::path::Path, event: &str) -> Vec<(i32, f64, f64)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(1) == Some(&event)).then(|| {
                let time = |i: usize| fields[i].parse().unwrap();
                (fields[0].parse().unwrap(), time(2), time(3))
            })
        })
        .collect()
}

#[test]
fn each_round_after_the_first_in_a_fresh_pair_of_workers() {
    let f = Fixture::new();
    f.start();
    // a stand-in torch with a GPU whose context takes a second in the candidate's workers: a worker's
    // context is made before it is ready, and neither side measures while the other's is being made
    let cuda_log = f.root.join("../cuda.txt");
    let (case_s, context_s) = (0.2, 1.0);
    let step = counted_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
            (
                "CUTILE_PERF_FIXTURE_CANDIDATE_CONTEXT_S",
                &context_s.to_string(),
            ),
            ("CUTILE_PERF_FIXTURE_CASE_S", &case_s.to_string()),
        ],
    );
    let timed = timed_cases(&f);
    let contexts = cuda_events(&cuda_log, "context");
    let released = cuda_events(&cuda_log, "empty-cache");
    assert!(contexts.len() >= 3, "{contexts:?}");
    for &(pid, began, made) in &contexts {
        for &(other, ended) in timed.iter().filter(|(other, _)| *other != pid) {
            let (case, context) = ((ended - case_s, ended), (began, made));
            assert!(
                case.1 <= context.0 || context.1 <= case.0,
                "worker {other} measured while worker {pid} made its GPU context: {case:?} {context:?}"
            );
        }
        // its cached blocks go back after its last case
        let last = timed
            .iter()
            .filter(|(p, _)| *p == pid)
            .map(|&(_, t)| t)
            .reduce(f64::max);
        assert!(
            last.is_none_or(|end| released.iter().any(|&(p, _, t)| p == pid && t >= end)),
            "{released:?}"
        );
    }
    // a redrawn pair's workers make their contexts one at a time, the side measuring first first: on an
    // H200, contexts made side by side, the candidate's always first, left its processes slower
    let first_case = timed.iter().map(|&(_, t)| t).fold(f64::INFINITY, f64::min);
    let mut redrawn: Vec<_> = contexts.iter().filter(|c| c.1 > first_case).collect();
    redrawn.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert!(redrawn.len() >= 2, "{contexts:?}");
    for made in redrawn.windows(2) {
        assert!(
            made[0].2 <= made[1].1,
            "contexts made side by side: {made:?}"
        );
    }
    let first_measured = |pid: i32| {
        let ends = timed.iter().filter(|(p, _)| *p == pid).map(|&(_, t)| t);
        ends.fold(f64::INFINITY, f64::min)
    };
    let by_context: Vec<i32> = redrawn.iter().map(|c| c.0).collect();
    let mut by_measuring = by_context.clone();
    by_measuring.sort_by(|&a, &b| first_measured(a).total_cmp(&first_measured(b)));
    assert_eq!(by_context, by_measuring, "{contexts:?} {timed:?}");
    // the candidate's slow contexts: one in each of its workers (a pair standing by for a round that never
    // came may have made one too), none in the baseline's: of the workers that measured, a pair a round,
    // half made one
    let slow: Vec<i32> = contexts
        .iter()
        .filter(|(_, began, made)| made - began >= context_s)
        .map(|c| c.0)
        .collect();
    let mut measured: Vec<i32> = timed.iter().map(|&(pid, _)| pid).collect();
    measured.sort_unstable();
    measured.dedup();
    let measured_slow = measured.iter().filter(|pid| slow.contains(pid)).count();
    assert!(measured.len() >= 4, "a fresh pair each round: {timed:?}");
    assert_eq!(2 * measured_slow, measured.len(), "{contexts:?} {timed:?}");
    let mut each_once = slow.clone();
    each_once.sort_unstable();
    each_once.dedup();
    assert_eq!(each_once.len(), slow.len(), "{contexts:?}");
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
    // and, from round 2 on, a pair standing by for the next round: the last one's is ended unused (its
    // start-up may be cut short before the fixture counts it)
    let measuring = 2 * rounds;
    assert!(
        (measuring..=measuring + 2).contains(&workers.len()),
        "{:#?}",
        step.starts
    );
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
    // the candidate passes every case on unseen inputs: the baseline's code is not run on them
    assert!(
        step.stderr
            .contains("unseen inputs: in the warm candidate worker, 6 cases, 0 failed"),
        "{}",
        step.stderr
    );
    assert!(
        !step.stderr.contains("unseen inputs: in the warm baseline"),
        "{}",
        step.stderr
    );
    assert_eq!(
        step.starts.len(),
        workers.len(),
        "no other pytest: {:#?}",
        step.starts
    );
    assert!(
        !step.stderr.contains("cannot be kept warm"),
        "{}",
        step.stderr
    );
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    // the candidate's worker holds the new baseline's code: it lives on, the baseline's ends
    let pids = worker_pids_of(&step.starts);
    let kept = kept_worker(&f);
    assert!(alive(kept), "the kept worker {kept} is gone");
    assert_eq!(
        pids.iter().filter(|&&pid| alive(pid)).collect::<Vec<_>>(),
        [&kept]
    );
    assert!(
        step.stderr.contains(&format!(
            "the baseline's warm worker (pid {kept}) lives on for the next step"
        )),
        "{}",
        step.stderr
    );
}

/// The pid of the one worker `status --json` lists, which must be kept as the baseline's.
fn kept_worker(f: &Fixture) -> i32 {
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let workers = status["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{status}");
    assert_eq!(workers[0]["side"], "baseline", "{status}");
    assert_eq!(workers[0]["alive"], true, "{status}");
    workers[0]["pid"].as_i64().unwrap() as i32
}

/// The pytest starts of one successful command of the tool (`CUTILE_PERF_FIXTURE_STARTS`'s lines), run
/// with the environment [`counted_step`] gives a step (a worker it keeps serves only that environment).
fn pytest_starts_of(f: &Fixture, args: &[&str]) -> Vec<String> {
    let starts = f.root.join("../starts.txt");
    let _ = std::fs::remove_file(&starts);
    let out = f
        .command(args)
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASES", f.root.join("../cases.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    started.lines().map(str::to_string).collect()
}

/// How many of `starts` are of processes that measure or check: not of a pair that stood by for a
/// second round (in each side's second channel), which a step decided in one round ends unused.
fn measuring_starts(starts: &[String]) -> usize {
    (starts.iter())
        .filter(|line| !line.contains("/channel.1 "))
        .count()
}

/// The worker pids among `starts` lines.
fn worker_pids_of(starts: &[String]) -> Vec<i32> {
    starts
        .iter()
        .filter(|line| line.contains("--cutile-perf-worker="))
        .map(|line| line.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn every_step_decided_in_one_round_measures_in_one_new_pytest_whatever_the_outcome() {
    let f = Fixture::new();
    // iteration 0's correctness and first benchmark run in one worker, its second run in a fresh one (the
    // two runs' spread is the noise between processes), kept for the first step
    let started = pytest_starts_of(&f, &["start", "vector_add"]);
    assert_eq!(worker_pids_of(&started).len(), 2, "{started:#?}");
    assert_eq!(started.len(), 2, "{started:#?}");
    let mut kept = kept_worker(&f);
    assert_eq!(worker_pids_of(&started)[1], kept, "the second is kept");
    assert_eq!(status_commit(&f), f.head(), "it holds the baseline commit");
    // keeps (the candidate's worker becomes the baseline's) between a revert (a clear regression), a
    // correctness FAIL and a crash: one start each, the kept worker serving
    for (latency, edit, status) in [
        ((0.05, 0.5), None, "keep"),
        ((0.08, 0.8), None, "revert"),
        ((0.02, 0.2), None, "keep"),
        (
            (0.08, 0.8),
            Some(("CORRECT = True", "CORRECT = False")),
            "revert",
        ),
        ((0.01, 0.1), None, "keep"),
        (
            (0.08, 0.8),
            Some(("CRASH = \"\"", "CRASH = \"exception\"")),
            "crash",
        ),
    ] {
        if let Some((from, to)) = edit {
            f.edit_kernel(from, to);
        }
        let step = counted_step_at(&f, latency, &[]);
        assert_eq!(step.report["status"], status, "{}", step.report);
        // and the pair started to stand by for a second round as each side began to measure, ended
        // unused (its start-up may be cut short before the fixture counts it)
        let (standing_by, measuring): (Vec<&String>, Vec<&String>) =
            step.starts.iter().partition(|s| s.contains("/channel.1 "));
        assert_eq!(measuring.len(), 1, "{:#?}", step.starts);
        assert!(standing_by.len() <= 2, "{:#?}", step.starts);
        assert!(
            step.stderr.contains(&format!(
                "the baseline runs in the warm worker (pid {kept}) an earlier command kept"
            )),
            "{}",
            step.stderr
        );
        let now = kept_worker(&f);
        assert!(
            worker_pids_of(&step.starts)
                .iter()
                .all(|&pid| !alive(pid) || pid == now)
        );
        // after a keep, the step's candidate worker is the one kept and the earlier one ended
        assert_eq!(now != kept, status == "keep", "{}", step.stderr);
        assert_eq!(alive(kept), status != "keep");
        assert_eq!(status_commit(&f), baseline_commit(&f));
        kept = now;
    }
    f.ok(&["verify"]);
}

#[test]
fn a_step_that_halts_the_loop_ends_the_worker_and_continue_starts_a_fresh_one() {
    let f = Fixture::new();
    f.start();
    // 1% faster: kept, and the loop stops (< 2%) until the user says `--continue`
    let step = counted_step_at(&f, (0.099, 0.99), &[]);
    assert_eq!(step.report["decision"], "stop", "{}", step.report);
    // the candidate's worker, which holds the kept code
    let (candidate, _) = (step.starts.iter())
        .find(|line| line.contains("/workers/candidate-"))
        .and_then(|line| line.split_once(' '))
        .expect("the candidate's worker");
    assert!(
        step.stderr.contains(&format!(
            "the loop halted (stop): the baseline's warm worker (pid {candidate}) ends with it"
        )),
        "{}",
        step.stderr
    );
    let workers = worker_pids_of(&step.starts);
    assert!(workers.iter().all(|&pid| !alive(pid)), "{workers:?}");
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["workers"], serde_json::json!([]), "{status}");
    // resumed, the step starts both sides' workers, and keeps the one holding the new baseline
    f.set_latency(0.05, 0.5);
    let started = pytest_starts_of(
        &f,
        &["step", "--opt", "none", "--continue", "tile size 512"],
    );
    // (and the pair standing by for a second round, ended unused)
    assert_eq!(
        worker_pids_of(&started).len(),
        started.len(),
        "{started:#?}"
    );
    assert_eq!(measuring_starts(&started), 2, "{started:#?}");
    assert!(alive(kept_worker(&f)));
}

/// The session's current baseline commit: the newest kept iteration's.
fn baseline_commit(f: &Fixture) -> String {
    let log = f.git(&[
        "log",
        "--format=%H %(trailers:key=Cutile-Perf-Status,valueonly)",
    ]);
    log.lines()
        .find(|line| line.trim_end().ends_with(" keep"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The commit the one kept worker holds, as `status --json` says.
fn status_commit(f: &Fixture) -> String {
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    status["workers"][0]["commit"].as_str().unwrap().to_string()
}

#[test]
fn a_kept_worker_killed_between_steps_is_replaced() {
    let f = Fixture::new();
    f.start();
    counted_step_at(&f, (0.05, 0.5), &[]);
    let kept = kept_worker(&f);
    unsafe { libc::kill(kept, libc::SIGKILL) };
    let until = Instant::now() + Duration::from_secs(10);
    while alive(kept) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let step = counted_step_at(&f, (0.08, 0.8), &[]);
    assert!(
        step.stderr.contains(&format!(
            "the kept worker (pid {kept}) cannot serve this step (it is no longer running)"
        )),
        "{}",
        step.stderr
    );
    assert_eq!(measuring_starts(&step.starts), 2, "{:#?}", step.starts);
    assert_eq!(step.report["status"], "revert", "{}", step.report);
    f.ok(&["verify"]);
}

#[test]
fn a_kept_worker_whose_commit_is_no_longer_the_baseline_is_ended() {
    let f = Fixture::new();
    f.start();
    counted_step_at(&f, (0.05, 0.5), &[]);
    let kept = kept_worker(&f);
    // the user drops the kept iteration: the baseline is iteration 0 again
    f.git(&["reset", "-q", "--hard", "HEAD~1"]);
    let step = counted_step_at(&f, (0.05, 0.5), &[]);
    assert!(
        step.stderr.contains(&format!(
            "the kept worker (pid {kept}) cannot serve this step (it holds commit"
        )),
        "{}",
        step.stderr
    );
    assert!(!alive(kept), "the stale worker {kept} lives on");
    assert_eq!(measuring_starts(&step.starts), 2, "{:#?}", step.starts);
    assert_eq!(step.report["status"], "keep", "{}", step.report);
}

#[test]
fn repair_ends_the_kept_worker() {
    let f = Fixture::new();
    f.start();
    counted_step_at(&f, (0.05, 0.5), &[]);
    let kept = kept_worker(&f);
    let repair: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(
        repair["ended_workers"],
        serde_json::json!([kept]),
        "{repair}"
    );
    assert!(!alive(kept), "worker {kept} outlived repair");
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["workers"], serde_json::json!([]), "{status}");
    // its worktree went with it
    let worktrees = f.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
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
    // each side's worker (and the one started to stand by for round 2 as its side began to measure in
    // round 1, ended when the side turned cold), then a process per run, in every round, however many
    let starts = benchmark_starts(&step.starts);
    let (standing_by, warm): (Vec<&&String>, Vec<&&String>) = starts
        .iter()
        .filter(|s| s.contains("--cutile-perf-worker="))
        .partition(|s| s.contains("/channel.1 "));
    assert_eq!(warm.len(), 2, "{starts:#?}");
    assert!(standing_by.len() <= 2, "{starts:#?}");
    assert!(worker_pids_of(&step.starts).iter().all(|&pid| !alive(pid)));
    assert!(starts.len() >= 6, "{starts:#?}");
    assert_eq!(step.report["status"], "keep", "{}", step.report);
}

#[test]
fn the_session_filter_narrows_what_the_workers_run() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add", "--filter", "large or 1000"]);
    f.set_latency(0.2, 0.5);
    let out = f
        .command(&[
            "step",
            "--opt",
            "none",
            "--json",
            "only the large config counts",
        ])
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
        let counted = git_cutile_perf::rules::units::counted(cases as u64, "case");
        assert!(stderr.contains(&format!("{what}, {counted}")), "{stderr}");
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
        let counted = git_cutile_perf::rules::units::counted(ran as u64, "case");
        assert!(
            step.stderr.contains(&format!("{what}, {counted}")),
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

/// The worker pids among the pytest starts written to `starts`.
fn worker_pids(starts: &std::path::Path) -> Vec<i32> {
    let lines: Vec<String> = std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    worker_pids_of(&lines)
}

/// Appended to the candidate's kernel: each timed call (the perf cases pass arrays, the correctness cases
/// lists) takes 30 s.
const SLOW_TIMED_CALLS: &str = r#"
import time as _time
_quick = vector_add
def vector_add(a, b):
    if isinstance(a, array):
        _time.sleep(30)
    return _quick(a, b)
"#;

/// A step of a candidate 10% faster whose timed cases take 30 s each, running in the background:
/// pytest's starts go to `starts`, the tool's stderr to `log`.
fn slow_step(f: &Fixture, starts: &Path, log: &Path) -> std::process::Child {
    f.set_latency(0.09, 0.9);
    f.append(support::KERNEL, SLOW_TIMED_CALLS);
    f.command(&["step", "--opt", "none", "tile size 256"])
        .env("CUTILE_PERF_FIXTURE_STARTS", starts)
        .env("CUTILE_PERF_FIXTURE_CASES", f.root.join("../cases.txt"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// SIGKILLs `tool` (no cleanup of its own runs), then expects every one of `workers` gone within a minute.
fn kill_and_expect_gone(mut tool: std::process::Child, workers: &[i32]) {
    tool.kill().unwrap();
    tool.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while workers.iter().any(|&pid| alive(pid)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    for &pid in workers {
        assert!(
            !alive(pid),
            "worker {pid} outlived the killed tool ({workers:?})"
        );
    }
}

#[test]
fn workers_end_themselves_when_the_tool_is_killed() {
    let f = Fixture::new();
    f.start();
    let starts = f.root.join("../starts.txt");
    // slow cases: the tool is still in the rounds when it is killed
    let tool = slow_step(&f, &starts, &f.root.join("../step.txt"));
    let until = Instant::now() + Duration::from_secs(60);
    while worker_pids(&starts).len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let workers = worker_pids(&starts);
    assert_eq!(workers.len(), 2, "the workers did not start");
    kill_and_expect_gone(tool, &workers);
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`).
fn stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    })
}

#[test]
fn a_worker_held_while_the_tool_is_killed_ends_too() {
    let f = Fixture::new();
    let starts = f.root.join("../starts.txt");
    pytest_starts_of(&f, &["start", "vector_add"]);
    let kept = kept_worker(&f);
    let log = f.root.join("../step.txt");
    // the kept worker holds the baseline's code, its cases quick: while the candidate's slow ones are
    // measured, it is held
    let tool = slow_step(&f, &starts, &log);
    let until = Instant::now() + Duration::from_secs(60);
    while !stopped(kept) {
        assert!(
            Instant::now() < until,
            "the kept worker was not held: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers: Vec<i32> = worker_pids(&starts).into_iter().chain([kept]).collect();
    kill_and_expect_gone(tool, &workers);
}

#[test]
fn another_sessions_kept_worker_on_the_gpu_is_named_with_how_to_end_it() {
    let other = Fixture::new();
    other.ok(&["start", "vector_add"]);
    let theirs = kept_worker(&other);
    let mut f = Fixture::new();
    f.fake_gpu(Some(
        "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
    ));
    f.gpu_processes(&format!("{theirs}, python3, 1024\n"));
    let started = f.ok_all(&["start", "vector_add"]);
    let named = format!(
        "pid {theirs} is a warm worker git cutile-perf keeps for the session in {}, idle between its \
         steps; `git cutile-perf repair` there ends it",
        other.root.display()
    );
    assert!(
        started.contains(&named),
        "{named:?} missing from:\n{started}"
    );
    // still another process: the warning stays, and the record says so
    assert!(
        started.contains("warning: other processes use the GPU"),
        "{started}"
    );
    other.ok(&["repair"]);
}

/// Appended to the candidate's kernel: on import, it writes into the baseline's code beside the work tree
/// (six levels up from the kernel file is the workers' folder), as a kernel cheating its comparison might.
const WRITES_THE_BASELINE: &str = r#"
import glob as _glob, os as _os
_up = [_os.pardir] * 6
for _path in _glob.glob(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), *_up, "baseline-*", "tree", "src", "tilegym", "ops", "cutile", "vector_add.py")):
    with open(_path, "a") as _file:
        _file.write("\n# slower now\n")
"#;

#[test]
fn a_side_whose_code_is_written_during_the_step_is_a_crash_and_its_worker_is_not_reused() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add"]);
    let kept = kept_worker(&f);
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.append(support::KERNEL, WRITES_THE_BASELINE);
    let report = f.step_json(&["tile size 256, and a write into the baseline"]);
    assert_eq!(report["status"], "crash", "{report}");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "a side's code changed on disk while the step measured it (the baseline: its code beside \
             the work tree was changed: src/tilegym/ops/cutile/vector_add.py)"
        ),
        "{reason}"
    );
    f.ok(&["verify"]);
    // the baseline's worker outlived the crash, but its tree is not its commit's code any more: the
    // next step names what was written there, and removes nothing
    assert_eq!(kept_worker(&f), kept);
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    let err = f.fails(&["step", "--opt", "none", "tile size 256"]);
    assert!(
        err.contains("a side's code beside the work tree was edited there")
            && err.contains("/tree: src/tilegym/ops/cutile/vector_add.py"),
        "{err}"
    );
    // undone there, as the hint says: the step goes on
    let tree = baseline_tree(&f);
    f.run_in(&tree, "git", &["reset", "-q", "--hard"]);
    let out = f.run(&["step", "--opt", "none", "--json", "tile size 256"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(report["status"], "crash", "{report}");
}

/// The worktree the one kept worker runs from (`.git/cutile-perf/workers/<home>/tree`).
fn baseline_tree(f: &Fixture) -> std::path::PathBuf {
    let homes: Vec<_> = std::fs::read_dir(f.root.join(".git/cutile-perf/workers"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("tree"))
        .filter(|tree| tree.is_dir())
        .collect();
    assert_eq!(homes.len(), 1, "{homes:?}");
    homes[0].clone()
}

#[test]
fn an_edit_made_in_the_kept_workers_tree_is_never_removed() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add"]);
    // an editor following a traceback into the kept worker's tree edits the kernel there
    let tree = baseline_tree(&f);
    let edited = tree.join(support::KERNEL);
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replace("TILE_SIZE = 128", "TILE_SIZE = 256")).unwrap();
    f.edit_kernel("CORRECT = True", "CORRECT = True  # checked");
    let err = f.fails(&["step", "--opt", "none", "a comment"]);
    assert!(
        err.contains(&format!("{}: {}", tree.display(), support::KERNEL)),
        "{err}"
    );
    assert!(err.contains("diff HEAD | git apply"), "{err}");
    // neither a refused step nor `repair`, which ends the worker, removes it
    f.ok(&["repair"]);
    assert!(
        std::fs::read_to_string(&edited)
            .unwrap()
            .contains("TILE_SIZE = 256")
    );
    assert!(
        f.fails(&["step", "--opt", "none", "a comment"])
            .contains("was edited there")
    );
    // taken to the work tree and undone there, as the hint says: the step measures it
    f.git(&["checkout", "--", support::KERNEL]);
    let diff = f.run_in(&tree, "git", &["diff", "HEAD"]);
    let applied = f
        .program("git", &f.root)
        .args(["apply"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut apply| {
            use std::io::Write;
            apply.stdin.take().unwrap().write_all(&diff.stdout)?;
            apply.wait()
        })
        .unwrap();
    assert!(applied.success());
    f.run_in(&tree, "git", &["reset", "-q", "--hard"]);
    f.set_latency(0.05, 0.5);
    let report = f.step_json(&["tile size 256"]);
    assert_eq!(report["status"], "keep", "{report}");
    assert!(
        std::fs::read_to_string(f.path(support::KERNEL))
            .unwrap()
            .contains("TILE_SIZE = 256")
    );
}

#[test]
fn start_counts_its_own_workers_as_ours_around_its_runs() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(
        "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
    ));
    f.gpu_processes("");
    // each worker holds a CUDA context while it measures and while the other one does
    f.gpu_lists_workers();
    let started = f.ok_all(&["start", "vector_add"]);
    assert!(!started.contains("other processes"), "{started}");
    let note = f.git(&["notes", "--ref", "refs/notes/cutile-perf", "show", "HEAD"]);
    assert!(note.contains("\n  gpu before SM"), "{note}");
    assert!(!note.contains("python3"), "{note}");
    // a step's two workers, the kept one and the candidate's, and a fresh pair for round 2
    f.set_latency(0.103, 1.0);
    let stepped = f.ok_all(&["step", "--opt", "none", "tile size 256"]);
    assert!(stepped.contains("round 2"), "{stepped}");
    assert!(!stepped.contains("other processes"), "{stepped}");
}

#[test]
fn the_gpu_check_counts_the_kept_worker_as_ours_and_status_shows_its_memory() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(
        "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
    ));
    f.gpu_processes("");
    f.ok(&["start", "vector_add"]);
    let kept = kept_worker(&f);
    f.gpu_processes(&format!("{kept}, python3, 1024\n"));
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["workers"][0]["gpu_mib"], 1024, "{status}");
    let text_status = f.ok(&["status"]);
    assert!(
        text_status.contains(&format!("worker      pid {kept} (baseline, commit ")),
        "{text_status}"
    );
    // the small config 3% slower: round 2 runs in a fresh pair, the kept worker ended, though the
    // stand-in nvidia-smi still lists it (as a real one may, a moment longer): still ours
    f.set_latency(0.103, 1.0);
    let out = f.run(&["step", "--opt", "none", "--json", "tile size 256"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rounds"], 2, "{report}");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("other processes"), "{stderr}");
}

#[test]
fn ctrl_c_mid_step_ends_the_kept_worker_and_the_candidates() {
    stopped_in_the_rounds(
        &[],
        "correctness: in the warm candidate worker",
        libc::SIGINT,
        |_| Vec::new(),
    );
}

#[test]
fn a_step_killed_mid_step_leaves_none_of_the_spares_its_rounds_started() {
    let refill = [
        ("CUTILE_PERF_SPARES", "2"),
        ("CUTILE_PERF_REFILL_SPARES", "1"),
    ];
    // SIGKILL: nothing of the tool's runs after it, so each spare ends by itself with its owner, before
    // any later command could sweep it away
    let spares = |said: &str| {
        let spares = spares_said(said, "start beside round 1");
        assert_eq!(spares.len(), 2, "{said}");
        spares
    };
    stopped_in_the_rounds(&refill, "start beside round 1", libc::SIGKILL, spares);
}

/// A step under `env` stopped by `signal` in its rounds, once its output says `reached`: every worker it
/// started or adopted has ended, those its output names by `also` too, and none is kept.
fn stopped_in_the_rounds(
    env: &[(&str, &str)],
    reached: &str,
    signal: i32,
    also: impl Fn(&str) -> Vec<i32>,
) {
    let f = Fixture::new();
    f.ok(&["start", "vector_add"]);
    let kept = kept_worker(&f);
    f.set_latency(0.09, 0.9);
    let starts = f.root.join("../starts.txt");
    let mut tool = f
        .command(&["step", "--opt", "none", "tile size 256"])
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASE_S", "30")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let said = support::Captured::default();
    let stderr = tool.stderr.take().unwrap();
    let reader = {
        let mut said = said.clone();
        std::thread::spawn(move || std::io::copy(&mut { stderr }, &mut said).unwrap())
    };
    // into the rounds, whose cases take 30 s: correctness has run in the candidate's worker
    support::wait_until("the step reached its rounds", || {
        said.text().contains(reached)
    });
    // the candidate's worker, and a fresh baseline's where the step's environment is not the kept one's
    let started = worker_pids(&starts);
    assert!(!started.is_empty(), "no worker started for the step");
    unsafe { libc::kill(tool.id() as i32, signal) };
    let status = support::output_within(tool, "the stopped step").status;
    reader.join().unwrap();
    match signal {
        libc::SIGINT => assert_eq!(status.code(), Some(130), "{}", said.text()),
        _ => assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(signal),
            "{}",
            said.text()
        ),
    }
    for pid in std::iter::once(kept)
        .chain(started)
        .chain(also(&said.text()))
    {
        support::wait_until("the step's workers end with it", || !alive(pid));
    }
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["workers"], serde_json::json!([]), "{status}");
}

/// Appended to the candidate's kernel: on import, a thread that writes its pid and the time to the file
/// `CUTILE_PERF_TEST_TICKS` names every 5 ms, as one putting work on the GPU under the other side's
/// measurement would run.
const TICKS_WHILE_IDLE: &str = r#"
import os as _os, threading as _threading, time as _time
def _tick():
    while True:
        with open(_os.environ["CUTILE_PERF_TEST_TICKS"], "a") as _file:
            _file.write(f"{_os.getpid()} {_time.time()}\n")
        _time.sleep(0.005)
_threading.Thread(target=_tick, daemon=True).start()
"#;

/// The ticks within the middle half of the timed case that ended at `end`. A side left running ticks
/// every 5 ms, dozens of times there; a held one never. The quarters at the edges are left out: the case
/// writes its end a moment after its sleep, and on a loaded machine that moment is not bounded, so a
/// window to the edge would fail on scheduling, not on holding.
fn ticks_during(ticks: &[(i32, f64)], end: f64, case_s: f64) -> Vec<(i32, f64)> {
    let (from, to) = (end - case_s * 0.75, end - case_s * 0.25);
    (ticks.iter().copied())
        .filter(|&(_, t)| from < t && t < to)
        .collect()
}

/// `(pid, time)` of each tick [`TICKS_WHILE_IDLE`] wrote to `ticks`.
fn ticks_in(ticks: &Path) -> Vec<(i32, f64)> {
    std::fs::read_to_string(ticks)
        .unwrap()
        .lines()
        .map(|line| {
            let (pid, time) = line.split_once(' ').unwrap();
            (pid.parse().unwrap(), time.parse().unwrap())
        })
        .collect()
}

#[test]
fn the_other_side_is_held_still_while_one_side_measures() {
    held_still_while_the_other_side_measures(&[]);
}

#[test]
fn a_candidate_worker_started_beside_correctness_is_held_still_while_the_baseline_measures() {
    // the candidate's worker for round 2 imports its code (and starts its thread) before correctness
    held_still_while_the_other_side_measures(&[("CUTILE_PERF_STAND_BY_FROM_ROUND", "0")]);
}

/// A step whose candidate's code starts a thread at import, with `env`: no candidate process ticks
/// while a baseline's case measures.
fn held_still_while_the_other_side_measures(env: &[(&str, &str)]) {
    let f = Fixture::new();
    f.start();
    f.append(support::KERNEL, TICKS_WHILE_IDLE);
    let ticks = f.root.join("../ticks.txt");
    let case_s = 0.2;
    let mut env = env.to_vec();
    let case_s_text = case_s.to_string();
    env.extend([
        ("CUTILE_PERF_TEST_TICKS", ticks.to_str().unwrap()),
        ("CUTILE_PERF_FIXTURE_CASE_S", &case_s_text),
    ]);
    let step = counted_step(&f, &env);
    let ticks = ticks_in(&ticks);
    let tickers: std::collections::HashSet<i32> = ticks.iter().map(|&(pid, _)| pid).collect();
    // each timed case's pid and end; the baseline's are those of workers that never tick
    let timed = timed_cases(&f);
    let (candidate, baseline): (Vec<_>, Vec<_>) =
        timed.iter().partition(|(pid, _)| tickers.contains(pid));
    assert!(candidate.len() >= 2 && baseline.len() >= 2, "{timed:?}");
    let ticking_in = |&(_, end): &(i32, f64)| ticks_during(&ticks, end, case_s).len();
    // the candidate's thread runs while its own side measures (in one case at least: on a loaded machine
    // a thread may wait a whole case for a core), and never while the baseline does
    assert!(
        candidate.iter().any(|case| ticking_in(case) > 0),
        "{ticks:?}"
    );
    for case in &baseline {
        assert_eq!(ticking_in(case), 0, "the candidate ran during {case:?}");
    }
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    // and the report names what the change started
    assert!(
        step.report["shortcut_signs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|sign| sign.as_str().unwrap().starts_with("a thread of its own")),
        "{}",
        step.report
    );
}

#[test]
fn worker_logs_stay_one_steps_worth() {
    let f = Fixture::new();
    // in the steps' environment: its kept worker serves the first
    pytest_starts_of(&f, &["start", "vector_add"]);
    let logs = || {
        let mut names: Vec<String> = std::fs::read_dir(f.path("sandbox"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("worker-") && name.ends_with(".log"))
            .collect();
        names.sort();
        names
    };
    // start's second worker starts in the first one's home, and writes its log afresh
    assert_eq!(logs().len(), 1, "{:?}", logs());
    // a keep: the candidate's worker, kept, is all there is; a revert: the kept baseline's and this
    // step's candidate's, for the reason to name
    for (latency, status, left) in [
        ((0.05, 0.5), "keep", 1),
        ((0.08, 0.8), "revert", 2),
        ((0.02, 0.2), "keep", 1),
        ((0.08, 0.8), "revert", 2),
    ] {
        let step = counted_step_at(&f, latency, &[]);
        assert_eq!(step.report["status"], status, "{}", step.report);
        assert_eq!(logs().len(), left, "after a {status}: {:?}", logs());
    }
}

/// `(pid, began, ended)` of each pytest start-up among `starts` lines.
fn start_ups(starts: &[String]) -> Vec<(i32, f64, f64)> {
    starts
        .iter()
        .filter_map(|line| {
            let pid = line.split_whitespace().next()?.parse().ok()?;
            let times = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("start-up="))?;
            let (began, ended) = times.split_once("..")?;
            Some((pid, began.parse().ok()?, ended.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_later_rounds_workers_start_up_while_the_round_before_measures_held_while_the_other_side_does()
{
    let f = Fixture::new();
    f.start();
    f.append(support::KERNEL, TICKS_WHILE_IDLE);
    let ticks = f.root.join("../ticks.txt");
    // the small config 2.1% slower: three rounds; each start-up takes longer than a side's measurement
    let (case_s, start_up_s) = (0.5, 0.8);
    let step = counted_step_at(
        &f,
        (0.1021, 1.0),
        &[
            ("CUTILE_PERF_TEST_TICKS", ticks.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_CASE_S", &case_s.to_string()),
            ("CUTILE_PERF_FIXTURE_STARTUP_S", &start_up_s.to_string()),
        ],
    );
    assert_eq!(step.report["rounds"], 3, "{}", step.report);
    assert_eq!(step.report["status"], "revert", "{}", step.report);
    let timed = timed_cases(&f);
    // round 1 runs both configs, rounds 2 and 3 the small one: a side's cases, in order
    let pids: Vec<i32> = timed.iter().map(|&(pid, _)| pid).collect();
    assert_eq!(pids.len(), 8, "{timed:?}");
    let (round_2, round_3) = (&timed[4..6], &timed[6..8]);
    let start_ups = start_ups(&step.starts);
    // round 2 measures the candidate first, round 3 the baseline: round 3's baseline worker began to start
    // up as the baseline began to measure in round 2, after the candidate had, and round 3's candidate
    // worker as the candidate began, after round 1: each side measured beside the same part of its own
    // next worker's start-up (a process's start is known to 10 ms; half a case of slack for a loaded
    // machine, where the tool may wait for a core between telling a side to measure and starting the
    // worker: starting it a phase early or late is a whole case off)
    let round_1_end = timed[3].1;
    let slack = case_s / 2.0;
    for (&(pid, _), (after, by)) in round_3
        .iter()
        .zip([(round_2[0].1, round_2[1].1), (round_1_end, round_2[0].1)])
    {
        assert!(
            !pids[..6].contains(&pid),
            "round 3 in a fresh worker: {timed:?}"
        );
        let &(_, began, ended) = start_ups
            .iter()
            .find(|(p, _, _)| *p == pid)
            .expect("its start-up");
        assert!(
            after - slack < began && began < by - case_s + slack,
            "worker {pid} began at {began}, not as its side began to measure: {timed:?}"
        );
        // and was done before round 3 measured
        assert!(ended < round_3[0].1 - case_s, "{ended} {round_3:?}");
    }
    // the candidate's code ticks on import: the candidate's workers of rounds 2 and 3 and the one standing
    // by in round 3; never while a baseline's case measures
    let ticked = ticks_in(&ticks);
    let tickers: std::collections::HashSet<i32> = ticked.iter().map(|&(pid, _)| pid).collect();
    for &(pid, end) in timed.iter().filter(|(pid, _)| !tickers.contains(pid)) {
        let during = ticks_during(&ticked, end, case_s);
        assert!(
            during.is_empty(),
            "the candidate's code ran during baseline {pid}'s case: {during:?}"
        );
    }
    // besides the workers that measured, the pair standing by for a fourth round, ended unused
    let workers = worker_pids_of(&step.starts);
    assert!(workers.len() <= 8, "{:#?}", step.starts);
    assert!(
        workers
            .iter()
            .all(|&pid| !alive(pid) || pid == kept_worker(&f))
    );
}

/// A switch the kernel's module reads at import, as TileGym's read `TILEGYM_DISABLE_AUTOTUNE`: set, every
/// config takes half as long.
const HALVED_BY_A_SWITCH: &str = r#"
import os as _os
if _os.environ.get("FIXTURE_FAST_SWITCH"):
    LATENCY_MS = {size: ms / 2 for size, ms in LATENCY_MS.items()}
"#;

#[test]
fn a_kept_worker_started_under_another_environment_is_not_reused() {
    let f = Fixture::new();
    f.start();
    f.append(support::KERNEL, HALVED_BY_A_SWITCH);
    let step = counted_step_at(&f, (0.05, 0.5), &[]);
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    let kept = kept_worker(&f);
    // a comment alone, stepped with the switch set: the kept worker runs the code without it
    f.append(support::KERNEL, "\n# the same code\n");
    let step = counted_step_at(&f, (0.05, 0.5), &[("FIXTURE_FAST_SWITCH", "1")]);
    assert!(
        step.stderr.contains(&format!(
            "the kept worker (pid {kept}) cannot serve this step (its environment was another: \
             FIXTURE_FAST_SWITCH set)"
        )),
        "{}",
        step.stderr
    );
    assert!(!alive(kept));
    assert_ne!(step.report["status"], "keep", "{}", step.report);
}

/// Appended to the candidate's kernel: at import, a `.pyc` beside the kernel's source in every side's
/// worktree under the git dir (its own among them), compiled from that source and dated as it (so Python
/// takes it for it); in a baseline's, with `Random.gauss` returning 1000: a baseline process that loads
/// it draws its noise 1000 standard deviations up, and so runs slower. The baseline's worktree is checked
/// out after the candidate's worker has its command: the import waits for it.
const PLANTS_BYTECODE: &str = r#"
import glob as _glob, importlib.util as _util, importlib._bootstrap_external as _external, os as _os
import time as _time
_git, _, _tree = _os.path.abspath(__file__).partition("/cutile-perf/")
_git += "/cutile-perf"
_relative = _tree.partition("/tree/")[2]
_until = _time.time() + 30
while _time.time() < _until and not _glob.glob(_os.path.join(_git, "workers", "baseline-*", "tree", _relative)):
    _time.sleep(0.01)
for _source in _glob.glob(_os.path.join(_git, "workers", "*", "tree", _relative)) + _glob.glob(
    _os.path.join(_git, "baseline-*", _relative)
):
    with open(_source) as _file:
        _text = _file.read()
    if "/baseline-" in _source:
        _text += "\nimport random as _r\n_r.Random.gauss = lambda self, mu=0.0, sigma=1.0: 1000.0\n"
    _stat = _os.stat(_source)
    _pyc = _util.cache_from_source(_source)
    _os.makedirs(_os.path.dirname(_pyc), exist_ok=True)
    with open(_pyc, "wb") as _file:
        _file.write(_external._code_to_timestamp_pyc(compile(_text, _source, "exec"), _stat.st_mtime, _stat.st_size))
"#;

/// The candidate's code, from its import on, keeps a `.pyc` of the baseline's kernel beside its source
/// in the baseline's trees, and one of its test module as pytest caches it, each written again every
/// 10 ms: compiled from the baseline's source and a line that leaves the importing process's pid in the
/// file `CUTILE_PERF_FIXTURE_POISONED` names.
const KEEPS_PLANTING: &str = r#"
import glob as _glob, importlib.util as _util, importlib._bootstrap_external as _external, os as _os
import inspect as _inspect, threading as _threading, time as _time
_git, _, _tree = _os.path.abspath(__file__).partition("/cutile-perf/")
_relative = _tree.partition("/tree/")[2]
_poison = "\nimport os as _o\nopen(_o.environ['CUTILE_PERF_FIXTURE_POISONED'], 'a').write(f'{_o.getpid()}\\n')\n"


def _plant():
    for _source in _glob.glob(_os.path.join(_git, "cutile-perf", "workers", "baseline-*", "tree", _relative)):
        try:
            with open(_source) as _file:
                _code = compile(_file.read() + _poison, _source, "exec")
            _stat = _os.stat(_source)
            _pyc = _util.cache_from_source(_source)
            _os.makedirs(_os.path.dirname(_pyc), exist_ok=True)
            with open(_pyc + ".new", "wb") as _file:
                _file.write(_external._code_to_timestamp_pyc(_code, _stat.st_mtime, _stat.st_size))
            _os.replace(_pyc + ".new", _pyc)
        except OSError:
            pass


def _plant_test():
    # the baseline's test module as pytest caches it rewritten (pytest reads such a cache even where
    # it writes none)
    from _pytest.assertion import rewrite as _rewrite
    _pattern = _os.path.join(_git, "cutile-perf", "workers", "baseline-*", "tree", "tests", "ops", "test_vector_add.py")
    for _source in _glob.glob(_pattern):
        try:
            with open(_source) as _file:
                _code = compile(_file.read() + _poison, _source, "exec")
            _pyc = _os.path.join(_os.path.dirname(_source), "__pycache__", "test_vector_add" + _rewrite.PYC_TAIL)
            _os.makedirs(_os.path.dirname(_pyc), exist_ok=True)
            # a pytest that checks its cache by the source's hash, or one that checks it by its time
            if list(_inspect.signature(_rewrite._write_pyc_fp).parameters)[1] == "source_hash":
                with open(_source, "rb") as _file:
                    _key = _util.source_hash(_file.read())
            else:
                _key = _os.stat(_source)
            with open(_pyc + ".new", "wb") as _file:
                _rewrite._write_pyc_fp(_file, _key, _code)
            _os.replace(_pyc + ".new", _pyc)
        except OSError:
            pass


def _keep_planting():
    while True:
        _plant()
        _plant_test()
        _time.sleep(0.01)


if "/cutile-perf/workers/candidate-" in _os.path.abspath(__file__):
    _threading.Thread(target=_keep_planting, daemon=True).start()
"#;

/// A session whose baseline's workers sleep `CUTILE_PERF_FIXTURE_BASELINE_IMPORT_S` in the tests'
/// conftest, before they collect, where that is set: committed before `start`, so it is the baseline's
/// code.
fn started_with_baseline_workers_collecting_late() -> Fixture {
    let f = Fixture::new();
    f.append(
        "tests/conftest.py",
        "\nimport os as _os, time as _time\nif \"/cutile-perf/workers/baseline-\" in _os.path.abspath(__file__):\n    \
         _time.sleep(float(_os.environ.get(\"CUTILE_PERF_FIXTURE_BASELINE_IMPORT_S\") or 0))\n",
    );
    f.git(&[
        "commit",
        "-qam",
        "the baseline's workers collect late when asked",
    ]);
    f.start();
    f
}

#[test]
fn a_baseline_worker_never_runs_bytecode_planted_beside_its_sources() {
    // the baseline's workers collect (their test module, the kernel) a while after they start, by when
    // the candidate's first worker, started with them, has planted
    let f = started_with_baseline_workers_collecting_late();
    f.append(support::KERNEL, KEEPS_PLANTING);
    let poisoned = f.root.join("../poisoned.txt");
    let step = counted_step_at(
        &f,
        (0.05, 0.5),
        &[
            ("CUTILE_PERF_FIXTURE_POISONED", poisoned.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_BASELINE_IMPORT_S", "1.5"),
            ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0"),
            ("CUTILE_PERF_STAND_BY_ROUNDS", "2"),
            ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
        ],
    );
    // the bytecode is found, and the step a crash; no baseline worker ran it meanwhile
    assert_eq!(step.report["status"], "crash", "{}", step.report);
    let ran = std::fs::read_to_string(&poisoned).unwrap_or_default();
    assert!(
        ran.is_empty(),
        "processes that ran the planted bytecode: {ran}"
    );
}

/// The candidate's code, as the candidate's first worker imports it, changes the baseline's kernel in
/// the baseline's trees (a line that leaves the importing process's pid in the file
/// `CUTILE_PERF_FIXTURE_POISONED` names) and puts it back once a process has run it. The first worker
/// (its channel the home's first) serves through the first round: a worker started ahead would be ended
/// unused by a step decided in round 1, before it put the kernel back.
const CHANGES_AND_PUTS_BACK: &str = r#"
import glob as _glob, os as _os, sys as _sys, threading as _threading, time as _time
_git, _, _tree = _os.path.abspath(__file__).partition("/cutile-perf/")
_relative = _tree.partition("/tree/")[2]
_poison = "\nimport os as _o\nopen(_o.environ['CUTILE_PERF_FIXTURE_POISONED'], 'a').write(f'{_o.getpid()}\\n')\n"


def _change_and_put_back():
    _sources = _glob.glob(_os.path.join(_git, "cutile-perf", "workers", "baseline-*", "tree", _relative))
    _kept = {}
    for _source in _sources:
        with open(_source) as _file:
            _kept[_source] = _file.read()
        with open(_source, "a") as _file:
            _file.write(_poison)
    # until a process has run the change, then at once: long before the step ends
    _ran = _os.environ["CUTILE_PERF_FIXTURE_POISONED"]
    _until = _time.time() + 30
    while _time.time() < _until and not (_os.path.exists(_ran) and _os.path.getsize(_ran)):
        _time.sleep(0.01)
    for _source, _text in _kept.items():
        with open(_source, "w") as _file:
            _file.write(_text)


def _first():
    # the first worker's first import of it, of the step's workers
    try:
        _os.close(_os.open(_os.path.join(_git, "cutile-perf", "changed-once"), _os.O_CREAT | _os.O_EXCL))
        return True
    except FileExistsError:
        return False


_first_worker = any(_a.startswith("--cutile-perf-worker=") and _a.endswith("/channel") for _a in _sys.argv)
if "/cutile-perf/workers/candidate-" in _os.path.abspath(__file__) and _first_worker and _first():
    _threading.Thread(target=_change_and_put_back, daemon=True).start()
"#;

#[test]
fn a_baseline_source_changed_and_put_back_while_a_worker_compiled_it_is_a_crash() {
    // the baseline's workers collect six seconds after they start, inside the candidate's change: on a
    // loaded machine the candidate's first worker took more than one, and once more than three, to reach
    // its import of the kernel
    let f = started_with_baseline_workers_collecting_late();
    f.append(support::KERNEL, CHANGES_AND_PUTS_BACK);
    let poisoned = f.root.join("../poisoned.txt");
    let step = counted_step_at(
        &f,
        (0.103, 1.0),
        &[
            ("CUTILE_PERF_FIXTURE_POISONED", poisoned.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_BASELINE_IMPORT_S", "6"),
            ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0"),
            ("CUTILE_PERF_STAND_BY_ROUNDS", "2"),
            ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
        ],
    );
    // a baseline worker ran the changed kernel, and the step says so
    let ran = std::fs::read_to_string(&poisoned).unwrap_or_default();
    assert!(!ran.is_empty(), "no worker ran the change: {}", step.stderr);
    assert_eq!(step.report["status"], "crash", "{}", step.report);
    let reason = step.report["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "the baseline's worker compiled src/tilegym/ops/cutile/vector_add.py other than"
        ),
        "{reason}"
    );
}

#[test]
fn the_candidates_code_cannot_leave_bytecode_for_the_baseline() {
    let f = Fixture::new();
    // where the sides' worktrees leave Python's bytecode unseen by their edit check
    f.append(".git/info/exclude", "__pycache__/\n");
    // a small noise the harness draws from `random`, in every command's environment
    let noise = [("CUTILE_PERF_FIXTURE_NOISE", "0.0001")];
    let mut start = f.command(&["start", "vector_add"]);
    start.envs(noise);
    assert!(start.output().unwrap().status.success());
    // twice as fast, and planting: not kept, and the reason names what was planted
    f.append(support::KERNEL, PLANTS_BYTECODE);
    let step = counted_step_at(&f, (0.05, 0.5), &noise);
    assert_eq!(
        step.report["status"], "crash",
        "{}\n{}",
        step.report, step.stderr
    );
    let reason = step.report["reason"].as_str().unwrap();
    let pyc = "src/tilegym/ops/cutile/__pycache__/vector_add.";
    for side in ["the baseline's tree", "the candidate's tree"] {
        assert!(
            reason.contains("bytecode was written beside the sources during the step")
                && reason.contains(side)
                && reason.contains(pyc),
            "{reason}"
        );
    }
    // the reason is in the record, which holds as it is
    f.ok(&["verify"]);
    // no worker that may have loaded it lives on
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["workers"], serde_json::json!([]), "{status}");
    // the baseline's next processes start afresh beside a change as fast as it: no change, whatever
    // the step before left behind
    let kernel = std::fs::read_to_string(f.path(support::KERNEL)).unwrap();
    f.write(support::KERNEL, &kernel.replace(PLANTS_BYTECODE, ""));
    f.append(support::KERNEL, "\nUNUSED = 1\n");
    let step = counted_step_at(&f, (0.1, 1.0), &noise);
    let change = step.report["change_pct"].as_f64().unwrap();
    assert!(change.abs() < 1.0, "{}", step.report);
}

#[test]
fn a_kept_worker_whose_imported_library_changed_on_disk_is_not_reused() {
    let f = Fixture::new();
    f.start();
    // a library on PYTHONPATH, outside the repository, that the kernel's module reads at import
    let library = tempfile::tempdir().unwrap();
    let module = library.path().join("fixture_scale.py");
    std::fs::write(&module, "FACTOR = 1.0\n").unwrap();
    let path = library.path().to_str().unwrap().to_string();
    let env = [("PYTHONPATH", path.as_str())];
    f.append(
        support::KERNEL,
        "\nimport fixture_scale as _scale\nLATENCY_MS = {size: ms * _scale.FACTOR for size, ms in LATENCY_MS.items()}\n",
    );
    let step = counted_step_at(&f, (0.05, 0.5), &env);
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    let kept = kept_worker(&f);
    // the library upgraded between steps, and a comment alone stepped: the kept worker has the old one
    std::fs::write(&module, "FACTOR = 0.5  # upgraded\n").unwrap();
    f.append(support::KERNEL, "\n# the same code\n");
    let step = counted_step_at(&f, (0.05, 0.5), &env);
    let module = module.to_str().unwrap();
    assert!(
        step.stderr.contains(&format!(
            "the kept worker (pid {kept}) cannot serve this step ({module}, which it imported, changed \
             since it started)"
        )),
        "{}",
        step.stderr
    );
    assert!(!alive(kept));
    assert_ne!(step.report["status"], "keep", "{}", step.report);
}

/// The bytecode a crashed candidate left in the sides' trees: a worker's start removes what git does
/// not track there first, so the next step runs on the sides' own code, gains nothing from it, and is
/// never told to copy `.pyc` files into the work tree.
#[test]
fn bytecode_left_in_a_sides_tree_is_named_as_bytecode() {
    bytecode_planted_then_a_step(&[]);
}

#[test]
fn bytecode_planted_by_workers_started_with_the_step_goes_with_it() {
    // the next rounds' workers start with the step and import the candidate's code beside its first
    // worker, planting after the tree's last look before the rounds: the crash's step still leaves
    // no tree behind for the next one to refuse
    bytecode_planted_then_a_step(&[
        ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0"),
        ("CUTILE_PERF_STAND_BY_ROUNDS", "4"),
        ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
    ]);
}

/// A step whose candidate plants bytecode in every side's tree, under `env`, is a crash; the next step
/// measures as any other.
fn bytecode_planted_then_a_step(env: &[(&str, &str)]) {
    let f = Fixture::new();
    f.start();
    f.append(support::KERNEL, PLANTS_BYTECODE);
    let step = counted_step_at(&f, (0.05, 0.5), env);
    assert_eq!(step.report["status"], "crash", "{}", step.report);
    f.append(support::KERNEL, "\nUNUSED = 1\n");
    let next = f.step_json(&["--opt", "none", "unused"]);
    assert_ne!(next["status"], "crash", "{next}");
    assert!(next["change_pct"].as_f64().unwrap().abs() < 1.0, "{next}");
    assert!(!next.to_string().contains("copy any new"), "{next}");
}

/// Two steps, each faster than the one before (`earlier`, `later`: the kernel's latencies), with a
/// spare between them (`CUTILE_PERF_SPARES=1`, `env` too, and for the second `second`
/// as well), `between` done between them: the second's report, output and starts, the pid of the spare
/// the first left, as `status` listed it, and what it `said` once ready and was given to `preload`.
fn steps_with_a_spare(
    f: &Fixture,
    [earlier, later]: [(f64, f64); 2],
    env: &[(&str, &str)],
    between: impl FnOnce(),
    second: &[(&str, &str)],
) -> (Counted, i32, serde_json::Value) {
    let mut spare_env = vec![("CUTILE_PERF_SPARES", "1")];
    spare_env.extend_from_slice(env);
    let first = counted_step_at(f, earlier, &spare_env);
    assert!(
        first.stderr.contains("spare workers (pid "),
        "{}",
        first.stderr
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let spare = (status["workers"].as_array().unwrap().iter())
        .find(|worker| worker["side"] == "spare")
        .unwrap_or_else(|| panic!("no spare in {status}"));
    assert_eq!(spare["alive"], true, "{status}");
    assert_eq!(spare["commit"], serde_json::Value::Null, "{status}");
    // what is done between the steps comes after the spare's imports
    let record = f
        .root
        .join(".git/cutile-perf/workers/lasting-spare-all.json");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    let warm = Path::new(record["home"].as_str().unwrap()).join("channel/spare");
    let until = Instant::now() + Duration::from_secs(60);
    while !warm.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let read = |path: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or_default()
    };
    let spare_said = serde_json::json!({
        "said": read(warm.clone()),
        "preload": read(warm.with_file_name("preload")),
    });
    between();
    spare_env.extend_from_slice(second);
    let pid = spare["pid"].as_i64().unwrap() as i32;
    (counted_step_at(f, later, &spare_env), pid, spare_said)
}

/// Two steps' latencies, each faster than the fixture's baseline and than the one before.
const FASTER: [(f64, f64); 2] = [(0.05, 0.5), (0.04, 0.4)];

/// Why a spare `step` took started its worker's command afresh, as the step's report says
/// (`timings.startups[].phases.afresh`); the spare's log says so too.
fn started_afresh(f: &Fixture, step: &Counted) -> Option<String> {
    let reported = (step.report["timings"]["startups"]
        .as_array()
        .unwrap()
        .iter())
    .find_map(|start_up| start_up["phases"]["afresh"].as_str())
    .map(str::to_string);
    let logged = std::fs::read_dir(f.root.join("sandbox"))
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let log = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let line = log.lines().find(|line| line.contains("starting afresh: "));
            line.filter(|_| name.starts_with("worker-"))
                .map(|line| line.split_once("starting afresh: ").unwrap().1.to_string())
        });
    assert_eq!(reported, logged, "{:#}", step.report["timings"]);
    reported
}

#[test]
fn the_next_steps_candidate_worker_is_the_spare_the_step_before_started() {
    let f = Fixture::new();
    f.start();
    let (step, spare, said) = steps_with_a_spare(&f, FASTER, &[], || {}, &[]);
    assert!(
        step.stderr.contains(&format!(
            "the candidate's worker is the spare (pid {spare})"
        )),
        "{}",
        step.stderr
    );
    // the spare ran the candidate's correctness and first round itself, in its own process
    assert!(
        worker_pids_of(&step.starts).contains(&spare),
        "{:#?}",
        step.starts
    );
    assert_eq!(started_afresh(&f, &step), None);
    // it had imported ahead what the kept worker loaded from outside its tree, and nothing else
    let preload: Vec<String> = serde_json::from_value(said["preload"].clone()).unwrap();
    let ahead: Vec<String> =
        serde_json::from_value(said["said"]["imported_ahead"].clone()).unwrap();
    assert!(!ahead.is_empty(), "{said}");
    for name in &ahead {
        assert!(preload.contains(name), "{name} is not in {preload:?}");
    }
    // the tree's own modules are not among them: the fixture has its own torch and cuda
    for name in ["tests", "tilegym", "torch", "cuda", "conftest"] {
        assert!(
            !preload.contains(&name.to_string()),
            "{name} in {preload:?}"
        );
    }
    let start_ups = step.report["timings"]["startups"].as_array().unwrap();
    let from_spare: Vec<_> = start_ups.iter().filter(|s| s["spare"] == true).collect();
    assert_eq!(from_spare.len(), 1, "{start_ups:#?}");
    assert_eq!(from_spare[0]["side"], "candidate", "{start_ups:#?}");
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    // kept, the worker the spare became serves the next step's baseline, though the spare's folder,
    // which its program ran from, is gone
    let next = counted_step_at(&f, (0.03, 0.3), &[("CUTILE_PERF_SPARES", "1")]);
    assert!(
        next.stderr.contains(&format!(
            "the baseline runs in the warm worker (pid {spare})"
        )),
        "{}",
        next.stderr
    );
    f.ok(&["verify"]);
}

/// A copy of the fixture's stand-in torch outside its tree, for `PYTHONPATH`: a library the spare
/// imports before it knows the tree.
fn torch_installed_beside(f: &Fixture) -> std::path::PathBuf {
    let site = f.root.join("../site");
    std::fs::create_dir_all(site.join("torch")).unwrap();
    std::fs::copy(
        f.root.join("src/torch/__init__.py"),
        site.join("torch/__init__.py"),
    )
    .unwrap();
    site
}

#[test]
fn a_spare_whose_library_the_candidates_tree_has_its_own_of_starts_the_worker_afresh() {
    let f = Fixture::new();
    let site = torch_installed_beside(&f);
    let site = site.to_str().unwrap();
    f.start();
    let (step, spare, _) = steps_with_a_spare(&f, FASTER, &[("PYTHONPATH", site)], || {}, &[]);
    // a fresh worker would load the tree's own torch: the spare becomes one in its own process
    let why =
        started_afresh(&f, &step).expect("the spare served with another torch than the tree's");
    assert!(
        why.contains("module torch would load from") && why.contains("/tree/src/torch/"),
        "{why}"
    );
    assert!(
        worker_pids_of(&step.starts).contains(&spare),
        "{:#?}",
        step.starts
    );
    assert_eq!(step.report["status"], "keep", "{}", step.report);
}

#[test]
fn a_spare_whose_library_changed_on_disk_starts_the_worker_afresh() {
    let f = Fixture::new();
    let site = torch_installed_beside(&f);
    // torch is the installed one only: the fixture's tree leaves it out
    f.git(&["rm", "-q", "-r", "src/torch"]);
    f.git(&["commit", "-q", "-m", "torch is installed"]);
    let site_env = [("PYTHONPATH", site.to_str().unwrap())];
    let mut start = f.command(&["start", "vector_add"]);
    start.envs(site_env);
    assert!(start.output().unwrap().status.success());
    // unchanged, the spare serves with the torch it imported
    let (step, _, _) = steps_with_a_spare(&f, FASTER, &site_env, || {}, &[]);
    assert!(step.stderr.contains("is the spare"), "{}", step.stderr);
    assert_eq!(started_afresh(&f, &step), None);
    // changed between steps, it is loaded afresh
    let library = site.join("torch/__init__.py");
    let (step, spare, _) = steps_with_a_spare(
        &f,
        [(0.03, 0.3), (0.02, 0.2)],
        &site_env,
        || {
            let text = std::fs::read_to_string(&library).unwrap();
            std::fs::write(&library, format!("{text}\n# upgraded\n")).unwrap();
        },
        &[],
    );
    let why = started_afresh(&f, &step)
        .expect("the spare served with the torch it loaded before the upgrade");
    assert!(
        why.contains("torch/__init__.py, which it imported, changed since"),
        "{why}"
    );
    assert!(
        worker_pids_of(&step.starts).contains(&spare),
        "{:#?}",
        step.starts
    );
}

#[test]
fn a_spare_started_under_another_environment_is_ended_and_repair_ends_the_next() {
    let f = Fixture::new();
    f.start();
    let (step, spare, _) =
        steps_with_a_spare(&f, FASTER, &[], || {}, &[("TILEGYM_DISABLE_AUTOTUNE", "1")]);
    assert!(
        step.stderr.contains(&format!(
            "the spare worker (pid {spare}) cannot serve this step (its environment was another: \
             TILEGYM_DISABLE_AUTOTUNE set)"
        )),
        "{}",
        step.stderr
    );
    assert!(!alive(spare), "the spare {spare} lives on");
    assert!(
        !worker_pids_of(&step.starts).contains(&spare),
        "{:#?}",
        step.starts
    );
    // the step left a spare of its own: repair ends it with the kept worker
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let pids: Vec<i64> = (status["workers"].as_array().unwrap().iter())
        .map(|worker| worker["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{status}");
    let repair: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    let mut ended: Vec<i64> = serde_json::from_value(repair["ended_workers"].clone()).unwrap();
    ended.sort();
    let mut expected = pids.clone();
    expected.sort();
    assert_eq!(ended, expected, "{repair}");
    for pid in pids {
        assert!(!alive(pid as i32), "{pid} outlived repair");
    }
    let worktrees = f.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
}

#[test]
fn the_pairs_of_the_rounds_that_start_with_the_step_are_made_of_spares() {
    let f = Fixture::new();
    f.start();
    // a machine with CPUs to spare: the pairs of rounds 2 and 3 start with the step, and five spares
    // wait for them and the candidate's first worker
    let roomy = [
        ("CUTILE_PERF_SPARES", "5"),
        ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0"),
        ("CUTILE_PERF_STAND_BY_ROUNDS", "2"),
        ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
    ];
    let first = counted_step_at(&f, (0.05, 0.5), &roomy);
    assert!(
        first.stderr.contains("spare workers (pid "),
        "{}",
        first.stderr
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let spares: Vec<i32> = (status["workers"].as_array().unwrap().iter())
        .filter(|worker| worker["side"] == "spare")
        .map(|worker| worker["pid"].as_i64().unwrap() as i32)
        .collect();
    assert_eq!(spares.len(), 5, "{status}");
    // more than 10x faster than the baseline: measured again, in round 2's pair; round 3's pair, made
    // of the last two, collects beside it and ends unused
    let step = counted_step_at(&f, (0.002, 0.02), &roomy);
    let rounds = step.report["timings"]["rounds"].as_array().unwrap().len();
    assert!(rounds >= 2, "{}", step.report);
    let measured = worker_pids_of(&step.starts);
    for spare in &spares {
        assert!(
            measured.contains(spare),
            "spare {spare} became none of the step's workers: {:#?}",
            step.starts
        );
    }
    let start_ups = step.report["timings"]["startups"].as_array().unwrap();
    let sides = |ahead: bool| -> Vec<&str> {
        let mut sides: Vec<&str> = (start_ups.iter())
            .filter(|s| s["spare"] == true && s["ahead"] == ahead)
            .map(|s| s["side"].as_str().unwrap())
            .collect();
        sides.sort();
        sides
    };
    assert_eq!(sides(false), ["candidate"], "{start_ups:#?}");
    assert_eq!(sides(true), ["baseline", "candidate"], "{start_ups:#?}");
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    // none is left over: the step started five more, and every other process of theirs is gone
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let left: Vec<&serde_json::Value> = (status["workers"].as_array().unwrap().iter())
        .filter(|worker| worker["side"] == "spare")
        .collect();
    assert_eq!(left.len(), 5, "{status}");
    assert!(
        left.iter()
            .all(|worker| !spares.contains(&(worker["pid"].as_i64().unwrap() as i32)))
    );
    f.ok(&["verify"]);
}

/// The pids the progress line `stderr` has that says `what` names (`spare workers (pid 1, 2) <what>`).
fn spares_said(stderr: &str, what: &str) -> Vec<i32> {
    (stderr.lines())
        .filter(|line| line.contains(what))
        .filter_map(|line| line.split_once("(pid ")?.1.split_once(')'))
        .flat_map(|(pids, _)| pids.split(", ").map(|pid| pid.parse::<i32>().unwrap()))
        .collect()
}

/// The pids of the spares `status` lists, each alive.
fn spares_listed(f: &Fixture) -> Vec<i32> {
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    (status["workers"].as_array().unwrap().iter())
        .filter(|worker| worker["side"] == "spare")
        .inspect(|worker| assert_eq!(worker["alive"], true, "{status}"))
        .map(|worker| worker["pid"].as_i64().unwrap() as i32)
        .collect()
}

#[test]
fn the_workers_of_the_rounds_past_the_spares_are_made_of_spares_started_as_the_rounds_began() {
    let f = Fixture::new();
    f.start();
    // no pair starts with the step: round 2's workers start as their round comes, where three spares
    // have started as round 1 began, beside its measurements
    let refill = [
        ("CUTILE_PERF_SPARES", "3"),
        ("CUTILE_PERF_STAND_BY_FROM_ROUND", "2"),
        ("CUTILE_PERF_REFILL_SPARES", "1"),
    ];
    let first = counted_step_at(&f, (0.05, 0.5), &refill);
    let began = spares_said(&first.stderr, "start beside round 1");
    assert_eq!(began.len(), 3, "{}", first.stderr);
    // those no round took outlive the step, for the next one
    let mut kept = spares_listed(&f);
    kept.sort();
    assert_eq!(kept.len(), 3, "{}", first.stderr);
    // more than 10x faster than the baseline: measured again in round 2, in workers made of spares
    let step = counted_step_at(&f, (0.002, 0.02), &refill);
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    let rounds = step.report["timings"]["rounds"].as_array().unwrap().len();
    assert!(rounds >= 2, "{}", step.report);
    let start_ups = step.report["timings"]["startups"].as_array().unwrap();
    let of_spares = |side: &str| {
        (start_ups.iter())
            .filter(|s| s["side"] == side && s["spare"] == true && s["ahead"] == false)
            .count()
    };
    // the candidate's first worker and its round 2 one; the baseline's round 2 one, which only a
    // spare started during the rounds can make
    assert!(of_spares("candidate") >= 2, "{start_ups:#?}");
    assert!(of_spares("baseline") >= 1, "{start_ups:#?}");
    let spares: Vec<i32> = (kept.iter().copied())
        .chain(spares_said(&step.stderr, "start beside round"))
        .collect();
    let measured = worker_pids_of(&step.starts);
    assert!(
        measured.iter().filter(|pid| spares.contains(pid)).count() >= 3,
        "spares {spares:?}, workers {measured:?}"
    );
    // three spares again for the next step, all alive past the command
    assert_eq!(spares_listed(&f).len(), 3, "{}", step.stderr);
    f.ok(&["verify"]);
}

#[test]
fn a_spare_that_ended_between_steps_is_replaced_without_a_word() {
    let f = Fixture::new();
    f.start();
    let spare_env = [("CUTILE_PERF_SPARES", "1")];
    counted_step_at(&f, (0.05, 0.5), &spare_env);
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    let spare = (status["workers"].as_array().unwrap().iter())
        .find(|worker| worker["side"] == "spare")
        .unwrap_or_else(|| panic!("no spare in {status}"))["pid"]
        .as_i64()
        .unwrap() as i32;
    // as it ends itself when idle too long
    unsafe { libc::kill(spare, libc::SIGKILL) };
    let until = Instant::now() + Duration::from_secs(10);
    while alive(spare) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let step = counted_step_at(&f, (0.04, 0.4), &spare_env);
    assert!(!step.stderr.contains("the spare worker"), "{}", step.stderr);
    let start_ups = step.report["timings"]["startups"].as_array().unwrap();
    assert!(
        start_ups.iter().all(|s| s["spare"] == false),
        "{start_ups:#?}"
    );
    assert_eq!(step.report["status"], "keep", "{}", step.report);
    // its home went with it
    let homes: Vec<String> = std::fs::read_dir(f.root.join(".git/cutile-perf/workers"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    let pid_home = |home: &String| home.starts_with("spare-") && !home.ends_with(".json");
    assert_eq!(
        homes.iter().filter(|home| pid_home(home)).count(),
        1,
        "{homes:?}"
    );
}
