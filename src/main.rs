//! `git-cutile-perf`: a git subcommand that runs the cuTile kernel-optimization loop.
//!
//! The command line is parsed (`verbs/cli/`), and the one edge (`verbs/edge.rs`) turns its arguments into
//! the verb's options, runs the verb on the repository of the current directory and shows its report
//! through the one [`Ui`] (JSON or text).

use std::process::ExitCode;

use git_cutile_perf::system::ui::Ui;
use git_cutile_perf::verbs::cli::{Command, parse_command_line};
use git_cutile_perf::verbs::commands::mcp;
use git_cutile_perf::verbs::{edge, errors};

fn main() -> ExitCode {
    let (cli, json) = match parse_command_line() {
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
    let code = match edge::run(&mut ui, cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => errors::report(&mut ui, &err),
    };
    ui.say_if_cut_short();
    code
}
