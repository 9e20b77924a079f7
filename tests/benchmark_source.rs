//! A session on a kernel that only a standalone benchmark script times: `start` writes the session perf
//! file that runs the script's cuTile line, and every (x-value, line) is a config timed by the script's
//! own timing call.

use crate::support::Fixture;

const KERNEL: &str = "src/tilegym/ops/cutile/swish.py";
const PERF_FILE: &str = "sandbox/perf_swish.py";

#[test]
fn a_session_runs_the_cutile_lines_of_a_standalone_benchmark() {
    let f = Fixture::new();
    let inspected = f.ok(&["inspect", "swish"]);
    assert!(
        inspected.contains("measured by: the standalone benchmark tests/benchmark/bench_swish.py"),
        "{inspected}"
    );
    let wrote = f.ok(&["start", "swish", "--scaffold"]);
    assert!(
        wrote.contains(
            "wrote sandbox/perf_swish.py: runs the cuTile lines of tests/benchmark/bench_swish.py"
        ),
        "{wrote}"
    );
    std::fs::remove_file(f.path(PERF_FILE)).unwrap();
    // without --test, start writes the same file itself
    let started = f.ok_all(&["start", "swish"]);
    // the cuTile line only, at each x-value, with the milliseconds the timing call measured: the stand-in
    // GPU's hundredth of a microsecond per element per block, 1024 x 8 (0.08192 ms) and 4096 x 8
    // (0.32768 ms), whose geometric mean is 0.16384 ms; the reference line would add two more configs
    for wanted in [
        "wrote sandbox/perf_swish.py",
        "source: the cuTile lines of the standalone benchmark tests/benchmark/bench_swish.py",
        "baseline iteration 0: 0.163840 ms (geometric mean of 2 configs' medians, 2 correctness tests passed)",
    ] {
        assert!(started.contains(wanted), "{wanted}\n{started}");
    }
    // the perf file and the script it runs recorded, a comment-only step that is no change, and verify
    // after it
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Benchmark"),
        "tests/benchmark/bench_swish.py"
    );
    f.perf_file_session_holds(PERF_FILE, KERNEL);
    // half the blocks, half the time: kept
    f.edit(KERNEL, "BLOCKS = 8", "BLOCKS = 4");
    let kept = f.step_json(&["half the blocks"]);
    assert_eq!(kept["status"], "keep", "{kept}");
    // the script's own check failing is the config's correctness failure
    f.edit(KERNEL, "CORRECT = True", "CORRECT = False");
    let wrong = f.step_json(&["skip the sigmoid"]);
    assert_eq!(wrong["correctness"], "FAIL", "{wrong}");
    assert!(
        wrong
            .to_string()
            .contains("test_check[cutile-swish-GBps-N=1024-CuTile]"),
        "{wrong}"
    );
    // the output computed on the host behind a library's one-element launch: faster on the script's own
    // timing, and refused by the census
    f.edit(
        KERNEL,
        "import cuda.tile as ct",
        "import cuda.tile as ct\nimport fastlib",
    );
    f.edit(
        KERNEL,
        "    ct.launch(None, (BLOCKS,), swish_kernel, (x, out))\n",
        "    out = [v / (1.0 + math.exp(-v)) for v in x]\n    fastlib.touch()\n",
    );
    let cheat = f.step_json(&["compute on the host"]);
    assert_eq!(cheat["status"], "revert", "{cheat}");
    assert!(
        cheat["reason"].as_str().unwrap().contains(
            "not the kernel's own gain: sandbox.perf_swish::test_perf[cutile-swish-GBps-N=1024-CuTile]: no \
             cuTile kernel from the allowed paths ran in the timed call"
        ),
        "{cheat}"
    );
    f.replays_as_recorded();
    let verified = f.ok(&["verify"]);
    for wanted in [
        "sandbox/perf_swish.py@",
        "it runs the standalone benchmark tests/benchmark/bench_swish.py: warm workers, paired rounds",
    ] {
        assert!(verified.contains(wanted), "{wanted}\n{verified}");
    }
}

/// The same session started on the scaffolded file by `--test` says as much of its source.
#[test]
fn a_session_started_on_the_scaffolded_file_names_the_script_it_runs() {
    let f = Fixture::new();
    f.ok(&["start", "swish", "--scaffold"]);
    let started = f.ok_all(&["start", "swish", "--test", PERF_FILE]);
    for wanted in [
        "source: the cuTile lines of the standalone benchmark tests/benchmark/bench_swish.py, run through \
         sandbox/perf_swish.py",
        "unseen inputs shift only the seeds the script sets",
    ] {
        assert!(started.contains(wanted), "{wanted}\n{started}");
    }
}

/// A standalone benchmark script that is not committed: `start` refuses before anything runs, saying to
/// commit it (a step checks the same before it runs), where the baseline's side would crash without it.
#[test]
fn an_uncommitted_benchmark_script_is_refused_with_what_to_do() {
    let f = Fixture::new();
    let script = "tests/benchmark/bench_swish.py";
    f.git(&["rm", "-q", "--cached", "--", script]);
    f.git(&["commit", "-q", "-m", "the script left untracked"]);
    let err = f.fails(&["start", "swish"]);
    assert!(
        err.contains(&format!(
            "the standalone benchmark {script} that the session perf file runs is not committed"
        )),
        "{err}"
    );
    assert!(
        err.contains("hint: commit it on the branch you start sessions from"),
        "{err}"
    );
    assert!(
        f.git(&["branch", "--list", "cutile-perf-*"]).is_empty(),
        "{err}"
    );
}

/// A session started on a kernel without a test, which its standalone benchmark times: the plan says no
/// test was found, and gives no `--test` hint for a start that goes on and succeeds.
#[test]
fn a_successful_start_without_a_test_gives_no_test_hint() {
    let f = Fixture::new();
    let started = f.ok_all(&["start", "swish"]);
    assert!(
        started.contains("test: none found: no test under tests/ops/"),
        "{started}"
    );
    assert!(!started.contains("--test"), "{started}");
    let inspected = f.ok_all(&["inspect", "swish"]);
    assert!(
        inspected.contains("hint: name the test file with --test PATH"),
        "{inspected}"
    );
}
