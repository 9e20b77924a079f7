//! One Slurm allocation per iteration: a holding batch job (`sbatch --parsable`, a script that only
//! sleeps) keeps one node; every command runs on it as a job step (`srun --jobid J --overlap`), so the
//! correctness and benchmark runs share the node and GPU; `scancel` gives it back. Only Slurm's client
//! programs are used, and only their machine-readable output (`--parsable`, `squeue -h -o`).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use serde::Serialize;

use super::{Placement, Runner, Workers};
use crate::hint::{Hinted, hinted};
use crate::process::{Ending, Interrupted};
use crate::trailers::Block;
use crate::ui::Progress;
use crate::{gpu, process, units};

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

/// What each iteration's allocation asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SlurmSettings {
    /// Extra `sbatch` options, e.g. `-p gpu --gres=gpu:1 -t 15`.
    #[serde(rename = "slurm_args")]
    pub args: String,
    /// How long an iteration may wait in the queue for its node.
    #[serde(serialize_with = "serialize_wait")]
    pub queue_timeout: Option<Duration>,
}

fn serialize_wait<S: serde::Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(wait) => s.serialize_some(&fmt_wait(*wait)),
        None => s.serialize_none(),
    }
}

impl SlurmSettings {
    /// The baseline trailers of a Slurm session (after its `Runner: slurm`).
    pub fn write(&self, block: &mut Block) {
        if !self.args.is_empty() {
            block.push("Slurm-Args", &self.args);
        }
        if let Some(wait) = self.queue_timeout {
            block.push("Queue-Timeout", fmt_wait(wait));
        }
    }

    pub fn read(block: &Block) -> Result<SlurmSettings> {
        Ok(SlurmSettings {
            args: block.get("Slurm-Args")?.unwrap_or("").to_string(),
            queue_timeout: block
                .get("Queue-Timeout")?
                .map(|text| units::parse_duration(text).map_err(anyhow::Error::msg))
                .transpose()?,
        })
    }

    /// ` -p gpu (queue timeout 30m0s)`, after the runner's name in status lines.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        if !self.args.is_empty() {
            text.push_str(&format!(" {}", self.args));
        }
        let wait = self.queue_timeout.unwrap_or(DEFAULT_QUEUE_TIMEOUT);
        text.push_str(&format!(" (queue timeout {})", fmt_wait(wait)));
        text
    }
}

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

/// One line of `squeue -o STATUS_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    pub state: String,
    pub node: String,
    pub reason: String,
}

/// A job Slurm has not started yet (or is starting).
fn is_waiting(state: &str) -> bool {
    matches!(state, "PENDING" | "CONFIGURING" | "REQUEUED")
}

/// A job that still holds (or may get) its node.
fn is_alive(state: &str) -> bool {
    is_waiting(state) || matches!(state, "RUNNING" | "COMPLETING" | "SUSPENDED")
}

/// The job id in `sbatch --parsable` output: `id` or `id;cluster`.
pub fn parse_submitted(stdout: &str) -> Option<String> {
    let id = stdout.lines().next()?.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

/// The first line of `squeue -h -o STATUS_FORMAT`, or `None` when squeue no longer knows the job.
pub fn parse_status(stdout: &str) -> Option<JobStatus> {
    let mut fields = stdout.lines().next()?.split('|');
    let state = fields.next()?.trim();
    if state.is_empty() {
        return None;
    }
    Some(JobStatus {
        state: state.to_string(),
        node: fields.next().unwrap_or("").trim().to_string(),
        reason: fields.next().unwrap_or("").trim().to_string(),
    })
}

/// Why the commands of job `job` stopped when the job itself ended (`None` while it runs).
pub fn loss_reason(job: &str, status: Option<&JobStatus>) -> Option<String> {
    let Some(status) = status else {
        return Some(format!("the Slurm job {job} is gone from the queue"));
    };
    let node = if status.node.is_empty() {
        String::new()
    } else {
        format!(" on node {}", status.node)
    };
    Some(match status.state.as_str() {
        "RUNNING" => return None,
        "NODE_FAIL" => format!("the node failed under Slurm job {job}{node} (NODE_FAIL)"),
        "PREEMPTED" => format!("Slurm preempted job {job}{node} (PREEMPTED)"),
        "CANCELLED" => format!("the Slurm job {job}{node} was cancelled from outside (CANCELLED)"),
        "TIMEOUT" => format!(
            "the Slurm job {job}{node} reached its time limit (TIMEOUT): ask for more with -t in --slurm-args"
        ),
        "OUT_OF_MEMORY" => format!("the Slurm job {job}{node} ran out of memory (OUT_OF_MEMORY)"),
        state => format!("the Slurm job {job}{node} ended: {state}"),
    })
}

/// `2m10s`, `45s`, `1h0m5s`: a wait as people read it (and as `parse_duration` reads it back).
pub fn fmt_wait(wait: Duration) -> String {
    let seconds = wait.as_secs();
    match (seconds / 3600, seconds / 60 % 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
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

/// `--slurm-args` split into words as a shell would, so a quoted value (`--comment "perf run"`) stays one.
pub fn split_args(slurm_args: &str) -> Result<Vec<String>> {
    shlex::split(slurm_args).with_context(|| {
        Hinted::new(
            format!("--slurm-args {slurm_args:?} has an unclosed quote or a trailing backslash"),
            "quote it as you would on a shell command line",
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_args_split_as_a_shell_would() {
        assert_eq!(
            split_args("-p gpu --comment 'perf run' -t 15").unwrap(),
            ["-p", "gpu", "--comment", "perf run", "-t", "15"]
        );
        assert!(split_args("").unwrap().is_empty());
        let err = split_args("--comment 'perf").unwrap_err();
        assert!(err.to_string().contains("unclosed quote"), "{err}");
        assert_eq!(
            crate::hint::of(&err),
            Some("quote it as you would on a shell command line")
        );
    }

    #[test]
    fn submitted_job_ids() {
        assert_eq!(parse_submitted("1234\n"), Some("1234".into()));
        assert_eq!(parse_submitted("77;cluster-a\n"), Some("77".into()));
        assert_eq!(parse_submitted(""), None);
        assert_eq!(parse_submitted("Submitted batch job 5\n"), None);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            parse_status("PENDING||BeginTime\n"),
            Some(JobStatus {
                state: "PENDING".into(),
                node: "".into(),
                reason: "BeginTime".into()
            })
        );
        assert_eq!(parse_status("RUNNING|gpu07|None").unwrap().node, "gpu07");
        assert_eq!(parse_status(""), None);
    }

    #[test]
    fn losses_name_the_job_and_the_cause() {
        let status = |state: &str| JobStatus {
            state: state.into(),
            node: "gpu07".into(),
            reason: "None".into(),
        };
        assert_eq!(loss_reason("9", Some(&status("RUNNING"))), None);
        assert_eq!(
            loss_reason("9", Some(&status("NODE_FAIL"))).unwrap(),
            "the node failed under Slurm job 9 on node gpu07 (NODE_FAIL)"
        );
        assert_eq!(
            loss_reason("9", Some(&status("PREEMPTED"))).unwrap(),
            "Slurm preempted job 9 on node gpu07 (PREEMPTED)"
        );
        assert!(
            loss_reason("9", Some(&status("CANCELLED")))
                .unwrap()
                .contains("cancelled")
        );
        assert_eq!(
            loss_reason("9", None).unwrap(),
            "the Slurm job 9 is gone from the queue"
        );
    }

    #[test]
    fn waits_read_back_as_durations() {
        assert_eq!(fmt_wait(Duration::from_secs(130)), "2m10s");
        assert_eq!(fmt_wait(Duration::from_secs(45)), "45s");
        assert_eq!(fmt_wait(Duration::from_secs(3605)), "1h0m5s");
        assert_eq!(
            crate::units::parse_duration(&fmt_wait(Duration::from_secs(3605))),
            Ok(Duration::from_secs(3605))
        );
    }
}
