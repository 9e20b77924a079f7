//! Features the verbs are made of: inspection, diagnosis, hooks, recovery, reports.

pub mod code_tree;
pub mod demo_python;
pub mod diagnose;
pub mod hook;
pub mod ignored;
pub mod inspect;
pub mod locate;
pub mod recovery;
pub mod refusals;
pub mod report;
pub mod snapshot;
