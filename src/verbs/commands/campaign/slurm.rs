//! A campaign on Slurm: one array job (`--array=0-N%K`), a task per waiting kernel, each task running
//! `campaign work` on its node, which takes the next kernel from the record as a local worker does (the
//! repository is on a file system the nodes share, as for the Slurm runner). The campaign waits for the
//! job; Ctrl-C or SIGTERM cancels it (its running tasks get SIGTERM first, and each puts its kernel
//! back in the queue), and a job still pending past the queue timeout is cancelled too.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::process;
use crate::system::runner::RunnerSettings;
use crate::system::runner::slurm::{
    DEFAULT_QUEUE_TIMEOUT, JOB_NAME, fmt_wait, parse_submitted, split_args,
};
use crate::system::ui::Progress;

const POLL: Duration = Duration::from_millis(500);
/// How long the cancelled job gets to leave the queue.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

/// Submits the array job of `count` tasks, `jobs` at a time, and waits for its end.
pub fn array(
    repo: &Repo,
    name: &str,
    count: usize,
    jobs: Option<u32>,
    runner: &RunnerSettings,
    progress: &Progress,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let program = std::env::current_exe().context("cannot find this program's path")?;
    let mut range = format!("--array=0-{}", count - 1);
    if let Some(jobs) = jobs {
        range.push_str(&format!("%{jobs}"));
    }
    let task = format!(
        "exec {} campaign work --name {}",
        shlex::try_quote(&program.to_string_lossy())?,
        shlex::try_quote(name)?
    );
    let logs = super::campaign_dir(repo, name)?.join("logs");
    std::fs::create_dir_all(&logs)?;
    let output = format!("--output={}/slurm-%A_%a.log", logs.display());
    let root = format!("--chdir={}", repo.root.display());
    let mut args = vec!["--parsable", "--job-name", JOB_NAME, &output, &root, &range];
    let extra = split_args(&runner.slurm.args)?;
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
            format!("check --slurm-args \"{}\"", runner.slurm.args),
        ));
    };
    progress.line(&format!(
        "campaign {name}: Slurm array job {job} ({count} task(s))"
    ));
    let queue_timeout = runner.slurm.queue_timeout.unwrap_or(DEFAULT_QUEUE_TIMEOUT);
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
                    "its kernels are still queued: `git cutile-perf campaign resume` submits them again",
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
