//! Where a session's GPU commands run: on this machine, or on a cluster node that Slurm allocated
//! for the iteration. Every command that needs the session's GPU or node (pytest, nvidia-smi, ncu,
//! the Tile IR dump runs, tileiras, cuobjdump) is built by a [`Runner`]; callers never ask which one.
//! Everything else (budget, kill, reading results) is the same for all: the command is a local child
//! process either way (`srun` forwards signals to the node and returns the task's exit code).
//!
//! Adding a runner: one file with a type that implements [`Runner`] (and its settings, if it has
//! any), one [`RunnerKind`] variant, and its row in `RUNNERS`.

pub mod local;
pub mod slurm;

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::rules::trailers::Block;
use crate::system::gpu::{self, GpuState};
use crate::system::process::{self, Ending};
use crate::system::ui::Progress;
pub use local::Local;

/// Which runner a session uses; recorded in its baseline commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunnerKind {
    #[default]
    Local,
    Slurm,
}

impl RunnerKind {
    /// The name `--runner` takes and the baseline records.
    pub fn as_str(self) -> &'static str {
        registration(self).name
    }

    pub fn parse(text: &str) -> Option<RunnerKind> {
        RUNNERS.iter().find(|r| r.name == text).map(|r| r.kind)
    }

    /// Every kind by name, as `--runner` takes them.
    pub fn names() -> impl Iterator<Item = &'static str> {
        RUNNERS.iter().map(|r| r.name)
    }
}

/// One runner as [`open`] knows it: its kind, its name, and how it gets ready.
struct Registration {
    kind: RunnerKind,
    name: &'static str,
    open: Open,
}

/// How a runner gets ready: for the settings, whose commands will see the work tree at the root (the
/// sandbox is where it may leave files to check that); it says how it gets ready, and how it ends, on
/// the progress sink.
type Open = fn(
    settings: &RunnerSettings,
    root: &Path,
    sandbox: &Path,
    progress: &Progress,
) -> Result<Box<dyn Runner>>;

/// Every runner: adding one is a file in `src/system/runner/`, a [`RunnerKind`] variant and a row here.
const RUNNERS: [Registration; 2] = [
    Registration {
        kind: RunnerKind::Local,
        name: "local",
        open: |_, _, _, _| Ok(Box::new(Local)),
    },
    Registration {
        kind: RunnerKind::Slurm,
        name: "slurm",
        open: |settings, root, sandbox, progress| {
            Ok(Box::new(slurm::Allocation::request(
                &settings.slurm,
                root,
                sandbox,
                progress,
            )?))
        },
    },
];

fn registration(kind: RunnerKind) -> &'static Registration {
    RUNNERS
        .iter()
        .find(|r| r.kind == kind)
        .expect("every kind has its row in RUNNERS")
}

/// How a session's runner is set up: the kind and what that kind asks for (a Slurm allocation's
/// options); the value the session persists in its baseline.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RunnerSettings {
    pub kind: RunnerKind,
    #[serde(flatten)]
    pub slurm: slurm::SlurmSettings,
}

impl RunnerSettings {
    /// Baseline trailers; none for the local runner, so local sessions read as they always did.
    pub fn write(&self, block: &mut Block) {
        if self.kind == RunnerKind::Local {
            return;
        }
        block.push("Runner", self.kind.as_str());
        self.slurm.write(block);
    }

    /// `local`, or `slurm -p gpu (queue timeout 30m0s)` for status lines.
    pub fn describe(&self) -> String {
        match self.kind {
            RunnerKind::Local => self.kind.as_str().to_string(),
            RunnerKind::Slurm => format!("{}{}", self.kind.as_str(), self.slurm.describe()),
        }
    }

    /// The settings in a baseline's trailers; local when it has none (older histories).
    pub fn read(block: &Block) -> Result<RunnerSettings> {
        let kind = match block.get("Runner")? {
            Some(text) => {
                RunnerKind::parse(text).with_context(|| format!("unknown runner {text:?}"))?
            }
            None => RunnerKind::Local,
        };
        Ok(RunnerSettings {
            kind,
            slurm: slurm::SlurmSettings::read(block)?,
        })
    }
}

/// Where an iteration's numbers were measured, for its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub node: String,
    pub job: String,
    /// `name, compute capability, driver` read on the node; none on a node without nvidia-smi.
    pub gpu: Option<String>,
}

impl Placement {
    /// An iteration's trailers: where its numbers come from.
    pub fn write(&self, block: &mut Block) {
        block.push("Node", &self.node);
        block.push("Slurm-Job", &self.job);
        if let Some(gpu) = &self.gpu {
            block.push("Node-GPU", gpu);
        }
    }

    /// The placement in an iteration's trailers; none for local iterations.
    pub fn read(block: &Block) -> Result<Option<Placement>> {
        let Some(node) = block.get("Node")? else {
            return Ok(None);
        };
        Ok(Some(Placement {
            node: node.to_string(),
            job: block.require("Slurm-Job")?.to_string(),
            gpu: block.get("Node-GPU")?.map(str::to_string),
        }))
    }

    /// `node gpu07, Slurm job 1234, NVIDIA H200 ...` for status lines.
    pub fn describe(&self) -> String {
        let mut text = format!("node {}, Slurm job {}", self.node, self.job);
        if let Some(gpu) = &self.gpu {
            text.push_str(&format!(", {gpu}"));
        }
        text
    }
}

/// What a pytest run is for: a stand-in runner replays a recorded file by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PytestRun {
    Correctness,
    /// The correctness selection with the seeds shifted (inputs neither side has seen).
    Unseen,
    Benchmark,
    /// A warm worker: correctness and benchmark repetitions on command.
    Worker,
}

/// One pytest run as the runner gets it: `program args` in `dir` with `env`, writing its JUnit file
/// to `junit`.
pub struct PytestCall<'a> {
    pub run: PytestRun,
    pub program: &'a str,
    pub args: &'a [&'a str],
    pub dir: &'a Path,
    pub env: &'a [(&'static str, OsString)],
    pub junit: &'a Path,
}

/// A place that runs a session's GPU commands, held for one verb run (one iteration).
/// `Sync`: the GPUs of a step run their parts of a round from threads of their own.
pub trait Runner: Sync {
    /// `program args`, run in `dir` where the session's GPU is.
    fn command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression;

    /// Where `program` is found there (a bare name on its PATH, or a path from `dir`).
    fn find(&self, program: &str, dir: &Path) -> Option<PathBuf>;

    /// A pytest command with its environment, not started.
    fn pytest_command(&self, call: &PytestCall) -> duct::Expression {
        let mut expression = match call.run {
            PytestRun::Worker => self.lasting_command(call.program, call.args, call.dir),
            _ => self.command(call.program, call.args, call.dir),
        };
        for (name, value) in call.env {
            expression = expression.env(name, value);
        }
        expression
    }

    /// One pytest run, its output into `log`, killed at `deadline`.
    fn pytest(&self, call: &PytestCall, log: &Path, deadline: Instant) -> Result<Ending> {
        process::supervise(self.pytest_command(call), log, deadline)
    }

    /// `program args` as a warm worker, which may outlive this process where [`workers`] says so.
    ///
    /// [`workers`]: Runner::workers
    fn lasting_command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        self.command(program, args, dir)
    }

    /// Whether warm pytest workers run here (`pytest_command` started in the background), and for how
    /// long.
    fn workers(&self) -> Workers {
        Workers::None
    }

    /// The GPU where the commands run, and who else uses it.
    fn gpu(&self, dir: &Path) -> Option<GpuState> {
        gpu::probe(|args| self.command("nvidia-smi", args, dir))
    }

    /// After a command ended badly: the reason when the place itself went away (a failed node, a
    /// preempted or cancelled job), which must be reported instead of the command's exit.
    fn lost(&self) -> Option<String> {
        None
    }

    /// Where an iteration's numbers were measured, for its trailers; none where the session's own
    /// GPU line says it all (this machine).
    fn placement(&self) -> Option<&Placement> {
        None
    }

    /// Gives the place back; a Slurm job is cancelled and gone from the queue when this returns.
    fn release(self: Box<Self>) {}
}

/// Where warm pytest workers may serve a command's runs, and how long they live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// None: every run is a process of its own.
    None,
    /// For one command, on the place's machine (a Slurm job's node), ending with the place. The tool is
    /// not on that machine, so a worker cannot watch it: the place's end ends the worker.
    ForTheCommand,
    /// On this machine, watching the tool that uses them, and kept past the command.
    Lasting,
}

impl Workers {
    /// Whether the runs are served by warm workers at all.
    pub fn warm(self) -> bool {
        self != Workers::None
    }
}

/// A runner whose every command sees one GPU (`CUDA_VISIBLE_DEVICES`): `start --gpus`'s first, for the
/// baseline's runs and the class and compile-fact runs after them alike; a step's first GPU, for its
/// diagnosis and compile facts after the rounds.
pub struct OnGpu {
    pub place: Box<dyn Runner>,
    pub gpu: String,
}

impl Runner for OnGpu {
    fn command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        self.place
            .command(program, args, dir)
            .env("CUDA_VISIBLE_DEVICES", &self.gpu)
    }

    fn find(&self, program: &str, dir: &Path) -> Option<PathBuf> {
        self.place.find(program, dir)
    }

    fn lasting_command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        self.place
            .lasting_command(program, args, dir)
            .env("CUDA_VISIBLE_DEVICES", &self.gpu)
    }

    fn workers(&self) -> Workers {
        self.place.workers()
    }

    fn lost(&self) -> Option<String> {
        self.place.lost()
    }

    fn placement(&self) -> Option<&Placement> {
        self.place.placement()
    }

    fn release(self: Box<Self>) {
        self.place.release()
    }
}

/// What a test puts in place of the runners a verb opens.
type StandIn = Rc<dyn Fn(&RunnerSettings, &Path) -> Result<Box<dyn Runner>>>;

thread_local! {
    static STAND_IN: RefCell<Option<StandIn>> = const { RefCell::new(None) };
}

/// The session's runner, ready: nothing to do locally; a Slurm allocation (waiting in the queue, not
/// counted in the budget) whose node is checked to see `root`; whatever `RUNNERS` says for the kind.
pub fn open(
    settings: &RunnerSettings,
    root: &Path,
    sandbox: &Path,
    progress: &Progress,
) -> Result<Box<dyn Runner>> {
    if let Some(stand_in) = STAND_IN.with(|slot| slot.borrow().clone()) {
        return stand_in(settings, root);
    }
    (registration(settings.kind).open)(settings, root, sandbox, progress)
}

/// Runs `body` with every runner it opens on this thread made by `make` (given the session's
/// settings and root): how in-process tests run a verb without pytest or a GPU.
pub fn with_stand_in<T>(
    make: impl Fn(&RunnerSettings, &Path) -> Result<Box<dyn Runner>> + 'static,
    body: impl FnOnce() -> T,
) -> T {
    let previous = STAND_IN.with(|slot| slot.replace(Some(Rc::new(make))));
    let result = body();
    STAND_IN.with(|slot| *slot.borrow_mut() = previous);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_kind_has_one_row_and_its_name_reads_back() {
        for kind in [RunnerKind::Local, RunnerKind::Slurm] {
            assert_eq!(RUNNERS.iter().filter(|r| r.kind == kind).count(), 1);
            assert_eq!(RunnerKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(RunnerKind::names().collect::<Vec<_>>(), ["local", "slurm"]);
        assert_eq!(RunnerKind::parse("kubernetes"), None);
    }

    #[test]
    fn local_sessions_write_no_runner_trailers_and_read_back_local() {
        let mut block = Block::default();
        RunnerSettings::default().write(&mut block);
        assert_eq!(block, Block::default());
        assert_eq!(
            RunnerSettings::read(&block).unwrap(),
            RunnerSettings::default()
        );
    }

    #[test]
    fn slurm_settings_and_placements_round_trip() {
        let settings = RunnerSettings {
            kind: RunnerKind::Slurm,
            slurm: slurm::SlurmSettings {
                args: "-p gpu --gres=gpu:1 -t 15".into(),
                queue_timeout: Some(Duration::from_secs(130)),
            },
        };
        let placement = Placement {
            node: "gpu07".into(),
            job: "1234".into(),
            gpu: Some("NVIDIA H200, 9.0, 570.1".into()),
        };
        let mut block = Block::default();
        settings.write(&mut block);
        placement.write(&mut block);
        assert_eq!(block.get("Queue-Timeout").unwrap(), Some("2m10s"));
        assert_eq!(RunnerSettings::read(&block).unwrap(), settings);
        assert_eq!(Placement::read(&block).unwrap(), Some(placement));
        assert_eq!(Placement::read(&Block::default()).unwrap(), None);
    }
}
