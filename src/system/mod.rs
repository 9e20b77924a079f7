//! The outside worlds: git, processes, pytest, the GPU, the runner and the terminal.

pub mod disk;
pub mod git;
pub mod gpu;
pub mod ncu;
pub mod process;
pub mod process_identity;
pub mod progress;
pub mod pytest;
pub mod runner;
pub mod ui;
pub mod workers;
