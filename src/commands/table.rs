//! `table`: the results table, rebuilt from the session's commits.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::{in_sandbox, write_plot, write_report};
use crate::cli::TableArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history, write_table};
use crate::table::{self, Row};
use crate::ui;

/// What `table --json` prints.
#[derive(Debug, Serialize)]
pub struct TableReport<'a> {
    pub rows: Vec<Row<'a>>,
    /// The files written, with `--write`.
    pub table: Option<PathBuf>,
    pub plot: Option<PathBuf>,
    pub report: Option<PathBuf>,
}

pub fn run(repo: &Repo, args: &TableArgs, out: &mut impl Write) -> Result<()> {
    let TableArgs { write, output } = args;
    // the plot and the report that --write also draws need every iteration's configs
    let configs = if *write {
        Configs::All
    } else {
        Configs::CurrentBaseline
    };
    let history = require_history(repo, configs)?;
    let (table, plot, report) = if *write {
        let plot_file = in_sandbox(repo, crate::plot::DEFAULT_FILE)?;
        let report_file = in_sandbox(repo, crate::report::DEFAULT_FILE)?;
        (
            Some(write_table(repo, &history)?),
            Some(write_plot(repo, &history, plot_file)?),
            Some(write_report(repo, &history, report_file)?.0),
        )
    } else {
        (None, None, None)
    };
    if output.json {
        let rows = history.iterations().map(Row::from).collect();
        return ui::write_json(
            out,
            &TableReport {
                rows,
                table,
                plot,
                report,
            },
        );
    }
    write!(out, "{}", table::markdown(history.iterations()))?;
    for path in table.iter().chain(&plot).chain(&report) {
        ui::progress_line(&format!("wrote {}", path.display()));
    }
    Ok(())
}
