//! `start --scaffold`: writes the session perf file of a kernel without a `test_perf`, for the user to
//! read (and set its shapes, where it times the op) before `start --test sandbox/perf_<kernel>.py`: one
//! that runs the cuTile lines of the kernel's standalone benchmark where the checkout has one, else one
//! that times the kernel's registered op.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::features::inspect::perf_file::{self, TimedOp};
use crate::features::inspect::report::{InspectReport, inspect_with_test};
use crate::features::inspect::source::{Source, session_perf_file};
use crate::features::locate::{self, Kernel};
use crate::rules::hint::{Hinted, hinted};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// The kernel whose session perf file to write.
#[derive(Debug)]
pub struct ScaffoldOptions {
    pub kernel: String,
    /// The suite the kernel is in, when its name is in several.
    pub suite: Option<String>,
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
    /// The command that starts the session on it, once its shapes are set.
    pub start: String,
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
    perf_file::write(repo, &file, &perf_file::render(&kernel.name, &test, &op))?;
    Ok(ScaffoldReport {
        file,
        test: Some(test),
        op: Some(op),
        benchmark: None,
        start,
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
        match (&self.op, &self.benchmark, &self.test) {
            (Some(op), _, Some(test)) => {
                writeln!(
                    out,
                    "wrote {}: times {}.{}",
                    self.file, op.module, op.function
                )?;
                writeln!(
                    out,
                    "next: set SHAPES to sizes of real use and build the inputs as {test} does, then `{}`",
                    self.start
                )?;
            }
            (_, benchmark, _) => {
                let benchmark = benchmark.as_deref().unwrap_or("its benchmark");
                writeln!(
                    out,
                    "wrote {}: runs the cuTile line(s) of {benchmark}, every other backend skipped",
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
