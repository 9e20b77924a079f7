//! A campaign through a real Slurm (`tools/slurm-up.sh` starts a single-node one): one array job, a task
//! per kernel, each task's kernel recorded with its job and task; Ctrl-C cancels the whole array and
//! leaves no half session. Ignored by a plain `cargo test`, as `slurm.rs` is; run by `cargo test --test
//! tests -- --ignored campaign_slurm::` after `tools/slurm-up.sh`.

use crate::support;

use std::process::Command;

use support::hang::Hang;
use support::{Fixture, both, text};

/// Fails the test unless a Slurm answers here; the fixture otherwise.
#[track_caller]
fn slurm_fixture() -> Fixture {
    let answers = Command::new("timeout")
        .args(["20", "srun", "-N1", "--quiet", "true"])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        answers,
        "no Slurm answers `srun -N1 true` here: run tools/slurm-up.sh first"
    );
    Fixture::new()
}

/// The ids of the jobs marked with `comment` still in the queue.
fn queued_with(comment: &str) -> String {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%i %k"])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .filter(|line| line.ends_with(comment))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn a_campaign_on_slurm_is_one_array_job_a_task_per_kernel() {
    let f = slurm_fixture();
    let comment = format!("cutile-perf-campaign-{}", std::process::id());
    let slurm_args = format!("-t 5 --comment={comment}");
    let out = f.run(&[
        "campaign",
        "start",
        "vector_add",
        "swish",
        "ops/rms_norm",
        "--no-gpu",
        "--runner",
        "slurm",
        "--slurm-args",
        &slurm_args,
        "--jobs",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", both(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    let jobs: Vec<&str> = rows.iter().map(|r| r["job"].as_str().unwrap()).collect();
    let array = jobs[0].split('_').next().unwrap();
    assert!(
        jobs.iter().all(|job| job.starts_with(&format!("{array}_"))),
        "{jobs:?}"
    );
    for row in rows {
        let want = if row["kernel"] == "rms_norm" {
            "failed"
        } else {
            "started"
        };
        assert_eq!(row["state"], want, "{row}");
    }
    assert_eq!(queued_with(&comment), "", "the array job is gone");
}

#[test]
#[ignore = "needs Slurm, which .ci/run starts (tools/slurm-up.sh)"]
fn ctrl_c_cancels_the_array_job_and_its_kernel_goes_back_to_the_queue() {
    let f = slurm_fixture();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    f.git(&["commit", "-qam", "hang"]);
    let comment = format!("cutile-perf-campaign-int-{}", std::process::id());
    let slurm_args = format!("-t 5 --comment={comment}");
    let hang = Hang::new();
    let out = hang.interrupt(
        &f,
        &[
            "campaign",
            "start",
            "vector_add",
            "--no-gpu",
            "--runner",
            "slurm",
            "--slurm-args",
            &slurm_args,
        ],
    );
    assert!(!out.status.success(), "{}", both(&out));
    hang.assert_child_gone();
    assert_eq!(queued_with(&comment), "", "the array job is cancelled");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
    let status: serde_json::Value =
        serde_json::from_str(&f.ok(&["campaign", "status", "--json"])).unwrap();
    assert_eq!(status["kernels"][0]["state"], "queued", "{status}");
}
