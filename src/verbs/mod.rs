//! The verbs: the command line, the one edge from it to them, one module per verb, the agent's surfaces and settings.

pub mod agent;
pub mod cli;
pub mod commands;
pub mod edge;
pub mod errors;
pub mod generate;
