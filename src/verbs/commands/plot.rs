//! `plot`: the session's SVG picture, rebuilt from its commits like the table.

use std::path::PathBuf;

use anyhow::Result;

use super::{in_sandbox, write_plot};
use crate::record::history::{Configs, require_history};
use crate::record::plot::DEFAULT_FILE;
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// What `plot --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct PlotReport {
    pub plot: PathBuf,
    pub iterations: usize,
}

/// Where `plot` draws.
#[derive(Debug, Default)]
pub struct PlotOptions {
    /// The SVG file (default: under the sandbox).
    pub out: Option<PathBuf>,
}

pub fn run(repo: &Repo, options: &PlotOptions) -> Result<PlotReport> {
    // the per-config panels need every iteration's configs
    let history = require_history(repo, Configs::All)?;
    let path = match &options.out {
        Some(path) => path.clone(),
        None => in_sandbox(repo, DEFAULT_FILE)?,
    };
    Ok(PlotReport {
        plot: write_plot(repo, &history, path)?,
        iterations: history.steps(),
    })
}

impl Render for PlotReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        ui.progress(&format!("wrote {}", self.plot.display()));
        Ok(())
    }
}
