//! `campaign`: a session per kernel of the fixture, each in a worktree of its own, on stand-in GPUs;
//! a kernel without a test fails with its reason and the others go on; a hung baseline fails at its
//! budget and `resume` finishes it; Ctrl-C leaves no process and no half session; agents claiming at
//! once never get the same kernel.

use crate::support;

use support::hang::Hang;
use support::{Fixture, both, text};

const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41";

/// The campaign's JSON report after `args`, which must succeed.
fn campaign(f: &Fixture, args: &[&str]) -> serde_json::Value {
    let out = f.run(&[&["campaign"], args, &["--json"]].concat());
    assert!(out.status.success(), "{args:?}: {}", both(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The report's row of `suite/kernel`.
fn row<'a>(report: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    let (suite, kernel) = label.split_once('/').unwrap();
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["suite"] == suite && r["kernel"] == kernel)
        .unwrap_or_else(|| panic!("no {label} in {report}"))
}

/// The session branches of the fixture.
fn session_branches(f: &Fixture) -> String {
    f.git(&["branch", "--list", "cutile-perf-*"])
}

/// The fixture with vector_add's benchmark hanging (`CRASH = "hang"`), committed on main.
fn hanging() -> Fixture {
    let f = Fixture::new();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    f.git(&["commit", "-qam", "hang"]);
    f
}

#[test]
fn a_campaign_on_two_gpus_starts_every_kernel_with_a_test_and_fails_the_others_with_their_reason() {
    let mut f = Fixture::new();
    f.fake_gpu(Some(&[H200, H200].join("\n")));
    let report = campaign(&f, &["start", "--all", "--gpus", "0,1", "--name", "all"]);
    // a test_perf, a standalone benchmark, and two kernels whose tests check correctness only
    for label in [
        "ops/vector_add",
        "ops/swish",
        "liger/scale",
        "liger/layer_norm",
    ] {
        let started = row(&report, label);
        assert_eq!(started["state"], "started", "{started}");
        assert!(started["baseline_ms"].as_f64().unwrap() > 0.0, "{started}");
        let gpu = started["gpu"].as_str().unwrap();
        assert!(gpu == "0" || gpu == "1", "{started}");
        // the session is whole in its own worktree, on its usual branch
        let worktree = std::path::Path::new(started["worktree"].as_str().unwrap());
        let branch = f.run_in(worktree, "git", &["branch", "--show-current"]);
        assert!(
            text(&branch.stdout).starts_with("cutile-perf-"),
            "{started}"
        );
        // its warm worker does not wait, idle on the GPU, for an agent to step the session
        let status = f
            .command(&["status", "--json"])
            .current_dir(worktree)
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(status["workers"], serde_json::json!([]), "{status}");
    }
    // a correctness-only kernel's session runs on the perf file `start --scaffold` wrote, unedited
    let scaffolded = row(&report, "liger/layer_norm");
    let worktree = std::path::Path::new(scaffolded["worktree"].as_str().unwrap());
    assert!(
        worktree.join("sandbox/perf_layer_norm.py").is_file(),
        "{scaffolded}"
    );
    // one whose scaffold is refused fails with the scaffold's reason
    let unscaffolded = row(&report, "liger/rms_norm");
    assert_eq!(unscaffolded["state"], "failed", "{unscaffolded}");
    assert!(
        unscaffolded["reason"]
            .as_str()
            .unwrap()
            .starts_with("start --scaffold: "),
        "{unscaffolded}"
    );
    let no_test = row(&report, "ops/rms_norm");
    assert_eq!(no_test["state"], "failed", "{no_test}");
    assert!(
        no_test["reason"].as_str().unwrap().contains("no test"),
        "{no_test}"
    );
    assert_eq!(no_test["worktree"], serde_json::Value::Null, "{no_test}");
    assert_eq!(report["speedup"]["factor"], 1.0, "{report}");
    // the record is a ref of its own, and every session of it verifies
    f.git(&["rev-parse", "--verify", "refs/cutile-perf/campaigns/all"]);
    let verified = f.ok(&["campaign", "verify"]);
    assert!(verified.contains("4 sessions verified"), "{verified}");
    let page = f.ok(&["campaign", "report"]);
    let html = std::fs::read_to_string(page.trim()).unwrap();
    assert!(html.contains("perf_results.html"), "{html}");
}

#[test]
fn a_baseline_killed_at_its_budget_fails_leaves_nothing_and_resume_finishes_it() {
    let f = hanging();
    // the budget ends the baseline in its correctness run or in the hanging benchmark, as the machine's
    // speed has it: either way the kernel fails at its budget
    let out = f
        .command(&[
            "campaign",
            "start",
            "vector_add",
            "--no-gpu",
            "--budget",
            "2s",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = row(&report, "ops/vector_add");
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["reason"].as_str().unwrap().contains("budget"),
        "{failed}"
    );
    assert_eq!(session_branches(&f), "");
    f.edit_kernel("CRASH = \"hang\"", "CRASH = \"\"");
    f.git(&["commit", "-qam", "no hang"]);
    let resumed = campaign(&f, &["resume", "--budget", "10m"]);
    let started = row(&resumed, "ops/vector_add");
    assert_eq!(started["state"], "started", "{started}");
    assert_eq!(started["attempts"], 2, "{started}");
}

#[test]
fn ctrl_c_ends_every_baseline_and_leaves_each_kernel_queued_without_a_half_session() {
    let f = hanging();
    let hang = Hang::new();
    let out = hang.interrupt(
        &f,
        &["campaign", "start", "vector_add", "--no-gpu", "--name", "i"],
    );
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    assert!(both(&out).contains("campaign resume"), "{}", both(&out));
    hang.assert_child_gone();
    assert_eq!(session_branches(&f), "");
    let report = campaign(&f, &["status"]);
    let queued = row(&report, "ops/vector_add");
    assert_eq!(queued["state"], "queued", "{queued}");
    assert_eq!(queued["worktree"], serde_json::Value::Null, "{queued}");
    let trees = f.git(&["worktree", "list"]);
    assert!(!trees.contains("campaigns"), "{trees}");
}

#[test]
fn agents_claiming_at_once_never_get_the_same_kernel_and_a_stopped_holder_frees_its_claim() {
    let f = Fixture::new();
    let started = campaign(
        &f,
        &["start", "vector_add", "swish", "--no-gpu", "--jobs", "2"],
    );
    for label in ["ops/vector_add", "ops/swish"] {
        assert_eq!(row(&started, label)["state"], "started", "{started}");
    }
    // a look without a claim says so, and how to hold the session
    let look = f.ok(&["campaign", "next"]);
    assert!(
        look.contains("not claimed") && look.contains("next --claim"),
        "{look}"
    );
    let mut holders: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("600")
                .spawn()
                .unwrap()
        })
        .collect();
    let claim = |holder: &std::process::Child| {
        f.command(&[
            "campaign",
            "next",
            "--claim",
            "--json",
            "--holder",
            &holder.id().to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let claims: Vec<_> = holders[..2].iter().map(claim).collect();
    let answers: Vec<serde_json::Value> = claims
        .into_iter()
        .map(|child| serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    let kernels: Vec<&serde_json::Value> = answers.iter().map(|a| &a["kernel"]).collect();
    assert_ne!(*kernels[0], serde_json::Value::Null, "{answers:?}");
    assert_ne!(*kernels[1], serde_json::Value::Null, "{answers:?}");
    assert_ne!(kernels[0], kernels[1]);
    let sentence = answers[0]["sentence"].as_str().unwrap();
    assert!(!sentence.contains("not claimed"), "{sentence}");
    // none is left for a third agent, until the first holder stops
    let third = claim(&holders[2]).wait_with_output().unwrap();
    let third: serde_json::Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(third["kernel"], serde_json::Value::Null, "{third}");
    holders[0].kill().unwrap();
    holders[0].wait().unwrap();
    let freed = f.ok(&[
        "campaign",
        "next",
        "--claim",
        "--json",
        "--holder",
        &std::process::id().to_string(),
    ]);
    let freed: serde_json::Value = serde_json::from_str(&freed).unwrap();
    assert_eq!(freed["kernel"], *kernels[0], "{freed}");
    for mut holder in holders {
        let _ = holder.kill();
        let _ = holder.wait();
    }
}

#[test]
fn the_campaign_s_record_travels_with_push_and_fetch() {
    let remotes = tempfile::tempdir().unwrap();
    let remote = remotes.path().join("remote.git");
    let f = Fixture::new();
    f.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    f.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    let report = campaign(&f, &["start", "vector_add", "--no-gpu", "--name", "trip"]);
    let worktree = row(&report, "ops/vector_add")["worktree"]
        .as_str()
        .unwrap()
        .to_string();
    // `push` in a session's worktree carries the session and every record ref, the campaign's too
    let pushed = f
        .program(&*support::BIN, std::path::Path::new(&worktree))
        .arg("push")
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", both(&pushed));
    let reviewer = Fixture::empty();
    reviewer.git(&["clone", "-q", remote.to_str().unwrap(), "."]);
    reviewer.ok(&["fetch"]);
    let seen = reviewer.ok(&["campaign", "status", "--name", "trip", "--json"]);
    let seen: serde_json::Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(row(&seen, "ops/vector_add")["state"], "started", "{seen}");
}

/// A Python without pytest would fail every kernel alike, one after another (and make a scaffold's tests
/// seem to call no op): the campaign is refused before anything is recorded.
#[test]
fn a_campaign_whose_python_has_no_pytest_is_refused_before_anything_is_recorded() {
    let f = Fixture::new();
    // -S hides site-packages, where pytest lives
    let err = f.fails(&[
        "campaign",
        "start",
        "--all",
        "--no-gpu",
        "--python",
        "python3 -S",
    ]);
    assert!(
        err.contains("pytest is not available to python3 -S"),
        "{err}"
    );
    assert_eq!(f.git(&["for-each-ref", "refs/cutile-perf/campaigns"]), "");
    assert_eq!(session_branches(&f), "");
}
