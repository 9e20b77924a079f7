//! `start` and `step` run in this process against the stand-in runner (`support::standin`), which
//! replays recorded JUnit files instead of running pytest: the real H200 benchmark files of the
//! rms_norm session under `tests/data/h200-sessions/rms_norm/junit/` decide keep and revert as they did on the
//! H200, a failing correctness file decides FAIL, and a run killed at the budget a crash. No pytest
//! process runs; git, the hook and the record are real.

use crate::support;

use std::path::Path;

use clap::Parser;
use git_cutile_perf::system::git::{self, Repo};
use git_cutile_perf::system::process::Ending;
use git_cutile_perf::system::ui::Ui;
use git_cutile_perf::verbs::cli::{Cli, Command};
use git_cutile_perf::verbs::commands;
use serde_json::Value;
use support::standin::{Replay, StandIn};
use support::*;

/// The benchmark files of the rms_norm session on the H200: iteration 1 (TMA allowed on the
/// static-persistent store) was 45.8% slower than iteration 0 on 262144x4096.
const RMS_NORM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/h200-sessions/rms_norm/junit"
);

/// A correctness run whose two cases passed.
const PASSED: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2"><testcase classname="tests.ops.test_vector_add" name="test_op[cutile-1024]" time="0.1" /><testcase classname="tests.ops.test_vector_add" name="test_op[cutile-4096]" time="0.1" /></testsuite></testsuites>"#;

/// The same run with its second case failed.
const ONE_FAILED: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="2"><testcase classname="tests.ops.test_vector_add" name="test_op[cutile-1024]" time="0.1" /><testcase classname="tests.ops.test_vector_add" name="test_op[cutile-4096]" time="0.1"><failure message="AssertionError: outputs differ">AssertionError: outputs differ</failure></testcase></testsuite></testsuites>"#;

fn recorded(file: &str) -> Replay {
    Replay::file(&Path::new(RMS_NORM).join(file), 0)
}

/// Run `n` (1 to 3) of three processes of unchanged rope code on the H200: microsecond configs.
fn rope_unchanged(n: u32) -> Replay {
    Replay::file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "tests/data/tilegym-junit/noise-h200/test_rope_{n}.xml"
        )),
        0,
    )
}

/// A session whose baseline measured `benchmark`, started in-process; the environment is the
/// harness's sealed one, held until the test ends. The verbs' progress goes to `progress`.
struct Session {
    fixture: Fixture,
    repo: Repo,
    progress: Captured,
    _environment: ProcessEnvironment,
}

fn parsed(words: &[&str]) -> Command {
    let mut full = vec!["git-cutile-perf"];
    full.extend(words);
    Cli::try_parse_from(full).unwrap().command
}

impl Session {
    fn start(benchmark: Replay) -> Session {
        let environment = ProcessEnvironment::hold();
        let fixture = Fixture::new();
        for (name, value) in fixture.environment() {
            environment.set(name, value);
        }
        // the hook checks the tool's commits with the tool, not with this test
        git::TOOL_BINARY.get_or_init(|| BIN.clone());
        let repo = Repo::discover(&fixture.root).unwrap();
        let stand_in = StandIn {
            root: repo.root.clone(),
            correctness: Replay::text(PASSED, 0),
            benchmark: benchmark.clone(),
            baseline_benchmark: benchmark,
            runs: Default::default(),
        };
        let Command::Start(args) = parsed(&["start", "vector_add", "--no-gpu"]) else {
            unreachable!("start parses as start")
        };
        let options = args.try_into().unwrap();
        let (mut out, progress) = (Vec::new(), Captured::default());
        let mut ui = Ui::plain(&mut out, progress.progress(), false);
        stand_in
            .around(|| commands::start::run(&mut ui, &repo, &options))
            .unwrap();
        assert_eq!(
            stand_in.runs.borrow()[..2],
            ["correctness candidate", "benchmark candidate"]
        );
        Session {
            fixture,
            repo,
            progress,
            _environment: environment,
        }
    }

    /// A step of a change to the kernel, with `correctness` and the candidate's and baseline's
    /// benchmark files replayed: its report as `--json` prints it, and the runs replayed.
    fn step(
        &self,
        correctness: Replay,
        candidate: Replay,
        baseline: Replay,
    ) -> (Value, Vec<String>) {
        self.step_with(&[], correctness, candidate, baseline)
    }

    /// [`Session::step`] with `options` on its command line; the iteration it records is the replay of
    /// its evidence.
    fn step_with(
        &self,
        options: &[&str],
        correctness: Replay,
        candidate: Replay,
        baseline: Replay,
    ) -> (Value, Vec<String>) {
        self.fixture
            .edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
        let stand_in = StandIn {
            root: self.repo.root.clone(),
            correctness,
            benchmark: candidate,
            baseline_benchmark: baseline,
            runs: Default::default(),
        };
        let words = [&["step", "--opt", "none", "bigger tiles"], options].concat();
        let Command::Step(args) = parsed(&words) else {
            unreachable!("step parses as step")
        };
        let mut out = Vec::new();
        let mut ui = Ui::plain(&mut out, self.progress.progress(), false);
        let report = stand_in
            .around(|| commands::step::run(&mut ui, &self.repo, &args.into()))
            .unwrap();
        let runs = stand_in.runs.borrow().clone();
        self.fixture.replays_as_recorded();
        (serde_json::to_value(report).unwrap(), runs)
    }
}

#[test]
fn a_recorded_h200_gain_is_kept() {
    let session = Session::start(recorded("iteration-1.xml"));
    let (report, runs) = session.step(
        Replay::text(PASSED, 0),
        recorded("iteration-0.xml"),
        recorded("iteration-1.xml"),
    );
    assert_eq!(report["status"], "keep", "{report:#}");
    assert_eq!(report["correctness"], "PASS");
    assert!(report["change_pct"].as_f64().unwrap() < -2.0, "{report:#}");
    assert_eq!(runs[0], "correctness candidate");
    assert!(runs.contains(&"benchmark baseline".to_string()), "{runs:?}");
    assert_eq!(
        session.fixture.trailer("HEAD", "Cutile-Perf-Status"),
        "keep"
    );
}

#[test]
fn the_recorded_h200_slowdown_is_reverted_naming_its_config() {
    let session = Session::start(recorded("iteration-0.xml"));
    let (report, _) = session.step(
        Replay::text(PASSED, 0),
        recorded("iteration-1.xml"),
        recorded("iteration-0.xml"),
    );
    assert_eq!(report["status"], "revert", "{report:#}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("static_persistent-262144-4096"),
        "as on the H200: {report:#}"
    );
    // the slowed config is beyond noise in one round even were the noise model ten times too narrow:
    // no second round, each config counted once
    assert_eq!(report["rounds"], 1, "{report:#}");
    for config in report["configs"].as_array().unwrap() {
        assert_eq!(config["rounds"], 1, "{config}");
    }
}

#[test]
fn a_failed_case_is_a_fail_and_no_benchmark_runs() {
    let session = Session::start(recorded("iteration-0.xml"));
    let (report, runs) = session.step(
        Replay::text(ONE_FAILED, 1),
        recorded("iteration-0.xml"),
        recorded("iteration-0.xml"),
    );
    assert_eq!(report["correctness"], "FAIL", "{report:#}");
    assert_eq!(report["status"], "revert");
    // the reason, not only the progress line, names the failing case for a reader of the report
    assert_eq!(
        report["reason"],
        "correctness failed in 1 case: tests.ops.test_vector_add::test_op[cutile-4096]; the benchmark was \
         not run"
    );
    assert_eq!(
        report["failed"],
        serde_json::json!(["tests.ops.test_vector_add::test_op[cutile-4096]"])
    );
    assert_eq!(runs, ["correctness candidate"]);
}

#[test]
fn a_steps_progress_lines_arrive_at_its_ui() {
    let session = Session::start(recorded("iteration-0.xml"));
    let started = session.progress.text();
    assert!(
        started.contains("correctness: exit 0 in "),
        "start's runs said how they ended: {started}"
    );
    session.step(
        Replay::text(ONE_FAILED, 1),
        recorded("iteration-0.xml"),
        recorded("iteration-0.xml"),
    );
    let said = session.progress.text()[started.len()..].to_string();
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("correctness: exit 1 in ")),
        "{said}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("correctness FAIL: ")
                && line.contains("test_op[cutile-4096]")),
        "{said}"
    );
}

#[test]
fn a_run_killed_at_the_budget_is_a_crash_in_the_rounds_or_a_fail_in_correctness() {
    for (correctness, candidate, correct) in [
        (
            Replay::text(PASSED, 0),
            Replay::died(Ending::TimedOut),
            "PASS",
        ),
        (
            Replay::died(Ending::TimedOut),
            recorded("iteration-0.xml"),
            "FAIL",
        ),
    ] {
        let session = Session::start(recorded("iteration-0.xml"));
        let (report, _) = session.step(correctness, candidate, recorded("iteration-0.xml"));
        assert_eq!(
            (&report["status"], &report["correctness"]),
            (&"crash".into(), &correct.into()),
            "{report:#}"
        );
        assert!(
            report["reason"]
                .as_str()
                .unwrap()
                .contains("pytest ran past the iteration budget"),
            "{report:#}"
        );
    }
}

#[test]
fn rounds_the_budget_leaves_undecided_are_decided_on_their_means_saying_why() {
    let session = Session::start(rope_unchanged(1));
    // the stand-in's runs take no time, but the budget is spent by the time the first round ends, and
    // one round of two processes of the same rope code leaves the microsecond configs within noise (of
    // what the order of the sides may do to them) and so the aggregate too: all 12 run again
    let (report, _) = session.step_with(
        &["--budget", "1ms"],
        Replay::text(PASSED, 0),
        rope_unchanged(2),
        rope_unchanged(3),
    );
    assert_eq!(report["rounds"], 1, "{report:#}");
    let reason = report["reason"].as_str().unwrap();
    // the live why (how long a round took, what was left), kept in the evidence for its replay
    assert!(
        reason.contains(
            "undecided after 1 round (the next round, of 12 cases a side, would take about "
        ) && reason.contains(" s and 0 s of the budget are left): decided on the means"),
        "{reason}"
    );
}
