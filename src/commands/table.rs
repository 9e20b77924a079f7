//! `table`: the results table, rebuilt from the session's commits.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cli::TableArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history, write_plot, write_table};
use crate::table::{self, Row};
use crate::ui;

/// What `table --json` prints.
#[derive(Debug, Serialize)]
pub struct TableReport<'a> {
    pub rows: Vec<Row<'a>>,
    /// The files written, with `--write`.
    pub table: Option<PathBuf>,
    pub plot: Option<PathBuf>,
}

pub fn run(repo: &Repo, args: &TableArgs, out: &mut impl Write) -> Result<()> {
    let TableArgs { write, output } = args;
    // the plot that --write also draws needs every kept iteration's configs
    let configs = if *write {
        Configs::All
    } else {
        Configs::CurrentBaseline
    };
    let history = require_history(repo, configs)?;
    let (table, plot) = if *write {
        (
            Some(write_table(repo, &history)?),
            Some(write_plot(repo, &history)?),
        )
    } else {
        (None, None)
    };
    if output.json {
        let rows = history.iterations().map(Row::from).collect();
        return ui::write_json(out, &TableReport { rows, table, plot });
    }
    write!(out, "{}", table::markdown(history.iterations()))?;
    for path in table.iter().chain(&plot) {
        ui::progress_line(&format!("wrote {}", path.display()));
    }
    Ok(())
}
