//! The verbs: the command line, one module per verb, the agent's surfaces and settings.

pub mod agent;
pub mod cli;
pub mod commands;
pub mod errors;
pub mod generate;
