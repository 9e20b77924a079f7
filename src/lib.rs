//! `git-cutile-perf` as a library: every module lives here so that tests, benchmarks and the binary share
//! one definition of each rule. `main.rs` only parses the command line and dispatches.
//!
//! The modules form layers, each using only its own and those below: values and rules; git, processes
//! and the runner; the record; features; measurement; verbs (`commands`, one verb never using another); main.
//! `tests/layers.rs` holds the table and fails on an upward import or a cycle.

pub mod features;
pub mod measure;
pub mod record;
pub mod rules;
pub mod system;
pub mod verbs;

/// The version `--version` prints: the crate's, and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CUTILE_PERF_COMMIT"),
    ")"
);
