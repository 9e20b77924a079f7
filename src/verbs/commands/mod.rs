//! One module per verb. A verb that works on a repository takes it opened, with its options and a writer
//! for what it prints, and returns a typed report (gitoxide-core's shape): `main` opens the repository of
//! the current directory, and a test can run the verb on a repository it prepared, without the binary.

pub mod campaign;
pub mod compare;
pub mod config;
pub mod demo;
pub mod diagnose;
pub mod extras;
pub mod hook;
pub mod inspect;
pub mod mcp;
pub mod next;
pub mod plot;
pub mod refs;
pub mod remote;
pub mod repair;
pub mod report;
pub mod scaffold;
pub mod skill;
pub mod start;
pub mod status;
pub mod step;
pub mod table;
pub mod verify;

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::record::history::{History, made_sandbox};
use crate::system::git::Repo;

/// Writes `contents` to `path`, saying which file could not be written.
fn write_file(path: PathBuf, contents: &str) -> Result<PathBuf> {
    std::fs::write(&path, contents)
        .with_context(|| format!("could not write {}", path.display()))?;
    Ok(path)
}

/// Writes the plot to `path` (the evidence notes give its error bars) and returns the path.
pub fn write_plot(repo: &Repo, history: &History, path: PathBuf) -> Result<PathBuf> {
    let iterations: Vec<_> = history.iterations().cloned().collect();
    let svg = crate::record::plot::svg(
        &crate::record::plot::title(&history.session),
        &iterations,
        &crate::features::report::estimates(repo, history)?,
        history.session.thresholds.regression_pct,
    )?;
    write_file(path, &svg)
}

/// Writes the HTML report to `path` and returns the path, with what the page had to do without.
pub fn write_report(
    repo: &Repo,
    history: &History,
    path: PathBuf,
) -> Result<(PathBuf, Vec<String>)> {
    let material = crate::features::report::gather(repo, history)?;
    let path = write_file(path, &crate::features::report::html(&material)?)?;
    Ok((path, material.lacks()))
}

/// `name` under the sandbox, which is made if missing.
pub fn in_sandbox(repo: &Repo, name: &str) -> Result<PathBuf> {
    Ok(made_sandbox(repo)?.join(name))
}
