//! Iteration 0: the baseline's correctness run and its benchmark runs, measured before anything is
//! committed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

use super::plan::Plan;
use crate::measure::paired::{self, Held, Wanted, dumps_of};
use crate::record::evidence::RunFile;
use crate::record::session::Iteration;
use crate::rules::hint::hinted;
use crate::rules::records::Measurement;
use crate::rules::stats::{self, Spread, geometric_mean};
use crate::system::git::Repo;
use crate::system::process::Interrupted;
use crate::system::pytest::{BenchmarkRun, CorrectnessRun, Pytest};
use crate::system::runner::Placement;
use crate::system::workers::Side;
use crate::system::workers::lasting::{Code, WorkerEnv};

/// Iteration 0, what its correctness run found, in words, and its noise floor.
pub struct Baseline<'a> {
    pub iteration: Iteration,
    pub tests: String,
    pub spread: Vec<Spread>,
    /// The JUnit file of each run, for the evidence note.
    pub junit: Vec<RunFile>,
    /// Where its runs dumped the kernels they compiled: the compile facts come from there.
    pub dumps: PathBuf,
    /// The baseline's code and warm worker, kept for the first step once the baseline is committed.
    pub held: Held<'a>,
}

/// The baseline's benchmark runs: at least two, so each config's run-to-run spread is known.
const BASELINE_RUNS: usize = 2;

/// Iteration 0 of `plan`'s session at HEAD (`original` names where it started from): its correctness
/// run must pass, then its benchmark runs give the baseline latency and the noise floor.
pub fn baseline<'r>(repo: &'r Repo, plan: &Plan, original: &str) -> Result<Baseline<'r>> {
    let tree = repo.git(&["rev-parse", "HEAD^{tree}"])?.trim().to_string();
    // its kernels dumped where the first step's no-re-roll check reads the baseline's
    let dumps = dumps_of(repo, &tree);
    let template = Pytest {
        dumps: Some(dumps.clone()),
        ..plan.runner(repo)
    };
    let mut held = hold(repo, plan, tree, &template)?;
    let root = held.tree.path.clone();
    let runner = Pytest {
        root: &root,
        ..template.clone()
    };
    let mut side = Side::new(&runner, held.worker.take());
    let correctness = side.correctness()?;
    let mut junit: Vec<RunFile> = correctness
        .records
        .map(|records| RunFile::new("correctness", records))
        .into_iter()
        .collect();
    let crashed = |why: &str| run_failed(plan, "correctness run", why, &repo.root);
    let tests = correctness_words(correctness.outcome, original, runner.filter, crashed)?;
    let runs = benchmark_runs(&mut side, plan, &mut junit, &repo.root)?;
    let Combined {
        configs,
        spread,
        latency,
    } = combined(&runs)?;
    let iteration = iteration_zero(&tests, configs, latency, plan.place.placement().cloned());
    held.worker = side.into_worker();
    Ok(Baseline {
        iteration,
        tests,
        spread,
        junit,
        dumps,
        held,
    })
}

/// The baseline's code (HEAD, whose tree is `tree`) in a worker that lives on: the first step starts
/// only the candidate's.
fn hold<'r>(repo: &'r Repo, plan: &Plan, tree: String, template: &Pytest) -> Result<Held<'r>> {
    let session = &plan.session;
    paired::hold(
        repo,
        Wanted {
            side: "baseline",
            code: Code {
                commit: repo.head()?,
                tree,
            },
            env: WorkerEnv::now(
                &repo.root,
                &session.python,
                &session.test,
                session.filter.as_deref(),
                WorkerEnv::visible_gpu(),
            ),
            template,
        },
    )
}

/// The baseline's benchmark runs, their JUnit files added to `junit`: each run in a process of its
/// own, as the steps' rounds are: their spread is the noise floor, and a repetition inside one process
/// would not sample what a process fixes once (`verdict`).
fn benchmark_runs(
    side: &mut Side,
    plan: &Plan,
    junit: &mut Vec<RunFile>,
    root: &Path,
) -> Result<Vec<Vec<Measurement>>> {
    let mut runs = Vec::new();
    for number in 1..=BASELINE_RUNS {
        if number > 1 {
            side.redraw();
        }
        let (measured, file) = crate::record::benchmark_run::benchmark(
            side,
            plan.session.statistic,
            &format!("benchmark-{number}"),
            &format!("baseline {number}/{BASELINE_RUNS}"),
            plan.gpu_state.is_some(),
            &[],
            None,
        )?;
        junit.extend(file);
        match measured {
            BenchmarkRun::Measured(configs) => runs.push(configs),
            BenchmarkRun::Crash(why) => return Err(run_failed(plan, "benchmark", &why, root)),
            BenchmarkRun::Interrupted => return Err(interrupted()),
        }
    }
    Ok(runs)
}

/// A baseline run (`what`: the benchmark, the correctness run) that failed, naming the session perf
/// file when it is the one that ran: the user wrote it (or `--scaffold` proposed it), so the fix is
/// theirs, there. A crash is a failure of the run, never of a test, so a hint is the user's only way
/// forward.
fn run_failed(plan: &Plan, what: &str, why: &str, root: &Path) -> anyhow::Error {
    let raised = raised_in_log(why, root)
        .filter(|line| !why.contains(line.as_str()))
        .map_or(String::new(), |line| format!("; it raised {line}"));
    match &plan.session.perf_file {
        Some(_) => {
            let perf_file = &plan.session.test;
            hinted(
                format!(
                    "the baseline {what} failed in the session perf file {perf_file}: {why}{raised}"
                ),
                format!(
                    "fix {perf_file} (what it imports and calls must exist in this checkout), then run \
                     the same start again"
                ),
            )
        }
        None => anyhow!("the baseline {what} failed: {why}{raised}"),
    }
}

/// The last exception line (`AttributeError: ...`) of the log that `why` names (`(log: PATH)`).
fn raised_in_log(why: &str, root: &Path) -> Option<String> {
    let log = why.rsplit_once("(log: ")?.1.strip_suffix(')')?;
    let text = std::fs::read_to_string(root.join(log)).ok()?;
    text.lines()
        .rev()
        // pytest marks an exception's lines with a leading `E`
        .map(|line| match line.strip_prefix('E') {
            Some(rest) if rest.starts_with(' ') => rest.trim(),
            _ => line.trim(),
        })
        .find(|line| {
            line.split_once(": ").is_some_and(|(name, _)| {
                let name = name.rsplit('.').next().unwrap_or(name);
                (name.ends_with("Error") || name.ends_with("Exception"))
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .map(String::from)
}

/// The baseline's runs taken together: each config's measurement and run-to-run spread, and the
/// latency over the configs.
struct Combined {
    configs: Vec<Measurement>,
    spread: Vec<Spread>,
    latency: f64,
}

/// The baseline's `runs` combined, and their latency (the geometric mean over the configs); a run
/// without a record of a config the others have refuses.
fn combined(runs: &[Vec<Measurement>]) -> Result<Combined> {
    let (configs, spread) = stats::combine_runs(runs).map_err(|(pass, test)| {
        anyhow!("a run of the baseline gave no record for {test} {pass}")
    })?;
    let latency = geometric_mean(configs.iter().map(|c| c.value))
        .context("the baseline has no usable latency")?;
    Ok(Combined {
        configs,
        spread,
        latency,
    })
}

/// Iteration 0: the kept baseline, its correctness in words (`tests`), its `configs` and `latency`, and
/// where it ran (`placement`).
fn iteration_zero(
    tests: &str,
    configs: Vec<Measurement>,
    latency: f64,
    placement: Option<Placement>,
) -> Iteration {
    let reason = format!("baseline: {tests}, {} configs measured", configs.len());
    Iteration::baseline(latency, configs, reason, placement)
}

/// What the baseline's correctness run found, in words; anything but a pass that ran cases refuses (a
/// crash as `crashed` words it).
fn correctness_words(
    correctness: CorrectnessRun,
    original: &str,
    filter: Option<&str>,
    crashed: impl FnOnce(&str) -> anyhow::Error,
) -> Result<String> {
    Ok(match correctness {
        CorrectnessRun::Pass { passed, .. } if passed.is_empty() => {
            return Err(hinted(
                "no correctness test passed at the baseline (every selected case was skipped), so nothing \
                 would show a later change breaking the kernel",
                "check that the tests can run here (GPU, architecture) and that --filter selects cases \
                 that run",
            ));
        }
        CorrectnessRun::Pass { passed, skipped } => match skipped.len() {
            0 => format!("{} correctness tests passed", passed.len()),
            n => format!("{} correctness tests passed ({n} skipped)", passed.len()),
        },
        CorrectnessRun::Fail { failed } => {
            return Err(hinted(
                format!(
                    "the baseline fails its correctness tests, so there is nothing to optimize from:\n  {}",
                    failed.join("\n  ")
                ),
                format!("fix them on {original} first"),
            ));
        }
        CorrectnessRun::Crash(why) => return Err(crashed(&why)),
        CorrectnessRun::NoneSelected(why) => {
            return Err(hinted(
                format!("the baseline has no correctness test to hold later changes to: {why}"),
                no_correctness_hint(filter),
            ));
        }
        CorrectnessRun::Interrupted => return Err(interrupted()),
    })
}

/// What to do when the correctness selection is empty: `--filter` narrows both selections, and
/// `(FILTER) or not test_perf` keeps the benchmark grid while selecting every correctness test.
fn no_correctness_hint(filter: Option<&str>) -> String {
    match filter {
        Some(filter) => format!(
            "--filter selects the correctness tests as well as the benchmark; to keep this benchmark \
             grid and run every correctness test, use --filter \"({filter}) or not test_perf\""
        ),
        None => "the test file has no test_* with a cutile parameter besides test_perf; pick the \
                 kernel's test file with --test"
            .to_string(),
    }
}

fn interrupted() -> anyhow::Error {
    Interrupted("the baseline was not recorded; nothing was created").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A collection error says only pytest's exit code: the exception its log holds names what failed.
    #[test]
    fn the_exception_a_log_holds_names_what_failed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("benchmark.log"),
            "ImportError while importing test module\nE   ImportError: cannot import name 'x' from 'tests.common'\n",
        )
        .unwrap();
        let why = "pytest exited with code 2 (interrupted, internal or usage error, or a collection error) \
                   (log: benchmark.log)";
        assert_eq!(
            raised_in_log(why, dir.path()).as_deref(),
            Some("ImportError: cannot import name 'x' from 'tests.common'")
        );
        assert_eq!(raised_in_log("no log named", dir.path()), None);
    }
}
