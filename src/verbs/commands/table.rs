//! `table`: the results table, rebuilt from the session's commits.

use std::path::PathBuf;

use anyhow::Result;
use serde::{Serialize, Serializer};

use super::{in_sandbox, write_plot, write_report};
use crate::record::history::{Configs, require_history, write_table};
use crate::record::session::Iteration;
use crate::record::table::{self, Row};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// What `table` may do besides printing.
#[derive(Debug, Default)]
pub struct TableOptions {
    /// Also write the table, the plot and the report under the sandbox.
    pub write: bool,
}

/// What `table --json` prints.
#[derive(Debug, Serialize)]
pub struct TableReport {
    #[serde(rename = "rows", serialize_with = "as_rows")]
    pub iterations: Vec<Iteration>,
    /// The files written, with `--write`.
    pub table: Option<PathBuf>,
    pub plot: Option<PathBuf>,
    pub report: Option<PathBuf>,
}

fn as_rows<S: Serializer>(iterations: &[Iteration], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(iterations.iter().map(Row::from))
}

pub fn run(repo: &Repo, options: &TableOptions) -> Result<TableReport> {
    let TableOptions { write } = *options;
    // the plot and the report that --write also draws need every iteration's configs
    let configs = if write {
        Configs::All
    } else {
        Configs::CurrentBaseline
    };
    let history = require_history(repo, configs)?;
    let (table, plot, report) = if write {
        let plot_file = in_sandbox(repo, crate::record::plot::DEFAULT_FILE)?;
        let report_file = in_sandbox(repo, crate::features::report::DEFAULT_FILE)?;
        (
            Some(write_table(repo, &history)?),
            Some(write_plot(repo, &history, plot_file)?),
            Some(write_report(repo, &history, report_file)?.0),
        )
    } else {
        (None, None, None)
    };
    Ok(TableReport {
        iterations: history.iterations().cloned().collect(),
        table,
        plot,
        report,
    })
}

impl Render for TableReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        write!(ui.out(), "{}", table::markdown(&self.iterations))?;
        for path in self.table.iter().chain(&self.plot).chain(&self.report) {
            ui.progress(&format!("wrote {}", path.display()));
        }
        Ok(())
    }
}
