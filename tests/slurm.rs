//! The fixture session through a real Slurm (`tools/slurm-up.sh` starts a single-node one): every
//! iteration gets its own job, the job is gone afterwards, and the record says where it ran.
//! They need a Slurm, which `.ci/run` starts: ignored by a plain `cargo test` (which lists them so, with
//! the reason), run by `cargo test --test tests -- --ignored slurm::` after `tools/slurm-up.sh`, where a
//! Slurm that does not answer fails them.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use git_cutile_perf::record::evidence::Evidence;
use git_cutile_perf::system::git::Repo;
use support::hang::Hang;
use support::{Fixture, alive, both, text};

/// Where tools/slurm-up.sh has Slurm write final job states (no slurmdbd, so no sacct).
const JOBCOMP_LOG: &str = "/var/log/slurm/jobcomp.log";
/// A directory this machine sees but tools/slurm-up.sh's node does not (an empty tmpfs there).
const LOGIN_ONLY: &str = "/srv/cutile-perf-login-only";

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| text(&out.stdout))
}

/// Fails the test unless a Slurm answers here.
#[track_caller]
fn assert_slurm_answers() {
    assert!(
        output("timeout", &["20", "srun", "-N1", "--quiet", "true"]).is_some(),
        "no Slurm answers `srun -N1 true` here: run tools/slurm-up.sh (as root on Debian) first"
    );
}

/// The job's state as squeue shows it (`None` once purged).
fn job_state(job: &str) -> Option<String> {
    output("squeue", &["-h", "--states=all", "-j", job, "-o", "%T"])
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[track_caller]
fn assert_job_ended_cancelled(job: &str) {
    assert!(
        job.chars().all(|c| c.is_ascii_digit()) && !job.is_empty(),
        "bad job id {job:?}"
    );
    let state = job_state(job);
    assert!(
        matches!(state.as_deref(), None | Some("CANCELLED")),
        "job {job} is {state:?}"
    );
    assert!(
        Path::new(JOBCOMP_LOG).exists(),
        "no {JOBCOMP_LOG}: tools/slurm-up.sh has Slurm write final job states there"
    );
    let wanted = format!("JobId={job} ");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(JOBCOMP_LOG).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.starts_with(&wanted)) {
            assert!(line.contains("JobState=CANCELLED"), "{line}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} is not in {JOBCOMP_LOG}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A fixture for a test that needs Slurm; fails the test when none answers.
#[track_caller]
fn slurm_fixture() -> Fixture {
    assert_slurm_answers();
    Fixture::new()
}

/// `start vector_add` with the Slurm runner, these sbatch/srun options, then `more`.
fn slurm_start<'a>(slurm_args: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "start",
        "vector_add",
        "--runner",
        "slurm",
        "--slurm-args",
        slurm_args,
    ];
    args.extend(more);
    args
}

fn start_slurm(f: &Fixture, slurm_args: &str) -> String {
    f.ok_all(&slurm_start(slurm_args, &["--queue-timeout", "2m"]))
}

/// A job comment unique to this test run (tests run in parallel; each marks its own jobs).
fn unique_comment(test: &str) -> String {
    format!("cutile-perf-{test}-{}", std::process::id())
}

/// Options for a job marked by `comment` that stays pending: it is eligible only in an hour.
fn pending_job(comment: &str) -> String {
    format!("--begin=now+1hour --comment={comment}")
}

/// The reason a `step --json` report gives.
fn reason(report: &serde_json::Value) -> &str {
    report["reason"].as_str().unwrap()
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn a_session_runs_each_iteration_in_its_own_job_and_records_where() {
    let mut f = slurm_fixture();
    // a GPU on the node whose nvidia-smi lists the workers, as a real one lists their CUDA contexts
    f.fake_gpu(Some(
        "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
    ));
    f.gpu_processes("");
    f.gpu_lists_workers();
    let node = output("srun", &["-N1", "--quiet", "hostname", "-s"])
        .unwrap()
        .trim()
        .to_string();
    let shown = start_slurm(&f, "-t 5");
    assert!(
        shown.contains("after 0s in the queue") || shown.contains("in the queue"),
        "{shown}"
    );
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Runner"), "slurm");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Slurm-Args"), "-t 5");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Queue-Timeout"), "2m0s");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Node"), node);
    let baseline_job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    assert_job_ended_cancelled(&baseline_job);

    f.set_latency(0.09, 0.9);
    let starts = f.root.join("../starts.txt");
    let out = f
        .command(&["step", "--opt", "none", "--json", "tile size 256"])
        .env("CUTILE_PERF_FIXTURE_STARTS", &starts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "keep", "{r}");
    let keep_job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    assert_ne!(keep_job, baseline_job, "one allocation per iteration");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Node"), node);
    assert_job_ended_cancelled(&keep_job);
    // correctness, the round and the unseen inputs in one warm worker per side, each a step of the job
    let stderr = text(&out.stderr);
    let started: Vec<String> = std::fs::read_to_string(&starts)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // one worker a side measures; the pair started to stand by for a second round (each side's second
    // channel) is a step of the same job too
    let measuring = started
        .iter()
        .filter(|l| !l.contains("/channel.1 "))
        .count();
    assert_eq!(measuring, 2, "{started:#?}");
    for line in &started {
        assert!(line.contains("--cutile-perf-worker="), "{line}");
        assert!(line.ends_with(&format!(" slurm-job={keep_job}")), "{line}");
    }
    for said in [
        "correctness: in the warm candidate worker",
        "round 1 baseline: in the warm baseline worker",
        "unseen inputs: in the warm candidate worker",
    ] {
        assert!(stderr.contains(said), "{said:?} missing from:\n{stderr}");
    }
    // the node's nvidia-smi lists them by the pids they have there: ours, not other processes
    assert!(!stderr.contains("other processes"), "{stderr}");
    // none outlives its job
    assert!(!stderr.contains("lives on"), "{stderr}");
    // (a process the job's end killed may take a moment to be gone)
    let until = Instant::now() + Duration::from_secs(30);
    for line in &started {
        let pid: i32 = line.split_whitespace().next().unwrap().parse().unwrap();
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!alive(pid), "worker {pid} outlived its job");
    }

    f.set_latency(0.2, 0.9);
    let r = f.step_json(&["a slower idea"]);
    assert_eq!(r["status"], "revert", "{r}");
    let revert_job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    assert_job_ended_cancelled(&revert_job);
    assert_eq!(f.status(), "");

    let status = f.ok(&["status"]);
    assert!(
        status.contains(&format!("last run    node {node}, Slurm job {revert_job}")),
        "{status}"
    );
    assert!(
        status.contains("runner      slurm -t 5 (queue timeout 2m0s)"),
        "{status}"
    );
    let json: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(json["session"]["runner"]["kind"], "slurm");
    assert_eq!(json["last_placement"]["job"], revert_job.as_str());
    assert_eq!(json["workers"], serde_json::json!([]), "{json}");
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn the_budget_cancels_the_job_and_leaves_no_process() {
    let f = slurm_fixture();
    start_slurm(&f, "");
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let hang = Hang::new();
    let out = hang
        .command(
            &f,
            &[
                "step", "--opt", "none", "--json", "--budget", "10s", "deadlock",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", support::both(&out)));
    assert_eq!(r["status"], "crash");
    assert!(reason(&r).contains("ran past the iteration budget"), "{r}");
    assert_job_ended_cancelled(&f.trailer("HEAD", "Cutile-Perf-Slurm-Job"));
    hang.assert_child_gone();
}

/// The newest job carrying `comment` (tests run in parallel; each marks its own), once squeue shows it.
fn job_with_comment(comment: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = output("squeue", &["-h", "--states=all", "-o", "%i|%k"]).unwrap_or_default();
        if let Some(job) = listed
            .lines()
            .filter_map(|l| l.strip_suffix(&format!("|{comment}")))
            .filter_map(|job| job.parse::<u64>().ok())
            .max()
        {
            return job.to_string();
        }
        assert!(Instant::now() < deadline, "no job with comment {comment}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A session whose jobs carry a comment unique to this test, and a hanging benchmark to try.
fn hanging_session(f: &Fixture, test: &str) -> String {
    let comment = unique_comment(test);
    start_slurm(f, &format!("--comment={comment}"));
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    comment
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn sigterm_during_the_benchmark_cancels_the_job() {
    let f = slurm_fixture();
    let comment = hanging_session(&f, "sigterm");
    let before = f.head();
    let hang = Hang::new();
    let out = hang.when_hanging(&f, &["step", "--opt", "none", "deadlock"], |tool| unsafe {
        libc::kill(tool.id() as i32, libc::SIGTERM);
    });
    assert_eq!(out.status.code(), Some(130), "{}", support::both(&out));
    assert_eq!(f.head(), before, "nothing was recorded");
    assert_job_ended_cancelled(&job_with_comment(&comment));
    hang.assert_child_gone();
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn a_job_cancelled_from_outside_is_a_crash_that_says_so() {
    let f = slurm_fixture();
    let comment = hanging_session(&f, "outside");
    let hang = Hang::new();
    let out = hang.when_hanging(&f, &["step", "--opt", "none", "--json", "deadlock"], |_| {
        // an administrator (or the scheduler) takes the node away mid-benchmark
        output("scancel", &[&job_with_comment(&comment)]).unwrap();
    });
    assert!(out.status.success(), "{}", support::both(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "crash");
    let job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    assert!(
        reason(&r).contains(&format!("the Slurm job {job} on node")),
        "{r}"
    );
    assert!(
        reason(&r).contains("was cancelled from outside (CANCELLED)"),
        "{r}"
    );
    assert_job_ended_cancelled(&job);
    hang.assert_child_gone();
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn ctrl_c_while_queued_cancels_the_pending_job() {
    let f = slurm_fixture();
    let comment = unique_comment("ctrl-c");
    let slurm_args = pending_job(&comment);
    let child = f
        .command(&slurm_start(&slurm_args, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // queued: sbatch has submitted it, and runs to its end after Ctrl-C, so the interrupt is seen in the
    // wait for a node, whichever moment of it arrives from now on
    let job = job_with_comment(&comment);
    assert_eq!(job_state(&job).as_deref(), Some("PENDING"));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("the queued Slurm job was cancelled"), "{err}");
    assert!(err.contains("waited") && err.contains(&job), "{err}");
    assert_job_ended_cancelled(&job);
    assert_eq!(f.session_branch(), "", "nothing was created");
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn the_queue_timeout_cancels_the_pending_job() {
    let f = slurm_fixture();
    let comment = unique_comment("queue-timeout");
    let slurm_args = pending_job(&comment);
    let err = f.fails(&slurm_start(&slurm_args, &["--queue-timeout", "2s"]));
    let job = job_with_comment(&comment);
    // the reason is Slurm's: BeginTime here, but once another under the whole suite's load
    assert!(
        err.contains(&format!(
            "no node within the queue timeout of 2s (Slurm job {job} still PENDING: "
        )) && err.contains("); the job was cancelled"),
        "{err}"
    );
    assert!(err.contains("hint: raise --queue-timeout"), "{err}");
    assert_job_ended_cancelled(&job);
    assert_eq!(f.session_branch(), "");
}

#[test]
fn slurm_options_without_the_slurm_runner_are_refused() {
    let f = Fixture::new();
    let err = f.fails(&["start", "vector_add", "--slurm-args", "-p gpu"]);
    assert!(err.contains("apply to the Slurm runner only"), "{err}");
    assert!(err.contains("hint: add --runner slurm"), "{err}");
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn a_work_tree_the_node_cannot_see_is_a_clear_error() {
    assert_slurm_answers();
    let marker = format!("{LOGIN_ONLY}/.visible-on-login-node-only");
    let node_sees_it = output("srun", &["-N1", "--quiet", "test", "-e", &marker]).is_some();
    assert!(
        Path::new(&marker).exists() && !node_sees_it,
        "{LOGIN_ONLY} is not hidden from the node: tools/slurm-up.sh sets that up"
    );
    let f = Fixture::new_in(Path::new(LOGIN_ONLY));
    let err = f.fails(&["start", "vector_add", "--runner", "slurm"]);
    assert!(err.contains("cannot see the work tree"), "{err}");
    assert!(err.contains(&f.root.display().to_string()), "{err}");
    assert!(
        err.contains("hint: put the work tree on a filesystem the compute nodes mount"),
        "{err}"
    );
    assert_eq!(f.session_branch(), "");
    let job = err
        .split("Slurm job ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap();
    assert_job_ended_cancelled(job);
    assert_eq!(f.status(), "", "no token left in the work tree");
    assert!(
        !f.path("sandbox").exists(),
        "no sandbox/ left in the work tree"
    );
}

/// What nvidia-smi says of the H200 the test pretends the node has.
const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn the_profile_and_the_compile_facts_run_inside_the_iterations_job() {
    let mut f = slurm_fixture();
    // stand-in tools that log the Slurm job they ran in (the assembler and cuobjdump of the
    // compile-facts tests, and an ncu that then fails: the iteration goes on without a profile)
    let tools = f.root.parent().unwrap().join("toolkit");
    support::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/toolkit"),
        &tools,
    );
    support::write_script(
        &tools.join("ncu"),
        "#!/bin/sh\nprintf 'ncu in Slurm job %s\\n' \"${SLURM_JOB_ID:-none}\" >> \"$(dirname \"$0\")/jobs\"\nexit 1\n",
    );
    f.first_on_path(&tools);
    f.fake_gpu(Some(H200));
    let repo = Repo::discover(&f.root).unwrap();
    let ran_in = |job: &str| {
        let jobs = std::fs::read_to_string(tools.join("jobs")).unwrap_or_default();
        std::fs::remove_file(tools.join("jobs")).ok();
        for tool in ["ncu", "tileiras", "cuobjdump"] {
            assert!(jobs.contains(&format!("{tool} in ")), "{tool} ran: {jobs}");
        }
        let elsewhere: Vec<&str> = jobs
            .lines()
            .filter(|line| !line.ends_with(&format!(" in Slurm job {job}")))
            .collect();
        assert!(elsewhere.is_empty(), "outside job {job}: {elsewhere:?}");
    };
    let compile_facts = |commit: &str| Evidence::of(&repo, commit).unwrap().unwrap().compile;

    start_slurm(&f, "-t 5");
    let baseline_job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    ran_in(&baseline_job);
    assert!(compile_facts(&f.head()).is_some(), "the baseline's facts");
    assert_job_ended_cancelled(&baseline_job);

    f.set_latency(0.09, 0.9);
    let r = f.step_json(&["tile size 256"]);
    assert_ne!(r["status"], "crash", "{r}");
    let step_job = f.trailer("HEAD", "Cutile-Perf-Slurm-Job");
    assert_ne!(step_job, baseline_job);
    ran_in(&step_job);
    assert!(compile_facts(&f.head()).is_some(), "the step's facts: {r}");
    assert_job_ended_cancelled(&step_job);
}
