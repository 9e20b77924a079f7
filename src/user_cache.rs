//! The user's cache directory, and the bytecode the tool keeps there for its test processes.
//!
//! Every test process reads bytecode only from a fresh `PYTHONPYCACHEPREFIX` (`pytest::FreshBytecode`),
//! so no `.pyc` in the checkout can stand in for its source. Left empty, that directory makes every run
//! compile the interpreter's own modules again: pytest's imports alone cost about a second of CPU per
//! run, torch's far more. So it starts as a copy of `git-cutile-perf/pycache/` here, and what a run
//! compiled from the interpreter's own files (its standard library and site-packages, never anything
//! else) is kept for the next run. Only bytecode that Python checks against its source (the timestamp
//! kind that imports write) is kept or used, so a kept file never outlives an edit of its source.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// Where the kept bytecode lives, under the cache directory: the same tree as a `PYTHONPYCACHEPREFIX`.
const PYCACHE: &str = "git-cutile-perf/pycache";

/// `$XDG_CACHE_HOME`, or `~/.cache` (an unset, empty or relative XDG value is ignored, as the spec says).
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
}

/// Fills a fresh `prefix` with the kept bytecode (linked where it can be, else copied). Best effort: a
/// missing or unreadable cache costs only the compiling.
pub fn seed(prefix: &Path) {
    if let Some(kept) = dir().map(|dir| dir.join(PYCACHE)) {
        let _ = copy_tree(&kept, prefix, Path::new(""), &|_| true);
    }
}

/// Keeps the bytecode a run wrote into `prefix` for the interpreter's own files, the rest left to be
/// removed with `prefix`. Best effort, as [`seed`].
pub fn keep(prefix: &Path) {
    if let Some(kept) = dir().map(|dir| dir.join(PYCACHE)) {
        let _ = copy_tree(prefix, &kept, Path::new(""), &interpreters_own);
    }
}

/// Whether a source directory (as mirrored under a prefix) is the interpreter's own: inside a
/// `site-packages` or `dist-packages`, or a standard library (`lib/python3.X`, `lib64/python3.X`).
/// Nothing else is kept: not the checkout, its worktrees or the tool's own plugins.
fn interpreters_own(source_dir: &Path) -> bool {
    let names: Vec<&str> = source_dir
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    names
        .iter()
        .any(|name| matches!(*name, "site-packages" | "dist-packages"))
        || names.windows(2).any(|pair| {
            matches!(pair[0], "lib" | "lib64")
                && pair[1]
                    .strip_prefix("python3.")
                    .is_some_and(|minor| minor.parse::<u32>().is_ok())
        })
}

/// Puts each `.pyc` of `from/below` into `to/below` where `wanted(below)`: a link where both are on one
/// file system, else a copy, through a temporary name and a rename (a reader sees a whole file or
/// none). A file that is already there (the same file or the same bytes) is left alone.
fn copy_tree(
    from: &Path,
    to: &Path,
    below: &Path,
    wanted: &dyn Fn(&Path) -> bool,
) -> std::io::Result<()> {
    for entry in fs::read_dir(from.join(below))? {
        let entry = entry?;
        let path = below.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(from, to, &path, wanted)?;
        } else if path.extension().is_some_and(|ext| ext == "pyc")
            && wanted(below)
            && checked_against_its_source(&entry.path())
        {
            place(&entry.path(), &to.join(&path))?;
        }
    }
    Ok(())
}

/// Whether a `.pyc` is of the kind Python checks against its source's time and size: its flags word
/// (bytes 4-8, after the magic number) is zero. A hash-based file may be marked never to be checked.
fn checked_against_its_source(file: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 8];
    fs::File::open(file).is_ok_and(|mut pyc| pyc.read_exact(&mut header).is_ok())
        && header[4..] == [0, 0, 0, 0]
}

fn place(file: &Path, target: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(ours), Ok(theirs)) = (fs::metadata(file), fs::metadata(target))
        && (ours.ino() == theirs.ino() || fs::read(file)? == fs::read(target)?)
    {
        return Ok(());
    }
    let dir = target.parent().expect("a file under the tree");
    fs::create_dir_all(dir)?;
    let temporary = tempfile::Builder::new()
        .prefix(".placing-")
        .make_in(dir, |name| {
            fs::hard_link(file, name).or_else(|err| match err.kind() {
                std::io::ErrorKind::AlreadyExists => Err(err),
                _ => fs::copy(file, name).map(drop),
            })
        })?;
    temporary.persist(target).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_interpreters_own_files_are_kept() {
        for own in [
            "/usr/lib/python3.11",
            "/usr/lib/python3.11/importlib/metadata",
            "/opt/conda/lib/python3.12/site-packages/torch/nn",
            "/usr/lib/python3/dist-packages/_pytest",
            "/home/me/.venv/lib64/python3.10/site-packages/pluggy",
        ] {
            assert!(interpreters_own(Path::new(own)), "{own}");
        }
        for other in [
            "/home/me/TileGym/src/tilegym/ops/cutile",
            "/home/me/TileGym/tests",
            "/home/me/TileGym/sandbox/plugins",
            "/home/me/lib/python3.x",
            "/home/me/lib/python",
            "/home/me/python3.11",
        ] {
            assert!(!interpreters_own(Path::new(other)), "{other}");
        }
    }

    #[test]
    fn a_run_keeps_the_interpreters_bytecode_and_the_next_run_starts_with_it() {
        let root = tempfile::tempdir().unwrap();
        let (first, kept, second) = (
            root.path().join("first"),
            root.path().join("kept"),
            root.path().join("second"),
        );
        let stdlib = "usr/lib/python3.11/__pycache__/ast.cpython-311.pyc";
        let kernel = "work/src/kernel/__pycache__/add.cpython-311.pyc";
        let unchecked = "usr/lib/python3.11/__pycache__/typing.cpython-311.pyc";
        // a magic number, then the flags: 0 (checked by time), 1 (hash, never checked)
        let pyc = |flags: u8, body: &str| {
            [&b"\xa7\r\r\n"[..], &[flags, 0, 0, 0], body.as_bytes()].concat()
        };
        for (rel, bytes) in [
            (stdlib, pyc(0, "ast")),
            (kernel, pyc(0, "add")),
            (unchecked, pyc(1, "typing")),
        ] {
            fs::create_dir_all(first.join(rel).parent().unwrap()).unwrap();
            fs::write(first.join(rel), bytes).unwrap();
        }
        copy_tree(&first, &kept, Path::new(""), &interpreters_own).unwrap();
        assert_eq!(fs::read(kept.join(stdlib)).unwrap(), pyc(0, "ast"));
        assert!(
            !kept.join(kernel).exists(),
            "the checkout's bytecode is never kept"
        );
        assert!(!kept.join(unchecked).exists(), "nor bytecode never checked");

        copy_tree(&kept, &second, Path::new(""), &|_| true).unwrap();
        assert_eq!(fs::read(second.join(stdlib)).unwrap(), pyc(0, "ast"));
        // Python replaces a stale file (a new file under the name); the kept one follows
        fs::remove_file(second.join(stdlib)).unwrap();
        fs::write(second.join(stdlib), pyc(0, "ast, recompiled")).unwrap();
        copy_tree(&second, &kept, Path::new(""), &interpreters_own).unwrap();
        assert_eq!(
            fs::read(kept.join(stdlib)).unwrap(),
            pyc(0, "ast, recompiled")
        );
        let names: Vec<_> = fs::read_dir(kept.join(stdlib).parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }
}
