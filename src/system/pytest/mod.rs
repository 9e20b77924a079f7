//! Running TileGym's tests: the correctness selection and the benchmark selection of one test file.
//!
//! pytest's exit code alone cannot tell a failing test from a broken run, so every run writes a fresh
//! JUnit file and the two are read together: only exit 1 with a readable file is a genuine test
//! failure; a signal, a timeout, exit codes 2-4 or a missing file are crashes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::rules::hint::{Hinted, hinted};
use crate::rules::records::{
    self, CaseOutcome, CaseReport, Measurement, RecordFile, RecordFormat, Statistic,
};
use crate::system::process::{self, Ending};
use crate::system::progress;
use crate::system::runner::{PytestCall, PytestRun, Runner};
use crate::system::ui::Progress;

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

/// `python -m pytest --version` takes a second or two; an interpreter that hangs must not hang `start`.
const AVAILABILITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The Python that runs pytest when none is given: `python3` where `place` runs commands has it.
pub fn default_python(place: &dyn Runner, dir: &Path) -> String {
    if place.find("python3", dir).is_some() {
        "python3"
    } else {
        "python"
    }
    .to_string()
}

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

/// The environment that makes cuda-tile write every kernel it compiles into `dumps`, as Tile IR text and
/// bytecode: at the first launch of each signature in a process, before it looks in its disk cache, so
/// the cache stays on and a run that compiles anyway dumps at the cost of a disassembly per signature.
pub fn dump_env(dumps: &Path) -> [(&'static str, String); 2] {
    let dir = dumps.display().to_string();
    [
        ("CUDA_TILE_DUMP_TILEIR", dir.clone()),
        ("CUDA_TILE_DUMP_BYTECODE", dir),
    ]
}

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

/// The flag of TileGym's perf tests that prints each case's record (a fork may only print it).
pub const BENCHMARK_RECORD: &str = "--print-record";

/// A pytest command ready to start.
pub struct Prepared {
    run: PytestRun,
    program: String,
    args: Vec<String>,
    dir: PathBuf,
    env: Vec<(&'static str, std::ffi::OsString)>,
    pub junit: PathBuf,
    pub log: PathBuf,
    /// The `-k` expression, narrowed by the session's filter.
    pub selection: String,
}

impl Prepared {
    /// Runs `body` with the command as the runner gets it.
    pub fn with_call<T>(&self, body: impl FnOnce(&PytestCall) -> T) -> T {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        body(&PytestCall {
            run: self.run,
            program: &self.program,
            args: &args,
            dir: &self.dir,
            env: &self.env,
            junit: &self.junit,
        })
    }
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

/// A finished run of a process of its own, and its log.
struct Run {
    finished: Finished,
    log: PathBuf,
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

    /// Fails early, before anything is changed, when the interpreter or pytest is missing.
    pub fn check_available(&self) -> Result<()> {
        let words = python_words(self.python)?;
        let (program, args) = words.split_first().context("--python is empty")?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.place
            .find(program, self.root)
            .with_context(|| format!("{program} not found on PATH; pass --python CMD"))?;
        let mut full = args;
        full.extend(["-m", "pytest", "--version"]);
        let output = process::capture(
            self.place.command(program, &full, self.root),
            AVAILABILITY_TIMEOUT,
        )
        .with_context(|| format!("cannot run {}", self.python))?;
        if !output.success() {
            return Err(hinted(
                format!(
                    "pytest is not available to {}: {}",
                    self.python,
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
                format!(
                    "the session runs your kernel's tests with the Python that has torch and cuda-tile: \
                     activate that environment or pass --python CMD, and install pytest into it (`{} -m pip \
                     install pytest` in a virtual environment; `sudo apt install python3-pytest` for Debian's \
                     python3)",
                    self.python
                ),
            ));
        }
        Ok(())
    }

    /// A selection narrowed by the session's filter.
    fn narrowed(&self, selection: &str) -> String {
        match self.filter {
            Some(filter) => format!("{selection} and ({filter})"),
            None => selection.to_string(),
        }
    }

    /// The pytest command of one selection, not started; `name` names its log and JUnit file; `plugins` is
    /// a directory of the tool's own pytest plugins to put on `PYTHONPATH`.
    pub fn prepare(
        &self,
        kind: PytestRun,
        name: &str,
        selection: &str,
        extra: &[&str],
        plugins: Option<&Path>,
    ) -> Result<Prepared> {
        let selection = self.narrowed(selection);
        std::fs::create_dir_all(&self.sandbox)
            .with_context(|| format!("cannot create {}", self.sandbox.display()))?;
        let junit = self.sandbox.join(RECORD_FORMAT.file_name(name));
        let log = self.sandbox.join(format!("{name}.log"));
        // a file left by an earlier run must never be read (or followed) as this run's
        remove_stale(&junit)?;
        remove_stale(&log)?;
        let junit_arg = format!("--junitxml={}", junit.display());
        let words = python_words(self.python)?;
        let (program, python_args) = words.split_first().context("--python is empty")?;
        let mut args: Vec<&str> = python_args.iter().map(String::as_str).collect();
        args.extend([
            "-m",
            "pytest",
            self.test,
            "-k",
            &selection,
            "-v",
            "-p",
            "no:cacheprovider",
        ]);
        args.extend([
            "-o",
            "junit_family=xunit1",
            "-o",
            "junit_logging=system-out",
            &junit_arg,
        ]);
        args.extend_from_slice(extra);
        let bytecode = Bytecode::for_tree(self.root)?;
        let mut env: Vec<(&'static str, std::ffi::OsString)> =
            vec![("PYTHONUNBUFFERED", "1".into())];
        env.extend(bytecode.env().map(|(name, value)| (name, value.into())));
        if let Some(dumps) = &self.dumps {
            std::fs::create_dir_all(dumps)
                .with_context(|| format!("cannot create {}", dumps.display()))?;
            env.extend(dump_env(dumps).map(|(name, value)| (name, value.into())));
        }
        if let Some(gpu) = &self.gpu {
            env.push(("CUDA_VISIBLE_DEVICES", gpu.into()));
        }
        let mut python_path: Vec<PathBuf> = plugins.into_iter().map(Path::to_path_buf).collect();
        python_path.extend(
            sources_first(self.root)?
                .iter()
                .flat_map(std::env::split_paths),
        );
        if !python_path.is_empty() {
            env.push(("PYTHONPATH", std::env::join_paths(python_path)?));
        }
        Ok(Prepared {
            run: kind,
            program: program.clone(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            dir: self.root.to_path_buf(),
            env,
            junit,
            log,
            selection,
        })
    }

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

    /// Where the tool's own pytest plugins are written, made if need be.
    pub fn plugin_dir(&self) -> Result<PathBuf> {
        let plugins = self.sandbox.join("plugins");
        std::fs::create_dir_all(&plugins)
            .with_context(|| format!("cannot create {}", plugins.display()))?;
        Ok(plugins)
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
            (Ending::Exited(1), Some(Ok(cases))) => CorrectnessRun::Fail {
                failed: cases
                    .into_iter()
                    .filter(|c| matches!(c.outcome, CaseOutcome::Failed(_) | CaseOutcome::Error(_)))
                    .map(|c| c.id)
                    .collect(),
            },
            (Ending::Exited(5), _) => CorrectnessRun::NoneSelected(format!(
                "no correctness test matched -k \"{}\" in {}",
                self.narrowed(CORRECTNESS_SELECTION),
                self.test
            )),
            (ending, cases) => CorrectnessRun::Crash(self.crash_reason(ending, cases, log)),
        }
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

/// Removes a file an earlier run left; none is fine.
fn remove_stale(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The words of `--python` (`python3`, `uv run python`), split as a shell would, so that a path with
/// spaces is given quoted (`'/opt/my env/bin/python'`); an unclosed quote is an error.
pub fn python_words(python: &str) -> Result<Vec<String>> {
    shlex::split(python).with_context(|| {
        Hinted::new(
            format!("--python {python:?} has an unclosed quote"),
            "quote a path with spaces as a shell would: --python \"'/opt/my env/bin/python'\"",
        )
    })
}

/// Python's bytecode for a test process: none written, none planted read. The process gets
/// `PYTHONDONTWRITEBYTECODE=1` and no `PYTHONPYCACHEPREFIX`, so no test process writes a `.pyc`
/// anywhere: the standard library and site-packages load from their installation's own `__pycache__`
/// (compiled when installed), and the checkout's and the baseline's sources compile in memory at each
/// import (a cache every process writes, private or shared, costs a compile of the standard library,
/// pytest and torch in every process, or lets a candidate's code leave a `.pyc` the baseline's next
/// process loads). What a process could still load is a `.pyc` put on purpose in a `__pycache__` of
/// the tree it runs from (a side's worktree under the git dir, or the work tree for `diagnose` and
/// `inspect`): before it starts, every file git does not track is removed from the `__pycache__`
/// directories Python can import from there. In the work tree these are only Python's caches of the
/// sources (rebuilt at the next import: nothing of the user's is lost), and removing them rather than
/// refusing keeps a session working beside the user's own pytest runs, which write them. A `.pyc`
/// written into a tree after a process there started (by another side's code) is not removed before
/// that process imports, but it is found: a step clears its sides' trees as it begins and lists them
/// after its rounds, and anything there makes the step a crash that names it. An installation's
/// `__pycache__` is as writable as the installation.
pub struct Bytecode(());

/// Whether the file at `path` (relative, `/`-separated) is in a `__pycache__` Python reads a source's
/// bytecode from: every directory above it a name Python can import (a virtual environment's `.venv`
/// is not, nor is anything under it).
pub fn is_source_bytecode(path: &str) -> bool {
    let Some((dirs, _)) = path.rsplit_once('/') else {
        return false;
    };
    let mut dirs = dirs.split('/');
    dirs.next_back() == Some("__pycache__") && dirs.all(is_identifier)
}

/// Whether `word` is a name Python can import.
pub fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

impl Bytecode {
    /// Removes every file git does not track (ignored or not) from the `__pycache__` directories under
    /// `tree` that Python can import from, so that a process started there loads no bytecode of its
    /// sources but what git tracks.
    pub fn for_tree(tree: &Path) -> Result<Bytecode> {
        for path in Bytecode::in_tree(tree)? {
            let at = tree.join(path);
            match std::fs::remove_file(&at) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", at.display()));
                }
                _ => {}
            }
        }
        Ok(Bytecode(()))
    }

    /// The files git does not track (ignored or not) in the `__pycache__` directories under `tree` that
    /// Python can import from, relative to it: what [`Bytecode::for_tree`] removes. No test process
    /// writes any, so in a tree cleared since, each was put there on purpose.
    pub fn in_tree(tree: &Path) -> Result<Vec<String>> {
        let listed = process::git_bytes(tree, &["ls-files", "-z", "--others"], &[], None)
            .with_context(|| format!("cannot list the untracked files of {}", tree.display()))?;
        Ok(String::from_utf8_lossy(&listed)
            .split('\0')
            .filter(|path| is_source_bytecode(path))
            .map(str::to_string)
            .collect())
    }

    /// The environment of a test process that writes no bytecode (an empty `PYTHONPYCACHEPREFIX` is
    /// unset to Python, whatever the caller's).
    pub fn env(&self) -> [(&'static str, String); 2] {
        [
            ("PYTHONDONTWRITEBYTECODE", "1".to_string()),
            ("PYTHONPYCACHEPREFIX", String::new()),
        ]
    }
}

/// PYTHONPATH with the checkout's own `src/` first, ahead of an editable install that points elsewhere:
/// a baseline's worktree must test the baseline's code. `None` for a checkout without `src/`.
/// Writes the pytest plugin `(name, source)` into `dir` (which must then be on `PYTHONPATH`); returns
/// pytest's words that load it.
pub fn write_plugin(dir: &Path, (name, source): (&str, &str)) -> Result<[String; 2]> {
    let file = dir.join(format!("{name}.py"));
    std::fs::write(&file, source).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(["-p".to_string(), name.to_string()])
}

pub fn sources_first(root: &Path) -> Result<Option<std::ffi::OsString>> {
    let src = root.join("src");
    if !src.is_dir() {
        return Ok(None);
    }
    let inherited = std::env::var_os("PYTHONPATH").unwrap_or_default();
    let mut paths = vec![src];
    paths.extend(std::env::split_paths(&inherited));
    Ok(Some(std::env::join_paths(paths)?))
}

fn describe(ending: Ending) -> String {
    match ending {
        Ending::Exited(code) => format!("exit {code}"),
        Ending::Signaled(signal) => format!("killed by signal {signal}"),
        Ending::TimedOut => "budget exceeded, killed".to_string(),
        Ending::Interrupted => "interrupted".to_string(),
    }
}

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
        (Ending::Exited(code), Some(Ok(_))) => format!("pytest exited with code {code}"),
        (Ending::Interrupted, _) => "interrupted".to_string(),
    };
    format!("{what} (log: {log})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_git_tracks_is_left_in_a_trees_pycache() {
        let tree = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let at = tree.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        let git = |args: &[&str]| process::git(tree.path(), args, &[]).unwrap();
        git(&["init", "-q"]);
        write(".gitignore", "__pycache__/\n.venv/\n");
        for tracked in ["src/pkg/mod.py", "src/pkg/__pycache__/kept.cpython-311.pyc"] {
            write(tracked, "");
            git(&["add", "-f", tracked]);
        }
        let planted = [
            "src/pkg/__pycache__/mod.cpython-311.pyc",
            "tests/__pycache__/common.cpython-311.pyc",
        ];
        let installed = ".venv/lib/site/__pycache__/torch.cpython-311.pyc";
        for path in planted.iter().chain([&installed]) {
            write(path, "");
        }
        assert_eq!(Bytecode::in_tree(tree.path()).unwrap(), planted);
        Bytecode::for_tree(tree.path()).unwrap();
        assert!(Bytecode::in_tree(tree.path()).unwrap().is_empty());
        for path in planted {
            assert!(!tree.path().join(path).exists(), "{path}");
        }
        for path in ["src/pkg/__pycache__/kept.cpython-311.pyc", installed] {
            assert!(tree.path().join(path).exists(), "{path}");
        }
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn python_is_split_as_a_shell_splits() {
        assert_eq!(
            python_words("uv run python").unwrap(),
            ["uv", "run", "python"]
        );
        assert_eq!(
            python_words("'/opt/my env/bin/python' -X dev").unwrap(),
            ["/opt/my env/bin/python", "-X", "dev"]
        );
        assert!(
            python_words("'/opt/my env/bin/python")
                .unwrap_err()
                .to_string()
                .contains("unclosed quote")
        );
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
