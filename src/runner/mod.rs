//! Where a step's commands run: on this machine, or on a cluster node that Slurm allocated for the
//! iteration. Everything else (budget, kill, reading results) is the same for both: the command is a
//! local child process either way (`srun` forwards signals to the node and returns the task's exit code).

pub mod slurm;

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::{gpu, process};

/// Which runner a session uses; recorded in its baseline commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunnerKind {
    #[default]
    Local,
    Slurm,
}

impl RunnerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerKind::Local => "local",
            RunnerKind::Slurm => "slurm",
        }
    }

    pub fn parse(text: &str) -> Option<RunnerKind> {
        match text {
            "local" => Some(RunnerKind::Local),
            "slurm" => Some(RunnerKind::Slurm),
            _ => None,
        }
    }
}

/// How a session's runner is set up: the kind and, for Slurm, what the allocation asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunnerSettings {
    pub kind: RunnerKind,
    /// Extra `sbatch` options, e.g. `-p gpu --gres=gpu:1 -t 15`.
    pub slurm_args: String,
    /// How long an iteration may wait in the queue for its node.
    pub queue_timeout: Option<Duration>,
}

/// Where an iteration's numbers were measured, for its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub node: String,
    pub job: String,
    /// `name, compute capability, driver` read on the node; none on a node without nvidia-smi.
    pub gpu: Option<String>,
}

/// A place to run one iteration's commands.
pub enum Runner {
    Local,
    Slurm(slurm::Allocation),
}

impl Runner {
    /// Gets the place ready: nothing to do locally; a Slurm allocation (waiting in the queue, not
    /// counted in the budget) whose node is checked to see `root`.
    pub fn acquire(settings: &RunnerSettings, root: &Path, sandbox: &Path) -> Result<Runner> {
        Ok(match settings.kind {
            RunnerKind::Local => Runner::Local,
            RunnerKind::Slurm => Runner::Slurm(slurm::Allocation::request(
                &settings.slurm_args,
                settings
                    .queue_timeout
                    .unwrap_or(slurm::DEFAULT_QUEUE_TIMEOUT),
                root,
                sandbox,
            )?),
        })
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Runner::Local)
    }

    /// `program args` run in `dir`, here or on the allocated node.
    pub fn command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        match self {
            Runner::Local => process::command(program, args).dir(dir),
            Runner::Slurm(allocation) => allocation.command(program, args, dir),
        }
    }

    /// After a command ended badly: the reason when the place itself went away (a failed node, a
    /// preempted or cancelled job), which must be reported instead of the command's exit.
    pub fn lost(&self) -> Option<String> {
        match self {
            Runner::Local => None,
            Runner::Slurm(allocation) => allocation.lost(),
        }
    }

    /// Node, job and GPU of a Slurm iteration; none locally (the session records the local GPU).
    pub fn placement(&self) -> Option<&Placement> {
        match self {
            Runner::Local => None,
            Runner::Slurm(allocation) => Some(allocation.placement()),
        }
    }

    /// Gives the place back; a Slurm job is cancelled and gone from the queue when this returns.
    pub fn release(self) -> Result<()> {
        match self {
            Runner::Local => Ok(()),
            Runner::Slurm(allocation) => allocation.release(),
        }
    }
}

/// GPU facts read through `runner`, on the node where its commands run.
pub fn gpu_on(runner: &Runner, dir: &Path) -> Option<String> {
    gpu::read(runner.command("nvidia-smi", &gpu::QUERY, dir))
}
