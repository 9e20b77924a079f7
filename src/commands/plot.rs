//! `plot`: the session's SVG picture, rebuilt from its commits like the table.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use crate::cli::PlotArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history, write_plot, write_plot_to};
use crate::ui;

/// What `plot --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct PlotReport<'a> {
    pub plot: &'a Path,
    pub iterations: usize,
}

pub fn run(repo: &Repo, args: &PlotArgs, out: &mut impl Write) -> Result<()> {
    // the per-config panels need every kept iteration's configs
    let history = require_history(repo, Configs::All)?;
    let path = match &args.out {
        Some(path) => write_plot_to(&history, path.clone())?,
        None => write_plot(repo, &history)?,
    };
    if args.output.json {
        return ui::write_json(
            out,
            &PlotReport {
                plot: &path,
                iterations: history.iterations.len(),
            },
        );
    }
    ui::progress_line(&format!("wrote {}", path.display()));
    Ok(())
}
