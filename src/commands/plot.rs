//! `plot`: the session's SVG picture, rebuilt from its commits like the table.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{require_history, sandbox};
use crate::cli::PlotArgs;
use crate::git::Repo;
use crate::history::{Configs, History};
use crate::session::Iteration;
use crate::{plot, ui};

/// Where `plot` and `table --write` put the picture, under the sandbox.
pub const DEFAULT_FILE: &str = "perf_results.svg";

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
        Some(path) => write(&history, path.clone())?,
        None => write_default(repo, &history)?,
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

/// Writes sandbox/perf_results.svg and returns its path.
pub fn write_default(repo: &Repo, history: &History) -> Result<PathBuf> {
    let dir = sandbox(repo);
    std::fs::create_dir_all(&dir)?;
    write(history, dir.join(DEFAULT_FILE))
}

fn write(history: &History, path: PathBuf) -> Result<PathBuf> {
    let iterations: Vec<Iteration> = history.iterations().cloned().collect();
    let svg = plot::svg(
        &plot::title(&history.session),
        &iterations,
        history.session.thresholds.regression_pct,
    )?;
    std::fs::write(&path, svg).with_context(|| format!("could not write {}", path.display()))?;
    Ok(path)
}
