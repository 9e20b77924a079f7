//! The GPU check at `start` and `step`, and the GPU watched around each benchmark run, through an
//! `nvidia-smi` on PATH that reports what each test needs (the machine running the tests has no GPU).

use crate::support;

use support::*;

const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";

fn evidence(f: &Fixture) -> String {
    f.git(&["notes", "--ref", "refs/notes/cutile-perf", "show", "HEAD"])
}

#[test]
fn start_refuses_a_machine_without_a_gpu_unless_told_and_says_how() {
    let mut f = Fixture::new();
    f.fake_gpu(None);
    let err = f.fails(&["start", "vector_add"]);
    assert!(err.contains("no GPU found"), "{err}");
    assert!(err.contains("--no-gpu starts without one"), "{err}");
    assert!(err.contains("nothing was created"), "{err}");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
    assert_eq!(f.status(), "");

    f.ok(&["start", "vector_add", "--no-gpu"]);
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-No-GPU"), "true");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-GPU"), "");
    // the fixture's kernel has no MMA: the static estimate, and where it came from
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Class"), "memory");
    assert!(
        f.trailer("HEAD", "Cutile-Perf-Class-Source")
            .starts_with("static: "),
        "{}",
        f.trailer("HEAD", "Cutile-Perf-Class-Source")
    );
    // a --no-gpu session's steps do not look for one either
    f.append(KERNEL, "# tried something\n");
    f.ok(&["step", "--opt", "none", "an edit"]);
}

#[test]
fn start_refuses_a_gpu_cutile_does_not_run_on() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(
        "Tesla V100-SXM2-16GB, 7.0, 550.54.15, 1380, 1530, 0, 16384, 35",
    ));
    let err = f.fails(&["start", "vector_add"]);
    assert!(
        err.contains("Tesla V100-SXM2-16GB (compute capability 7.0) cannot run cuTile kernels"),
        "{err}"
    );
    assert!(err.contains("Ampere/Ada, Hopper and Blackwell"), "{err}");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
}

#[test]
fn the_gpu_is_recorded_checked_at_each_step_and_watched_around_each_run() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(H200));
    f.gpu_processes("4242, python3, 2048\n");
    let out = f.run(&["start", "vector_add", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: other processes use the GPU (pid 4242 python3 (2048 MiB))"),
        "{stderr}"
    );
    assert!(
        stderr.contains("other processes used the GPU around benchmark run benchmark-1"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["gpu"]["gpu"]["name"], "NVIDIA H200");
    assert_eq!(report["gpu"]["gpu"]["sm_clock_max_mhz"], 1980);
    assert_eq!(report["plan"]["kernels"][0]["name"], "vector_add_kernel");
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-GPU"),
        "NVIDIA H200, 9.0, 580.159.04"
    );
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-GPU-State"),
        "SM 1980/1980 MHz, 41 C, memory 612/143771 MiB; other processes: pid 4242 python3 (2048 MiB)"
    );
    assert!(
        evidence(&f).contains("\nrun benchmark-2: "),
        "{}",
        evidence(&f)
    );
    assert!(evidence(&f).contains("\n  gpu before SM 1980/1980 MHz, 41 C"));

    // the GPU is gone: the step refuses before running anything, and the change stays
    f.gpu_processes("");
    // a new kernel (a comment alone would be recorded as no change)
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    let head = f.head();
    std::fs::write(f.root.join("../home/gpu-bin/gpu.csv"), "").unwrap();
    let err = f.fails(&["step", "--opt", "none", "an edit"]);
    assert!(err.contains("no GPU found"), "{err}");
    assert!(
        err.contains("the session's baseline ran on NVIDIA H200, 9.0, 580.159.04"),
        "{err}"
    );
    assert_eq!(f.head(), head);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));

    // another model: a warning, and the step runs there
    std::fs::write(
        f.root.join("../home/gpu-bin/gpu.csv"),
        "NVIDIA B200, 10.0, 580.159.04, 1965, 1965, 600, 183359, 39\n",
    )
    .unwrap();
    let out = f.ok_all(&["step", "--opt", "none", "an edit"]);
    assert!(
        out.contains(
            "this step runs on NVIDIA B200, 10.0, 580.159.04, the baseline ran on NVIDIA H200"
        ),
        "{out}"
    );
    let note = evidence(&f);
    assert!(
        note.contains("\ngpu: NVIDIA B200, 10.0, 580.159.04\n"),
        "{note}"
    );
    assert!(
        note.contains("\ngpu state: SM 1965/1965 MHz, 39 C"),
        "{note}"
    );
    assert!(note.contains("\nrun round-1-candidate: "), "{note}");
    assert!(!note.contains("others:"), "{note}");
}

/// `start` on a fresh fixture with an H200 and the fake ncu (its FMA count `fma`) on PATH; returns the
/// fixture and stderr.
fn start_with_ncu(args: &[&str], fma: &str) -> (Fixture, String) {
    let mut f = Fixture::new();
    f.fake_gpu(Some(H200));
    let fake_ncu = std::fs::canonicalize("tests/data/inspect/fake-ncu").unwrap();
    let path = format!(
        "{}:{}:{}",
        f.root.join("../home/gpu-bin").display(),
        fake_ncu.display(),
        *SEARCH_PATH
    );
    let mut full = vec!["start", "vector_add"];
    full.extend_from_slice(args);
    let out = f
        .command(&full)
        .env("PATH", path)
        .env("FAKE_NCU_FMA", fma)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (f, text(&out.stderr))
}

#[test]
fn with_ncu_on_path_start_measures_the_class_unless_an_option_names_it() {
    let (f, _) = start_with_ncu(&[], "500000");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Class"), "memory");
    let source = f.trailer("HEAD", "Cutile-Perf-Class-Source");
    assert!(
        source.starts_with("measured: 1.00 FLOP per DRAM byte, 1000 GB/s, 1.00 TFLOP/s in vector_add_kernel (tests.ops.test_vector_add::test_perf[cutile-large])"),
        "{source}"
    );
    // the heaviest config's case, warmed up, autotune searches paused
    let called = std::fs::read_to_string(f.path("sandbox/class/ncu.csv.args")).unwrap();
    assert!(
        called.contains("tests/ops/test_vector_add.py::test_perf[cutile-large]"),
        "{called}"
    );
    assert!(called.contains("cutile_perf_pause_tuning"), "{called}");
    assert!(called.contains("--launch-skip\n3\n"), "{called}");

    let (f, _) = start_with_ncu(&["--class", "balanced"], "500000");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Class-Source"), "--class");
    assert!(!f.path("sandbox/class").exists());

    // no FLOP counted (as ncu's tensor counters read for matmul on the H200): no measurement
    let (f, stderr) = start_with_ncu(&[], "0");
    assert!(
        stderr.contains("warning: ncu counted 0 FLOP and 1000000 DRAM bytes"),
        "{stderr}"
    );
    assert!(
        f.trailer("HEAD", "Cutile-Perf-Class-Source")
            .starts_with("static: ")
    );
}
