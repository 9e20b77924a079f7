//! `demo`: the whole loop on a built-in TileGym-shaped repository, no GPU needed.
//!
//! The repository is `fixtures/tilegym/` embedded in the binary. Its tests simulate latency and
//! correctness from constants in the kernel file, so each "optimization" below is an edit of those
//! constants, and every command is this same binary run as a user would run it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::features::demo_python;
use crate::rules::guard::SANDBOX;
use crate::system::process::{self, Ending};
use crate::system::ui::{self, Progress, Render, Ui};

macro_rules! fixture_files {
    ($($path:literal),+ $(,)?) => {
        /// Every file of `fixtures/tilegym/`, with its contents.
        pub const FIXTURE: &[(&str, &str)] =
            &[$(($path, include_str!(concat!("../../../fixtures/tilegym/", $path)))),+];
    };
}

fixture_files!(
    "pytest.ini",
    "setup.py",
    "src/cuda/__init__.py",
    "src/cuda/tile/__init__.py",
    "src/fastlib/__init__.py",
    "src/tilegym/__init__.py",
    "src/tilegym/backend.py",
    "src/tilegym/ops/__init__.py",
    "src/tilegym/ops/cutile/__init__.py",
    "src/tilegym/ops/cutile/helpers.py",
    "src/tilegym/ops/cutile/rms_norm.py",
    "src/tilegym/ops/cutile/swish.py",
    "src/tilegym/ops/cutile/vector_add.py",
    "src/tilegym/suites/__init__.py",
    "src/tilegym/suites/liger/__init__.py",
    "src/tilegym/suites/liger/cutile/__init__.py",
    "src/tilegym/suites/liger/cutile/layer_norm.py",
    "src/tilegym/suites/liger/cutile/rms_norm.py",
    "src/tilegym/suites/liger/cutile/scale.py",
    "src/torch/__init__.py",
    "src/triton/__init__.py",
    "src/triton/testing.py",
    "tests/__init__.py",
    "tests/benchmark/bench_swish.py",
    "tests/common.py",
    "tests/conftest.py",
    "tests/ops/__init__.py",
    "tests/ops/test_vector_add.py",
    "tests/suites/__init__.py",
    "tests/suites/liger/__init__.py",
    "tests/suites/liger/test_layer_norm.py",
    "tests/suites/liger/test_rms_norm.py",
    "tests/suites/liger/test_scale.py",
);

/// Each of the demo's commands runs in seconds; this only bounds a wedged one.
const STEP_BUDGET: Duration = Duration::from_secs(600);

const KERNEL: &str = "src/tilegym/ops/cutile/vector_add.py";

/// What the demo leaves: the session branch's log, the report's page, and whether the repository is
/// kept. (Its narration and the commands it runs print as they go.)
#[derive(Debug, serde::Serialize)]
pub struct DemoReport {
    pub log: String,
    pub report: PathBuf,
    pub kept: bool,
}

/// The demo in `dir` (which must not exist yet), or in a temporary directory removed at the end.
pub fn run(ui: &mut Ui, dir: Option<&Path>) -> Result<DemoReport> {
    let (root, removed_at_the_end) = demo_dir(dir)?;
    let demo = Demo::set_up(&root, ui.sink())?;
    demo.optimize()?;
    let log = demo.git(&["log", "--format=%h %s", "-6"])?;
    let report = root
        .join(SANDBOX)
        .join(crate::features::report::DEFAULT_FILE);
    let report = match removed_at_the_end {
        Some(_) => keep_report(&report)?,
        None => report,
    };
    Ok(DemoReport {
        log,
        report,
        kept: dir.is_some(),
    })
}

impl Render for DemoReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let demo = ui.bold("demo:").to_string();
        let out = ui.out();
        writeln!(
            out,
            "\n{demo} the session branch's log carries every result as trailers:"
        )?;
        write!(out, "{}", self.log)?;
        writeln!(
            out,
            "\n{demo} the session as one page (open it in a browser): {}",
            self.report.display()
        )?;
        if !self.kept {
            writeln!(
                out,
                "(the demo repository is removed; pass --dir DIR to keep it)"
            )?;
        }
        Ok(())
    }
}

/// Copies the report out of the repository about to be removed, into the cache directory (the
/// temporary directory without one), and returns where it now is.
fn keep_report(report: &Path) -> Result<PathBuf> {
    let kept = demo_python::kept_report();
    std::fs::create_dir_all(kept.parent().expect("the kept report has a directory"))?;
    std::fs::copy(report, &kept)
        .with_context(|| format!("cannot keep the demo's report in {}", kept.display()))?;
    Ok(kept)
}

/// Where the demo builds its repository: `--dir` (which must not exist yet), or a temporary
/// directory, returned too so that it lives as long as the demo.
fn demo_dir(dir: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match dir {
        Some(dir) => {
            if dir.exists() {
                bail!(
                    "{} already exists; the demo builds a new repository there",
                    dir.display()
                );
            }
            Ok((dir.to_path_buf(), None))
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("cutile-perf-demo-")
                .tempdir()?;
            Ok((temp.path().to_path_buf(), Some(temp)))
        }
    }
}

pub fn write_fixture(root: &Path) -> Result<()> {
    for (path, contents) in FIXTURE {
        let target = root.join(path);
        std::fs::create_dir_all(target.parent().expect("fixture paths have a parent"))?;
        std::fs::write(&target, contents)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    Ok(())
}

/// PATH with `dir` first.
fn first_on_path(dir: &Path) -> Result<std::ffi::OsString> {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&rest));
    std::env::join_paths(dirs).context("the demo's Python environment has a path PATH cannot hold")
}

struct Demo<'a> {
    root: &'a Path,
    exe: PathBuf,
    /// PATH for the tool's runs, when the demo brings its own Python.
    search_path: Option<std::ffi::OsString>,
}

impl<'a> Demo<'a> {
    /// The fixture committed in a new repository at `root`, and the Python to run its tests with.
    fn set_up(root: &'a Path, progress: &Progress) -> Result<Demo<'a>> {
        write_fixture(root)?;
        let system = crate::system::pytest::default_python(&crate::system::runner::Local, root);
        let python_bin = demo_python::for_demo(&system, progress)?;
        let demo = Demo {
            root,
            exe: std::env::current_exe().context("cannot find this program's path")?,
            search_path: python_bin.map(|bin| first_on_path(&bin)).transpose()?,
        };
        demo.git(&["init", "-q", "-b", "main"])?;
        demo.git(&["config", "user.name", "cutile-perf demo"])?;
        demo.git(&["config", "user.email", "demo@localhost"])?;
        demo.git(&["add", "-A"])?;
        demo.git(&["commit", "-q", "-m", "A TileGym-shaped repository"])?;
        say(&format!(
            "{} a TileGym-shaped repository in {}",
            ui::bold("demo:"),
            root.display()
        ));
        say(&format!(
            "      its tests simulate latency and correctness from constants in {KERNEL}\n"
        ));
        Ok(demo)
    }

    /// The session: a start, three simulated optimizations (a keep, a revert, a crash), the table
    /// and the status.
    fn optimize(&self) -> Result<()> {
        // the demo's kernel runs on the CPU
        self.tool(&["start", "vector_add", "--class", "memory", "--no-gpu"])?;
        self.edit(
            "a larger tile: every config 20% faster",
            &[
                ("TILE_SIZE = 128", "TILE_SIZE = 256"),
                ("0.100000", "0.080000"),
                ("1.000000", "0.800000"),
            ],
        )?;
        self.tool(&["step", "--opt", "G", "--cause", "memory", "tile size 256"])?;
        self.edit(
            "persistent scheduling: large shapes faster, small ones 10% slower",
            &[("0.080000", "0.088000"), ("0.800000", "0.600000")],
        )?;
        self.tool(&["step", "--opt", "B", "persistent scheduling"])?;
        self.edit(
            "latency hints that break the kernel at run time",
            &[("CRASH = \"\"", "CRASH = \"exception\"")],
        )?;
        self.tool(&["step", "--opt", "E", "latency hints on loads"])?;
        self.tool(&["table", "--write"])?;
        self.tool(&["status"])
    }

    fn git(&self, args: &[&str]) -> Result<String> {
        process::git(self.root, args, &[])
    }

    /// Runs this binary as `git cutile-perf ARGS`, showing the command and its output.
    fn tool(&self, args: &[&str]) -> Result<()> {
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("\"{a}\"")
                } else {
                    a.to_string()
                }
            })
            .collect();
        say(&format!(
            "\n{} git cutile-perf {}",
            ui::bold("$"),
            shown.join(" ")
        ));
        let mut tool = process::command(&self.exe.to_string_lossy(), args).dir(self.root);
        if let Some(path) = &self.search_path {
            tool = tool.env("PATH", path);
        }
        let ending = process::run(&tool, Instant::now() + STEP_BUDGET)?;
        if ending == Ending::Interrupted {
            return Err(crate::system::process::Interrupted("the demo stopped").into());
        }
        if ending != Ending::Exited(0) {
            bail!("the demo's `git cutile-perf {}` failed", args.join(" "));
        }
        Ok(())
    }

    /// Applies a simulated optimization: text replacements in the kernel file.
    fn edit(&self, what: &str, replacements: &[(&str, &str)]) -> Result<()> {
        let path = self.root.join(KERNEL);
        let mut text = std::fs::read_to_string(&path)?;
        for (from, to) in replacements {
            if !text.contains(from) {
                bail!("demo fixture out of date: {KERNEL} lacks {from:?}");
            }
            text = text.replacen(from, to, 1);
        }
        std::fs::write(&path, text)?;
        say(&format!("\n{} edit {KERNEL}: {what}", ui::bold("demo:")));
        Ok(())
    }
}

/// A line of the demo's narration on stdout; a reader that stopped reading (`| head`) loses it, and the
/// demo goes on.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_fixture_lists_every_file() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tilegym");
        let mut on_disk = Vec::new();
        let mut pending = vec![base.clone()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if path.file_name().unwrap() != "__pycache__" {
                        pending.push(path);
                    }
                } else {
                    on_disk.push(
                        path.strip_prefix(&base)
                            .unwrap()
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = FIXTURE.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }
}
