//! Settings kept where git users keep theirs: `cutile-perf.<key>` in git config gives a flag its
//! default. A flag on the command line wins; then git's own order (the repository's config over the
//! global one over the system's); then the built-in default, which is the command line's own (one
//! definition: `cli/`). A setting shapes new commands only: a session's thresholds are recorded in its
//! baseline, and every later verdict reads them from there.

use std::collections::BTreeMap;
use std::path::Path;

use clap::Command;
use clap::parser::ValueSource;

use crate::system::process;

/// One setting: its git config key (after `cutile-perf.`), the argument it defaults, and the verbs
/// that have that argument.
#[derive(Debug)]
pub struct Setting {
    pub key: &'static str,
    /// The argument's id in `cli/` (its field's name).
    pub arg: &'static str,
    pub verbs: &'static [&'static str],
}

/// The settings, in the order `config --list` shows them.
pub const SETTINGS: [Setting; 10] = [
    Setting {
        key: "budget",
        arg: "budget",
        verbs: &["start", "step", "diagnose", "inspect"],
    },
    Setting {
        key: "python",
        arg: "python",
        verbs: &["start", "inspect"],
    },
    Setting {
        key: "runner",
        arg: "runner",
        verbs: &["start"],
    },
    Setting {
        key: "slurmArgs",
        arg: "slurm_args",
        verbs: &["start"],
    },
    Setting {
        key: "queueTimeout",
        arg: "queue_timeout",
        verbs: &["start"],
    },
    Setting {
        key: "continuePct",
        arg: "continue_pct",
        verbs: &["start"],
    },
    Setting {
        key: "gainPct",
        arg: "gain_pct",
        verbs: &["start"],
    },
    Setting {
        key: "regressionPct",
        arg: "regression_pct",
        verbs: &["start"],
    },
    Setting {
        key: "maxIterations",
        arg: "max_iterations",
        verbs: &["start"],
    },
    Setting {
        key: "maxNoGain",
        arg: "max_no_gain",
        verbs: &["start"],
    },
];

/// The settings that only the Slurm runner reads: a configured value is no default for a local run.
const SLURM_ONLY: [&str; 2] = ["slurmArgs", "queueTimeout"];

/// A value git config holds, and the scope it came from as git names it (`local`, `global`,
/// `system`, `worktree`, `command`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configured {
    pub value: String,
    pub scope: String,
}

/// The `cutile-perf.*` values git config holds for the repository at `dir` (or only the global and
/// system ones outside a repository), by setting key; where a key is set in several scopes, the one
/// git reads last (the most local) wins.
pub fn configured(dir: &Path) -> anyhow::Result<BTreeMap<&'static str, Configured>> {
    let args = ["config", "--show-scope", "--get-regexp", r"^cutile-perf\."];
    // exit 1: no such key anywhere (git prints nothing, so its error ends with an empty stderr)
    let listed = match process::git(dir, &args, &[]) {
        Ok(listed) => listed,
        Err(err) if err.to_string().ends_with("failed: ") => String::new(),
        Err(err) => return Err(err),
    };
    Ok(parse_configured(&listed))
}

/// `git config --show-scope --get-regexp` lines (`SCOPE\tKEY VALUE`, keys lowercased) by setting.
fn parse_configured(listed: &str) -> BTreeMap<&'static str, Configured> {
    let mut found = BTreeMap::new();
    for line in listed.lines() {
        let Some((scope, rest)) = line.split_once('\t') else {
            continue;
        };
        let (key, value) = rest.split_once(' ').unwrap_or((rest, ""));
        let name = key.strip_prefix("cutile-perf.").unwrap_or_default();
        if let Some(setting) = SETTINGS.iter().find(|s| s.key.eq_ignore_ascii_case(name)) {
            found.insert(
                setting.key,
                Configured {
                    value: value.to_string(),
                    scope: scope.to_string(),
                },
            );
        }
    }
    found
}

/// `command` with each configured value as its argument's default. `given` is the command line
/// parsed without them: a Slurm-only setting applies only when the run will use Slurm.
pub fn apply(
    mut command: Command,
    configured: &BTreeMap<&'static str, Configured>,
    given: &clap::ArgMatches,
) -> Command {
    let slurm = slurm_runner(configured, given);
    for setting in &SETTINGS {
        let Some(Configured { value, .. }) = configured.get(setting.key) else {
            continue;
        };
        if SLURM_ONLY.contains(&setting.key) && !slurm {
            continue;
        }
        for verb in setting.verbs {
            let value = value.clone();
            command = command.mut_subcommand(verb, |sub| {
                sub.mut_arg(setting.arg, |arg| arg.default_value(value))
            });
        }
    }
    command
}

/// Whether `start`, as given, will run on Slurm: its `--runner` flag, else `cutile-perf.runner`.
fn slurm_runner(configured: &BTreeMap<&'static str, Configured>, given: &clap::ArgMatches) -> bool {
    let Some(("start", start)) = given.subcommand() else {
        return false;
    };
    let flag = (start.value_source("runner") == Some(ValueSource::CommandLine))
        .then(|| start.get_one::<crate::system::runner::RunnerKind>("runner"))
        .flatten();
    match flag {
        Some(kind) => *kind == crate::system::runner::RunnerKind::Slurm,
        None => configured.get("runner").is_some_and(|c| c.value == "slurm"),
    }
}

/// The built-in default of `setting`, as the command line defines it (none for a flag without one).
pub fn built_in_default(command: &Command, setting: &Setting) -> Option<String> {
    let verb = command.find_subcommand(setting.verbs[0])?;
    let arg = verb.get_arguments().find(|a| a.get_id() == setting.arg)?;
    let first = arg.get_default_values().first()?;
    Some(first.to_string_lossy().into_owned())
}

/// Why `value` is no value for `setting`'s flag (what the flag given it would say), if it is not one: a
/// command that reads the setting would refuse it.
pub fn invalid(command: &Command, setting: &Setting, value: &str) -> Option<String> {
    let verb = command.find_subcommand(setting.verbs[0])?;
    let arg = verb.get_arguments().find(|a| a.get_id() == setting.arg)?;
    let given = format!("--{}={value}", arg.get_long()?);
    // the flag alone, parsed as the verb parses it
    let err = Command::default()
        .name("config")
        .arg(arg.clone().required(false))
        .try_get_matches_from(["config", given.as_str()])
        .err()?;
    let why = match std::error::Error::source(&err) {
        Some(source) => source.to_string(),
        None => err.render().to_string(),
    };
    let words: Vec<&str> = why
        .lines()
        .map(|line| line.trim().trim_start_matches("error: "))
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .collect();
    Some(words.join(" "))
}

/// The long flag `setting` defaults, e.g. `--gain-pct`.
pub fn flag(command: &Command, setting: &Setting) -> String {
    command
        .find_subcommand(setting.verbs[0])
        .and_then(|verb| verb.get_arguments().find(|a| a.get_id() == setting.arg))
        .and_then(|arg| arg.get_long())
        .map_or_else(String::new, |long| format!("--{long}"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::verbs::cli::{Cli, Command as Verb};

    fn configured(pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, Configured> {
        pairs
            .iter()
            .map(|(key, value)| {
                let configured = Configured {
                    value: value.to_string(),
                    scope: "local".to_string(),
                };
                (*key, configured)
            })
            .collect()
    }

    /// The command line `words` parsed with `settings` as defaults.
    fn parse(settings: &[(&'static str, &str)], words: &[&str]) -> Verb {
        let argv = [&["git-cutile-perf"], words].concat();
        let given = Cli::command().try_get_matches_from(&argv).unwrap();
        let command = apply(Cli::command(), &configured(settings), &given);
        let matches = command.try_get_matches_from(&argv).unwrap();
        Cli::from_arg_matches(&matches).unwrap().command
    }

    #[test]
    fn git_config_lines_by_setting_the_most_local_last() {
        let listed = "global\tcutile-perf.budget 20m\n\
                      local\tcutile-perf.budget 30m\n\
                      global\tcutile-perf.slurmargs -p gpu --gres=gpu:1\n\
                      local\tcutile-perf.unknown x\n";
        let found = parse_configured(listed);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found["budget"],
            Configured {
                value: "30m".into(),
                scope: "local".into()
            }
        );
        assert_eq!(found["slurmArgs"].value, "-p gpu --gres=gpu:1");
        assert_eq!(found["slurmArgs"].scope, "global");
    }

    #[test]
    fn a_flag_wins_over_config_and_config_over_the_built_in_default() {
        let budget = |verb: Verb| match verb {
            Verb::Step(args) => args.budget,
            other => panic!("{other:?}"),
        };
        let settings = [("budget", "20m")];
        assert_eq!(
            budget(parse(&settings, &["step", "x"])),
            Duration::from_secs(1200)
        );
        assert_eq!(
            budget(parse(&settings, &["step", "x", "--budget", "90s"])),
            Duration::from_secs(90)
        );
        assert_eq!(budget(parse(&[], &["step", "x"])), Duration::from_secs(600));
        // a configured default does not count as given: `inspect --python` needs --measure, its default not
        match parse(&[("python", "python3.12")], &["inspect", "k"]) {
            Verb::Inspect(args) => assert_eq!(args.python.as_deref(), Some("python3.12")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn slurm_settings_apply_only_to_a_slurm_run() {
        let start = |settings: &[(&'static str, &str)], words: &[&str]| match parse(settings, words)
        {
            Verb::Start(args) => (args.runner.runner, args.runner.slurm_args),
            other => panic!("{other:?}"),
        };
        let slurm_args = [("slurmArgs", "-p gpu")];
        use crate::system::runner::RunnerKind::{Local, Slurm};
        assert_eq!(start(&slurm_args, &["start", "k"]), (Local, None));
        assert_eq!(
            start(&slurm_args, &["start", "k", "--runner", "slurm"]),
            (Slurm, Some("-p gpu".into()))
        );
        let both = [("runner", "slurm"), ("slurmArgs", "-p gpu")];
        assert_eq!(
            start(&both, &["start", "k"]),
            (Slurm, Some("-p gpu".into()))
        );
        assert_eq!(
            start(&both, &["start", "k", "--runner", "local"]),
            (Local, None)
        );
    }

    #[test]
    fn every_setting_names_a_flag_of_each_of_its_verbs() {
        let command = Cli::command();
        for setting in &SETTINGS {
            for verb in setting.verbs {
                let sub = command.find_subcommand(verb).unwrap();
                assert!(
                    sub.get_arguments().any(|a| a.get_id() == setting.arg),
                    "{verb} has no {}",
                    setting.arg
                );
            }
            assert!(flag(&command, setting).starts_with("--"), "{setting:?}");
        }
        assert_eq!(
            built_in_default(&command, &SETTINGS[0]).as_deref(),
            Some("10m")
        );
        assert_eq!(built_in_default(&command, &SETTINGS[1]), None);
        assert_eq!(
            built_in_default(&command, &SETTINGS[6]).as_deref(),
            Some("2")
        );
    }

    #[test]
    fn a_configured_value_no_flag_takes_is_named_with_why() {
        let command = Cli::command();
        let setting = |key: &str| SETTINGS.iter().find(|s| s.key == key).unwrap();
        assert_eq!(invalid(&command, setting("budget"), "10m"), None);
        assert_eq!(invalid(&command, setting("gainPct"), "2.5"), None);
        let budget = invalid(&command, setting("budget"), "-5m").unwrap();
        assert!(budget.starts_with("invalid duration \"-5m\""), "{budget}");
        let pct = invalid(&command, setting("gainPct"), "abc").unwrap();
        assert!(pct.starts_with("invalid percentage \"abc\""), "{pct}");
        let runner = invalid(&command, setting("runner"), "abc").unwrap();
        assert!(
            runner.contains("abc") && runner.contains("slurm"),
            "{runner}"
        );
        assert!(invalid(&command, setting("maxIterations"), "x").is_some());
    }
}
