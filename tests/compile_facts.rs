//! `diagnose::facts::for_iteration`, what `step` calls once its verdict is known to keep the iteration's
//! compile facts in its evidence note, and `compare` reading them from there. Machines without a GPU have
//! no toolkit: `tests/data/toolkit/` stands in for the Tile IR assembler and cuobjdump, and the fixture's
//! `cuda.tile` stand-in writes the dumps. The in-process test sets this process's PATH, holding it
//! ([`ProcessEnvironment`]) so that no other test sees it.

use crate::support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use git_cutile_perf::features::diagnose::case::Place;
use git_cutile_perf::features::diagnose::facts::{Already, for_iteration};
use git_cutile_perf::features::diagnose::profile::Profiled;
use git_cutile_perf::features::diagnose::{Profile, diagnose};
use git_cutile_perf::record::evidence::Evidence;
use git_cutile_perf::record::history::{self, Configs};
use git_cutile_perf::rules::compile::CompileFacts;
use git_cutile_perf::system::git::Repo;
use git_cutile_perf::system::gpu::{Gpu, GpuState};
use git_cutile_perf::system::runner::Local;
use support::*;

/// What nvidia-smi says of the H200 the tests pretend to have.
const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";

/// PATH with `first` (if any) in front, less every directory that holds a real GPU tool.
fn set_path(path: &ProcessEnvironment, first: Option<&PathBuf>) {
    let real = |d: &PathBuf| ["tileiras", "cuobjdump"].iter().any(|t| d.join(t).exists());
    let mut dirs: Vec<PathBuf> = first.into_iter().cloned().collect();
    dirs.extend(std::env::split_paths(&*SEARCH_PATH).filter(|d| !real(d)));
    path.set_path(dirs);
}

#[test]
fn an_iterations_compile_facts_go_into_its_evidence_and_compare_reads_them() {
    let fixture = Fixture::new();
    fixture.start();
    fixture.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    fixture.set_latency(0.05, 0.5);
    assert_eq!(fixture.step_json(&["bigger tiles"])["status"], "keep");
    let repo = Repo::discover(&fixture.root).unwrap();
    let history = history::read(&repo, Configs::CurrentBaseline)
        .unwrap()
        .unwrap();
    let (baseline, kept) = (
        history.iterations[0].0.clone(),
        history.iterations[1].0.clone(),
    );
    // as step calls it: the current baseline's configs name the case, on the GPU the step checked
    let h200 = GpuState {
        gpu: Gpu::parse(H200).unwrap(),
        processes: Vec::new(),
    };
    let progress = Captured::default().progress();
    let for_step = |code: &str, diagnosed: Option<&Profiled>, deadline: Instant| {
        let configs = &history.current_baseline().configs;
        let place = Place {
            runner: &Local,
            gpu: Some(&h200),
            progress: &progress,
        };
        for_iteration(
            &repo,
            place,
            &history.session,
            configs,
            code,
            Already {
                diagnosed,
                ..Already::default()
            },
            deadline,
        )
    };
    let later = Instant::now() + Duration::from_secs(300);

    let path = ProcessEnvironment::hold();
    set_path(&path, None);
    let configs = &history.current_baseline().configs;
    assert_eq!(
        for_iteration(
            &repo,
            Place {
                runner: &Local,
                gpu: None,
                progress: &progress,
            },
            &history.session,
            configs,
            &kept,
            Already::default(),
            later
        ),
        None,
        "no GPU (the CPU fixture): no compile facts"
    );
    let ir_only = for_step(&kept, None, later).unwrap();
    assert_eq!(ir_only.tile_ir.len(), 1);
    assert!(
        ir_only.resources.is_empty() && ir_only.sass.is_empty(),
        "without the toolkit, the Tile IR counts only: {ir_only:?}"
    );

    let toolkit = fixture.root.parent().unwrap().join("toolkit");
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/toolkit"),
        &toolkit,
    );
    set_path(&path, Some(&toolkit));
    let soon = Instant::now() + Duration::from_secs(10);
    assert_eq!(for_step(&kept, None, soon), None, "too little budget left");

    // the kept iteration, from the work tree: two view loads for TILE_SIZE 256
    let facts = for_step(&kept, None, later).unwrap();
    let ops = &facts.tile_ir[&signature(256)];
    assert_eq!((ops.view_loads, ops.view_stores), (2, 1));
    assert_eq!(facts.resources.len(), 1);
    assert_eq!(facts.resources[0].function, signature(256));
    assert_eq!(
        (facts.resources[0].registers, facts.resources[0].local_bytes),
        (40, 8)
    );
    assert_eq!(facts.sass.len(), 1);
    let sass = &facts.sass[0];
    assert_eq!(
        (
            sass.instructions,
            sass.tma_loads,
            sass.global_loads,
            sass.local
        ),
        (6, 1, 1, 1)
    );
    let calls = std::fs::read_to_string(toolkit.join("calls")).unwrap();
    assert!(calls.contains("--gpu-name sm_90 -O3 "), "{calls}");
    assert!(calls.contains("--dump-resource-usage "), "{calls}");
    assert!(
        fixture.status().is_empty(),
        "the work tree is left as it was"
    );

    // the baseline's code, from a temporary worktree that is gone afterwards
    let before = for_step(&baseline, None, later).unwrap();
    assert_eq!(before.tile_ir[&signature(128)].view_loads, 1);
    // the kept baseline worker's worktree aside
    let worktrees = fixture.git(&["worktree", "list"]);
    let temporary = worktrees
        .lines()
        .filter(|l| !l.contains("/cutile-perf/workers/"));
    assert_eq!(temporary.count(), 1, "{worktrees}");

    // a diagnosis that ran in the step already has them: nothing runs again
    let calls_before = std::fs::read_to_string(toolkit.join("calls")).unwrap();
    let diagnosed = Profiled {
        config: "large".into(),
        node_id: "n".into(),
        launches: 3,
        diagnosis: diagnose(&Profile::default()),
        compile: Some(CompileFacts::default()),
    };
    assert_eq!(
        for_step(&kept, Some(&diagnosed), later),
        Some(CompileFacts::default())
    );
    assert_eq!(
        std::fs::read_to_string(toolkit.join("calls")).unwrap(),
        calls_before
    );

    // kept in the evidence notes, as step keeps them; verify still accepts the record
    for (commit, facts) in [(&baseline, before), (&kept, facts)] {
        let evidence = Evidence::of(&repo, commit).unwrap().unwrap();
        evidence
            .with_compile(Some(facts.clone()))
            .attach(&repo, commit)
            .unwrap();
        let read = Evidence::of(&repo, commit).unwrap().unwrap();
        assert_eq!(read.compile, Some(facts));
    }
    fixture.ok(&["verify"]);
    let compare: serde_json::Value =
        serde_json::from_str(&fixture.ok(&["compare", "0", "1", "--json"])).unwrap();
    assert_eq!(compare["a"]["compile_facts"], "evidence", "{compare}");
    assert_eq!(compare["a"]["diagnosed"], false);
    assert_eq!(
        compare["compile"],
        serde_json::json!([{"name": "view loads", "a": 1.0, "b": 2.0, "unit": ""}])
    );
    let text = fixture.ok(&["compare", "0", "1"]);
    assert!(text.contains("compile:\n  view loads 1 -> 2\n"), "{text}");
    assert!(text.contains("compile facts from evidence"), "{text}");
}

/// `step` with the stand-in toolkit on PATH keeps the compile facts in the iteration's evidence note,
/// for a kept iteration (from the work tree) and a reverted one (from its attempt's commit).
#[test]
fn a_steps_evidence_carries_its_compile_facts() {
    let mut fixture = Fixture::new();
    fixture.fake_gpu(Some(H200));
    let toolkit = fixture.root.parent().unwrap().join("toolkit");
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/toolkit"),
        &toolkit,
    );
    // the tool's sealed environment, the stand-in toolkit first on its PATH; `gathered`: the facts come
    // from the dumps the workers' runs wrote, no run of their own
    let with_toolkit_gathering = |args: &[&str], gathered: bool| -> serde_json::Value {
        let mut command = fixture.command(args);
        let sealed = command
            .get_envs()
            .find_map(|(key, value)| (key == "PATH").then_some(value).flatten())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = command
            .env("PATH", format!("{}:{sealed}", toolkit.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", both(&out));
        let stderr = text(&out.stderr);
        let said = "from the dumps of the runs that measured it";
        assert_eq!(stderr.contains(said), gathered, "{}", both(&out));
        assert!(!stderr.contains("compile facts from "), "{}", both(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let with_toolkit = |args: &[&str]| with_toolkit_gathering(args, true);
    let step = |description: &str| with_toolkit(&["step", "--opt", "none", "--json", description]);
    let repo = Repo::discover(&fixture.root).unwrap();
    let compile = |rev: &str| {
        let commit = fixture.git(&["rev-parse", rev]);
        Evidence::of(&repo, commit.trim()).unwrap().unwrap().compile
    };
    // the baseline's, from its own benchmark runs' dumps
    with_toolkit(&["start", "vector_add", "--json"]);
    let baseline = compile("HEAD").expect("the baseline's compile facts");
    assert_eq!(baseline.tile_ir[&signature(128)].view_loads, 1);
    fixture.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    fixture.set_latency(0.05, 0.5);
    assert_eq!(step("bigger tiles")["status"], "keep");
    let kept = compile("HEAD").expect("the kept iteration's compile facts");
    assert_eq!(kept.tile_ir[&signature(256)].view_loads, 2);
    assert_eq!(kept.resources[0].registers, 40);

    fixture.edit_kernel("TILE_SIZE = 256", "TILE_SIZE = 512");
    fixture.set_latency(0.05, 0.9);
    assert_eq!(step("even bigger tiles")["status"], "revert");
    let reverted = compile("HEAD").expect("the reverted iteration's compile facts");
    assert_eq!(reverted.tile_ir[&signature(512)].view_loads, 4);
    // the dumps of the baseline's code alone are left: the next step compares with them
    let dumps: Vec<String> = std::fs::read_dir(fixture.root.join("sandbox/dumps"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dumps, [fixture.git(&["rev-parse", "HEAD^{tree}"]).trim()]);
    fixture.ok(&["verify"]);
    let text = fixture.ok(&["compare", "1", "2"]);
    assert!(text.contains("compile:\n  view loads 2 -> 4\n"), "{text}");

    // a comment only compiles and launches what the baseline does: its facts are the baseline's, from
    // its note, and no tool runs for them
    let calls = || std::fs::read_to_string(toolkit.join("calls")).unwrap_or_default();
    let calls_before = calls();
    fixture.edit_kernel("TILE_SIZE = 256", "TILE_SIZE = 256  # the same tiles");
    let same = with_toolkit_gathering(&["step", "--opt", "none", "--json", "a comment"], false);
    assert!(
        same["reason"].as_str().unwrap().starts_with("no change"),
        "{same}"
    );
    assert_eq!(compile("HEAD"), Some(kept));
    assert_eq!(calls(), calls_before);
    fixture.ok(&["verify"]);
}

/// The perf cases' compiled kernel at `tile_size`, as the fixture's stand-in names it.
fn signature(tile_size: u32) -> String {
    format!("vector_add_kernel_Kt1_A1f64_1l0_A1f64_1l0_A1f64_1l0_I{tile_size}")
}
