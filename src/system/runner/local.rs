//! The local runner: every command is a child process on this machine, with its GPU.

use std::path::{Path, PathBuf};

use super::{Runner, Workers};
use crate::system::process;

/// This machine.
pub struct Local;

impl Runner for Local {
    fn command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        process::command(program, args).dir(dir)
    }

    fn lasting_command(&self, program: &str, args: &[&str], dir: &Path) -> duct::Expression {
        process::session_command(program, args).dir(dir)
    }

    fn workers(&self) -> Workers {
        Workers::Lasting
    }

    fn find(&self, program: &str, dir: &Path) -> Option<PathBuf> {
        which::which_in(program, std::env::var_os("PATH"), dir).ok()
    }
}
