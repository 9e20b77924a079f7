//! Where a step's commands run: on this machine, or on a cluster node that Slurm allocated for the
//! iteration. Everything else (budget, kill, reading results) is the same for both: the command is a
//! local child process either way (`srun` forwards signals to the node and returns the task's exit code).

pub mod slurm;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::trailers::Block;
use crate::{gpu, process, units};

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
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RunnerSettings {
    pub kind: RunnerKind,
    /// Extra `sbatch` options, e.g. `-p gpu --gres=gpu:1 -t 15`.
    pub slurm_args: String,
    /// How long an iteration may wait in the queue for its node.
    #[serde(serialize_with = "serialize_wait")]
    pub queue_timeout: Option<Duration>,
}

fn serialize_wait<S: serde::Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(wait) => s.serialize_some(&slurm::fmt_wait(*wait)),
        None => s.serialize_none(),
    }
}

impl RunnerSettings {
    /// Baseline trailers; none for the local runner, so local sessions read as they always did.
    pub fn write(&self, block: &mut Block) {
        if self.kind == RunnerKind::Local {
            return;
        }
        block.push("Runner", self.kind.as_str());
        if !self.slurm_args.is_empty() {
            block.push("Slurm-Args", &self.slurm_args);
        }
        if let Some(wait) = self.queue_timeout {
            block.push("Queue-Timeout", slurm::fmt_wait(wait));
        }
    }

    /// `local`, or `slurm -p gpu (queue timeout 30m0s)` for status lines.
    pub fn describe(&self) -> String {
        let mut text = self.kind.as_str().to_string();
        if !self.slurm_args.is_empty() {
            text.push_str(&format!(" {}", self.slurm_args));
        }
        if self.kind == RunnerKind::Slurm {
            let wait = self.queue_timeout.unwrap_or(slurm::DEFAULT_QUEUE_TIMEOUT);
            text.push_str(&format!(" (queue timeout {})", slurm::fmt_wait(wait)));
        }
        text
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
            slurm_args: block.get("Slurm-Args")?.unwrap_or("").to_string(),
            queue_timeout: block
                .get("Queue-Timeout")?
                .map(|text| units::parse_duration(text).map_err(anyhow::Error::msg))
                .transpose()?,
        })
    }
}

/// `start`'s options that choose the runner.
#[derive(clap::Args, Debug, Clone)]
pub struct RunnerArgs {
    /// Where every iteration's tests run: here, or on a node Slurm allocates per iteration
    #[arg(long, value_enum, default_value_t = RunnerKind::Local)]
    pub runner: RunnerKind,
    /// sbatch options for each iteration's allocation, split as a shell would (e.g. "-p gpu --gres=gpu:1 -t 15")
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub slurm_args: Option<String>,
    /// How long an iteration may wait in the Slurm queue (not counted in --budget; default 30m)
    #[arg(long, value_name = "DUR", value_parser = units::parse_duration)]
    pub queue_timeout: Option<Duration>,
}

impl RunnerArgs {
    pub fn settings(&self) -> Result<RunnerSettings> {
        if self.runner == RunnerKind::Local
            && (self.slurm_args.is_some() || self.queue_timeout.is_some())
        {
            anyhow::bail!(
                "--slurm-args and --queue-timeout apply to the Slurm runner only\nhint: add --runner slurm"
            );
        }
        let slurm_args = self.slurm_args.clone().unwrap_or_default();
        slurm::split_args(&slurm_args)?;
        Ok(RunnerSettings {
            kind: self.runner,
            slurm_args,
            queue_timeout: self.queue_timeout,
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

    /// The GPU where the commands run, and who else uses it.
    pub fn gpu(&self, dir: &Path) -> Option<gpu::GpuState> {
        gpu::probe(|args| self.command("nvidia-smi", args, dir))
    }

    /// Gives the place back; a Slurm job is cancelled and gone from the queue when this returns.
    pub fn release(self) {
        if let Runner::Slurm(allocation) = self {
            allocation.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            slurm_args: "-p gpu --gres=gpu:1 -t 15".into(),
            queue_timeout: Some(Duration::from_secs(130)),
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
