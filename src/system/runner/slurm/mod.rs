//! One Slurm allocation per iteration: a holding batch job (`sbatch --parsable`, a script that only
//! sleeps) keeps one node; every command runs on it as a job step (`srun --jobid J --overlap`), so the
//! correctness and benchmark runs share the node and GPU; `scancel` gives it back. Only Slurm's client
//! programs are used, and only their machine-readable output (`--parsable`, `squeue -h -o`).

mod array;
mod settings;
mod status;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{Placement, Runner, Workers};
use crate::rules::hint::{Hinted, hinted};
use crate::system::process::{Ending, Interrupted};
use crate::system::ui::Progress;
use crate::{system::gpu, system::process};

pub use array::{Array, run_array};
pub use settings::{SlurmSettings, fmt_wait, split_args};
pub use status::{JobStatus, loss_reason, parse_status, parse_submitted};
use status::{is_alive, is_waiting};

/// How long an iteration waits for its node unless `--queue-timeout` says otherwise.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The name of every job the tool submits, so that `squeue -n cutile-perf` finds them.
pub const JOB_NAME: &str = "cutile-perf";
const POLL: Duration = Duration::from_millis(500);
/// How long `scancel` gets to make a job leave the running states.
const CANCEL_WAIT: Duration = Duration::from_secs(30);
/// How long the node gets to write the visibility token.
const CHECK_DEADLINE: Duration = Duration::from_secs(120);
/// squeue's fields: state, node list, reason (why pending, or None).
const STATUS_FORMAT: &str = "%T|%N|%r";

// sbatch, squeue and scancel run to their end even after Ctrl-C (process::capture would stop them):
// a submission whose job id is lost, or a cancel cut short, would leave a job holding a node.

/// How long `command -v` on the node may take.
const FIND_TIMEOUT: Duration = Duration::from_secs(60);

/// The Slurm client programs, found on PATH.
struct Clients {
    sbatch: PathBuf,
    srun: PathBuf,
    squeue: PathBuf,
    scancel: PathBuf,
}

impl Clients {
    fn find() -> Result<Clients> {
        let find = |name: &str| {
            which::which(name).with_context(|| {
                Hinted::new(
                    format!("Slurm's {name} is not on PATH"),
                    "run on a machine with the Slurm client programs (a login node), or start the session \
                     with --runner local",
                )
            })
        };
        Ok(Clients {
            sbatch: find("sbatch")?,
            srun: find("srun")?,
            squeue: find("squeue")?,
            scancel: find("scancel")?,
        })
    }
}

/// A held node: the job, where it runs, and what GPU it has.
pub struct Allocation {
    clients: Clients,
    placement: Placement,
    released: bool,
    /// Where the wait for the node and the job's end are said: the verb's progress.
    progress: Progress,
}

impl Allocation {
    /// Submits the holding job with the user's `settings.args` (split at spaces), waits up to
    /// `queue_timeout` for its node (Ctrl-C cancels it), then checks that the node sees `root` and
    /// reads its GPU. Any failure cancels the job.
    pub fn request(
        settings: &SlurmSettings,
        root: &Path,
        sandbox: &Path,
        progress: &Progress,
    ) -> Result<Allocation> {
        let clients = Clients::find()?;
        let job = submit(&clients, &settings.args)?;
        let mut allocation = Allocation {
            clients,
            placement: Placement {
                node: String::new(),
                job,
                gpu: None,
            },
            released: false,
            progress: progress.clone(),
        };
        allocation.placement.node =
            allocation.wait_for_node(settings.queue_timeout.unwrap_or(DEFAULT_QUEUE_TIMEOUT))?;
        allocation.check_sees(root, sandbox)?;
        allocation.placement.gpu = gpu::probe(|args| allocation.command("nvidia-smi", args, root))
            .map(|state| state.gpu.identity());
        Ok(allocation)
    }

    fn job(&self) -> &str {
        &self.placement.job
    }

    fn step(&self, chdir: &Path, program: &str, args: &[&str]) -> duct::Expression {
        let chdir = format!("--chdir={}", chdir.display());
        let mut words = vec![
            "--jobid",
            self.job(),
            "--overlap",
            "--quiet",
            "--nodes=1",
            "--ntasks=1",
            &chdir,
            program,
        ];
        words.extend_from_slice(args);
        process::command(&self.clients.srun.to_string_lossy(), &words)
    }

    /// The job's state now, or `None` when squeue no longer knows it.
    fn status(&self) -> Result<Option<JobStatus>> {
        let output = process::command(
            &self.clients.squeue.to_string_lossy(),
            &["-h", "--states=all", "-j", self.job(), "-o", STATUS_FORMAT],
        )
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .context("cannot run squeue")?;
        Ok(parse_status(&String::from_utf8_lossy(&output.stdout)))
    }

    /// The node name once the job runs; Ctrl-C and the queue timeout cancel it.
    fn wait_for_node(&mut self, queue_timeout: Duration) -> Result<String> {
        let queued = Instant::now();
        let bar = self
            .progress
            .spinner(&format!("waiting for a node (Slurm job {})", self.job()));
        let outcome = loop {
            let status = self.status()?;
            let waited = queued.elapsed();
            match status {
                Some(s) if s.state == "RUNNING" => break Ok(s.node),
                Some(s) if is_waiting(&s.state) => {
                    bar.set_message(format!(
                        "waiting for a node: {} (Slurm job {}, {})",
                        fmt_wait(waited),
                        self.job(),
                        s.reason
                    ));
                    if waited >= queue_timeout {
                        break Err(hinted(
                            format!(
                                "no node within the queue timeout of {} (Slurm job {} still {}: {}); the job \
                                 was cancelled",
                                fmt_wait(queue_timeout),
                                self.job(),
                                s.state,
                                s.reason
                            ),
                            "raise --queue-timeout, or ask for less with --slurm-args",
                        ));
                    }
                }
                other => {
                    break Err(hinted(
                        format!(
                            "{} before its node was ready",
                            loss_reason(self.job(), other.as_ref()).unwrap_or_default()
                        ),
                        format!("check --slurm-args and `squeue -j {}`", self.job()),
                    ));
                }
            }
            if process::interrupted() {
                break Err(
                    Interrupted("the queued Slurm job was cancelled; nothing was recorded").into(),
                );
            }
            std::thread::sleep(POLL);
        };
        bar.finish_and_clear();
        match outcome {
            Ok(node) => {
                self.progress.line(&format!(
                    "node {node} (Slurm job {}) after {} in the queue",
                    self.job(),
                    fmt_wait(queued.elapsed())
                ));
                Ok(node)
            }
            Err(e) => {
                self.progress.line(&format!(
                    "waited {} for a node; cancelling Slurm job {}",
                    fmt_wait(queued.elapsed()),
                    self.job()
                ));
                self.cancel();
                Err(e)
            }
        }
    }

    /// The node writes a fresh token into the sandbox; reading it back here proves both sides see the
    /// same work tree (results and logs come back through it).
    fn check_sees(&mut self, root: &Path, sandbox: &Path) -> Result<()> {
        // a failed check must not leave an untracked sandbox/ behind (start excludes it only later)
        let created = !sandbox.exists();
        std::fs::create_dir_all(sandbox)
            .with_context(|| format!("cannot create {}", sandbox.display()))?;
        let token = format!("{:016x}", RandomState::new().build_hasher().finish());
        let path = sandbox.join(format!("slurm-token-{}", self.job()));
        let path_text = path.display().to_string();
        // srun runs here, so its messages land here even when the node sees nothing of the tree
        let log = sandbox.join(format!("slurm-token-{}.log", self.job()));
        // the work tree may be missing on the node: start somewhere that exists
        let write = self.step(
            Path::new("/"),
            "sh",
            &[
                "-c",
                "printf %s \"$1\" > \"$2\"",
                "token",
                &token,
                &path_text,
            ],
        );
        let ending = process::supervise(write, &log, Instant::now() + CHECK_DEADLINE)?;
        let read_back = std::fs::read_to_string(&path).ok();
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        std::fs::remove_file(&path).ok();
        std::fs::remove_file(&log).ok();
        let seen = read_back.as_deref() == Some(token.as_str());
        if created && !seen {
            std::fs::remove_dir(sandbox).ok();
        }
        let detail = match ending {
            Ending::Interrupted => {
                return Err(
                    Interrupted("the Slurm job was cancelled; nothing was recorded").into(),
                );
            }
            _ if seen => return Ok(()),
            Ending::TimedOut => format!(
                "writing a file there did not finish within {}",
                fmt_wait(CHECK_DEADLINE)
            ),
            _ if said.trim().is_empty() => {
                "the token it wrote there did not appear here".to_string()
            }
            _ => said.trim().to_string(),
        };
        Err(hinted(
            format!(
                "node {} (Slurm job {}) cannot see the work tree {}: {detail}",
                self.placement.node,
                self.job(),
                root.display()
            ),
            "put the work tree on a filesystem the compute nodes mount (a shared home or scratch), or use \
             --runner local",
        ))
    }

    fn cancel(&mut self) {
        if self.released {
            return;
        }
        self.released = true;
        let scancel = process::command(&self.clients.scancel.to_string_lossy(), &[self.job()])
            .stdout_null()
            .stderr_null()
            .unchecked()
            .run();
        if scancel.is_err() {
            self.progress.line(&format!(
                "warning: cannot run scancel; cancel Slurm job {} yourself",
                self.job()
            ));
            return;
        }
        let until = Instant::now() + CANCEL_WAIT;
        while Instant::now() < until {
            match self.status() {
                Ok(Some(s)) if is_alive(&s.state) => std::thread::sleep(POLL / 5),
                _ => return,
            }
        }
    }
}

/// Every command is a step of the held job: `--overlap` shares the node and GPU with the others.
impl Runner for Allocation {
    /// `program args` as a step of the job, in `dir` on the node. srun passes on the environment and
    /// the exit code, and takes its step down when it is terminated.
    fn command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        self.step(dir, program, args).dir(dir)
    }

    /// `command -v` on the node: its PATH may differ from this one's.
    fn find(&self, program: &str, dir: &Path) -> Option<PathBuf> {
        let look = self.command("sh", &["-c", "command -v \"$1\"", "find", program], dir);
        let output = process::capture(look, FIND_TIMEOUT).ok()?;
        let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
        (output.success() && !path.is_empty()).then(|| PathBuf::from(path))
    }

    /// Workers run as steps of the job, on its node, and end with it.
    fn workers(&self) -> Workers {
        Workers::ForTheCommand
    }

    fn placement(&self) -> Option<&Placement> {
        Some(&self.placement)
    }

    /// The reason when the job itself ended under a command. A job still COMPLETING is ending: its
    /// final state (CANCELLED, NODE_FAIL, ...) says why, so it is awaited briefly.
    fn lost(&self) -> Option<String> {
        let until = Instant::now() + CANCEL_WAIT;
        loop {
            match self.status() {
                Ok(Some(s)) if s.state == "COMPLETING" && Instant::now() < until => {
                    std::thread::sleep(POLL / 5)
                }
                Ok(Some(s)) if s.state == "COMPLETING" => {
                    return Some(format!(
                        "the Slurm job {} is ending (COMPLETING)",
                        self.job()
                    ));
                }
                Ok(status) => return loss_reason(self.job(), status.as_ref()),
                Err(e) => {
                    return Some(format!("cannot ask Slurm about job {}: {e:#}", self.job()));
                }
            }
        }
    }

    /// Cancels the job and waits until the queue shows it ended; warns (never fails: the iteration's
    /// results are safe) when it does not.
    fn release(self: Box<Self>) {
        let mut this = *self;
        this.cancel();
        if let Ok(Some(s)) = this.status()
            && is_alive(&s.state)
        {
            this.progress.line(&format!(
                "warning: Slurm job {} is still {} after scancel; cancel it with `scancel {}`",
                this.job(),
                s.state,
                this.job()
            ));
        }
    }
}

impl Drop for Allocation {
    /// Errors, Ctrl-C and early returns give the node back too.
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Submits the holding job and returns its id.
fn submit(clients: &Clients, slurm_args: &str) -> Result<String> {
    let mut args = vec![
        "--parsable",
        "--job-name",
        JOB_NAME,
        // no slurm-<id>.out in the work tree, and a directory every node has
        "--output=/dev/null",
        "--chdir=/",
    ];
    let extra = split_args(slurm_args)?;
    args.extend(extra.iter().map(String::as_str));
    args.extend(["--wrap", "exec sleep infinity"]);
    let output = process::command(&clients.sbatch.to_string_lossy(), &args)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .context("cannot run sbatch")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match parse_submitted(&stdout).filter(|_| output.status.success()) {
        Some(job) => Ok(job),
        None => Err(hinted(
            format!(
                "sbatch refused the allocation: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            format!("check --slurm-args \"{slurm_args}\""),
        )),
    }
}
