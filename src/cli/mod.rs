//! The command line: every verb and flag of `git cutile-perf`.
// the doc comments are clap's help text, read in a terminal: `<kernel>` there is a placeholder, not HTML
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::decision::{Cause, Thresholds};
use crate::kernel_class::KernelClass;
use crate::records::Statistic;
use crate::runner::{RunnerKind, RunnerSettings, slurm};
use crate::units::{parse_duration, parse_pct};

/// The time limit of a verb that runs the tests (`start`, `step`, `diagnose`, `inspect --measure`)
/// when neither the command line nor git config sets one.
pub const DEFAULT_BUDGET: &str = "10m";

#[derive(Parser, Debug)]
#[command(
    name = "git-cutile-perf",
    bin_name = "git cutile-perf",
    version = crate::VERSION,
    about = "Optimize a cuTile kernel in a TileGym checkout, one measured, committed iteration at a time",
    long_about = "Optimize a cuTile kernel in a TileGym checkout, one measured, committed iteration at a time.\n\n\
        `start` creates a session branch and records the baseline; each `step` checks correctness, benchmarks, \
        decides keep/revert/crash by fixed rules and commits the result with structured trailers; `table` and \
        `status` are rebuilt from those trailers. Try `git cutile-perf demo` first: it needs no GPU."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create the session branch and record iteration 0 (correctness + benchmark, no code change)
    Start(StartArgs),
    /// Show what setup reads from a kernel's source: kernels, launch wrappers, registrations, autotune
    /// spaces, allowed paths, test file and a static class estimate
    Inspect(InspectArgs),
    /// Test, benchmark, decide and commit the current change to the kernel as one iteration
    Step(StepArgs),
    /// Profile one config of an iteration with Nsight Compute and name its bottleneck (memory, compute,
    /// latency, scheduling, unknown) with the rule and numbers that decided it
    Diagnose(DiagnoseArgs),
    /// Two iterations side by side: kernel diff stat, per-config latency, and the ncu metric and
    /// compile-fact deltas of their cached diagnoses
    Compare(CompareArgs),
    /// Print the results table rebuilt from the session's commits
    Table(TableArgs),
    /// Draw the session as an SVG picture: latency per iteration and each config against iteration 0
    Plot(PlotArgs),
    /// Write the session as one self-contained HTML page: its facts, the table, the plot, and each
    /// iteration's configs with intervals, reason, code change and compile facts
    Report(ReportArgs),
    /// Show the session: kernel, allowed paths, baseline and best latency, and whether the loop may go on
    Status(JsonArg),
    /// Audit the session's record: trailers against their evidence notes, undone attempts, allowed paths, foreign commits
    Verify(JsonArg),
    /// Push the session branch with its evidence notes and session refs (plain `git push` leaves them
    /// behind); the remote's notes on other commits are merged in first
    Push(TravelArgs),
    /// Fetch the session branches, evidence notes and session refs of a remote, so `verify` can run
    /// here; notes on different commits are merged, yours kept
    Fetch(TravelArgs),
    /// Add the notes and session refs to remote.<name>.push and .fetch, so plain `git push` and `git
    /// fetch` carry them from then on
    SetupRemote(SetupRemoteArgs),
    /// Finish or undo an iteration that a killed `start` or `step` left half-done; your edit is kept
    Repair(JsonArg),
    /// List the settings git config may hold (cutile-perf.budget, ...), each value and where it came from
    Config(ConfigArgs),
    /// Print a reference guide, or one section of it (e.g. `refs playbook B`)
    Refs(RefsArgs),
    /// List the optimizations to try next for the session's kernel class, without those tried or skipped
    /// (`--skip` records a letter that cannot apply), and the reverted ones worth a variant
    Next(NextArgs),
    /// Print the Agent Skill that teaches an agent the loop through this tool, or install it where agents
    /// look for skills
    Skill(SkillArgs),
    /// Serve the verbs an agent needs (start, step, status, ...) as Model Context Protocol tools over
    /// stdio; each tool returns the verb's --json report
    Mcp,
    /// Install, remove or inspect the pre-commit hook that enforces the allowed paths
    Hook(HookArgs),
    /// Run a short session on a built-in TileGym-shaped repository (no GPU needed)
    Demo(DemoArgs),
    /// Write the man pages (one for the tool, one per verb), or print one page
    Man(ManArgs),
    /// Write the bash, zsh and fish completion scripts, or print one
    Completions(CompletionsArgs),
    /// Install the man pages and shell completions in your user's standard places
    InstallExtras(ExtrasArgs),
    /// Remove what install-extras installed, the demo's Python environment and kept report, and the
    /// directories left empty
    UninstallExtras(UninstallArgs),
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TravelArgs {
    /// The remote (default: the branch's upstream remote, else origin)
    pub remote: Option<String>,
    /// Where both sides noted one commit differently, keep this side's note there (push) or take the
    /// remote's (fetch); every other note of both sides is kept either way
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct SetupRemoteArgs {
    /// The remote (default: the branch's upstream remote, else origin)
    pub remote: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// List every setting with its value and source (default, or the git config scope)
    #[arg(long, required = true)]
    pub list: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

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
    /// Only write a session perf file (sandbox/perf_<kernel>.py) for a kernel whose tests check
    /// correctness only: a test_perf timing its registered op through the checkout's harness, on shapes
    /// to set to sizes of real use before starting with --test sandbox/perf_<kernel>.py
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
    #[arg(long, value_enum, default_value_t = Statistic::Median)]
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
    #[arg(long, value_enum)]
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
pub struct CompareArgs {
    /// The earlier iteration
    pub a: u32,
    /// The later iteration
    pub b: u32,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct RefsArgs {
    /// The guide: playbook, catalog, api, model, ir, patterns, json (or its file name); none lists them
    pub name: Option<String>,
    /// A section: a playbook letter (B), a rule (R3) or a heading's title
    pub section: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct SkillArgs {
    /// Print SKILL.md (what happens without --install)
    #[arg(long, conflicts_with = "install")]
    pub print: bool,
    /// Write the skill's folder (SKILL.md, evals/evals.json) where agents look: by default the checkout's
    /// .claude/skills and .agents/skills, kept out of git through .git/info/exclude
    #[arg(long)]
    pub install: bool,
    /// Install into DIR/git-cutile-perf instead
    #[arg(long, value_name = "DIR", requires = "install", conflicts_with_all = ["user", "project"])]
    pub dir: Option<PathBuf>,
    /// Install into your own ~/.claude/skills and ~/.agents/skills instead
    #[arg(long, requires = "install", conflicts_with = "project")]
    pub user: bool,
    /// Install into the checkout's .claude/skills and .agents/skills (the default)
    #[arg(long, requires = "install")]
    pub project: bool,
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

#[derive(Args, Debug)]
pub struct TableArgs {
    /// Also write sandbox/perf_results.md, the plot (sandbox/perf_results.svg) and the report
    /// (sandbox/perf_results.html)
    #[arg(long)]
    pub write: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Where to write the HTML page (default: sandbox/perf_results.html)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Where to write the SVG (default: sandbox/perf_results.svg)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: HookAction,
}

#[derive(Subcommand, Debug)]
pub enum HookAction {
    /// Install the hook into the repository's hooks directory; an existing hook is kept and runs first
    Install,
    /// Remove the hook and restore, byte for byte, the one it replaced
    Uninstall,
    /// Show whether the hook is installed, where, and what it chains to
    Status(JsonArg),
    /// The check the hook runs: on a session branch, reject staged paths outside the allowed set
    #[command(hide = true)]
    PreCommit,
    /// The check the commit-msg hook runs: on a session branch, only the tool writes Cutile-Perf-* trailers
    #[command(hide = true)]
    CommitMsg {
        /// The message file git hands the hook
        message: std::path::PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Build the demo repository here (must not exist) and keep it, instead of a temporary directory
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Print the page of this verb instead of the tool's page
    #[arg(conflicts_with = "dir")]
    pub verb: Option<String>,
    /// Write every page into DIR (created if missing) instead of printing one
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print one JSON object listing the files written (with --dir)
    #[arg(long, requires = "dir")]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell whose script to print or write; with --dir and no shell, all of them
    #[arg(value_enum, required_unless_present = "dir")]
    pub shell: Option<Shell>,
    /// Write the script(s) into DIR (created if missing) instead of printing
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print one JSON object listing the files written (with --dir)
    #[arg(long, requires = "dir")]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
pub struct ExtrasArgs {
    /// Use the layout under DIR (DIR/share/man/man1, DIR/share/bash-completion/completions, ...)
    /// instead of your user's directories (~/.local/share/..., ~/.config/fish/...)
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub extras: ExtrasArgs,
    /// Keep the Python environment the demo made in the cache directory (it is remade on demand)
    #[arg(long)]
    pub keep_demo_env: bool,
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
            return Err(crate::hint::hinted(
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
