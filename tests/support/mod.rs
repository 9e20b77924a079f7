//! The harness lives in the library (`git_cutile_perf::testkit`), so that benchmarks share it too.

pub use git_cutile_perf::testkit::*;
