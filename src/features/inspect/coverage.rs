//! The coverage table: every kernel file of a checkout with its test and the source that would time
//! it, the first thing a user reads of a checkout.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::report::inspect_with_test;
use super::source::{self, Source};
use crate::features::locate::{self, Kernel};

/// One kernel file: its test (when one is found) and how it would be measured.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub kernel: String,
    pub suite: String,
    pub file: String,
    pub test: Option<String>,
    /// What times it: `test_perf`, `session_perf_file`, `benchmark`, `correctness_only` or `no_test`.
    pub measured_by: &'static str,
    pub source: Source,
}

#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    pub kernels: Vec<Row>,
    /// Kernel files by what times them.
    pub counts: BTreeMap<&'static str, usize>,
    /// Python files under the kernel folders whose names are not UTF-8 (undecodable bytes shown as
    /// U+FFFD): not inspected, since no kernel can be named by them.
    pub names_not_utf8: Vec<String>,
}

/// Every kernel file of the checkout at `root`, classified.
pub fn coverage(root: &Path) -> Coverage {
    let kernels: Vec<Row> = locate::kernel_files(root)
        .iter()
        .map(|kernel| row(root, kernel))
        .collect();
    let mut counts = BTreeMap::new();
    for row in &kernels {
        *counts.entry(row.measured_by).or_insert(0) += 1;
    }
    Coverage {
        kernels,
        counts,
        names_not_utf8: locate::files_not_utf8(root),
    }
}

/// A kernel's row; its test is found as `inspect` finds it (through its registered ops), or by name and
/// import alone when its source cannot be inspected.
fn row(root: &Path, kernel: &Kernel) -> Row {
    let test = match inspect_with_test(root, kernel, None) {
        Ok(full) => full.test.map(|t| t.path),
        Err(_) => locate::find_test(root, kernel, &[]).ok().map(|t| t.path),
    };
    let source = source::find(root, kernel, test.as_deref());
    Row {
        kernel: kernel.name.clone(),
        suite: kernel.suite.clone(),
        file: kernel.path.clone(),
        measured_by: source.kind(test.is_some()),
        test,
        source,
    }
}

/// The table in text: one line a kernel, then the counts.
pub fn render(coverage: &Coverage) -> String {
    let mut out = String::new();
    for row in &coverage.kernels {
        out.push_str(&format!(
            "{:<18} {:<10} {:<28} {}\n",
            row.measured_by,
            row.suite,
            row.kernel,
            match &row.source {
                Source::None => row
                    .test
                    .clone()
                    .unwrap_or_else(|| "no test found".to_string()),
                found => found.describe(),
            }
        ));
    }
    let counts: Vec<String> = coverage
        .counts
        .iter()
        .map(|(class, n)| format!("{n} {class}"))
        .collect();
    out.push_str(&format!(
        "{} kernel files: {}\n",
        coverage.kernels.len(),
        counts.join(", ")
    ));
    if !coverage.names_not_utf8.is_empty() {
        out.push_str(&format!(
            "not inspected, their names not being UTF-8 (rename them to inspect them): {}\n",
            coverage.names_not_utf8.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "import cuda.tile as ct\n\n@ct.kernel\ndef k(x):\n    pass\n";
    const CHECKS: &str = "def test_op():\n    pass\n";
    const TIMES: &str = "def test_op():\n    pass\n\ndef test_perf():\n    pass\n";

    #[test]
    fn every_kernel_file_is_classified_by_the_source_that_would_time_it() {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in [
            ("src/tilegym/ops/cutile/timed.py", KERNEL),
            ("tests/ops/test_timed.py", TIMES),
            ("src/tilegym/ops/cutile/swept.py", KERNEL),
            ("tests/ops/test_swept.py", CHECKS),
            ("tests/benchmark/experimental/bench_swept.py", ""),
            ("src/tilegym/suites/lib/cutile/checked.py", KERNEL),
            ("tests/suites/lib/test_checked.py", CHECKS),
            // a benchmark of the core operators is not a suite kernel's
            ("tests/benchmark/bench_checked.py", ""),
            ("src/tilegym/suites/lib/cutile/alone.py", KERNEL),
            ("src/tilegym/suites/lib/cutile/drafted.py", KERNEL),
            ("tests/suites/lib/test_drafted.py", CHECKS),
            ("sandbox/perf_drafted.py", TIMES),
            // names the kernel type without defining one: not a kernel file
            (
                "src/tilegym/ops/cutile/utils.py",
                "import cuda.tile as ct\ndef f(k: ct.kernel):\n    return k\n",
            ),
        ] {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        let table = coverage(dir.path());
        let rows: Vec<(&str, &str)> = table
            .kernels
            .iter()
            .map(|r| (r.kernel.as_str(), r.measured_by))
            .collect();
        assert_eq!(
            rows,
            [
                ("swept", "benchmark"),
                ("timed", "test_perf"),
                ("alone", "no_test"),
                ("checked", "correctness_only"),
                ("drafted", "session_perf_file"),
            ]
        );
        assert_eq!(
            table.kernels[0].source,
            Source::Benchmark {
                path: "tests/benchmark/experimental/bench_swept.py".to_string()
            }
        );
        assert_eq!(table.counts["test_perf"], 1);
        let text = render(&table);
        assert!(
            text.ends_with(
                "5 kernel files: 1 benchmark, 1 correctness_only, 1 no_test, 1 session_perf_file, 1 test_perf\n"
            ),
            "{text}"
        );
        assert!(table.names_not_utf8.is_empty());
    }

    #[test]
    fn a_kernel_file_whose_name_is_not_utf8_is_listed_not_dropped() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let kernels = dir.path().join("src/tilegym/ops/cutile");
        std::fs::create_dir_all(&kernels).unwrap();
        let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.py");
        std::fs::write(kernels.join(latin1), KERNEL).unwrap();
        // a name that holds the replacement character itself is UTF-8, and inspected
        std::fs::write(kernels.join("odd\u{fffd}.py"), KERNEL).unwrap();
        let table = coverage(dir.path());
        assert_eq!(
            table.names_not_utf8,
            ["src/tilegym/ops/cutile/caf\u{fffd}.py"]
        );
        assert_eq!(table.kernels.len(), 1);
        let text = render(&table);
        assert!(
            text.ends_with(
                "not inspected, their names not being UTF-8 (rename them to inspect them): \
                 src/tilegym/ops/cutile/caf\u{fffd}.py\n"
            ),
            "{text}"
        );
    }
}
