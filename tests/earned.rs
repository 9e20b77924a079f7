//! A gain the kernel earned: the census of what ran in each perf case's timed call, and the gate a kept
//! step must pass. The fixture's stand-in cuTile runtime logs its launches as GPU work; `fastlib` stands
//! in for a vendor library. Each shortcut below would be kept on latency alone.

use crate::support;

use support::*;

/// The kernel file's launch wrapper, replaced by `wrapper` (the whole `def vector_add` block).
fn replace_wrapper(f: &Fixture, wrapper: &str) {
    let text = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let start = text.find("def vector_add(a, b):").unwrap();
    f.write(KERNEL, &format!("{}{wrapper}", &text[..start]));
}

/// A step that would be kept at -50% on latency: reverted, and `verify` agrees; its report.
fn step_refused(f: &Fixture, description: &str) -> serde_json::Value {
    f.set_latency(0.05, 0.5);
    let report = f.step_json(&[description]);
    assert_eq!(report["status"], "revert", "{report}");
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
    report
}

#[test]
fn a_library_fallback_is_reverted_with_what_ran_instead() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "import cuda.tile as ct",
        "import cuda.tile as ct\nimport fastlib",
    );
    replace_wrapper(&f, "def vector_add(a, b):\n    return fastlib.add(a, b)\n");
    let report = step_refused(&f, "call the library");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "not the kernel's own gain: tests.ops.test_vector_add::test_perf[cutile-small]: no cuTile kernel from the allowed paths ran in the timed call: 100% of GPU time in sm90_xmma_elementwise_add_f64"
        ),
        "{reason}"
    );
}

/// A fallback slower than the kernel is reverted by the rounds already; its reason still names what ran
/// instead, so the record tells a library call from a slower kernel.
#[test]
fn a_library_fallback_slower_than_the_kernel_is_named_as_one() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "import cuda.tile as ct",
        "import cuda.tile as ct\nimport fastlib",
    );
    replace_wrapper(&f, "def vector_add(a, b):\n    return fastlib.add(a, b)\n");
    f.set_latency(0.2, 2.0);
    let report = f.step_json(&["call the library"]);
    assert_eq!(report["status"], "revert", "{report}");
    let reason = report["reason"].as_str().unwrap();
    assert!(reason.contains("slower"), "{reason}");
    assert!(
        reason.contains(
            "; nor was it the kernel's own work: tests.ops.test_vector_add::test_perf[cutile-small]: no cuTile kernel from the allowed paths ran in the timed call: 100% of GPU time in sm90_xmma_elementwise_add_f64"
        ),
        "{reason}"
    );
    // nothing of the kernel ran: no diagnosis to profile it
    assert!(report["diagnosis_s"].is_null(), "{report}");
    f.replays_as_recorded();
}

#[test]
fn a_memoized_output_with_a_decoy_launch_is_reverted() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "import cuda.tile as ct",
        "import cuda.tile as ct\nimport fastlib",
    );
    replace_wrapper(
        &f,
        "_MEMO = {}\n\n\ndef vector_add(a, b):\n    key = (id(a), id(b))\n    if key not in _MEMO:\n        out = array(\"d\", bytes(8 * len(a)))\n        ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n        _MEMO[key] = list(out)\n    fastlib.touch()\n    return _MEMO[key]\n",
    );
    let report = step_refused(&f, "remember the output");
    let reason = report["reason"].as_str().unwrap();
    assert_eq!(
        report["shortcut_signs"][0],
        "a module-level dict (a cache of results?): `_MEMO = {}`"
    );
    assert!(
        reason.contains("no cuTile kernel from the allowed paths ran in the timed call: 100% of GPU time in vectorized_elementwise_kernel"),
        "{reason}"
    );
}

/// A wrapper that tells the harness's timed calls from others by its call stack, and computes the output
/// on the host there instead of launching: the census's own call launches as the baseline did.
#[test]
fn a_launch_skipped_only_while_timed_is_reverted() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "import cuda.tile as ct",
        "import sys\n\nimport cuda.tile as ct",
    );
    replace_wrapper(
        &f,
        "def _timed():\n    frame = sys._getframe(1)\n    while frame is not None:\n        if frame.f_code.co_name == \"benchmark\":\n            return True\n        frame = frame.f_back\n    return False\n\n\ndef vector_add(a, b):\n    out = array(\"d\", bytes(8 * len(a)))\n    if _timed():\n        out = array(\"d\", (x + y for x, y in zip(a, b)))\n    else:\n        ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    return list(out)\n",
    );
    let report = step_refused(&f, "skip the launch while timed");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "the timed calls launched vector_add_kernel 0% as often per call as the census's own call did \
             (baseline 100%): launches skipped while timed"
        ),
        "{reason}"
    );
}

/// What tells the harness's timed calls from the others, by the call stack (the fixture's harness is
/// `benchmark`), for the wrappers below.
const TIMED: &str = "def _timed():\n    frame = sys._getframe(1)\n    while frame is not None:\n        if frame.f_code.co_name == \"benchmark\":\n            return True\n        frame = frame.f_back\n    return False\n\n\n";

/// Three wrappers that do less while timed, each launching the kernel with the census call's grid and
/// as often, in one session: the kernel given half the work (same arguments: a module variable it reads),
/// the launch on another stream, and the output an untimed call left returned again while the kernel
/// does nothing. Each is reverted with its reason, and `verify` agrees with each. Before them, a step
/// whose environment would make the harness measure otherwise than at `start` is refused.
#[test]
fn work_done_otherwise_only_while_timed_is_reverted() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    let out = f
        .command(&["step", "--opt", "none", "x"])
        .env("CUPTI", "0")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stderr).contains(
            "this environment's harness would measure otherwise than the session's start (CUPTI=0 here, unset at start)"
        ),
        "{}",
        both(&out)
    );
    assert_eq!(f.head(), head);
    let cheat = |kernel_edit: Option<&str>, wrapper: &str, description: &str, args: &[&str]| {
        f.edit_kernel(
            "import cuda.tile as ct",
            "import sys\n\nimport cuda.tile as ct\n\n_share = 1.0\n_LAST = {}",
        );
        if let Some(edit) = kernel_edit {
            f.edit_kernel("    for i, (x, y) in enumerate(zip(a, b)):\n", edit);
        }
        replace_wrapper(&f, &format!("{TIMED}{wrapper}"));
        f.set_latency(0.05, 0.5);
        let report = f.step_json(&[args, &[description]].concat());
        assert_eq!(report["status"], "revert", "{report}");
        let verify = f.run(&["verify"]);
        assert!(verify.status.success(), "{}", both(&verify));
        f.replays_as_recorded();
        report["reason"].as_str().unwrap().to_string()
    };
    let half = "    for i, (x, y) in enumerate(zip(a, b)):\n        if i >= len(a) * _share:\n            break\n";
    let reason = cheat(
        Some(half),
        "def vector_add(a, b):\n    global _share\n    _share = 0.5 if _timed() else 1.0\n    out = array(\"d\", bytes(8 * len(a)))\n    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    return list(out)\n",
        "half the work while timed",
        &[],
    );
    assert!(
        reason.contains(
            "test_perf[cutile-small]: timed call 1 returned other output than the census's own call: 128 of 256 elements off, by up to 7.650e2 (held bit for bit, as two untimed calls agreed bit for bit)"
        ),
        "{reason}"
    );
    let reason = cheat(
        None,
        "def vector_add(a, b):\n    out = array(\"d\", bytes(8 * len(a)))\n    ct.launch(7 if _timed() else None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    return list(out)\n",
        "another stream while timed",
        &[],
    );
    assert!(
        reason.contains(
            "test_perf[cutile-small]: the timed calls gave vector_add_kernel other arguments than the census's own call in 100% of its launches (baseline 0%): stream=7 (census stream=default)"
        ),
        "{reason}"
    );
    let reason = cheat(
        Some(half),
        "def vector_add(a, b):\n    global _share\n    key = (id(a), id(b))\n    _share = 0.0 if _timed() and key in _LAST else 1.0\n    out = array(\"d\", bytes(8 * len(a)))\n    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    if _share == 0.0:\n        return _LAST[key]\n    _LAST[key] = list(out)\n    return _LAST[key]\n",
        "an earlier output while timed",
        &["--continue"],
    );
    assert!(
        reason.contains(
            "test_perf[cutile-small]: timed call 1 returned other output than the census's own call: 256 of 256 elements off, not a number where the census's output is (held bit for bit"
        ),
        "{reason}"
    );
}

#[test]
fn work_moved_out_of_the_allowed_paths_is_reverted() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "import cuda.tile as ct",
        "import cuda.tile as ct\nfrom tilegym.ops.cutile.helpers import add_kernel",
    );
    f.edit_kernel(
        "ct.launch(None, (1,), vector_add_kernel,",
        "ct.launch(None, (1,), add_kernel,",
    );
    let report = step_refused(&f, "use the shared kernel");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("no cuTile kernel from the allowed paths ran in the timed call: 100% of GPU time in add_kernel"),
        "{reason}"
    );
}

#[test]
fn an_honest_gain_is_kept_and_its_census_is_in_the_evidence() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.set_latency(0.05, 0.5);
    let report = f.step_json(&["bigger tiles"]);
    assert_eq!(report["status"], "keep", "{report}");
    // every benchmark run's JUnit file in the evidence carries a census per perf case
    let repo = git_cutile_perf::system::git::Repo::discover(&f.root).unwrap();
    let evidence = git_cutile_perf::record::evidence::Evidence::of(&repo, &f.head())
        .unwrap()
        .unwrap();
    let rounds: Vec<_> = evidence
        .runs
        .iter()
        .filter(|run| run.name.starts_with("round-"))
        .collect();
    assert!(
        rounds.len() >= 2,
        "{:?}",
        evidence.runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    for run in rounds {
        assert_eq!(
            run.records
                .text
                .matches("name=\"cutile_perf_census\"")
                .count(),
            2,
            "{}",
            run.records.text
        );
        // with the hints each kernel was compiled with (an autotuner's pick, on a real GPU), and the
        // timed call's output held bit for bit to the census call's
        for shown in [
            "&quot;hints&quot;: [{&quot;opt_level&quot;: 3}]",
            "&quot;applied&quot;: &quot;bit-identical&quot;",
            "&quot;equal&quot;: true",
        ] {
            assert!(run.records.text.contains(shown), "{}", run.records.text);
        }
    }
    // what the check of the timed outputs cost is in the report
    assert!(
        report["checks"]["timed_outputs_s"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
}

/// A session on a stand-in GPU with the peaks `peak` (`CUTILE_PERF_GPU_PEAK`): a new kernel whose large
/// config takes 0.001 ms is reverted, and `verify` agrees; the step's reason.
fn too_fast_for(peak: &str) -> String {
    const GPU: &str = "NVIDIA STAND-IN GPU, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";
    let mut f = Fixture::new();
    f.fake_gpu(Some(GPU));
    let run = |args: &[&str]| {
        f.command(args)
            .env("CUTILE_PERF_GPU_PEAK", peak)
            .output()
            .unwrap()
    };
    let out = run(&["start", "vector_add", "--class", "memory"]);
    assert!(out.status.success(), "{}", both(&out));
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.set_latency(0.1, 0.001);
    let out = run(&["step", "--opt", "none", "--json", "too fast"]);
    assert!(out.status.success(), "{}", both(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "revert", "{report}");
    let verify = run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    report["reason"].as_str().unwrap().to_string()
}

#[test]
fn a_latency_beyond_the_gpus_peak_is_reverted() {
    // 1 GB/s of DRAM and a 1 kB L2: the fixture's 98 kB large config cannot take 0.001 ms
    let reason = too_fast_for("STAND-IN GPU, 1, 1, 0.001");
    assert!(
        reason.contains(
            "test_perf[cutile-large]: 0.001000 ms for 98.3 kB implies 98 GB/s, beyond the STAND-IN GPU's 1 GB/s (x1.5 margin): faster than the hardware allows"
        ),
        "{reason}"
    );
}

#[test]
fn a_latency_beyond_the_gpus_math_peak_is_reverted() {
    // bandwidth to spare, and 10 MFLOP/s of math: the large config's 4096 adds cannot take 0.001 ms
    let reason = too_fast_for("STAND-IN GPU, 1000000, 0.00001, 1000");
    assert!(
        reason.contains(
            "test_perf[cutile-large]: 0.001000 ms for 4.10 kFLOP implies 4.10 GFLOP/s, beyond the STAND-IN GPU's 10.00 MFLOP/s for float64 (x1.2 margin): faster than the hardware allows"
        ),
        "{reason}"
    );
}

#[test]
fn a_kernel_right_only_on_the_inputs_its_tests_draw_fails_on_unseen_ones() {
    let f = Fixture::new();
    f.start();
    // right for the inputs `random.seed(1234)` draws, wrong for any others of that length
    replace_wrapper(
        &f,
        "import random\n\n_SEEN = random.Random(1234).randint(0, 1000)\n\n\ndef vector_add(a, b):\n    out = array(\"d\", bytes(8 * len(a)))\n    ct.launch(None, (1,), vector_add_kernel, (a, b, out, TILE_SIZE))\n    if len(a) == 50 and a[0] != _SEEN:\n        return [x - y for x, y in zip(a, b)]\n    return list(out)\n",
    );
    f.set_latency(0.05, 0.5);
    let report = f.step_json(&["special-case the test's inputs"]);
    assert_eq!(report["status"], "revert", "{report}");
    assert_eq!(report["correctness"], "FAIL", "{report}");
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("correctness failed on inputs neither side had seen (seeds shifted by ")
            && reason.ends_with("), where the baseline's code passes: tests.ops.test_vector_add::test_op_seeded[cutile]"),
        "{reason}"
    );
    // the candidate failed a case: the baseline's code ran on the same inputs, to tell the test's failures
    // from the change's
    let names: Vec<String> = evidence_runs(&f).into_iter().map(|run| run.name).collect();
    assert!(
        names
            .iter()
            .any(|name| name.starts_with("unseen-") && name.ends_with("-baseline")),
        "{names:?}"
    );
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
}

/// The runs in the evidence of the iteration at HEAD.
fn evidence_runs(f: &Fixture) -> Vec<git_cutile_perf::record::evidence::RunFile> {
    let repo = git_cutile_perf::system::git::Repo::discover(&f.root).unwrap();
    git_cutile_perf::record::evidence::Evidence::of(&repo, &f.head())
        .unwrap()
        .unwrap()
        .runs
}

/// The compiled kernels the first round of `side` carries in the evidence.
fn compiled(
    runs: &[git_cutile_perf::record::evidence::RunFile],
    side: &str,
) -> Vec<git_cutile_perf::rules::compile::CompiledKernel> {
    let name = format!("round-1-{side}");
    let names: Vec<&str> = runs.iter().map(|run| run.name.as_str()).collect();
    let run = runs.iter().find(|run| run.name == name);
    let run = run.unwrap_or_else(|| panic!("no {name} in {names:?}"));
    run.compiled.clone().unwrap_or_default()
}

/// The perf cases' compiled kernel, as the stand-in names it (three float64 arrays, the tile size).
const PERF_SIGNATURE: &str = "vector_add_kernel_Kt1_A1f64_1l0_A1f64_1l0_A1f64_1l0_I128";

#[test]
fn a_recompile_of_the_same_code_is_no_change_after_one_round_without_a_process_of_its_own() {
    let f = Fixture::new();
    f.start();
    // a comment that moves the kernel down a line: cuda-tile's dump file names the line, its text does not
    f.edit_kernel("@ct.kernel", "# the same kernel, said again\n@ct.kernel");
    let starts = f.root.join("../starts.txt");
    let out = f
        .command(&["step", "--opt", "none", "--json", "a comment"])
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "revert", "{report}");
    assert_eq!(report["correctness"], "PASS", "{report}");
    assert_eq!(
        report["reason"],
        git_cutile_perf::rules::decision::NO_CHANGE,
        "{report}"
    );
    assert_eq!(report["change_pct"], serde_json::Value::Null, "{report}");
    assert_eq!(
        report["checks"]["not_alike"],
        serde_json::Value::Null,
        "{report}"
    );
    // what the check took is reported (how long it takes is no test's to assert)
    assert!(
        report["checks"]["no_reroll_s"].as_f64().unwrap() >= 0.0,
        "{report}"
    );
    // the two workers, and no pytest of the check's own (nor of the pair that stood by for a second
    // round, which the step ends unused)
    let starts = std::fs::read_to_string(&starts).unwrap();
    let starts: Vec<&str> = (starts.lines())
        .filter(|line| !line.contains("/channel.1 "))
        .collect();
    assert_eq!(starts.len(), 2, "{starts:#?}");
    assert!(
        starts.iter().all(|s| s.contains("--cutile-perf-worker=")),
        "{starts:#?}"
    );
    let runs = evidence_runs(&f);
    let names: Vec<&str> = runs.iter().map(|run| run.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("round-2")), "{names:?}");
    let (candidate, baseline) = (compiled(&runs, "candidate"), compiled(&runs, "baseline"));
    let entries = |kernels: &[git_cutile_perf::rules::compile::CompiledKernel]| {
        kernels
            .iter()
            .flat_map(|k| k.entries.clone())
            .collect::<Vec<_>>()
    };
    // the candidate's worker compiled its correctness run's signature too; the perf one is on both sides
    assert!(
        entries(&candidate).contains(&PERF_SIGNATURE.to_string()),
        "{candidate:?}"
    );
    assert_eq!(entries(&baseline), [PERF_SIGNATURE], "{baseline:?}");
    let blob = |kernels: &[git_cutile_perf::rules::compile::CompiledKernel]| {
        kernels
            .iter()
            .find(|k| k.entries == [PERF_SIGNATURE])
            .unwrap()
            .blob
            .clone()
    };
    assert_eq!(blob(&candidate), blob(&baseline));
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
}

#[test]
fn a_real_change_is_still_benchmarked() {
    let f = Fixture::new();
    f.start();
    // a new kernel at the same simulated latency, in the same signature
    f.edit_kernel("CORRECT = True", "CORRECT = True\nUNROLL = 2");
    let report = f.step_json(&["unrolled"]);
    assert_ne!(
        report["reason"],
        git_cutile_perf::rules::decision::NO_CHANGE,
        "{report}"
    );
    assert!(report["rounds"].as_u64().unwrap() >= 1, "{report}");
    // the evidence says what differs first
    let why = report["checks"]["not_alike"].as_str().unwrap();
    assert!(
        why.starts_with(&format!(
            "{PERF_SIGNATURE} compiled to other Tile IR (candidate "
        )),
        "{report}"
    );
    let runs = evidence_runs(&f);
    assert_ne!(compiled(&runs, "candidate"), compiled(&runs, "baseline"));
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
    f.replays_as_recorded();
}
