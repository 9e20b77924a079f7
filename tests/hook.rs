//! The pre-commit hook with real git: one test per case of the rule, each in a fresh repository built
//! from `fixtures/tilegym/`, with git's configuration sealed off from the machine's. The session is the
//! one `start` writes, made without running the tests (`Fixture::session`), except where a test needs
//! `start` or `step` themselves.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use support::{Fixture, KERNEL, TEST, both};

const BRANCH: &str = "cutile-perf-vector_add-20260101";

#[track_caller]
fn assert_passes(out: &Output) {
    assert!(
        out.status.success(),
        "the commit was refused:\n{}",
        both(out)
    );
}

/// The commit was refused, and the message names each of `paths` with its unstage command.
#[track_caller]
fn assert_rejects(out: &Output, paths: &[(&str, &str)]) {
    let shown = both(out);
    assert!(!out.status.success(), "the commit went through:\n{shown}");
    assert!(
        shown.contains("outside the session's allowed set"),
        "unexpected failure:\n{shown}"
    );
    for (path, unstage) in paths {
        let spec = from_top(path);
        assert!(
            shown.contains(&format!("\n  {path}\n      unstage: {unstage} -- {spec}\n")),
            "{path} is not named with `{unstage} -- {spec}`:\n{shown}"
        );
    }
    let named = shown.matches("unstage: ").count();
    assert_eq!(named, paths.len(), "other paths were named:\n{shown}");
}

/// A shell-quoted path as the `:/` pathspec the hint gives, which works from any subdirectory.
fn from_top(quoted: &str) -> String {
    for open in ["$'", "'"] {
        if let Some(rest) = quoted.strip_prefix(open) {
            return format!("{open}:/{rest}");
        }
    }
    format!(":/{quoted}")
}

const RESTORE: &str = "git restore --staged";
const RM: &str = "git rm -q --cached";

#[test]
fn editing_the_kernel_is_allowed() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", KERNEL]);
    assert_passes(&repo.tool_commit());
}

#[test]
fn a_hand_commit_of_an_allowed_path_is_refused_for_step() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", KERNEL]);
    let out = repo.commit();
    assert!(!out.status.success(), "the commit went through");
    let shown = both(&out);
    assert!(
        shown.contains("is not one git cutile-perf makes"),
        "{shown}"
    );
    assert!(
        shown.contains("hint: nothing was committed and your change is still in the work tree: record it with `git cutile-perf step"),
        "{shown}"
    );
    // like every other suggested step command, it carries the cause to fill in
    assert!(shown.contains("--opt <LETTER> --cause <CAUSE>"), "{shown}");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head);
}

#[test]
fn editing_a_test_file_is_rejected() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    let before = repo.head();
    repo.append(TEST, "# weaker test\n");
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[(TEST, RESTORE)]);
    assert_eq!(repo.head(), before);
}

#[test]
fn editing_the_benchmark_harness_or_setup_py_is_rejected() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    for (path, line) in [
        ("tests/common.py", "# report less\n"),
        ("setup.py", "# other flags\n"),
    ] {
        repo.append(path, line);
        repo.git(&["add", "-A"]);
        assert_rejects(&repo.commit(), &[(path, RESTORE)]);
        repo.git(&["reset", "-q", "--hard"]);
    }
}

#[test]
fn a_new_file_next_to_the_kernel_is_rejected() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.write("src/tilegym/ops/cutile/vector_add_fast.py", "x = 1\n");
    repo.git(&["add", "-A"]);
    assert_rejects(
        &repo.commit(),
        &[("src/tilegym/ops/cutile/vector_add_fast.py", RM)],
    );
}

#[test]
fn renames_are_checked_on_both_sides() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    // allowed -> disallowed: the kernel's deletion alone would pass, its new name may not
    let moved = "src/tilegym/ops/cutile/vector_add_v2.py";
    repo.git(&["mv", KERNEL, moved]);
    assert_rejects(&repo.commit(), &[(moved, RM)]);
    repo.git(&["mv", moved, KERNEL]);
    // and back: a disallowed file renamed onto the kernel's path hides its deletion in the rename
    repo.git(&["rm", "-q", KERNEL]);
    repo.git(&["mv", "tests/common.py", KERNEL]);
    assert_rejects(&repo.commit(), &[("tests/common.py", RESTORE)]);
}

#[test]
fn deleting_a_test_is_rejected() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.git(&["rm", "-q", TEST]);
    assert_rejects(&repo.commit(), &[(TEST, RESTORE)]);
}

#[test]
fn force_adding_the_sandbox_is_rejected() {
    let repo = Fixture::new();
    // even if the sandbox were named as allowed
    repo.session(BRANCH, &[KERNEL, "sandbox/perf_results.md"]);
    repo.write("sandbox/perf_results.md", "| made up |\n");
    repo.git(&["add", "-f", "sandbox/perf_results.md"]);
    assert_rejects(&repo.commit(), &[("sandbox/perf_results.md", RM)]);
}

#[test]
fn paths_with_spaces_newlines_and_non_ascii_are_compared_exactly() {
    let repo = Fixture::new();
    let allowed = ["src/k k.py", "src/new\nline.py", "src/caf\u{e9}.py"];
    for path in allowed {
        repo.write(path, "v = 1\n");
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "odd names"]);
    repo.session(BRANCH, &allowed);
    for path in allowed {
        repo.append(path, "v = 2\n");
    }
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit());

    // the same names decomposed (NFD), case-folded, doubled space, dotted: all different paths
    for path in [
        "src/cafe\u{301}.py",
        "src/CAF\u{c9}.py",
        "src/k  k.py",
        "src/./k k.py",
        "src/new\nline.py ",
    ] {
        repo.write(path, "v = 3\n");
    }
    repo.git(&["add", "-A"]);
    assert_rejects(
        &repo.commit(),
        &[
            ("'src/CAF\u{c9}.py'", RM),
            ("'src/cafe\u{301}.py'", RM),
            ("'src/k  k.py'", RM),
            ("$'src/new\\nline.py '", RM),
        ],
    );
    // git itself normalises `src/./k k.py` to the allowed path: it is no bypass
    assert!(!repo.git(&["ls-files", "-z"]).contains("src/./"));
}

#[test]
fn a_mode_change_is_a_change() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    let harness = repo.root.join("tests/common.py");
    fs::set_permissions(&harness, fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[("tests/common.py", RESTORE)]);
    repo.git(&["reset", "-q"]);
    fs::set_permissions(&harness, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(repo.root.join(KERNEL), fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit());
}

#[test]
fn a_symlink_is_judged_by_its_own_path() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    // at the allowed path, pointing at the tests: only the kernel's path changes
    let kernel = repo.root.join(KERNEL);
    fs::remove_file(&kernel).unwrap();
    std::os::unix::fs::symlink("../../../../tests/common.py", &kernel).unwrap();
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit());
    // elsewhere, pointing at the kernel: a new disallowed path
    std::os::unix::fs::symlink(
        "../src/tilegym/ops/cutile/vector_add.py",
        repo.root.join("tests/k.py"),
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[("tests/k.py", RM)]);
}

#[test]
fn a_submodule_pointer_change_is_rejected_even_when_config_ignores_submodules() {
    let repo = Fixture::new();
    let sub = repo.root.join("third_party/lib");
    fs::create_dir_all(&sub).unwrap();
    let in_sub = |args: &[&str]| {
        let out = repo.run_in(&sub, "git", args);
        assert!(out.status.success(), "{}", both(&out));
    };
    in_sub(&["init", "-q", "-b", "main"]);
    in_sub(&["commit", "-q", "--allow-empty", "-m", "one"]);
    repo.git(&["add", "third_party/lib"]);
    repo.git(&["commit", "-q", "-m", "a submodule"]);
    repo.start();
    repo.git(&["config", "diff.ignoreSubmodules", "all"]);
    in_sub(&["commit", "-q", "--allow-empty", "-m", "two"]);
    repo.git(&["add", "third_party/lib"]);
    assert_rejects(&repo.commit(), &[("third_party/lib", RESTORE)]);

    // step sees it too: unstaged, and committed past the hook
    repo.git(&["reset", "-q"]);
    let out = repo.run(&["step", "--opt", "none", "x"]);
    assert!(
        both(&out).contains("only the session's allowed paths may change"),
        "{}",
        both(&out)
    );
    repo.git(&["add", "third_party/lib"]);
    // git before 2.4x leaves a staged submodule out of a commit under `ignoreSubmodules=all`: this
    // commit alone looks with the default, so the test reads the same on every git
    repo.git(&[
        "-c",
        "diff.ignoreSubmodules=none",
        "commit",
        "-q",
        "--no-verify",
        "-m",
        "sneaky",
    ]);
    repo.append(KERNEL, "# faster\n");
    let out = repo.run(&["step", "--opt", "none", "faster"]);
    assert!(
        both(&out).contains("the session history broke the rule"),
        "{}",
        both(&out)
    );
    assert!(both(&out).contains("third_party/lib"));
}

#[test]
fn a_linked_worktree_is_checked_with_its_own_branch_and_index() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.git(&["checkout", "-q", "main"]);
    let wt = repo.root.parent().unwrap().join("linked wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        &repo.session_branch(),
    ]);
    fs::write(wt.join(TEST), "# weaker\n").unwrap();
    assert!(repo.run_in(&wt, "git", &["add", "-A"]).status.success());
    assert_rejects(&repo.commit_in(&wt, &[]), &[(TEST, RESTORE)]);
    // the main work tree is off the session branch: anything goes there
    repo.append(TEST, "# fine on main\n");
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit());
}

#[test]
fn core_hooks_path_is_honoured() {
    let repo = Fixture::new();
    repo.git(&["config", "core.hooksPath", "my hooks"]);
    repo.start();
    assert!(repo.root.join("my hooks/pre-commit").exists());
    assert!(!repo.hooks().join("pre-commit").exists());
    repo.append("setup.py", "# x\n");
    repo.git(&["add", "setup.py"]);
    assert_rejects(&repo.commit(), &[("setup.py", RESTORE)]);
}

#[test]
fn a_hooks_directory_other_repositories_share_is_left_alone() {
    let repo = Fixture::new();
    let shared = tempfile::tempdir().unwrap();
    let canonical = shared.path().canonicalize().unwrap();
    let dir = canonical.to_str().unwrap();
    repo.git(&["config", "--global", "core.hooksPath", dir]);
    // another repository's guard, installed there by an earlier version
    let guard = "#!/bin/sh\n# cutile-perf-hook-marker: 7c1e9d04-b1a2-4f33-9a5e-cutile-perf\n";
    fs::write(shared.path().join("pre-commit"), guard).unwrap();
    let listing = || {
        let mut names: Vec<_> = fs::read_dir(shared.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    for args in [
        &["start", "vector_add"][..],
        &["hook", "install"],
        &["hook", "uninstall"],
    ] {
        let err = repo.fails(args);
        assert!(
            err.contains(&format!(
                "core.hooksPath points at {dir}, outside this repository"
            )) && err.contains("git config core.hooksPath"),
            "{args:?}: {err}"
        );
        assert_eq!(listing(), before, "{args:?}");
    }
    assert_eq!(
        fs::read_to_string(shared.path().join("pre-commit")).unwrap(),
        guard
    );
    assert_eq!(repo.git(&["branch", "--list", "cutile-perf-*"]), "");
}

#[test]
fn commits_from_a_subdirectory_are_checked_with_repository_paths() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    let dir = repo.root.join("src/tilegym");
    repo.append(TEST, "# weaker\n");
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit_in(&dir, &[]), &[(TEST, RESTORE)]);
    repo.git(&["reset", "-q", "--hard"]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit_in(&dir, &[]));
}

#[test]
fn commit_all_and_commit_with_paths_use_the_index_git_prepares() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.append(TEST, "# weaker\n");
    repo.append(KERNEL, "# faster\n");
    // nothing staged: `-a` and `-- path` stage into a temporary index that the hook must read
    assert_rejects(&repo.commit_in(&repo.root, &["-a"]), &[(TEST, RESTORE)]);
    assert_rejects(
        &repo.commit_in(&repo.root, &["--", TEST]),
        &[(TEST, RESTORE)],
    );
    assert_passes(&repo.tool_commit_in(&repo.root, &["--", KERNEL]));
}

#[test]
fn off_a_session_branch_the_hook_lets_everything_through() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.git(&["checkout", "-q", "main"]);
    repo.append(TEST, "# weaker\n");
    repo.write("sandbox/x", "x\n");
    repo.git(&["add", "-f", "-A"]);
    assert_passes(&repo.commit());
}

#[test]
fn a_session_branch_without_a_baseline_allows_nothing() {
    let repo = Fixture::new();
    repo.ok_all(&["hook", "install"]);
    repo.git(&["checkout", "-q", "--orphan", BRANCH]);
    repo.git(&["rm", "-r", "-q", "--cached", "."]);
    repo.write("only.py", "x\n");
    repo.git(&["add", "only.py"]);
    assert_rejects(&repo.commit(), &[("only.py", RM)]);
}

#[test]
fn without_the_binary_the_hook_refuses_only_on_a_session_branch() {
    let mut repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.hide_tool();
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    let out = repo.commit();
    assert!(!out.status.success());
    assert!(
        both(&out).contains("git-cutile-perf is not on PATH"),
        "{}",
        both(&out)
    );
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["reset", "-q", "--hard"]);
    repo.append(TEST, "# on main\n");
    repo.git(&["add", "-A"]);
    assert_passes(&repo.commit());
    // the hint works without the tool: the command it names removes the hook
    repo.git(&["checkout", "-q", &repo.session_branch()]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    let hint = both(&repo.commit());
    let remove = hint
        .split("remove the hook: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("{hint}"));
    let removed = repo.run_in(&repo.root, "sh", &["-c", remove]);
    assert!(removed.status.success(), "{}", both(&removed));
    assert_passes(&repo.commit());
}

#[test]
fn install_is_idempotent_and_status_reports_it() {
    let repo = Fixture::new();
    let status = || -> serde_json::Value {
        serde_json::from_str(&repo.ok_all(&["hook", "status", "--json"])).unwrap()
    };
    assert_eq!(status()["installed_as"], serde_json::Value::Null);
    repo.ok_all(&["hook", "install"]);
    let hook = fs::read(repo.hooks().join("pre-commit")).unwrap();
    assert!(
        repo.ok_all(&["hook", "install"])
            .contains("already installed")
    );
    assert_eq!(fs::read(repo.hooks().join("pre-commit")).unwrap(), hook);
    assert_eq!(hook, include_bytes!("../hooks/pre-commit"));
    assert!(!repo.hooks().join("pre-commit.cutile-perf-orig").exists());
    let state = status();
    assert_eq!(state["installed_as"], "pre-commit");
    assert_eq!(state["current"], true);
    assert_eq!(state["chained"], serde_json::Value::Null);
    assert_eq!(state["commit_msg_current"], true);
    assert!(
        repo.ok(&["hook", "status"])
            .contains("commit-msg hook installed as ")
    );
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(status()["commit_msg_current"], serde_json::Value::Null);
    assert!(!repo.hooks().join("pre-commit").exists());
    assert!(
        repo.ok_all(&["hook", "uninstall"])
            .contains("not installed")
    );
}

/// A stand-in for the pre-commit framework's hook script: its marker lines, and its behaviour of
/// running `pre-commit.legacy` first with PRE_COMMIT_RUNNING_LEGACY=1 and aborting if it is itself
/// run that way. It logs each run to `framework.log` in the hooks directory.
const FRAMEWORK: &str = "#!/usr/bin/env bash\n\
# File generated by pre-commit: https://pre-commit.com\n\
# ID: 138fd403232d2ddd5efb44317e38bf03\n\
HERE=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n\
if [ -n \"$PRE_COMMIT_RUNNING_LEGACY\" ]; then\n\
  echo \"bug: pre-commit's script is installed in migration mode\" >&2; exit 1\n\
fi\n\
if [ -x \"$HERE/pre-commit.legacy\" ]; then\n\
  PRE_COMMIT_RUNNING_LEGACY=1 \"$HERE/pre-commit.legacy\" \"$@\" || exit $?\n\
fi\n\
echo ran >> \"$HERE/framework.log\"\n\
if [ -e \"$HERE/framework-fails\" ]; then echo 'framework hook failed' >&2; exit 1; fi\n";

/// `pre-commit install -f`: the framework's script replaces whatever is there, without moving it.
fn framework_install_overwriting(hooks: &Path, script: &str) {
    let hook = hooks.join("pre-commit");
    fs::write(&hook, script).unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o775)).unwrap();
}

/// What `pre-commit install` does when it finds a hook that is not its own.
fn framework_install(hooks: &Path) {
    let hook = hooks.join("pre-commit");
    if hook.exists()
        && !fs::read_to_string(&hook)
            .unwrap()
            .contains("138fd403232d2ddd5efb44317e38bf03")
    {
        fs::rename(&hook, hooks.join("pre-commit.legacy")).unwrap();
    }
    fs::write(&hook, FRAMEWORK).unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o775)).unwrap();
}

fn framework_runs(hooks: &Path) -> usize {
    fs::read_to_string(hooks.join("framework.log")).map_or(0, |log| log.lines().count())
}

#[test]
fn the_pre_commit_frameworks_hook_is_chained_and_restored_byte_for_byte() {
    let repo = Fixture::new();
    let hooks = repo.hooks();
    framework_install(&hooks);
    let before = fs::read(hooks.join("pre-commit")).unwrap();
    repo.session(BRANCH, &[KERNEL]);
    assert!(
        repo.ok_all(&["hook", "install"])
            .contains("already installed")
    );
    let saved = hooks.join("pre-commit.cutile-perf-orig");
    assert_eq!(fs::read(&saved).unwrap(), before);

    // both run: ours refuses a test edit, the framework's refusal counts too
    let runs = framework_runs(&hooks);
    repo.append(TEST, "# weaker\n");
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[(TEST, RESTORE)]);
    assert_eq!(framework_runs(&hooks), runs + 1);
    repo.git(&["reset", "-q", "--hard"]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    fs::write(hooks.join("framework-fails"), "").unwrap();
    let out = repo.tool_commit();
    assert!(!out.status.success() && both(&out).contains("framework hook failed"));
    fs::remove_file(hooks.join("framework-fails")).unwrap();
    assert_passes(&repo.tool_commit());

    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(fs::read(hooks.join("pre-commit")).unwrap(), before);
    let mode = fs::metadata(hooks.join("pre-commit"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o775);
    assert!(!saved.exists());
}

#[test]
fn pre_commit_install_after_ours_runs_us_in_legacy_mode_without_recursion() {
    let repo = Fixture::new();
    let hooks = repo.hooks();
    framework_install(&hooks);
    let original = fs::read(hooks.join("pre-commit")).unwrap();
    repo.session(BRANCH, &[KERNEL]);
    // the user runs `pre-commit install` again: ours becomes pre-commit.legacy
    framework_install(&hooks);
    assert!(
        repo.ok_all(&["hook", "install"])
            .contains("already installed")
    );
    let state: serde_json::Value =
        serde_json::from_str(&repo.ok_all(&["hook", "status", "--json"])).unwrap();
    assert_eq!(state["installed_as"], "pre-commit.legacy");

    let runs = framework_runs(&hooks);
    repo.append(TEST, "# weaker\n");
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[(TEST, RESTORE)]);
    repo.git(&["reset", "-q", "--hard"]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    assert_passes(&repo.tool_commit());
    // the framework ran once per commit it reached, never from inside its legacy hook
    assert_eq!(framework_runs(&hooks), runs + 1);

    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(fs::read(hooks.join("pre-commit")).unwrap(), original);
    assert!(!hooks.join("pre-commit.legacy").exists());
    assert!(!hooks.join("pre-commit.cutile-perf-orig").exists());
}

#[test]
fn a_plain_existing_hook_keeps_its_bytes_mode_and_exit_status() {
    let repo = Fixture::new();
    let hook = repo.hooks().join("pre-commit");
    let script = "#!/bin/sh\necho \"own hook: $*\" >> \"$(dirname \"$0\")/own.log\"\n[ ! -e \"$(dirname \"$0\")/own-fails\" ]";
    fs::write(&hook, script).unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o700)).unwrap();
    repo.session(BRANCH, &[KERNEL]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", "-A"]);
    fs::write(repo.hooks().join("own-fails"), "").unwrap();
    assert!(!repo.tool_commit().status.success());
    fs::remove_file(repo.hooks().join("own-fails")).unwrap();
    assert_passes(&repo.tool_commit());
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(fs::read_to_string(&hook).unwrap(), script);
    let mode = fs::metadata(&hook).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn the_tools_own_commits_pass_through_the_hook() {
    let mut repo = Fixture::new();
    let hook = repo.hooks().join("pre-commit");
    fs::write(
        &hook,
        "#!/bin/sh\necho x >> \"$(dirname \"$0\")/own.log\"\n",
    )
    .unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    repo.start();
    // the tool need not be on PATH for its own commits: it tells the hook where it is
    repo.hide_tool();
    let kernel = fs::read_to_string(repo.root.join(KERNEL)).unwrap();
    repo.write(
        KERNEL,
        &kernel.replace("TILE_SIZE = 128", "TILE_SIZE = 256"),
    );
    repo.ok_all(&["step", "--opt", "none", "tile size 256"]);
    // a crash commits the attempt, then its undoing: two more commits through the hook
    repo.write(
        KERNEL,
        &kernel.replace("CRASH = \"\"", "CRASH = \"exception\""),
    );
    repo.ok_all(&["step", "--opt", "none", "--continue", "latency hints"]);
    let log = fs::read_to_string(repo.hooks().join("own.log")).unwrap();
    // the baseline, the kept iteration, the attempt and the crash record
    assert_eq!(log.lines().count(), 4);
    let subjects = repo.git(&["log", "--format=%s", "-4"]);
    assert!(
        subjects.lines().next().unwrap().contains("#2 crash"),
        "{subjects}"
    );
}

#[test]
fn a_no_verify_commit_is_caught_by_step() {
    let repo = Fixture::new();
    repo.start();
    repo.append(TEST, "# weaker\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "--no-verify", "-m", "sneaky"]);
    repo.append(KERNEL, "# faster\n");
    let out = repo.run(&["step", "--opt", "none", "faster"]);
    assert!(!out.status.success());
    assert!(
        both(&out).contains("the session history broke the rule"),
        "{}",
        both(&out)
    );
    assert!(both(&out).contains(TEST));
}

#[test]
fn a_symlinked_existing_hook_is_chained_and_restored_as_the_same_link() {
    let repo = Fixture::new();
    repo.write("scripts/check.sh", "#!/bin/sh\necho linked hook ran >&2\n");
    let script = repo.root.join("scripts/check.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let hook = repo.hooks().join("pre-commit");
    std::os::unix::fs::symlink("../../scripts/check.sh", &hook).unwrap();
    repo.session(BRANCH, &[KERNEL]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", KERNEL]);
    let out = repo.tool_commit();
    assert_passes(&out);
    assert!(both(&out).contains("linked hook ran"));
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(
        fs::read_link(&hook).unwrap(),
        Path::new("../../scripts/check.sh")
    );
}

/// husky 9's generated files: the stub every hook in `.husky/_` is, and the helper it sources, which
/// runs `.husky/<the stub's own name>`.
const HUSKY_STUB: &str = "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"";
const HUSKY_H: &str = "#!/usr/bin/env sh\n\
[ \"$HUSKY\" = \"2\" ] && set -x\n\
n=$(basename \"$0\")\n\
s=$(dirname \"$(dirname \"$0\")\")/$n\n\
[ ! -f \"$s\" ] && exit 0\n\
[ \"${HUSKY-}\" = \"0\" ] && exit 0\n\
sh -e \"$s\" \"$@\"\n\
c=$?\n\
[ $c != 0 ] && echo \"husky - $n script failed (code $c)\"\n\
exit $c\n";

#[test]
fn a_husky_hook_still_finds_its_script_when_chained() {
    let repo = Fixture::new();
    repo.write(".husky/_/.gitignore", "*\n");
    repo.write(".husky/_/h", HUSKY_H);
    repo.write(".husky/_/pre-commit", HUSKY_STUB);
    repo.write(
        ".husky/pre-commit",
        "echo husky user hook ran >&2\n[ ! -e .husky/fail ]\n",
    );
    for file in [".husky/_/h", ".husky/_/pre-commit"] {
        fs::set_permissions(repo.root.join(file), fs::Permissions::from_mode(0o755)).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "husky"]);
    repo.git(&["config", "core.hooksPath", ".husky/_"]);
    repo.session(BRANCH, &[KERNEL]);
    repo.append(KERNEL, "# faster\n");
    repo.git(&["add", KERNEL]);
    repo.write(".husky/fail", "");
    let out = repo.tool_commit();
    assert!(!out.status.success(), "{}", both(&out));
    assert!(
        both(&out).contains("husky - pre-commit script failed"),
        "{}",
        both(&out)
    );
    fs::remove_file(repo.root.join(".husky/fail")).unwrap();
    let out = repo.tool_commit();
    assert_passes(&out);
    assert!(both(&out).contains("husky user hook ran"));
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(
        fs::read_to_string(repo.root.join(".husky/_/pre-commit")).unwrap(),
        HUSKY_STUB
    );
}

#[test]
fn pre_commit_install_overwriting_ours_leaves_nothing_stuck() {
    let repo = Fixture::new();
    let hooks = repo.hooks();
    framework_install(&hooks);
    repo.session(BRANCH, &[KERNEL]);
    // `pre-commit install -f` from another environment: a newer framework script replaces ours
    let newer = FRAMEWORK.replace("# ID:", "INSTALL_PYTHON=/venv-b/bin/python3\n# ID:");
    framework_install_overwriting(&hooks, &newer);
    let state: serde_json::Value =
        serde_json::from_str(&repo.ok_all(&["hook", "status", "--json"])).unwrap();
    assert_eq!(state["installed_as"], serde_json::Value::Null);
    assert_eq!(state["chained"], serde_json::Value::Null);
    assert!(
        state["stale"]
            .as_str()
            .unwrap()
            .ends_with("pre-commit.cutile-perf-orig")
    );
    // installing again chains the framework's script now in place
    repo.ok_all(&["hook", "install"]);
    assert_eq!(
        fs::read_to_string(hooks.join("pre-commit.cutile-perf-orig")).unwrap(),
        newer
    );
    repo.append(TEST, "# weaker\n");
    repo.git(&["add", "-A"]);
    assert_rejects(&repo.commit(), &[(TEST, RESTORE)]);
    repo.git(&["reset", "-q", "--hard"]);
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(fs::read_to_string(hooks.join("pre-commit")).unwrap(), newer);
    // and uninstall alone tidies a stale copy too
    repo.ok_all(&["hook", "install"]);
    framework_install_overwriting(&hooks, FRAMEWORK);
    assert!(
        repo.ok_all(&["hook", "uninstall"])
            .contains("a stale copy of the hook in place")
    );
    assert!(!hooks.join("pre-commit.cutile-perf-orig").exists());
    assert_eq!(
        fs::read_to_string(hooks.join("pre-commit")).unwrap(),
        FRAMEWORK
    );
}

#[test]
fn uninstall_in_legacy_mode_keeps_the_newer_framework_script() {
    let repo = Fixture::new();
    let hooks = repo.hooks();
    framework_install(&hooks);
    repo.session(BRANCH, &[KERNEL]);
    // `pre-commit install` again, from another environment: ours becomes pre-commit.legacy
    fs::rename(hooks.join("pre-commit"), hooks.join("pre-commit.legacy")).unwrap();
    let newer = FRAMEWORK.replace("# ID:", "INSTALL_PYTHON=/venv-b/bin/python3\n# ID:");
    framework_install_overwriting(&hooks, &newer);
    repo.ok_all(&["hook", "uninstall"]);
    assert_eq!(fs::read_to_string(hooks.join("pre-commit")).unwrap(), newer);
    assert!(!hooks.join("pre-commit.legacy").exists());
    assert!(!hooks.join("pre-commit.cutile-perf-orig").exists());
}

#[test]
fn commit_all_is_told_that_unstaging_does_not_help() {
    let repo = Fixture::new();
    repo.session(BRANCH, &[KERNEL]);
    repo.append(TEST, "# weaker\n");
    let out = repo.commit_in(&repo.root, &["-a"]);
    assert!(
        both(&out).contains("note: this commit stages from the work tree"),
        "{}",
        both(&out)
    );
    repo.git(&["add", "-A"]);
    assert!(!both(&repo.commit()).contains("note: this commit stages from the work tree"));
}

/// The README's clean-up by hand, run as written on a repository a session used, leaves nothing of the
/// tool: no hook, ref, note, scratch directory, exclude line or state under `.git`.
#[test]
fn the_readmes_clean_up_by_hand_leaves_nothing_of_a_session() {
    let repo = Fixture::new();
    repo.start();
    let branch = repo.branch();
    repo.git(&[
        "notes",
        "--ref",
        "cutile-perf-diagnose",
        "add",
        "-m",
        "{}",
        "HEAD",
    ]);
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme.split("## Uninstall").nth(1).unwrap();
    let by_hand = section.split("without the binary:").nth(1).unwrap();
    let script: Vec<String> = by_hand
        .lines()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.starts_with("    "))
        .map(|line| line.trim().replace("cutile-perf-<kernel>-<date>", &branch))
        .collect();
    let out = repo.run_in(&repo.root, "bash", &["-euc", &script.join("\n")]);
    assert!(
        out.status.success(),
        "{}\n{}",
        script.join("\n"),
        both(&out)
    );
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname)"]).trim(),
        "refs/heads/main"
    );
    let git_dir = repo.root.join(".git");
    for hook in ["pre-commit", "commit-msg"] {
        assert!(!git_dir.join("hooks").join(hook).exists(), "{hook} left");
    }
    assert!(!git_dir.join("cutile-perf").exists());
    assert!(!repo.root.join("sandbox").exists());
    let exclude = fs::read_to_string(git_dir.join("info/exclude")).unwrap_or_default();
    assert!(
        !exclude.lines().any(|line| line == "/sandbox/"),
        "{exclude}"
    );
}
