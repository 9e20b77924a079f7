//! `report`: the session as one self-contained HTML page (`crate::report`), rebuilt from its commits and
//! evidence notes like the table.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use super::{in_sandbox, write_report};
use crate::cli::ReportArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history};
use crate::report::DEFAULT_FILE;
use crate::ui;

/// What `report --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct ReportReport {
    pub report: PathBuf,
    pub iterations: usize,
    /// What the page had to do without (evidence notes, code changes), in words.
    pub missing: Vec<String>,
}

pub fn run(repo: &Repo, args: &ReportArgs, out: &mut impl Write) -> Result<()> {
    let ReportArgs { out: file, output } = args;
    // each iteration's configs are on the page
    let history = require_history(repo, Configs::All)?;
    let path = match file {
        Some(path) => path.clone(),
        None => in_sandbox(repo, DEFAULT_FILE)?,
    };
    let (report, missing) = write_report(repo, &history, path)?;
    if output.json {
        return ui::write_json(
            out,
            &ReportReport {
                report,
                iterations: history.iterations.len(),
                missing,
            },
        );
    }
    for lack in &missing {
        ui::progress_line(&format!("without {lack}"));
    }
    ui::progress_line(&format!("wrote {}", report.display()));
    Ok(())
}
