//! Stops that are no failure of what was being checked: Ctrl-C or SIGTERM while `start` asks the
//! session's Python whether it has pytest is an interrupt (130), never "pytest is not available";
//! through git, git reports that stop itself.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Stdio;

use crate::support::{Fixture, output_within, wait_until, write_script};

#[test]
fn a_stop_while_pytest_is_checked_is_an_interrupt() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let f = Fixture::new();
        let dir = tempfile::tempdir().unwrap();
        let (python, asked) = slow_python(dir.path());
        let child = f
            .command(&["start", "vector_add", "--python", python.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until("the pytest check began", || asked.exists());
        // SAFETY: a plain kill(2) of the child, still unreaped
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = output_within(child, "start, stopped during its pytest check");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
        assert!(stderr.contains("interrupted"), "{signal}: {stderr}");
        assert!(!stderr.contains("not available"), "{signal}: {stderr}");
        assert!(f.git(&["branch", "--list", "cutile-perf-*"]).is_empty());
    }
}

/// A Python that says when the availability check began and then hangs in it.
fn slow_python(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let asked = dir.join("asked");
    let python = dir.join("slow-python");
    write_script(
        &python,
        &format!(
            "#!/bin/sh\ncase \"$*\" in *--version*) touch '{}'; exec sleep 600;; esac\nexec python3 \"$@\"\n",
            asked.display()
        ),
    );
    (python, asked)
}

/// What the skill says of an interrupt through `git cutile-perf`: git, signalled with the tool as a
/// terminal's Ctrl-C does (the whole process group), dies of the signal itself once the tool has
/// ended, or, where it runs with SIGINT ignored (a background job of a script), exits 128 saying
/// "waitpid ... failed". In every case the tool recorded nothing.
#[test]
fn through_git_an_interrupt_is_reported_by_git() {
    for (signal, ignored, code, signalled) in [
        (libc::SIGINT, false, None, Some(libc::SIGINT)),
        (libc::SIGTERM, false, None, Some(libc::SIGTERM)),
        (libc::SIGINT, true, Some(128), None),
    ] {
        let f = Fixture::new();
        let dir = tempfile::tempdir().unwrap();
        let (python, asked) = slow_python(dir.path());
        let mut git = f.program("git", &f.root);
        git.args(["cutile-perf", "start", "vector_add", "--no-gpu", "--python"])
            .arg(&python)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if ignored {
            // SAFETY: signal(2) between fork and exec, async-signal-safe
            unsafe {
                git.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_IGN);
                    Ok(())
                })
            };
        }
        let child = git.spawn().unwrap();
        wait_until("the pytest check began", || asked.exists());
        // SAFETY: a plain killpg(2) of the group the child leads, still unreaped
        unsafe { libc::killpg(child.id() as i32, signal) };
        let out = output_within(child, "git cutile-perf start, stopped");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), code, "{signal}: {stderr}");
        assert_eq!(out.status.signal(), signalled, "{signal}: {stderr}");
        if ignored {
            assert!(
                stderr.contains("waitpid for git-cutile-perf failed"),
                "{stderr}"
            );
        }
        assert!(f.git(&["branch", "--list", "cutile-perf-*"]).is_empty());
    }
}
