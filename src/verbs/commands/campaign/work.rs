//! The campaign's workers: each takes the next waiting kernel from the record (atomically: see
//! `record::campaign`), makes its worktree, runs `start` there as a child pinned to the worker's GPU,
//! and records how it ended. A kernel that fails is cleaned up (its worktree and branch removed) and
//! the others go on; Ctrl-C or SIGTERM stops each child as Ctrl-C stops `start`, and what was not
//! finished goes back to the queue, its worktree and branch gone: each session is whole or absent.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::features::inspect::source::CORRECTNESS_ONLY;
use crate::record::campaign::{self, Campaign, Entry, Lease, State};
use crate::record::journal;
use crate::system::git::Repo;
use crate::system::process;
use crate::system::ui::Progress;

/// How long a stopped `start` gets to put its worktree back (it ends its tests first) before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// How often a worker looks at its child, the deadline and the interrupt flag.
const POLL: Duration = Duration::from_millis(100);
/// What a worker's lease on its kernel lasts beyond the kernel's time limit, for a holder on another
/// machine (an array task), whose end cannot be seen from here.
const LEASE_SLACK_S: u64 = 600;

/// What one worker runs with: the campaign, its GPU and the time limit of each kernel.
pub struct Worker<'a> {
    /// The repository, opened by the worker's own thread.
    pub repo: Repo,
    pub name: &'a str,
    /// The GPU it pins its children to (`CUDA_VISIBLE_DEVICES`); none: the environment's.
    pub gpu: Option<String>,
    /// Whether `--gpus` goes to `start` too (not with `--no-gpu`).
    pub pass_gpu: bool,
    /// The Slurm array task it runs as, if any.
    pub job: Option<String>,
    pub timeout: Duration,
    pub progress: &'a Progress,
}

/// How one attempt at a kernel's baseline ended.
enum Outcome {
    Started { branch: String },
    Failed(String),
    Interrupted,
}

/// The directory of campaign `name`'s worktrees and logs, in the repository's common git dir.
pub fn campaign_dir(repo: &Repo, name: &str) -> Result<PathBuf> {
    Ok(crate::system::git::common_dir(repo)?
        .join("cutile-perf/campaigns")
        .join(name))
}

impl Worker<'_> {
    /// Takes kernels until none waits, or until the user interrupts (`once`: one kernel at most).
    pub fn run(&self, once: bool) -> Result<()> {
        while !process::interrupted() {
            let Some(entry) = self.claim()? else {
                return Ok(());
            };
            self.progress.line(&format!(
                "{}: baseline{}",
                entry.label(),
                self.gpu
                    .as_deref()
                    .map_or(String::new(), |gpu| format!(" on GPU {gpu}"))
            ));
            let began = Instant::now();
            let outcome = self.attempt(&entry);
            let seconds = began.elapsed().as_secs_f64();
            let outcome = outcome.unwrap_or_else(|e| Outcome::Failed(format!("{e:#}")));
            self.record(&entry, outcome, seconds)?;
            if once {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The next waiting kernel, marked running under this worker's lease.
    fn claim(&self) -> Result<Option<Entry>> {
        let dir = campaign_dir(&self.repo, self.name)?;
        let lease = Lease::new(None, self.timeout.as_secs() + LEASE_SLACK_S)?;
        campaign::update(&self.repo, self.name, "a worker takes a kernel", |c| {
            let Some(entry) = c.kernels.iter_mut().find(|e| e.waiting()) else {
                return Ok(None);
            };
            entry.state = State::Running;
            entry.reason = None;
            entry.attempts += 1;
            entry.gpu = self.gpu.clone();
            entry.job = self.job.clone();
            entry.lease = Some(lease.clone());
            entry.branch = None;
            entry.seconds = None;
            let worktree = dir.join(format!("{}-{}", entry.suite, entry.kernel));
            entry.worktree = Some(worktree.display().to_string());
            Ok(Some(entry.clone()))
        })
    }

    /// Records how `entry`'s attempt ended.
    fn record(&self, entry: &Entry, outcome: Outcome, seconds: f64) -> Result<()> {
        let label = entry.label();
        let line = match &outcome {
            Outcome::Started { branch } => format!("{label}: started on {branch} ({seconds:.1} s)"),
            Outcome::Failed(reason) => format!("{label}: failed: {reason}"),
            Outcome::Interrupted => format!("{label}: interrupted, back in the queue"),
        };
        self.progress.line(&line);
        let what = format!("{label} {}", line.split(": ").nth(1).unwrap_or("ended"));
        campaign::update(&self.repo, self.name, &what, |c| {
            let Some(mine) = c.kernels.iter_mut().find(|e| e.label() == label) else {
                return Ok(None);
            };
            mine.lease = None;
            mine.seconds = Some(seconds);
            match &outcome {
                Outcome::Started { branch } => {
                    mine.state = State::Started;
                    mine.branch = Some(branch.clone());
                }
                Outcome::Failed(reason) => {
                    mine.state = State::Failed;
                    mine.reason = Some(reason.clone());
                    mine.worktree = None;
                }
                Outcome::Interrupted => mine.requeue(Some("interrupted".into())),
            }
            Ok(Some(()))
        })?;
        Ok(())
    }

    /// One kernel's worktree and `start` in it; on anything but a started session, both are removed.
    fn attempt(&self, entry: &Entry) -> Result<Outcome> {
        let record = campaign::load(&self.repo, self.name)?
            .context("the campaign's record is gone")?
            .1;
        let worktree = PathBuf::from(
            entry
                .worktree
                .as_deref()
                .context("a claimed kernel has a worktree")?,
        );
        remove_worktree(&self.repo, &worktree, None);
        std::fs::create_dir_all(worktree.parent().context("a worktree has a parent")?)?;
        self.repo.git(&[
            "worktree",
            "add",
            "--detach",
            &worktree.display().to_string(),
            &record.base,
        ])?;
        let outcome = self.start(&record, entry, &worktree);
        let tree = Repo::discover(&worktree).ok();
        if matches!(outcome, Ok(Outcome::Started { .. })) {
            // the session's warm worker would wait idle, holding GPU memory, until an agent steps it,
            // beside every other kernel's baseline: its first step starts one again
            if let Some(tree) = &tree {
                let _ = crate::measure::paired::end_kept_workers(tree);
            }
        } else {
            let branch = tree.and_then(|tree| tree.branch().ok().flatten());
            remove_worktree(&self.repo, &worktree, branch.as_deref());
        }
        outcome
    }

    /// `start` for `entry` in `worktree`, its report in the campaign's logs. A kernel whose tests check
    /// correctness only is started on the session perf file `start --scaffold` writes from them first,
    /// unedited: the campaign's sessions start without a hand edit, or fail with the scaffold's reason.
    fn start(&self, record: &Campaign, entry: &Entry, worktree: &Path) -> Result<Outcome> {
        let deadline = Instant::now() + self.timeout;
        let named = ["start", &entry.kernel, "--suite", &entry.suite, "--json"];
        let test = match entry.source == CORRECTNESS_ONLY {
            true => match self.scaffold(record, entry, worktree, &named, deadline)? {
                Ok(file) => Some(file),
                Err(outcome) => return Ok(outcome),
            },
            false => None,
        };
        let mut args = named.to_vec();
        if let Some(test) = &test {
            args.extend(["--test", test]);
        }
        args.extend(record.start_args.iter().map(String::as_str));
        if let Some(gpu) = self.gpu.as_deref().filter(|_| self.pass_gpu) {
            args.extend(["--gpus", gpu]);
        }
        let ran = self.child(entry, worktree, "start", &args, deadline)?;
        Ok(self.outcome(ran))
    }

    /// `start --scaffold` (`named` is the kernel's `start`), with the campaign's Python: the session perf
    /// file it wrote, or how the kernel ends when it wrote none.
    fn scaffold(
        &self,
        record: &Campaign,
        entry: &Entry,
        worktree: &Path,
        named: &[&str],
        deadline: Instant,
    ) -> Result<Result<String, Outcome>> {
        let mut args = [named, &["--scaffold"]].concat();
        if let Some(python) = record.start_flag("--python") {
            args.extend(["--python", python]);
        }
        let ran = self.child(entry, worktree, "scaffold", &args, deadline)?;
        let file = ran.report.as_ref().and_then(|r| r["file"].as_str());
        Ok(match (file, &ran.ended) {
            (Some(file), Ended::Status(status)) if status.success() => Ok(file.to_string()),
            _ => Err(match self.outcome(ran) {
                Outcome::Failed(reason) => Outcome::Failed(format!("start --scaffold: {reason}")),
                other => other,
            }),
        })
    }

    /// Runs this program with `args` in `worktree`, pinned to the worker's GPU, until it ends or
    /// `deadline` passes. Its stdout (its `--json` report) and stderr are kept in the campaign's logs,
    /// named after the kernel, the attempt and `verb`.
    fn child(
        &self,
        entry: &Entry,
        worktree: &Path,
        verb: &str,
        args: &[&str],
        deadline: Instant,
    ) -> Result<Ran> {
        let logs = campaign_dir(&self.repo, self.name)?.join("logs");
        std::fs::create_dir_all(&logs)?;
        let stem = match verb {
            "start" => format!("{}-{}-{}", entry.suite, entry.kernel, entry.attempts),
            verb => format!("{}-{}-{}-{verb}", entry.suite, entry.kernel, entry.attempts),
        };
        let (report_path, log) = (
            logs.join(format!("{stem}.json")),
            logs.join(format!("{stem}.log")),
        );
        let mut command = Command::new(tool_binary());
        command
            .current_dir(worktree)
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&report_path)?)
            .stderr(std::fs::File::create(&log)?)
            .process_group(0);
        if let Some(gpu) = &self.gpu {
            command.env("CUDA_VISIBLE_DEVICES", gpu);
        }
        let ended = supervise(command, deadline)?;
        // a child killed past its grace may leave its tests' process group behind
        if let Ok(tree) = Repo::discover(worktree)
            && let Ok(groups) = journal::group_file(&tree)
        {
            process::end_recorded_groups(&groups);
        }
        let report = std::fs::read_to_string(&report_path).unwrap_or_default();
        Ok(Ran {
            ended,
            report: serde_json::from_str(&report).ok(),
            log,
        })
    }

    /// How a child ended, for the record: a started session is one whose `start` reported its branch.
    fn outcome(&self, ran: Ran) -> Outcome {
        match ran.ended {
            Ended::Interrupted => Outcome::Interrupted,
            Ended::TimedOut => Outcome::Failed(format!(
                "timed out after {} (log: {})",
                crate::system::runner::slurm::fmt_wait(self.timeout),
                ran.log.display()
            )),
            Ended::Status(status) => match ran.report.as_ref().and_then(|r| r["branch"].as_str()) {
                Some(branch) if status.success() => Outcome::Started {
                    branch: branch.to_string(),
                },
                _ => Outcome::Failed(failure(ran.report.as_ref(), status, &ran.log)),
            },
        }
    }
}

/// A child's run: how it ended, its `--json` report if it wrote one, and its log.
struct Ran {
    ended: Ended,
    report: Option<serde_json::Value>,
    log: PathBuf,
}

/// Why a `start` failed: its refusal's error, or how it ended.
fn failure(
    report: Option<&serde_json::Value>,
    status: std::process::ExitStatus,
    log: &Path,
) -> String {
    if let Some(error) = report.and_then(|r| r["error"].as_str()) {
        return error.to_string();
    }
    let how = match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("exited with code {}", status.code().unwrap_or(-1)),
    };
    format!("{how} without a report (log: {})", log.display())
}

/// How a supervised child ended.
enum Ended {
    Status(std::process::ExitStatus),
    TimedOut,
    Interrupted,
}

/// Runs `command` (in a process group of its own) until it exits, `deadline` passes or the user
/// interrupts; then it gets SIGTERM, which `start` takes as Ctrl-C, and [`STOP_GRACE`] to put its
/// worktree back before its group is killed.
fn supervise(mut command: Command, deadline: Instant) -> Result<Ended> {
    let mut child = command
        .spawn()
        .context("cannot run git-cutile-perf start")?;
    let group = child.id() as libc::pid_t;
    let stopped = loop {
        if let Some(status) = child.try_wait()? {
            break Ended::Status(status);
        }
        if process::interrupted() || Instant::now() >= deadline {
            let why = match process::interrupted() {
                true => Ended::Interrupted,
                false => Ended::TimedOut,
            };
            unsafe { libc::killpg(group, libc::SIGTERM) };
            let until = Instant::now() + STOP_GRACE;
            while Instant::now() < until && child.try_wait()?.is_none() {
                std::thread::sleep(POLL);
            }
            break why;
        }
        std::thread::sleep(POLL);
    };
    unsafe { libc::killpg(group, libc::SIGKILL) };
    child.wait().ok();
    Ok(stopped)
}

/// Removes `worktree` (whatever is in it: a failed session keeps nothing) and `branch`, if given.
pub fn remove_worktree(repo: &Repo, worktree: &Path, branch: Option<&str>) {
    if worktree.exists() {
        let path = worktree.display().to_string();
        let _ =
            process::restoring(|| repo.git(&["worktree", "remove", "--force", "--force", &path]));
        let _ = std::fs::remove_dir_all(worktree);
    }
    let _ = process::restoring(|| repo.git(&["worktree", "prune"]));
    if let Some(branch) = branch {
        let _ = process::restoring(|| repo.git(&["branch", "-D", branch]));
        let baseline_ref = crate::system::git::baseline_ref(branch);
        let _ = process::restoring(|| repo.git(&["update-ref", "-d", &baseline_ref]));
    }
}

/// This program, which runs each kernel's `start`.
pub fn tool_binary() -> PathBuf {
    match crate::system::git::TOOL_BINARY.get() {
        Some(tool) => tool.clone(),
        None => std::env::current_exe().unwrap_or_else(|_| "git-cutile-perf".into()),
    }
}
