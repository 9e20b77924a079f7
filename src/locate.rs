//! Finding a kernel's source file and its test file in a TileGym checkout.
//!
//! Kernels live in `src/tilegym/ops/cutile/**/<name>.py` ("ops") or
//! `src/tilegym/suites/<suite>/cutile/**/<name>.py`; tests in `tests/ops/**/test_<name>.py` or
//! `tests/suites/<suite>/**/test_<name>.py`. One name may exist in several places (rms_norm is in ops and
//! in suites/liger), so an ambiguous name is an error that lists each candidate and the flag picking it.

use std::path::Path;

use anyhow::{Result, bail};

/// A kernel file and the suite it belongs to (`ops` for the core operators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub suite: String,
    /// Repository-relative, `/`-separated.
    pub path: String,
}

pub const OPS: &str = "ops";

/// Fails unless `root` looks like a TileGym checkout.
pub fn check_tilegym(root: &Path) -> Result<()> {
    if !root.join("src/tilegym").is_dir() {
        bail!(
            "{} is not a TileGym checkout (no src/tilegym/)\nhint: run git cutile-perf inside NVIDIA's TileGym repository",
            root.display()
        );
    }
    Ok(())
}

/// Finds the kernel called `name` (a file stem), optionally only in `suite`.
pub fn kernel(root: &Path, name: &str, suite: Option<&str>) -> Result<Kernel> {
    let file = format!("{name}.py");
    let mut candidates = Vec::new();
    for path in files_named(root, "src/tilegym/ops/cutile", &file) {
        candidates.push(Kernel {
            name: name.to_string(),
            suite: OPS.to_string(),
            path,
        });
    }
    for suite_dir in subdirectories(root, "src/tilegym/suites") {
        for path in files_named(
            root,
            &format!("src/tilegym/suites/{suite_dir}/cutile"),
            &file,
        ) {
            candidates.push(Kernel {
                name: name.to_string(),
                suite: suite_dir.clone(),
                path,
            });
        }
    }
    let all = candidates.clone();
    if let Some(suite) = suite {
        candidates.retain(|k| k.suite == suite);
    }
    match candidates.len() {
        1 => Ok(candidates.remove(0)),
        0 if all.is_empty() => bail!(
            "no cuTile kernel named {name}: looked for {file} under src/tilegym/ops/cutile/ and src/tilegym/suites/*/cutile/"
        ),
        0 => bail!(
            "no cuTile kernel named {name} in suite {}; it exists in: {}",
            suite.unwrap_or_default(),
            all.iter()
                .map(|k| k.suite.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => bail!(
            "{name} is ambiguous; pick one:\n{}",
            candidates
                .iter()
                .map(|k| format!("  {:<50} --suite {}", k.path, k.suite))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// Finds the test file of `kernel`.
pub fn test_file(root: &Path, kernel: &Kernel) -> Result<String> {
    let dir = if kernel.suite == OPS {
        "tests/ops".to_string()
    } else {
        format!("tests/suites/{}", kernel.suite)
    };
    let mut found = files_named(root, &dir, &format!("test_{}.py", kernel.name));
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!(
            "no test_{}.py under {dir}/\nhint: name the test file with --test PATH",
            kernel.name
        ),
        _ => bail!(
            "several test files match:\n  {}\nhint: pick one with --test PATH",
            found.join("\n  ")
        ),
    }
}

/// Repository-relative paths of files called `name` anywhere under `dir`, sorted.
fn files_named(root: &Path, dir: &str, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_string()];
    while let Some(rel) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{file_name}");
            // symlinks are not followed: a loop must not hang the search
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(child),
                Ok(t) if t.is_file() && file_name == name => found.push(child),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

fn subdirectories(root: &Path, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        dir
    }

    #[test]
    fn finds_ops_and_suite_kernels_and_tests() {
        let dir = tree(&[
            "src/tilegym/ops/cutile/rms_norm.py",
            "src/tilegym/suites/liger/cutile/rms_norm.py",
            "src/tilegym/ops/cutile/attention/flash.py",
            "tests/ops/test_rms_norm.py",
            "tests/suites/liger/test_rms_norm.py",
            "tests/ops/attention/test_flash.py",
        ]);
        let root = dir.path();
        let err = kernel(root, "rms_norm", None).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "rms_norm is ambiguous; pick one:\n  {:<50} --suite ops\n  {:<50} --suite liger",
                "src/tilegym/ops/cutile/rms_norm.py", "src/tilegym/suites/liger/cutile/rms_norm.py"
            )
        );
        let liger = kernel(root, "rms_norm", Some("liger")).unwrap();
        assert_eq!(liger.path, "src/tilegym/suites/liger/cutile/rms_norm.py");
        assert_eq!(
            test_file(root, &liger).unwrap(),
            "tests/suites/liger/test_rms_norm.py"
        );
        let flash = kernel(root, "flash", None).unwrap();
        assert_eq!(
            (flash.suite.as_str(), flash.path.as_str()),
            ("ops", "src/tilegym/ops/cutile/attention/flash.py")
        );
        assert_eq!(
            test_file(root, &flash).unwrap(),
            "tests/ops/attention/test_flash.py"
        );
        assert!(
            kernel(root, "nope", None)
                .unwrap_err()
                .to_string()
                .starts_with("no cuTile kernel named nope")
        );
        assert_eq!(
            kernel(root, "flash", Some("liger"))
                .unwrap_err()
                .to_string(),
            "no cuTile kernel named flash in suite liger; it exists in: ops"
        );
    }
}
