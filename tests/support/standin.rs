//! A stand-in runner: each pytest run replays a recorded JUnit file (the real H200 ones under
//! `tests/data/` among them) instead of running pytest, so
//! that a verb run in-process (`runner::with_stand_in`) takes its decisions without a pytest process
//! or a GPU. Every other command it is asked for is `true`; it has no GPU.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use git_cutile_perf::system::gpu::GpuState;
use git_cutile_perf::system::process::{self, Ending};
use git_cutile_perf::system::runner::{self, PytestCall, PytestRun, Runner};

/// What one pytest run leaves: its JUnit file (none when it died before writing one) and its end.
#[derive(Debug, Clone)]
pub struct Replay {
    pub junit: Option<String>,
    pub ending: Ending,
}

impl Replay {
    /// A recorded file, as pytest left it with exit `code`.
    pub fn file(path: &Path, code: i32) -> Replay {
        let junit = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Replay::text(&junit, code)
    }

    pub fn text(junit: &str, code: i32) -> Replay {
        Replay {
            junit: Some(junit.to_string()),
            ending: Ending::Exited(code),
        }
    }

    /// A run that wrote no JUnit file and ended as `ending` (killed at the budget, say).
    pub fn died(ending: Ending) -> Replay {
        Replay {
            junit: None,
            ending,
        }
    }
}

/// The replies of one verb run: the correctness runs (the unseen-input ones too) and the benchmark
/// runs of the candidate and of the baseline (each from its worktree).
#[derive(Clone)]
pub struct StandIn {
    pub root: PathBuf,
    pub correctness: Replay,
    pub benchmark: Replay,
    pub baseline_benchmark: Replay,
    /// Each run replayed, as `correctness candidate`, `benchmark baseline`, ...
    pub runs: Arc<Calls>,
}

/// The runs replayed so far, shared by the runner's copies (and, as a runner must be, between threads).
#[derive(Default)]
pub struct Calls(Mutex<Vec<String>>);

impl Calls {
    pub fn borrow(&self) -> MutexGuard<'_, Vec<String>> {
        self.0.lock().unwrap()
    }
}

impl StandIn {
    /// Runs `body` with every runner a verb opens replaced by this stand-in.
    pub fn around<T>(&self, body: impl FnOnce() -> T) -> T {
        let stand_in = self.clone();
        runner::with_stand_in(
            move |_, _| Ok(Box::new(stand_in.clone()) as Box<dyn Runner>),
            body,
        )
    }
}

impl Runner for StandIn {
    fn command(&self, _program: &str, _args: &[&str], dir: &Path) -> duct::Expression {
        process::command("true", &[]).dir(dir)
    }

    fn find(&self, program: &str, _dir: &Path) -> Option<PathBuf> {
        Some(PathBuf::from(program))
    }

    fn pytest(&self, call: &PytestCall, log: &Path, _deadline: Instant) -> anyhow::Result<Ending> {
        // the baseline's runs in a step write under `sandbox/baseline/`
        let baseline = call.junit.parent().and_then(Path::file_name) == Some("baseline".as_ref());
        let side = match baseline {
            true => "baseline",
            false => "candidate",
        };
        let (name, replay) = match (call.run, side) {
            (PytestRun::Correctness | PytestRun::Unseen, _) => ("correctness", &self.correctness),
            (PytestRun::Benchmark, "candidate") => ("benchmark", &self.benchmark),
            (PytestRun::Benchmark, _) => ("benchmark", &self.baseline_benchmark),
            (PytestRun::Worker, _) => unreachable!("the stand-in keeps no workers"),
        };
        self.runs.borrow().push(format!("{name} {side}"));
        std::fs::write(
            log,
            format!("replayed by the stand-in runner: {name} {side}\n"),
        )?;
        if let Some(junit) = &replay.junit {
            std::fs::write(call.junit, junit)?;
        }
        Ok(replay.ending)
    }

    fn gpu(&self, _dir: &Path) -> Option<GpuState> {
        None
    }
}
