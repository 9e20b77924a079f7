//! What the user controls never reaches a commit message as trailers: paths that `repair`'s take-back
//! lists, harness settings the environment gives `start`. A foreign commit and its take-back are one
//! cancelled pair for `verify`.

use crate::faults::Phase;
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

/// A git first on PATH that pauses at a `git commit-tree` as the pausing hooks of `faults` pause at a
/// hook (`PAUSE_DIR`, `PAUSE_HOOK`, `PAUSE_AT`): where `repair`'s take-back has changed the work tree
/// and not yet made its commit.
fn pausing_git(f: &mut Fixture) {
    let real = f.run_in(&f.root, "sh", &["-c", "command -v git"]);
    let real = text(&real.stdout).trim().to_string();
    let dir = f.root.parent().unwrap().join("pausing-git");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        r#"#!/bin/sh
if [ -n "$PAUSE_DIR" ]; then
    for arg; do
        if [ "$arg" = "$PAUSE_HOOK" ]; then
            count="$PAUSE_DIR/count-git"
            n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
            echo "$n" > "$count"
            if [ "$n" = "$PAUSE_AT" ]; then
                echo $$ > "$PAUSE_DIR/paused.new" && mv "$PAUSE_DIR/paused.new" "$PAUSE_DIR/paused"
                while [ ! -e "$PAUSE_DIR/go" ]; do sleep 0.05; done
            fi
            break
        fi
    done
fi
exec '{real}' "$@"
"#
    );
    let git = dir.join("git");
    std::fs::write(&git, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.first_on_path(&dir);
}

/// `repair` SIGKILLed where `at` pauses it, `killed` checked, then `repair --json` again: it takes back,
/// its journal gone.
fn repair_killed_at(
    f: &mut Fixture,
    at: Phase,
    killed: impl FnOnce(&Fixture),
) -> serde_json::Value {
    pausing_git(f);
    let (code, output) = crate::faults::stop_at(f, &["repair"], at, crate::faults::Signal::Kill);
    assert_eq!(code, None, "{output}");
    let journal = f.path(".git/cutile-perf/take-back.json");
    assert!(journal.exists(), "the journal is left");
    killed(f);
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["action"], "taken-back", "{repaired}");
    assert!(!journal.exists());
    repaired
}

/// `repair` killed after undoing the foreign change in the work tree and before its commit: its journal
/// tells the next `repair` what it was doing, which puts the work tree back and takes back afresh, where
/// it once refused its own undo as an overlapping edit.
#[test]
fn a_take_back_killed_before_its_commit_is_taken_back_afresh_by_the_next_repair() {
    let mut f = Fixture::new();
    f.start();
    let recorded = f.head();
    f.set_latency(0.05, 0.5);
    f.git(&["commit", "-q", "--no-verify", "-am", "quietly"]);
    let foreign = f.head();
    // an edit of the user's beside it: the take-back undoes the foreign change in the work tree
    f.append(KERNEL, "# mine\n");
    let at = Phase {
        name: "take-back commit",
        hook: "commit-tree",
        at: 1,
    };
    let repaired = repair_killed_at(&mut f, at, |f| {
        assert_eq!(f.head(), foreign, "the kill came before the commit");
    });
    assert_eq!(f.git(&["rev-parse", "HEAD^"]).trim(), foreign);
    assert!(f.ok(&["verify"]).contains("the record holds"));
    // the user's edit alone in the work tree; the foreign change kept as a patch
    assert_eq!(f.git(&["diff", "--stat", &recorded]).lines().count(), 2);
    assert!(f.git(&["diff", &recorded]).contains("+# mine"));
    let patch = repaired["given_back"]["path"].as_str().unwrap();
    assert_eq!(repaired["given_back"]["to"], "patch", "{repaired}");
    let kept = std::fs::read_to_string(f.path(patch)).unwrap();
    assert!(
        kept.contains("+LATENCY_MS = {\"small\": 0.050000"),
        "{kept}"
    );
}

/// A take-back killed after its commit landed is finished by the next `repair`: the index follows the
/// commit, the journal goes, and the change is where it was given back.
#[test]
fn a_take_back_killed_after_its_commit_is_finished_by_the_next_repair() {
    let mut f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    f.git(&["commit", "-q", "--no-verify", "-am", "quietly"]);
    let foreign = f.head();
    // the first `read-tree` after the commit-tree is the take-back's own
    let at = Phase {
        name: "take-back index",
        hook: "read-tree",
        at: 2,
    };
    let repaired = repair_killed_at(&mut f, at, |f| {
        assert_eq!(
            f.git(&["rev-parse", "HEAD^"]).trim(),
            foreign,
            "the commit landed"
        );
    });
    assert_eq!(repaired["given_back"]["to"], "work-tree", "{repaired}");
    assert!(f.ok(&["verify"]).contains("the record holds"));
    assert!(
        f.git(&["diff", "--", KERNEL])
            .contains("+LATENCY_MS = {\"small\": 0.050000"),
        "given back, unstaged"
    );
}

/// An edit over what the foreign commits changed refuses with a recipe that works, and leaves nothing.
#[test]
fn an_edit_over_the_foreign_change_is_refused_with_a_recipe() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.04, 0.4);
    f.git(&["commit", "-q", "--no-verify", "-am", "again"]);
    let head = f.head();
    f.set_latency(0.03, 0.3);
    let before = f.git(&["diff"]);
    let err = f.fails(&["repair"]);
    assert!(err.contains("git apply -3 edit.patch"), "{err}");
    assert_eq!(f.head(), head);
    assert_eq!(f.git(&["diff"]), before);
    assert!(!f.path(".git/cutile-perf/take-back.json").exists());
    let patches = std::fs::read_dir(f.path("sandbox"))
        .map(|dir| {
            dir.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "patch"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(patches, 0, "no patch file is left");
}

/// A hand-committed kernel change that repair takes back is given back to the work tree, and `status`,
/// `next` and repair's own next action say to step it; `help repair` says so.
#[test]
fn repair_gives_a_hand_committed_change_back_to_the_work_tree() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.08, 0.8);
    f.git(&["commit", "-q", "--no-verify", "-am", "by hand"]);
    let changed = f.git(&["show", "HEAD", "--format=", "--", KERNEL]);
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["given_back"]["to"], "work-tree", "{repaired}");
    let what = repaired["what"].as_str().unwrap();
    assert!(
        what.contains("back in the work tree, not yet stepped"),
        "{what}"
    );
    let given_back = f.git(&["diff", "HEAD", "--", KERNEL]);
    let added = |diff: &str| -> Vec<String> {
        diff.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(String::from)
            .collect()
    };
    assert_eq!(added(&given_back), added(&changed));
    assert!(f.ok(&["verify"]).contains("the record holds"));
    let sentence = repaired["next_action"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("The work tree already changes"),
        "{sentence}"
    );
    assert!(!sentence.contains("Apply ONE"), "{sentence}");
    for said in [f.ok(&["status"]), f.ok(&["next"])] {
        assert!(said.contains("step the change in the work tree"), "{said}");
        assert!(!said.contains("one optimization ("), "{said}");
    }
    let help = f.ok(&["help", "repair"]);
    assert!(help.contains("hand"), "{help}");
    let step = f.step_json(&["--opt", "G", "the change made by hand"]);
    assert_eq!(step["status"], "keep", "{step}");
}

/// With another edit in the work tree, the taken-back change is kept as a patch that the named command
/// puts back.
#[test]
fn beside_another_edit_the_taken_back_change_is_kept_as_a_patch() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.08, 0.8);
    f.git(&["commit", "-q", "--no-verify", "-am", "by hand"]);
    f.append(KERNEL, "# mine\n");
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["given_back"]["to"], "patch", "{repaired}");
    let apply = repaired["given_back"]["apply"].as_str().unwrap();
    let what = repaired["what"].as_str().unwrap();
    assert!(what.contains(apply), "{what}");
    assert!(
        !f.git(&["diff"]).contains("0.080000"),
        "taken out of the work tree"
    );
    f.git(&["restore", KERNEL]);
    let out = f.run_in(&f.root, "sh", &["-c", apply]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        f.git(&["diff", "HEAD"])
            .contains("+LATENCY_MS = {\"small\": 0.080000")
    );
}

/// A take-back killed part-way through its undo (simulated: half of it put back by hand) is refused,
/// naming the work tree as saved before it; the hint's recipe then lets `repair` take back afresh.
#[test]
fn a_take_back_left_part_way_is_refused_with_the_work_tree_saved() {
    let mut f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    f.append(KERNEL, "# foreign\n");
    f.git(&["commit", "-q", "--no-verify", "-am", "two hunks"]);
    f.append("setup.py", "# mine\n");
    let at = Phase {
        name: "take-back commit",
        hook: "commit-tree",
        at: 1,
    };
    pausing_git(&mut f);
    let (code, output) = crate::faults::stop_at(&f, &["repair"], at, crate::faults::Signal::Kill);
    assert_eq!(code, None, "{output}");
    // one hunk of the undo taken out again, the other not
    f.set_latency(0.05, 0.5);
    let err = f.fails(&["repair"]);
    assert!(err.contains("left the work tree part-way"), "{err}");
    let saved = err
        .split("git restore --source=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{err}"));
    f.git(&["restore", &format!("--source={saved}"), "--", KERNEL]);
    std::fs::remove_file(f.path(".git/cutile-perf/take-back.json")).unwrap();
    let repaired: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(repaired["given_back"]["to"], "patch", "{repaired}");
    assert!(f.ok(&["verify"]).contains("the record holds"));
    assert!(f.git(&["diff"]).contains("+# mine"));
}
