//! Sessions beside one another in one repository: linked worktrees writing evidence notes at once, and
//! a session branch renamed as `start`'s hint says.

use crate::support::Fixture;

use git_cutile_perf::record::evidence::{Evidence, NOTES_REF};
use git_cutile_perf::system::git::Repo;

/// How many notes each worktree writes.
const NOTES_EACH: usize = 25;

/// `count` commits on top of HEAD in `dir`, made without a branch (the session's hook is not asked).
fn loose_commits(f: &Fixture, dir: &std::path::Path, count: usize) -> Vec<String> {
    (0..count)
        .map(|n| {
            let out = f.run_in(
                dir,
                "git",
                &[
                    "commit-tree",
                    "HEAD^{tree}",
                    "-p",
                    "HEAD",
                    "-m",
                    &format!("noted {n} in {}", dir.display()),
                ],
            );
            assert!(out.status.success(), "{}", crate::support::both(&out));
            crate::support::text(&out.stdout).trim().to_string()
        })
        .collect()
}

#[test]
fn two_worktrees_writing_evidence_notes_at_once_lose_none() {
    let f = Fixture::new();
    f.start();
    let baseline = f.head();
    let listed = f.git(&["notes", "--ref", NOTES_REF, "list", &baseline]);
    let blob = listed.trim().to_string();
    let before = f
        .git(&["notes", "--ref", NOTES_REF, "list"])
        .lines()
        .count();
    let apart = tempfile::tempdir().unwrap();
    let linked = apart.path().join("linked");
    f.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "beside",
        linked.to_str().unwrap(),
        &baseline,
    ]);

    let writers: Vec<_> = [f.root.clone(), linked]
        .into_iter()
        .map(|dir| {
            let commits = loose_commits(&f, &dir, NOTES_EACH);
            let blob = blob.clone();
            std::thread::spawn(move || {
                let repo = Repo::discover(&dir).unwrap();
                for commit in &commits {
                    Evidence::attach_stashed(&repo, &blob, commit).unwrap();
                }
                commits
            })
        })
        .collect();
    let written: Vec<String> = writers
        .into_iter()
        .flat_map(|writer| writer.join().unwrap())
        .collect();

    let noted = f.git(&["notes", "--ref", NOTES_REF, "list"]);
    let lost: Vec<&String> = (written.iter())
        .filter(|commit| !noted.contains(commit.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} notes lost",
        lost.len(),
        written.len()
    );
    assert_eq!(noted.lines().count(), before + 2 * NOTES_EACH, "{noted}");
    // no scratch ref of the writes is left
    let refs = f.git(&["for-each-ref", "--format=%(refname)", "refs/notes/"]);
    assert_eq!(refs, format!("{NOTES_REF}\n"));
}

#[test]
fn a_session_branch_renamed_as_starts_hint_says_keeps_its_session() {
    let f = Fixture::new();
    let main = f.branch();
    f.start();
    let branch = f.session_branch();
    let renamed = format!("{branch}-old");
    f.git(&["checkout", "-q", &main]);
    let refused = f.fails(&["start", "vector_add"]);
    assert!(
        refused.contains(&format!("git branch -m {branch} {renamed}")),
        "{refused}"
    );
    f.git(&["branch", "-m", &branch, &renamed]);
    f.git(&["checkout", "-q", &renamed]);
    let verified = f.ok(&["verify"]);
    assert!(verified.contains("the record holds"), "{verified}");
    assert_eq!(
        f.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/cutile-perf/baseline/"
        ]),
        format!("refs/cutile-perf/baseline/{renamed}\n")
    );
    f.set_latency(0.09, 0.9);
    assert_eq!(f.step_json(&["tile size 256"])["status"], "keep");

    // a session started afresh under the old name, then the renamed one again: both hold
    f.git(&["checkout", "-q", &main]);
    f.ok(&["start", "vector_add"]);
    assert!(f.ok(&["verify"]).contains("the record holds"));
    f.git(&["checkout", "-q", &renamed]);
    assert!(f.ok(&["verify"]).contains("the record holds"));
    let both = f.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/cutile-perf/baseline/",
    ]);
    assert_eq!(
        both,
        format!("refs/cutile-perf/baseline/{branch}\nrefs/cutile-perf/baseline/{renamed}\n")
    );
}

#[test]
fn a_renamed_branch_with_the_old_name_started_afresh_before_any_verb_keeps_its_ref() {
    let f = Fixture::new();
    let main = f.branch();
    f.start();
    let branch = f.session_branch();
    let renamed = format!("{branch}-old");
    let old_baseline = f.head();
    f.git(&["checkout", "-q", &main]);
    f.git(&["branch", "-m", &branch, &renamed]);
    // main moved on since: the new baseline is another commit
    f.git(&["commit", "-q", "--allow-empty", "-m", "main moves on"]);
    f.ok(&["start", "vector_add"]);
    assert_eq!(
        f.git(&["rev-parse", &format!("refs/cutile-perf/baseline/{renamed}")])
            .trim(),
        old_baseline
    );
    f.git(&["checkout", "-q", &renamed]);
    assert!(f.ok(&["verify"]).contains("the record holds"));
}
