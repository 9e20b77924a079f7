//! A record nothing can bend: evidence notes, `verify`, forgeries through ordinary commits, and values
//! no GPU produces. The real binary, real git and real pytest on the fixture repository.

use crate::support;

use git_cutile_perf::record::history::{Configs, History};
use support::{Fixture, KERNEL, both, text, with_input};

const NOTES: &str = "--ref=cutile-perf";

fn verify_json(f: &Fixture) -> (bool, serde_json::Value) {
    let out = f.run(&["verify", "--json"]);
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", both(&out)));
    (out.status.success(), report)
}

/// The kinds of `verify`'s findings, in order.
fn finding_kinds(f: &Fixture) -> Vec<String> {
    let out = f.run(&["verify"]);
    let lines = text(&out.stdout);
    assert_eq!(
        out.status.success(),
        lines.contains("the record holds"),
        "{}",
        both(&out)
    );
    lines
        .lines()
        .filter(|l| !l.contains("with an evidence note"))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

/// A commit git makes with `message` and no hooks: what a determined forger does.
fn forge(f: &Fixture, message: &str) {
    f.git(&[
        "commit",
        "-q",
        "--no-verify",
        "--allow-empty",
        "--cleanup=verbatim",
        "-m",
        message,
    ]);
}

/// Rewrites HEAD with `message` (and what is staged) past the hooks, and copies its note over: a forger
/// who knows about notes.
fn amend_keeping_the_note(f: &Fixture, message: &str) {
    let original = f.head();
    f.git(&[
        "commit",
        "-q",
        "--amend",
        "--no-verify",
        "--cleanup=verbatim",
        "-m",
        message,
    ]);
    f.git(&["notes", NOTES, "copy", &original, "HEAD"]);
}

#[test]
fn each_iteration_carries_its_evidence_and_verify_holds() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    f.step_json(&["tile size 256"]);
    f.set_latency(0.08, 1.0);
    let r = f.step_json(&["one config slower"]);
    assert_eq!(r["status"], "revert");
    for (rev, benchmark) in [
        ("HEAD", "round-1-candidate"),
        ("HEAD", "round-1-baseline"),
        ("HEAD~2", "round-1-candidate"),
        ("HEAD~3", "benchmark-1"),
        ("HEAD~3", "benchmark-2"),
    ] {
        let note = f.git(&["notes", NOTES, "show", rev]);
        assert!(
            note.starts_with("cutile-perf evidence, schema 1\ntool: git-cutile-perf 0.1.0 ("),
            "{note}"
        );
        assert!(note.contains("\nrun correctness: 6 cases: 5 passed, 1 skipped, 0 failed; JUnit "));
        assert!(
            note.contains(&format!(
                "\nrun {benchmark}: 2 cases: 2 passed, 0 skipped, 0 failed; JUnit "
            )),
            "{note}"
        );
    }
    let log = f.git(&["log", "--notes=cutile-perf", "-1"]);
    assert!(
        log.contains("Notes (cutile-perf):\n    cutile-perf evidence"),
        "{log}"
    );
    let (ok, report) = verify_json(&f);
    assert!(ok, "{report}");
    assert_eq!(report["iterations"], 2);
    assert_eq!(report["with_evidence"], 3);
    assert_eq!(report["findings"], serde_json::json!([]));
    assert!(f.ok(&["verify"]).contains("2 iterations since"));
    // what `git log --notes` shows a reviewer, rewritten after the fact, is a finding
    let note = f.git(&["notes", NOTES, "show", "HEAD"]);
    let edited = f.path(".git/edited-note");
    std::fs::write(&edited, note.replace("statistic: median", "statistic: min")).unwrap();
    f.git(&[
        "notes",
        NOTES,
        "add",
        "-f",
        "-F",
        &edited.to_string_lossy(),
        "HEAD",
    ]);
    let out = f.run(&["verify"]);
    let out = both(&out);
    assert!(
        out.contains("summary-mismatch") && out.contains("\"statistic: min\""),
        "{out}"
    );
}

#[test]
fn a_second_session_block_widens_nothing() {
    let f = Fixture::new();
    f.start();
    let baseline = f.git(&["log", "-1", "--format=%B"]);
    let forged = baseline.replacen(
        &format!("Cutile-Perf-Allow: {KERNEL}\n"),
        &format!("Cutile-Perf-Allow: {KERNEL}\nCutile-Perf-Allow: setup.py\n"),
        1,
    );
    assert_ne!(forged, baseline);
    forge(&f, &forged);
    // the hook reads the session from the baseline that `start` made
    f.append("setup.py", "# widened\n");
    f.git(&["add", "setup.py"]);
    let out = f.commit();
    assert!(!out.status.success(), "{}", both(&out));
    assert!(text(&out.stderr).contains("outside the session's allowed set"));
    f.git(&["reset", "-q"]);
    let err = f.fails(&["step", "--opt", "none", "widened"]);
    assert!(err.contains("setup.py"), "{err}");
    f.git(&["checkout", "--", "setup.py"]);
    f.set_latency(0.09, 0.9);
    let err = f.fails(&["step", "--opt", "none", "over a forged session"]);
    assert!(err.contains("commits the tool did not make"), "{err}");
    assert!(err.contains("extra-session"), "{err}");
    assert_eq!(finding_kinds(&f), ["extra-session"]);
}

#[test]
fn a_plain_kernel_commit_is_refused_until_repair_takes_it_back() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    f.git(&["commit", "-q", "--no-verify", "-am", "quietly"]);
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["state"], "foreign", "{status}");
    assert_eq!(status["next_action"]["kind"], "repair", "{status}");
    f.append(KERNEL, "# an edit beside it\n");
    let err = f.fails(&["step", "--opt", "none", "on top of a plain commit"]);
    assert!(err.contains("unrecorded-change"), "{err}");
    assert!(err.contains(KERNEL), "{err}");
    let hint = "hint: nothing is recorded over them: run `git cutile-perf repair --json`";
    assert!(err.contains(hint), "{err}");
    assert_eq!(finding_kinds(&f), ["unrecorded-change"]);
    // the edit in the work tree stays; the committed change goes back, in a commit of the tool's
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["action"], "taken-back", "{repaired}");
    assert_eq!(
        repaired["next_action"]["kind"], "edit-and-step",
        "{repaired}"
    );
    assert!(finding_kinds(&f).is_empty());
    assert_eq!(f.git(&["diff", "--cached", "--name-only"]), "");
    let changed = f.git(&["diff", "HEAD"]);
    assert!(changed.ends_with("+# an edit beside it\n"), "{changed}");
    let added = changed
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"));
    assert_eq!(added.count(), 1, "{changed}");
    f.git(&["checkout", "--", KERNEL]);
    f.set_latency(0.09, 0.9);
    assert_eq!(f.step_json(&["recorded properly"])["status"], "keep");
    assert!(f.ok(&["verify"]).contains("the record holds"));
    f.replays_as_recorded();
}

#[test]
fn forged_trailers_are_caught_by_verify() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    f.step_json(&["tile size 256"]);
    // an edited trailer, the note carried over to the amended commit
    let original = f.head();
    let message = f.git(&["log", "-1", "--format=%B"]);
    let latency = f.trailer("HEAD", "Cutile-Perf-Latency-Ms");
    let edited = message.replacen(
        &format!("Cutile-Perf-Latency-Ms: {latency}\n"),
        "Cutile-Perf-Latency-Ms: 0.100000\n",
        1,
    );
    assert_ne!(edited, message);
    amend_keeping_the_note(&f, &edited);
    let (ok, report) = verify_json(&f);
    assert!(!ok);
    let detail = report["findings"][0]["detail"].as_str().unwrap();
    assert_eq!(report["findings"][0]["kind"], "evidence-mismatch");
    assert!(
        detail.starts_with(
            "iteration 1: latency is 0.100000 in the trailers but 0.284605 from the evidence"
        ),
        "{detail}"
    );
    // a whole iteration made by hand has no evidence
    f.git(&["reset", "-q", "--hard", &original]);
    let forged = message
        .replacen(
            "Cutile-Perf-Iteration: 1\n",
            "Cutile-Perf-Iteration: 2\n",
            1,
        )
        .replacen("#1 ", "#2 ", 1);
    forge(&f, &forged);
    assert_eq!(finding_kinds(&f), ["missing-evidence"]);
}

#[test]
fn git_cutile_perf_in_the_environment_bypasses_nothing() {
    let f = Fixture::new();
    f.start();
    f.append("setup.py", "# outside\n");
    f.git(&["add", "setup.py"]);
    let head = f.head();
    let out = f
        .program("git", &f.root)
        .args(["commit", "-q", "-m", "sneak"])
        .env("GIT_CUTILE_PERF", "true")
        .output()
        .unwrap();
    // refused by the hook, which sees that `true` checked nothing, and nothing committed
    assert!(!out.status.success(), "{}", both(&out));
    assert!(
        both(&out).contains("cutile-perf pre-commit hook: true did not check this commit"),
        "{}",
        both(&out)
    );
    assert_eq!(f.head(), head);
}

#[test]
fn latencies_no_gpu_produces_are_a_crash() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("\"small\": 0.100000", "\"small\": 5e-324");
    let r = f.step_json(&["a timer bug"]);
    assert_eq!(r["status"], "crash");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("forward median of tests.ops.test_vector_add::test_perf[cutile-small] is 5e-324 ms, below 1e-4 ms (100 ns)"),
        "{reason}"
    );
    f.replays_as_recorded();
}

#[test]
fn a_tenfold_gain_is_measured_again_before_it_stands() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.001, 0.9);
    let r = f.step_json(&["a suspicious gain"]);
    assert_eq!(r["status"], "keep");
    assert!(
        r["reason"].as_str().unwrap().ends_with(
            "; 1 config more than 10x faster than the baseline, confirmed by a second measurement"
        ),
        "{r}"
    );
    let note = f.git(&["notes", NOTES, "show", "HEAD"]);
    assert!(note.contains("\nrun round-1-candidate: 2 cases"), "{note}");
    assert!(
        note.contains("\nrun confirm-round-1-candidate: 2 cases"),
        "{note}"
    );
    assert!(f.ok(&["verify"]).contains("the record holds"));
    f.replays_as_recorded();
}

#[test]
fn a_baseline_where_nothing_passed_is_refused() {
    let f = Fixture::new();
    let err = f.fails(&["start", "vector_add", "--filter", "sm100"]);
    assert!(
        err.contains(
            "no correctness test passed at the baseline (every selected case was skipped)"
        ),
        "{err}"
    );
    assert_eq!(f.branch(), "main");
}

#[test]
fn a_case_that_passed_at_the_baseline_and_skips_now_fails() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel(
        "    out = array(\"d\", bytes(8 * len(a)))\n",
        "    if len(a) == 7:\n        import pytest\n        pytest.skip(\"not today\")\n    out = array(\"d\", bytes(8 * len(a)))\n",
    );
    let r = f.step_json(&["skip a case"]);
    assert_eq!(r["correctness"], "FAIL");
    assert_eq!(r["status"], "revert");
    let log = f.git(&["log", "-1", "--format=%B"]);
    assert!(log.contains("Cutile-Perf-Correctness: FAIL"), "{log}");
    assert!(f.ok(&["verify"]).contains("the record holds"));
    f.replays_as_recorded();
}

#[test]
fn a_session_whose_baseline_note_is_gone_is_not_taken_for_one_recorded_before_notes() {
    let f = Fixture::new();
    f.start();
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Evidence"), "notes");
    f.git(&["notes", NOTES, "remove", "HEAD"]);
    f.edit_kernel(
        "    out = array(\"d\", bytes(8 * len(a)))\n",
        "    if len(a) == 7:\n        import pytest\n        pytest.skip(\"not today\")\n    out = array(\"d\", bytes(8 * len(a)))\n",
    );
    // without the note, the baseline's passing cases are unknown: nothing is judged without them
    let err = f.fails(&["step", "--opt", "none", "skip a case"]);
    assert!(
        err.contains("iteration 0 has no evidence note") && err.contains("git cutile-perf fetch"),
        "{err}"
    );
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

#[test]
fn only_the_tool_writes_trailers_on_a_session_branch() {
    let f = Fixture::new();
    // a commit-msg hook that was there before (Gerrit's, say) is kept, runs first, and comes back
    let theirs = "#!/bin/sh\necho ran >>\"$(git rev-parse --git-dir)/theirs.log\"\n";
    f.write(".git/hooks/commit-msg", theirs);
    std::fs::set_permissions(
        f.hooks().join("commit-msg"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    f.start();
    assert_eq!(
        std::fs::read_to_string(f.path(".git/theirs.log")).unwrap(),
        "ran\n"
    );
    let baseline = f.git(&["log", "-1", "--format=%B"]);
    let forged = baseline.replacen(
        "Cutile-Perf-Allow:",
        "Cutile-Perf-Allow: setup.py\nCutile-Perf-Allow:",
        1,
    );
    for env in [
        None,
        Some(("GIT_CUTILE_PERF", "true")),
        Some(("GIT_CUTILE_PERF_NONCE", "guess")),
    ] {
        let mut commit = f.program("git", &f.root);
        commit.args([
            "commit",
            "-q",
            "--allow-empty",
            "--cleanup=verbatim",
            "-m",
            &forged,
        ]);
        if let Some((name, value)) = env {
            commit.env(name, value);
        }
        let out = commit.output().unwrap();
        assert!(!out.status.success(), "{env:?}: {}", both(&out));
        let err = text(&out.stderr);
        // the pre-commit hook refuses first: only the tool commits on a session branch
        assert!(
            err.contains("is not one git cutile-perf makes")
                || err.contains("true did not check this commit (it is not git-cutile-perf)"),
            "{env:?}: {}",
            both(&out)
        );
    }
    // an ordinary message is no more the tool's; the tool's own commits pass
    let out = f.run_in(
        &f.root,
        "git",
        &["commit", "-q", "--allow-empty", "-m", "a note to self"],
    );
    assert!(!out.status.success(), "{}", both(&out));
    f.set_latency(0.09, 0.9);
    assert_eq!(f.step_json(&["tile size 256"])["status"], "keep");
    assert!(!f.path(".git/cutile-perf-commit-nonce").exists());
    f.ok(&["hook", "uninstall"]);
    assert_eq!(
        std::fs::read_to_string(f.hooks().join("commit-msg")).unwrap(),
        theirs
    );
}

#[test]
fn verify_finds_rewritten_history_undone_attempts_and_paths_outside() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.08, 1.1);
    assert_eq!(f.step_json(&["one config slower"])["status"], "revert");
    // the undo commit rewritten to keep part of the attempt, its note carried over
    let undo = f.head();
    let message = f.git(&["log", "-1", "--format=%B"]);
    f.set_latency(0.08, 1.0);
    f.git(&["add", KERNEL]);
    amend_keeping_the_note(&f, &message);
    assert_eq!(
        finding_kinds(&f),
        ["attempt-not-undone", "unbound-evidence"]
    );
    f.git(&["reset", "-q", "--hard", &undo]);
    // a path outside the allowed set, committed past the hook
    f.append("setup.py", "# outside\n");
    f.git(&["commit", "-q", "--no-verify", "-am", "sneaky"]);
    assert_eq!(finding_kinds(&f), ["unrecorded-change", "outside-allowed"]);
    f.git(&["reset", "-q", "--hard", &undo]);
    // an iteration number skipped
    let skipped = message.replacen(
        "Cutile-Perf-Iteration: 1\n",
        "Cutile-Perf-Iteration: 3\n",
        1,
    );
    forge(&f, &skipped);
    let (ok, report) = verify_json(&f);
    assert!(!ok);
    assert_eq!(report["findings"][0]["kind"], "broken-history", "{report}");
    assert!(
        report["findings"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("records iteration 3 where iteration 2 was expected"),
        "{report}"
    );
}

#[test]
fn the_harness_baseline_is_read_back_as_the_tools_own() {
    let message = support::baseline_message(KERNEL, support::TEST, &[KERNEL, "a b\nc.py"]);
    let history = History::from_commits([Ok(("c0".to_string(), message))], Configs::All)
        .unwrap()
        .unwrap();
    assert_eq!(history.session.allowed, [KERNEL, "a b\nc.py"]);
    assert_eq!(history.current_baseline().latency_ms, Some(1.0));
}

/// A commit git makes of what is staged, with `message` on `parent`, past every hook: `git commit-tree`.
fn commit_tree(f: &Fixture, message: &str, parent: &str) -> String {
    let tree = f.git(&["write-tree"]);
    let out = with_input(
        f.program("git", &f.root)
            .args(["commit-tree", tree.trim(), "-p", parent, "-F", "-"]),
        message,
    );
    assert!(out.status.success(), "{}", both(&out));
    text(&out.stdout).trim().to_string()
}

#[test]
fn evidence_is_bound_to_the_commit_it_measured() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    f.step_json(&["tile size 256"]);
    let honest = f.head();
    let message = f.git(&["log", "-1", "--format=%B"]);
    // the same message and parent over a 50x slower kernel, the note copied onto it
    f.set_latency(4.5, 45.0);
    f.git(&["add", KERNEL]);
    let forged = commit_tree(&f, &message, &format!("{honest}^"));
    f.git(&["notes", NOTES, "copy", &honest, &forged]);
    f.git(&["reset", "-q", "--hard", &forged]);
    let (ok, report) = verify_json(&f);
    assert!(!ok, "{report}");
    assert_eq!(
        report["findings"][0]["kind"], "unbound-evidence",
        "{report}"
    );
    let detail = report["findings"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("it was written for commit {}", &honest[..10]))
            && detail.contains("it measured tree"),
        "{detail}"
    );
    // the same commit shown through `git replace`: read past, and reported
    f.git(&["reset", "-q", "--hard", &honest]);
    assert_eq!(finding_kinds(&f), Vec::<String>::new());
    f.git(&["replace", &honest, &forged]);
    let table = f.ok(&["table", "--json"]);
    assert!(table.contains("0.284605"), "{table}");
    let (ok, report) = verify_json(&f);
    assert!(!ok, "{report}");
    assert_eq!(
        report["findings"][0]["kind"], "replaced-objects",
        "{report}"
    );
    assert_eq!(report["findings"][0]["commit"], honest.as_str());
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "{report}");
    f.edit_kernel("\n", "\n# next\n");
    let err = f.fails(&["step", "--opt", "none", "over a replaced commit"]);
    assert!(err.contains("replaced-objects"), "{err}");
}

#[test]
fn a_session_declared_again_behind_a_deleted_baseline_ref_is_refused() {
    let f = Fixture::new();
    f.start();
    let branch = f.session_branch();
    let baseline = f.head();
    let message = f.git(&["log", "-1", "--format=%B"]);
    f.git(&[
        "update-ref",
        "-d",
        &format!("refs/cutile-perf/baseline/{branch}"),
    ]);
    let widened = message.replacen(
        &format!("Cutile-Perf-Allow: {KERNEL}\n"),
        &format!("Cutile-Perf-Allow: {KERNEL}\nCutile-Perf-Allow: tests/common.py\n"),
        1,
    );
    let forged = commit_tree(&f, &widened, &baseline);
    f.git(&["reset", "-q", "--hard", &forged]);
    f.git(&["notes", NOTES, "copy", &baseline, &forged]);
    // reading does not write the ref back for the newest block
    f.ok(&["status"]);
    let kinds = finding_kinds(&f);
    assert_eq!(kinds, ["baseline-ref", "unbound-evidence"], "{kinds:?}");
    f.edit("tests/common.py", "\n", "\n# a harness edit\n");
    let err = f.fails(&["step", "--opt", "none", "through the harness"]);
    assert!(err.contains("the session's record does not hold"), "{err}");
    assert!(err.contains("is missing"), "{err}");
    assert_eq!(f.head(), forged, "nothing recorded");
}

/// `tests/common.py` with every median a tenth, compiled to an unchecked-hash `.pyc` (which Python
/// never compares with the source) where Python looks for the module's bytecode.
fn plant_fast_bytecode(f: &Fixture) -> String {
    let tag = f.run_in(
        &f.root,
        "python3",
        &["-c", "import sys; print(sys.implementation.cache_tag)"],
    );
    let pyc = format!("tests/__pycache__/common.{}.pyc", text(&tag.stdout).trim());
    let variant = f.path("../common_variant.py");
    let source = std::fs::read_to_string(f.path("tests/common.py")).unwrap();
    let fast = source.replacen("\"median\": latency_ms,", "\"median\": latency_ms / 10,", 1);
    assert_ne!(fast, source);
    std::fs::write(&variant, fast).unwrap();
    std::fs::create_dir_all(f.path("tests/__pycache__")).unwrap();
    let out = f.run_in(
        &f.root,
        "python3",
        &[
            "-c",
            "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile='tests/common.py', \
             doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
            &variant.to_string_lossy(),
            &pyc,
        ],
    );
    assert!(out.status.success(), "{}", both(&out));
    pyc
}

#[test]
fn bytecode_beside_the_tests_is_never_read() {
    // there before the session, or planted after `start`: never copied beside either side's code
    for planted_after_start in [false, true] {
        let f = Fixture::new();
        f.append(".git/info/exclude", "__pycache__/\n");
        if !planted_after_start {
            plant_fast_bytecode(&f);
        }
        f.start();
        if planted_after_start {
            plant_fast_bytecode(&f);
        }
        // a new kernel at the same simulated latency (a comment alone would be recorded as no change)
        f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
        let r = f.step_json(&["same latency"]);
        assert!(r["change_pct"].as_f64().unwrap().abs() < 1.0, "{r}");
    }
}

#[test]
fn an_ignored_conftest_is_seen_by_both_sides() {
    let f = Fixture::new();
    f.append(".git/info/exclude", "tests/ops/conftest.py\n");
    f.write(
        "tests/ops/conftest.py",
        "import tests.common as common\n\n_measured = common.benchmark_record\n\
         common.benchmark_record = lambda latency_ms: _measured(latency_ms / 2)\n",
    );
    f.start();
    // the conftest halves what the baseline measures
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Baseline-Ms"), "0.158114");
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    let r = f.step_json(&["same latency"]);
    assert!(r["change_pct"].as_f64().unwrap().abs() < 1.0, "{r}");
    assert_eq!(f.ok(&["verify"]).lines().count(), 1);
}

#[test]
fn a_trailer_commit_fast_forwarded_from_another_branch_is_refused() {
    let f = Fixture::new();
    f.start();
    let session = f.session_branch();
    let message = f.git(&["log", "-1", "--format=%B"]);
    // iteration 1 written by hand on a side branch, where the session's hooks do not look
    f.git(&["checkout", "-q", "-b", "side"]);
    let forged = message
        .split("\n\n")
        .next()
        .unwrap()
        .replace("baseline", "#1 keep -50.00%: by hand")
        + "\n\nCutile-Perf-Iteration: 1\nCutile-Perf-Optimization: by hand\nCutile-Perf-Latency-Ms: 0.158114\n\
           Cutile-Perf-Correctness: PASS\nCutile-Perf-Status: keep\nCutile-Perf-Baseline-Ms: 0.316228\n\
           Cutile-Perf-Change: -50.00%\nCutile-Perf-Decision: continue\nCutile-Perf-Reason: by hand\n";
    f.set_latency(0.05, 0.5);
    f.git(&["commit", "-q", "-a", "--cleanup=verbatim", "-m", &forged]);
    f.git(&["checkout", "-q", &session]);
    f.git(&["merge", "-q", "--ff-only", "side"]);
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Iteration"), "1");
    assert_eq!(finding_kinds(&f), ["missing-evidence"]);
    f.set_latency(0.04, 0.4);
    let err = f.fails(&["step", "--opt", "none", "over a hand-made iteration"]);
    assert!(
        err.contains("the session's record does not hold")
            && err.contains("iteration 1 has no evidence note"),
        "{err}"
    );
}

/// An ssh signing key for the fixture's repository (what `user.signingkey` with `gpg.format ssh` is), its
/// public half trusted for checking.
fn sign_with_a_key(f: &Fixture) {
    let key = f.path("../signing-key");
    let out = f.run_in(
        &f.root,
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            &key.to_string_lossy(),
        ],
    );
    assert!(out.status.success(), "{}", both(&out));
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = f.path("../allowed-signers");
    std::fs::write(&allowed, format!("committer@example.com {public}")).unwrap();
    f.git(&["config", "gpg.format", "ssh"]);
    f.git(&[
        "config",
        "user.signingkey",
        &key.with_extension("pub").to_string_lossy(),
    ]);
    f.git(&[
        "config",
        "gpg.ssh.allowedSignersFile",
        &allowed.to_string_lossy(),
    ]);
}

#[test]
fn with_a_signing_key_every_commit_is_signed_and_verify_checks_each() {
    let f = Fixture::new();
    sign_with_a_key(&f);
    f.start();
    f.set_latency(0.09, 0.9);
    assert_eq!(f.step_json(&["tile size 256"])["status"], "keep");
    f.set_latency(0.08, 1.0);
    assert_eq!(f.step_json(&["one config slower"])["status"], "revert");
    for rev in ["HEAD", "HEAD^", "HEAD~2", "HEAD~3"] {
        assert_eq!(
            f.git(&["log", "-1", "--format=%G?", rev]).trim(),
            "G",
            "{rev}"
        );
    }
    let (ok, report) = verify_json(&f);
    assert!(ok, "{report}");
    assert_eq!(report["signed"], serde_json::json!([0, 1, 2]));
    assert!(
        f.ok(&["verify"])
            .contains("3 with an evidence note, 3 signed")
    );
    // the last iteration made again past the tool: unsigned, its note copied over
    let message = f.git(&["log", "-1", "--format=%B"]);
    amend_keeping_the_note(&f, &message);
    let (ok, report) = verify_json(&f);
    assert!(!ok);
    assert_eq!(report["signed"], serde_json::json!([0, 1]));
    assert_eq!(finding_kinds(&f), ["unbound-evidence", "signature"]);
    let detail = report["findings"][1]["detail"].as_str().unwrap();
    assert_eq!(
        detail,
        "iteration 2's commit is not signed, though the session's baseline is"
    );
}
