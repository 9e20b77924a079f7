//! The Python the demo runs its tests with. The demo must work on a machine that has Python 3 but not
//! pytest (and whose system Python may refuse `pip install`, as Debian's does): then it makes a private
//! virtual environment in the user's cache directory, installs pytest there once, and reuses it.
//! `start` never does this: a real session needs the user's own environment, with torch and cuda-tile.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::rules::hint::{Hinted, hinted};
use crate::system::process;
use crate::system::ui::Progress;

/// Where the environment lives, under the cache directory.
const VENV: &str = "git-cutile-perf/venv";

use crate::system::process::cache_dir;

/// Where the demo's environment is (or would be made).
pub fn environment_dir() -> Option<PathBuf> {
    cache_dir().map(|dir| dir.join(VENV))
}

/// Where a demo whose repository is removed at its end keeps the session's report.
const KEPT_REPORT: &str = "git-cutile-perf/demo/perf_results.html";

/// Where the demo keeps its report (or would): in the cache directory, else the temporary one.
pub fn kept_report() -> PathBuf {
    cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(KEPT_REPORT)
}

/// Whether a Python command (program and arguments) can run pytest.
pub fn has_pytest(words: &[&str]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let mut full = args.to_vec();
    full.extend(["-m", "pytest", "--version"]);
    process::command(program, &full)
        .stdout_null()
        .stderr_null()
        .unchecked()
        .run()
        .is_ok_and(|output| output.status.success())
}

/// A directory to put first on PATH for the demo's commands, so that `python3` there has pytest: none
/// when `system` has pytest already, else the private environment's `bin`, made (or completed) here.
pub fn for_demo(system: &str, progress: &Progress) -> Result<Option<PathBuf>> {
    if has_pytest(&system.split_whitespace().collect::<Vec<_>>()) {
        return Ok(None);
    }
    let dir = environment_dir().context(Hinted::new(
        "pytest is not available and there is no cache directory (HOME is not set) for a private one",
        "install pytest, or set HOME",
    ))?;
    let bin = dir.join("bin");
    let python = bin.join("python3");
    let shown = python.to_string_lossy().into_owned();
    if has_pytest(&[&shown]) {
        progress.line(&format!(
            "pytest is not available to {system}; using the demo's Python environment in {} (made earlier)",
            dir.display()
        ));
        return Ok(Some(bin));
    }
    let bar = progress.spinner(&format!(
        "pytest is not available to {system}; making a Python environment for the demo in {} and installing pytest (once)",
        dir.display()
    ));
    let made = make(system, &dir, &python);
    bar.finish_and_clear();
    if let Err(err) = made {
        // a half-made environment would be taken for a finished one next time
        let _ = std::fs::remove_dir_all(&dir);
        return Err(err);
    }
    progress.line(&format!("made {} with pytest", dir.display()));
    Ok(Some(bin))
}

fn make(system: &str, dir: &Path, python: &Path) -> Result<()> {
    if !python.exists() {
        let mut words: Vec<&str> = system.split_whitespace().collect();
        let dir_text = dir.to_string_lossy();
        words.extend(["-m", "venv", dir_text.as_ref()]);
        if let Err(why) = run(&words) {
            return Err(hinted(
                format!("{system} could not make a virtual environment: {why}"),
                "on Debian and Ubuntu, `sudo apt install python3-venv` (or `sudo apt install \
                 python3-pytest`, which needs no environment)",
            ));
        }
    }
    let python = python.to_string_lossy();
    let pip = [
        python.as_ref(),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "pytest",
    ];
    if let Err(why) = run(&pip) {
        return Err(hinted(
            format!("could not install pytest into the demo's environment: {why}"),
            format!("pip needs to reach PyPI; or install pytest for {system} yourself"),
        ));
    }
    Ok(())
}

/// Runs a command to completion; on failure, what it said (its last lines of error output).
fn run(words: &[&str]) -> std::result::Result<(), String> {
    let (program, args) = words.split_first().ok_or("empty command")?;
    let output = process::command(program, args)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|err| format!("cannot run {program}: {err}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.trim().lines().collect();
    Err(lines[lines.len().saturating_sub(3)..].join(" "))
}
