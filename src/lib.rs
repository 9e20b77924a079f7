//! `git-cutile-perf` as a library: every module lives here so that tests, benchmarks and the binary share
//! one definition of each rule. `main.rs` only parses the command line and dispatches.
//!
//! The modules form layers, each using only its own and those below: values and rules; git, processes
//! and the runner; the record; features; verbs (`commands`, one verb never using another); main.
//! `tests/layers.rs` holds the table and fails on an upward import or a cycle.

pub mod agent;
pub mod audit;
pub mod benchmark_run;
pub mod census;
pub mod changes;
pub mod cli;
pub mod commands;
pub mod compile;
pub mod decision;
pub mod demo_python;
pub mod diagnose;
pub mod edge;
pub mod errors;
pub mod evidence;
pub mod generate;
pub mod git;
pub mod gpu;
pub mod guard;
pub mod hint;
pub mod history;
pub mod hook;
pub mod ignored;
pub mod inspect;
pub mod journal;
pub mod kernel_class;
pub mod locate;
pub mod ncu;
pub mod noise;
pub mod paired;
pub mod peaks;
pub mod plot;
pub mod process;
pub mod process_identity;
pub mod progress;
pub mod pyliteral;
pub mod pytest;
pub mod records;
pub mod recovery;
pub mod references;
pub mod refusals;
pub mod replay;
pub mod report;
pub mod runner;
pub mod session;
pub mod settings;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod trailers;
pub mod ui;
pub mod units;
pub mod verdict;
pub mod workers;

/// The version `--version` prints: the crate's, and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CUTILE_PERF_COMMIT"),
    ")"
);
