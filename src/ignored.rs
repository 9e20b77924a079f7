//! Git-ignored files that pytest would load (a `conftest.py`, Python under the test and source trees,
//! `.pth` files, pytest's config files): the allowed-path guard sees only what git tracks or lists as
//! untracked, so an ignored `conftest.py` could change every measurement unseen. `start` records them
//! (path and content hash) in the git dir; `step` refuses when any appeared, changed or went away.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::git::Repo;

/// What pytest may load from ignored files, as globs from the work-tree root.
const LOADED_BY_PYTEST: &[&str] = &[
    ":(glob)**/conftest.py",
    ":(glob)tests/**/*.py",
    ":(glob)src/**/*.py",
    ":(glob)**/*.pth",
    ":(glob)**/pytest.ini",
    ":(glob)**/pyproject.toml",
    ":(glob)**/setup.cfg",
    ":(glob)**/tox.ini",
];

/// Path to content hash.
type Fingerprint = BTreeMap<String, String>;

fn record_path(repo: &Repo, branch: &str) -> Result<PathBuf> {
    repo.git_path(&format!("cutile-perf/ignored/{branch}.json"))
}

fn fingerprint(repo: &Repo) -> Result<Fingerprint> {
    let mut args = vec![
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--",
    ];
    args.extend_from_slice(LOADED_BY_PYTEST);
    let listed = repo.git(&args)?;
    let paths: Vec<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
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
        .iter()
        .map(|p| p.to_string())
        .zip(hashes.lines().map(str::to_string))
        .collect())
}

/// Records the ignored files pytest would load for the session on `branch`.
pub fn record(repo: &Repo, branch: &str) -> Result<()> {
    let path = record_path(repo, branch)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&fingerprint(repo)?).expect("a map serializes");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Refuses when the ignored files pytest would load differ from those `start` recorded (a session from
/// before this check records them now).
pub fn check(repo: &Repo, branch: &str) -> Result<()> {
    let path = record_path(repo, branch)?;
    let Ok(text) = std::fs::read_to_string(&path) else {
        return record(repo, branch);
    };
    let recorded: Fingerprint = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is damaged\nhint: delete it to record the present files",
            path.display()
        )
    })?;
    let now = fingerprint(repo)?;
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
        bail!(
            "git-ignored files that pytest loads differ from when the session started, and the guard cannot \
             see them:\n  {}\nhint: put them back as they were, or delete them; they could change every \
             measurement unseen",
            differ.join("\n  ")
        );
    }
    Ok(())
}
