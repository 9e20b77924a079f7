//! How a kernel will be measured, read before anything runs: its test's `test_perf`, a session perf
//! file under the sandbox, a standalone benchmark script of the checkout, or nothing. Read from the
//! files' text; nothing is imported or run.

use std::path::Path;

use serde::Serialize;
use tree_sitter::Node;

use super::syntax::{Arguments, Source as Parsed, descendants, named_children};
use crate::features::locate::{self, Kernel};
use crate::rules::hint::Hinted;

/// The test function whose cases `start` and `step` time.
pub const PERF_TEST: &str = "test_perf";

/// Where the kernel's latencies come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// The test file has a `test_perf`: its cuTile cases are the configs.
    TestPerf {
        path: String,
        /// Its cuTile cases, when every parametrization is a literal list.
        configs: Option<u64>,
    },
    /// A `test_perf` the session wrote under the sandbox for a kernel whose tests check correctness
    /// only (`scaffold` proposes one).
    SessionPerfFile { path: String, configs: Option<u64> },
    /// A standalone benchmark script of the checkout that runs the kernel (a sweep over backends): a
    /// session runs its cuTile lines through a session perf file that `start` writes.
    Benchmark { path: String },
    /// Nothing times the kernel.
    None,
}

/// The source of a kernel whose tests check correctness only, as [`Source::kind`] names it.
pub const CORRECTNESS_ONLY: &str = "correctness_only";

impl Source {
    /// The source as the coverage table names it; a kernel with no source is told apart by whether it
    /// has a test at all.
    pub fn kind(&self, has_test: bool) -> &'static str {
        match (self, has_test) {
            (Source::TestPerf { .. }, _) => "test_perf",
            (Source::SessionPerfFile { .. }, _) => "session_perf_file",
            (Source::Benchmark { .. }, _) => "benchmark",
            (Source::None, true) => CORRECTNESS_ONLY,
            (Source::None, false) => "no_test",
        }
    }

    /// What runs, in words.
    pub fn describe(&self) -> String {
        let configs = |n: &Option<u64>| match n {
            Some(n) => crate::rules::units::counted(*n, "config"),
            None => "configs known when pytest collects them".to_string(),
        };
        match self {
            Source::TestPerf { path, configs: n } => {
                format!("{PERF_TEST} in {path} ({})", configs(n))
            }
            Source::SessionPerfFile { path, configs: n } => {
                format!("the session perf file {path} ({})", configs(n))
            }
            Source::Benchmark { path } => format!("the standalone benchmark {path}"),
            Source::None => "none".to_string(),
        }
    }
}

/// The session perf file of a kernel: `sandbox/perf_<kernel>.py`.
pub fn session_perf_file(kernel: &Kernel) -> String {
    format!("{}/perf_{}.py", crate::rules::guard::SANDBOX, kernel.name)
}

/// The kernel's source: the test's `test_perf` first, then a session perf file, then a benchmark.
pub fn find(root: &Path, kernel: &Kernel, test: Option<&str>) -> Source {
    let perf_cases = |path: &str| {
        let text = std::fs::read_to_string(root.join(path)).ok()?;
        perf_configs(&text)
    };
    if let Some(test) = test
        && let Some(configs) = perf_cases(test)
    {
        return Source::TestPerf {
            path: test.to_string(),
            configs,
        };
    }
    let session = session_perf_file(kernel);
    if let Some(configs) = perf_cases(&session) {
        return Source::SessionPerfFile {
            path: session,
            configs,
        };
    }
    match locate::find_benchmark(root, kernel) {
        Some(path) => Source::Benchmark { path },
        None => Source::None,
    }
}

/// Refuses a session whose `test` has no `test_perf`, before anything runs: what times the kernel
/// instead, if anything, and the way forward.
pub fn require_perf_cases(kernel: &Kernel, test: &str, source: &Source) -> Result<(), Hinted> {
    let perf_file = session_perf_file(kernel);
    let scaffold = format!(
        "write a session perf file with `git cutile-perf start {} --suite {} --scaffold`, set its shapes to \
         sizes of real use, then start with --test {perf_file}",
        kernel.name, kernel.suite
    );
    let (message, hint) = match source {
        Source::TestPerf { .. } => return Ok(()),
        Source::SessionPerfFile { path, .. } => (
            format!(
                "{test} has no {PERF_TEST}; the session perf file {path} times {}",
                kernel.name
            ),
            format!("start with --test {path}"),
        ),
        Source::Benchmark { path } => (
            format!(
                "{test} has no {PERF_TEST}; the standalone benchmark {path} times {}",
                kernel.name
            ),
            format!(
                "start without --test: it writes {perf_file}, which runs the cuTile lines of {path}"
            ),
        ),
        Source::None => (
            format!(
                "{test} has no {PERF_TEST}: its tests check {} for correctness only, and nothing times it",
                kernel.name
            ),
            scaffold,
        ),
    };
    Err(Hinted {
        message,
        hint: Some(hint),
    })
}

/// `None` when `text` defines no `test_perf`; else its cuTile cases when every parametrization of it
/// is a literal list (a list of strings naming `cutile` counts only those).
pub fn perf_configs(text: &str) -> Option<Option<u64>> {
    let parsed = Parsed::parse(text).ok()?;
    let definition = descendants(parsed.root()).into_iter().find(|n| {
        n.kind() == "function_definition"
            && n.child_by_field_name("name")
                .is_some_and(|name| parsed.text_of(name) == PERF_TEST)
    })?;
    let decorated = definition
        .parent()
        .filter(|p| p.kind() == "decorated_definition");
    let decorators: Vec<Node> = decorated
        .map(|d| {
            named_children(d)
                .into_iter()
                .filter(|c| c.kind() == "decorator")
                .collect()
        })
        .unwrap_or_default();
    let mut product = 1u64;
    for decorator in decorators {
        let Some(call) = named_children(decorator)
            .into_iter()
            .find(|c| c.kind() == "call")
        else {
            continue;
        };
        let callee = call.child_by_field_name("function");
        if !callee
            .and_then(|f| parsed.dotted(f))
            .is_some_and(|name| name.ends_with("mark.parametrize"))
        {
            continue;
        }
        match Arguments::of(&parsed, call).get(1, "argvalues") {
            Some(values) if matches!(values.kind(), "list" | "tuple") => {
                product *= literal_cases(&parsed, values);
            }
            _ => return Some(None),
        }
    }
    Some(Some(product))
}

/// The values of a literal list, or only those naming `cutile` when it lists backends by name.
fn literal_cases(parsed: &Parsed, values: Node) -> u64 {
    let items: Vec<Node> = named_children(values)
        .into_iter()
        .filter(|c| c.kind() != "comment")
        .collect();
    let names: Vec<&str> = items
        .iter()
        .filter(|i| i.kind() == "string")
        .map(|i| parsed.text_of(*i))
        .collect();
    let cutile = names.iter().filter(|n| n.contains("cutile")).count();
    match names.len() == items.len() && cutile > 0 {
        true => cutile as u64,
        false => items.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_configs_count_literal_parametrizations_and_cutile_backends() {
        let text = "import pytest\n\
            @pytest.mark.parametrize('size', ['small', 'large'])\n\
            @pytest.mark.parametrize('backend', ['torch', 'cutile', 'cutile_v2'])\n\
            def test_perf(size, backend):\n    pass\n";
        assert_eq!(perf_configs(text), Some(Some(4)));
        let named = "class T:\n    @pytest.mark.parametrize('b', BACKENDS)\n    def test_perf(self, b):\n        pass\n";
        assert_eq!(perf_configs(named), Some(None));
        assert_eq!(perf_configs("def test_perf():\n    pass\n"), Some(Some(1)));
        assert_eq!(perf_configs("def test_op():\n    pass\n"), None);
    }
}
