//! Stops that are no failure of what was being checked: Ctrl-C or SIGTERM while `start` asks the
//! session's Python whether it has pytest is an interrupt (130), never "pytest is not available".

use std::process::Stdio;

use crate::support::{Fixture, output_within, wait_until, write_script};

#[test]
fn a_stop_while_pytest_is_checked_is_an_interrupt() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let f = Fixture::new();
        let dir = tempfile::tempdir().unwrap();
        let asked = dir.path().join("asked");
        let python = dir.path().join("slow-python");
        // answers the availability check only after a long pause, and says when it is asked
        write_script(
            &python,
            &format!(
                "#!/bin/sh\ncase \"$*\" in *--version*) touch '{}'; exec sleep 600;; esac\nexec python3 \"$@\"\n",
                asked.display()
            ),
        );
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
