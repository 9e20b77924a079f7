//! What a run found: how its process ended and the JUnit file it wrote, read together into a
//! correctness or a benchmark outcome (a crash when the file cannot back the exit code).

use std::path::Path;

use anyhow::Result;

use crate::rules::records::{
    self, CaseOutcome, CaseReport, Measurement, RecordFile, RecordFormat, Statistic,
};
use crate::system::process::Ending;

use super::{BENCHMARK_SELECTION, CORRECTNESS_SELECTION, Pytest};

/// The result of the correctness selection.
#[derive(Debug)]
pub enum CorrectnessRun {
    /// Skipped cases (a test's own skips, e.g. per architecture) are not passes.
    Pass {
        passed: Vec<String>,
        skipped: Vec<String>,
    },
    Fail {
        failed: Vec<String>,
    },
    Crash(String),
    /// pytest collected no correctness test (exit 5): the selection, in words.
    NoneSelected(String),
    Interrupted,
}

/// The result of the benchmark selection.
#[derive(Debug)]
pub enum BenchmarkRun {
    Measured(Vec<Measurement>),
    Crash(String),
    Interrupted,
}

/// The format every pytest run writes its records in (`--junitxml`).
pub const RECORD_FORMAT: RecordFormat = RecordFormat::Junit;

/// A run's outcome and the file it was read from, for the evidence: `None` when the run wrote none or
/// it could not be read.
#[derive(Debug)]
pub struct Recorded<T> {
    pub outcome: T,
    pub records: Option<RecordFile>,
}

/// A finished run (a process's or a warm worker's command): how it ended and its records file, read
/// once, with the cases parsed from exactly those bytes.
pub struct Finished {
    pub ending: Ending,
    pub cases: Option<Result<Vec<CaseReport>>>,
    pub records: Option<RecordFile>,
}

impl Finished {
    /// A run that ended so and wrote its records (or none) at `path`.
    pub fn read(ending: Ending, path: &Path) -> Finished {
        let (cases, records) = match RecordFile::read(path, RECORD_FORMAT) {
            None => (None, None),
            Some(Err(e)) => (Some(Err(e)), None),
            Some(Ok(file)) => (Some(file.cases()), Some(file)),
        };
        Finished {
            ending,
            cases,
            records,
        }
    }

    /// A run that ended without a file to read (a deadline or an interrupt while a worker ran it).
    pub fn unwritten(ending: Ending) -> Finished {
        Finished {
            ending,
            cases: None,
            records: None,
        }
    }

    /// What the run found as a correctness run of `runner` (`log` for the reasons).
    pub fn correctness(self, runner: &Pytest, log: &Path) -> Recorded<CorrectnessRun> {
        Recorded {
            outcome: runner.correctness_of(self.ending, self.cases, log),
            records: self.records,
        }
    }

    /// What the run measured as a benchmark run of `runner` (`log` for the reasons).
    pub fn benchmark(
        self,
        runner: &Pytest,
        statistic: Statistic,
        log: &Path,
    ) -> Recorded<BenchmarkRun> {
        Recorded {
            outcome: runner.benchmark_of(statistic, self.ending, self.cases, log),
            records: self.records,
        }
    }
}

impl CorrectnessRun {
    /// A run whose cases all passed or were skipped, each kind by id.
    pub fn passed(cases: Vec<CaseReport>) -> CorrectnessRun {
        let (skipped, passed): (Vec<_>, Vec<_>) = cases
            .into_iter()
            .partition(|c| c.outcome == CaseOutcome::Skipped);
        let ids = |cases: Vec<CaseReport>| cases.into_iter().map(|c| c.id).collect();
        CorrectnessRun::Pass {
            passed: ids(passed),
            skipped: ids(skipped),
        }
    }

    /// A pass becomes a failure when a case that passed at the baseline is skipped now or was not run:
    /// a kernel that makes its own tests skip has not passed them.
    pub fn against_baseline(self, baseline_passed: &[String]) -> CorrectnessRun {
        let CorrectnessRun::Pass { passed, skipped } = self else {
            return self;
        };
        let lost: Vec<String> = baseline_passed
            .iter()
            .filter(|id| !passed.contains(id))
            .map(|id| match skipped.contains(id) {
                true => format!("{id} (skipped now, passed at the baseline)"),
                false => format!("{id} (not run now, passed at the baseline)"),
            })
            .collect();
        match lost.is_empty() {
            true => CorrectnessRun::Pass { passed, skipped },
            false => CorrectnessRun::Fail { failed: lost },
        }
    }
}

impl Pytest<'_> {
    /// A log's path relative to the work-tree root (where the sandbox is, whichever worktree the side ran
    /// from): reasons end up in trailers, read on other machines.
    fn shown(&self, log: &Path) -> String {
        let root = self
            .sandbox
            .ancestors()
            .find(|dir| dir.file_name() == Some(std::ffi::OsStr::new(crate::rules::guard::SANDBOX)))
            .and_then(Path::parent)
            .unwrap_or(self.root);
        log.strip_prefix(root).unwrap_or(log).display().to_string()
    }

    /// What a correctness run found, from how it ended and its cases (`log` for the reasons).
    fn correctness_of(
        &self,
        ending: Ending,
        cases: Option<Result<Vec<CaseReport>>>,
        log: &Path,
    ) -> CorrectnessRun {
        match (ending, cases) {
            (Ending::Interrupted, _) => CorrectnessRun::Interrupted,
            (Ending::Exited(0), Some(Ok(cases))) => CorrectnessRun::passed(cases),
            (Ending::Exited(1), Some(Ok(cases)))
                if cases.iter().any(|c| {
                    matches!(c.outcome, CaseOutcome::Failed(_) | CaseOutcome::Error(_))
                }) =>
            {
                CorrectnessRun::Fail {
                    failed: cases
                        .into_iter()
                        .filter(|c| {
                            matches!(c.outcome, CaseOutcome::Failed(_) | CaseOutcome::Error(_))
                        })
                        .map(|c| c.id)
                        .collect(),
                }
            }
            (Ending::Exited(5), _) => CorrectnessRun::NoneSelected(format!(
                "no correctness test matched -k \"{}\" in {}",
                self.narrowed(CORRECTNESS_SELECTION),
                self.test
            )),
            (ending, cases) => CorrectnessRun::Crash(self.crash_reason(ending, cases, log)),
        }
    }

    /// What a benchmark run measured, from how it ended and its cases (`log` for the reasons).
    fn benchmark_of(
        &self,
        statistic: Statistic,
        ending: Ending,
        cases: Option<Result<Vec<CaseReport>>>,
        log: &Path,
    ) -> BenchmarkRun {
        match (ending, cases) {
            (Ending::Interrupted, _) => BenchmarkRun::Interrupted,
            (Ending::Exited(5), _) => BenchmarkRun::Crash(format!(
                "the benchmark selection is empty: no test matched -k \"{}\" in {} \
                 (does it have a test_perf with a cutile parameter?)",
                self.narrowed(BENCHMARK_SELECTION),
                self.test
            )),
            (Ending::Exited(0 | 1), Some(Ok(cases))) => {
                match records::measurements(&cases, statistic) {
                    Ok(m) if m.is_empty() => BenchmarkRun::Crash(
                        "every perf case was skipped: no latency to compare".into(),
                    ),
                    Ok(m) => BenchmarkRun::Measured(m),
                    Err(e) => BenchmarkRun::Crash(format!("{e:#} (log: {})", self.shown(log))),
                }
            }
            (ending, cases) => BenchmarkRun::Crash(self.crash_reason(ending, cases, log)),
        }
    }

    /// A lost node or job explains a broken run better than the exit srun passed on.
    fn crash_reason(
        &self,
        ending: Ending,
        cases: Option<Result<Vec<CaseReport>>>,
        log: &Path,
    ) -> String {
        let log = self.shown(log);
        match self.place.lost() {
            Some(why) => format!("{why} (log: {log})"),
            None => crash_reason(ending, cases, &log),
        }
    }
}

/// Why a run that is no plain test failure broke, in words, with its log.
fn crash_reason(ending: Ending, cases: Option<Result<Vec<CaseReport>>>, log: &str) -> String {
    let what = match (ending, &cases) {
        (Ending::TimedOut, _) => "pytest ran past the iteration budget and was killed".to_string(),
        (Ending::Signaled(signal), _) => format!("pytest was killed by signal {signal}"),
        (Ending::Exited(code @ 2..=4), _) => {
            format!(
                "pytest exited with code {code} (interrupted, internal or usage error, or a collection error)"
            )
        }
        (_, None) => "pytest died without writing its JUnit file".to_string(),
        (_, Some(Err(e))) => format!("the JUnit file is unreadable: {e:#}"),
        (Ending::Exited(1), Some(Ok(_))) => {
            "pytest exited with code 1 but its JUnit file names no failed case".to_string()
        }
        (Ending::Exited(code), Some(Ok(_))) => format!("pytest exited with code {code}"),
        (Ending::Interrupted, _) => "interrupted".to_string(),
    };
    format!("{what} (log: {log})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_run_that_left_no_result_is_a_crash_never_a_failure() {
        let empty = RecordFormat::Junit.parse("");
        let reason = crash_reason(Ending::Exited(1), Some(empty), "log");
        assert!(
            reason.starts_with(
                "the JUnit file is unreadable: the JUnit file holds no results (0 bytes)"
            ),
            "{reason}"
        );
        let no_failure = crash_reason(Ending::Exited(1), Some(Ok(Vec::new())), "log");
        assert_eq!(
            no_failure,
            "pytest exited with code 1 but its JUnit file names no failed case (log: log)"
        );
        let none: Vec<CaseReport> = RecordFormat::Junit
            .parse("<testsuites><testsuite tests=\"0\"/></testsuites>")
            .unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_case_passed_at_the_baseline_and_skipped_now_fails() {
        let run = || CorrectnessRun::Pass {
            passed: ids(&["a"]),
            skipped: ids(&["b"]),
        };
        assert!(matches!(
            run().against_baseline(&ids(&["a"])),
            CorrectnessRun::Pass { .. }
        ));
        match run().against_baseline(&ids(&["a", "b", "c"])) {
            CorrectnessRun::Fail { failed } => assert_eq!(
                failed,
                [
                    "b (skipped now, passed at the baseline)",
                    "c (not run now, passed at the baseline)"
                ]
            ),
            other => panic!("{other:?}"),
        }
    }
}
