//! An iteration's compile facts for its evidence note, gathered by `step` once the verdict is known
//! (they never change it): those of the diagnosis when the step ran one, else from one run of the
//! heaviest config's pytest case with cuda-tile dumping what it compiles (no profiler), then the
//! assembler and cuobjdump when they are there. Nothing here is an error: without a GPU, without
//! cuda-tile, or without the budget for it, an iteration simply has no compile facts.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::case::{Case, Place, Source};
use super::profile::{Profiled, heaviest};
use super::toolchain::{self, Assembler};
use crate::record::census::Census;
use crate::record::evidence::RunFile;
use crate::record::history::sandbox;
use crate::record::session::Session;
use crate::rules::compile::{self, CompileFacts};
use crate::rules::hint;
use crate::rules::records::Measurement;
use crate::system::git::Repo;
use crate::system::process::{self, Ending};

/// `step` gathers compile facts only with at least this much of its budget left: one pytest case
/// that compiles the kernel, and the tools after it.
pub const MIN_STEP_FACTS: Duration = Duration::from_secs(30);
/// The scratch directory under `sandbox/`.
const SCRATCH: &str = "compile-facts";

/// The kernels a step's own runs dumped, for compile facts without a run of their own.
pub struct Dumped<'a> {
    /// The folder the runs of the code dumped into.
    pub dir: &'a Path,
    /// Those runs (a step's candidate side, `start`'s baseline), whose censuses name the kernels each
    /// perf case launched.
    pub runs: Vec<&'a RunFile>,
}

/// What the step already has that may give the compile facts without a run of their own: its diagnosis,
/// the baseline's facts where the code compiled what the baseline's did, and what its runs dumped.
#[derive(Default)]
pub struct Already<'a> {
    pub diagnosed: Option<&'a Profiled>,
    /// The current baseline's facts, for code that compiled to the same Tile IR and launched the same
    /// kernels (a no-change step): the same kernels give the same facts.
    pub alike_baseline: Option<&'a CompileFacts>,
    pub dumped: Option<Dumped<'a>>,
}

/// The compile facts of the code at `code_commit` (the iteration commit, or its attempt when it was
/// undone), for its evidence, from the case of the heaviest of `configs` (`step`: the current
/// baseline's; `start`: the baseline's own), compiled for the GPU of `place`, where the case and the
/// tools run (on Slurm, the iteration's node): the diagnosis's when it has them; the baseline's for
/// code alike to it; else from what the
/// step's runs of that code already dumped, where they cover the case's kernels; otherwise `None` (with a line on stderr saying
/// why, when something was tried) without a GPU, without a config, with less than [`MIN_STEP_FACTS`]
/// left before `deadline`, or when the run dumped nothing (no cuda-tile).
pub fn for_iteration(
    repo: &Repo,
    place: Place,
    session: &Session,
    configs: &[Measurement],
    code_commit: &str,
    already: Already,
    deadline: Instant,
) -> Option<CompileFacts> {
    let Already {
        diagnosed,
        alike_baseline,
        dumped,
    } = already;
    if let Some(facts) = diagnosed.and_then(|found| found.compile.clone()) {
        return Some(facts);
    }
    if let Some(facts) = alike_baseline {
        return Some(facts.clone());
    }
    let gpu = place.gpu?.gpu.identity();
    let config = heaviest(configs)?;
    if deadline.saturating_duration_since(Instant::now()) < MIN_STEP_FACTS {
        place
            .progress
            .line("no compile facts: the step's budget is nearly spent");
        return None;
    }
    if let Some(dumped) = dumped {
        let facts = from_dumps(repo, &place, session, &config, &gpu, &dumped, deadline);
        if !facts.is_empty() {
            return Some(facts);
        }
    }
    match run_dumping(repo, &place, session, code_commit, &config, &gpu, deadline) {
        Ok(facts) => (!facts.is_empty()).then_some(facts),
        Err(err) => {
            place
                .progress
                .line(&format!("warning: no compile facts: {}", hint::shown(&err)));
            None
        }
    }
}

/// The facts of the kernels `config`'s case launched in the candidate's runs (its census says which),
/// from the dumps those runs wrote: every signature of those kernels they compiled. Empty where the runs
/// have no census of the case or no dump of its kernels.
fn from_dumps(
    repo: &Repo,
    place: &Place,
    session: &Session,
    config: &str,
    gpu: &str,
    dumped: &Dumped,
    deadline: Instant,
) -> CompileFacts {
    let census = dumped
        .runs
        .iter()
        .filter_map(|run| run.cases().ok())
        .flatten()
        .filter(|case| case.id == config)
        .find_map(|case| Census::of(&case).ok().flatten().filter(|c| c.taken));
    let Some(census) = census else {
        return CompileFacts::default();
    };
    // the signatures the case ran where the GPU's kernel names are the compiled ones (they are on
    // cuda-tile), else every signature of the kernels it launched
    let functions: Vec<&str> = census.launches.iter().map(|l| l.kernel.as_str()).collect();
    let ran: Vec<&str> = census
        .device
        .iter()
        .flatten()
        .map(|d| d.name.as_str())
        .collect();
    let compiled: Vec<String> = toolchain::compiled_kernels(dumped.dir, &repo.root)
        .into_iter()
        .flat_map(|kernel| kernel.entries)
        .filter(|entry| compile::function_of(entry, &functions).is_some())
        .collect();
    let entries: Vec<String> = match compiled.iter().any(|e| ran.contains(&e.as_str())) {
        true => compiled
            .into_iter()
            .filter(|e| ran.contains(&e.as_str()))
            .collect(),
        false => compiled,
    };
    let scratch = sandbox(repo).join(SCRATCH);
    let _ = std::fs::remove_dir_all(&scratch);
    match toolchain::select(dumped.dir, &entries, &scratch) {
        Ok(0) | Err(_) => return CompileFacts::default(),
        Ok(_) => {}
    }
    place.progress.line(&format!(
        "compile facts of {config} from the dumps of the runs that measured it"
    ));
    let assembler = Assembler::find(place.runner, &session.python, &repo.root, Some(gpu));
    toolchain::gather(place.runner, &scratch, assembler.as_ref(), deadline)
}

/// Runs `config`'s case from the code of `code_commit` with the dump environment, and reads the dumps.
fn run_dumping(
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
