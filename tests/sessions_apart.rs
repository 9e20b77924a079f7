//! Sessions beside one another in one repository: linked worktrees writing evidence notes at once, and
//! a session branch renamed as `start`'s hint says.

use crate::support::hang::Hang;
use crate::support::{Fixture, both, text};

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
            assert!(out.status.success(), "{}", both(&out));
            text(&out.stdout).trim().to_string()
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

/// A linked worktree of `f` at `path`, HEAD checked out detached.
fn detached_worktree(f: &Fixture, path: &std::path::Path) -> std::path::PathBuf {
    f.git(&["worktree", "add", "-q", "--detach", path.to_str().unwrap()]);
    path.to_path_buf()
}

/// How many worktrees install the hooks at once, and how many times.
const INSTALLERS: usize = 6;
const INSTALL_ROUNDS: usize = 5;

#[test]
fn worktrees_installing_the_hooks_at_once_install_them_once() {
    let f = Fixture::new();
    let apart = tempfile::tempdir().unwrap();
    let trees: Vec<std::path::PathBuf> = (0..INSTALLERS)
        .map(|n| detached_worktree(&f, &apart.path().join(format!("linked-{n}"))))
        .collect();
    for round in 0..INSTALL_ROUNDS {
        let _ = std::fs::remove_dir_all(f.hooks());
        let installers: Vec<_> = (trees.iter())
            .map(|tree| {
                (f.command(&["hook", "install"]).current_dir(tree))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for installer in installers {
            let out = installer.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}: {}", both(&out));
        }
        // one of ours in place, none set aside as if it were the user's
        let hook = std::fs::read_to_string(f.hooks().join("pre-commit")).unwrap();
        assert!(hook.contains("cutile-perf-hook-marker"), "round {round}");
        let hooks: Vec<String> = (std::fs::read_dir(f.hooks()).unwrap())
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains("cutile-perf"))
            .collect();
        assert!(hooks.is_empty(), "round {round}: {hooks:?}");
    }
}

#[test]
fn a_start_undone_beside_another_worktrees_session_leaves_it_the_shared_hooks() {
    let f = Fixture::new();
    let apart = tempfile::tempdir().unwrap();
    let linked = detached_worktree(&f, &apart.path().join("linked"));
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    f.git(&["commit", "-qam", "hang"]);
    // this worktree's start installs the hooks and hangs in its baseline; the linked one's starts a
    // session meanwhile, the hooks already there; then the first is interrupted and undone
    let hang = Hang::new();
    let out = hang.when_hanging(&f, &["start", "vector_add"], |tool| {
        let beside = f
            .command(&["start", "swish"])
            .current_dir(&linked)
            .output()
            .unwrap();
        assert!(beside.status.success(), "{}", both(&beside));
        // SAFETY: a plain kill(2) of the child, still unreaped
        unsafe { libc::kill(tool.id() as i32, libc::SIGINT) };
    });
    let said = both(&out);
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(
        f.git(&["branch", "--show-current"]).starts_with("main"),
        "{said}"
    );
    // the session beside is still guarded, and its sandbox still out of git's sight
    let hook = std::fs::read_to_string(f.hooks().join("pre-commit")).unwrap();
    assert!(hook.contains("cutile-perf-hook-marker"), "{said}");
    let status = f.run_in(&linked, "git", &["status", "--porcelain"]);
    assert_eq!(text(&status.stdout), "", "{said}");
    let setup = linked.join("setup.py");
    let changed = std::fs::read_to_string(&setup).unwrap() + "# x\n";
    std::fs::write(&setup, changed).unwrap();
    assert!(
        f.run_in(&linked, "git", &["add", "setup.py"])
            .status
            .success()
    );
    assert!(!f.commit_in(&linked, &[]).status.success(), "{said}");
}
