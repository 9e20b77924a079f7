//! A record that travels: `push`, `fetch` and `setup-remote` between two clones and a bare remote, with
//! real git, the real binary and real pytest; `verify` holds in the clone that fetched.

use crate::support;

use std::path::{Path, PathBuf};

use support::{Fixture, both, text};

const NOTES: &str = "refs/notes/cutile-perf";

/// The author's session (a baseline and one kept iteration), an empty bare remote as its `origin`
/// (in the directory returned), the remote's path and the session branch.
fn author_with_remote() -> (tempfile::TempDir, PathBuf, Fixture, String) {
    let remotes = tempfile::tempdir().unwrap();
    let remote = remotes.path().join("remote.git");
    let author = Fixture::new();
    author.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    author.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    author.start();
    author.set_latency(0.09, 0.9);
    author.step_json(&["tile size 256"]);
    let branch = author.session_branch();
    (remotes, remote, author, branch)
}

/// A second clone of `remote` (a reviewer's, or CI's).
fn clone_of(remote: &Path) -> Fixture {
    let reviewer = Fixture::empty();
    reviewer.git(&["clone", "-q", remote.to_str().unwrap(), "."]);
    reviewer
}

/// The id `name` has on the remote, or "" when it has none.
fn remote_ref(f: &Fixture, name: &str) -> String {
    let listed = f.git(&["ls-remote", "origin", name]);
    listed.split('\t').next().unwrap_or_default().to_string()
}

/// A note the clone adds itself (on the fixture's first commit, which has none): its notes ref moves
/// past the remote's.
fn note_of_ones_own(f: &Fixture) {
    let root = f.git(&["rev-list", "--max-parents=0", "HEAD"]);
    f.git(&[
        "notes",
        "--ref=cutile-perf",
        "add",
        "-m",
        "a reviewer's",
        root.trim(),
    ]);
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", both(out)))
}

/// The status of each ref update in a `push --json` or `fetch --json` report.
fn statuses(report: &serde_json::Value) -> Vec<(String, String)> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["ref"].as_str().unwrap().into(),
                u["status"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn a_pushed_session_verifies_in_another_clone_and_notes_merge_unless_they_conflict() {
    let (_remotes, remote, author, branch) = author_with_remote();

    // a plain push leaves the evidence behind
    author.git(&["push", "-q", "origin", &branch]);
    assert_eq!(remote_ref(&author, NOTES), "");

    let pushed = json(&author.run(&["push", "--json"]));
    assert_eq!(pushed["remote"], "origin");
    assert_eq!(pushed["branch"], branch.as_str());
    let notes = author.git(&["rev-parse", NOTES]).trim().to_string();
    assert_eq!(remote_ref(&author, NOTES), notes);
    assert!(
        statuses(&pushed).contains(&(NOTES.into(), "new".into())),
        "{pushed}"
    );
    let baseline_ref = format!("refs/cutile-perf/baseline/{branch}");
    assert_ne!(remote_ref(&author, &baseline_ref), "");

    let reviewer = clone_of(&remote);
    let fetched = json(&reviewer.run(&["fetch", "--json"]));
    assert_eq!(
        fetched["branches"],
        serde_json::json!([format!("origin/{branch}")])
    );
    assert!(
        statuses(&fetched).contains(&(NOTES.into(), "new".into())),
        "{fetched}"
    );
    assert!(statuses(&fetched).contains(&(baseline_ref.clone(), "new".into())));
    reviewer.git(&["checkout", "-q", &branch]);
    assert!(reviewer.ok(&["verify"]).contains("the record holds"));
    assert_eq!(
        json(&reviewer.run(&["verify", "--json"]))["findings"],
        serde_json::json!([])
    );
    // the staging refs are gone; a second fetch finds everything up to date
    assert_eq!(
        reviewer.git(&["for-each-ref", "refs/cutile-perf-incoming/"]),
        ""
    );
    let again = json(&reviewer.run(&["fetch", "--json"]));
    assert!(
        statuses(&again).iter().all(|(_, s)| s == "up-to-date"),
        "{again}"
    );

    // the author records more; the reviewer notes something of their own, on another commit: the notes
    // refs diverge, the notes never disagree, and a fetch merges them
    author.set_latency(0.08, 0.8);
    author.step_json(&["tile size 512"]);
    let advanced = author.git(&["rev-parse", NOTES]).trim().to_string();
    author.ok(&["push"]);
    assert_eq!(remote_ref(&author, NOTES), advanced);
    note_of_ones_own(&reviewer);
    let reviewers = reviewer.git(&["rev-parse", NOTES]).trim().to_string();
    let merged = json(&reviewer.run(&["fetch", "--json"]));
    assert!(
        statuses(&merged).contains(&(NOTES.into(), "merged".into())),
        "{merged}"
    );
    for side in [&advanced, &reviewers] {
        reviewer.git(&["merge-base", "--is-ancestor", side, NOTES]);
    }
    let root = reviewer.git(&["rev-list", "--max-parents=0", "HEAD"]);
    let root = root.trim();
    assert_eq!(
        reviewer.git(&["notes", "--ref=cutile-perf", "show", root]),
        "a reviewer's\n"
    );

    // the reviewer's branch is behind the remote's: the push names the branch, not the notes
    let behind = reviewer.run(&["push"]);
    assert!(!behind.status.success(), "{}", both(&behind));
    let stderr = text(&behind.stderr);
    assert!(
        stderr.contains(&format!(
            "the branch was rejected: origin's {branch} has commits"
        )),
        "{stderr}"
    );
    reviewer.git(&["merge", "-q", "--ff-only", &format!("origin/{branch}")]);
    assert!(reviewer.ok(&["verify"]).contains("the record holds"));
    reviewer.ok(&["push"]);
    let shared = reviewer.git(&["rev-parse", NOTES]).trim().to_string();
    assert_eq!(remote_ref(&author, NOTES), shared);

    // the author notes the same commit otherwise: a true conflict, refused both ways, naming it
    author.git(&[
        "notes",
        "--ref=cutile-perf",
        "add",
        "-m",
        "the author's",
        root,
    ]);
    let authors = author.git(&["rev-parse", NOTES]).trim().to_string();
    let push_refused = author.run(&["push"]);
    assert!(!push_refused.status.success(), "{}", both(&push_refused));
    let stderr = text(&push_refused.stderr);
    assert!(
        stderr.contains(root) && stderr.contains("push --force keeps yours"),
        "{stderr}"
    );
    assert_eq!(remote_ref(&author, NOTES), shared);
    let refused = author.run(&["fetch"]);
    assert!(!refused.status.success(), "{}", both(&refused));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("noted the same commit differently") && stderr.contains(root),
        "{stderr}"
    );
    assert_eq!(author.git(&["rev-parse", NOTES]).trim(), authors);

    // `fetch --force` takes the remote's note there, and keeps every note of the author's own
    let forced = json(&author.run(&["fetch", "--force", "--json"]));
    assert!(
        statuses(&forced).contains(&(NOTES.into(), "forced".into())),
        "{forced}"
    );
    author.git(&["merge-base", "--is-ancestor", &authors, NOTES]);
    assert_eq!(
        author.git(&["notes", "--ref=cutile-perf", "show", root]),
        "a reviewer's\n"
    );
    assert!(author.ok(&["verify"]).contains("the record holds"));
}

#[test]
fn after_setup_remote_plain_push_and_fetch_carry_the_record() {
    let (_remotes, remote, author, branch) = author_with_remote();

    let setup = author.ok(&["setup-remote"]);
    assert!(setup.contains("added remote.origin.push = HEAD"), "{setup}");
    let push_specs = author.git(&["config", "--get-all", "remote.origin.push"]);
    assert_eq!(
        push_specs,
        "HEAD\nrefs/notes/cutile-perf*:refs/notes/cutile-perf*\nrefs/cutile-perf/*:refs/cutile-perf/*\n"
    );
    // idempotent
    let again = json(&author.run(&["setup-remote", "origin", "--json"]));
    assert_eq!(again["added"], serde_json::json!([]));
    assert_eq!(
        author.git(&["config", "--get-all", "remote.origin.push"]),
        push_specs
    );

    author.git(&["push", "-q"]);
    assert_eq!(
        remote_ref(&author, &format!("refs/heads/{branch}")),
        author.head()
    );
    assert_eq!(
        remote_ref(&author, NOTES),
        author.git(&["rev-parse", NOTES]).trim()
    );

    let reviewer = clone_of(&remote);
    reviewer.ok(&["setup-remote"]);
    reviewer.git(&["fetch", "-q"]);
    assert_eq!(
        reviewer.git(&["rev-parse", NOTES]),
        author.git(&["rev-parse", NOTES])
    );
    reviewer.git(&["checkout", "-q", &branch]);
    assert!(reviewer.ok(&["verify"]).contains("the record holds"));

    // notes of the reviewer's own are ahead of the remote's: git's fetch refuses to move them back,
    // git cutile-perf fetch keeps them
    note_of_ones_own(&reviewer);
    assert!(
        !reviewer
            .run_in(&reviewer.root, "git", &["fetch", "-q"])
            .status
            .success()
    );
    let fetched = json(&reviewer.run(&["fetch", "--json"]));
    assert!(
        statuses(&fetched).contains(&(NOTES.into(), "ahead".into())),
        "{fetched}"
    );
}

#[test]
fn a_fetch_that_would_fast_forward_over_a_rewritten_note_of_ours_is_refused_naming_it() {
    let (_remotes, remote, author, branch) = author_with_remote();
    author.ok(&["push"]);
    let reviewer = clone_of(&remote);
    reviewer.ok(&["fetch"]);
    let reviewers = reviewer.git(&["rev-parse", NOTES]).trim().to_string();

    // the remote's notes descend from the reviewer's, with iteration 1's note rewritten
    let iteration = author.head();
    author.git(&[
        "notes",
        "--ref=cutile-perf",
        "add",
        "-f",
        "-m",
        "rewritten",
        &iteration,
    ]);
    author.ok(&["push"]);
    let refused = reviewer.run(&["fetch"]);
    assert!(!refused.status.success(), "{}", both(&refused));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("noted the same commit differently") && stderr.contains(&iteration),
        "{stderr}"
    );
    assert_eq!(reviewer.git(&["rev-parse", NOTES]).trim(), reviewers);
    reviewer.git(&["checkout", "-q", &branch]);
    assert!(reviewer.ok(&["verify"]).contains("the record holds"));

    // `--force` takes the remote's note, as on a diverged ref
    let forced = json(&reviewer.run(&["fetch", "--force", "--json"]));
    assert!(
        statuses(&forced).contains(&(NOTES.into(), "forced".into())),
        "{forced}"
    );
    assert_eq!(
        reviewer.git(&["notes", "--ref=cutile-perf", "show", &iteration]),
        "rewritten\n"
    );
}
