//! `mcp`: the verbs as Model Context Protocol tools over stdio (see `agent::mcp`).

use anyhow::Result;
use clap::CommandFactory;

use crate::verbs::cli::Cli;

pub fn run() -> Result<()> {
    crate::verbs::agent::mcp::serve(Cli::command(), crate::VERSION)
}
