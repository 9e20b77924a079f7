//! A gain nothing in the tested process can forge: the harness's number as its own import made it, the
//! harness the session recorded, a timed call on input values no call had seen, and a per-call scalar
//! that is no cheat.

use crate::support;

use support::*;

/// `args` run in the fixture's environment with `env` set (a harness variable, or the stand-in harness's
/// calls per case), asserting success; stdout.
fn ok_with(f: &Fixture, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = f.command(args).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "{args:?} failed:\n{}", both(&out));
    text(&out.stdout)
}

/// A step in `env`, as `--json`; its report.
fn step_with(f: &Fixture, env: &[(&str, &str)], description: &str) -> serde_json::Value {
    let args = ["step", "--json", "--opt", "none", description];
    serde_json::from_str(&ok_with(f, env, &args)).unwrap()
}

/// The step's reason, after asserting it was reverted and that `verify` agrees with the record.
fn reverted(f: &Fixture, report: &serde_json::Value) -> String {
    assert_eq!(report["status"], "revert", "{report}");
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
    report["reason"].as_str().unwrap().to_string()
}

#[test]
fn a_kernel_that_rewrites_the_harness_s_number_at_import_is_reverted() {
    let f = Fixture::new();
    f.start();
    // a real change, and the harness's record made smaller by the kernel's module as it is imported:
    // the function replaced, or its code in place
    let cheat = |rewrite: &str, description: &str| {
        f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
        f.edit_kernel(
            "import cuda.tile as ct\n",
            &format!("import cuda.tile as ct\nimport tests.common as _harness\n\n{rewrite}\n"),
        );
        reverted(&f, &step_with(&f, &[], description))
    };
    let reason = cheat(
        "_record = _harness.benchmark_record\n_harness.benchmark_record = lambda ms: _record(ms * 0.5)",
        "bigger tiles",
    );
    assert!(
        reason.contains(
            "the candidate's harness reported a number the timed calls did not make: \
             tests.common.benchmark_record was replaced after the harness was imported"
        ),
        "{reason}"
    );
    let reason = cheat(
        "_harness.benchmark_record.__code__ = (lambda latency_ms: {\"median\": latency_ms * 0.5}).__code__",
        "bigger tiles, the record's code replaced",
    );
    assert!(
        reason.contains(
            "the code of tests.common.benchmark_record was replaced after the harness was imported"
        ),
        "{reason}"
    );
}

#[test]
fn the_harness_the_census_wraps_is_recorded_and_a_step_that_would_census_nothing_is_reverted() {
    let f = Fixture::new();
    f.start();
    // another harness at a step than at start: refused before it runs
    let head = f.head();
    let out = (f.command(&["step", "--opt", "none", "x"]))
        .env("CUTILE_PERF_HARNESS", "tests.common:benchmark_record")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stderr)
            .contains("CUTILE_PERF_HARNESS=tests.common:benchmark_record here, unset at start"),
        "{}",
        both(&out)
    );
    assert_eq!(f.head(), head);
    // a session started with a harness that is not there, or that the tests never call, censuses
    // nothing: its steps are reverted
    for (harness, why) in [
        ("tests.common:nothing", "no harness tests.common:nothing"),
        (
            "tests.common:_generator",
            "the test did not call its harness",
        ),
    ] {
        let g = Fixture::new();
        let env = [("CUTILE_PERF_HARNESS", harness)];
        ok_with(&g, &env, &["start", "vector_add"]);
        assert_eq!(
            g.trailer("HEAD", "Cutile-Perf-Harness"),
            format!("CUTILE_PERF_HARNESS={harness}")
        );
        g.set_latency(0.05, 0.5);
        let report = step_with(&g, &env, "a library fallback");
        let reason = reverted(&g, &report);
        assert!(
            reason.contains(&format!(
                "neither side's timed calls could be censused ({why}): nothing holds the gain to them"
            )),
            "{reason}"
        );
    }
}

/// A wrapper that keeps its output buffer across calls, does every tile on an untimed call and on the
/// first timed call after one, and half of them on the other timed calls (a module variable the kernel
/// reads, so that its launches look alike): its output is always right on the inputs it was given first.
const FEWER_TILES_WHILE_TIMED: &str = "def _timed():\n    frame = sys._getframe(1)\n    while frame is not None:\n        if frame.f_code.co_name == \"benchmark\":\n            return True\n        frame = frame.f_back\n    return False\n\n\n_out = {}\n_every_tile = [True]\n\n\ndef vector_add(a, b):\n    global _share\n    timed = _timed()\n    _share = 1.0 if not timed or _every_tile[0] else 0.5\n    _every_tile[0] = not timed\n    out = _out.setdefault(len(a), array(\"d\", bytes(8 * len(a))))\n    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    return list(out)\n";

#[test]
fn fewer_tiles_while_timed_into_a_buffer_holding_a_right_answer_is_reverted_on_fresh_inputs() {
    let f = Fixture::new();
    let env = [("CUTILE_PERF_FIXTURE_CALLS", "6")];
    ok_with(&f, &env, &["start", "vector_add"]);
    f.edit_kernel(
        "import cuda.tile as ct",
        "import sys\n\nimport cuda.tile as ct\n\n_share = 1.0",
    );
    f.edit_kernel(
        "    for i, (x, y) in enumerate(zip(a, b)):\n",
        "    for i, (x, y) in enumerate(zip(a, b)):\n        if i >= len(a) * _share:\n            break\n",
    );
    let text = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let start = text.find("def vector_add(a, b):").unwrap();
    f.write(
        KERNEL,
        &format!("{}{FEWER_TILES_WHILE_TIMED}", &text[..start]),
    );
    f.set_latency(0.05, 0.5);
    let report = step_with(&f, &env, "fewer tiles while timed");
    let reason = reverted(&f, &report);
    assert!(
        reason.contains(
            "(the first on input values no call had seen, written in place) returned other output than the \
             census's own call: 128 of 256 elements off"
        ),
        "{reason}"
    );
    // an honest kernel computes on the new values as the census's call does: kept
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.set_latency(0.05, 0.5);
    let report = step_with(&f, &env, "bigger tiles");
    assert_eq!(report["status"], "keep", "{report}");
}

#[test]
fn an_honest_kernel_given_a_per_call_offset_is_kept() {
    let f = Fixture::new();
    f.start();
    // a random kernel's offset, advanced by every call (a float: the stand-in compiles integers in)
    f.edit_kernel(
        "def vector_add_kernel(a, b, out, tile_size: ct.Constant[int]):",
        "def vector_add_kernel(a, b, out, tile_size: ct.Constant[int], offset):",
    );
    f.edit_kernel(
        "    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))",
        "    _offset[0] += 1.0\n    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE, _offset[0]))",
    );
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256\n_offset = [0.0]");
    f.set_latency(0.05, 0.5);
    let report = step_with(&f, &[], "bigger tiles, a per-call offset");
    assert_eq!(report["status"], "keep", "{report}");
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
}

#[test]
fn an_ignored_helper_is_seen_where_the_list_start_kept_is_gone() {
    let f = Fixture::new();
    f.start();
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Ignored").split(' ').next(),
        Some("0")
    );
    // the list beside the session removed, as uninstalling does, then a helper git ignores imported by
    // the kernel
    std::fs::remove_dir_all(f.path(".git/cutile-perf")).unwrap();
    f.append(".git/info/exclude", "/src/tilegym/ops/cutile/_fast.py\n");
    f.write("src/tilegym/ops/cutile/_fast.py", "HALF = True\n");
    f.edit_kernel(
        "import cuda.tile as ct",
        "import cuda.tile as ct\n\nfrom . import _fast",
    );
    let head = f.head();
    let refused = f.fails(&["step", "--opt", "none", "a helper"]);
    assert!(
        refused.contains(
            "git-ignored files that pytest loads differ from when the session started (0 files then, 1 file \
             now: src/tilegym/ops/cutile/_fast.py)"
        ),
        "{refused}"
    );
    assert_eq!(f.head(), head);
    // the helper gone, the step runs
    std::fs::remove_file(f.path("src/tilegym/ops/cutile/_fast.py")).unwrap();
    f.edit_kernel("\n\nfrom . import _fast", "");
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    let report = step_with(&f, &[], "bigger tiles");
    assert_ne!(report["status"], "crash", "{report}");
}
