//! The command line: every verb and flag of `git cutile-perf`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::decision::{Cause, Thresholds};
use crate::kernel_class::KernelClass;
use crate::records::Statistic;

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
    /// Show the session: kernel, allowed paths, baseline and best latency, and whether the loop may go on
    Status(JsonArg),
    /// Audit the session's record: trailers against their evidence notes, undone attempts, allowed paths, foreign commits
    Verify(JsonArg),
    /// Finish or undo an iteration that a killed `start` or `step` left half-done; your edit is kept
    Repair(JsonArg),
    /// Print a reference guide, or one section of it (e.g. `refs playbook B`)
    Refs(RefsArgs),
    /// List the optimizations to try next for the session's kernel class, skipping those already tried
    Next(NextArgs),
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
    /// Remove what install-extras installed
    UninstallExtras(ExtrasArgs),
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
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
    pub runner: crate::runner::RunnerArgs,
    /// Start without a GPU (for tests that run on the CPU); recorded in the session, and steps do not
    /// look for one either
    #[arg(long)]
    pub no_gpu: bool,
    /// Time limit for the baseline run (e.g. 10m, 90s)
    #[arg(long, value_parser = parse_duration, default_value = "10m")]
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
    pub kernel: String,
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
    #[arg(long, value_parser = parse_duration, default_value = "10m", requires = "measure")]
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
    #[arg(long, value_parser = parse_duration, default_value = "10m")]
    pub budget: Duration,
    /// Run even though the loop has stopped or escalated
    #[arg(long = "continue")]
    pub continue_anyway: bool,
    /// The bottleneck this optimization targets; scheduling and unknown escalate to the user
    #[arg(long, value_enum)]
    pub cause: Option<Cause>,
    /// The playbook letter this optimization follows (see `git cutile-perf refs playbook`)
    #[arg(long, value_name = "LETTER")]
    pub opt: Option<String>,
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
    #[arg(long, value_parser = parse_duration, default_value = "10m")]
    pub budget: Duration,
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
    /// The guide: playbook, catalog, api, model, ir, patterns (or its file name); none lists them
    pub name: Option<String>,
    /// A section: a playbook letter (B), a rule (R3) or a heading's title
    pub section: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct NextArgs {
    /// Use this class instead of the session's
    #[arg(long, value_name = "CLASS")]
    pub class: Option<KernelClass>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct TableArgs {
    /// Also write sandbox/perf_results.md and the plot, sandbox/perf_results.svg
    #[arg(long)]
    pub write: bool,
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

/// A percentage threshold: a finite number from 0 to 100 (NaN would switch a rule off silently).
pub fn parse_pct(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "invalid percentage {text:?}: use a number from 0 to 100, e.g. 2 or 2.5"
        )),
    }
}

/// The longest budget accepted: a week, far beyond any iteration, and safe to add to `Instant::now()`.
const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

/// `10m`, `90s`, `1h30m`, `500ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: use e.g. 10m, 90s, 1h30m");
    if let Ok(seconds) = text.parse::<u64>() {
        return (seconds > 0 && seconds <= MAX_BUDGET.as_secs())
            .then(|| Duration::from_secs(seconds))
            .ok_or_else(bad);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let value: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let part = match unit {
            "ms" => Some(Duration::from_millis(value)),
            "s" => Some(Duration::from_secs(value)),
            "m" => value.checked_mul(60).map(Duration::from_secs),
            "h" => value.checked_mul(3600).map(Duration::from_secs),
            _ => return Err(bad()),
        };
        total = part
            .and_then(|part| total.checked_add(part))
            .filter(|total| *total <= MAX_BUDGET)
            .ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    if total.is_zero() {
        Err(bad())
    } else {
        Ok(total)
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

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in [
            "",
            "m",
            "10x",
            "0s",
            "-1m",
            "0",
            "99999999999999999999h",
            "18446744073709551615h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentages_are_finite_and_in_range() {
        assert_eq!(parse_pct("2.5"), Ok(2.5));
        assert_eq!(parse_pct("0"), Ok(0.0));
        for bad in ["NaN", "nan", "inf", "-1", "101", "", "x"] {
            assert!(parse_pct(bad).is_err(), "{bad}");
        }
    }
}
