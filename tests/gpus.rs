//! `step --gpus`: a (baseline, candidate) pair per GPU, the configs split among them, each config on the
//! same GPU in every round; the evidence names the GPU of each run, and `verify` recomputes the verdict
//! from the runs of every GPU. The GPUs are stand-ins: the fixture's `nvidia-smi` lists several, and each
//! timed case notes the `CUDA_VISIBLE_DEVICES` it saw.

use std::collections::BTreeMap;

use crate::support;

use support::{Fixture, both, text};

const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";
const A10: &str = "NVIDIA A10, 8.6, 580.159.04, 1695, 1695, 0, 23028, 35";

/// A session started on a machine whose `nvidia-smi` lists `gpus` (their `gpu::QUERY` lines).
fn started_on(gpus: &[&str]) -> Fixture {
    let mut f = Fixture::new();
    f.fake_gpu(Some(&gpus.join("\n")));
    f.start();
    f
}

/// A step (with `args`) whose candidate is more than 10x faster, so that it is measured in two sets of
/// rounds; its report, and the GPU each timed case saw.
fn step(f: &Fixture, args: &[&str]) -> (serde_json::Value, Vec<String>) {
    let (report, cases) = timed_step(f, args, &[]);
    (report, cases.into_iter().map(|(gpu, _)| gpu).collect())
}

/// As [`step`], with `env` set for the tests; each timed case's GPU and the time it ended.
fn timed_step(
    f: &Fixture,
    args: &[&str],
    env: &[(&str, &str)],
) -> (serde_json::Value, Vec<(String, f64)>) {
    f.set_latency(0.005, 0.05);
    let cases = f.root.join("../cases.txt");
    let _ = std::fs::remove_file(&cases);
    let mut command =
        f.command(&[&["step", "--opt", "none", "--json", "tile size 256"], args].concat());
    command.env("CUTILE_PERF_FIXTURE_CASES", &cases);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let seen = std::fs::read_to_string(&cases).unwrap_or_default();
    let cases = seen
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields[2].to_string(), fields[3].parse().unwrap())
        })
        .collect();
    (serde_json::from_slice(&out.stdout).unwrap(), cases)
}

/// Each benchmark run of the rounds at HEAD's evidence: its name, its GPU, and its cases.
fn round_runs(f: &Fixture) -> Vec<(String, Option<String>, Vec<String>)> {
    let repo = git_cutile_perf::system::git::Repo::discover(&f.root).unwrap();
    let evidence = git_cutile_perf::record::evidence::Evidence::of(&repo, &f.head())
        .unwrap()
        .unwrap();
    evidence
        .runs
        .iter()
        .filter(|run| run.name.contains("round-"))
        .map(|run| {
            let cases = run.cases().unwrap().into_iter().map(|case| case.id);
            (run.name.clone(), run.cuda_device.clone(), cases.collect())
        })
        .collect()
}

#[test]
fn two_gpus_split_the_configs_each_always_on_its_own_gpu_and_verify_recomputes_it() {
    let f = started_on(&[H200, H200]);
    let (report, seen) = step(&f, &[]);
    assert_eq!(report["gpus"], serde_json::json!(["0", "1"]), "{report}");
    assert_eq!(report["status"], "keep", "{report}");
    // the workers of each GPU saw only theirs, and both GPUs measured
    assert!(seen.iter().all(|gpu| gpu == "0" || gpu == "1"), "{seen:?}");
    assert!(seen.contains(&"0".to_string()) && seen.contains(&"1".to_string()));

    let runs = round_runs(&f);
    let mut gpu_of: BTreeMap<String, String> = BTreeMap::new();
    for (name, gpu, cases) in &runs {
        let gpu = gpu.clone().unwrap_or_else(|| panic!("{name} names no GPU"));
        // the first GPU's runs keep their names; the other's say which GPU
        assert_eq!(name.contains("-gpu1-"), gpu == "1", "{name} on GPU {gpu}");
        for case in cases {
            let first = gpu_of.entry(case.clone()).or_insert_with(|| gpu.clone());
            assert_eq!(*first, gpu, "{case} measured on two GPUs: {runs:#?}");
        }
    }
    // the fixture's two perf configs: one per GPU, in both sets of rounds
    assert_eq!(
        gpu_of.values().cloned().collect::<Vec<_>>(),
        ["0", "1"],
        "{gpu_of:?}"
    );
    assert!(
        runs.iter()
            .any(|(name, ..)| name == "confirm-round-1-gpu1-candidate")
    );
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));

    // a note whose candidate ran a config on the other GPU than its baseline does not verify
    let repo = git_cutile_perf::system::git::Repo::discover(&f.root).unwrap();
    let mut evidence = git_cutile_perf::record::evidence::Evidence::of(&repo, &f.head())
        .unwrap()
        .unwrap();
    for run in &mut evidence.runs {
        if run.name == "round-1-gpu1-candidate" {
            run.cuda_device = Some("0".into());
        }
    }
    evidence.attach(&repo, &f.head()).unwrap();
    let verify = f.run(&["verify"]);
    assert!(!verify.status.success(), "{}", both(&verify));
    assert!(
        both(&verify).contains(
            "the run round-1-gpu1-candidate measured a case on GPU 0 that other runs measured on GPU 1"
        ),
        "{}",
        both(&verify)
    );
}

#[test]
fn the_gpus_measure_at_the_same_time() {
    let f = started_on(&[H200, H200]);
    // each timed case takes a second at least: one after the other, no two would end within less than
    // one apart, however slow the machine; at the same time, two overlap
    let (report, cases) = timed_step(&f, &[], &[("CUTILE_PERF_FIXTURE_CASE_S", "1")]);
    assert_eq!(report["gpus"], serde_json::json!(["0", "1"]), "{report}");
    let ends = |gpu: &str| -> Vec<f64> {
        cases
            .iter()
            .filter(|(on, _)| on == gpu)
            .map(|(_, end)| *end)
            .collect()
    };
    let together = ends("0")
        .iter()
        .any(|a| ends("1").iter().any(|b| (a - b).abs() < 1.0));
    assert!(together, "{cases:?}");
}

#[test]
fn one_gpu_named_measures_every_config_there_under_the_usual_names() {
    let f = started_on(&[H200, H200]);
    let workers = |f: &Fixture| -> Vec<(i64, serde_json::Value)> {
        let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
        let workers = status["workers"].as_array().unwrap().iter();
        workers
            .map(|w| (w["pid"].as_i64().unwrap(), w["gpu"].clone()))
            .collect()
    };
    // start kept its worker on the environment's GPUs
    let [(started, serde_json::Value::Null)] = workers(&f)[..] else {
        panic!("{:?}", workers(&f));
    };
    let (report, seen) = step(&f, &["--gpus", "1"]);
    assert_eq!(report["gpus"], serde_json::json!(["1"]), "{report}");
    // the step's baseline worker lives on for GPU 1; start's, which would idle on a GPU, is gone
    let after = workers(&f);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].1, "1", "{after:?}");
    let gone = !std::path::Path::new(&format!("/proc/{started}")).exists()
        || std::fs::read_to_string(format!("/proc/{started}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        });
    assert!(gone, "start's worker {started} still runs");
    assert_eq!(report["status"], "keep", "{report}");
    assert!(
        !seen.is_empty() && seen.iter().all(|gpu| gpu == "1"),
        "{seen:?}"
    );
    let runs = round_runs(&f);
    assert!(
        runs.iter().all(|(name, gpu, cases)| !name.contains("-gpu")
            && gpu.as_deref() == Some("1")
            && cases.len() == 2),
        "{runs:#?}"
    );
    assert!(runs.iter().any(|(name, ..)| name == "round-1-baseline"));
    let verify = f.run(&["verify"]);
    assert!(verify.status.success(), "{}", both(&verify));
}

#[test]
fn a_gpu_of_another_model_is_refused_and_left_out_by_default() {
    let f = started_on(&[H200, A10]);
    f.append(support::KERNEL, "# tried something\n");
    let before = f.head();
    let err = f.fails(&["step", "--opt", "none", "an edit", "--gpus", "0,1"]);
    assert!(
        err.contains("GPU 1 is a NVIDIA A10, 8.6, but the session measures on a NVIDIA H200, 9.0"),
        "{err}"
    );
    assert!(
        err.contains("hint: every GPU of a step must be the session's model"),
        "{err}"
    );
    let err = f.fails(&["step", "--opt", "none", "an edit", "--gpus", "2"]);
    assert!(
        err.contains("GPU \"2\" is not one nvidia-smi lists here"),
        "{err}"
    );
    assert_eq!(f.head(), before, "nothing recorded");
    // without --gpus, the H200 alone
    let out = f
        .command(&["step", "--opt", "none", "--json", "an edit"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["gpus"],
        serde_json::json!(["0"]),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn start_measures_the_baseline_on_the_first_gpu_named_whose_model_is_the_sessions() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(&[H200, A10, A10].join("\n")));
    let err = f.fails(&["start", "vector_add", "--gpus", "1,0"]);
    assert!(
        err.contains("GPU 0 is a NVIDIA H200, 9.0, but the session measures on a NVIDIA A10, 8.6"),
        "{err}"
    );
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");

    let cases = f.root.join("../start-cases.txt");
    let out = f
        .command(&["start", "vector_add", "--gpus", "2,1"])
        .env("CUTILE_PERF_FIXTURE_CASES", &cases)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-GPU"),
        "NVIDIA A10, 8.6, 580.159.04"
    );
    let seen = std::fs::read_to_string(&cases).unwrap();
    assert!(
        !seen.is_empty()
            && seen
                .lines()
                .all(|line| line.split_whitespace().nth(2) == Some("2")),
        "{seen}"
    );
}
