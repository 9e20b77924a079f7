//! The record: sessions, evidence notes, history, the journal and what is read back from them.

pub mod audit;
pub mod benchmark_run;
pub mod campaign;
pub mod census;
pub mod changes;
pub mod evidence;
pub mod history;
pub mod journal;
pub mod plot;
pub mod replay;
pub mod sandbox;
pub mod session;
pub mod table;
