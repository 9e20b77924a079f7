//! `setup-remote [REMOTE]`: the record's refspecs added to the remote's push and fetch config, so that
//! a plain `git push` and `git fetch` carry the record.

use anyhow::Result;
use serde::Serialize;

use super::{config_values, record_refspecs, resolve_remote};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// What `setup-remote --json` prints.
#[derive(Debug, Serialize)]
pub struct SetupReport {
    pub remote: String,
    /// `remote.<name>.push` and `.fetch` values added by this run (none when they were there already).
    pub added: Vec<ConfigValue>,
}

#[derive(Debug, Serialize)]
pub struct ConfigValue {
    pub key: String,
    pub value: String,
}

/// `setup-remote [REMOTE]`: adds the record's refspecs to `remote.<name>.push` and `.fetch`, once.
pub fn setup_remote(repo: &Repo, remote: Option<&str>) -> Result<SetupReport> {
    let remote = resolve_remote(repo, remote)?;
    let mut added = Vec::new();
    for direction in ["push", "fetch"] {
        let key = format!("remote.{remote}.{direction}");
        let existing = config_values(repo, &key)?;
        let mut wanted = record_refspecs().to_vec();
        // with any push refspec configured, a plain `git push` pushes only those: keep it pushing the
        // current branch, as it did before
        if direction == "push" && existing.is_empty() {
            wanted.insert(0, "HEAD".to_string());
        }
        for value in wanted.into_iter().filter(|v| !existing.contains(v)) {
            repo.git(&["config", "--add", &key, &value])?;
            added.push(ConfigValue {
                key: key.clone(),
                value,
            });
        }
    }
    Ok(SetupReport { remote, added })
}

impl Render for SetupReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if self.added.is_empty() {
            writeln!(out, "{} carries the session's record already", self.remote)?;
            return Ok(());
        }
        for ConfigValue { key, value } in &self.added {
            writeln!(out, "added {key} = {value}")?;
        }
        writeln!(
            out,
            "plain `git push {0}` and `git fetch {0}` now carry the evidence notes and session refs",
            self.remote
        )?;
        Ok(())
    }
}
