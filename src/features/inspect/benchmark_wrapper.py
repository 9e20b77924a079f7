"""Session perf file for {kernel}: runs the cuTile lines of the standalone benchmark {benchmark}.

Written by `git cutile-perf start`; it lives under sandbox/ and is never committed. The script's
`triton.testing.perf_report` sweeps are collected, not run: each (x-value, line) of a line that runs the
kernel is a config, every other backend is skipped. test_check runs the script's function for a config
with its timing call answered at once, so that the script's own check (its assert_close) is the config's
correctness test; test_perf runs it with the timing call made, and records the milliseconds that call
measured (never the throughput the script prints). LINES picks the lines: edit it where the script has
several cuTile variants and the session is about one of them, then start again.
"""

import functools
import importlib.util
import math
import os
import sys

import pytest

BENCHMARK = "{benchmark}"
# the line values (or names) the session runs; None: every line whose value or name names cutile
LINES = None
{tests_import}
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the records of the config being timed, one a timing call; None while a config is only checked
_taken = None


def _summary(samples):
    ordered = sorted(float(s) for s in samples)
    n = len(ordered)
    if n == 1:
        # a timing call that answers one number answers its median (the script's harness says which)
        return {"median": ordered[0], "nrep": 1}
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    mean = sum(ordered) / n
    std = math.sqrt(sum((s - mean) ** 2 for s in ordered) / n)
    return {
        "median": middle,
        "mean": mean,
        "min": ordered[0],
        "max": ordered[-1],
        "std": std,
        "rel_std": 100.0 * std / mean if mean else 0.0,
        "nrep": n,
    }


def _answer(record, quantiles):
    """What the script asked its timing call for: the median, or one value per quantile."""
    return tuple(record["median"] for _ in quantiles) if quantiles else record["median"]


def benchmark(fn, timing, all_samples, args, kwargs):
    """The harness of this file's perf cases: `timing` (the script's own timing call) on `fn`, asked for
    every sample where it can give them. It is the checkout's harness while this file runs
    (tests.common's `benchmark`), so that the tool's census sees the timed calls as it sees a test_perf's."""
    kwargs = dict(kwargs)
    quantiles = kwargs.pop("quantiles", None)
    samples = None
    if all_samples:
        kwargs.pop("return_mode", None)
        try:
            samples = timing(fn, *args, return_mode="all", **kwargs)
        except (AssertionError, TypeError, ValueError):  # a triton that gives no samples
            samples = [timing(fn, *args, return_mode="median", **kwargs)]
    else:
        samples = [timing(fn, *args, **kwargs)]
    record = _summary(samples if isinstance(samples, (list, tuple)) else [samples])
    _taken.append(record)
    return _answer(record, quantiles)


def _harness():
    common = sys.modules.get("tests.common")
    return getattr(common, "benchmark", benchmark) if common is not None else benchmark


def _shim(timing, all_samples):
    @functools.wraps(timing)
    def timed(fn, *args, **kwargs):
        if _taken is None:
            return _answer({"median": 1.0}, kwargs.get("quantiles"))
        return _harness()(fn, timing, all_samples, args, kwargs)

    return timed


class _Sweep:
    """A `perf_report` of the script: its function and benchmarks, run here config by config."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = [b for b in (benchmarks if isinstance(benchmarks, list) else [benchmarks]) if b]
        _SWEEPS.append(self)

    def run(self, *args, **kwargs):
        """The script's own run of the whole sweep: nothing runs here."""

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


_SWEEPS = []


def _load():
    import triton.testing

    directory = os.path.dirname(os.path.join(_ROOT, BENCHMARK))
    for path in (os.path.join(_ROOT, "tests", "benchmark"), directory):
        if path not in sys.path:
            sys.path.insert(0, path)
    triton.testing.perf_report = lambda benchmarks: lambda fn: _Sweep(fn, benchmarks)
    for name in ("do_bench", "do_bench_cudagraph"):
        if hasattr(triton.testing, name):
            setattr(triton.testing, name, _shim(getattr(triton.testing, name), True))
    try:
        import bench_utils
    except ImportError:
        bench_utils = None
    if bench_utils is not None and hasattr(bench_utils, "profile_with_l2flush"):
        bench_utils.profile_with_l2flush = _shim(bench_utils.profile_with_l2flush, False)
    try:
        import tests.common as common

        common.benchmark = benchmark
    except ImportError:
        pass
    spec = importlib.util.spec_from_file_location("cutile_perf_benchmark", os.path.join(_ROOT, BENCHMARK))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _runs_kernel(value, name):
    if LINES is not None:
        return value in LINES or name in LINES
    return "cutile" in f"{value} {name}".lower()


def _configs():
    _load()
    configs = []
    for sweep in _SWEEPS:
        for bench in sweep.benchmarks:
            names = list(bench.x_names)
            for x in bench.x_vals:
                xs = dict(zip(names, x)) if isinstance(x, (list, tuple)) and len(names) > 1 else {n: x for n in names}
                for value, name in zip(bench.line_vals, bench.line_names):
                    if _runs_kernel(value, name):
                        arguments = dict(bench.args, **xs, **{bench.line_arg: value})
                        shown = "-".join(f"{k}={v}" for k, v in xs.items())
                        configs.append(pytest.param(sweep, arguments, id=f"{bench.plot_name}-{shown}-{name}"))
    return configs


CONFIGS = _configs()


@pytest.mark.parametrize("sweep, arguments", CONFIGS)
@pytest.mark.parametrize("backend", ["cutile"])
def test_check(sweep, arguments, backend):
    global _taken
    _taken = None
    sweep.fn(**arguments)


@pytest.mark.parametrize("sweep, arguments", CONFIGS)
@pytest.mark.parametrize("backend", ["cutile"])
def test_perf(sweep, arguments, backend, record_property):
    global _taken
    _taken = []
    try:
        sweep.fn(**arguments)
        taken = _taken
    finally:
        _taken = None
    assert taken, "the script timed nothing for this config"
    passes = {"forward" if i == 0 else f"call_{i + 1}": record for i, record in enumerate(taken)}
    record_property("benchmark", {"cutile": passes})
