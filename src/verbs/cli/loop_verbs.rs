//! The loop's verbs: `start` (with its thresholds and runner), `inspect`, `step`, `diagnose` and `next`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{DEFAULT_BUDGET, JsonArg, words};
use crate::rules::decision::{Cause, Thresholds};
use crate::rules::kernel_class::KernelClass;
use crate::rules::records::Statistic;
use crate::rules::units::{parse_duration, parse_pct};
use crate::system::runner::{RunnerKind, RunnerSettings, slurm};

#[derive(Args, Debug)]
pub struct StartArgs {
    /// Kernel name: the file stem under src/tilegym/ops/cutile/ or src/tilegym/suites/<suite>/cutile/
    pub kernel: String,
    /// Which suite the kernel is in (`ops` or a suite name) when the name exists in several
    #[arg(long)]
    pub suite: Option<String>,
    /// The kernel's test file, when none is found (named test_<kernel>.py or test_<suite>_<kernel>.py,
    /// importing the kernel's module, or calling its registered op), or to pick another
    #[arg(long, value_name = "PATH")]
    pub test: Option<String>,
    /// Only write a session perf file (sandbox/perf_<kernel>.py) for a kernel without a test_perf: one
    /// running the cuTile lines of its standalone benchmark (tests/benchmark/bench_<kernel>.py), which
    /// start writes by itself when no --test is given; else a test_perf timing its registered op through
    /// the checkout's harness, on the call its correctness tests make of it (recorded in one run of them),
    /// grown along its batch dimension until it takes over 10 us; then start with --test
    /// sandbox/perf_<kernel>.py
    #[arg(long, conflicts_with = "test")]
    pub scaffold: bool,
    /// Another path iterations may change, besides those `inspect` finds (the kernel file, and files whose
    /// launch wrapper or autotune space its registered ops reach); repeatable
    #[arg(long, value_name = "PATH")]
    pub allow: Vec<String>,
    /// A path `inspect` found that iterations may NOT change; repeatable
    #[arg(long, value_name = "PATH")]
    pub deny: Vec<String>,
    /// The Python command that runs pytest (e.g. `python3`, `uv run python`), split as a shell would: quote a
    /// path with spaces
    #[arg(long, value_name = "CMD")]
    pub python: Option<String>,
    /// A pytest -k expression that narrows the correctness and benchmark selections, e.g. to the shapes
    /// that fit the iteration budget
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Which per-config statistic the decisions use
    #[arg(long, value_parser = words(Statistic::ALL, Statistic::as_str), default_value = "median")]
    pub stat: Statistic,
    /// The kernel's class (memory, balanced, compute), which orders the optimizations `next` suggests
    #[arg(long, value_name = "CLASS")]
    pub class: Option<KernelClass>,
    /// The kernel's arithmetic intensity (FLOP per byte), classifying it: <10 memory, 10-50 balanced, >50 compute
    #[arg(long, value_name = "FLOP_PER_BYTE", conflicts_with = "class")]
    pub intensity: Option<f64>,
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// Start without a GPU (for tests that run on the CPU); recorded in the session, and steps do not
    /// look for one either
    #[arg(long)]
    pub no_gpu: bool,
    /// The session's GPUs by nvidia-smi's index (e.g. 1,2), all of one model: the baseline is measured
    /// on the first (CUDA_VISIBLE_DEVICES); default: the environment's GPU (local runner only)
    #[arg(long, value_name = "LIST", conflicts_with = "no_gpu")]
    pub gpus: Option<String>,
    /// Time limit for the baseline run (e.g. 10m, 90s, 1m30s)
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_BUDGET)]
    pub budget: Duration,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The decision thresholds; their defaults are [`Thresholds::DEFAULT`], written nowhere else.
#[derive(Args, Debug)]
pub struct ThresholdArgs {
    /// Improvement (%) from which the loop continues at full priority
    #[arg(long, value_parser = parse_pct, default_value_t = Thresholds::DEFAULT.continue_pct, value_name = "PCT")]
    pub continue_pct: f64,
    /// Improvement (%) below which an iteration counts as no gain
    #[arg(long, value_parser = parse_pct, default_value_t = Thresholds::DEFAULT.gain_pct, value_name = "PCT")]
    pub gain_pct: f64,
    /// Slowdown (%) of any single config that reverts the change
    #[arg(long, value_parser = parse_pct, default_value_t = Thresholds::DEFAULT.regression_pct, value_name = "PCT")]
    pub regression_pct: f64,
    /// Iterations after which the loop stops
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), default_value_t = Thresholds::DEFAULT.max_iterations, value_name = "N")]
    pub max_iterations: u32,
    /// Consecutive iterations without a gain after which the loop stops
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), default_value_t = Thresholds::DEFAULT.max_no_gain, value_name = "N")]
    pub max_no_gain: u32,
}

impl ThresholdArgs {
    pub fn thresholds(&self) -> Thresholds {
        let ThresholdArgs {
            continue_pct,
            gain_pct,
            regression_pct,
            max_iterations,
            max_no_gain,
        } = *self;
        Thresholds {
            continue_pct,
            gain_pct,
            regression_pct,
            max_iterations,
            max_no_gain,
        }
    }
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Kernel name: the file stem under src/tilegym/ops/cutile/ or src/tilegym/suites/<suite>/cutile/
    #[arg(required_unless_present = "all")]
    pub kernel: Option<String>,
    /// List every kernel file of the checkout with its test and how it would be measured (its test's
    /// test_perf, a session perf file, a standalone benchmark, or nothing): the coverage table
    #[arg(long, conflicts_with_all = ["kernel", "suite", "capability", "measure"])]
    pub all: bool,
    /// Which suite the kernel is in (`ops` or a suite name) when the name exists in several
    #[arg(long)]
    pub suite: Option<String>,
    /// The compute capability whose autotune branches to show (e.g. 9.0); default: the GPU's
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub capability: Option<String>,
    /// Measure the class with Nsight Compute (`ncu` on PATH): profile one launch of the kernel in its
    /// first perf case, autotuning off, and read DRAM bytes, FLOPs and duration
    #[arg(long)]
    pub measure: bool,
    /// The Python command that runs pytest for --measure (e.g. `python3`, `uv run python`), split as a shell
    /// would
    #[arg(long, value_name = "CMD", requires = "measure")]
    pub python: Option<String>,
    /// Time limit for --measure (e.g. 10m)
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_BUDGET, requires = "measure")]
    pub budget: Duration,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct StepArgs {
    /// What this iteration changed, in a few words (one optimization)
    pub description: String,
    /// Longer notes kept in the commit message body
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// Time limit for the whole iteration; past it the tests are killed and the iteration is a crash
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_BUDGET)]
    pub budget: Duration,
    /// Run even though the loop has stopped or escalated
    #[arg(long = "continue")]
    pub continue_anyway: bool,
    /// The bottleneck this optimization targets; scheduling and unknown escalate to the user
    #[arg(long, value_parser = words(Cause::ALL, Cause::as_str))]
    pub cause: Option<Cause>,
    /// The playbook letter this optimization follows (see `git cutile-perf refs playbook`), or `none` for
    /// a change that fits no letter; a step without it is refused
    #[arg(long, value_name = "LETTER")]
    pub opt: Option<String>,
    /// The GPUs to measure on, by nvidia-smi's index (e.g. 0,1), each of the session's model: a
    /// (baseline, candidate) pair per GPU, the configs split among them; default: CUDA_VISIBLE_DEVICES,
    /// else every GPU found (local runner only)
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct DiagnoseArgs {
    /// The iteration to profile (its attempt, for a reverted or crashed one); default: the current
    /// baseline
    pub iteration: Option<u32>,
    /// The config to profile, as the table and trailers name it (`classname::test_perf[...]`);
    /// default: the iteration's slowest config, the one that weighs most in the total time
    #[arg(long, value_name = "TEST_ID")]
    pub config: Option<String>,
    /// Time limit for the profiled run (e.g. 10m)
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_BUDGET)]
    pub budget: Duration,
    /// Keep Nsight Compute's report in DIR (`iteration-N-<case>.ncu-rep`), to open in its UI
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct NextArgs {
    /// Use this class instead of the session's
    #[arg(long, value_name = "CLASS")]
    pub class: Option<KernelClass>,
    /// Record that this playbook letter cannot apply to the kernel (an empty commit on the session
    /// branch), so that `next` and every next action stop offering it; there is no un-skip
    #[arg(long, value_name = "LETTER", requires = "why")]
    pub skip: Option<String>,
    /// Why the skipped letter cannot apply, e.g. "the timed kernel already uses ct.load/ct.store"
    #[arg(long, value_name = "TEXT", requires = "skip")]
    pub why: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

/// `start`'s options that choose the runner.
#[derive(Args, Debug, Clone)]
pub struct RunnerArgs {
    /// Where every iteration's tests run: here, or on a node Slurm allocates per iteration
    #[arg(
        long,
        default_value = "local",
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::PossibleValuesParser::new(RunnerKind::names()),
            |name: String| RunnerKind::parse(&name).expect("one of the names")
        )
    )]
    pub runner: RunnerKind,
    /// sbatch options for each iteration's allocation, split as a shell would (e.g. "-p gpu --gres=gpu:1 -t 15")
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub slurm_args: Option<String>,
    /// How long an iteration may wait in the Slurm queue (not counted in --budget; default 30m)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub queue_timeout: Option<Duration>,
}

impl RunnerArgs {
    pub fn settings(&self) -> anyhow::Result<RunnerSettings> {
        if self.runner == RunnerKind::Local
            && (self.slurm_args.is_some() || self.queue_timeout.is_some())
        {
            return Err(crate::rules::hint::hinted(
                "--slurm-args and --queue-timeout apply to the Slurm runner only",
                "add --runner slurm",
            ));
        }
        let args = self.slurm_args.clone().unwrap_or_default();
        slurm::split_args(&args)?;
        Ok(RunnerSettings {
            kind: self.runner,
            slurm: slurm::SlurmSettings {
                args,
                queue_timeout: self.queue_timeout,
            },
        })
    }
}
