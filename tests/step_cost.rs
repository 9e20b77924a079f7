//! What a step costs: `step --json`'s `timings` (the start-ups it waited for and each worker's, the
//! correctness tests, each round's measuring, the census, the checks, the rest) add up to the step; the
//! pair that measures round 2 is started as its side begins to measure in round 1; each worker starts
//! torch's profiler once before it is ready; correctness runs in the candidate's warm worker. Seen
//! through the fixture's stand-ins: each pytest start appends its arguments to
//! `CUTILE_PERF_FIXTURE_STARTS`, each timed case its pid to `CUTILE_PERF_FIXTURE_CASES`, and a stand-in
//! torch its GPU calls to `CUTILE_PERF_FIXTURE_CUDA_LOG`.

use crate::support;

use support::{Fixture, text};

/// What a step left: its report, its stderr, the pytest starts and the pid of each timed case.
struct Step {
    report: serde_json::Value,
    stderr: String,
    starts: Vec<String>,
    timed: Vec<i32>,
}

/// A step whose small config is 3% slower (two rounds: round 2 runs the small case alone), with `env`.
fn two_round_step(f: &Fixture, env: &[(&str, &str)]) -> Step {
    f.set_latency(0.103, 1.0);
    let (starts, cases) = (f.root.join("../starts.txt"), f.root.join("../cases.txt"));
    let _ = std::fs::remove_file(&starts);
    let _ = std::fs::remove_file(&cases);
    let mut command = f.command(&["step", "--opt", "none", "--json", "tile size 256"]);
    command
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .env("CUTILE_PERF_FIXTURE_CASES", &cases)
        .envs(env.iter().copied());
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let read = |path| std::fs::read_to_string(path).unwrap_or_default();
    let step = Step {
        report: serde_json::from_slice(&out.stdout).unwrap(),
        stderr: text(&out.stderr),
        starts: read(&starts).lines().map(str::to_string).collect(),
        timed: (read(&cases).lines())
            .map(|line| line.split_whitespace().next().unwrap().parse().unwrap())
            .collect(),
    };
    assert_eq!(step.report["rounds"], 2, "{}", step.report);
    step
}

/// The pytest start line of process `pid`.
fn start_of(step: &Step, pid: i32) -> &String {
    let prefix = format!("{pid} ");
    (step.starts.iter())
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no start of {pid}: {:#?}", step.starts))
}

/// A number of the report's `timings`.
fn seconds(timings: &serde_json::Value, name: &str) -> f64 {
    timings[name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: {timings}"))
}

#[test]
fn round_twos_pair_starts_as_its_side_measures_in_round_one_and_the_timings_add_up() {
    let f = Fixture::new();
    f.start();
    let step = two_round_step(&f, &[]);
    // round 1 runs both configs a side, round 2 the small one: its two workers are the ones started in
    // the second channel of each side's home, which only a side beginning to measure starts
    let round_2 = &step.timed[4..6];
    assert_eq!(step.timed.len(), 6, "{:?}", step.timed);
    for &pid in round_2 {
        assert!(!step.timed[..4].contains(&pid), "{:?}", step.timed);
        let line = start_of(&step, pid);
        assert!(line.contains("/channel.1 "), "{line}");
    }
    let timings = &step.report["timings"];
    // the parts waited for one after another, and the rest, are the step
    let parts: f64 = [
        "startup_waited_s",
        "correctness_s",
        "measuring_s",
        "checks_s",
        "compile_facts_s",
        "diagnosis_s",
        "other_s",
    ]
    .iter()
    .map(|name| {
        let part = seconds(timings, name);
        assert!(part >= 0.0, "{name}: {timings}");
        part
    })
    .sum();
    assert!(
        (parts - seconds(timings, "step_s")).abs() < 1e-6,
        "{timings}"
    );
    let rounds = timings["rounds"].as_array().unwrap();
    let names: Vec<&str> = rounds
        .iter()
        .map(|r| r["round"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["round-1", "round-2"], "{timings}");
    let measured: f64 = (rounds.iter())
        .map(|r| seconds(r, "candidate_s") + seconds(r, "baseline_s"))
        .sum();
    assert!((measured - seconds(timings, "measuring_s")).abs() < 1e-6);
    assert!(seconds(timings, "census_s") <= seconds(timings, "measuring_s"));
    // the step's first workers and round 2's pair, told apart: the pair started ahead
    let startups = timings["startups"].as_array().unwrap();
    let ahead: Vec<&str> = (startups.iter())
        .filter(|s| s["ahead"] == true)
        .map(|s| s["side"].as_str().unwrap())
        .collect();
    assert_eq!(ahead, ["candidate", "baseline"], "{timings}");
    assert!(startups.len() >= 3, "{timings}");

    // the same step with round 2's pair started when round 2 begins: in the first channel, not ahead
    let later = two_round_step(&f, &[("CUTILE_PERF_STAND_BY_FROM_ROUND", "2")]);
    for &pid in &later.timed[4..6] {
        let line = start_of(&later, pid);
        assert!(line.contains("/channel "), "{line}");
    }
    let later_startups = later.report["timings"]["startups"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        later_startups.iter().all(|s| s["ahead"] == false),
        "{later_startups:?}"
    );
}

#[test]
fn correctness_runs_in_the_candidates_warm_worker_its_start_up_told_apart() {
    let f = Fixture::new();
    f.start();
    let cuda_log = f.root.join("../cuda.txt");
    let start_up_s = 0.5;
    let step = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_STARTUP_S", &start_up_s.to_string()),
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
        ],
    );
    assert!(
        step.stderr
            .contains("correctness: in the warm candidate worker, 6 cases, 0 failed"),
        "{}",
        step.stderr
    );
    // the candidate's first worker served correctness first: its start-up, the fixture's sleep at
    // least, is told apart from the tests
    let timings = &step.report["timings"];
    let first = &timings["startups"][0];
    assert_eq!(first["side"], "candidate", "{timings}");
    assert_eq!(first["ahead"], false, "{timings}");
    assert!(seconds(first, "seconds") >= start_up_s, "{timings}");
    // every worker that measured made its GPU context, then started the profiler once, before its cases
    let log = std::fs::read_to_string(&cuda_log).unwrap();
    let events = |pid: i32, event: &str| -> usize {
        log.lines()
            .filter(|line| line.starts_with(&format!("{pid} {event} ")))
            .count()
    };
    let mut measured = step.timed.clone();
    measured.dedup();
    for pid in measured {
        let order: Vec<&str> = (log.lines())
            .filter(|line| line.starts_with(&format!("{pid} ")))
            .filter_map(|line| line.split_whitespace().nth(1))
            .filter(|event| *event != "empty-cache")
            .collect();
        assert_eq!(order.first().copied(), Some("context"), "{pid}: {log}");
        assert_eq!(events(pid, "profiler"), 1, "{pid}: {log}");
    }
}
