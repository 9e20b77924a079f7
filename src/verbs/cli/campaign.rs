//! `campaign`: its sub-verbs and their flags; `start`'s own flags are given to every session.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::loop_verbs::RunnerArgs;
use super::{JsonArg, words};
use crate::rules::kernel_class::KernelClass;
use crate::rules::records::Statistic;
use crate::rules::units::{parse_duration, parse_pct};

#[derive(Args, Debug)]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub action: CampaignAction,
}

#[derive(Subcommand, Debug)]
pub enum CampaignAction {
    /// Start a session per kernel, each in a git worktree of its own, their baselines measured by one
    /// worker per GPU (or a Slurm array job); a kernel that fails is recorded with its reason
    Start(Box<CampaignStartArgs>),
    /// Run again the campaign's kernels that are queued, were left running, or failed
    Resume(CampaignResumeArgs),
    /// Show the campaign: each kernel's state, baseline, iterations and best kept speedup
    Status(CampaignNameArgs),
    /// Print the campaign's table alone
    Table(CampaignNameArgs),
    /// Write the campaign as one HTML page linking each session's report, and print its path
    Report(CampaignReportArgs),
    /// Hand an agent the next started session that no agent holds, with its worktree
    Next(CampaignNextArgs),
    /// Audit every started session of the campaign, as `verify` does one
    Verify(CampaignNameArgs),
    /// Take one waiting kernel and run its baseline here (what each task of a Slurm array job runs)
    #[command(hide = true)]
    Work(CampaignNameArgs),
}

#[derive(Args, Debug)]
pub struct CampaignNameArgs {
    /// The campaign (default: the newest)
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct CampaignReportArgs {
    #[command(flatten)]
    pub campaign: CampaignNameArgs,
    /// Where to write the page (default: campaigns/<name>/campaign.html in the git dir)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CampaignNextArgs {
    #[command(flatten)]
    pub campaign: CampaignNameArgs,
    /// Claim it: no other agent gets it while the holder runs and the lease lasts
    #[arg(long)]
    pub claim: bool,
    /// The process that holds the claim (default: the one that ran this command, e.g. the agent's
    /// shell or MCP server); the claim ends when it stops
    #[arg(long, value_name = "PID", requires = "claim")]
    pub holder: Option<u32>,
    /// How long the claim lasts at most
    #[arg(long, value_parser = parse_duration, default_value = "12h", value_name = "DUR", requires = "claim")]
    pub lease: Duration,
}

/// Where the kernels run.
#[derive(Args, Debug)]
pub struct CampaignWorkerArgs {
    /// One worker per GPU, by nvidia-smi's index (e.g. 0,1,2,3), each pinned with CUDA_VISIBLE_DEVICES;
    /// default: one worker on the environment's GPU
    #[arg(long, value_name = "LIST", conflicts_with = "no_gpu")]
    pub gpus: Option<String>,
    /// Without --gpus, how many workers share the environment; with --runner slurm, how many array
    /// tasks run at once (`%K`)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// How long one kernel may take from getting its GPU (default: --budget and 5m of setup)
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub timeout: Option<Duration>,
    /// Start every session without a GPU (for tests that run on the CPU)
    #[arg(long)]
    pub no_gpu: bool,
}

#[derive(Args, Debug)]
pub struct CampaignResumeArgs {
    #[command(flatten)]
    pub campaign: CampaignNameArgs,
    /// A new time limit for each baseline run, in place of the campaign's (e.g. for kernels that
    /// failed at it)
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<Duration>,
    #[command(flatten)]
    pub workers: CampaignWorkerArgs,
}

#[derive(Args, Debug)]
pub struct CampaignStartArgs {
    /// Kernels by name (suite/kernel where a name is in several suites)
    #[arg(conflicts_with = "all")]
    pub kernels: Vec<String>,
    /// Every kernel file of the checkout (`inspect --all` lists them)
    #[arg(long)]
    pub all: bool,
    /// Only this suite's kernels (`ops` or a suite name)
    #[arg(long)]
    pub suite: Option<String>,
    /// The campaign's name (default: today's date)
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub workers: CampaignWorkerArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub start: SessionArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// `start`'s flags that a campaign gives every session; unset, each session takes `start`'s default or
/// git config's.
#[derive(Args, Debug)]
pub struct SessionArgs {
    /// The Python command that runs pytest, as `start --python` takes it
    #[arg(long, value_name = "CMD")]
    pub python: Option<String>,
    /// A pytest -k expression narrowing every session's selections
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Which per-config statistic the decisions use
    #[arg(long, value_parser = words(Statistic::ALL, Statistic::as_str))]
    pub stat: Option<Statistic>,
    /// Every kernel's class, instead of each one's own estimate
    #[arg(long, value_name = "CLASS")]
    pub class: Option<KernelClass>,
    /// Time limit for each baseline run (e.g. 10m)
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<Duration>,
    /// Improvement (%) from which each loop continues at full priority
    #[arg(long, value_parser = parse_pct, value_name = "PCT")]
    pub continue_pct: Option<f64>,
    /// Improvement (%) below which an iteration counts as no gain
    #[arg(long, value_parser = parse_pct, value_name = "PCT")]
    pub gain_pct: Option<f64>,
    /// Slowdown (%) of any single config that reverts a change
    #[arg(long, value_parser = parse_pct, value_name = "PCT")]
    pub regression_pct: Option<f64>,
    /// Iterations after which each loop stops
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Consecutive iterations without a gain after which each loop stops
    #[arg(long, value_name = "N")]
    pub max_no_gain: Option<u32>,
}

impl SessionArgs {
    /// The flags as `start` takes them, in its words.
    pub fn start_args(&self, no_gpu: bool) -> Vec<String> {
        let mut args = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                args.extend([format!("--{name}"), value]);
            }
        };
        flag("python", self.python.clone());
        flag("filter", self.filter.clone());
        flag("stat", self.stat.map(|s| s.as_str().to_string()));
        flag("class", self.class.map(|c| c.to_string()));
        flag(
            "budget",
            self.budget.map(crate::system::runner::slurm::fmt_wait),
        );
        flag("continue-pct", self.continue_pct.map(|v| v.to_string()));
        flag("gain-pct", self.gain_pct.map(|v| v.to_string()));
        flag("regression-pct", self.regression_pct.map(|v| v.to_string()));
        flag("max-iterations", self.max_iterations.map(|v| v.to_string()));
        flag("max-no-gain", self.max_no_gain.map(|v| v.to_string()));
        if no_gpu {
            args.push("--no-gpu".to_string());
        }
        args
    }
}
