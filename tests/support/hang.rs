//! The fixture's hanging benchmark: a child process that outlives pytest unless its whole tree is
//! killed, for the tests that check nothing is left behind.

use super::{Fixture, assert_gone, output_within, wait_until};

/// The fixture's hanging benchmark (`CRASH = "hang"`) writes here the pid of a child that would outlive
/// pytest unless its whole process group is killed.
pub struct Hang {
    _dir: tempfile::TempDir,
    pid_file: std::path::PathBuf,
}

impl Hang {
    pub fn new() -> Hang {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child.pid");
        Hang {
            _dir: dir,
            pid_file,
        }
    }

    pub fn command(&self, f: &Fixture, args: &[&str]) -> std::process::Command {
        let mut cmd = f.command(args);
        cmd.env("FIXTURE_CHILD_PID_FILE", &self.pid_file);
        cmd
    }

    /// Starts the tool, waits until the hanging child exists, then interrupts the tool as a terminal's
    /// Ctrl-C would.
    pub fn interrupt(&self, f: &Fixture, args: &[&str]) -> std::process::Output {
        self.when_hanging(f, args, |tool| unsafe {
            libc::kill(tool.id() as i32, libc::SIGINT);
        })
    }

    /// Starts the tool, waits until the hanging child exists, does `act` (to the tool, or to where it
    /// runs), then waits for the tool to end.
    pub fn when_hanging(
        &self,
        f: &Fixture,
        args: &[&str],
        act: impl FnOnce(&std::process::Child),
    ) -> std::process::Output {
        let child = self
            .command(f, args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        self.wait_for_child();
        act(&child);
        output_within(child, "the tool, after the hanging benchmark was acted on")
    }

    /// The hanging child's pid, once the benchmark has written it.
    fn child_pid(&self) -> Option<i32> {
        std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
    }

    /// Waits until the hanging benchmark has started its child (and written its pid whole).
    pub fn wait_for_child(&self) {
        wait_until("the hanging benchmark started its child", || {
            self.child_pid().is_some()
        });
    }

    #[track_caller]
    pub fn assert_child_gone(&self) {
        let pid = self.child_pid().expect("the hanging benchmark ran");
        assert_gone(pid, "the hanging child, after the tool");
    }
}
