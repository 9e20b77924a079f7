//! The command line: every verb and flag of `git cutile-perf`. The parser and its list of verbs are here;
//! the verbs' arguments are grouped by what they serve: the loop's (`loop_verbs.rs`), the record's
//! (`record_verbs.rs`) and the extras around them (`extras.rs`).
// the doc comments are clap's help text, read in a terminal: `<kernel>` there is a placeholder, not HTML
#![allow(rustdoc::invalid_html_tags)]

mod campaign;
mod extras;
mod loop_verbs;
mod parse;
mod record_verbs;
pub mod settings;

pub use campaign::{
    CampaignAction, CampaignArgs, CampaignNameArgs, CampaignNextArgs, CampaignReportArgs,
    CampaignResumeArgs, CampaignStartArgs, CampaignWorkerArgs, SessionArgs,
};
pub use extras::{
    CompletionsArgs, ConfigArgs, DemoArgs, ExtrasArgs, HookAction, HookArgs, ManArgs, RefsArgs,
    Shell, SkillArgs, UninstallArgs,
};
pub use loop_verbs::{
    DiagnoseArgs, InspectArgs, NextArgs, RunnerArgs, StartArgs, StepArgs, ThresholdArgs,
};
pub use parse::parse_command_line;
pub use record_verbs::{CompareArgs, PlotArgs, ReportArgs, SetupRemoteArgs, TableArgs, TravelArgs};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

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
    /// Finish or undo an iteration that a killed `start` or `step` left half-done, or take back commits the tool did not make (a hand commit's change comes back to the work tree as an edit to step, or beside another edit to a patch it names); your edit is kept
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
    /// Many kernels at once: a session per kernel in a worktree of its own, their baselines spread over
    /// the GPUs (or a Slurm array job), one record, one table and page, and agents claiming sessions
    Campaign(CampaignArgs),
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

/// clap's parser for one of the words a rule names (`--stat median`, `--cause memory`): it accepts
/// those words, lists them in `--help`, and gives the rule's value, so that the rules know nothing of
/// the command line.
fn words<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    word: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|&value| word(value))).map(move |given| {
        *all.iter()
            .find(|&&value| word(value) == given)
            .expect("clap accepts only the listed words")
    })
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
    fn a_rule_word_parses_to_the_rule_value_and_another_word_is_refused() {
        use crate::rules::records::Statistic;
        let command = clap::Command::new("t").arg(
            clap::Arg::new("stat")
                .long("stat")
                .value_parser(words(Statistic::ALL, Statistic::as_str)),
        );
        let matches = command
            .clone()
            .try_get_matches_from(["t", "--stat", "min"])
            .unwrap();
        assert_eq!(matches.get_one::<Statistic>("stat"), Some(&Statistic::Min));
        assert!(
            command
                .try_get_matches_from(["t", "--stat", "mode"])
                .is_err()
        );
    }
}
