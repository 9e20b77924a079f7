//! The command line parsed: clap's matches, with the settings git config holds as the defaults of the
//! verbs that have them, and whether `--json` was asked for; a usage error is reported in the shape of
//! every other failure (`errors.rs`).

use std::process::ExitCode;

use clap::{ArgMatches, CommandFactory, FromArgMatches};

use super::Cli;
use super::settings::{self, SETTINGS};
use crate::rules::hint::Hinted;
use crate::verbs::errors::{ErrorReport, print};

/// The command line, and whether it asked for JSON; a usage error is reported here (as JSON when
/// `--json` is among the arguments) and its exit code returned.
pub fn parse_command_line() -> Result<(Cli, bool), ExitCode> {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(with_settings)
        .and_then(|matches| Cli::from_arg_matches(&matches).map(|cli| (cli, wants_json(&matches))));
    parsed.map_err(|err| {
        // read as bytes: an argument that is not UTF-8 is what clap refused, and reading it as a
        // `String` would panic
        let json = std::env::args_os().any(|arg| arg == "--json");
        if !err.use_stderr() || !json {
            // help and version go to stdout with success; clap prints and exits
            err.exit();
        }
        let code = err.exit_code() as u8;
        let text = err.render().to_string();
        let text = text.strip_prefix("error: ").unwrap_or(&text);
        print(&mut std::io::stdout().lock(), &usage_report(text, code))
    })
}

/// The command line parsed again with the settings git config holds as its defaults, for a verb that
/// has any (`settings.rs`); a value clap refuses is reported as coming from git config. A config git
/// cannot read leaves the defaults as they are: the verb's own git commands then say what is wrong.
fn with_settings(given: ArgMatches) -> Result<ArgMatches, clap::Error> {
    let uses_settings = given
        .subcommand_name()
        .is_some_and(|verb| SETTINGS.iter().any(|s| s.verbs.contains(&verb)));
    let configured = match std::env::current_dir() {
        Ok(dir) if uses_settings => settings::configured(&dir).unwrap_or_default(),
        _ => return Ok(given),
    };
    if configured.is_empty() {
        return Ok(given);
    }
    settings::apply(Cli::command(), &configured, &given)
        .try_get_matches()
        .map_err(|err| {
            // the command line alone parsed: a configured value is what clap refused
            let text = err.render().to_string();
            let refused = text.lines().next().unwrap_or_default();
            let refused = refused.strip_prefix("error: ").unwrap_or(refused);
            let refused = Hinted::new(
                refused,
                "that value comes from git config: `git cutile-perf config --list` shows where",
            );
            clap::Error::raw(err.kind(), format!("{}\n", refused.shown()))
        })
}

/// clap's usage text: the first line is the error, the rest (usage, `--help`) the hint.
fn usage_report(text: &str, exit_code: u8) -> ErrorReport {
    let (error, rest) = text.split_once('\n').unwrap_or((text, ""));
    let hint = rest
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    ErrorReport {
        error: error.trim().to_string(),
        hint: (!hint.is_empty()).then_some(hint),
        exit_code,
    }
}

/// Whether the verb (or sub-verb) that ran has `--json` set.
fn wants_json(matches: &ArgMatches) -> bool {
    let mut current = matches;
    loop {
        if let Ok(Some(true)) = current.try_get_one::<bool>("json") {
            return true;
        }
        match current.subcommand() {
            Some((_, sub)) => current = sub,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_keep_the_first_line_as_the_error() {
        let report = usage_report(
            "unexpected argument '--nope' found\n\nUsage: git cutile-perf table [OPTIONS]\n\nFor more information, try '--help'.\n",
            2,
        );
        assert_eq!(report.error, "unexpected argument '--nope' found");
        assert_eq!(
            report.hint.as_deref(),
            Some("Usage: git cutile-perf table [OPTIONS] For more information, try '--help'.")
        );
    }

    #[test]
    fn finds_json_on_a_sub_verb() {
        let matches = Cli::command()
            .try_get_matches_from(["git-cutile-perf", "hook", "status", "--json"])
            .unwrap();
        assert!(wants_json(&matches));
        let matches = Cli::command()
            .try_get_matches_from(["git-cutile-perf", "status"])
            .unwrap();
        assert!(!wants_json(&matches));
    }
}
