//! An iteration's compile facts for its evidence note, gathered by `step` once the verdict is known
//! (they never change it): those of the diagnosis when the step ran one, else from one run of the
//! heaviest config's pytest case with cuda-tile dumping what it compiles (no profiler), then the
//! assembler and cuobjdump when they are there. Nothing here is an error: without a GPU, without
//! cuda-tile, or without the budget for it, an iteration simply has no compile facts.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::case::{Case, Source};
use super::profile::{Profiled, heaviest};
use super::toolchain::{self, Assembler};
use crate::compile::CompileFacts;
use crate::git::Repo;
use crate::gpu::GpuState;
use crate::hint;
use crate::process::{self, Ending};
use crate::records::Measurement;
use crate::runner::Runner;
use crate::session::Session;
use crate::ui::Progress;

/// `step` gathers compile facts only with at least this much of its budget left: one pytest case
/// that compiles the kernel, and the tools after it.
pub const MIN_STEP_FACTS: Duration = Duration::from_secs(30);
/// The scratch directory under `sandbox/`.
const SCRATCH: &str = "compile-facts";

/// Where a profile or the compile facts are made: the session's runner, the GPU the verb checked there
/// (when it did), and where their progress goes (the verb's).
pub struct Place<'a> {
    pub runner: &'a dyn Runner,
    pub gpu: Option<&'a GpuState>,
    pub progress: &'a Progress,
}

/// The compile facts of the code at `code_commit` (the iteration commit, or its attempt when it was
/// undone), for its evidence, from the case of the heaviest of `configs` (`step`: the current
/// baseline's; `start`: the baseline's own), compiled for the GPU of `place`, where the case and the
/// tools run (on Slurm, the iteration's node): `diagnosed`'s when it has them; otherwise `None` (with a line on stderr saying
/// why, when something was tried) without a GPU, without a config, with less than [`MIN_STEP_FACTS`]
/// left before `deadline`, or when the run dumped nothing (no cuda-tile).
pub fn for_iteration(
    repo: &Repo,
    place: Place,
    session: &Session,
    configs: &[Measurement],
    code_commit: &str,
    diagnosed: Option<&Profiled>,
    deadline: Instant,
) -> Option<CompileFacts> {
    if let Some(facts) = diagnosed.and_then(|found| found.compile.clone()) {
        return Some(facts);
    }
    let gpu = place.gpu?.gpu.identity();
    let config = heaviest(configs)?;
    if deadline.saturating_duration_since(Instant::now()) < MIN_STEP_FACTS {
        place
            .progress
            .line("no compile facts: the step's budget is nearly spent");
        return None;
    }
    match dumped(repo, &place, session, code_commit, &config, &gpu, deadline) {
        Ok(facts) => (!facts.is_empty()).then_some(facts),
        Err(err) => {
            place
                .progress
                .line(&format!("warning: no compile facts: {}", hint::shown(&err)));
            None
        }
    }
}

/// Runs `config`'s case from the code of `code_commit` with the dump environment, and reads the dumps.
fn dumped(
    repo: &Repo,
    place: &Place,
    session: &Session,
    code_commit: &str,
    config: &str,
    gpu: &str,
    deadline: Instant,
) -> Result<CompileFacts> {
    let source = Source::of(repo, code_commit)?;
    let case = Case::prepare(repo, session, source.path(repo), config, SCRATCH)?;
    let runner = place.runner;
    place
        .progress
        .line(&format!("compile facts from {} ...", case.node_id));
    let expression = case
        .expression(runner)
        .context("the session has no Python command")?;
    let log = case.dir.join("pytest.log");
    // a failing case may still have compiled the kernel: what it dumped counts
    if process::supervise(expression, &log, deadline)? == Ending::Interrupted {
        bail!("interrupted");
    }
    let assembler = Assembler::find(runner, &session.python, &case.root, Some(gpu));
    Ok(toolchain::gather(
        runner,
        &case.dumps,
        assembler.as_ref(),
        deadline,
    ))
}
