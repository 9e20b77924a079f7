//! Git-ignored files the tests can load: the allowed-path guard sees only what git tracks or lists as
//! untracked, so an ignored `conftest.py`, a stale `.pyc` or a built `.so` could change every measurement
//! unseen. Which files: any Python can import from the test's import roots (the work-tree root and
//! `src/`, so a path whose directories are all identifiers) with an extension Python or pytest loads,
//! `.pth` files anywhere, pytest's config files, and a session perf file (`sandbox/perf_<kernel>.py`, the
//! session's test when the kernel's own tests check correctness only) with its `sandbox/conftest.py`. `start` records them (path and content hash) in the
//! git dir, and their count and one hash of them in the baseline's `Cutile-Perf-Ignored` trailer, so that
//! another clone, or one whose list was removed, checks them too; `step` refuses when any appeared, changed or went away, and copies them into the baseline's
//! worktree so that both sides of a comparison see the same ones. Bytecode in a `__pycache__` is not
//! among them: Python reads it only in place of a source beside it, no side's worktree gets a copy, and
//! every test process starts with the untracked ones of its tree removed ([`crate::system::pytest::Bytecode`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::rules::hint::{Hinted, hinted};
use crate::rules::units::counted;
use crate::system::git::Repo;
use crate::system::pytest::{is_identifier, is_source_bytecode};

/// Extensions of what Python imports: source, bytecode, extension modules.
const IMPORTED: &[&str] = &["py", "pyc", "pyo", "so", "pyd"];
/// pytest's config files, read from the root and the test directories.
const PYTEST_CONFIGS: &[&str] = &["pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"];

/// Whether an ignored file at `path` (relative, `/`-separated) can be loaded by the tests.
fn loadable(path: &str) -> bool {
    let (dirs, name) = path.rsplit_once('/').unwrap_or(("", path));
    if let Some(scratch) = path.strip_prefix(&format!("{}/", crate::rules::guard::SANDBOX)) {
        // a session perf file is the session's test, and the conftest beside it loads the checkout's
        // test configuration for it: loaded, so recorded and copied like the others
        return scratch == "conftest.py"
            || (scratch.starts_with("perf_")
                && scratch.ends_with(".py")
                && !scratch.contains('/'));
    }
    if name.ends_with(".pth") {
        return true;
    }
    // removed before every test process ([`Bytecode`](crate::system::pytest::Bytecode)): never loaded
    if is_source_bytecode(path) {
        return false;
    }
    if !(dirs.is_empty() || dirs.split('/').all(is_identifier)) {
        return false;
    }
    if PYTEST_CONFIGS.contains(&name) {
        return true;
    }
    // `module.cpython-311-x86_64-linux-gnu.so`, `module.cpython-311.pyc`: the module is the first part
    match (name.split_once('.'), name.rsplit_once('.')) {
        (Some((module, _)), Some((_, extension))) => {
            IMPORTED.contains(&extension) && is_identifier(module)
        }
        _ => false,
    }
}

/// Path to content hash.
type Fingerprint = BTreeMap<String, String>;

fn record_path(repo: &Repo, branch: &str) -> Result<PathBuf> {
    repo.git_path(&format!("cutile-perf/ignored/{branch}.json"))
}

/// The ignored files the tests can load, as repository paths.
pub fn loadable_files(repo: &Repo) -> Result<Vec<String>> {
    let listed = repo.git(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
    ])?;
    Ok(listed
        .split('\0')
        .filter(|p| !p.is_empty() && loadable(p))
        .map(str::to_string)
        .collect())
}

/// Copies the ignored files the tests can load from the work tree into `tree` (a worktree of another
/// commit), where the same path is free: both sides of a comparison then load the same ones.
pub fn copy_into(repo: &Repo, tree: &Path) -> Result<()> {
    for path in loadable_files(repo)? {
        let to = tree.join(&path);
        if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(repo.root.join(&path), &to).with_context(|| {
            format!("cannot copy the ignored {path} beside the baseline's code")
        })?;
    }
    Ok(())
}

fn fingerprint(repo: &Repo) -> Result<Fingerprint> {
    let paths = loadable_files(repo)?;
    if paths.is_empty() {
        return Ok(Fingerprint::new());
    }
    let input = paths.join("\n") + "\n";
    let hashes = repo.git_with(
        &["hash-object", "--no-filters", "--stdin-paths"],
        &[],
        Some(input.as_bytes()),
    )?;
    let hashes = String::from_utf8_lossy(&hashes);
    Ok(paths
        .into_iter()
        .zip(hashes.lines().map(str::to_string))
        .collect())
}

/// A fingerprint as the baseline's trailer carries it: how many files, and one hash of their paths and
/// contents.
fn summary(repo: &Repo, fingerprint: &Fingerprint) -> Result<String> {
    let listing: String = (fingerprint.iter())
        .map(|(path, hash)| format!("{hash} {path}\n"))
        .collect();
    let hash = repo.git_with(&["hash-object", "--stdin"], &[], Some(listing.as_bytes()))?;
    Ok(format!(
        "{} {}",
        fingerprint.len(),
        String::from_utf8_lossy(&hash).trim()
    ))
}

/// Records the ignored files pytest would load for the session on `branch`; their summary, for the
/// baseline's trailer.
pub fn record(repo: &Repo, branch: &str) -> Result<String> {
    let path = record_path(repo, branch)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let now = fingerprint(repo)?;
    let text = serde_json::to_string_pretty(&now).expect("a map serializes");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    summary(repo, &now)
}

/// Refuses when the ignored files pytest would load differ from those `start` recorded: file by file
/// where the list `start` kept beside the session is here, else by the summary the baseline carries
/// (`recorded`: a clone that fetched the session, or one whose list was removed). A session from before
/// either records them now.
pub fn check(repo: &Repo, branch: &str, recorded: Option<&str>) -> Result<()> {
    let path = record_path(repo, branch)?;
    let now = fingerprint(repo)?;
    let Ok(text) = std::fs::read_to_string(&path) else {
        let Some(recorded) = recorded else {
            return record(repo, branch).map(drop);
        };
        let here = summary(repo, &now)?;
        if here != recorded {
            let listed: Vec<&str> = now.keys().map(String::as_str).collect();
            return Err(hinted(
                format!(
                    "git-ignored files that pytest loads differ from when the session started ({} \
                     then, {} now: {}), and the guard cannot see them",
                    recorded
                        .split(' ')
                        .next()
                        .and_then(|n| n.parse::<u64>().ok())
                        .map_or_else(|| "? files".to_string(), |n| counted(n, "file")),
                    counted(now.len() as u64, "file"),
                    if listed.is_empty() {
                        "none".to_string()
                    } else {
                        listed.join(", ")
                    }
                ),
                "put them back as they were where the session started, or delete them; they could \
                 change every measurement unseen",
            ));
        }
        return record(repo, branch).map(drop);
    };
    let recorded: Fingerprint = serde_json::from_str(&text).with_context(|| {
        Hinted::new(
            format!("{} is damaged", path.display()),
            "delete it to check the present files against the session's baseline",
        )
    })?;
    let mut differ: Vec<String> = now
        .iter()
        .filter(|(p, hash)| recorded.get(*p) != Some(hash))
        .map(|(p, _)| format!("{p} (new or changed)"))
        .collect();
    differ.extend(
        recorded
            .keys()
            .filter(|p| !now.contains_key(*p))
            .map(|p| format!("{p} (removed)")),
    );
    if !differ.is_empty() {
        return Err(hinted(
            format!(
                "git-ignored files that pytest loads differ from when the session started, and the guard \
                 cannot see them:\n  {}",
                differ.join("\n  ")
            ),
            "put them back as they were, or delete them; they could change every measurement unseen",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_tests_can_load_is_found_by_import_path_and_extension() {
        for path in [
            "conftest.py",
            "tests/ops/conftest.py",
            "src/tilegym/_ext.cpython-311-x86_64-linux-gnu.so",
            "src/tilegym/legacy.pyo",
            "pytest.ini",
            "tests/tox.ini",
            ".venv/lib/python3.11/site-packages/evil.pth",
            "sandbox/perf_geglu.py",
            "sandbox/conftest.py",
        ] {
            assert!(loadable(path), "{path}");
        }
        for path in [
            ".venv/lib/python3.11/site-packages/torch/__init__.py",
            "build-output/x.py",
            "notes.txt",
            "tests/data.json",
            "tests/2d-cases.py",
            "sandbox/baseline/x.py",
            "sandbox/evil.pth",
            "sandbox/perf_results.md",
            "sandbox/baseline/perf_x.py",
            "tests/__pycache__/common.cpython-311.pyc",
            "src/tilegym/.hidden/x.py",
        ] {
            assert!(!loadable(path), "{path}");
        }
    }
}
