//! Verbs called in-process, as functions of their options: a session written by the harness (no
//! pytest), the verb run on the opened repository, its typed report checked, and the one rendering
//! read back from a `Ui` over buffers.

use crate::support;

use git_cutile_perf::rules::decision::LoopState;
use git_cutile_perf::system::git::Repo;
use git_cutile_perf::system::ui::{Render, Ui};
use git_cutile_perf::verbs::commands::{report, status, table, verify};
use git_cutile_perf::verbs::errors::ErrorReport;
use support::{Captured, Fixture, KERNEL, TEST};

const BRANCH: &str = "cutile-perf-vector_add-20250101";

fn session() -> (Fixture, Repo) {
    let f = Fixture::new();
    f.session(BRANCH, &[KERNEL]);
    let repo = Repo::discover(&f.root).unwrap();
    (f, repo)
}

/// What `report` shows on stdout and stderr, as text or as JSON.
fn shown(report: &impl Render, json: bool) -> (String, String) {
    let (mut out, err) = (Vec::new(), Captured::default());
    Ui::plain(&mut out, err.progress(), json)
        .show(report)
        .unwrap();
    (String::from_utf8(out).unwrap(), err.text())
}

#[test]
fn status_reports_the_session_and_renders_it_once() {
    let (f, repo) = session();
    let (mut out, err) = (Vec::new(), Captured::default());
    let report = status::run(&mut Ui::plain(&mut out, err.progress(), false), &repo).unwrap();
    // the verb printed nothing itself: a clean session has no warning, and the report is not shown yet
    assert!(out.is_empty() && err.text().is_empty(), "{}", err.text());
    assert_eq!(report.branch.as_deref(), Some(BRANCH));
    let progress = report.progress.as_ref().expect("a session's progress");
    assert_eq!(progress.session.kernel, KERNEL);
    assert_eq!(progress.session.test, TEST);
    assert_eq!((progress.iterations, progress.no_gain), (0, 0));
    // every verb counts the iterations after the baseline
    let page = report::ReportOptions {
        out: Some(f.root.join("report.html")),
    };
    assert_eq!(report::run(&repo, &page).unwrap().iterations, 0);
    assert_eq!(progress.baseline.latency_ms, Some(1.0));
    assert_eq!(progress.change_pct_since_0, Some(0.0));
    assert_eq!(progress.state, LoopState::Running);
    assert_eq!(report.unfinished, None);

    let (text, progress) = shown(&report, false);
    assert!(text.starts_with(&format!("session {BRANCH}\n")), "{text}");
    assert!(
        text.contains("  baseline    iteration 0 1.000000 ms\n"),
        "{text}"
    );
    assert!(text.contains("  loop        running\n"), "{text}");
    assert!(
        text.contains("  best        iteration 0 1.000000 ms (+0.00% since iteration 0)\n"),
        "{text}"
    );
    assert!(text.ends_with(&format!("next: {}\n", report.next_action.line)));
    assert_eq!(progress, "");

    let (json, _) = shown(&report, true);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["branch"], BRANCH);
    assert_eq!(value["state"], "running");
    assert_eq!(value["change_pct_since_0"], 0.0);
    assert_eq!(
        value["next_action"]["sentence"],
        report.next_action.sentence
    );
}

#[test]
fn table_reports_its_rows_and_says_what_it_wrote_on_err() {
    let (f, repo) = session();
    let report = table::run(&repo, &table::TableOptions::default()).unwrap();
    assert_eq!(report.iterations.len(), 1);
    assert_eq!(report.iterations[0].optimization, "baseline");
    assert_eq!((report.table.as_ref(), report.plot.as_ref()), (None, None));
    let (text, progress) = shown(&report, false);
    assert!(text.starts_with("| iteration |"), "{text}");
    assert!(text.contains("| 0 |  | baseline |"), "{text}");
    assert_eq!(progress, "");

    let written = table::run(&repo, &table::TableOptions { write: true }).unwrap();
    let table_file = written.table.clone().unwrap();
    assert_eq!(table_file, f.path("sandbox/perf_results.md"));
    assert!(table_file.exists());
    let (_, progress) = shown(&written, false);
    assert_eq!(
        progress.lines().next().unwrap(),
        format!("wrote {}", table_file.display())
    );
    let (json, _) = shown(&written, true);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["rows"][0]["iteration"], 0);
    assert_eq!(value["rows"][0]["status"], "keep");
}

#[test]
fn verify_reports_findings_and_its_verdict_fails_on_them() {
    let f = Fixture::new();
    f.start();
    let repo = Repo::discover(&f.root).unwrap();
    let clean = verify::run(&repo).unwrap();
    assert_eq!((clean.iterations, clean.with_evidence), (0, 1));
    assert!(clean.findings.is_empty(), "{:?}", clean.findings);
    assert!(clean.verdict().is_ok());
    let (text, _) = shown(&clean, false);
    assert!(text.ends_with("0 signed: the record holds\n"), "{text}");

    // a change committed by hand, past the hooks, is a commit the tool did not make
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.git(&["commit", "-q", "-a", "--no-verify", "-m", "by hand"]);
    let report = verify::run(&repo).unwrap();
    assert!(!report.findings.is_empty(), "{report:?}");
    let failure = report.verdict().unwrap_err();
    let shape = ErrorReport::of(&failure, 1);
    assert_eq!(
        shape.error,
        format!(
            "verify found {} from the session's record",
            match report.findings.len() {
                1 => "1 departure".to_string(),
                n => format!("{n} departures"),
            }
        )
    );
    assert!(
        shape
            .hint
            .unwrap()
            .ends_with("takes back the change of commits the tool did not make")
    );
}

#[test]
fn a_refusal_keeps_its_hint_as_data() {
    let f = Fixture::new();
    let repo = Repo::discover(&f.root).unwrap();
    // outside a session `status` says how to start one; `table` has nothing to show and refuses
    let failure = table::run(&repo, &table::TableOptions::default()).unwrap_err();
    let report = ErrorReport::of(&failure, 1);
    assert!(
        report
            .error
            .starts_with("not on a cutile-perf session branch"),
        "{}",
        report.error
    );
    assert!(!report.error.contains("hint:"), "{}", report.error);
    assert!(report.hint.unwrap().contains("start"));
}

/// A note is read as git reads it, wherever the notes tree files it: flat (`<id>`), or in fan-out
/// directories (`ab/<38 hex>`, `ab/cd/<36 hex>`) as git writes once a session has many notes. C git's
/// `notes show` is asked too, so the two cannot agree on a layout git does not use.
#[test]
fn a_note_is_found_flat_or_in_fan_out_directories() {
    let f = Fixture::new();
    let repo = Repo::discover(&f.root).unwrap();
    let commit = f.head();
    let notes_ref = "refs/notes/fanout-test";
    assert_eq!(repo.note(notes_ref, &commit).unwrap(), None, "no ref yet");
    // a git plumbing command fed `input`, its one-line answer
    let piped = |args: &[&str], input: &str| {
        let out = support::with_input(f.program("git", &f.root).args(args), input);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let hash = |text: &str| piped(&["hash-object", "-w", "--stdin"], text);
    let mktree = |entries: &str| piped(&["mktree"], entries);
    for levels in 0..3 {
        let text = format!("evidence filed {levels} directories deep\n");
        let mut tree = mktree(&format!(
            "100644 blob {}\t{}\n",
            hash(&text),
            &commit[2 * levels..]
        ));
        for level in (0..levels).rev() {
            tree = mktree(&format!(
                "040000 tree {tree}\t{}\n",
                &commit[2 * level..2 * level + 2]
            ));
        }
        let notes = f.git(&["commit-tree", "-m", "notes", &tree]);
        f.git(&["update-ref", notes_ref, notes.trim()]);
        assert_eq!(f.git(&["notes", "--ref", notes_ref, "show", &commit]), text);
        assert_eq!(
            repo.note(notes_ref, &commit).unwrap().as_deref(),
            Some(text.as_bytes()),
            "{levels} levels"
        );
        // another commit's note is not this one's
        let other = f.git(&[
            "commit-tree",
            "-m",
            "other",
            &format!("{}^{{tree}}", commit),
        ]);
        assert_eq!(repo.note(notes_ref, other.trim()).unwrap(), None);
    }
}

/// What `verify` reads of every commit at once is what `git diff --name-only` says of each against its
/// first parent: an edit, an empty commit, a merge (its first parent only), a root commit (all its
/// paths), and paths git quotes, that spell a commit's id or that begin with a colon.
#[test]
fn the_paths_of_many_commits_are_git_diffs_of_each() {
    let f = Fixture::new();
    let commit_all = |message: &str| {
        f.git(&["add", "-A"]);
        f.git(&["commit", "-q", "--allow-empty", "-m", message]);
        f.head()
    };
    let first = f.head();
    std::fs::write(f.path("a b\nc.py"), "x").unwrap();
    std::fs::write(f.path(&first), "a path that spells a commit's id").unwrap();
    std::fs::write(
        f.path(":colon.py"),
        "a path that begins as git's change lines do",
    )
    .unwrap();
    let edit = commit_all("edit");
    let empty = commit_all("empty");
    f.git(&["checkout", "-q", "-b", "side", &first]);
    std::fs::write(f.path("side.py"), "y").unwrap();
    commit_all("side");
    f.git(&["checkout", "-q", "-"]);
    f.git(&["merge", "-q", "--no-ff", "-m", "merge", "side"]);
    let merge = f.head();
    f.git(&["checkout", "-q", "--orphan", "alone"]);
    let root = commit_all("root");
    let commits = [edit, empty, merge, root.clone(), first.clone()];
    let repo = Repo::discover(&f.root).unwrap();
    let changed = repo.changed_by_commits(&commits).unwrap();
    const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    for (commit, changed) in commits.iter().zip(&changed) {
        // a root commit (the orphan, and the fixture's first) against the empty tree
        let from = match [&root, &first].contains(&commit) {
            true => EMPTY_TREE.to_string(),
            false => format!("{commit}^"),
        };
        assert_eq!(
            changed,
            &repo.changed_between(&from, commit).unwrap(),
            "{commit}"
        );
    }
    assert_eq!(changed[1], Vec::<String>::new(), "the empty commit");
    assert_eq!(
        changed[2],
        vec!["side.py".to_string()],
        "the merge, against its first parent"
    );
    assert!(changed[0].contains(&first), "{:?}", changed[0]);
}

/// The tool's files are placed where git places them, from one answer of git's, in the main work tree
/// and in a linked one (whose own git dir is under `worktrees/`).
#[test]
fn the_tools_files_are_where_git_puts_them() {
    let f = Fixture::new();
    let linked = f.path("../linked tree");
    f.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        linked.to_str().unwrap(),
    ]);
    for dir in [f.root.clone(), linked] {
        let repo = Repo::discover(&dir).unwrap();
        for name in [
            "cutile-perf/workers/lasting-all.json",
            "cutile-perf-commit-nonce",
            "cutile-perf",
            "info/grafts",
        ] {
            let git = f.run_in(
                &dir,
                "git",
                &["rev-parse", "--path-format=absolute", "--git-path", name],
            );
            let expected = String::from_utf8(git.stdout).unwrap();
            assert_eq!(
                repo.git_path(name).unwrap(),
                std::path::Path::new(expected.trim_end()),
                "{name} in {}",
                dir.display()
            );
        }
    }
}
