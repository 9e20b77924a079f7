//! `report`: the session as one self-contained HTML page (`crate::features::report`), rebuilt from its commits and
//! evidence notes like the table.

use std::path::PathBuf;

use anyhow::Result;

use super::{in_sandbox, write_report};
use crate::features::report::DEFAULT_FILE;
use crate::record::history::{Configs, require_history};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// What `report --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct ReportReport {
    pub report: PathBuf,
    pub iterations: usize,
    /// What the page had to do without (evidence notes, code changes), in words.
    pub missing: Vec<String>,
}

/// Where `report` writes.
#[derive(Debug, Default)]
pub struct ReportOptions {
    /// The HTML file (default: under the sandbox).
    pub out: Option<PathBuf>,
}

pub fn run(repo: &Repo, options: &ReportOptions) -> Result<ReportReport> {
    let ReportOptions { out: file } = options;
    // each iteration's configs are on the page
    let history = require_history(repo, Configs::All)?;
    let path = match file {
        Some(path) => path.clone(),
        None => in_sandbox(repo, DEFAULT_FILE)?,
    };
    let (report, missing) = write_report(repo, &history, path)?;
    Ok(ReportReport {
        report,
        iterations: history.steps(),
        missing,
    })
}

impl Render for ReportReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        for lack in &self.missing {
            ui.progress(&format!("without {lack}"));
        }
        ui.progress(&format!("wrote {}", self.report.display()));
        Ok(())
    }
}
