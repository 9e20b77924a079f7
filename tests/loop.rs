//! The loop end to end: the real binary, real git and real pytest on the fixture repository.

use crate::support;

use support::hang::Hang;
use support::{Fixture, KERNEL, text, with_input};

/// A string field of a `--json` object.
fn word<'a>(r: &'a serde_json::Value, key: &str) -> &'a str {
    r[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {r}"))
}

fn reason(r: &serde_json::Value) -> &str {
    word(r, "reason")
}

fn branch_name() -> String {
    branch_name_in(None)
}

/// The session branch `start` names today in time zone `tz` (a `TZ` value), as `date` dates it.
fn branch_name_in(tz: Option<&str>) -> String {
    let mut date = std::process::Command::new("date");
    if let Some(tz) = tz {
        date.env("TZ", tz);
    }
    let out = date.arg("+%Y%m%d").output().unwrap();
    format!("cutile-perf-vector_add-{}", text(&out.stdout).trim())
}

#[test]
fn the_branch_is_dated_in_the_zone_tz_names() {
    // twelve hours west of UTC and fourteen east: whatever the hour, one of them is on another date
    // than UTC (and so than a machine on UTC)
    for zone in ["WEST12", "EAST-14"] {
        let f = Fixture::new();
        let before = branch_name_in(Some(zone));
        let out = f
            .command(&["start", "vector_add"])
            .env("TZ", zone)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", support::both(&out));
        // (midnight there may fall between `date` and `start`)
        let after = branch_name_in(Some(zone));
        assert!(
            [before, after].contains(&f.branch()),
            "{zone}: {}",
            f.branch()
        );
    }
}

#[test]
fn baseline_is_an_empty_commit_with_the_session() {
    let f = Fixture::new();
    let main = f.head();
    let out = f.start();
    assert!(
        out.contains("baseline iteration 0: 0.316228 ms (geometric mean of 2 configs' medians, 5 correctness tests passed (1 skipped))"),
        "{out}"
    );
    assert!(
        out.trim_end().ends_with(
            "next: one optimization (A: TMA loads and stores instead of gather/scatter), then `git cutile-perf \
             step --opt A \"<what you changed>\"`"
        ),
        "{out}"
    );
    assert_eq!(f.branch(), branch_name());
    assert_eq!(f.git(&["rev-parse", "HEAD~1"]).trim(), main);
    assert_eq!(f.git(&["diff", "--name-only", "HEAD~1", "HEAD"]), "");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Iteration"), "0");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Kernel"), KERNEL);
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Test"),
        "tests/ops/test_vector_add.py"
    );
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Allow"), KERNEL);
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Statistic"), "median");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Latency-Ms"), "0.316228");
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Config"),
        "forward 0.1 tests.ops.test_vector_add::test_perf[cutile-small]\u{1f}forward 1 tests.ops.test_vector_add::test_perf[cutile-large]"
    );
    // sandbox/ is excluded locally, never through .gitignore
    let exclude = std::fs::read_to_string(f.path(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/sandbox/"));
    assert!(!f.path(".gitignore").exists());
    assert_eq!(f.status(), "");
    // git itself parses the block
    let message = f.git(&["log", "-1", "--format=%B"]);
    let parsed = with_input(
        std::process::Command::new("git").args(["interpret-trailers", "--parse"]),
        &message,
    );
    assert!(text(&parsed.stdout).contains("Cutile-Perf-Status: keep\n"));
}

#[test]
fn keep_commits_the_change_and_becomes_the_baseline() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    let r = f.step_json(&["--opt", "g", "--cause", "memory", "tile size 256"]);
    assert_eq!(r["status"], "keep");
    assert_eq!(r["correctness"], "PASS");
    assert_eq!(r["decision"], "continue");
    assert_eq!(r["iteration"], 1);
    assert_eq!(r["next_action"]["kind"], "edit-and-step");
    assert_eq!(r["next_action"]["letters"][0], "A", "G was tried: {r}");
    assert_eq!(r["configs"].as_array().unwrap().len(), 2);
    assert!((r["change_pct"].as_f64().unwrap() + 10.0).abs() < 1e-9);
    // a share of the default 10 minutes: some, and not all of it (the step was not cut off)
    let used = r["budget_used_pct"].as_f64().unwrap();
    assert!(used > 0.0 && used < 100.0, "{r}");
    assert_eq!(
        f.git(&["diff", "--name-only", "HEAD~1", "HEAD"]),
        format!("{KERNEL}\n")
    );
    assert_eq!(f.status(), "");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Opt"), "G");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Cause"), "memory");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Change"), "-10.00%");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Baseline-Ms"), "0.316228");
    assert_eq!(
        f.git(&["log", "-1", "--format=%s"]).trim(),
        "cutile-perf: vector_add #1 keep -10.00%: tile size 256"
    );
    // the next attempt compares with iteration 1
    f.set_latency(0.08, 0.8);
    let r = f.step_json(&["persistent"]);
    assert!((r["baseline_ms"].as_f64().unwrap() - 0.284605).abs() < 1e-6);
}

#[test]
fn one_slow_config_reverts_and_keeps_the_attempt_in_history() {
    let f = Fixture::new();
    f.start();
    let before = f.git(&["rev-parse", "HEAD^{tree}"]);
    f.set_latency(0.1025, 0.5);
    let r = f.step_json(&["persistent scheduling"]);
    assert_eq!(
        (word(&r, "status"), word(&r, "decision")),
        ("revert", "try-next")
    );
    assert!(
        reason(&r).contains("test_perf[cutile-small] forward: +2.50% (")
            && reason(&r).contains("slower than the 2% limit beyond noise"),
        "{r}"
    );
    assert_eq!(
        f.git(&["rev-parse", "HEAD^{tree}"]),
        before,
        "the tree is back to the baseline"
    );
    assert_eq!(f.status(), "");
    assert!(
        word(&r["next_action"], "sentence")
            .starts_with("Iteration 1 was reverted and undone (the kernel is as at iteration 0). "),
        "{r}"
    );
    let attempt = r["attempt"].as_str().unwrap();
    assert_eq!(f.git(&["rev-parse", "HEAD~1"]).trim(), attempt);
    assert!(
        f.git(&["show", attempt, "--", KERNEL])
            .contains("+LATENCY_MS = {\"small\": 0.102500")
    );
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Attempt"), attempt);
    // the attempt commit carries no trailers: one trailer commit per iteration
    assert_eq!(f.trailer(attempt, "Cutile-Perf-Iteration"), "");
}

#[test]
fn correctness_failure_reverts_without_benchmarking() {
    let f = Fixture::new();
    f.start();
    std::fs::remove_file(f.path("sandbox/benchmark.xml")).unwrap();
    f.edit_kernel("CORRECT = True", "CORRECT = False");
    let r = f.step_json(&["approximate division"]);
    assert_eq!(
        (word(&r, "status"), word(&r, "correctness")),
        ("revert", "FAIL")
    );
    assert_eq!(r["latency_ms"], serde_json::Value::Null);
    // in a process of its own or in the warm worker, a benchmark run writes this file
    assert!(
        !f.path("sandbox/benchmark.xml").exists(),
        "the benchmark must not run"
    );
    assert!(
        std::fs::read_to_string(f.path(KERNEL))
            .unwrap()
            .contains("CORRECT = True")
    );
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Correctness"), "FAIL");
}

#[test]
fn crash_by_exception() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exception\"");
    let r = f.step_json(&["bad hints"]);
    assert_eq!(
        (word(&r, "status"), word(&r, "correctness")),
        ("crash", "PASS")
    );
    assert!(reason(&r).contains("simulated kernel failure"), "{r}");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Latency-Ms"), "n/a");
    assert!(
        std::fs::read_to_string(f.path(KERNEL))
            .unwrap()
            .contains("CRASH = \"\"")
    );
}

#[test]
fn crash_by_the_process_dying() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exit\"");
    let r = f.step_json(&["bad launch"]);
    assert_eq!(r["status"], "crash");
    assert!(
        reason(&r).starts_with("crash: pytest died without writing its JUnit file"),
        "{r}"
    );
}

#[test]
fn crash_by_the_budget_leaves_no_process_behind() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let hang = Hang::new();
    let out = hang
        .command(
            &f,
            &[
                "step", "--opt", "none", "--json", "--budget", "20s", "deadlock",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(r["status"], "crash");
    assert!(reason(&r).contains("ran past the iteration budget"), "{r}");
    hang.assert_child_gone();
}

#[test]
fn two_iterations_without_gain_stop_the_loop() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.099, 0.99);
    let r = f.step_json(&["tiny gain"]);
    assert_eq!((word(&r, "status"), word(&r, "decision")), ("keep", "stop"));
    let err = {
        f.set_latency(0.098, 0.98);
        f.fails(&["step", "--opt", "none", "next idea"])
    };
    assert!(err.contains("the loop has stopped at iteration 1"), "{err}");
    assert!(err.contains("--continue"), "{err}");
    let r = f.step_json(&["--continue", "another tiny gain"]);
    assert_eq!(r["no_gain"], 2);
    assert_eq!(r["decision"], "stop");
    assert!(
        reason(&r).ends_with("2 iterations in a row without a gain of 2% or more"),
        "{r}"
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["state"], "stopped");
    assert_eq!(status["next_action"]["kind"], "stopped");
    assert_eq!(status["next_action"]["iteration"], 2);
    assert_eq!(status["next_action"]["why"], r["reason"]);
    assert!(f.ok(&["status"]).contains(
        "\nnext: the loop stopped at iteration 2; `git cutile-perf step --continue --opt "
    ));
    assert_eq!(status["no_gain"], 2);
    assert_eq!(status["iterations"], 2);
    // the resume command, its cause filled in as an agent would, runs and records the suggested letter
    let resume = word(&status["next_action"], "resume").replace("<CAUSE>", "memory");
    let words = shlex::split(resume.strip_prefix("git cutile-perf ").unwrap()).unwrap();
    f.set_latency(0.097, 0.97);
    let r: serde_json::Value =
        serde_json::from_str(&f.ok(&words.iter().map(String::as_str).collect::<Vec<_>>())).unwrap();
    assert_eq!(r["iteration"], 3, "{r}");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Opt"), "A");
}

#[test]
fn scheduling_cause_escalates() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    let r = f.step_json(&["--cause", "scheduling", "grid order"]);
    assert_eq!(
        (word(&r, "status"), word(&r, "decision")),
        ("keep", "escalate")
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["state"], "escalated");
    assert_eq!(status["next_action"]["kind"], "escalate");
    assert_eq!(status["next_action"]["cause"], "scheduling");
    // every config twice as fast: the best is half iteration 0's latency
    let change = status["change_pct_since_0"].as_f64().unwrap();
    assert!((change + 50.0).abs() < 1e-6, "{status}");
    assert_eq!(r["next_action"], status["next_action"]);
}

#[test]
fn disallowed_change_is_refused_and_nothing_runs() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    f.set_latency(0.05, 0.5);
    f.edit("tests/common.py", "1.01", "0.5");
    std::fs::write(f.path("src/tilegym/ops/cutile/helper.py"), "x = 1\n").unwrap();
    let _ = std::fs::remove_file(f.path("sandbox/correctness.log"));
    let err = f.fails(&["step", "--opt", "none", "sneaky"]);
    assert!(
        err.contains("only the session's allowed paths may change"),
        "{err}"
    );
    assert!(
        err.contains("\n  src/tilegym/ops/cutile/helper.py\n"),
        "{err}"
    );
    assert!(err.contains("\n  tests/common.py\n"), "{err}");
    assert!(!err.contains(&format!("\n  {KERNEL}\n")), "{err}");
    assert_eq!(f.head(), head);
    assert!(
        !f.path("sandbox/correctness.log").exists(),
        "nothing may run"
    );
}

#[test]
fn empty_change_is_refused() {
    let f = Fixture::new();
    f.start();
    let err = f.fails(&["step", "--opt", "none", "nothing"]);
    assert!(
        err.contains("nothing to try: the work tree has no changes"),
        "{err}"
    );
}

#[test]
fn a_deletion_staged_with_git_rm_is_recorded() {
    let f = Fixture::new();
    let other = "src/tilegym/suites/liger/cutile/rms_norm.py";
    f.ok(&["start", "vector_add", "--allow", other]);
    f.git(&["rm", "-q", other]);
    f.set_latency(0.09, 0.9);
    let r = f.step_json(&["drop the unused module"]);
    assert_eq!(r["status"], "keep", "{r}");
    assert_eq!(
        f.git(&["diff", "--name-status", "HEAD~1", "HEAD"]),
        format!("M\t{KERNEL}\nD\t{other}\n")
    );
    assert_eq!(f.status(), "");
}

#[test]
fn dirty_start_is_refused_and_nothing_is_made() {
    let f = Fixture::new();
    f.edit("setup.py", "fixture", "dirty");
    let err = f.fails(&["start", "vector_add"]);
    assert!(
        err.contains("uncommitted changes to tracked files:\n  setup.py"),
        "{err}"
    );
    assert_eq!(f.branch(), "main");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
}

#[test]
fn failing_baseline_leaves_nothing_behind() {
    let f = Fixture::new();
    f.edit_kernel("CORRECT = True", "CORRECT = False");
    f.git(&["commit", "-qam", "broken kernel"]);
    let exclude = std::fs::read_to_string(f.path(".git/info/exclude")).unwrap_or_default();
    let err = f.fails(&["start", "vector_add"]);
    assert!(
        err.contains("the baseline fails its correctness tests"),
        "{err}"
    );
    assert_eq!(f.branch(), "main");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
    assert_eq!(f.status(), "");
    // what `start` made beside its branch is gone too, as it says
    assert!(!f.hooks().join("pre-commit").exists() && !f.hooks().join("commit-msg").exists());
    assert!(!f.path("sandbox").exists());
    assert_eq!(
        std::fs::read_to_string(f.path(".git/info/exclude")).unwrap_or_default(),
        exclude
    );
    assert!(
        err.contains(
            "is deleted, as are its hooks, its line in .git/info/exclude, sandbox/ with the baseline's logs"
        ),
        "{err}"
    );
    // a retry after the fix works
    f.edit_kernel("CORRECT = False", "CORRECT = True");
    f.git(&["commit", "-qam", "fixed"]);
    f.start();
}

#[test]
fn ambiguous_kernel_lists_candidates() {
    let f = Fixture::new();
    let err = f.fails(&["start", "rms_norm"]);
    assert!(err.contains("rms_norm is ambiguous; pick one:"), "{err}");
    assert!(err.contains("src/tilegym/ops/cutile/rms_norm.py"), "{err}");
    assert!(err.contains("--suite liger"), "{err}");
}

#[test]
fn a_test_without_perf_cases_is_refused_before_it_runs_with_the_way_forward() {
    let f = Fixture::new();
    let err = f.fails(&["start", "rms_norm", "--suite", "liger"]);
    assert!(
        err.contains("tests/suites/liger/test_rms_norm.py has no test_perf")
            && err.contains("hint: write a session perf file with `git cutile-perf start rms_norm --suite liger --scaffold`"),
        "{err}"
    );
    // refused from the source, before a worker or pytest started
    assert!(!err.contains("passed") && !err.contains("worker"), "{err}");
    assert_eq!(f.branch(), "main");
    let err = f.fails(&["start", "helpers"]);
    assert!(
        err.contains("hint: name the test file with --test PATH"),
        "{err}"
    );
    let err = f.fails(&["inspect", "helpers"]);
    assert!(
        err.contains("helpers has no test") && err.contains("--test PATH"),
        "{err}"
    );
}

#[test]
fn a_filter_that_selects_no_correctness_test_says_how_to_keep_the_grid() {
    let f = Fixture::new();
    // `large` names only a perf case, as a shape size often does
    let err = f.fails(&["start", "vector_add", "--filter", "large"]);
    assert!(
        err.contains(
            "no correctness test matched -k \"test_ and cutile and not test_perf and (large)\""
        ),
        "{err}"
    );
    assert!(!err.contains("crashed"), "{err}");
    assert!(
        err.contains("hint: --filter selects the correctness tests as well as the benchmark")
            && err.contains("use --filter \"(large) or not test_perf\""),
        "{err}"
    );
    let out = f.run(&["start", "vector_add", "--filter", "large", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["hint"]
            .as_str()
            .is_some_and(|h| h.ends_with("use --filter \"(large) or not test_perf\"")),
        "{report}"
    );
    assert_eq!(f.branch(), "main");
    // the hint's filter works: every correctness test, the one perf case
    let start = f.ok(&[
        "start",
        "vector_add",
        "--filter",
        "(large) or not test_perf",
    ]);
    assert!(
        start.contains("(geometric mean of 1 configs' medians, 5 correctness tests passed"),
        "{start}"
    );
}

#[test]
fn outside_tilegym_is_refused() {
    let f = Fixture::empty();
    // not a repository at all: the same hint
    let err = f.fails(&["status"]);
    assert!(err.contains("is not inside a git repository"), "{err}");
    assert!(
        err.contains("hint: run git cutile-perf inside a clone of NVIDIA's TileGym"),
        "{err}"
    );
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&f.root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = f.fails(&["start", "vector_add"]);
    assert!(
        err.contains("is not a TileGym checkout (no src/tilegym/)"),
        "{err}"
    );
    // nothing to report but how to start, which `start` then refuses here with its reason
    let status = f.ok(&["status"]);
    assert!(status.starts_with("no session on "), "{status}");
}

#[test]
fn table_is_rebuilt_from_trailers_byte_for_byte() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    f.step_json(&["a | pipe in the name"]);
    f.edit_kernel("CORRECT = True", "CORRECT = False");
    f.step_json(&["broken"]);
    let path = f.path("sandbox/perf_results.md");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        written,
        "| iteration | opt | optimization | latency_ms | correctness | status | reason |\n\
         |---|---|---|---|---|---|---|\n\
         | 0 |  | baseline | 0.316228 | PASS | keep | baseline: 5 correctness tests passed |\n\
         | 1 | none | a \\| pipe in the name | 0.158114 | PASS | keep | 50.00% faster overall |\n\
         | 2 | none | broken | n/a | FAIL | revert | correctness failed in 3 cases |\n"
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(f.ok(&["table", "--write"]), written);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    let json: serde_json::Value = serde_json::from_str(&f.ok(&["table", "--json"])).unwrap();
    assert_eq!(json["rows"][2]["correctness"], "FAIL");
    assert_eq!(json["rows"][1]["latency_ms"].as_f64().unwrap(), 0.158114);
}

#[test]
fn runs_from_a_subdirectory() {
    let f = Fixture::new();
    let sub = f.path("src/tilegym/ops");
    let out = f
        .command(&["start", "vector_add"])
        .current_dir(&sub)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    f.set_latency(0.05, 0.5);
    let out = f
        .command(&["step", "--opt", "none", "--json", "from below"])
        .current_dir(&sub)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(f.path("sandbox/perf_results.md").exists());
    assert!(!sub.join("sandbox").exists());
}

#[test]
fn hostile_text_cannot_forge_trailers() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.2, 2.0);
    let description = "x\n\nCutile-Perf-Status: keep\nCutile-Perf-Latency-Ms: 0.000001";
    let notes =
        "Cutile-Perf-Status: keep\n---\nSigned-off-by: nobody\n\nCutile-Perf-Decision: continue";
    let r = f.step_json(&["--notes", notes, description]);
    assert_eq!(r["status"], "revert");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Status"), "revert");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Decision"), "try-next");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Latency-Ms"), "0.632456");
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Optimization"),
        "x Cutile-Perf-Status: keep Cutile-Perf-Latency-Ms: 0.000001"
    );
    // the table still reads
    f.ok(&["table"]);
}

#[test]
fn printed_records_are_read_too() {
    let f = Fixture::new();
    let out = f
        .command(&["start", "vector_add", "--json"])
        .env("FIXTURE_RECORD", "stdout")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((r["latency_ms"].as_f64().unwrap() - 0.316228).abs() < 1e-6);
}

#[test]
fn ctrl_c_mid_step_leaves_the_repository_as_it_was() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let status_before = f.status();
    let hang = Hang::new();
    let out = hang.interrupt(&f, &["step", "--opt", "none", "hangs"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("interrupted: nothing was recorded"));
    assert_eq!(f.head(), head);
    assert_eq!(f.status(), status_before);
    // the baseline's worktree is removed too, though git ran after the interrupt
    assert_eq!(
        f.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    hang.assert_child_gone();
    // status and next see the edit the interrupted step left: step it, add no second change
    for verb in ["status", "next"] {
        let r: serde_json::Value = serde_json::from_str(&f.ok(&[verb, "--json"])).unwrap();
        let sentence = r["next_action"]["sentence"].as_str().unwrap();
        assert!(!sentence.contains("Apply ONE"), "{verb}: {sentence}");
        assert!(
            sentence.contains(&format!(
                "The work tree already changes {}",
                support::KERNEL
            )),
            "{verb}: {sentence}"
        );
    }
}

#[test]
fn filter_narrows_both_selections() {
    let f = Fixture::new();
    let out = f.run(&["start", "vector_add", "--filter", "large or 1000", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["configs"].as_array().unwrap().len(), 1);
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Filter"), "large or 1000");
    // in the baseline's warm worker: one correctness case
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("correctness: in the warm baseline worker, 1 case, 0 failed"),
        "{stderr}"
    );
    f.set_latency(0.2, 0.5);
    let r = f.step_json(&["only the large config counts"]);
    assert_eq!(r["status"], "keep");
    assert_eq!(r["configs"].as_array().unwrap().len(), 1);
}

#[test]
fn crash_reasons_name_the_log_relative_to_the_root() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exit\"");
    f.step_json(&["dies"]);
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Reason"),
        "crash: pytest died without writing its JUnit file (log: sandbox/benchmark.log)"
    );
}

#[test]
fn missing_python_or_pytest_is_an_error_before_anything_is_made() {
    let f = Fixture::new();
    let err = f.fails(&["start", "vector_add", "--python", "no-such-python3"]);
    assert!(
        err.contains("no-such-python3 not found on PATH; pass --python CMD"),
        "{err}"
    );
    // -S hides site-packages, where pytest lives
    let err = f.fails(&["start", "vector_add", "--python", "python3 -S"]);
    assert!(
        err.contains("pytest is not available to python3 -S"),
        "{err}"
    );
    assert!(
        err.contains("`python3 -S -m pip install pytest` in a virtual environment; `sudo apt install python3-pytest`"),
        "{err}"
    );
    assert_eq!(f.branch(), "main");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
}

/// A pytest there but broken since `start` (an upgrade half done: importing it fails) is refused by `step`
/// before anything runs: no crash of the kernel is recorded for it, and the edit stays.
#[test]
fn a_pytest_broken_since_start_is_refused_before_anything_runs() {
    let f = Fixture::new();
    let broken = f.path("../broken pytest");
    std::fs::create_dir_all(broken.join("pytest")).unwrap();
    std::fs::write(
        broken.join("pytest/__init__.py"),
        "raise ImportError('cannot import name HookimplMarker from pluggy')\n",
    )
    .unwrap();
    // python3, with the broken pytest first once `broken/on` exists
    let python = f.path("../python");
    support::write_script(
        &python,
        &format!(
            "#!/bin/sh\n[ -e '{b}/on' ] && export PYTHONPATH='{b}'${{PYTHONPATH:+:$PYTHONPATH}}\nexec python3 \"$@\"\n",
            b = broken.display()
        ),
    );
    let python = format!("'{}'", python.display());
    f.ok(&["start", "vector_add", "--python", &python]);
    let recorded = f.head();
    f.set_latency(0.05, 0.5);
    std::fs::write(broken.join("on"), "").unwrap();
    let err = f.fails(&["step", "--opt", "none", "faster"]);
    assert!(err.contains("pytest is not available to"), "{err}");
    assert!(err.contains("cannot import name HookimplMarker"), "{err}");
    assert_eq!(f.head(), recorded, "nothing is recorded");
    assert!(
        f.git(&["status", "--porcelain"]).contains("vector_add.py"),
        "the edit stays"
    );
}

#[test]
fn ctrl_c_during_the_baseline_leaves_nothing_behind() {
    let f = Fixture::new();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    f.git(&["commit", "-qam", "a kernel that hangs in its benchmark"]);
    let hang = Hang::new();
    let out = hang.interrupt(&f, &["start", "vector_add"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("interrupted: the baseline was not recorded; nothing was created")
    );
    assert_eq!(f.branch(), "main");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
    assert_eq!(f.status(), "");
    hang.assert_child_gone();
}

/// Paired rounds under noise: edits that change no latency, with 1% run-to-run noise on every config, are
/// not reverted (the single-run rule reverted such edits often). Three steps, real pytest workers each:
/// the rates themselves are `cargo bench --bench verdicts`'s to measure, over thousands of simulated steps.
/// The noise is seeded (`CUTILE_PERF_TEST_SEED` replays a failed run's seed, which the failure prints).
#[test]
fn null_edits_under_noise_are_kept() {
    let seed = support::test_seed();
    let counts = tempfile::tempdir().unwrap();
    let noisy = |command: &mut std::process::Command| {
        command
            .env("CUTILE_PERF_FIXTURE_NOISE", "0.006")
            .env("CUTILE_PERF_FIXTURE_NOISE_SEED", seed.to_string())
            .env("CUTILE_PERF_FIXTURE_NOISE_COUNTS", counts.path())
            .output()
            .unwrap()
    };
    let f = Fixture::new();
    // the baseline's two runs see the same noise, and record it as the session's noise floor
    let start = noisy(&mut f.command(&["start", "vector_add"]));
    assert!(
        start.status.success(),
        "seed {seed}: {}",
        text(&start.stderr)
    );
    // three steps of 1-6 rounds each (a fresh pair of workers per round: at 1% noise they took up to 16,
    // and this was the suite's costliest test); none reverted, where the bench's rules revert 0.03-0.12%
    // of null changes
    let mut reverted = Vec::new();
    for n in 0..3 {
        // a new kernel at the same simulated latency (a comment alone would be recorded as no change)
        f.edit_kernel(
            "CRASH = \"\"",
            &format!("CRASH = \"\"\nNULL_EDIT_{n} = {n}"),
        );
        let step = format!("null edit {n}");
        let out = noisy(&mut f.command(&["step", "--opt", "none", "--json", "--continue", &step]));
        assert!(out.status.success(), "seed {seed}: {}", text(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if r["status"] != "keep" {
            reverted.push(reason(&r).to_string());
        }
    }
    assert!(reverted.is_empty(), "seed {seed}: {reverted:#?}");
}

/// A config so fast that its median moves in whole timer ticks of 1% or more is named by `start`, with
/// what judges it; under `--stat mean` none is.
#[test]
fn start_names_the_configs_whose_median_moves_in_timer_ticks() {
    let with_a_2_us_config = || {
        let f = Fixture::new();
        f.set_latency(0.002, 1.0);
        f.git(&["commit", "-q", "-am", "a 2 us small config"]);
        f
    };
    let out = with_a_2_us_config().ok(&["start", "vector_add"]);
    assert!(
        out.contains(
            "1 config runs under 3.2 us, where a median moves in whole 32 ns timer ticks: each step \
             judges their change on the records' means, which no tick rounds, where the records hold one; \
             the table stays in medians\n  "
        ),
        "{out}"
    );
    let mean = with_a_2_us_config().ok(&["start", "vector_add", "--stat", "mean", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&mean).unwrap();
    assert_eq!(report["ticked"], serde_json::json!([]), "{report}");
}

/// A step judges a config under 3.2 us on its records' means and says so; its latency stays the median,
/// and `verify` replays the verdict by the same rule.
#[test]
fn a_step_judges_a_config_under_3_2_us_on_its_records_means() {
    let f = Fixture::new();
    f.set_latency(0.002, 1.0);
    f.git(&["commit", "-q", "-am", "a 2 us small config"]);
    f.start();
    f.set_latency(0.0018, 0.9);
    let r = f.step_json(&["10% faster"]);
    assert_eq!(r["status"], "keep", "{r}");
    // the fixture's records hold a mean 1% above the median: the latencies are the medians
    let judged: Vec<(bool, f64)> = r["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let baseline_ns = c["baseline_ms"].as_f64().unwrap() * 1e6;
            (c["on_record_means"].as_bool().unwrap(), baseline_ns.round())
        })
        .collect();
    assert_eq!(judged, [(true, 2000.0), (false, 1e6)], "{r}");
    f.ok(&["verify"]);
    f.replays_as_recorded();
}

/// A clone of `author`'s session branch with its record (notes and refs): its `.git/info/exclude` is its
/// own, without `/sandbox/`.
fn clone_of_session(author: &Fixture) -> Fixture {
    let clone = Fixture::empty();
    let origin = author.root.to_str().unwrap();
    clone.git(&["clone", "-q", "-b", &author.session_branch(), origin, "."]);
    clone.git(&[
        "fetch",
        "-q",
        "origin",
        "refs/notes/*:refs/notes/*",
        "refs/cutile-perf/*:refs/cutile-perf/*",
    ]);
    clone
}

#[test]
fn in_a_clone_the_session_was_fetched_into_the_tools_outputs_are_not_the_users_changes() {
    let author = Fixture::new();
    author.start();
    // steps: the second is not refused for the first one's outputs
    let clone = clone_of_session(&author);
    clone.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    clone.set_latency(0.05, 0.5);
    let report = clone.step_json(&["tile size 256"]);
    assert_eq!(word(&report, "status"), "keep", "{report}");
    assert_eq!(clone.status(), "");
    clone.edit_kernel("TILE_SIZE = 256", "TILE_SIZE = 512");
    clone.set_latency(0.03, 0.3);
    let report = clone.step_json(&["tile size 512"]);
    assert_eq!(word(&report, "status"), "keep", "{report}");
    // a verb that only writes the table
    let clone = clone_of_session(&author);
    clone.ok(&["table", "--write"]);
    assert_eq!(
        clone.status(),
        "",
        "the table in sandbox/ is no change of the user's"
    );
}

/// A command holds the lock before it writes its journal: from that first instant `status` says to
/// wait, as a second `step` is refused, never `edit-and-step` with nothing running.
#[test]
fn status_waits_for_a_command_that_holds_only_the_lock() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"\" # edited");
    // this test process, alive, as the lock's holder: a `step` that has not written its journal yet
    let me = git_cutile_perf::system::process_identity::ProcessIdentity::current().unwrap();
    std::fs::write(
        f.root.join(".git/cutile-perf/lock"),
        format!("{me} (`step`)"),
    )
    .unwrap();
    let refused = f.fails(&["step", "--opt", "none", "a second step"]);
    assert!(
        refused.contains("is working on this repository"),
        "{refused}"
    );
    let r: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(r["next_action"]["kind"], "wait", "{r}");
    assert_eq!(
        r["next_action"]["running"],
        format!(
            "a `git cutile-perf` command (pid {}, `step`) is running on this repository",
            me.pid
        ),
        "{r}"
    );
    std::fs::remove_file(f.root.join(".git/cutile-perf/lock")).unwrap();
}

/// What a person reads of `start`, `step`, `status` and `next` on the fixture, pinned: short, with
/// one command to run next, no instructions for an agent, and counts in the right number. Commit ids,
/// the date, the work tree's path and the worker's pid and idle time are the only words that vary.
#[test]
fn the_text_of_start_step_status_and_next_is_for_a_person() {
    let f = Fixture::new();
    let started = f.start();
    let branch = f.branch();
    let root = f.root.display().to_string();
    let pinned = |text: &str| -> String {
        let text = text
            .replace(&branch, "cutile-perf-vector_add-<date>")
            .replace(&root, "<root>");
        text.lines()
            .map(|line| {
                let words: Vec<String> = line
                    .split(' ')
                    .map(|w| match w {
                        w if w.len() == 10 && w.chars().all(|c| c.is_ascii_hexdigit()) => {
                            "<commit>".into()
                        }
                        w if w.len() == 11
                            && w.ends_with(')')
                            && w[..10].chars().all(|c| c.is_ascii_hexdigit()) =>
                        {
                            "<commit>)".into()
                        }
                        w => w.to_string(),
                    })
                    .collect();
                let line = words.join(" ");
                // a worker's pid and a step's seconds change from run to run
                match line.trim_start() {
                    l if l.starts_with("worker ") => {
                        "  worker      <pid, commit, idle>".to_string()
                    }
                    l if l.starts_with("time ") => {
                        "  time     <where the seconds went>".to_string()
                    }
                    _ => line,
                }
            })
            .map(|line| format!("{line}\n"))
            .collect()
    };
    let next_line = "next: one optimization (A: TMA loads and stores instead of gather/scatter), then `git \
                     cutile-perf step --opt A \"<what you changed>\"`\n";
    assert_eq!(
        pinned(&started),
        format!(
            "session cutile-perf-vector_add-<date>
  kernel     src/tilegym/ops/cutile/vector_add.py
  test       tests/ops/test_vector_add.py
  allowed    src/tilegym/ops/cutile/vector_add.py
  gpu        none found
  runner     local
  class      memory (static: no ct.mma in its kernel: elementwise/reduction work, about 1 FLOP per byte)
baseline iteration 0: 0.316228 ms (geometric mean of 2 configs' medians, 5 correctness tests passed (1 skipped))
{next_line}"
        )
    );
    f.set_latency(0.08, 0.8);
    let stepped = f.ok(&["step", "--opt", "G", "--cause", "memory", "tile size 256"]);
    assert_eq!(
        pinned(&stepped),
        format!(
            "iteration 1: keep  0.252982 ms (baseline 0.316228 ms, -20.00%)  correctness PASS  -> continue
  reason   20.00% faster overall (19.88% to 20.12%; >= 5%)
  against  iteration 0, re-measured beside it (1 paired round)
  commit   <commit>
  table    <root>/sandbox/perf_results.md
  time     <where the seconds went>
{next_line}"
        )
    );
    assert_eq!(
        pinned(&f.ok(&["status"])),
        format!(
            "session cutile-perf-vector_add-<date>
  kernel      src/tilegym/ops/cutile/vector_add.py
  test        tests/ops/test_vector_add.py
  allowed     src/tilegym/ops/cutile/vector_add.py
  statistic   median
  class       memory
  gpu         none recorded
  runner      local
  baseline    iteration 1 0.252982 ms
  best        iteration 1 0.252982 ms (-20.00% since iteration 0)
  iterations  1 of 25
  no gain     0 in a row (stops at 2)
  loop        running
  worker      <pid, commit, idle>
{next_line}"
        )
    );
    let next = f.ok(&["next"]);
    assert!(
        next.starts_with("class memory-bound; tried: G\n  A  TMA loads"),
        "{next}"
    );
    assert!(next.ends_with(&next_line), "{next}");
    // every line a person reads is short, and none tells them to read JSON
    for text in [&started, &stepped, &next] {
        assert!(!text.contains("--json"), "{text}");
    }
}
