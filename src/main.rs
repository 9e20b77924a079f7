//! `git-cutile-perf`: a git subcommand that runs the cuTile kernel-optimization loop.

use std::process::ExitCode;

use git_cutile_perf::cli::{Cli, Command};
use git_cutile_perf::{commands, errors, git, process, ui};

fn main() -> ExitCode {
    // a closed pipe (`status | head -1`) ends the program quietly, as for any Unix filter, instead of
    // making println! panic
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let (cli, json) = match errors::parse_command_line() {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    ui::set_json_output(json);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => errors::report(&err, json),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // the MCP server writes stdout from its own threads, and ends when its client stops it (the verbs it
    // runs catch Ctrl-C themselves)
    if let Command::Mcp = cli.command {
        return commands::mcp::run();
    }
    process::install_interrupt_handler()?;
    // opened only by the verbs that work on a repository
    let open = || git::Repo::discover(&std::env::current_dir()?);
    let repo = || git::check_git_version().and_then(|()| open());
    let out = &mut std::io::stdout().lock();
    match &cli.command {
        Command::Start(args) => commands::start::run(&repo()?, args, out).map(drop),
        Command::Inspect(args) => commands::inspect::run(&repo()?, args, out),
        Command::Step(args) => commands::step::run(&repo()?, args, out).map(drop),
        Command::Diagnose(args) => commands::diagnose::run(&repo()?, args, out).map(drop),
        Command::Compare(args) => commands::compare::run(&repo()?, args, out).map(drop),
        Command::Table(args) => commands::table::run(&repo()?, args, out),
        Command::Plot(args) => commands::plot::run(&repo()?, args, out),
        Command::Report(args) => commands::report::run(&repo()?, args, out),
        Command::Status(args) => commands::status::run(&repo()?, args, out),
        Command::Verify(args) => commands::verify::run(&repo()?, args, out),
        Command::Push(args) => commands::remote::push(&repo()?, args, out).map(drop),
        Command::Fetch(args) => commands::remote::fetch(&repo()?, args, out).map(drop),
        Command::SetupRemote(args) => commands::remote::setup_remote(&repo()?, args, out).map(drop),
        Command::Config(args) => commands::config::run(args, out).map(drop),
        Command::Repair(args) => commands::repair::run(&repo()?, args, out),
        Command::Next(args) => commands::next::run(&repo()?, args, out),
        Command::Refs(args) => commands::refs::run(args, out),
        Command::Skill(args) => commands::skill::run(repo().ok().as_ref(), args, out),
        Command::Mcp => unreachable!("served above"),
        Command::Hook(args) => commands::hook::run(&open()?, args, out),
        Command::Demo(args) => commands::demo::run(args),
        Command::Man(args) => commands::extras::man(args),
        Command::Completions(args) => commands::extras::completions(args),
        Command::InstallExtras(args) => commands::extras::install(args),
        Command::UninstallExtras(args) => commands::extras::uninstall(args),
    }
}
