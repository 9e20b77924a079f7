//! The record's verbs: `table`, `plot`, `report` and `compare` read it; `push`, `fetch` and
//! `setup-remote` carry it to and from a remote.

use std::path::PathBuf;

use clap::Args;

use super::JsonArg;

#[derive(Args, Debug)]
pub struct TravelArgs {
    /// The remote (default: the branch's upstream remote, else origin)
    pub remote: Option<String>,
    /// Where both sides noted one commit differently, keep this side's note there (push) or take the
    /// remote's (fetch); every other note of both sides is kept either way
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct SetupRemoteArgs {
    /// The remote (default: the branch's upstream remote, else origin)
    pub remote: Option<String>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The earlier iteration
    pub a: u32,
    /// The later iteration
    pub b: u32,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct TableArgs {
    /// Also write sandbox/perf_results.md, the plot (sandbox/perf_results.svg) and the report
    /// (sandbox/perf_results.html)
    #[arg(long)]
    pub write: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Where to write the HTML page (default: sandbox/perf_results.html)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Where to write the SVG (default: sandbox/perf_results.svg)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}
