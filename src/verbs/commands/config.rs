//! `config --list`: each setting that git config may hold (`cutile-perf.<key>`, see `settings.rs`),
//! its value and where that value came from.

use anyhow::Result;
use clap::CommandFactory;
use serde::Serialize;

use crate::system::ui::{Render, Ui};
use crate::verbs::cli::Cli;
use crate::verbs::cli::settings::{self, SETTINGS};

/// What `config --list --json` prints.
#[derive(Debug, Serialize)]
pub struct ConfigList {
    pub settings: Vec<SettingValue>,
}

#[derive(Debug, Serialize)]
pub struct SettingValue {
    /// The git config key, e.g. `cutile-perf.gainPct`.
    pub key: String,
    /// None when neither git config nor the command line sets one (`python`: found on PATH).
    pub value: Option<String>,
    /// `default`, or the git config scope that set it: `local`, `global`, `system`, `worktree`.
    pub source: String,
    /// The flag that overrides it for one command.
    pub flag: String,
    pub verbs: &'static [&'static str],
    /// Why the configured value is not one the flag takes (the commands that read it refuse it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// The settings as git config in the current directory holds them.
pub fn run() -> Result<ConfigList> {
    let configured = settings::configured(&std::env::current_dir()?)?;
    let command = Cli::command();
    let report = ConfigList {
        settings: SETTINGS
            .iter()
            .map(|setting| {
                let (value, source) = match configured.get(setting.key) {
                    Some(found) => (Some(found.value.clone()), found.scope.clone()),
                    None => (
                        settings::built_in_default(&command, setting),
                        "default".to_string(),
                    ),
                };
                let invalid = configured
                    .get(setting.key)
                    .and_then(|found| settings::invalid(&command, setting, &found.value));
                SettingValue {
                    key: format!("cutile-perf.{}", setting.key),
                    value,
                    source,
                    flag: settings::flag(&command, setting),
                    verbs: setting.verbs,
                    invalid,
                }
            })
            .collect(),
    };
    Ok(report)
}

impl Render for ConfigList {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        for setting in &self.settings {
            writeln!(
                out,
                "{:<26} {:<16} {:<8} {} ({})",
                setting.key,
                setting.value.as_deref().unwrap_or("(none)"),
                setting.source,
                setting.flag,
                setting.verbs.join(", ")
            )?;
            if let Some(why) = &setting.invalid {
                writeln!(out, "  invalid: {why}; the commands that read it refuse it")?;
            }
        }
        writeln!(
            out,
            "\na flag given wins; set one with `git config [--global] KEY VALUE`"
        )?;
        Ok(())
    }
}
