//! Child processes: each in its own process group, so that a budget overrun or Ctrl-C can kill the whole
//! tree (pytest, its workers, anything they spawned), and so that the terminal's Ctrl-C reaches only us:
//! we decide what to stop and when, and never leave a git command half-done.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Set by SIGINT, SIGTERM or SIGHUP; checked between steps and while waiting for children.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Routes the usual termination signals to [`INTERRUPTED`] instead of killing the process.
pub fn install_interrupt_handler() -> Result<()> {
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&INTERRUPTED))
            .context("cannot install the Ctrl-C handler")?;
    }
    Ok(())
}

/// A command in its own process group with no stdin.
pub fn command(program: &str, args: &[&str]) -> duct::Expression {
    duct::cmd(program, args).stdin_null().before_spawn(|cmd| {
        cmd.process_group(0);
        Ok(())
    })
}

/// How a supervised child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    Interrupted,
}

/// How long a process group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(25);

/// Runs `expression` with output to `log`, until it exits, `deadline` passes or the user interrupts.
/// Whatever the ending, the child's whole process group is gone when this returns.
pub fn supervise(expression: duct::Expression, log: &Path, deadline: Instant) -> Result<Ending> {
    let handle = expression
        .stdout_path(log)
        .stderr_to_stdout()
        .unchecked()
        .start()
        .with_context(|| format!("cannot start {expression:?}"))?;
    let group = handle.pids()[0] as libc::pid_t;
    let ending = loop {
        if let Some(output) = handle
            .try_wait()
            .context("cannot wait for the child process")?
        {
            let status = output.status;
            break match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signaled(signal),
                (None, None) => Ending::Signaled(0),
            };
        }
        if interrupted() || Instant::now() >= deadline {
            let ending = if interrupted() {
                Ending::Interrupted
            } else {
                Ending::TimedOut
            };
            kill_group(group, libc::SIGTERM);
            let grace_end = Instant::now() + GRACE;
            while Instant::now() < grace_end && handle.try_wait().ok().flatten().is_none() {
                std::thread::sleep(POLL);
            }
            kill_group(group, libc::SIGKILL);
            handle.wait().ok();
            break ending;
        }
        std::thread::sleep(POLL);
    };
    // grandchildren that outlived the leader (a dataloader, a compiler) go with it
    kill_group(group, libc::SIGKILL);
    Ok(ending)
}

fn kill_group(group: libc::pid_t, signal: libc::c_int) {
    // ESRCH (nothing left in the group) is the normal case
    unsafe {
        libc::killpg(group, signal);
    }
}
