//! `table`: the results table, rebuilt from the session's commits.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::{require_history, write_table};
use crate::cli::TableArgs;
use crate::git::Repo;
use crate::history::Configs;
use crate::table::{self, Row};
use crate::ui;

/// What `table --json` prints.
#[derive(Debug, Serialize)]
pub struct TableReport<'a> {
    pub rows: Vec<Row<'a>>,
    /// The file written, with `--write`.
    pub table: Option<PathBuf>,
}

pub fn run(repo: &Repo, args: &TableArgs, out: &mut impl Write) -> Result<()> {
    let TableArgs { write, output } = args;
    let history = require_history(repo, Configs::CurrentBaseline)?;
    let table = if *write {
        Some(write_table(repo, &history)?)
    } else {
        None
    };
    if output.json {
        let rows = history.iterations().map(Row::from).collect();
        return ui::write_json(out, &TableReport { rows, table });
    }
    write!(out, "{}", table::markdown(history.iterations()))?;
    if let Some(path) = table {
        ui::progress_line(&format!("wrote {}", path.display()));
    }
    Ok(())
}
