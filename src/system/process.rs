//! Child processes: each in its own process group, so that a budget overrun or Ctrl-C can kill the whole
//! tree (pytest, its workers, anything they spawned), and so that the terminal's Ctrl-C reaches only us:
//! we decide what to stop and when, and never leave a git command half-done.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::system::process_identity::ProcessIdentity;

/// Set by SIGINT, SIGTERM or SIGHUP. Read by every wait for a child, at least every
/// [`INTERRUPT_CHECK`], and by the verbs between their stages.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// `$XDG_CACHE_HOME`, or `~/.cache` (an unset, empty or relative XDG value is ignored, as the spec says):
/// where the tool keeps what its processes can reuse (the demo's Python, bytecode).
pub fn cache_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".cache"))
        })
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Routes the usual termination signals to `INTERRUPTED` instead of killing the process.
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

/// Runs git in `dir` and returns its stdout; a failure carries git's stderr. The one way the tool runs
/// git. An interrupt ends git (and a hook it runs) within `GIT_GRACE` with [`GitInterrupted`], except
/// inside [`restoring`], where the commands that put the repository back run to their end.
pub fn git(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<String> {
    String::from_utf8(git_bytes(dir, args, env, None)?)
        .with_context(|| format!("git {} printed non-UTF-8 output", args.join(" ")))
}

/// [`git`] for output that may not be UTF-8 (paths), with `input` on its stdin (a commit message:
/// never argv, which has a size limit).
pub fn git_bytes(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
    input: Option<&[u8]>,
) -> Result<Vec<u8>> {
    let mut command = duct::cmd("git", args).dir(dir).before_spawn(|cmd| {
        cmd.process_group(0);
        Ok(())
    });
    command = match input {
        Some(bytes) => command.stdin_bytes(bytes.to_vec()),
        None => command.stdin_null(),
    };
    // the record is the objects as written, whatever `refs/replace/` substitutes (`verify` reports it)
    command = command.env("GIT_NO_REPLACE_OBJECTS", "1");
    for (name, value) in env {
        command = command.env(name, value);
    }
    let expression = command.stdout_capture().stderr_capture();
    let (ending, output) = wait(&expression, Instant::now() + NO_DEADLINE, GIT_GRACE, None)
        .context("cannot run git: is it installed and on PATH?")?;
    if ending == Ending::Interrupted {
        return Err(GitInterrupted(args.join(" ")).into());
    }
    let output = output.context("git's output was lost")?;
    match ending {
        Ending::Exited(0) => Ok(output.stdout),
        Ending::Exited(_) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            anyhow::bail!("git {} failed: {}", args.join(" "), stderr.trim());
        }
        other => anyhow::bail!("git {} ended abnormally: {other:?}", args.join(" ")),
    }
}

/// Ctrl-C (or SIGTERM) arrived mid-step; the repository was left as it was.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: {0}")]
pub struct Interrupted(pub &'static str);

/// git was stopped because the user interrupted the tool.
#[derive(Debug, thiserror::Error)]
#[error("interrupted while git {0} ran")]
pub struct GitInterrupted(pub String);

/// Set while the tool puts the repository back after a failure or an interrupt.
static RESTORING: AtomicBool = AtomicBool::new(false);

/// Runs `work` with interrupts deferred for git: what puts the repository back must not be cut short.
pub fn restoring<T>(work: impl FnOnce() -> T) -> T {
    let before = RESTORING.swap(true, Ordering::SeqCst);
    let result = work();
    RESTORING.store(before, Ordering::SeqCst);
    result
}

fn interrupt_pending() -> bool {
    interrupted() && !RESTORING.load(Ordering::SeqCst)
}

/// git has no deadline of its own (a commit's hook may be slow), only the user's interrupt.
const NO_DEADLINE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// git and its hooks get this long after SIGTERM (git removes its lock files on it) before SIGKILL.
const GIT_GRACE: Duration = Duration::from_millis(500);

/// Where the process group of a long-running child (pytest) is written while it runs, so that a later
/// command can end it if the tool was killed without cleaning up.
static GROUP_FILE: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Records the groups of [`supervise`]d children in `path` from now on, and those of [`Background`]
/// children beside it (`path.<leader>`: several live at once).
pub fn record_groups_in(path: std::path::PathBuf) {
    *GROUP_FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
}

/// The file a background child's group is recorded in, if groups are recorded.
fn background_group_file(leader: libc::pid_t) -> Option<std::path::PathBuf> {
    let recorded = GROUP_FILE.lock().unwrap_or_else(|e| e.into_inner());
    let path = recorded.as_ref()?;
    let mut name = path.file_name()?.to_os_string();
    name.push(format!(".{leader}"));
    Some(path.with_file_name(name))
}

/// Ends every group recorded at `path` or beside it by a background child (see [`end_recorded_group`]);
/// returns those it ended.
pub fn end_recorded_groups(path: &Path) -> Vec<libc::pid_t> {
    let mut files = vec![path.to_path_buf()];
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let prefix = format!("{}.", name.to_string_lossy());
        let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
        files.extend(
            entries
                .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
                .map(|entry| entry.path()),
        );
    }
    files
        .iter()
        .filter_map(|file| end_recorded_group(file))
        .collect()
}

/// Ends the process group recorded in `path` if it is still the one recorded (a tool killed mid-run
/// left it): its leader the very process that was started, or, the leader gone, its members from this
/// boot (a group's number is not reused while a member lives). A number alone, or a leader that is
/// another process now, is never signalled. Returns the group it ended.
pub fn end_recorded_group(path: &Path) -> Option<libc::pid_t> {
    let text = std::fs::read_to_string(path).ok()?;
    let _ = std::fs::remove_file(path);
    let recorded = ProcessIdentity::parse(&text)?;
    let group = libc::pid_t::try_from(recorded.pid).ok()?;
    let ours = match ProcessIdentity::of(recorded.pid) {
        Some(_) => recorded.alive(),
        None => recorded.this_boot(),
    };
    if !ours || unsafe { libc::killpg(group, 0) } != 0 {
        return None;
    }
    end_group(group);
    Some(group)
}

/// Ends at once the group a kept worker leads (not our child: once dead it may stay a zombie until its
/// new parent reaps it, which counts as gone), if `leader` is still that process; waits at most
/// `GRACE` for the leader to go.
pub fn end_led_group(leader: &ProcessIdentity) {
    if !leader.alive() {
        return;
    }
    kill_group(leader.pid as libc::pid_t, libc::SIGKILL);
    let until = Instant::now() + GRACE;
    while Instant::now() < until && leader.alive() {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends a process group that is not our child: SIGTERM, then SIGKILL once it is gone or [`GRACE`] passed.
fn end_group(group: libc::pid_t) {
    kill_group(group, libc::SIGTERM);
    // a worker held still (stopped) while the other side measured acts on it only once it goes on
    kill_group(group, libc::SIGCONT);
    let until = Instant::now() + GRACE;
    while Instant::now() < until && unsafe { libc::killpg(group, 0) } == 0 {
        std::thread::sleep(Duration::from_millis(50));
    }
    kill_group(group, libc::SIGKILL);
}

/// A command in its own process group with no stdin.
pub fn command(program: &str, args: &[&str]) -> duct::Expression {
    duct::cmd(program, args).stdin_null().before_spawn(|cmd| {
        cmd.process_group(0);
        Ok(())
    })
}

/// A command in a session of its own (so also a process group of its own) with no stdin: a warm worker
/// that may outlive the tool, out of reach of a shell's job control and of the terminal's hang-up.
pub fn session_command(program: &str, args: &[&str]) -> duct::Expression {
    duct::cmd(program, args).stdin_null().before_spawn(|cmd| {
        // SAFETY: setsid is async-signal-safe, and nothing else runs between fork and exec
        unsafe {
            cmd.pre_exec(|| match libc::setsid() {
                -1 => Err(std::io::Error::last_os_error()),
                _ => Ok(()),
            });
        }
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
/// How often a wait wakes to look at the interrupt flag; a child's exit ends the wait at once.
const INTERRUPT_CHECK: Duration = Duration::from_millis(100);

/// Runs `expression` with both output streams to `log`, until it exits, `deadline` passes or the user
/// interrupts. Whatever the ending, the child's whole process group is gone when this returns.
pub fn supervise(expression: duct::Expression, log: &Path, deadline: Instant) -> Result<Ending> {
    // Both streams into the log through one file: duct applies an outer redirect first, so
    // `stdout_path(..).stderr_to_stdout()` would send stderr to our own stdout.
    let file =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let expression = expression
        .stderr_file(file.try_clone().context("cannot share the log file")?)
        .stdout_file(file);
    let group_file = GROUP_FILE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(wait(&expression, deadline, GRACE, group_file.as_deref())?.0)
}

/// Runs `expression` with the terminal's output streams until it exits, `deadline` passes or the user
/// interrupts; its process group is gone when this returns.
pub fn run(expression: &duct::Expression, deadline: Instant) -> Result<Ending> {
    Ok(wait(expression, deadline, GRACE, None)?.0)
}

/// What a short command printed, and how it ended.
#[derive(Debug)]
pub struct Captured {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Captured {
    pub fn success(&self) -> bool {
        self.ending == Ending::Exited(0)
    }
}

/// Runs a short command (nvidia-smi, a version check) with its output captured, killed like any child
/// when `timeout` passes or the user interrupts: a wedged tool cannot hang the verb.
pub fn capture(expression: duct::Expression, timeout: Duration) -> Result<Captured> {
    let expression = expression.stdout_capture().stderr_capture();
    let (ending, output) = wait(&expression, Instant::now() + timeout, GRACE, None)?;
    let (stdout, stderr) = output.map_or_else(Default::default, |o| (o.stdout, o.stderr));
    Ok(Captured {
        ending,
        stdout,
        stderr,
    })
}

/// Starts `expression` and waits for it, ending its process group at the deadline or on an interrupt.
fn wait(
    expression: &duct::Expression,
    deadline: Instant,
    grace: Duration,
    group_file: Option<&Path>,
) -> Result<(Ending, Option<std::process::Output>)> {
    let handle = expression
        .unchecked()
        .start()
        .with_context(|| format!("cannot start {expression:?}"))?;
    let group = handle.pids()[0] as libc::pid_t;
    // without its identity the group is never recorded: a bare number may name another group later
    if let (Some(path), Some(leader)) = (group_file, ProcessIdentity::of(group as u32)) {
        let _ = std::fs::write(path, leader.to_string());
    }
    let ending = loop {
        let wake = deadline.min(Instant::now() + INTERRUPT_CHECK);
        if let Some(output) = handle
            .wait_deadline(wake)
            .context("cannot wait for the child process")?
        {
            break ending_of(output.status);
        }
        if interrupt_pending() || Instant::now() >= deadline {
            let ending = if interrupt_pending() {
                Ending::Interrupted
            } else {
                Ending::TimedOut
            };
            kill_group(group, libc::SIGTERM);
            let _ = handle.wait_deadline(Instant::now() + grace);
            kill_group(group, libc::SIGKILL);
            handle.wait().ok();
            break ending;
        }
    };
    // grandchildren that outlived the leader (a dataloader, a compiler) go with it
    kill_group(group, libc::SIGKILL);
    if let Some(path) = group_file {
        let _ = std::fs::remove_file(path);
    }
    Ok((ending, handle.into_output().ok()))
}

/// A long-lived child (a warm worker) in its own process group, both output streams to a log; its whole
/// group is ended (SIGKILL: a worker has nothing to save) when it is dropped: on the step's end, an
/// error, the budget or Ctrl-C alike, unless it was [`kept`](Background::keep) for a later command,
/// which [`adopts`](Background::adopt) it.
pub struct Background {
    /// The child as started by this process; none for one adopted from an earlier command.
    handle: Option<duct::Handle>,
    /// The leader as it started: an adopted group is signalled only while it is still that process.
    leader: Option<ProcessIdentity>,
    group: libc::pid_t,
    /// Where its group is recorded for a later command to end, should the tool be killed.
    recorded: Option<std::path::PathBuf>,
    /// Left running on purpose: dropping it ends nothing.
    kept: bool,
}

impl Background {
    pub fn start(expression: duct::Expression, log: &Path) -> Result<Background> {
        let file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let handle = expression
            .stderr_file(file.try_clone().context("cannot share the log file")?)
            .stdout_file(file)
            .unchecked()
            .start()
            .context("cannot start a background process")?;
        let group = handle.pids()[0] as libc::pid_t;
        Ok(Background::owning(
            Some(handle),
            ProcessIdentity::of(group as u32),
            group,
        ))
    }

    /// The group that `leader` leads, started by an earlier command and kept: this process ends it as
    /// its own from now on (dropped, it is ended), unless it is kept again.
    pub fn adopt(leader: ProcessIdentity) -> Background {
        let group = leader.pid as libc::pid_t;
        Background::owning(None, Some(leader), group)
    }

    fn owning(
        handle: Option<duct::Handle>,
        leader: Option<ProcessIdentity>,
        group: libc::pid_t,
    ) -> Background {
        // as in `wait`: without its identity the group is never recorded
        let recorded =
            background_group_file(group)
                .zip(leader.clone())
                .and_then(|(path, leader)| {
                    std::fs::write(&path, leader.to_string())
                        .ok()
                        .map(|()| path)
                });
        Background {
            handle,
            leader,
            group,
            recorded,
            kept: false,
        }
    }

    /// The leader's pid, which is also the group's number.
    pub fn pid(&self) -> u32 {
        self.group as u32
    }

    /// The leader's identity, where `/proc` gave it.
    pub fn leader(&self) -> Option<&ProcessIdentity> {
        self.leader.as_ref()
    }

    /// How it ended, if it has; an adopted process's ending is unknown (signal 0) beyond its being gone.
    pub fn ended(&self) -> Option<Ending> {
        match &self.handle {
            Some(handle) => {
                let output = handle.try_wait().ok().flatten()?;
                Some(ending_of(output.status))
            }
            None => (!self.leader.as_ref().is_some_and(ProcessIdentity::alive))
                .then_some(Ending::Signaled(0)),
        }
    }

    /// Sends its group the signal that ends it, without waiting: several groups signalled first and
    /// dropped after end side by side, not one after the other. An adopted group is signalled only while
    /// its leader is still that process; a kept one not at all.
    pub fn begin_ending(&self) {
        let ours = match (&self.handle, &self.leader) {
            (Some(_), _) => true,
            (None, Some(leader)) => leader.alive(),
            (None, None) => false,
        };
        if ours && !self.kept {
            kill_group(self.group, libc::SIGKILL);
        }
    }

    /// Leaves the group running past this process, no longer recorded as this command's: whoever keeps
    /// it records it.
    pub fn keep(&mut self) {
        self.kept = true;
        if let Some(path) = self.recorded.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        match &self.handle {
            Some(handle) => {
                // a warm worker has nothing to save: ended at once, so that Ctrl-C stays quick
                kill_group(self.group, libc::SIGKILL);
                let _ = handle.wait();
            }
            None => {
                if let Some(leader) = &self.leader {
                    end_led_group(leader);
                }
            }
        }
        if let Some(path) = &self.recorded {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn ending_of(status: std::process::ExitStatus) -> Ending {
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => Ending::Signaled(0),
    }
}

fn kill_group(group: libc::pid_t, signal: libc::c_int) {
    // ESRCH (nothing left in the group) is the normal case
    unsafe {
        libc::killpg(group, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// What a killed command left running (tests in a group of their own, their leader recorded as
    /// `Background` and `wait` record it) is ended by the next command from the record alone.
    #[test]
    fn a_recorded_group_left_running_is_ended_from_its_record() {
        let mut left = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("child-group.1");
        let leader = ProcessIdentity::of(left.id()).unwrap();
        std::fs::write(&record, leader.to_string()).unwrap();
        let base = dir.path().join("child-group");
        assert_eq!(end_recorded_groups(&base), [left.id() as libc::pid_t]);
        let ended = left.try_wait().unwrap();
        if ended.is_none() {
            let _ = left.kill();
        }
        assert!(ended.is_some(), "the group was not ended");
        assert!(!record.exists(), "the record outlived the group");
        // the record of a group that has ended since ends nothing, and never a stranger
        std::fs::write(&record, leader.to_string()).unwrap();
        assert_eq!(end_recorded_groups(&base), Vec::<libc::pid_t>::new());
    }
}
