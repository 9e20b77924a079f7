//! What the user controls never reaches a commit message as trailers: paths that `repair`'s take-back
//! lists, harness settings the environment gives `start`. A foreign commit and its take-back are one
//! cancelled pair for `verify`.

use crate::support::{Fixture, KERNEL, both, text};

/// The first line of each of `verify`'s findings (empty when the record holds).
fn findings(f: &Fixture) -> Vec<String> {
    let out = f.run(&["verify"]);
    text(&out.stdout)
        .lines()
        .filter(|l| !l.contains("with an evidence note") && !l.starts_with("the session perf file"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_path_that_spells_a_trailer_block_is_taken_back_as_a_path() {
    let f = Fixture::new();
    f.start();
    let forged = "a/b/c/d\n\nCutile-Perf-Iteration: 1\nCutile-Perf-Latency-Ms: 0.001\nCutile-Perf-Status: keep";
    std::fs::create_dir_all(f.path(forged).parent().unwrap()).unwrap();
    std::fs::write(f.path(forged), "x\n").unwrap();
    f.git(&["add", "-A"]);
    f.git(&["commit", "-q", "--no-verify", "-m", "past the hook"]);
    // a partial block in a foreign commit's message is no reason to fail every verb
    f.append(KERNEL, "# quietly\n");
    f.git(&[
        "commit",
        "-q",
        "--no-verify",
        "-am",
        "partial\n\nCutile-Perf-Iteration: 1\nCutile-Perf-Status: keep",
    ]);
    assert!(
        f.run(&["status"]).status.success(),
        "{}",
        both(&f.run(&["status"]))
    );
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["action"], "taken-back", "{repaired}");
    let message = f.git(&["log", "-1", "--format=%B"]);
    assert!(
        !message.lines().any(|l| l.starts_with("Cutile-Perf-")),
        "{message}"
    );
    assert_eq!(f.git(&["log", "-1", "--format=%(trailers)"]).trim(), "");
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["iterations"], 0, "{status}");
    // the foreign commits and the take-back cancel: nothing outside the allowed paths stays
    assert_eq!(findings(&f), Vec::<String>::new());
    assert!(f.ok(&["verify"]).contains("the record holds"));
}

#[test]
fn a_merge_taken_back_leaves_the_record_holding() {
    let f = Fixture::new();
    let main = f.branch();
    f.start();
    let session = f.branch();
    f.git(&["checkout", "-q", &main]);
    f.append("setup.py", "# on main\n");
    f.git(&["commit", "-q", "--no-verify", "-am", "main moves on"]);
    f.git(&["checkout", "-q", &session]);
    f.git(&["merge", "-q", "--no-verify", "--no-edit", &main]);
    let out = f.run(&["verify"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("repair"), "{}", both(&out));
    f.ok(&["repair"]);
    assert!(f.ok(&["verify"]).contains("the record holds"));
    // with nothing left to take back, a failing verify never sends the user to repair
    assert!(f.ok(&["repair"]).contains("nothing to repair"));
}

#[test]
fn harness_settings_with_spaces_round_trip() {
    let f = Fixture::new();
    let out = f
        .command(&["start", "vector_add"])
        .env("REP", "200 CUPTI=1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let harness = f.trailer("HEAD", "Cutile-Perf-Harness");
    assert_eq!(harness, r#"REP="200 CUPTI=1""#);
    let out = f
        .command(&["status"])
        .env("REP", "200 CUPTI=1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    // the setting that was not set is not read as set
    let out = f
        .command(&["step", "--opt", "none", "x"])
        .env("REP", "200 CUPTI=1")
        .env("CUPTI", "1")
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("CUPTI=1 here, unset at start"),
        "{}",
        both(&out)
    );
}

/// `repair` killed after undoing the foreign change in the work tree and before its commit: the next
/// `repair` finds the undo done and finishes with the commit, where it once refused its own undo as an
/// overlapping edit.
#[test]
fn a_take_back_cut_short_before_its_commit_is_finished_by_the_next_repair() {
    let f = Fixture::new();
    f.start();
    let recorded = f.head();
    f.set_latency(0.05, 0.5);
    f.git(&["commit", "-q", "--no-verify", "-am", "quietly"]);
    // what the killed repair had done: the undo, in the work tree only
    let undo = f.git(&["diff", "HEAD", &recorded]);
    crate::support::with_input(f.program("git", &f.root).args(["apply", "-"]), &undo);
    assert_eq!(f.git(&["diff", &recorded]), "");
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["action"], "taken-back", "{repaired}");
    assert_eq!(f.status(), "");
    assert!(f.ok(&["verify"]).contains("the record holds"));
    // and the overlapping-edit hint gives a recipe that works
    f.set_latency(0.04, 0.4);
    f.git(&["commit", "-q", "--no-verify", "-am", "again"]);
    f.set_latency(0.03, 0.3);
    let err = f.fails(&["repair"]);
    assert!(err.contains("git apply -3 edit.patch"), "{err}");
}

/// A hand-committed kernel change that repair takes back can be given back to the work tree by the one
/// command repair names, and stepped as one change of its own.
#[test]
fn repair_names_the_command_that_gives_a_taken_back_change_back() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.08, 0.8);
    f.git(&["commit", "-q", "--no-verify", "-am", "by hand"]);
    let changed = f.git(&["show", "HEAD", "--", KERNEL]);
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    let what = repaired["what"].as_str().unwrap();
    let command = what.split('`').nth(1).unwrap();
    assert!(
        command.starts_with("git diff ") && command.ends_with("^ | git apply"),
        "{what}"
    );
    assert!(
        f.git(&["diff", "HEAD", "--", KERNEL]).is_empty(),
        "taken back"
    );
    let out = f.run_in(&f.root, "sh", &["-c", command]);
    assert!(out.status.success(), "{}", both(&out));
    let given_back = f.git(&["diff", "HEAD", "--", KERNEL]);
    let added = |diff: &str| -> Vec<String> {
        diff.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(String::from)
            .collect()
    };
    assert_eq!(added(&given_back), added(&changed));
    let step = f.step_json(&["--opt", "G", "the change made by hand"]);
    assert_eq!(step["status"], "keep", "{step}");
}
