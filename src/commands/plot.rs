//! `plot`: the session's SVG picture, rebuilt from its commits like the table.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{in_sandbox, write_plot};
use crate::cli::PlotArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history};
use crate::plot::DEFAULT_FILE;
use crate::ui;

/// What `plot --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct PlotReport<'a> {
    pub plot: &'a Path,
    pub iterations: usize,
}

pub fn run(repo: &Repo, args: &PlotArgs, out: &mut impl Write) -> Result<()> {
    // the per-config panels need every iteration's configs
    let history = require_history(repo, Configs::All)?;
    let path = match &args.out {
        Some(path) => path.clone(),
        None => in_sandbox(repo, DEFAULT_FILE)?,
    };
    let path: PathBuf = write_plot(repo, &history, path)?;
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
