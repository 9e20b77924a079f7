//! Values and rules: pure functions of data, no I/O.

pub mod compile;
pub mod decision;
pub mod guard;
pub mod hint;
pub mod kernel_class;
pub mod noise;
pub mod peaks;
pub mod pyliteral;
pub mod records;
pub mod references;
pub mod stats;
pub mod trailers;
pub mod units;
pub mod verdict;
