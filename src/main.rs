//! `git-cutile-perf`: a git subcommand that runs the cuTile kernel-optimization loop.
//!
//! The edge: clap's arguments become each verb's options (`edge.rs`), the verb runs on the repository
//! of the current directory, and its report is shown through the one [`Ui`] (JSON or text).

use std::process::ExitCode;

use anyhow::Result;
use git_cutile_perf::system::ui::{Render, Ui};
use git_cutile_perf::verbs::cli::{Cli, Command};
use git_cutile_perf::verbs::commands::{
    compare, config, demo, diagnose, extras, hook, inspect, mcp, next, plot, refs, remote, repair,
    report, scaffold, skill, start, status, step, table, verify,
};
use git_cutile_perf::{system::git, system::process, verbs::errors};

fn main() -> ExitCode {
    let (cli, json) = match git_cutile_perf::verbs::cli::parse_command_line() {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // the MCP server writes stdout from its own threads (so no Ui may hold it locked), and ends when its
    // client stops it (the verbs it runs catch Ctrl-C themselves)
    if let Command::Mcp = cli.command {
        return match mcp::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => errors::report(&mut Ui::terminal(&mut std::io::stdout(), json), &err),
        };
    }
    // SIGPIPE stays ignored, as Rust leaves it: a reader that stops early (`step | head -1`) must not
    // kill a step between its tests and its record; the report's writes fail instead, and `Ui` says so
    let mut stdout = std::io::stdout().lock();
    let mut ui = Ui::terminal(&mut stdout, json);
    let code = match run(&mut ui, cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => errors::report(&mut ui, &err),
    };
    ui.say_if_cut_short();
    code
}

/// Runs a verb and shows its report, or passes its failure on.
fn show<R: Render>(ui: &mut Ui, verb: impl FnOnce(&mut Ui) -> Result<R>) -> Result<()> {
    let report = verb(ui)?;
    ui.show(&report)
}

fn run(ui: &mut Ui, cli: Cli) -> Result<()> {
    process::install_interrupt_handler()?;
    // opened only by the verbs that work on a repository
    let open = || git::Repo::discover(&std::env::current_dir()?);
    let repo = || git::check_git_version().and_then(|()| open());
    match cli.command {
        Command::Start(args) if args.scaffold => {
            show(ui, |_| scaffold::run(&repo()?, &args.into()))
        }
        Command::Start(args) => show(ui, |ui| start::run(ui, &repo()?, &args.try_into()?)),
        Command::Inspect(args) => match args.into() {
            inspect::Inspect::All => show(ui, |_| inspect::all(&repo()?)),
            inspect::Inspect::One(options) => show(ui, |ui| inspect::run(ui, &repo()?, &options)),
        },
        Command::Step(args) => show(ui, |ui| step::run(ui, &repo()?, &args.into())),
        Command::Diagnose(args) => show(ui, |ui| diagnose::run(ui, &repo()?, &args.into())),
        Command::Compare(args) => show(ui, |_| compare::run(&repo()?, args.a, args.b)),
        Command::Table(args) => show(ui, |_| {
            table::run(&repo()?, &table::TableOptions { write: args.write })
        }),
        Command::Plot(args) => show(ui, |_| {
            plot::run(&repo()?, &plot::PlotOptions { out: args.out })
        }),
        Command::Report(args) => show(ui, |_| {
            report::run(&repo()?, &report::ReportOptions { out: args.out })
        }),
        Command::Status(_) => show(ui, |ui| status::run(ui, &repo()?)),
        Command::Verify(_) => {
            let report = verify::run(&repo()?)?;
            ui.show(&report)?;
            report.verdict()
        }
        Command::Push(args) => show(ui, |_| remote::push(&repo()?, &args.into())),
        Command::Fetch(args) => {
            let report = remote::fetch(&repo()?, &args.into())?;
            ui.show(&report)?;
            report.verdict()
        }
        Command::SetupRemote(args) => show(ui, |_| {
            remote::setup_remote(&repo()?, args.remote.as_deref())
        }),
        Command::Config(_) => show(ui, |_| config::run()),
        Command::Repair(_) => show(ui, |_| repair::run(&repo()?)),
        Command::Next(args) => show(ui, |ui| {
            next::run(
                ui,
                &repo()?,
                &next::NextOptions {
                    class: args.class,
                    skip: args.skip.zip(args.why),
                },
            )
        }),
        Command::Refs(args) => show(ui, |_| {
            refs::run(&refs::RefsOptions {
                name: args.name,
                section: args.section,
            })
        }),
        Command::Skill(args) => show(ui, |_| skill::run(repo().ok().as_ref(), &args.into())),
        Command::Mcp => unreachable!("served in main"),
        Command::Hook(args) => show(ui, |_| hook::run(&open()?, &args.action.into())),
        Command::Demo(args) => show(ui, |ui| demo::run(ui, args.dir.as_deref())),
        Command::Man(args) => show(ui, |_| {
            extras::man(&extras::GenerateOptions {
                which: args.verb,
                dir: args.dir,
            })
        }),
        Command::Completions(args) => show(ui, |_| {
            extras::completions(&extras::GenerateOptions {
                which: args.shell,
                dir: args.dir,
            })
        }),
        Command::InstallExtras(args) => show(ui, |_| {
            extras::install(&extras::ExtrasOptions {
                prefix: args.prefix,
                keep_demo_env: false,
            })
        }),
        Command::UninstallExtras(args) => show(ui, |_| {
            extras::uninstall(&extras::ExtrasOptions {
                prefix: args.extras.prefix,
                keep_demo_env: args.keep_demo_env,
            })
        }),
    }
}
