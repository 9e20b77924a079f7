//! What a step costs: `step --json`'s `timings` (the start-ups it waited for and each worker's, the
//! correctness tests, each round's measuring, the census, the checks, the rest) add up to the step; the
//! pair that measures round 2 is started as its side begins to measure in round 1, or, as a setting
//! asks, as the step begins, before correctness ends; each worker starts
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
    /// When each timed case ended, in the order of `timed`.
    timed_at: Vec<f64>,
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
    let cases = read(&cases);
    let field = |line: &str, index: usize| line.split_whitespace().nth(index).unwrap().to_string();
    let step = Step {
        report: serde_json::from_slice(&out.stdout).unwrap(),
        stderr: text(&out.stderr),
        starts: read(&starts).lines().map(str::to_string).collect(),
        timed: (cases.lines())
            .map(|line| field(line, 0).parse().unwrap())
            .collect(),
        timed_at: (cases.lines())
            .map(|line| field(line, 3).parse().unwrap())
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

/// When the process of a pytest start line began (its fork, to the stand-in's 10 ms), and when its
/// conftest ran, after it.
fn began_and_loaded(line: &str) -> (f64, f64) {
    let times = (line.split_whitespace())
        .find_map(|field| field.strip_prefix("start-up="))
        .unwrap_or_else(|| panic!("no start-up in {line}"));
    let (began, loaded) = times.split_once("..").unwrap();
    (began.parse().unwrap(), loaded.parse().unwrap())
}

/// When the stand-in torch's first `what` of process `pid` in `log` began and ended.
fn logged_event(log: &str, pid: i32, what: &str) -> (f64, f64) {
    (log.lines())
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields[0] == pid.to_string() && fields[1] == what)
        .map(|fields| (fields[2].parse().unwrap(), fields[3].parse().unwrap()))
        .unwrap_or_else(|| panic!("no {what} of {pid}: {log}"))
}

/// When the first worker in `log` began to hand its cached blocks back: after the step's first
/// command, the candidate's correctness.
fn first_cache_release(log: &str) -> f64 {
    (log.lines())
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields[1] == "empty-cache")
        .map(|fields| fields[2].parse::<f64>().unwrap())
        .fold(f64::INFINITY, f64::min)
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
        "preflight_s",
        "record_s",
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

#[test]
fn each_start_up_says_where_it_went() {
    let f = Fixture::new();
    f.start();
    let cuda_log = f.root.join("../cuda.txt");
    let (start_up_s, context_s) = (0.4, 0.3);
    let step = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_STARTUP_S", &start_up_s.to_string()),
            (
                "CUTILE_PERF_FIXTURE_CANDIDATE_CONTEXT_S",
                &context_s.to_string(),
            ),
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
        ],
    );
    let timings = &step.report["timings"];
    let startups = timings["startups"].as_array().unwrap();
    assert!(startups.len() >= 3, "{timings}");
    for startup in startups {
        let phases = &startup["phases"];
        // the fixture's conftest sleeps through its start-up, before pytest is configured
        let configured_s = seconds(phases, "configured_s");
        assert!(configured_s >= start_up_s, "{timings}");
        assert!(configured_s <= seconds(phases, "collected_s"), "{timings}");
        assert!(seconds(phases, "profiler_s") >= 0.0, "{timings}");
        // only the candidate's worktree makes its context slowly
        let slow = startup["side"] == "candidate";
        assert_eq!(seconds(phases, "context_s") >= context_s, slow, "{timings}");
    }
}

#[test]
fn on_a_roomy_machine_later_rounds_workers_start_with_the_step_and_warm_up_once_the_candidate_is_ready()
 {
    let f = Fixture::new();
    f.start();
    let cuda_log = f.root.join("../cuda.txt");
    let step = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
            // the candidate's first worker is ready well after the others have collected
            ("CUTILE_PERF_FIXTURE_CANDIDATE_CONTEXT_S", "1"),
            // round 1 lasts long enough that a loaded machine starts the waiting workers within it
            ("CUTILE_PERF_FIXTURE_CASE_S", "0.5"),
            ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0"),
            ("CUTILE_PERF_STAND_BY_ROUNDS", "2"),
            ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
        ],
    );
    let log = text_of(&cuda_log);
    // the first candidate worker is ready once its profiler has started
    let first_ready = logged_event(&log, step.timed[2], "profiler").1;
    let correctness_ended = first_cache_release(&log);
    for &pid in &step.timed[4..6] {
        let line = start_of(&step, pid);
        assert!(line.contains("/channel.1 "), "{line}\n{}", step.stderr);
        // started with the step, before correctness ended
        assert!(began_and_loaded(line).0 < correctness_ended, "{line}");
        // and began their contexts only once the candidate's first worker was ready, before round 1
        // was over, not when round 2 let them go
        let context = logged_event(&log, pid, "context").0;
        assert!(context >= first_ready, "{pid}: {log}\n{}", step.stderr);
        assert!(context < step.timed_at[3], "{pid}: {log}\n{}", step.stderr);
    }
    let timings = &step.report["timings"];
    // round 3's pair, and round 4's that round 2 started, never served
    assert!(
        timings["started_unused"].as_u64().unwrap() >= 2,
        "{timings}"
    );
    let ahead = (timings["startups"].as_array().unwrap().iter())
        .filter(|s| s["ahead"] == true)
        .count();
    assert_eq!(ahead, 2, "{timings}");
}

/// The lines of `path` that say `what` of a process, as `pid what`.
fn pids_saying(path: &std::path::Path, what: &str) -> Vec<i32> {
    (std::fs::read_to_string(path).unwrap_or_default().lines())
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.get(1) == Some(&what))
        .map(|fields| fields[0].parse().unwrap())
        .collect()
}

#[test]
fn round_twos_pair_makes_its_gpu_contexts_together_when_asked_before_either_measures() {
    let f = Fixture::new();
    f.start();
    let (cuda_log, meet) = (f.root.join("../cuda.txt"), f.root.join("../meet.txt"));
    // each stand-in context of a worker in its home's second channel (round 2's pair) waits for a
    // partner: round 2's two contexts meet only when both workers were let go before either was ready
    let step = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_CONTEXT_MEET", meet.to_str().unwrap()),
            ("CUTILE_PERF_READY_TOGETHER", "1"),
        ],
    );
    let round_2 = &step.timed[4..6];
    let met = pids_saying(&meet, "met");
    for pid in round_2 {
        assert!(met.contains(pid), "{round_2:?}: {}", text_of(&meet));
    }
    // both contexts were made before either side measured round 2
    let log = text_of(&cuda_log);
    let cases = text_of(&f.root.join("../cases.txt"));
    let first_case_ended: f64 = (cases.lines())
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| round_2.contains(&fields[0].parse().unwrap()))
        .map(|fields| fields[3].parse::<f64>().unwrap())
        .fold(f64::INFINITY, f64::min);
    for &pid in round_2 {
        assert!(
            logged_event(&log, pid, "context").1 <= first_case_ended,
            "{log}\n{cases}"
        );
    }

    // one after the other, by default: the first waits for its partner alone
    let _ = std::fs::remove_file(&meet);
    let _ = std::fs::remove_file(&cuda_log);
    let apart = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_CONTEXT_MEET", meet.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_CONTEXT_MEET_S", "1"),
        ],
    );
    let alone = pids_saying(&meet, "alone");
    assert!(
        apart.timed[4..6].iter().any(|pid| alone.contains(pid)),
        "{}",
        text_of(&meet)
    );
}

#[test]
fn a_pair_standing_by_at_once_makes_its_contexts_while_its_sides_measure_the_round_before() {
    let f = Fixture::new();
    f.start();
    let cuda_log = f.root.join("../cuda.txt");
    // each timed case waits for a worker started after its own to make its GPU context
    let step = two_round_step(
        &f,
        &[
            ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap()),
            ("CUTILE_PERF_FIXTURE_AWAIT_LATER_CONTEXT_S", "20"),
            ("CUTILE_PERF_STAND_BY_AT_ONCE", "1"),
        ],
    );
    // round 1 measures the candidate second, in the step's first candidate worker: the worker that
    // stood by for its round 2 made its context while it measured (the baseline's, started as the
    // baseline measured, is held still meanwhile)
    let round_1_candidate = step.timed[2];
    assert_eq!(step.timed[3], round_1_candidate, "{:?}", step.timed);
    assert!(!step.timed[..2].contains(&round_1_candidate));
    assert!(!step.timed[4..6].contains(&round_1_candidate));
    let yes = pids_saying(&cuda_log, "awaited");
    let log = text_of(&cuda_log);
    assert!(yes.contains(&round_1_candidate), "{log}");
    assert!(
        log.lines()
            .filter(|line| line.starts_with(&format!("{round_1_candidate} awaited ")))
            .all(|line| line.ends_with(" yes")),
        "{log}"
    );
    // still started ahead, its start-up counted from its start
    let startups = step.report["timings"]["startups"].as_array().unwrap();
    let ahead = (startups.iter()).filter(|s| s["ahead"] == true).count();
    assert_eq!(ahead, 2, "{startups:?}");
}

fn text_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn workers_stand_by_two_rounds_ahead_once_a_round_says_more_rounds_fit() {
    let f = Fixture::new();
    f.start();
    let unused = |step: &Step| step.report["timings"]["started_unused"].as_u64().unwrap();
    // one round ahead, as by default: round 2 starts round 3's pair, which a step decided in round 2
    // ends unused; no spares, which the later rounds' workers would be made of
    let no_spares = ("CUTILE_PERF_SPARES", "0");
    let one = two_round_step(&f, &[no_spares]);
    assert_eq!(unused(&one), 2, "{}", one.report["timings"]);
    // two: round 1 knows no round's cost and starts round 2's pair only; round 2, with the budget
    // fitting more, starts round 3's and round 4's, each in a channel of its own (the candidate's
    // beside its first worker's; the baseline's stand by in the kept worker's home, where it is free)
    let deep = two_round_step(&f, &[no_spares, ("CUTILE_PERF_STAND_BY_ROUNDS", "2")]);
    assert_eq!(unused(&deep), 4, "{}", deep.report["timings"]);
    // a setting of the tool's own, changed between steps, ends no warm worker
    assert!(
        deep.stderr.contains("the baseline runs in the warm worker"),
        "{}",
        deep.stderr
    );
    let round_2_candidate = deep.timed[4];
    assert!(start_of(&deep, round_2_candidate).contains("/channel.1 "));
    let ahead = (deep.report["timings"]["startups"]
        .as_array()
        .unwrap()
        .iter())
    .filter(|s| s["ahead"] == true)
    .count();
    assert_eq!(ahead, 2, "{}", deep.report["timings"]);
}

#[test]
fn a_null_step_measured_past_its_first_round_when_asked() {
    let f = Fixture::new();
    f.start();
    // a comment that moves the kernel down a line: compiled alike to the baseline
    f.edit_kernel("@ct.kernel", "# the same kernel, said again\n@ct.kernel");
    let out = f
        .command(&["step", "--opt", "none", "--json", "a comment"])
        .env("CUTILE_PERF_REROLL_ALIKE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // the verdict of the rounds decides it, as for any change, not the check that it compiled alike
    assert_ne!(
        report["reason"],
        git_cutile_perf::rules::decision::NO_CHANGE,
        "{report}"
    );
    assert!(report["change_pct"].is_number(), "{report}");
    assert_eq!(report["checks"]["no_reroll_s"], 0.0, "{report}");
}

#[test]
fn from_the_correctness_run_round_twos_pair_starts_before_correctness_ends_and_round_one_measures()
{
    let f = Fixture::new();
    f.start();
    let cuda_log = f.root.join("../cuda.txt");
    let logged = ("CUTILE_PERF_FIXTURE_CUDA_LOG", cuda_log.to_str().unwrap());
    // the first command a worker of the step ends is the candidate's correctness, after which its
    // worker hands its cached blocks back: the log's first `empty-cache`
    let correctness_ended = || first_cache_release(&text_of(&cuda_log));
    let first_case_ended =
        |step: &Step| step.timed_at.iter().copied().fold(f64::INFINITY, f64::min);
    let early = two_round_step(&f, &[logged, ("CUTILE_PERF_STAND_BY_FROM_ROUND", "0")]);
    let (ended, first_case) = (correctness_ended(), first_case_ended(&early));
    assert!(ended.is_finite(), "{}", text_of(&cuda_log));
    for &pid in &early.timed[4..6] {
        let line = start_of(&early, pid);
        assert!(line.contains("/channel.1 "), "{line}");
        let (began, _) = began_and_loaded(line);
        assert!(began < ended, "{line}: correctness ended at {ended}");
        assert!(
            began < first_case,
            "{line}: round 1's first case ended at {first_case}"
        );
    }
    // still started ahead of their round, their start-ups counted from their go
    let startups = early.report["timings"]["startups"].as_array().unwrap();
    let ahead: Vec<&str> = (startups.iter())
        .filter(|s| s["ahead"] == true)
        .map(|s| s["side"].as_str().unwrap())
        .collect();
    assert_eq!(ahead, ["candidate", "baseline"], "{startups:?}");

    // by default, each side starts round 2's worker as it begins to measure round 1: after correctness,
    // and the side measuring second after round 1's first case
    let _ = std::fs::remove_file(&cuda_log);
    let late = two_round_step(&f, &[logged]);
    let (ended, first_case) = (correctness_ended(), first_case_ended(&late));
    let loaded: Vec<f64> = (late.timed[4..6].iter())
        .map(|&pid| began_and_loaded(start_of(&late, pid)).1)
        .collect();
    assert!(loaded.iter().all(|&at| at > ended), "{loaded:?}: {ended}");
    assert!(
        loaded.iter().any(|&at| at > first_case),
        "{loaded:?}: {first_case}"
    );
}

#[test]
fn workers_started_for_round_two_beside_a_correctness_that_fails_are_counted_unused() {
    let f = Fixture::new();
    f.start();
    let unused = |env: &[(&str, &str)]| -> u64 {
        f.edit_kernel("CORRECT = True", "CORRECT = False");
        let out = (f.command(&["step", "--opt", "none", "--json", "a wrong result"]))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["status"], "revert", "{report}");
        assert!(
            report["timings"]["rounds"].as_array().unwrap().is_empty(),
            "{report}"
        );
        report["timings"]["started_unused"].as_u64().unwrap()
    };
    assert_eq!(unused(&[("CUTILE_PERF_STAND_BY_FROM_ROUND", "0")]), 2);
    assert_eq!(unused(&[]), 0);
}
