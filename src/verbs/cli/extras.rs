//! The extras around the loop: `config`, `refs`, `skill`, `hook`, `demo`, `man`, `completions`,
//! `install-extras` and `uninstall-extras`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::JsonArg;

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// List every setting with its value and source (default, or the git config scope)
    #[arg(long, required = true)]
    pub list: bool,
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
    /// Write the scripts (or the one shell's) into DIR (created if missing) instead of printing
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
