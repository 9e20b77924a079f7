//! A session on a kernel whose tests check correctness only, timed through a session perf file that
//! `start --scaffold` proposes and the user edits: never committed, fingerprinted by the baseline.

use crate::support::hang::Hang;
use crate::support::{Fixture, both};

const KERNEL: &str = "src/tilegym/suites/liger/cutile/scale.py";
const PERF_FILE: &str = "sandbox/perf_scale.py";
/// The perf file as a user leaves it for the fixture, which has no torch: its configs' latencies are
/// the kernel file's constants.
const EDITED: &str = r#"import pytest

from tests import common
from tilegym.suites.liger.cutile import scale as kernel

from tests.suites.liger.test_scale import *  # noqa: F401,F403


@pytest.mark.parametrize("size", ["tiny", "small", "large"])
@pytest.mark.parametrize("backend", ["cutile"])
def test_perf(size, backend, record_property):
    x = [1.0] * 64
    timed = common.benchmark(lambda: kernel.scale(x, 2.0), kernel.LATENCY_MS.get(size, 0.004))
    record_property("benchmark", {"cutile": {"forward": timed}})
"#;

#[test]
fn a_session_through_a_session_perf_file_records_and_guards_it() {
    let f = Fixture::new();
    let wrote = f.ok(&["start", "scale", "--scaffold"]);
    assert!(
        wrote
            .contains("wrote sandbox/perf_scale.py: times tilegym.suites.liger.cutile.scale.scale"),
        "{wrote}"
    );
    let proposed = std::fs::read_to_string(f.path(PERF_FILE)).unwrap();
    assert!(
        proposed.contains("from tilegym.suites.liger.cutile.scale import scale as op"),
        "{proposed}"
    );
    // an edit of the user's is never written over, even one that no longer times anything
    f.write(PERF_FILE, "# shapes to come\n");
    let again = f.fails(&["start", "scale", "--scaffold"]);
    assert!(
        again.contains("sandbox/perf_scale.py exists already"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(f.path(PERF_FILE)).unwrap(),
        "# shapes to come\n"
    );
    f.write(PERF_FILE, EDITED);
    let inspected = f.ok(&["inspect", "scale"]);
    assert!(
        inspected.contains("measured by: the session perf file sandbox/perf_scale.py (3 configs)"),
        "{inspected}"
    );
    let started = f.ok(&["start", "scale", "--test", PERF_FILE]);
    assert!(
        started.contains("launch-bound 1 config runs in under 10 us")
            && started
                .contains("  sandbox.perf_scale::test_perf[cutile-tiny] forward (0.004000 ms)"),
        "{started}"
    );
    // the baseline names no script: a perf file of the user's runs none
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Benchmark"), "");
    f.perf_file_session_holds(PERF_FILE, KERNEL);
    // a faster kernel, kept through the perf file
    f.edit(
        KERNEL,
        r#"LATENCY_MS = {"small": 0.100000, "large": 1.000000}"#,
        r#"LATENCY_MS = {"small": 0.080000, "large": 0.800000}"#,
    );
    let kept = f.step_json(&["--continue", "a faster kernel"]);
    assert_eq!(kept["status"], "keep", "{kept}");
    // the output computed on the host behind a library's one-element launch, at half the latency: the
    // census refuses it on this source as on a test_perf
    f.edit(
        KERNEL,
        "import cuda.tile as ct",
        "import cuda.tile as ct\nimport fastlib",
    );
    f.edit(
        KERNEL,
        "    ct.launch(None, (1,), scale_kernel, (x, factor, out))\n",
        "    out = [value * factor for value in x]\n    fastlib.touch()\n",
    );
    f.edit(
        KERNEL,
        r#"LATENCY_MS = {"small": 0.080000, "large": 0.800000}"#,
        r#"LATENCY_MS = {"small": 0.040000, "large": 0.400000}"#,
    );
    let cheat = f.step_json(&["compute on the host"]);
    assert_eq!(cheat["status"], "revert", "{cheat}");
    assert!(
        cheat["reason"].as_str().unwrap().contains(
            "not the kernel's own gain: sandbox.perf_scale::test_perf[cutile-tiny]: no cuTile kernel from \
             the allowed paths ran in the timed call"
        ),
        "{cheat}"
    );
    // other shapes are another session: a step refuses, and verify says so
    f.append(PERF_FILE, "# other shapes\n");
    f.append(KERNEL, "# another comment\n");
    let err = f.fails(&[
        "step",
        "--continue",
        "--opt",
        "none",
        "after editing the perf file",
    ]);
    assert!(
        err.contains("the session perf file sandbox/perf_scale.py changed since the baseline"),
        "{err}"
    );
    let findings = f.fails(&["verify"]);
    assert!(findings.contains("verify found 1 departure"), "{findings}");
    // the hint's command, as given, puts back the file the baseline measured, and the step goes on
    let command = err
        .split("(`")
        .nth(1)
        .and_then(|rest| rest.split("`)").next())
        .unwrap();
    assert_eq!(
        command,
        "mv sandbox/perf_scale.py sandbox/perf_scale.py.mine && git cutile-perf verify"
    );
    let out = f.run_in(&f.root, "sh", &["-c", command]);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(std::fs::read_to_string(f.path(PERF_FILE)).unwrap(), EDITED);
    f.ok(&[
        "step",
        "--continue",
        "--opt",
        "none",
        "after putting the perf file back",
    ]);
}

#[test]
fn a_session_perf_file_travels_with_the_record_and_is_written_back_where_missing() {
    let remotes = tempfile::tempdir().unwrap();
    let remote = remotes.path().join("remote.git");
    let author = Fixture::new();
    author.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    author.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    author.ok(&["start", "scale", "--scaffold"]);
    author.write(PERF_FILE, EDITED);
    author.ok(&["start", "scale", "--test", PERF_FILE]);
    let branch = author.session_branch();
    author.ok(&["push"]);

    let reviewer = Fixture::empty();
    reviewer.git(&["clone", "-q", remote.to_str().unwrap(), "."]);
    reviewer.ok(&["fetch"]);
    reviewer.git(&["checkout", "-q", &branch]);
    assert!(!reviewer.path(PERF_FILE).exists());
    let verified = reviewer.ok(&["verify"]);
    assert!(verified.contains("the record holds"), "{verified}");
    assert_eq!(
        std::fs::read_to_string(reviewer.path(PERF_FILE)).unwrap(),
        EDITED
    );
    reviewer.perf_file_session_holds(PERF_FILE, KERNEL);

    // a file of the reviewer's own under that name is never written over: a step refuses, saying how
    // to get the recorded one back
    reviewer.append(PERF_FILE, "# the reviewer's shapes\n");
    reviewer.append(KERNEL, "# another comment\n");
    let err = reviewer.fails(&["step", "--opt", "none", "a comment"]);
    assert!(
        err.contains("changed since the baseline")
            && err.contains("writes back the one the record holds"),
        "{err}"
    );
    assert!(
        std::fs::read_to_string(reviewer.path(PERF_FILE))
            .unwrap()
            .ends_with("# the reviewer's shapes\n")
    );
}

/// A kernel whose correctness tests pass tensors of several ranks (X of the rows, W and B of its last
/// dimension only, a keyword call): the scaffolded file builds that call, at the largest size most
/// calls share, grown along its rows past the launch's time, and the session starts on it unedited.
#[test]
fn a_kernel_of_multi_rank_inputs_starts_on_the_file_derived_from_its_tests() {
    let f = Fixture::new();
    let wrote = f.ok(&["start", "layer_norm", "--scaffold"]);
    assert!(
        wrote.contains(
            "on the call its tests make (2 of 4 recorded alike): B: torch.float32[64], W: torch.float32[64], \
             X: torch.float32[8, 64]"
        ) && wrote.contains("grown along every dimension of size 8: x1 0.0051 ms, x2 0.0102 ms")
            && wrote.contains("kept x2, x8"),
        "{wrote}"
    );
    let file = std::fs::read_to_string(f.path("sandbox/perf_layer_norm.py")).unwrap();
    for wanted in [
        "GROWTH = [2, 8]\n",
        "        \"W\": torch.randn((64,), dtype=torch.float32, device=\"cuda\"),\n",
        "        \"X\": torch.randn((8 * growth, 64,), dtype=torch.float32, device=\"cuda\"),\n",
    ] {
        assert!(file.contains(wanted), "{wanted}\n{file}");
    }
    let json: serde_json::Value = serde_json::from_str(&f.ok(&[
        "start",
        "layer_norm",
        "--test",
        "sandbox/perf_layer_norm.py",
        "--json",
    ]))
    .unwrap();
    assert_eq!(json["launch_bound"], serde_json::json!([]), "{json}");
    assert_eq!(json["configs"].as_array().map(Vec::len), Some(2), "{json}");
}

/// A call the recorder cannot build again is refused with its reason, and no file is left.
#[test]
fn a_call_that_cannot_be_built_again_is_refused_and_writes_nothing() {
    let f = Fixture::new();
    f.write(
        "tests/suites/liger/test_scale.py",
        "from tilegym.suites.liger.cutile.scale import scale\n\n\n\
         def test_op_cutile():\n    assert scale(range(3), 2.0) == [0.0, 2.0, 4.0]\n",
    );
    let err = f.fails(&["start", "scale", "--scaffold"]);
    assert!(
        err.contains(
            "the inputs of tilegym.suites.liger.cutile.scale.scale cannot be derived from \
             tests/suites/liger/test_scale.py: its argument #1 is a range, which the recorder cannot build again"
        ) && err.contains("hint: write sandbox/perf_scale.py by hand"),
        "{err}"
    );
    assert!(!f.path(PERF_FILE).exists());
}

/// A session perf file whose benchmark fails (it calls what this checkout's harness lacks): `start`
/// names the file and what failed, with a hint, and says once what it took back.
#[test]
fn a_failing_session_perf_file_is_named_with_a_hint() {
    let f = Fixture::new();
    f.ok(&["start", "scale", "--scaffold"]);
    f.write(
        PERF_FILE,
        &EDITED.replace("common.benchmark(", "common.benchmark_of_another_release("),
    );
    let err = f.fails(&["start", "scale", "--suite", "liger", "--test", PERF_FILE]);
    assert!(
        err.contains(
            "the baseline benchmark failed in the session perf file sandbox/perf_scale.py: "
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "AttributeError: module 'tests.common' has no attribute 'benchmark_of_another_release'"
        ),
        "{err}"
    );
    assert!(
        err.contains("hint: fix sandbox/perf_scale.py (what it imports and calls must exist in this checkout)"),
        "{err}"
    );
    assert!(
        err.contains("nothing was kept: the half-made branch"),
        "{err}"
    );
    assert!(!err.contains("nothing was created"), "{err}");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
}

/// Ctrl-C while the correctness tests run with the op's calls recorded: tests cut short made fewer calls
/// than they would have, so nothing is derived from them and no file is written.
#[test]
fn a_scaffold_interrupted_while_its_tests_run_writes_nothing_and_says_interrupted() {
    let f = Fixture::new();
    f.edit(
        "tests/suites/liger/test_scale.py",
        "def test_op(n, backend):\n",
        "def test_op(n, backend):\n    import os, time\n    \
         open(os.environ[\"FIXTURE_CHILD_PID_FILE\"], \"w\").write(str(os.getpid()))\n    \
         time.sleep(600)\n",
    );
    let hang = Hang::new();
    let out = hang.interrupt(&f, &["start", "scale", "--scaffold"]);
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    assert!(both(&out).contains("interrupted"), "{}", both(&out));
    hang.assert_child_gone();
    assert!(!f.path(PERF_FILE).exists());
}

/// A Python without pytest runs none of the tests the op's calls are recorded from: said so, not taken
/// for tests that never call the op.
#[test]
fn a_scaffold_whose_python_has_no_pytest_says_so() {
    let f = Fixture::new();
    let err = f.fails(&["start", "scale", "--scaffold", "--python", "python3 -S"]);
    assert!(
        err.contains("pytest is not available to python3 -S"),
        "{err}"
    );
    assert!(!f.path(PERF_FILE).exists());
}
