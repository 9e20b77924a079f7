//! `diagnose` and `compare` on the fixture's session, with real git and pytest. Machines without a GPU
//! have no Nsight Compute: `tests/data/diagnose/ncu` stands in for it (it runs the profiled pytest case
//! as ncu would, then writes canned CSV matching the kernel it ran).

use crate::support;

use std::path::PathBuf;

use support::*;

/// The fake ncu copied beside this test's repository, and a PATH that finds it first.
fn fake_ncu(fixture: &Fixture) -> (PathBuf, String) {
    let dir = fixture.root.parent().unwrap().join("ncu-bin");
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/diagnose"),
        &dir,
    );
    (
        dir.clone(),
        format!("{}:{}", dir.display(), path_without_ncu()),
    )
}

/// The harness's PATH (this test's binary first), less any real ncu.
fn path_without_ncu() -> String {
    let dirs: Vec<PathBuf> = std::env::split_paths(&*SEARCH_PATH)
        .filter(|d| !d.join("ncu").exists())
        .collect();
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", both(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A session whose iteration 1 kept a change (bigger tiles, faster).
fn session_with_a_kept_change() -> Fixture {
    let fixture = Fixture::new();
    fixture.start();
    fixture.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    fixture.set_latency(0.05, 0.5);
    let step = fixture.step_json(&["bigger tiles"]);
    assert_eq!(step["status"], "keep");
    fixture
}

#[test]
fn diagnose_profiles_one_case_of_each_iteration_and_compare_says_what_moved() {
    let fixture = session_with_a_kept_change();
    let (ncu_dir, path) = fake_ncu(&fixture);
    let diagnose = |args: &[&str]| {
        let mut full = vec!["diagnose", "--json"];
        full.extend_from_slice(args);
        json(&fixture.command(&full).env("PATH", &path).output().unwrap())
    };

    // the current baseline (iteration 1), from the work tree
    let current = diagnose(&[]);
    assert_eq!(current["iteration"], 1);
    assert_eq!(current["cause"], "memory");
    assert_eq!(current["rule"], "memory-bound");
    assert_eq!(
        current["because"],
        "memory-bound: memory throughput 86% >= 60% of peak and >= SM throughput 24%; top stalls long_scoreboard 4.0"
    );
    // the median of three launches of the kernel
    assert_eq!(current["launches_profiled"], 3);
    assert_eq!(current["profile"]["duration_us"], 620.0);
    // the fixture's cuda.tile stand-in dumps its Tile IR when asked: two view loads for TILE_SIZE 256, under
    // the compiled kernel's name
    assert_eq!(
        current["compile"]["tile_ir"][SIGNATURE_256]["view_loads"],
        2
    );
    let config = current["config"].as_str().unwrap();
    assert!(config.ends_with("large]"), "the slowest config: {config}");
    let calls = std::fs::read_to_string(ncu_dir.join("calls")).unwrap();
    assert!(
        calls.contains("--kernel-name regex:vector_add_kernel --launch-skip 3 --launch-count 3"),
        "{calls}"
    );
    let node = current["node_id"].as_str().unwrap();
    assert!(
        node.starts_with("tests/ops/test_vector_add.py::test_perf["),
        "{node}"
    );
    assert!(calls.contains(&format!("-m pytest {node} -q")), "{calls}");
    assert!(
        calls.contains("-p no:cacheprovider -p cutile_perf_pause_tuning"),
        "the plugin that pauses profiling during an autotune search: {calls}"
    );
    assert!(
        calls.contains("pytest exit 0"),
        "the one case ran and passed: {calls}"
    );

    // iteration 0 from a temporary worktree, which is gone afterwards
    let first = diagnose(&["0", "--config", config]);
    assert_eq!(first["iteration"], 0);
    assert_eq!(first["profile"]["dram_pct"], 64.5);
    let calls = std::fs::read_to_string(ncu_dir.join("calls")).unwrap();
    assert!(calls.contains("/cutile-perf/baseline-"), "{calls}");
    // the kept baseline worker's worktree aside
    let worktrees = fixture.git(&["worktree", "list"]);
    let temporary = worktrees
        .lines()
        .filter(|l| !l.contains("/cutile-perf/workers/"));
    assert_eq!(temporary.count(), 1, "{worktrees}");
    assert_eq!(fixture.status(), "");

    // both cached as notes, read back by compare
    let compare = json(&fixture.run(&["compare", "0", "1", "--json"]));
    assert!(
        compare["diff_stat"]
            .as_str()
            .unwrap()
            .contains("vector_add.py"),
        "{compare}"
    );
    assert_eq!(compare["a"]["diagnosed"], true);
    assert_eq!(
        compare["a"]["compile_facts"], "diagnose",
        "no evidence has them"
    );
    let large = compare["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["test"] == config)
        .unwrap();
    assert_eq!(large["change_pct"], -50.0);
    assert_eq!(
        large["summary"].as_str().unwrap(),
        format!(
            "{}: -50.0%; still memory-bound; DRAM throughput 64% -> 86%, duration 1100.0 -> 620.0 us, view loads 1 -> 2",
            config.rsplit("::").next().unwrap()
        )
    );
    let text = fixture.ok(&["compare", "0", "1"]);
    assert!(text.contains("DRAM throughput 64% -> 86%"), "{text}");
    let small = compare["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["test"] != config)
        .unwrap();
    assert!(
        small["summary"]
            .as_str()
            .unwrap()
            .contains("not diagnosed in both"),
        "{small}"
    );

    // the report shows each iteration's cached diagnosis and the compile facts that came with it
    fixture.ok(&["report"]);
    let page = std::fs::read_to_string(fixture.path("sandbox/perf_results.html")).unwrap();
    assert_eq!(
        page.matches("<strong>Diagnosis</strong>").count(),
        2,
        "{page}"
    );
    assert!(page.contains(": memory (memory-bound: "), "{page}");
    assert!(page.contains("<summary>compile facts</summary>"), "{page}");
}

#[test]
fn diagnose_save_keeps_nsight_computes_report_and_reads_the_profile_from_it() {
    let fixture = session_with_a_kept_change();
    let (ncu_dir, path) = fake_ncu(&fixture);
    let dir = fixture.root.parent().unwrap().join("profiles");
    let diagnose = |args: &[&str]| fixture.command(args).env("PATH", &path).output().unwrap();

    let report = json(&diagnose(&[
        "diagnose",
        "--save",
        dir.to_str().unwrap(),
        "--json",
    ]));
    // the fake ncu prints no table when it saves a report: these numbers came back through --import
    assert_eq!(report["cause"], "memory");
    assert_eq!(report["profile"]["duration_us"], 620.0);
    let saved = PathBuf::from(report["saved_report"].as_str().unwrap());
    assert_eq!(saved.parent().unwrap(), dir);
    let name = saved.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("iteration-1-test_perf-") && name.ends_with("large.ncu-rep"),
        "{name}"
    );
    let kept = std::fs::read_to_string(&saved).unwrap();
    assert!(kept.contains("\"vector_add_kernel\""), "{kept}");
    let calls = std::fs::read_to_string(ncu_dir.join("calls")).unwrap();
    let saved = saved.display();
    assert!(
        calls.contains(&format!("--export {saved} --force-overwrite ")),
        "{calls}"
    );
    assert!(
        calls.contains(&format!("--import {saved} --csv --print-units base")),
        "{calls}"
    );

    // again over the same file, as text; and without --save nothing is kept
    let plain = diagnose(&["diagnose", "--save", dir.to_str().unwrap()]);
    assert!(
        text(&plain.stdout).contains(&format!("  report   {saved} (open it in Nsight Compute)")),
        "{}",
        both(&plain)
    );
    assert_eq!(
        json(&diagnose(&["diagnose", "--json"]))["saved_report"],
        serde_json::Value::Null
    );
}

#[test]
fn without_ncu_or_without_counter_access_a_clear_hint() {
    let fixture = Fixture::new();
    fixture.start();
    let missing = fixture
        .command(&["diagnose"])
        .env("PATH", path_without_ncu())
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let stderr = text(&missing.stderr);
    assert!(stderr.contains("ncu is not on PATH"), "{stderr}");
    assert!(stderr.contains("hint: install Nsight Compute"), "{stderr}");

    let (_, path) = fake_ncu(&fixture);
    let denied = fixture
        .command(&["diagnose", "--json"])
        .env("PATH", &path)
        .env("FAKE_NCU", "denied")
        .output()
        .unwrap();
    assert!(!denied.status.success());
    let error: serde_json::Value = serde_json::from_slice(&denied.stdout).unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("ERR_NVGPUCTRPERM"),
        "{error}"
    );
    let hint = error["hint"].as_str().unwrap();
    assert!(hint.contains("run as root"), "{hint}");
    assert!(
        hint.contains("NVreg_RestrictProfilingToAdminUsers=0"),
        "{hint}"
    );
    // nothing cached for a failed profile
    let diagnosed =
        || json(&fixture.run(&["compare", "0", "0", "--json"]))["a"]["diagnosed"].clone();
    assert_eq!(diagnosed(), false, "a failed profile is cached");
    // an ncu without one of the metrics: profiled again without it
    let old = fixture
        .command(&["diagnose", "--json"])
        .env("PATH", &path)
        .env("FAKE_NCU", "old")
        .output()
        .unwrap();
    assert_eq!(json(&old)["cause"], "memory");
    assert!(
        text(&old.stderr).contains("does not know sm__pipe_tensor_op_gmma_cycles_active"),
        "{}",
        text(&old.stderr)
    );
    assert_eq!(
        diagnosed(),
        true,
        "the profile that succeeded is not cached"
    );
}

/// The perf cases' compiled kernel at TILE_SIZE 256, as the stand-in names it.
const SIGNATURE_256: &str = "vector_add_kernel_Kt1_A1f64_1l0_A1f64_1l0_A1f64_1l0_I256";

#[test]
fn a_step_runs_ncu_only_where_its_cause_is_recorded() {
    let fixture = Fixture::new();
    fixture.start();
    let (ncu_dir, path) = fake_ncu(&fixture);
    let calls = || {
        std::fs::read_to_string(ncu_dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    // past the no-gain limit too: the FAIL and the crash count as iterations without a gain
    let step = |args: &[&str]| {
        let mut full = vec!["step", "--opt", "none", "--json", "--continue"];
        full.extend_from_slice(args);
        json(&fixture.command(&full).env("PATH", &path).output().unwrap())
    };
    // nothing measured: no cause to record
    fixture.edit_kernel("CORRECT = True", "CORRECT = False");
    let failed = step(&["a wrong kernel"]);
    assert_eq!(failed["correctness"], "FAIL", "{failed}");
    fixture.edit_kernel("CRASH = \"\"", "CRASH = \"exception\"");
    let crashed = step(&["a crashing kernel"]);
    assert_eq!(crashed["status"], "crash", "{crashed}");
    // the cause given: nothing for ncu to add
    fixture.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    fixture.set_latency(0.05, 0.5);
    let told = step(&["bigger tiles", "--cause", "memory"]);
    assert_eq!(told["status"], "keep", "{told}");
    for report in [&failed, &crashed, &told] {
        assert_eq!(report["diagnosis_s"], serde_json::Value::Null, "{report}");
    }
    assert_eq!(calls(), 0, "ncu ran where its answer is not recorded");
    // a kept change without --cause: diagnosed once, and timed
    fixture.set_latency(0.025, 0.25);
    let kept = step(&["smaller latencies"]);
    assert_eq!(kept["status"], "keep", "{kept}");
    assert!(kept["cause"].is_string(), "{kept}");
    assert!(kept["diagnosis_s"].as_f64().unwrap() > 0.0, "{kept}");
    assert!(calls() >= 1);
}
