//! Fault injection: the tool stopped (SIGINT, SIGTERM, SIGKILL) while a chained hook pauses in each phase
//! of `start` and `step`, then the invariants: the user's edit is in the work tree or in a commit the
//! record names, `repair` and the next command work, no process is left. Also the lock, a change made
//! while the tests run, messages too long for argv, and hooks that add to or rewrite messages.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use git_cutile_perf::system::process_identity::ProcessIdentity;
use support::hang::Hang;
use support::*;

/// Hooks that count their calls and pause at the `PAUSE_AT`th call of the hook named `PAUSE_HOOK`
/// until `$PAUSE_DIR/go` exists, having written their pid to `$PAUSE_DIR/paused`.
const PAUSING_HOOK: &str = r#"#!/bin/sh
name=HOOK_NAME
[ -n "$PAUSE_DIR" ] || exit 0
count="$PAUSE_DIR/count-$name"
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
if [ "$name" = "$PAUSE_HOOK" ] && [ "$n" = "$PAUSE_AT" ]; then
    echo $$ > "$PAUSE_DIR/paused.new" && mv "$PAUSE_DIR/paused.new" "$PAUSE_DIR/paused"
    while [ ! -e "$PAUSE_DIR/go" ]; do sleep 0.05; done
fi
exit 0
"#;

fn install_pausing_hooks(f: &Fixture) {
    for name in ["pre-commit", "commit-msg", "post-commit", "post-checkout"] {
        let path = f.hooks().join(name);
        std::fs::write(&path, PAUSING_HOOK.replace("HOOK_NAME", name)).unwrap();
        make_executable(&path);
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    Int,
    Term,
    Kill,
}

/// Where to pause: which hook, at its nth call during the command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Phase {
    pub name: &'static str,
    pub hook: &'static str,
    pub at: u32,
}

/// Runs `args` with the pause set, stops it with `signal` once paused, and returns how it ended. For
/// SIGKILL, git and its hook (one process group) are killed too, as a machine going down would.
pub(crate) fn stop_at(
    f: &Fixture,
    args: &[&str],
    phase: Phase,
    signal: Signal,
) -> (Option<i32>, String) {
    stop_at_after(f, args, phase, signal, || {})
}

/// [`stop_at`], doing `meanwhile` (what a user does while the tool runs) once paused.
fn stop_at_after(
    f: &Fixture,
    args: &[&str],
    phase: Phase,
    signal: Signal,
    meanwhile: impl FnOnce(),
) -> (Option<i32>, String) {
    let pause = tempfile::tempdir().unwrap();
    let mut child: Child = f
        .command(args)
        .env("PAUSE_DIR", pause.path())
        .env("PAUSE_HOOK", phase.hook)
        .env("PAUSE_AT", phase.at.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let paused = pause.path().join("paused");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !paused.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "{phase:?}: ended ({status}) before pausing:\n{}",
                both(&out)
            );
        }
        assert!(Instant::now() < deadline, "{}: never paused", phase.name);
        std::thread::sleep(Duration::from_millis(20));
    }
    let hook: i32 = std::fs::read_to_string(&paused)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group = unsafe { libc::getpgid(hook) };
    meanwhile();
    unsafe {
        match signal {
            Signal::Int => libc::kill(child.id() as i32, libc::SIGINT),
            Signal::Term => libc::kill(child.id() as i32, libc::SIGTERM),
            Signal::Kill => {
                libc::kill(child.id() as i32, libc::SIGKILL);
                libc::killpg(group, libc::SIGKILL)
            }
        };
    }
    // the paused hook never goes on by itself: a tool that waited for it would not end
    let out = output_within(child, &format!("{phase:?} {signal:?}: the tool, signalled"));
    assert_gone(
        hook,
        &format!("{phase:?} {signal:?}: the hook, after the tool"),
    );
    (out.status.code(), both(&out))
}

/// The signals a test sends at its `n`th phase: a kill at every phase, and an interrupt, SIGINT and
/// SIGTERM in turn (the tool handles the two alike; sending both at every phase doubled its steps).
fn signals_at(n: usize) -> [Signal; 2] {
    let interrupt = match n % 2 {
        0 => Signal::Int,
        _ => Signal::Term,
    };
    [interrupt, Signal::Kill]
}

/// After a stop: an interrupt exits 130 with nothing left to repair; a kill leaves a journal that
/// `status` reports and `repair` settles.
fn settle(f: &Fixture, code: Option<i32>, output: &str, signal: Signal, phase: Phase) {
    match signal {
        Signal::Kill => {
            assert_eq!(code, None, "{phase:?}: {output}");
        }
        _ => {
            assert_eq!(code, Some(130), "{phase:?} {signal:?}: {output}");
            assert!(output.contains("interrupted:"), "{output}");
        }
    }
    let repaired = f.ok(&["repair"]);
    if !matches!(signal, Signal::Kill) {
        assert!(
            repaired.contains("nothing to repair"),
            "{phase:?} {signal:?}: {repaired}"
        );
    }
    assert!(!f.path(".git/index.lock").exists());
    assert!(!f.path(".git/cutile-perf/journal.json").exists());
}

#[test]
fn start_stopped_in_any_phase_leaves_nothing_or_a_session() {
    let phases = [
        Phase {
            name: "branch",
            hook: "post-checkout",
            at: 1,
        },
        Phase {
            name: "baseline commit",
            hook: "pre-commit",
            at: 1,
        },
        Phase {
            name: "baseline message",
            hook: "commit-msg",
            at: 1,
        },
        Phase {
            name: "baseline landed",
            hook: "post-commit",
            at: 1,
        },
    ];
    let f = Fixture::new();
    install_pausing_hooks(&f);
    for (n, phase) in phases.into_iter().enumerate() {
        for signal in signals_at(n) {
            let (code, output) = stop_at(&f, &["start", "vector_add"], phase, signal);
            settle(&f, code, &output, signal, phase);
            let sessions = f.git(&["branch", "--list", "cutile-perf-*"]);
            if sessions.is_empty() {
                assert_eq!(f.branch(), "main", "{phase:?} {signal:?}");
                assert_eq!(f.status(), "");
            } else {
                // only a finished baseline survives, its evidence note with it, and then the session works
                f.ok(&["status"]);
                assert!(
                    f.ok(&["verify"]).contains("the record holds"),
                    "{phase:?} {signal:?}"
                );
            }
            // the next case starts afresh from main
            f.git(&["checkout", "-q", "main"]);
            for branch in f
                .git(&[
                    "branch",
                    "--list",
                    "cutile-perf-*",
                    "--format=%(refname:short)",
                ])
                .lines()
            {
                f.git(&["branch", "-q", "-D", branch]);
            }
        }
    }
}

// one test per commit of a step, so that they run side by side: each stops a real step at each of its
// phases, with a kill and an interrupt
#[test]
fn a_kept_step_stopped_in_any_phase_keeps_the_edit() {
    step_stopped_in_any_phase_keeps_the_edit(
        true,
        &[
            Phase {
                name: "iteration commit",
                hook: "pre-commit",
                at: 1,
            },
            Phase {
                name: "iteration landed",
                hook: "post-commit",
                at: 1,
            },
        ],
    );
}

#[test]
fn a_reverted_steps_attempt_stopped_in_any_phase_keeps_the_edit() {
    step_stopped_in_any_phase_keeps_the_edit(
        false,
        &[
            Phase {
                name: "attempt commit",
                hook: "pre-commit",
                at: 1,
            },
            Phase {
                name: "attempt landed",
                hook: "post-commit",
                at: 1,
            },
        ],
    );
}

#[test]
fn a_reverted_steps_undoing_stopped_in_any_phase_keeps_the_edit() {
    step_stopped_in_any_phase_keeps_the_edit(
        false,
        &[
            Phase {
                name: "undo commit",
                hook: "pre-commit",
                at: 2,
            },
            Phase {
                name: "undo message",
                hook: "commit-msg",
                at: 2,
            },
            Phase {
                name: "undo landed",
                hook: "post-commit",
                at: 2,
            },
        ],
    );
}

/// A step whose change is `kept` (one commit) or reverted (the attempt, then its undoing), stopped by
/// a kill and an interrupt at each of `phases`: nothing is recorded after an interrupt, and the edit survives.
fn step_stopped_in_any_phase_keeps_the_edit(kept: bool, phases: &[Phase]) {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    f.start();
    let base = f.head();
    for (n, &phase) in phases.iter().enumerate() {
        for signal in signals_at(n) {
            // the next case starts from the baseline
            f.git(&["reset", "-q", "--hard", &base]);
            if kept {
                f.set_latency(0.05, 0.5);
            } else {
                f.set_latency(0.2, 2.0);
            }
            let edit = std::fs::read_to_string(f.path(KERNEL)).unwrap();
            let (code, output) = stop_at(&f, &["step", "--opt", "none", "tried"], phase, signal);
            settle(&f, code, &output, signal, phase);
            let recorded = f.head() != base;
            if recorded {
                assert!(
                    matches!(signal, Signal::Kill),
                    "{phase:?} {signal:?}: recorded after an interrupt"
                );
                let holder = if kept {
                    "HEAD".to_string()
                } else {
                    f.trailer("HEAD", "Cutile-Perf-Attempt")
                };
                assert_eq!(f.git(&["show", &format!("{holder}:{KERNEL}")]), edit);
                f.ok(&["status"]);
                // a whole iteration: its evidence note was written too, and the record holds
                assert!(
                    f.ok(&["verify"]).contains("the record holds"),
                    "{phase:?} {signal:?}"
                );
            } else {
                let now = std::fs::read_to_string(f.path(KERNEL)).unwrap();
                assert_eq!(
                    now, edit,
                    "{phase:?} {signal:?}: the edit is not in the work tree"
                );
                assert_eq!(f.status(), format!(" M {KERNEL}\n"), "{phase:?} {signal:?}");
                f.ok(&["status"]);
            }
        }
    }
}

#[test]
fn a_killed_step_is_reported_until_repaired() {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    f.start();
    f.set_latency(0.2, 2.0);
    let phase = Phase {
        name: "undo commit",
        hook: "pre-commit",
        at: 2,
    };
    let (code, _) = stop_at(
        &f,
        &["step", "--opt", "none", "slower"],
        phase,
        Signal::Kill,
    );
    assert_eq!(code, None);
    let err = f.fails(&["step", "--opt", "none", "again"]);
    assert!(err.contains("an interrupted `step`"), "{err}");
    assert!(err.contains("git cutile-perf repair"), "{err}");
    let status = both(&f.run(&["status"]));
    assert!(
        status.contains("stopped while committing the iteration"),
        "{status}"
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["next_action"]["kind"], "repair", "{status}");
    let report: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(report["action"], "undone", "{report}");
    assert_eq!(report["next_action"]["kind"], "edit-and-step", "{report}");
    let r = f.step_json(&["slower, again"]);
    assert_eq!(r["status"], "revert");
}

#[test]
fn an_iteration_killed_before_its_note_without_the_note_kept_is_taken_back() {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    f.start();
    let base = f.head();
    f.set_latency(0.05, 0.5);
    let edit = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let phase = Phase {
        name: "iteration landed",
        hook: "post-commit",
        at: 1,
    };
    let (code, _) = stop_at(
        &f,
        &["step", "--opt", "none", "faster"],
        phase,
        Signal::Kill,
    );
    assert_eq!(code, None);
    // a journal that kept no note (as one written before notes were kept there)
    let path = f.path(".git/cutile-perf/journal.json");
    let mut journal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(journal["note"].is_string(), "{journal}");
    journal.as_object_mut().unwrap().remove("note");
    std::fs::write(&path, journal.to_string()).unwrap();
    // an iteration without its note would stand unchecked: it is taken back, the edit kept
    let report: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(report["action"], "undone", "{report}");
    assert_eq!(f.head(), base);
    assert_eq!(std::fs::read_to_string(f.path(KERNEL)).unwrap(), edit);
    assert!(f.ok(&["verify"]).contains("the record holds"));
}

#[test]
fn a_second_command_is_refused_while_the_lock_is_held_and_a_dead_holder_does_not_block() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    let lock = f.path(".git/cutile-perf/lock");
    let me = ProcessIdentity::current().unwrap();
    std::fs::write(&lock, format!("{me} (`step`)")).unwrap();
    let err = f.fails(&["step", "--opt", "none", "faster"]);
    assert!(
        err.contains(&format!(
            "another git cutile-perf command (pid {}, `step`)",
            me.pid
        )),
        "{err}"
    );
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
    // a lock a version without identities wrote, and one no command wrote: named, with the fix
    for holder in [format!("{} (pid of `step`)", me.pid), "-1".to_string()] {
        std::fs::write(&lock, &holder).unwrap();
        let err = f.fails(&["step", "--opt", "none", "faster"]);
        assert!(
            err.contains("which no git cutile-perf command of this version wrote")
                && err.contains("hint: if no git cutile-perf command runs, delete it"),
            "{err}"
        );
    }
    // a holder that is gone, and a live process that has its number now (another start time), are stale
    let gone = ProcessIdentity {
        pid: 2147483600,
        ..me.clone()
    };
    let reused = ProcessIdentity {
        start_ticks: me.start_ticks + 1,
        ..me.clone()
    };
    for (holder, latency) in [(gone, 0.05), (reused, 0.04)] {
        f.set_latency(latency, latency * 10.0);
        std::fs::write(&lock, format!("{holder} (`step`)")).unwrap();
        assert_eq!(f.step_json(&["faster"])["status"], "keep");
        assert!(!lock.exists());
    }
}

#[test]
fn a_recorded_group_whose_number_names_another_process_is_left_alone() {
    let f = Fixture::new();
    f.start();
    let mut unrelated = std::process::Command::new("setsid")
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let group = unrelated.id();
    // a group of its own once setsid has run
    wait_until("setsid made its group", || unsafe {
        libc::getpgid(group as i32) == group as i32
    });
    let now = ProcessIdentity::of(group).unwrap();
    for recorded in [
        group.to_string(),
        ProcessIdentity {
            start_ticks: now.start_ticks + 1,
            ..now.clone()
        }
        .to_string(),
    ] {
        std::fs::write(f.path(".git/cutile-perf/child-group"), &recorded).unwrap();
        let out = both(&f.run(&["status"]));
        assert!(!out.contains("ended the tests"), "{out}");
        assert!(alive(group as i32), "status signalled group {recorded}");
        assert!(!f.path(".git/cutile-perf/child-group").exists());
    }
    unrelated.kill().unwrap();
    unrelated.wait().unwrap();
}

/// A `--python` that edits `$EDIT_DURING_RUN` before running the tests, as a user editing the kernel
/// while `step` runs would.
fn editing_python() -> (tempfile::TempDir, PathBuf) {
    // a path without spaces: `--python` is split into words
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("editing-python");
    std::fs::write(
        &path,
        "#!/bin/sh\n[ -n \"$EDIT_DURING_RUN\" ] && echo '# edited during the run' >> \"$EDIT_DURING_RUN\"\n\
         [ -n \"$CHECKOUT_DURING_RUN\" ] && git checkout -q -- \"$CHECKOUT_DURING_RUN\"\n\
         [ -n \"$WRITE_DURING_RUN\" ] && echo 'a test output' > \"$WRITE_DURING_RUN\"\n\
         exec python3 \"$@\"\n",
    )
    .unwrap();
    make_executable(&path);
    (dir, path)
}

#[test]
fn a_change_during_the_run_is_refused_with_nothing_recorded() {
    let f = Fixture::new();
    let (_dir, python) = editing_python();
    f.ok(&["start", "vector_add", "--python", python.to_str().unwrap()]);
    let base = f.head();
    f.set_latency(0.05, 0.5);
    let out = f
        .command(&["step", "--opt", "none", "faster"])
        .env("EDIT_DURING_RUN", f.path(KERNEL))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("the repository changed while the tests ran"),
        "{err}"
    );
    assert!(err.contains("nothing was recorded"), "{err}");
    assert_eq!(f.head(), base);
    let kernel = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    assert!(kernel.ends_with("# edited during the run\n"));
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

#[test]
fn tests_that_check_out_the_kernel_are_refused_saying_where_the_edit_is() {
    let f = Fixture::new();
    let (_dir, python) = editing_python();
    f.ok(&["start", "vector_add", "--python", python.to_str().unwrap()]);
    f.set_latency(0.05, 0.5);
    let edit = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let out = f
        .command(&["step", "--opt", "none", "faster"])
        .env("CHECKOUT_DURING_RUN", KERNEL)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("the repository changed while the tests ran"),
        "{err}"
    );
    let tree = err
        .split("the tested change is saved as tree ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(f.status(), "");
    f.git(&["restore", &format!("--source={tree}"), "--", "."]);
    assert_eq!(std::fs::read_to_string(f.path(KERNEL)).unwrap(), edit);
}

#[test]
fn a_file_the_tests_write_is_named_with_the_fix() {
    let f = Fixture::new();
    let (_dir, python) = editing_python();
    f.ok(&["start", "vector_add", "--python", python.to_str().unwrap()]);
    f.set_latency(0.05, 0.5);
    let written = f.path("tests/ops/output.log");
    let out = f
        .command(&["step", "--opt", "none", "faster"])
        .env("WRITE_DURING_RUN", &written)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("tests/ops/output.log"), "{err}");
    // every later step names it, and the fix
    let err = f.fails(&["step", "--opt", "none", "faster"]);
    assert!(
        err.contains("tests/ops/output.log")
            && err.contains("a file your tests write belongs in .git/info/exclude"),
        "{err}"
    );
    f.append(".git/info/exclude", "/tests/ops/output.log\n");
    assert_eq!(f.step_json(&["faster"])["status"], "keep");
}

#[test]
fn messages_longer_than_argv_allows_are_committed() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    let description = "tile ".repeat(14_000); // 70 KB, twice in the message
    let r = f.step_json(&[&description]);
    assert_eq!(r["status"], "keep");
    assert_eq!(
        f.trailer("HEAD", "Cutile-Perf-Optimization").len(),
        description.trim_end().len()
    );
    f.ok(&["table"]);
}

fn commit_msg_hook(f: &Fixture, script: &str) {
    let path = f.hooks().join("commit-msg");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    make_executable(&path);
}

#[test]
fn trailers_other_tools_append_are_kept_and_read_past() {
    for script in [
        // Gerrit's way: into the trailer block
        r#"git interpret-trailers --in-place --trailer "Change-Id: I0123456789abcdef0123456789abcdef01234567" "$1""#,
        // a paragraph of its own
        r#"printf '\nSigned-off-by: A U Thor <a@example.com>\n' >> "$1""#,
    ] {
        let f = Fixture::new();
        commit_msg_hook(&f, script);
        f.start();
        f.set_latency(0.05, 0.5);
        assert_eq!(f.step_json(&["faster"])["status"], "keep", "{script}");
        f.set_latency(0.5, 5.0);
        assert_eq!(f.step_json(&["slower"])["status"], "revert", "{script}");
        let message = f.git(&["log", "-1", "--format=%B"]);
        assert!(
            message.contains("Change-Id: I") || message.contains("Signed-off-by: A U Thor"),
            "{message}"
        );
        f.ok(&["status"]);
    }
}

#[test]
fn a_hook_that_rewrites_our_trailers_is_named_and_nothing_is_recorded() {
    let f = Fixture::new();
    f.start();
    let base = f.head();
    commit_msg_hook(&f, r#"sed -i 's/^Cutile-Perf-Status:/Status:/' "$1""#);
    f.set_latency(0.2, 2.0);
    let edit = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let err = f.fails(&["step", "--opt", "none", "slower"]);
    assert!(
        err.contains("does not carry the trailers the tool wrote"),
        "{err}"
    );
    assert!(err.contains("commit-msg"), "{err}");
    assert!(err.contains("nothing was recorded"), "{err}");
    assert_eq!(f.head(), base);
    assert_eq!(std::fs::read_to_string(f.path(KERNEL)).unwrap(), edit);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

#[test]
fn a_refused_commit_reports_git_and_keeps_the_edit() {
    let f = Fixture::new();
    f.start();
    let base = f.head();
    commit_msg_hook(&f, "echo 'policy: no commits today' >&2; exit 1");
    f.set_latency(0.2, 2.0);
    // what the user staged stays staged
    f.git(&["add", KERNEL]);
    let err = f.fails(&["step", "--opt", "none", "slower"]);
    assert!(err.contains("policy: no commits today"), "{err}");
    assert!(
        err.contains("your changes are as you left them, in the work tree and the index"),
        "{err}"
    );
    assert_eq!(f.head(), base);
    assert_eq!(f.status(), format!("M  {KERNEL}\n"));
}

#[test]
fn tests_left_running_by_a_killed_step_are_ended_by_the_next_command() {
    let f = Fixture::new();
    f.start();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let status_before = f.status();
    let hang = Hang::new();
    let mut child = hang
        .command(&f, &["step", "--opt", "none", "hangs"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    hang.wait_for_child();
    child.kill().unwrap();
    child.wait().unwrap();
    let out = both(&f.run(&["status"]));
    assert!(out.contains("stopped while running the tests"), "{out}");
    // the warm worker ends its own group once it sees the tool gone, and the next command ends what is
    // still running (saying "ended the tests (process group ..)"): either way nothing outlives it
    hang.assert_child_gone();
    let repaired = f.ok(&["repair"]);
    assert!(
        repaired.contains("your changes are as you left them"),
        "{repaired}"
    );
    assert_eq!(f.status(), status_before);
    assert_eq!(
        baseline_worktrees(&f),
        0,
        "the killed step's baseline worktree is left"
    );
}

fn baseline_worktrees(f: &Fixture) -> usize {
    std::fs::read_dir(f.path(".git/cutile-perf"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("baseline-"))
        .count()
}

#[test]
fn start_cleans_up_its_own_half_made_branch() {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    let phase = Phase {
        name: "baseline commit",
        hook: "pre-commit",
        at: 1,
    };
    let (code, _) = stop_at(&f, &["start", "vector_add"], phase, Signal::Kill);
    assert_eq!(code, None);
    assert!(
        f.branch().starts_with("cutile-perf-"),
        "the kill left the branch checked out"
    );
    let out = f.ok_all(&["start", "vector_add"]);
    assert!(out.contains("an interrupted `start`"), "{out}");
    assert!(out.contains("is deleted"), "{out}");
    f.ok(&["status"]);
}

#[test]
fn start_under_a_hook_appending_a_plain_line_leaves_nothing() {
    let f = Fixture::new();
    commit_msg_hook(&f, r#"echo 'Checked by corp-lint' >> "$1""#);
    let base = f.head();
    let status = f.status();
    let err = f.fails(&["start", "vector_add"]);
    assert!(
        err.contains("does not carry the trailers the tool wrote"),
        "{err}"
    );
    assert!(err.contains("commit-msg"), "{err}");
    assert!(!err.contains("could not put the repository back"), "{err}");
    assert_eq!(f.branch(), "main");
    assert_eq!(f.head(), base);
    assert_eq!(f.session_branch(), "");
    assert_eq!(f.status(), status);
    assert!(!f.root.join(".git/cutile-perf/journal.json").exists());
}

const ATTEMPT_LANDED: Phase = Phase {
    name: "attempt landed",
    hook: "post-commit",
    at: 1,
};

#[test]
fn an_interrupted_undo_keeps_what_was_edited_meanwhile() {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    f.start();
    f.set_latency(0.2, 2.0);
    let edit = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let (code, output) = stop_at_after(
        &f,
        &["step", "--opt", "none", "slower"],
        ATTEMPT_LANDED,
        Signal::Int,
        || f.append("setup.py", "# edited while the step ran\n"),
    );
    assert_eq!(code, Some(130), "{output}");
    assert!(
        std::fs::read_to_string(f.path("setup.py"))
            .unwrap()
            .ends_with("# edited while the step ran\n"),
        "{output}"
    );
    assert_eq!(std::fs::read_to_string(f.path(KERNEL)).unwrap(), edit);
    assert_eq!(f.status(), format!(" M setup.py\n M {KERNEL}\n"));
}

#[test]
fn repair_after_a_kill_keeps_the_kernel_as_edited_since() {
    let f = Fixture::new();
    install_pausing_hooks(&f);
    f.start();
    let base = f.head();
    f.set_latency(0.2, 2.0);
    let (code, _) = stop_at(
        &f,
        &["step", "--opt", "none", "slower"],
        ATTEMPT_LANDED,
        Signal::Kill,
    );
    assert_eq!(code, None);
    // the user goes on editing before running repair
    f.set_latency(0.07, 0.7);
    let since = std::fs::read_to_string(f.path(KERNEL)).unwrap();
    let report: serde_json::Value = serde_json::from_str(&f.ok(&["repair", "--json"])).unwrap();
    assert_eq!(report["action"], "undone", "{report}");
    assert!(
        report["what"]
            .as_str()
            .unwrap()
            .contains(&format!("kept as you left them: {KERNEL}")),
        "{report}"
    );
    assert_eq!(std::fs::read_to_string(f.path(KERNEL)).unwrap(), since);
    assert_eq!(f.head(), base);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

/// `step` whose stdout (and, with `stderr_too`, stderr) is a pipe its reader closed at once, as
/// `step | head -1` leaves it once head has its line: how it ended, and its stderr when that was kept.
fn step_into_a_closed_pipe(f: &Fixture, stderr_too: bool) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    let mut command = f.command(&["step", "--opt", "none", "tile size 256"]);
    command.stdout(writer.try_clone().unwrap());
    match stderr_too {
        true => command.stderr(writer),
        false => command.stderr(Stdio::piped()),
    };
    let child = command.spawn().unwrap();
    // the reader goes before the tool writes a word; so does this process's copy of the writer
    drop(reader);
    drop(command);
    let out = child.wait_with_output().unwrap();
    (out.status, text(&out.stderr))
}

#[test]
fn a_reader_that_closes_the_pipe_does_not_cut_a_step_short() {
    let f = Fixture::new();
    f.start();
    // its progress and its report into a closed pipe (`step ... 2>&1 | head -1`): the step runs to its
    // end and is recorded, nothing left for `repair`
    f.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    f.set_latency(0.05, 0.5);
    let (status, _) = step_into_a_closed_pipe(&f, true);
    assert!(status.success(), "{status:?}");
    let subjects = || f.git(&["log", "--format=%s"]);
    assert!(subjects().contains("#1 keep"), "{}", subjects());
    assert_eq!(f.status(), "");
    assert!(!f.ok_all(&["status"]).contains("repair"));
    // its report alone into one: said on stderr
    f.edit_kernel("TILE_SIZE = 256", "TILE_SIZE = 512");
    f.set_latency(0.03, 0.3);
    let (status, stderr) = step_into_a_closed_pipe(&f, false);
    assert!(status.success(), "{status:?} {stderr}");
    assert!(
        stderr.contains("the report was cut short: its reader closed stdout"),
        "{stderr}"
    );
    assert!(subjects().contains("#2 keep"), "{}", subjects());
    f.ok(&["verify"]);
}

/// The tests' own conftest grown to play a disk that fills while pytest writes the JUnit file of the run
/// named by `FIXTURE_FULL_DISK_RUN`: the file is left empty (`FIXTURE_FULL_DISK=empty`) or never made
/// (`absent`), in a pytest of its own or a warm worker alike (both write through `LogXML`).
const FULL_DISK_CONFTEST: &str = r#"

if os.environ.get("FIXTURE_FULL_DISK_RUN"):
    from _pytest import junitxml as _junitxml

    _write_junit = _junitxml.LogXML.pytest_sessionfinish

    def _on_a_full_disk(self):
        _write_junit(self)
        if os.path.basename(self.logfile).startswith(os.environ["FIXTURE_FULL_DISK_RUN"]):
            if os.environ.get("FIXTURE_FULL_DISK") == "absent":
                os.remove(self.logfile)
            else:
                open(self.logfile, "w").close()

    _junitxml.LogXML.pytest_sessionfinish = _on_a_full_disk
"#;

/// A disk that fills while a step's correctness tests write their JUnit file: the run produced no
/// result, so the step records a crash naming why, never the kernel's correctness FAIL, and the change
/// stays in the attempt commit the record names.
#[test]
fn a_correctness_run_that_left_no_result_is_a_crash_never_the_kernels_fail() {
    let f = Fixture::new();
    f.append("tests/conftest.py", FULL_DISK_CONFTEST);
    f.git(&[
        "commit",
        "-q",
        "-am",
        "a conftest that can play a full disk",
    ]);
    f.ok(&["start", "vector_add"]);
    for (n, (left, why)) in [
        ("empty", "the JUnit file holds no results (0 bytes)"),
        ("absent", "without writing its JUnit file"),
    ]
    .into_iter()
    .enumerate()
    {
        f.set_latency(0.08 - n as f64 * 0.01, 0.8);
        let edited = f.git(&["diff", "--", KERNEL]);
        let out = f
            .command(&["step", "--json", "--opt", "none", "tile size"])
            .env("FIXTURE_FULL_DISK_RUN", "correctness")
            .env("FIXTURE_FULL_DISK", left)
            .output()
            .unwrap();
        let report: serde_json::Value =
            serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|_| panic!("{}", both(&out)));
        assert_eq!(report["status"], "crash", "{left}: {report}");
        assert!(
            report["reason"].as_str().unwrap().contains(why),
            "{left}: {report}"
        );
        // nothing of the user's lost: the change is the attempt the record names
        let attempt = report["attempt"].as_str().expect("an attempt commit");
        let kept = f.git(&["diff", &format!("{attempt}^"), attempt, "--", KERNEL]);
        let added = |diff: &str| -> Vec<String> {
            diff.lines()
                .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
                .map(String::from)
                .collect()
        };
        assert_eq!(added(&kept), added(&edited), "{left}");
    }
    assert!(f.ok(&["verify"]).contains("the record holds"));
}
