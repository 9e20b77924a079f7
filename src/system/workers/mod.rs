//! Warm workers: one pytest process per side of a step that collects the correctness and perf selections
//! once and runs them on the tool's command, so that the candidate's correctness, the first paired round
//! and the unseen-input checks share one start-up (imports, collection, the CUDA context, the
//! kernels' compile and tuning), and the baseline's worker serves the next step ([`lasting`]). Each round
//! after the first runs in a fresh pair ([`Side::redraw`]): repetitions inside one process never sample
//! again what it fixed once, so they are not independent rounds. From round 1 on, the pair of the round
//! after starts while a round measures ([`Side::stand_by`]; round 2's, as a setting asks, as the step
//! begins, beside correctness) and waits, collected, for its turn to make its GPU context: held like the
//! side it will serve while the other side measures, so a candidate's code never runs under the
//! baseline's measurement.
//!
//! The worker is pytest with the plugin `cutile_perf_worker.py`; the channel is a directory in the git dir
//! (the plugin's docstring describes it). Each command writes the same JUnit file, with the same records
//! and census, that a run of its own would write, and is read the same way, once
//! ([`Finished`](crate::system::pytest::Finished)). Where a suite cannot be kept warm (pytest-xdist, a test that
//! exits the process, a repetition that breaks where the first one worked), the side falls back to one
//! process per run, and the step says so once.
//!
//! A worker's life is in `worker.rs`, what passes through its channel in `channel.rs`, a step's side,
//! warm or cold, in `side.rs`, and the spare that becomes the next step's candidate worker in `spare.rs`.

mod channel;
pub mod lasting;
mod side;
pub mod spare;
mod worker;

pub use channel::{Served, StartUp};
pub use side::{Held, Side, say_cold};
pub use worker::Worker;

/// The pytest plugin a worker loads: the repetition loop and its channel.
pub const WORKER_PLUGIN: (&str, &str) =
    ("cutile_perf_worker", include_str!("cutile_perf_worker.py"));

/// The program a spare runs ([`spare`]), from the plugin folder where the worker plugin it imports is too.
const SPARE_PROGRAM: (&str, &str) = ("cutile_perf_spare", include_str!("cutile_perf_spare.py"));

/// The worker's option naming its channel, as its command line carries it.
const CHANNEL_OPTION: &str = "--cutile-perf-worker=";
