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
    // each worker of a side writes its plugins into the side's one folder as it starts, while the
    // workers before it import them and a spare compares them with its own: the same bytes stay as
    // they are (on an H100 a spare that read one half-written started its worker afresh, 12 s instead
    // of 1.5), new ones replace the file whole
    if std::fs::read(&file).ok().as_deref() != Some(source.as_bytes()) {
        crate::system::disk::write_whole(&file, source)?;
    }
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

    #[test]
    fn a_plugin_written_again_is_left_alone_or_replaced_whole_never_rewritten_in_place() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plugin.py");
        let inode = || std::fs::metadata(&file).unwrap().ino();
        write_plugin(dir.path(), ("plugin", "A = 1\n")).unwrap();
        let first = inode();
        // a worker importing it, or a spare comparing it, as the next worker's start writes it again
        let reading = std::fs::File::open(&file).unwrap();
        write_plugin(dir.path(), ("plugin", "A = 1\n")).unwrap();
        assert_eq!(inode(), first, "the same bytes were written again");
        write_plugin(dir.path(), ("plugin", "A = 2\n")).unwrap();
        assert_ne!(
            inode(),
            first,
            "other bytes were written into the file a reader has open"
        );
        assert_eq!(
            std::io::read_to_string(reading).unwrap(),
            "A = 1\n",
            "what the reader had open changed under it"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "A = 2\n");
        // nothing is left beside it
        let names: Vec<_> = (std::fs::read_dir(dir.path()).unwrap())
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["plugin.py"]);
    }
}
