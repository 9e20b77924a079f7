//! The session perf file proposed for a kernel whose tests check correctness only: a `test_perf` that
//! times the kernel's registered cuTile op through the checkout's own harness (`tests.common`), on the
//! call its correctness tests make of it, grown past the launch's time, beside the kernel's correctness tests
//! imported from its test module (pytest collects them there), so that one file is the session's test;
//! or, for a kernel that a standalone benchmark script times, the file that runs the script's cuTile
//! lines as perf cases. Their text, and the one place they are written.

use anyhow::{Context, Result};

use super::derived_inputs::Derived;
use super::syntax::{Source as Parsed, descendants, named_children};
use super::{Report, source::PERF_TEST};
use crate::system::git::Repo;

/// The op the file times: the cuTile registration's function, and the parameters it requires.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TimedOp {
    /// `tilegym.suites.liger.cutile.geglu`.
    pub module: String,
    pub function: String,
    /// Its parameters without a default, each given a tensor of the shape.
    pub parameters: Vec<String>,
}

/// The op to time, from the inspection: the registration with backend `cutile` (else the first), its
/// required parameters read from the kernel file's `text`.
pub fn timed_op(report: &Report, text: &str) -> Option<TimedOp> {
    let registration = report
        .registrations
        .iter()
        .find(|r| r.registration.backend.as_deref() == Some("cutile"))
        .or(report.registrations.first())?;
    let function = registration.registration.function.clone();
    Some(TimedOp {
        module: report
            .file
            .trim_start_matches("src/")
            .trim_end_matches(".py")
            .replace('/', "."),
        parameters: required_parameters(text, &function),
        function,
    })
}

/// The names of `function`'s parameters that have no default (not `*args`, `**kwargs` or `self`).
fn required_parameters(text: &str, function: &str) -> Vec<String> {
    let Ok(parsed) = Parsed::parse(text) else {
        return Vec::new();
    };
    let Some(definition) = descendants(parsed.root()).into_iter().find(|n| {
        n.kind() == "function_definition"
            && n.child_by_field_name("name")
                .is_some_and(|name| parsed.text_of(name) == function)
    }) else {
        return Vec::new();
    };
    let Some(parameters) = definition.child_by_field_name("parameters") else {
        return Vec::new();
    };
    named_children(parameters)
        .into_iter()
        .filter_map(|p| match p.kind() {
            "identifier" => Some(parsed.text_of(p).to_string()),
            "typed_parameter" => named_children(p)
                .into_iter()
                .find(|c| c.kind() == "identifier")
                .map(|c| parsed.text_of(c).to_string()),
            _ => None,
        })
        .filter(|name| name != "self")
        .collect()
}

/// Where the conftest of the session perf files goes, and its text: pytest loads a conftest beside
/// the files it is given before it parses the options, so the checkout's test options (TileGym's
/// `--print-record`), fixtures and hooks reach a perf file outside `tests/`.
pub const CONFTEST: &str = "conftest.py";
pub const CONFTEST_TEXT: &str = "\"\"\"The checkout's test configuration (options, fixtures, hooks) for the session perf files here, \
    which live outside tests/.\"\"\"\n\nfrom tests.conftest import *  # noqa: F401,F403\n";

/// The session perf file of a kernel that the standalone benchmark script `benchmark` times: its
/// sweeps' cuTile lines as configs, timed by the script's own timing call; `test`, the kernel's
/// correctness tests, are collected beside them when it has some.
pub fn render_benchmark(kernel: &str, benchmark: &str, test: Option<&str>) -> String {
    let tests = match test {
        Some(test) => format!(
            "\n# the kernel's correctness tests, collected here too: every step runs them before it times\n\
             from {} import *  # noqa: F401,F403\n",
            test.trim_end_matches(".py").replace('/', ".")
        ),
        None => String::new(),
    };
    BENCHMARK_WRAPPER
        .replace("{kernel}", kernel)
        .replace("{benchmark}", benchmark)
        .replace("{tests_import}", &tests)
}

const BENCHMARK_WRAPPER: &str = include_str!("benchmark_wrapper.py");

/// The benchmark script a session perf file runs, when it is one `render_benchmark` wrote.
pub fn benchmark_of(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|line| line.strip_prefix("BENCHMARK = \""))
        .and_then(|rest| rest.strip_suffix('"'))
}

/// Writes the session perf file `file` (and the conftest beside it, unless one is there) into the
/// sandbox, which git is told to ignore.
pub fn write(repo: &Repo, file: &str, text: &str) -> Result<()> {
    repo.exclude(&format!("/{}/", crate::rules::guard::SANDBOX))?;
    let path = repo.root.join(file);
    std::fs::create_dir_all(path.parent().expect("the file is in the sandbox"))?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {file}"))?;
    let conftest = path.with_file_name(CONFTEST);
    // one the user edited is kept
    if !conftest.exists() {
        std::fs::write(&conftest, CONFTEST_TEXT)
            .with_context(|| format!("cannot write {}", conftest.display()))?;
    }
    Ok(())
}

/// The file's text for inputs derived from the op's recorded calls: `derived` built again at each of
/// `growths`.
pub fn render_derived(
    kernel: &str,
    test: &str,
    op: &TimedOp,
    derived: &Derived,
    growths: &[u64],
) -> String {
    let (args, kwargs) = derived.python();
    let args: Vec<String> = args.iter().map(|a| format!("        {a},\n")).collect();
    let kwargs: Vec<String> = kwargs
        .iter()
        .map(|(k, a)| format!("        {k:?}: {a},\n"))
        .collect();
    let grown = match derived.grown {
        Some(size) => format!("every dimension of size {size} times `growth`"),
        None => "nothing grown: no dimension reads as a batch".to_string(),
    };
    let growths: Vec<String> = growths.iter().map(u64::to_string).collect();
    format!(
        r#""""Session perf file for {kernel}: times {function} (the cuTile op) through the checkout's harness, on
the inputs {test} passes it.

Written by `git cutile-perf start --scaffold` from the op's calls that those tests made: it builds the
call that {alike} of the {recorded} share, at its largest size; {grown}.
GROWTH holds the smallest growth whose time passed 10 us when the file was written (smaller ones time the
launch, not the kernel), and four times it. It lives under sandbox/ and is never committed; edit it freely before the baseline.
"""

import pytest
import torch

# the kernel's correctness tests, collected here too: every step runs them before it times the op
from {tests} import *  # noqa: F401,F403

from tests import common
from {module} import {function} as op

GROWTH = [{growths}]


def make_inputs(growth):
    """The recorded call: {summary}."""
    args = (
{args}    )
    kwargs = {{
{kwargs}    }}
    return args, kwargs


@pytest.mark.parametrize("growth", GROWTH, ids=lambda growth: f"x{{growth}}")
@pytest.mark.parametrize("backend", ["cutile"])
def {PERF_TEST}(growth, backend, record_property):
    args, kwargs = make_inputs(growth)
    result = common.benchmark_framework(backend, lambda: op(*args, **kwargs))
    record_property("benchmark", result)
"#,
        function = op.function,
        module = op.module,
        tests = test.trim_end_matches(".py").replace('/', "."),
        alike = derived.alike,
        recorded = derived.recorded,
        summary = derived.summary(),
        growths = growths.join(", "),
        args = args.concat(),
        kwargs = kwargs.concat(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_file_builds_the_recorded_call_at_each_growth() {
        let text = "@register_impl('lib.geglu', backend='cutile')\n\
            def geglu(a: torch.Tensor, b, scale=1.0, *args, **kwargs):\n    pass\n";
        assert_eq!(required_parameters(text, "geglu"), ["a", "b"]);
        let op = TimedOp {
            module: "tilegym.suites.lib.cutile.geglu".to_string(),
            function: "geglu".to_string(),
            parameters: vec!["a".to_string(), "b".to_string()],
        };
        let calls = super::super::derived_inputs::parse_calls(
            r#"{"args": [{"kind": "tensor", "shape": [4, 64], "dtype": "torch.float16", "device": "cuda:0"}, {"kind": "value", "value": 2}], "kwargs": {"approximate": {"kind": "value", "value": "tanh"}}}"#,
        )
        .unwrap();
        let derived = super::super::derived_inputs::derive(&calls).unwrap();
        let file = render_derived(
            "geglu",
            "tests/suites/lib/test_geglu.py",
            &op,
            &derived,
            &[8, 32],
        );
        for wanted in [
            "from tilegym.suites.lib.cutile.geglu import geglu as op\n",
            "GROWTH = [8, 32]\n",
            "    args = (\n        torch.randn((4 * growth, 64,), dtype=torch.float16, device=\"cuda\"),\n        2,\n    )\n",
            "    kwargs = {\n        \"approximate\": \"tanh\",\n    }\n",
            "from tests.suites.lib.test_geglu import *  # noqa",
        ] {
            assert!(file.contains(wanted), "{wanted}\n{file}");
        }
        assert_eq!(super::super::source::perf_configs(&file), Some(None));
    }

    #[test]
    fn a_benchmark_wrapper_names_its_script_and_collects_the_kernels_tests() {
        let file = render_benchmark(
            "softmax",
            "tests/benchmark/bench_softmax.py",
            Some("tests/ops/test_softmax.py"),
        );
        assert_eq!(
            benchmark_of(&file),
            Some("tests/benchmark/bench_softmax.py")
        );
        assert!(
            file.contains("from tests.ops.test_softmax import *  # noqa"),
            "{file}"
        );
        assert!(!file.contains("{tests_import}") && !file.contains("{kernel}"));
        assert_eq!(super::super::source::perf_configs(&file), Some(None));
        let alone = render_benchmark("swish", "tests/benchmark/bench_swish.py", None);
        assert!(!alone.contains("import *"), "{alone}");
        assert_eq!(benchmark_of("def test_perf():\n    pass\n"), None);
    }
}
