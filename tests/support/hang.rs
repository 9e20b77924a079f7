//! The fixture's hanging benchmark: a child process that outlives pytest unless its whole tree is
//! killed, for the tests that check nothing is left behind.

use std::time::Duration;

use super::{Fixture, alive};

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
        child.wait_with_output().unwrap()
    }

    /// Waits until the hanging benchmark has started its child.
    pub fn wait_for_child(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !self.pid_file.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
    }

    #[track_caller]
    pub fn assert_child_gone(&self) {
        let pid: i32 = std::fs::read_to_string(&self.pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!alive(pid), "the hanging child {pid} outlived the tool");
    }
}
