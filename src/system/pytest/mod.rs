//! Running TileGym's tests: the correctness selection and the benchmark selection of one test file.
//!
//! pytest's exit code alone cannot tell a failing test from a broken run, so every run writes a fresh
//! JUnit file and the two are read together: only exit 1 with a readable file is a genuine test
//! failure; a signal, a timeout, exit codes 2-4 or a missing file are crashes.

mod bytecode;
mod outcome;
mod prepare;
mod python;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::rules::records::Statistic;
use crate::system::process::Ending;
use crate::system::progress;
use crate::system::runner::{PytestRun, Runner};
use crate::system::ui::Progress;

pub use bytecode::{Bytecode, is_identifier, is_source_bytecode};
pub use outcome::{BenchmarkRun, CorrectnessRun, Finished, RECORD_FORMAT, Recorded};
pub use prepare::{Prepared, dump_env};
pub use python::{check_pytest, default_python, python_words, sources_first, write_plugin};

pub const CORRECTNESS_SELECTION: &str = "test_ and cutile and not test_perf";
pub const BENCHMARK_SELECTION: &str = "test_perf and cutile";

/// The pytest plugin every benchmark run loads: the census of what ran in each case's timed call (its
/// cuTile launches and the GPU time of every kernel), written into the JUnit file beside the record.
/// `census.rs` reads it and holds a kept step to it.
pub const CENSUS_PLUGIN: (&str, &str) = (
    "cutile_perf_census",
    include_str!("../../record/census/cutile_perf_census.py"),
);

/// The pytest plugin of the correctness run on inputs neither side has seen: it shifts every seed the
/// tests set by `--cutile-perf-seed-offset`.
pub const SEEDS_PLUGIN: (&str, &str) = (
    "cutile_perf_seeds",
    include_str!("../../record/census/cutile_perf_seeds.py"),
);

/// The pytest plugin that narrows a benchmark run to some cases (`--cutile-perf-cases=FILE`, their JUnit
/// ids): a paired round on the configs still open. The warm worker picks its cases by the same ids.
pub const CASES_PLUGIN: (&str, &str) = ("cutile_perf_cases", include_str!("cutile_perf_cases.py"));

/// What is needed to run one test file's selections.
#[derive(Clone)]
pub struct Pytest<'a> {
    pub python: &'a str,
    pub root: &'a Path,
    pub test: &'a str,
    /// A `-k` expression that narrows both selections (e.g. to the shapes that fit the budget).
    pub filter: Option<&'a str>,
    /// Where logs and JUnit files go (`sandbox/` at the root).
    pub sandbox: PathBuf,
    pub deadline: Instant,
    /// Where the commands run: here, or on the iteration's Slurm node.
    pub place: &'a dyn Runner,
    /// Where cuda-tile writes every kernel it compiles in these runs ([`dump_env`]); none: no dumps.
    pub dumps: Option<PathBuf>,
    /// The GPU its runs see (`CUDA_VISIBLE_DEVICES`); none: whatever the environment gives.
    pub gpu: Option<String>,
    /// Where the runs' progress goes: the verb's.
    pub progress: &'a Progress,
}

/// The flag of TileGym's perf tests that prints each case's record (a fork may only print it).
pub const BENCHMARK_RECORD: &str = "--print-record";

/// A finished run of a process of its own, and its log.
struct Run {
    finished: Finished,
    log: PathBuf,
}

impl Pytest<'_> {
    /// Runs one selection to its end; `label` names its progress lines.
    fn run(
        &self,
        kind: PytestRun,
        name: &str,
        label: &str,
        selection: &str,
        extra: &[&str],
        plugins: Option<&Path>,
    ) -> Result<Run> {
        let prepared = self.prepare(kind, name, selection, extra, plugins)?;
        let plain = format!("{label}: {} -k \"{}\"", self.test, prepared.selection);
        let started = Instant::now();
        let ending = progress::follow(
            self.progress,
            &prepared.log,
            label,
            &plain,
            self.deadline,
            || prepared.with_call(|call| self.place.pytest(call, &prepared.log, self.deadline)),
        )?;
        self.progress.line(&format!(
            "{label}: {} in {:.1}s",
            describe(ending),
            started.elapsed().as_secs_f64()
        ));
        Ok(Run {
            finished: Finished::read(ending, &prepared.junit),
            log: prepared.log,
        })
    }

    pub fn correctness(&self) -> Result<Recorded<CorrectnessRun>> {
        let run = self.run(
            PytestRun::Correctness,
            "correctness",
            "correctness",
            CORRECTNESS_SELECTION,
            &[],
            None,
        )?;
        Ok(run.finished.correctness(self, &run.log))
    }

    /// The correctness selection with every seed the tests set shifted by `offset` (run `name`).
    pub fn unseen_correctness(&self, name: &str, offset: u32) -> Result<Recorded<CorrectnessRun>> {
        let plugins = self.plugin_dir()?;
        let [p, seeds] = write_plugin(&plugins, SEEDS_PLUGIN)?;
        let offset_arg = format!("--cutile-perf-seed-offset={offset}");
        let run = self.run(
            PytestRun::Unseen,
            name,
            "unseen inputs",
            CORRECTNESS_SELECTION,
            &[&p, &seeds, &offset_arg],
            Some(&plugins),
        )?;
        Ok(run.finished.correctness(self, &run.log))
    }

    /// The benchmark selection, its progress shown as `label` (e.g. `round 2 baseline`); `cases` (JUnit
    /// ids) narrows it to those.
    pub fn benchmark(
        &self,
        statistic: Statistic,
        label: &str,
        cases: Option<&[String]>,
    ) -> Result<Recorded<BenchmarkRun>> {
        let plugins = self.plugin_dir()?;
        let [p, census] = write_plugin(&plugins, CENSUS_PLUGIN)?;
        let mut extra = vec![BENCHMARK_RECORD.to_string(), p, census];
        if let Some(cases) = cases {
            let list = self.sandbox.join("benchmark-cases.txt");
            std::fs::write(&list, cases.join("\n") + "\n")
                .with_context(|| format!("cannot write {}", list.display()))?;
            extra.extend(write_plugin(&plugins, CASES_PLUGIN)?);
            extra.push(format!("--cutile-perf-cases={}", list.display()));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let run = self.run(
            PytestRun::Benchmark,
            "benchmark",
            label,
            BENCHMARK_SELECTION,
            &extra,
            Some(&plugins),
        )?;
        Ok(run.finished.benchmark(self, statistic, &run.log))
    }
}

/// How a run ended, for its progress line.
fn describe(ending: Ending) -> String {
    match ending {
        Ending::Exited(code) => format!("exit {code}"),
        Ending::Signaled(signal) => format!("killed by signal {signal}"),
        Ending::TimedOut => "budget exceeded, killed".to_string(),
        Ending::Interrupted => "interrupted".to_string(),
    }
}
