//! Finding a kernel's source file and its test file in a TileGym checkout.
//!
//! Kernels live in `src/tilegym/ops/cutile/**/<name>.py` ("ops") or
//! `src/tilegym/suites/<suite>/cutile/**/<name>.py`; tests in `tests/ops/**/test_<name>.py` or
//! `tests/suites/<suite>/**/test_<name>.py`. One name may exist in several places (rms_norm is in ops and
//! in suites/liger), so an ambiguous name is an error that lists each candidate and the flag picking it.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};

use crate::rules::hint::{Hinted, hinted};

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
        return Err(hinted(
            format!(
                "{} is not a TileGym checkout (no src/tilegym/)",
                root.display()
            ),
            "run git cutile-perf inside NVIDIA's TileGym repository",
        ));
    }
    Ok(())
}

/// Finds the kernel called `name` (a file stem), optionally only in `suite`.
pub fn kernel(root: &Path, name: &str, suite: Option<&str>) -> Result<Kernel> {
    let file = format!("{name}.py");
    let mut candidates: Vec<Kernel> = kernel_dirs(root)
        .into_iter()
        .flat_map(|(suite, dir)| {
            files_named(root, &dir, &file)
                .into_iter()
                .map(move |path| Kernel {
                    name: name.to_string(),
                    suite: suite.clone(),
                    path,
                })
        })
        .collect();
    let all = candidates.clone();
    if let Some(suite) = suite {
        candidates.retain(|k| k.suite == suite);
    }
    match candidates.len() {
        1 => Ok(candidates.remove(0)),
        0 if all.is_empty() => Err(no_kernel(root, name, &file)),
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

/// Why no kernel file is named `name`: one that is a symbolic link (the search follows none: the record
/// holds the file a commit holds), or none at all, with the names nearest it.
fn no_kernel(root: &Path, name: &str, file: &str) -> anyhow::Error {
    let links: Vec<String> = kernel_dirs(root)
        .iter()
        .flat_map(|(_, dir)| entries_where(root, dir, |n, t| t.is_symlink() && n == file))
        .collect();
    if let Some(link) = links.first() {
        let target = std::fs::read_link(root.join(link))
            .map_or_else(|_| "?".to_string(), |p| p.display().to_string());
        return hinted(
            format!(
                "the kernel {link} is a symbolic link (to {target}): a session edits and records the file \
                 itself, not what a link points at"
            ),
            format!(
                "put the file in the link's place (`cp --remove-destination \"$(readlink -f {link})\" {link}`), \
                 commit it on the branch you start from (never on a cutile-perf session branch), then start again"
            ),
        );
    }
    Hinted {
        message: format!(
            "no cuTile kernel named {name}: looked for {file} under src/tilegym/ops/cutile/ and \
             src/tilegym/suites/*/cutile/"
        ),
        hint: suggestion(&closest(name, kernel_names(root))),
    }
    .into()
}

/// The folders that hold cuTile kernels, each with its suite.
fn kernel_dirs(root: &Path) -> Vec<(String, String)> {
    let mut dirs = vec![(OPS.to_string(), "src/tilegym/ops/cutile".to_string())];
    for suite in subdirectories(root, "src/tilegym/suites") {
        let dir = format!("src/tilegym/suites/{suite}/cutile");
        dirs.push((suite, dir));
    }
    dirs
}

/// Every kernel file of the checkout, sorted by path: a module under a kernel folder that defines a
/// kernel (`@ct.kernel`, `ct.kernel(...)`) or names one as what its device-side helpers serve.
pub fn kernel_files(root: &Path) -> Vec<Kernel> {
    let mut found: Vec<Kernel> = kernel_dirs(root)
        .into_iter()
        .flat_map(|(suite, dir)| {
            files_where(root, &dir, |f| f.ends_with(".py") && !f.starts_with("__"))
                .into_iter()
                .map(move |path| Kernel {
                    name: stem(&path),
                    suite: suite.clone(),
                    path,
                })
        })
        .filter(|k| {
            std::fs::read_to_string(root.join(&k.path))
                .is_ok_and(|text| text.contains("@ct.kernel") || text.contains("ct.kernel("))
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The Python files under the kernel folders whose names are not UTF-8, as their names read with the
/// bytes that are not replaced: no kernel can be found by such a name, so they are listed, not dropped.
pub fn files_not_utf8(root: &Path) -> Vec<String> {
    kernel_dirs(root)
        .into_iter()
        .flat_map(|(_, dir)| files_where(root, &dir, |f| f.ends_with(".py")))
        // a name read lossily names no file: its bytes were replaced
        .filter(|path| path.contains(char::REPLACEMENT_CHARACTER) && !root.join(path).exists())
        .collect()
}

fn stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The checkout's standalone benchmark of `kernel`: `bench_<name>.py` under `tests/benchmark/` (its
/// `suites/` folder left out) for the core operators, under `tests/benchmark/suites/<suite>/` for a
/// suite's kernel.
pub fn find_benchmark(root: &Path, kernel: &Kernel) -> Option<String> {
    const BENCHMARKS: &str = "tests/benchmark";
    let file = format!("bench_{}.py", kernel.name);
    let found = match kernel.suite.as_str() {
        OPS => files_named(root, BENCHMARKS, &file)
            .into_iter()
            .filter(|p| !p.starts_with(&format!("{BENCHMARKS}/suites/")))
            .collect::<Vec<_>>(),
        suite => files_named(root, &format!("{BENCHMARKS}/suites/{suite}"), &file),
    };
    found.into_iter().next()
}

/// The names (file stems) of every kernel module in the checkout.
fn kernel_names(root: &Path) -> BTreeSet<String> {
    kernel_dirs(root)
        .iter()
        .flat_map(|(_, dir)| files_where(root, dir, |f| f.ends_with(".py") && !f.starts_with("__")))
        .filter_map(|path| Some(Path::new(&path).file_stem()?.to_string_lossy().into_owned()))
        .collect()
}

/// The names of `known` within a few edits of `name`, closest first (at most three), as git suggests
/// for a mistyped verb.
fn closest(name: &str, known: impl IntoIterator<Item = String>) -> Vec<String> {
    let most = (name.chars().count() / 3).max(2);
    let mut near: Vec<(usize, String)> = known
        .into_iter()
        .map(|other| (strsim::damerau_levenshtein(name, &other), other))
        .filter(|(edits, _)| *edits <= most)
        .collect();
    near.sort();
    near.into_iter().take(3).map(|(_, other)| other).collect()
}

/// A hint naming `similar`, or none when it is empty.
fn suggestion(similar: &[String]) -> Option<String> {
    match similar {
        [] => None,
        [one] => Some(format!("the most similar kernel is {one}")),
        many => Some(format!("the most similar kernels are {}", many.join(", "))),
    }
}

/// A test file and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TestMatch {
    pub path: String,
    pub rule: String,
}

/// Finds the test of `kernel` under its suite's test folder, by the first rule that matches:
/// `test_<name>.py`; `test_<suite>_<name>.py` (the flashinfer suite's naming); a test that imports the
/// kernel's module; a test that calls one of `ops` (registered op names; the last dotted part is what
/// tests call). Several matches of one rule are an error listing them.
pub fn find_test(root: &Path, kernel: &Kernel, ops: &[String]) -> Result<TestMatch> {
    let dir = if kernel.suite == OPS {
        "tests/ops".to_string()
    } else {
        format!("tests/suites/{}", kernel.suite)
    };
    let by_name =
        |file: String, rule: &str| (files_named(root, &dir, &file), format!("{rule} {file}"));
    let mut rules = vec![by_name(format!("test_{}.py", kernel.name), "named")];
    if kernel.suite != OPS {
        rules.push(by_name(
            format!("test_{}_{}.py", kernel.suite, kernel.name),
            "named",
        ));
    }
    let tests: Vec<(String, String)> = test_files(root, &dir)
        .into_iter()
        .filter_map(|path| Some((std::fs::read_to_string(root.join(&path)).ok()?, path)))
        .collect();
    let module = kernel
        .path
        .trim_start_matches("src/")
        .trim_end_matches(".py")
        .replace('/', ".");
    let (package, stem) = module.rsplit_once('.').unwrap_or(("", &module));
    let imports = |text: &str| {
        text.contains(&module)
            || text.lines().any(|l| {
                let l = l.trim();
                l.starts_with(&format!("from {package} import")) && calls_or_names(l, stem, false)
            })
    };
    rules.push((
        tests
            .iter()
            .filter(|(text, _)| imports(text))
            .map(|(_, p)| p.clone())
            .collect(),
        format!("imports {module}"),
    ));
    for op in ops {
        let called = op.rsplit('.').next().unwrap_or(op);
        rules.push((
            tests
                .iter()
                .filter(|(text, _)| calls_or_names(text, called, true))
                .map(|(_, p)| p.clone())
                .collect(),
            format!("calls the registered op {op}"),
        ));
    }
    for (mut found, rule) in rules {
        match found.len() {
            0 => continue,
            1 => {
                return Ok(TestMatch {
                    path: found.remove(0),
                    rule,
                });
            }
            _ => {
                return Err(hinted(
                    format!(
                        "several test files match ({rule}):\n  {}",
                        found.join("\n  ")
                    ),
                    "pick one with --test PATH",
                ));
            }
        }
    }
    Err(hinted(
        format!(
            "no test under {dir}/ is named test_{}.py, imports {module} or calls its registered ops ({})",
            kernel.name,
            if ops.is_empty() {
                "none".to_string()
            } else {
                ops.join(", ")
            }
        ),
        "name the test file with --test PATH",
    ))
}

/// Whether `text` has `name` as a whole word, followed by `(` when `call`.
fn calls_or_names(text: &str, name: &str, call: bool) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(ident)
            && if call {
                after == Some('(')
            } else {
                !after.is_some_and(ident)
            }
    })
}

/// `test_*.py` files anywhere under `dir`, sorted.
fn test_files(root: &Path, dir: &str) -> Vec<String> {
    files_where(root, dir, |name| {
        name.starts_with("test_") && name.ends_with(".py")
    })
}

/// Repository-relative paths of files called `name` anywhere under `dir`, sorted.
fn files_named(root: &Path, dir: &str, name: &str) -> Vec<String> {
    files_where(root, dir, |file_name| file_name == name)
}

/// Repository-relative paths of files anywhere under `dir` whose name passes `keep`, sorted.
fn files_where(root: &Path, dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    entries_where(root, dir, |name, kind| kind.is_file() && keep(name))
}

/// Repository-relative paths of entries anywhere under `dir` (but directories) whose name and type pass
/// `keep`, sorted.
fn entries_where(
    root: &Path,
    dir: &str,
    keep: impl Fn(&str, std::fs::FileType) -> bool,
) -> Vec<String> {
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
                Ok(t) if keep(&file_name, t) => found.push(child),
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
        let with_text: Vec<(&str, &str)> = files.iter().map(|f| (*f, "")).collect();
        tree_with(&with_text)
    }

    fn tree_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn suite_kernel(suite: &str, name: &str) -> Kernel {
        Kernel {
            name: name.to_string(),
            suite: suite.to_string(),
            path: format!("src/tilegym/suites/{suite}/cutile/{name}.py"),
        }
    }

    #[test]
    fn a_test_is_found_by_suite_prefix_import_or_registered_op() {
        let dir = tree_with(&[
            ("tests/suites/fi/test_fi_gemm.py", ""),
            (
                "tests/suites/fi/test_attention.py",
                "out = fi.ops.decode_paged(q)\nfi.ops.prefill(q)\n",
            ),
            (
                "tests/suites/fi/test_other.py",
                "x = not_decode_paged(q)\nfrom tilegym.suites.fi.cutile import pool\n",
            ),
            ("tests/suites/fi/test_more.py", "fi.ops.prefill(q)\n"),
        ]);
        let root = dir.path();
        let found = |name: &str, ops: &[&str]| {
            let ops: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
            find_test(root, &suite_kernel("fi", name), &ops)
                .map(|m| format!("{} ({})", m.path, m.rule))
                .map_err(|e| crate::rules::hint::shown(&e))
        };
        assert_eq!(
            found("gemm", &[]).unwrap(),
            "tests/suites/fi/test_fi_gemm.py (named test_fi_gemm.py)"
        );
        assert_eq!(
            found("pool", &[]).unwrap(),
            "tests/suites/fi/test_other.py (imports tilegym.suites.fi.cutile.pool)"
        );
        assert_eq!(
            found("decode", &["fi.attention.decode_paged"]).unwrap(),
            "tests/suites/fi/test_attention.py (calls the registered op fi.attention.decode_paged)"
        );
        let several = found("prefill_k", &["fi.attention.prefill"]).unwrap_err();
        assert!(
            several.starts_with(
                "several test files match (calls the registered op fi.attention.prefill)"
            ),
            "{several}"
        );
        let none = found("sink", &["fi.sink"]).unwrap_err();
        assert!(
            none.starts_with("no test under tests/suites/fi/ is named test_sink.py"),
            "{none}"
        );
        assert!(
            none.contains("hint: name the test file with --test PATH"),
            "{none}"
        );
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
            find_test(root, &liger, &[]).unwrap().path,
            "tests/suites/liger/test_rms_norm.py"
        );
        let flash = kernel(root, "flash", None).unwrap();
        assert_eq!(
            (flash.suite.as_str(), flash.path.as_str()),
            ("ops", "src/tilegym/ops/cutile/attention/flash.py")
        );
        assert_eq!(
            find_test(root, &flash, &[]).unwrap().path,
            "tests/ops/attention/test_flash.py"
        );
        let nope = kernel(root, "nope", None).unwrap_err();
        assert!(
            nope.to_string().starts_with("no cuTile kernel named nope"),
            "{nope}"
        );
        assert_eq!(crate::rules::hint::of(&nope), None);
        assert_eq!(
            crate::rules::hint::of(&kernel(root, "rms_nrom", None).unwrap_err()),
            Some("the most similar kernel is rms_norm")
        );
        assert_eq!(
            kernel(root, "flash", Some("liger"))
                .unwrap_err()
                .to_string(),
            "no cuTile kernel named flash in suite liger; it exists in: ops"
        );
    }

    #[test]
    fn a_kernel_that_is_a_link_is_named_as_one() {
        let dir = tree(&["src/tilegym/ops/cutile/rms_norm.py"]);
        let root = dir.path();
        std::os::unix::fs::symlink("rms_norm.py", root.join("src/tilegym/ops/cutile/linked.py"))
            .unwrap();
        let err = kernel(root, "linked", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the kernel src/tilegym/ops/cutile/linked.py is a symbolic link (to rms_norm.py): a session \
             edits and records the file itself, not what a link points at"
        );
        assert!(
            crate::rules::hint::of(&err)
                .unwrap()
                .contains("--remove-destination")
        );
    }

    #[test]
    fn suggestions_are_the_closest_names_within_a_few_edits() {
        let known = || {
            ["rms_norm", "layer_norm", "rope", "softmax", "swiglu"]
                .map(String::from)
                .to_vec()
        };
        assert_eq!(closest("rmsnorm", known()), ["rms_norm"]);
        assert_eq!(closest("rope", known()), ["rope"]);
        assert_eq!(closest("roep", known()), ["rope"]);
        assert_eq!(closest("sofmtax", known()), ["softmax"]);
        assert!(closest("attention", known()).is_empty());
        assert_eq!(closest("norm", known()), Vec::<String>::new());
        assert_eq!(suggestion(&[]), None);
        assert_eq!(
            suggestion(&["a".into(), "b".into()]).as_deref(),
            Some("the most similar kernels are a, b")
        );
    }
}
