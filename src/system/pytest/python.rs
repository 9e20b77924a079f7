//! The Python that runs pytest: the words of `--python`, whether it has pytest, and what it finds on
//! `PYTHONPATH` (the checkout's sources first, the tool's own plugins).

use std::path::Path;

use anyhow::{Context, Result};

use crate::rules::hint::{Hinted, hinted};
use crate::system::process;
use crate::system::runner::Runner;

use super::Pytest;

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

impl Pytest<'_> {
    /// Fails early, before anything is changed, when the interpreter or pytest is missing.
    pub fn check_available(&self) -> Result<()> {
        check_pytest(self.place, self.python, self.root)
    }
}

/// Fails, with how to fix it, when `python` cannot be run where `place` runs commands in `root` or has
/// no pytest.
pub fn check_pytest(place: &dyn Runner, python: &str, root: &Path) -> Result<()> {
    let words = python_words(python)?;
    let (program, args) = words.split_first().context("--python is empty")?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    place
        .find(program, root)
        .with_context(|| format!("{program} not found on PATH; pass --python CMD"))?;
    let mut full = args;
    full.extend(["-m", "pytest", "--version"]);
    let output = process::capture(place.command(program, &full, root), AVAILABILITY_TIMEOUT)
        .with_context(|| format!("cannot run {python}"))?;
    // Ctrl-C or SIGTERM ended the check: that says nothing about pytest
    if output.ending == process::Ending::Interrupted || process::interrupted() {
        return Err(process::Interrupted(
            "stopped while checking that the Python has pytest; nothing was changed",
        )
        .into());
    }
    if !output.success() {
        return Err(hinted(
            format!(
                "pytest is not available to {python}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            format!(
                "the session runs your kernel's tests with the Python that has torch and cuda-tile: \
                 activate that environment or pass --python CMD, and install pytest into it (`{python} -m \
                 pip install pytest` in a virtual environment; `sudo apt install python3-pytest` for \
                 Debian's python3)"
            ),
        ));
    }
    Ok(())
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

/// Writes the pytest plugin `(name, source)` into `dir` (which must then be on `PYTHONPATH`); returns
/// pytest's words that load it.
pub fn write_plugin(dir: &Path, (name, source): (&str, &str)) -> Result<[String; 2]> {
    let file = dir.join(format!("{name}.py"));
    std::fs::write(&file, source).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(["-p".to_string(), name.to_string()])
}

/// PYTHONPATH with the checkout's own `src/` first, ahead of an editable install that points elsewhere:
/// a baseline's worktree must test the baseline's code. `None` for a checkout without `src/`.
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
