//! A Slurm array job (`sbatch --array=0-N%K`): `N` tasks of one command, `K` at a time, each on a node
//! Slurm picks; the caller's tasks share their work through a record of their own. The job is waited
//! for; Ctrl-C or SIGTERM cancels it (its pending tasks at once, its running ones by SIGTERM first, so
//! that each can end as on Ctrl-C), and a job still pending past the queue timeout is cancelled too.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{
    DEFAULT_QUEUE_TIMEOUT, JOB_NAME, SlurmSettings, fmt_wait, parse_submitted, split_args,
};
use crate::rules::hint::hinted;
use crate::rules::units::counted;
use crate::system::process;
use crate::system::ui::Progress;

const POLL: Duration = Duration::from_millis(500);
/// How long the cancelled job gets to leave the queue.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

/// One array job: `count` tasks (`jobs` at a time), each running `task` (words, quoted here for the
/// batch script) in `dir`, its output in `logs`.
pub struct Array<'a> {
    pub task: &'a [String],
    pub count: usize,
    pub jobs: Option<u32>,
    pub dir: &'a Path,
    pub logs: &'a Path,
    pub settings: &'a SlurmSettings,
}

/// Submits the array job and waits for its end; Ctrl-C cancels it.
pub fn run_array(array: &Array, progress: &Progress) -> Result<()> {
    if array.count == 0 {
        return Ok(());
    }
    let mut range = format!("--array=0-{}", array.count - 1);
    if let Some(jobs) = array.jobs {
        range.push_str(&format!("%{jobs}"));
    }
    let task = format!(
        "exec {}",
        shlex::try_join(array.task.iter().map(String::as_str))?
    );
    let output = format!("--output={}/slurm-%A_%a.log", array.logs.display());
    let root = format!("--chdir={}", array.dir.display());
    let mut args = vec!["--parsable", "--job-name", JOB_NAME, &output, &root, &range];
    let extra = split_args(&array.settings.args)?;
    args.extend(extra.iter().map(String::as_str));
    args.extend(["--wrap", &task]);
    // sbatch runs to its end even after Ctrl-C: a job whose id is lost would hold nodes
    let submitted = process::command("sbatch", &args)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .context("cannot run sbatch: is Slurm's client on PATH?")?;
    let stdout = String::from_utf8_lossy(&submitted.stdout);
    let Some(job) = parse_submitted(&stdout).filter(|_| submitted.status.success()) else {
        return Err(hinted(
            format!(
                "sbatch refused the array job: {}",
                String::from_utf8_lossy(&submitted.stderr).trim()
            ),
            format!("check --slurm-args \"{}\"", array.settings.args),
        ));
    };
    progress.line(&format!(
        "Slurm array job {job} ({})",
        counted(array.count as u64, "task")
    ));
    let queue_timeout = array
        .settings
        .queue_timeout
        .unwrap_or(DEFAULT_QUEUE_TIMEOUT);
    let submitted_at = Instant::now();
    loop {
        let states = states(&job);
        if states.is_empty() {
            return Ok(());
        }
        let pending = states.iter().all(|s| s == "PENDING");
        if process::interrupted() || (pending && submitted_at.elapsed() > queue_timeout) {
            cancel(&job);
            if !process::interrupted() {
                return Err(hinted(
                    format!(
                        "the array job {job} waited in the queue past {}",
                        fmt_wait(queue_timeout)
                    ),
                    "what its tasks had not taken is still queued: `git cutile-perf campaign resume` submits it again",
                ));
            }
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
}

/// The states of the job's tasks still in the queue (none once it has ended).
fn states(job: &str) -> Vec<String> {
    let listed = process::command("squeue", &["-h", "-j", job, "-o", "%T"])
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run();
    listed.map_or(Vec::new(), |out| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    })
}

/// Cancels the job: its pending tasks at once; its running tasks get SIGTERM, which each takes as Ctrl-C
/// (its kernel's `start` ends, its worktree is removed, the kernel goes back to the queue); what is still
/// there after [`CANCEL_WAIT`] is cancelled outright.
fn cancel(job: &str) {
    let scancel = |args: &[&str]| {
        let _ = process::command("scancel", args).unchecked().run();
    };
    scancel(&["--state=PENDING", job]);
    scancel(&["--full", "--signal=TERM", job]);
    let until = Instant::now() + CANCEL_WAIT;
    while Instant::now() < until && !states(job).is_empty() {
        std::thread::sleep(POLL);
    }
    scancel(&[job]);
    let until = Instant::now() + CANCEL_WAIT;
    while Instant::now() < until && !states(job).is_empty() {
        std::thread::sleep(POLL);
    }
}
