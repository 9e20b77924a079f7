//! `start --scaffold`: writes the session perf file of a kernel without a `test_perf`, ready for
//! `start --test sandbox/perf_<kernel>.py`: one that runs the cuTile lines of the kernel's standalone
//! benchmark where the checkout has one, else one that times the kernel's registered op on the inputs its
//! correctness tests pass it (their calls recorded in one run of them), grown until its time is over the
//! launch's.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::features::inspect::derived_inputs;
use crate::features::inspect::perf_file::{self, TimedOp};
use crate::features::inspect::recorded_calls::{Recorder, chosen_growths};
use crate::features::inspect::report::{InspectReport, inspect_with_test};
use crate::features::inspect::source::{Source, session_perf_file};
use crate::features::locate::{self, Kernel};
use crate::rules::guard::SANDBOX;
use crate::rules::hint::{Hinted, hinted};
use crate::rules::records::LAUNCH_BOUND_MS;
use crate::system::git::Repo;
use crate::system::pytest::{check_pytest, default_python};
use crate::system::runner::Local;
use crate::system::ui::{Render, Ui};

/// The kernel whose session perf file to write.
#[derive(Debug)]
pub struct ScaffoldOptions {
    pub kernel: String,
    /// The suite the kernel is in, when its name is in several.
    pub suite: Option<String>,
    /// The Python command that runs the checkout's pytest (`python3` where none is given).
    pub python: Option<String>,
}

/// What `start --scaffold` wrote, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct ScaffoldReport {
    /// The session perf file, repository-relative.
    pub file: String,
    /// The correctness test whose inputs the file should build alike, or whose tests it collects.
    pub test: Option<String>,
    /// The op the file times, when it times one.
    pub op: Option<TimedOp>,
    /// The standalone benchmark whose cuTile lines the file runs, when one times the kernel.
    pub benchmark: Option<String>,
    /// The inputs the file builds, when it times the op.
    pub inputs: Option<DerivedInputs>,
    /// The command that starts the session on it, once its shapes are set.
    pub start: String,
}

/// The inputs a perf file that times the op builds, from the calls its correctness tests made.
#[derive(Debug, Serialize)]
pub struct DerivedInputs {
    /// How many calls of the op the tests made, and how many of them share the structure built.
    pub recorded: usize,
    pub alike: usize,
    /// The call built again, at its recorded size: `X: torch.float32[8, 64], W: torch.float32[64], ...`.
    pub call: String,
    /// The size of the dimension that grows, where one reads as a batch.
    pub grown: Option<u64>,
    /// The growths the file times.
    pub growths: Vec<u64>,
    /// Each growth timed while the file was written, with its forward time (ms).
    pub timed: Vec<(u64, f64)>,
    /// Whether even the largest growth that ran is under the launch-bound time.
    pub launch_bound: bool,
}

pub fn run(repo: &Repo, args: &ScaffoldOptions) -> Result<ScaffoldReport> {
    locate::check_tilegym(&repo.root)?;
    let kernel = locate::kernel(&repo.root, &args.kernel, args.suite.as_deref())?;
    let full = inspect_with_test(&repo.root, &kernel, None)?;
    let file = session_perf_file(&kernel);
    let start = format!(
        "git cutile-perf start {} --suite {} --test {file}",
        kernel.name, kernel.suite
    );
    // an edited perf file is the user's: never written over
    if repo.root.join(&file).exists() {
        return Err(hinted(
            format!("{file} exists already"),
            format!("edit it, or move it away to write a fresh one; start with `{start}`"),
        ));
    }
    if let Source::Benchmark { path } = &full.source {
        let test = full.test.as_ref().map(|t| t.path.clone());
        let text = perf_file::render_benchmark(&kernel.name, path, test.as_deref());
        perf_file::write(repo, &file, &text)?;
        return Ok(ScaffoldReport {
            file,
            test,
            op: None,
            benchmark: Some(path.clone()),
            inputs: None,
            start,
        });
    }
    let test = test_to_follow(&full, &kernel, &file)?;
    let text = std::fs::read_to_string(repo.root.join(&kernel.path))
        .with_context(|| format!("reading {}", kernel.path))?;
    let op = perf_file::timed_op(&full.report, &text).ok_or_else(|| Hinted {
        message: format!("{} registers no op to time", kernel.path),
        hint: Some(format!(
            "write {file} by hand, calling the function that launches the kernel"
        )),
    })?;
    let python = match &args.python {
        Some(python) => python.clone(),
        None => default_python(&Local, &repo.root),
    };
    // a Python without pytest runs no test, which would read as tests that never call the op
    check_pytest(&Local, &python, &repo.root)?;
    let recorder = Recorder {
        python: &python,
        root: &repo.root,
        scratch: repo
            .root
            .join(SANDBOX)
            .join(format!("scaffold-{}", kernel.name)),
    };
    repo.exclude(&format!("/{SANDBOX}/"))?;
    let inputs = derive_inputs(repo, &recorder, &kernel.name, &test, &op, &file)?;
    Ok(ScaffoldReport {
        file,
        test: Some(test),
        op: Some(op),
        benchmark: None,
        inputs: Some(inputs),
        start,
    })
}

/// Records the op's calls in one run of `test`, writes `file` to build the call most of them share, and
/// times its growths to keep those past the launch; a call that cannot be built again, or a file that
/// does not run, is refused (and the file removed).
fn derive_inputs(
    repo: &Repo,
    recorder: &Recorder,
    kernel: &str,
    test: &str,
    op: &TimedOp,
    file: &str,
) -> Result<DerivedInputs> {
    let by_hand = format!(
        "write {file} by hand: a test_perf that builds the op's inputs as {test} does and records its timing \
         as the checkout's perf tests do"
    );
    let (calls, ran) = recorder.record(test, op)?;
    let derived = derived_inputs::derive(&calls).map_err(|why| {
        hinted(
            format!(
                "the inputs of {}.{} cannot be derived from {test}: {why}",
                op.module, op.function
            ),
            format!("{by_hand}; its run ended:\n{}", ran.tail),
        )
    })?;
    let probes: Vec<u64> = match derived.grown {
        Some(_) => (0..=16).map(|power| 1 << power).collect(),
        None => vec![1],
    };
    perf_file::write(
        repo,
        file,
        &perf_file::render_derived(kernel, test, op, &derived, &probes),
    )?;
    let (timed, ran) = recorder.time_growths(file, LAUNCH_BOUND_MS)?;
    let Some(growths) = chosen_growths(&timed, LAUNCH_BOUND_MS) else {
        std::fs::remove_file(repo.root.join(file))
            .with_context(|| format!("cannot remove {file}"))?;
        return Err(hinted(
            format!(
                "the perf file derived from {test} does not run: the call {} failed",
                derived.summary()
            ),
            format!("{by_hand}; its run ended:\n{}", ran.tail),
        ));
    };
    perf_file::write(
        repo,
        file,
        &perf_file::render_derived(kernel, test, op, &derived, &growths),
    )?;
    let largest = timed.iter().map(|&(_, ms)| ms).fold(0.0, f64::max);
    Ok(DerivedInputs {
        recorded: derived.recorded,
        alike: derived.alike,
        call: derived.summary(),
        grown: derived.grown,
        growths,
        timed,
        launch_bound: largest < LAUNCH_BOUND_MS,
    })
}

/// The correctness test the perf file follows; refused when the kernel is timed already or has no test.
fn test_to_follow(full: &InspectReport, kernel: &Kernel, file: &str) -> Result<String> {
    Ok(match (&full.source, &full.test) {
        (Source::TestPerf { path, .. }, _) => {
            return Err(hinted(
                format!("{path} already times {} in its test_perf", kernel.name),
                format!(
                    "start the session on it: `git cutile-perf start {} --suite {}`",
                    kernel.name, kernel.suite
                ),
            ));
        }
        (_, Some(test)) => test.path.clone(),
        (_, None) => {
            return Err(hinted(
                format!(
                    "{} has no test whose inputs a perf file could follow",
                    kernel.name
                ),
                format!(
                    "write {file} by hand: a test_perf that records the op's timing as the checkout's perf tests do"
                ),
            ));
        }
    })
}

impl Render for ScaffoldReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        match (&self.op, &self.benchmark, &self.inputs) {
            (Some(op), _, Some(inputs)) => {
                writeln!(
                    out,
                    "wrote {}: times {}.{} on the call its tests make ({} of {} recorded alike): {}",
                    self.file, op.module, op.function, inputs.alike, inputs.recorded, inputs.call
                )?;
                let times: Vec<String> = inputs
                    .timed
                    .iter()
                    .map(|(growth, ms)| format!("x{growth} {ms:.4} ms"))
                    .collect();
                match inputs.grown {
                    Some(size) => writeln!(
                        out,
                        "grown along every dimension of size {size}: {}; kept x{}",
                        times.join(", "),
                        inputs
                            .growths
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", x")
                    )?,
                    None => writeln!(
                        out,
                        "nothing grown: no dimension reads as a batch ({})",
                        times.join(", ")
                    )?,
                }
                if inputs.launch_bound {
                    writeln!(
                        out,
                        "still launch-bound (under {} us): edit make_inputs for sizes of real use",
                        LAUNCH_BOUND_MS * 1e3
                    )?;
                }
                writeln!(out, "next: `{}`", self.start)?;
            }
            (_, benchmark, _) => {
                let benchmark = benchmark.as_deref().unwrap_or("its benchmark");
                writeln!(
                    out,
                    "wrote {}: runs the cuTile lines of {benchmark}, every other backend skipped",
                    self.file
                )?;
                writeln!(
                    out,
                    "next: set LINES where the script has several cuTile variants, then `{}`",
                    self.start
                )?;
            }
        }
        Ok(())
    }
}
