//! What the guard cannot see is refused before anything is created: ignored files pytest loads, odd
//! repositories, arguments that would never match, links out of the repository.

use crate::support;

use std::os::unix::fs::symlink;
use std::path::Path;

use support::*;

/// `start` is refused, and nothing is made: no session branch, HEAD and the work tree as they were.
#[track_caller]
fn start_refused(f: &Fixture, args: &[&str], expected: &str) {
    let head = |f: &Fixture| {
        text(
            &f.run_in(&f.root, "git", &["rev-parse", "-q", "--verify", "HEAD"])
                .stdout,
        )
    };
    let before = head(f);
    let status = f.status();
    let mut full = vec!["start", "vector_add"];
    full.extend_from_slice(args);
    let err = f.fails(&full);
    assert!(err.contains(expected), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-*"]), "");
    assert_eq!(head(f), before);
    assert_eq!(f.status(), status);
}

/// The fixture's files in a repository made by `git init <init_args>`, nothing committed.
fn uncommitted(init_args: &[&str]) -> Fixture {
    let f = Fixture::empty();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tilegym"),
        &f.root,
    );
    let mut args = vec!["init", "-q", "-b", "main"];
    args.extend_from_slice(init_args);
    f.git(&args);
    f
}

#[test]
fn an_ignored_conftest_appearing_after_the_baseline_is_refused() {
    let f = Fixture::new();
    f.append(".git/info/exclude", "conftest.py\n");
    f.start();
    let head = f.head();
    f.write(
        "tests/ops/conftest.py",
        "def pytest_configure(config):\n    pass  # would scale every latency\n",
    );
    f.set_latency(0.2, 2.0);
    let err = f.fails(&["step", "--opt", "none", "no-op"]);
    assert!(
        err.contains("tests/ops/conftest.py (new or changed)"),
        "{err}"
    );
    assert_eq!(f.head(), head);
    // gone again, the step runs
    std::fs::remove_file(f.path("tests/ops/conftest.py")).unwrap();
    assert_eq!(f.step_json(&["slower"])["status"], "revert");
}

#[test]
fn odd_arguments_are_refused() {
    let f = Fixture::new();
    f.write("tests/ops/test_untracked.py", "def test_x():\n    pass\n");
    start_refused(
        &f,
        &["--test", "tests/ops/test_untracked.py"],
        "is not tracked by git",
    );
    start_refused(&f, &["--allow", "."], "--allow . is a directory");
    start_refused(
        &f,
        &["--allow", "src/tilegym"],
        "--allow src/tilegym is a directory",
    );
    start_refused(
        &f,
        &["--allow", ".git/config"],
        "--allow .git/config is inside git's own directory",
    );
    start_refused(
        &f,
        &["--continue-pct", "1", "--gain-pct", "5"],
        "--continue-pct 1 is below --gain-pct 5",
    );
}

/// A clone of `f` cut to its last commit on `branch` (CI's default).
fn shallow_clone(f: &Fixture, branch: &str) -> Fixture {
    let clone = Fixture::empty();
    let url = format!("file://{}", f.root.display());
    clone.git(&["clone", "-q", "--depth", "1", "--branch", branch, &url, "."]);
    clone
}

#[test]
fn a_shallow_clone_is_refused_up_front_and_a_cut_record_says_so() {
    let f = Fixture::new();
    let shallow = shallow_clone(&f, "main");
    let err = shallow.fails(&["start", "vector_add"]);
    assert!(
        err.contains("this clone is shallow") && err.contains("git fetch --unshallow"),
        "{err}"
    );
    assert_eq!(shallow.git(&["branch", "--list", "cutile-perf-*"]), "");
    // a session whose baseline lies past the cut: every reader says so, none prints git's raw error
    f.session("cutile-perf-x", &[KERNEL]);
    f.git(&[
        "commit",
        "-q",
        "--allow-empty",
        "--no-verify",
        "-m",
        "later",
    ]);
    let cut = shallow_clone(&f, "cutile-perf-x");
    for verb in ["status", "verify", "table"] {
        let err = cut.fails(&[verb]);
        assert!(
            err.contains("this clone is shallow") && err.contains("git fetch --unshallow"),
            "{verb}: {err}"
        );
        assert!(!err.contains("could not be found"), "{verb}: {err}");
    }
}

#[test]
fn an_empty_description_is_refused() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    f.set_latency(0.05, 0.5);
    for description in ["", " \n\t "] {
        let err = f.fails(&["step", "--opt", "none", description]);
        assert!(err.contains("the description is empty"), "{err}");
        assert!(err.contains("hint:"), "{err}");
    }
    assert_eq!(f.head(), head);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

#[test]
fn odd_repositories_are_refused() {
    // a tracked scratch file
    let f = Fixture::new();
    f.write("sandbox/perf_results.md", "old\n");
    f.git(&["add", "-f", "sandbox"]);
    f.git(&["commit", "-qm", "results"]);
    start_refused(
        &f,
        &[],
        "sandbox/ holds tracked files (sandbox/perf_results.md)",
    );

    // the scratch directory a link out of the repository
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), f.path("sandbox")).unwrap();
    start_refused(&f, &[], "sandbox is a symbolic link");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // hooks in a tracked directory
    let f = Fixture::new();
    f.write("githooks/README", "team hooks\n");
    f.git(&["add", "githooks"]);
    f.git(&["commit", "-qm", "hooks"]);
    f.git(&["config", "core.hooksPath", "githooks"]);
    start_refused(
        &f,
        &[],
        "core.hooksPath points at githooks, a tracked directory",
    );

    // no commit yet
    let f = uncommitted(&[]);
    start_refused(&f, &[], "the repository has no commit yet");
}

#[test]
#[cfg_attr(
    git_without_reftable,
    ignore = "needs git 2.45 or newer (init --ref-format=reftable); the git on PATH at build time is older"
)]
fn reftable_repositories_get_no_hook() {
    let f = uncommitted(&["--ref-format=reftable"]);
    f.git(&["add", "-A"]);
    f.git(&["commit", "-qm", "fixture"]);
    let err = f.fails(&["hook", "install"]);
    assert!(err.contains("reftable"), "{err}");
    assert!(!f.hooks().join("pre-commit").exists());
    start_refused(&f, &[], "reftable");
    // commits on main still work
    f.write("notes.txt", "x\n");
    f.git(&["add", "notes.txt"]);
    f.git(&["commit", "-qm", "notes"]);
}

#[test]
fn a_test_file_that_is_a_link_out_of_the_repository_is_refused() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let copy = outside.path().join("test_vector_add.py");
    std::fs::copy(f.path(TEST), &copy).unwrap();
    std::fs::remove_file(f.path(TEST)).unwrap();
    symlink(&copy, f.path(TEST)).unwrap();
    f.git(&["add", TEST]);
    f.git(&["commit", "-qm", "the test kept elsewhere"]);
    start_refused(
        &f,
        &["--test", TEST],
        &format!("the test file {TEST} is a symbolic link"),
    );
}

#[test]
fn a_kernel_replaced_by_a_link_is_refused() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    let outside = tempfile::tempdir().unwrap();
    let copy = outside.path().join("vector_add.py");
    std::fs::copy(f.path(KERNEL), &copy).unwrap();
    std::fs::remove_file(f.path(KERNEL)).unwrap();
    symlink(&copy, f.path(KERNEL)).unwrap();
    let err = f.fails(&["step", "--opt", "none", "linked"]);
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(f.head(), head);
}

#[test]
fn a_separate_git_dir_works() {
    let temp = tempfile::tempdir().unwrap();
    let git_dir = temp.path().join("elsewhere.git");
    let f = uncommitted(&["--separate-git-dir", git_dir.to_str().unwrap()]);
    f.git(&["add", "-A"]);
    f.git(&["commit", "-qm", "fixture"]);
    f.start();
    f.set_latency(0.05, 0.5);
    assert_eq!(f.step_json(&["faster"])["status"], "keep");
    assert!(git_dir.join("cutile-perf").is_dir());
    // the hook still guards the session
    f.write("README.extra", "x\n");
    f.git(&["add", "README.extra"]);
    assert!(!f.commit().status.success());
}

#[test]
fn a_git_older_than_the_oldest_supported_is_refused() {
    let f = Fixture::new();
    let dir = f.root.parent().unwrap().join("old-git");
    std::fs::create_dir_all(&dir).unwrap();
    let real = which::which("git").unwrap();
    let fake = dir.join("git");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'git version 2.30.2'; exit 0; }}\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = f
        .command(&["status"])
        .env("PATH", format!("{}:{}", dir.display(), *SEARCH_PATH))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("git version 2.30.2 is too old: git cutile-perf needs git 2.39 or newer"),
        "{err}"
    );
    assert!(err.contains("hint: nothing was changed"), "{err}");
}

#[test]
fn a_python_without_pytest_at_step_is_refused_not_recorded() {
    let f = Fixture::new();
    f.start();
    let head = f.head();
    f.set_latency(0.09, 0.9);
    // the session's `python3` now one without pytest (a virtual environment left off PATH)
    let bare = f.path("../bare-python");
    write_script(
        &bare.join("python3"),
        "#!/bin/sh\necho \"$0: No module named pytest\" >&2\nexit 1\n",
    );
    let path = format!(
        "{}:{}:{}",
        bare.display(),
        BIN.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let out = f
        .command(&["step", "--opt", "none", "tile size 256"])
        .env("PATH", path)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("the tests cannot start, so nothing was recorded")
            && err.contains("No module named pytest")
            && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(f.head(), head);
    assert!(f.status().contains(KERNEL));
}

#[test]
fn a_python_path_with_spaces_is_given_quoted() {
    let f = Fixture::new();
    let python = f.path("../my env/bin/python3");
    write_script(&python, "#!/bin/sh\nexec python3 \"$@\"\n");
    let python = python.display().to_string();
    start_refused(
        &f,
        &["--python", &format!("'{python}")],
        "has an unclosed quote",
    );
    f.ok(&["start", "vector_add", "--python", &format!("'{python}' -B")]);
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Python"),
        format!("'{python}' -B")
    );
    f.set_latency(0.05, 0.5);
    assert_eq!(f.step_json(&["faster"])["status"], "keep");
}

/// A session started while another session's branch is checked out would carry that session's commits
/// and kernel change: refused, naming the branch both started from.
#[test]
fn a_session_is_not_started_on_another_sessions_branch() {
    let f = Fixture::new();
    f.start();
    let branch = f.branch();
    let head = f.head();
    let err = f.fails(&["start", "swish"]);
    assert!(
        err.contains(&format!("{branch} is a cutile-perf session branch")),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: check out the branch it started from (`git checkout main`), then start again"
        ),
        "{err}"
    );
    assert_eq!(f.head(), head);
    assert_eq!(f.branch(), branch);
    assert_eq!(f.git(&["branch", "--list", "cutile-perf-swish*"]), "");
}
